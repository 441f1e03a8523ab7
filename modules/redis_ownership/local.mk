# modules/redis_ownership/local.mk: the control plane's authority in
# Redis (issue 12): sessions, issued snapshot references, ACK baselines,
# runtime and outcome fences, proxy ownership and epochs, each one Lua
# script run with EVALSHA over hiredis on the host's loop. The scripts in
# modules/redis_ownership/lua/ are embedded at build time
# (scripts/embed-sql.sh), like the migrations' SQL.

RO_LUA_FILES = %D%/lua/prelude.lua \
	%D%/lua/register.lua \
	%D%/lua/next_version.lua \
	%D%/lua/issue.lua \
	%D%/lua/ack.lua \
	%D%/lua/runtime.lua \
	%D%/lua/outcomes.lua \
	%D%/lua/assign.lua \
	%D%/lua/owned.lua \
	%D%/lua/usable.lua \
	%D%/lua/extract.lua \
	%D%/lua/checker_register.lua \
	%D%/lua/checker_alive.lua \
	%D%/lua/health.lua \
	%D%/lua/members.lua \
	%D%/lua/passive.lua
EXTRA_DIST += $(RO_LUA_FILES)

%D%/ro_lua.c: $(srcdir)/scripts/embed-sql.sh \
		$(srcdir)/%D%/lua/prelude.lua \
		$(srcdir)/%D%/lua/register.lua \
		$(srcdir)/%D%/lua/next_version.lua \
		$(srcdir)/%D%/lua/issue.lua \
		$(srcdir)/%D%/lua/ack.lua \
		$(srcdir)/%D%/lua/runtime.lua \
		$(srcdir)/%D%/lua/outcomes.lua \
		$(srcdir)/%D%/lua/assign.lua \
		$(srcdir)/%D%/lua/owned.lua \
		$(srcdir)/%D%/lua/usable.lua \
		$(srcdir)/%D%/lua/extract.lua \
		$(srcdir)/%D%/lua/checker_register.lua \
		$(srcdir)/%D%/lua/checker_alive.lua \
		$(srcdir)/%D%/lua/health.lua \
		$(srcdir)/%D%/lua/members.lua \
		$(srcdir)/%D%/lua/passive.lua
	$(AM_V_GEN)$(MKDIR_P) modules/redis_ownership && \
	$(SHELL) $(srcdir)/scripts/embed-sql.sh $@ redis_ownership/ro_lua.h \
	  ro_lua_prelude=$(srcdir)/%D%/lua/prelude.lua \
	  ro_lua_register=$(srcdir)/%D%/lua/register.lua \
	  ro_lua_next_version=$(srcdir)/%D%/lua/next_version.lua \
	  ro_lua_issue=$(srcdir)/%D%/lua/issue.lua \
	  ro_lua_ack=$(srcdir)/%D%/lua/ack.lua \
	  ro_lua_runtime=$(srcdir)/%D%/lua/runtime.lua \
	  ro_lua_outcomes=$(srcdir)/%D%/lua/outcomes.lua \
	  ro_lua_assign=$(srcdir)/%D%/lua/assign.lua \
	  ro_lua_owned=$(srcdir)/%D%/lua/owned.lua \
	  ro_lua_usable=$(srcdir)/%D%/lua/usable.lua \
	  ro_lua_extract=$(srcdir)/%D%/lua/extract.lua \
	  ro_lua_checker_register=$(srcdir)/%D%/lua/checker_register.lua \
	  ro_lua_checker_alive=$(srcdir)/%D%/lua/checker_alive.lua \
	  ro_lua_health=$(srcdir)/%D%/lua/health.lua \
	  ro_lua_members=$(srcdir)/%D%/lua/members.lua \
	  ro_lua_passive=$(srcdir)/%D%/lua/passive.lua
CLEANFILES += %D%/ro_lua.c

RO_SOURCES = modules/contracts/cp_authority.h \
	%D%/ro_args.c %D%/ro_args.h \
	%D%/ro_conf.c %D%/ro_conf.h \
	%D%/ro_conn.c %D%/ro_conn.h \
	%D%/ro_reply.c %D%/ro_reply.h \
	%D%/ro_scripts.c %D%/ro_scripts.h \
	%D%/ro_lua.h \
	modules/lib/backoff.c modules/lib/backoff.h \
	modules/lib/conf_values.c modules/lib/conf_values.h \
	modules/lib/metric_table.c modules/lib/metric_table.h
RO_CPPFLAGS = $(AM_CPPFLAGS) $(HIREDIS_CFLAGS) $(OPENSSL_CFLAGS)

if MODULE_REDIS_OWNERSHIP
BUILT_SOURCES += %D%/ro_lua.c
module_LTLIBRARIES += %D%/redis_ownership.la
modules_redis_ownership_redis_ownership_la_SOURCES = \
	%D%/redis_ownership.c $(RO_SOURCES)
nodist_modules_redis_ownership_redis_ownership_la_SOURCES = \
	%D%/ro_lua.c %D%/ro_conf_keys.c
modules_redis_ownership_redis_ownership_la_CPPFLAGS = $(RO_CPPFLAGS)
modules_redis_ownership_redis_ownership_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_redis_ownership_redis_ownership_la_LIBADD = $(HIREDIS_LIBS) \
	$(OPENSSL_LIBS) $(EV_LIBS)
dist_samples_DATA += %D%/redis_ownership.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
CONF_KEYS_C += %D%/ro_conf_keys.c
%D%/ro_conf_keys.c: %D%/redis_ownership.ini.sample $(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) -v table=ro_conf_keys \
		$(srcdir)/%D%/redis_ownership.ini.sample >$@.tmp && mv $@.tmp $@

# The module through the mock host against a real redis-server that the
# test starts (t/lib/redis.sh), and the Lua scripts under redis-cli.
UNIT_TESTS += t/unit/cp/test_redis_ownership
TESTS += t/integration/redis_lua.sh t/integration/redis_ownership.sh
t_unit_cp_test_redis_ownership_CPPFLAGS = $(AM_CPPFLAGS) $(HIREDIS_CFLAGS)
t_unit_cp_test_redis_ownership_LDADD = host/libphmock.la $(HIREDIS_LIBS) \
	$(EV_LIBS)
t_unit_cp_test_redis_ownership_DEPENDENCIES = host/libphmock.la \
	%D%/redis_ownership.la

# The script replies' reader, replayed over t/fuzz/seeds/ro_reply by
# t/integration/fuzz_replay.sh.
check_PROGRAMS += t/fuzz/replay_ro_reply
t_fuzz_replay_ro_reply_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_ro_reply.c \
	%D%/ro_reply.c
t_fuzz_replay_ro_reply_CPPFLAGS = $(AM_CPPFLAGS) $(HIREDIS_CFLAGS)
t_fuzz_replay_ro_reply_LDADD = $(HIREDIS_LIBS)
endif
EXTRA_DIST += t/lib/redis.sh t/integration/redis_lua.sh \
	t/integration/redis_ownership.sh

# The operations page: every key in Redis, each fence, failure behaviour.
nobase_dist_doc_DATA += docs/operations/controller-redis.md

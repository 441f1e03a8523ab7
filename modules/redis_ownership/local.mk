# modules/redis_ownership/local.mk: the control plane's authority in
# Redis (issue 12): sessions, issued snapshot references, ACK baselines,
# runtime and outcome fences, proxy ownership and epochs, each one Lua
# script run with EVALSHA over hiredis on the host's loop. The scripts in
# modules/redis_ownership/lua/ are embedded at build time
# (scripts/embed-sql.sh), like the migrations' SQL.

RO_LUA_FILES = modules/redis_ownership/lua/prelude.lua \
	modules/redis_ownership/lua/register.lua \
	modules/redis_ownership/lua/next_version.lua \
	modules/redis_ownership/lua/issue.lua \
	modules/redis_ownership/lua/ack.lua \
	modules/redis_ownership/lua/runtime.lua \
	modules/redis_ownership/lua/outcomes.lua \
	modules/redis_ownership/lua/assign.lua \
	modules/redis_ownership/lua/owned.lua \
	modules/redis_ownership/lua/usable.lua \
	modules/redis_ownership/lua/extract.lua
EXTRA_DIST += $(RO_LUA_FILES)

modules/redis_ownership/ro_lua.c: $(srcdir)/scripts/embed-sql.sh \
		$(srcdir)/modules/redis_ownership/lua/prelude.lua \
		$(srcdir)/modules/redis_ownership/lua/register.lua \
		$(srcdir)/modules/redis_ownership/lua/next_version.lua \
		$(srcdir)/modules/redis_ownership/lua/issue.lua \
		$(srcdir)/modules/redis_ownership/lua/ack.lua \
		$(srcdir)/modules/redis_ownership/lua/runtime.lua \
		$(srcdir)/modules/redis_ownership/lua/outcomes.lua \
		$(srcdir)/modules/redis_ownership/lua/assign.lua \
		$(srcdir)/modules/redis_ownership/lua/owned.lua \
		$(srcdir)/modules/redis_ownership/lua/usable.lua \
		$(srcdir)/modules/redis_ownership/lua/extract.lua
	$(AM_V_GEN)$(MKDIR_P) modules/redis_ownership && \
	$(SHELL) $(srcdir)/scripts/embed-sql.sh $@ redis_ownership/ro_lua.h \
	  ro_lua_prelude=$(srcdir)/modules/redis_ownership/lua/prelude.lua \
	  ro_lua_register=$(srcdir)/modules/redis_ownership/lua/register.lua \
	  ro_lua_next_version=$(srcdir)/modules/redis_ownership/lua/next_version.lua \
	  ro_lua_issue=$(srcdir)/modules/redis_ownership/lua/issue.lua \
	  ro_lua_ack=$(srcdir)/modules/redis_ownership/lua/ack.lua \
	  ro_lua_runtime=$(srcdir)/modules/redis_ownership/lua/runtime.lua \
	  ro_lua_outcomes=$(srcdir)/modules/redis_ownership/lua/outcomes.lua \
	  ro_lua_assign=$(srcdir)/modules/redis_ownership/lua/assign.lua \
	  ro_lua_owned=$(srcdir)/modules/redis_ownership/lua/owned.lua \
	  ro_lua_usable=$(srcdir)/modules/redis_ownership/lua/usable.lua \
	  ro_lua_extract=$(srcdir)/modules/redis_ownership/lua/extract.lua
CLEANFILES += modules/redis_ownership/ro_lua.c

RO_SOURCES = modules/contracts/cp_authority.h \
	modules/redis_ownership/ro_args.c modules/redis_ownership/ro_args.h \
	modules/redis_ownership/ro_conf.c modules/redis_ownership/ro_conf.h \
	modules/redis_ownership/ro_conn.c modules/redis_ownership/ro_conn.h \
	modules/redis_ownership/ro_reply.c modules/redis_ownership/ro_reply.h \
	modules/redis_ownership/ro_scripts.c modules/redis_ownership/ro_scripts.h \
	modules/redis_ownership/ro_lua.h \
	modules/lib/backoff.c modules/lib/backoff.h \
	modules/lib/conf_values.c modules/lib/conf_values.h \
	modules/lib/metric_table.c modules/lib/metric_table.h
RO_CPPFLAGS = $(AM_CPPFLAGS) $(HIREDIS_CFLAGS) $(OPENSSL_CFLAGS)

if MODULE_REDIS_OWNERSHIP
BUILT_SOURCES += modules/redis_ownership/ro_lua.c
module_LTLIBRARIES += modules/redis_ownership/redis_ownership.la
modules_redis_ownership_redis_ownership_la_SOURCES = \
	modules/redis_ownership/redis_ownership.c $(RO_SOURCES)
nodist_modules_redis_ownership_redis_ownership_la_SOURCES = \
	modules/redis_ownership/ro_lua.c
modules_redis_ownership_redis_ownership_la_CPPFLAGS = $(RO_CPPFLAGS)
modules_redis_ownership_redis_ownership_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_redis_ownership_redis_ownership_la_LIBADD = $(HIREDIS_LIBS) \
	$(OPENSSL_LIBS) $(EV_LIBS)
dist_samples_DATA += modules/redis_ownership/redis_ownership.ini.sample

# The module through the mock host against a real redis-server that the
# test starts (t/lib/redis.sh), and the Lua scripts under redis-cli.
UNIT_TESTS += t/unit/cp/test_redis_ownership
TESTS += t/integration/redis_lua.sh t/integration/redis_ownership.sh
t_unit_cp_test_redis_ownership_CPPFLAGS = $(AM_CPPFLAGS) $(HIREDIS_CFLAGS)
t_unit_cp_test_redis_ownership_LDADD = host/libphmock.la $(HIREDIS_LIBS) \
	$(EV_LIBS)
t_unit_cp_test_redis_ownership_DEPENDENCIES = host/libphmock.la \
	modules/redis_ownership/redis_ownership.la

# The script replies' reader, replayed over t/fuzz/seeds/ro_reply by
# t/integration/fuzz_replay.sh.
check_PROGRAMS += t/fuzz/replay_ro_reply
t_fuzz_replay_ro_reply_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_ro_reply.c \
	modules/redis_ownership/ro_reply.c
t_fuzz_replay_ro_reply_CPPFLAGS = $(AM_CPPFLAGS) $(HIREDIS_CFLAGS)
t_fuzz_replay_ro_reply_LDADD = $(HIREDIS_LIBS)
endif
EXTRA_DIST += t/lib/redis.sh t/integration/redis_lua.sh \
	t/integration/redis_ownership.sh

# The operations page: every key in Redis, each fence, failure behaviour.
nobase_dist_doc_DATA += docs/operations/controller-redis.md

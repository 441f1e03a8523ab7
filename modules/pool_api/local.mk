# modules/pool_api: the proxy pool's JSON API on the admin listener
# (issue 25 item 6, split from admin_api): /v1/pool/* over pool.store
# (api_pool.c) and exclusive extraction over cp.authority
# (api_extract.c). Exclusive extraction includes cp_authority.h (header
# only, with modules/contracts/cp_status.h): pool_api builds without
# redis_ownership and needs it only when [pool_api] authority is set.
if MODULE_POOL_API
module_LTLIBRARIES += %D%/pool_api.la
modules_pool_api_pool_api_la_SOURCES = %D%/pool_api.c \
	%D%/pool_routes.c %D%/pool_routes.h \
	%D%/api_pool.c %D%/api_pool.h \
	%D%/api_extract.c %D%/api_extract.h \
	modules/contracts/cp_authority.h modules/contracts/cp_credcheck.h \
	modules/store_common/pool_validate.c modules/store_common/pool_validate.h
modules_pool_api_pool_api_la_CPPFLAGS = $(ADMIN_KIT_CPPFLAGS) $(OPENSSL_CFLAGS)
modules_pool_api_pool_api_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_pool_api_pool_api_la_LIBADD = $(ADMIN_KIT_LIBADD) $(OPENSSL_LIBS)
dist_samples_DATA += %D%/pool_api.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_pool_api_pool_api_la_SOURCES = %D%/pool_api_keys.c
CONF_KEYS_C += %D%/pool_api_keys.c
%D%/pool_api_keys.c: %D%/pool_api.ini.sample $(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) -v table=pool_api_keys $(srcdir)/%D%/pool_api.ini.sample >$@.tmp && mv $@.tmp $@

UNIT_TESTS += t/unit/auth/test_api_extract
t_unit_auth_test_api_extract_SOURCES = t/unit/auth/test_api_extract.c \
	%D%/api_extract.c modules/admin_kit/admin_http.c \
	modules/lib/json.c modules/lib/bw.c
t_unit_auth_test_api_extract_CPPFLAGS = $(ADMIN_KIT_CPPFLAGS)

if MODULE_STORE_SQLITE
UNIT_TESTS += t/unit/auth/test_pool_api
t_unit_auth_test_pool_api_LDADD = host/libphmock.la
endif
endif

# modules/admin_kit: what the admin listener's JSON modules share
# (admin_api, pool_api; issue 25 item 6): the admin token file and its
# check (modules/lib/admin_token.c, shared with the host), the route table match, the {"error": ...} and
# {"routes": [...]} bodies and the JSON content type (admin_http.c), the
# token_file key's check, load and reload and the answers through the
# host (admin_module.c). A
# static convenience library built position-independent, linked into
# each module (not copied).

ADMIN_KIT_SOURCES = %D%/admin_http.c %D%/admin_http.h \
	%D%/admin_module.c %D%/admin_module.h
ADMIN_KIT_CPPFLAGS = $(AM_CPPFLAGS)
ADMIN_KIT_LIBADD = %D%/libphadminkit.la modules/frontend/libphfrontend.la

if MODULE_ADMIN_API
noinst_LTLIBRARIES += %D%/libphadminkit.la
else
if MODULE_POOL_API
noinst_LTLIBRARIES += %D%/libphadminkit.la
endif
endif
modules_admin_kit_libphadminkit_la_SOURCES = $(ADMIN_KIT_SOURCES)
modules_admin_kit_libphadminkit_la_CPPFLAGS = $(ADMIN_KIT_CPPFLAGS)

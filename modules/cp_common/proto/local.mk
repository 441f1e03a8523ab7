# modules/cp_common/proto/local.mk: the control plane's wire schema
# (proto/controlplane/v1/controlplane.proto, CP-1-1), compiled by protoc-c
# at build time into modules/cp_common/proto/gen/ in the build tree, with the two
# well-known types it imports, as libcpproto.la. Whatever links it links
# $(PROTOBUF_C_LIBS) through it.
EXTRA_DIST += proto/controlplane/v1/controlplane.proto \
	modules/contracts/cp_status.h

if CP_ANY
CP_GEN = %D%/gen
CP_PROTO_GEN_C = $(CP_GEN)/controlplane/v1/controlplane.pb-c.c \
	$(CP_GEN)/google/protobuf/timestamp.pb-c.c \
	$(CP_GEN)/google/protobuf/duration.pb-c.c
CP_PROTO_GEN_H = $(CP_PROTO_GEN_C:.c=.h)
# Generated code: include it as "controlplane/v1/controlplane.pb-c.h".
CP_PROTO_CPPFLAGS = -I$(top_builddir)/$(CP_GEN) $(PROTOBUF_C_CFLAGS)

# One stamp for the six generated files, so that a parallel make runs
# protoc-c once. A file deleted under an existing stamp is made again.
$(CP_GEN)/proto.stamp: $(top_srcdir)/proto/controlplane/v1/controlplane.proto
	$(AM_V_GEN)$(MKDIR_P) $(CP_GEN) && \
	$(PROTOC_C) -I$(top_srcdir)/proto -I$(PROTOBUF_INCLUDE) \
	  --c_out=$(CP_GEN) controlplane/v1/controlplane.proto && \
	$(PROTOC_C) -I$(PROTOBUF_INCLUDE) --c_out=$(CP_GEN) \
	  google/protobuf/timestamp.proto google/protobuf/duration.proto && \
	touch $@
$(CP_PROTO_GEN_C) $(CP_PROTO_GEN_H): $(CP_GEN)/proto.stamp
	@test -f $@ || { rm -f $(CP_GEN)/proto.stamp; \
	  $(MAKE) $(AM_MAKEFLAGS) $(CP_GEN)/proto.stamp; }
BUILT_SOURCES += $(CP_GEN)/proto.stamp
CLEANFILES += $(CP_GEN)/proto.stamp $(CP_PROTO_GEN_C) $(CP_PROTO_GEN_H)

noinst_LTLIBRARIES += %D%/libcpproto.la
nodist_modules_cp_common_proto_libcpproto_la_SOURCES = $(CP_PROTO_GEN_C) \
	$(CP_PROTO_GEN_H)
# protoc-c's output is not ours to fix: no -Werror-only warning flags
# beyond what it passes cleanly (it does pass -Wall -Wextra).
modules_cp_common_proto_libcpproto_la_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS)
modules_cp_common_proto_libcpproto_la_LIBADD = $(PROTOBUF_C_LIBS)

UNIT_TESTS += t/unit/cp/test_cp_proto
t_unit_cp_test_cp_proto_CPPFLAGS = $(AM_CPPFLAGS) $(CP_PROTO_CPPFLAGS)
t_unit_cp_test_cp_proto_LDADD = %D%/libcpproto.la
endif

# The API's operator documentation (t/integration/docs_dist.sh).
nobase_dist_doc_DATA += docs/api/controlplane.md

# The proto's evolution rules (CP-7-1..3) against the published field
# numbers in t/data/controlplane.v1.fields; needs protoc (no module).
TESTS += t/integration/cp_proto_rules.sh
EXTRA_DIST += t/integration/cp_proto_rules.sh t/data/controlplane.v1.fields \
	t/lib/cp_proto_fields.py

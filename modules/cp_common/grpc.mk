# modules/cp_common/grpc.mk: (to come in issue 12)
EXTRA_DIST += modules/cp_common/grpc.mk

# modules/store_common/pool.mk: (to come in issue 12)
EXTRA_DIST += modules/store_common/pool.mk

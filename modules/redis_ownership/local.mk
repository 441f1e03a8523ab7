# modules/redis_ownership/local.mk: (to come in issue 12)
EXTRA_DIST += modules/redis_ownership/local.mk

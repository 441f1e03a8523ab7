# SPDX-License-Identifier: BSD-2-Clause
# modules/store_common/pool.mk: the pool.store service's shared parts
# (issue 12): field validation and the pool revision's state, linked into
# both stores (through libphstore) and the admin API, and their unit test.
if STORE_ANY
modules_store_common_libphstore_la_SOURCES += \
	%D%/pool_validate.c %D%/pool_validate.h \
	%D%/pool_revision.c %D%/pool_revision.h
endif

# SPDX-License-Identifier: BSD-2-Clause
# modules/contracts/local.mk: the private in-tree contracts: headers one module defines for
# another (included as "contracts/NAME.h"); they include only SDK headers
# and each other. Their code lives in the module named in each header
# (included from Makefile.am; paths are from the top).
EXTRA_DIST += modules/contracts/cp_authority.h modules/contracts/cp_session.h \
	modules/contracts/cp_credcheck.h modules/contracts/cp_status.h \
	modules/contracts/pool_runtime.h

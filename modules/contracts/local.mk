# SPDX-License-Identifier: BSD-2-Clause
# modules/contracts/local.mk: the private in-tree contracts: headers one module defines for
# another (included as "contracts/NAME.h"); they include only SDK headers
# and each other. Their code lives in the module named in each header
# (included from Makefile.am; paths are from the top).
EXTRA_DIST += %D%/cp_authority.h %D%/cp_session.h \
	%D%/cp_credcheck.h %D%/cp_health.h %D%/cp_status.h \
	%D%/pool_runtime.h %D%/tm_presence.h

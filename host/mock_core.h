/* SPDX-License-Identifier: BSD-2-Clause */
/* The mock host's one in-tree extra, not installed: the host core behind
 * a ph_mock, for white-box tests of the host itself (the loader's dl
 * handles and per-instance contexts, a 1.1 key table's owned copy, the
 * parsed configuration). Everything a module's test needs is in
 * <proxyhost/mock.h> (ph_mock_*), which in-tree tests use as third
 * parties do; reach for mock_core only to assert on host internals no
 * module author may see. libproxyhost-mock does not export it. */
#ifndef PH_MOCK_CORE_H
#define PH_MOCK_CORE_H

#include <proxyhost/mock.h>

#include "buf.h"
#include "core.h"

/* The core the mock runs; owned by the mock, valid until ph_mock_free.
 * Loop thread only, like every ph_mock_* call. */
ph_core *mock_core(ph_mock *m);

#endif

-- SPDX-License-Identifier: BSD-2-Clause
-- next_version: the cluster's monotonic snapshot version (CP-3-1).
-- Returns {'ok', version}.
return {'ok', redis.call('INCR', P .. 'version')}

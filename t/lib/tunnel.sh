# SPDX-License-Identifier: BSD-2-Clause
# Shell helpers for the TunnelMesh tests (sourced after testlib.sh): the
# scriptable peer t/lib/tm_peer.py, and real tunnel_server, tunnel_agent
# and tunnel_client processes on loopback with their credentials.

# tm_peer ARGS...: t/lib/tm_peer.py (standard library only).
tm_peer() { "${PYTHON3:-/usr/bin/python3}" "$top_srcdir/t/lib/tm_peer.py" "$@"; }

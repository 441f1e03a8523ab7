# The TunnelMesh end-to-end tests (real client, server and agent processes
# on loopback), the demo and the benchmark harness (issue 11).
EXTRA_DIST += t/integration/tunnel.mk

# The scriptable TunnelMesh peer (t/lib/tm_peer.py) checked against
# itself; it needs no module, so it always runs.
INTEGRATION_TESTS += t/integration/tm_peer_selftest.sh
EXTRA_DIST += t/lib/tm_peer.py t/lib/tunnel.sh

# tm-client: tunnel_client in a real proxyhost against tm_peer.py.
if MODULE_TUNNEL_CLIENT
INTEGRATION_TESTS += t/integration/tunnel_client.sh
endif
EXTRA_DIST += t/integration/tunnel_client.sh t/lib/tls_forward.py

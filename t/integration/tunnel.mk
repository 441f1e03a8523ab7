# The TunnelMesh end-to-end tests (real client, server and agent processes
# on loopback), the demo and the benchmark harness (issue 11).
EXTRA_DIST += t/integration/tunnel.mk

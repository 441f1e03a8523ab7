# The TunnelMesh end-to-end tests (real client, server and agent processes
# on loopback), the demo and the benchmark harness (issue 11).
EXTRA_DIST += t/integration/tunnel.mk

# The scriptable TunnelMesh peer (t/lib/tm_peer.py) checked against
# itself; it needs no module, so it always runs.
INTEGRATION_TESTS += t/integration/tm_peer_selftest.sh
EXTRA_DIST += t/lib/tm_peer.py t/lib/tunnel.sh t/lib/log_fields.py

# The end-to-end suite: real tunnel_server, tunnel_agent and tunnel_client
# processes (helpers in t/lib/tunnel.sh); each test skips itself when a
# module it needs was configured out.
INTEGRATION_TESTS += t/integration/tunnel_e2e.sh \
	t/integration/tunnel_modes.sh t/integration/tunnel_one_process.sh \
	t/integration/tunnel_failover.sh t/integration/tunnel_browser.sh \
	t/integration/demo.sh t/integration/tunnel_credentials.sh \
	t/integration/tunnel_tenants.sh t/integration/tunnel_reset_codes.sh \
	t/integration/tls_reload.sh t/integration/tunnel_trace.sh \
	t/integration/tunnel_dashboard.sh t/integration/tunnel_validation.sh \
	t/integration/tunnel_logs.sh t/integration/tunnel_pool.sh \
	t/integration/tunnel_status.sh
if MODULE_STORE_PG
INTEGRATION_TESTS += t/integration/tunnel_revoke.sh \
	t/integration/tunnel_presence.sh t/integration/tunnel_relay.sh \
	t/integration/tunnel_relay3.sh t/integration/tunnel_relay_tls.sh
endif
EXTRA_DIST += t/integration/tunnel_relay_tls.sh
# The user guides' deployment (server.md, agent.md, client.md), run as the
# guides give it from their marked blocks (issue 24); the server's guide
# uses PostgreSQL.
if MODULE_STORE_PG
INTEGRATION_TESTS += t/integration/guides.sh
endif
EXTRA_DIST += t/integration/guides.sh
EXTRA_DIST += t/lib/tunnel_load.py t/integration/tunnel_revoke.sh \
	t/integration/tunnel_presence.sh t/integration/tunnel_relay.sh \
	t/integration/tunnel_relay3.sh \
	t/integration/tunnel_credentials.sh t/integration/tunnel_tenants.sh \
	conf/demo.ini scripts/demo.sh

# The documents that span the three roles (installed with the others,
# nobase_dist_doc_DATA as in Makefile.am).
nobase_dist_doc_DATA += docs/README.md docs/operations/configuration.md \
	docs/operations/troubleshooting.md docs/operations/network-probes.md

# tm-client: tunnel_client in a real proxyhost against tm_peer.py.
if MODULE_TUNNEL_CLIENT
INTEGRATION_TESTS += t/integration/tunnel_client.sh
endif
EXTRA_DIST += t/integration/tunnel_client.sh t/lib/tls_forward.py

# The benchmark harness (on demand: sh ../t/bench/tunnel.sh . from a build
# directory; never in make check).
EXTRA_DIST += t/bench/tunnel.sh

# modules/tunnel_agent: the TunnelMesh agent role (issue 11).
EXTRA_DIST += modules/tunnel_agent/local.mk

# modules/tunnel_server: the TunnelMesh server role (issue 11).
EXTRA_DIST += modules/tunnel_server/local.mk

# modules/tunnel_client: the TunnelMesh client role (issue 11).
EXTRA_DIST += modules/tunnel_client/local.mk

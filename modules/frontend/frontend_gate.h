/* SPDX-License-Identifier: BSD-2-Clause */
/* The frontend's listener follows the connector's traffic.gate
 * (frontend_gate.c, traffic_gate.h; issue 23 item 9, CP-3-18). */
#ifndef PH_FRONTEND_GATE_H
#define PH_FRONTEND_GATE_H

#include "frontend_session.h"

/* Start, after the listener was opened and resumed: when the provider the
 * "connector" key names also provides traffic.gate (the pool), watches it
 * and pauses the listener at once if it is closed. Nothing otherwise. */
void frontend_gate_attach(frontend_server *srv);
/* Stop and destroy (frontend_server_stop/destroy call it): unwatches and
 * releases the gate. Idempotent. */
void frontend_gate_detach(frontend_server *srv);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* The JSON of GET /v1/status: {"status_version":1,"instances":[{
 * "instance","module","panels":[{"name","title","fields":{...},
 * "tables":[{"name","columns","rows","offset","more"}]}]}]}. */
#ifndef PH_STATUS_JSON_H
#define PH_STATUS_JSON_H

#include "buf.h"
#include "status.h"

/* Writes the panels q selects into out. status_walk's status: 200, 404
 * (out then holds a partial document: the caller discards it), 503. */
int status_json(ph_panels *s, const status_query *q, ph_buf *out);

#endif

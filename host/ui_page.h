/* SPDX-License-Identifier: BSD-2-Clause */
/* The status page's HTML (issue 28): the login form, the page of every
 * panel, a page of one table with previous/next links, and the one
 * stylesheet. Server-rendered, no script, no external resource; every
 * text from a module, a name or a title goes through page_esc. */
#ifndef PH_UI_PAGE_H
#define PH_UI_PAGE_H

#include "buf.h"
#include "status.h"

extern const char page_css[];

/* Appends s HTML-escaped (& < > " ' as entities). */
void page_esc(ph_buf *b, const char *s);
/* The login page; message (escaped) NULL for none. */
void page_login(ph_buf *b, const char *message);
/* The panels q selects as a page into b (a table page when q names a
 * table). Returns status_walk's status (200, 404, 503). */
int page_status(ph_panels *s, const status_query *q, ph_buf *b);
/* A short page with one message (an error), escaped. */
void page_message(ph_buf *b, const char *title, const char *message);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* proxyhostctl status's readable summary of GET /v1/status (the JSON of
 * docs/api/openapi.yaml, issue 28): the host's process panel first, then
 * every other instance's panels, each with its fields on at most two
 * lines and each table's row count and first rows. Pure: reads the body
 * it is given (untrusted bytes: t/fuzz/fuzz_ctl_status.c), writes lines
 * of at most `width` characters, every control character of a value
 * shown as '?' (a module or an agent name cannot drive the terminal). */
#ifndef PH_CTL_STATUS_PRINT_H
#define PH_CTL_STATUS_PRINT_H

#include <stddef.h>
#include <stdio.h>

#define CTL_STATUS_WIDTH_MIN 40
#define CTL_STATUS_WIDTH_MAX 400
#define CTL_STATUS_ROWS_SUMMARY 5 /* a table's rows in the summary */

typedef struct ctl_status_view {
  unsigned width;    /* characters a line; clamped to _MIN.._MAX */
  unsigned rows_max; /* rows shown a table (the rest counted) */
} ctl_status_view;

/* The summary of body. 0, or -1 when body is not a status document
 * (an object with an "instances" array): nothing is printed then. */
int ctl_print_status(FILE *out, const char *body, size_t len,
                     const ctl_status_view *v);

/* The terminal's width when out is one, else 100. */
unsigned ctl_status_width(FILE *out);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* See ui_page.h. */
#include "ui_page.h"

#include <inttypes.h>
#include <string.h>

const char page_css[] =
    ":root{--fg:#1d2330;--mute:#5c6475;--line:#d9dde5;--bg:#f6f7f9;"
    "--card:#fff;--accent:#2357c6;--bad:#b3261e}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;font:15px/1.45 system-ui,-apple-system,\"Segoe UI\","
    "Roboto,sans-serif;color:var(--fg);background:var(--bg)}\n"
    "header{display:flex;flex-wrap:wrap;align-items:center;"
    "justify-content:space-between;gap:.5rem;padding:.75rem 1rem;"
    "background:var(--card);border-bottom:1px solid var(--line)}\n"
    "h1{font-size:1.15rem;margin:0}\n"
    "main{max-width:72rem;margin:0 auto;padding:1rem}\n"
    "section.instance{margin-bottom:1.5rem}\n"
    "h2{font-size:1.05rem;margin:.5rem 0}\n"
    "h2 small{color:var(--mute);font-weight:normal}\n"
    "article.panel{background:var(--card);border:1px solid var(--line);"
    "border-radius:6px;padding:.75rem 1rem;margin:.5rem 0}\n"
    "h3{font-size:1rem;margin:0 0 .5rem}\n"
    "h4{font-size:.9rem;margin:.75rem 0 .25rem;color:var(--mute)}\n"
    "dl.fields{display:grid;grid-template-columns:max-content 1fr;"
    "gap:.15rem 1rem;margin:0}\n"
    "dt{color:var(--mute)}\n"
    "dd{margin:0;overflow-wrap:anywhere}\n"
    ".scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}\n"
    "table{border-collapse:collapse;min-width:100%;font-size:.9rem}\n"
    "th,td{text-align:left;padding:.3rem .6rem;"
    "border-bottom:1px solid var(--line);white-space:nowrap}\n"
    "th{background:var(--bg)}\n"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "nav.pager{display:flex;gap:1rem;margin-top:.5rem}\n"
    "a{color:var(--accent)}\n"
    "button{font:inherit;padding:.35rem .9rem;border:1px solid var(--line);"
    "border-radius:4px;background:var(--card);cursor:pointer}\n"
    "form.login{max-width:24rem;margin:3rem auto;background:var(--card);"
    "border:1px solid var(--line);border-radius:6px;padding:1.25rem}\n"
    "form.login label{display:block;margin-bottom:.35rem}\n"
    "form.login input{width:100%;font:inherit;padding:.4rem;"
    "margin-bottom:.75rem;border:1px solid var(--line);border-radius:4px}\n"
    "p.error{color:var(--bad);margin:0 0 .75rem}\n"
    ".empty{color:var(--mute)}\n";

void page_esc(ph_buf *b, const char *s) {
  const char *run = s;
  for (; *s; s++) {
    const char *e = NULL;
    switch (*s) {
    case '&': e = "&amp;"; break;
    case '<': e = "&lt;"; break;
    case '>': e = "&gt;"; break;
    case '"': e = "&quot;"; break;
    case '\'': e = "&#39;"; break;
    }
    if (!e)
      continue;
    buf_append(b, run, (size_t)(s - run));
    buf_puts(b, e);
    run = s + 1;
  }
  buf_append(b, run, (size_t)(s - run));
}

static void head(ph_buf *b, const char *title, int refresh) {
  buf_puts(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
              "<meta name=\"viewport\" content=\"width=device-width, "
              "initial-scale=1\">");
  if (refresh)
    buf_puts(b, "<meta http-equiv=\"refresh\" content=\"5\">");
  buf_puts(b, "<title>");
  page_esc(b, title);
  buf_puts(b, "</title><link rel=\"stylesheet\" href=\"/ui/style.css\">"
              "</head><body>\n");
}

void page_login(ph_buf *b, const char *message) {
  head(b, "proxyhost: log in", 0);
  buf_puts(b, "<main><form class=\"login\" method=\"post\" "
              "action=\"/ui/login\"><h1>proxyhost status</h1>\n");
  if (message) {
    buf_puts(b, "<p class=\"error\">");
    page_esc(b, message);
    buf_puts(b, "</p>\n");
  }
  buf_puts(b, "<label for=\"token\">Admin token</label>"
              "<input id=\"token\" name=\"token\" type=\"password\" "
              "autocomplete=\"current-password\" required autofocus>"
              "<button type=\"submit\">Log in</button></form></main>"
              "</body></html>\n");
}

void page_message(ph_buf *b, const char *title, const char *message) {
  head(b, title, 0);
  buf_puts(b, "<main><h1>");
  page_esc(b, title);
  buf_puts(b, "</h1><p>");
  page_esc(b, message);
  buf_puts(b, "</p><p><a href=\"/ui/\">Back to the status page</a></p>"
              "</main></body></html>\n");
}

typedef struct pctx {
  ph_buf *b;
  const status_query *q;
  const char *instance; /* whose <section> is open */
} pctx;

/* /ui/INSTANCE/PANEL/TABLE?offset=N (names are [a-z0-9_.]: escaped all
 * the same). */
static void table_link(ph_buf *b, const status_panel_v *p,
                       const status_table_v *t, uint64_t offset,
                       const char *text) {
  buf_puts(b, "<a href=\"/ui/");
  page_esc(b, p->instance);
  buf_puts(b, "/");
  page_esc(b, p->name);
  buf_puts(b, "/");
  page_esc(b, t->name);
  buf_printf(b, "?offset=%" PRIu64 "\">", offset);
  page_esc(b, text);
  buf_puts(b, "</a>");
}

static void table_html(pctx *c, const status_panel_v *p,
                       const status_table_v *t) {
  ph_buf *b = c->b;
  buf_puts(b, "<h4>");
  page_esc(b, t->name);
  if (t->offset || t->more)
    buf_printf(b, " (rows %u to %u)", t->offset + (t->n_rows ? 1 : 0),
               t->offset + t->n_rows);
  buf_puts(b, "</h4>\n<div class=\"scroll\"><table><thead><tr>");
  for (uint32_t i = 0; i < t->n_columns; i++) {
    int num = (t->num_mask & PH_STATUS_COL_NUM(i)) != 0;
    buf_puts(b, num ? "<th class=\"n\">" : "<th>");
    page_esc(b, t->columns[i]);
    buf_puts(b, "</th>");
  }
  buf_puts(b, "</tr></thead><tbody>\n");
  for (uint32_t r = 0; r < t->n_rows; r++) {
    buf_puts(b, "<tr>");
    for (uint32_t i = 0; i < t->n_columns; i++) {
      int num = (t->num_mask & PH_STATUS_COL_NUM(i)) != 0;
      buf_puts(b, num ? "<td class=\"n\">" : "<td>");
      page_esc(b, t->cells[(size_t)r * t->n_columns + i]);
      buf_puts(b, "</td>");
    }
    buf_puts(b, "</tr>\n");
  }
  if (t->n_rows == 0)
    buf_printf(b, "<tr><td class=\"empty\" colspan=\"%u\">none</td></tr>\n",
               t->n_columns);
  buf_puts(b, "</tbody></table></div>\n");
  if (t->offset > 0 || t->more) {
    buf_puts(b, "<nav class=\"pager\">");
    if (t->offset > 0) {
      uint32_t lim = c->q->limit;
      table_link(b, p, t, t->offset > lim ? t->offset - lim : 0,
                 "previous");
    }
    if (t->more)
      table_link(b, p, t, (uint64_t)t->offset + t->n_rows, "next");
    buf_puts(b, "</nav>\n");
  }
}

static int on_panel(void *arg, const status_panel_v *p, int first) {
  pctx *c = arg;
  ph_buf *b = c->b;
  (void)first;
  if (!c->instance || strcmp(c->instance, p->instance) != 0) {
    if (c->instance)
      buf_puts(b, "</section>\n");
    buf_puts(b, "<section class=\"instance\"><h2>");
    page_esc(b, p->instance);
    if (strcmp(p->instance, p->module) != 0) {
      buf_puts(b, " <small>");
      page_esc(b, p->module);
      buf_puts(b, "</small>");
    }
    buf_puts(b, "</h2>\n");
    c->instance = p->instance;
  }
  buf_puts(b, "<article class=\"panel\"><h3>");
  page_esc(b, p->title);
  buf_puts(b, "</h3>\n");
  if (p->n_fields) {
    buf_puts(b, "<dl class=\"fields\">");
    for (uint32_t i = 0; i < p->n_fields; i++) {
      const status_field_v *f = &p->fields[i];
      buf_puts(b, "<dt>");
      page_esc(b, f->name);
      buf_puts(b, "</dt><dd>");
      if (f->kind == STATUS_INT)
        buf_printf(b, "%" PRId64, f->num);
      else if (f->kind == STATUS_TEXT)
        page_esc(b, f->text);
      buf_puts(b, "</dd>");
    }
    buf_puts(b, "</dl>\n");
  }
  for (uint32_t i = 0; i < p->n_tables; i++)
    table_html(c, p, &p->tables[i]);
  buf_puts(b, "</article>\n");
  return b->overflow ? -1 : 0;
}

int page_status(ph_panels *s, const status_query *q, ph_buf *b) {
  head(b, "proxyhost status", 1);
  buf_puts(b, "<header><h1><a href=\"/ui/\">proxyhost status</a></h1>"
              "<form method=\"post\" action=\"/ui/logout\">"
              "<button type=\"submit\">Log out</button></form></header>\n"
              "<main>\n");
  pctx c = {b, q, NULL};
  int rc = status_walk(s, q, on_panel, &c);
  if (rc != 200)
    return rc;
  if (c.instance)
    buf_puts(b, "</section>\n");
  buf_puts(b, "</main></body></html>\n");
  return b->overflow ? 503 : 200;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* RFC 6455 for both ends as pure code (tm_wsc.h). */
#include "tm_wsc.h"

#include "lib/bw.h"
#include "lib/http1_head.h"

#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

void tm_wsc_key(const uint8_t random16[16], char out[TM_WSC_KEY_LEN + 1]) {
  EVP_EncodeBlock((unsigned char *)out, random16, 16);
  out[TM_WSC_KEY_LEN] = '\0';
}

/* ---- the request ----------------------------------------------------- */

static int field_ok(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0')
      return 0;
  return 1;
}

/* The finished head's length, or -1 when it did not fit. */
static int bw_result(const ph_bw *w) {
  return ph_bw_over(w) || ph_bw_len(w) > (size_t)INT32_MAX
             ? -1
             : (int)ph_bw_len(w);
}

int tm_wsc_request(char *buf, size_t cap, const char *path, const char *host,
                   const char *offer, const char *bearer, size_t bearer_len,
                   const char *key) {
  if (!buf || !path || !host || !key || (bearer_len && !bearer))
    return -1;
  if (!field_ok(path, strlen(path)) || !field_ok(host, strlen(host)) ||
      (offer && !field_ok(offer, strlen(offer))) ||
      !field_ok(bearer ? bearer : "", bearer_len) ||
      !field_ok(key, strlen(key)))
    return -1;
  ph_bw w;
  ph_bw_init(&w, buf, cap, PH_BW_BYTES);
  ph_bw_puts(&w, "GET ");
  ph_bw_puts(&w, path);
  ph_bw_puts(&w, " HTTP/1.1\r\nHost: ");
  ph_bw_puts(&w, host);
  ph_bw_puts(&w, "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: ");
  ph_bw_puts(&w, key);
  ph_bw_puts(&w, "\r\nSec-WebSocket-Version: 13\r\n");
  if (offer && *offer) {
    ph_bw_puts(&w, "Sec-WebSocket-Protocol: ");
    ph_bw_puts(&w, offer);
    ph_bw_puts(&w, "\r\n");
  }
  if (bearer_len) {
    ph_bw_puts(&w, "Authorization: Bearer ");
    ph_bw_put(&w, bearer, bearer_len);
    ph_bw_puts(&w, "\r\n");
  }
  ph_bw_puts(&w, "\r\n");
  return bw_result(&w);
}

/* ---- the 101 --------------------------------------------------------- */

static int name_is(const char *p, size_t n, const char *name) {
  return strlen(name) == n && strncasecmp(p, name, n) == 0;
}

static void expected_accept(const char *key, char out[29]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  char in[TM_WSC_KEY_LEN + sizeof(WS_GUID)];
  size_t kl = strlen(key);
  if (kl > TM_WSC_KEY_LEN)
    kl = TM_WSC_KEY_LEN;
  memcpy(in, key, kl);
  memcpy(in + kl, WS_GUID, sizeof(WS_GUID) - 1);
  if (!EVP_Digest(in, kl + sizeof(WS_GUID) - 1, md, &mdlen, EVP_sha1(), NULL) ||
      mdlen != 20) {
    out[0] = '\0'; /* matches no header value */
    return;
  }
  EVP_EncodeBlock((unsigned char *)out, md, 20);
  out[28] = '\0';
}

static int bad(const char **why, const char *s) {
  *why = s;
  return TM_WSC_HS_BAD;
}

/* ---- heads: the shared strict scanner (lib/http1_head.h) --------------- */

/* At most this many field lines in a head (a 101 or an upgrade request
 * has about eight). */
#define TM_WSC_FIELDS_MAX 100

typedef struct head_scan {
  h1_head h;
  h1_field f[TM_WSC_FIELDS_MAX];
} head_scan;

/* Scans buf[0..len) (all bytes received so far) as one head of kind, at
 * most max bytes, CRLF line ends only: h1_feed's result. */
static int scan_head(head_scan *s, const char *buf, size_t len, int kind,
                     uint32_t max) {
  h1_limits lim = {0, 0, max, TM_WSC_FIELDS_MAX};
  size_t used;
  h1_init(&s->h, kind, 0, &lim, s->f);
  return h1_feed(&s->h, buf, len, &used);
}

/* What a status other than 101 means for a tunnel connection, in words
 * an operator can act on (issue 24 item 12: a 404 is a wrong path, not
 * "not HTTP/1.1"). Static strings. */
static const char *status_meaning(int st) {
  switch (st) {
  case 101:
    return "a 101 over HTTP/1.0: WebSocket needs HTTP/1.1";
  case 400:
    return "400 Bad Request: the server did not take the upgrade request";
  case 401:
    return "401 Unauthorized: the server refused the token";
  case 403:
    return "403 Forbidden: the token may not open this connection";
  case 404:
    return "404 Not Found: nothing serves the URL's path (server_url must "
           "end in the server's path, /tunnel by default)";
  case 426:
    return "426 Upgrade Required: the server wants another protocol version";
  case 429:
    return "429 Too Many Requests: the server limits connections; retried "
           "with backoff";
  case 502:
  case 503:
  case 504:
    return "the server, or a proxy in front of it, is unavailable (5xx)";
  }
  if (st >= 500)
    return "a server error (5xx)";
  if (st >= 400)
    return "the request was refused (4xx): not a tunnel server at this URL?";
  if (st >= 300)
    return "a redirect (3xx): the URL points elsewhere and redirects are "
           "not followed";
  return "the server did not switch protocols";
}

int tm_wsc_response(const uint8_t *ubuf, size_t len, const char *key,
                    tm_wsc_answer *ans, const char **why) {
  const char *buf = (const char *)ubuf;
  head_scan sc;
  *why = NULL;
  memset(ans, 0, sizeof(*ans));
  int r = scan_head(&sc, buf, len, H1_RESPONSE, TM_WSC_RESP_MAX);
  const h1_head *h = &sc.h;
  if (r == H1_MORE)
    return TM_WSC_HS_MORE;
  if (r == H1_ERROR && h->error == H1_E_HEAD_TOO_LONG)
    return bad(why, "the answer's head is too long");
  /* Status line: HTTP/1.x SP 3DIGIT SP reason CRLF. An HTTP/1.0 answer
   * (a plain web server's 404, say) is read for its status, which says
   * what went wrong; only HTTP/1.1 can switch to WebSocket. */
  if (r == H1_ERROR && !h->start_len)
    return bad(why, h->seen <= 13 || h->error == H1_E_VERSION ||
                            h->error == H1_E_STATUS
                        ? "the answer is not HTTP: not a web server at this "
                          "address?"
                        : "the answer's status line is malformed");
  if (h->major != 1 || h->minor > 1)
    return bad(why, "the answer is not HTTP: not a web server at this "
                    "address?");
  ans->status = h->status;
  if (h->minor == 0 && ans->status == 101)
    return bad(why, status_meaning(101));
  if (ans->status != 101) {
    /* Its fields are not read: the status says it all. */
    *why = status_meaning(ans->status);
    return TM_WSC_HS_REFUSED;
  }
  if (r == H1_ERROR)
    return bad(why, "a header line is malformed");
  size_t end = h->head_len;
  char want[29];
  expected_accept(key, want);
  int upgrade = 0, connection = 0, accept = 0, protocols = 0;
  for (uint32_t i = 0; i < h->n_fields; i++) {
    const char *nm = buf + sc.f[i].name.off, *v = buf + sc.f[i].value.off;
    size_t nl = sc.f[i].name.len, vl = sc.f[i].value.len;
    if (name_is(nm, nl, "Upgrade")) {
      if (!(vl == 9 && strncasecmp(v, "websocket", 9) == 0))
        return bad(why, "the answer upgrades to something else");
      upgrade = 1;
    } else if (name_is(nm, nl, "Connection")) {
      if (h1_list_has(v, vl, "upgrade"))
        connection = 1;
    } else if (name_is(nm, nl, "Sec-WebSocket-Accept")) {
      if (accept || vl != 28 || memcmp(v, want, 28) != 0)
        return bad(why, "Sec-WebSocket-Accept does not match the key");
      accept = 1;
    } else if (name_is(nm, nl, "Sec-WebSocket-Extensions")) {
      return bad(why, "the server chose an extension that was not offered");
    } else if (name_is(nm, nl, "Sec-WebSocket-Protocol")) {
      if (protocols++ || vl == 0 || vl >= sizeof(ans->subproto))
        return bad(why, "Sec-WebSocket-Protocol is malformed");
      memcpy(ans->subproto, v, vl);
      ans->subproto[vl] = '\0';
    }
  }
  if (!upgrade || !connection)
    return bad(why, "the answer lacks Upgrade or Connection");
  if (!accept)
    return bad(why, "the answer lacks Sec-WebSocket-Accept");
  return (int)end;
}

/* ---- the server's side of the handshake -------------------------------- */

/* A key is base64 of 16 bytes: 22 characters, the last of them carrying
 * only two bits, then "==". */
static int key_ok(const char *v, size_t n) {
  static const char b64[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (n != TM_WSC_KEY_LEN || v[22] != '=' || v[23] != '=' ||
      !memchr("AQgw", v[21], 4))
    return 0;
  for (size_t i = 0; i < 22; i++)
    if (!v[i] || !memchr(b64, v[i], 64))
      return 0;
  return 1;
}

/* The first name of the offer v[0..n) (a comma list) that names has, as
 * its index into names; -1 when none. */
static int offer_pick(const char *v, size_t n, const char *const *names) {
  size_t i = 0;
  while (i < n) {
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
      i++;
    size_t s = i;
    while (i < n && v[i] != ',' && v[i] != ' ' && v[i] != '\t')
      i++;
    for (int k = 0; names && names[k] && i > s; k++)
      if (strlen(names[k]) == i - s && !memcmp(v + s, names[k], i - s))
        return k;
  }
  return -1;
}

static int refuse_up(tm_wsc_upgrade *up, int status, const char **why,
                     const char *s, size_t end) {
  up->status = status;
  *why = s;
  return (int)end;
}

int tm_wsc_upgrade_parse(const uint8_t *ubuf, size_t len, const char *path,
                         const char *const *names, tm_wsc_upgrade *up,
                         const char **why) {
  const char *buf = (const char *)ubuf;
  head_scan sc;
  *why = NULL;
  memset(up, 0, sizeof(*up));
  up->chosen = -1;
  int r = scan_head(&sc, buf, len, H1_REQUEST, TM_WSC_REQ_MAX);
  const h1_head *h = &sc.h;
  if (r == H1_MORE)
    return TM_WSC_HS_MORE;
  if (r == H1_ERROR) {
    if (h->error == H1_E_HEAD_TOO_LONG || h->error == H1_E_TOO_MANY_FIELDS) {
      up->status = 431;
      return bad(why, "the request's head is too long");
    }
    up->status = 400;
    return bad(why, h->start_len ? "a header line is malformed"
                                 : "the request line is malformed");
  }
  /* Request line: method SP request-target SP HTTP/1.x */
  if (h->major != 1 || h->minor > 1) {
    up->status = 400;
    return bad(why, "the request line is malformed");
  }
  size_t end = h->head_len;
  int get = h->method.len == 3 && !memcmp(buf + h->method.off, "GET", 3);
  int http11 = h->minor == 1;
  const char *target = buf + h->target.off;
  size_t tl = h->target.len;
  const char *q = memchr(target, '?', tl);
  size_t pl = q ? (size_t)(q - target) : tl;
  int path_ok = path && strlen(path) == pl && !memcmp(target, path, pl);

  int host = 0, upgrade = 0, other_upgrade = 0, connection = 0, keys = 0,
      auths = 0, version = 0, offered = 0;
  for (uint32_t i = 0; i < h->n_fields; i++) {
    const char *nm = buf + sc.f[i].name.off, *v = buf + sc.f[i].value.off;
    size_t nl = sc.f[i].name.len, vl = sc.f[i].value.len;
    if (name_is(nm, nl, "Host")) {
      host++;
    } else if (name_is(nm, nl, "Upgrade")) {
      if (h1_list_has(v, vl, "websocket"))
        upgrade = 1;
      else
        other_upgrade = 1;
    } else if (name_is(nm, nl, "Connection")) {
      if (h1_list_has(v, vl, "upgrade"))
        connection = 1;
    } else if (name_is(nm, nl, "Sec-WebSocket-Key")) {
      if (keys++ == 0 && key_ok(v, vl)) {
        memcpy(up->key, v, TM_WSC_KEY_LEN);
        up->key[TM_WSC_KEY_LEN] = '\0';
      }
    } else if (name_is(nm, nl, "Sec-WebSocket-Version")) {
      version = vl == 2 && !memcmp(v, "13", 2) && version != -1 ? 13 : -1;
    } else if (name_is(nm, nl, "Sec-WebSocket-Protocol")) {
      offered = 1;
      if (up->chosen < 0)
        up->chosen = offer_pick(v, vl, names);
    } else if (name_is(nm, nl, "Authorization")) {
      auths++;
      up->auth_off = (size_t)(v - buf);
      up->auth_len = vl;
    }
  }
  if (!upgrade)
    return refuse_up(up, 404, why,
                     other_upgrade ? "an upgrade to something else"
                                   : "not a WebSocket upgrade",
                     end);
  if (!path_ok)
    return refuse_up(up, 404, why, "an upgrade on another path", end);
  if (!get || !http11 || host != 1 || !connection)
    return refuse_up(up, 400, why, "not a GET over HTTP/1.1 with one Host and "
                              "Connection: upgrade", end);
  if (keys != 1 || !up->key[0])
    return refuse_up(up, 400, why, "Sec-WebSocket-Key is missing or malformed",
                     end);
  if (version != 13)
    return refuse_up(up, 426, why, "Sec-WebSocket-Version is not 13", end);
  if (auths > 1)
    return refuse_up(up, 400, why, "more than one Authorization header", end);
  if (!offered)
    return refuse_up(up, 400, why, "no subprotocol was offered", end);
  if (up->chosen < 0)
    return refuse_up(up, 400, why, "no subprotocol offered is supported", end);
  if (!auths)
    up->auth_off = 0;
  return (int)end;
}

int tm_wsc_accept(char *buf, size_t cap, const char *key,
                  const char *subproto) {
  char acc[29];
  expected_accept(key, acc);
  if (!acc[0] || (subproto && !field_ok(subproto, strlen(subproto))))
    return -1;
  ph_bw w;
  ph_bw_init(&w, buf, cap, PH_BW_BYTES);
  ph_bw_puts(&w, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                 "Connection: Upgrade\r\nSec-WebSocket-Accept: ");
  ph_bw_puts(&w, acc);
  ph_bw_puts(&w, "\r\n");
  if (subproto) {
    ph_bw_puts(&w, "Sec-WebSocket-Protocol: ");
    ph_bw_puts(&w, subproto);
    ph_bw_puts(&w, "\r\n");
  }
  ph_bw_puts(&w, "\r\n");
  return bw_result(&w);
}

int tm_wsc_refusal(char *buf, size_t cap, int status) {
  const char *line;
  switch (status) {
  case 404: line = "404 Not Found"; break;
  case 426: line = "426 Upgrade Required"; break;
  case 431: line = "431 Request Header Fields Too Large"; break;
  case 503: line = "503 Service Unavailable"; break;
  default: line = "400 Bad Request"; break;
  }
  ph_bw w;
  ph_bw_init(&w, buf, cap, PH_BW_BYTES);
  ph_bw_puts(&w, "HTTP/1.1 ");
  ph_bw_puts(&w, line);
  if (status == 426)
    ph_bw_puts(&w, "\r\nSec-WebSocket-Version: 13");
  ph_bw_puts(&w, "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  return bw_result(&w);
}

/* ---- frames out ------------------------------------------------------ */

size_t tm_wsc_frame_header(uint8_t *out, unsigned opcode, uint64_t len,
                           const uint8_t *mask) {
  size_t n = 2;
  uint8_t mbit = mask ? 0x80u : 0;
  out[0] = (uint8_t)(0x80u | (opcode & 0x0fu));
  if (len < 126) {
    out[1] = (uint8_t)(mbit | len);
  } else if (len <= 0xffff) {
    out[1] = mbit | 126u;
    out[2] = (uint8_t)(len >> 8);
    out[3] = (uint8_t)len;
    n = 4;
  } else {
    out[1] = mbit | 127u;
    for (int i = 0; i < 8; i++)
      out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    n = 10;
  }
  if (!mask)
    return n;
  memcpy(out + n, mask, 4);
  return n + 4;
}

void tm_wsc_mask(uint8_t *dst, const uint8_t *src, size_t n,
                 const uint8_t mask[4], size_t off) {
  uint8_t m[8];
  for (int i = 0; i < 8; i++)
    m[i] = mask[(off + (size_t)i) & 3];
  uint64_t m64;
  memcpy(&m64, m, 8);
  size_t i = 0;
  /* Eight bytes a step through memcpy: no alignment assumed, and the
   * compiler turns it into wide loads and stores. */
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, src + i, 8);
    w ^= m64;
    memcpy(dst + i, &w, 8);
  }
  for (; i < n; i++)
    dst[i] = src[i] ^ m[i & 7];
}

/* ---- frames in ------------------------------------------------------- */

void tm_wsc_rx_init(tm_wsc_rx *rx, int role) {
  memset(rx, 0, sizeof(*rx));
  rx->role = role == TM_WSC_SERVER ? TM_WSC_SERVER : TM_WSC_CLIENT;
  rx->hdr_need = 2;
}

static enum tm_wsc_event rx_fail(tm_wsc_rx *rx, tm_wsc_ev *ev,
                                 const char *why) {
  rx->hdr_need = 0; /* stays in error */
  ev->why = why;
  return TM_WSC_EV_ERROR;
}

/* The header is whole: checks it and sets up the payload. */
static const char *rx_header(tm_wsc_rx *rx) {
  uint8_t b0 = rx->hdr[0], b1 = rx->hdr[1];
  unsigned op = b0 & 0x0fu;
  if (b0 & 0x70u)
    return "a frame has a reserved bit set";
  if (rx->role == TM_WSC_CLIENT && (b1 & 0x80u))
    return "the server sent a masked frame";
  if (rx->role == TM_WSC_SERVER && !(b1 & 0x80u))
    return "the client sent an unmasked frame";
  if (op != TM_WSC_OP_CONT && op != TM_WSC_OP_TEXT && op != TM_WSC_OP_BINARY &&
      op != TM_WSC_OP_CLOSE && op != TM_WSC_OP_PING && op != TM_WSC_OP_PONG)
    return "a frame has an unknown opcode";
  uint64_t len = b1 & 0x7fu;
  if (len == 126) {
    len = ((uint64_t)rx->hdr[2] << 8) | rx->hdr[3];
  } else if (len == 127) {
    len = 0;
    for (int i = 0; i < 8; i++)
      len = (len << 8) | rx->hdr[2 + i];
    if (len >> 63)
      return "a frame's length has its top bit set";
  }
  rx->opcode = (uint8_t)op;
  rx->fin = (b0 & 0x80u) ? 1 : 0;
  rx->left = len;
  if (rx->role == TM_WSC_SERVER)
    memcpy(rx->mask, rx->hdr + rx->hdr_need - 4, 4);
  rx->moff = 0;
  if (op >= 0x8) {
    if (!rx->fin || len > TM_WSC_CONTROL_MAX)
      return "a control frame is fragmented or too long";
    rx->ctl_len = 0;
  } else if (op == TM_WSC_OP_CONT) {
    if (!rx->msg_open)
      return "a continuation frame outside a message";
  } else {
    if (rx->msg_open)
      return "a new message inside a fragmented one";
    rx->msg_open = 1;
    rx->msg_text = op == TM_WSC_OP_TEXT;
    rx->msg_started = 0;
  }
  return NULL;
}

/* Server role: unmasks n payload bytes of the current frame in place. */
static void rx_unmask(tm_wsc_rx *rx, uint8_t *p, size_t n) {
  if (rx->role != TM_WSC_SERVER || !n)
    return;
  tm_wsc_mask(p, p, n, rx->mask, (size_t)(rx->moff & 3));
  rx->moff += n;
}

enum tm_wsc_event tm_wsc_rx_next(tm_wsc_rx *rx, uint8_t *in, size_t len,
                                 size_t *used, tm_wsc_ev *ev) {
  size_t at = 0;
  memset(ev, 0, sizeof(*ev));
  *used = 0;
  if (rx->hdr_need == 0)
    return rx_fail(rx, ev, "the connection already failed");
  for (;;) {
    if (rx->hdr_have < rx->hdr_need) {
      /* Gathering a header: byte by byte, at most fourteen bytes a
       * frame. */
      while (rx->hdr_have < rx->hdr_need && at < len) {
        rx->hdr[rx->hdr_have++] = in[at++];
        if (rx->hdr_have == 2) {
          unsigned l7 = rx->hdr[1] & 0x7fu;
          rx->hdr_need = l7 == 126 ? 4 : l7 == 127 ? 10 : 2;
          if (rx->hdr[1] & 0x80u)
            rx->hdr_need += 4; /* the masking key (checked below) */
        }
      }
      if (rx->hdr_have < rx->hdr_need) {
        *used = at;
        return TM_WSC_EV_NEED;
      }
      const char *why = rx_header(rx);
      if (why) {
        *used = at;
        return rx_fail(rx, ev, why);
      }
    }
    /* The payload. */
    if (rx->opcode >= 0x8) {
      size_t take = len - at < rx->left ? len - at : (size_t)rx->left;
      memcpy(rx->ctl + rx->ctl_len, in + at, take);
      rx_unmask(rx, rx->ctl + rx->ctl_len, take);
      rx->ctl_len = (uint8_t)(rx->ctl_len + take);
      at += take;
      rx->left -= take;
      *used = at;
      if (rx->left)
        return TM_WSC_EV_NEED;
      rx->hdr_have = 0;
      rx->hdr_need = 2;
      ev->data = rx->ctl;
      ev->len = rx->ctl_len;
      ev->opcode = rx->opcode;
      return TM_WSC_EV_CONTROL;
    }
    size_t take = len - at < rx->left ? len - at : (size_t)rx->left;
    int frame_done = take == rx->left;
    int last = frame_done && rx->fin;
    if (take == 0 && !last) {
      if (frame_done) {
        /* An empty non-final fragment: nothing to report. */
        rx->hdr_have = 0;
        rx->hdr_need = 2;
        continue;
      }
      *used = at;
      return TM_WSC_EV_NEED;
    }
    rx_unmask(rx, in + at, take);
    ev->data = in + at;
    ev->len = take;
    ev->opcode = rx->msg_text ? TM_WSC_OP_TEXT : TM_WSC_OP_BINARY;
    ev->first = !rx->msg_started;
    ev->last = last;
    rx->msg_started = 1;
    rx->left -= take;
    ev->frame_left = rx->left;
    at += take;
    if (frame_done) {
      rx->hdr_have = 0;
      rx->hdr_need = 2;
      if (rx->fin)
        rx->msg_open = 0;
    }
    *used = at;
    return TM_WSC_EV_DATA;
  }
}

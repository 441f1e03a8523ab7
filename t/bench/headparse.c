/* SPDX-License-Identifier: BSD-2-Clause */
/* The http_proxy frontend's head parsing cost (issue 25 item 2): a
 * browser-like request head and an origin's response head, each parsed
 * N times through hp_head_init / hp_head_parse / hp_head_framing /
 * hp_head_free as the module does for every request, whole and in
 * 64-byte reads. Prints the CPU time per head (CLOCK_PROCESS_CPUTIME_ID),
 * best of BENCH_REPEATS rounds. On demand: `make bench-headparse`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_proxy/http_body.h"
#include "http_proxy/http_head.h"

static const char req[] =
    "GET http://www.example.com/search/results?q=proxy+host&page=2 HTTP/1.1\r\n"
    "Host: www.example.com\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 "
    "Firefox/120.0\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
    "image/webp,*/*;q=0.8\r\n"
    "Accept-Language: en-US,en;q=0.5\r\n"
    "Accept-Encoding: gzip, deflate\r\n"
    "Referer: http://www.example.com/search/results?q=proxy+host\r\n"
    "Cookie: session=0123456789abcdef0123456789abcdef; theme=dark; lang=en\r\n"
    "Proxy-Connection: keep-alive\r\n"
    "Upgrade-Insecure-Requests: 1\r\n"
    "Sec-Fetch-Dest: document\r\n"
    "Sec-Fetch-Mode: navigate\r\n"
    "Sec-Fetch-Site: same-origin\r\n"
    "Proxy-Authorization: Basic dXNlcjpwYXNzd29yZA==\r\n"
    "\r\n";

static const char resp[] =
    "HTTP/1.1 200 OK\r\n"
    "Date: Sun, 06 Dec 2026 12:00:00 GMT\r\n"
    "Server: Apache/2.4.57 (Debian)\r\n"
    "Last-Modified: Sat, 05 Dec 2026 10:00:00 GMT\r\n"
    "ETag: \"2aa6-60c1b1a0c0a40\"\r\n"
    "Accept-Ranges: bytes\r\n"
    "Content-Length: 10918\r\n"
    "Vary: Accept-Encoding\r\n"
    "Cache-Control: max-age=3600\r\n"
    "Keep-Alive: timeout=5, max=100\r\n"
    "Connection: Keep-Alive\r\n"
    "Content-Type: text/html; charset=UTF-8\r\n"
    "\r\n";

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int sink;

/* One head parsed as the module does; step 0: all at once. */
static void once(const char *text, size_t n, enum http_parser_type kind,
                 size_t step) {
  static const hp_head_limits lim = {8192, 16384, 100};
  http_head h;
  hp_head_init(&h, kind, &lim);
  int r = HH_MORE;
  if (!step)
    r = hp_head_parse(&h, text, n);
  for (size_t got = step; step && r == HH_MORE; got += step)
    r = hp_head_parse(&h, text, got < n ? got : n);
  int kindf = 0, has = 0;
  uint64_t len = 0;
  if (r != HH_DONE ||
      hp_head_framing(&h, text, &kindf, &len, &has) != 0) {
    fprintf(stderr, "headparse: the head did not parse\n");
    exit(1);
  }
  sink += (int)h.head_len + kindf;
  hp_head_free(&h);
}

static void run(const char *name, const char *text, enum http_parser_type kind,
                size_t step, long n, int repeats) {
  size_t len = strlen(text);
  double best = 1e9;
  for (int r = 0; r < repeats; r++) {
    double t0 = cpu_now();
    for (long i = 0; i < n; i++)
      once(text, len, kind, step);
    double t = cpu_now() - t0;
    if (t < best)
      best = t;
  }
  printf("%-28s %5zu bytes  %8.1f ns CPU per head  (%ld heads, best of %d)\n",
         name, len, best / (double)n * 1e9, n, repeats);
}

int main(void) {
  const char *e = getenv("BENCH_HEADS");
  long n = e ? atol(e) : 200000;
  e = getenv("BENCH_REPEATS");
  int repeats = e ? atoi(e) : 5;
  if (n < 1 || repeats < 1)
    return 2;
  run("request, whole", req, HTTP_REQUEST, 0, n, repeats);
  run("request, 64-byte reads", req, HTTP_REQUEST, 64, n / 4, repeats);
  run("response, whole", resp, HTTP_RESPONSE, 0, n, repeats);
  run("response, 64-byte reads", resp, HTTP_RESPONSE, 64, n / 4, repeats);
  return sink == 42; /* keeps the work */
}

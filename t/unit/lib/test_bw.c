/* SPDX-License-Identifier: BSD-2-Clause */
/* modules/lib/bw.{c,h}: the bounded writer at every boundary (exactly
 * full, one byte over, printf truncation), the sticky flag, NUL
 * termination in text mode, and bytes mode using the whole array. */
#include <string.h>

#include "lib/bw.h"
#include "tap.h"

static void test_text(void) {
  char b[6];
  ph_bw w;
  memset(b, 'x', sizeof(b));
  ph_bw_init(&w, b, sizeof(b), PH_BW_TEXT);
  is_str(b, "", "text: starts terminated");
  is_int(ph_bw_puts(&w, "ab"), 0, "text: an append that fits");
  is_int(ph_bw_putc(&w, 'c'), 0, "text: putc");
  is_int(ph_bw_put(&w, "de", 2), 0, "text: exactly full (cap - 1 bytes)");
  is_str(b, "abcde", "text: terminated when full");
  is_int((int)ph_bw_len(&w), 5, "text: len 5");
  ok(!ph_bw_over(&w), "text: exactly full is not over");
  is_int((int)ph_bw_room(&w), 0, "text: no room left");
  is_int(ph_bw_put(&w, "", 0), 0, "text: an empty append still fits");
  is_int(ph_bw_putc(&w, 'f'), -1, "text: one byte over fails");
  ok(ph_bw_over(&w), "text: one byte over sets the flag");
  is_str(b, "abcde", "text: the failed append added nothing");
  is_int(ph_bw_put(&w, "", 0), -1, "text: the flag sticks, even for 0 bytes");

  ph_bw_init(&w, b, sizeof(b), PH_BW_TEXT);
  ok(!ph_bw_over(&w), "init clears the flag");
  is_int(ph_bw_puts(&w, "abcdef"), -1, "text: cap bytes do not fit");
  is_str(b, "", "text: nothing partial written");
  is_int(ph_bw_puts(&w, "a"), -1, "text: later appends fail though they'd fit");
  is_int((int)ph_bw_len(&w), 0, "text: len unchanged after overflow");
}

static void test_printf(void) {
  char b[8];
  ph_bw w;
  ph_bw_init(&w, b, sizeof(b), PH_BW_TEXT);
  is_int(ph_bw_printf(&w, "%d-", 12), 0, "printf: fits");
  is_int(ph_bw_printf(&w, "%s", "abcd"), 0, "printf: exactly full");
  is_str(b, "12-abcd", "printf: the text");
  is_int(ph_bw_printf(&w, "%s", ""), 0, "printf: empty output when full");

  ph_bw_init(&w, b, sizeof(b), PH_BW_TEXT);
  ph_bw_puts(&w, "ab");
  is_int(ph_bw_printf(&w, "%s", "cdefgh"), -1, "printf: truncation fails");
  ok(ph_bw_over(&w), "printf: truncation sets the flag");
  is_str(b, "ab", "printf: truncated output taken back, NUL at len");
  is_int((int)ph_bw_len(&w), 2, "printf: len unchanged");
  is_int(ph_bw_printf(&w, "x"), -1, "printf: the flag sticks");

  char c[4];
  ph_bw_init(&w, c, sizeof(c), PH_BW_BYTES);
  is_int(ph_bw_printf(&w, "%d", 1234), 0, "bytes printf: exactly full");
  ok(memcmp(c, "1234", 4) == 0, "bytes printf: all four bytes, no NUL");
  ph_bw_init(&w, c, sizeof(c), PH_BW_BYTES);
  is_int(ph_bw_printf(&w, "%d", 12345), -1, "bytes printf: one over");
  is_int((int)ph_bw_len(&w), 0, "bytes printf: len unchanged");
}

static void test_bytes(void) {
  unsigned char b[4];
  ph_bw w;
  ph_bw_init(&w, b, sizeof(b), PH_BW_BYTES);
  is_int(ph_bw_put(&w, "\0\1\2", 3), 0, "bytes: NULs are data");
  is_int(ph_bw_putc(&w, 0xff), 0, "bytes: exactly full uses every byte");
  ok(memcmp(b, "\0\1\2\xff", 4) == 0, "bytes: the bytes");
  ok(!ph_bw_over(&w), "bytes: exactly full is not over");
  is_int(ph_bw_putc(&w, 1), -1, "bytes: one byte over fails");
  ok(ph_bw_over(&w), "bytes: and sets the flag");
  is_int((int)ph_bw_len(&w), 4, "bytes: len stays 4");

  ph_bw_init(&w, NULL, 0, PH_BW_BYTES);
  is_int(ph_bw_put(&w, "", 0), 0, "bytes: an empty array takes 0 bytes");
  is_int(ph_bw_putc(&w, 'a'), -1, "bytes: and not one more");
  ph_bw_init(&w, NULL, 0, PH_BW_TEXT);
  ok(ph_bw_over(&w), "text: an empty array starts overflowed");
  char one[1] = {'x'};
  ph_bw_init(&w, one, 1, PH_BW_TEXT);
  is_int(one[0], 0, "text: a 1-byte array holds the NUL");
  is_int(ph_bw_put(&w, "", 0), 0, "text: and 0 bytes of text");
  is_int(ph_bw_putc(&w, 'a'), -1, "text: but no text");
}

static void test_in_place(void) {
  char b[5];
  ph_bw w;
  ph_bw_init(&w, b, sizeof(b), PH_BW_TEXT);
  ph_bw_puts(&w, "a");
  is_int((int)ph_bw_room(&w), 3, "in place: room for 3 before the NUL");
  memcpy(ph_bw_tail(&w), "bcd", 3);
  is_int(ph_bw_wrote(&w, 3), 0, "in place: 3 bytes counted");
  is_str(b, "abcd", "in place: terminated after them");
  ph_bw_init(&w, b, sizeof(b), PH_BW_BYTES);
  is_int(ph_bw_wrote(&w, 6), -1, "in place: more than the room fails");
  ok(ph_bw_over(&w) && ph_bw_len(&w) == 0, "in place: flag set, len kept");
  ph_bw_init(&w, b, sizeof(b), PH_BW_BYTES);
  ph_bw_fail(&w);
  is_int(ph_bw_putc(&w, 'a'), -1, "fail: sets the sticky flag");
  is_int((int)ph_bw_room(&w), 0, "fail: no room once over");
}

int main(void) {
  plan_lazy();
  test_text();
  test_printf();
  test_bytes();
  test_in_place();
  return done_testing();
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* modules/lib/json.{c,h}: the strict RFC 8259 reader (every grammar
 * corner, UTF-8, escapes and surrogates, duplicate keys, the bounds) and
 * the writer (escaping, bounds, misuse), and round trips between them. */
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "tap.h"

static json_tok toks[64];

static int parse(const char *s) {
  json_doc d;
  return json_parse(&d, s, strlen(s), toks, 64, 16, NULL);
}

static void accept(const char *s, const char *what) {
  int rc = parse(s);
  if (rc != JSON_OK)
    printf("# %s: %d\n", s, rc);
  ok(rc == JSON_OK, what);
}

static void refuse(const char *s, int want, const char *what) {
  is_int(parse(s), want, what);
}

static void test_grammar(void) {
  accept("{}", "empty object");
  accept("[]", "empty array");
  accept(" \t\r\n{ \"a\" : [ 1 , -0 , 0.5 , 1e5 , 1E-2 , -1.5e+3 ] } \n",
         "whitespace everywhere it may be");
  accept("\"top\"", "a string at the top level (RFC 8259)");
  accept("123", "a number at the top level");
  accept("true", "true");
  accept("null", "null");
  accept("[[[[]]]]", "nesting");
  refuse("", JSON_ESYNTAX, "empty input");
  refuse("   ", JSON_ESYNTAX, "only whitespace");
  refuse("[1,]", JSON_ESYNTAX, "trailing comma in an array");
  refuse("{\"a\":1,}", JSON_ESYNTAX, "trailing comma in an object");
  refuse("[,1]", JSON_ESYNTAX, "leading comma");
  refuse("{\"a\" 1}", JSON_ESYNTAX, "no colon");
  refuse("{a:1}", JSON_ESYNTAX, "unquoted key");
  refuse("{'a':1}", JSON_ESYNTAX, "single quotes");
  refuse("{1:1}", JSON_ESYNTAX, "a number as a key");
  refuse("[01]", JSON_ESYNTAX, "leading zero");
  refuse("[+1]", JSON_ESYNTAX, "plus sign");
  refuse("[.5]", JSON_ESYNTAX, "no integer part");
  refuse("[1.]", JSON_ESYNTAX, "no fraction digits");
  refuse("[1e]", JSON_ESYNTAX, "no exponent digits");
  refuse("[-]", JSON_ESYNTAX, "a lone minus");
  refuse("[NaN]", JSON_ESYNTAX, "NaN");
  refuse("[Infinity]", JSON_ESYNTAX, "Infinity");
  refuse("[tru]", JSON_ESYNTAX, "a cut literal");
  refuse("[True]", JSON_ESYNTAX, "literals are lower case");
  refuse("{} {}", JSON_ESYNTAX, "two top-level values");
  refuse("{}x", JSON_ESYNTAX, "trailing bytes");
  refuse("[1 2]", JSON_ESYNTAX, "no comma");
  refuse("[1] /* c */", JSON_ESYNTAX, "comments");
  refuse("[\"a\tb\"]", JSON_ESYNTAX, "a raw tab inside a string");
  refuse("[\"a\nb\"]", JSON_ESYNTAX, "a raw newline inside a string");
  refuse("[\"abc]", JSON_ESYNTAX, "an unterminated string");
  refuse("[\"\\x\"]", JSON_ESYNTAX, "an unknown escape");
  refuse("[\"\\", JSON_ESYNTAX, "a backslash at the end");
  refuse("{\"a\":1", JSON_ESYNTAX, "an unclosed object");
  refuse("[\f]", JSON_ESYNTAX, "form feed is not whitespace");
  is_int(json_parse(&(json_doc){0}, "[1]", 3, toks, 64, 16, NULL), JSON_OK,
         "a length without NUL");
  is_int(json_parse(&(json_doc){0}, "[1]\0", 4, toks, 64, 16, NULL),
         JSON_ESYNTAX, "a NUL byte after the value");
}

static void test_strings(void) {
  accept("[\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD83D\\uDE00\"]",
         "every escape, and a surrogate pair");
  refuse("[\"\\uD83D\"]", JSON_EUTF8, "a lone high surrogate");
  refuse("[\"\\uDE00\"]", JSON_EUTF8, "a lone low surrogate");
  refuse("[\"\\uDE00\\uD83D\"]", JSON_EUTF8, "reversed surrogates");
  refuse("[\"\\uD83D\\u0041\"]", JSON_EUTF8,
         "a high surrogate before a non-surrogate");
  refuse("[\"\\u12G4\"]", JSON_EUTF8, "a bad hex digit");
  refuse("[\"\\u12\"]", JSON_EUTF8, "a short \\u");
  accept("[\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"]",
         "2-, 3- and 4-byte UTF-8");
  refuse("[\"\xc0\xaf\"]", JSON_EUTF8, "an overlong '/'");
  refuse("[\"\xe0\x80\xaf\"]", JSON_EUTF8, "an overlong 3-byte form");
  refuse("[\"\xed\xa0\x80\"]", JSON_EUTF8, "an encoded surrogate");
  refuse("[\"\xf4\x90\x80\x80\"]", JSON_EUTF8, "above U+10FFFF");
  refuse("[\"\x80\"]", JSON_EUTF8, "a stray continuation byte");
  refuse("[\"\xc3\"]", JSON_EUTF8, "a cut sequence");
  refuse("[\"\xff\"]", JSON_EUTF8, "0xff");

  json_doc d;
  const char *s = "{\"k\\u0065y\":\"a\\n\\u00e9\\uD83D\\uDE00\",\"n\":"
                  "\"\\u0000\",\"i\":-9223372036854775808,\"big\":"
                  "9223372036854775808,\"f\":1.5,\"b\":true}";
  is_int(json_parse(&d, s, strlen(s), toks, 64, 16, NULL), JSON_OK,
         "a document to read");
  long v = json_get(&d, 0, "key");
  ok(v > 0, "json_get finds an escaped key by its decoded name");
  char out[32];
  is_int(json_str(&d, (size_t)v, out, sizeof(out)), 8, "decoded length");
  is_str(out, "a\n\xc3\xa9\xf0\x9f\x98\x80", "decoded to UTF-8");
  is_int(json_str(&d, (size_t)v, out, 8), -1, "does not fit (no room for the NUL): -1");
  ok(json_str_eq(&d, (size_t)v, "a\n\xc3\xa9\xf0\x9f\x98\x80"), "str_eq");
  ok(!json_str_eq(&d, (size_t)v, "a\n"), "str_eq: a prefix is not equal");
  is_int(json_str(&d, (size_t)json_get(&d, 0, "n"), out, sizeof(out)), -1,
         "a string holding NUL is not a C string");
  int64_t i;
  is_int(json_int(&d, (size_t)json_get(&d, 0, "i"), &i), 0, "INT64_MIN");
  ok(i == INT64_MIN, "... its value");
  is_int(json_int(&d, (size_t)json_get(&d, 0, "big"), &i), -1,
         "INT64_MAX + 1 overflows");
  is_int(json_int(&d, (size_t)json_get(&d, 0, "f"), &i), -1,
         "a fraction is not an integer");
  int b = 0;
  ok(json_bool(&d, (size_t)json_get(&d, 0, "b"), &b) == 0 && b == 1, "bool");
  is_int(json_get(&d, 0, "missing"), -1, "a missing key");
  is_int(json_get(&d, 1, "key"), -1, "json_get on a non-object");
}

static void test_dups_and_bounds(void) {
  refuse("{\"a\":1,\"a\":2}", JSON_EDUP, "the same key twice");
  refuse("{\"a\":1,\"\\u0061\":2}", JSON_EDUP,
         "the same key twice, once escaped");
  accept("{\"a\":{\"a\":1},\"b\":[{\"a\":1},{\"a\":2}]}",
         "the same key in different objects");
  json_doc d;
  char deep[200];
  memset(deep, '[', 100);
  memset(deep + 100, ']', 100);
  /* The bounds: input, its length, tokens, max_depth, the status. */
  const struct {
    const char *in;
    size_t len;
    int ntoks, depth, want;
    const char *name;
  } bounds[] = {
      {deep, 32, 64, 16, JSON_EDEPTH, "deeper than max_depth"},
      {"[[]]", 4, 64, 2, JSON_OK, "exactly max_depth"},
      {"[[[]]]", 6, 64, 2, JSON_EDEPTH, "one more than max_depth"},
      {deep, 200, 200, 1000, JSON_EDEPTH,
       "max_depth is capped at JSON_MAX_DEPTH"},
      {"[1,2,3]", 7, 3, 16, JSON_ETOKENS, "more tokens than the array"},
      {"[1,2,3]", 7, 4, 16, JSON_OK, "exactly as many tokens"},
      {"[1]", (size_t)JSON_MAX_INPUT + 1, 4, 16, JSON_ESIZE,
       "input above JSON_MAX_INPUT"},
  };
  for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++)
    is_int(json_parse(&d, bounds[i].in, bounds[i].len, toks, bounds[i].ntoks,
                      bounds[i].depth, NULL),
           bounds[i].want, bounds[i].name);
  size_t off = 0;
  json_parse(&d, "[1, x]", 6, toks, 64, 16, &off);
  is_int((long)off, 4, "the error offset");
  is_int(json_parse(&d, "{\"a\":[1,{\"b\":2}],\"c\":3}", 23, toks, 64, 16,
                    NULL),
         JSON_OK, "nested");
  is_int(toks[0].size, 2, "an object's size counts members");
  is_int(json_get(&d, 0, "c"), 8, "json_get skips a subtree");
}

static void test_writer(void) {
  char buf[256];
  json_w w;
  json_w_init(&w, buf, sizeof(buf));
  json_w_obj(&w);
  json_w_key(&w, "s");
  json_w_str(&w, "q\"b\\n\n\t\x01\x1f\xc3\xa9");
  json_w_key(&w, "a");
  json_w_arr(&w);
  json_w_int(&w, -5);
  json_w_uint(&w, 18446744073709551615u);
  json_w_bool(&w, 1);
  json_w_null(&w);
  json_w_obj(&w);
  json_w_obj_end(&w);
  json_w_arr_end(&w);
  json_w_key(&w, "n");
  json_w_str(&w, NULL);
  json_w_obj_end(&w);
  long n = json_w_finish(&w);
  is_str(buf,
         "{\"s\":\"q\\\"b\\\\n\\n\\t\\u0001\\u001f\xc3\xa9\",\"a\":[-5,"
         "18446744073709551615,true,null,{}],\"n\":null}",
         "writer: escapes, nesting, commas");
  ok(n == (long)strlen(buf), "writer: the length");
  json_doc d;
  is_int(json_parse(&d, buf, (size_t)n, toks, 64, 16, NULL), JSON_OK,
         "what the writer wrote parses");
  char back[64];
  json_str(&d, (size_t)json_get(&d, 0, "s"), back, sizeof(back));
  is_str(back, "q\"b\\n\n\t\x01\x1f\xc3\xa9", "and decodes to the input");

  json_w_init(&w, buf, 8);
  json_w_obj(&w);
  json_w_key(&w, "long");
  json_w_str(&w, "value");
  json_w_obj_end(&w);
  is_int(json_w_finish(&w), -1, "writer: overflow fails");
  json_w_init(&w, buf, sizeof(buf));
  json_w_str(&w, "\xc0\xaf");
  is_int(json_w_finish(&w), -1, "writer: invalid UTF-8 fails");
  json_w_init(&w, buf, sizeof(buf));
  json_w_obj(&w);
  json_w_int(&w, 1);
  json_w_obj_end(&w);
  is_int(json_w_finish(&w), -1, "writer: a value without a key fails");
  json_w_init(&w, buf, sizeof(buf));
  json_w_arr(&w);
  is_int(json_w_finish(&w), -1, "writer: an open container fails");
  json_w_init(&w, buf, sizeof(buf));
  json_w_arr(&w);
  json_w_key(&w, "k");
  json_w_arr_end(&w);
  is_int(json_w_finish(&w), -1, "writer: a key in an array fails");
  json_w_init(&w, buf, sizeof(buf));
  json_w_int(&w, 1);
  json_w_int(&w, 2);
  is_int(json_w_finish(&w), -1, "writer: two top-level values fail");
  json_w_init(&w, buf, sizeof(buf));
  for (int i = 0; i < JSON_W_MAX_DEPTH + 1; i++)
    json_w_arr(&w);
  is_int(json_w_finish(&w), -1, "writer: deeper than JSON_W_MAX_DEPTH");
}

/* The member writers (issue 25): a key and its value in one call, the
 * same bytes as json_w_key and the value's writer. */
static void test_members(void) {
  char buf[128];
  json_w w;
  json_w_init(&w, buf, sizeof(buf));
  json_w_obj(&w);
  json_w_kstr(&w, "s", "a\"b");
  json_w_kstr(&w, "n", NULL);
  json_w_kint(&w, "i", -7);
  json_w_kuint(&w, "u", 18446744073709551615u);
  json_w_kbool(&w, "t", 1);
  json_w_kbool(&w, "f", 0);
  json_w_obj_end(&w);
  ok(json_w_finish(&w) > 0, "members: the document finishes");
  is_str(buf,
         "{\"s\":\"a\\\"b\",\"n\":null,\"i\":-7,"
         "\"u\":18446744073709551615,\"t\":true,\"f\":false}",
         "members: each key with its value, commas between");
  json_w_init(&w, buf, sizeof(buf));
  json_w_arr(&w);
  json_w_kint(&w, "k", 1);
  json_w_arr_end(&w);
  is_int(json_w_finish(&w), -1, "members: a member in an array fails");
}

int main(void) {
  plan_lazy();
  test_grammar();
  test_strings();
  test_dups_and_bounds();
  test_writer();
  test_members();
  return done_testing();
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The configuration as a module reads it through ph_api (SDK 1.2): the one
 * thread rule (the loop thread, a check, a helper thread running a job,
 * nothing else), generations that stay valid for a job however many
 * reloads happen meanwhile, and undeclared keys as a misuse. Run under
 * ASan in CI: a job reading a freed generation is a use-after-free there,
 * and a generation never released is a leak. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "debug.h"
#include "file_test.h"
#include "loop_test.h"
#include "mock_core.h"
#include "mock_test.h"
#include "tap.h"

/* ---- a module linked into the test ---------------------------------- */

static const ph_conf_key gen_keys[] = {
    {.name = "gen", .type = PH_CONF_INT, .def = "0", .max = 1000000},
    {.name = "word", .type = PH_CONF_STRING, .def = "w", .max = 190},
    {.name = "items", .type = PH_CONF_LIST, .max = 16},
    PH_CONF_END};

static const ph_api *api;
static ph_ctx *gctx;

MOCK_TEST_KEEP(gen_init, api, gctx);
MOCK_TEST_MODULE(gen_mod, "gen_mod", "1", .config = gen_keys,
                 .init = gen_init);

/* ---- what generation g holds ------------------------------------------ */

/* Lengths change from one generation to the next, so that a reader of a
 * freed generation would find other bytes there, not only ASan. */
static void want_word(long g, char *out, size_t n) {
  size_t len = 8 + (size_t)(g * 37 % 150);
  if (len >= n)
    len = n - 1;
  memset(out, 'a' + (int)(g % 26), len);
  char tag[16];
  int t = snprintf(tag, sizeof(tag), "-%ld", g % 100000);
  memcpy(out + len - (size_t)t, tag, (size_t)t); /* len >= 8 > t */
  out[len] = '\0';
}

static size_t want_items(long g) { return 1 + (size_t)(g % 6); }

static void want_item(long g, size_t i, char *out, size_t n) {
  snprintf(out, n, "g%ldi%zu", g, i);
}

static char *gen_text(long g, int threads) {
  static char text[1024];
  char word[200], item[32], items[256] = "";
  want_word(g, word, sizeof(word));
  for (size_t i = 0; i < want_items(g); i++) {
    want_item(g, i, item, sizeof(item));
    strcat(items, i ? ", " : "");
    strcat(items, item);
  }
  snprintf(text, sizeof(text),
           "[proxyhost]\nthreads = %d\n[gen_mod]\ngen = %ld\nword = %s\n"
           "items = %s\n",
           threads, g, word, items);
  return text;
}

static char err[8192];

static ph_mock *started(const char *text) {
  err[0] = '\0';
  return mock_test_start(text, &gen_mod, err, sizeof err);
}

/* ---- jobs that read while the loop reloads ----------------------------- */

typedef struct gjob {
  long gen;          /* in force when it was submitted */
  const char *word;  /* what work read first, compared again in done */
  const char *item0; /* likewise */
  int bad;           /* reads that did not match gen */
} gjob;

static int done_ok, done_bad, done_cancelled;

/* Every value of the job's generation, read through the API. */
static int values_match(const gjob *j) {
  char w[200], it[32];
  if (api->conf_int(gctx, "gen") != j->gen)
    return 0;
  want_word(j->gen, w, sizeof(w));
  const char *word = api->conf_str(gctx, "word");
  if (!word || strcmp(word, w) != 0)
    return 0;
  size_t n = api->conf_list_len(gctx, "items");
  if (n != want_items(j->gen))
    return 0;
  for (size_t i = 0; i < n; i++) {
    want_item(j->gen, i, it, sizeof(it));
    const char *v = api->conf_list_at(gctx, "items", i);
    if (!v || strcmp(v, it) != 0)
      return 0;
  }
  return 1;
}

/* The pointers read first, still the job's values (ASan: still alive). */
static int kept_match(const gjob *j) {
  char w[200], it[32];
  want_word(j->gen, w, sizeof(w));
  want_item(j->gen, 0, it, sizeof(it));
  return j->word && j->item0 && strcmp(j->word, w) == 0 &&
         strcmp(j->item0, it) == 0;
}

static void gjob_work(void *arg) {
  gjob *j = arg;
  j->word = api->conf_str(gctx, "word");
  j->item0 = api->conf_list_at(gctx, "items", 0);
  for (int i = 0; i < 120; i++) {
    int good = kept_match(j);
    good &= values_match(j);
    j->bad += !good;
    if (i % 30 == 0)
      usleep(200); /* so that reloads land in the middle of jobs */
  }
}

static void gjob_done(void *arg, int status) {
  gjob *j = arg;
  if (status == PH_ECANCELED) {
    done_cancelled++;
  } else {
    /* The generation is released after done: work's pointers hold. */
    int good = kept_match(j);
    done_bad += !good || j->bad;
    done_ok++;
  }
  free(j);
}

static int64_t submit_job(void) {
  gjob *j = calloc(1, sizeof(*j));
  /* On the loop thread: the configuration in force. */
  j->gen = (long)api->conf_int(gctx, "gen");
  int64_t id = api->submit(gctx, gjob_work, gjob_done, j);
  if (id <= 0)
    free(j);
  return id;
}

static void test_reloads_during_jobs(void) {
  enum { ROUNDS = 60, PER_ROUND = 8 };
  size_t before = conf_alive();
  done_ok = done_bad = done_cancelled = 0;
  ph_mock *m = started(gen_text(0, 4));
  ok(m != NULL, "generations: module with string, int and list keys starts");
  if (!m)
    return;
  int submitted = 0, reloads_ok = 0;
  size_t most_alive = 0;
  for (long g = 1; g <= ROUNDS; g++) {
    for (int k = 0; k < PER_ROUND; k++)
      submitted += submit_job() > 0;
    /* Jobs of g-1 are queued or running: replace their configuration. */
    reloads_ok += ph_mock_reload(m, gen_text(g, 4), NULL, 0) == 0;
    size_t alive = conf_alive() - before;
    if (alive > most_alive)
      most_alive = alive;
    ph_mock_run_for(m, 1);
  }
  is_int(reloads_ok, ROUNDS, "generations: every reload was accepted");
  is_int(submitted, ROUNDS * PER_ROUND, "generations: every job accepted");
  is_int(api->conf_int(gctx, "gen"), ROUNDS,
         "the loop thread reads the configuration in force");
  ok(most_alive > 2, "replaced generations stay alive while jobs hold them");
  printf("# at most %zu generations alive at once\n", most_alive);
  wait_until(ph_mock_loop(m), done_ok + done_cancelled >= submitted, 8000);
  is_int(done_ok, submitted, "every job's done ran");
  is_int(done_bad, 0,
         "every job read its submission's values, consistent across reads, "
         "and its pointers were still valid in done");
  is_int(conf_alive() - before, 1,
         "after the last done only the configuration in force is left");
  ph_mock_stop(m);
  ph_mock_free(m);
  is_int(conf_alive(), before, "all generations freed with the host");
}

/* ---- a cancelled job releases its generation too ----------------------- */

static atomic_int blocker_go, blocker_running;

static void blocker_work(void *arg) {
  (void)arg;
  atomic_store(&blocker_running, 1);
  while (!atomic_load(&blocker_go))
    usleep(500);
}

static void blocker_done(void *arg, int status) {
  (void)arg;
  (void)status;
  done_ok++;
}

static void test_cancel_releases(void) {
  size_t before = conf_alive();
  done_ok = done_bad = done_cancelled = 0;
  atomic_store(&blocker_go, 0);
  atomic_store(&blocker_running, 0);
  ph_mock *m = started(gen_text(0, 1));
  ok(m != NULL, "cancel: one helper thread");
  if (!m)
    return;
  int64_t b = api->submit(gctx, blocker_work, blocker_done, NULL);
  ok(b > 0, "cancel: a job holds the only helper thread");
  int64_t queued[5];
  for (int i = 0; i < 5; i++)
    queued[i] = submit_job();
  for (int t = 0; t < 2000 && !atomic_load(&blocker_running); t++)
    usleep(1000);
  is_int(api->job_cancel(gctx, b), PH_EBUSY, "cancel: the blocker runs");
  is_int(ph_mock_reload(m, gen_text(1, 1), NULL, 0), 0,
         "cancel: reload while queued");
  is_int(conf_alive() - before, 2, "cancel: old generation held by the jobs");
  int cancelled = 0;
  for (int i = 0; i < 5; i++)
    cancelled += api->job_cancel(gctx, queued[i]) == PH_OK;
  is_int(cancelled, 5, "cancel: the queued jobs are cancelled");
  is_int(done_cancelled, 5, "cancel: their done ran with PH_ECANCELED");
  is_int(conf_alive() - before, 2, "cancel: the running job still holds it");
  atomic_store(&blocker_go, 1);
  wait_until(ph_mock_loop(m), done_ok + done_cancelled >= 6, 8000);
  is_int(conf_alive() - before, 1,
         "cancel: released when the last job holding it is done");
  ph_mock_stop(m);
  ph_mock_free(m);
  is_int(conf_alive(), before, "cancel: nothing left");
}

/* ---- misuse: another thread, undeclared keys --------------------------- */

typedef struct thread_read {
  const char *str;
  int64_t num;
} thread_read;

static void *foreign_reader(void *arg) {
  thread_read *r = arg;
  r->str = api->conf_str(gctx, "word");
  r->num = api->conf_int(gctx, "gen");
  return NULL;
}

/* A thread of the module's own: neither the loop nor a job. */
static void read_from_foreign_thread(thread_read *r) {
  pthread_t t;
  if (pthread_create(&t, NULL, foreign_reader, r) == 0)
    pthread_join(t, NULL);
}

/* Runs fn in a child with its own mock host and reports how it ended:
 * the signal number, or 0 for a normal exit. */
static int in_child(void (*fn)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    ph_mock *m = started(gen_text(3, 2));
    if (m)
      fn();
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static void child_foreign_thread(void) {
  thread_read r;
  read_from_foreign_thread(&r);
}

static void child_undeclared_str(void) { (void)api->conf_str(gctx, "nope"); }

static void child_undeclared_int(void) { (void)api->conf_int(gctx, "nope"); }

static void child_undeclared_list(void) {
  (void)api->conf_list_at(gctx, "nope", 0);
}

static void child_null_key(void) { (void)api->conf_list_len(gctx, NULL); }

static void child_declared(void) {
  /* Declared keys whose values are 0 and out-of-range items are fine. */
  (void)api->conf_list_at(gctx, "items", 99);
}

static void undeclared_job_work(void *arg) {
  (void)arg;
  (void)api->conf_int(gctx, "nope");
}

static void undeclared_job_done(void *arg, int status) {
  (void)arg;
  (void)status;
}

static void child_undeclared_in_job(void) {
  api->submit(gctx, undeclared_job_work, undeclared_job_done, NULL);
  usleep(200000); /* the helper thread aborts the process meanwhile */
}

static void test_misuse_debug(void) {
  is_int(in_child(child_foreign_thread), SIGABRT,
         "conf_* on a module's own thread aborts under the mock host");
  is_int(in_child(child_undeclared_str), SIGABRT,
         "conf_str of an undeclared key aborts under the mock host");
  is_int(in_child(child_undeclared_int), SIGABRT,
         "conf_int of an undeclared key aborts");
  is_int(in_child(child_undeclared_list), SIGABRT,
         "conf_list_at of an undeclared key aborts");
  is_int(in_child(child_null_key), SIGABRT, "a NULL key aborts");
  is_int(in_child(child_undeclared_in_job), SIGABRT,
         "an undeclared key read on a helper thread aborts too");
  is_int(in_child(child_declared), 0,
         "a declared key's NULL (item out of range) is not a misuse");
}

/* Release builds: logged and refused, the documented NULL / 0. */
static void test_misuse_release(void) {
  char logpath[512];
  const char *tmp = getenv("TMPDIR");
  snprintf(logpath, sizeof(logpath), "%s/proxyhost-test-conf-api-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemp(logpath);
  if (fd >= 0)
    close(fd);
  char text[1400];
  snprintf(text, sizeof(text), "%s[log]\nfile = %s\n", gen_text(5, 2), logpath);
  ph_mock *m = started(text);
  ok(m != NULL, "release: mock host with a log file");
  if (!m)
    return;
  debug_checks = 0; /* what a release build runs with */
  thread_read r = {"unset", -1};
  read_from_foreign_thread(&r);
  ok(r.str == NULL, "release: conf_str on a module's own thread is NULL");
  is_int(r.num, 0, "release: conf_int there is 0");
  ok(api->conf_str(gctx, "nope") == NULL, "release: undeclared key is NULL");
  is_int(api->conf_int(gctx, "nope"), 0, "release: undeclared key is 0");
  is_int(api->conf_list_len(gctx, "nope"), 0, "release: undeclared list 0");
  is_int(api->conf_int(gctx, "gen"), 5, "release: declared keys still read");
  debug_checks = 1;
  ph_mock_stop(m);
  ph_mock_free(m);
  char *log = file_test_slurp(logpath);
  like(log, "API misuse by a module", "release: the misuse is logged");
  like(log, "is not declared", "release: the log says the key is undeclared");
  like(log, "nope", "release: and names it");
  like(log, "neither the loop thread nor a helper thread",
       "release: a read from another thread is logged with the rule");
  like(log, "module=gen_mod", "release: the log names the module");
  free(log);
  unlink(logpath);
}

/* ---- a module built against SDK 1.1, next to 1.2 ones ----------------- */

#define V11_MODS                                                               \
  "[proxyhost]\nmodules = " PH_TEST_MODDIR "/keys_v11.so, " PH_TEST_MODDIR     \
  "/probe.so\n"

static void test_v11_key_table(void) {
  ok(sizeof(ph_conf_key) == offsetof(ph_conf_key, choices) +
                                sizeof(const char *) + 4 * sizeof(void *),
     "1.2 layout: the 1.1 fields, then reserved[4]");
  const char *text = V11_MODS "[keys_v11]\ngreeting = hello\ncount = 7\n"
                              "tags = x, y\n  z\nmode = safe\n"
                              "secret = s3cr3t\n[probe]\ncount = 9\n";
  err[0] = '\0';
  ph_mock *m = ph_mock_new(text, err, sizeof err);
  int rc = m && ph_mock_init(m, err, sizeof err) == 0 &&
           ph_mock_start(m, err, sizeof err) == 0;
  ok(rc, "a 1.1 module (1.1 key layout) loads and starts next to probe (1.2)");
  if (!rc) {
    printf("# %s\n", err);
    ph_mock_free(m);
    return;
  }
  const char *metrics = ph_mock_metrics_text(m);
  like_each(metrics,
            "1.1 table read back: INT, LIST with continuation line, STRING, "
            "DURATION default, sensitive STRING, ENUM",
            "keys_v11_count 7", "keys_v11_tags 3", "keys_v11_greeting_bytes 5",
            "keys_v11_timeout_ms 5000", "keys_v11_secret_bytes 6",
            "keys_v11_safe 1");
  ph_core *c = mock_core(m);
  const ph_ctx *v11 = c->mods[0], *probe = c->mods[1];
  ok(v11->keys_owned && v11->keys == v11->keys_owned,
     "1.1 table: converted into a copy the host owns");
  ok(v11->keys[6].name == NULL && v11->keys[5].flags == PH_CONF_RESTART &&
         strcmp(v11->keys[3].choices, "fast|safe") == 0 &&
         strcmp(v11->keys[4].env, "KEYS_V11_SECRET") == 0,
     "1.1 table: every field at its place, ended where the module ended it");
  ok(!probe->keys_owned && probe->keys == probe->mod->config,
     "1.2 table: used in place");
  is_int(conf_int(c->conf, "probe", "count"), 9, "probe's keys read too");
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  conf_print(c->conf, f);
  fclose(f);
  like(out, "secret = [redacted]", "1.1 table: its sensitive flag holds");
  like(out, "timeout = 5s  ; from default", "1.1 table: defaults printed");
  free(out);
  is_int(ph_mock_reload(m, V11_MODS "[keys_v11]\ntimeout = 2s\ncount = 8\n",
                        NULL, 0),
         0, "1.1 table: a reload (changing a restart-only key) is accepted");
  is_int(conf_int(c->conf, "keys_v11", "count"), 8, "and its values change");
  ph_mock_stop(m);
  ph_mock_free(m);

  err[0] = '\0';
  m = ph_mock_new(V11_MODS "[keys_v11]\ncount = 101\ncolour = red\n", err,
                  sizeof err);
  ok(m && ph_mock_init(m, err, sizeof err) < 0,
     "1.1 table: its bounds are enforced");
  like(err, "(config):4: keys_v11.count: 101 is above the maximum 100",
       "1.1 table: file:line: section.key: reason");
  like(err, "(config):5: keys_v11.colour: unknown key",
       "1.1 table: unknown keys refused");
  ph_mock_free(m);
}

/* ---- another instance's values (ABI 1.4: conf_peer_int, conf_peer_str) - */

/* The section another module reads: an identifier, a choice, numbers, a
 * list, and two strings no peer may read (flagged sensitive; named like a
 * secret without the flag). */
static const ph_conf_key peer_keys[] = {
    {.name = "cluster_id", .type = PH_CONF_STRING, .def = "default",
     .min = 1, .max = 128},
    {.name = "mode", .type = PH_CONF_ENUM, .def = "fast",
     .choices = "fast|safe"},
    {.name = "ttl", .type = PH_CONF_DURATION, .def = "30s", .max = 3600000},
    {.name = "on", .type = PH_CONF_BOOL, .def = "true"},
    {.name = "hosts", .type = PH_CONF_LIST, .def = "a, b", .max = 8},
    {.name = "hidden", .type = PH_CONF_STRING, .def = "h1dden", .max = 64,
     .flags = PH_CONF_SENSITIVE},
    {.name = "api_token", .type = PH_CONF_STRING, .def = "t0ken", .max = 64},
    PH_CONF_END};

static int peer_init(ph_ctx *ctx, const ph_api *a, void **state) {
  (void)ctx;
  (void)a;
  *state = NULL;
  return PH_OK;
}

static const ph_module peer_mod = {PH_MODULE_HEADER("peer_src", "1"),
                                   .config = peer_keys, .init = peer_init};

static ph_mock *peers_started(const char *text) {
  err[0] = '\0';
  ph_mock *m = ph_mock_new(text, err, sizeof err);
  if (!m || ph_mock_add(m, &gen_mod, err, sizeof err) < 0 ||
      ph_mock_add(m, &peer_mod, err, sizeof err) < 0 ||
      ph_mock_add_instance(m, &peer_mod, "eu", err, sizeof err) < 0 ||
      ph_mock_init(m, err, sizeof err) < 0 ||
      ph_mock_start(m, err, sizeof err) < 0) {
    printf("# setup failed: %s\n", err);
    ph_mock_free(m);
    return NULL;
  }
  return m;
}

static void test_peer_values(void) {
  ph_mock *m = peers_started("[peer_src.eu]\ncluster_id = eu-1\nmode = safe\n"
                             "ttl = 5s\non = false\n");
  ok(m != NULL, "peer: gen_mod beside peer_src and peer_src.eu");
  if (!m)
    return;
  const char *s = "untouched";
  int64_t n = -7;
  is_int(api->conf_peer_str(gctx, "peer_src", "cluster_id", &s), PH_OK,
         "peer_str: another instance's STRING");
  is_str(s, "default", "peer_str: a key no source sets reads its default");
  is_int(api->conf_peer_str(gctx, "peer_src.eu", "cluster_id", &s), PH_OK,
         "peer_str: a named instance's section");
  is_str(s, "eu-1", "peer_str: that instance's value, not the default one's");
  is_int(api->conf_peer_str(gctx, "peer_src.eu", "mode", &s), PH_OK,
         "peer_str: an ENUM");
  is_str(s, "safe", "peer_str: the ENUM's value");

  s = "untouched";
  const struct {
    const char *section, *key;
    int want;
    const char *name;
  } refused[] = {
      {"peer_src", "hidden", PH_EINVAL,
       "peer_str: a PH_CONF_SENSITIVE key is refused"},
      {"peer_src", "api_token", PH_EINVAL,
       "peer_str: a key named like a secret (log.h's words) is refused"},
      {"peer_src", "ttl", PH_ENOENT, "peer_str: a number key is not a string"},
      {"peer_src", "hosts", PH_ENOENT, "peer_str: nor is a LIST"},
      {"peer_src", "nope", PH_ENOENT, "peer_str: an undeclared key"},
      {"peer_src.us", "cluster_id", PH_ENOENT,
       "peer_str: a section no loaded instance has"},
  };
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
    is_int(api->conf_peer_str(gctx, refused[i].section, refused[i].key, &s),
           refused[i].want, refused[i].name);
  is_str(s, "untouched", "peer_str: *out untouched when refused");
  is_int(api->conf_peer_str(gctx, NULL, "cluster_id", &s), PH_EINVAL,
         "peer_str: NULL section");
  is_int(api->conf_peer_str(gctx, "peer_src", NULL, &s), PH_EINVAL,
         "peer_str: NULL key");
  is_int(api->conf_peer_str(gctx, "peer_src", "cluster_id", NULL), PH_EINVAL,
         "peer_str: NULL out");

  /* conf_peer_int shares the lookup: numbers only, the same refusals. */
  is_int(api->conf_peer_int(gctx, "peer_src.eu", "ttl", &n), PH_OK,
         "peer_int: a DURATION");
  is_int(n, 5000, "peer_int: in milliseconds, the instance's value");
  is_int(api->conf_peer_int(gctx, "peer_src.eu", "on", &n), PH_OK,
         "peer_int: a BOOL");
  is_int(n, 0, "peer_int: false is 0");
  n = -7;
  is_int(api->conf_peer_int(gctx, "peer_src", "cluster_id", &n), PH_ENOENT,
         "peer_int: a STRING key is not a number");
  is_int(api->conf_peer_int(gctx, "peer_src", "nope", &n), PH_ENOENT,
         "peer_int: an undeclared key");
  is_int(n, -7, "peer_int: *out untouched when refused");
  ph_mock_stop(m);
  ph_mock_free(m);

  /* A module built for 1.1 (its key table converted by the host): its
   * sensitive flag holds for its peers too. */
  err[0] = '\0';
  m = ph_mock_new("[proxyhost]\nmodules = " PH_TEST_MODDIR "/keys_v11.so\n"
                  "[keys_v11]\ngreeting = hi\nsecret = s3cr3t\n",
                  err, sizeof err);
  int rc = m && ph_mock_add(m, &gen_mod, err, sizeof err) == 0 &&
           ph_mock_init(m, err, sizeof err) == 0;
  ok(rc, "peer: gen_mod beside a 1.1 module");
  if (rc) {
    s = "untouched";
    is_int(api->conf_peer_str(gctx, "keys_v11", "greeting", &s), PH_OK,
           "peer_str: a 1.1 module's STRING");
    is_str(s, "hi", "peer_str: its value");
    is_int(api->conf_peer_str(gctx, "keys_v11", "secret", &s), PH_EINVAL,
           "peer_str: a 1.1 module's sensitive key is refused");
  }
  ph_mock_free(m);
}

int main(void) {
  plan_lazy();
  err[0] = '\0';
  test_reloads_during_jobs();
  test_cancel_releases();
  test_misuse_debug();
  test_misuse_release();
  test_v11_key_table();
  test_peer_values();
  return done_testing();
}

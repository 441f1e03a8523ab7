/* SPDX-License-Identifier: BSD-2-Clause */
/* sd_notify(3)'s protocol: datagrams to $NOTIFY_SOCKET (notify.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"

static int notify_fd = -1;
static struct sockaddr_un notify_addr;
static socklen_t notify_len;
static ev_timer ready_timer;
static struct ev_loop *ready_loop;
static int (*ready_fn)(void *);
static void *ready_arg;

int notify_open(void) {
  const char *path = getenv("NOTIFY_SOCKET");
  if (!path || !*path || notify_fd >= 0)
    return 0;
  size_t n = strlen(path);
  if ((path[0] != '/' && path[0] != '@') || n >= sizeof(notify_addr.sun_path)) {
    ph_log_field f[] = {PH_STR("notify_socket", path)};
    log_write(NULL, PH_LOG_ERROR,
              "NOTIFY_SOCKET is neither an absolute path nor @abstract; not "
              "notifying the service manager",
              f, 1);
    return -1;
  }
  memset(&notify_addr, 0, sizeof(notify_addr));
  notify_addr.sun_family = AF_UNIX;
  memcpy(notify_addr.sun_path, path, n);
  if (path[0] == '@')
    notify_addr.sun_path[0] = '\0'; /* abstract: no terminating NUL */
  notify_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
                           (path[0] == '@' ? 0 : 1));
  notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (notify_fd < 0) {
    ph_log_field f[] = {PH_STR("error", strerror(errno))};
    log_write(NULL, PH_LOG_ERROR, "cannot create the notify socket", f, 1);
    return -1;
  }
  return 0;
}

int notify_send(const char *state) {
  if (notify_fd < 0)
    return 0;
  ssize_t n = sendto(notify_fd, state, strlen(state), MSG_NOSIGNAL | MSG_DONTWAIT,
                     (const struct sockaddr *)&notify_addr, notify_len);
  if (n < 0) {
    ph_log_field f[] = {PH_STR("error", strerror(errno))};
    log_write(NULL, PH_LOG_WARN, "cannot notify the service manager", f, 1);
    return -1;
  }
  return 0;
}

static void send_ready(void) {
  char msg[128];
  snprintf(msg, sizeof(msg), "READY=1\nSTATUS=running\nMAINPID=%ld",
           (long)getpid());
  notify_send(msg);
}

static void stop_waiting(void) {
  if (!ready_loop || !ev_is_active(&ready_timer))
    return;
  ev_ref(ready_loop);
  ev_timer_stop(ready_loop, &ready_timer);
}

static void ready_cb(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)loop;
  (void)w;
  (void)revents;
  if (!ready_fn(ready_arg))
    return;
  stop_waiting();
  send_ready();
}

void notify_when_ready(struct ev_loop *loop, int (*ready)(void *arg),
                       void *arg) {
  if (notify_fd < 0)
    return;
  if (ready(arg)) {
    send_ready();
    return;
  }
  notify_send("STATUS=starting: waiting for every module to be ready");
  if (ev_is_active(&ready_timer))
    return;
  ready_loop = loop;
  ready_fn = ready;
  ready_arg = arg;
  ev_timer_init(&ready_timer, ready_cb, 0.02, 0.02);
  ev_timer_start(loop, &ready_timer);
  ev_unref(loop); /* the wait alone does not keep the loop running */
}

void notify_reloading(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  char msg[128];
  snprintf(msg, sizeof(msg),
           "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading the "
           "configuration",
           (unsigned long long)ts.tv_sec * 1000000ULL +
               (unsigned long long)ts.tv_nsec / 1000ULL);
  notify_send(msg);
}

void notify_stopping(void) {
  stop_waiting();
  notify_send("STOPPING=1\nSTATUS=stopping: draining modules");
}

void notify_close(void) {
  stop_waiting();
  if (notify_fd >= 0)
    close(notify_fd);
  notify_fd = -1;
}

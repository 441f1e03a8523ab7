/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's last look at a check's deadline (modules/checker/chk_late.h,
 * issue 26: a checker's own lateness is never a verdict on the proxy):
 * whether what a probe waits for is ready now on its socket, without
 * waiting. Real sockets (a socketpair), no clock. And a connect(2) that
 * failed for want of the checker's own resources (chk_dial_errno: no
 * local port left under overload: chk_errno.h) is CHECKER_ERROR, never
 * FAILED. */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "checker/chk_errno.h"
#include "checker/chk_late.h"
#include "checker/chk_probe.h"
#include "tap.h"

int main(void) {
  plan_lazy();
  int sv[2];
  ok(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "a socketpair");
  is_int(chk_late_ready(sv[0], CHK_EV_READ), 0,
         "nothing sent: a probe waiting to read has nothing unread "
         "(TIMEOUT stands)");
  is_int(chk_late_ready(sv[0], CHK_EV_WRITE), CHK_EV_WRITE,
         "a probe waiting to write on a writable socket: the checker's turn");
  is_int(chk_late_ready(sv[0], CHK_EV_READ | CHK_EV_WRITE), CHK_EV_WRITE,
         "only what is ready is said");
  ok(write(sv[1], "HTTP/1.1 200 OK\r\n\r\n", 19) == 19, "the peer answers");
  is_int(chk_late_ready(sv[0], CHK_EV_READ), CHK_EV_READ,
         "the answer waits unread: the probe reads it before any TIMEOUT");
  is_int(chk_late_ready(sv[0], 0), 0, "nothing asked, nothing ready");
  char b[64];
  ok(read(sv[0], b, sizeof(b)) == 19, "read");
  is_int(chk_late_ready(sv[0], CHK_EV_READ), 0, "read: nothing unread again");
  close(sv[1]);
  is_int(chk_late_ready(sv[0], CHK_EV_READ), CHK_EV_READ,
         "the peer closed: ready (the probe's read sees the end)");
  close(sv[0]);
  is_int(chk_late_ready(-1, CHK_EV_READ), 0, "no socket: nothing ready");
  is_int(chk_late_ready(sv[0], CHK_EV_READ), 0,
         "a closed descriptor (POLLNVAL): nothing ready");

  static const struct {
    int err, local;
    const char *what;
  } dial[] = {
      {ECONNREFUSED, 0, "connect refused: the proxy's (FAILED)"},
      {ECONNRESET, 0, "reset: the proxy's"},
      {EHOSTUNREACH, 0, "unreachable: the proxy's"},
      {ETIMEDOUT, 0, "timed out: the proxy's"},
      {EPIPE, 0, "another error: the proxy's (dial_failed)"},
      {EADDRNOTAVAIL, 1,
       "no local port left (overload): the checker's (CHECKER_ERROR)"},
      {EAGAIN, 1, "EAGAIN: the checker's"},
      {ENOBUFS, 1, "no buffers: the checker's"},
      {ENOMEM, 1, "no memory: the checker's"},
      {EMFILE, 1, "no descriptor: the checker's"},
      {ENFILE, 1, "no file: the checker's"},
  };
  for (size_t i = 0; i < sizeof(dial) / sizeof(dial[0]); i++)
    is_int(chk_errno_local(dial[i].err), dial[i].local, dial[i].what);
  return done_testing();
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's lateness at a check's deadline: chk_late.h. */
#include <errno.h>
#include <poll.h>

#include "chk_late.h"
#include "chk_probe.h"

int chk_late_ready(int fd, int want) {
  if (fd < 0 || !(want & (CHK_EV_READ | CHK_EV_WRITE)))
    return 0;
  struct pollfd pfd = {.fd = fd, .events = 0, .revents = 0};
  if (want & CHK_EV_READ)
    pfd.events |= POLLIN;
  if (want & CHK_EV_WRITE)
    pfd.events |= POLLOUT;
  int n;
  do
    n = poll(&pfd, 1, 0);
  while (n < 0 && errno == EINTR);
  if (n <= 0 || (pfd.revents & POLLNVAL))
    return 0;
  int ready = 0;
  if (pfd.revents & (POLLIN | POLLERR | POLLHUP))
    ready |= want & CHK_EV_READ;
  if (pfd.revents & (POLLOUT | POLLERR | POLLHUP))
    ready |= want & CHK_EV_WRITE;
  return ready;
}

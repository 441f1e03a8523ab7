/* SPDX-License-Identifier: BSD-2-Clause */
/* hangup.h: poll(2) with POLLRDHUP reports a received FIN even when
 * unread data comes before it, which a read-interest watcher cannot. */
#include "hangup.h"

#include <poll.h>

int hangup_seen(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLRDHUP};
  if (poll(&p, 1, 0) <= 0)
    return 0;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

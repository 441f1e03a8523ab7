/* SPDX-License-Identifier: BSD-2-Clause */
/* A bearer's loggable id (ts_bearer.h). */
#include <string.h>

#include "ts_bearer.h"

void ts_bearer_id(const char *b, size_t len, char out[PH_AZ_ID_LEN + 1]) {
  strcpy(out, "-");
  if (!b || len <= PH_AZ_ID_LEN || b[PH_AZ_ID_LEN] != '.' ||
      memcmp(b, "tok_", 4) != 0)
    return;
  for (size_t i = 4; i < PH_AZ_ID_LEN; i++)
    if (!((b[i] >= '0' && b[i] <= '9') || (b[i] >= 'a' && b[i] <= 'f')))
      return;
  memcpy(out, b, PH_AZ_ID_LEN);
  out[PH_AZ_ID_LEN] = '\0';
}

#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""One type per log field name (issue 24 item 12): a field name means one
thing, so a JSON consumer never sees "code" as a string in one line and a
number in the next.

    log_fields.py --sources DIR...   every PH_STR/PH_INT/PH_UINT/PH_DBL
                                     field in the C sources under DIR
    log_fields.py --json FILE...     every JSON log line of the files
                                     (other lines are skipped)

Numbers (INT, UINT, DBL) are one type. Prints each name seen with two
types and where; exits 1 if there is one, 0 otherwise, 2 when nothing
was read."""
import json
import os
import re
import sys

FIELD = re.compile(r'PH_(STR|INT|UINT|DBL)\(\s*"([A-Za-z0-9_]+)"')


def kind_c(t):
    return "string" if t == "STR" else "number"


def kind_json(v):
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return type(v).__name__


def main(argv):
    if len(argv) < 3 or argv[1] not in ("--sources", "--json"):
        print(__doc__, file=sys.stderr)
        return 2
    seen = {}  # name -> {kind: first place}
    read = 0
    if argv[1] == "--sources":
        for top in argv[2:]:
            for dp, _, files in os.walk(top):
                for f in sorted(files):
                    if not f.endswith((".c", ".h")):
                        continue
                    p = os.path.join(dp, f)
                    with open(p, errors="replace") as fh:
                        for n, line in enumerate(fh, 1):
                            for m in FIELD.finditer(line):
                                read += 1
                                seen.setdefault(m.group(2), {}).setdefault(
                                    kind_c(m.group(1)), "%s:%d" % (p, n))
    else:
        for p in argv[2:]:
            with open(p, errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    line = line.strip()
                    if not line.startswith("{"):
                        continue
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    read += 1
                    for k, v in rec.items():
                        seen.setdefault(k, {}).setdefault(
                            kind_json(v), "%s:%d" % (p, n))
    if not read:
        print("nothing read")
        return 2
    bad = 0
    for name in sorted(seen):
        kinds = seen[name]
        if len(kinds) > 1:
            bad = 1
            print("%s: %s" % (name, ", ".join(
                "%s at %s" % (k, kinds[k]) for k in sorted(kinds))))
    print("%d fields, %d names, %s" % (read, len(seen),
                                         "mixed types" if bad else "one type each"))
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks a Grafana dashboard against a live /metrics scrape.

dashboard_check.py [--absent-ok REGEX] DASHBOARD.json METRICS.txt [METRICS.txt...]

The dashboard must be a Grafana JSON model (schemaVersion, unique panel
ids, a Prometheus datasource variable that every panel and target uses),
and every metric name in every PromQL expression must be a sample name in
the scrape: X_bucket only where X is a histogram, a histogram's own name
never bare (it has no samples), X_sum/X_count of a histogram or summary. Several scrapes are one (their
union: the TunnelMesh roles run in several processes). --absent-ok REGEX:
names it matches may be missing from the scrapes (the panels of roles a
scrape does not run); they are still checked when present.
Prints each name it checked and each problem; exits 1 on a problem."""
import json
import re
import sys

# PromQL words that look like identifiers but are not metric names.
KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "offset", "and", "or", "unless", "inf", "nan", "atan2",
    # aggregation operators, which may take `by (...)` before their (
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
    "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio",
}
TOKEN = re.compile(
    r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\''   # strings
    r'|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?'            # $variables
    r'|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[a-zA-Z]*'  # numbers, durations
    r'|[A-Za-z_:][A-Za-z0-9_:]*'                  # identifiers
    r'|\S')


def metric_names(expr):
    """The metric names of one expression: identifiers outside {...},
    [...] and grouping lists, not called as functions, not keywords."""
    toks = TOKEN.findall(expr)
    names, depth_brace, depth_bracket, i = [], 0, 0, 0
    group_paren = 0  # inside by (...), without (...), on (...) ...
    while i < len(toks):
        t = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if t == "{":
            depth_brace += 1
        elif t == "}":
            depth_brace -= 1
        elif t == "[":
            depth_bracket += 1
        elif t == "]":
            depth_bracket -= 1
        elif group_paren:
            if t == "(":
                group_paren += 1
            elif t == ")":
                group_paren -= 1
        elif depth_brace or depth_bracket:
            pass
        elif re.match(r"[A-Za-z_:]", t):
            low = t.lower()
            if low in ("by", "without", "on", "ignoring", "group_left",
                       "group_right") and nxt == "(":
                group_paren = 1
                i += 1
            elif nxt == "(" or low in KEYWORDS:
                pass  # a function, an aggregation or a keyword
            else:
                names.append(t)
        i += 1
    return names


def scrape(paths):
    samples, types = set(), {}
    for path in paths:
        scrape_one(path, samples, types)
    return samples, types


def scrape_one(path, samples, types):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(None, 3)
                types[name] = kind
            elif line and not line.startswith("#"):
                samples.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line)
                            .group(0))


def panels_of(items):
    for p in items:
        yield p
        yield from panels_of(p.get("panels", []))


def check_model(d, problems):
    if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < 36:
        problems.append("schemaVersion missing or below 36")
    for key in ("title", "uid", "panels", "templating"):
        if key not in d:
            problems.append("no %s" % key)
    ds_vars = [v["name"] for v in d.get("templating", {}).get("list", [])
               if v.get("type") == "datasource"
               and v.get("query") == "prometheus"]
    if not ds_vars:
        problems.append("no Prometheus datasource variable")
    want = {"${%s}" % n for n in ds_vars}
    ids = [p.get("id") for p in panels_of(d.get("panels", []))]
    if len(ids) != len(set(ids)) or None in ids:
        problems.append("panel ids missing or not unique")
    for p in panels_of(d.get("panels", [])):
        if p.get("type") == "row":
            continue
        title = p.get("title", "?")
        if not p.get("targets"):
            problems.append("panel %r has no targets" % title)
        for ds in [p.get("datasource")] + [t.get("datasource")
                                           for t in p.get("targets", [])]:
            if not ds or ds.get("type") != "prometheus" or \
                    ds.get("uid") not in want:
                problems.append("panel %r: datasource is not the "
                                "Prometheus variable" % title)
                break


def check_name(name, samples, types, problems, where, absent_ok=None):
    base_of = re.sub(r"_(bucket|sum|count)$", "", name)
    if absent_ok and absent_ok.search(name) and name not in samples \
            and base_of not in types:
        return
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and base in types:
            kind = types[base]
            if kind != "histogram" and not (suffix != "_bucket"
                                            and kind == "summary"):
                problems.append("%s: %s is a %s, it has no %s" %
                                (where, base, kind, suffix))
    if types.get(name) in ("histogram", "summary"):
        problems.append("%s: %s is a %s: use _bucket, _sum or _count" %
                        (where, name, types[name]))
    elif name not in samples:
        problems.append("%s: %s is not in /metrics" % (where, name))


def main(argv):
    absent_ok = None
    if len(argv) > 2 and argv[1] == "--absent-ok":
        absent_ok = re.compile(argv[2])
        argv = argv[:1] + argv[3:]
    if len(argv) < 3:
        print("usage: dashboard_check.py [--absent-ok REGEX] DASHBOARD.json "
              "METRICS.txt [METRICS.txt...]")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        d = json.load(f)
    samples, types = scrape(argv[2:])
    problems, checked = [], set()
    check_model(d, problems)
    for p in panels_of(d.get("panels", [])):
        for t in p.get("targets", []):
            expr = t.get("expr", "")
            names = metric_names(expr)
            if not names and "time()" not in expr:
                problems.append("panel %r: no metric in %r" %
                                (p.get("title"), expr))
            for n in names:
                check_name(n, samples, types, problems,
                           "panel %r" % p.get("title"), absent_ok)
                checked.add(n)
    for n in sorted(checked):
        print("checked", n)
    for pr in problems:
        print("problem:", pr)
    return 1 if problems or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks a Grafana dashboard against a live /metrics scrape.

dashboard_check.py [--absent-ok REGEX] [--moved [--zero-ok REGEX]]
                   [--panels REGEX | --skip-panels REGEX] [--vars A,B]
                   DASHBOARD.json METRICS.txt [METRICS.txt...]

The dashboard must be a Grafana JSON model (schemaVersion, unique panel
ids, a Prometheus datasource variable that every panel and target uses),
and every metric name in every PromQL expression must be a sample name in
the scrape: X_bucket only where X is a histogram, a histogram's own name
never bare (it has no samples), X_sum/X_count of a histogram or summary. Several scrapes are one (their
union: the TunnelMesh roles run in several processes). --absent-ok REGEX:
names it matches may be missing from the scrapes (the panels of roles a
scrape does not run); they are still checked when present.
--moved (scrapes taken after traffic): every selector of every panel,
with its label matchers (a Grafana variable matches anything), must
match a series that moved from zero (a counter or a histogram's count
above 0, a gauge not 0), so a panel whose series cannot move fails, not
only one whose name is missing; --zero-ok REGEX: names it matches are
exempt (say why where it is given). --panels REGEX: only the panels whose
title it matches are checked against the scrapes (the relay's panels
need two servers); --skip-panels REGEX: those are not (the model is
checked whole either way). --vars job,instance: each is a query
variable `label_values(METRIC..., NAME)` whose METRIC is in the scrapes
(moved too, with --moved), and every selector of every panel filters on
each (NAME=~"$NAME"), so no panel mixes roles or instances.
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
    return [n for n, _ in selectors(expr)]


MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*'
                     r'"((?:\\.|[^"\\])*)"')


def selectors(expr):
    """The vector selectors of one expression: (name, matchers), matchers
    a list of (label, op, value) from the name's {...}."""
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
                inside = []
                if nxt == "{":
                    j = i + 2
                    while j < len(toks) and toks[j] != "}":
                        inside.append(toks[j])
                        j += 1
                names.append((t, MATCHER.findall("".join(inside))))
        i += 1
    return names


def scrape(paths, values=None):
    """The sample names and family types of the scrapes; with values (a
    list), every sample as (name, labels, value) appended to it."""
    samples, types = set(), {}
    for path in paths:
        scrape_one(path, samples, types, values)
    return samples, types


SAMPLE = re.compile(r'([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)')
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:\\.|[^"\\])*)"')


def scrape_one(path, samples, types, values=None):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(None, 3)
                types[name] = kind
            elif line and not line.startswith("#"):
                m = SAMPLE.match(line)
                samples.add(m.group(1))
                if values is not None:
                    values.append((m.group(1),
                                   dict(LABEL.findall(m.group(2) or "")),
                                   float(m.group(3))))


def matches(labels, matchers):
    """Whether a sample's labels satisfy a selector's matchers; a Grafana
    variable ($component) matches anything."""
    for label, op, want in matchers:
        have = labels.get(label, "")
        if "$" in want:
            continue
        if op == "=" and have != want or op == "!=" and have == want:
            return False
        if op in ("=~", "!~"):
            hit = re.fullmatch(want, have) is not None
            if hit != (op == "=~"):
                return False
    return True


def moved(name, matchers, values):
    """The selector's series in the scrapes and whether one moved from
    zero: a counter above 0, a gauge not 0, a histogram's _bucket/_count
    above 0 (its _sum by its _count: a sum of zero durations is no
    sign)."""
    if name.endswith("_sum"):
        name = name[:-4] + "_count"
    series = [v for n, lab, v in values if n == name and matches(lab, matchers)]
    return len(series), any(v != 0 for v in series)


def check_moved(d, values, zero_ok, problems, chosen):
    """Every selector of every panel has a series that moved (--moved)."""
    for p in filter(chosen, panels_of(d.get("panels", []))):
        for t in p.get("targets", []):
            for name, matchers in selectors(t.get("expr", "")):
                if zero_ok and zero_ok.search(name):
                    print("zero-ok", name)
                    continue
                n, ok = moved(name, matchers, values)
                if not ok:
                    sel = name + ("{%s}" % ",".join(
                        '%s%s"%s"' % m for m in matchers) if matchers else "")
                    problems.append("panel %r: %s never moved from zero "
                                    "(%d series)" % (p.get("title"), sel, n))


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


LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(.+?)\s*,\s*"
                          r"([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$", re.S)


def var_query(d, name):
    """The (selector expression, label) of query variable NAME, or None."""
    for v in d.get("templating", {}).get("list", []):
        if v.get("name") == name and v.get("type") == "query":
            q = v.get("query")
            if isinstance(q, dict):
                q = q.get("query", "")
            m = LABEL_VALUES.match(q or "")
            return (m.group(1), m.group(2)) if m else None
    return None


def check_vars(d, names, samples, types, values, problems, chosen):
    """--vars: each variable a label_values query on a metric the scrapes
    have, and every selector of every chosen panel filtering on it."""
    for name in names:
        q = var_query(d, name)
        if not q or q[1] != name:
            problems.append("variable %s: no query label_values(METRIC, %s)"
                            % (name, name))
            continue
        sels = selectors(q[0])
        if len(sels) != 1:
            problems.append("variable %s: not one metric in %r" % (name, q[0]))
            continue
        check_name(sels[0][0], samples, types, problems, "variable " + name)
        if values is not None and not moved(sels[0][0], sels[0][1], values)[1]:
            problems.append("variable %s: %s never moved from zero"
                            % (name, sels[0][0]))
    for p in filter(chosen, panels_of(d.get("panels", []))):
        for t in p.get("targets", []):
            for sel, matchers in selectors(t.get("expr", "")):
                for name in names:
                    if not any(lab == name and op in ("=", "=~") and
                               val == "$" + name for lab, op, val in matchers):
                        problems.append("panel %r: %s does not filter on "
                                        "%s=~\"$%s\"" % (p.get("title"), sel,
                                                          name, name))


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
    absent_ok, zero_ok, values = None, None, None
    only, skip, var_names = None, None, []
    while len(argv) > 1 and argv[1].startswith("--"):
        if argv[1] == "--moved":
            values = []
            argv = argv[:1] + argv[2:]
        elif argv[1] in ("--panels", "--skip-panels") and len(argv) > 2:
            if argv[1] == "--panels":
                only = re.compile(argv[2])
            else:
                skip = re.compile(argv[2])
            argv = argv[:1] + argv[3:]
        elif argv[1] == "--vars" and len(argv) > 2:
            var_names = [n for n in argv[2].split(",") if n]
            argv = argv[:1] + argv[3:]
        elif argv[1] in ("--absent-ok", "--zero-ok") and len(argv) > 2:
            if argv[1] == "--absent-ok":
                absent_ok = re.compile(argv[2])
            else:
                zero_ok = re.compile(argv[2])
            argv = argv[:1] + argv[3:]
        else:
            break
    if len(argv) < 3:
        print("usage: dashboard_check.py [--absent-ok REGEX] [--moved "
              "[--zero-ok REGEX]] [--panels REGEX | --skip-panels REGEX] "
              "[--vars A,B] DASHBOARD.json METRICS.txt [METRICS.txt...]")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        d = json.load(f)
    samples, types = scrape(argv[2:], values)
    problems, checked = [], set()
    check_model(d, problems)

    def chosen(p):
        title = p.get("title", "")
        return (not only or only.search(title)) and \
            not (skip and skip.search(title))
    if values is not None:
        check_moved(d, values, zero_ok, problems, chosen)
    if var_names:
        check_vars(d, var_names, samples, types, values, problems, chosen)
    for p in filter(chosen, panels_of(d.get("panels", []))):
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

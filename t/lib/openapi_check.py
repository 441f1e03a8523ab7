#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks docs/api/openapi.yaml against the routes admin_api and pool_api
serve.

openapi_check.py OPENAPI.yaml ROUTES.json...

Each ROUTES.json is a module's own route table: admin_api's GET
/v1/routes, pool_api's GET /v1/pool; the served routes are their union. Prints one TAP line per check (numbered from --first, default 1)
and the number of checks last, on a line "# checks N"; exits 0.
- the (method, path) pairs of the document equal the served ones, both
  ways (paths marked x-served-by: host, the host's /v1/status, are left
  out: t/integration/status_page.sh tests them);
- every operation has a 401 answer and the bearer security applies;
- every $ref resolves inside the document;
- every error answer is the Error schema or text from the host.
Needs PyYAML (Debian python3-yaml)."""
import json
import sys

import yaml

METHODS = ("get", "post", "patch", "delete", "put", "head", "options")


def main():
    doc = yaml.safe_load(open(sys.argv[1]))
    served = [r for f in sys.argv[2:] for r in json.load(open(f))["routes"]]
    n = 0

    def ok(cond, name, detail=""):
        nonlocal n
        n += 1
        print(("ok" if cond else "not ok") + f" {n} - {name}")
        if not cond and detail:
            print(f"#   {detail}")

    documented = set()
    for path, item in doc["paths"].items():
        if item.get("x-served-by") == "host":
            continue  # the host's own (/v1/status): no module serves it
        for m in item:
            if m in METHODS:
                documented.add((m.upper(), path))
    got = {(r["method"], r["path"]) for r in served}
    ok(documented - got == set(), "every documented route is served",
       sorted(documented - got))
    ok(got - documented == set(), "every served route is documented",
       sorted(got - documented))
    ok(len(got) == len(served), "the served table has no duplicates")

    ok(doc["components"]["securitySchemes"]["adminToken"]["scheme"] ==
       "bearer" and doc["security"] == [{"adminToken": []}],
       "the bearer security scheme applies to every route")
    missing401 = [f"{m} {p}" for p, item in doc["paths"].items()
                  for m, op in item.items() if m in METHODS and
                  "401" not in op["responses"]]
    ok(not missing401, "every operation documents its 401", missing401)

    refs = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "$ref":
                    refs.append(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(doc)
    bad = []
    for r in refs:
        node = doc
        try:
            for part in r.lstrip("#/").split("/"):
                node = node[part]
        except (KeyError, TypeError):
            bad.append(r)
    ok(refs and not bad, f"every $ref resolves ({len(refs)})", bad)

    errs = []
    for name, resp in doc["components"]["responses"].items():
        content = resp.get("content", {})
        js = content.get("application/json")
        if js and js["schema"].get("$ref") != "#/components/schemas/Error":
            errs.append(name)
        if not js and "text/plain" not in content:
            errs.append(name)
    ok(not errs, "every error answer is the Error schema (or the host's text)",
       errs)
    print(f"# checks {n}")


main()

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The layering rules of modules/ and host/ (issue 25 item 1), checked by
t/integration/layers.sh: python3 layers.py TOP CHECK prints one line per
violation of CHECK and nothing when the tree keeps it.

  cycles    no include cycle among the files of one folder (a.c, a.h and
            its private a_int.h are one unit: a cycle is a.* -> b.* -> a.*
            through their includes, files that need each other)
  flags     the build files have one -I$(top_srcdir)/modules (AM_CPPFLAGS)
            and no -I$(top_srcdir)/modules/FOLDER
  layers    lib <- frontend <- the rest: modules/lib includes nothing
            under modules/ outside lib; modules/frontend only lib and
            itself; modules/contracts only SDK headers and contracts; no
            folder includes a module folder's own header (only the shared
            folders: lib, frontend, contracts, upstream, admin_kit,
            cp_common, tunnel_common, store_common); cross-folder includes
            are written by path ("lib/ilist.h"), never by a bare name
  tunnel    TunnelMesh's layers (seed 001): the protocol layer
            (modules/tunnel_common/proto) includes its own headers, the
            pure encoders lib/bw.h and lib/json.h, the SDK's codes
            (proxyhost/connector.h) and <stddef.h> <stdint.h> <string.h>
            <stdbool.h> <limits.h> only: no networking, configuration,
            database, logging, session or module code (TM-PROTO-42); the
            tunnel roles and the session layer include no SQL client and
            no store code (TM-P1-2); no file or build file of the tunnel
            roles, auth_cache or the stores names Redis (TM-PROTO-9)
  testkit   the test kit stays the tests': AM_CPPFLAGS gives every target
            -I t/lib and the PH_TEST_* / PH_BUILD_MODULES / PROMTOOL macros
            (so a unit test needs no flags of its own), so no file under
            modules/, host/ or sdk/ includes a header of t/lib or names
            one of those macros
"""
import os
import re
import sys

SHARED = ('lib', 'frontend', 'contracts', 'upstream', 'admin_kit',
          'cp_common', 'tunnel_common', 'store_common')
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(top, sub):
    for d, dirs, files in os.walk(os.path.join(top, sub)):
        dirs[:] = sorted(x for x in dirs if x not in ('gen', '.deps', '.libs'))
        for f in sorted(files):
            if f.endswith(('.c', '.h')):
                yield os.path.join(d, f)


def includes(path):
    with open(path, errors='replace') as fh:
        return INC.findall(fh.read())


def folder_of(top, path):
    """modules/X[/sub] or host: the folder a file's bare includes are in."""
    return os.path.relpath(os.path.dirname(path), top)


def cycles(top):
    out = []
    groups = {}
    for sub in ('modules', 'host'):
        for p in sources(top, sub):
            groups.setdefault(os.path.dirname(p), []).append(p)
    for d, files in sorted(groups.items()):
        # node: a file's stem (a.c, a.h and its private a_int.h are one unit)
        edges = {}

        def unit(name):
            stem = os.path.splitext(os.path.basename(name))[0]
            return stem[:-4] if stem.endswith('_int') else stem
        for p in files:
            stem = unit(p)
            edges.setdefault(stem, set())
            for inc in includes(p):
                t = os.path.join(os.path.dirname(p), inc)
                if os.path.dirname(os.path.normpath(t)) != os.path.normpath(d):
                    continue
                if not os.path.exists(t):
                    continue
                tstem = unit(inc)
                if tstem != stem:
                    edges[stem].add(tstem)
        # Tarjan's strongly connected components
        index, low, stack, on, comps = {}, {}, [], set(), []
        counter = [0]

        def strong(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in sorted(edges.get(v, ())):
                if w not in index:
                    strong(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
        for v in sorted(edges):
            if v not in index:
                strong(v)
        for comp in comps:
            out.append('%s: include cycle among %s'
                       % (os.path.relpath(d, top), ' '.join(comp)))
    return out


def build_files(top):
    yield 'Makefile.am'
    for d, dirs, files in os.walk(top):
        dirs[:] = sorted(x for x in dirs
                         if not x.startswith(('_', '.')) and x != 'autom4te.cache')
        for f in sorted(files):
            if f.endswith('.mk'):
                yield os.path.relpath(os.path.join(d, f), top)


def flags(top):
    out = []
    n_am = 0
    for rel in build_files(top):
        with open(os.path.join(top, rel)) as fh:
            for i, line in enumerate(fh, 1):
                if line.lstrip().startswith('#'):
                    continue
                for m in re.finditer(r'-I\$\(top_srcdir\)/modules(/[A-Za-z0-9_./]*)?', line):
                    if m.group(1) and m.group(1) != '/':
                        out.append('%s:%d: %s' % (rel, i, m.group(0)))
                    else:
                        n_am += 1
    if n_am != 1:
        out.append('-I$(top_srcdir)/modules appears %d times (want once, in AM_CPPFLAGS)' % n_am)
    return out


def layers(top):
    out = []
    mods = os.path.join(top, 'modules')
    for p in sources(top, 'modules'):
        rel = os.path.relpath(p, mods)
        me = rel.split('/')[0]
        for inc in includes(p):
            here = os.path.join(os.path.dirname(p), inc)
            if '/' not in inc:
                if os.path.exists(here):
                    continue
                # a bare name found only in another folder of modules/
                for d, _, fs in os.walk(mods):
                    if inc in fs and '/gen' not in d:
                        out.append('modules/%s: "%s" is in %s: include it by path'
                                   % (rel, inc, os.path.relpath(os.path.join(d, inc), mods)))
                        break
                continue
            target = os.path.join(mods, inc)
            if not os.path.exists(target):
                continue  # generated (cp_common/proto/gen) or the SDK's
            them = inc.split('/')[0]
            if them == me:
                continue
            if me == 'lib':
                out.append('modules/%s includes "%s": lib includes only lib' % (rel, inc))
            elif me == 'frontend' and them != 'lib':
                out.append('modules/%s includes "%s": frontend includes only lib' % (rel, inc))
            elif me == 'contracts':
                out.append('modules/%s includes "%s": a contract includes only SDK headers and contracts' % (rel, inc))
            elif them not in SHARED:
                out.append('modules/%s includes "%s": %s is a module, not a shared folder (move the header to contracts/)'
                           % (rel, inc, them))
    return out


ANY_INC = re.compile(r'^\s*#\s*include\s+[<"]([^>"]+)[>"]', re.M)
PROTO_OK = {'lib/bw.h', 'lib/json.h', 'proxyhost/connector.h', 'stddef.h',
            'stdint.h', 'string.h', 'stdbool.h', 'limits.h'}
TUNNEL_ROLES = ('tunnel_server', 'tunnel_client', 'tunnel_agent',
                'tunnel_common')
NO_SQL = re.compile(r'^(sqlite3\.h|libpq-fe\.h|store_common/|store_sqlite/|'
                    r'store_pg/|auth_cache/)')
REDIS_FREE = TUNNEL_ROLES + ('auth_cache', 'store_sqlite', 'store_pg')


def tunnel(top):
    out = []
    mods = os.path.join(top, 'modules')
    proto = os.path.join(mods, 'tunnel_common', 'proto')
    for p in sources(top, 'modules'):
        rel = os.path.relpath(p, mods)
        me = rel.split('/')[0]
        with open(p, errors='replace') as fh:
            text = fh.read()
        incs = ANY_INC.findall(text)
        if os.path.dirname(p) == proto:
            for inc in incs:
                if inc not in PROTO_OK and \
                        not os.path.exists(os.path.join(proto, inc)):
                    out.append('modules/%s includes "%s": the protocol layer '
                               'depends on no other code' % (rel, inc))
        if me in TUNNEL_ROLES:
            for inc in incs:
                if NO_SQL.match(inc):
                    out.append('modules/%s includes "%s": the tunnel roles '
                               'reach the store only through its service'
                               % (rel, inc))
        if me in REDIS_FREE and re.search(r'redis', text, re.I):
            out.append('modules/%s names Redis' % rel)
    for me in REDIS_FREE:
        mk = os.path.join(mods, me, 'local.mk')
        if os.path.exists(mk):
            with open(mk) as fh:
                if re.search(r'redis', fh.read(), re.I):
                    out.append('modules/%s/local.mk names Redis' % me)
    return out


TESTKIT_MACROS = re.compile(r'\b(PH_TEST_[A-Z_]+|PH_BUILD_MODULES|PROMTOOL)\b')


def testkit(top):
    out = []
    kit = set(f for f in os.listdir(os.path.join(top, 't', 'lib'))
              if f.endswith('.h'))
    for sub in ('modules', 'host', 'sdk'):
        for p in sources(top, sub):
            rel = os.path.relpath(p, top)
            own = os.path.dirname(p)
            for inc in includes(p):
                if os.path.exists(os.path.join(own, inc)):
                    continue
                if os.path.basename(inc) in kit or 't/lib' in inc:
                    out.append('%s: includes the test kit\'s "%s"' % (rel, inc))
            with open(p, errors='replace') as fh:
                for m in sorted(set(TESTKIT_MACROS.findall(fh.read()))):
                    out.append('%s: names the tests\' macro %s' % (rel, m))
    return out


def main():
    top, check = sys.argv[1], sys.argv[2]
    for line in {'cycles': cycles, 'flags': flags, 'layers': layers,
                 'testkit': testkit, 'tunnel': tunnel}[check](top):
        print(line)


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The documentation's checkable facts (t/integration/docs_lint.sh).

docs_lint.py SRCDIR CHECK [ARG...] prints one line per problem found by
CHECK and nothing when there is none; the exit status is 0 either way
(2 for bad usage). Each check guards one class of error that was found by
following the guides literally (issue 24):

  abi VERSION        every place that shows the running build's ABI
                     (--version, proxyhost_build_info, host ABI in a load
                     error, proxyhost-sdk.pc) says VERSION
  routes             every admin route collection of admin_api and of
                     pool_api is listed in operations.md's admin listener
                     table, which says what each module serves
  ctl HELPFILE       every proxyhostctl command the docs show is one
                     `proxyhostctl help` (in HELPFILE) lists; no made-up
                     command (`ctl ...`); a page that runs one first says
                     where its admin token file is
  index              docs/README.md links every document of docs/ once
  anchors            every link's #anchor and every quoted section
                     reference ("X" below, FILE.md, "X") names a heading
                     that is there (and above or below, as it says)
  tables             no table is broken by a paragraph
  tunnel             the server, agent and client guides and the shipped
                     roles use one tunnel host name, one agent name and
                     the server's port in every wss:// URL; each guide's
                     /readyz curl uses the admin port of its own file
  paths              a guide writes into a directory only once it made
                     it, and uses the system user proxyhost only after
                     saying how it is created
  installed FILE     every program and man page of the package (FILE:
                     debian/proxyhost.install) is in operations.md's
                     "Installed" table and the README's install paragraph
  configure          every --with-X the docs name is a configure option
  control            debian/control's description names every program
                     of the package, TunnelMesh, the controller and the
                     gateway
  seealso            proxyhost(8) SEE ALSO names every other page
  ini                every ini block and role loading pool_api with
                     redis_ownership loads the authority first and names
                     it in [pool_api] authority; none sets [admin_api]
                     authority or credentials (moved to [pool_api]); a
                     page names one CA file per role
  runbook            the upgrade runbook writes out the seed's 8 steps
  stale              no page calls a part that ships planned or to come
"""
import glob
import os
import re
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else "."


def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def md_files():
    out = ["README.md"]
    for pat in ("docs/*.md", "docs/*/*.md"):
        out += sorted(os.path.relpath(p, SRC)
                      for p in glob.glob(os.path.join(SRC, pat)))
    return out


GUIDES = ["docs/user-guide/server.md", "docs/user-guide/agent.md",
          "docs/user-guide/client.md"]
ROLES = ["conf/server.ini", "conf/agent.ini", "conf/client.ini",
         "modules/tunnel_client/tunnel_client.ini.sample",
         "modules/tunnel_agent/tunnel_agent.ini.sample"]


def blocks(text):
    """(first line number, info string, lines) of each fenced block, and
    of each block indented by four spaces after a blank line."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^( *)```(\S*)", lines[i])
        if m:
            ind = len(m.group(1))
            start = i + 1
            j = start
            while j < len(lines) and not re.match(r"^ *```", lines[j]):
                j += 1
            out.append((start + 1, m.group(2),
                        [ln[ind:] if ln[:ind].strip() == "" else ln
                         for ln in lines[start:j]]))
            i = j + 1
            continue
        if (lines[i].startswith("    ") and lines[i].strip() and
                (i == 0 or not lines[i - 1].strip())):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or
                                      not lines[j].strip()):
                j += 1
            out.append((i + 1, "", [ln[4:] for ln in lines[i:j]]))
            i = j
            continue
        i += 1
    return out


def code_lines(text, spans=True):
    """(line number, text) of every line of every code block, and (with
    spans) of every inline code span outside blocks."""
    out = []
    inblock = set()
    for start, _, ls in blocks(text):
        for k, ln in enumerate(ls):
            out.append((start + k, ln))
            inblock.add(start + k)
    for n, ln in enumerate(text.split("\n"), 1):
        if n in inblock or not spans:
            continue
        for span in re.findall(r"`([^`]+)`", ln):
            out.append((n, span))
    return out


def problems(items):
    for p in items:
        print(p)


# ---- abi -------------------------------------------------------------------

def check_abi(version):
    major, minor = version.split(".")
    pats = [r"module SDK ABI (\d+\.\d+)", r'abi="(\d+\.\d+)"',
            r"host ABI (\d+\.\d+)"]
    files = md_files() + sorted(os.path.relpath(p, SRC) for p in
                                glob.glob(os.path.join(SRC, "man/*.in")))
    for f in files:
        for n, ln in enumerate(read(f).split("\n"), 1):
            for p in pats:
                for v in re.findall(p, ln):
                    if v != version:
                        yield f"{f}:{n}: shows ABI {v}, the build is {version}"
            m = re.search(r"`abi_major`, `abi_minor` \| `(\d+)`, `(\d+)`", ln)
            if m and (m.group(1), m.group(2)) != (major, minor):
                yield (f"{f}:{n}: proxyhost-sdk.pc's abi {m.group(1)}."
                       f"{m.group(2)}, the build is {version}")
    # sdk/ABI.md's table of where the ABI shows (its examples of refusals
    # are hypothetical versions and stay as they are).
    for n, ln in enumerate(read("sdk/ABI.md").split("\n"), 1):
        for p in pats[:2]:
            for v in re.findall(p, ln):
                if v != version:
                    yield f"sdk/ABI.md:{n}: shows ABI {v}, the build is {version}"


# ---- routes ----------------------------------------------------------------

# Each admin module's route table, and the collections it serves.
ROUTE_TABLES = (("admin_api", "modules/admin_api/api_routes.c"),
                ("pool_api", "modules/pool_api/pool_routes.c"))


def check_routes():
    ops = read("docs/operations.md")
    row = [ln for ln in ops.split("\n") if ln.startswith("|") and
           "`admin_api` serves" in ln]
    if len(row) != 1:
        yield "operations.md: no admin listener row saying what `admin_api` serves"
        return
    for mod, src in ROUTE_TABLES:
        code = read(src)
        cols = set()
        for path in re.findall(r'\{"[A-Z]+", "(/v1/[^"]*)"', code):
            segs = path.split("/")[2:]
            n = 2 if segs[0] == "pool" else 1
            cols.add("/v1/" + "/".join(segs[:n]))
        if not cols:
            yield f"no route found in {src}"
        if f"`{mod}` serves" not in row[0]:
            yield f"operations.md: the admin listener row does not say what `{mod}` serves"
        for c in sorted(cols):
            if not re.search(r"`" + re.escape(c) + r"(/[^`]*)?`", row[0]):
                yield f"operations.md: the admin listener table omits {c} ({mod})"


# ---- ctl -------------------------------------------------------------------

def ctl_commands(helpfile):
    with open(helpfile, encoding="utf-8") as f:
        text = f.read()
    cmds = {}
    for ln in text.split("\n"):
        # "  noun verb ...", or "  noun [ARG]" for a command without verbs
        # (status), whose set stays empty: any argument goes.
        m = re.match(r"^  ([a-z][a-z-]*)(?: ([a-z][a-z|-]*))?(?: |$)", ln)
        if m:
            verbs = cmds.setdefault(m.group(1), set())
            if m.group(2):
                verbs.update(m.group(2).split("|"))
    return cmds


OPT_ARG = {"--admin", "--token-file", "--timeout"}


def check_ctl(helpfile):
    cmds = ctl_commands(helpfile)
    if "token" not in cmds:
        yield f"{helpfile}: not proxyhostctl's help"
        return
    files = md_files() + sorted(os.path.relpath(p, SRC) for p in
                                glob.glob(os.path.join(SRC, "conf/*.ini")))
    for f in files:
        text = read(f)
        if f.endswith(".ini"):
            lines = [(n, ln) for n, ln in enumerate(text.split("\n"), 1)
                     if ln.startswith(";")]
        else:
            lines = code_lines(text)
        # A page may run it as `ctl` after `alias ctl=proxyhostctl`.
        alias = re.search(r"alias ctl=proxyhostctl", text)
        if alias:
            text = re.sub(r"(?m)^(\s*(?:\$ )?)ctl ", r"\1proxyhostctl ", text)
            lines = code_lines(text)
        said_token = None
        for n, ln in enumerate(text.split("\n"), 1):
            if "PROXYHOSTCTL_TOKEN_FILE" in ln or "--token-file" in ln:
                said_token = n
                break
        first_call = None
        run = set(code_lines(text, spans=False)) if f.endswith(".md") else set()
        for n, ln in lines:
            if re.match(r"^\s*(\$ |# )?ctl ", ln):
                yield f"{f}:{n}: `ctl` is no command (proxyhostctl)"
            for m in re.finditer(r"(?:^|[\s/(\"'])proxyhostctl((?: +[^ ;|&)`\"']+)*)", ln):
                words = m.group(1).split()
                i = 0
                while i < len(words) and words[i].startswith("-"):
                    i += 2 if words[i] in OPT_ARG else 1
                if i >= len(words) or not re.match(r"^[a-z-]+$", words[i]):
                    continue
                noun = words[i]
                verb = words[i + 1] if i + 1 < len(words) else None
                if noun not in cmds:
                    if f.endswith(".ini") or noun in ("help",):
                        continue
                    yield f"{f}:{n}: proxyhostctl has no command {noun}"
                    continue
                if (verb and cmds[noun] and re.match(r"^[a-z-]+$", verb) and
                        verb not in cmds[noun]):
                    yield f"{f}:{n}: proxyhostctl has no command {noun} {verb}"
                if noun != "admin-token" and first_call is None and (n, ln) in run:
                    first_call = n
        if (f.startswith("docs/user-guide/") and first_call is not None and
                (said_token is None or said_token > first_call)):
            yield (f"{f}:{first_call}: proxyhostctl is run before the page "
                   "says where its admin token is (PROXYHOSTCTL_TOKEN_FILE "
                   "or --token-file)")


# ---- index -----------------------------------------------------------------

def check_index():
    idx = read("docs/README.md")
    links = [re.sub(r"#.*", "", t) for t in
             re.findall(r"\]\(([^)\s]+)\)", idx)]
    links = [os.path.normpath(os.path.join("docs", t)) for t in links
             if not re.match(r"^[a-z]+:", t)]
    docs = [f for f in md_files() if f.startswith("docs/") and
            f != "docs/README.md"]
    for f in docs:
        c = links.count(f)
        if c != 1:
            yield f"docs/README.md links {f} {c} times"


# ---- anchors ---------------------------------------------------------------

def slug(h):
    h = h.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def headings(f):
    out = []
    seen = {}
    inblock = False
    for n, ln in enumerate(read(f).split("\n"), 1):
        if re.match(r"^ *```", ln):
            inblock = not inblock
            continue
        if inblock:
            continue
        m = re.match(r"^#{1,6} +(.*?) *#*$", ln)
        b = re.match(r"^(?:- )?\*\*([^*]+?)\.?\*\*", ln)
        if b:  # a run-in heading: "**Renewals** (...)", "- **X.** ..."
            out.append((n, b.group(1), None))
        if m:
            title = m.group(1).replace("`", "")
            s = slug(title)
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.append((n, title, s if k == 0 else f"{s}-{k}"))
    return out


def norm_title(t):
    return re.sub(r"\s+", " ", t.replace("`", "").strip().lower())


def find_heading(f, title):
    t = norm_title(title)
    return [n for n, h, _ in headings(f)
            if re.search(r"(^|\W)" + re.escape(t) + r"($|\W)", norm_title(h))]


def resolve(f, target):
    for base in (os.path.dirname(f), ""):
        p = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(os.path.join(SRC, p)):
            return p
    return None


def check_anchors():
    files = md_files() + ["NEWS.md", "sdk/ABI.md"]
    files += sorted(os.path.relpath(p, SRC) for p in
                    glob.glob(os.path.join(SRC, "conf/*.ini")))
    files += ["deploy/systemd/proxyhost@.service.in"]
    for f in files:
        text = read(f)
        # Code blocks hold no references.
        skip = set()
        if f.endswith(".md"):
            for start, _, ls in blocks(text):
                skip.update(range(start, start + len(ls)))
        for n, ln in enumerate(text.split("\n"), 1):
            if n in skip:
                continue
            for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", ln):
                p = resolve(f, target) if target else f
                if not p:
                    continue  # docs_dist.sh reports the file
                if p.endswith(".md") and anchor not in [s for _, _, s in headings(p) if s]:
                    yield f"{f}:{n}: #{anchor} is no heading of {p}"
            for target, title in re.findall(
                    r"([\w./-]+\.md)\)?,? \"([^\"]+)\"", ln):
                p = resolve(f, target)
                if p and not find_heading(p, title):
                    yield f"{f}:{n}: {target} has no section \"{title}\""
            for title, target in re.findall(
                    r"\"([^\"]+)\" in \[[^\]]*\]\(([^)#\s]+)", ln):
                p = resolve(f, target)
                if p and not find_heading(p, title):
                    yield f"{f}:{n}: {target} has no section \"{title}\""
            if f.endswith(".md"):
                for title, where in re.findall(r"\"([^\"]+)\"\)? (above|below)", ln):
                    at = find_heading(f, title)
                    if not at:
                        yield f"{f}:{n}: no section \"{title}\" in this page"
                    elif where == "below" and not any(a > n for a in at):
                        yield f"{f}:{n}: \"{title}\" is above, not below"
                    elif where == "above" and not any(a < n for a in at):
                        yield f"{f}:{n}: \"{title}\" is below, not above"


# ---- tables ----------------------------------------------------------------

def check_tables():
    for f in md_files():
        lines = read(f).split("\n")
        inblock = False
        for i, ln in enumerate(lines):
            if re.match(r"^ *```", ln):
                inblock = not inblock
                continue
            if inblock or not ln.startswith("|"):
                continue
            prev = lines[i - 1] if i else ""
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if (prev.strip() and not prev.startswith("|") and
                    not re.match(r"^\|[-:| ]+\|$", nxt)):
                yield f"{f}:{i + 1}: a table row after a paragraph (the table is broken)"


# ---- tunnel ----------------------------------------------------------------

def ini_blocks(text):
    out = []
    for start, info, ls in blocks(text):
        if any(re.match(r"^\[[a-z_.]+\]", ln) for ln in ls):
            out.append((start, ls))
    return out


def admin_port(lines):
    sect = None
    for ln in lines:
        m = re.match(r"^\[([a-z_.]+)\]", ln)
        if m:
            sect = m.group(1)
        m = re.match(r"^listen *= *\S+:(\d+)", ln)
        if m and sect == "admin":
            return m.group(1)
    return "9470"


def check_tunnel():
    texts = {f: read(f) for f in GUIDES + ROLES}
    hosts = {}
    agents = {}
    for f, text in texts.items():
        for n, ln in enumerate(text.split("\n"), 1):
            for h in re.findall(r"tunnel\.example\.[a-z]+", ln):
                hosts.setdefault(h, f"{f}:{n}")
            for h in re.findall(r"wss://([^/\s:`]+)/", ln):
                yield f"{f}:{n}: wss://{h}/ without the server's port (8443)"
            for m in re.finditer(r"wss://tunnel\.[^/\s:`]+:(\d+)/", ln):
                if m.group(1) != "8443":
                    yield f"{f}:{n}: port {m.group(1)}, the server guide's is 8443"
            if f in GUIDES or f.startswith("conf/"):
                for a in re.findall(r"(?:agent create|--agent|agent_id *=|^agent *=)"
                                    r" *([a-z][a-z0-9-]*)\b", ln):
                    agents.setdefault(a, f"{f}:{n}")
    if len(hosts) != 1:
        yield "tunnel host names differ: " + ", ".join(
            f"{h} ({w})" for h, w in sorted(hosts.items()))
    if len(agents) != 1:
        yield "agent names differ: " + ", ".join(
            f"{a} ({w})" for a, w in sorted(agents.items()))
    for f in GUIDES:
        text = texts[f]
        full = [ls for _, ls in ini_blocks(text)
                if any(ln.startswith("[proxyhost]") for ln in ls)]
        if full:
            ports = {admin_port(ls) for ls in full}
        else:
            ports = {"9470"}
            for c in set(re.findall(r"conf/[a-z]+\.ini", text)):
                ports.add(admin_port(read(c).split("\n")))
        for n, ln in enumerate(text.split("\n"), 1):
            for p in re.findall(r"127\.0\.0\.1:(\d+)/readyz", ln):
                if p not in ports:
                    yield (f"{f}:{n}: /readyz on port {p}, the page's "
                           f"configuration listens on {', '.join(sorted(ports))}")


# ---- paths -----------------------------------------------------------------

EXISTING = ("/etc/proxyhost", "/tmp", "/etc", "/dev", "~", "/home/alice",
            "/etc/letsencrypt/renewal-hooks/deploy")  # certbot makes it


def check_paths():
    for f in sorted(glob.glob(os.path.join(SRC, "docs/user-guide/*.md"))):
        f = os.path.relpath(f, SRC)
        text = read(f)
        made = []
        user_said = None
        for n, ln in enumerate(text.split("\n"), 1):
            if "adduser --system" in ln and user_said is None:
                user_said = n
        for n, ln in sorted(code_lines(text)):
            for d in re.findall(r"(?:install (?:-[a-z] \S+ )*-d|mkdir -p)"
                                r"(?: +-[a-z] +\S+)* +((?:\S+ *)+)", ln):
                made += [x for x in d.split() if not x.startswith("-")]
            if re.search(r"(-o|-u|-g) proxyhost\b|chown proxyhost|chgrp proxyhost", ln):
                if user_said is None or user_said > n:
                    yield (f"{f}:{n}: uses the user proxyhost before saying "
                           "how it is made (adduser --system)")
            dests = re.findall(r"install .*/dev/null +(\S+)", ln)
            dests += re.findall(r"admin-token new +(\S+)", ln)
            if f in GUIDES:
                dests += re.findall(r"(?:^|\s)>>?\s*([~/][^\s;&|]+)", ln)
            for p in dests:
                if p in ("/dev/null",) or p.startswith("&"):
                    continue
                d = os.path.dirname(p)
                if not d or d in EXISTING or d.startswith("$"):
                    continue
                if not any(m == d or m.startswith(d + "/") for m in made):
                    yield f"{f}:{n}: writes {p}, but {d} was not made before"


# ---- installed -------------------------------------------------------------

def check_installed(install):
    with open(install, encoding="utf-8") as f:
        inst = f.read().split()
    progs = [os.path.basename(p) for p in inst
             if re.match(r"^usr/s?bin/", p)]
    pages = [os.path.basename(p) for p in inst if "/man/man" in p]
    want = progs + pages
    ops = read("docs/operations.md").split("\n")
    try:
        i = next(k for k, ln in enumerate(ops) if ln.startswith("**Installed**"))
    except StopIteration:
        yield "operations.md: no **Installed** table"
        return
    table = []
    for ln in ops[i + 1:]:
        if ln.startswith("|"):
            table.append(ln)
        elif table:
            break
    table = "\n".join(table)
    readme = read("README.md")
    m = re.search(r"`make install` installs(.*?)\n\n", readme, re.S)
    para = m.group(1) if m else ""
    if not para:
        yield "README.md: no paragraph saying what `make install` installs"
    for w in want:
        name, _, sect = w.rpartition(".") if w in pages else (w, "", "")
        forms = [w] + ([f"{name}({sect})"] if sect else [])
        # a page written as `man5/proxyhost.ini.5` in the table counts
        if not any(x in table for x in forms):
            yield f"operations.md: the Installed table omits {w}"
        if para and not any(x in para for x in forms):
            yield f"README.md: the install paragraph omits {w}"


# ---- configure -------------------------------------------------------------

def check_configure():
    ac = read("configure.ac")
    opts = set(re.findall(r"AC_ARG_WITH\(\[([a-z0-9-]+)\]", ac))
    for f in md_files():
        for n, ln in enumerate(read(f).split("\n"), 1):
            for o in re.findall(r"--with-([a-z0-9-]+)", ln):
                if o not in opts:
                    yield f"{f}:{n}: --with-{o} is no configure option"


# ---- control ---------------------------------------------------------------

def check_control(install):
    ctl = read("debian/control")
    m = re.search(r"^Package: proxyhost\n(.*?)(?:\n\n|\Z)", ctl, re.S | re.M)
    desc = m.group(1) if m else ""
    with open(install, encoding="utf-8") as f:
        progs = [os.path.basename(p) for p in f.read().split()
                 if re.match(r"^usr/s?bin/", p)]
    for w in progs + ["TunnelMesh", "controller", "gateway"]:
        if not re.search(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])", desc):
            yield f"debian/control: the proxyhost package's description omits {w}"


# ---- seealso ---------------------------------------------------------------

def check_seealso():
    page = read("man/proxyhost.8.in")
    m = re.search(r"^\.SH SEE ALSO\n(.*?)(?:^\.SH|\Z)", page, re.S | re.M)
    see = (m.group(1) if m else "").replace("\\-", "-")
    for p in sorted(glob.glob(os.path.join(SRC, "man/*.in"))):
        name = os.path.basename(p)[:-3]
        if name == "proxyhost.8":
            continue
        base, _, sect = name.rpartition(".")
        if not re.search(re.escape(base) + r"\s*\(" + sect + r"\)", see):
            yield f"proxyhost(8) SEE ALSO omits {base}({sect})"


# ---- ini -------------------------------------------------------------------

def check_ini():
    sources = []
    for f in md_files():
        for start, ls in ini_blocks(read(f)):
            sources.append((f"{f}:{start}", ls))
    for p in sorted(glob.glob(os.path.join(SRC, "conf/*.ini"))):
        f = os.path.relpath(p, SRC)
        sources.append((f, read(f).split("\n")))
    for where, ls in sources:
        mods = []
        for ln in ls:
            m = re.match(r"^modules *= *(.*)", ln)
            if m:
                mods = [x.strip() for x in m.group(1).split(",")]
        base = [x.split(".")[0] for x in mods]
        sect = None
        for ln in ls:
            m = re.match(r"^\[([a-z_.]+)\]", ln)
            if m:
                sect = m.group(1)
            elif sect == "admin_api" and re.match(r"^(authority|credentials) *=", ln):
                yield f"{where}: [admin_api] {ln.split('=')[0].strip()} moved to [pool_api]"
        if "pool_api" in base and "redis_ownership" in base:
            if base.index("redis_ownership") > base.index("pool_api"):
                yield f"{where}: redis_ownership is loaded after pool_api"
            sect, auth = None, False
            for ln in ls:
                m = re.match(r"^\[([a-z_.]+)\]", ln)
                if m:
                    sect = m.group(1)
                elif sect == "pool_api" and re.match(r"^authority *=", ln):
                    auth = True
            if not auth:
                yield f"{where}: [pool_api] has no authority (extraction answers 501)"
    for f in md_files():
        cas = set(re.findall(r"/etc/proxyhost/(?:[\w.-]+/)*[\w.-]*ca[\w.-]*\.pem", read(f)))
        if len(cas) > 1:
            yield f"{f}: names more than one CA file: {', '.join(sorted(cas))}"


# ---- runbook ---------------------------------------------------------------

RUNBOOK_STEPS = {
    1: [r"[Bb]ack up the database", r"schema version: 8", r"chain"],
    2: [r"v9", r"revision reader", r"not announced"],
    3: [r"revision row", r"polling", r"readiness|/readyz", r"bypass"],
    4: [r"servers", r"subprotocols", r"OPEN_RESULT"],
    5: [r"agents", r"connections\.min = 1", r"connections\.max = 1"],
    6: [r"clients", r"strict", r"legacy", r"stream_open_total"],
    7: [r"connections\.min = 2", r"connections\.max = 4", r"capacity"],
    8: [r"[Ll]ast", r"flow_control = true", r"fair_writer = true"],
}


def check_runbook():
    text = read("docs/operations/authorization.md")
    m = re.search(r"^## Upgrade from v8 and rollback\n(.*?)^## ", text, re.S | re.M)
    sect = m.group(1) if m else ""
    steps = re.findall(r"^(\d+)\. \*\*", sect, re.M)
    if steps != [str(k) for k in range(1, 9)]:
        yield ("authorization.md: the upgrade runbook has steps "
               f"{','.join(steps) or 'none'}, the seed's are 1..8, each written out")
    # What each step must say (seed 001's upgrade order, TM-UPG-1..8):
    # every pattern of a step is found in that step's text.
    body = dict(re.findall(r"^(\d+)\. (\*\*.*?)(?=^\d+\. \*\*|^\S|\Z)",
                           sect, re.M | re.S))
    for k, pats in RUNBOOK_STEPS.items():
        t = re.sub(r"\s+", " ", body.get(str(k), ""))
        for pat in pats:
            if not re.search(pat, t):
                yield (f"authorization.md: upgrade step {k} does not say "
                       f"/{pat}/")
    if not re.search(r"v8 (application|writer)", sect):
        yield ("authorization.md: the runbook does not say what a v8 writer "
               "during the upgrade means for the revision and the caches")


# ---- seed docs --------------------------------------------------------------

# Seed 001's documents and what each must cover (TM-DOC-1, 2, 4..7; the
# pool presented as first-screen latency, not single-stream speed,
# TM-P2-28): "h" a section heading (## or the title) matching the pattern,
# "t" the text (whitespace folded).
SEED_DOCS = {
    "docs/user-guide/client.md": [
        ("h", r"strict socks5 open"), ("h", r"remote dns"),
        ("h", r"auth_url"), ("h", r"^errors"), ("t", r"cache")],
    "docs/user-guide/agent.md": [
        ("h", r"dial executor"), ("h", r"connection pool"),
        ("t", r"low[- ]latency")],
    "docs/operations/connection-pool.md": [
        ("h", r"web-page workloads"), ("h", r"^rollback"),
        ("h", r"what it improves, and what not"),
        ("t", r"first screen\*\* when many streams start together"),
        ("t", r"does \*\*not\*\* make a single stream faster")],
    "docs/operations/troubleshooting.md": [
        ("h", r"stages"), ("h", r"ttfb"), ("h", r"^dns"),
        ("h", r"authorization cache"), ("t", r"relay")],
    "docs/operations/network-probes.md": [
        ("h", r"probe"), ("h", r"reading them together"),
        ("t", r"tunnelmesh_stream_stage_duration_seconds")],
    "docs/protocol/proxy-modules.md": [
        ("h", r"^capabilities"), ("h", r"openresult"), ("h", r"^windows"),
        ("h", r"^legacy rules")],
}


def check_seeddocs():
    for f, items in SEED_DOCS.items():
        if not os.path.exists(os.path.join(SRC, f)):
            yield f"{f}: missing"
            continue
        hs = [norm_title(h) for _, h, s in headings(f) if s is not None]
        text = re.sub(r"\s+", " ", read(f))
        for kind, pat in items:
            if kind == "h" and not any(re.search(pat, h) for h in hs):
                yield f"{f}: no section heading /{pat}/"
            if kind == "t" and not re.search(pat, text, re.I):
                yield f"{f}: does not say /{pat}/"


# ---- configuration keys -----------------------------------------------------

def check_confkeys():
    """Every key of the three roles' samples has its row in
    docs/operations/configuration.md, which says the precedence order
    (TM-DOC-3)."""
    doc = read("docs/operations/configuration.md")
    if not re.search(r"command line.*?environment.*?the file.*?the default",
                     doc, re.S):
        yield ("configuration.md: does not give the precedence command line"
               " > environment > file > default")
    for m in ("tunnel_server", "tunnel_agent", "tunnel_client"):
        sample = read(f"modules/{m}/{m}.ini.sample")
        sect = sample.split(f"[{m}]", 1)[-1]
        keys = sorted(set(re.findall(r"^;? ?([a-z][a-z0-9_.]*) =", sect,
                                     re.M)))
        for k in keys:
            if not re.search(r"^\| `" + re.escape(k) + r"` \|", doc, re.M):
                yield f"configuration.md: [{m}] {k} has no row"


# ---- stale -----------------------------------------------------------------

STALE = [r"modules are planned", r"still to come", r"wait for the metrics",
         r"until\s+then nothing records outcomes"]


def check_stale():
    for f in md_files():
        text = re.sub(r"\s+", " ", read(f))
        for p in STALE:
            if re.search(p, text):
                yield f"{f}: says \"{p}\" of a part that ships"


CHECKS = {"abi": check_abi, "routes": check_routes, "ctl": check_ctl,
          "index": check_index, "anchors": check_anchors,
          "tables": check_tables, "tunnel": check_tunnel,
          "paths": check_paths, "installed": check_installed,
          "configure": check_configure, "control": check_control,
          "seealso": check_seealso, "ini": check_ini,
          "runbook": check_runbook, "stale": check_stale,
          "seeddocs": check_seeddocs, "confkeys": check_confkeys}

if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[2] not in CHECKS:
        sys.stderr.write("usage: docs_lint.py SRCDIR CHECK [ARG...]\n")
        sys.exit(2)
    problems(CHECKS[sys.argv[2]](*sys.argv[3:]))

# SPDX-License-Identifier: BSD-2-Clause
"""A small Chrome DevTools Protocol kit for the browser tests.

Drives headless Chromium (Debian's /usr/bin/chromium) through
--remote-debugging-pipe: JSON messages ended by a NUL byte, written to the
browser's fd 3 and read from its fd 4. Standard library only; nothing is
downloaded; every wait has a deadline; the profile is a fresh directory
under the caller's temp dir; name resolution is off except for 127.0.0.1
(nothing leaves loopback).

Used as a script, it runs steps in order in one browser and writes what it
saw under OUTDIR:

  cdp.py OUTDIR STEP...
    goto:URL         navigate, wait for the load event
    login:TOKENFILE  fill input[name=token] with the file's first line and
                     submit its form, wait for the next load event
    submit:SELECTOR  submit the form SELECTOR (e.g. a logout button's form)
    dump:NAME        document.documentElement.outerHTML -> OUTDIR/NAME.html
    shot:NAME        a PNG screenshot of the page -> OUTDIR/NAME.png
    text:NAME        document.body.innerText (what a reader sees) -> OUTDIR/NAME.txt
    cookies:NAME     Network.getCookies (JSON list) -> OUTDIR/NAME.json

  and always OUTDIR/requests.txt (every URL the page requested, one a line),
  OUTDIR/documents.txt ("STATUS URL" for every document response,
  redirects included) and OUTDIR/dialogs.txt (the message of every
  alert/confirm/prompt a page opened, Page.javascriptDialogOpening; each
  is dismissed). Exit 0 when every step ran, 1 otherwise.
"""
import base64
import fcntl
import json
import os
import select
import subprocess
import sys
import tempfile
import time

STEP_TIMEOUT = 20.0  # seconds, per command or awaited event
START_TIMEOUT = 20.0


class CdpError(Exception):
    pass


def chromium_path():
    for p in (os.environ.get("CHROMIUM"), "/usr/bin/chromium",
              "/usr/bin/chromium-browser"):
        if p and os.access(p, os.X_OK):
            return p
    raise CdpError("no chromium (scripts/install-deps.sh installs it)")


class Browser:
    """One headless Chromium, one page, its requests and documents."""

    def __init__(self, workdir, width=1000, height=800):
        self.profile = tempfile.mkdtemp(prefix="chrome-", dir=workdir)
        self.requests = []   # every URL the page asked for
        self.documents = []  # (status, url) of each document response
        self.dialogs = []    # the message of every JavaScript dialog
        self._buf = b""
        self._id = 0
        self._events = []
        to_b_r, to_b_w = os.pipe()    # we write, the browser reads (its fd 3)
        from_b_r, from_b_w = os.pipe()  # the browser writes (its fd 4)
        # The browser's ends go to its fds 3 and 4: high copies (no clash
        # with 3 and 4) are moved there in the child, and pass_fds keeps
        # 3 and 4 open through exec (both are open here: os.pipe takes the
        # lowest free numbers).
        hi_r = fcntl.fcntl(to_b_r, fcntl.F_DUPFD_CLOEXEC, 10)
        hi_w = fcntl.fcntl(from_b_w, fcntl.F_DUPFD_CLOEXEC, 10)
        args = [chromium_path(), "--headless=new", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-extensions",
                "--disable-sync", "--disable-component-update",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "--remote-debugging-pipe",
                "--window-size=%d,%d" % (width, height),
                "--user-data-dir=" + self.profile, "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")

        def place():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)
        self.err = open(os.path.join(workdir, "chrome.err"), "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                     stdout=self.err, stderr=self.err,
                                     preexec_fn=place, pass_fds=(3, 4))
        for fd in (to_b_r, from_b_w, hi_r, hi_w):
            os.close(fd)
        self.wfd, self.rfd = to_b_w, from_b_r
        self.session = None
        self._attach()

    # --- the pipe ----------------------------------------------------
    def _send(self, method, params=None, session=True):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self.wfd, data)
            data = data[n:]
        return self._id

    def _read_one(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("timed out waiting for the browser")
            r, _, _ = select.select([self.rfd], [], [], left)
            if not r:
                continue
            chunk = os.read(self.rfd, 1 << 20)
            if not chunk:
                raise CdpError("the browser closed its pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        msg = json.loads(raw)
        if "method" in msg:
            self._note(msg)
        return msg

    def _note(self, ev):
        """Records requests and document responses; keeps the event."""
        m, p = ev["method"], ev.get("params", {})
        if m == "Network.requestWillBeSent":
            self.requests.append(p["request"]["url"])
            r = p.get("redirectResponse")
            if r and p.get("type") == "Document":
                self.documents.append((r["status"], r["url"]))
        elif m == "Network.responseReceived" and p.get("type") == "Document":
            self.documents.append((p["response"]["status"],
                                   p["response"]["url"]))
        elif m == "Page.javascriptDialogOpening":
            # Recorded and dismissed, or the page would stay blocked.
            self.dialogs.append(p.get("message", ""))
            self._send("Page.handleJavaScriptDialog", {"accept": False})
        self._events.append(ev)

    def call(self, method, params=None, session=True, timeout=STEP_TIMEOUT):
        want = self._send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read_one(deadline)
            if msg.get("id") == want:
                if "error" in msg:
                    raise CdpError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})

    def wait_event(self, method, timeout=STEP_TIMEOUT):
        """The first event METHOD not consumed yet (older ones included)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self._events):
                if ev["method"] == method:
                    del self._events[: i + 1]
                    return ev
            self._events.clear()
            self._read_one(deadline)

    def _attach(self):
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                targets = self.call("Target.getTargets", session=False,
                                    timeout=max(0.1, deadline - time.monotonic()))
            except CdpError:
                if time.monotonic() >= deadline or self.proc.poll() is not None:
                    raise
                continue
            pages = [t for t in targets["targetInfos"] if t["type"] == "page"]
            if pages:
                break
            if time.monotonic() >= deadline:
                raise CdpError("no page target")
            time.sleep(0.1)
        r = self.call("Target.attachToTarget",
                      {"targetId": pages[0]["targetId"], "flatten": True},
                      session=False)
        self.session = r["sessionId"]
        for d in ("Page.enable", "Network.enable", "Runtime.enable"):
            self.call(d)

    # --- operations --------------------------------------------------
    def goto(self, url):
        self._events.clear()
        r = self.call("Page.navigate", {"url": url})
        if r.get("errorText"):
            raise CdpError("navigate %s: %s" % (url, r["errorText"]))
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr,
                                           "returnByValue": True})
        if "exceptionDetails" in r:
            raise CdpError("evaluate: %s" % r["exceptionDetails"].get("text"))
        return r["result"].get("value")

    def submit(self, selector, fill=None):
        """Fills FILL {input-selector: value} and submits form SELECTOR
        (or the form of the element SELECTOR), then waits for the load."""
        js = ["(function(){"]
        for sel, val in (fill or {}).items():
            js.append("var i=document.querySelector(%s);if(!i)return 'no %s';"
                      "i.value=%s;" % (json.dumps(sel), sel.replace("'", ""),
                                       json.dumps(val)))
        js.append("var f=document.querySelector(%s);if(!f)return 'no form';"
                  "if(f.tagName!=='FORM')f=f.form;if(!f)return 'no form';"
                  "HTMLFormElement.prototype.submit.call(f);return 'ok';})()"
                  % json.dumps(selector))
        self._events.clear()
        got = self.evaluate("".join(js))
        if got != "ok":
            raise CdpError("submit %s: %s" % (selector, got))
        self.wait_event("Page.loadEventFired")

    def login(self, token):
        self.submit("input[name=token]", {"input[name=token]": token})

    def html(self):
        return self.evaluate("document.documentElement.outerHTML")

    def text(self):
        return self.evaluate("document.body.innerText")

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot",
                      {"format": "png", "captureBeyondViewport": True})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def cookies(self):
        return self.call("Network.getCookies")["cookies"]

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=5)
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        for fd in (self.wfd, self.rfd):
            os.close(fd)
        self.err.close()


def run(outdir, steps):
    b = Browser(outdir)
    try:
        for step in steps:
            verb, _, arg = step.partition(":")
            if verb == "goto":
                b.goto(arg)
            elif verb == "login":
                with open(arg) as f:
                    b.login(f.readline().strip())
            elif verb == "submit":
                b.submit(arg)
            elif verb == "dump":
                with open(os.path.join(outdir, arg + ".html"), "w") as f:
                    f.write(b.html())
            elif verb == "text":
                with open(os.path.join(outdir, arg + ".txt"), "w") as f:
                    f.write(b.text())
            elif verb == "shot":
                b.screenshot(os.path.join(outdir, arg + ".png"))
            elif verb == "cookies":
                with open(os.path.join(outdir, arg + ".json"), "w") as f:
                    json.dump(b.cookies(), f)
            else:
                raise CdpError("unknown step " + step)
    finally:
        with open(os.path.join(outdir, "requests.txt"), "w") as f:
            f.writelines(u + "\n" for u in b.requests)
        with open(os.path.join(outdir, "documents.txt"), "w") as f:
            f.writelines("%d %s\n" % d for d in b.documents)
        with open(os.path.join(outdir, "dialogs.txt"), "w") as f:
            f.writelines(d + "\n" for d in b.dialogs)
        b.close()


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    try:
        run(argv[1], argv[2:])
    except (CdpError, OSError) as e:
        sys.stderr.write("cdp.py: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

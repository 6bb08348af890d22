#!/usr/bin/python3
"""test_view_browser.py: `continuo view` in a real browser (Debian's chromium, headless, over its DevTools protocol).

A running `serve` with the shipped model and `continuo view` beside it; the
page is loaded in chromium; a phrase is played into the service in real
time.  Checked in the page, as a user would see it: the player's notes
appear within 200 ms of being played, the model's answer appears, its notes
have attention lines to earlier notes, moving the density control changes
the service's setting (`ctl get`), a take saved from the page holds the
phrase and the answer's notes, a take replays from the page (each of its
notes on the roll, none left open when it is over), the page says
how each phrase ended (the silence rule after 500 ms; with phrase_end set
to auto from the page, the verdict's margin as `ctl status` gives it), and
when the player plays into an answer, the page keeps only what sounded of
it (on the roll, and in its take saved from the page) and counts the
barge-in.  Checked
from outside: 403 without the token, 403 for a request from another site,
nothing listens but on loopback.  A screenshot of the page goes to
$CONTINUO_VIEW_SHOT (docs/view.png when run by hand).
"""
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import mido

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from servetest import Service, check, done, sanitized  # noqa: E402

CONTINUO = os.environ["CONTINUO"]
SRC = os.environ["CONTINUO_SRC"]
MODEL = os.path.join(SRC, "models", "continuo-default.gguf")
MOTIF = [(60, 80, 0.15), (64, 76, 0.15), (67, 84, 0.15), (72, 90, 0.3), (67, 70, 0.15), (64, 72, 0.3)]
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")

try:
    import websocket  # python3-websocket
except ImportError:
    websocket = None


def http(url, method="GET", data=None, headers=None):
    """(status, body) of one request."""
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def listening_on(port):
    """The local addresses of the sockets listening on PORT (IPv4 and IPv6)."""
    found = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(name) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                addr, p = local.rsplit(":", 1)
                if state == "0A" and int(p, 16) == port:
                    found.append(addr)
    return found


class Page:
    """One page of a headless chromium, driven over the DevTools protocol."""

    def __init__(self, url, profile):
        self.proc = subprocess.Popen([BROWSER, "--headless=new", "--no-sandbox", "--disable-gpu",
                                      "--no-first-run", "--remote-debugging-port=0", "--user-data-dir=" + profile,
                                      "--window-size=1400,800", url],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file) and time.monotonic() < deadline:
            time.sleep(0.1)
        port = int(open(port_file).read().split()[0])
        pages = []
        while not pages and time.monotonic() < deadline:
            pages = [t for t in json.loads(urllib.request.urlopen("http://127.0.0.1:%d/json" % port).read())
                     if t["type"] == "page"]
            time.sleep(0.1)
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=10)
        self.n = 0

    def call(self, method, **params):
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.n:
                return msg.get("result", {})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        return r.get("result", {}).get("value")

    def close(self):
        self.ws.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)


def wait_for(page, expr, timeout):
    """Seconds until EXPR is true in the page (polled every 10 ms), or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if page.eval(expr):
            return time.monotonic() - t0
        time.sleep(0.01)
    return None


def check_guards(base, token):
    status, _ = http(base + "/")
    check(status == 403, "without the token: 403 (%d)" % status)
    status, _ = http(base + "/?token=" + "0" * len(token))
    check(status == 403, "with another token: 403 (%d)" % status)
    status, _ = http(base + "/events?token=" + token, headers={"Origin": "http://evil.example"})
    check(status == 403, "the event stream for another site's page: 403 (%d)" % status)
    status, body = http(base + "/cmd?token=" + token, "POST", b"set density 2", {"Origin": "http://evil.example"})
    check(status == 403, "a command from another site's page: 403 (%d %s)" % (status, body))
    status, body = http(base + "/cmd?token=" + token, "POST", b"save /tmp/x.mid")
    check(status == 400, "a command the page may not send: 400 (%d %s)" % (status, body))
    status, body = http(base + "/cmd?token=" + token, "POST", b"set density " + b"9" * 2000)
    check(status == 413, "an oversized command: 413 (%d)" % status)
    port = int(base.rsplit(":", 1)[1])
    addrs = listening_on(port)
    check(addrs == ["0100007F"], "listening on 127.0.0.1 only (%s)" % addrs)


def check_page(page, sv):
    check(wait_for(page, "document.getElementById('conn').textContent === 'live'", 10) is not None,
          "the page is connected to the service")
    players = "[...notes.values()].filter(n => n.who === 'player').length"
    delays = []
    for i, (pitch, vel, held) in enumerate(MOTIF):
        sv.play([0x90, pitch, vel])
        delays.append(wait_for(page, "%s >= %d" % (players, i + 1), 1.0))
        time.sleep(held)
        sv.play([0x80, pitch, 0])
    print("player's notes on the page after (ms):", [None if d is None else round(d * 1000) for d in delays])
    check(all(d is not None and d < 0.2 for d in delays), "each player's note on the page within 200 ms")
    models = "[...notes.values()].filter(n => n.who === 'model').length"
    check(wait_for(page, models + " >= 3", 5) is not None, "the model's answer is on the page")
    time.sleep(1.5)
    lines = page.eval("attention.length")
    earlier = page.eval("attention.every(a => notes.get(a.to) && notes.get(a.from) && "
                        "notes.get(a.to).on <= notes.get(a.from).on && a.to !== a.from)")
    print("attention lines:", lines, "all to earlier notes:", earlier)
    check(lines and lines > 0 and earlier, "attention lines from the model's notes to earlier notes")


def set_from_page(page, sv, key, js_value, want):
    """Sets KEY's control on the page to JS_VALUE as a user does (a change
    event); `ctl get KEY` once it holds WANT, or after 3 s."""
    page.eval("(() => { const k = document.getElementById('knob-%s'); k.value = %s; "
              "k.dispatchEvent(new Event('change')); })()" % (key, js_value))
    deadline = time.monotonic() + 3
    got = ""
    while time.monotonic() < deadline and want not in got:
        got = sv.request("get " + key)
        time.sleep(0.05)
    return got


def wait_listening(sv, timeout=15):
    """Until the service has no answer going (or TIMEOUT s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and "state=listening" not in sv.request("status"):
        time.sleep(0.1)


def turn_text(page):
    return page.eval("document.getElementById('turn').textContent") or ""


def check_turn(page, sv):
    """The page says how the phrase ended: the first by the silence rule;
    then phrase_end is set to auto from the page and the motif played
    again: the page shows the verdict's margin, the one `ctl status` gives."""
    first = turn_text(page)
    m = re.fullmatch(r"phrase end: (\d+) ms, silence", first)
    check(m is not None and 500 <= int(m.group(1)) < 600,
          "the page says the first phrase ended by the silence rule, 500 ms after the release (%r)" % first)
    got = set_from_page(page, sv, "phrase_end", "'auto'", "auto")
    check("auto" in got, "the phrase end control set the service's phrase_end (%s)" % got)
    wait_listening(sv)
    marks = page.eval("marks.filter(m => m.kind === 'end').length")
    sv.play_motif(MOTIF)
    check(wait_for(page, "marks.filter(m => m.kind === 'end').length > %d" % marks, 5) is not None,
          "the second phrase's end is on the page")
    status = sv.request("status")
    margin = re.search(r"phrase_end_margin=(\S+)", status).group(1)
    text = turn_text(page)
    label = page.eval("marks.filter(m => m.kind === 'end').pop().label")
    print("the page: %r (the roll's mark: %r); ctl status: phrase_end_margin=%s" % (text, label, margin))
    shown = r"phrase end: \d+ ms, (auto \(%s\)|silence \(auto %s\))" % (re.escape(margin), re.escape(margin))
    check(margin != "none" and re.fullmatch(shown, text) is not None and text.endswith(label),
          "the page shows how auto judged the phrase, with the margin status gives")
    wait_listening(sv)
    time.sleep(0.3)
    left = page.eval("[...notes.values()].filter(n => n.who === 'model' && n.off === null).map(n => n.pitch)")
    check(left == [], "no note of the model's is left open on the page once the answers are over, "
          "the replayed take's included (%s)" % left)


def check_barge_in(page, sv):
    """The player plays into an answer: it stops, and the page keeps only
    what sounded of it (no note after the stop, none sounding past it) and
    counts the barge-in as `ctl status` does."""
    models = "[...notes.values()].filter(n => n.who === 'model' && n.on > %f).length"
    t0 = page.eval("now()")
    sv.play_motif(MOTIF)
    sounded = "[...notes.values()].filter(n => n.who === 'model' && n.on > %f && n.on < now() - 0.1).length" % t0
    check(wait_for(page, sounded + " >= 1", 5) is not None, "an answer to the phrase sounds on the page")
    k = page.eval("Math.max(...answers.keys())")
    stops = "marks.filter(m => m.kind === 'stop')"
    n_stops = page.eval(stops + ".length")
    sv.play([0x90, 48, 90])
    time.sleep(0.2)
    sv.play([0x80, 48, 0])
    check(wait_for(page, stops + ".length > %d" % n_stops, 3) is not None, "the answer's stop is on the page")
    stop = page.eval(stops + ".pop().t")
    after = page.eval("[...notes.values()].filter(n => n.who === 'model' && n.on > %f && "
                      "(n.on >= %f || n.off === null || n.off > %f + 0.001)).length"
                      % (t0, stop, stop))
    heard = page.eval(models % t0)
    print("barge-in: the answer stopped at %.3f s; %d of its notes on the page, %d past the stop" % (stop, heard, after))
    check(after == 0 and heard >= 1, "the page keeps what sounded of the stopped answer, nothing past its stop")
    saved = page.eval("Array.from(takeMidi(%d) || [])" % k)
    with tempfile.NamedTemporaryFile(suffix=".mid") as f:
        f.write(bytes(saved or []))
        f.flush()
        mf = mido.MidiFile(f.name)
    ons = sum(1 for m in mf.tracks[-1] if m.type == "note_on" and m.velocity > 0)
    check(ons == heard, "the stopped answer saved from the page holds what sounded of it (%d notes of %d)"
          % (ons, heard))
    check(wait_for(page, "document.getElementById('answers').textContent.includes('barge-ins 1')", 5) is not None,
          "the page counts the barge-in (%r; ctl status: barge_ins=%s)"
          % (page.eval("document.getElementById('answers').textContent"),
             re.search(r"barge_ins=(\d+)", sv.request("status")).group(1)))


def check_controls(page, sv, tmp):
    got = set_from_page(page, sv, "density", "1.75", "1.75")
    check("1.75" in got, "the density control set the service's density (%s)" % got)
    check(wait_for(page, "document.querySelectorAll('#takes button').length > 0", 5) is not None,
          "the take is listed on the page")
    data = page.eval("Array.from(takeMidi(1) || [])")
    with open(os.path.join(tmp, "take1.mid"), "wb") as f:
        f.write(bytes(data or []))
    try:
        mf = mido.MidiFile(os.path.join(tmp, "take1.mid"))
        ons = [sum(1 for m in t if m.type == "note_on" and m.velocity > 0) for t in mf.tracks]
    except Exception as e:     # noqa: BLE001: what the page saved is not a MIDI file
        ons = str(e)
    takes = sv.request("takes")
    want = int(takes.split("#1 at ")[1].split(" notes")[0].split(", ")[-1]) if "#1 at " in takes else -1
    print("take 1 saved from the page: notes per track", ons, "; the service's take:", takes)
    check(isinstance(ons, list) and len(ons) == 2 and ons[0] == len(MOTIF) and ons[1] == want,
          "take 1 saved from the page: the player's phrase and the answer's %d notes (%s)" % (want, ons))
    before = sv.request("status")
    page.eval("document.querySelector('#takes button').click()")
    time.sleep(1.0)
    after = sv.request("status")
    r0 = int(before.split("responses=")[1].split()[0])
    r1 = int(after.split("responses=")[1].split()[0])
    check(r1 == r0 + 1, "the take replayed from the page (responses %d -> %d)" % (r0, r1))


def main():
    if not BROWSER or websocket is None:
        print("SKIP: needs chromium and python3-websocket")
        return 77
    tmp = tempfile.mkdtemp(prefix="continuo-view-")
    sv = Service("model=" + MODEL, "phrase_silence_ms=500", "response_seconds=2", "seed=4",
                 "phrase_end=silence")
    view = page = None
    try:
        view = subprocess.Popen([CONTINUO, "view", "--socket", sv.sock], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        url = view.stdout.readline().strip()
        check(url.startswith("http://127.0.0.1:") and "token=" in url, "view prints its address (%r)" % url)
        base, token = url.split("/?token=")
        check_guards(base, token)
        page = Page(url, os.path.join(tmp, "profile"))
        check_page(page, sv)
        check_controls(page, sv, tmp)
        check_turn(page, sv)
        check_barge_in(page, sv)
        shot = os.environ.get("CONTINUO_VIEW_SHOT", os.path.join(tmp, "view.png"))
        data = page.call("Page.captureScreenshot", format="png").get("data", "")
        with open(shot, "wb") as f:
            f.write(base64.b64decode(data))
        print("screenshot:", shot)
    finally:
        if page:
            page.close()
        if view:
            view.terminate()
            view.wait(timeout=10)
        sv.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return done()


if __name__ == "__main__":
    if sanitized():
        print("SKIP: sanitized build (the page's timing is what is checked)")
        sys.exit(77)
    sys.exit(main())

"""test_watch_stuck.py: a viewer that never reads does not hold the service back.

Two viewers `watch` a service (the echo engine, so the timing is the
service's own): one reads, one never does.  The player plays a long phrase
(far more frames than the stuck viewer's socket and queue hold) and then a
short one.  While the stuck viewer's queue is full: other ctl clients are
answered at once, both phrases are answered with the first note on time,
and the reading viewer gets every frame.  When the stuck viewer reads at
last it is still connected: it finds a `dropped` frame counting the frames
it lost, and the frames after it.  Bad input on a watching connection gets
a clear error.  `continuo ctl watch` prints the frames as they come.
"""

import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import servetest  # noqa: E402
from servetest import Service, check, done, sanitized  # noqa: E402
from watchclient import Watcher  # noqa: E402

LONG = 1800         # notes of the long phrase: ~300 KB of player's frames, as many of the answer's


def field(st, name):
    m = re.search(r"\b%s=(\S+)" % name, st)
    return m.group(1) if m else ""


def long_phrase(sv):
    """LONG short notes, 1 ms apart, written in bursts (a busy player)."""
    for i in range(0, LONG, 50):
        data = []
        for k in range(i, min(i + 50, LONG)):
            data += [0x90, 48 + k % 24, 80, 0x80, 48 + k % 24, 0]
        sv.play(data)
        time.sleep(0.05)


def main():
    sv = Service("phrase_silence_ms=300", "response_seconds=30")
    try:
        stuck = Watcher(sv.sock, read=False)
        w = Watcher(sv.sock)
        time.sleep(0.2)
        long_phrase(sv)
        # while the stuck viewer's queue is full the service answers other clients at once
        worst = 0.0
        for _ in range(10):
            t = time.monotonic()
            st = sv.request("status")
            worst = max(worst, time.monotonic() - t)
            time.sleep(0.1)
        check(st.startswith("ok") and worst < 0.25, f"ctl status is answered at once ({worst * 1000:.0f} ms)")
        time.sleep(4.0)     # the echo's answer: the phrase again, a fifth up
        sv.play_motif([(60, 90, 0.08), (64, 90, 0.08), (67, 90, 0.08)], gap=0.02)
        time.sleep(1.0)
        st = sv.request("status")
        print(st[:400])
        check(field(st, "responses") == "2", f"both phrases answered ({field(st, 'responses')})")
        bound = 50 if sanitized() else 20
        late = float(field(st, "latency_ms_max") or 1e9)
        check(late < bound, f"the first note on time with a stuck viewer (max {late} ms, bound {bound})")
        heard = w.of("note", who="player", on=True)
        check(len(heard) == LONG + 3, f"the reading viewer gets every player's note ({len(heard)})")
        check(len(w.of("phrase_end")) == 2 and not w.of("dropped"), "and every phrase end, nothing dropped")
        ends = w.of("phrase_end")
        answer = [f for f in w.of("note", who="model", on=True) if ends and f["t"] > ends[-1]["t"]]
        check(len(answer) == 3, f"and the last answer's notes ({len(answer)})")
        # the stuck viewer wakes up: still connected, told what it lost, then frames again
        stuck.read_all()
        print(f"the stuck viewer: {len(stuck.frames)} frames")
        dropped = stuck.of("dropped")
        check(stuck.reply and stuck.reply.startswith("ok watching") and not stuck.closed,
              f"the stuck viewer is still connected ({stuck.reply}, closed {stuck.closed})")
        check(len(dropped) == 1 and dropped[0]["frames"] > 100, f"a dropped frame counts its lost frames ({dropped})")
        check(dropped and stuck.frames[-1][1] is dropped[0], "the dropped frame comes once the queue is taken")
        sv.play_motif([(72, 90, 0.05)])
        time.sleep(0.2)
        stuck.read_all(0.3)
        after = [f for f in stuck.of("note", who="player") if f["pitch"] == 72]
        check(len(after) == 2, f"a viewer that reads again gets the new notes ({after})")
        # bad input on a watching connection: a clear error
        stuck.send("watch now")
        stuck.read_all(0.3)
        check("error too many arguments for watch (usage: watch)" in stuck.other, f"watch ARG: {stuck.other}")
        stuck.s.sendall(b"\x00\x01\n")
        stuck.read_all(0.3)
        check(stuck.closed and "error binary data on the control socket; closing" in stuck.other,
              f"binary data: an error, then closed ({stuck.other[-1:]}, {stuck.closed})")
        check(sv.request("status").startswith("ok"), "the service serves on")
        # `continuo ctl watch` prints the reply and the frames as they come
        p = subprocess.Popen([servetest.CONTINUO, "ctl", "--socket", sv.sock, "watch"], stdout=subprocess.PIPE,
                             text=True, env=sv.env)
        time.sleep(0.3)
        sv.play_motif([(74, 90, 0.05)])
        time.sleep(0.3)
        p.terminate()
        lines = p.communicate()[0].splitlines()
        check(len(lines) >= 4 and lines[0].startswith("ok watching") and json.loads(lines[1])["type"] == "hello"
              and {"type": "note", "who": "player", "on": True, "pitch": 74}.items() <= json.loads(lines[2]).items(),
              f"ctl watch prints the reply, the hello, the notes ({lines[:3]})")
        w.close()
        rc, _ = sv.stop()
        check(rc == 0, f"serve exits 0 ({rc})")
    finally:
        sv.cleanup()
    done()


main()

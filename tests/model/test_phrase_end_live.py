#!/usr/bin/python3
"""test_phrase_end_live.py: phrase_end = auto, live: the end of a real performance played into `serve` in real time is answered when the benchmark says, and its pauses as the benchmark says.

The last EXCERPT_S seconds of performances of ASAP's valid split (their
phrases, their pauses and their end) are written to a MIDI file;
bench_turn (`answers`) hears it as `serve` would and says when the shipped
rule answers, through the one decision function (play/turn.h).  Then
`serve` (the shipped model, phrase_end = auto, one candidate) hears the same
file through its FIFO in real time.  Its status must show as many answers
and barge-ins, each answer's delay from the player's last release within
TOLERANCE_MS of the benchmark's (its first note, 11 ms or less after the
verdict, included), and a verdict taken for each answer sooner than the
silence rule's; and its status must say how sure the rule was of the last
silence (phrase_end_margin) as the benchmark does, within MARGIN_TOL; a
watcher (the view) is told the same in the phrase_end frame: by the
verdict or the silence rule, after how long, with status's margin.
Then the first performance again with phrase_end_bias = BIAS: the
benchmark's verdict must move (a surer end asked for), `serve`'s with it,
and `serve`'s margin must fall by BIAS.
"""
import csv
import os
import re
import subprocess
import sys
import tempfile
import time

import mido

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from servetest import Service, check, done, sanitized  # noqa: E402
from watchclient import Watcher  # noqa: E402

EXCERPT_S = 10.0
TOLERANCE_MS = 50
MARGIN_TOL = 0.25               # log-odds: serve hears the time line in real time (its 10 ms steps may fall apart)
PERFORMANCES = 2
BIAS = 3.0
BENCH_TURN = os.path.join(os.environ["CONTINUO_BUILD"], "bench", "bench_turn")
MODEL = os.path.join(os.environ["CONTINUO_SRC"], "models", "continuo-default.gguf")
ASAP = os.environ.get("ASAP_DIR", "")
SPLIT = os.path.join(ASAP, "split.tsv")
if sanitized():
    print("SKIP: sanitized build (the model several times slower: the verdict's timing is what is checked)")
    sys.exit(77)
if not os.path.exists(SPLIT):
    print("skipped: no ASAP split file at %r (meson setup -Dasap_dir=DIR)" % SPLIT)
    sys.exit(77)


def messages(path):
    """The performance's note and pedal messages: (seconds, bytes)."""
    t, out = 0.0, []
    for m in mido.MidiFile(path):
        t += m.time
        if m.type in ("note_on", "note_off") or (m.type == "control_change" and m.control == 64):
            out.append((t, m.bytes()))
    return out


def excerpt(path, out_path):
    """The last EXCERPT_S seconds, from a note-on; the pedal as it stood then. Returns its messages."""
    msgs = messages(path)
    end = msgs[-1][0]
    start = next(t for t, b in msgs if t >= end - EXCERPT_S and b[0] & 0xF0 == 0x90 and b[2] > 0)
    pedal = [b for t, b in msgs if t < start and b[0] & 0xF0 == 0xB0]
    cut = ([(0.0, pedal[-1])] if pedal else []) + [(t - start, b) for t, b in msgs if t >= start]
    mf = mido.MidiFile(ticks_per_beat=500)         # 120 bpm: a tick is a millisecond
    tr = mido.MidiTrack()
    mf.tracks.append(tr)
    last = 0
    for t, b in cut:
        tick = int(round(t * 1000))
        tr.append(mido.Message.from_bytes(b, time=tick - last))
        last = tick
    mf.save(out_path)
    return [(tick_t, b) for tick_t, b in ((round(t * 1000) / 1000.0, b) for t, b in cut)]


def bench_answers(path, bias):
    r = subprocess.run([BENCH_TURN, "answers", path, "--model", MODEL, "--bias", str(bias)],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "bench_turn answers: %s" % r.stderr[-2000:])
    delays = [float(x) for x in re.findall(r": (\d+) ms after the release", r.stdout)]
    m = re.search(r"answers=(\d+) barge_ins=(\d+) last_margin=([-+]?[0-9.]+)", r.stdout)
    check(m is not None, "bench_turn answers gives its summary: %s" % r.stdout[-500:])
    return delays, int(m.group(1)), int(m.group(2)), float(m.group(3)), r.stdout


def status_value(st, key):
    m = re.search(r"\b%s=([-+]?[0-9.]+)" % key, st)
    return float(m.group(1)) if m else None


def play_live(msgs, bias):
    sv = Service("model=" + MODEL, "phrase_end=auto", "phrase_end_bias=%g" % bias, "phrase_silence_ms=800",
                 "candidates=1", "response_seconds=1", "midi_thru=no", "seed=3", output="none")
    try:
        w = Watcher(sv.sock)
        t0 = time.monotonic() + 0.2
        for t, b in msgs:
            left = t0 + t - time.monotonic()
            if left > 0:
                time.sleep(left)
            sv.play(b)
        time.sleep(2.0)
        st = sv.request("status")
        ends = [f for _, f in w.frames if f["type"] == "phrase_end"]
        w.close()
        rc, _ = sv.stop()
        check(rc == 0, "clean exit: %r" % rc)
        return st, ends
    finally:
        sv.cleanup()


def one(path, tmp, bias=0.0):
    ex = os.path.join(tmp, os.path.basename(path))
    msgs = excerpt(path, ex)
    delays, answers, barge, margin, text = bench_answers(ex, bias)
    st, ends = play_live(msgs, bias)
    got = status_value(st, "responses")
    check(status_value(st, "phrase_end_bias") == bias, "status gives phrase_end_bias=%g: %s" % (bias, st))
    print("%s (phrase_end_bias %g): the benchmark:\n%s  serve: responses=%s barge_ins=%s judged_early=%s "
          "answer_delay_ms p50=%s max=%s phrase_end_margin=%s"
          % (path, bias, text, got, status_value(st, "barge_ins"), status_value(st, "judged_early"),
             status_value(st, "answer_delay_ms_p50"), status_value(st, "answer_delay_ms_max"),
             status_value(st, "phrase_end_margin")))
    check(got == answers, "%s: serve answered %s times, the benchmark %d" % (path, got, answers))
    check(status_value(st, "barge_ins") == barge, "%s: barge-ins as the benchmark's (%d)" % (path, barge))
    if answers == 1 and delays:
        live = status_value(st, "answer_delay_ms_p50")
        check(live is not None and abs(live - delays[0]) <= TOLERANCE_MS,
              "%s: the answer came %s ms after the release, the benchmark's %.0f ms (within %d)"
              % (path, live, delays[0], TOLERANCE_MS))
        if delays[0] < 800 - TOLERANCE_MS:
            check(status_value(st, "judged_early") >= 1, "%s: judged sooner than the silence rule" % path)
        # the watchers (the view) are told the same: how, how long after the release, the margin
        by = "verdict" if delays[0] < 800 - TOLERANCE_MS else "silence"
        end = ends[-1] if ends else {}
        check(len(ends) == 1 and end.get("by") == by and abs(end.get("after_ms", -1e9) - live) <= TOLERANCE_MS
              and "%+.2f" % end.get("margin", float("nan")) == "%+.2f" % status_value(st, "phrase_end_margin"),
              "%s: the phrase_end frame says %s, %s ms after the release, with status's margin: %s" % (path, by, live, end))
    live_margin = status_value(st, "phrase_end_margin")
    check(live_margin is not None and abs(live_margin - margin) <= MARGIN_TOL,
          "%s: serve's margin of the last silence %s, the benchmark's %+.2f (within %g)"
          % (path, live_margin, margin, MARGIN_TOL))
    return delays, live_margin


with open(SPLIT) as f:
    rows = [r for r in csv.reader(f, delimiter="\t") if r and r[0] == "valid"]
paths = [os.path.join(ASAP, r[3]) for r in rows[:PERFORMANCES]]
with tempfile.TemporaryDirectory() as tmp:
    early = []                  # (delay, margin, path): the ends answered sooner than the silence rule
    for p in paths:
        d, margin = one(p, tmp)
        if len(d) == 1 and d[0] < 800 - TOLERANCE_MS:
            early.append((d[0], margin, p))
    check(early, "an end of these performances answered sooner than the silence rule, to try the bias on")
    if early:
        at, margin, p = early[0]
        later, surer = one(p, tmp, BIAS)
        check(len(later) == 1 and later[0] > at, "%s: phrase_end_bias %g answers later than 0 (%s against %.0f ms)"
              % (p, BIAS, later, at))
        check(surer is not None and abs(surer - (margin - BIAS)) <= MARGIN_TOL,
              "%s: the margin at phrase_end_bias %g is %s, %g less than at 0 (%+.2f)" % (p, BIAS, surer, BIAS, margin))
done()

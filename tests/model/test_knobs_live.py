#!/usr/bin/python3
"""test_knobs_live.py: the musical knobs turn live in `serve`, by controller.

A running service with the shipped model answers the same phrase
(`ctl play`, a motif on the codec's 10 ms steps) after a knob is turned by
a control change sent over its FIFO input (the cc_* keys map each knob to a
controller).  The rules that hold note by note are checked in one service
that goes on answering: velocity 100 plays near 100, pitch_low/pitch_high
hold for every note, key_lock (with `ctl set key C major`) keeps every note
in the scale, and `replay 1` plays the first answer again into the context.

The knobs that move the music by degrees (density 2 plays at least 1.5
times the notes per second, motif 1 comes back to the phrase's interval
patterns more than motif 0 (the default, 0.4, is between), the rhythm
temperature at 0.5 narrows the rhythm's spread, the pitch temperature at
0.5 the pitch classes' against 2; register +12 sits at least 3 semitones
above register -12) are judged against the answer to the same phrase from
the same empty context and the same seed (the defaults', or another
setting's): one fresh service per setting and seed, side by side, over
several seeds, so that one lucky or unlucky sample decides nothing.
"""
import math
import os
import re
import sys
import tempfile
import time

import mido

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servetest import Service, check, done  # noqa: E402
from test_same_ids import notes, quantized_primer, same_notes, wait_answered  # noqa: E402

SRC = os.environ["CONTINUO_SRC"]
CONTINUO = os.environ["CONTINUO"]
MODEL = os.path.join(SRC, "models", "continuo-default.gguf")
SECONDS = 6
CC = {"density": 30, "register": 31, "velocity": 32, "pitch_low": 33, "pitch_high": 34, "key_lock": 35,
      "motif": 36, "rhythm_temperature": 37, "pitch_temperature": 38}
C_MAJOR = {0, 2, 4, 5, 7, 9, 11}


def model_notes(rec):
    f = mido.MidiFile(rec)
    track = [t for t in f.tracks if any(m.type == "track_name" and m.name == "continuo" for m in t)][0]
    return notes(track, f)


def primer_notes(path):
    f = mido.MidiFile(path)
    return notes(f.tracks[0], f)


def triples(pitches):
    return [tuple(b - a for a, b in zip(pitches[i:i + 3], pitches[i + 1:i + 4])) for i in range(len(pitches) - 3)]


def motif_share(ns, phrase):
    """Share of the answer's 4-note interval patterns (onsets sorted) found in the phrase."""
    mine, heard = triples([n[2] for n in sorted(ns, key=lambda n: (n[0], n[2]))]), set(triples(phrase))
    return sum(t in heard for t in mine) / len(mine) if mine else 0


def entropy(values):
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return -sum(c / len(values) * math.log2(c / len(values)) for c in counts.values()) if values else 0


def ioi_entropy(ns):
    """Bits of the inter-onset intervals, in 10 ms steps capped at 1 s (as bench/realism.py)."""
    on = sorted(n[0] for n in ns)
    return entropy([min(100, int((b - a) / 0.01 + 0.5)) for a, b in zip(on, on[1:])])


def pitch_class_entropy(ns):
    """How evenly the notes spread over the twelve pitch classes: a cooler
    choice of pitch narrows it (the pitch itself also counts how far a line
    travels, which a cooler choice can widen: runs that follow the likeliest
    step)."""
    return entropy([n[2] % 12 for n in ns])


def rate(ns):
    return len(ns) / max(1e-9, max(n[1] for n in ns) - ns[0][0]) if ns else 0


def mean(xs):
    return sum(xs) / len(xs) if xs else 0


class Answerer:
    """A service answering PRIMER, its knobs turned by controller."""

    def __init__(self, d, name, seed, threads, cc=()):
        self.d, self.name, self.k, self.notes = d, name, 0, []
        self.rec = os.path.join(d, "%s-%d.mid" % (name, seed))
        sets = ["cc_%s=%d" % kv for kv in CC.items()]
        self.sv = Service("model=" + MODEL, "recording=" + self.rec, "seed=%d" % seed,
                          "response_seconds=%d" % SECONDS, "model_threads=%d" % threads, *sets)
        for knob, value in cc:
            self.turn(knob, value)

    def turn(self, knob, value):
        self.sv.play([0xB0, CC[knob], value])
        time.sleep(0.3)

    def ask(self, primer):
        self.k += 1
        reply = self.sv.request("play " + primer)
        check(reply.startswith("ok heard"), "%s: play: %s" % (self.name, reply))

    def collect(self, k=None):
        """The model's notes since the last answer collected."""
        self.k = k or self.k
        wait_answered(self.sv, self.k, timeout=120)
        path = os.path.join(self.d, "%s-rec%d.mid" % (self.name, self.k))
        check(self.sv.request("save " + path).startswith("ok"), "save " + path)
        after = max((n[1] for ns in self.notes for n in ns), default=-1)
        self.notes.append([n for n in model_notes(path) if n[0] > after])
        return self.notes[-1]

    def value(self, key):
        reply = self.sv.request("get " + key)
        return float(reply.split(" = ")[1]) if reply.startswith("ok ") else None


# name, knob, controller value, the value it sets, what is measured, how it
# compares with the reference's answer (the defaults', or another setting's).
# register shifts the odds of each step's note-ons by a fifth of its value
# from where the model's lean (so the shifts add up), while the defaults
# wander wherever the model takes them: +12 is judged against -12.  The
# pitch temperature at 0.5 against the defaults moves a 6 s answer's
# spread of pitch classes by less than one draw does when the best of 8
# candidates is played (offline, 16 seeds: lower in 8 to 13 of them); it is
# judged against 2 (16 of 16 on the two models of 2026-12).  The
# motif pull is on by default (0.4): motif 1 is judged against the knob off.
PAIRED = [("density 2", "density", 95, 0.25 * 16 ** (95 / 127), "notes/s", rate, "defaults",
           lambda x, ref: x >= 1.5 * ref),
          ("register -12", "register", 32, -12, "mean pitch", lambda ns: mean([n[2] for n in ns]), None, None),
          ("register +12", "register", 95, 12, "mean pitch", lambda ns: mean([n[2] for n in ns]), "register -12",
           lambda x, ref: x >= ref + 3),
          ("motif 0", "motif", 0, 0.0, "motif share", None, None, None),
          ("motif 1", "motif", 127, 1.0, "motif share", None, "motif 0", lambda x, ref: x > ref),
          ("rhythm_temperature 0.5", "rhythm_temperature", 32, 0.25 * 16 ** (32 / 127), "time-shift entropy",
           ioi_entropy, "defaults", lambda x, ref: x < ref),
          ("pitch_temperature 2", "pitch_temperature", 95, 0.25 * 16 ** (95 / 127), "pitch-class entropy",
           pitch_class_entropy, None, None),
          ("pitch_temperature 0.5", "pitch_temperature", 32, 0.25 * 16 ** (32 / 127), "pitch-class entropy",
           pitch_class_entropy, "pitch_temperature 2", lambda x, ref: x < ref)]
SEEDS = (500, 501, 502, 503)


def paired(d, primer, phrase):
    """Each setting of PAIRED against its reference, seed by seed: a service
    each, all answering at once (the answers play in real time; decoding
    them is a fraction of it)."""
    got = {name: [] for name in ["defaults"] + [p[0] for p in PAIRED]}
    for seed in SEEDS:
        group = []
        try:
            group.append(Answerer(d, "defaults", seed, 1))
            for name, knob, value, want, *_ in PAIRED:
                a = Answerer(d, name.replace(" ", "_"), seed, 1, [(knob, value)])
                a.label = name
                group.append(a)
                have = a.value(knob)
                check(have is not None and abs(have - want) < 0.01,
                      "cc_%s %d sets %s %.3f (get: %r)" % (knob, value, knob, want, have))
            group[0].label = "defaults"
            for a in group:
                a.ask(primer)
            for a in group:
                got[a.label].append(a.collect())
                check(got[a.label][-1], "%s, seed %d: an answer with notes" % (a.label, seed))
            for a in group:
                a.sv.stop()
        finally:
            for a in group:
                a.sv.cleanup()
    judged = [p for p in PAIRED if p[6]]
    print("seed   " + "  ".join("%-34s" % ("%s / %s" % (p[0], p[6])) for p in judged))
    for i, seed in enumerate(SEEDS):
        cells = []
        for name, _, _, _, _, measure, ref, _ in judged:
            m = measure or (lambda ns: motif_share(ns, phrase))
            cells.append("%-34s" % ("%.3f against %.3f" % (m(got[name][i]), m(got[ref][i]))))
        print("%-6d %s" % (seed, "  ".join(cells)))
    for name, _, _, _, what, measure, ref, better in judged:
        m = measure or (lambda ns: motif_share(ns, phrase))
        x, y = mean([m(ns) for ns in got[name]]), mean([m(ns) for ns in got[ref]])
        check(better(x, y), "%s: %s %.3f against %.3f with %s (mean of seeds %s)"
              % (name, what, x, y, ref, ", ".join(map(str, SEEDS))))


def main():
    with open(CONTINUO, "rb") as fh:
        if b"__asan_init" in fh.read():
            print("SKIP: sanitized build (model behaviour: see `model same ids`)")
            return 77
    with tempfile.TemporaryDirectory() as d:
        primer = os.path.join(d, "phrase.mid")
        quantized_primer(os.path.join(SRC, "models", "motif.mid"), primer)
        phrase = [p for _, p in sorted((m[0], m[2]) for m in primer_notes(primer))]
        one = Answerer(d, "live", 500, 2)
        sv, a = one.sv, one.notes
        try:
            def answer():
                one.ask(primer)
                one.collect()

            answer()                                  # 1: the defaults
            one.turn("density", 95)                   # 0.25 * 16^(95/127): 1.98
            check(re.search(r" density=1\.9\d* ", sv.request("status")), "cc_density set density 1.98")
            one.turn("density", 64)                   # 0.25 * 16^(64/127): 1.01
            check(abs(one.value("density") - 0.25 * 16 ** (64 / 127)) < 0.001, "cc_density 64 sets density 1.01")
            check(sv.request("set density 1").startswith("ok"), "set density 1")
            one.turn("velocity", 100)
            answer()                                  # 2: velocity 100
            one.turn("velocity", 0)
            one.turn("pitch_low", 55)
            one.turn("pitch_high", 67)
            answer()                                  # 3: pitch 55..67
            one.turn("pitch_low", 0)
            one.turn("pitch_high", 127)
            check(sv.request("set key C major").startswith("ok key = C major"), "set key C major")
            one.turn("key_lock", 127)
            status = sv.request("status")
            check('key="C major" key_lock=yes' in status, "status shows the key and its lock: " + status[-300:])
            answer()                                  # 4: C major, locked
            one.turn("key_lock", 0)
            reply = sv.request("replay 1")           # 5: take 1 again, into the model's context
            check(reply == "ok take #1 again, as take #5", "replay 1: %r" % reply)
            one.collect(one.k + 1)
            check("reported an error" not in sv.read_log(), "the replay entered the context without an error")
            answer()                                  # 6: the model goes on after the replay
            sv.stop()
        finally:
            sv.cleanup()
        if len(a) != 6 or not all(a):
            check(False, "six answers, each with notes: %s" % [len(x) for x in a])
            return done()
        base = a[0]
        print("answer    notes  notes/s  pitch  velocity  range")
        for name, ns in zip(("defaults", "velocity 100", "pitch 55..67", "C major locked"), a):
            print("%-14s %4d  %6.2f  %5.1f  %7.1f  %d..%d" % (name, len(ns), rate(ns), mean([n[2] for n in ns]),
                                                          mean([n[3] for n in ns]), min(n[2] for n in ns),
                                                          max(n[2] for n in ns)))
        check(abs(mean([n[3] for n in a[1]]) - 100) <= 12 and abs(mean([n[3] for n in base]) - 100) > 12,
              "velocity 100 plays near 100 (the defaults' answer does not: %.1f)" % mean([n[3] for n in base]))
        check(all(55 <= n[2] <= 67 for n in a[2]), "pitch_low 55, pitch_high 67 hold for every note")
        check(any(not 55 <= n[2] <= 67 for n in base), "the defaults' answer goes outside 55..67")
        check(all(n[2] % 12 in C_MAJOR for n in a[3]), "key_lock keeps every note in C major")
        unlocked = a[0] + a[1] + a[2] + a[5]
        check(any(n[2] % 12 not in C_MAJOR for n in unlocked),
              "the answers without the lock have notes outside C major")
        # note for note: the same pitches and velocities at the same onsets, within 50 ms (the
        # recording stamps each note as it goes out: a test machine running the guest tests
        # beside this one once delayed a replayed note by more than 20 ms; the timing itself
        # is bench_latency's to measure)
        same, why = same_notes(base, a[4], tolerance=0.05, releases=False)
        check(same, "replay 1 plays the first answer note for note (%d notes against %d%s)"
              % (len(a[4]), len(base), "; " + why if why else ""))
        paired(d, primer, phrase)
    return done()


if __name__ == "__main__":
    sys.exit(main())

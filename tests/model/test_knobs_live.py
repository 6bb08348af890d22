#!/usr/bin/python3
"""test_knobs_live.py: the musical knobs turn live in `serve`, by controller.

A running service with the shipped model answers the same phrase
(`ctl play`, a motif on the codec's 10 ms steps) before and after a knob
is turned by a control change sent over its FIFO input (the cc_* keys map
each knob to a controller); the answer after moves the way the knob says:
density 2 plays at least 1.5 times the notes per second, register +12
sits higher, velocity 100 plays louder, pitch_low/pitch_high hold for
every note, key_lock (with `ctl set key C major`) keeps every note in the
scale, motif 1 comes back to the phrase's interval patterns, and the two
temperatures at 0.5 narrow the rhythm's and the pitches' spread.  The
seeds are fixed (the service's seed).
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
from test_same_ids import notes, quantized_primer, wait_answered  # noqa: E402

SRC = os.environ["CONTINUO_SRC"]
CONTINUO = os.environ["CONTINUO"]
MODEL = os.path.join(SRC, "models", "continuo-default.gguf")
SECONDS = 8
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


def pitch_entropy(ns):
    return entropy([n[2] for n in ns])


def rate(ns):
    return len(ns) / max(1e-9, max(n[1] for n in ns) - ns[0][0]) if ns else 0


def mean(xs):
    return sum(xs) / len(xs) if xs else 0


def main():
    with open(CONTINUO, "rb") as fh:
        if b"__asan_init" in fh.read():
            print("SKIP: sanitized build (model behaviour: see `model same ids`)")
            return 77
    with tempfile.TemporaryDirectory() as d:
        primer = os.path.join(d, "phrase.mid")
        quantized_primer(os.path.join(SRC, "models", "motif.mid"), primer)
        rec = os.path.join(d, "session.mid")
        sets = ["cc_%s=%d" % kv for kv in CC.items()]
        sv = Service("model=" + MODEL, "recording=" + rec, "seed=500", "response_seconds=%d" % SECONDS,
                     "model_threads=2", *sets)
        k, a = 0, []
        try:
            def answer():
                """The service answers the phrase: the model's notes since the last answer."""
                nonlocal k
                k += 1
                reply = sv.request("play " + primer)
                check(reply.startswith("ok heard"), "play: %s" % reply)
                wait_answered(sv, k, timeout=120)
                path = os.path.join(d, "rec%d.mid" % k)
                check(sv.request("save " + path).startswith("ok"), "save " + path)
                after = max((n[1] for ns in a for n in ns), default=-1)
                a.append([n for n in model_notes(path) if n[0] > after])

            def turn(knob, value):
                sv.play([0xB0, CC[knob], value])
                time.sleep(0.3)

            answer()                                  # 1: the defaults
            turn("density", 95)                       # 0.25 * 16^(95/127): 1.98
            check(re.search(r" density=1\.9\d* ", sv.request("status")), "cc_density set density 1.99")
            answer()                                  # 2: density 2
            turn("density", 64)
            sv.request("set density 1")
            turn("register", 95)                      # -24 + 48 * 95/127: +12
            answer()                                  # 3: register +12
            turn("register", 64)
            turn("velocity", 100)
            answer()                                  # 4: velocity 100
            turn("velocity", 0)
            turn("pitch_low", 55)
            turn("pitch_high", 67)
            answer()                                  # 5: pitch 55..67
            turn("pitch_low", 0)
            turn("pitch_high", 127)
            check(sv.request("set key C major").startswith("ok key = C major"), "set key C major")
            turn("key_lock", 127)
            status = sv.request("status")
            check('key="C major" key_lock=yes' in status, "status shows the key and its lock: " + status[-300:])
            answer()                                  # 6: C major, locked
            turn("key_lock", 0)
            reply = sv.request("replay 1")           # 7: take 1 again, into the model's context
            check(reply == "ok take #1 again, as take #7", "replay 1: %r" % reply)
            k += 1
            wait_answered(sv, k, timeout=60)
            path = os.path.join(d, "rec%d.mid" % k)
            check(sv.request("save " + path).startswith("ok"), "save " + path)
            after = max(n[1] for ns in a for n in ns)
            a.append([n for n in model_notes(path) if n[0] > after])
            check("reported an error" not in sv.read_log(), "the replay entered the context without an error")
            answer()                                  # 8: the model goes on after the replay
            turn("motif", 127)
            answer()                                  # 9: motif 1
            turn("motif", 0)
            turn("rhythm_temperature", 32)            # 0.25 * 16^(32/127): 0.5
            answer()                                  # 10: rhythm_temperature 0.5
            turn("rhythm_temperature", 64)
            sv.request("set rhythm_temperature 1")
            turn("pitch_temperature", 32)
            answer()                                  # 11: pitch_temperature 0.5
            sv.stop()
        finally:
            sv.cleanup()
        if len(a) != 11 or not all(a):
            check(False, "eleven answers, each with notes: %s" % [len(x) for x in a])
            return done()
        base = a[0]
        print("answer    notes  notes/s  pitch  velocity  range")
        for name, ns in zip(("defaults", "density 2", "register +12", "velocity 100", "pitch 55..67",
                             "C major locked"), a):
            print("%-14s %4d  %6.2f  %5.1f  %7.1f  %d..%d" % (name, len(ns), rate(ns), mean([n[2] for n in ns]),
                                                          mean([n[3] for n in ns]), min(n[2] for n in ns),
                                                          max(n[2] for n in ns)))
        check(rate(a[1]) >= 1.5 * rate(base), "density 2: %.2f notes/s against %.2f" % (rate(a[1]), rate(base)))
        check(mean([n[2] for n in a[2]]) >= mean([n[2] for n in base]) + 3, "register +12 sits higher (3 semitones or more)")
        check(mean([n[3] for n in a[3]]) >= mean([n[3] for n in base]) + 20 and
              abs(mean([n[3] for n in a[3]]) - 100) <= 12, "velocity 100 plays near 100")
        check(all(55 <= n[2] <= 67 for n in a[4]), "pitch_low 55, pitch_high 67 hold for every note")
        check(all(n[2] % 12 in C_MAJOR for n in a[5]), "key_lock keeps every note in C major")
        same = len(a[6]) == len(base) and all(
            x[2:] == y[2:] and abs((x[0] - base[0][0]) - (y[0] - a[6][0][0])) <= 0.02 for x, y in zip(base, a[6]))
        check(same, "replay 1 plays the first answer note for note (%d notes against %d)" % (len(a[6]), len(base)))
        # motif, and the two temperatures, against the answer after the replay (8: all knobs neutral)
        ref, phrase = a[7], [p for _, p in sorted((m[0], m[2]) for m in primer_notes(primer))]
        print("motif share: %.3f (motif 1) against %.3f; time-shift entropy %.2f (rhythm 0.5) against %.2f; "
              "pitch entropy %.2f (pitch 0.5) against %.2f" % (motif_share(a[8], phrase), motif_share(ref, phrase),
                                                             ioi_entropy(a[9]), ioi_entropy(ref),
                                                             pitch_entropy(a[10]), pitch_entropy(ref)))
        check(motif_share(a[8], phrase) > motif_share(ref, phrase), "motif 1 comes back to the phrase's motifs")
        check(ioi_entropy(a[9]) < ioi_entropy(ref), "rhythm_temperature 0.5: a more regular rhythm")
        check(pitch_entropy(a[10]) < pitch_entropy(ref), "pitch_temperature 0.5: fewer pitches, more often")
    return done()


if __name__ == "__main__":
    sys.exit(main())

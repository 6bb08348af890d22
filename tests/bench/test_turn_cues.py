"""test_turn_cues.py: bench/turn_cues.py hears the cues of a phrase end in a performance of
known content, and counts answers and barge-ins as bench_turn.c does.

The performance, in C major: a run of eighths ending on a loud C major chord
in root position, held 1.5 s under the pedal, lifted 0.1 s after the keys,
then 3 s of silence (a real end); a run whose last note is short, then a
0.5 s breath (a pause); a run ending on a soft D, then the file ends (a
real end).  The odds come from a bench_turn file written here; answering
300 ms into every silence answers both ends 300 ms after the last release
and barges into the breath; a file that is not bench_turn's is refused by
name.  bench_turn, hearing the same performance with the shipped model,
keeps the cues play/turn.c hears (serve's engine hears them the same way):
they are this script's to float precision.  With --logits it also keeps
the model's distribution of the next event at each silence, which the
script reads (--probe) as log-probabilities of the vocabulary's ids, and
the probe play/turn.c weighs them with (src/play/turn_fit.h, which the
script wrote) is those weights on those log-probabilities; logits that are
not those of the odds file's silences are refused by name."""

import math
import os
import re
import struct
import subprocess
import sys
import tempfile

import mido
import numpy as np

sys.path.insert(0, os.path.join(os.environ["CONTINUO_SRC"], "bench"))
import turn_cues as tc  # noqa: E402

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def write_midi(path):
    """The performance; its events as (s, message), with 480 ticks a beat at 120 bpm."""
    ev = []

    def note(t, pitch, length, vel):
        ev.append((t, mido.Message("note_on", note=pitch, velocity=vel)))
        ev.append((t + length, mido.Message("note_off", note=pitch)))

    t = 0.0
    for p in (60, 62, 64, 65, 67, 69, 71, 72, 71, 69, 67, 65, 64, 62, 64, 62):
        note(t, p, 0.2, 60)
        t += 0.25
    chord = t                                   # 4.0 s
    for p in (48, 64, 67, 72):
        note(chord, p, 1.5, 90)
    ev.append((chord + 0.05, mido.Message("control_change", control=64, value=127)))
    ev.append((chord + 1.6, mido.Message("control_change", control=64, value=0)))
    t = chord + 1.6 + 3.0                       # 8.6 s: the next run
    for p in (60, 64, 67, 72, 67, 64, 60, 62):
        note(t, p, 0.2, 60)
        t += 0.25
    breath_at = t - 0.25 + 0.2                  # the last note's release
    t = breath_at + 0.5
    for p in (64, 65, 67, 65, 64, 62):
        note(t, p, 0.2, 60)
        t += 0.25
    last_release = t - 0.25 + 0.2
    ev.sort(key=lambda x: x[0])
    mf = mido.MidiFile(ticks_per_beat=480)
    tr = mido.MidiTrack()
    mf.tracks.append(tr)
    now = 0
    for s, msg in ev:
        tick = round(s * 960)
        tr.append(msg.copy(time=tick - now))
        now = tick
    mf.save(path)
    return chord, breath_at, last_release


def write_odds(path, starts):
    """A bench_turn odds file: one silence at each start, odds of a rest of 0.5."""
    a = np.zeros(len(starts), tc.SILENCE)
    a["quiet_start"] = starts
    a["start"] = starts
    a["survive"][:, :101] = np.linspace(1.0, 0.5, 101)
    with open(path, "wb") as f:
        f.write(struct.pack("<5I", tc.MAGIC, 1, len(starts), 100, 10))
        f.write(struct.pack("<d", 1.0))
        f.write(a.tobytes())


with tempfile.TemporaryDirectory() as tmp:
    mid = os.path.join(tmp, "p.mid")
    chord, breath_at, last_release = write_midi(mid)
    rows, minutes = tc.performance_cues(mid)
    by_start = {round(r[0], 2): r for r in rows}
    end = by_start.get(round(chord + 1.6, 2))
    check(end is not None and abs(end[1] - (chord + 4.6)) < 0.01,
          "the held chord's silence: from the pedal's lift to the next note 3 s later")
    if end is not None:
        c = dict(zip(tc.CUES, end[3:]))
        check(abs(c["log age"] - math.log(1.6 + 0.01)) < 0.01, f"its age: 1.6 s from the chord's onset ({c['log age']:.3f})")
        check(c["chord size"] == 4 and c["bass on tonic"] == 1 and c["tonic triad"] == 1,
              f"a 4-note tonic triad over the tonic ({c['chord size']:.0f}, {c['bass on tonic']:.0f}, {c['tonic triad']:.0f})")
        check(c["pedal last"] == 1, "the pedal was lifted last")
        check(abs(c["loudness"] - 90 / ((16 * 60 + 4 * 90) / 20)) < 0.01, f"loudness against the last 20 notes ({c['loudness']:.3f})")
    breath = by_start.get(round(breath_at, 2))
    check(breath is not None and abs(breath[1] - breath[0] - 0.5) < 0.01 and abs(breath[2] - breath[1]) < 0.01,
          "the breath: 0.5 s, ended by a note")
    if breath is not None:
        c = dict(zip(tc.CUES, breath[3:]))
        check(c["pedal last"] == 0 and c["chord size"] == 1 and c["bass on tonic"] == 0,
              "the breath: a key released last, one note, a D")
    final = by_start.get(round(last_release, 2))
    check(final is not None and final[1] == math.inf and final[2] == math.inf, "the file's end: a silence that never ends")

    odds = os.path.join(tmp, "o.bin")
    write_odds(odds, [r[0] for r in rows])
    s = tc.Split([rows], [minutes], tc.read_odds([odds]))
    check(len(s.start) == len(rows) and s.real_end.sum() == 2, f"two real ends among {len(s.start)} silences")
    check(abs(s.rest_logit(0.3)[0] - math.log(0.5 / 0.85 / (1 - 0.5 / 0.85))) < 1e-3,
          "the odds of a rest 300 ms in: 0.5 / 0.85")
    med, p90, barge, per_min, answers = s.outcome(np.full(len(s.start), 0.3))
    check(med == 300 and p90 == 300, f"both ends answered 300 ms after the last release ({med:.0f}, {p90:.0f})")
    check(barge == sum(1 for r in rows if r[1] - r[0] > 0.3 and r[2] - r[0] - 0.3 < 2.0),
          f"barge-ins: the silences over 300 ms followed by a note within 2 s of the answer ({barge})")
    check(barge >= 1 and abs(per_min - barge / minutes) < 1e-9, "the breath is one of them, counted a minute of playing")

    with open(os.path.join(tmp, "split.tsv"), "w") as f:
        f.write("split\tcomposer\ttitle\tfile\nvalid\tX\tY\tp.mid\n")
    heard = os.path.join(tmp, "heard.bin")
    r = subprocess.run([os.path.join(os.environ["CONTINUO_BUILD"], "bench", "bench_turn"), "odds", tmp,
                        os.path.join(tmp, "split.tsv"), "valid", heard, "--logits", "--model",
                        os.path.join(os.environ["CONTINUO_SRC"], "models", "continuo-default.gguf")],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"bench_turn hears the performance ({r.stderr[-500:]})")
    if r.returncode == 0:
        c = tc.Split([rows], [minutes], tc.read_odds([heard]))
        n, diff = c.parity()
        check(n == len(c.start) and n >= 20 and diff < 1e-5,
              f"play/turn.c's cues are the script's on all {n} silences over 30 ms (largest difference {diff:.1e})")
        p = tc.Split([rows], [minutes], tc.read_odds([heard], logits=True))
        total = np.exp(p.logp).sum(1) if p.logp is not None else np.zeros(1)
        check(p.logp is not None and p.logp.shape == (len(c.start), 310) and np.abs(total - 1).max() < 1e-9,
              f"--logits: a distribution over the 310 ids at each silence ({None if p.logp is None else p.logp.shape})")
        # the odds file's survival at 300 ms (P(a shift of 30 steps or more, or the end)) is the logits'
        shifts = np.exp(p.logp[:, 178:278])
        survive30 = (shifts[:, 29:].sum(1) + np.exp(p.logp[:, 1])) / np.exp(p.logp).sum(1)
        check(np.abs(survive30 - p.survive[:, 30]).max() < 1e-5, "the logits give the odds file's survival at 300 ms")
        with open(os.path.join(os.environ["CONTINUO_SRC"], "src", "play", "turn_fit.h")) as f:
            table = f.read().split("turn_fit_probe_ids")[1]
        w = np.array([float(x) for x in re.findall(r"[-+]\d\.\d+e[-+]\d+", table)]).reshape(2, 310)
        b = open(heard, "rb").read()
        n_file = struct.unpack("<5I", b[:20])[2]
        a = np.frombuffer(b, tc.SILENCE, n_file, 20 + 8)
        mine = tc.read_logits(heard, n_file) @ w.T
        check(a["have_probe"].all() and np.abs(a["probe"] - mine).max() < 1e-4 and np.abs(mine).max() > 0.1,
              f"play/turn.c's probe is turn_fit.h's weights on the log-probabilities at both moments "
              f"(largest difference {np.abs(a['probe'] - mine).max():.1e})")
        with open(heard + ".logits", "r+b") as f:
            f.truncate(12 + 4 * 310 * (len(c.start) - 1))
        try:
            tc.read_odds([heard], logits=True)
            check(False, "a logits file that lacks a silence is refused")
        except SystemExit as e:
            check(heard + ".logits" in str(e) and "not the logits" in str(e), f"a logits file that lacks a silence is refused: {e}")

    bad = os.path.join(tmp, "bad.bin")
    with open(bad, "wb") as f:
        f.write(b"\0" * 64)
    try:
        tc.read_odds([bad])
        check(False, "a file that is not bench_turn's is refused")
    except SystemExit as e:
        check(bad in str(e) and "not a bench_turn odds file" in str(e), f"a file that is not bench_turn's is refused: {e}")

sys.exit(1 if failures else 0)

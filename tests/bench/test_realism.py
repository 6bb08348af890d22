"""test_realism.py: bench/realism.py on a performance of known content.

The performance (written here) has, in its real next 20 s after a 10 s primer,
49 notes whose every measure is worked out by hand below, with the sustain
pedal folded in by the C codec.  A stand-in `continuo` whose `continue` plays
back exactly those notes must score the same figures as the pianist (every
ratio 1); the real `continuo continue` with a small random model must be
measured as its own output file says, get the sampling settings and seeds
passed through, and give the same figures for the same seed; a sweep prints
one line per setting; errors name the file.  The measures of pitch, key,
motif and rhythm are also checked on small note lists of known answers, and
`continue`'s musical knobs (--density, --key "C major", --key-lock, ...) must
reach the stand-in as given, alone and in a sweep."""

import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile

import mido

SRC = os.environ["CONTINUO_SRC"]
CONTINUO = os.environ["CONTINUO"]
REALISM = os.path.join(SRC, "bench", "realism.py")

# (onset s, release s, pitch, velocity) of the performance, before pedal folding.
PRIMER = [(0.5 * i, 0.5 * i + 0.5, 60, 63) for i in range(20)] + [(9.0, 11.0, 72, 81)]   # 72: cut at 10 s
WINDOW = ([(10 + 0.5 * i, 10.5 + 0.5 * i, 60, 63) for i in range(20)]
          + [(10 + 0.5 * i, 10.25 + 0.5 * i, 64, 63) for i in range(20)]
          + [(10.0, 19.0, 48, 101)]                                       # 9 s: longer than the 8 s cap
          + [(22.0 + i, 22.1 + i, 67, 81) for i in range(8)])              # pedal holds each to +0.5 s
PEDAL = [(22.05 + i, 22.5 + i) for i in range(8)]
AFTER = [(30.0, 31.0, 36, 63)]                                            # starts at the window's end

# The window as the codec gives it back: pedal folded (67 lasts 0.5 s), velocity 63 -> bin 15 -> 61.
FOLDED = [(o, r if p != 67 else o + 0.5, p, 61 if v == 63 else v) for o, r, p, v in WINDOW]

# Hand-worked figures of FOLDED over the window 10..30 s, with --max-held 2:
#   60: 20 x 0.5 s, 64: 20 x 0.25 s, 48: 9 s, 67: 8 x 0.5 s -> 28 s of notes, 49 notes
#   sounding 10..20 s and 4 x ... 8 x 0.5 s after 22 s: 14 s -> 6 s silent
#   two or more sounding: 10..19 s (48 + 60) and 2 x 0.25 s (60 + 64) in 19..20 s = 9.5 s
#   pitch classes: C 10 + 9 = 19 s, E 5 s, G 4 s; the primer is all C -> overlap 19/28
#   lengths sorted: 20 x 0.25, 28 x 0.5, 9 -> quartiles at ranks 12, 24, 36: 0.25, 0.5, 0.5
#   capped: of the 41 notes starting before 30 - 8 = 22 s, one (48, 9 s) lasts 8 s or more
#   (with --note-cap 8, given to every run below: continue's own cap is PLAY_MAX_NOTE_MS)
#   pitch: (20 x 60 + 20 x 64 + 48 + 8 x 67) / 49 = 3064 / 49
#   in_key of C harmonic minor (C D Eb F G Ab B): C (60, 48) and G (67) in, E (64) out: 29 / 49
#   motif: sorted by onset then pitch the window is 48 60 64, (60 64) x 19, 67 x 8: 48 intervals,
#     46 triples; the primer (60 x 19, then 72 and 60 at 9 s, 60 at 9.5 s) has (0,0,0), (0,0,12),
#     (0,12,-12); of the window's only the five (0,0,0) of the 67s are among them: 5 / 46
#   ts_entropy: 48 intervals: 0 steps 21 (two in the chord at 10 s, one in each of the 19 pairs),
#     50 steps 19, 100 (capped: 2.5 s, then 1 s x 7) 8
#   pitch_entropy: the pitches 48 once, 60 and 64 20 times each, 67 8 times
VELS = [61] * 40 + [101] + [81] * 8
VEL_MEAN = sum(VELS) / 49
EXPECTED = {
    "notes": 49, "nps": 49 / 20, "poly": 28 / 20, "silence": 6 / 20, "full": 9.5 / 20,
    "vel": VEL_MEAN, "vel_sd": math.sqrt(sum((v - VEL_MEAN) ** 2 for v in VELS) / 49),
    "pc": 19 / 28, "top": 20 / 49, "len25": 0.25, "len50": 0.5, "len75": 0.5, "capped": 1 / 41,
    "pitch": 3064 / 49, "motif": 5 / 46, "ts_entropy": sum(k / 48 * math.log2(48 / k) for k in (21, 19, 8)),
    "in_key": 29 / 49, "pitch_entropy": sum(k / 49 * math.log2(49 / k) for k in (1, 20, 20, 8)),
}
SCALE = "C harmonic minor"      # --scale-key of the runs EXPECTED is checked against

FAKE = r'''#!/usr/bin/python3
# A continuo whose `continue` plays back the pianist's folded window; everything else is the real one.
import json, os, sys
import mido
args = sys.argv[1:]
if not args or args[0] != "continue":
    os.execv(os.environ["REAL_CONTINUO"], [os.environ["REAL_CONTINUO"], *args])
with open(os.environ["FAKE_LOG"], "a") as fh:
    fh.write(json.dumps(args) + "\n")
out = args[args.index("-o") + 1]
notes = json.loads(os.environ["FAKE_NOTES"])
mid = mido.MidiFile(ticks_per_beat=500)
for name, nts in (("primer", []), ("continuation", notes)):
    tr = mido.MidiTrack()
    mid.tracks.append(tr)
    tr.append(mido.MetaMessage("track_name", name=name, time=0))
    tr.append(mido.MetaMessage("set_tempo", tempo=500000, time=0))
    ev = sorted([(round(o * 1000), 1, p, v) for o, r, p, v in nts] + [(round(r * 1000), 0, p, 0) for o, r, p, v in nts])
    now = 0
    for t, on, p, v in ev:
        tr.append(mido.Message("note_on" if on else "note_off", note=p, velocity=v, time=t - now))
        now = t
mid.save(out)
print(f"{out}: primer 21 notes, continuation {len(notes)} notes (0 events, 20.00 s from 10.00 s), seed 1")
'''


def write_performance(path, notes, pedal=()):
    mid = mido.MidiFile(ticks_per_beat=480)
    tr = mido.MidiTrack()
    mid.tracks.append(tr)
    tr.append(mido.MetaMessage("set_tempo", tempo=500000, time=0))      # 1 tick = 1/960 s
    ev = [(round(o * 960), 1, "note_on", p, v) for o, r, p, v in notes]
    ev += [(round(r * 960), 0, "note_off", p, 0) for o, r, p, v in notes]
    ev += [(round(d * 960), 0, "cc", 127, 0) for d, u in pedal] + [(round(u * 960), 0, "cc", 0, 0) for d, u in pedal]
    ev.sort()
    now = 0
    for t, _, kind, a, b in ev:
        if kind == "cc":
            tr.append(mido.Message("control_change", control=64, value=a, time=t - now))
        else:
            tr.append(mido.Message(kind, note=a, velocity=b, time=t - now))
        now = t
    mid.save(path)


def track_notes(path, name):
    """(onset s, release s, pitch) of a track of a file continuo wrote (1 tick = 1 ms)."""
    mid = mido.MidiFile(path)
    tr = next(t for t in mid.tracks if any(m.type == "track_name" and m.name == name for m in t))
    t, on, out = 0, {}, []
    for m in tr:
        t += m.time
        if m.type in ("note_on", "note_off"):
            if m.note in on:
                out.append((on.pop(m.note), t / 1000, m.note))
            if m.type == "note_on" and m.velocity > 0:
                on[m.note] = t / 1000
    return sorted(out)


def load_realism():
    spec = importlib.util.spec_from_file_location("realism", REALISM)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check_measures(check, close):
    """The new measures on small note lists worked out by hand."""
    rl = load_realism()

    def notes(onset_pitch):
        return rl.Notes([o for o, _ in onset_pitch], [o + 0.1 for o, _ in onset_pitch],
                        [p for _, p in onset_pitch], [64] * len(onset_pitch))
    scales = {"C major": {0, 2, 4, 5, 7, 9, 11}, "A minor": {0, 2, 4, 5, 7, 9, 11},
              "D dorian": {0, 2, 4, 5, 7, 9, 11}, "Eb lydian": {3, 5, 7, 9, 10, 0, 2},
              "B phrygian": {11, 0, 2, 4, 6, 7, 9}, "F mixolydian": {5, 7, 9, 10, 0, 2, 3},
              "Db locrian": {1, 2, 4, 6, 7, 9, 11}, "G aeolian": {7, 9, 10, 0, 2, 3, 5},
              "F# ionian": {6, 8, 10, 11, 1, 3, 5}, "C# harmonic minor": {1, 3, 4, 6, 8, 9, 0},
              "Bb harmonic minor": {10, 0, 1, 3, 5, 6, 9}}
    got = {k: set(rl.parse_scale(k)) for k in scales}
    check(got == scales, f"--scale-key: the church modes and harmonic minor, sharps and flats ({got})")
    bad = []
    for text in ("H major", "C blues", "C", "C#x major"):
        try:
            rl.parse_scale(text)
            bad.append(text)
        except ValueError:
            pass
    check(not bad, f"a scale with an unknown tonic or mode is refused ({bad})")
    # pitch and in_key: 60 61 62 66 67 in C major: C, D, G in, C# and F# out
    w = notes([(0.0, 60), (0.5, 61), (1.0, 62), (1.5, 66), (2.0, 67)])
    m = rl.measure(w, 0.0, 4.0, w, 8.0, 24, rl.parse_scale("C major"))
    check(close(m["pitch"], 316 / 5) and close(m["in_key"], 3 / 5),
          f"pitch: the mean MIDI pitch 63.2, in_key 3/5 in C major ({m['pitch']}, {m['in_key']})")
    m = rl.measure(w, 0.0, 4.0, w, 8.0, 24)
    check(math.isnan(m["in_key"]), "no scale: in_key is NaN")
    # motif: the primer 60 62 64 65 67 has (2,2,1) (2,1,2); the window, given out of order with a
    # chord at 0 (sorted 60 62), is 60 62 64 65 60: (2,2,1) (2,1,-5), one of two in the primer
    primer = notes([(0, 60), (1, 62), (2, 64), (3, 65), (4, 67)])
    w = notes([(1.5, 60), (0.0, 62), (1.0, 65), (0.0, 60), (0.5, 64)])
    check(close(rl.motif_share(w, primer), 0.5), f"motif: 1 of 2 patterns in the primer ({rl.motif_share(w, primer)})")
    check(close(rl.motif_share(primer, primer), 1.0), "motif: the primer against itself is 1")
    check(math.isnan(rl.motif_share(notes([(0, 60), (1, 62), (2, 64)]), primer)), "motif: NaN under 4 notes")
    # ts_entropy: onsets 0 0 0.104 0.2 0.5 2 4 (given unsorted): intervals 0, 0.104, 0.096, 0.3, 1.5, 2
    # -> steps 0, 10, 10, 30, 100, 100 (capped): p = 1/6 2/6 1/6 2/6 -> 1/3 + log2 3 bits
    h = rl.onset_entropy([4.0, 0.0, 0.104, 0.0, 0.2, 2.0, 0.5])
    check(close(h, 1 / 3 + math.log2(3)), f"ts_entropy: 10 ms steps, chords 0, capped at 1 s ({h})")
    check(close(rl.onset_entropy([0.0, 0.5, 1.0, 1.5]), 0.0) and math.isnan(rl.onset_entropy([1.0])),
          "ts_entropy: one interval repeated is 0 bits, one note NaN")
    # pitch_entropy: 60 60 62 64 -> p = 1/2 1/4 1/4 -> 1.5 bits; one pitch 0; none NaN
    check(close(rl.pitch_entropy([60, 62, 60, 64]), 1.5) and close(rl.pitch_entropy([60, 60]), 0.0)
          and math.isnan(rl.pitch_entropy([])), "pitch_entropy: bits of the pitches, 0 for one, NaN for none")


def first_block(stdout, starts):
    """The rows of the sweep's first table (up to its blank line) whose first word is in STARTS."""
    rows = []
    for x in stdout.splitlines()[1:]:
        if not x.strip():
            break
        if x.split()[:1] in [[w] for w in starts]:
            rows.append(x)
    return rows


def realism(*args, env=None):
    return subprocess.run(["/usr/bin/python3", REALISM, *args], capture_output=True, text=True, env=env,
                          timeout=100)


def main() -> int:
    fails = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            fails.append(what)

    def close(got, want, tol=1e-9):
        return got is not None and abs(got - want) <= tol

    check_measures(check, close)
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "data")
        os.makedirs(os.path.join(data, "Test"))
        write_performance(os.path.join(data, "Test", "known.mid"), PRIMER + WINDOW + AFTER, PEDAL)
        # a second performance of the same piece: never used (the first one is)
        write_performance(os.path.join(data, "Test", "other.mid"), [(0.1 * i, 0.1 * i + 2, 50 + i % 30, 30)
                                                                  for i in range(400)])
        write_performance(os.path.join(data, "Test", "short.mid"), PRIMER)
        split = os.path.join(data, "split.tsv")
        with open(split, "w") as fh:
            fh.write("split\tcomposer\ttitle\tfile\n"
                     "train\tTest\tShort\tTest/short.mid\n"
                     "valid\tTest\tKnown\tTest/known.mid\n"
                     "valid\tTest\tKnown\tTest/other.mid\n")
        model = os.path.join(d, "m.gguf")
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "train", "export.py"), "--random", model,
                        "--layers", "2", "--d-model", "64", "--heads", "4", "--d-ff", "128",
                        "--max-rel", "32", "--context", "64", "--scale", "0.1", "--dtype", "f16"],
                       check=True, stdout=subprocess.DEVNULL)

        # 1. A `continue` that plays back the pianist's window: the same figures, every ratio 1.
        fake = os.path.join(d, "fake-continuo")
        with open(fake, "w") as fh:
            fh.write(FAKE)
        os.chmod(fake, 0o755)
        log = os.path.join(d, "fake.log")
        env = dict(os.environ, REAL_CONTINUO=CONTINUO, FAKE_LOG=log,
                   FAKE_NOTES=json.dumps(FOLDED + [(30.0, 30.5, 62, 61)]))     # the last: past the window
        work, js = os.path.join(d, "work-fake"), os.path.join(d, "fake.json")
        r = realism("--model", model, "--split-file", split, "--continuo", fake, "--max-held", "2", "--note-cap", "8",
                    "--temperature", "0.9", "--top-p", "0.95", "--seed", "40", "--samples", "2",
                    "--continue-args=--memory window", "--work-dir", work, "--json", js, "--scale-key", SCALE,
                    env=env)
        print(r.stdout, r.stderr[-3000:])
        check(r.returncode == 0, "realism with a stand-in continue exits 0")
        doc = json.load(open(js)) if os.path.exists(js) else {"pieces": [{}], "runs": [{}]}
        real = doc["pieces"][0].get("real", {})
        for k, want in EXPECTED.items():
            check(close(real.get(k), want), f"real {k} = {want:.6g} (got {real.get(k)})")
        check(len(doc["pieces"]) == 1 and doc["pieces"][0].get("file", "").endswith("known.mid"),
              "one piece, from its first performance")
        model_m = doc["runs"][0].get("model", [{}])[0]
        check(all(close(model_m.get(k), want) for k, want in EXPECTED.items()),
              "a continuation equal to the pianist's scores the same figures")
        summ = doc["runs"][0].get("summary", {})
        check(all(close(summ.get(k, {}).get("ratio"), 1.0)
                  for k in ("nps", "poly", "silence", "vel", "pc", "len50", "pitch", "in_key", "motif", "ts_entropy")),
              "and every mean ratio model/real is 1")
        check(close(summ.get("pc", {}).get("diff"), 0.0) and doc["runs"][0].get("bar") == "pass",
              "pc overlap difference 0: the issue's bar is met")
        calls = [json.loads(x) for x in open(log)] if os.path.exists(log) else []
        call = calls[0] if calls else []

        def opt(flag):
            return call[call.index(flag) + 1] if flag in call else None
        check(len(calls) == 2 and opt("--seconds") == "20" and opt("--seed") == "40" and opt("--temperature") == "0.9"
              and opt("--top-p") == "0.95" and opt("--max-held") == "2" and opt("--model") == model
              and opt("--memory") == "window",
              f"continue gets the length, seed, sampling settings and --continue-args ({call})")
        check([c[c.index("--seed") + 1] for c in calls] == ["40", "1040"], "--samples 2: seeds 40 and 1040")
        primer = track_notes_plain(os.path.join(work, "piece000.primer.mid"))
        check(len(primer) == 21 and max(r for _, r, _ in primer) == 10.0
              and [(o, r) for o, r, p in primer if p == 72] == [(9.0, 10.0)],
              "the primer is the first 10 s, the note sounding at the cut ended there")
        line = next((x for x in r.stdout.splitlines() if "Known" in x), "")
        check("notes/s 2.45/2.45" in line and "poly 1.40/1.40" in line and "capped 0.024/0.024" in line
              and "pitch 62.5/62.5" in line and "in_key 0.592/0.592" in line and "motif 0.109/0.109" in line
              and "ts_entropy 1.48/1.48" in line,
              f"one line per piece, model/real ({line[:80]}...)")

        # The musical knobs reach continue as given: a key with a space one argument, --key-lock bare.
        open(log, "w").close()
        r = realism("--model", model, "--split-file", split, "--continuo", fake, "--note-cap", "8",
                    "--density", "2", "--register", "-12", "--pitch-low", "36", "--pitch-high", "96",
                    "--velocity", "80", "--key", "C major", "--key-lock", "--rhythm-temperature", "0.8",
                    "--pitch-temperature", "1.2", "--motif", "0.5", env=env)
        calls = [json.loads(x) for x in open(log)]
        call = calls[0] if calls else []
        want = {"--density": "2", "--register": "-12", "--pitch-low": "36", "--pitch-high": "96", "--velocity": "80",
                "--key": "C major", "--rhythm-temperature": "0.8", "--pitch-temperature": "1.2", "--motif": "0.5"}
        check(r.returncode == 0 and all(opt(f) == v for f, v in want.items()),
              f"continue gets --density, --register, --pitch-low/-high, --velocity, --key, the temperatures, --motif ({call})")
        check(call.count("--key-lock") == 1 and call.index("--key-lock") + 1 < len(call)
              and call[call.index("--key-lock") + 1].startswith("--"),
              "--key-lock goes through as a flag without a value")
        check("in_key" not in r.stdout and "density=2 register=-12" in r.stdout and "key=C major key_lock=yes" in r.stdout,
              "without --scale-key in_key is not printed; the settings are")
        r = realism("--model", model, "--split-file", split, "--continuo", fake, "--velocity", "auto", "--note-cap", "8",
                    env=env)
        check(r.returncode == 0 and json.loads(open(log).read().splitlines()[-1]).count("auto") == 1,
              "--velocity auto passes 'auto'")

        # The knobs in a sweep: one run per combination, each passed as its settings say; the model's
        # absolute means per setting, printed and in the JSON.
        open(log, "w").close()
        js = os.path.join(d, "knobs.json")
        r = realism("--model", model, "--split-file", split, "--continuo", fake, "--note-cap", "8", "--max-held", "2",
                    "--json", js, "--scale-key", SCALE, "--register", "-12",
                    "--sweep", "key=C major,auto", "key_lock=no,yes", "velocity=40,auto", env=env)
        print(r.stdout, r.stderr[-2000:])
        calls = [json.loads(x) for x in open(log)]
        seen = [(c[c.index("--key") + 1], "--key-lock" in c, c[c.index("--velocity") + 1], c[c.index("--register") + 1])
                for c in calls if "--key" in c and "--velocity" in c and "--register" in c]
        combos = [(k, lk, v, "-12") for k in ("C major", "auto") for lk in (False, True) for v in ("40", "auto")]
        check(r.returncode == 0 and seen == combos, f"a sweep of key, key_lock and velocity passes each combination ({seen})")
        rows = first_block(r.stdout, ("C", "auto"))
        check([x.split()[:4] for x in rows] == [["C", "major", "no", "40"], ["C", "major", "no", "auto"],
                                                ["C", "major", "yes", "40"], ["C", "major", "yes", "auto"],
                                                ["auto", "no", "40", "2"], ["auto", "no", "auto", "2"],
                                                ["auto", "yes", "40", "2"], ["auto", "yes", "auto", "2"]],
              f"the sweep prints each combination's values ({[x.split()[:4] for x in rows]})")
        doc = json.load(open(js)) if os.path.exists(js) else {"runs": []}
        check([x["settings"] for x in doc["runs"]] == [{"max_held": 2, "register": -12, "key": k, "key_lock": lk, "velocity": v}
                                                       for k in ("C major", "auto") for lk in (False, True)
                                                       for v in (40, "auto")],
              "and records them in the JSON (key_lock true/false, velocity a number or 'auto')")
        measures = {k: w for k, w in EXPECTED.items() if k != "notes"}     # the count is no measure
        check(doc["runs"] and all(all(close(x.get("means", {}).get(k), w) for k, w in measures.items()) for x in doc["runs"])
              and all(close(doc.get("real_means", {}).get(k), w) for k, w in measures.items()),
              "the JSON has each run's absolute means over the pieces (and the pianist's)")
        means = r.stdout[r.stdout.find("means over the pieces"):].splitlines()
        head = means[1].split() if len(means) > 1 else []
        pianist = means[2].split() if len(means) > 2 else []
        first = means[3].split() if len(means) > 3 else []
        check(head[-6:] == ["full", "pitch", "in_key", "motif", "ts_entropy", "pitch_entropy"]
              and pianist[:2] == ["pianist", "2.45"]
              and first[:6] == ["C", "major", "no", "40", "2", "-12"] and first[6:8] == ["2.45", "1.40"]
              and first[-5:-1] == ["62.5", "0.592", "0.109", "1.48"] and len(means) >= 11,
              f"the sweep prints the pianist's and each setting's absolute means ({means[1:4]})")

        # --midi: files instead of a split, each a piece
        js = os.path.join(d, "midi.json")
        r = realism("--model", model, "--midi", os.path.join(data, "Test", "known.mid"), "--continuo", fake,
                    "--max-held", "2", "--note-cap", "8", "--json", js, "--scale-key", SCALE, env=env)
        doc = json.load(open(js)) if os.path.exists(js) else {"pieces": [{}]}
        check(r.returncode == 0 and doc["pieces"][0].get("title") == "known"
              and all(close(doc["pieces"][0].get("real", {}).get(k), w) for k, w in EXPECTED.items()),
              "--midi FILE: the file is a piece, measured alike")

        # 2. The real continue with a random model: measured as its output says, seeds reproduce.
        work, js, png = os.path.join(d, "work"), os.path.join(d, "r.json"), os.path.join(d, "roll.png")
        r = realism("--model", model, "--split-file", split, "--continuo", CONTINUO, "--work-dir", work,
                    "--json", js, "--plot", png, "--top-p", "0.9", "--note-cap", "8")
        print(r.stdout, r.stderr[-3000:])
        check(r.returncode == 0 and "piece 1/1" in r.stderr,
              "realism with the real continue exits 0, progress on stderr")
        doc = json.load(open(js)) if os.path.exists(js) else {"pieces": [{}], "runs": [{"model": [{}]}]}
        check(all(close(doc["pieces"][0].get("real", {}).get(k), w) for k, w in EXPECTED.items()
                  if k not in ("full", "in_key")),
              "the same real figures (continue's default max-held: 'full' differs)")
        check(doc["pieces"][0].get("real", {}).get("in_key", 0) is None and doc["scale_key"] is None,
              "no --scale-key: in_key is null in the JSON")
        check(close(doc["pieces"][0]["real"].get("full"), 0.0), "nothing near max-held notes at once in the real window")
        cont_path = os.path.join(work, "piece000.s00.mid")
        cont = [n for n in track_notes(cont_path, "continuation")] if os.path.exists(cont_path) else []
        start = doc["pieces"][0].get("primer_end")
        in_window = [n for n in cont if start <= n[0] < start + 20]
        m = doc["runs"][0]["model"][0]
        check(start == 10.0 and len(cont) > 0 and m.get("notes") == len(in_window)
              and close(m.get("nps"), len(in_window) / 20),
              f"the model's notes/s is its continuation's notes over 20 s ({m.get('notes')} of {len(cont)})")
        poly = sum(min(r_, start + 20) - o for o, r_, _ in in_window) / 20
        check(close(m.get("poly"), poly, 1e-6), f"and its polyphony the sum of its note lengths / 20 s ({poly:.3f})")
        check(os.path.exists(png) and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", "--plot writes a PNG")
        r2 = realism("--model", model, "--split-file", split, "--continuo", CONTINUO, "--top-p", "0.9", "--note-cap", "8")
        first = [x for x in r.stdout.splitlines() if "Known" in x]
        check(first and first == [x for x in r2.stdout.splitlines() if "Known" in x],
              "the same seed gives the same figures")

        # 3. A sweep: one line per combination, the same real figures for each.
        js = os.path.join(d, "sweep.json")
        r = realism("--model", model, "--split-file", split, "--continuo", CONTINUO, "--json", js,
                    "--sweep", "temperature=0.5,1.0", "top_p=0.9,1")
        print(r.stdout, r.stderr[-2000:])
        rows = [x.split() for x in first_block(r.stdout, ("0.5", "1"))]
        check(r.returncode == 0 and [x[:2] for x in rows] == [["0.5", "0.9"], ["0.5", "1"], ["1", "0.9"], ["1", "1"]],
              f"the sweep prints one line per combination ({[x[:2] for x in rows]})")
        runs = json.load(open(js))["runs"] if os.path.exists(js) else []
        check([x["settings"] for x in runs] == [{"temperature": t, "top_p": p} for t in (0.5, 1.0) for p in (0.9, 1.0)],
              "and records the settings of each")
        check(len({json.dumps(x["model"][0]) for x in runs}) > 1, "different settings give different continuations")

        # 4. Errors name the file and what was wrong.
        bad = os.path.join(data, "bad.tsv")
        with open(bad, "w") as fh:
            fh.write("split\tcomposer\ttitle\tfile\nvalid\tTest\tGone\tTest/gone.mid\n")
        r = realism("--model", model, "--split-file", bad, "--continuo", CONTINUO)
        check(r.returncode == 1 and "bad.tsv:2" in r.stderr and "gone.mid" in r.stderr,
              f"a missing performance: exit 1, split file line and path named ({r.stderr.strip()})")
        r = realism("--model", model, "--split-file", split, "--split", "train", "--continuo", CONTINUO)
        check(r.returncode == 1 and "short.mid" in r.stderr and "shorter" in r.stderr,
              f"a performance shorter than 30 s: exit 1, named ({r.stderr.strip()})")
        r = realism("--model", model, "--split-file", split, "--continuo", CONTINUO, "--sweep", "warmth=1,2")
        check(r.returncode == 2 and "warmth=1,2" in r.stderr, "an unknown sweep key is a usage error")
        for bad, what in ((["--sweep", "key_lock=maybe"], "key_lock"), (["--sweep", "velocity=loud"], "velocity"),
                          (["--scale-key", "H major"], "'H'"), (["--velocity", "loud"], "--velocity")):
            r = realism("--model", model, "--split-file", split, "--continuo", CONTINUO, *bad)
            check(r.returncode == 2 and what in r.stderr, f"{' '.join(bad)}: a usage error naming it ({r.stderr.strip()[-120:]})")
    return 1 if fails else 0


def track_notes_plain(path):
    """(onset s, release s, pitch) of a one-track file written by realism.py (1 tick = 1 ms)."""
    mid = mido.MidiFile(path)
    t, on, out = 0, {}, []
    for m in mid.tracks[0]:
        t += m.time
        if m.type in ("note_on", "note_off"):
            if m.note in on:
                out.append((on.pop(m.note), t / 1000, m.note))
            if m.type == "note_on" and m.velocity > 0:
                on[m.note] = t / 1000
    return sorted(out)


if __name__ == "__main__":
    sys.exit(main())

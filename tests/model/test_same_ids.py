#!/usr/bin/python3
"""test_same_ids.py: `serve` and `continue` play one continuation.

The same primer, seed and settings give the same event ids, then the same
notes, in `continue` (offline) and in `serve` (live), for several settings:
the defaults (8 candidates), one candidate, a temperature, top-p, top-k
with min-p, pace, key_pull, a held-note cap and a note-length cap, and
other candidates and scores.  Both take the primer in one way:
`serve` hears the file through `ctl play FILE` at the file's own times,
`continue --step` feeds it one model step per event as `serve` does, and the
primers sit on the codec's 10 ms steps, so equal settings must give equal
ids.  The ids are what both log at debug level (`-v`); the notes are the
continuation track of `continue`'s file and the model's part of the
service's recording (`ctl save`).  The options are matched through
`continue --help`, whose lines name serve's key of each (one table:
src/play/play_options.h).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import mido

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from servetest import Service, check, done  # noqa: E402

SRC = os.environ["CONTINUO_SRC"]
CONTINUO = os.environ["CONTINUO"]
ASAP = os.environ.get("ASAP_DIR", "")
MODEL = os.path.join(SRC, "models", "continuo-default.gguf")
SEED = 1000             # the service's; its continuation k is seeded SEED + k
SECONDS = 3             # continue --seconds, serve's response_seconds
PRIMER_S = 10           # a primer: the first 10 s of a performance
TOLERANCE_S = 0.025     # the service plays in real time: its notes' times jitter
LATE_RERUN_MS = 10      # a service that measured itself this late may run a case once more

# name, serve's settings (continue's options follow from --help)
SETTINGS = [
    ("defaults (8 candidates, the mix, motif 0.4, release 1)", {}),
    ("one candidate", {"candidates": "1"}),
    ("temperature 0.6", {"temperature": "0.6"}),
    ("top-p 0.7", {"top_p": "0.7"}),
    ("top-k 12, min-p 0.05", {"top_k": "12", "min_p": "0.05"}),
    ("pace off", {"pace": "0"}),
    ("key_pull 0.8", {"key_pull": "0.8"}),
    ("at most 2 notes held, 400 ms a note", {"max_held_notes": "2", "max_note_ms": "400"}),
    ("4 candidates, the likeliest played", {"candidates": "4", "candidate_score": "likelihood"}),
    ("3 candidates, the most motif played", {"candidates": "3", "candidate_score": "motif"}),
]


def cli_names():
    """serve's key -> continue's option, from the lines of `continue --help`."""
    text = subprocess.run([CONTINUO, "continue", "--help"], capture_output=True, text=True).stdout
    names, flag = {}, None
    for line in text.splitlines():
        m = re.match(r"\s+(--[\w-]+)", line)
        if m:
            flag = m.group(1)
        m = re.search(r"serve's (\w+)\)", line)
        if m and flag:
            names[m.group(1)] = flag
    return names


def quantized_primer(src, dst):
    """SRC's notes and pedal of its first PRIMER_S seconds, times on 10 ms
    steps, written at 1 ms a tick; notes and pedal still on at the cut end
    there.  Returns the number of messages."""
    events, t = [], 0.0
    for msg in mido.MidiFile(src):
        t += msg.time
        if t > PRIMER_S:
            break
        if msg.type in ("note_on", "note_off") or (msg.type == "control_change" and msg.control == 64):
            events.append((round(t * 100), msg))
    sounding, pedal = set(), False
    for _, msg in events:
        if msg.type == "note_on" and msg.velocity > 0:
            sounding.add((msg.channel, msg.note))
        elif msg.type in ("note_on", "note_off"):
            sounding.discard((msg.channel, msg.note))
        else:
            pedal = msg.value >= 64
    end = events[-1][0] if events else 0
    events += [(end, mido.Message("note_off", channel=ch, note=n)) for ch, n in sorted(sounding)]
    if pedal:
        events.append((end, mido.Message("control_change", control=64, value=0)))
    f = mido.MidiFile(ticks_per_beat=500)       # 120 bpm: 1 ms a tick
    track = mido.MidiTrack()
    f.tracks.append(track)
    last = 0
    for step, msg in events:
        track.append(msg.copy(time=step * 10 - last))
        last = step * 10
    f.save(dst)
    return len(events)


def primers(folder):
    """The bundled motif and two pieces of ASAP's valid split (when there)."""
    chosen = [os.path.join(SRC, "models", "motif.mid")]
    split = os.path.join(ASAP, "split.tsv")
    if os.path.exists(split):
        with open(split, encoding="utf-8") as f:
            valid = [line.split("\t")[3].strip() for line in f if line.startswith("valid\t")]
        chosen += [os.path.join(ASAP, valid[0]), os.path.join(ASAP, valid[len(valid) // 2])]
    else:
        print(f"note: no ASAP split at {split}: the motif alone")
    out = []
    for i, path in enumerate(chosen):
        dst = os.path.join(folder, "primer%d.mid" % i)
        n = quantized_primer(path, dst)
        print(f"primer {i}: {os.path.relpath(path, ASAP) if i else 'models/motif.mid'}, {n} messages")
        out.append(dst)
    return out


def logged_ids(text):
    """The ids of each continuation in a debug log, in order."""
    runs, cur = [], []
    for line in text.splitlines():
        m = re.search(r"continuation: ids \d+\.\.:((?: \d+)+)", line)
        if m:
            cur += [int(x) for x in m.group(1).split()]
        elif re.search(r"continuation: \d+ ids sampled", line):
            runs.append(cur)
            cur = []
    return runs


def notes(track, tempo_map_file):
    """(onset, release, pitch, velocity) of TRACK's notes, in seconds."""
    out, on, t = [], {}, 0.0
    tpb = tempo_map_file.ticks_per_beat
    tempo = 500000
    for msg in track:
        t += mido.tick2second(msg.time, tpb, tempo)
        if msg.type == "set_tempo":
            tempo = msg.tempo
        elif msg.type == "note_on" and msg.velocity > 0:
            if msg.note in on:
                out.append((on[msg.note][0], t, msg.note, on[msg.note][1]))
            on[msg.note] = (t, msg.velocity)
        elif msg.type in ("note_on", "note_off") and msg.note in on:
            start, vel = on.pop(msg.note)
            out.append((start, t, msg.note, vel))
    return sorted(out, key=lambda n: (n[0], n[2]))


def model_notes(path):
    """The model's notes in the service's recording PATH."""
    f = mido.MidiFile(path)
    track = [t for t in f.tracks if any(m.type == "track_name" and m.name == "continuo" for m in t)]
    return notes(track[0], f)


def continue_run(primer, out, seed, opts):
    r = subprocess.run([CONTINUO, "continue", primer, "-o", out, "--model", MODEL, "--seed", str(seed),
                        "--seconds", str(SECONDS), "--step", "-v", "--threads", "2"] + opts,
                       capture_output=True, text=True)
    check(r.returncode == 0, "continue ran: " + r.stderr[-500:])
    f = mido.MidiFile(out)
    track = [t for t in f.tracks if any(m.type == "track_name" and m.name == "continuation" for m in t)]
    cont = notes(track[0], f)
    runs = logged_ids(r.stderr)
    return (runs[0] if runs else []), cont


def wait_answered(sv, k, timeout=60):
    """Until the service's continuation K is over (generated and played)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = sv.request("status")
        if "state=listening" in st and re.search(r"responses=(\d+)", st).group(1) == str(k):
            return
        time.sleep(0.1)
    check(False, "continuation %d was not over in %d s" % (k, timeout))


def same_notes(a, b, tolerance=TOLERANCE_S, releases=True):
    """Whether A and B, (onset, release, pitch, velocity) lists, hold the
    same notes: each note of A has one of B with its pitch and velocity
    whose onset (and release, with RELEASES) from its list's first onset is
    within TOLERANCE seconds.  In any order among notes that close in time:
    a service playing in real time stamps each note when it goes out, so
    two notes struck a few ms apart can come out the other way round.
    (ok, why)."""
    if len(a) != len(b) or not a:
        return False, "%d notes against %d" % (len(a), len(b))
    a0, b0 = min(n[0] for n in a), min(n[0] for n in b)
    other = sorted(b, key=lambda n: n[0])
    used = [False] * len(other)
    for x in sorted(a, key=lambda n: n[0]):
        at, match, near = x[0] - a0, None, None
        for j, y in enumerate(other):
            if y[0] - b0 > at + tolerance:
                break                       # sorted: none later is near
            if used[j] or abs(y[0] - b0 - at) > tolerance:
                continue
            near = near or y
            if x[2:] == y[2:] and (not releases or abs((y[1] - b0) - (x[1] - a0)) <= tolerance):
                match = j
                break
        if match is None:
            return False, "note %s against %s" % (x, near if near else "nothing within %g s" % tolerance)
        used[match] = True
    return True, ""


def serve_run(folder, primer, k, sets, again=False):
    """A fresh service (an empty context, as `continue` starts) with SETS
    continues PRIMER (`ctl play`) with seed SEED + K: its ids, its notes and
    the latest it sent a message against its deadline, in ms, as it
    measured (status's timing_error_ms_max)."""
    sets = ["%s=%s" % kv for kv in sets.items()]
    rec = os.path.join(folder, "rec%d%s.mid" % (k, "-again" if again else ""))
    sv = Service("model=" + MODEL, "input=null", "recording=" + rec, "seed=%d" % (SEED + k - 1),
                 "response_seconds=%d" % SECONDS, "model_threads=2", *sets, verbose=True)
    try:
        reply = sv.request("play " + primer)
        check(reply.startswith("ok heard"), "play %s: %s" % (primer, reply))
        wait_answered(sv, 1)
        st = sv.request("status")
        m = re.search(r"timing_error_ms_max=(-?[\d.]+)", st)
        late_ms = float(m.group(1)) if m else 0.0
        sv.stop()
        runs = logged_ids(sv.read_log())
        check(len(runs) == 1, "the service logged one continuation's ids, not %d" % len(runs))
    finally:
        sv.cleanup()
    return (runs[0] if runs else []), model_notes(rec), late_ms


def primer_end(path):
    """Seconds to the primer's last message."""
    return sum(m.time for m in mido.MidiFile(path))


def check_rules(name, primer, sets, cont):
    """What a listener hears of the rules: the continuation starts where the
    primer ends, with a note; the caps hold."""
    check(cont and abs(cont[0][0] - primer_end(primer)) < 0.006,
          "%s: the continuation's first note is at the primer's end, %.3f s (it is at %.3f s)"
          % (name, primer_end(primer), cont[0][0] if cont else -1))
    longest = max(n[1] - n[0] for n in cont)
    cap = int(sets.get("max_note_ms", "5000")) / 1000
    check(longest <= cap + 0.001, "%s: no note longer than %.3f s (the longest: %.3f s)" % (name, cap, longest))
    held = int(sets.get("max_held_notes", "24"))
    edges = sorted([(n[0], 1) for n in cont] + [(n[1], -1) for n in cont])
    most, now = 0, 0
    for _, d in edges:
        now += d
        most = max(most, now)
    check(most <= held, "%s: never more than %d notes at once (%d)" % (name, held, most))


def main():
    with open(CONTINUO, "rb") as fh:
        data = fh.read()
    if b"__asan_init" in data or b"__ubsan_handle" in data:
        print("SKIP: sanitized build (the same arithmetic, slower: see `model continue` for memory)")
        return 77
    names = cli_names()
    for _, sets in SETTINGS:
        for key in sets:
            check(key in names, "continue --help names an option for serve's %s (%s)" % (key, sorted(names)))
    with tempfile.TemporaryDirectory() as d:
        paths = primers(d)
        k, results = 0, []
        for name, sets in SETTINGS:
            for p in paths:
                k += 1
                opts = [x for key, value in sets.items() for x in (names[key], value)]
                results.append((name, sets, p, k, serve_run(d, p, k, sets), opts))
        for name, sets, p, k, (ids, served, late_ms), opts in results:
            out = os.path.join(d, "c%d.mid" % k)
            cont_ids, cont_notes = continue_run(p, out, SEED + k, opts)
            same = ids == cont_ids
            first = next((i for i, (a, b) in enumerate(zip(ids, cont_ids)) if a != b), min(len(ids), len(cont_ids)))
            print("%-38s %s: %3d ids serve, %3d continue, %s; %d notes serve, %d continue"
                  % (name, os.path.basename(p), len(ids), len(cont_ids),
                     "same" if same else "first differ at %d" % first, len(served), len(cont_notes)))
            check(same and len(ids) > 20, "%s, %s: the same ids in serve and continue" % (name, p))
            ok, why = same_notes(served, cont_notes)
            if not ok and same and late_ms > LATE_RERUN_MS:
                # The service timed its notes as continue did but says it sent
                # one LATE_MS late: the machine did not run its loop in time (a
                # busy CI machine: 35-38 ms once in a few hundred notes). Once
                # more; a wrong time the service made itself fails both runs.
                print("  %s, %s: %s; the service measured a message %.1f ms late: once more"
                      % (name, os.path.basename(p), why, late_ms))
                ids, served, late_ms = serve_run(d, p, k, sets, again=True)
                ok, why = same_notes(served, cont_notes)
                check(ids == cont_ids, "%s, %s: the same ids in serve (again) and continue" % (name, p))
            check(ok, "%s, %s: the same notes in serve and continue (%s)" % (name, p, why))
            check_rules(name, p, sets, cont_notes)
    return done()


if __name__ == "__main__":
    sys.exit(main())

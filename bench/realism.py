#!/usr/bin/python3
"""realism.py: does a model continue real piano openings the way the pianist did?

For every piece (composer and title) of a split, its first performance is cut
into a primer (the first --primer-seconds, 10 s) and the real continuation
(the next --seconds, 20 s); `continuo continue` continues the primer with the
model for --seconds, and both continuations are measured the same way, side by
side.  One line per piece, then the mean over pieces; --plot draws the two
piano rolls of a few pieces one above the other; --sweep runs every
combination of `continue`'s settings (sampling and musical knobs) and prints
one line each against the pianist, then each setting's absolute means, to
choose defaults and to see what a knob does.

    bench/realism.py --model M.gguf --split-file ../shared/data/asap/split.tsv --split valid
    bench/realism.py --model M.gguf --split-file ... --split valid --plot roll.png --json out.json
    bench/realism.py --model M.gguf --split-file ... --split valid \\
        --sweep temperature=0.9,1.0 top_p=0.9,0.95,1.0
    bench/realism.py --model M.gguf --split-file ... --scale-key "C major" \\
        --sweep "key=C major,auto" key_lock=no,yes density=0.5,1,2
    bench/realism.py --model M.gguf --midi my/*.mid          (each file a piece)

Both continuations are measured in the model's own terms: the performance goes
through the C codec (`continuo encode`, then `continuo decode`), so the sustain
pedal is folded into note lengths, times fall on 10 ms steps and velocities on
the codec's 32 bins, exactly what the model reads and writes.  Times count
from the start of the MIDI file.  The primer is what sounds before the cut:
notes that start before it, those still sounding ended at the cut (written as
a plain MIDI file, no pedal).  `continue` starts its continuation where the
primer's last note ends (the cut, unless the pianist was silent there).

The measures (docs/REALISM.md), over the notes that start in the window of
--seconds (the model's: from where the primer ends; the pianist's: from the
cut), each note's end clipped to the window's end:

  notes/s     notes per second of the window
  poly        mean polyphony: the number of sounding notes averaged over the
              whole window, silences included (sum of note lengths / window)
  silence     share of the window with no note sounding
  vel, vel_sd velocity mean and standard deviation over the notes (1..127)
  pc          pitch-class overlap with the primer: histogram intersection
              (sum of the minima, 0..1) of the duration-weighted pitch-class
              histograms of the window and of the primer, each summing to 1
  top         share of the notes played on the most frequent pitch
  len25/50/75 note length quartiles, seconds
  capped      share of the notes that last the note-length cap or longer,
              among those starting at least one cap before the window's end
              (so every one of them could reach it): for the model, the
              notes `continue` cut at its cap (--note-cap); for the
              pianist, the notes the cap would have cut
  full        share of the window with --max-held notes or more sounding
              (24, `continue`'s default): where the model's held-note cap
              keeps it from starting another note
  pitch       mean MIDI pitch of the notes
  in_key      share of the notes whose pitch class is in the scale of
              --scale-key ('C major', 'F# dorian', 'Bb harmonic minor': the
              seven church modes, ionian = major, aeolian = minor, and
              harmonic minor); without it not measured (NaN, not printed)
  motif       share of the window's 4-note interval patterns found in the
              primer: the notes sorted by onset then pitch, each 4 in a row
              give a triple of pitch intervals; the share of the window's
              triples (counted with repeats) that are among the primer's
              (NaN when either has fewer than 4 notes)
  ts_entropy  entropy in bits of the inter-onset intervals (onsets sorted),
              each rounded to whole 10 ms steps and capped at 100 (1 s); a
              chord's notes give 0-step intervals (NaN under 2 notes)
  pitch_entropy  entropy in bits of the notes' pitches (each MIDI number a
              value; NaN without notes)

Ratios are model / real, per piece, then averaged over the pieces where the
real value is not 0.  in_key, motif and the two entropies are meant to be compared
between settings (a knob's effect) more than with the pianist: a sweep prints
every measure's absolute mean per setting (and the JSON's runs[].means).

`continue`'s options (the CONTINUE_OPTIONS table: the sampling settings and
the musical knobs --density, --register, --pitch-low/-high, --velocity, --key,
--key-lock, --rhythm-/--pitch-temperature, --motif) and the candidates (--candidates,
--candidate-score) pass through as given or
in --sweep KEY=V1,V2 (key_lock=no,yes: yes passes the flag, no omits it).
Exit status: 0, 1 on an error (named with its file), 2 on bad usage.
"""

import argparse
import concurrent.futures
import itertools
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def play_defaults(path=os.path.join(ROOT, "src", "model", "sampler.h")):
    """`continue`'s defaults, read from where they are defined (PLAY_* in
    src/model/sampler.h): the note-length cap and --max-held are measured
    against, the rest printed in the help."""
    d = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"#define PLAY_([A-Z_]+)\s+([0-9.]+)", line)
            if m:
                d[m.group(1).lower()] = float(m.group(2))
    return d


PLAY = play_defaults()
CONTINUE_NOTE_CAP_S = PLAY["max_note_ms"] / 1000.0
CONTINUE_MAX_HELD = int(PLAY["max_held"])

def velocity_value(text):
    """--velocity: 'auto' or a MIDI velocity (its range is continue's to check)."""
    return "auto" if text == "auto" else int(text)


def key_value(text):
    """--key: auto, off or a key such as 'C major' (one argument; continue checks the name)."""
    if not text.strip():
        raise ValueError("empty key")
    return text


SCORES = ("likelihood", "nudged", "motif", "pace", "mix")


def score_value(text):
    """--candidate-score: one of SCORES."""
    if text not in SCORES:
        raise ValueError(f"not one of {', '.join(SCORES)}")
    return text


# The options passed through to `continuo continue`, one row each:
# key -> (flag, parse, help); parse None: a flag without a value (True passes it, False omits it).
# Ranges are continue's to check (its message names the option); the help says its default.
CONTINUE_OPTIONS = {
    "temperature": ("--temperature", float, f"its default: {PLAY['temperature']:g}"),
    "top_p": ("--top-p", float, f"its default: {PLAY['top_p']:g}; 1: off"),
    "min_p": ("--min-p", float, f"its default: {PLAY['min_p']:g}; 0: off"),
    "top_k": ("--top-k", int, f"its default: {PLAY['top_k']:g}; 0: off"),
    "max_held": ("--max-held", int, f"its default: {CONTINUE_MAX_HELD}"),
    "pace": ("--pace", float, f"its default: {PLAY['pace']:g}; 0: off"),
    "key_pull": ("--key-pull", float, f"its default: {PLAY['key_pull']:g}; 0: off"),
    "release": ("--release", float, f"0..4; its default: {PLAY['release']:g}; 0: off"),
    "density": ("--density", float, "notes per second times X, 0.25..4; its default: 1"),
    "register": ("--register", int, "shift in semitones, -24..24; its default: 0"),
    "pitch_low": ("--pitch-low", int, "lowest MIDI pitch; its default: 0"),
    "pitch_high": ("--pitch-high", int, "highest MIDI pitch; its default: 127"),
    "velocity": ("--velocity", velocity_value, "auto or 1..127; its default: auto"),
    "key": ("--key", key_value, "auto, off or a key ('C major', 'D dorian'); its default: auto"),
    "key_lock": ("--key-lock", None, "a flag; in --sweep: key_lock=no,yes"),
    "rhythm_temperature": ("--rhythm-temperature", float, "its default: 1"),
    "pitch_temperature": ("--pitch-temperature", float, "its default: 1"),
    "motif": ("--motif", float, f"0..1; its default: {PLAY['motif']:g}; 0: off"),
    "candidates": ("--candidates", int,
                   f"continuations side by side, the best played, 1..8; its default: {PLAY['candidates']:g}"),
    "candidate_score": ("--candidate-score", score_value,
                        "likelihood, nudged, motif, pace or mix; its default: mix"),
}


def option_args(key, value):
    """The arguments of `continue` that set KEY to VALUE."""
    flag, parse, _ = CONTINUE_OPTIONS[key]
    if parse is None:
        return [flag] if value else []
    return [flag, f"{value:g}" if isinstance(value, float) else str(value)]


def value_text(v):
    """A setting's value as printed: 0.9, -12, auto, C major, yes/no for a flag."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    return f"{v:g}" if isinstance(v, float) else str(v)


# (key, label, format) of every measure, in the order printed.
MEASURES = [
    ("nps", "notes/s", "{:.2f}"),
    ("poly", "poly", "{:.2f}"),
    ("silence", "silence", "{:.3f}"),
    ("vel", "vel", "{:.1f}"),
    ("vel_sd", "vel_sd", "{:.1f}"),
    ("pc", "pc", "{:.3f}"),
    ("top", "top", "{:.3f}"),
    ("len25", "len25", "{:.3f}"),
    ("len50", "len50", "{:.3f}"),
    ("len75", "len75", "{:.3f}"),
    ("capped", "capped", "{:.3f}"),
    ("full", "full", "{:.3f}"),
    ("pitch", "pitch", "{:.1f}"),
    ("in_key", "in_key", "{:.3f}"),
    ("motif", "motif", "{:.3f}"),
    ("ts_entropy", "ts_entropy", "{:.2f}"),
    ("pitch_entropy", "pitch_entropy", "{:.2f}"),
]


class BenchError(Exception):
    """An error to print as it is (it names the file and what was wrong) and exit 1."""


# ---------------------------------------------------------------- notes

class Notes:
    """Notes as parallel arrays: onset and release in seconds, pitch, velocity."""

    def __init__(self, onset=(), release=(), pitch=(), velocity=()):
        self.onset = np.asarray(onset, dtype=float)
        self.release = np.asarray(release, dtype=float)
        self.pitch = np.asarray(pitch, dtype=int)
        self.velocity = np.asarray(velocity, dtype=int)

    def __len__(self):
        return len(self.onset)

    def select(self, mask):
        return Notes(self.onset[mask], self.release[mask], self.pitch[mask], self.velocity[mask])


def read_notes(path, track_name=None):
    """Notes of a MIDI file (all tracks, or only the track named TRACK_NAME), in seconds, with the
    file's tempo map.  A note-on of a sounding pitch ends it there (as the codec does)."""
    import mido
    try:
        mid = mido.MidiFile(path)
    except Exception as e:  # mido raises many kinds on a bad file
        raise BenchError(f"{path}: cannot read MIDI file: {e}")
    tracks = mid.tracks
    if track_name is not None:
        names = [next((m.name for m in t if m.type == "track_name"), None) for t in mid.tracks]
        if track_name not in names:
            raise BenchError(f"{path}: no track named '{track_name}' (tracks: {names})")
        tracks = [mid.tracks[names.index(track_name)]]
    tempos, events = [(0, 500000)], []
    for ti, tr in enumerate(mid.tracks):
        tick = 0
        for msg in tr:
            tick += msg.time
            if msg.type == "set_tempo":
                tempos.append((tick, msg.tempo))
            elif msg.type in ("note_on", "note_off") and any(tr is x for x in tracks):
                on = msg.type == "note_on" and msg.velocity > 0
                events.append((tick, ti, on, msg.note, msg.velocity))
    tempos.sort(key=lambda x: x[0])
    events.sort(key=lambda e: (e[0], e[2]))      # stable: file order within a tick, offs first

    def seconds(tick):
        s, last_tick, tempo = 0.0, 0, 500000
        for t, tp in tempos:
            if t >= tick:
                break
            s += (t - last_tick) * tempo / (1e6 * mid.ticks_per_beat)
            last_tick, tempo = t, tp
        return round(s + (tick - last_tick) * tempo / (1e6 * mid.ticks_per_beat), 4)

    on, rel, pit, vel = [], [], [], []
    sounding = {}
    t = 0.0
    for tick, _, is_on, note, velocity in events:
        t = seconds(tick)
        if note in sounding:
            o, v = sounding.pop(note)
            if t > o:
                on.append(o), rel.append(t), pit.append(note), vel.append(v)
        if is_on:
            sounding[note] = (t, velocity)
    for p, (o, v) in sounding.items():   # never released: end at the last event
        if t > o:
            on.append(o), rel.append(t), pit.append(p), vel.append(v)
    n = Notes(on, rel, pit, vel)
    return n.select(np.lexsort((n.pitch, n.onset))) if len(n) else n


def write_notes(path, notes):
    """A one-track MIDI file of NOTES (1 tick = 1 ms, channel 1, no pedal)."""
    import mido
    mid = mido.MidiFile(ticks_per_beat=500)
    tr = mido.MidiTrack()
    mid.tracks.append(tr)
    tr.append(mido.MetaMessage("set_tempo", tempo=500000, time=0))
    ev = []
    for o, r, p, v in zip(notes.onset, notes.release, notes.pitch, notes.velocity):
        ev.append((int(round(o * 1000)), 1, int(p), int(v)))
        ev.append((int(round(r * 1000)), 0, int(p), 0))
    ev.sort()                            # offs before ons at one time
    now = 0
    for t, is_on, p, v in ev:
        tr.append(mido.Message("note_on" if is_on else "note_off", note=p, velocity=v, time=t - now))
        now = t
    mid.save(path)


# ---------------------------------------------------------------- measures

def measure(notes, start, seconds, primer, note_cap, max_held, scale=None):
    """The measures (module docstring) of the notes starting in [START, START+SECONDS); SCALE:
    the pitch classes in_key counts (None: in_key is NaN)."""
    end = start + seconds
    w = notes.select((notes.onset >= start - 1e-9) & (notes.onset < end - 1e-9))
    n = len(w)
    rel = np.minimum(w.release, end)
    length = rel - w.onset
    out = {"notes": n, "nps": n / seconds, "poly": float(length.sum()) / seconds}
    # sounding-note count per millisecond of the window (times are on 10 ms steps)
    ms = int(round(seconds * 1000))
    diff = np.zeros(ms + 1, dtype=np.int64)
    a = np.clip(np.round((w.onset - start) * 1000).astype(np.int64), 0, ms)
    b = np.clip(np.round((rel - start) * 1000).astype(np.int64), 0, ms)
    np.add.at(diff, a, 1)
    np.add.at(diff, b, -1)
    count = np.cumsum(diff)[:ms]
    out["silence"] = float(np.mean(count == 0))
    out["full"] = float(np.mean(count >= max_held)) if max_held > 0 else math.nan   # 0: no cap
    out["vel"] = float(w.velocity.mean()) if n else math.nan
    out["vel_sd"] = float(w.velocity.std()) if n else math.nan
    out["pc"] = pc_overlap(pc_profile(w.pitch, length), pc_profile(primer.pitch, primer.release - primer.onset))
    out["top"] = float(np.bincount(w.pitch).max() / n) if n else math.nan
    q = np.percentile(length, [25, 50, 75]) if n else [math.nan] * 3
    out["len25"], out["len50"], out["len75"] = (float(x) for x in q)
    early = w.onset < end - note_cap - 1e-9
    full_len = w.release - w.onset
    out["capped"] = float(np.mean(full_len[early] >= note_cap - 0.0015)) if early.any() else math.nan
    out["pitch"] = float(w.pitch.mean()) if n else math.nan
    out["in_key"] = in_key_share(w.pitch, scale)
    out["motif"] = motif_share(w, primer)
    out["ts_entropy"] = onset_entropy(w.onset)
    out["pitch_entropy"] = pitch_entropy(w.pitch)
    return out


def pc_profile(pitch, weight):
    """Duration-weighted pitch-class histogram summing to 1 (all zeros when empty)."""
    h = np.bincount(np.asarray(pitch, dtype=int) % 12, weights=np.asarray(weight, dtype=float), minlength=12)
    s = h.sum()
    return h / s if s > 0 else h


def pc_overlap(a, b):
    return float(np.minimum(a, b).sum())


def in_key_share(pitch, scale):
    """Share of the note-ons whose pitch class is in SCALE (NaN without a scale or a note)."""
    if scale is None or len(pitch) == 0:
        return math.nan
    return float(np.isin(np.asarray(pitch) % 12, sorted(scale)).mean())


def interval_patterns(notes):
    """The pitch-interval triples of each 4 consecutive notes, sorted by onset then pitch."""
    p = notes.pitch[np.lexsort((notes.pitch, notes.onset))]
    d = np.diff(p)
    return [tuple(int(x) for x in d[i:i + 3]) for i in range(len(d) - 2)]


def motif_share(window, primer):
    """Share of the window's 4-note interval patterns that also occur in the primer (NaN when
    either has fewer than 4 notes)."""
    pats, known = interval_patterns(window), set(interval_patterns(primer))
    if not pats or not known:
        return math.nan
    return sum(t in known for t in pats) / len(pats)


def pitch_entropy(pitch):
    """Entropy in bits of the note-ons' pitches (each MIDI number a value).  NaN without notes."""
    p = np.asarray(pitch, dtype=np.int64)
    if len(p) == 0:
        return math.nan
    q = np.bincount(p) / len(p)
    q = q[q > 0]
    return float((q * np.log2(1 / q)).sum())


def onset_entropy(onset, step=0.01, cap=100):
    """Entropy in bits of the inter-onset intervals (sorted onsets), each in whole STEPs (10 ms,
    rounded) capped at CAP steps; a chord's notes give 0-step intervals.  NaN under 2 notes."""
    o = np.sort(np.asarray(onset, dtype=float))
    if len(o) < 2:
        return math.nan
    steps = np.minimum(np.floor(np.diff(o) / step + 0.5), cap).astype(np.int64)
    p = np.bincount(steps) / len(steps)
    p = p[p > 0]
    return float((p * np.log2(1 / p)).sum())


# ---------------------------------------------------------------- scales

TONICS = {"C": 0, "D": 2, "E": 4, "F": 5, "G": 7, "A": 9, "B": 11}
MAJOR = (0, 2, 4, 5, 7, 9, 11)
# The church modes as rotations of the major scale (the degree each starts on), and their aliases.
MODES = {name: k for k, name in enumerate(("ionian", "dorian", "phrygian", "lydian", "mixolydian",
                                            "aeolian", "locrian"))}
MODES.update(major=0, minor=5)
HARMONIC_MINOR = (0, 2, 3, 5, 7, 8, 11)


def parse_scale(text):
    """'C major', 'F# dorian', 'Bb harmonic minor' -> the frozenset of its pitch classes (0 = C).
    Tonic: a letter A..G with any # or b; mode: a church mode (ionian = major, aeolian = minor) or
    harmonic minor.  Raises ValueError naming what is wrong."""
    words = text.split()
    if len(words) < 2:
        raise ValueError(f"'{text}': a scale is a tonic and a mode ('C major', 'A harmonic minor')")
    tonic, mode = words[0], " ".join(words[1:]).lower()
    letter, acc = tonic[:1].upper(), tonic[1:]
    if letter not in TONICS or acc.strip("#b"):
        raise ValueError(f"'{text}': the tonic '{tonic}' is not a letter A..G with # or b")
    root = TONICS[letter] + acc.count("#") - acc.count("b")
    if mode in ("harmonic minor", "harmonic-minor", "harmonic_minor"):
        steps = HARMONIC_MINOR
    elif mode in MODES:
        k = MODES[mode]
        steps = [(x - MAJOR[k]) % 12 for x in MAJOR]
    else:
        raise ValueError(f"'{text}': unknown mode '{mode}' (one of {', '.join(MODES)}, harmonic minor)")
    return frozenset((root + x) % 12 for x in steps)


# ---------------------------------------------------------------- the split

def read_split(path, split):
    """[(composer, title, midi path)] of the first performance of each piece of SPLIT, in file order."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as e:
        raise BenchError(f"{path}: cannot read split file: {e.strerror}")
    if not lines:
        raise BenchError(f"{path}: empty split file")
    head = lines[0].split("\t")
    need = ("split", "composer", "title", "file")
    if any(c not in head for c in need):
        raise BenchError(f"{path}:1: the header needs the columns {' '.join(need)} (has {' '.join(head)})")
    col = {c: head.index(c) for c in need}
    root = os.path.dirname(os.path.abspath(path))
    pieces, seen = [], set()
    for i, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        f = line.split("\t")
        if len(f) < len(head):
            raise BenchError(f"{path}:{i}: {len(f)} columns, the header has {len(head)}")
        if f[col["split"]] != split:
            continue
        key = (f[col["composer"]], f[col["title"]])
        if key in seen:
            continue
        seen.add(key)
        midi = os.path.join(root, f[col["file"]])
        if not os.path.isfile(midi):
            raise BenchError(f"{path}:{i}: {midi}: no such file")
        pieces.append((key[0], key[1], midi))
    if not pieces:
        raise BenchError(f"{path}: no rows of split '{split}'")
    return pieces


# ---------------------------------------------------------------- running continuo

def run_continuo(continuo, args, what):
    try:
        r = subprocess.run([continuo, *args], capture_output=True, text=True)
    except OSError as e:
        raise BenchError(f"{continuo}: cannot run: {e.strerror}")
    if r.returncode != 0:
        err = (r.stderr.strip() or r.stdout.strip()).splitlines()
        raise BenchError(f"{what}: continuo {args[0]} failed (exit {r.returncode}): "
                         + (err[0].strip() if err else "no message"))
    return r.stdout


def codec_notes(continuo, midi, work):
    """The performance as the model sees it: encoded and decoded by the C codec (pedal folded,
    10 ms steps, velocity bins), no note-length cap."""
    base = os.path.join(work, re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.relpath(midi, "/")))
    tok, dec = base + ".tok", base + ".codec.mid"
    run_continuo(continuo, ["encode", "-q", midi, "-o", tok], midi)
    run_continuo(continuo, ["decode", "-q", tok, "-o", dec, "--max-note-seconds", "86400"], midi)
    return read_notes(dec)


def cut_primer(notes, cut):
    """The notes starting before CUT, those still sounding ended there."""
    p = notes.select(notes.onset < cut - 1e-9)
    return Notes(p.onset, np.minimum(p.release, cut), p.pitch, p.velocity)


class Piece:
    """One piece: its real performance (codec notes), the primer written for `continue`."""

    def __init__(self, index, composer, title, midi):
        self.index, self.composer, self.title, self.midi = index, composer, title, midi
        self.notes = self.primer = self.primer_path = None
        self.primer_end = None
        self.real = None


def prepare_piece(piece, a, work):
    piece.notes = codec_notes(a.continuo, piece.midi, work)
    if len(piece.notes) == 0:
        raise BenchError(f"{piece.midi}: no notes")
    last = float(piece.notes.release.max())
    if last < a.primer_seconds + a.seconds:
        raise BenchError(f"{piece.midi}: {last:.1f} s long, shorter than the primer and the continuation "
                         f"({a.primer_seconds:g} + {a.seconds:g} s)")
    piece.primer = cut_primer(piece.notes, a.primer_seconds)
    if len(piece.primer) == 0:
        raise BenchError(f"{piece.midi}: no note in the first {a.primer_seconds:g} s (the primer)")
    piece.primer_end = float(piece.primer.release.max())
    piece.primer_path = os.path.join(work, f"piece{piece.index:03d}.primer.mid")
    write_notes(piece.primer_path, piece.primer)
    piece.real = measure(piece.notes, a.primer_seconds, a.seconds, piece.primer, a.note_cap, a.max_held_eff,
                         a.scale)


def piece_seed(a, piece, sample):
    return a.seed + piece.index + 1000 * sample


def continue_piece(piece, a, settings, tag, work):
    """Continues the piece's primer --samples times; returns (measures, the first continuation's
    notes): each measure the mean over the samples (of those where it is defined)."""
    runs = [continue_once(piece, a, settings, tag + (f".{j}" if j else ""), piece_seed(a, piece, j),
                          work)
            for j in range(a.samples)]
    if a.samples == 1:
        return runs[0]
    mean = {}
    for key in runs[0][0]:
        vals = np.array([r[0][key] for r in runs], dtype=float)
        mean[key] = float(np.mean(vals[np.isfinite(vals)])) if np.isfinite(vals).any() else math.nan
    return mean, runs[0][1]


def continue_once(piece, a, settings, tag, seed, work):
    """Runs `continuo continue` on the piece's primer; returns (measures, continuation notes)."""
    out = os.path.join(work, f"piece{piece.index:03d}.{tag}.mid")
    args = ["continue", piece.primer_path, "-o", out, "--model", a.model, "--seconds", f"{a.seconds:g}",
            "--seed", str(seed), "--threads", str(a.threads), "--max-note-ms", f"{round(a.note_cap * 1000)}"]
    for k, v in settings.items():
        args += option_args(k, v)
    args += a.continue_args_list
    stdout = run_continuo(a.continuo, args, f"{piece.midi} (primer {piece.primer_path})")
    m = re.search(r"from ([0-9.]+) s", stdout)
    if m and abs(float(m.group(1)) - piece.primer_end) > 0.006:
        raise BenchError(f"{out}: continue says the continuation starts at {m.group(1)} s, "
                         f"the primer ends at {piece.primer_end:.3f} s")
    cont = read_notes(out, "continuation")
    res = measure(cont, piece.primer_end, a.seconds, piece.primer, a.note_cap,
                  settings.get("max_held", a.max_held_eff), a.scale)
    return res, cont


# ---------------------------------------------------------------- output

def fmt(key, x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return dict((k, f) for k, _, f in MEASURES)[key].format(x)


def shown_measures(a):
    """The measures printed: in_key only with a --scale-key."""
    return [m for m in MEASURES if m[0] != "in_key" or a.scale is not None]


def piece_line(piece, model, shown):
    cols = [f"{piece.index + 1:>2} {piece.title[:28]:<28}"]
    for key, label, _ in shown:
        cols.append(f"{label} {fmt(key, model[key])}/{fmt(key, piece.real[key])}")
    return "  ".join(cols)


def summarize(pieces, models):
    """Per measure: mean real, mean model, mean of the per-piece ratios model/real (and over how
    many pieces), mean model - real."""
    out = {}
    for key, _, _ in MEASURES:
        r = np.array([p.real[key] for p in pieces], dtype=float)
        m = np.array([x[key] for x in models], dtype=float)
        ok = np.isfinite(r) & np.isfinite(m)
        rat = ok & (r != 0)
        out[key] = {
            "real": float(np.mean(r[ok])) if ok.any() else math.nan,
            "model": float(np.mean(m[ok])) if ok.any() else math.nan,
            "ratio": float(np.mean(m[rat] / r[rat])) if rat.any() else math.nan,
            "ratio_pieces": int(rat.sum()),
            "ratio_of_means": float(np.mean(m[ok]) / np.mean(r[ok])) if ok.any() and np.mean(r[ok]) else math.nan,
            "diff": float(np.mean(m[ok] - r[ok])) if ok.any() else math.nan,
        }
    return out


def absolute_means(figures):
    """Per measure, the mean over the pieces where it is defined (NaN where it never is)."""
    out = {}
    for key, _, _ in MEASURES:
        v = np.array([f[key] for f in figures], dtype=float)
        out[key] = float(np.mean(v[np.isfinite(v)])) if np.isfinite(v).any() else math.nan
    return out


def print_summary(summ, n, shown):
    print(f"\nmean over {n} pieces      real      model   model/real (pieces)  ratio of means   model-real")
    for key, label, _ in shown:
        s = summ[key]
        ratio = "-" if math.isnan(s["ratio"]) else f"{s['ratio']:.3f}"
        rom = "-" if math.isnan(s["ratio_of_means"]) else f"{s['ratio_of_means']:.3f}"
        print(f"  {label:<12} {fmt(key, s['real']):>10} {fmt(key, s['model']):>10} {ratio:>10} ({s['ratio_pieces']:>2})"
              f" {rom:>15} {s['diff']:>+12.4f}")


def verdict(summ):
    """The issue's bar: notes/s and polyphony ratios within 0.85..1.15, pc overlap >= real - 0.05."""
    ok = all(0.85 <= summ[k]["ratio"] <= 1.15 for k in ("nps", "poly")) and summ["pc"]["diff"] >= -0.05
    return "pass" if ok else "fail"


def plot(path, pieces, conts, a):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    if not pieces:
        raise BenchError(f"{path}: no piece to draw")
    fig, axes = plt.subplots(2 * len(pieces), 1, figsize=(12, 4.4 * len(pieces)), squeeze=False)
    end = a.primer_seconds + a.seconds
    for i, (piece, cont) in enumerate(zip(pieces, conts)):
        real = piece.notes.select((piece.notes.onset >= a.primer_seconds) & (piece.notes.onset < end))
        model = cont.select(cont.onset < piece.primer_end + a.seconds)
        lo = min(x.pitch.min() for x in (piece.primer, real, model) if len(x)) - 2
        hi = max(x.pitch.max() for x in (piece.primer, real, model) if len(x)) + 2
        for row, (notes, colour, who) in enumerate(((model, "#ff7f0e", "model"), (real, "#2ca02c", "pianist"))):
            ax = axes[2 * i + row][0]
            for nt, c in ((piece.primer, "#1f77b4"), (notes, colour)):
                if not len(nt):
                    continue
                rel = np.minimum(nt.release, end)
                boxes = [[(o, p - 0.4), (r, p - 0.4), (r, p + 0.4), (o, p + 0.4)]
                         for o, r, p in zip(nt.onset, rel, nt.pitch)]
                alpha = 0.35 + 0.65 * nt.velocity / 127.0
                ax.add_collection(PolyCollection(boxes, facecolors=[(*matplotlib.colors.to_rgb(c), al)
                                                                   for al in alpha], edgecolors="none"))
            ax.axvline(a.primer_seconds, color="0.4", lw=0.8, ls="--")
            ax.set_xlim(0, end)
            ax.set_ylim(lo, hi)
            ax.set_ylabel("pitch")
            ax.set_title(f"{piece.composer} {piece.title}: primer (blue) and "
                         + ("the model's continuation (orange)" if row == 0 else "the pianist's next "
                            f"{a.seconds:g} s (green)"), fontsize=9, loc="left")
            if row == 1:
                ax.set_xlabel("seconds")
    fig.suptitle(f"{os.path.basename(a.model)}: {settings_text(a.base)}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.25 / (4.4 * len(pieces))))
    try:
        fig.savefig(path, dpi=90)
    except OSError as e:
        raise BenchError(f"{path}: cannot write the picture: {e.strerror}")
    plt.close(fig)


def settings_text(s):
    return " ".join(f"{k}={value_text(v)}" for k, v in s.items()) or "continue's defaults"


# ---------------------------------------------------------------- main

def flag_value(text):
    """A flag's value in --sweep: yes passes it, no omits it."""
    if text not in ("yes", "no"):
        raise ValueError(text)
    return text == "yes"


# What each parse function takes, for the messages.
VALUE_WHAT = {float: "number", int: "whole number", velocity_value: "velocity (auto or 1..127)",
              key_value: "key", flag_value: "yes/no", score_value: "candidate score (" + ", ".join(SCORES) + ")"}


def arg_type(parse):
    """PARSE as an argparse type: its ValueError becomes a message saying what was expected."""
    def take(text):
        try:
            return parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a {VALUE_WHAT[parse]}: '{text}'")
    return take


def parse_sweep(items):
    """['temperature=0.9,1.0', 'key=C major,auto', 'key_lock=no,yes', ...] -> {key: [values]}."""
    out = {}
    for it in items:
        k, sep, vals = it.partition("=")
        k = k.replace("-", "_")
        if not sep or k not in CONTINUE_OPTIONS or not vals:
            raise ValueError(f"--sweep takes KEY=V1,V2,... with KEY one of {', '.join(CONTINUE_OPTIONS)} ('{it}')")
        parse = CONTINUE_OPTIONS[k][1] or flag_value
        what = VALUE_WHAT[parse]
        try:
            out[k] = [parse(v.strip()) for v in vals.split(",")]
        except ValueError:
            raise ValueError(f"--sweep {k}: not a list of {what} values ('{vals}')")
    return out


def scale_arg(text):
    try:
        parse_scale(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))
    return text


def default_continuo():
    if os.environ.get("CONTINUO"):
        return os.environ["CONTINUO"]
    built = os.path.join(ROOT, "build", "continuo")
    return built if os.path.exists(built) else "continuo"


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="realism.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Realism benchmark: the model's continuations of real piano openings against "
                    "the pianist's, one line per piece (model/real) and the means.",
        epilog="Measures and their definitions: docs/REALISM.md and this file's docstring.")
    ap.add_argument("--model", required=True, help="model file (.gguf)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--split-file", help="split.tsv with columns split composer title file "
                     "(file relative to the split file's folder)")
    src.add_argument("--midi", nargs="+", metavar="FILE.mid", help="performances to use instead of a split, "
                     "each file a piece")
    ap.add_argument("--split", default="valid", help="which split (default valid)")
    ap.add_argument("--continuo", default=default_continuo(),
                    help="the continuo program (default: $CONTINUO, else build/continuo, else on PATH)")
    for flag, parse, text in CONTINUE_OPTIONS.values():
        if parse is None:
            ap.add_argument(flag, action="store_const", const=True, help=f"passed to continue ({text})")
        else:
            meta = {float: "X", int: "N", velocity_value: "auto|V", key_value: "KEY", score_value: "SCORE"}[parse]
            ap.add_argument(flag, type=arg_type(parse), metavar=meta, help=f"passed to continue ({text})")
    ap.add_argument("--sweep", nargs="+", metavar="KEY=V1,V2",
                    help=f"run every combination (keys: {' '.join(CONTINUE_OPTIONS)}; key_lock=no,yes) and print "
                         "one line per combination")
    ap.add_argument("--scale-key", metavar="'TONIC MODE'", type=scale_arg,
                    help="the scale in_key counts, e.g. 'C major', 'F# dorian', 'Bb harmonic minor' "
                         "(default: none, in_key not measured)")
    ap.add_argument("--continue-args", default="", metavar="'ARGS'",
                    help="more options for every continue, as one string: --continue-args='--memory window'")
    ap.add_argument("--primer-seconds", type=float, default=10.0, help="primer length (default 10)")
    ap.add_argument("--seconds", type=float, default=20.0, help="continuation length (default 20)")
    ap.add_argument("--pieces", type=int, help="only the first N pieces of the split")
    ap.add_argument("--seed", type=int, default=1, help="piece k (from 0) is continued with seed SEED+k "
                    "(default 1; sample j: SEED+k+1000j), the same for every setting of a sweep")
    ap.add_argument("--samples", type=int, default=1, help="continuations per piece, measures averaged "
                    "(default 1; more makes small differences between settings visible)")
    ap.add_argument("--note-cap", type=float, default=CONTINUE_NOTE_CAP_S,
                    help=f"continue's note-length cap in seconds, passed as --max-note-ms (default {CONTINUE_NOTE_CAP_S:g}, PLAY_MAX_NOTE_MS)")
    ap.add_argument("--plot", metavar="OUT.png", help="piano rolls of a few pieces: the model's continuation "
                    "above the pianist's (for a sweep: of its first setting)")
    ap.add_argument("--plot-pieces", type=int, default=4, help="how many pieces --plot draws (default 4)")
    ap.add_argument("--json", metavar="OUT.json", help="every figure, per piece and the means")
    ap.add_argument("--jobs", type=int, default=1, help="pieces run at once (default 1)")
    ap.add_argument("--threads", type=int, default=1, help="threads of each continue (default 1)")
    ap.add_argument("--work-dir", help="keep primers and continuations here (default: a temporary folder)")
    a = ap.parse_args(argv)
    try:
        a.sweep_grid = parse_sweep(a.sweep) if a.sweep else None
    except ValueError as e:
        ap.error(str(e))
    try:
        a.continue_args_list = shlex.split(a.continue_args)
    except ValueError as e:
        ap.error(f"--continue-args: {e}")
    a.scale = parse_scale(a.scale_key) if a.scale_key else None
    a.base = {k: getattr(a, k) for k in CONTINUE_OPTIONS if getattr(a, k) is not None}
    if a.sweep_grid:
        clash = set(a.sweep_grid) & set(a.base)
        if clash:
            ap.error(f"--sweep and --{sorted(clash)[0].replace('_', '-')} both set {sorted(clash)[0]}")
    a.max_held_eff = a.max_held if a.max_held is not None else CONTINUE_MAX_HELD
    if a.primer_seconds <= 0 or a.seconds <= 0 or a.note_cap <= 0:
        ap.error("--primer-seconds, --seconds and --note-cap must be positive")
    if a.pieces is not None and a.pieces < 1 or a.jobs < 1 or a.threads < 1 or a.plot_pieces < 1 or a.samples < 1:
        ap.error("--pieces, --jobs, --threads, --samples and --plot-pieces must be at least 1")
    if a.plot and not a.plot.endswith(".png"):
        ap.error("--plot writes a PNG: give a file name ending in .png")
    if not os.path.isfile(a.model):
        ap.error(f"{a.model}: no such model file")
    return a


def run_all(a, work):
    if a.midi:
        for f in a.midi:
            if not os.path.isfile(f):
                raise BenchError(f"{f}: no such file")
        found = [("", os.path.splitext(os.path.basename(f))[0], f) for f in a.midi]
    else:
        found = read_split(a.split_file, a.split)
    pieces = [Piece(i, c, t, f) for i, (c, t, f) in enumerate(found)]
    if a.pieces:
        pieces = pieces[:a.pieces]
    n = len(pieces)
    settings_list = [a.base]
    if a.sweep_grid:
        keys = list(a.sweep_grid)
        settings_list = [dict(a.base, **dict(zip(keys, combo)))
                         for combo in itertools.product(*(a.sweep_grid[k] for k in keys))]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs)
    t0 = time.monotonic()

    def each(fn, what):
        futs = [pool.submit(fn, p) for p in pieces]
        res = []
        for k, (p, f) in enumerate(zip(pieces, futs), 1):
            res.append(f.result())
            print(f"realism: {what} piece {k}/{n} {p.composer} {p.title} ({time.monotonic() - t0:.0f} s)",
                  file=sys.stderr, flush=True)
        return res

    try:
        each(lambda p: prepare_piece(p, a, work), "real")
        runs = []
        for si, settings in enumerate(settings_list):
            tag = f"s{si:02d}"
            what = f"setting {si + 1}/{len(settings_list)} ({settings_text(settings)})" if a.sweep_grid else "model"
            res = each(lambda p: continue_piece(p, a, settings, tag, work), what)
            models = [r[0] for r in res]
            runs.append({"settings": settings, "models": models, "conts": [r[1] for r in res],
                         "summary": summarize(pieces, models), "means": absolute_means(models)})
    finally:
        pool.shutdown(cancel_futures=True)   # on an error, the pieces not started are dropped
    return pieces, runs


def print_sweep(a, pieces, runs, shown):
    """One line per setting against the pianist (ratios, diffs), then one line per setting of the
    model's absolute means of every measure, under the pianist's: settings compared with each other."""
    print(f"realism sweep: {a.model}, {source_text(a)}, {len(pieces)} pieces, "
          f"{a.primer_seconds:g} s primers, {a.seconds:g} s continuations; ratios are model/real, "
          "diffs model-real" + (f"; in_key of {a.scale_key}" if a.scale else ""))
    keys = list(a.sweep_grid) + [k for k in a.base if k not in a.sweep_grid]
    width = {k: max([12, len(k) + 2] + [len(value_text(r["settings"][k])) + 2 for r in runs]) for k in keys}

    def setting_cols(s):
        return "".join(f"{value_text(s[k]):>{width[k]}}" for k in keys)
    head = "".join(f"{k:>{width[k]}}" for k in keys)
    print(f"{head}  notes/s  poly   pc diff  silence diff  vel ratio  len50 ratio  pitch diff  capped  full  bar")
    for r in runs:
        summ = r["summary"]
        print(f"{setting_cols(r['settings'])}  {summ['nps']['ratio']:7.3f} {summ['poly']['ratio']:5.3f}"
              f" {summ['pc']['diff']:+9.3f} {summ['silence']['diff']:+13.3f} {summ['vel']['ratio']:10.3f}"
              f" {summ['len50']['ratio']:12.3f} {summ['pitch']['diff']:+11.2f} {summ['capped']['model']:7.3f}"
              f" {summ['full']['model']:5.3f}  {verdict(summ)}")
    colw = {key: max(len(label), 6) + 2 for key, label, _ in shown}
    print("\nmeans over the pieces (absolute), the pianist's first, then the model's per setting")
    print(head + "".join(f"{label:>{colw[key]}}" for key, label, _ in shown))
    real = absolute_means([p.real for p in pieces])
    rows = [(f"{'pianist':>{sum(width.values())}}", real)] + [(setting_cols(r["settings"]), r["means"]) for r in runs]
    for cols, means in rows:
        print(cols + "".join(f"{fmt(key, means[key]):>{colw[key]}}" for key, _, _ in shown))


def source_text(a):
    return f"{len(a.midi)} MIDI files" if a.midi else f"split {a.split} of {a.split_file}"


def report(a, pieces, runs):
    first, shown = runs[0], shown_measures(a)
    if not a.sweep_grid:
        print(f"realism: {a.model}, {source_text(a)}, {len(pieces)} pieces, "
              f"{a.primer_seconds:g} s primers, {a.seconds:g} s continuations, {settings_text(a.base)}"
              + (f", in_key of {a.scale_key}" if a.scale else ""))
        print("each figure: model/real")
        for p, m in zip(pieces, first["models"]):
            print(piece_line(p, m, shown))
        print_summary(first["summary"], len(pieces), shown)
        print(f"\nissue 10's bar (notes/s and poly ratios 0.85..1.15, pc >= real - 0.05): "
              f"{verdict(first['summary'])}")
    else:
        print_sweep(a, pieces, runs, shown)
    if a.plot:
        k = min(a.plot_pieces, len(pieces))
        idx = sorted({round(i * (len(pieces) - 1) / max(k - 1, 1)) for i in range(k)})
        plot(a.plot, [pieces[i] for i in idx], [first["conts"][i] for i in idx], a)
        print(f"piano rolls: {a.plot}")
    if a.json:
        doc = {
            "model": a.model, "split_file": a.split_file, "split": None if a.midi else a.split, "midi": a.midi,
            "continuo": a.continuo,
            "continue_args": a.continue_args_list,
            "primer_seconds": a.primer_seconds, "seconds": a.seconds, "seed": a.seed, "samples": a.samples,
            "note_cap": a.note_cap, "scale_key": a.scale_key,
            "real_means": absolute_means([p.real for p in pieces]),
            "pieces": [{"index": p.index, "composer": p.composer, "title": p.title, "file": p.midi,
                        "seeds": [piece_seed(a, p, j) for j in range(a.samples)],
                        "primer_notes": len(p.primer), "primer_end": p.primer_end,
                        "real": p.real} for p in pieces],
            "runs": [{"settings": r["settings"], "model": r["models"], "summary": r["summary"],
                      "means": r["means"], "bar": verdict(r["summary"])} for r in runs],
        }
        text = json.dumps(doc, indent=1, allow_nan=True).replace("NaN", "null")
        try:
            with open(a.json, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        except OSError as e:
            raise BenchError(f"{a.json}: cannot write: {e.strerror}")


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if a.work_dir:
            os.makedirs(a.work_dir, exist_ok=True)
            pieces, runs = run_all(a, a.work_dir)
        else:
            with tempfile.TemporaryDirectory(prefix="realism-") as work:
                pieces, runs = run_all(a, work)
        report(a, pieces, runs)
    except BenchError as e:
        print(f"realism: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

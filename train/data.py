"""data.py: training data: token files from `continuo encode`, augmentation, random crops.

The C codec is the one source of truth for events: MIDI files are turned into
token files by running `continuo encode`, once per time-stretch factor, and the
results are cached under the run's output folder. Transposition is applied here,
on events, by shifting NOTE_ON/NOTE_OFF ids inside the vocabulary layout.

Crops are a pure function of (seed, step): batch(step) draws the same global
batch whatever the number of processes, and rank r of W takes rows r::W. So
the data position of a run is just its step number (exact resume), and every
rank sees a different shard of each global batch.
"""

import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

try:
    from . import tokfile
except ImportError:                      # run as a script from train/
    import tokfile

STRETCHES = (0.95, 0.975, 1.0, 1.025, 1.05)


class Layout:
    """A vocabulary layout, mirroring src/codec/vocab.h: [PAD, EOS]? NOTE_ON,
    NOTE_OFF, TIME_SHIFT, VELOCITY ranges, in that order."""

    def __init__(self, name, size, has_pad_eos, min_pitch, max_pitch, n_time_shifts=100,
                 n_velocity_bins=32):
        self.name = name
        self.size = size
        self.has_pad_eos = has_pad_eos
        self.min_pitch = min_pitch
        self.max_pitch = max_pitch
        self.n_pitches = max_pitch - min_pitch + 1
        self.note_on_base = 2 if has_pad_eos else 0
        self.note_off_base = self.note_on_base + self.n_pitches
        self.time_shift_base = self.note_off_base + self.n_pitches
        self.velocity_base = self.time_shift_base + n_time_shifts
        assert self.velocity_base + n_velocity_bins == size, name
        self.pad_id = 0 if has_pad_eos else None
        self.eos_id = 1 if has_pad_eos else None


LAYOUTS = {
    "mt310": Layout("mt310", 310, True, 21, 108),
    "prnn388": Layout("prnn388", 388, False, 0, 127),
}


def layout(name: str) -> Layout:
    if name not in LAYOUTS:
        raise ValueError(f"unknown vocabulary {name!r} (known: {', '.join(LAYOUTS)})")
    return LAYOUTS[name]


def transpose(ids: np.ndarray, semitones: int, lay: Layout):
    """IDS shifted by SEMITONES (NOTE_ON and NOTE_OFF only), or None when a
    note would leave the layout's pitch range (the example is dropped)."""
    ids = np.asarray(ids)
    if semitones == 0:
        return ids.copy()
    out = ids.astype(np.int64)
    for base in (lay.note_on_base, lay.note_off_base):
        m = (out >= base) & (out < base + lay.n_pitches)
        if not m.any():
            continue
        p = out[m] - base + semitones
        if p.min() < 0 or p.max() >= lay.n_pitches:
            return None
        out[m] = p + base
    return out.astype(ids.dtype)


def scale_time_shifts(ids: np.ndarray, factor, lay: Layout) -> np.ndarray:
    """IDS with each TIME_SHIFT's steps times FACTOR (a number, or one per
    row: shape (rows, 1)), rounded and kept within 1..the layout's longest
    step; other ids as they were."""
    ids = np.asarray(ids, dtype=np.int64)
    n_ts = lay.velocity_base - lay.time_shift_base
    ts = (ids >= lay.time_shift_base) & (ids < lay.velocity_base)
    steps = np.clip(np.round((ids - lay.time_shift_base + 1) * factor), 1, n_ts).astype(np.int64)
    return np.where(ts, steps - 1 + lay.time_shift_base, ids)


def shift_velocities(ids: np.ndarray, bins, lay: Layout) -> np.ndarray:
    """IDS with each VELOCITY moved by BINS (a number, or one per row: shape
    (rows, 1)), kept within the layout's bins; other ids as they were."""
    ids = np.asarray(ids, dtype=np.int64)
    v = ids >= lay.velocity_base
    moved = np.clip(ids - lay.velocity_base + bins, 0, lay.size - lay.velocity_base - 1) + lay.velocity_base
    return np.where(v, moved, ids)


# ---------------------------------------------------------------------------
# Progress bar (stderr, only on a terminal; a plain line per step otherwise).

class Progress:
    def __init__(self, label: str, total: int, stream=sys.stderr):
        self.label, self.total, self.stream = label, max(total, 1), stream
        self.tty = stream.isatty()
        self.t0 = time.monotonic()
        self.done = 0

    def update(self, done: int, item: str = "") -> None:
        self.done = done
        el = time.monotonic() - self.t0
        if self.tty:
            w = 30
            k = int(w * done / self.total)
            bar = "=" * k + (">" if k < w else "") + " " * max(w - k - 1, 0)
            self.stream.write(f"\r{self.label}  [{bar}]  {done}/{self.total}  {el:.1f} s  {item[:40]:<40}")
        else:
            self.stream.write(f"{self.label}: {done}/{self.total} {item} ({el:.1f} s)\n")
        self.stream.flush()

    def end(self) -> None:
        if self.tty:
            self.stream.write("\r" + " " * 110 + "\r")
            self.stream.flush()


# ---------------------------------------------------------------------------
# Building token files with `continuo encode`.

def _write_atomic(path: str, text: str) -> None:
    """Writes TEXT to PATH through PATH.tmp, so PATH is never half written."""
    with open(path + ".tmp", "w") as fh:
        fh.write(text)
    os.replace(path + ".tmp", path)


def find_continuo(explicit: str = None) -> str:
    """The continuo binary: EXPLICIT, $CONTINUO, build/continuo beside train/, or PATH."""
    cands = [explicit, os.environ.get("CONTINUO")]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cands += [os.path.join(here, "build", "continuo")]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    from shutil import which
    w = which("continuo")
    if w:
        return w
    raise FileNotFoundError("cannot find the continuo binary: pass --continuo PATH or set CONTINUO")


def midi_files(folder: str) -> list:
    """Relative paths of the MIDI files under FOLDER, sorted."""
    out = []
    for d, _, files in os.walk(folder):
        for f in files:
            if f.lower().endswith((".mid", ".midi")):
                out.append(os.path.relpath(os.path.join(d, f), folder))
    return sorted(out)


def make_split_file(folder: str, valid_fraction: float, path: str) -> str:
    """Writes a split.tsv for a plain folder of MIDI files: each file goes to
    valid when a hash of its relative path falls under VALID_FRACTION (so the
    split does not change when files are added)."""
    files = midi_files(folder)
    if not files:
        raise FileNotFoundError(f"{folder}: no .mid or .midi files")
    rows = ["split\tcomposer\ttitle\tfile"]
    n_valid = 0
    for f in files:
        h = int(hashlib.sha1(f.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        split = "valid" if h < valid_fraction else "train"
        n_valid += split == "valid"
        rows.append(f"{split}\t-\t{os.path.splitext(os.path.basename(f))[0]}\t{f}")
    if n_valid == 0 and valid_fraction > 0 and len(files) > 1:
        rows[-1] = "valid" + rows[-1][rows[-1].index("\t"):]   # at least one valid file
    text = "\n".join(rows) + "\n"
    try:
        with open(path) as fh:
            if fh.read() == text:
                return path           # unchanged: keep its date, so the cache holds
    except OSError:
        pass
    _write_atomic(path, text)
    return path


def _file_sig(path: str) -> list:
    st = os.stat(path)
    return [os.path.abspath(path), st.st_size, int(st.st_mtime)]


def encode(continuo: str, root: str, split_file: str, split: str, stretch: float, vocab: str,
           out_path: str, skip_bad: bool = True) -> str:
    """Runs `continuo encode` for one split and stretch factor into OUT_PATH,
    unless OUT_PATH is already there from the same inputs (a .json beside it
    records them)."""
    key = {"continuo": _file_sig(continuo), "root": os.path.abspath(root),
           "split_file": _file_sig(split_file), "split": split, "stretch": stretch,
           "vocab": vocab, "skip_bad": skip_bad}
    meta = out_path + ".json"
    if os.path.exists(out_path) and os.path.exists(meta):
        try:
            with open(meta) as fh:
                if json.load(fh) == key:
                    return out_path
        except (OSError, ValueError):
            pass
    cmd = [continuo, "encode", "-o", out_path, "--vocab", vocab, "--stretch", repr(stretch),
           "--split-file", split_file, "--split", split, "--root", root]
    if skip_bad:
        cmd.append("--skip-bad")
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0 or not os.path.exists(out_path):
        raise RuntimeError(f"continuo encode failed (exit {r.returncode}): {' '.join(cmd)}\n"
                           f"{r.stderr.strip()[-2000:]}")
    _write_atomic(meta, json.dumps(key))
    return out_path


def split_rows(split_file: str) -> dict:
    """Rows per split name in SPLIT_FILE (a split.tsv with a header naming
    at least the columns split and file)."""
    counts = {}
    with open(split_file) as fh:
        header = fh.readline().rstrip("\n").split("\t")
        if "split" not in header or "file" not in header:
            raise ValueError(f"{split_file}:1: the header must name the columns split and file")
        col = header.index("split")
        for line in fh:
            cells = line.rstrip("\n").split("\t")
            if len(cells) > col and cells[col]:
                counts[cells[col]] = counts.get(cells[col], 0) + 1
    return counts


def data_sources(dcfg: dict, cache: str) -> list:
    """The data folders of a config as [(name, root, split_file)]:
      sources: a list of paths, each a split.tsv (its folder is the root), or
               a folder (its split.tsv when it has one, else split by a hash
               of each file's path with valid_fraction);
      split_file (+ root), or folder: one source, as before."""
    srcs = []
    for i, path in enumerate(dcfg.get("sources") or []):
        if os.path.isfile(path):
            srcs.append((path, os.path.dirname(os.path.abspath(path)), path))
        elif os.path.isfile(os.path.join(path, "split.tsv")):
            srcs.append((path, path, os.path.join(path, "split.tsv")))
        elif os.path.isdir(path):
            made = os.path.join(cache, f"split{i}.tsv")
            srcs.append((path, path, make_split_file(path, float(dcfg.get("valid_fraction", 0.1)),
                                                     made)))
        else:
            raise FileNotFoundError(f"data.sources[{i}]: {path}: no such file or folder")
    if dcfg.get("split_file"):
        sf = dcfg["split_file"]
        srcs.append((sf, dcfg.get("root") or os.path.dirname(os.path.abspath(sf)), sf))
    elif dcfg.get("folder"):
        root = dcfg["folder"]
        srcs.append((root, root, make_split_file(root, float(dcfg.get("valid_fraction", 0.1)),
                                                 os.path.join(cache, "split.tsv"))))
    if not srcs:
        raise ValueError("data: give sources, split_file (+ root), folder, "
                         "or train_tokens + valid_tokens")
    return srcs


def build_token_files(dcfg: dict, out_dir: str, continuo: str = None, log=print) -> dict:
    """Token files for a run, from the "data" section of a config:
      train_tokens / valid_tokens: token files from any source (used as they are), or
      sources, split_file (+ root), folder: MIDI folders (data_sources), each
                         encoded per split and stretch factor (cached).
    Every source's train rows are training data; every source's valid rows
    are validation data. Returns {"train": [(stretch, path), ...], "valid": [path, ...]}."""
    if dcfg.get("train_tokens"):
        train = dcfg["train_tokens"]
        train = [train] if isinstance(train, str) else list(train)
        if not dcfg.get("valid_tokens"):
            raise ValueError("data.valid_tokens is needed with data.train_tokens")
        valid = dcfg["valid_tokens"]
        return {"train": [(1.0, p) for p in train],
                "valid": [valid] if isinstance(valid, str) else list(valid)}
    cache = os.path.join(out_dir, "data")
    os.makedirs(cache, exist_ok=True)
    srcs = data_sources(dcfg, cache)
    continuo = find_continuo(continuo or dcfg.get("continuo"))
    vocab = dcfg.get("vocab", "mt310")
    stretches = [float(s) for s in dcfg.get("stretches", STRETCHES)]
    jobs = []          # (source index, split, stretch, out path)
    for i, (name, root, split_file) in enumerate(srcs):
        rows = split_rows(split_file)
        log(f"data source {i}: {name}: {rows.get('train', 0)} train, "
            f"{rows.get('valid', 0)} valid files")
        # One source keeps the plain names of earlier runs (their caches hold).
        prefix = "" if len(srcs) == 1 else f"src{i}_"
        if rows.get("valid"):
            jobs.append((i, "valid", 1.0, os.path.join(cache, f"{prefix}valid_s1.000.tok")))
        if rows.get("train"):
            jobs += [(i, "train", s, os.path.join(cache, f"{prefix}train_s{s:.3f}.tok"))
                     for s in stretches]
    if not any(j[1] == "valid" for j in jobs):
        raise ValueError("data: no source has a valid split (validation needs one)")
    if not any(j[1] == "train" for j in jobs):
        raise ValueError("data: no source has a train split")
    bar = Progress("encoding", len(jobs))
    out = {"train": [], "valid": []}
    # The encodes are independent: run up to `encode_jobs` at once.
    n_par = max(1, int(dcfg.get("encode_jobs", 1)))
    with ThreadPoolExecutor(n_par) as ex:
        futs = [(i, split, s, ex.submit(encode, continuo, srcs[i][1], srcs[i][2], split, s, vocab,
                                        path, bool(dcfg.get("skip_bad", True))))
                for i, split, s, path in jobs]
        for done, (i, split, s, f) in enumerate(futs, 1):
            path = f.result()
            bar.update(done, f"source {i} {split} x{s:.3f}")
            if split == "valid":
                out["valid"].append(path)
            else:
                out["train"].append((s, path))
    bar.end()
    return out


# ---------------------------------------------------------------------------
# Sequences and crops.

class Corpus:
    """All training sequences (each stretch factor's copy counts as its own
    sequence) and a sampler of random crops of context+1 tokens, drawn a
    whole batch at a time with NumPy (a batch of 128 crops of 513 events in
    about a millisecond, so a GPU step does not wait for its data).

    END_SHARE > 0 (a layout with EOS): each sequence ends with EOS, and
    that share of the crops holds a performance's end, EOS in the crop's
    last quarter, so the model learns when the music is over (a uniform
    crop reaches the end about once in len/context draws: almost never).
    After EOS a crop is PAD, masked."""

    def __init__(self, seqs: list, lay: Layout, context: int, transpose_max: int = 3,
                 seed: int = 0, end_share: float = 0.0):
        self.lay = lay
        self.context = context
        self.transpose_max = transpose_max
        self.seed = seed
        if end_share and lay.eos_id is None:
            raise ValueError(f"end_share {end_share}: the layout {lay.name} has no EOS")
        if not 0 <= end_share < 1:
            raise ValueError(f"end_share {end_share}: a share of the crops, 0 <= x < 1")
        self.end_share = float(end_share)
        keep = [np.asarray(s) for s in seqs if len(s) >= 2]
        if end_share:
            keep = [np.append(s, np.asarray(lay.eos_id, dtype=s.dtype)) for s in keep]
        if lay.pad_id is None:          # no PAD to fill short crops with
            keep = [s for s in keep if len(s) >= context + 1]
        if not keep:
            raise ValueError("no training sequence is long enough")
        self.seqs = keep
        lens = np.array([len(s) for s in keep], dtype=np.int64)
        self.n_tokens = int(lens.sum())
        self.p = lens / lens.sum()      # a sequence is drawn in proportion to its length
        self.cdf = np.cumsum(self.p)
        self.lens = lens
        self.starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        # One flat array, with a context of PAD after it: a crop past a short
        # sequence's end is masked to PAD below, never read out of bounds.
        fill = lay.pad_id if lay.pad_id is not None else 0
        self.flat = np.concatenate(keep + [np.full(context + 1, fill, dtype=keep[0].dtype)])

    def _draw(self, rng: np.random.Generator, n: int) -> tuple:
        """N crops: (rows (n, context+1) int64, transposition of each)."""
        L = self.context + 1
        idx = np.minimum(np.searchsorted(self.cdf, rng.random(n), side="right"), len(self.lens) - 1)
        room = np.maximum(self.lens[idx] - L + 1, 1)
        off = (rng.random(n) * room).astype(np.int64)
        if self.end_share:
            # these crops end the performance: EOS (its last id) at row place
            # L-1-back, back uniform in 0 .. L/4 (a crop of a sequence shorter
            # than that starts at its beginning)
            end = rng.random(n) < self.end_share
            back = (rng.random(n) * max(L // 4, 1)).astype(np.int64)
            off = np.where(end, np.maximum(self.lens[idx] - L + back, 0), off)
        pos = self.starts[idx, None] + off[:, None] + np.arange(L)[None, :]
        rows = self.flat[pos].astype(np.int64)
        if self.lay.pad_id is not None:
            rows[np.arange(L)[None, :] >= (self.lens[idx] - off)[:, None]] = self.lay.pad_id
        t = rng.integers(-self.transpose_max, self.transpose_max + 1, n) if self.transpose_max \
            else np.zeros(n, dtype=np.int64)
        return rows, t

    def _transpose(self, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
        """ROWS shifted by T semitones each (NOTE_ON and NOTE_OFF only), in
        place; returns which rows stayed inside the layout's pitch range (the
        rows that did not are left as they were)."""
        lay = self.lay
        ok = np.ones(len(rows), dtype=bool)
        shifted = rows.copy()
        for base in (lay.note_on_base, lay.note_off_base):
            m = (rows >= base) & (rows < base + lay.n_pitches)
            p = np.where(m, rows - base + t[:, None], 0)
            ok &= ~((p < 0) & m).any(axis=1) & ~((p >= lay.n_pitches) & m).any(axis=1)
            shifted = np.where(m, p + base, shifted)
        rows[ok] = shifted[ok]
        return ok

    def batch(self, step: int, batch_size: int, rank: int = 0, world: int = 1) -> np.ndarray:
        """The global batch of STEP (a pure function of seed and step), rows
        rank::world of it: (batch_size // world, context+1) int64. Each crop
        is transposed by a random -T..+T; a crop whose notes would leave the
        pitch range is drawn again (a new piece, place and shift), up to 20
        times, then kept untransposed."""
        rng = np.random.default_rng([self.seed, step])
        out, t = self._draw(rng, batch_size)
        bad = ~self._transpose(out, t)
        for _ in range(19):
            if not bad.any():
                break
            where = np.flatnonzero(bad)
            rows, t = self._draw(rng, len(where))
            ok = self._transpose(rows, t)
            out[where] = rows
            bad[where] = ~ok
        return out[rank::world]


def load_seqs(paths: list, vocab: str) -> tuple:
    """Sequences from token files, checking that they all use VOCAB."""
    seqs, sources = [], []
    for p in paths:
        tf = tokfile.read(p)
        if tf.vocab_name != vocab:
            raise ValueError(f"{p}: vocabulary {tf.vocab_name!r}, the config says {vocab!r}")
        seqs += tf.seqs
        sources += tf.sources
    return seqs, sources


def maestro_split(csv_path: str, out_path: str) -> int:
    """Writes a split.tsv (split, composer, title, file) from MAESTRO's
    maestro-v3.0.0.csv: train -> train, validation -> valid, test -> test.
    Returns the number of rows."""
    import csv
    rows = ["split\tcomposer\ttitle\tfile"]
    names = {"train": "train", "validation": "valid", "test": "test"}
    with open(csv_path, newline="") as fh:
        for r in csv.DictReader(fh):
            clean = lambda s: s.replace("\t", " ").replace("\n", " ")   # noqa: E731
            rows.append("\t".join([names.get(r["split"], r["split"]), clean(r["canonical_composer"]),
                                   clean(r["canonical_title"]), r["midi_filename"]]))
    _write_atomic(out_path, "\n".join(rows) + "\n")
    return len(rows) - 1


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="Training data helpers.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("maestro-split", help="split.tsv from MAESTRO's metadata CSV")
    m.add_argument("csv")
    m.add_argument("out")
    f = sub.add_parser("folder-split", help="split.tsv for a plain folder of MIDI files")
    f.add_argument("folder")
    f.add_argument("out")
    f.add_argument("--valid-fraction", type=float, default=0.1)
    a = ap.parse_args()
    if a.cmd == "maestro-split":
        print(f"{a.out}: {maestro_split(a.csv, a.out)} performances")
    else:
        make_split_file(a.folder, a.valid_fraction, a.out)
        print(f"{a.out}: written")

#!/usr/bin/env python3
"""adapt_replay.py: makes adapt's general music (models/adapt-replay.tok) from the shipped model itself.

  /usr/bin/python3 train/adapt_replay.py -o models/adapt-replay.tok [--count 48] [--seconds 45]

`continuo adapt` keeps the start model's odds on this music while it learns
the player's (the replay KL in train/adapt.py), so the music should be
varied where a player's playing moves the odds: key, pace and loudness.
Each of COUNT primers is the bundled motif (models/motif.mid) transposed by
up to 7 semitones, played 0.6 to 1.6 times as fast and 8 velocity bins
softer to louder (drawn with --seed), and the model continues it for
--seconds with a seed of its own (`continuo continue`, serve's sampling
settings). The primers and their continuations are encoded into one token
file. No licensed data goes in: only the model and the motif.
Make it again when the shipped model changes (docs/TRAINING.md).
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data as data_mod                                   # noqa: E402
import tokfile                                            # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def primer_ids(motif: np.ndarray, lay, rng: random.Random) -> np.ndarray:
    """The motif's ids transposed, its time shifts scaled, its velocities moved, as RNG draws."""
    t = rng.randint(-7, 7)
    scale = rng.choice([0.6, 0.8, 1.0, 1.25, 1.6])
    dv = rng.choice([-8, -4, 0, 4, 8])
    x = data_mod.transpose(motif, t, lay)
    while x is None:                        # out of the piano's range: half as far (0 always fits)
        t = int(t / 2)
        x = data_mod.transpose(motif, t, lay)
    return data_mod.shift_velocities(data_mod.scale_time_shifts(x, scale, lay), dv, lay)


def run(cmd: list) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: {r.stderr.strip()[-400:]}")


def continue_ids(continuo: str, model: str, ids: np.ndarray, seconds: float, seed: int, tmp: str,
                 threads: int = 1, candidates: int = 8, vocab: str = "mt310") -> np.ndarray:
    """The events of IDS (a primer, in the layout VOCAB: the model's) and the
    model's continuation of them for SECONDS (`continuo continue` with SEED,
    serve's sampling settings but CANDIDATES), encoded as `continuo encode`
    encodes in VOCAB; TMP holds the files."""
    txt, mid, out, tok = (os.path.join(tmp, f"c{seed}.{e}") for e in ("txt", "mid", "out.mid", "tok"))
    with open(txt, "w") as fh:
        fh.write(" ".join(map(str, ids.tolist())) + "\n")
    run([continuo, "decode", txt, "--vocab", vocab, "-o", mid])
    run([continuo, "continue", mid, "--model", model, "--seconds", str(seconds), "--seed", str(seed),
         "--threads", str(threads), "--candidates", str(candidates), "-o", out])
    run([continuo, "encode", out, "--vocab", vocab, "-o", tok])
    seqs, _ = data_mod.load_seqs([tok], vocab)
    for f in (txt, mid, out, tok):
        os.unlink(f)
    return np.asarray(seqs[0], dtype=np.int64)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True, help="the token file to write")
    ap.add_argument("--continuo", default=os.path.join(SRC, "build", "continuo"))
    ap.add_argument("--model", default=os.path.join(SRC, "models", "continuo-default.gguf"))
    ap.add_argument("--motif", default=os.path.join(SRC, "models", "motif.mid"))
    ap.add_argument("--count", type=int, default=48)
    ap.add_argument("--seconds", type=float, default=45)
    ap.add_argument("--seed", type=int, default=11, help="draws the primers; continuation k has seed 200 + k")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    with tempfile.TemporaryDirectory(prefix="adapt-replay-") as tmp:
        run([a.continuo, "encode", a.motif, "-o", os.path.join(tmp, "motif.tok")])
        tf = tokfile.read(os.path.join(tmp, "motif.tok"))
        motif, lay = np.asarray(tf.seqs[0], dtype=np.int64), data_mod.layout(tf.vocab_name)
        outs = []
        for k in range(a.count):
            outs.append(continue_ids(a.continuo, a.model, primer_ids(motif, lay, rng), a.seconds, 200 + k, tmp,
                                     vocab=tf.vocab_name))
            sys.stderr.write(f"\radapt_replay: {k + 1} of {a.count} continuations")
            sys.stderr.flush()
        sys.stderr.write("\n")
    tf.seqs, tf.sources = outs, [f"continuation {k} of the motif" for k in range(a.count)]
    tokfile.write(a.out, tf)
    print(f"wrote {a.out}: {a.count} continuations of {a.seconds:g} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

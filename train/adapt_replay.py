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
        seqs, _ = data_mod.load_seqs([os.path.join(tmp, "motif.tok")], "mt310")
        motif, lay = np.asarray(seqs[0], dtype=np.int64), data_mod.layout("mt310")
        outs = []
        for k in range(a.count):
            txt, mid, out = (os.path.join(tmp, f"p{k:03d}.{e}") for e in ("txt", "mid", "out.mid"))
            with open(txt, "w") as fh:
                fh.write(" ".join(map(str, primer_ids(motif, lay, rng).tolist())) + "\n")
            run([a.continuo, "decode", txt, "-o", mid])
            run([a.continuo, "continue", mid, "--model", a.model, "--seconds", str(a.seconds),
                 "--seed", str(200 + k), "--threads", "1", "-o", out])
            outs.append(out)
            sys.stderr.write(f"\radapt_replay: {k + 1} of {a.count} continuations")
            sys.stderr.flush()
        sys.stderr.write("\n")
        run([a.continuo, "encode", *outs, "-o", a.out])
    print(f"wrote {a.out}: {a.count} continuations of {a.seconds:g} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""test_candidates.py: `continue --candidates B`: B continuations decoded side by side in one batch,
each the one `continue --seed S+i` plays alone (the same events, to the id), the one played the best
by the score asked for, and its output the very file the single run writes; with the shipped model
(stream memory, one prefill and --step) and a small model whose window slides inside the batch."""

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from servetest import check, done  # noqa: E402

SRC = os.environ["CONTINUO_SRC"]
CONTINUO = os.environ["CONTINUO"]
MODEL = os.path.join(SRC, "models", "continuo-default.gguf")
MOTIF = os.path.join(SRC, "models", "motif.mid")

CAND = re.compile(r"candidate (\d+) \(seed (\d+)\): (\d+) notes, (\d+) events; likelihood (\S+), "
                  r"nudged (\S+), motif (\S+), pace (\S+), texture (\S+), repeats (\S+), capped (\S+?)( \(played\))?$")
SCORE_OF = {  # the score of each, from the logged measures (likelihood, nudged, motif, pace, texture, repeats, capped)
    "likelihood": lambda v: v[0], "nudged": lambda v: v[1], "motif": lambda v: v[2], "pace": lambda v: v[3],
    "texture": lambda v: v[4],
    "mix": lambda v: v[0] + 2 * v[2] + v[3] + 4 * v[4] - 12 * v[5] - 20 * v[6],   # candidates.c, MIX_*
}
# How far a score may be off for the log's rounding of each measure to 4 decimals.
ROUNDING = {"likelihood": 5e-5, "nudged": 5e-5, "motif": 5e-5, "pace": 5e-5, "texture": 5e-5, "mix": 5e-5 * 40}
STRIDE = 1000000    # candidate i of seed S is seeded S + i x STRIDE (candidates.h)
SUMMARY = re.compile(r"continuation (\d+) notes \((\d+) events.*seed (\d+)")


def run(*args):
    return subprocess.run([CONTINUO, *args], capture_output=True, text=True)


def continue_(out, seed, extra, *more):
    r = run("continue", *extra, "-o", out, "--seed", str(seed), *more)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
    return r


def check_case(d, name, extra, b, score, seed):
    """One --candidates run against B single runs."""
    out = os.path.join(d, f"{name}-{score}.mid")
    r = continue_(out, seed, extra, "--candidates", str(b), "--candidate-score", score)
    check(r.returncode == 0, f"{name}: continue --candidates {b} --candidate-score {score} exits 0")
    if r.returncode != 0:
        return
    cands = [m for m in (CAND.search(line) for line in r.stderr.splitlines()) if m]
    check(len(cands) == b, f"{name}: {b} candidates measured ({len(cands)})")
    played = [int(m.group(1)) for m in cands if m.group(12)]
    check(len(played) == 1, f"{name}: one candidate played ({played})")
    if len(cands) != b or len(played) != 1:
        return
    values = [SCORE_OF[score]([float(m.group(g)) for g in range(5, 12)]) for m in cands]
    # (the log rounds the measures: a near tie may go either way)
    check(values[played[0]] >= max(values) - 2 * ROUNDING[score],
          f"{name}: the one played is the best by {score} ({played[0]}: {values})")
    summary = SUMMARY.search(r.stdout)
    check(summary and int(summary.group(3)) == seed + STRIDE * played[0],
          f"{name}: the summary gives the seed that plays it alone ({r.stdout.strip()})")
    for m in cands:
        i, events = int(m.group(1)), int(m.group(4))
        single = os.path.join(d, f"{name}-single-{i}.mid")
        if not os.path.exists(single):
            s = continue_(single, seed + STRIDE * i, extra, "--candidates", "1")
            check(s.returncode == 0, f"{name}: continue --seed {seed + STRIDE * i} exits 0")
            with open(single + ".txt", "w") as f:
                f.write(s.stdout)
        with open(single + ".txt") as f:
            sm = SUMMARY.search(f.read())
        check(sm and int(sm.group(2)) == events,
              f"{name}: candidate {i} sampled the {events} events seed {seed + STRIDE * i} samples alone "
              f"({sm.group(2) if sm else '?'})")
        if i == played[0]:
            with open(single, "rb") as f1, open(out, "rb") as f2:
                same = f1.read() == f2.read()
            check(same, f"{name}: the file played is the one `continue --seed {seed + STRIDE * i}` writes")


def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        common = [MOTIF, "--model", MODEL, "--seconds", "8"]
        for score in ("likelihood", "motif", "pace", "texture", "mix"):
            check_case(d, "stream", common, 4, score, 11)
        check_case(d, "step", common + ["--step"], 3, "nudged", 40)
        # a small model of context 64: the window slides inside the batch, sequence by sequence
        small = os.path.join(d, "small.gguf")
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "train", "export.py"), "--random", small,
                        "--layers", "2", "--d-model", "64", "--heads", "4", "--d-ff", "128",
                        "--max-rel", "32", "--context", "64", "--scale", "0.1", "--dtype", "f16"],
                       check=True, stdout=subprocess.DEVNULL)
        check_case(d, "window", [MOTIF, "--model", small, "--seconds", "6", "--memory", "window"], 5,
                   "likelihood", 3)
        r = run("continue", MOTIF, "--model", MODEL, "-o", os.path.join(d, "x.mid"), "--candidates", "9")
        check(r.returncode != 0 and "candidates" in r.stderr, f"--candidates 9 is refused: {r.stderr.strip()}")
        r = run("continue", MOTIF, "--model", MODEL, "-o", os.path.join(d, "x.mid"), "--candidate-score", "loud")
        check(r.returncode != 0 and "likelihood" in r.stderr, f"an unknown score is refused: {r.stderr.strip()}")
    return done()


if __name__ == "__main__":
    sys.exit(main())

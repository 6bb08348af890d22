#!/usr/bin/env python3
"""adapt_player.py: issue 40's measurement of `continuo adapt`: simulated players from ASAP's valid split.

  /usr/bin/python3 bench/adapt_player.py [--minutes 10] [--threads 2] [--players Bach,Beethoven,Schubert]

Each player is one composer of the valid split who "plays the same pieces
every day": the pieces of that composer with the most performances (up to
--pieces of them), of which the first --per-piece performances (by file
name) are given to `continuo adapt` as MIDI files and the others are held
out; the composer's piece with the fewest performances outside those is the
held-out piece. `continuo adapt` runs as a user would run it (its own state
folder, --minutes for the whole run, -o to keep the result for measuring
whether adapt keeps it or not), then `continuo eval` scores the shipped
model and the adapted one on three sets, and a table prints them against
the targets:

  same pieces, other performances    at least 6% lower
  other composers (valid split)      at most 1% higher
  held-out piece, same composer      at most 0.5% higher

Only the valid split is read (never train or test). Run it on a quiet
machine: the figures are per the budget, and a busy machine trains less in
it. Extra adapt options (--lr, --kl-weight) pass through with --adapt-args.
Prints numbers; it is a benchmark, not a test.
"""

import argparse
import collections
import csv
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
TARGETS = {"same pieces": -6.0, "other composers": 1.0, "held-out piece": 0.5}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split-file", default=os.path.join(os.environ.get("ASAP_DIR") or
                                                         os.path.join(SRC, "..", "shared", "data", "asap"),
                                                         "split.tsv"))
    ap.add_argument("--continuo", default=os.environ.get("CONTINUO") or os.path.join(SRC, "build", "continuo"))
    ap.add_argument("--model", default=os.path.join(SRC, "models", "continuo-default.gguf"))
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=2, help="PyTorch threads for adapt (2: both cores)")
    ap.add_argument("--players", default="Bach,Beethoven,Schubert")
    ap.add_argument("--pieces", type=int, default=2, help="pieces the player plays every day")
    ap.add_argument("--per-piece", type=int, default=3, help="performances of each given to adapt")
    ap.add_argument("--max-other", type=int, default=0, help="score at most N other composers' files (0: all)")
    ap.add_argument("--adapt-args", default="", help="more options for continuo adapt, e.g. '--lr 5e-5'")
    ap.add_argument("--out", default=os.path.join(SRC, "out", "adapt_player"))
    return ap.parse_args(argv)


def valid_rows(split_file):
    root = os.path.dirname(os.path.abspath(split_file))
    with open(split_file, newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["split"] == "valid"]
    for r in rows:
        r["path"] = os.path.join(root, r["file"])
    return rows


def player_sets(rows, composer, n_pieces, per_piece):
    """(files given to adapt, same-piece held-out files, held-out piece files), or None."""
    mine = [r for r in rows if r["composer"] == composer]
    by_piece = collections.defaultdict(list)
    for r in mine:
        by_piece[r["title"]].append(r["path"])
    ranked = sorted(by_piece, key=lambda t: (-len(by_piece[t]), t))
    daily = [t for t in ranked if len(by_piece[t]) > per_piece][:n_pieces]
    rest = [t for t in ranked if t not in daily]
    if not daily or not rest:
        return None
    files = {t: sorted(by_piece[t]) for t in daily}
    given = [files[t][k] for k in range(per_piece) for t in daily]   # oldest first: day k plays take k of each
    held = [f for t in daily for f in files[t][per_piece:]]
    other_piece = min(rest, key=lambda t: (len(by_piece[t]), t))
    return given, held, sorted(by_piece[other_piece])


def evaluate(continuo, model, files):
    r = subprocess.run([continuo, "eval", "--model", model, "--threads", "2", *files],
                       capture_output=True, text=True)
    m = re.search(r"^nll ([\d.]+) events (\d+)$", r.stdout, re.M)
    if r.returncode != 0 or not m:
        raise SystemExit(f"continuo eval failed: {r.stderr.strip()[-300:]}")
    return float(m.group(1)), int(m.group(2))


def run_player(a, rows, composer):
    sets = player_sets(rows, composer, a.pieces, a.per_piece)
    if not sets:
        print(f"{composer}: not enough pieces in the valid split, skipped")
        return None
    given, held, other_piece = sets
    others = [r["path"] for r in rows if r["composer"] != composer]
    if a.max_other:
        others = others[::max(len(others) // a.max_other, 1)][:a.max_other]
    out = os.path.join(a.out, composer)
    os.makedirs(out, exist_ok=True)
    adapted = os.path.join(out, "adapted.gguf")
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(out, "state"), XDG_CONFIG_HOME=os.path.join(out, "config"),
               STATE_DIRECTORY="")
    cmd = [a.continuo, "adapt", *given, "--model", a.model, "--minutes", str(a.minutes), "--threads",
           str(a.threads), "-o", adapted, *shlex.split(a.adapt_args)]
    print("$", " ".join(shlex.quote(c) for c in cmd), flush=True)
    t = time.monotonic()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    took = time.monotonic() - t
    print(r.stdout, end="")
    if r.returncode != 0 or not os.path.exists(adapted):
        print(f"{composer}: continuo adapt failed (exit {r.returncode})")
        return None
    verdict = "kept" if re.search(r"^kept: ", r.stdout, re.M) else "not kept"
    result = {"composer": composer, "verdict": verdict, "seconds": took, "given": len(given)}
    for name, files in (("same pieces", held), ("other composers", others), ("held-out piece", other_piece)):
        before, n = evaluate(a.continuo, a.model, files)
        after, _ = evaluate(a.continuo, adapted, files)
        result[name] = (before, after, 100 * (after - before) / before, n, len(files))
    return result


def print_table(results):
    print("\n| player | adapt | set | files | events | shipped NLL | adapted NLL | change | target | |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for res in results:
        for name, target in TARGETS.items():
            before, after, pct, n, nf = res[name]
            ok = pct <= target
            print(f"| {res['composer']} ({res['given']} files) | {res['verdict']}, {res['seconds']:.0f} s | {name} "
                  f"| {nf} | {n} | {before:.4f} | {after:.4f} | {pct:+.2f}% | {target:+.1f}% | "
                  f"{'pass' if ok else 'FAIL'} |")


def main(argv=None):
    a = parse_args(argv)
    rows = valid_rows(a.split_file)
    results = [r for r in (run_player(a, rows, c) for c in a.players.split(",")) if r]
    print_table(results)
    return 0 if results and all(r[n][2] <= t for r in results for n, t in TARGETS.items()) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""bench_shapes.py: which model shape still plays in real time here: `continuo bench` on
random f16 models of candidate shapes, runs taken by turns, medians.

    /usr/bin/python3 bench/bench_shapes.py [--shapes 4x256,6x256,6x320,...] [--runs 3]
        [--continuo build/continuo] [--threads 2] [--context 512] [--events 256]

An entry ending in .gguf is that model file as it is (the shipped one, for
reference). A shape LxD is L layers of d_model D, D/64 heads (d_head 64), feed-forward 4D,
max_rel and context --context (the shipped model's 512), vocabulary mt310:
train/export.py --random writes it. Each round runs `continuo bench --no-torch`
once on every shape in turn (so a slow spell of a shared machine slows every
shape alike); the table has the medians over the rounds of:
  step B=1   ms per decode step of one sequence at the full context (the
             lookahead is max(10 ms, 30 steps): a first note within 11 ms
             needs at most about 0.37 ms)
  step B=8   ms per batched decode step of 8 sequences (8 candidates: one event
             each), and B=4, B=2 the same
and the range of B=1 over the rounds.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REAL_TIME_MS = 11.0 / 30.0


def make_model(path: str, layers: int, d: int, context: int) -> None:
    subprocess.run([sys.executable, os.path.join(ROOT, "train", "export.py"), "--random", path,
                    "--layers", str(layers), "--d-model", str(d), "--heads", str(d // 64),
                    "--d-ff", str(4 * d), "--max-rel", str(context), "--context", str(context),
                    "--dtype", "f16"], check=True, stdout=subprocess.DEVNULL)


def bench(continuo: str, model: str, threads: int, events: int, context: int) -> dict:
    r = subprocess.run([continuo, "bench", "--no-torch", "--model", model, "--threads", str(threads),
                        "--events", str(events)], capture_output=True, text=True, check=True)
    out = r.stdout
    m = re.search(rf"decode at context {context} \(events/s\)\s+([\d.]+)", out)
    if not m:
        raise RuntimeError(f"no decode figure at context {context} in:\n{out}")
    res = {"b1_ms": 1000.0 / float(m.group(1))}
    for b, each, total in re.findall(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+x$", out, re.M):
        res[f"b{b}_ms"] = 1000.0 * int(b) / float(total)   # one batched step: one event for each
    m = re.search(r"parameters, .*?\(([\d.]+) MB\)", out)
    res["mb"] = float(m.group(1)) if m else 0.0
    m = re.search(r": (\d+) parameters", out)
    res["params"] = int(m.group(1)) if m else 0
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="4x256,6x256,8x256,4x320,6x320,4x384,5x384,6x384")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--continuo", default=os.path.join(ROOT, "build", "continuo"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--events", type=int, default=256)
    ap.add_argument("--context", type=int, default=512)
    a = ap.parse_args(argv)
    shapes = [s if s.endswith(".gguf") else tuple(int(x) for x in s.split("x"))
              for s in a.shapes.split(",")]
    runs = {s: [] for s in shapes}
    name = lambda s: s if isinstance(s, str) else f"{s[0]} x {s[1]}"   # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for s in shapes:
            if isinstance(s, str):          # a model file as it is (a trained one, for reference)
                files[s] = s
                continue
            files[s] = os.path.join(tmp, f"random_{s[0]}x{s[1]}.gguf")
            make_model(files[s], s[0], s[1], a.context)
        for r in range(a.runs):
            for s in shapes:
                res = bench(a.continuo, files[s], a.threads, a.events, a.context)
                runs[s].append(res)
                print(f"round {r + 1} {name(s)}: B=1 {res['b1_ms']:.3f} ms, "
                      f"B=8 {res.get('b8_ms', 0):.3f} ms", file=sys.stderr, flush=True)
    med = lambda s, k: statistics.median(x[k] for x in runs[s] if k in x)   # noqa: E731
    print(f"| shape (layers x d_model) | parameters | f16 MB | step B=1 (ms, median of {a.runs}) "
          f"| range | real time (<= {REAL_TIME_MS:.2f} ms) | step B=2 | step B=4 | step B=8 (ms) "
          f"| B=8 per candidate (events/s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for s in shapes:
        b1 = [x["b1_ms"] for x in runs[s]]
        print(f"| {name(s)} | {runs[s][0]['params']:,} | {runs[s][0]['mb']:.1f} | "
              f"{statistics.median(b1):.3f} | {min(b1):.3f}-{max(b1):.3f} | "
              f"{'yes' if statistics.median(b1) <= REAL_TIME_MS else 'no'} | {med(s, 'b2_ms'):.3f} | "
              f"{med(s, 'b4_ms'):.3f} | {med(s, 'b8_ms'):.3f} | {1000.0 / med(s, 'b8_ms'):,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

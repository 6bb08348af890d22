#!/usr/bin/env python3
"""soak_plot.py: draws a soak's first-event latencies (daemon_soak --latencies FILE).

usage: soak_plot.py LATENCIES OUT.svg

LATENCIES has a line per phrase: the soak's first-event latency in ms, and on
the last thousand lines (a run of 2,000 phrases or more) the fresh process's on
the same phrase beside it.  Left: the median of every 100 phrases over the run,
the fresh process's beside the last thousand.  Right: the last thousand's
phrase-by-phrase difference (aged less fresh), the figure the soak judges."""
import statistics
import sys


def read(path):
    aged, fresh = [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            try:
                values = [float(p) for p in parts]
            except ValueError:
                sys.exit(f"soak_plot: {path}:{n}: expected one or two numbers, got {line.strip()!r}")
            if len(values) not in (1, 2):
                sys.exit(f"soak_plot: {path}:{n}: expected one or two numbers, got {len(values)}")
            aged.append(values[0])
            fresh.append(values[1] if len(values) == 2 else None)
    if not aged:
        sys.exit(f"soak_plot: {path}: no phrases")
    return aged, fresh


def medians(xs, step):
    out = []
    for i in range(0, len(xs), step):
        chunk = [x for x in xs[i:i + step] if x is not None and x == x]
        out.append((i + len(xs[i:i + step]) / 2, statistics.median(chunk) if chunk else float("nan")))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    aged, fresh = read(sys.argv[1])
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"     # text stays text: smaller, and searchable
    import matplotlib.pyplot as plt

    n = len(aged)
    first_fresh = next((i for i, x in enumerate(fresh) if x is not None), None)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [3, 1.3]})
    step = 100
    pts = medians(aged, step)
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", ms=3, color="#1f77b4", label="the soak (aged service)")
    if first_fresh is not None:
        tail = [(i, x) for i, x in enumerate(fresh) if x is not None]
        fp = medians([x for _, x in tail], step)
        ax.plot([first_fresh + p[0] for p in fp], [p[1] for p in fp], "-s", ms=3, color="#d62728",
                label="a fresh process, in turns")
        ax.axvspan(0, min(1000, n), color="0.9", lw=0)
        ax.axvspan(first_fresh, n, color="0.9", lw=0)
    ax.set_xlabel("phrase")
    ax.set_ylabel(f"first-event latency, median of {step} (ms)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("first-event latency over the soak (shaded: the same music)", fontsize=9)

    if first_fresh is not None:
        d = [a - f for a, f in zip(aged[first_fresh:], fresh[first_fresh:]) if f is not None and a == a and f == f]
        lo, hi = sorted(d)[len(d) // 100], sorted(d)[-len(d) // 100 - 1]
        bx.hist([x for x in d if lo <= x <= hi], bins=40, color="#7f7f7f")
        m = statistics.median(d)
        bx.axvline(m, color="#d62728", lw=1.5, label=f"median {m:+.3f} ms")
        for b in (-1, 1):
            bx.axvline(b, color="k", ls=":", lw=1)
        bx.set_xlabel("aged less fresh, same phrase (ms)")
        bx.set_title(f"the last {len(d)} phrases (1st-99th percentile)", fontsize=9)
        bx.legend(fontsize=8)
    else:
        bx.axis("off")
    fig.tight_layout()
    fig.savefig(sys.argv[2])
    print(f"soak_plot: {n} phrases drawn to {sys.argv[2]}")


if __name__ == "__main__":
    main()

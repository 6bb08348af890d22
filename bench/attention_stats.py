#!/usr/bin/python3
"""attention_stats.py: what the attention picture of `continue --plot-attention` says, as numbers.

    bench/attention_stats.py OUT.svg

The picture (src/cli/continue.c, `--plot-attention`) draws the primer's notes
(blue), the continuation's (orange) and, for each note the continuation
plays, green lines back to the earlier notes its last layer attended to
most, each line's opacity its weight.  Over those lines, weighted by their
opacity, this prints: the share that reaches back at most 1 s and at most
2 s, the weighted median distance, the share that goes to a note of the
same pitch and to one an octave away, and the share that goes back into
the primer (the motif).  The card's "What it listens to" quotes these.
"""
import re
import sys

PX_PER_SEMITONE = 8.04   # the rects' height: one semitone a row


def main(path: str) -> int:
    svg = open(path, encoding="utf-8").read()
    ticks = {float(t): float(x) for x, t in
             re.findall(r'<text x="([\d.]+)" y="455" text-anchor="middle">([\d.]+)</text>', svg)}
    if 0.0 not in ticks or len(ticks) < 2:
        sys.exit(f"{path}: no time axis (is it a --plot-attention picture?)")
    t1 = min(t for t in ticks if t > 0)
    px_per_s = (ticks[t1] - ticks[0.0]) / t1
    cont = [float(x) for x in re.findall(r'<rect x="([\d.]+)" y="[\d.]+" width="[\d.]+" height="[\d.]+" '
                                          r'fill="#ff7f0e"', svg)]
    if not cont:
        sys.exit(f"{path}: no continuation notes")
    cont_start = min(cont) - 0.01
    lines = [tuple(float(v) for v in m) for m in
             re.findall(r'<line x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)" stroke="#2ca02c" '
                        r'stroke-opacity="([\d.]+)"', svg)]
    if not lines:
        sys.exit(f"{path}: no attention lines")
    total = sum(w for *_, w in lines)
    dist = sorted(((x1 - x2) / px_per_s, w) for x1, _, x2, _, w in lines)

    def share(cond):
        return sum(w for x1, y1, x2, y2, w in lines if cond(x1, y1, x2, y2)) / total

    acc, median = 0.0, dist[-1][0]
    for d, w in dist:
        acc += w
        if acc >= total / 2:
            median = d
            break
    semis = lambda y1, y2: abs(y1 - y2) / PX_PER_SEMITONE  # noqa: E731
    print(f"{path}: {len(lines)} lines from {len(cont)} notes played")
    print(f"within 1 s      {share(lambda x1, y1, x2, y2: (x1 - x2) / px_per_s <= 1.0):.2f}")
    print(f"within 2 s      {share(lambda x1, y1, x2, y2: (x1 - x2) / px_per_s <= 2.0):.2f}")
    print(f"median          {median:.2f} s")
    print(f"same pitch      {share(lambda x1, y1, x2, y2: semis(y1, y2) < 0.5):.2f}")
    print(f"an octave away  {share(lambda x1, y1, x2, y2: abs(semis(y1, y2) - 12) < 0.5):.2f}")
    print(f"into the primer {share(lambda x1, y1, x2, y2: x2 < cont_start):.2f}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    sys.exit(main(sys.argv[1]))

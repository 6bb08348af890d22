#!/usr/bin/env python3
"""adapt_curve.py: fit against drift along one adapt run's step, scored as `continuo eval` scores.

  /usr/bin/python3 bench/adapt_curve.py --adapted out/adapt_player/Beethoven/adapted.gguf \
      --player Beethoven [--shares 0.35,0.5,0.7,1] [--max-other 40]

An adapt run made with `--blend 0` keeps the fine-tune's whole step. This
writes the start model plus SHARE times that step for each share (the
blends adapt's step back chooses among; the file type of the start model),
and scores each with `continuo eval` on the player's three sets of
bench/adapt_player.py (the same pieces' held-out performances, the other
composers' files, the held-out piece) and on the general reference adapt
judges with. One table row a share: the curve of a guard in
docs/TRAINING.md ("The guards compared"); a better guard drifts less at
the same fit. Prints numbers; it is a benchmark, not a test.
"""

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "train"))
import adapt_player                                       # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--adapted", required=True, help="an adapt run's model, made with --blend 0 (-o of adapt)")
    ap.add_argument("--player", required=True, help="the composer bench/adapt_player.py made the player from")
    ap.add_argument("--model", default=os.path.join(SRC, "models", "continuo-default.gguf"), help="the start model")
    ap.add_argument("--reference", default=os.path.join(SRC, "models", "adapt-reference.tok"))
    ap.add_argument("--shares", default="0.35,0.5,0.7,1")
    ap.add_argument("--split-file", default=adapt_player.parse_args([]).split_file)
    ap.add_argument("--continuo", default=adapt_player.parse_args([]).continuo)
    ap.add_argument("--pieces", type=int, default=2)
    ap.add_argument("--per-piece", type=int, default=3)
    ap.add_argument("--max-other", type=int, default=40, help="score at most N other composers' files (0: all)")
    return ap.parse_args(argv)


def blend(start_path: str, adapted_path: str, share: float, out: str) -> None:
    """Writes START + SHARE x (ADAPTED - START) to OUT, in the start model's file type."""
    import adapt
    import export
    start, cfg, kvs = export.read_model(start_path)
    adapted, _, _ = export.read_model(adapted_path)
    start.load_state_dict(adapt.blended(start.state_dict(), adapted.state_dict(), share))
    export.export_model(start, cfg, out, {"init_from": os.path.abspath(start_path), "blend": share},
                        dtype=export.dtype_of(kvs))


def main(argv=None):
    a = parse_args(argv)
    rows = adapt_player.valid_rows(a.split_file)
    sets = adapt_player.player_sets(rows, a.player, a.pieces, a.per_piece)
    if not sets:
        raise SystemExit(f"{a.player}: not enough pieces in the valid split")
    _, held, piece = sets
    others = [r["path"] for r in rows if r["composer"] != a.player]
    if a.max_other:
        others = others[::max(len(others) // a.max_other, 1)][:a.max_other]
    named = (("same pieces", held), ("held-out piece", piece), ("other composers", others),
             ("reference", [a.reference]))
    before = {name: adapt_player.evaluate(a.continuo, a.model, files)[0] for name, files in named}
    print("| share of the step | " + " | ".join(name for name, _ in named) + " |")
    print("|---|" + "---|" * len(named))
    with tempfile.TemporaryDirectory(prefix="adapt_curve.") as tmp:
        for share in (float(x) for x in a.shares.split(",")):
            path = os.path.join(tmp, f"blend{share:g}.gguf")
            blend(a.model, a.adapted, share, path)
            cells = []
            for name, files in named:
                after, _ = adapt_player.evaluate(a.continuo, path, files)
                cells.append(f"{100 * (after - before[name]) / before[name]:+.2f} %")
            print(f"| {share:g} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""adapt_memory.py: the player's memory (train/player_memory.py) on issue 40's simulated players: fit and drift.

  /usr/bin/python3 bench/adapt_memory.py [--players Bach,Beethoven,Schubert] \
      [--adapted out/adapt_player] [--kmin 4] [--lam 0.8] [--decay 0.85]

The players are bench/adapt_player.py's (ASAP's valid split only): the
memory is built from the files given to adapt (the note-ons the player
played), then the shipped model's odds, alone and with the memory mixed
in, are scored on the three sets: the same pieces' other performances,
the other composers' files (--max-other of them, --per-file events from
each one's middle), the held-out piece.  With --adapted (adapt_player's
--out folder, PLAYER/adapted.gguf in it) the adapted models are scored too,
alone and with the memory: the two together.  Every change is against the
shipped model alone, as adapt_player's table gives it (targets: -6 %,
+1 %, +0.5 %).  The odds are PyTorch's, in `continuo eval`'s windows (the
weights as the file stores them); the memory follows each performance from
its start.  Prints numbers; it is a benchmark, not a test.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "train"))
import adapt_player                                       # noqa: E402


def parse_args(argv=None):
    defaults = adapt_player.parse_args([])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--players", default="Bach,Beethoven,Schubert")
    ap.add_argument("--model", default=defaults.model, help="the shipped model")
    ap.add_argument("--adapted", help="adapt_player's --out folder: also score PLAYER/adapted.gguf")
    ap.add_argument("--split-file", default=defaults.split_file)
    ap.add_argument("--continuo", default=defaults.continuo)
    ap.add_argument("--pieces", type=int, default=defaults.pieces)
    ap.add_argument("--per-piece", type=int, default=defaults.per_piece)
    ap.add_argument("--max-other", type=int, default=40, help="other composers' files scored")
    ap.add_argument("--per-file", type=int, default=1000, help="events from the middle of each other composer's file")
    ap.add_argument("--kmin", type=int, help="the shortest run the memory answers for (player_memory.KMIN)")
    ap.add_argument("--lam", type=float, help="the memory's weight at full confidence (player_memory.LAMBDA)")
    ap.add_argument("--decay", type=float, help="the confidence's decay (player_memory.CONFIDENCE_DECAY)")
    ap.add_argument("--threads", type=int, default=2)
    return ap.parse_args(argv)


def encode(continuo: str, files: list, out: str) -> None:
    r = subprocess.run([continuo, "encode", *files, "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"continuo encode failed: {r.stderr.strip()[-300:]}")


def main(argv=None):
    a = parse_args(argv)
    import numpy as np
    import torch
    import data
    import export
    import player_memory as pm
    torch.set_num_threads(a.threads)
    kw = {k: v for k, v in (("lam", a.lam), ("decay", a.decay)) if v is not None}
    rows = adapt_player.valid_rows(a.split_file)
    shipped, mc, _ = export.read_model(a.model)          # in eval mode
    lay = data.layout(mc.vocab_name)
    table = []
    with tempfile.TemporaryDirectory(prefix="adapt_memory.") as tmp:
        for player in a.players.split(","):
            sets = adapt_player.player_sets(rows, player, a.pieces, a.per_piece)
            if not sets:
                print(f"{player}: not enough pieces in the valid split, skipped")
                continue
            given, held, piece = sets
            others = [r["path"] for r in rows if r["composer"] != player]
            others = others[::max(len(others) // a.max_other, 1)][:a.max_other]
            seqs = {}
            for name, files in (("given", given), ("same pieces", held), ("held-out piece", piece),
                                ("other composers", others)):
                path = os.path.join(tmp, f"{player}-{len(seqs)}.tok")
                encode(a.continuo, files, path)
                s, _ = data.load_seqs([path], mc.vocab_name)
                s = [np.asarray(q, np.int64) for q in s if len(q) >= 2]
                if name == "other composers":
                    s = [q[len(q) // 3:len(q) // 3 + a.per_file] for q in s]
                seqs[name] = s
            t = time.monotonic()
            memory = pm.Memory.from_ids(seqs.pop("given"), lay, **({"kmin": a.kmin} if a.kmin else {}))
            print(f"{player}: the memory of {len(given)} files: {len(memory.table)} runs "
                  f"({time.monotonic() - t:.1f} s)", flush=True)
            models = [("shipped", shipped)]
            if a.adapted:
                m, _, _ = export.read_model(os.path.join(a.adapted, player, "adapted.gguf"))
                models.append(("adapted", m))
            for name, s in seqs.items():
                base = None
                for label, m in models:
                    t = time.monotonic()
                    lt, lo = pm.model_odds(m, s, mc.context, lay)
                    alone = -sum(x.sum() for x in lt) / sum(len(x) for x in lt)
                    base = alone if base is None else base
                    mixed = pm.nll_with_memory(memory, lay, s, lt, lo, **kw)
                    row = (player, name, label, sum(len(x) for x in lt), base, alone, mixed)
                    table.append(row)
                    print(f"  {name}, {label}: {alone:.4f} alone, {mixed:.4f} with the memory "
                          f"({time.monotonic() - t:.0f} s)", flush=True)
    print("\n| player | set | events | shipped NLL | model | alone | with the memory |")
    print("|---|---|---|---|---|---|---|")
    for player, name, label, n, base, alone, mixed in table:
        print(f"| {player} | {name} | {n} | {base:.4f} | {label} | {100 * (alone / base - 1):+.2f} % "
              f"| {100 * (mixed / base - 1):+.2f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

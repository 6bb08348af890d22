"""golden.py: reference outputs of the PyTorch model for the C engine's golden tests.

    /usr/bin/python3 train/golden.py OUTDIR [CASE ...]

For each case (a small random-weight model) writes into OUTDIR:
  CASE.gguf       the model (export.export_model)
  CASE.ref.gguf   reference data, a GGUF file read by tests/model/test_golden.c:
                    tokens          I32 (T)        a sequence longer than the context
                    prefill_logits  F32 (P, V)     model(tokens[:P]) all rows
                    stream_logits   F32 (T-P+1, V) logits after prefilling tokens[:P], then after
                                                   each decode of tokens[P:], with the engine's
                                                   sliding window (keep = context - context//4)
                    greedy          I32 (G)        argmax continuation of tokens[:P], sliding too
                    roll_logits     F32 (T, V)     stream memory (rolling cache): row i = logits
                                                   after tokens[:i+1] with each event attending to
                                                   the context-1 before it (model(..., window=context))
                    roll_greedy     I32 (G)        argmax continuation of tokens[:P], rolling
                  keys golden.n_prompt, golden.keep
  CASE.tok        a token file of two sequences (one longer than the context)
  CASE.nll        "nll <nats per event> events <count>" by model.eval_windows + sequence_nll
  CASE.stream.nll the same for `continuo eval --memory stream`: each sequence one rolling stream
and one case of an adapted model's memory of its player (player_memory.py):
  memory.gguf     the first case's model with a memory of a piece's note-ons
  memory.tok      the piece played again (other time shifts, velocities and note-offs;
                  every other pair of notes rolled the other way) and random events
  memory.nll, memory.stream.nll   NLL with the memory mixed in (nll_with_memory), both memories
  memory.plain.nll                the same model without its memory (window)
The references come from the model as read back from CASE.gguf, so f16 and i8 storage
are compared with the same rounded weights the engine uses.
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
import export  # noqa: E402
import player_memory as pm  # noqa: E402
import tokfile  # noqa: E402
from model import ModelConfig, eval_windows, masked_nll, sequence_nll  # noqa: E402

# name: (n_layers, d_model, n_heads, d_ff, max_rel, context, dtype)
CASES = {
    "h1_rel8_ctx24_f32": (2, 32, 1, 64, 8, 24, "f32"),
    "h4_rel16_ctx32_f16": (2, 48, 4, 96, 16, 32, "f16"),
    "h2_rel64_ctx40_f32": (1, 64, 2, 128, 64, 40, "f32"),
    "h2_rel12_ctx20_f16": (3, 32, 2, 64, 12, 20, "f16"),
    # a context of several prefill blocks (forward.c PREFILL_BLOCK = 64)
    "h2_rel48_ctx150_f32": (1, 32, 2, 64, 48, 150, "f32"),
    # int8 rows with their scales (the shipped model's storage); 80 columns:
    # runs of 32 and 16 and (d_ff 144) a tail of 16
    "h5_rel24_ctx40_i8": (2, 80, 5, 144, 24, 40, "i8"),
}


def keep_of(context: int) -> int:
    """Events kept when the engine's window slides (models/FORMAT.md)."""
    return context - max(1, context // 4)


@torch.no_grad()
def last_logits(model, window):
    return model(torch.tensor([window]))[0, -1]


@torch.no_grad()
def stream(model, cfg, tokens, n_prompt):
    """Logits the engine must give: prefill tokens[:n_prompt], then decode the rest one by one."""
    keep = keep_of(cfg.context)
    win = list(tokens[:n_prompt])
    rows = [last_logits(model, win)]
    for t in tokens[n_prompt:]:
        if len(win) == cfg.context:
            win = win[-keep:]
        win.append(int(t))
        rows.append(last_logits(model, win))
    return torch.stack(rows)


@torch.no_grad()
def greedy(model, cfg, prompt, n):
    keep = keep_of(cfg.context)
    win = list(prompt)
    out = []
    logits = last_logits(model, win)
    for _ in range(n):
        t = int(torch.argmax(logits))
        out.append(t)
        if len(win) == cfg.context:
            win = win[-keep:]
        win.append(t)
        logits = last_logits(model, win)
    return out


@torch.no_grad()
def roll_greedy(model, cfg, prompt, n):
    """greedy() in stream memory: the whole history, each event seeing the context-1 before it."""
    seq = list(prompt)
    out = []
    for _ in range(n):
        t = int(torch.argmax(model(torch.tensor([seq]), window=cfg.context)[0, -1]))
        out.append(t)
        seq.append(t)
    return out


@torch.no_grad()
def eval_nll_stream(model, cfg, seqs):
    """NLL with each sequence one rolling stream (`continuo eval --memory stream`)."""
    total, count = 0.0, 0
    for seq in seqs:
        x = torch.tensor([seq], dtype=torch.long)
        nll, n = masked_nll(model(x[:, :-1], window=cfg.context), x[:, 1:], pad_id=0)
        total += float(nll)
        count += n
    return total / count, count


@torch.no_grad()
def eval_nll(model, cfg, seqs):
    total, count = 0.0, 0
    for seq in seqs:
        for a, b in eval_windows(len(seq), cfg.context):
            nll, n = sequence_nll(model, torch.tensor([seq[a:b]], dtype=torch.long))
            total += float(nll)
            count += n
    return total / count, count


def make_case(outdir: str, name: str, seed: int) -> None:
    n_layers, d, h, ff, max_rel, ctx, dtype = CASES[name]
    cfg = ModelConfig(vocab_size=310, vocab_name="mt310", n_layers=n_layers, d_model=d, n_heads=h,
                      d_ff=ff, max_rel=max_rel, context=ctx, dropout=0.0)
    model = export.random_model(cfg, seed=seed, scale=0.2)
    path = os.path.join(outdir, name + ".gguf")
    export.export_model(model, cfg, path, {"data": "random weights (golden test)", "steps": 0}, dtype)
    model, cfg, _ = export.read_model(path)
    model.half_kv()             # the engine's cache: keys and values as half floats

    g = torch.Generator().manual_seed(seed + 1)
    # ids 2.. (no PAD/EOS) so the sequences look like events
    T = ctx * 5 // 2
    tokens = torch.randint(2, cfg.vocab_size, (T,), generator=g).tolist()
    n_prompt = ctx // 3
    with torch.no_grad():
        prefill = model(torch.tensor([tokens[:n_prompt]]))[0]
    st = stream(model, cfg, tokens, n_prompt)
    gr = greedy(model, cfg, tokens[:n_prompt], 2 * ctx)
    with torch.no_grad():
        roll = model(torch.tensor([tokens]), window=ctx)[0]
    rg = roll_greedy(model, cfg, tokens[:n_prompt], 2 * ctx)
    export.write_gguf(os.path.join(outdir, name + ".ref.gguf"),
                      {"golden.n_prompt": n_prompt, "golden.keep": keep_of(ctx)},
                      [("tokens", np.array(tokens, dtype="<i4")),
                       ("prefill_logits", prefill.numpy().astype("<f4")),
                       ("stream_logits", st.numpy().astype("<f4")),
                       ("greedy", np.array(gr, dtype="<i4")),
                       ("roll_logits", roll.numpy().astype("<f4")),
                       ("roll_greedy", np.array(rg, dtype="<i4"))])

    seqs = [torch.randint(2, cfg.vocab_size, (ctx * 2 + 7,), generator=g).tolist(),
            torch.randint(2, cfg.vocab_size, (ctx // 2,), generator=g).tolist()]
    seqs[1][-1] = 0            # a PAD target: skipped by the NLL, as in training
    tf = tokfile.TokenFile("mt310", 310, [np.array(s, dtype="<u2") for s in seqs], ["a.mid", "b.mid"])
    tokfile.write(os.path.join(outdir, name + ".tok"), tf)
    nll, count = eval_nll(model, cfg, seqs)
    with open(os.path.join(outdir, name + ".nll"), "w") as f:
        f.write(f"nll {nll:.9f} events {count}\n")
    nll, count = eval_nll_stream(model, cfg, seqs)
    with open(os.path.join(outdir, name + ".stream.nll"), "w") as f:
        f.write(f"nll {nll:.9f} events {count}\n")


def make_memory_case(outdir: str, name: str, seed: int) -> None:
    """memory.*: CASE NAME's model (already written) with a memory of a
    piece, scored on the piece played again and on random events."""
    model, cfg, _ = export.read_model(os.path.join(outdir, name + ".gguf"))
    lay = data.layout(cfg.vocab_name)
    on, n_p = lay.note_on_base, lay.n_pitches
    rng = np.random.default_rng(seed)
    piece = rng.integers(0, n_p, 48).tolist()
    played = list(piece)
    for i in range(0, len(played) - 1, 4):         # every other pair rolled the other way
        played[i], played[i + 1] = played[i + 1], played[i]
    other = [t for t in range(2, cfg.vocab_size) if not on <= t < on + n_p]

    def perform(pitches):                           # each note-on after 0..2 other events
        seq = []
        for p in pitches:
            seq.extend(int(t) for t in rng.choice(other, rng.integers(0, 3)))
            seq.append(on + p)
        return seq
    memory = pm.Memory([piece], lay=lay)
    export.export_model(model, cfg, os.path.join(outdir, "memory.gguf"), {"data": "golden memory case"},
                        export.dtype_of(export.read_gguf(os.path.join(outdir, name + ".gguf"))[0]),
                        extra=pm.file_parts(memory))
    model.half_kv()
    seqs = [perform(played), rng.integers(2, cfg.vocab_size, cfg.context * 2).tolist()]
    tf = tokfile.TokenFile("mt310", 310, [np.array(q, dtype="<u2") for q in seqs], ["a.mid", "b.mid"])
    tokfile.write(os.path.join(outdir, "memory.tok"), tf)
    lt, lo = pm.model_odds(model, seqs, cfg.context, lay)
    count = sum(len(q) - 1 for q in seqs)
    results = {"memory.nll": pm.nll_with_memory(memory, lay, seqs, lt, lo),
               "memory.plain.nll": -sum(x.sum() for x in lt) / count}
    lt, lo = [], []
    with torch.no_grad():
        for q in seqs:
            logp = torch.log_softmax(model(torch.tensor([q[:-1]]), window=cfg.context)[0].float(), -1)
            lt.append(logp.gather(-1, torch.tensor(q[1:]).unsqueeze(-1)).squeeze(-1).numpy())
            lo.append(torch.logsumexp(logp[:, on:on + n_p], -1).numpy())
    results["memory.stream.nll"] = pm.nll_with_memory(memory, lay, seqs, lt, lo)
    for fname, nll in results.items():
        with open(os.path.join(outdir, fname), "w") as f:
            f.write(f"nll {nll:.9f} events {count}\n")


def main(argv) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir = argv[1]
    names = argv[2:] or list(CASES)
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    for i, name in enumerate(names):
        make_case(outdir, name, seed=100 + i)
        print(name)
    make_memory_case(outdir, names[0], seed=99)
    print("memory")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

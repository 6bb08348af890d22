"""test_memory.py: train.memory "window" is the training twin of the engine's
stream memory (`continuo eval --memory stream`).

1. The loss of a training step with memory window, on crops of
   memory_segments * context events, is the golden stream reference's NLL
   of the same rows (train/golden.py eval_nll_stream: each event sees itself
   and the context-1 before it), and differs from plain causal attention
   over the crop.
2. model.forward_stream (the trainer's stream scoring, block by block) gives
   the logits of model(..., window=context).
3. A tiny run with memory window trains (its loss falls), exports, and
   `continuo eval --memory stream` on the exported file gives the trainer's
   final validation NLL (1e-4), which is not the window-memory score.
4. An unknown train.memory is refused by name."""

import copy
import json
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth   # noqa: E402

sys.path.insert(0, os.path.dirname(synth.TRAIN_PY))
import golden   # noqa: E402
import train    # noqa: E402
from model import ModelConfig, MusicTransformer, masked_nll   # noqa: E402

CONTINUO = os.environ.get("CONTINUO")


def check_step_loss(tmp: str) -> int:
    """Point 1, on the trainer's own first step."""
    fails = 0
    cfg_path = synth.tiny_config(tmp, train={"memory": "window", "memory_segments": 3,
                                             "batch_size": 4, "max_steps": 1})
    args = train.parse_args(["--config", cfg_path, "--out", os.path.join(tmp, "step")])
    cfg, init = train.run_config(args)
    run = train.Run(args, cfg)
    model = train.build_model(run, init)
    before = copy.deepcopy(model).eval()
    corpus, _ = train.load_data(run)
    tr = train.Trainer(run, model, fast=False)
    rows = corpus.batch(0, 4)          # the rows of step 0: a pure function of seed and step
    ctx = run.mcfg.context
    if rows.shape != (4, 3 * ctx + 1):
        print(f"FAIL: memory window, 3 segments: crops of {rows.shape[1]} tokens, "
              f"expected {3 * ctx + 1}")
        fails += 1
    nll_sum, n, _, _ = tr.step(corpus, 4, 0)
    nll_sum = float(nll_sum)
    ref, ref_n = golden.eval_nll_stream(before, run.mcfg, [list(r) for r in rows])
    x = torch.from_numpy(rows)
    with torch.no_grad():
        plain, _ = masked_nll(before(x[:, :-1]), x[:, 1:], run.lay.pad_id)
    print(f"step loss {nll_sum / n:.7f} ({n} events); golden stream reference {ref:.7f} "
          f"({ref_n} events); plain causal {float(plain) / n:.7f}")
    if n != ref_n or abs(nll_sum / n - ref) > 1e-5:
        print("FAIL: the windowed training loss is not the stream reference's NLL")
        fails += 1
    if abs(float(plain) / n - ref) < 1e-4:
        print("FAIL: the windowed loss equals plain causal attention over the crop")
        fails += 1
    return fails


def check_forward_stream() -> int:
    """Point 2."""
    fails = 0
    torch.manual_seed(5)
    for ctx, max_rel, T, block in ((16, 8, 70, 0), (24, 32, 61, 7), (12, 12, 12, 5)):
        cfg = ModelConfig(n_layers=2, d_model=32, n_heads=2, d_ff=64, max_rel=max_rel,
                          context=ctx, dropout=0.0)
        m = MusicTransformer(cfg).eval()
        x = torch.randint(2, cfg.vocab_size, (2, T))
        with torch.no_grad():
            d = float((m.forward_stream(x, ctx, block) - m(x, window=ctx)).abs().max())
        print(f"forward_stream context {ctx} max_rel {max_rel} length {T} block {block}: "
              f"max |diff| {d:.2e}")
        if d > 1e-5:
            print("FAIL: forward_stream differs from model(..., window=context)")
            fails += 1
    return fails


def continuo_eval(model: str, memory: str, tok: str) -> tuple:
    r = subprocess.run([CONTINUO, "eval", "--memory", memory, "--model", model, tok],
                       capture_output=True, text=True, timeout=120)
    last = r.stdout.strip().splitlines()[-1:] or [""]
    if r.returncode != 0 or not last[0].startswith("nll "):
        print(r.stdout, r.stderr)
        return None, None
    parts = last[0].split()
    return float(parts[1]), int(parts[3])


def check_run(tmp: str) -> int:
    """Point 3."""
    fails = 0
    valid = synth.write(os.path.join(tmp, "valid-long.tok"), 3, 400, 2)
    cfg = synth.tiny_config(tmp, train={"max_steps": 60, "eval_every": 30, "memory": "window",
                                        "batch_size": 4},
                            data={"valid_tokens": valid})
    out = os.path.join(tmp, "run")
    r = subprocess.run([sys.executable, synth.TRAIN_PY, "--config", cfg, "--out", out],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        print("FAIL: train.py with memory window exited", r.returncode)
        return 1
    losses = synth.train_losses(os.path.join(out, "log.txt"))
    print(f"losses: first {losses[0]:.4f} last {losses[-1]:.4f} ({len(losses)} log lines)")
    if not (len(losses) >= 5 and losses[-1] < losses[0] - 1.0):
        print("FAIL: the training loss did not fall by a nat")
        fails += 1
    with open(os.path.join(out, "result.json")) as fh:
        res = json.load(fh)
    model = os.path.join(out, "model.gguf")
    stream, events = continuo_eval(model, "stream", valid)
    window, _ = continuo_eval(model, "window", valid)
    if stream is None or window is None:
        print("FAIL: continuo eval failed")
        return fails + 1
    print(f"trainer: nll {res['valid_nll']:.6f} events {res['valid_events']}; continuo eval "
          f"--memory stream: nll {stream:.6f} events {events}; --memory window: nll {window:.6f}")
    if events != res["valid_events"] or abs(stream - res["valid_nll"]) > 1e-4:
        print("FAIL: continuo eval --memory stream does not give the trainer's number")
        fails += 1
    if abs(window - res["valid_nll"]) < 1e-3:
        print("FAIL: the trainer's number is also the window-memory score: nothing was checked")
        fails += 1
    return fails


def check_bad_memory(tmp: str) -> int:
    """Point 4."""
    cfg = synth.tiny_config(tmp, train={"memory": "rolling"})
    r = subprocess.run([sys.executable, synth.TRAIN_PY, "--config", cfg, "--out",
                        os.path.join(tmp, "bad")], capture_output=True, text=True, timeout=120)
    print("[bad memory]", r.stderr.strip().splitlines()[-1:] or "(no message)")
    if r.returncode == 0 or f"{cfg}: train.memory is 'rolling'" not in r.stderr:
        print("FAIL: an unknown train.memory value was not refused by name")
        return 1
    return 0


def main() -> int:
    if not CONTINUO:
        print("FAIL: CONTINUO is not set")
        return 1
    torch.set_num_threads(1)
    fails = check_forward_stream()
    with tempfile.TemporaryDirectory() as tmp:
        fails += check_step_loss(tmp)
        fails += check_run(tmp)
        fails += check_bad_memory(tmp)
    print("FAIL" if fails else "OK")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

"""bench_train.py: training events/s of the reference model on this CPU, in
three settings side by side (each in its own process, one after the other):

  fp32           glibc's default allocator settings
  fp32+keep      freed memory kept by glibc (train.py keep_freed_memory)
  bf16+keep      that and bf16 autocast ("amp": "bf16"; needs AVX512_BF16 or AMX to pay)

  /usr/bin/python3 bench/bench_train.py [--layers 4 --d-model 256 --heads 4 --d-ff 1024
                                         --context 512 --batch 16 --steps 3 --threads 2]

Prints one line per setting and the ratios to the first. Random tokens: the
work per step does not depend on them."""

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "train"))


def one(a) -> float:
    import torch
    from model import ModelConfig, MusicTransformer, masked_nll
    import train
    torch.set_num_threads(a.threads)
    if a.keep:
        train.keep_freed_memory()
    torch.manual_seed(0)
    cfg = ModelConfig(n_layers=a.layers, d_model=a.d_model, n_heads=a.heads, d_ff=a.d_ff,
                      max_rel=a.context, context=a.context, dropout=0.0)
    m = MusicTransformer(cfg)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    x = torch.randint(2, cfg.vocab_size, (a.batch, a.context + 1))

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            logits = m(x[:, :-1])
        nll, n = masked_nll(logits, x[:, 1:])
        loss = nll / n
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()

    step()                                   # first step: allocations, kernel choice
    t = time.perf_counter()
    for _ in range(a.steps):
        step()
    return a.steps * a.batch * a.context / (time.perf_counter() - t)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for k, v in (("layers", 4), ("d-model", 256), ("heads", 4), ("d-ff", 1024), ("context", 512),
                 ("batch", 16), ("steps", 3), ("threads", 2)):
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--one", choices=["fp32", "fp32+keep", "bf16+keep"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        a.keep, a.bf16 = "keep" in a.one, a.one.startswith("bf16")
        print(f"{one(a):.1f}")
        return 0
    print(f"model {a.layers} layers, d {a.d_model}, {a.heads} heads, ff {a.d_ff}, context {a.context}; "
          f"batch {a.batch}, {a.steps} timed steps, {a.threads} threads", flush=True)
    base = None
    for name in ("fp32", "fp32+keep", "bf16+keep"):
        r = subprocess.run([sys.executable, __file__, "--one", name] + sys.argv[1:],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"  {name:10s} failed: {r.stderr.strip()[-300:]}")
            continue
        eps = float(r.stdout.split()[-1])
        base = base or eps
        print(f"  {name:10s} {eps:10.0f} events/s   x{eps / base:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

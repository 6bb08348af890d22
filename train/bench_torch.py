"""bench_torch.py: the PyTorch side of `continuo bench`: prefill and KV-cache decode speed on CPU.

    /usr/bin/python3 train/bench_torch.py MODEL.gguf [--threads N] [--events N] [--prefill N]
                                          [--contexts 256,1024,2048]

Loads the model file with export.read_model (F16 weights become float32: PyTorch runs in
float32 on the CPU), then prints lines `key value...` that `continuo bench` parses:
    prefill_eps N EVENTS_PER_S       model(tokens) on a primer of N events
    decode_eps P EVENTS_PER_S        decode with a KV cache, the last event attending to P events
    rss_mb MB                        peak resident memory of this process
    weight_bytes B                   bytes of weights read per decoded event (float32)
The decode loop below is written for speed in plain PyTorch: a preallocated KV cache,
one new query per step attending to the cache with q . E_r[distance] (no skewing);
it is checked against model.forward before timing.
"""

import argparse
import math
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402


class KVDecoder:
    """Incremental decoding of a MusicTransformer with a preallocated KV cache."""

    def __init__(self, model, context: int):
        self.m = model
        cfg = model.cfg
        self.H, self.dh, self.M = cfg.n_heads, cfg.d_head, cfg.max_rel
        L = len(model.blocks)
        self.K = torch.zeros(L, context, self.H, self.dh)
        self.V = torch.zeros(L, context, self.H, self.dh)
        self.pos = 0

    @torch.no_grad()
    def step(self, token: int) -> torch.Tensor:
        m, H, dh, p = self.m, self.H, self.dh, self.pos
        x = m.emb.weight[token].unsqueeze(0)                       # (1, d)
        scale = 1.0 / math.sqrt(dh)
        for l, blk in enumerate(m.blocks):
            a = blk.attn
            h = blk.ln1(x)
            q = a.wq(h).view(H, dh)
            self.K[l, p] = a.wk(h).view(H, dh)
            self.V[l, p] = a.wv(h).view(H, dh)
            K, V = self.K[l, :p + 1], self.V[l, :p + 1]             # (t, H, dh)
            s = torch.einsum("hd,thd->ht", q, K)
            r = min(p + 1, self.M)
            rel = torch.einsum("hd,hmd->hm", q, a.er[:, :r])        # by distance 0..r-1
            s[:, p + 1 - r:] += rel.flip(1)                         # key j = p - distance
            att = torch.softmax(s * scale, dim=-1)
            y = torch.einsum("ht,thd->hd", att, V).reshape(1, -1)
            x = x + a.wo(y)
            x = x + blk.ff2(F.gelu(blk.ff1(blk.ln2(x))))
        self.pos += 1
        return (m.ln_f(x) @ m.emb.weight.t())[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--events", type=int, default=64, help="decoded events timed per context")
    ap.add_argument("--prefill", type=int, default=1024)
    ap.add_argument("--contexts", default="256,1024,2048")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    model, cfg, _ = export.read_model(a.model)
    g = torch.Generator().manual_seed(0)

    # The decode loop must agree with the model before it is timed.
    n = min(12, cfg.context)
    toks = torch.randint(2, cfg.vocab_size, (n,), generator=g)
    dec = KVDecoder(model, cfg.context)
    for t in toks.tolist():
        last = dec.step(t)
    with torch.no_grad():
        ref = model(toks.unsqueeze(0))[0, -1]
    err = float((last - ref).abs().max() / ref.abs().max())
    if err > 1e-4:
        print(f"bench_torch: KV decode disagrees with model.forward (relative error {err:.3g})", file=sys.stderr)
        return 1

    n = min(a.prefill, cfg.context)
    toks = torch.randint(2, cfg.vocab_size, (1, n), generator=g)
    with torch.no_grad():
        model(toks[:, :16])
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            model(toks)
            best = min(best, time.perf_counter() - t0)
    print(f"prefill_eps {n} {n / best:.3f}", flush=True)

    for p in (int(c) for c in a.contexts.split(",")):
        if p > cfg.context:
            continue
        ev = min(a.events, p - 1)
        dec = KVDecoder(model, cfg.context)
        # Cache contents do not change the work done: fill it with random values, not a prefill.
        dec.K.normal_()
        dec.V.normal_()
        dec.pos = p - ev
        dec.step(5)
        dec.pos = p - ev
        t0 = time.perf_counter()
        for i in range(ev):
            dec.step(2 + i % 300 % (cfg.vocab_size - 2))
        dt = time.perf_counter() - t0
        print(f"decode_eps {p} {ev / dt:.3f}", flush=True)

    wbytes = 4 * sum(p.numel() for name, p in model.named_parameters() if not name.endswith(".er"))
    print(f"weight_bytes {wbytes}")
    print(f"rss_mb {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

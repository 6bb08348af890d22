"""test_fast_attention.py: the blocked relative attention (train/fast_attention.py)
computes what model.py computes, forward and gradients, and a model using it
trains the same."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "train"))
import fast_attention as fa   # noqa: E402
from model import ModelConfig, MusicTransformer, sequence_nll   # noqa: E402

FAILS = []


def compare(L, M, block, dh=8, H=3, B=2):
    g = torch.Generator().manual_seed(L * 1000 + M + block)
    q, k, v = (torch.randn(B, H, L, dh, generator=g, dtype=torch.float64).requires_grad_()
               for _ in range(3))
    er = torch.randn(H, M, dh, generator=g, dtype=torch.float64).requires_grad_()
    dout = torch.randn(B, H, L, dh, generator=g, dtype=torch.float64)
    outs = {}
    for name, fn in (("plain", lambda: fa.reference_attention(q, k, v, er, "plain")),
                     ("skew", lambda: fa.reference_attention(q, k, v, er, "skew")),
                     ("chunked", lambda: fa.chunked_relative_attention(q, k, v, er, block))):
        o = fn()
        outs[name] = (o,) + torch.autograd.grad(o, (q, k, v, er), dout)
    for other in ("skew", "chunked"):
        for what, a, b in zip(("out", "dq", "dk", "dv", "dE_r"), outs[other], outs["plain"]):
            err = (a - b).abs().max().item()
            if not err < 1e-10:
                FAILS.append(f"L={L} M={M} block={block}: {other} {what} differs by {err:.2e}")
                print("FAIL:", FAILS[-1])
    # E_r rows beyond the distances used get no gradient; used ones do.
    used = min(M, L)
    der = outs["chunked"][4]
    if der[:, :used].abs().sum() == 0 or (M > L and der[:, L:].abs().sum() != 0):
        FAILS.append(f"L={L} M={M}: wrong E_r gradient support")
        print("FAIL:", FAILS[-1])


def main() -> int:
    # Sequence length a multiple of the block or not; max_rel below, at and above L.
    for L, M, block in ((16, 16, 4), (37, 10, 8), (37, 64, 16), (50, 7, 50), (33, 20, 5)):
        compare(L, M, block)
    # The model with chunked attention gives the same loss and gradients as the skewed one.
    torch.manual_seed(0)
    cfg = ModelConfig(n_layers=2, d_model=32, n_heads=4, d_ff=64, max_rel=12, context=40, dropout=0.0)
    m1 = MusicTransformer(cfg).double()
    m2 = MusicTransformer(cfg).double()
    m2.load_state_dict(m1.state_dict())
    used = fa.install(m2, "chunked", log=lambda s: None)
    x = torch.randint(2, 310, (3, 41))
    n1, _ = sequence_nll(m1, x)
    n2, _ = sequence_nll(m2, x)
    n1.backward()
    n2.backward()
    gerr = max((p1.grad - p2.grad).abs().max().item() for p1, p2 in zip(m1.parameters(), m2.parameters()))
    print(f"model: {used}: nll {n1.item():.10f} vs {n2.item():.10f}, max grad difference {gerr:.2e}")
    if used != "chunked" or abs(n1.item() - n2.item()) > 1e-9 or gerr > 1e-9:
        FAILS.append("model with chunked attention differs")
        print("FAIL:", FAILS[-1])
    # "auto" on a CPU keeps the skewed path (FlexAttention needs a GPU).
    m3 = MusicTransformer(cfg)
    if fa.install(m3, "auto", log=lambda s: None) != "skew" and not torch.cuda.is_available():
        FAILS.append("auto did not fall back to the skewed path on a CPU")
        print("FAIL:", FAILS[-1])
    # The self-check catches a wrong implementation.
    wrong = fa.self_check(lambda q, k, v, er: fa.reference_attention(q, k, v, er * 0.5), "cpu", L=40, M=16)
    if not wrong:
        FAILS.append("self_check accepted a wrong attention")
        print("FAIL:", FAILS[-1])
    print("FAIL" if FAILS else "OK")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

"""model.py: the reference Music Transformer (relative self-attention) in PyTorch.

This is the model the C engine (src/model/) must reproduce number for number.
Every architectural choice is written down in models/FORMAT.md; change one
here and the engine, the exporter and that file change with it.

Architecture (pre-LayerNorm decoder-only Transformer):
  x = emb[tokens]                                  no absolute timing signal
  for each layer:
      h = LN1(x);  q, k, v = h Wq^T, h Wk^T, h Wv^T  (no bias)
      per head: logits = (q k^T + S_rel) / sqrt(d_head), causal mask, softmax
                (window W > 0: event i sees only events i-W+1..i, as the C
                engine's rolling cache does in stream memory)
      S_rel[i, j] = q_i . E_r[i - j]  for 0 <= i - j < max_rel, else 0
      x = x + (attn) Wo^T                           (no bias)
      x = x + W2 GELU(W1 LN2(x) + b1) + b2          (exact erf GELU)
  logits = LN_f(x) emb^T                           (output tied to the embedding)
"""

import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelConfig:
    vocab_size: int = 310        # mt310 layout (PAD=0, EOS=1, ...)
    vocab_name: str = "mt310"
    n_layers: int = 6
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    max_rel: int = 1024          # relative distances >= max_rel add zero
    context: int = 2048          # the longest window the model is run on
    dropout: float = 0.1

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)


def relative_logits_skew(q: torch.Tensor, er: torch.Tensor) -> torch.Tensor:
    """S_rel by the skewing trick, O(L*D) extra memory (no L x L x D tensor).

    q:  (B, H, L, dh) queries;  er: (H, M, dh), er[:, d] for distance d.
    Returns (B, H, L, L) with out[..., i, j] = q_i . er[i - j] for
    0 <= i - j < M, and 0 for i - j >= M; entries with j > i are garbage
    (the caller masks them).
    """
    B, H, L, dh = q.shape
    m = min(L, er.shape[1])
    # Rows of e are relative positions -(L-1) .. 0, i.e. distance L-1-r.
    e = er[:, :m].flip(1)
    if m < L:
        e = F.pad(e, (0, 0, L - m, 0))           # distances >= max_rel: zero
    rel = torch.einsum("bhld,hmd->bhlm", q, e)   # (B, H, L, L), column r: distance L-1-r
    rel = F.pad(rel, (1, 0))                     # (B, H, L, L+1)
    rel = rel.reshape(B, H, L + 1, L)[:, :, 1:, :]
    return rel


def relative_logits_plain(q: torch.Tensor, er: torch.Tensor) -> torch.Tensor:
    """The naive twin of relative_logits_skew: gathers an L x L x dh tensor.

    Only for tests on short sequences; same contract as the skewed form,
    except that entries with j > i are 0.
    """
    B, H, L, dh = q.shape
    M = er.shape[1]
    i = torch.arange(L).view(L, 1)
    j = torch.arange(L).view(1, L)
    dist = i - j                                          # (L, L)
    valid = (dist >= 0) & (dist < M)
    idx = dist.clamp(0, M - 1)
    e = er[:, idx]                                        # (H, L, L, dh)
    rel = torch.einsum("bhid,hijd->bhij", q, e)
    return rel * valid.to(q.dtype)


class RelativeSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        # One relative-embedding table per head, indexed by distance 0..max_rel-1.
        self.er = nn.Parameter(torch.randn(cfg.n_heads, cfg.max_rel, cfg.d_head) * 0.02)
        self.drop = nn.Dropout(cfg.dropout)

    # The C engine keeps keys and values as half floats (its KV cache):
    # MusicTransformer.half_kv() rounds them here the same way, for the
    # golden references (train/golden.py).  Training never does.
    kv_half = False

    def kv(self, x: torch.Tensor):
        B, L, d = x.shape
        H, dh = self.cfg.n_heads, self.cfg.d_head
        k = self.wk(x).view(B, L, H, dh).transpose(1, 2)
        v = self.wv(x).view(B, L, H, dh).transpose(1, 2)
        if self.kv_half:
            k, v = k.half().float(), v.half().float()
        return k, v

    def forward(self, x: torch.Tensor, rel_impl: str = "skew", window: int = 0) -> torch.Tensor:
        B, L, d = x.shape
        H, dh = self.cfg.n_heads, self.cfg.d_head
        q = self.wq(x).view(B, L, H, dh).transpose(1, 2)   # (B, H, L, dh)
        k, v = self.kv(x)
        if rel_impl == "skew":
            rel = relative_logits_skew(q, self.er)
        elif rel_impl == "plain":
            rel = relative_logits_plain(q, self.er)
        else:
            raise ValueError(f"unknown rel_impl {rel_impl!r}")
        logits = (q @ k.transpose(-2, -1) + rel) / math.sqrt(dh)
        causal = torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1)
        if window > 0:      # the rolling cache: nothing window or more events back
            causal |= torch.ones(L, L, dtype=torch.bool, device=x.device).tril(-window)
        logits = logits.masked_fill(causal, float("-inf"))
        att = self.drop(torch.softmax(logits, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, L, d)
        return self.wo(y)


    def forward_blocks(self, x: torch.Tensor, window: int, block: int) -> torch.Tensor:
        """forward(x, window=WINDOW) (no dropout), computed BLOCK queries at a
        time against the keys of their windows, so that a sequence of any
        length T costs O(T * d + BLOCK * (BLOCK + WINDOW)) memory instead of
        O(T * T): the whole of a performance scored as one stream."""
        B, L, d = x.shape
        H, dh = self.cfg.n_heads, self.cfg.d_head
        M = self.er.shape[1]
        q = self.wq(x).view(B, L, H, dh).transpose(1, 2)
        k, v = self.kv(x)
        y = torch.empty_like(q)
        for s in range(0, L, block):
            e = min(s + block, L)
            ks = max(0, s - window + 1)
            qs = q[:, :, s:e]
            dist = (torch.arange(s, e, device=x.device).view(-1, 1)
                    - torch.arange(ks, e, device=x.device).view(1, -1))      # (Lq, Lk)
            qe = qs @ self.er.transpose(1, 2).unsqueeze(0)                  # (B, H, Lq, M)
            idx = dist.clamp(0, M - 1).expand(B, H, -1, -1)
            rel = torch.gather(qe, -1, idx) * ((dist >= 0) & (dist < M)).to(q.dtype)
            logits = (qs @ k[:, :, ks:e].transpose(-2, -1) + rel) / math.sqrt(dh)
            logits = logits.masked_fill((dist < 0) | (dist >= window), float("-inf"))
            y[:, :, s:e] = torch.softmax(logits, dim=-1) @ v[:, :, ks:e]
        return self.wo(y.transpose(1, 2).reshape(B, L, d))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=1e-5)
        self.attn = RelativeSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=1e-5)
        self.ff1 = nn.Linear(cfg.d_model, cfg.d_ff)
        self.ff2 = nn.Linear(cfg.d_ff, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, rel_impl: str = "skew", window: int = 0) -> torch.Tensor:
        x = x + self.drop(self.attn(self.ln1(x), rel_impl, window))
        x = x + self.drop(self.ff2(F.gelu(self.ff1(self.ln2(x)))))
        return x


class MusicTransformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        assert cfg.d_model % cfg.n_heads == 0, "d_model must be a multiple of n_heads"
        self.cfg = cfg
        self.emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model, eps=1e-5)
        self.drop = nn.Dropout(cfg.dropout)
        self.apply(self._init)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)

    def half_kv(self, on: bool = True) -> "MusicTransformer":
        """Keys and values rounded to half floats, as the C engine's cache holds them."""
        for blk in self.blocks:
            blk.attn.kv_half = on
        return self

    def forward(self, tokens: torch.Tensor, rel_impl: str = "skew", window: int = 0) -> torch.Tensor:
        """tokens (B, L) int64 -> logits (B, L, vocab_size) for the next event.
        WINDOW > 0: each event attends only to itself and the WINDOW-1 before it
        (the C engine's stream memory with context = WINDOW); 0: to all before it."""
        x = self.drop(self.emb(tokens))
        for blk in self.blocks:
            x = blk(x, rel_impl, window)
        return self.ln_f(x) @ self.emb.weight.t()

    @torch.no_grad()
    def forward_stream(self, tokens: torch.Tensor, window: int, block: int = 0) -> torch.Tensor:
        """forward(tokens, window=WINDOW) in evaluation (no dropout), layer by
        layer and BLOCK (default WINDOW) queries at a time: memory linear in
        the length, for scoring a whole performance as the C engine's stream
        memory does."""
        block = block or window
        x = self.emb(tokens)
        for blk in self.blocks:
            x = x + blk.attn.forward_blocks(blk.ln1(x), window, block)
            x = x + blk.ff2(F.gelu(blk.ff1(blk.ln2(x))))
        return self.ln_f(x) @ self.emb.weight.t()

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def masked_nll(logits: torch.Tensor, target: torch.Tensor, pad_id=None, mask=None) -> tuple:
    """The loss: the one next-event cross-entropy of training, evaluation
    and the golden references. Summed NLL in nats (fp32 softmax whatever
    LOGITS' type, summed in fp64) of TARGET (B, L) under LOGITS (B, L, V),
    and the number of events it counts: targets equal to PAD_ID (None:
    none) are skipped, and so are those where MASK (B, L bool), if given,
    is False."""
    keep = torch.ones_like(target, dtype=torch.bool) if mask is None else mask.clone()
    if pad_id is not None:
        keep &= target != pad_id
    nll = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), target.reshape(-1),
                          reduction="none")
    return (nll.double() * keep.reshape(-1)).sum(), int(keep.sum())


def sequence_nll(model: MusicTransformer, tokens: torch.Tensor, pad_id="auto") -> tuple:
    """Summed next-event NLL (nats) and the number of predicted events for a
    batch (B, L): each position predicts the next; PAD targets are skipped.
    pad_id "auto" means 0 for layouts with PAD (mt310) and none for layouts
    without it (prnn388, where id 0 is NOTE_ON(0)); None skips nothing."""
    if pad_id == "auto":
        pad_id = 0 if model.cfg.vocab_name != "prnn388" else None
    return masked_nll(model(tokens[:, :-1]), tokens[:, 1:], pad_id)


def eval_windows(n_tokens: int, context: int) -> list:
    """How a long sequence is scored, the same in PyTorch and in `continuo eval`:
    consecutive windows of at most context+1 tokens that overlap by one token,
    [0, C], [C, 2C], ...; in each window every token after the first is
    predicted from the ones before it inside the window. So every token but
    the sequence's first is predicted exactly once, with 1..C tokens of
    history. Returns (start, end) pairs, end exclusive, each of length >= 2."""
    out = []
    start = 0
    while start + 1 < n_tokens:
        end = min(start + context + 1, n_tokens)
        out.append((start, end))
        start = end - 1
    return out

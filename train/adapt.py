#!/usr/bin/env python3
"""adapt.py: fine-tunes a model file on one player's playing, within a time budget (`continuo adapt` runs it).

  /usr/bin/python3 train/adapt.py --model START.gguf --train TRAIN.tok --held HELD.tok \
      --reference REF.tok --out OUT.gguf --result RESULT.json --seconds 540

TRAIN.tok is the player's playing to learn from, HELD.tok the newest tenth
of it, held back to judge with, REF.tok the general reference (continuations
the shipped model sampled itself: models/adapt-reference.tok). Both the
start model and the result are scored on HELD and REF exactly as
`continuo eval` scores (train.py's evaluate, the weights as the file stores
them); OUT.gguf is written (all or nothing) with the best weights seen on
HELD, and RESULT.json holds the four NLLs, the steps and the seconds.
Whether the result is kept is `continuo adapt`'s decision, not this script's.
Exit status 3: PyTorch or NumPy cannot be imported.

The drift guards (docs/TRAINING.md, "Adapting to a player"):
  * a pull toward the start model's odds: the loss is the player's
    cross-entropy plus KL_WEIGHT x KL(start || adapted) on the same crops,
    so events the player's playing says nothing about keep their odds;
  * replay: REPLAY_WEIGHT x KL(start || adapted) on crops of general music
    (--replay: continuations the shipped model sampled of the motif moved
    in key, pace and loudness, train/adapt_replay.py; a file apart from
    the reference that judges), so contexts unlike the player's keep
    theirs too; and on PRIMED continuations by the start model of crops
    of the player's own playing (--continuo: `continuo adapt` passes
    itself), music in the player's key, pace and style that is not the
    player's pieces, so that what is learnt is the pieces, not the style
    (a held-out piece of the same composer drifts a third as much);
  * jitter: each crop's velocities moved by up to VEL_JITTER bins and its
    time shifts scaled by up to 1 + TIME_JITTER, so that what is learnt of
    a piece is its notes more than one take's loudness and tempo;
  * early stopping: HELD is scored every few steps and the best weights
    are the result; in the second half of the learning rate's decay
    (PATIENCE_FROM), PATIENCE scorings without a better one end the run
    (earlier, at a high rate, the held-back NLL may rise for minutes
    before it falls for good);
  * a learning rate of 3e-4 with a short warmup and a cosine decay
    over the steps the budget allows, Adam without weight decay (decay
    toward zero would be a drift of its own);
  * a step back toward the start (--blend): the result is the start
    weights plus ALPHA times what the fine-tune moved them, ALPHA the
    largest of BLENDS whose reference NLL is at most --blend of it above
    the start model's (and whose held-back NLL is still lower).  Near the
    start model the drift on other music grows as ALPHA squared while the
    fit to the player grows about as ALPHA: half the step keeps most of
    the fit for a quarter of the drift.

The player's memory (train/player_memory.py): the file also carries the
note-ons of the playing, which the engine mixes into the model's odds of
the next note-on when what sounds matches a run of them.  HELD's and REF's
"after" NLLs are the weights with the memory of TRAIN (what the check
judges; RESULT.json has the weights' alone beside them); the file's memory
holds HELD's notes too.  --no-memory: the weights alone.
"""

import argparse
import copy
import json
import math
import os
import shutil
import sys
import time

try:
    import numpy as np
    import torch
except ImportError as e:            # `continuo adapt` tells the user what to install
    sys.stderr.write(f"adapt.py: {e}\n")
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import adapt_replay                                       # noqa: E402
import data as data_mod                                   # noqa: E402
import export as export_mod                               # noqa: E402
import player_memory as pm                                # noqa: E402
import train as train_mod                                 # noqa: E402
from model import masked_nll                              # noqa: E402

# Defaults, measured with bench/adapt_player.py (docs/TRAINING.md: 2026-12-05)
LR = 3e-4
KL_WEIGHT = 0.3
REPLAY_WEIGHT = 3.0
BATCH = 8
CROP = 256            # events per crop (the player's phrases; shorter than the context: more crops a step)
PATIENCE = 4
PATIENCE_FROM = 0.5   # ... counted from this share of the training time on (Schubert: worse than the start at 130 s, best at 590 s)
BLEND = 0.005         # the reference's NLL may rise this share at most (the check allows 0.01)
BLENDS = (0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25)   # shares of the step, the largest first
BLEND_MARGIN = 1.2    # the first share tried: this times the one the drift's square law predicts
TRANSPOSE = 3         # crops of the player's playing transposed by up to this many semitones
VEL_JITTER = 2        # a crop's velocities moved by up to this many bins (of 32)
TIME_JITTER = 0.15    # a crop's time shifts scaled by up to 1.15 (or down to 1/1.15)
PRIMED = 64           # continuations of the player's own crops in the replay ...
PRIMED_SECONDS = 30   # ... each this long
PRIMER = 384          # events of the player's playing each continues ...
PRIMER_KEPT = 64      # ... of which the last this many stay before the continuation
EVAL_SHARE = 0.2      # at most this share of the training time goes to scoring HELD


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="the model file to start from (.gguf)")
    ap.add_argument("--train", required=True, help="the player's playing to learn from (.tok)")
    ap.add_argument("--held", required=True, help="the newest tenth, held back to judge with (.tok)")
    ap.add_argument("--reference", required=True, help="the general reference (.tok)")
    ap.add_argument("--out", required=True, help="the adapted model file to write (.gguf)")
    ap.add_argument("--result", required=True, help="the scores, as JSON")
    ap.add_argument("--seconds", type=float, required=True, help="the whole budget, scoring included")
    ap.add_argument("--until", type=float, default=0,
                    help="or the end of the budget as CLOCK_MONOTONIC seconds (time.monotonic), whichever "
                    "comes first: `continuo adapt` passes it, so Python's start-up counts too")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=LR)
    ap.add_argument("--kl-weight", type=float, default=KL_WEIGHT)
    ap.add_argument("--replay", help="general music to keep the start model's odds on (.tok; "
                    "models/adapt-replay.tok, not the reference)")
    ap.add_argument("--replay-weight", type=float, default=REPLAY_WEIGHT)
    ap.add_argument("--continuo", help="the continuo binary: the start model continues crops of the "
                    "player's playing, for the replay (none: the replay file alone)")
    ap.add_argument("--primed", type=int, default=PRIMED, help="how many continuations of the player's crops")
    ap.add_argument("--primed-seconds", type=float, default=PRIMED_SECONDS)
    ap.add_argument("--blend", type=float, default=BLEND,
                    help="the share the reference's NLL may rise; the fine-tune's step is scaled back until "
                    "it is within it (0: no step back)")
    ap.add_argument("--max-steps", type=int, default=100000)
    ap.add_argument("--patience", type=int, default=PATIENCE,
                    help="scorings of HELD without a better one that end the run")
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--transpose", type=int, default=TRANSPOSE,
                    help="crops of the player's playing transposed by up to this many semitones")
    ap.add_argument("--vel-jitter", type=int, default=VEL_JITTER,
                    help="crops' velocities moved by up to this many bins")
    ap.add_argument("--no-memory", dest="memory", action="store_false",
                    help="no memory of the player's notes in the file (the weights alone)")
    ap.add_argument("--time-jitter", type=float, default=TIME_JITTER,
                    help="crops' time shifts scaled by a factor up to 1+F (or down to 1/(1+F))")
    return ap.parse_args(argv)


class Bar:
    """The progress bar on stderr: redrawn in place on a terminal, a line per scoring otherwise."""

    def __init__(self, seconds: float):
        self.seconds, self.t0 = seconds, time.monotonic()
        self.tty = sys.stderr.isatty()

    def show(self, what: str, final: bool = False) -> None:
        el = time.monotonic() - self.t0
        frac = min(el / max(self.seconds, 1e-9), 1.0)
        w = 24
        k = int(w * frac)
        bar = "=" * k + (">" if k < w else "") + " " * max(w - k - 1, 0)
        line = f"adapt [{bar}] {100 * frac:3.0f}%  {el:5.0f} of {self.seconds:.0f} s  {what}"
        if self.tty:
            sys.stderr.write("\r" + line[:118].ljust(118) + ("\n" if final else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def load(path: str, vocab: str) -> list:
    try:
        seqs, _ = data_mod.load_seqs([path], vocab)
    except (OSError, ValueError) as e:
        raise SystemExit(f"adapt.py: {e}")
    seqs = [np.asarray(s, dtype=np.int64) for s in seqs if len(s) >= 2]
    if not seqs:
        raise SystemExit(f"{path}: no sequence of two events or more")
    return seqs


def score(model, seqs: list, context: int, dtype: str, memory=None) -> float:
    """NLL per event of SEQS as `continuo eval` gives it for the model file MODEL
    would be; with MEMORY (a player_memory.Memory the file carries) mixed in."""
    m = train_mod.weights_as_exported(model, dtype)
    if memory is not None:
        lt, lo = pm.model_odds(m, seqs, context, memory.lay)
        return pm.nll_with_memory(memory, memory.lay, seqs, lt, lo)
    total, count = train_mod.evaluate(m, seqs, context, torch.device("cpu"))
    return total / max(count, 1)


def lr_at(frac: float, lr: float) -> float:
    """The learning rate FRAC of the way through the training time: a warmup
    over the first tenth, then a cosine decay to a tenth of LR."""
    if frac < 0.1:
        return lr * max(frac, 0.01) / 0.1
    p = min((frac - 0.1) / 0.9, 1.0)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))


def kl_to_start(logits: torch.Tensor, ref: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """KL(start || model) summed over the scored positions MASK."""
    logp = torch.log_softmax(logits.float(), -1)
    logq = torch.log_softmax(ref.float(), -1)
    return ((logq.exp() * (logq - logp)).sum(-1) * mask).sum()


def step_loss(model, start, x: torch.Tensor, pad_id, kl_weight: float, amp) -> torch.Tensor:
    """Cross-entropy of the crops X plus KL_WEIGHT x KL(start || model) on their scored events."""
    tgt = x[:, 1:]
    mask = tgt != pad_id if pad_id is not None else torch.ones_like(tgt, dtype=torch.bool)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        logits = model(x[:, :-1])
        with torch.no_grad():
            ref = start(x[:, :-1]) if kl_weight > 0 else None
    nll, n = masked_nll(logits.float(), tgt, pad_id, mask)
    loss = nll / max(n, 1)
    if ref is not None:
        loss = loss + kl_weight * kl_to_start(logits, ref, mask) / max(n, 1)
    return loss


def replay_loss(model, start, x: torch.Tensor, pad_id, amp) -> torch.Tensor:
    """KL(start || model) on replay crops X: the start model's odds kept where the player's playing is not."""
    mask = x[:, 1:] != pad_id if pad_id is not None else torch.ones_like(x[:, 1:], dtype=torch.bool)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        logits = model(x[:, :-1])
        with torch.no_grad():
            ref = start(x[:, :-1])
    return kl_to_start(logits, ref, mask) / max(int(mask.sum()), 1)


def primed_replay(a, train_seqs: list, vocab: str, work: str, until: float, bar: Bar) -> list:
    """--primed continuations by the start model of PRIMER-event crops of the
    player's playing (the part learnt from, never HELD; ids in the layout
    VOCAB, the model's), each kept from
    PRIMER_KEPT events before its primer's end: music in the player's key, pace and
    style that is not the player's pieces, where the replay KL keeps the
    start model's odds. Fewer when the monotonic time UNTIL comes."""
    rng = np.random.default_rng(a.seed + 11)
    long_enough = [np.asarray(s, dtype=np.int64) for s in train_seqs if len(s) > 128]
    if not long_enough or a.primed <= 0 or not a.continuo:
        return []
    os.makedirs(work, exist_ok=True)
    out = []
    for k in range(a.primed):
        if time.monotonic() >= until:
            break
        s = long_enough[rng.integers(len(long_enough))]
        end = int(rng.integers(128, len(s) + 1))
        primer = s[max(end - PRIMER, 0):end]
        try:
            ids = adapt_replay.continue_ids(a.continuo, a.model, primer, a.primed_seconds, 300 + k, work,
                                            threads=a.threads, candidates=1, vocab=vocab)
        except SystemExit as e:         # the replay file alone, then: adapt still runs
            bar.show(f"the start model's continuations of the player's playing: none ({e})", final=True)
            break
        out.append(ids[max(len(primer) - PRIMER_KEPT, 0):].astype(np.uint16))
        if (k + 1) % 8 == 0 or k + 1 == a.primed or bar.tty:
            bar.show(f"the start model continues the player's playing: {k + 1} of {a.primed}")
    shutil.rmtree(work, ignore_errors=True)     # a failed `continue` leaves its files
    return out


class Adapter:
    """The fine-tune: crops of the player's playing, Adam, scoring HELD now and then, the best kept."""

    def __init__(self, a, model, mc, train_seqs, held, dtype, replay=None):
        self.a, self.model, self.mc, self.held, self.dtype = a, model, mc, held, dtype
        self.start = copy.deepcopy(model).eval()
        for p in self.start.parameters():
            p.requires_grad_(False)
        lay = data_mod.layout(mc.vocab_name)
        self.pad_id = lay.pad_id
        self.lay = lay
        self.rng = np.random.default_rng(a.seed + 7)
        self.corpus = data_mod.Corpus(train_seqs, lay, min(CROP, mc.context), transpose_max=a.transpose, seed=a.seed)
        self.replay = data_mod.Corpus(replay, lay, min(CROP, mc.context), transpose_max=3, seed=a.seed + 1) \
            if replay and a.replay_weight > 0 else None
        self.opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.98))
        self.amp = train_mod.cpu_has_bf16()
        self.best_state, self.best, self.best_step, self.last = None, None, 0, None

    def jitter(self, rows: np.ndarray) -> np.ndarray:
        """Each crop's velocities moved by up to --vel-jitter bins and its time
        shifts scaled by up to 1 + --time-jitter: the piece's notes learnt, less
        of one performance's loudness and tempo."""
        lay, a, n = self.lay, self.a, len(rows)
        if a.vel_jitter > 0:
            rows = data_mod.shift_velocities(rows, self.rng.integers(-a.vel_jitter, a.vel_jitter + 1, n)[:, None], lay)
        if a.time_jitter > 0:
            f = np.exp(self.rng.uniform(-1, 1, n) * math.log1p(a.time_jitter))[:, None]
            rows = data_mod.scale_time_shifts(rows, f, lay)
        return rows

    def timed_step(self, step: int, frac: float) -> float:
        t = time.monotonic()
        self.model.train()
        for g in self.opt.param_groups:
            g["lr"] = lr_at(frac, self.a.lr)
        x = torch.from_numpy(self.jitter(self.corpus.batch(step, self.a.batch)))
        loss = step_loss(self.model, self.start, x, self.pad_id, self.a.kl_weight, self.amp)
        if self.replay is not None:
            r = torch.from_numpy(self.replay.batch(step, max(self.a.batch // 2, 1)))
            loss = loss + self.a.replay_weight * replay_loss(self.model, self.start, r, self.pad_id, self.amp)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        return time.monotonic() - t

    def judge(self, step: int) -> bool:
        """Scores HELD; keeps the weights when they are the best yet. True when they are."""
        nll = self.last = score(self.model, self.held, self.mc.context, self.dtype)
        if self.best is None or nll < self.best:
            self.best, self.best_step = nll, step
            self.best_state = copy.deepcopy(self.model.state_dict())
            return True
        return False

    def run(self, held_start: float, until: float, eval_s: float, bar: Bar) -> int:
        """Trains until the monotonic time UNTIL, max_steps or, past
        PATIENCE_FROM of the time, --patience scorings without a better one;
        HELD is scored so that scoring takes at most EVAL_SHARE of the time.
        The best weights are the model's at the end. Returns the steps taken."""
        self.best, self.best_state = held_start, copy.deepcopy(self.model.state_dict())
        t_start = last = time.monotonic()
        span = max(until - t_start, 1e-3)
        steps, misses, step_s, judged = 0, 0, 0.0, True
        while steps < self.a.max_steps and time.monotonic() + step_s < until:
            step_s = self.timed_step(steps, (time.monotonic() - t_start) / span)
            steps += 1
            judged = False
            if time.monotonic() - last >= eval_s / EVAL_SHARE:
                better = self.judge(steps)
                misses = 0 if better or (time.monotonic() - t_start) / span < PATIENCE_FROM else misses + 1
                last, judged = time.monotonic(), True
                bar.show(f"step {steps}  held-back NLL {self.last:.4f} (best {self.best:.4f}, start {held_start:.4f})")
                if misses >= self.a.patience:
                    bar.show(f"held-back NLL not lower for {self.a.patience} scorings: stopping at step {steps}")
                    break
        if not judged:
            self.judge(steps)
        self.model.load_state_dict(self.best_state)
        return steps


def blended(start_state: dict, tuned: dict, alpha: float) -> dict:
    """The weights START_STATE + ALPHA x (TUNED - START_STATE) (integer buffers as TUNED has them)."""
    return {k: start_state[k] + alpha * (v - start_state[k]) if v.is_floating_point() else v
            for k, v in tuned.items()}


def blend_back(model, start_state: dict, held: list, ref: list, context: int, dtype: str,
               held_before: float, ref_before: float, held_after: float, ref_after: float, limit: float,
               until: float, bar: Bar):
    """Scales the fine-tune's step (start + ALPHA x (weights - start)) back
    to the largest ALPHA of BLENDS whose reference NLL is within LIMIT of
    the start model's and whose held-back NLL is lower than the start's;
    stops trying at the monotonic time UNTIL.  Returns (alpha, held, ref):
    the model's weights are that blend, or the whole step's (HELD_AFTER,
    REF_AFTER) when none is.  The drift grows about as ALPHA squared, so the
    shares above BLEND_MARGIN times sqrt(LIMIT / the whole step's drift) are
    not scored: that keeps the search to a few scorings of the reference."""
    tuned = copy.deepcopy(model.state_dict())
    drift = ref_after / ref_before - 1
    first = BLEND_MARGIN * math.sqrt(limit / drift) if drift > limit else 1.0
    for alpha in (b for b in BLENDS if b <= first):
        if time.monotonic() >= until:
            break
        model.load_state_dict(blended(start_state, tuned, alpha))
        r = score(model, ref, context, dtype)
        if r > ref_before * (1 + limit):
            bar.show(f"blend {alpha:.2f}: reference {r:.4f} (start {ref_before:.4f}): drifts too far")
            continue
        h = score(model, held, context, dtype)
        bar.show(f"blend {alpha:.2f}: held-back NLL {h:.4f}, reference {r:.4f} (start {ref_before:.4f})")
        if h < held_before:
            return alpha, h, r
    model.load_state_dict(tuned)        # none is: the whole step, for the check to refuse with its reason
    return 1.0, held_after, ref_after


def main(argv=None) -> int:
    a = parse_args(argv)
    t0 = time.monotonic()
    deadline = min(t0 + a.seconds, a.until) if a.until > 0 else t0 + a.seconds
    torch.set_num_threads(max(a.threads, 1))
    torch.manual_seed(a.seed)
    train_mod.keep_freed_memory()
    bar = Bar(deadline - t0)
    try:
        model, mc, kvs = export_mod.read_model(a.model)
    except (OSError, ValueError, KeyError) as e:
        raise SystemExit(f"{a.model}: cannot be read as a model: {e}")
    dtype = export_mod.dtype_of(kvs)
    train_seqs, held = load(a.train, mc.vocab_name), load(a.held, mc.vocab_name)
    ref = load(a.reference, mc.vocab_name)
    lay = data_mod.layout(mc.vocab_name)
    # The player's memory (train/player_memory.py): the check judges the
    # weights with the memory of the playing learnt from; the file carries
    # the memory of all of it, the held-back tenth too.
    memory = pm.Memory.from_ids(train_seqs, lay) if a.memory else None
    start_memory = pm.from_file(a.model)          # an adapted start model's own, else None
    bar.show("scoring the start model")
    t = time.monotonic()
    held_before = score(model, held, mc.context, dtype)
    held_s = time.monotonic() - t
    ref_before = score(model, ref, mc.context, dtype)
    eval_s = time.monotonic() - t
    file_before = ((score(model, held, mc.context, dtype, start_memory), score(model, ref, mc.context, dtype,
                                                                             start_memory))
                   if start_memory else (held_before, ref_before))
    bar.show(f"start model: held-back NLL {file_before[0]:.4f}, reference {file_before[1]:.4f}")
    reserve = (2.3 if memory else 1.3) * eval_s + 3.0     # the final scorings and the export
    replay = load(a.replay, mc.vocab_name) if a.replay else []
    work = os.path.join(os.path.dirname(os.path.abspath(a.out)), "primed")
    replay += primed_replay(a, train_seqs, mc.vocab_name, work, t0 + 0.1 * (deadline - t0), bar)
    ad = Adapter(a, model, mc, train_seqs, held, dtype, replay)
    steps, alpha = 0, 1.0
    if a.max_steps > 0:
        blend_s = 4 * eval_s if a.blend > 0 else 0.0       # the blends scored: the reference for most
        steps = ad.run(held_before, deadline - reserve - blend_s, held_s, bar)
    model.eval()
    held_after = score(model, held, mc.context, dtype) if steps else held_before
    ref_after = score(model, ref, mc.context, dtype)
    if steps and a.blend > 0 and ref_after > ref_before * (1 + a.blend):
        alpha, held_after, ref_after = blend_back(model, ad.start.state_dict(), held, ref, mc.context, dtype, held_before,
                                                  ref_before, held_after, ref_after, a.blend, deadline - reserve,
                                                  bar)
    weights_after = (held_after, ref_after)
    if memory:
        bar.show("scoring with the player's memory")
        held_after, ref_after = (score(model, held, mc.context, dtype, memory),
                                 score(model, ref, mc.context, dtype, memory))
    held_before, ref_before = file_before
    kept = pm.Memory.from_ids(train_seqs + held, lay) if memory else None
    prov = {"init_from": os.path.abspath(a.model), "steps": steps, "valid_nll": held_after,
            "adapt_held_before": held_before, "adapt_reference_after": ref_after}
    tmp = a.out + ".part"
    export_mod.export_model(model, mc, tmp, prov, dtype=dtype, extra=pm.file_parts(kept) if kept else None)
    os.replace(tmp, a.out)
    res = {"held_before": held_before, "held_after": held_after, "ref_before": ref_before,
           "ref_after": ref_after, "held_after_weights": weights_after[0], "ref_after_weights": weights_after[1],
           "memory_notes": kept.notes() if kept else 0, "steps": steps, "best_step": ad.best_step,
           "held_events": int(sum(len(s) - 1 for s in held)),
           "train_events": int(sum(len(s) for s in train_seqs)),
           "seconds": time.monotonic() - t0, "lr": a.lr, "kl_weight": a.kl_weight, "blend": alpha,
           "replay_weight": a.replay_weight if a.replay else 0}
    with open(a.result + ".part", "w") as fh:
        json.dump(res, fh, indent=1)
    os.replace(a.result + ".part", a.result)
    bar.show(f"done: held-back NLL {held_before:.4f} -> {held_after:.4f}, "
             f"reference {ref_before:.4f} -> {ref_after:.4f}", final=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

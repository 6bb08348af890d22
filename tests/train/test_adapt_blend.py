"""test_adapt_blend.py: adapt.py's step back toward the start model (--blend), its crops' jitter and transposition, and its replay of the player's style.

A fine-tune whose whole step drifts more on the general reference than the
blend allows is scaled back to the largest share of its step that stays
within it and still fits the held-back playing better; when no share does,
the whole step stays, so that `continuo adapt` refuses it and says it
drifted.  The scores here are functions of the share (a weight that is 0
at the start and 1 after the fine-tune): the drift grows as the share
squared and the fit as the share, as they do near the start model, so the
share chosen is known exactly.

The replay of the player's style: the start model (the shipped one, run
by the real `continuo continue`) continues crops of the player's playing,
and each continuation starts in that playing and goes on past it; a
continuo that cannot continue leaves the replay file alone, and no work
files stay behind either way.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "train"))
import adapt   # noqa: E402

failures = 0


def check(cond: bool, what: str) -> None:
    global failures
    print(("ok    " if cond else "FAIL  ") + what)
    failures += 0 if cond else 1


class Quiet:
    tty = False

    def show(self, what: str, final: bool = False) -> None:
        print("  bar:", what)


HELD0, REF0 = 2.0, 1.8


def fake_score(drift: float, fit: float):
    """score(model, seqs, ...) for a model whose weight w is the share of the
    step: the reference (seqs == 'ref') REF0 (1 + DRIFT w^2), the held-back
    tenth HELD0 (1 - FIT w)."""
    def score(model, seqs, context, dtype):
        w = float(model.weight.detach().reshape(-1)[0])
        return REF0 * (1 + drift * w * w) if seqs == "ref" else HELD0 * (1 - fit * w)
    return score


def run(drift: float, fit: float, limit: float, scored: list = None):
    """blend_back on a one-weight model; SCORED, when given, gets the set of each scoring ('ref', 'held')."""
    model = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(0.0)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        model.weight.fill_(1.0)                 # the whole step
    fake = fake_score(drift, fit)
    adapt.score = fake
    held1, ref1 = adapt.score(model, "held", 0, ""), adapt.score(model, "ref", 0, "")
    if scored is not None:
        adapt.score = lambda m, seqs, c, d: scored.append(seqs) or fake(m, seqs, c, d)
    alpha, held, ref = adapt.blend_back(model, start, "held", "ref", 0, "", HELD0, REF0, held1, ref1, limit,
                                        float("inf"), Quiet())
    return alpha, held, ref, float(model.weight.detach().reshape(-1)[0])


# 4 % drift for the whole step: 0.75 -> 2.25 %, 0.5 -> 1 %, 0.4 -> 0.64 %, 0.35 -> 0.49 %: within 0.5 % from 0.35 on
alpha, held, ref, w = run(0.04, 0.05, 0.005)
check(alpha == 0.35 and abs(w - 0.35) < 1e-6, f"4 % of drift, 0.5 % allowed: the step scaled to 0.35 ({alpha}, weight {w})")
check(abs(ref / REF0 - 1 - 0.04 * 0.35 ** 2) < 1e-9 and held < HELD0,
      f"the scores returned are the blend's: reference +{100 * (ref / REF0 - 1):.2f} %, held-back {held:.4f}")

# 1.5 % drift: 0.6 gives 0.54 %, 0.55 gives 0.45 %: 0.55
alpha, held, ref, w = run(0.015, 0.05, 0.005)
check(alpha == 0.55 and abs(w - 0.55) < 1e-6, f"1.5 % of drift: the step scaled to 0.55 ({alpha})")

# the search starts near the share the square law predicts: a few scorings, not the whole grid
scored = []
run(0.015, 0.05, 0.005, scored)
check(scored.count("ref") <= 3 and scored.count("held") == 1,
      f"1.5 % of drift: {scored.count('ref')} scorings of the reference, {scored.count('held')} of the held-back tenth")

# 20 % drift: even 0.25 drifts 1.25 %: the whole step stays, for the check to refuse it
alpha, held, ref, w = run(0.20, 0.05, 0.005)
check(alpha == 1.0 and abs(w - 1.0) < 1e-6 and abs(ref / REF0 - 1.2) < 1e-9,
      f"no share within the limit: the whole step and its scores stay ({alpha}, reference +{100 * (ref / REF0 - 1):.1f} %)")

# a share that is within the limit but fits no better is not taken: a step that only drifts
alpha, held, ref, w = run(0.04, -0.05, 0.005)
check(alpha == 1.0 and held > HELD0, f"a step that fits worse is not scaled into a kept one ({alpha})")

# The jitter of a crop (--vel-jitter, --time-jitter): velocities move by at
# most the bins asked and stay in the layout, time shifts scale by at most
# the factor asked and stay in 1..100 steps, notes and PAD never move, and
# every crop draws its own amount.
import argparse                                 # noqa: E402
import numpy as np                              # noqa: E402
import data as data_mod                         # noqa: E402

lay = data_mod.layout("mt310")
jit = adapt.Adapter.__new__(adapt.Adapter)
jit.lay, jit.rng = lay, np.random.default_rng(5)
jit.a = argparse.Namespace(vel_jitter=2, time_jitter=0.15)
row = np.array([0, lay.velocity_base + 0, lay.note_on_base + 39, lay.time_shift_base + 99, lay.velocity_base + 31,
                lay.note_off_base + 39, lay.time_shift_base + 19, lay.time_shift_base] * 8, dtype=np.int64)
rows = np.tile(row, (64, 1))
out = jit.jitter(rows.copy())
vel = rows >= lay.velocity_base
ts = (rows >= lay.time_shift_base) & (rows < lay.velocity_base)
dv = out[vel] - rows[vel]
check(np.array_equal(out[~vel & ~ts], rows[~vel & ~ts]), "notes and PAD are not moved")
check(np.abs(dv).max() <= 2 and out[vel].min() >= lay.velocity_base and out[vel].max() < lay.size,
      f"velocities move by at most 2 bins and stay in the layout (moved {dv.min()}..{dv.max()})")
k0, k1 = rows[ts] - lay.time_shift_base + 1, out[ts] - lay.time_shift_base + 1
ratio = k1[k0 == 20] / 20.0
check(ratio.min() >= 1 / 1.15 - 0.03 and ratio.max() <= 1.15 + 0.03 and k1.min() >= 1 and k1.max() <= 100,
      f"time shifts scale by at most 1.15 either way and stay 1..100 steps ({ratio.min():.3f}..{ratio.max():.3f})")
check(len({tuple(r) for r in out}) > 16, "each crop draws its own jitter")
jit.a = argparse.Namespace(vel_jitter=0, time_jitter=0.0)
check(np.array_equal(jit.jitter(rows.copy()), rows), "no jitter asked: the crops as drawn")

# The crops' transposition (--transpose): the player's crops stay in the
# keys played with 0, and are moved by up to 3 semitones by default.
from model import ModelConfig, MusicTransformer     # noqa: E402

tiny = ModelConfig(n_layers=1, d_model=16, n_heads=2, d_ff=32, max_rel=64, context=64, dropout=0.0)
played = [np.array([lay.note_on_base + 39 + (i % 5) if i % 2 == 0 else lay.time_shift_base + 9
                    for i in range(300)], dtype=np.int64)]
pitches = set(played[0][played[0] < lay.note_off_base] - lay.note_on_base)


def crop_pitches(argv):
    a = adapt.parse_args(["--model", "m", "--train", "t", "--held", "h", "--reference", "r", "--out", "o",
                          "--result", "j", "--seconds", "1", *argv])
    ad = adapt.Adapter(a, MusicTransformer(tiny), tiny, played, played, "f32")
    rows = np.concatenate([ad.corpus.batch(step, 8) for step in range(8)])
    return a.transpose, set(rows[(rows >= lay.note_on_base) & (rows < lay.note_off_base)] - lay.note_on_base)


t, seen = crop_pitches(["--transpose", "0"])
check(t == 0 and seen == pitches, f"--transpose 0: the crops' pitches are the ones played ({sorted(seen)})")
t, seen = crop_pitches([])
check(t == 3 and seen - pitches and min(seen) >= min(pitches) - 3 and max(seen) <= max(pitches) + 3,
      f"by default the crops move by up to 3 semitones ({min(seen)}..{max(seen)}, played {min(pitches)}..{max(pitches)})")

# The replay of the player's style (adapt.py --continuo): the player's
# playing here is the bundled motif; the held-back part is never a primer.
import subprocess                               # noqa: E402
import tempfile                                 # noqa: E402
import time                                     # noqa: E402
import tokfile                                  # noqa: E402

CONTINUO = os.environ.get("CONTINUO")
SRC = os.environ.get("CONTINUO_SRC", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
if CONTINUO:
    with tempfile.TemporaryDirectory(prefix="adapt-primed-") as tmp:
        subprocess.run([CONTINUO, "encode", os.path.join(SRC, "models", "motif.mid"), "-o", f"{tmp}/m.tok"],
                       check=True, capture_output=True)
        motif = np.asarray(tokfile.read(f"{tmp}/m.tok").seqs[0], dtype=np.int64)
        pitches = set((motif[(motif >= lay.note_on_base) & (motif < lay.note_off_base)] - lay.note_on_base).tolist())
        a = argparse.Namespace(seed=1, primed=3, continuo=CONTINUO, primed_seconds=5, threads=1,
                               model=os.path.join(SRC, "models", "continuo-default.gguf"))
        out = adapt.primed_replay(a, [motif], "mt310", f"{tmp}/primed", time.monotonic() + 120, Quiet())
        check(len(out) == 3, f"3 continuations of the player's crops asked, {len(out)} made")
        for k, o in enumerate(out):
            head = o[:64]
            on = set((head[(head >= lay.note_on_base) & (head < lay.note_off_base)] - lay.note_on_base).tolist())
            check(on and on <= pitches and len(o) > 100,
                  f"continuation {k} starts in the player's playing (notes {sorted(on)}) and goes on ({len(o)} events)")
        check(not os.path.exists(f"{tmp}/primed"), "its work folder is removed")
        a.continuo = "/bin/false"
        out = adapt.primed_replay(a, [motif], "mt310", f"{tmp}/primed", time.monotonic() + 120, Quiet())
        check(out == [] and not os.path.exists(f"{tmp}/primed"),
              "a continuo that cannot continue: no continuations, the replay file alone, no work folder left")

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)

"""test_player_memory.py: the player's memory (train/player_memory.py), the reference the engine's will match.

A piece the player played comes back with its chords rolled the other way
and the hands apart: the memory still knows what comes next, and once it
has been right its odds take most of the model's note-on odds.  Music it
does not hold leaves the model's odds as they were.  The mixed odds are a
distribution, the events that are not note-ons keep the model's odds, and
the NLL the benchmark computes from the targets alone is the NLL of the
mixed rows.
"""

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "train"))
import data            # noqa: E402
import player_memory as pm   # noqa: E402

failures = 0
LAY = data.layout("mt310")
ON, TS = LAY.note_on_base, LAY.time_shift_base


def check(cond: bool, what: str) -> None:
    global failures
    print(("ok    " if cond else "FAIL  ") + what)
    failures += 0 if cond else 1


def performance(chords) -> list:
    """Token ids: each chord's notes (pitches in the layout, in the order given), then a time shift."""
    ids = []
    for chord in chords:
        ids += [ON + p for p in chord] + [TS + 9]
    return ids


rng = np.random.default_rng(5)
piece = [sorted(rng.choice(np.arange(20, 70), size=1 if rng.random() < 0.6 else int(rng.integers(2, 4)),
                            replace=False).tolist()) for _ in range(160)]
memory = pm.Memory.from_ids([performance(piece)], LAY)
chords = [k for k, c in enumerate(piece) if len(c) > 1]
again = performance([list(reversed(c)) if k in chords[::2] else c for k, c in enumerate(piece)])  # every other chord rolled the other way
f = pm.Follower(memory, LAY)
right, asked = 0, 0
for t in range(1, len(again)):
    f.feed(again[t - 1])
    tok = again[t]
    if f.odds is not None and ON <= tok < ON + LAY.n_pitches and t > len(again) // 2:
        asked += 1
        right += f.odds.get(tok - ON, 0.0) >= 0.5
check(asked > 50 and right / asked > 0.7,
      f"the piece again, every other chord rolled the other way: the memory gives the next pitch the most "
      f"odds ({right} of {asked} note-ons in its second half)")
check(f.confidence > 0.5, f"... and its confidence has risen ({f.confidence:.2f} of 1)")

logp = np.log(np.full(LAY.size, 1.0 / LAY.size))
mixed = f.mix_row(logp)
on = slice(ON, ON + LAY.n_pitches)
check(abs(np.logaddexp.reduce(mixed)) < 1e-9, "the mixed row is a distribution")
check(np.allclose(mixed[:ON], logp[:ON]) and np.allclose(mixed[LAY.note_off_base:], logp[LAY.note_off_base:]),
      "events that are not note-ons keep the model's odds")
best = int(np.argmax(mixed[on]))
check(f.odds.get(best, 0) == max(f.odds.values()) and math.exp(mixed[ON + best]) > 0.5 * np.exp(logp[on]).sum(),
      f"the note-on the memory expects takes over half the note-on odds "
      f"({math.exp(mixed[ON + best]):.4f} of {np.exp(logp[on]).sum():.4f})")

# music it does not hold: the piece's notes in another order, in pairs (the runs it holds come by, with other notes after them)
order = rng.permutation(len(piece) // 2)
other = performance([c for k in order for c in piece[2 * k:2 * k + 2]])
g = pm.Follower(memory, LAY)
matched, moved = 0, []
for t in range(1, len(other)):
    g.feed(other[t - 1])
    matched += g.odds is not None
    moved.append(float(g.mix_row(logp)[other[t]] - logp[other[t]]))
check(matched > 50 and g.confidence < 0.3 and np.mean(moved) > -0.005,
      f"music it does not hold ({matched} runs it holds came by): confidence {g.confidence:.3f}, "
      f"the odds of what came moved by {np.mean(moved):+.4f} nats an event")

# the benchmark's NLL from the targets alone equals the NLL of the mixed rows
rows = rng.normal(size=(len(again) - 1, LAY.size))
rows -= np.logaddexp.reduce(rows, axis=1, keepdims=True)
target = np.array([rows[t - 1, again[t]] for t in range(1, len(again))])
note_on = np.logaddexp.reduce(rows[:, on], axis=1)
fast = pm.nll_with_memory(memory, LAY, [np.array(again)], [target], [note_on])
h = pm.Follower(memory, LAY)
slow = 0.0
for t in range(1, len(again)):
    h.feed(again[t - 1])
    slow -= h.mix_row(rows[t - 1])[again[t]]
slow /= len(again) - 1
check(abs(fast - slow) < 1e-9, f"nll_with_memory ({fast:.6f}) is the mixed rows' NLL ({slow:.6f})")
plain = -target.mean()
check(fast < plain - 0.3, f"... and far below the model's alone on the piece played again ({fast:.3f} < {plain:.3f})")

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)

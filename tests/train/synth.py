"""synth.py: small learnable token files for the training tests (no MIDI corpus needed).

Each sequence is a performance-like stream in the mt310 layout: a velocity,
then notes of a random arpeggio pattern (NOTE_ON, TIME_SHIFT, NOTE_OFF),
repeated with variations, so a tiny model can learn it in seconds.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "train"))
import data   # noqa: E402
import tokfile   # noqa: E402


def sequence(rng: np.random.Generator, n_events: int, lay) -> np.ndarray:
    out = []
    root = int(rng.integers(48, 72))
    pattern = [0, 4, 7, 12] if rng.random() < 0.5 else [0, 3, 7, 10]
    step = int(rng.choice([10, 15, 20, 25]))
    vel = int(rng.integers(10, 25))
    while len(out) < n_events:
        out.append(lay.velocity_base + vel)
        for iv in pattern:
            p = root + iv
            out.append(lay.note_on_base + p - lay.min_pitch)
            out.append(lay.time_shift_base + step - 1)
            out.append(lay.note_off_base + p - lay.min_pitch)
        if rng.random() < 0.2:
            root = min(max(root + int(rng.choice([-5, -2, 2, 5])), 40), 80)
            vel = min(max(vel + int(rng.integers(-3, 4)), 0), 31)
    return np.array(out[:n_events], dtype=np.uint16)


def write(path: str, n_seqs: int, n_events: int, seed: int) -> str:
    lay = data.layout("mt310")
    rng = np.random.default_rng(seed)
    seqs = [sequence(rng, n_events, lay) for _ in range(n_seqs)]
    tokfile.write(path, tokfile.TokenFile("mt310", lay.size, seqs,
                                          [f"synthetic-{seed}-{i}" for i in range(n_seqs)]))
    return path

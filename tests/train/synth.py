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


TINY_MODEL = {"n_layers": 2, "d_model": 64, "n_heads": 4, "d_ff": 128, "max_rel": 32,
              "context": 64, "dropout": 0.0}


def tiny_config(folder: str, train: dict = None, data: dict = None, export: dict = None,
                n_train: int = 24, n_valid: int = 3) -> str:
    """Writes synthetic token files and a tiny-model config into FOLDER; returns the config path."""
    import json
    cfg = {"name": "tiny", "model": dict(TINY_MODEL),
           "data": {"train_tokens": [write(os.path.join(folder, "train.tok"), n_train, 300, 1)],
                    "valid_tokens": write(os.path.join(folder, "valid.tok"), n_valid, 150, 2)},
           "train": {"batch_size": 8, "lr": 3e-3, "warmup_steps": 5, "max_steps": 40,
                     "log_every": 5, "eval_every": 20, "ckpt_every": 20, "threads": 1,
                     "device": "cpu"},
           "export": {"dtype": "f32"}}
    cfg["train"].update(train or {})
    cfg["data"].update(data or {})
    cfg["export"].update(export or {})
    path = os.path.join(folder, "tiny.json")
    with open(path, "w") as fh:
        json.dump(cfg, fh, indent=1)
    return path


def train_losses(log_path: str) -> list:
    """The training losses of the 'step N loss X' lines of a run's log.txt."""
    out = []
    with open(log_path) as fh:
        for line in fh:
            parts = line.split()
            if "loss" in parts and parts[1] == "step":
                out.append(float(parts[parts.index("loss") + 1]))
    return out


TRAIN_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "train", "train.py")

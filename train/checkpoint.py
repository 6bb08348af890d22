"""checkpoint.py: a training run's checkpoint (model, optimizer, schedule, RNG
states, loss history, config), written by train.py and read by train.py
--resume, plot.py and the tests."""

import os
import random

import numpy as np
import torch

def rng_state() -> dict:
    st = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


def set_rng_state(st: dict) -> None:
    torch.set_rng_state(st["torch"])
    np.random.set_state(st["numpy"])
    random.setstate(st["python"])
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])


def load_checkpoint(path: str) -> dict:
    """A checkpoint holds RNG states (numpy, Python), not only tensors."""
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except TypeError:          # torch without weights_only
        return torch.load(path, map_location="cpu")


def save_checkpoint(path: str, model, opt, sched, history: dict, cfg: dict,
                    events: int) -> None:
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(), "rng": rng_state(),
                "data_step": sched.step, "events": events, "history": history,
                "config": cfg}, tmp)
    os.replace(tmp, path)

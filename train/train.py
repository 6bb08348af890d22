#!/usr/bin/env python3
"""train.py: trains the Music Transformer from one JSON config (one or many processes).

  /usr/bin/python3 train/train.py --config train/configs/X.json [--out DIR] [--resume]
  torchrun --nproc_per_node N train/train.py --config ...      (DistributedDataParallel)

Everything a run writes goes under its output folder: config.json (the
effective config, to repeat the run exactly), command.txt, log.txt,
data/ (cached token files), checkpoint.pt, loss.png, model.gguf and
result.json. The default folder is out/<config name>.
The config's sections and their defaults are in DEFAULTS below; docs/TRAINING.md
describes them. Relative paths in a config are relative to the working folder.
"""

import argparse
import concurrent.futures
import copy
import datetime
import json
import math
import os
import shlex
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data as data_mod                       # noqa: E402
from checkpoint import load_checkpoint, save_checkpoint, set_rng_state   # noqa: E402
from model import ModelConfig, MusicTransformer, eval_windows, masked_nll   # noqa: E402

DEFAULTS = {
    "name": "run",
    "init_from": None,            # set by --init-from: the model file the weights came from
    "model": ModelConfig().to_dict(),
    "data": {
        "sources": [],            # data folders (or their split.tsv files), each with its own split
        "root": None,             # folder the split file's paths are relative to
        "split_file": None,       # split.tsv: split, composer, title, file
        "folder": None,           # or: a plain folder of MIDI files ...
        "valid_fraction": 0.1,    # ... of which this fraction (by file) is validation
        "train_tokens": None,     # or: token files from any source (list) ...
        "valid_tokens": None,     # ... and one for validation
        "vocab": "mt310",
        "stretches": list(data_mod.STRETCHES),
        "transpose": 3,           # random transposition by -T..+T semitones
        "end_share": 0.0,         # share of crops that hold a performance's end, EOS after it
                                  # (0: EOS is never seen; the phrase end's odds of the music
                                  # being over then come from the 1 s time shift alone)
        "skip_bad": True,
        "encode_jobs": 1,
        "continuo": None,         # the continuo binary (default: $CONTINUO, build/continuo, PATH)
    },
    "train": {
        "seed": 1234,
        "batch_size": 16,         # global batch, crops of context+1 tokens
        "lr": 1e-3,
        "min_lr_ratio": 0.1,      # cosine decay ends at lr * min_lr_ratio
        "warmup_steps": 200,
        "weight_decay": 0.1,
        "betas": [0.9, 0.98],
        "grad_clip": 1.0,
        "max_steps": 10000,
        "max_seconds": 0,         # wall-clock budget for this run, 0: none
        "decay_by": "steps",      # "steps", or "time": progress = max(step/max_steps, t/max_seconds)
        "stop_at_step": 0,        # stop early (as if interrupted), keeping the schedule
        "log_every": 10,
        "eval_every": 500,
        "eval_max_seqs": 0,       # interval evaluations on the first N valid sequences, 0: all
        "eval_batch": 8,
        "ckpt_every": 200,
        "threads": 0,             # torch CPU threads, 0: torch's default
        "device": "auto",         # "auto", "cpu" or "cuda"
        "amp": "auto",            # "auto": bf16 autocast on a GPU, fp32 on a CPU; "bf16": bf16
                                  # autocast on either (fast on CPUs with AVX512_BF16 or AMX);
                                  # "off": fp32. The final score is always fp32.
        "compile": False,         # torch.compile the model (torch 2.x, falls back when it fails)
        "memory": "none",         # "none": crops of context+1 tokens, plain causal attention;
                                  # "window": crops of memory_segments*context+1 tokens, each event
                                  # attending to itself and the context-1 before it, as in
                                  # `continuo eval --memory stream` (docs/TRAINING.md)
        "memory_segments": 2,     # with memory "window": crop length in contexts
        "attention": "skew",      # "skew" (model.py), "auto" (FlexAttention on a GPU when it
                                  # passes its self-check, else skew) or "chunked"; fast_attention.py
    },
    "export": {
        "file": "model.gguf",     # relative to the output folder
        "dtype": "i8",            # "i8" (int8 rows, models/FORMAT.md), "f16" or "f32"
        "every_checkpoint": True, # keep an up-to-date model file beside each checkpoint
    },
}


# ---------------------------------------------------------------------------
# Config

def merge(base: dict, over: dict, where: str = "") -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if k not in out:
            raise KeyError(f"config: unknown key {where}{k}")
        if isinstance(out[k], dict) and isinstance(v, dict):
            out[k] = merge(out[k], v, f"{where}{k}.")
        else:
            out[k] = v
    return out


def load_config(path: str, sets: list = ()) -> dict:
    with open(path) as fh:
        try:
            user = json.load(fh)
        except ValueError as e:
            raise SystemExit(f"{path}: {e}")
    cfg = merge(DEFAULTS, user)
    for s in sets or ():
        key, _, val = s.partition("=")
        try:
            v = json.loads(val)
        except ValueError:
            v = val
        d = cfg
        parts = key.split(".")
        for p in parts[:-1]:
            d = d[p]
        if parts[-1] not in d:
            raise KeyError(f"--set: unknown key {key}")
        d[parts[-1]] = v
    if cfg["train"]["memory"] not in ("none", "window"):
        raise SystemExit(f"{path}: train.memory is {cfg['train']['memory']!r}: "
                         "expected \"none\" or \"window\"")
    if cfg["train"]["memory"] == "window" and int(cfg["train"]["memory_segments"]) < 1:
        raise SystemExit(f"{path}: train.memory_segments must be at least 1")
    if cfg["train"]["amp"] not in ("auto", "bf16", "off"):
        raise SystemExit(f"{path}: train.amp is {cfg['train']['amp']!r}: "
                         "expected \"auto\", \"bf16\" or \"off\"")
    return cfg


def model_config(cfg: dict) -> ModelConfig:
    m = dict(cfg["model"])
    m["vocab_name"] = cfg["data"]["vocab"]
    m["vocab_size"] = data_mod.layout(m["vocab_name"]).size
    return ModelConfig(**m)


# ---------------------------------------------------------------------------
# Distributed helpers

class Dist:
    def __init__(self, device_pref: str):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        use_cuda = torch.cuda.is_available() and device_pref != "cpu"
        if device_pref == "cuda" and not torch.cuda.is_available():
            raise SystemExit("train.device is cuda but no GPU is visible")
        if use_cuda:
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
        else:
            self.device = torch.device("cpu")
        if self.world > 1:
            dist.init_process_group(backend="nccl" if use_cuda else "gloo")

    @property
    def main(self) -> bool:
        return self.rank == 0

    def all_sum(self, values: list) -> list:
        if self.world == 1:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return t.tolist()

    def all_max(self, value: float) -> float:
        if self.world == 1:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def close(self) -> None:
        # torch 1.13 + gloo can deadlock at exit: gloo's worker thread drops
        # the last reference to a finished collective's tensors, which needs
        # the GIL, while holding the lock that ~ProcessGroupGloo (run by the
        # main thread, GIL held, when the DDP reducer goes) waits for; seen
        # about 1 run in 10 (gdb: Reducer::~Reducer -> ~ProcessGroupGloo,
        # runLoop -> destroy_pyobj_if_needed -> PyEval_AcquireThread).
        # After the last collective, let that thread finish (sleep releases
        # the GIL) before anything is torn down.
        if self.world > 1:
            dist.barrier()
            time.sleep(0.2)
            dist.destroy_process_group()


# ---------------------------------------------------------------------------
# Schedule: linear warmup, then cosine decay to lr * min_lr_ratio

class Schedule:
    def __init__(self, tcfg: dict):
        self.lr = float(tcfg["lr"])
        self.warmup = int(tcfg["warmup_steps"])
        self.max_steps = int(tcfg["max_steps"])
        self.max_seconds = float(tcfg["max_seconds"] or 0)
        self.min_ratio = float(tcfg["min_lr_ratio"])
        self.by_time = tcfg["decay_by"] == "time" and self.max_seconds > 0
        self.step = 0
        self.elapsed = 0.0   # seconds spent in this run and the ones it resumed

    def progress(self) -> float:
        p = self.step / max(self.max_steps, 1)
        if self.by_time:
            p = max(p, self.elapsed / self.max_seconds)
        return min(p, 1.0)

    def value(self) -> float:
        if self.step < self.warmup:
            return self.lr * (self.step + 1) / self.warmup
        p = self.progress()
        p0 = self.warmup / max(self.max_steps, 1) if not self.by_time else 0.0
        p = (p - p0) / max(1e-9, 1.0 - p0) if p > p0 else 0.0
        return self.lr * (self.min_ratio + (1 - self.min_ratio) * 0.5 * (1 + math.cos(math.pi * p)))

    def done(self) -> bool:
        return self.step >= self.max_steps or (self.max_seconds > 0 and self.elapsed >= self.max_seconds)

    def state_dict(self) -> dict:
        return {"step": self.step, "elapsed": self.elapsed}

    def load_state_dict(self, sd: dict) -> None:
        self.step, self.elapsed = int(sd["step"]), float(sd["elapsed"])


# ---------------------------------------------------------------------------
# Evaluation: exactly the windows of `continuo eval` (model.eval_windows)

@torch.no_grad()
def evaluate(model, seqs: list, context: int, device, batch: int = 8, pad_id=0,
             d: Dist = None, amp_dtype=None, progress: str = None) -> tuple:
    """(summed NLL in nats, number of predicted events) over SEQS, each scored
    in eval_windows(len, context); the windows are shared out over ranks.
    PROGRESS: a label to show progress under (first rank, every 5 %)."""
    was_training = model.training
    model.eval()
    windows = []
    for s in seqs:
        for a, b in eval_windows(len(s), context):
            windows.append(s[a:b])
    windows.sort(key=len)
    rank, world = (d.rank, d.world) if d else (0, 1)
    mine = windows[rank::world]
    total, count = 0.0, 0
    bar = data_mod.Progress(progress, len(mine)) if progress and rank == 0 else None
    next_report = 0
    for i in range(0, len(mine), batch):
        if bar and i >= next_report:
            bar.update(i, f"windows of {context + 1} events")
            next_report = i + max(len(mine) // 20, 1)
        group = mine[i:i + batch]
        L = max(len(w) for w in group)
        x = np.zeros((len(group), L), dtype=np.int64)
        mask = np.zeros((len(group), L - 1), dtype=bool)
        for r, w in enumerate(group):
            x[r, :len(w)] = w
            mask[r, :len(w) - 1] = True
        x = torch.from_numpy(x).to(device)
        mask = torch.from_numpy(mask).to(device)
        tgt = x[:, 1:]
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            logits = model(x[:, :-1])
        nll, n = masked_nll(logits, tgt, pad_id, mask)
        total += float(nll)
        count += n
    if bar:
        bar.update(len(mine), f"windows of {context + 1} events")
        bar.end()
    if d:
        total, count = d.all_sum([total, count])
    model.train(was_training)
    return total, int(count)


@torch.no_grad()
def evaluate_stream(model, seqs: list, context: int, device, pad_id=0, d: Dist = None,
                    progress: str = None) -> tuple:
    """(summed NLL in nats, number of predicted events) over SEQS, each
    scored as one stream whose events attend to themselves and the context-1
    before them: `continuo eval --memory stream`, the engine's rolling
    cache. The sequences are shared out over ranks; fp32."""
    was_training = model.training
    model.eval()
    rank, world = (d.rank, d.world) if d else (0, 1)
    mine = [s for s in seqs if len(s) >= 2][rank::world]
    total, count = 0.0, 0
    bar = data_mod.Progress(progress, len(mine)) if progress and rank == 0 else None
    for i, s in enumerate(mine):
        if bar:
            bar.update(i, "sequences, each one stream")
        x = torch.as_tensor(np.asarray(s, dtype=np.int64), device=device).view(1, -1)
        nll, n = masked_nll(model.forward_stream(x[:, :-1], context), x[:, 1:], pad_id)
        total += float(nll)
        count += n
    if bar:
        bar.update(len(mine), "sequences, each one stream")
        bar.end()
    if d:
        total, count = d.all_sum([total, count])
    model.train(was_training)
    return total, int(count)


# ---------------------------------------------------------------------------
# Export (train/export.py, the engine's model file)

def export(model, mcfg: ModelConfig, path: str, provenance: dict, dtype: str, log) -> bool:
    try:
        from export import export_model
    except ImportError as e:
        log(f"export: skipped, train/export.py is not usable ({e})")
        return False
    try:
        export_model(model, mcfg, path, provenance, dtype=dtype)
    except Exception as e:   # an export failure must not lose the run: the checkpoint stays
        log(f"export: {path}: {type(e).__name__}: {e}")
        return False
    return True


def weights_as_exported(model, dtype: str):
    """A copy of MODEL holding the weights the way train/export.py stores
    them: with DTYPE f16, the matrices (ndim >= 2) rounded to half; with
    i8, the 2-D ones as int8 rows times their scales (export.quantize_rows),
    the relative tables (3-D) rounded to half."""
    m = copy.deepcopy(model)
    if dtype in ("f16", "i8"):
        from export import dequantize_rows, quantize_rows
        with torch.no_grad():
            for p in m.parameters():
                if dtype == "i8" and p.dim() == 2:
                    w = dequantize_rows(*quantize_rows(p.detach().cpu().float().numpy()))
                    p.copy_(torch.from_numpy(w).to(p.device))
                elif p.dim() >= 2:
                    p.copy_(p.half().float())
    return m


# ---------------------------------------------------------------------------
# Arguments and config

def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Train the continuo Music Transformer.")
    ap.add_argument("--config", required=True, help="JSON config (train/configs/*.json)")
    ap.add_argument("--out", help="output folder (default: out/<config name>)")
    ap.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    ap.add_argument("--continuo", help="the continuo binary used to encode MIDI files")
    ap.add_argument("--split-file", help="data: a split.tsv (split, composer, title, file)")
    ap.add_argument("--root", help="data: the folder the split file's paths are relative to")
    ap.add_argument("--folder", help="data: a plain folder of MIDI files (split by file)")
    ap.add_argument("--data", action="append", default=[], metavar="PATH",
                    help="data: a folder with a split.tsv, a split.tsv, or a plain folder of "
                         "MIDI files (split by file); repeat for several (adds to data.sources)")
    ap.add_argument("--init-from", metavar="FILE.gguf",
                    help="start from this model file's weights (its hyperparameters replace "
                         "the config's model section); optimizer and schedule start afresh")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config value, e.g. --set train.max_seconds=60")
    ap.add_argument("--export-only", action="store_true",
                    help="export OUT/checkpoint.pt to the model file and stop")
    return ap.parse_args(argv)


def run_config(args: argparse.Namespace) -> tuple:
    """(config, initial state dict or None): the config file with --set and
    the data options applied, and the weights of --init-from (which also
    sets the config's model section)."""
    cfg = load_config(args.config, args.set)
    for key in ("continuo", "split_file", "root", "folder"):
        if getattr(args, key):
            cfg["data"][key] = getattr(args, key)
    if args.data:
        cfg["data"]["sources"] = list(cfg["data"]["sources"] or []) + args.data
    init = None
    if args.init_from and not (args.resume or args.export_only):
        init = init_weights(args.init_from, cfg)
    return cfg, init


class Run:
    """What every stage of one run shares: its config, its processes, its
    output folder and log, and the checkpoint it resumes from (if any)."""

    def __init__(self, args: argparse.Namespace, cfg: dict):
        self.cfg = cfg
        self.tcfg = cfg["train"]
        self.out = args.out or os.path.join("out", cfg["name"])
        self.d = Dist(self.tcfg["device"])
        if self.tcfg["threads"] and self.d.device.type == "cpu":
            torch.set_num_threads(int(self.tcfg["threads"]))
        if self.d.device.type == "cpu":
            keep_freed_memory()
        os.makedirs(self.out, exist_ok=True)
        self.logf = open(os.path.join(self.out, "log.txt"), "a") if self.d.main else None
        self.command = " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv)
        if self.d.world > 1:
            self.command = f"torchrun --nproc_per_node {self.d.world} ... " + self.command
        self.ckpt_path = os.path.join(self.out, "checkpoint.pt")
        self.export_path = os.path.join(self.out, cfg["export"]["file"])
        self.ck = None
        if args.resume or args.export_only:
            if not os.path.exists(self.ckpt_path):
                raise SystemExit(f"{self.ckpt_path}: no checkpoint to resume from")
            self.ck = load_checkpoint(self.ckpt_path)
            cfg["init_from"] = cfg.get("init_from") or self.ck.get("config", {}).get("init_from")
        if self.d.main:
            with open(os.path.join(self.out, "config.json"), "w") as fh:
                json.dump(cfg, fh, indent=2)
            with open(os.path.join(self.out, "command.txt"), "a") as fh:
                fh.write(self.command + "\n")
        self.mcfg = model_config(cfg)
        self.lay = data_mod.layout(self.mcfg.vocab_name)
        # train.memory: the attention window of training (0: the whole crop)
        # and the crop length in events.
        windowed = self.tcfg["memory"] == "window"
        self.window = self.mcfg.context if windowed else 0
        self.crop = self.mcfg.context * (int(self.tcfg["memory_segments"]) if windowed else 1)
        use_amp = self.tcfg["amp"] == "bf16" or (self.tcfg["amp"] == "auto" and
                                                 self.d.device.type == "cuda")
        self.amp_dtype = torch.bfloat16 if use_amp else None

    def log(self, msg: str) -> None:
        if self.d.main:
            line = f"[{datetime.datetime.utcnow().strftime('%H:%M:%S')}] {msg}"
            print(line, flush=True)
            self.logf.write(line + "\n")
            self.logf.flush()


# ---------------------------------------------------------------------------
# Data

def load_data(run: Run) -> tuple:
    """(training Corpus, validation sequences). The first process of each
    node encodes the MIDI files (cached), then everyone reads them."""
    d, cfg = run.d, run.cfg
    if d.local_rank == 0:
        files = data_mod.build_token_files(cfg["data"], run.out, log=run.log)
    d.barrier()
    if d.local_rank != 0:
        files = data_mod.build_token_files(cfg["data"], run.out, log=run.log)
    train_seqs, _ = data_mod.load_seqs([p for _, p in files["train"]], run.mcfg.vocab_name)
    valid_seqs, _ = data_mod.load_seqs(files["valid"], run.mcfg.vocab_name)
    corpus = data_mod.Corpus(train_seqs, run.lay, run.crop, int(cfg["data"]["transpose"]),
                             seed=int(run.tcfg["seed"]), end_share=float(cfg["data"]["end_share"]))
    run.log(f"data: {len(corpus.seqs)} train sequences ({corpus.n_tokens} events over "
            f"{len(files['train'])} stretch factors), {len(valid_seqs)} valid sequences "
            f"({sum(len(s) for s in valid_seqs)} events)")
    return corpus, valid_seqs


# ---------------------------------------------------------------------------
# Model and optimizer

def build_model(run: Run, init) -> MusicTransformer:
    """The model on the run's device: seeded, then INIT's weights if given."""
    torch.manual_seed(int(run.tcfg["seed"]))
    model = MusicTransformer(run.mcfg)
    if init is not None:
        model.load_state_dict(init)
    return model.to(run.d.device)


def install_attention(run: Run, model) -> bool:
    """The attention implementation of train.attention; whether it is not
    the skewed one of model.py (which the first step falls back to)."""
    if run.amp_dtype is not None and run.d.device.type == "cpu" and not cpu_has_bf16():
        run.log("warning: train.amp is bf16 but this CPU has neither AVX512_BF16 nor AMX: "
                "bf16 is emulated and slower than fp32")
    if run.tcfg["attention"] == "skew":
        return False
    import fast_attention
    used = fast_attention.install(model, run.tcfg["attention"], log=run.log,
                                  dtype=run.amp_dtype or torch.float32)
    run.log(f"attention: {used}")
    return used != "skew"


def make_optimizer(model, tcfg: dict) -> torch.optim.Optimizer:
    """AdamW, weight decay on the matrices other than the embedding."""
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (decay if p.dim() >= 2 and not n.startswith("emb") else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": float(tcfg["weight_decay"])},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=float(tcfg["lr"]), betas=tuple(tcfg["betas"]))


class Trainer:
    """The training state (model, optimizer, schedule, history, events seen)
    and the steps, evaluations and checkpoints of the loop."""

    def __init__(self, run: Run, model, fast: bool):
        self.run = run
        self.model = model
        self.fast = fast
        self.opt = make_optimizer(model, run.tcfg)
        self.sched = Schedule(run.tcfg)
        self.history = {"train": [], "valid": []}   # (step, events, nll per event)
        self.events = 0
        if run.ck is not None:
            ck = run.ck
            model.load_state_dict(ck["model"])
            self.opt.load_state_dict(ck["optimizer"])
            self.sched.load_state_dict(ck["scheduler"])
            set_rng_state(ck["rng"])
            self.history, self.events = ck["history"], int(ck["events"])
            run.log(f"resumed from {run.ckpt_path} at step {self.sched.step}")
        self.net = model
        if run.tcfg["compile"] and hasattr(torch, "compile"):
            self.net = torch.compile(model)
        self.net = self.ddp(self.net)

    def ddp(self, m):
        d = self.run.d
        if d.world == 1:
            return m
        return torch.nn.parallel.DistributedDataParallel(
            m, device_ids=[d.local_rank] if d.device.type == "cuda" else None)

    # -- one step -------------------------------------------------------

    def batch(self, corpus, step: int, batch_size: int):
        """The host batch of STEP, made on a thread one step ahead (NumPy
        lets go of the GIL for its array work), so that the device does not
        wait for it between steps."""
        d = self.run.d
        if not hasattr(self, "_pool"):
            self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="batch")
            self._ahead = {}
        for s in (step, step + 1):
            if s not in self._ahead:
                self._ahead[s] = self._pool.submit(corpus.batch, s, batch_size, d.rank, d.world)
        xb = self._ahead[step].result()
        for s in [k for k in self._ahead if k < step]:
            del self._ahead[s]
        return xb

    def step(self, corpus, batch_size: int, first_step: int):
        """One optimizer step on the global batch of this step. Returns
        (summed NLL as a 0-d tensor on the device, read only when a log
        line needs it, so the host does not wait for each step; predicted
        events here, in all processes; learning rate), or None when the
        first step failed and the loop is to run it again in eager PyTorch
        with the skewed attention."""
        run, d, lay, tcfg = self.run, self.run.d, self.run.lay, self.run.tcfg
        step = self.sched.step
        lr = self.sched.value()
        for g in self.opt.param_groups:
            g["lr"] = lr
        torch.manual_seed(int(tcfg["seed"]) * 1000003 + step * 7919 + d.rank)   # dropout
        xb = self.batch(corpus, step, batch_size)
        # Counted on the host batch: no wait for the device.
        n_local = int((xb[:, 1:] != lay.pad_id).sum()) if lay.pad_id is not None else xb[:, 1:].size
        n_global = d.all_sum([n_local])[0]
        x = torch.from_numpy(xb).to(d.device, non_blocking=True)
        try:
            with torch.autocast(d.device.type, dtype=run.amp_dtype, enabled=run.amp_dtype is not None):
                logits = self.net(x[:, :-1], window=run.window)
            nll, _ = masked_nll(logits, x[:, 1:], lay.pad_id)
            # DDP averages gradients over ranks: scale so the result is the global mean.
            loss = nll * (d.world / max(n_global, 1))
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
        except Exception as e:
            # The first step is where torch.compile or a fast attention kernel
            # fails if it does: fall back to eager and the skewed path, once.
            if step != first_step or (self.net is self.model and not self.fast):
                raise
            run.log(f"first step failed ({type(e).__name__}: {str(e)[:300]}); "
                    "falling back to eager PyTorch and the skewed attention")
            if self.fast:
                import fast_attention
                fast_attention.uninstall(self.model)
                self.fast = False
            self.net = self.ddp(self.model)
            self.opt.zero_grad(set_to_none=True)
            return None
        if tcfg["grad_clip"]:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), float(tcfg["grad_clip"]))
        self.opt.step()
        self.sched.step += 1
        return nll.detach(), n_local, n_global, lr

    # -- the loop ---------------------------------------------------------

    def loop(self, corpus, eval_seqs) -> None:
        """Steps until the schedule is done or train.stop_at_step, logging,
        evaluating and checkpointing as the config says."""
        run, d, tcfg, sched = self.run, self.run.d, self.run.tcfg, self.sched
        B = int(tcfg["batch_size"])
        if B % d.world:
            raise SystemExit(f"train.batch_size {B} is not a multiple of the {d.world} processes")
        stop_at = int(tcfg["stop_at_step"] or 0)
        t_start = time.time() - sched.elapsed
        t_log = time.time()
        acc_nll, acc_cnt, acc_ev = 0.0, 0, 0      # acc_nll: a device tensor after the first step
        first_step = sched.step
        while not sched.done() and not (stop_at and sched.step >= stop_at):
            r = self.step(corpus, B, first_step)
            if r is None:
                continue
            nll, n_local, n_global, lr = r
            acc_nll += nll
            acc_cnt += n_local
            acc_ev += n_global
            self.events += n_global
            sched.elapsed = d.all_max(time.time() - t_start)
            if sched.step % int(tcfg["log_every"]) == 0 or sched.done():
                tot, cnt = d.all_sum([float(acc_nll), acc_cnt])
                now = time.time()
                loss_v = tot / max(cnt, 1)
                self.history["train"].append((sched.step, self.events, loss_v))
                run.log(f"step {sched.step} loss {loss_v:.4f} lr {lr:.3e} events/s "
                        f"{acc_ev / max(now - t_log, 1e-9):.0f} elapsed {sched.elapsed:.0f}s")
                t_log, acc_nll, acc_cnt, acc_ev = now, 0.0, 0, 0
            if tcfg["eval_every"] and sched.step % int(tcfg["eval_every"]) == 0 and not sched.done():
                kind = "subset" if tcfg["eval_max_seqs"] else "valid"
                self.history["valid"].append((sched.step, self.events, self.interval_eval(kind, eval_seqs),
                                              kind))
            if tcfg["ckpt_every"] and sched.step % int(tcfg["ckpt_every"]) == 0:
                self.checkpoint()

    def stopped_early(self) -> bool:
        stop_at = int(self.run.tcfg["stop_at_step"] or 0)
        return bool(stop_at) and self.sched.step >= stop_at and not self.sched.done()

    # -- evaluation -------------------------------------------------------

    def score(self, model, seqs, amp_dtype, progress: str = None) -> tuple:
        """(summed NLL, events) of MODEL on SEQS as the run's memory scores
        them: `continuo eval --memory window` for train.memory none, each
        sequence one stream (--memory stream) for train.memory window."""
        run = self.run
        if run.window:
            return evaluate_stream(model, seqs, run.mcfg.context, run.d.device, run.lay.pad_id,
                                   run.d, progress=progress and progress + " (stream)")
        return evaluate(model, seqs, run.mcfg.context, run.d.device, int(run.tcfg["eval_batch"]),
                        run.lay.pad_id, run.d, amp_dtype, progress=progress)

    def interval_eval(self, tag: str, seqs) -> float:
        run = self.run
        t0 = time.time()
        tot, cnt = self.score(self.model, seqs, run.amp_dtype)
        nll = tot / max(cnt, 1)
        run.log(f"eval {tag} step {self.sched.step} valid_nll {nll:.4f} events {cnt} "
                f"({time.time() - t0:.1f} s)")
        return nll

    def final_eval(self, valid_seqs) -> tuple:
        """(NLL per event, events) on the whole validation set, in fp32, with
        the weights as the model file stores them (f16 matrices when
        exporting f16), so that `continuo eval` agrees."""
        run = self.run
        dtype = run.cfg["export"]["dtype"]
        m2 = weights_as_exported(self.model, dtype)
        t0 = time.time()
        tot, cnt = self.score(m2, valid_seqs, None, progress="eval final")
        nll = tot / max(cnt, 1)
        run.log(f"eval final step {self.sched.step} valid_nll {nll:.6f} events {cnt} "
                f"(fp32, {dtype} model-file weights, {'stream' if run.window else 'window'} memory, "
                f"{time.time() - t0:.1f} s)")
        self.history["valid"].append((self.sched.step, self.events, nll, "valid"))
        return nll, cnt

    def check_replicas(self) -> None:
        """DDP keeps the replicas equal: check it, and say so."""
        d = self.run.d
        if d.world > 1:
            hashes = [None] * d.world
            dist.all_gather_object(hashes, weights_sha1(self.model))
            self.run.log(f"weights sha1 per rank: {' '.join(hashes)} "
                         f"({'equal' if len(set(hashes)) == 1 else 'DIFFERENT'})")

    # -- checkpoint and export -------------------------------------------

    def checkpoint(self, final: bool = False) -> None:
        """The checkpoint, the loss curve and (every checkpoint, or at the
        end) the model file; first process only."""
        run = self.run
        if not run.d.main:
            return
        save_checkpoint(run.ckpt_path, self.model, self.opt, self.sched, self.history, run.cfg,
                        self.events)
        from plot import plot_history     # matplotlib: only where a picture is drawn
        plot_history(self.history, os.path.join(run.out, "loss.png"), run.cfg["name"])
        if run.cfg["export"]["every_checkpoint"] or final:
            nll = self.history["valid"][-1][2] if self.history["valid"] else None
            prov = provenance(run.cfg, self.sched.step, self.events, nll, run.command, self.sched.elapsed)
            if export(self.model, run.mcfg, run.export_path, prov, run.cfg["export"]["dtype"], run.log) \
                    and final:
                run.log(f"wrote {run.export_path}")

    def write_result(self, nll: float, count: int) -> None:
        run = self.run
        if run.d.main:
            with open(os.path.join(run.out, "result.json"), "w") as fh:
                json.dump({"valid_nll": nll, "valid_events": count, "steps": self.sched.step,
                           "events": self.events, "seconds": round(self.sched.elapsed, 1),
                           "model": run.export_path, "params": self.model.n_params()}, fh, indent=2)


def export_checkpoint(run: Run, model) -> int:
    """--export-only: the model file of the run's checkpoint."""
    ck = run.ck
    model.load_state_dict(ck["model"])
    h = ck["history"]
    nll = h["valid"][-1][2] if h["valid"] else None
    ok = export(model.cpu(), run.mcfg, run.export_path,
                provenance(run.cfg, ck["scheduler"]["step"], ck["events"], nll, run.command,
                           ck["scheduler"]["elapsed"]),
                run.cfg["export"]["dtype"], run.log)
    run.log(f"exported {run.export_path}" if ok else "export failed")
    return 0 if ok else 1


# ---------------------------------------------------------------------------

def main(argv=None) -> int:
    args = parse_args(argv)
    cfg, init = run_config(args)
    run = Run(args, cfg)
    model = build_model(run, init)
    if args.export_only:
        return export_checkpoint(run, model)
    fast = install_attention(run, model)
    corpus, valid_seqs = load_data(run)
    mcfg = run.mcfg
    run.log(f"model: {mcfg.n_layers} layers, d {mcfg.d_model}, {mcfg.n_heads} heads, ff {mcfg.d_ff}, "
            f"max_rel {mcfg.max_rel}, context {mcfg.context}: {model.n_params()} parameters; "
            f"memory {run.tcfg['memory']} (crops of {run.crop + 1} tokens); "
            f"{run.d.world} process(es) on {run.d.device.type}")
    tr = Trainer(run, model, fast)
    tcfg = run.tcfg
    tr.loop(corpus, valid_seqs[:tcfg["eval_max_seqs"]] if tcfg["eval_max_seqs"] else valid_seqs)
    if tr.stopped_early():
        tr.checkpoint()
        run.log(f"stopped at step {tr.sched.step} (stop_at_step)")
        run.d.close()
        return 0
    tr.check_replicas()
    nll, count = tr.final_eval(valid_seqs)
    tr.checkpoint(final=True)
    tr.write_result(nll, count)
    run.d.close()
    return 0


def init_weights(path: str, cfg: dict) -> dict:
    """The state dict of model file PATH; sets CFG's model section to the
    file's hyperparameters (dropout kept from the config)."""
    import export as export_mod
    try:
        m, mc, kvs = export_mod.read_model(path)
    except (OSError, ValueError, KeyError) as e:
        raise SystemExit(f"--init-from {path}: {e}")
    if mc.vocab_name != cfg["data"]["vocab"]:
        raise SystemExit(f"--init-from {path}: vocabulary {mc.vocab_name!r}, "
                         f"the config says {cfg['data']['vocab']!r}")
    keep = {"dropout": cfg["model"].get("dropout", 0.0)}
    file_model = {k: v for k, v in mc.to_dict().items() if k in cfg["model"]}
    changed = {k: (cfg["model"][k], v) for k, v in file_model.items()
               if k not in keep and cfg["model"][k] != v}
    if changed:
        print(f"--init-from {path}: model hyperparameters from the file: " +
              ", ".join(f"{k} {a} -> {b}" for k, (a, b) in changed.items()), flush=True)
    cfg["model"].update({k: v for k, v in file_model.items() if k not in keep})
    cfg["init_from"] = {"file": os.path.abspath(path),
                        "steps": kvs.get("continuo.provenance.steps"),
                        "valid_nll": kvs.get("continuo.provenance.valid_nll")}
    return m.state_dict()


def keep_freed_memory() -> bool:
    """Make glibc keep freed blocks instead of returning them to the kernel.

    Attention scores are tens of MB per layer; above glibc's mmap threshold
    (at most 32 MB when left to itself) every one is a fresh mmap, page-faulted
    and zeroed by the kernel, then unmapped: on CPU that was half the time of a
    training step (3x slower at context 512, batch 16). The memory stays with
    the process, which holds it again on the next step anyway."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 1 << 30) and libc.mallopt(M_TRIM_THRESHOLD, 1 << 31))
    except (OSError, AttributeError):   # not glibc: nothing to tune
        return False


def cpu_has_bf16() -> bool:
    """Whether this CPU does bf16 arithmetic natively (Linux /proc/cpuinfo flags)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


def weights_sha1(model) -> str:
    import hashlib
    h = hashlib.sha1()
    for k, v in sorted(model.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def provenance(cfg: dict, steps: int, events: int, nll, command: str, seconds: float) -> dict:
    dc = cfg["data"]
    if dc.get("train_tokens"):
        src = f"token files {dc['train_tokens']}"
    elif dc.get("sources"):
        src = "folders " + ", ".join(dc["sources"])
        if dc.get("split_file"):
            src += f", split {dc['split_file']}"
    elif dc.get("split_file"):
        src = f"split {dc['split_file']} (root {dc.get('root') or '.'})"
    else:
        src = f"folder {dc.get('folder')}"
    return {
        "data": f"{src}; vocab {dc['vocab']}; stretches {dc['stretches']}; transpose +-{dc['transpose']}",
        "steps": str(steps),
        "train_events": str(events),
        "init_from": (None if not cfg.get("init_from") else
                      f"{os.path.basename(cfg['init_from']['file'])} (valid_nll "
                      f"{cfg['init_from'].get('valid_nll')})"),
        "train_seconds": f"{seconds:.0f}",
        "valid_nll": None if nll is None else round(float(nll), 6),
        "command": command,
        "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "config": json.dumps(cfg, sort_keys=True),
    }


if __name__ == "__main__":
    sys.exit(main())

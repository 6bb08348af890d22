"""test_resume.py: N steps straight and N/2 + resume + N/2 give identical weights."""

import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth   # noqa: E402

sys.path.insert(0, os.path.dirname(synth.TRAIN_PY))
from checkpoint import load_checkpoint   # noqa: E402


def run(cfg, out, *extra):
    r = subprocess.run([sys.executable, synth.TRAIN_PY, "--config", cfg, "--out", out, *extra],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        raise SystemExit(f"FAIL: train.py {' '.join(extra)} exited {r.returncode}")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        # Dropout on, so that the RNG state matters too.
        cfg = synth.tiny_config(tmp, train={"max_steps": 24, "eval_every": 0, "ckpt_every": 0},
                                n_train=12)
        import json
        with open(cfg) as fh:
            c = json.load(fh)
        c["model"]["dropout"] = 0.1
        with open(cfg, "w") as fh:
            json.dump(c, fh)
        a, b = os.path.join(tmp, "straight"), os.path.join(tmp, "resumed")
        run(cfg, a)
        run(cfg, b, "--set", "train.stop_at_step=12")
        half = load_checkpoint(os.path.join(b, "checkpoint.pt"))
        if half["scheduler"]["step"] != 12:
            print("FAIL: the interrupted run did not stop at step 12")
            return 1
        run(cfg, b, "--resume")
        ca = load_checkpoint(os.path.join(a, "checkpoint.pt"))
        cb = load_checkpoint(os.path.join(b, "checkpoint.pt"))
        fails = 0
        diff = max((ca["model"][k] - cb["model"][k]).abs().max().item() for k in ca["model"])
        moved = max((ca["model"][k] - half["model"][k]).abs().max().item() for k in ca["model"])
        print(f"max weight difference straight vs resumed: {diff}; moved after step 12: {moved}")
        if diff != 0.0:
            print("FAIL: resumed weights differ from the straight run")
            fails += 1
        if moved == 0.0:
            print("FAIL: the second half did not train")
            fails += 1
        sa, sb = ca["optimizer"]["state"], cb["optimizer"]["state"]
        if any(not torch.equal(sa[i]["exp_avg_sq"], sb[i]["exp_avg_sq"]) for i in sa):
            print("FAIL: optimizer states differ")
            fails += 1
        if ca["scheduler"] ["step"] != 24 or cb["scheduler"]["step"] != 24:
            print("FAIL: runs did not end at step 24")
            fails += 1
    print("FAIL" if fails else "OK")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

"""test_train_cli.py: a tiny model trains on CPU, its loss falls, it exports, and
`continuo eval` on the exported file gives the trainer's validation NLL.

Twice: in fp32 (the CPU default) and with bf16 autocast (`"amp": "bf16"`, how
the shipped placeholder was trained); the final score is fp32 either way, so
both must agree with the C engine within 1e-4. A bad `amp` value is refused."""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth   # noqa: E402

CONTINUO = os.environ.get("CONTINUO")


def check_run(tmp: str, amp: str) -> int:
    fails = 0
    cfg = synth.tiny_config(tmp, train={"max_steps": 60, "eval_every": 30, "amp": amp})
    out = os.path.join(tmp, "run-" + amp)
    r = subprocess.run([sys.executable, synth.TRAIN_PY, "--config", cfg, "--out", out],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        print(f"FAIL [{amp}]: train.py exited", r.returncode)
        return 1
    losses = synth.train_losses(os.path.join(out, "log.txt"))
    print(f"[{amp}] losses: first {losses[0]:.4f} last {losses[-1]:.4f} ({len(losses)} log lines)")
    if not (len(losses) >= 5 and losses[-1] < losses[0] - 1.0):
        print(f"FAIL [{amp}]: the training loss did not fall by a nat")
        fails += 1
    with open(os.path.join(out, "result.json")) as fh:
        res = json.load(fh)
    model = os.path.join(out, "model.gguf")
    for f in ("model.gguf", "loss.png", "config.json", "checkpoint.pt", "command.txt"):
        if not os.path.exists(os.path.join(out, f)):
            print(f"FAIL [{amp}]: the run did not write {f}")
            fails += 1
    # The effective config in the output folder repeats the run.
    with open(os.path.join(out, "config.json")) as fh:
        t = json.load(fh)["train"]
        if t["max_steps"] != 60 or t["amp"] != amp:
            print(f"FAIL [{amp}]: config.json does not hold the run's config")
            fails += 1
    valid = os.path.join(tmp, "valid.tok")
    r = subprocess.run([CONTINUO, "eval", "--model", model, valid], capture_output=True,
                       text=True, timeout=120)
    lines = r.stdout.strip().splitlines()
    if r.returncode != 0 or not lines or not lines[-1].startswith("nll "):
        print(r.stdout, r.stderr)
        print(f"FAIL [{amp}]: continuo eval exited", r.returncode)
        return fails + 1
    parts = lines[-1].split()
    nll, events = float(parts[1]), int(parts[3])
    print(f"[{amp}] trainer: nll {res['valid_nll']:.6f} events {res['valid_events']}; "
          f"continuo eval: nll {nll:.6f} events {events}")
    if events != res["valid_events"]:
        print(f"FAIL [{amp}]: continuo eval scored a different number of events")
        fails += 1
    if abs(nll - res["valid_nll"]) > 1e-4:
        print(f"FAIL [{amp}]: continuo eval and the trainer disagree by more than 1e-4 nats")
        fails += 1
    return fails


def main() -> int:
    if not CONTINUO:
        print("FAIL: CONTINUO is not set")
        return 1
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        fails += check_run(tmp, "off")
        fails += check_run(tmp, "bf16")
        cfg = synth.tiny_config(tmp, train={"amp": "fp16"})
        r = subprocess.run([sys.executable, synth.TRAIN_PY, "--config", cfg, "--out",
                            os.path.join(tmp, "bad")], capture_output=True, text=True, timeout=120)
        print("[bad amp]", r.stderr.strip().splitlines()[-1:] or "(no message)")
        if r.returncode == 0 or f"{cfg}: train.amp is 'fp16'" not in r.stderr:
            print("FAIL: an unknown train.amp value was not refused by name")
            fails += 1
    print("FAIL" if fails else "OK")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

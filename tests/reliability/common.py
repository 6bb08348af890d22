"""common.py: helpers shared by the reliability tests: the binary, a tiny random model, skipping."""
import os
import signal
import subprocess
import sys

SKIP = 77
CONTINUO = os.environ.get("CONTINUO", "")
SRC = os.environ.get("CONTINUO_SRC", os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..")))
MOTIF = os.path.join(SRC, "models", "motif.mid")


def need_binary():
    if not CONTINUO or not os.access(CONTINUO, os.X_OK):
        sys.exit(f"CONTINUO is not set to the built binary (got '{CONTINUO}'); run through meson test")


def tiny_model(folder, name="tiny.gguf", extra=()):
    """A random-weight model of a few KB (train/export.py --random); its path. Skips without numpy."""
    path = os.path.join(folder, name)
    r = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "train", "export.py"), "--random", path,
                        "--layers", "1", "--d-model", "16", "--heads", "2", "--d-ff", "32", "--max-rel", "16",
                        "--context", "32", "--seed", "7", *extra], capture_output=True, text=True)
    if r.returncode != 0:
        if "No module named" in r.stderr:
            print(f"SKIP: train/export.py cannot run here: {r.stderr.strip().splitlines()[-1]}")
            sys.exit(SKIP)
        sys.exit(f"train/export.py failed:\n{r.stderr}")
    return path


def stop(proc, timeout):
    """SIGTERM to PROC if it still runs, then its exit status; killed when it
    has not exited after TIMEOUT seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()

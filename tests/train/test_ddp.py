"""test_ddp.py: two CPU processes (torchrun, gloo) train one model: both ranks
end with the same weights, the loss falls, and only rank 0 writes the run."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth   # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = synth.tiny_config(tmp, train={"max_steps": 40, "eval_every": 20})
        out = os.path.join(tmp, "run")
        # --redirects 2 --tee 1: torch 1.13's launcher under Python 3.11 cannot
        # parse its own default "0" (Std.NONE is not iterable there).
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
               "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
               "--redirects", "2", "--tee", "1", "--log_dir", os.path.join(tmp, "logs"),
               synth.TRAIN_PY, "--config", cfg, "--out", out]
        for attempt in (1, 2):
            # Its own process group, so that a stuck run is stopped with its workers.
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
            try:
                stdout, stderr = p.communicate(timeout=100)
                break
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
                # A rendezvous can hang when another program takes the port
                # between free_port() and torchrun: once more on a new port.
                print(f"attempt {attempt}: torchrun did not finish in 100 s")
                if attempt == 2:
                    print("FAIL: torchrun hung twice")
                    return 1
                cmd[cmd.index("--master_port") + 1] = str(free_port())
                shutil.rmtree(out, ignore_errors=True)
        if p.returncode != 0:
            print(stdout[-3000:], stderr[-3000:])
            print("FAIL: torchrun exited", p.returncode)
            return 1
        fails = 0
        log = open(os.path.join(out, "log.txt")).read()
        line = [ln for ln in log.splitlines() if "weights sha1 per rank" in ln]
        print(line[0] if line else "no weights line")
        if not line:
            print("FAIL: no per-rank weight check in the log")
            return 1
        hashes = line[0].split("rank:")[1].split("(")[0].split()
        if len(hashes) != 2 or hashes[0] != hashes[1]:
            print("FAIL: the two ranks ended with different weights")
            fails += 1
        if "2 process(es)" not in log:
            print("FAIL: the run did not use two processes")
            fails += 1
        losses = synth.train_losses(os.path.join(out, "log.txt"))
        print(f"losses: first {losses[0]:.4f} last {losses[-1]:.4f}")
        if not losses[-1] < losses[0] - 0.5:
            print("FAIL: the loss did not fall")
            fails += 1
        if log.count("wrote ") != 1:
            print("FAIL: expected one model file written by rank 0")
            fails += 1
    print("FAIL" if fails else "OK")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""test_valgrind.py: continue, eval, encode, decode and serve run under valgrind memcheck with no memory errors and no leaks.

Skips (77) when valgrind is absent or the build is sanitized (--sanitized: ASan binaries cannot run under valgrind).
Each command runs with --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect and no
suppressions (OpenBLAS leaves only "still reachable" blocks, which are not errors); a bad read, a use of
uninitialised memory or a definite/indirect leak fails it."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CONTINUO, MOTIF, SKIP, need_binary, stop, tiny_model  # noqa: E402

VALGRIND = ["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
            "--show-leak-kinds=definite,indirect"]


def valgrind(args, cwd):
    cmd = VALGRIND + ["--error-exitcode=1", CONTINUO, *args]
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=240)
    m = re.search(r"ERROR SUMMARY: (\d+) errors", r.stderr)
    leaks = re.search(r"definitely lost: ([\d,]+) bytes", r.stderr)
    what = " ".join(args[:1])
    print(f"{what}: exit {r.returncode}, {m.group(1) if m else '?'} errors, "
          f"definitely lost {leaks.group(1) if leaks else '0'} bytes")
    if r.returncode != 0 or not m or m.group(1) != "0":
        sys.exit(f"FAIL: valgrind {' '.join(args)} (exit {r.returncode}):\n{r.stderr[-6000:]}")
    return r


def serve_under_valgrind(model, tmp):
    """`continuo serve` with the model: starts, answers a played phrase, ends cleanly on SIGTERM."""
    runtime = os.path.join(tmp, "run")
    os.mkdir(runtime, 0o700)
    sock = os.path.join(runtime, "continuo", "ctl")
    fifo = os.path.join(tmp, "in")
    os.mkfifo(fifo, 0o600)
    env = dict(os.environ, XDG_RUNTIME_DIR=runtime, XDG_CONFIG_HOME=os.path.join(tmp, "none"),
               XDG_CONFIG_DIRS=os.path.join(tmp, "none"))
    log_path = os.path.join(tmp, "serve.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(VALGRIND + ["--error-exitcode=1", CONTINUO, "serve", "--set", "model=" + model,
                                           "--set", "input=fifo:" + fifo, "--set", "output=none",
                                           "--set", "phrase_silence_ms=300"],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
    status = ""
    writer = None
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(sock) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        while writer is None and proc.poll() is None and time.monotonic() < deadline:
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:     # ENXIO: the service has not opened it yet
                time.sleep(0.05)
        if writer is not None:
            for pitch in (60, 64, 67):
                os.write(writer, bytes([0x90, pitch, 90]))
                time.sleep(0.1)
                os.write(writer, bytes([0x80, pitch, 0]))
            while proc.poll() is None and time.monotonic() < deadline:
                r = subprocess.run([CONTINUO, "ctl", "status"], env=env, capture_output=True, text=True,
                                   timeout=30)
                status = r.stdout.strip()
                if re.search(r"\bresponses=[1-9]", status):
                    break
                time.sleep(0.2)
    finally:
        if writer is not None:
            os.close(writer)
        rc = stop(proc, 60)
    text = open(log_path).read()
    m = re.search(r"ERROR SUMMARY: (\d+) errors", text)
    leaks = re.search(r"definitely lost: ([\d,]+) bytes", text)
    answered = re.search(r"\bresponses=[1-9]", status) is not None
    print(f"serve: phrase answered {answered}, exit {rc} after SIGTERM, {m.group(1) if m else '?'} errors, "
          f"definitely lost {leaks.group(1) if leaks else '0'} bytes")
    if not answered or rc != 0 or not m or m.group(1) != "0":
        sys.exit(f"FAIL: valgrind continuo serve (status {status!r}, exit {rc}):\n{text[-6000:]}")


def main():
    if "--sanitized" in sys.argv[1:]:
        print("SKIP: sanitized build (valgrind cannot run ASan binaries)")
        return SKIP
    if shutil.which("valgrind") is None:
        print("SKIP: valgrind not installed")
        return SKIP
    need_binary()
    with tempfile.TemporaryDirectory(prefix="continuo-valgrind-") as tmp:
        model = tiny_model(tmp)
        out_mid = os.path.join(tmp, "cont.mid")
        valgrind(["continue", MOTIF, "-o", out_mid, "--model", model, "--seconds", "3", "--seed", "1",
                  "--threads", "2"], tmp)
        if not os.path.getsize(out_mid) > 0:
            sys.exit("FAIL: continue wrote no MIDI file")
        tok = os.path.join(tmp, "motif.tok")
        valgrind(["encode", MOTIF, "-o", tok], tmp)
        dec = os.path.join(tmp, "motif.dec.mid")
        valgrind(["decode", tok, "-o", dec], tmp)
        if not os.path.getsize(dec) > 0:
            sys.exit("FAIL: decode wrote no MIDI file")
        r = valgrind(["eval", "--model", model, "--threads", "2", MOTIF, tok], tmp)
        if not re.search(r"nll [0-9.]+", r.stdout):
            sys.exit(f"FAIL: eval printed no nll line:\n{r.stdout}")
        # A bad input takes the error paths: still no leak.
        bad = os.path.join(tmp, "bad.mid")
        with open(bad, "wb") as f:
            f.write(open(MOTIF, "rb").read()[:40])
        cmd = VALGRIND + ["--error-exitcode=99", CONTINUO, "encode", bad, "-o", os.path.join(tmp, "bad.tok")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        print(f"encode of a truncated file: exit {r.returncode}")
        if r.returncode != 1:
            sys.exit(f"FAIL: encode of a truncated file: exit {r.returncode} (want 1, 99 = valgrind error):\n"
                     f"{r.stderr[-4000:]}")
        serve_under_valgrind(model, tmp)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""test_full_disk.py: a write that fails (disk full, file size limit, /dev/full) gives a clear error, exit 1, no partial file.

Unprivileged: the child runs under RLIMIT_FSIZE with SIGXFSZ ignored, so its writes past the limit fail with EFBIG
as on a full disk; stdout writes go to /dev/full (ENOSPC). Each case checks the exit status, that the error names
the file and the cause, that the output path is absent (or, when it existed, unchanged) and no temp file is left."""
import os
import resource
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CONTINUO, MOTIF, need_binary, tiny_model  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def limited(limit):
    def setup():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return setup


def run(args, limit=None, stdout=subprocess.PIPE):
    return subprocess.run([CONTINUO, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60,
                          preexec_fn=limited(limit) if limit is not None else None, restore_signals=False)


def write_fails(name, args, out, folder, old=None):
    """Runs ARGS once freely (to learn the output size), then with half that as the file size limit."""
    r = run(args)
    if r.returncode != 0 or not os.path.exists(out):
        sys.exit(f"{name}: the unconstrained run failed (exit {r.returncode}):\n{r.stderr}")
    size = os.path.getsize(out)
    os.unlink(out)
    if old is not None:
        with open(out, "wb") as f:
            f.write(old)
    before = set(os.listdir(folder))
    r = run(args, limit=size // 2)
    err = r.stderr.strip()
    print(f"{name}: {size} bytes needed, limit {size // 2}: exit {r.returncode}: {err.splitlines()[-1] if err else ''}")
    check(r.returncode == 1, f"{name}: exit status 1 (got {r.returncode})")
    check(os.path.basename(out) in err, f"{name}: the error names the output file")
    check("too large" in err.lower() or "no space" in err.lower(), f"{name}: the error gives the cause")
    if old is None:
        check(not os.path.exists(out), f"{name}: no output file")
    else:
        check(open(out, "rb").read() == old, f"{name}: the file that was there is unchanged")
    left = sorted(set(os.listdir(folder)) - before)
    check(not left, f"{name}: no temp file left (found {left})")


def main():
    need_binary()
    with tempfile.TemporaryDirectory(prefix="continuo-fulldisk-") as tmp:
        # A long token text: its MIDI file is about 40 KB, written in several buffers.
        text = os.path.join(tmp, "long.txt")
        with open(text, "w") as f:
            for i in range(4000):
                p = 40 + i % 48
                f.write(f"VELOCITY({i % 32}) NOTE_ON({p}) TIME_SHIFT({1 + i % 30}) NOTE_OFF({p})\n")
        out = os.path.join(tmp, "out.mid")
        write_fails("decode", ["decode", text, "-o", out, "-q"], out, tmp)
        write_fails("decode over an existing file", ["decode", text, "-o", out, "-q"], out, tmp,
                    old=b"the recording that was there")
        tok = os.path.join(tmp, "motif.tok")
        write_fails("encode", ["encode", MOTIF, "-o", tok, "-q"], tok, tmp)
        model = tiny_model(tmp)
        cont = os.path.join(tmp, "cont.mid")
        write_fails("continue", ["continue", MOTIF, "-o", cont, "--model", model, "--seconds", "20",
                                 "--seed", "3"], cont, tmp)

        # Standard output on a full device.
        with open("/dev/full", "w") as full:
            r = run(["encode", MOTIF, "-o", "-", "-q"], stdout=full)
        err = r.stderr.strip()
        print(f"encode -o - >/dev/full: exit {r.returncode}: {err.splitlines()[-1] if err else ''}")
        check(r.returncode == 1, f"encode to a full stdout: exit status 1 (got {r.returncode})")
        check("no space" in err.lower(), "encode to a full stdout: the error gives the cause")
    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""test_run_gpu.py: `train/run_gpu.sh --dry-run` goes through every step of the GPU run
on the CPU: a few MIDI files of each data folder encoded, compressed and unpacked,
a tiny model trained from the GPU config for a few steps, the valid files scored,
the model file exported in parts, joined, its SHA-256 checked and scored again by
`continuo eval` (the trainer's number within 1e-4). So the one GPU call cannot
fail on a typo. Skipped without the ASAP folder (ASAP_DIR)."""

import os
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def main() -> int:
    asap = os.environ.get("ASAP_DIR", "")
    if not os.path.isfile(os.path.join(asap, "split.tsv")):
        print(f"skipped: no split.tsv under ASAP_DIR ({asap!r})")
        return 77
    dirs = [asap]
    extra = os.path.join(os.path.dirname(os.path.abspath(asap)), "maestro-extra")
    if os.path.isfile(os.path.join(extra, "split.tsv")):
        dirs.append(extra)
    env = dict(os.environ, DATA_DIRS=" ".join(dirs), PYTHON=sys.executable)
    t = time.time()
    r = subprocess.run(["bash", os.path.join(ROOT, "train", "run_gpu.sh"), "--dry-run"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    took = time.time() - t
    out = r.stdout
    print(out[-6000:])
    fails = 0
    if r.returncode != 0 or "dry run: OK" not in out:
        print(f"FAIL: run_gpu.sh --dry-run exited {r.returncode}")
        fails += 1
    for want in ["pack: source asap", "unpack:", "eval final", "part(s) joined, SHA-256 checked",
                 "continuo eval nll"] + (["pack: source maestro_extra"] if len(dirs) > 1 else []):
        if want not in out:
            print(f"FAIL: the dry run did not print {want!r}")
            fails += 1
    print(f"dry run: {took:.1f} s")
    print("FAIL" if fails else "OK")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

"""test_installed_trainer.py: the trainer's code `continuo adapt` runs is installed whole: the files
meson installs into share/continuo/train, alone in a folder (not this tree's train/), run
adapt.py --help and adapt_replay.py --help (every module they import is among them)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

BUILD = os.environ["CONTINUO_BUILD"]


def main() -> int:
    r = subprocess.run(["meson", "introspect", "--installed", BUILD], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"meson introspect --installed failed: {r.stderr}")
        return 1
    files = {src: dst for src, dst in json.loads(r.stdout).items()
             if os.path.basename(os.path.dirname(dst)) == "train" and "/continuo/train/" in dst}
    print(f"installed into share/continuo/train: {', '.join(sorted(os.path.basename(f) for f in files))}")
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for src in files:
            shutil.copy(src, d)
        for script in ("adapt.py", "adapt_replay.py"):
            r = subprocess.run(["/usr/bin/python3", "-I", os.path.join(d, script), "--help"], cwd=d,
                               capture_output=True, text=True, timeout=120)
            ok = r.returncode == 0 and "usage:" in r.stdout
            print(f"the installed {script} --help: {'runs' if ok else 'FAILED: ' + r.stderr.strip()[-600:]}")
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

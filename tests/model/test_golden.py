"""test_golden.py: the C engine vs the PyTorch model on random-weight models (train/golden.py):
logits of prefill and every decode step, sliding window, greedy events (test_golden.c), and
`continuo eval` NLL on a token file."""

import os
import subprocess
import sys
import tempfile

SRC = os.environ["CONTINUO_SRC"]
CONTINUO = os.environ["CONTINUO"]


def main() -> int:
    test_golden = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "train", "golden.py"), d], check=True,
                       stdout=subprocess.DEVNULL)
        cases = sorted(f[:-4] for f in os.listdir(d) if f.endswith(".nll"))
        assert len(cases) >= 3, cases
        r = subprocess.run([test_golden, d] + cases)
        if r.returncode != 0:
            print(f"test_golden failed with status {r.returncode}")
            failures += 1
        for case in cases:
            want = open(os.path.join(d, case + ".nll")).read().split()
            r = subprocess.run([CONTINUO, "eval", "--model", os.path.join(d, case + ".gguf"),
                                os.path.join(d, case + ".tok")], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{case}: continuo eval failed ({r.returncode}): {r.stderr}")
                failures += 1
                continue
            last = r.stdout.strip().splitlines()[-1].split()
            ok = (len(last) == 4 and last[0] == "nll" and last[2] == "events"
                  and int(last[3]) == int(want[3])
                  and abs(float(last[1]) - float(want[1])) <= 1e-4 * abs(float(want[1])))
            print(f"{case}: continuo eval: {' '.join(last)}; PyTorch: {' '.join(want)}: {'ok' if ok else 'MISMATCH'}")
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""test_golden.py: the C engine vs the PyTorch model on random-weight models (train/golden.py):
logits of prefill and every decode step, sliding window, rolling cache, greedy events
(test_golden.c), and `continuo eval` NLL on a token file in both memory modes, with and
without an adapted model's memory of its player."""

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
        cases = sorted(f[:-len(".ref.gguf")] for f in os.listdir(d) if f.endswith(".ref.gguf"))
        assert len(cases) >= 3, cases
        r = subprocess.run([test_golden, d] + cases)
        if r.returncode != 0:
            print(f"test_golden failed with status {r.returncode}")
            failures += 1
        for case in cases:
            # window memory is the default; stream memory scores each sequence as one rolling stream
            for memory, ext, extra in (("window", ".nll", []), ("window", ".nll", ["--memory", "window"]),
                                       ("stream", ".stream.nll", ["--memory", "stream"])):
                want = open(os.path.join(d, case + ext)).read().split()
                r = subprocess.run([CONTINUO, "eval", "--model", os.path.join(d, case + ".gguf")] + extra
                                   + [os.path.join(d, case + ".tok")], capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{case}: continuo eval {' '.join(extra)} failed ({r.returncode}): {r.stderr}")
                    failures += 1
                    continue
                last = r.stdout.strip().splitlines()[-1].split()
                ok = (len(last) == 4 and last[0] == "nll" and last[2] == "events"
                      and int(last[3]) == int(want[3])
                      and abs(float(last[1]) - float(want[1])) <= 1e-4 * abs(float(want[1])))
                print(f"{case}: continuo eval {' '.join(extra)}: {' '.join(last)}; PyTorch ({memory}): "
                      f"{' '.join(want)}: {'ok' if ok else 'MISMATCH'}")
                failures += not ok
        # an adapted model's memory of its player: mixed in as the reference mixes it, and it
        # fits the piece it remembers (the same model without it scores the piece played again worse)
        plain = float(open(os.path.join(d, "memory.plain.nll")).read().split()[1])
        for memory, ext in (("window", ".nll"), ("stream", ".stream.nll")):
            want = open(os.path.join(d, "memory" + ext)).read().split()
            r = subprocess.run([CONTINUO, "eval", "--memory", memory, "--model", os.path.join(d, "memory.gguf"),
                                os.path.join(d, "memory.tok")], capture_output=True, text=True)
            last = r.stdout.strip().splitlines()[-1].split() if r.returncode == 0 else ["failed", r.stderr]
            ok = (len(last) == 4 and int(last[3]) == int(want[3])
                  and abs(float(last[1]) - float(want[1])) <= 1e-4 * abs(float(want[1])))
            print(f"memory case: continuo eval --memory {memory}: {' '.join(last)}; reference "
                  f"{' '.join(want)}: {'ok' if ok else 'MISMATCH'}")
            failures += not ok
        ok = float(want[1]) < plain - 0.2
        print(f"memory case: the memory moves the piece played again from {plain:.4f} to {float(want[1]):.4f} "
              f"nats an event: {'ok' if ok else 'too little'}")
        failures += not ok
        r = subprocess.run([CONTINUO, "eval", "--memory", "rolling", os.path.join(d, cases[0] + ".tok")],
                           capture_output=True, text=True)
        ok = r.returncode == 2 and "--memory" in r.stderr and "window" in r.stderr and "stream" in r.stderr
        print(f"continuo eval --memory rolling: status {r.returncode}, {r.stderr.strip()!r}: "
              f"{'ok' if ok else 'no clear error'}")
        failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""test_soak_plot.py: bench/soak_plot.py draws a soak's latencies file.

A run of 2,000 phrases whose fresh process is 0.5 ms faster than the aged
service on every one of the last thousand: the picture names that median
(+0.500 ms) and both lines; a run of 300 (no fresh process) draws one line;
a bad line is refused with the file and line number, and no picture."""

import os
import subprocess
import sys
import tempfile

SRC = os.environ["CONTINUO_SRC"]
PLOT = os.path.join(SRC, "bench", "soak_plot.py")
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def run(lat, out):
    return subprocess.run([sys.executable, PLOT, lat, out], capture_output=True, text=True, timeout=120)


with tempfile.TemporaryDirectory() as tmp:
    lat, svg = os.path.join(tmp, "lat.txt"), os.path.join(tmp, "soak.svg")
    with open(lat, "w") as f:
        for i in range(2000):
            aged = 1.0 + (i % 7) * 0.1
            f.write(f"{aged:.3f}\n" if i < 1000 else f"{aged:.3f} {aged - 0.5:.3f}\n")
    r = run(lat, svg)
    text = open(svg).read() if os.path.exists(svg) else ""
    check(r.returncode == 0 and "2000 phrases drawn" in r.stdout, f"2,000 phrases drawn ({r.stdout.strip()} {r.stderr.strip()})")
    check("median +0.500 ms" in text, "the paired median is named: +0.500 ms")
    check("a fresh process, in turns" in text and "the soak (aged service)" in text, "both lines have their names")

    short, svg2 = os.path.join(tmp, "short.txt"), os.path.join(tmp, "short.svg")
    with open(short, "w") as f:
        f.writelines(f"{1 + i % 3}.0\n" for i in range(300))
    r = run(short, svg2)
    text = open(svg2).read() if os.path.exists(svg2) else ""
    check(r.returncode == 0 and "the soak (aged service)" in text and "a fresh process" not in text,
          "a short run without a fresh process: one line")

    bad, svg3 = os.path.join(tmp, "bad.txt"), os.path.join(tmp, "bad.svg")
    with open(bad, "w") as f:
        f.write("1.0\n2.0\nfast\n")
    r = run(bad, svg3)
    check(r.returncode != 0 and f"{bad}:3" in r.stderr and "fast" in r.stderr and not os.path.exists(svg3),
          f"a bad line is named ({r.stderr.strip()})")
    with open(bad, "w") as f:
        f.write("1.0 2.0 3.0\n")
    r = run(bad, svg3)
    check(r.returncode != 0 and f"{bad}:1" in r.stderr and not os.path.exists(svg3),
          f"three numbers on a line are refused ({r.stderr.strip()})")

sys.exit(1 if failures else 0)

#!/usr/bin/python3
"""suite-times.py BUILD_DIR...: how long each meson test suite took, from
meson's own record (BUILD_DIR/meson-logs/testlog.json), and each test of the
qemu suite on its own: one line each, for the end of a test run."""
import json
import os
import sys

for build in sys.argv[1:]:
    path = os.path.join(build, "meson-logs", "testlog.json")
    if not os.path.exists(path):
        continue
    suites, guests = {}, []
    with open(path) as fh:
        for line in fh:
            t = json.loads(line)
            # "continuo:SUITE / TEST" (a test's first suite names it).
            suite, _, test = t["name"].partition(" / ")
            suite = suite.split(":")[-1]
            secs = float(t.get("duration") or 0)
            n, total = suites.get(suite, (0, 0.0))
            suites[suite] = (n + 1, total + secs)
            if suite == "qemu":
                guests.append("%s %.0fs %s" % (test, secs, t.get("result", "?").lower()))
    parts = ", ".join("%s %.0fs (%d)" % (s, total, n) for s, (n, total) in
                      sorted(suites.items(), key=lambda kv: -kv[1][1]))
    print("%s suites, seconds (tests): %s" % (build, parts))
    if guests:
        print("%s guest tests: %s" % (build, "; ".join(guests)))

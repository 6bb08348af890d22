#!/usr/bin/python3
"""test_play_defaults.py: `continue` and `serve` play with the same defaults.

The sampling settings and the two caps (notes at once, note length) that
`continue` uses when given none must be the ones `serve` starts with
(`serve --dump-config`), so that the same settings sound the same; and
`continue` given serve's values explicitly must write the same file as
`continue` with its defaults.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from servetest import check, done  # noqa: E402

continuo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.environ["CONTINUO"])
src = os.environ.get("CONTINUO_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))

dump = subprocess.run([continuo, "serve", "--dump-config"], capture_output=True, text=True).stdout
serve = dict(re.findall(r"^#(\w+) = (\S+)$", dump, re.M))
help_text = subprocess.run([continuo, "continue", "--help"], capture_output=True, text=True).stdout


def cont_default(flag):
    m = re.search(r"^\s+%s \S+.*?\(default ([0-9.]+)( ms)?\)" % re.escape(flag), help_text, re.M | re.S)
    return m.group(1) if m else None


pairs = {"--temperature": "temperature", "--top-p": "top_p", "--top-k": "top_k", "--min-p": "min_p",
         "--max-held": "max_held_notes", "--max-note-seconds": "max_note_ms", "--pace": "pace",
         "--key-pull": "key_pull"}
values = {}
for flag, key in pairs.items():
    c, s = cont_default(flag), serve.get(key)
    print("%-20s continue %-6s serve %-6s" % (flag, c, s))
    check(c is not None and s is not None and float(c) == float(s),
          "continue %s defaults to %r, serve's %s to %r" % (flag, c, key, s))
    values[flag] = s

# A flag, off by default in continue: serve's key of the same meaning too.
check(serve.get("filter_time_shifts") == "no" and "--filter-time-shifts" in help_text,
      "continue --filter-time-shifts is a flag, off; serve's filter_time_shifts is %r"
      % serve.get("filter_time_shifts"))

model = os.path.join(src, "models", "continuo-default.gguf")
motif = os.path.join(src, "models", "motif.mid")
if os.path.exists(model) and all(values.values()):
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, "a.mid"), os.path.join(tmp, "b.mid")
        base = [continuo, "continue", motif, "--model", model, "--seconds", "6", "--seed", "11",
                "--threads", "1"]
        r1 = subprocess.run(base + ["-o", a], capture_output=True, text=True)
        explicit = []
        for flag, v in values.items():
            explicit += [flag, str(float(v) / 1000 if flag == "--max-note-seconds" else v)]
        r2 = subprocess.run(base + ["-o", b] + explicit, capture_output=True, text=True)
        check(r1.returncode == 0 and r2.returncode == 0, "continue runs: %s %s" % (r1.stderr[-300:], r2.stderr[-300:]))
        if r1.returncode == 0 and r2.returncode == 0:
            with open(a, "rb") as fa, open(b, "rb") as fb:
                check(fa.read() == fb.read(), "continue with serve's settings given explicitly writes the same file "
                      "as continue with its defaults (%s)" % " ".join(explicit))
else:
    print("no default model: the byte comparison is not run")

done()

#!/usr/bin/python3
"""bench_latency.py: phrase-end to first-note latency and scheduler timing error of `continuo serve`, as numbers.

    /usr/bin/python3 tests/daemon/bench_latency.py [--continuo BIN] [--model M.gguf|echo]
        [--phrases N] [--lookahead MS] [--memory window|stream] [--dtype f32|f16] [--set KEY=VALUE ...]
        [--watch reading|stuck]

Plays N short phrases in real time into a FIFO input, lets each continuation
play, and prints the service's own measurements (`continuo ctl status`):
latency = phrase end (silence reached) -> first note-on sent; timing error =
send time - deadline of every scheduled message.  Without --model it makes a
random-weight model the size of the reference one (6 layers, d=512, 22 M
parameters) with train/export.py: the cost per event is what matters here,
not what it plays.  With --watch a viewer subscribes (`watch` on the control
socket, docs/WATCH.md) for the whole run: one that reads every frame, or one
that never reads (its frames are dropped, counted).
"""

import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import servetest  # noqa: E402
from watchclient import Watcher  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--continuo", default=os.environ.get("CONTINUO", "build/continuo"))
ap.add_argument("--model", help="model file, or 'echo' (default: a random 22 M model)")
ap.add_argument("--phrases", type=int, default=20)
ap.add_argument("--lookahead", type=int, default=-1, help="lookahead_ms (default -1: auto, as the service)")
ap.add_argument("--memory", choices=("window", "stream"), help="the service's memory key (default: its default)")
ap.add_argument("--dtype", choices=("f32", "f16"), default="f32", help="matrices of the random model")
ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                help="more settings of the service, e.g. --set candidates=4")
ap.add_argument("--watch", choices=("reading", "stuck"), help="a subscriber for the whole run")
args = ap.parse_args()
servetest.CONTINUO = os.path.abspath(args.continuo)
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

model = args.model
if not model:
    model = "/tmp/continuo-bench-22m%s.gguf" % ("" if args.dtype == "f32" else "-" + args.dtype)
    if not os.path.exists(model):
        print("making a random 22 M parameter model at", model, file=sys.stderr)
        subprocess.run(["/usr/bin/python3", os.path.join(src, "train", "export.py"), "--random",
                        model, "--layers", "6", "--d-model", "512", "--heads", "8", "--d-ff", "2048",
                        "--max-rel", "1024", "--context", "1024", "--dtype", args.dtype], check=True)

settings = ["model=" + model, "phrase_end=silence", "phrase_silence_ms=200", "response_seconds=1",
            "lookahead_ms=%d" % args.lookahead, "seed=7"] + (["memory=" + args.memory] if args.memory else []) \
    + args.set
sv = servetest.Service(*settings, output="none")
try:
    motif = [(60, 90, 0.1), (64, 80, 0.1), (67, 85, 0.1), (72, 95, 0.2)]
    viewer = Watcher(sv.sock, read=args.watch == "reading") if args.watch else None
    t0 = time.monotonic()
    for i in range(args.phrases):
        shift = (i % 5) - 2
        sv.play_motif([(p + shift, v, d) for p, v, d in motif], gap=0.02)
        time.sleep(0.2 + 1.0 + 0.15)       # silence, the continuation, a breath
    st = sv.request("status")
    if viewer:
        viewer.read_all()
        lost = sum(f["frames"] for f in viewer.of("dropped"))
        watched = "%s viewer: %d frames (%d attention), %d dropped" % (args.watch, len(viewer.frames),
                                                                    len(viewer.of("attention")), lost)
    sv.stop()
    head = re.search(r"head start (\d+) ms", sv.read_log())
finally:
    sv.cleanup()


def field(name):
    m = re.search(r"\b%s=(\S+)" % name, st)
    return m.group(1) if m else "?"


print("continuo serve latency benchmark: engine %s, model %s, memory %s"
      % (field("engine"), model, args.memory or "default"))
print("phrases %s, continuations %s, notes in %s, notes out %s, lookahead_ms %d, candidates %s (%s prepared), "
      "%.0f s" % (field("phrases"), field("responses"), field("notes_in"), field("notes_out"), args.lookahead,
                  field("candidates"), field("candidates_prepared"), time.monotonic() - t0))
if head:
    print("head start %s ms%s" % (head.group(1), " (lookahead_ms -1: what a decode step took at open)"
                                  if args.lookahead == -1 else ""))
if args.watch:
    print(watched)
for what, key in (("phrase end -> first note (ms)", "latency_ms"),
                  ("scheduler timing error (ms)", "timing_error_ms")):
    print("%-32s n=%s p50=%s p90=%s p99=%s max=%s" % (what, field(key + "_n"), field(key + "_p50"),
          field(key + "_p90"), field(key + "_p99"), field(key + "_max")))

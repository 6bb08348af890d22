#!/usr/bin/python3
"""test_model_switch.py: `serve` changes models while it runs.

What a user does: `ctl model FILE` (or `set model`, or a `ctl reload` after
`continuo adapt` kept a newer model under `model = auto`), and the next
answer comes from the new model, which has heard everything played so far.
Judged against a service that never switches, with the same seed and the
same phrases:
- before the switch both answer alike;
- switched to a copy of the same model file, the next answer is the one
  the unswitched service gives, id for id, so the context went over whole
  (the new model prefills it: its products round apart from the decode
  steps' in the last bits, which flips a sampled id about never);
- switched to another model (random weights), the answers differ and
  `ctl status` names that file;
- a file that is not there is refused at once, one that does not load is
  logged and the model in use plays on; echo (another engine) waits for a
  restart;
- `model = auto` and a reload: a model `adapt` kept since the start is
  taken.
"""
import os
import re
import shutil
import sys
import tempfile
import time

import mido

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from servetest import Service, check, done, sanitized, tiny_model  # noqa: E402
from test_same_ids import logged_ids  # noqa: E402  (the ids of each continuation in a debug log)

SRC = os.environ["CONTINUO_SRC"]
MODEL = os.path.join(SRC, "models", "continuo-default.gguf")
SEED = 4242
PRIMER_S = 3.0
# Under ASan (CI's second build) it runs too, with more time: no other test
# loads, swaps and closes models on the service's threads.  The answers are
# the same there (`play` hears the file at its own times).
SLOW = 3 if sanitized() else 1
SETS = ["input=null", "model_threads=1", "seed=%d" % SEED, "response_seconds=2", "candidates=1"]


def short_primer(dst):
    """The bundled motif's first PRIMER_S seconds (notes still on end there)."""
    f, out = mido.MidiFile(os.path.join(SRC, "models", "motif.mid")), mido.MidiFile(ticks_per_beat=500)
    track, t, last, on = mido.MidiTrack(), 0.0, 0, set()
    out.tracks.append(track)
    for msg in f:
        t += msg.time
        if t > PRIMER_S:
            break
        if msg.type not in ("note_on", "note_off"):
            continue
        tick = round(t * 1000)
        track.append(msg.copy(time=tick - last))
        last = tick
        if msg.type == "note_on" and msg.velocity > 0:
            on.add(msg.note)
        else:
            on.discard(msg.note)
    for i, n in enumerate(sorted(on)):
        track.append(mido.Message("note_off", note=n, time=round(PRIMER_S * 1000) - last if i == 0 else 0))
    out.save(dst)


def status(sv):
    return sv.request("status")


def answer(sv, primer, k, timeout=60 * SLOW):
    """Plays PRIMER into SV and waits until its answer K is over.  After
    more than CONTEXT_MAX_GAP_S (2 s) of quiet: the gap enters the context
    as 2 s however long the test took, so two services hear alike."""
    if k > 1:
        time.sleep(2.5)
    reply = sv.request("play " + primer)
    check(reply.startswith("ok heard"), "play: " + reply)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = status(sv)
        if "state=listening" in st and re.search(r"responses=(\d+)", st).group(1) == str(k):
            return
        time.sleep(0.05)
    check(False, "answer %d was not over in %d s" % (k, timeout))


def model_in_use(st):
    m = re.search(r' model=("[^"]*"|\S+)', st)
    return m.group(1).strip('"') if m else None


def switched(sv, path, timeout=30 * SLOW):
    """Waits until `status` names PATH as the model in use, none loading."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = status(sv)
        if model_in_use(st) == path and "model_loading=" not in st:
            return True
        time.sleep(0.02)
    return check(False, "status names %s as the model in use within %d s (%s)"
                 % (path, timeout, model_in_use(status(sv))))


def settled(sv, timeout=30 * SLOW):
    """Waits until no model is loading; the model in use."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = status(sv)
        if "model_loading=" not in st:
            return model_in_use(st)
        time.sleep(0.02)
    check(False, "a load still under way after %d s" % timeout)
    return None


def write_adapted(state, name, src):
    """A model `continuo adapt` kept: the file and its card, as adapt writes them."""
    folder = os.path.join(state, "continuo", "adapted")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name + ".card"), "w") as f:
        f.write("date: 2026-12-03T12:00:00Z\nminutes: 12.5\nsessions: 3\n"
                "held-back NLL: 2.400 -> 2.200\nreference NLL: 2.100 -> 2.110\n")
    shutil.copy(src, os.path.join(folder, name + ".gguf"))
    return os.path.join(folder, name + ".gguf")


def main():
    tiny = tiny_model()
    work = tempfile.mkdtemp(prefix="continuo-switch-")
    primer = os.path.join(work, "primer.mid")
    short_primer(primer)
    copy = os.path.join(work, "copy of the shipped model.gguf")    # a space: quoted in status
    shutil.copy(MODEL, copy)
    garbage = os.path.join(work, "garbage.gguf")
    with open(garbage, "wb") as f:
        f.write(b"GGUF" + os.urandom(4000))

    # The service that never switches.
    sv = Service("model=" + MODEL, *SETS, verbose=True)
    try:
        for k in (1, 2, 3):
            answer(sv, primer, k)
        sv.stop()
        plain = logged_ids(sv.read_log())
    finally:
        sv.cleanup()
    check(len(plain) == 3 and all(len(r) > 10 for r in plain), "three answers logged (%d)" % len(plain))

    sv = Service("model=" + MODEL, *SETS, verbose=True)
    try:
        check(model_in_use(status(sv)) == MODEL, "status names the model in use at start: " + str(model_in_use(status(sv))))
        answer(sv, primer, 1)
        reply = sv.request("model " + copy)
        check(reply.startswith("ok model = " + copy), "ctl model FILE: " + reply)
        switched(sv, copy)
        check(sv.request("model").startswith("ok model = %s: %s" % (copy, copy)), "ctl model names the file in use")
        answer(sv, primer, 2)
        reply = sv.request("set model " + tiny)
        check(reply.startswith("ok model = " + tiny), "set model FILE: " + reply)
        switched(sv, tiny)
        answer(sv, primer, 3)

        reply = sv.request("model /nonexistent/model.gguf")
        check(reply.startswith("error") and "/nonexistent/model.gguf" in reply,
              "a file that is not there is refused, named: " + reply)
        reply = sv.request("model " + garbage)
        check(reply.startswith("ok"), "a file that exists starts loading: " + reply)
        check(settled(sv) == tiny, "a file that does not load leaves the model in use")
        reply = sv.request("model echo")
        check(reply.startswith("error") and "restart" in reply, "another engine waits for a restart: " + reply)
        check(model_in_use(status(sv)) == tiny, "still the model in use")
        answer(sv, primer, 4)
        st = status(sv)
        check("responses=4" in st, "answered after the refusals: " + st)
        sv.stop()
        log = sv.read_log()
        runs = logged_ids(log)
    finally:
        sv.cleanup()
    check(len(runs) == 4, "four answers logged (%d)" % len(runs))
    if len(runs) == 4 and len(plain) == 3:
        check(runs[0] == plain[0], "before the switch: the same answer as the service that does not switch")
        check(runs[1] == plain[1], "switched to a copy of the model: the same answer, id for id (%d ids; first "
              "differ at %s)" % (len(plain[1]), next((i for i, (a, b) in enumerate(zip(runs[1], plain[1])) if a != b), "-")))
        check(runs[2] != plain[2], "switched to another model: another answer")
    heard = [int(n) for n in re.findall(r"(\d+) ids heard again by the new model", log)]
    check(len(heard) == 2 and all(n > 60 for n in heard),
          "each new model heard the context again: the phrases and the answers (%s ids)" % heard)
    check(re.search(r"garbage\.gguf did not load", log) is not None, "the failed load is logged, named")
    print("answers: unswitched %s ids; switched %s ids; context heard again: %s ids"
          % ([len(r) for r in plain], [len(r) for r in runs], heard))

    # model = auto: a model kept by adapt since the start is taken on reload.
    state = os.path.join(work, "state")
    first = write_adapted(state, "adapted-20261201-120000", tiny)
    sv = Service("model=auto", *SETS, env_extra={"XDG_STATE_HOME": state, "CONTINUO_MODEL": ""})
    try:
        check(model_in_use(status(sv)) == first, "auto: the adapted model at start (%s)" % model_in_use(status(sv)))
        answer(sv, primer, 1)
        newer = write_adapted(state, "adapted-20261203-120000", MODEL)
        reply = sv.request("reload")
        check(reply.startswith("ok"), "reload: " + reply)
        switched(sv, newer)
        answer(sv, primer, 2)
        check("responses=2" in status(sv), "answered with the newer model")
        rc, _ = sv.stop()
        check(rc == 0, "stopped cleanly after the switch (exit %s)" % rc)
    finally:
        sv.cleanup()
    shutil.rmtree(work, ignore_errors=True)
    return done()


if __name__ == "__main__":
    sys.exit(main())

"""test_doctor.py: `continuo doctor` says what `continuo serve` lacks here, one line per check with a
fix, and exits 0 exactly when serve starts with the same config."""

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from servetest import CONTINUO, Service, check, done, tiny_model  # noqa: E402

SOUNDFONT = "/usr/share/sounds/sf2/FluidR3_GM.sf2"
tmp = tempfile.mkdtemp(prefix="continuo-doctor-")
runtime = os.path.join(tmp, "run")
os.mkdir(runtime, 0o700)
env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(tmp, "config"), XDG_CONFIG_DIRS=os.path.join(tmp, "xdg"),
           XDG_RUNTIME_DIR=runtime)


def doctor(*args, e=None):
    r = subprocess.run([CONTINUO, "doctor", *args], capture_output=True, text=True, env=e or env, timeout=90)
    print("$ continuo doctor", " ".join(args), "->", r.returncode, "\n" + r.stdout + r.stderr)
    return r


def line(out, tag, what):
    """The first line 'TAG  WHAT ...' and the fix line after it ('' when none)."""
    lines = out.splitlines()
    for i, ln in enumerate(lines):
        if ln.split()[:2] == [tag, what]:
            fix = lines[i + 1].strip() if i + 1 < len(lines) and lines[i + 1].strip().startswith("fix:") else ""
            return ln, fix
    return None, ""


def serve_starts(*sets, e=None):
    """True when `continuo serve` with these settings is still running after 3 s."""
    args = [CONTINUO, "serve"]
    for s in sets:
        args += ["--set", s]
    p = subprocess.Popen(args, env=e or env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        p.wait(timeout=3)
        return False
    except subprocess.TimeoutExpired:
        p.terminate()
        p.wait()
        return True


try:
    # 1. The defaults on this machine (input and output through ALSA and FluidSynth).
    r = doctor()
    for what in ("config", "sequencer", "soundfont", "audio", "model", "socket"):
        check(any(ln.split()[1:2] == [what] for ln in r.stdout.splitlines() if ln.strip()),
              "a line for " + what)
    bad = [ln for ln in r.stdout.splitlines() if ln.startswith(("warn", "FAIL"))]
    unfixed = [ln for ln in bad if not line(r.stdout, ln.split()[0], ln.split()[1])[1]]
    check(not unfixed, "every warning and failure comes with a fix: %r" % unfixed)
    drivers, _ = line(r.stdout, "--", "audio")
    check(drivers is not None and "alsa" in drivers and "file" in drivers,
          "the audio drivers FluidSynth has are listed: %r" % drivers)
    if not os.path.exists("/dev/snd/seq"):
        ln, fix = line(r.stdout, "FAIL", "sequencer")
        check(ln is not None and "/dev/snd/seq" in ln and "modprobe snd-seq" in fix,
              "no sequencer here: said, with how to load it")
    if not os.path.exists("/dev/snd") and not os.path.exists(os.path.join(runtime, "pulse")):
        ln, fix = line(r.stdout, "FAIL", "audio")
        check(ln is not None and "alsa" in ln and "output=alsa" in fix and "on_missing_soundfont=midi-only" in fix,
              "no sound card here: the driver fails, and the fix offers a DAW or midi-only")
    starts = serve_starts()
    check((r.returncode == 0) == starts, "doctor's exit (%d) agrees with serve (starts: %s)" % (r.returncode, starts))
    if not starts:
        check(r.returncode == 1 and "stop `continuo serve` from starting" in r.stdout, "doctor exits 1 and says why")

    # 2. The model and its speed against the 800 events/s a live answer needs.
    model = tiny_model()
    r = doctor("--set", "model=" + model, "--set", "input=null", "--set", "output=none")
    ln, _ = line(r.stdout, "ok", "model")
    if ln is None:
        ln, _ = line(r.stdout, "warn", "model")
    check(ln is not None and "events/s" in ln and "800" in ln and model in ln,
          "the model's decode speed is measured against 800 events/s: %r" % ln)
    r = doctor("--set", "model=" + os.path.join(tmp, "none.gguf"), "--set", "input=null", "--set", "output=none")
    ln, fix = line(r.stdout, "FAIL", "model")
    check(r.returncode == 1 and ln is not None and "none.gguf" in r.stdout and fix, "a missing model fails, named")

    # 3. A config serve starts with here: doctor exits 0, and serve does start.
    fifo = os.path.join(tmp, "in")
    good = ["model=echo", "input=fifo:" + fifo, "output=fluidsynth", "soundfont=" + SOUNDFONT,
            "audio_driver=file", "audio_file=" + os.path.join(tmp, "out.wav")]
    args = [a for s in good for a in ("--set", s)]
    r = doctor(*args)
    check(r.returncode == 0 and "FAIL" not in r.stdout and "can start" in r.stdout,
          "a config that works here: exit 0, no FAIL")
    check(serve_starts(*good), "and serve does start with it")

    # 4. A service already on the socket: a second one would be refused.
    sv = Service()
    try:
        r = doctor(*args, e=dict(env, XDG_RUNTIME_DIR=sv.runtime))
        ln, fix = line(r.stdout, "FAIL", "socket")
        check(r.returncode == 1 and ln is not None and "another continuo serve" in ln and fix,
              "a running service on the socket: FAIL with a fix")
    finally:
        sv.stop()
        sv.cleanup()

    # 5. No XDG_RUNTIME_DIR: nowhere for the socket, unless control_socket says.
    e = {k: v for k, v in env.items() if k != "XDG_RUNTIME_DIR"}
    r = doctor(*args, e=e)
    ln, fix = line(r.stdout, "FAIL", "socket")
    check(r.returncode == 1 and ln is not None and "XDG_RUNTIME_DIR" in ln and "control_socket" in fix,
          "no XDG_RUNTIME_DIR: FAIL, with a fix")
    r = doctor(*args, "--set", "control_socket=" + os.path.join(tmp, "sock", "ctl"), e=e)
    check(r.returncode == 0, "control_socket set: fine")

    # 6. The config file's problems, with file and line.
    os.makedirs(os.path.join(tmp, "config", "continuo"))
    conf = os.path.join(tmp, "config", "continuo", "continuo.conf")
    with open(conf, "w") as f:
        f.write("# mine\ntemperature = 0.9\ngain = loud\n")
    r = doctor(*args)
    ln, fix = line(r.stdout, "FAIL", "config")
    check(r.returncode == 1 and ln is not None and conf in ln and conf + ":3" in r.stdout and "gain" in r.stdout,
          "a bad config line: FAIL naming the file and line")
    check(not serve_starts(*good), "and serve refuses it too")
    with open(conf, "w") as f:
        f.write("temprature = 0.9\n")
    r = doctor(*args)
    ln, _ = line(r.stdout, "warn", "config")
    check(r.returncode == 0 and ln is not None and "unknown" in ln and conf + ":1" in r.stdout,
          "an unknown key: a warning naming it; serve still starts")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
done()

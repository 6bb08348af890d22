"""test_faults.py: a missing soundfont or audio device, a bad model file, bad reloads, and systemd notifications."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from servetest import CONTINUO, Service, check, done  # noqa: E402

class ServiceLimited(Service):
    """A service started with a resource limit (PREEXEC runs in the child)."""

    def __init__(self, preexec):
        real_popen = subprocess.Popen

        def popen(*a, **k):
            return real_popen(*a, preexec_fn=preexec, **k)
        subprocess.Popen = popen
        try:
            super().__init__("phrase_silence_ms=10000")
        finally:
            subprocess.Popen = real_popen


tmp = tempfile.mkdtemp(prefix="continuo-faults-")
env = dict(os.environ, XDG_RUNTIME_DIR=tmp, XDG_CONFIG_HOME=os.path.join(tmp, "none"),
           XDG_CONFIG_DIRS=os.path.join(tmp, "none"))


def serve_fails(*sets):
    args = [CONTINUO, "serve", "--set", "input=null", "--set", "output=none"]
    for s in sets:
        args += ["--set", s]
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=30)
    return r.returncode, r.stderr


try:
    # Missing soundfont: a clear error and no start...
    rc, err = serve_fails("model=echo", "output=fluidsynth", "soundfont=/no/such.sf2",
                          "audio_driver=file", "audio_file=" + os.path.join(tmp, "a.wav"))
    no_fluid = "built without FluidSynth" in err
    check(rc == 1 and ("cannot open soundfont /no/such.sf2: No such file or directory" in err
                       or no_fluid), "missing soundfont refused: %r" % err)
    # ... a file that is not a soundfont, likewise ...
    bogus = os.path.join(tmp, "bogus.sf2")
    with open(bogus, "wb") as f:
        f.write(b"RIFF\x04\x00\x00\x00junk")
    rc, err = serve_fails("model=echo", "output=fluidsynth", "soundfont=" + bogus,
                          "audio_driver=file", "audio_file=" + os.path.join(tmp, "a.wav"))
    check(rc == 1 and "cannot open soundfont " + bogus in err, "bad soundfont refused: %r" % err)
    if no_fluid:
        print("built without FluidSynth: the soundfont and audio device checks only see it refused")
    # ... or MIDI-only output when configured so.
    out = os.path.join(tmp, "out.raw")
    sv = Service("soundfont=/no/such.sf2", "on_missing_soundfont=midi-only",
                 output="fluidsynth,fifo:" + out)
    try:
        log = sv.read_log()
        check("cannot open soundfont /no/such.sf2" in log and "midi-only" in log,
              "midi-only fallback logged: %r" % log)
        sv.play([0x90, 60, 100, 0x80, 60, 0])
        time.sleep(0.1)
        check(sv.request("status").startswith("ok"), "runs without FluidSynth")
        rc, _ = sv.stop()
        check(rc == 0, "clean exit")
        with open(out, "rb") as f:
            data = f.read()
        # (every start sends all notes off on the 16 channels first: 48 bytes)
        check(data[48:].startswith(bytes([0x90, 60, 100])), "MIDI output still works: %r" % data[:60])
    finally:
        sv.cleanup()
    # An audio device that cannot be opened (an unwritable WAV path here).
    rc, err = serve_fails("model=echo", "output=fluidsynth", "audio_driver=file",
                          "audio_file=/no/such/dir/a.wav")
    if os.path.exists("/usr/share/sounds/sf2/default-GM.sf2") and not no_fluid:
        check(rc == 1 and "cannot start audio driver file" in err, "bad audio device: %r" % err)
        # A device that is not there: the driver and device are named, with what to try.
        rc, err = serve_fails("model=echo", "output=fluidsynth", "audio_driver=oss", "audio_device=/no/such/dsp")
        check(rc == 1 and "cannot start audio driver oss (device /no/such/dsp)" in err
              and "another audio driver" in err and "output=alsa" in err
              and "on_missing_soundfont=midi-only" in err, "a driver that fails says what to try: %r" % err)

    # Model files: missing, truncated, not a model: refused at start, exit 1.
    rc, err = serve_fails("model=" + os.path.join(tmp, "missing.gguf"))
    check(rc == 1 and "missing.gguf" in err, "missing model refused: %r" % err)
    junk = os.path.join(tmp, "junk.gguf")
    with open(junk, "wb") as f:
        f.write(b"GGUF\x03\x00\x00\x00" + b"\x00" * 10)
    rc, err = serve_fails("model=" + junk)
    check(rc == 1 and "junk.gguf" in err, "truncated model refused: %r" % err)
    check(not os.path.exists(os.path.join(tmp, "continuo", "ctl")), "no socket left behind")

    # Reload: a bad file keeps the settings in use; a good one applies live keys.
    sv = Service(config_text="temperature = 0.7\n")
    try:
        conf = os.path.join(sv.dir, "test.conf")
        check(sv.request("get temperature") == "ok temperature = 0.7", "config applied")
        with open(conf, "w") as f:
            f.write("temperature = 0.9\ntop_k = 5\n")
        sv.proc.send_signal(1)      # SIGHUP
        time.sleep(0.3)
        check(sv.request("get temperature") == "ok temperature = 0.9", "SIGHUP reloaded")
        check(sv.request("get top_k") == "ok top_k = 5", "SIGHUP reloaded top_k")
        with open(conf, "w") as f:
            f.write("temperature = boiling\n")
        check(sv.request("reload").startswith("ok"), "reload accepted")
        time.sleep(0.2)
        check(sv.request("get temperature") == "ok temperature = 0.9", "bad reload kept the old value")
        check("test.conf:1: temperature" in sv.read_log(), "bad reload logged with file:line")
        with open(conf, "w") as f:
            f.write("temperature = 0.9\nsoundfont = /elsewhere.sf2\n")
        sv.request("reload")
        time.sleep(0.2)
        check("soundfont changed; it takes effect after a restart" in sv.read_log(), "fixed key noted")
        check(sv.request("get soundfont") != "ok soundfont = /elsewhere.sf2", "soundfont kept")
        # A reloaded option goes through its apply step: the scheduler's limit
        # holds the answer to a chord to one note at once.
        with open(conf, "w") as f:
            f.write("temperature = 0.9\nmax_held_notes = 1\nphrase_silence_ms = 200\n")
        sv.proc.send_signal(1)      # SIGHUP
        time.sleep(0.3)
        check("reload: max_held_notes = 1" in sv.read_log(), "reload logged the new value")
        sv.play([0x90, 60, 90, 0x90, 64, 90, 0x90, 67, 90])
        time.sleep(0.1)
        sv.play([0x80, 60, 0, 0x80, 64, 0, 0x80, 67, 0])
        time.sleep(0.8)
        out = sv.request("status")
        check("phrases=1" in out and "notes_in=3" in out and "notes_out=1" in out,
              "the chord's answer held to one note after the reload: %r" % out)
        kept = "temperature = 0.9\nmax_held_notes = 1\nphrase_silence_ms = 200\n"
        # All or nothing: gain comes before recording in the table, so it is
        # applied, then undone when the recording's folder is refused.
        with open(conf, "w") as f:
            f.write(kept + "gain = 0.3\nrecording = /nonexistent/x.mid\n")
        sv.request("reload")
        time.sleep(0.2)
        log = sv.read_log()
        check(sv.request("get gain") == "ok gain = 0.8", "a refused reload left gain as it was")
        check(sv.request("get recording") == "ok recording =", "and the recording (none)")
        check("reload failed: recording = /nonexistent/x.mid: cannot write in /nonexistent: No such "
              "file or directory; keeping the settings in use" in log, "the refusal logged: %r" % log)
        check("reload: gain = 0.3" not in log, "gain not logged as applied")
        # Two controller keys on one controller: the file is refused as a whole.
        with open(conf, "w") as f:
            f.write(kept + "gain = 0.3\ncc_top_p = 21\n")
        sv.request("reload")
        time.sleep(0.2)
        log = sv.read_log()
        check(conf + " with --set: cc_top_p = 21: controller 21 is cc_temperature's already" in log,
              "the clash logged with the file: %r" % log)
        check(sv.request("get cc_top_p") == "ok cc_top_p = 22" and
              sv.request("get gain") == "ok gain = 0.8", "a clashing reload changed nothing")
        # Options that need a restart are listed in one line; the live ones go in.
        with open(conf, "w") as f:
            f.write(kept + "gain = 0.3\nsoundfont = /elsewhere.sf2\naudio_file = /elsewhere.wav\n")
        sv.request("reload")
        time.sleep(0.2)
        log = sv.read_log()
        check("reload: soundfont, audio_file changed; they take effect after a restart" in log,
              "restart-only keys listed: %r" % log)
        check("reload: gain = 0.3" in log and sv.request("get gain") == "ok gain = 0.3",
              "the live key applied with them")
        rc, _ = sv.stop()
        check(rc == 0, "clean exit after reloads")
    finally:
        sv.cleanup()

    # A full disk while saving (a file size limit stands in for it): a clear
    # error, no partial file, the service goes on and a later save works.
    import resource

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
    sv = ServiceLimited(small_files)
    try:
        for i in range(300):
            sv.play([0x90, 40 + i % 40, 90, 0x80, 40 + i % 40, 0])
        time.sleep(0.3)
        target = os.path.join(sv.dir, "big.mid")
        out = sv.request("save " + target)
        check(out.startswith("error cannot write"), "save past the limit fails: %r" % out)
        check(not [f for f in os.listdir(sv.dir) if f.startswith("big.mid")],
              "no partial or temporary file: %r" % os.listdir(sv.dir))
        check("big.mid" in sv.read_log(), "the cause is logged: %r" % sv.read_log()[-300:])
        check(sv.request("status").startswith("ok"), "the service goes on")
        rc, _ = sv.stop()
        check(rc == 0, "clean exit after a failed save")
    finally:
        sv.cleanup()

    # systemd notifications: READY=1 once started, WATCHDOG=1 at half the period, STOPPING=1.
    ns_path = os.path.join(tmp, "notify")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(ns_path)
    ns.settimeout(5)
    sv = Service(env_extra={"NOTIFY_SOCKET": ns_path, "WATCHDOG_USEC": "200000"})
    try:
        msgs = []
        t_end = time.monotonic() + 0.6
        while time.monotonic() < t_end:
            try:
                msgs.append((time.monotonic(), ns.recv(4096).decode()))
            except socket.timeout:
                break
        texts = [m for _, m in msgs]
        check(texts and texts[0].startswith("READY=1"), "READY=1 first: %r" % texts[:3])
        pings = [t for t, m in msgs if m == "WATCHDOG=1"]
        check(len(pings) >= 3, "watchdog pings at half of 200 ms: %d in 0.6 s" % len(pings))
        rc, _ = sv.stop()
        rest = []
        try:
            while True:
                ns.settimeout(0.5)
                rest.append(ns.recv(4096).decode())
        except socket.timeout:
            pass
        check("STOPPING=1" in rest, "STOPPING=1 at the stop: %r" % rest)
    finally:
        sv.cleanup()
        ns.close()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
done()

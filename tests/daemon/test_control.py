"""test_control.py: the control socket of a running `continuo serve`: commands, permissions, bad clients."""

import os
import socket
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from servetest import Service, check, done, read_smf, CONTINUO  # noqa: E402


def test_play():
    """play FILE: a MIDI file's notes heard as a phrase and answered (echo: a
    fifth up); ctl makes a relative name absolute; bad files are refused by name."""
    sv = Service()
    try:
        here = os.getcwd()
        os.chdir(sv.dir)
        try:
            with open("phrase.mid", "wb") as f:
                trk = bytes([0, 0x90, 60, 90, 0x83, 0x60, 0x80, 60, 0, 0, 0x90, 64, 90, 0x83, 0x60, 0x80, 64, 0,
                             0, 0xFF, 0x2F, 0])
                f.write(b"MThd" + (6).to_bytes(4, "big") + bytes([0, 0, 0, 1, 1, 0xE0]) + b"MTrk"
                        + len(trk).to_bytes(4, "big") + trk)
            with open("empty.mid", "wb") as f:
                f.write(b"MThd" + (6).to_bytes(4, "big") + bytes([0, 0, 0, 1, 1, 0xE0]) + b"MTrk"
                        + (4).to_bytes(4, "big") + bytes([0, 0xFF, 0x2F, 0]))
            with open("bad.mid", "wb") as f:
                f.write(b"MThd junk")
            rc, out, _ = sv.ctl("play", "phrase.mid")
            path = os.path.join(sv.dir, "phrase.mid")
            check(rc == 0 and out == "ok heard 4 messages of %s (1.00 s); continuation 1" % path, "play: %r" % out)
            deadline = time.monotonic() + 5
            while "state=listening" not in sv.request("status") and time.monotonic() < deadline:
                time.sleep(0.05)
            out = sv.request("status")
            check("responses=1" in out and "notes_out=2" in out, "play: the file was answered, two notes: %r" % out)
            rc, out, _ = sv.ctl("play", "empty.mid")
            check(rc == 1 and out == "error %s: 0 note and pedal messages (play takes 1 to 3000)"
                  % os.path.join(sv.dir, "empty.mid"), "play of a file without notes: %r" % out)
            rc, out, _ = sv.ctl("play", "bad.mid")
            check(rc == 1 and out == "error cannot read %s (see the service log)" % os.path.join(sv.dir, "bad.mid"),
                  "play of a bad file: %r" % out)
            check("bad.mid: byte" in sv.read_log(), "the log names the bad file's byte")
            out = sv.request("play phrase.mid")
            check(out == "error play needs an absolute path", "play of a relative path on the socket: %r" % out)
        finally:
            os.chdir(here)
    finally:
        sv.cleanup()


test_play()
sv = Service("phrase_silence_ms=200")
try:
    # Permissions: the directory is private, the socket 0600.
    check(stat.S_IMODE(os.stat(os.path.dirname(sv.sock)).st_mode) == 0o700, "socket dir is 0700")
    check(stat.S_IMODE(os.stat(sv.sock).st_mode) == 0o600, "socket is 0600")

    rc, out, err = sv.ctl("status")
    check(rc == 0 and out.startswith("ok state=listening"), "status: %r %r" % (out, err))

    # get / set of a live key, errors for bad values, unknown and fixed keys.
    rc, out, _ = sv.ctl("get", "temperature")
    check(rc == 0 and out == "ok temperature = 1", "get temperature: %r" % out)
    rc, out, _ = sv.ctl("set", "temperature", "0.5")
    check(rc == 0 and out == "ok temperature = 0.5", "set temperature: %r" % out)
    rc, out, _ = sv.ctl("get", "temperature")
    check(out == "ok temperature = 0.5", "set took effect: %r" % out)
    rc, out, _ = sv.ctl("set", "temperature", "99")
    check(rc == 1 and "expected a number from 0 to 4" in out, "bad value refused: %r" % out)
    rc, out, _ = sv.ctl("get", "temperature")
    check(out == "ok temperature = 0.5", "bad value left it alone: %r" % out)
    rc, out, _ = sv.ctl("set", "nonsense", "1")
    check(rc == 1 and "unknown key" in out, "unknown key: %r" % out)
    rc, out, _ = sv.ctl("set", "context_events", "512")
    check(rc == 1 and "cannot change while running" in out, "fixed key: %r" % out)
    # model is live, but not across engines (this service runs echo)
    rc, out, _ = sv.ctl("set", "model", "/x")
    check(rc == 1 and "after a restart" in out, "model across engines: %r" % out)
    rc, out, _ = sv.ctl("frobnicate")
    listing = ("status, panic, get KEY, set KEY VALUE, reload, save FILE, play FILE, model [FILE|auto], tempo [BPM], takes, "
               "replay [N] [next], "
               "save-take N FILE, watch, help [COMMAND]")
    check(rc == 1 and out == "error unknown command 'frobnicate' (%s)" % listing, "unknown command: %r" % out)
    # A known command with the wrong number of arguments says so, with its usage.
    for line, reply in (("status now", "too many arguments for status (usage: status)"),
                        ("get", "too few arguments for get (usage: get KEY)"),
                        ("get temperature extra", "too many arguments for get (usage: get KEY)"),
                        ("set temperature", "too few arguments for set (usage: set KEY VALUE)"),
                        ("save", "too few arguments for save (usage: save FILE)")):
        out = sv.request(line)
        check(out == "error " + reply, "%r refused: %r" % (line, out))
    rc, out, _ = sv.ctl("set", "temperature")
    check(rc == 1 and out == "error too few arguments for set (usage: set KEY VALUE)", "ctl set KEY: %r" % out)
    out = sv.request("help frobnicate")
    check(out == "error unknown command 'frobnicate' (%s)" % listing, "help of an unknown command: %r" % out)

    # A value the service cannot take is refused with the reason, and the old one stays.
    rec_ok = os.path.join(sv.dir, "kept.mid")
    rc, out, _ = sv.ctl("set", "recording", rec_ok)
    check(rc == 0 and out == "ok recording = " + rec_ok, "set recording: %r" % out)
    rc, out, _ = sv.ctl("set", "recording", "/nonexistent/x.mid")
    check(rc == 1 and out == "error recording = /nonexistent/x.mid: cannot write in /nonexistent: "
          "No such file or directory", "recording in a missing folder refused: %r" % out)
    rc, out, _ = sv.ctl("get", "recording")
    check(out == "ok recording = " + rec_ok, "the refused recording left the old one: %r" % out)
    # Two controller keys on one controller: refused, naming both.
    rc, out, _ = sv.ctl("get", "cc_temperature")
    check(out == "ok cc_temperature = 21", "cc_temperature: %r" % out)
    rc, out, _ = sv.ctl("set", "cc_top_p", "21")
    check(rc == 1 and out == "error cc_top_p = 21: controller 21 is cc_temperature's already",
          "clashing controller refused: %r" % out)
    rc, out, _ = sv.ctl("get", "cc_top_p")
    check(out == "ok cc_top_p = 22", "the clash left cc_top_p alone: %r" % out)
    rc, out, _ = sv.ctl("set", "cc_top_p", "30")
    check(rc == 0 and out == "ok cc_top_p = 30", "a free controller is taken: %r" % out)
    sv.ctl("set", "cc_top_p", "22")
    # A controller sets its value through the same path (get shows it).
    sv.play([0xB0, 21, 127, 0xB0, 25, 0])
    time.sleep(0.2)
    check(sv.request("get temperature") == "ok temperature = 2", "cc_temperature 127 set 2.0")
    check(sv.request("get response_seconds") == "ok response_seconds = 1", "cc_length 0 set 1 s")
    sv.ctl("set", "temperature", "0.5")
    sv.ctl("set", "response_seconds", "8")
    # help: the commands, and what one does (the same table as `ctl --help`).
    rc, out, _ = sv.ctl("help")
    check(rc == 0 and out == "ok " + listing, "help lists the commands: %r" % out)
    rc, out, _ = sv.ctl("help", "set")
    check(rc == 0 and out == "ok set KEY VALUE: change a live setting (see continuo.conf)",
          "help set: %r" % out)
    r = subprocess.run([CONTINUO, "ctl", "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "  set KEY VALUE     change a live setting (see continuo.conf)\n" in r.stdout
          and "  help [COMMAND]    the commands, or what one does\n" in r.stdout, "ctl --help: %r" % r.stdout)

    # Play a phrase; the echo engine answers; then save the session.
    sv.play_motif([(60, 90, 0.08), (64, 90, 0.08), (67, 90, 0.08)], gap=0.02)
    time.sleep(0.8)
    rc, out, _ = sv.ctl("status")
    check("phrases=1" in out and "notes_in=3" in out and "notes_out=3" in out, "answered: %r" % out)
    rc, out, _ = sv.ctl("panic")
    check(rc == 0 and out.startswith("ok"), "panic: %r" % out)
    rec = os.path.join(sv.dir, "session.mid")
    rc, out, _ = sv.ctl("save", rec)
    check(rc == 0 and os.path.exists(rec), "save: %r" % out)
    tracks, div = read_smf(rec)
    player = [e for e in tracks.get("player", []) if e[1] & 0xF0 == 0x90 and e[3] > 0]
    model = [e for e in tracks.get("continuo", []) if e[1] & 0xF0 == 0x90 and e[3] > 0]
    check([e[2] for e in player] == [60, 64, 67], "player track holds the motif: %r" % player)
    check([e[2] for e in model] == [67, 71, 74], "model track holds the answer: %r" % model)
    check(model and player and model[0][0] > player[-1][0], "answer after the motif")
    # save: relative paths need the client's help; a folder that does not exist fails cleanly.
    out = sv.request("save relative.mid")
    check(out.startswith("error"), "relative save refused: %r" % out)
    rc, out, _ = sv.ctl("save", os.path.join(sv.dir, "no", "such", "dir.mid"))
    check(rc == 1 and out.startswith("error"), "save to a missing folder: %r" % out)
    check(not os.path.exists(os.path.join(sv.dir, "no")), "no partial output")
    # `ctl save` with a relative path is made absolute by the client.
    r = subprocess.run([CONTINUO, "ctl", "--socket", sv.sock, "save", "rel.mid"], cwd=sv.dir,
                       capture_output=True, text=True)
    check(r.returncode == 0 and os.path.exists(os.path.join(sv.dir, "rel.mid")), "ctl save relative")
    # A live setting's apply step: the scheduler takes the new limit at once,
    # so a chord is answered by one note.
    rc, out, _ = sv.ctl("set", "max_held_notes", "1")
    check(rc == 0 and out == "ok max_held_notes = 1", "set max_held_notes: %r" % out)
    sv.play([0x90, 60, 90, 0x90, 64, 90, 0x90, 67, 90])
    time.sleep(0.1)
    sv.play([0x80, 60, 0, 0x80, 64, 0, 0x80, 67, 0])
    time.sleep(0.8)
    rc, out, _ = sv.ctl("status")
    check("phrases=2" in out and "notes_in=6" in out and "notes_out=4" in out,
          "the chord's answer held to one note: %r" % out)
    sv.ctl("set", "max_held_notes", "16")

    # A client that stays connected while others misbehave.
    good = sv.connect()

    # Binary garbage: an error, then the connection is closed.
    bad = sv.connect()
    bad.sendall(b"\x00\xff\x01garbage\n")
    data = bad.recv(4096)
    check(data.startswith(b"error binary"), "garbage answered with an error: %r" % data)
    check(bad.recv(4096) == b"", "garbage client dropped")
    bad.close()

    # A huge line without a newline: an error, then closed.
    bad = sv.connect()
    try:
        bad.sendall(b"set model " + b"x" * 100000)
    except (BrokenPipeError, ConnectionResetError):
        pass
    data = b""
    try:
        while True:
            chunk = bad.recv(4096)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    check(data.startswith(b"error line too long"), "huge line refused: %r" % data[:80])
    bad.close()

    # A client that sends requests and never reads: dropped when its output is full.
    lazy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    lazy.connect(sv.sock)
    lazy.settimeout(5)
    dropped = False
    try:
        for i in range(20000):
            lazy.sendall(b"status\n" * 50)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        dropped = True
    check(dropped, "a client that never reads is dropped")
    lazy.close()

    # The well-behaved client is still served, and so are new ones.
    good.sendall(b"get top_p\n")
    check(good.recv(4096) == b"ok top_p = 0.95\n", "the other client is unaffected")
    good.close()
    rc, out, _ = sv.ctl("status")
    check(rc == 0 and out.startswith("ok"), "service still answers: %r" % out)

    # A second instance on the same socket is refused.
    r = subprocess.run([CONTINUO, "serve", "--set", "model=echo", "--set", "input=null",
                        "--set", "output=none"], env=sv.env, capture_output=True, text=True,
                       timeout=20)
    check(r.returncode == 1 and "another continuo is running" in r.stderr,
          "second instance refused: %r" % r.stderr)
    rc, out, _ = sv.ctl("status")
    check(rc == 0, "first instance kept its socket")

    rc, elapsed = sv.stop()
    check(rc == 0, "clean exit, status %r\n%s" % (rc, sv.read_log()))
    check(not os.path.exists(sv.sock), "socket removed at exit")
    check(os.path.exists(rec_ok), "the recording kept after the refused one was written at exit")

    # A stale socket (left by a killed instance) is replaced.
    sv2 = Service()
    try:
        sv2.proc.kill()
        sv2.proc.wait()
        check(os.path.exists(sv2.sock), "killed instance left its socket")
        sv3 = subprocess.Popen([CONTINUO, "serve", "--set", "model=echo", "--set", "input=null",
                                "--set", "output=none"], env=sv2.env,
                               stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        r = subprocess.run([CONTINUO, "ctl", "--socket", sv2.sock, "status"], capture_output=True,
                           text=True)
        check(r.returncode == 0, "new instance answers on the stale path: %r" % r.stderr)
        sv3.terminate()
        _, err = sv3.communicate(timeout=10)
        check("removing stale control socket" in err, "stale socket noticed: %r" % err)
    finally:
        sv2.cleanup()

    # No service: ctl says so, exit 1.
    rc, out, err = sv.ctl("status")
    check(rc == 1 and "cannot reach continuo" in err, "no service: %r" % err)
finally:
    sv.cleanup()
done()

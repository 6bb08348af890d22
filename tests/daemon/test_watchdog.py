"""test_watchdog.py: WATCHDOG=1 only while the generator moves, as its
service manager sees it, and all notes off when the service starts.

The test is the service manager: a datagram socket as $NOTIFY_SOCKET and
$WATCHDOG_USEC = 2 s (a ping each second), as systemd hands them to a unit
with WatchdogSec=2.  With the echo engine the pings go on while it answers
and after; with the stall engine (echo's first note, then it hangs in the
engine) they stop within the stall threshold (5 s) plus a ping period, the
log says why, and STATUS says stalled.  What systemd then does (SIGABRT,
Restart=on-failure) is left to it; the test kills the stalled service as
it would, with a note sounding, and starts the next one on the same
output: its first messages are all notes off on every channel, so nothing
is left sounding.  The user unit's guest test (systemd_user) shows the
real restart.
"""
import os
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from servetest import FifoReader, Service, check, done, parse_midi_bytes, unended_notes  # noqa: E402

STALL_S = 5.0           # generator.c: GEN_STALL_MIN_NS, for the echo and stall engines
PERIOD_S = 1.0          # half of WATCHDOG_USEC


class Manager:
    """The service manager's end of $NOTIFY_SOCKET: every datagram, stamped
    as it arrives."""

    def __init__(self, folder):
        self.path = os.path.join(folder, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.05)
        self.got = []
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            now = time.monotonic()
            for line in data.decode().splitlines():
                self.got.append((now, line))

    def pings(self, since=0.0):
        return [t for t, m in list(self.got) if m == "WATCHDOG=1" and t >= since]

    def said(self, prefix, since=0.0):
        return [m for t, m in list(self.got) if m.startswith(prefix) and t >= since]

    def env(self):
        return {"NOTIFY_SOCKET": self.path, "WATCHDOG_USEC": "2000000"}


MOTIF = [(60, 90, 0.3), (64, 90, 0.3), (67, 90, 1.5)]   # the last note long: it sounds at the stall

folder = tempfile.mkdtemp(prefix="continuo-watchdog-")
mgr = Manager(folder)
out = os.path.join(folder, "out")
reader = FifoReader(out)

# 1. The echo engine: pings go on while it answers and after.
sv = Service("phrase_silence_ms=200", output="fifo:" + out, env_extra=mgr.env())
t0 = time.monotonic()
sv.play_motif(MOTIF)
time.sleep(7.0)
pings = mgr.pings(t0)
gaps = [b - a for a, b in zip([t0] + pings, pings)]
check(len(pings) >= 6, "echo: pings go on through an answer and after: %d in 7 s" % len(pings))
check(max(gaps or [99]) < 2 * PERIOD_S, "echo: no gap of a whole watchdog period: max %.2f s" % max(gaps or [99]))
check("no progress" not in sv.read_log(), "echo: no stall reported:\n" + sv.read_log()[-500:])
sv.stop()
sv.cleanup()
print("echo engine: %d pings in 7 s, longest gap %.2f s" % (len(pings), max(gaps)))

# 2. The stall engine: the pings stop, the log and STATUS say why.
# (max_note_ms above the test's length: the service would end the note itself.)
sv = Service("model=stall", "phrase_silence_ms=200", "max_note_ms=30000", output="fifo:" + out, env_extra=mgr.env())
sv.play_motif(MOTIF[:2])
sv.play([0x90, 72, 100])            # held: the answer's first note will be on too
time.sleep(0.5)
sv.play([0x80, 72, 0])
t_end = time.monotonic()            # the phrase ends 0.2 s after this; then the engine hangs
time.sleep(STALL_S + 4 * PERIOD_S)
pings = mgr.pings(t_end)
last = pings[-1] - t_end if pings else 0.0
status = mgr.said("STATUS=", t_end)
log = sv.read_log()
check(0.0 < last <= STALL_S + PERIOD_S + 0.5,
      "stall: the last ping %.2f s after the phrase, within the threshold (%.0f s) and a period" % (last, STALL_S))
check(pings and time.monotonic() - pings[-1] >= 2 * PERIOD_S,
      "stall: no ping since (%.1f s)" % (time.monotonic() - (pings[-1] if pings else t_end)))
check("the generator has made no progress" in log and "systemd restarts the service" in log,
      "stall: the log says so:\n" + log[-800:])
check("STATUS=the generator is stalled" in status, "stall: STATUS says so: %r" % status)
sv.proc.kill()                      # as systemd would, after WatchdogSec
sv.proc.wait()
sv.cleanup()
time.sleep(0.1)
before = parse_midi_bytes(reader.data())
sounding = unended_notes(before)
check(sounding != [], "stall: a note of the answer was sounding when it was killed: %r" % sounding)
print("stall: last ping %.2f s after the phrase; killed with %r sounding" % (last, sounding))

# 3. The next service on the same output: all notes off first.
n_before = len(reader.chunks)
sv = Service("phrase_silence_ms=200", output="fifo:" + out, env_extra=mgr.env())
time.sleep(0.3)
sv.stop()
sv.cleanup()
reader.close()
after = parse_midi_bytes(b"".join(d for _, d in reader.chunks[n_before:]))
first16 = after[:16]
check(sorted(st & 0x0F for st, d1, d2 in first16 if st & 0xF0 == 0xB0 and d1 == 123) == list(range(16)),
      "restart: the first messages are all notes off on the 16 channels: %r" % first16)
check(unended_notes(before + after) == [], "restart: nothing left sounding: %r" % unended_notes(before + after))
done()

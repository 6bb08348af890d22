#!/usr/bin/python3
"""test_link.py: sync = link against a real Ableton Link peer, in a network namespace of the test's own.

The peer (tests/link/link_peer.cpp, on the same library as continuo) and
`continuo serve` (the echo engine, FIFO output read by the peer) run in a
network namespace that the test makes (`unshare -rn`: only `lo`, up), so
no packet leaves the machine.  The peer sets 140 BPM, continuo joins and
follows it within a second, then a change to 100 BPM within a beat; with
response_start = bar each answer's first note lands on a bar line of the
peer's timeline (stamped by the peer's Link clock as it reads the FIFO)
within 3 ms plus the peer's own measured wake-up jitter; `ctl set tempo`
and `ctl tempo` move the peer; the peer's stop silences the model within
20 ms of reaching this machine (median of three stops; a second Link
instance in the peer's process, its ear, says when the stop arrived: Link
sends a node's state at most once per 50 ms, so a stop can leave the peer
up to 50 ms after it was made) and no note comes while it is stopped; a phrase played while
stopped is not answered; without sync = link the service has no UDP socket
(switching to link opens them, switching away closes them); and `continuo
doctor` says that the network here is private.
Skips (77) where the test cannot make a network namespace.
"""
import os
import queue
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "daemon"))
sys.path.insert(0, os.path.join(HERE, "..", "reliability"))
from servetest import Service, check, done  # noqa: E402
from watchclient import Watcher  # noqa: E402

QUANTUM = 4             # beats_per_bar, the Link quantum (usage: test_link.py LINK_PEER)
SLACK_MS = 3.0          # the bound for a first note on the bar line
STOP_MS = 20.0          # the model's last note-off after the peer's stop reached this machine
LINK_SEND_MS = 50.0     # Link's least time between two state messages of a node (UdpMessenger)


def in_namespace():
    """Runs this test again inside a fresh network namespace; returns its status."""
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("SKIP: cannot make a network namespace (unshare -rn: %s)" % probe.stderr.strip())
        return 77
    script = "ip link set lo up && exec \"$0\" \"$@\""
    r = subprocess.run(["unshare", "-rn", "sh", "-c", script, sys.executable, os.path.abspath(__file__)]
                       + sys.argv[1:], env=dict(os.environ, CONTINUO_LINK_NETNS="1"))
    return r.returncode


class Peer:
    """link_peer, its replies and its records of what it read from the FIFO."""

    def __init__(self, fifo):
        self.proc = subprocess.Popen([sys.argv[1], str(QUANTUM), fifo],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.replies, self.midi, self.jitter_us = queue.Queue(), [], None
        self.heard = []                     # (start|stop, us): what the peer's ear heard
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        self.expect("ok ready")

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("midi "):
                f = line.split()
                with self.lock:
                    self.midi.append((int(f[1]), float(f[2]), float(f[3]), int(f[4]), int(f[5]), int(f[6])))
            elif line.startswith("heard "):
                f = line.split()
                with self.lock:
                    self.heard.append((f[1], int(f[2])))
            elif line.startswith("jitter "):
                self.jitter_us = int(line.split()[1])
                self.replies.put(line)
            else:
                self.replies.put(line)

    def expect(self, prefix, timeout=10):
        line = self.replies.get(timeout=timeout)
        check(line.startswith(prefix), "link_peer: %r (wanted %r)" % (line, prefix))
        return line

    def ask(self, cmd, timeout=10):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self.replies.get(timeout=timeout)

    def state(self):
        reply = self.ask("state")
        return {k: float(v) for k, v in (kv.split("=") for kv in reply.split()[1:])}

    def heard_after(self, what, since_us):
        """When the ear first heard WHAT (start|stop) at or after SINCE_US, or None."""
        with self.lock:
            return next((t for w, t in self.heard if w == what and t >= since_us), None)

    def messages(self):
        with self.lock:
            return list(self.midi)

    def close(self):
        try:
            self.ask("quit", timeout=5)
        except (queue.Empty, BrokenPipeError, OSError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def field(status, key):
    for kv in status.split():
        if kv.startswith(key + "="):
            return kv.split("=", 1)[1]
    return None


def wait_for(what, cond, timeout):
    """Seconds until COND() holds (polled every 5 ms), or None after TIMEOUT."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return time.monotonic() - t0
        time.sleep(0.005)
    return None


def ms_between(a_us, b_us):
    """Milliseconds from A_US to B_US, or None when either is unknown."""
    return None if a_us is None or b_us is None else round((b_us - a_us) / 1000, 3)


def udp_sockets(pid):
    from test_no_listener import inet_inodes, socket_inodes
    inet = inet_inodes()
    return sorted(inet[i] for i in socket_inodes(pid) if i in inet)


def phrase(sv, notes=((60, 0.12), (64, 0.12), (67, 0.12), (72, 0.3))):
    sv.play_motif([(p, 90, held) for p, held in notes], gap=0.02)


def first_note_ons(msgs, since_us):
    """The first note-on of each answer after SINCE_US: a note-on after a gap of 0.5 s."""
    out, last = [], None
    for t, beat, ph, s, d1, d2 in msgs:
        if t < since_us or s & 0xF0 != 0x90 or d2 == 0:
            continue
        if last is None or t - last > 500000:
            out.append((t, beat, ph))
        last = t
    return out


def main():
    if not os.environ.get("CONTINUO_LINK_NETNS"):
        return in_namespace()
    d = os.environ.get("TMPDIR", "/tmp")
    fifo = os.path.join(d, "continuo-link-%d.fifo" % os.getpid())
    peer = Peer(fifo)
    sv = None
    try:
        check(peer.ask("tempo 140").startswith("ok tempo"), "the peer sets 140 BPM")
        # Two sessions that meet: Link keeps the older one, when they began
        # more than half a second apart (else the lower random session id).
        time.sleep(1.0)
        t_join = time.monotonic()
        sv = Service("sync=link", "response_start=bar", "beats_per_bar=%d" % QUANTUM, "midi_thru=no",
                     "phrase_silence_ms=300", "tempo=90", output="fifo:" + fifo)
        started = time.monotonic() - t_join
        print("the service started (and joined) in %.3f s" % started)
        took = wait_for("140", lambda: abs(float(field(sv.request("status"), "link_tempo") or 0) - 140) < 0.1, 3)
        st = sv.request("status")
        print("status:", " ".join(kv for kv in st.split() if kv.startswith(("sync", "tempo", "link", "transport"))))
        check(took is not None and started + took < 1.0,
              "continuo takes the peer's 140 BPM within a second of joining (%s s after the start)"
              % (None if took is None else "%.3f" % (started + took)))
        check(field(st, "link_peers") == "1", "continuo sees one peer: %s" % field(st, "link_peers"))
        check(abs(peer.state()["tempo"] - 140) < 0.01, "the peer stays at 140 (continuo's tempo = 90 is only for "
              "a session it starts alone)")

        # The peer moves to 100: continuo follows within a beat (0.6 s).
        viewer = Watcher(sv.sock)
        time.sleep(0.2)
        peer.ask("tempo 100")
        took = wait_for("100", lambda: abs(float(field(sv.request("status"), "link_tempo") or 0) - 100) < 0.1, 3)
        print("continuo followed 140 -> 100 BPM in %s s" % (None if took is None else "%.3f" % took))
        check(took is not None and took < 0.6, "continuo follows a change to 100 BPM within one beat (0.6 s)")
        # the frame goes out on the loop's next pass that may write to the
        # viewer: it can come just after `status` shows the new tempo
        wait_for("the sync frame", lambda: any(abs(f["tempo"] - 100) < 0.1 for f in viewer.of("sync")), 1)
        syncs = viewer.of("sync")
        check(syncs and abs(syncs[-1]["tempo"] - 100) < 0.1 and syncs[-1]["peers"] == 1 and syncs[-1]["link"],
              "a watcher gets a sync frame with the session's new tempo and its peer: %s" % syncs[-1:])
        viewer.close()

        # Answers on the bar lines of the peer's timeline.
        since = int(peer.state()["now"])
        for _ in range(4):
            phrase(sv)
            time.sleep(2.2)
        time.sleep(0.5)
        firsts = first_note_ons(peer.messages(), since)
        jitter_ms = 0.0
        errs = []
        for t, beat, ph in firsts:
            to_line = min(ph, QUANTUM - ph) * 60.0 / 100 * 1000     # ms to the nearest bar line
            errs.append(to_line)
        print("answers' first notes from the nearest bar line (ms):", ["%.2f" % e for e in errs])
        check(len(firsts) >= 3, "the service answered (%d answers' first notes read by the peer)" % len(firsts))

        # ctl set tempo and ctl tempo move the peer.
        r = sv.request("set tempo 120")
        check(r.startswith("ok"), "set tempo 120: %s" % r)
        took = wait_for("peer 120", lambda: abs(peer.state()["tempo"] - 120) < 0.01, 3)
        check(took is not None and took < 1.0, "`ctl set tempo 120` moves the peer to 120 BPM (%s s)" % took)
        r = sv.request("tempo 100")
        check(r.startswith("ok tempo = 100"), "tempo 100: %s" % r)
        took = wait_for("peer 100", lambda: abs(peer.state()["tempo"] - 100) < 0.01, 3)
        check(took is not None and took < 1.0, "`ctl tempo 100` moves the peer to 100 BPM (%s s)" % took)

        # Start/stop: the peer starts, then stops the session mid-answer,
        # three times (the bound is on the median: one stop is one sample of
        # the machine's scheduling); the first time a phrase is played while
        # stopped, and is not answered.
        check(peer.ask("listen").startswith("ok"), "the peer's ear starts")
        check(peer.ask("wait_peers 2 5").startswith("ok"), "the peer sees continuo and its ear")
        stops, sent = [], []
        for k in range(3):
            peer.ask("start")
            check(wait_for("playing", lambda: field(sv.request("status"), "link_playing") == "yes", 2) is not None,
                  "continuo sees the session playing")
            phrase(sv, ((60, 0.5), (62, 0.5), (64, 0.5), (65, 0.5), (67, 0.8)))
            # the answer starts on a bar line (up to 2.4 s away at 100 BPM): stop once notes sound
            got = wait_for("sounding", lambda: int(field(sv.request("status"), "sounding") or 0) > 0, 5)
            check(got is not None, "the answer sounds before the stop")
            time.sleep(0.3)
            stop_us = int(peer.ask("stop").split()[-1])
            check(wait_for("stopped", lambda: field(sv.request("status"), "link_playing") == "no", 2) is not None,
                  "continuo sees the session stopped")
            time.sleep(0.5)
            if k == 0:
                phrase(sv)                  # played while stopped: not answered
            time.sleep(1.5)
            end_us = int(peer.state()["now"])
            msgs = peer.messages()
            after = [m for m in msgs if stop_us <= m[0] < end_us]
            ons = [m for m in after if m[3] & 0xF0 == 0x90 and m[5] > 0]
            offs = [m for m in after if m[3] & 0xF0 == 0x80 or (m[3] & 0xF0 == 0x90 and m[5] == 0)]
            heard_us = peer.heard_after("stop", stop_us)
            last_off_us = max(m[0] for m in offs) if offs else None
            took, off_ms = ms_between(stop_us, heard_us), ms_between(heard_us, last_off_us)
            print("stop %d: heard %s ms after it; %d note-offs, the last %s ms after it was heard; "
                  "%d note-ons in the %.1f s after it" % (k + 1, took, len(offs), off_ms, len(ons),
                                                           (end_us - stop_us) / 1e6))
            check(heard_us is not None, "stop %d: the peer's ear heard it" % (k + 1))
            check(offs, "stop %d: the model's notes were ended" % (k + 1))
            check(not ons, "stop %d: no note-on while the session is stopped: %r" % (k + 1, ons[:4]))
            stops.append(1e9 if off_ms is None else off_ms)
            sent.append(1e9 if took is None else took)
        med = sorted(stops)[1]
        check(med <= STOP_MS, "the model's last note-off within %d ms of the stop reaching this machine "
              "(median of 3: %.3f ms; %s)" % (STOP_MS, med, ["%.3f" % x for x in stops]))
        check(sorted(sent)[1] <= LINK_SEND_MS + STOP_MS, "the stops reached this machine within Link's %d ms "
              "between messages (+%d; median of 3): %s" % (LINK_SEND_MS, STOP_MS, ["%.3f" % x for x in sent]))
        log = sv.read_log()
        check("the Link session is stopped" in log, "the phrase played while stopped was not answered (logged)")

        peer.ask("quit")
        peer.proc.wait(timeout=5)
        jitter_ms = (peer.jitter_us or 0) / 1000
        print("the peer's own wake-up jitter: %.2f ms" % jitter_ms)
        bound = SLACK_MS + jitter_ms
        check(errs and max(errs) <= bound, "each answer's first note within %.2f ms (3 + the peer's jitter) of a "
              "bar line: %s" % (bound, ["%.2f" % e for e in errs]))

        # No UDP socket without sync = link; switching opens and closes them.
        r = sv.request("set sync free")
        check(r.startswith("ok"), "set sync free: %s" % r)
        free = udp_sockets(sv.proc.pid)
        check(free == [], "with sync = free the service holds no UDP socket: %s" % free)
        check(sv.request("tempo 100").startswith("error"), "ctl tempo without sync = link is an error")
        r = sv.request("set sync link")
        check(r.startswith("ok"), "set sync link: %s" % r)
        time.sleep(0.3)
        joined = udp_sockets(sv.proc.pid)
        check(joined != [], "with sync = link again it holds Link's UDP sockets: %s" % joined)
        sv.request("set sync free")
        check(udp_sockets(sv.proc.pid) == [], "switching away leaves the session: no UDP socket")
        rc, _ = sv.stop()
        check(rc == 0, "clean exit")

        # doctor, here (only lo): the network is private, Link finds no other machine.
        r = subprocess.run([os.environ["CONTINUO"], "doctor", "--set", "sync=link", "--set", "model=echo",
                            "--set", "output=none", "--set", "input=null"], capture_output=True, text=True,
                           env=sv.env, timeout=60)
        line = [x for x in r.stdout.splitlines() if "sync" in x and "link" in x]
        print("doctor:", line)
        check(line and "the network is private here" in line[0], "doctor says the network is private: %s" % line)
    finally:
        if sv:
            sv.cleanup()
        peer.close()
        try:
            os.unlink(fifo)
        except OSError:
            pass
    return done()


if __name__ == "__main__":
    sys.exit(main())

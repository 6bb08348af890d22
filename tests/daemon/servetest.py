"""servetest.py: start `continuo serve` in a private runtime dir and talk to it (shared by the daemon tests)."""

import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

CONTINUO = os.environ.get("CONTINUO", "continuo")
if os.sep in CONTINUO:
    CONTINUO = os.path.abspath(CONTINUO)
SRC = os.environ.get("CONTINUO_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))

# A reader thread stamps what the service wrote when it gets the interpreter
# lock; by default the thread that holds it keeps it up to 5 ms, which would
# show as that much lateness (or a note that seems to follow a Stop sent
# after it). Half a millisecond keeps the stamps close to the writes.
sys.setswitchinterval(0.0005)

# A message the service wrote as a transport message reached it is stamped
# after it by up to a thread switch, or more on a loaded machine: a note-on
# stamped this soon after Stop may have left before Stop was read (it must
# still be ended within the stop limit).
STOP_RACE_S = 0.005

failures = 0
failed = []         # what each failed check said, listed again by done()


def tiny_model():
    """The path of a small random-weight model made with the engine's own
    tools (once per build dir); exits 77 (skip) when it cannot be made."""
    work = os.path.join(os.environ.get("CONTINUO_BUILD", "/tmp"), "tests", "daemon")
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "e2e-tiny.gguf")
    if not os.path.exists(model):
        r = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "train", "export.py"), "--random",
                            model, "--layers", "2", "--d-model", "64", "--heads", "4",
                            "--d-ff", "128", "--max-rel", "256", "--context", "512", "--seed", "1"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("skipped: cannot make a test model:", r.stderr[-500:])
            sys.exit(77)
    return model


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        failed.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def done():
    if failures:
        # Listed again last, where a log cut to its tail still shows them.
        sys.stdout.flush()
        print("%d check(s) failed:" % failures, file=sys.stderr)
        for what in failed:
            print("  FAIL:", what.splitlines()[0] if what else what, file=sys.stderr)
        sys.exit(1)
    sys.exit(0)


def sanitized():
    """True when the binary runs under ASan or UBSan (slower: timing limits are
    relaxed). clang links their runtimes statically, so ldd alone misses them."""
    try:
        out = subprocess.run(["ldd", CONTINUO], capture_output=True, text=True).stdout
        if "libasan" in out or "libubsan" in out:
            return True
        with open(CONTINUO, "rb") as fh:
            data = fh.read()
        return b"__asan_init" in data or b"__ubsan_handle" in data
    except OSError:
        return False


class Service:
    """One `continuo serve` with a FIFO input, in its own temporary folder."""

    def __init__(self, *sets, config_text=None, output="none", env_extra=None, verbose=False):
        self.dir = tempfile.mkdtemp(prefix="continuo-test-")
        self.runtime = os.path.join(self.dir, "run")
        os.mkdir(self.runtime, 0o700)
        self.sock = os.path.join(self.runtime, "continuo", "ctl")
        self.fifo_in = os.path.join(self.dir, "in")
        os.mkfifo(self.fifo_in, 0o600)
        # the journal (journal_dir's default) goes into the test's folder, never a home
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.runtime,
                        XDG_CONFIG_HOME=os.path.join(self.dir, "config"),
                        XDG_CONFIG_DIRS=os.path.join(self.dir, "xdg"),
                        XDG_STATE_HOME=os.path.join(self.dir, "state"))
        self.env.pop("STATE_DIRECTORY", None)
        if env_extra:
            self.env.update(env_extra)
        # phrase_end = silence: the tests time their phrases by phrase_silence_ms
        # (a test of the judged end sets phrase_end=auto)
        args = [CONTINUO, "serve", "--set", "model=echo", "--set", "phrase_end=silence",
                "--set", "input=fifo:" + self.fifo_in, "--set", "output=" + output]
        if config_text is not None:
            path = os.path.join(self.dir, "test.conf")
            with open(path, "w") as f:
                f.write(config_text)
            args += ["--config", path]
        for s in sets:
            args += ["--set", s]
        if verbose:
            args.append("-v")
        self.log_path = os.path.join(self.dir, "serve.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        self.t_start = time.monotonic()
        self.writer = None
        deadline = time.monotonic() + 20
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.fail_start("continuo serve did not start")
            time.sleep(0.01)
        # The socket appears before the model and ports are ready: wait for an answer.
        while True:
            try:
                if self.request("status").startswith("ok"):
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.fail_start("continuo serve does not answer")
            time.sleep(0.02)

    def fail_start(self, what):
        log = self.read_log()
        self.log.close()
        self.cleanup()
        raise RuntimeError(what + ":\n" + log)

    def read_log(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(self.sock)
        return s

    def request(self, line):
        s = self.connect()
        s.sendall(line.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        return data.decode(errors="replace").strip()

    def ctl(self, *args):
        r = subprocess.run([CONTINUO, "ctl", "--socket", self.sock] + list(args),
                           capture_output=True, text=True, env=self.env)
        return r.returncode, r.stdout.strip(), r.stderr.strip()

    def play(self, data):
        """Writes raw MIDI bytes to the input FIFO now."""
        if self.writer is None:
            self.writer = os.open(self.fifo_in, os.O_WRONLY)
        os.write(self.writer, bytes(data))

    def play_motif(self, notes, gap=0.0):
        """NOTES: (pitch, velocity, seconds held) played one after the other in real time."""
        for pitch, vel, held in notes:
            self.play([0x90, pitch, vel])
            time.sleep(held)
            self.play([0x80, pitch, 0])
            if gap:
                time.sleep(gap)

    def stop(self, sig=15, timeout=10):
        """Sends SIG; returns (exit status, seconds from the signal to the exit)."""
        # Popen.wait(timeout) polls with sleeps of up to 50 ms: wait blocking,
        # with a timer to kill a service that hangs.
        killer = threading.Timer(timeout, self.proc.kill)
        killer.start()
        t = time.monotonic()
        self.proc.send_signal(sig)
        rc = self.proc.wait()
        elapsed = time.monotonic() - t
        killer.cancel()
        if self.writer is not None:
            os.close(self.writer)
            self.writer = None
        self.log.close()
        log = self.read_log()
        check("runtime error:" not in log and "Sanitizer" not in log,
              "sanitizer report from the service:\n" + log[-3000:])
        return rc, elapsed

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def teardown(sv, reader, folder):
    """Stops the service SV and its output READER, removes FOLDER."""
    sv.cleanup()
    if not reader.stopping:
        reader.close()
    shutil.rmtree(folder, ignore_errors=True)


class FifoReader:
    """Reads a FIFO the service writes raw MIDI to, timestamping each chunk."""

    def __init__(self, path):
        if not os.path.exists(path):
            os.mkfifo(path, 0o600)
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.chunks = []
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        import select
        while not self.stopping:
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except BlockingIOError:
                    continue
                if data:
                    self.chunks.append((time.monotonic(), data))

    def close(self):
        time.sleep(0.1)
        self.stopping = True
        self.thread.join()
        os.close(self.fd)

    def data(self):
        return b"".join(c for _, c in self.chunks)


def parse_midi_bytes(data):
    """Raw MIDI bytes (with running status) -> list of (status, d1, d2)."""
    out, running, i = [], 0, 0
    lengths = {0x80: 2, 0x90: 2, 0xA0: 2, 0xB0: 2, 0xC0: 1, 0xD0: 1, 0xE0: 2}
    while i < len(data):
        b = data[i]
        if b >= 0xF8:
            i += 1
            continue
        if b & 0x80:
            running = b
            i += 1
        if running < 0x80 or running >= 0xF0:
            i += 1
            continue
        n = lengths[running & 0xF0]
        args = list(data[i:i + n]) + [0, 0]
        out.append((running, args[0], args[1] if n == 2 else 0))
        i += n
    return out


def unended_notes(messages):
    """Notes switched on and never off, from (status, d1, d2) messages;
    CC 123 (all notes off) ends a channel's notes."""
    on = {}
    for st, d1, d2 in messages:
        kind, ch = st & 0xF0, st & 0x0F
        if kind == 0x90 and d2 > 0:
            on[(ch, d1)] = on.get((ch, d1), 0) + 1
        elif kind == 0x80 or (kind == 0x90 and d2 == 0):
            if on.get((ch, d1), 0) > 0:
                on[(ch, d1)] = 0
        elif kind == 0xB0 and d1 == 123:
            for k in list(on):
                if k[0] == ch:
                    on[k] = 0
    return [k for k, v in on.items() if v > 0]


def read_smf(path):
    """A minimal Standard MIDI File reader: {track name: [(tick, status, d1, d2)]}, division."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"MThd":
        raise ValueError("not a MIDI file")
    hlen, fmt, ntrk, div = struct.unpack(">IHHH", data[4:14])
    pos = 8 + hlen
    tracks = {}
    for t in range(ntrk):
        if data[pos:pos + 4] != b"MTrk":
            raise ValueError("track %d: no MTrk" % t)
        tlen = struct.unpack(">I", data[pos + 4:pos + 8])[0]
        end = pos + 8 + tlen
        if end > len(data):
            raise ValueError("track %d: truncated" % t)
        p, tick, running, name, events = pos + 8, 0, 0, "track%d" % t, []
        while p < end:
            delta = 0
            while True:
                b = data[p]
                p += 1
                delta = (delta << 7) | (b & 0x7F)
                if not b & 0x80:
                    break
            tick += delta
            st = data[p]
            if st == 0xFF:
                mtype, ln = data[p + 1], data[p + 2]
                if mtype == 0x03:
                    name = data[p + 3:p + 3 + ln].decode(errors="replace")
                p += 3 + ln   # lengths here are short (< 128)
                continue
            if st in (0xF0, 0xF7):
                ln = data[p + 1]
                p += 2 + ln
                continue
            if st & 0x80:
                running = st
                p += 1
            n = 1 if (running & 0xF0) in (0xC0, 0xD0) else 2
            args = list(data[p:p + n]) + [0]
            events.append((tick, running, args[0], args[1] if n == 2 else 0))
            p += n
        tracks[name] = events
        pos = end
    return tracks, div


PPQN = 24           # MIDI clocks per beat
BAR = 4 * PPQN      # clocks in a 4/4 bar


class Ctl:
    """A control command a Daw sends at a tick (`set response_start bar`);
    the reply is kept in Daw.replies[NAME] when NAME is given."""

    def __init__(self, command, name=None):
        self.command = command
        self.name = name


def is_transport(item):
    """Start, Continue, Stop and Song Position Pointer go before their tick's clock."""
    return isinstance(item, bytes) and item[:1] in (b"\xfa", b"\xfb", b"\xfc", b"\xf2")


class Daw:
    """Sends a timeline of clock ticks and messages; tick k goes out at its
    time by the tempo in force.  at[k]: list of byte strings, Ctl commands
    or callables sent or run right after tick k's clock (transport before
    it); a tuple (HEAD, TAIL) of bytes is sent with tick k's clock byte
    between them, in the middle of a message.  The same timeline goes over
    a FIFO (run) or, as a script, to seq_daw on the ALSA sequencer."""

    def __init__(self, sv=None):
        self.sv = sv
        self.at = {}
        self.tempo = {0: 120.0}            # from tick k on, this many BPM
        self.sent = []                     # (k, time sent, song position or None)
        self.replies = {}                  # Ctl name -> reply
        self.n_ticks = 0
        self.error = None

    def add(self, k, item):
        self.at.setdefault(k, []).append(item)

    def positions(self, n_ticks):
        """The song position (clocks) of each tick, None while stopped: Start
        sets 0, Song Position Pointer (while stopped) 6 per sixteenth,
        Continue goes on from there, each clock while running is one step."""
        out, pos, running = [], None, False
        for k in range(n_ticks):
            for it in self.at.get(k, []):
                if not is_transport(it):
                    continue
                if it[:1] == b"\xfa":
                    pos, running = 0, True
                elif it[:1] == b"\xfb":
                    running = True
                elif it[:1] == b"\xfc":
                    running = False
                elif not running:
                    pos = (it[1] | (it[2] << 7)) * 6
            out.append(pos if running else None)
            if running:
                pos += 1
        return out

    def run(self, n_ticks):
        self.n_ticks = n_ticks
        pos_of = self.positions(n_ticks)
        t = time.monotonic() + 0.1
        bpm = 120.0
        for k in range(n_ticks):
            bpm = self.tempo.get(k, bpm)
            now = time.monotonic()
            if t > now:
                time.sleep(t - now)
            items = self.at.get(k, [])
            clock_inside = None
            pre = b""
            for it in items:
                if is_transport(it):
                    pre += it                  # transport goes before the clock
                elif isinstance(it, tuple):
                    clock_inside = it
            data = pre + (clock_inside[0] + b"\xf8" + clock_inside[1] if clock_inside else b"\xf8")
            self.sv.play(data)
            # The clock byte is on the wire once write() returns.
            self.sent.append((k, time.monotonic(), pos_of[k]))
            for it in items:
                if isinstance(it, Ctl):
                    reply = self.sv.request(it.command)
                    if it.name:
                        self.replies[it.name] = reply
                elif callable(it):
                    it()
                elif isinstance(it, bytes) and not is_transport(it):
                    self.sv.play(it)
            t += 60.0 / bpm / PPQN

    def script(self, n_ticks, continuo="continuo"):
        """The timeline as seq_daw's script (tests/daemon/seq_daw.c); a Ctl
        with a name prints its reply as a line "C NAME REPLY"."""
        lines = ["end %d" % n_ticks]
        lines += ["tempo %d %g" % (k, bpm) for k, bpm in sorted(self.tempo.items())]
        for k in sorted(self.at):
            for it in self.at[k]:
                if isinstance(it, tuple):
                    it = it[0] + it[1]
                if isinstance(it, bytes):
                    lines.append("%d %s" % (k, " ".join("%02x" % b for b in it)))
                elif isinstance(it, Ctl):
                    cmd = "%s ctl %s" % (continuo, it.command)
                    lines.append("%d ! %s" % (k, 'echo "C %s $(%s 2>&1)"' % (it.name, cmd) if it.name
                                              else cmd + " > /dev/null"))
                else:
                    raise ValueError("tick %d: %r cannot go into a script" % (k, it))
        return "\n".join(lines) + "\n"

    def phrase(self, k, notes):
        """NOTES: (tick offset, pitch, length in ticks); the first note-on
        carries the clock byte in its middle.  Returns the tick of the last note-off."""
        last = k
        for i, (off, p, ln) in enumerate(notes):
            if i == 0 and off == 0:
                self.add(k, (bytes([0x90, p]), bytes([100])))
            else:
                self.add(k + off, bytes([0x90, p, 100]))
            self.add(k + off + ln, bytes([0x80, p, 0]))
            last = max(last, k + off + ln)
        return last

"""watchclient.py: a `watch` subscriber on serve's control socket (docs/WATCH.md), for the tests and the bench."""

import json
import socket
import threading
import time


class Watcher:
    """Connects to SOCK, sends `watch`, and (READ) reads frames on a thread:
    self.reply is the reply line, self.frames the JSON frames as
    (arrival monotonic time, dict), self.other any other lines.  With READ
    false it never reads (a stuck viewer) until read_all()."""

    def __init__(self, sock_path, read=True):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(sock_path)
        self.s.sendall(b"watch\n")
        self.reply = None
        self.frames = []
        self.other = []
        self.closed = False
        self.buf = b""
        self.lock = threading.Lock()
        if read:
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()

    def _lines(self, data):
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            text = line.decode(errors="replace")
            with self.lock:
                if text.startswith("{"):
                    self.frames.append((time.monotonic(), json.loads(text)))
                elif self.reply is None:
                    self.reply = text
                else:
                    self.other.append(text)

    def _run(self):
        while True:
            try:
                data = self.s.recv(65536)
            except OSError:
                data = b""
            if not data:
                self.closed = True
                return
            self._lines(data)

    def read_all(self, quiet_s=0.5):
        """Reads what waits until nothing came for QUIET_S (a stuck viewer waking up)."""
        self.s.settimeout(quiet_s)
        while True:
            try:
                data = self.s.recv(65536)
            except socket.timeout:
                return
            if not data:
                self.closed = True
                return
            self._lines(data)

    def of(self, kind, **match):
        with self.lock:
            return [f for _, f in self.frames if f["type"] == kind and all(f.get(k) == v for k, v in match.items())]

    def send(self, line):
        self.s.sendall(line.encode() + b"\n")

    def close(self):
        self.s.close()

#!/usr/bin/python3
"""test_no_listener.py: a running `continuo serve` holds no network socket; its only listening socket is the control socket.

Reads the service's open file descriptors (/proc/PID/fd) and the kernel's socket tables (/proc/net/*): no TCP, UDP
or raw socket of any family may belong to it, and every listening Unix socket it holds must be bound to the control
socket path in its private runtime directory. Skips (77) without /proc/net."""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CONTINUO, SKIP, need_binary, stop  # noqa: E402

INET_TABLES = ["tcp", "tcp6", "udp", "udp6", "udplite", "udplite6", "raw", "raw6"]
SO_ACCEPTCON = 0x10000


def socket_inodes(pid):
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            out.add(int(link[8:-1]))
    return out


def inet_inodes():
    """inode -> 'tcp local-address' for every IP socket on the machine."""
    found = {}
    for t in INET_TABLES:
        try:
            with open(f"/proc/net/{t}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            col = row.split()
            if len(col) > 9:
                found[int(col[9])] = f"{t} {col[1]}"
    return found


def unix_listeners():
    """inode -> path for every listening Unix socket."""
    found = {}
    with open("/proc/net/unix") as f:
        for row in f.read().splitlines()[1:]:
            col = row.split()
            if len(col) >= 7 and int(col[3], 16) & SO_ACCEPTCON:
                found[int(col[6])] = col[7] if len(col) > 7 else ""
    return found


def main():
    need_binary()
    if not os.path.exists("/proc/net/unix") or not os.path.exists("/proc/net/tcp"):
        print("SKIP: no /proc/net")
        return SKIP
    failures = []
    with tempfile.TemporaryDirectory(prefix="continuo-listen-") as tmp:
        runtime = os.path.join(tmp, "run")
        os.mkdir(runtime, 0o700)
        sock = os.path.join(runtime, "continuo", "ctl")
        env = dict(os.environ, XDG_RUNTIME_DIR=runtime, XDG_CONFIG_HOME=os.path.join(tmp, "none"),
                   XDG_CONFIG_DIRS=os.path.join(tmp, "none"))
        log = open(os.path.join(tmp, "serve.log"), "w+")
        proc = subprocess.Popen([CONTINUO, "serve", "--set", "model=echo", "--set", "input=null",
                                 "--set", "output=none"], env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 20
            while not os.path.exists(sock):
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    sys.exit(f"continuo serve did not start (exit {proc.poll()}):\n{log.read()}")
                time.sleep(0.01)
            time.sleep(0.3)   # the rest of start-up (ports, engine) after the socket
            mine = socket_inodes(proc.pid)
            inet = {i: d for i, d in inet_inodes().items() if i in mine}
            listen = {i: p for i, p in unix_listeners().items() if i in mine}
            print(f"serve (pid {proc.pid}): {len(mine)} sockets, IP sockets {sorted(inet.values())}, "
                  f"listening Unix sockets {sorted(listen.values())}")
            if inet:
                failures.append(f"the service holds IP sockets: {sorted(inet.values())}")
            if sorted(listen.values()) != [sock]:
                failures.append(f"listening sockets are {sorted(listen.values())}, want only {sock}")
        finally:
            rc = stop(proc, 10)
            log.close()
        if rc != 0:
            failures.append(f"exit status {rc} after SIGTERM")
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""guest.py: runs a shell script in the qemu guest (run-guest.sh) and reads back
the MIDI files the script printed between "BEGIN name" and "END name" lines."""

import os
import re
import subprocess
import sys
import tempfile
import time

import midifile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(binary: str, script: str, files: dict, memory_mb: int = 0, show: int = 0):
    """Boots the guest with BINARY and FILES ({guest path: bytes}), runs SCRIPT;
    prints its output (the last SHOW characters, 0: all) and returns
    (output, exit status). Exits 77 (skip) when the guest cannot run here."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [os.path.join(HERE, "run-guest.sh")]
        if memory_mb:
            cmd += ["-m", str(memory_mb)]
        cmd += ["-b", binary]
        for guest_path, data in files.items():
            local = os.path.join(tmp, os.path.basename(guest_path))
            with open(local, "wb") as fh:
                fh.write(data)
            cmd += ["-f", local + ":" + guest_path]
        with open(os.path.join(tmp, "guest.sh"), "w") as fh:
            fh.write(script)
        cmd.append(os.path.join(tmp, "guest.sh"))
        start = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        elapsed = time.monotonic() - start
    print(p.stdout[-show:] if show else p.stdout)
    print("qemu run took %.1f s, exit status %d" % (elapsed, p.returncode))
    if p.returncode == 77:
        sys.exit(77)
    return p.stdout, p.returncode


def recording(output: str, name: str) -> list:
    """The events of the MIDI file NAME the guest printed; ValueError when it
    is missing or unreadable."""
    m = re.search(r"^BEGIN %s\n(.*?)^END %s$" % (name, name), output, re.S | re.M)
    if not m:
        raise ValueError("%s missing" % name)
    data = bytes(int(x, 16) for x in m.group(1).split())
    try:
        return midifile.read(data)
    except (ValueError, IndexError) as e:
        raise ValueError("%s unreadable: %s" % (name, e))

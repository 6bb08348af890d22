#!/usr/bin/python3
"""test_echo_fifo.py: midi_echo reads a FIFO and writes transposed messages to a file."""
import os
import subprocess
import sys
import tempfile
import time

echo = sys.argv[1]


def run_echo(args, feed_chunks, timeout=10):
    """Starts midi_echo, waits for 'ready', writes each chunk into the input
    FIFO (closing and reopening the writer between chunks), returns
    (exit status, stderr, bytes written to the output file)."""
    with tempfile.TemporaryDirectory() as tmp:
        fifo = os.path.join(tmp, "in.fifo")
        out = os.path.join(tmp, "out.raw")
        os.mkfifo(fifo)
        proc = subprocess.Popen([echo] + args + ["fifo:" + fifo, "fifo:" + out],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = proc.stdout.readline()
        assert line == b"ready\n", "midi_echo did not get ready: %r" % line
        for chunk in feed_chunks:
            with open(fifo, "wb") as w:
                w.write(chunk)
            time.sleep(0.05)
        _, err = proc.communicate(timeout=timeout)
        with open(out, "rb") as f:
            data = f.read()
        return proc.returncode, err.decode(), data


failures = 0


def check(cond, what):
    global failures
    if not cond:
        print("FAIL:", what)
        failures += 1


# Running status, a clock inside a note, junk, SysEx; two writers one after
# the other (the FIFO is reopened between them). Notes go up an octave.
chunk1 = bytes([0x05, 0x90, 60, 100, 64, 0xF8, 90, 0xF0, 1, 2, 0xF7])
chunk2 = bytes([0x80, 60, 0, 64, 0, 0xB0, 64, 127, 0x91, 120, 100])
rc, err, data = run_echo(["-t", "12", "-n", "6"], [chunk1, chunk2])
want = bytes([0x90, 72, 100, 0xF8, 0x90, 76, 90, 0x80, 72, 0, 0x80, 76, 0, 0xB0, 64, 127])
check(rc == 0, "exit status %d, stderr %s" % (rc, err))
check(data == want, "output %s != %s" % (data.hex(" "), want.hex(" ")))
check("forwarded 6 message(s)" in err, "summary line: " + err)
check("junk bytes 1" in err, "junk counted: " + err)

# Time runs out before the count: exit status 3, what came is still forwarded.
rc, err, data = run_echo(["-t", "-1", "-n", "5", "-s", "0.5"], [bytes([0x90, 61, 1])])
check(rc == 3, "timeout exit status %d" % rc)
check(data == bytes([0x90, 60, 1]), "output before timeout: %s" % data.hex(" "))

# An input that cannot be opened: a clear error and exit status 1.
p = subprocess.run([echo, "fifo:/nope", "null"], capture_output=True, text=True, timeout=10)
check(p.returncode == 1, "exit status for a missing FIFO: %d" % p.returncode)
check("cannot open MIDI input 'fifo:/nope': No such file or directory" in p.stderr, p.stderr)

sys.exit(1 if failures else 0)

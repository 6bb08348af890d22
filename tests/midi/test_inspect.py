#!/usr/bin/python3
"""test_inspect.py: `continuo inspect` on good and bad files, and against python3-mido on a sample of $ASAP_DIR."""
import os
import re
import subprocess
import sys
import tempfile

try:
    import mido
except ImportError:
    print("python3-mido is not installed: skipped")
    sys.exit(77)

CONTINUO = os.environ["CONTINUO"]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def inspect(*args):
    r = subprocess.run([CONTINUO, "inspect", *args], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def write_good(path):
    """A two-track file written by mido: 37 notes, 4 pedal presses, 2 tempos."""
    mid = mido.MidiFile(type=1, ticks_per_beat=480)
    conductor = mido.MidiTrack()
    conductor.append(mido.MetaMessage("set_tempo", tempo=600000, time=0))
    conductor.append(mido.MetaMessage("set_tempo", tempo=300000, time=480 * 10))
    mid.tracks.append(conductor)
    piano = mido.MidiTrack()
    piano.append(mido.MetaMessage("track_name", name="Piano", time=0))
    for i in range(37):
        if i % 12 == 0:
            piano.append(mido.Message("control_change", control=64, value=100, time=0))
        piano.append(mido.Message("note_on", note=40 + i, velocity=20 + i, time=0))
        piano.append(mido.Message("note_on", note=40 + i, velocity=0, time=240))
        if i % 12 == 6:
            piano.append(mido.Message("control_change", control=64, value=0, time=0))
    mid.tracks.append(piano)
    mid.save(path)
    return mid


def main():
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good.mid")
        mid = write_good(good)
        rc, out, err = inspect(good)
        print(out, err)
        check(rc == 0, "good file: exit 0, got %d" % rc)
        check("notes: 37, pitch 40 (E2) to 76 (E5), velocity 20 to 56" in out, "note count and ranges")
        check('track 1 "Piano": 81 events' in out, "track name and event count (37 on, 37 off, 7 pedal)")
        check("format 1, 2 tracks, 480 ticks per quarter note" in out, "format line")
        # Pedal time by mido's own clock: down from each press to its release.
        now, down_at, down = 0.0, None, 0.0
        for m in mid:
            now += m.time
            if m.type == "control_change" and m.control == 64:
                if m.value >= 64 and down_at is None:
                    down_at = now
                elif m.value < 64 and down_at is not None:
                    down, down_at = down + now - down_at, None
        if down_at is not None:
            down += mid.length - down_at
        pct = re.search(r"sustain pedal: 4 presses, down ([\d.]+)% of the time", out)
        check(pct and abs(float(pct.group(1)) - 100 * down / mid.length) < 0.051,
              "pedal: 4 presses, %.1f%% down by mido" % (100 * down / mid.length))
        check("tempo changes: 2: 00:00.0 100.0 bpm, 00:06.0 200.0 bpm" in out, "tempo list")
        # 20 half-beats at 100 bpm (6 s), then 17 at 200 bpm (2.55 s)
        check("duration: 00:08.6 (8.550 s)" in out, "duration %.3f by mido" % mid.length)
        check("problems: none" in out, "no problems")

        bad = os.path.join(tmp, "bad.mid")
        with open(good, "rb") as fp:
            data = fp.read()
        with open(bad, "wb") as fp:
            fp.write(data[:40])         # cut inside the first track
        rc, out, err = inspect(bad, good)
        print(out, err)
        check(rc == 1, "bad file: exit 1, got %d" % rc)
        check(re.search(r"bad\.mid: byte 18: truncated chunk", err), "one-line error with offset")
        check(len([l for l in err.splitlines() if "bad.mid" in l]) == 1, "exactly one error line")
        check("notes: 37" in out, "the good file after the bad one is still inspected")

        # Missing end-of-track: read with a warning, listed as a problem.
        noeot = os.path.join(tmp, "noeot.mid")
        body = bytes([0, 0x90, 60, 100, 0x83, 0x60, 0x80, 60, 0])
        with open(noeot, "wb") as fp:
            fp.write(b"MThd" + bytes([0, 0, 0, 6, 0, 0, 0, 1, 1, 0xE0]) +
                     b"MTrk" + len(body).to_bytes(4, "big") + body)
        rc, out, err = inspect(noeot)
        print(out, err)
        check(rc == 0, "missing end-of-track: exit 0")
        check("notes: 1," in out and "problems: 1" in out and "no end-of-track" in out, "warning listed")
        check("warning: " + noeot in err, "warning logged")

        rc, out, err = inspect("--help")
        check(rc == 0 and "usage: continuo inspect" in out, "--help")
        rc, out, err = inspect()
        check(rc == 2, "no file: exit 2")

    # Against mido on a sample of real performances: note count and length.
    asap = os.environ.get("ASAP_DIR", "")
    files = []
    for root, _, names in os.walk(asap):
        files += [os.path.join(root, n) for n in names if n.lower().endswith((".mid", ".midi"))]
    # mido is slow (about a second per performance): a few of the shorter files, spread over the corpus.
    files = sorted(f for f in files if os.path.getsize(f) < 40000)
    sample = files[::max(1, len(files) // 4)][:4]
    for path in sample:
        m = mido.MidiFile(path)
        notes = sum(1 for t in m.tracks for x in t if x.type == "note_on" and x.velocity > 0)
        rc, out, err = inspect(path)
        got = re.search(r"notes: (\d+)", out)
        dur = re.search(r"duration: \S+ \(([\d.]+) s\)", out)
        check(rc == 0 and got and int(got.group(1)) == notes, "%s: notes %s, mido %d" % (path, got and got.group(1), notes))
        check(dur and abs(float(dur.group(1)) - m.length) < 0.0015,
              "%s: duration %s, mido %.4f" % (path, dur and dur.group(1), m.length))
        print("%s: %d notes, %.3f s: same as mido" % (os.path.basename(path), notes, m.length))
    if not sample:
        print("ASAP_DIR has no MIDI files: corpus comparison skipped")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

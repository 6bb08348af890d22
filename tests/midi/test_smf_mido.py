#!/usr/bin/python3
"""test_smf_mido.py: a file written by smf_write_file reads in python3-mido with the notes, times and names we wrote."""
import os
import subprocess
import sys
import tempfile

try:
    import mido
except ImportError:
    print("python3-mido is not installed: skipped")
    sys.exit(77)


def main():
    helper = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        mid_path = os.path.join(tmp, "known.mid")
        txt_path = os.path.join(tmp, "known.txt")
        subprocess.run([helper, mid_path, txt_path], check=True)
        wrote = [[], []]
        with open(txt_path) as fp:
            for line in fp:
                t, time, status, d1, d2 = line.split()
                wrote[int(t)].append((float(time), int(status), int(d1), int(d2)))
        names = ["right hand", "left hand"]     # as smf_write_helper.c names them

        mid = mido.MidiFile(mid_path)

        def check(cond, what):
            nonlocal failures
            if not cond:
                failures += 1
                print("FAIL:", what)

        check(mid.type == 1, "format 1, got %d" % mid.type)
        check(mid.ticks_per_beat == 500, "division 500, got %d" % mid.ticks_per_beat)
        check(len(mid.tracks) == 3, "3 tracks (tempo + 2), got %d" % len(mid.tracks))
        tempos = [m.tempo for m in mid.tracks[0] if m.type == "set_tempo"]
        check(tempos == [500000], "one tempo of 500000, got %r" % tempos)
        for t in range(2):
            track = mid.tracks[t + 1]
            check(track.name == names[t], "track name %r, got %r" % (names[t], track.name))
            ticks = 0
            got = []
            for m in track:
                ticks += m.time
                if m.is_meta:
                    continue
                b = m.bytes()
                got.append((mido.tick2second(ticks, 500, 500000), b[0], b[1], b[2] if len(b) > 2 else 0))
            check(len(got) == len(wrote[t]), "track %d: %d events, mido read %d" % (t, len(wrote[t]), len(got)))
            bad = 0
            for w, g in zip(wrote[t], got):
                # Times are written rounded to the millisecond (1 tick).
                if w[1:] != g[1:] or abs(w[0] - g[0]) > 0.0005 + 1e-9:
                    bad += 1
                    if bad <= 5:
                        print("track %d: wrote %r, mido read %r" % (t, w, g))
            check(bad == 0, "track %d: %d events differ" % (t, bad))
            notes = sum(1 for g in got if g[1] & 0xF0 == 0x90 and g[3] > 0)
            print("track %d (%s): %d events, %d notes match" % (t, names[t], len(got), notes))

        # mido's merged playback time line agrees with ours too.
        merged = sorted(((w[0], t) for t in range(2) for w in wrote[t]))
        now = 0.0
        times = []
        for m in mid:
            now += m.time
            if not m.is_meta:
                times.append(now)
        check(len(times) == len(merged), "merged: %d events" % len(times))
        worst = max(abs(a - b[0]) for a, b in zip(times, merged))
        check(worst <= 0.0005 + 1e-9, "merged times within 0.5 ms, worst %.6f" % worst)
        print("merged time line: %d events, worst difference %.6f s" % (len(times), worst))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

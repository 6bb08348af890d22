#!/usr/bin/python3
"""test_alsa_echo.py: midi_echo on real ALSA sequencer ports in a qemu guest.

1. Ports reached by the client's name alone, as users address them:
   `aconnect 'Midi Through' continuo` (a keyboard), aplaymidi plays a motif
   into Midi Through, midi_echo (ALSA in, ALSA out, +12 semitones) forwards
   it, `arecordmidi -p continuo` records: the recording holds the same
   messages, notes an octave up, in order and on time.
2. Reconnection: midi_echo is told to connect the source port "feeder" (its
   port 0, by name);
   a feeder client (a second midi_echo fed from a FIFO) appears, sends,
   exits, and appears again (with a new client number): both rounds of
   notes reach the recording.
   The recording is made from continuo:2, the output-only port.
3. PortMidi: midi_echo reads "portmidi:Midi Through" (aplaymidi plays into
   Midi Through) and writes continuo:out (alsa-lib reads "out" as port 0,
   the duplex port, which is what that spelling now reaches): the same
   recording as in 1.
4. Raw MIDI devices: midi_echo reads /dev/snd/midiC0D0 (VirMIDI 0-0, which
   aplaymidi plays into) and writes /dev/snd/midiC0D1 (VirMIDI 0-1, which
   arecordmidi records): the same recording as in 1.
5. A source that leaves holding a chord: the feeder sends three note-ons
   and exits; midi_echo (the ALSA backend) lets each note go at once: the
   three note-offs within 50 ms of the last note-on.
6. midi_echo -l lists the ALSA and PortMidi ports the guest has.
Exit 77 (skip) when qemu or the kernel cannot be had.
"""
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import guest  # noqa: E402
import midifile  # noqa: E402

echo = os.path.abspath(sys.argv[1])

# The motif: 8 notes 0.12 s apart, a sustain pedal, a pitch bend, a program change.
motif = [(0.05, [0xC0, 5]), (0.1, [0xB0, 64, 127]), (0.15, [0xE0, 0x00, 0x50])]
for i, key in enumerate([60, 62, 64, 65, 67, 69, 71, 72]):
    motif.append((0.2 + 0.12 * i, [0x90, key, 60 + 4 * i]))
    motif.append((0.2 + 0.12 * i + 0.1, [0x80, key, 0]))
motif.append((1.3, [0xB0, 64, 0]))
motif.sort(key=lambda e: e[0])
n_motif = len(motif)

# For the reconnection phase: raw bytes, running status included.
feed = bytes([0x91, 50, 100, 52, 100, 0x81, 50, 0, 52, 0])
n_feed = 4

guest_script = r"""
waitfor() {  # FILE TEXT: wait up to 20 s for TEXT to appear in FILE
    i=0
    until grep -q "$2" "$1" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 200 ] && { echo "timeout waiting for $2 in $1"; return 1; }
        sleep 0.1
    done
}
feeder_connected() {  # wait up to 10 s for the feeder client's port to be connected
    i=0
    until aconnect -l | grep -A3 "'feeder'" | grep -q "Connecting To"; do
        i=$((i + 1)); [ $i -gt 100 ] && { echo "feeder never connected"; return 1; }
        sleep 0.1
    done
}
rc=0
echo "== phase 1: aplaymidi -> Midi Through -> continuo -> midi_echo -> continuo -> arecordmidi"
midi_echo -t 12 -n %(n_motif)d -s 60 alsa alsa > e1.out 2> e1.err &
ECHO=$!
waitfor e1.out ready || rc=1
aconnect 'Midi Through' continuo || rc=1
aconnect -l
arecordmidi -p continuo rec1.mid &
REC=$!
sleep 0.5
aplaymidi -p 14:0 /motif.mid || rc=1
wait $ECHO || rc=1
sleep 0.3
kill -INT $REC; wait $REC
cat e1.err

echo "== phase 2: a source port that goes away and comes back"
mkfifo feed.fifo
midi_echo -t 12 -n %(n_feed2)d -s 60 alsa:feeder alsa > e2.out 2> e2.err &
ECHO=$!
waitfor e2.out ready || rc=1
arecordmidi -p continuo:2 rec2.mid &
REC=$!
for round in 1 2; do
    midi_echo -c feeder -n %(n_feed)d -s 30 fifo:/tmp/feed.fifo alsa > f.out 2> f.err &
    FEED=$!
    waitfor f.out ready || rc=1
    feeder_connected || rc=1
    aconnect -l | grep -A3 "'feeder'"
    cat /feed.raw > feed.fifo
    wait $FEED || rc=1
    cat f.err
    sleep 0.3
done
wait $ECHO || rc=1
sleep 0.3
kill -INT $REC; wait $REC
cat e2.err

echo "== phase 3: PortMidi input from Midi Through, ALSA output"
midi_echo -t 12 -n %(n_motif)d -s 60 "portmidi:Midi Through" alsa > e3.out 2> e3.err &
ECHO=$!
waitfor e3.out ready || rc=1
arecordmidi -p continuo:out rec3.mid &
REC=$!
sleep 0.5
aplaymidi -p 14:0 /motif.mid || rc=1
wait $ECHO || rc=1
sleep 0.3
kill -INT $REC; wait $REC
cat e3.err

echo "== phase 4: raw MIDI devices (VirMIDI 0-0 in, VirMIDI 0-1 out)"
midi_echo -t 12 -n %(n_motif)d -s 60 raw:/dev/snd/midiC0D0 raw:/dev/snd/midiC0D1 > e4.out 2> e4.err &
ECHO=$!
waitfor e4.out ready || rc=1
arecordmidi -p 17:0 rec4.mid &
REC=$!
sleep 0.5
aplaymidi -p 16:0 /motif.mid || rc=1
wait $ECHO || rc=1
sleep 0.3
kill -INT $REC; wait $REC
cat e4.err

echo "== phase 5: a source that leaves holding a chord"
printf '\221\067\144\073\144\076\144' > /tmp/chord.raw   # 0x91 55 100, 59 100, 62 100: no note-offs
rm -f feed.fifo; mkfifo feed.fifo
midi_echo -t 12 -n 6 -s 60 alsa:feeder alsa > e5.out 2> e5.err &
ECHO=$!
waitfor e5.out ready || rc=1
arecordmidi -p continuo:2 rec5.mid &
REC=$!
midi_echo -c feeder -n 3 -s 30 fifo:/tmp/feed.fifo alsa > f5.out 2> f5.err &
FEED=$!
waitfor f5.out ready || rc=1
feeder_connected || rc=1
cat /tmp/chord.raw > feed.fifo
wait $FEED || rc=1          # it sent the chord and left, holding it
wait $ECHO || rc=1          # the chord and its three note-offs came through
sleep 0.3
kill -INT $REC; wait $REC
cat e5.err

echo "== port list"
midi_echo -l || rc=1

for f in rec1.mid rec2.mid rec3.mid rec4.mid rec5.mid; do
    echo "BEGIN $f"
    od -An -tx1 -v $f
    echo "END $f"
done
exit $rc
""" % {"n_motif": n_motif, "n_feed": n_feed, "n_feed2": 2 * n_feed}

failures = 0


def check(cond, what):
    global failures
    if not cond:
        print("FAIL:", what)
        failures += 1


out, status = guest.run(echo, guest_script, {"/motif.mid": midifile.encode(motif), "/feed.raw": feed})
check(status == 0, "guest script exit status %d" % status)


def recording(name):
    try:
        return guest.recording(out, name)
    except ValueError as e:
        if "missing" in str(e):
            return []
        check(False, str(e))
        return []


# Phase 1: every message arrives, in order, notes +12, timing kept.
rec = recording("rec1.mid")
want = []
for t, msg in motif:
    st, d1, d2 = msg[0], msg[1], (msg[2] if len(msg) > 2 else 0)
    if st & 0xF0 in (0x80, 0x90):
        d1 += 12
    want.append((t, st, d1, d2))
got = [(st, d1, d2) for _, st, d1, d2 in rec]
# arecordmidi may write NOTE OFF as NOTE ON velocity 0
norm = [(0x80 | (st & 15), d1, 0) if st & 0xF0 == 0x90 and d2 == 0 else (st, d1, d2)
        for st, d1, d2 in got]
check(norm == [(st, d1, d2) for _, st, d1, d2 in want],
      "phase 1 recording:\n got  %s\n want %s" % (norm, [w[1:] for w in want]))
if len(rec) == len(want):
    t0 = rec[0][0] - want[0][0]
    worst = max(abs((r[0] - t0) - w[0]) for r, w in zip(rec, want))
    print("phase 1: %d messages, worst timing difference %.1f ms" % (len(rec), worst * 1000))
    check(worst < 0.05, "timing kept within 50 ms (worst %.3f s)" % worst)

# Phase 3: the same through PortMidi (when midi_echo was built with it).
if "portmidi" in out and "unknown backend 'portmidi'" not in out:
    rec = recording("rec3.mid")
    got = [(st, d1, d2) for _, st, d1, d2 in rec]
    norm3 = [(0x80 | (st & 15), d1, 0) if st & 0xF0 == 0x90 and d2 == 0 else (st, d1, d2)
             for st, d1, d2 in got]
    check(norm3 == [(st, d1, d2) for _, st, d1, d2 in want],
          "phase 3 (PortMidi) recording:\n got  %s" % norm3)
    check("portmidi:Midi Through" in out, "PortMidi devices listed")
rec = recording("rec4.mid")
norm4 = [(0x80 | (st & 15), d1, 0) if st & 0xF0 == 0x90 and d2 == 0 else (st, d1, d2)
         for _, st, d1, d2 in rec]
check(norm4 == [(st, d1, d2) for _, st, d1, d2 in want],
      "phase 4 (raw devices) recording:\n got  %s" % norm4)
check(re.search(r"^alsa:14:0 +in/out +Midi Through:Midi Through Port-0", out, re.M),
      "ALSA ports listed")

# Phase 2: both rounds of the feeder's notes arrive, an octave up.
rec = recording("rec2.mid")
notes = [(st & 0xF0, d1) for _, st, d1, d2 in rec if st & 0xF0 in (0x80, 0x90)]
one_round = [(0x90, 62), (0x90, 64), (0x80, 62), (0x80, 64)]
norm = [(0x80, k) if s == 0x90 and d2 == 0 else (s, k)
        for (s, k), (_, _, _, d2) in zip(notes, rec)]
check(norm == one_round * 2, "phase 2 recording: %s" % norm)
check(out.count("went away") >= 1, "the source leaving was noticed")
check(out.count("ALSA: connected feeder (") >= 2, "the source, named by its client alone, was connected twice")

# Phase 5: the feeder left holding a chord: each of its notes is let go at
# once (the feeder left right after its last note-on, so the time from that
# note-on to the note-offs bounds the release from above).
rec = recording("rec5.mid")
ons = [(t, d1) for t, st, d1, d2 in rec if st & 0xF0 == 0x90 and d2 > 0]
offs = [(t, d1) for t, st, d1, d2 in rec if st & 0xF0 == 0x80 or (st & 0xF0 == 0x90 and d2 == 0)]
check(sorted(p for _, p in ons) == [67, 71, 74], "phase 5: the chord came through: %s" % ons)
check(sorted(p for _, p in offs) == [67, 71, 74], "phase 5: each of its notes was let go: %s" % offs)
if ons and offs:
    late = (max(t for t, _ in offs) - max(t for t, _ in ons)) * 1000
    emulated = re.search(r"accelerator tcg", out) is not None
    print("phase 5: the chord's notes let go %.1f ms after its last note-on (the feeder left in between; %s)"
          % (late, "emulated, TCG" if emulated else "KVM"))
    check(late <= 50, "phase 5: let go within 50 ms of the source leaving (%.1f ms after its last note-on)" % late)

print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)

#!/usr/bin/python3
"""test_qemu_serve.py: `continuo serve` on real ALSA sequencer ports in a qemu guest: aplaymidi -> continuo:in (port 1), arecordmidi <- continuo:out (port 2).

The motif goes in on channel 2 (MIDI thru sends it back out on channel 2);
the continuation comes out on channel 1.  The recording must hold the
motif, then a continuation after it, and every note that started must end.
Then a source leaves holding a chord (aplaymidi plays three note-ons and
exits): within 50 ms each of its notes is let go on continuo:out, and the
model answers the phrase that ended with them (its context heard them).
Uses the harness in tests/qemu (run-guest.sh); exit 77 (skip) when qemu or
the kernel cannot be had.
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
qemu_dir = os.path.join(here, "..", "qemu")
sys.path.insert(0, qemu_dir)
sys.path.insert(0, here)
import guest  # noqa: E402
import midifile  # noqa: E402
from servetest import check, done, tiny_model, unended_notes  # noqa: E402

continuo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.environ["CONTINUO"])
model = tiny_model()

# The motif: 6 notes on channel 2, 0.15 s apart.
motif = []
for i, key in enumerate([60, 62, 64, 67, 65, 64]):
    motif.append((0.1 + 0.15 * i, [0x91, key, 70 + 5 * i]))
    motif.append((0.1 + 0.15 * i + 0.12, [0x81, key, 0]))
motif.sort(key=lambda e: e[0])

# The chord a keyboard holds when it is unplugged: note-ons, no note-off.
chord = [(0.1, [0x91, 55, 90]), (0.1, [0x91, 59, 90]), (0.1, [0x91, 62, 90])]

guest_script = r"""
rc=0
mkdir -m 700 /tmp/run
export XDG_RUNTIME_DIR=/tmp/run
continuo serve --set model=/model.gguf --set input=alsa --set output=alsa \
    --set phrase_silence_ms=300 --set response_seconds=2 --set seed=5 \
    --set recording=/tmp/session.mid > s.out 2> s.err &
SERVE=$!
i=0
until continuo ctl status > /dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 300 ] && { echo "continuo serve never answered"; rc=1; break; }
    sleep 0.1
done
aconnect -l | grep -A3 continuo
arecordmidi -p continuo:2 rec.mid &
REC=$!
sleep 0.5
aplaymidi -p continuo:1 /motif.mid || rc=1
i=0
until continuo ctl status | grep -q 'responses=1.*state\|state=listening.*responses=1'; do
    i=$((i + 1)); [ $i -gt 100 ] && break
    sleep 0.1
done
sleep 3
continuo ctl status
# A keyboard unplugged mid-chord: aplaymidi plays three note-ons and no
# note-off, then leaves at once (-d 0: no wait after the file's end; its
# client exits) holding them.
aplaymidi -d 0 -p continuo:1 /chord.mid || rc=1
i=0
until continuo ctl status | grep -q 'state=listening.*responses=2'; do
    i=$((i + 1)); [ $i -gt 100 ] && break
    sleep 0.1
done
sleep 3
continuo ctl status
kill -INT $REC; wait $REC
kill -TERM $SERVE; wait $SERVE || { echo "serve exit status $?"; rc=1; }
cat s.err
for f in rec.mid session.mid; do
    echo "BEGIN $f"
    od -An -tx1 -v $f
    echo "END $f"
done
exit $rc
"""

with open(model, "rb") as fh:
    out, status = guest.run(continuo, guest_script,
                            {"/motif.mid": midifile.encode(motif), "/chord.mid": midifile.encode(chord),
                             "/model.gguf": fh.read()},
                            memory_mb=1024, show=6000)
check(status == 0, "guest script exit status %d" % status)


def recording(name):
    try:
        return guest.recording(out, name)
    except ValueError as e:
        check(False, str(e))
        return []


rec = recording("rec.mid")      # what continuo:out sent, as arecordmidi saw it
n_motif = len([m for m in motif if m[1][0] == 0x91])
thru = [(t, d1) for t, st, d1, d2 in rec if st == 0x91 and d2 > 0][:n_motif]
answer = [(t, d1) for t, st, d1, d2 in rec if st == 0x90 and d2 > 0]
check([k for _, k in thru] == [m[1][1] for m in motif if m[1][0] == 0x91],
      "the motif came back through MIDI thru: %r" % thru)
check(len(answer) > 0, "continuo:out played a continuation")
if thru and answer:
    check(answer[0][0] > thru[-1][0], "the continuation follows the motif (%.3f > %.3f s)"
          % (answer[0][0], thru[-1][0]))
check(unended_notes([(st, d1, d2) for _, st, d1, d2 in rec]) == [],
      "every note on continuo:out ended: %r" % unended_notes([(st, d1, d2) for _, st, d1, d2 in rec]))
# The source that left holding the chord: its notes let go at once, on the
# outputs (MIDI thru's note-offs) and in the model's context (the phrase
# ends, and the model answers it, long before held_note_timeout_ms).
chord_on = [(t, d1) for t, st, d1, d2 in rec if st == 0x91 and d2 > 0][n_motif:]
chord_off = [(t, d1) for t, st, d1, d2 in rec
             if (st == 0x81 or (st == 0x91 and d2 == 0)) and d1 in (55, 59, 62) and chord_on and t >= chord_on[0][0]]
check(sorted(k for _, k in chord_on) == [55, 59, 62], "the chord came through MIDI thru: %r" % chord_on)
check(sorted(k for _, k in chord_off) == [55, 59, 62], "each note of the chord was let go on continuo:out: %r"
      % chord_off)
if chord_on and chord_off:
    late = (max(t for t, _ in chord_off) - max(t for t, _ in chord_on)) * 1000
    print("the chord let go %.1f ms after its last note-on (aplaymidi left in between)" % late)
    check(late <= 50, "let go within 50 ms of the source leaving (%.1f ms after its last note-on)" % late)
    second = [t for t, k in answer if t > max(t for t, _ in chord_off)]
    check(second != [], "the model answered the phrase the release ended (the context heard the note-offs)")
    if second:
        print("the model's answer began %.2f s after the release" % (second[0] - max(t for t, _ in chord_off)))
session = recording("session.mid")
check(len([e for e in session if e[1] == 0x90 and e[3] > 0]) == len(answer),
      "the session recording holds the same continuation")
done()

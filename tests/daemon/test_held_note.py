"""test_held_note.py: a player's note-on whose note-off never comes (a glitch, a cable pulled) stops
holding the phrase open after held_note_timeout_ms: the phrase played over it is answered then, the
note is ended on the outputs, and it is logged once; with 0 the phrase stays open."""

import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from servetest import FifoReader, Service, check, done, parse_midi_bytes, unended_notes  # noqa: E402

PHRASE = [(60, 90, 0.1), (62, 90, 0.1), (64, 90, 0.1)]


def play_over_a_stuck_note(sv):
    """Note-on 50 without its note-off, then a short phrase; returns when the stuck note began."""
    t0 = time.monotonic()
    sv.play([0x90, 50, 80])
    time.sleep(0.1)
    sv.play_motif(PHRASE, gap=0.02)
    return t0


def responses(sv):
    st = sv.request("status")
    field = next((f for f in st.split() if f.startswith("responses=")), "responses=-1")
    return int(field.split("=")[1])


def wait_answer(sv, until):
    while time.monotonic() < until:
        if responses(sv) >= 1:
            return time.monotonic()
        time.sleep(0.02)
    return None


# held_note_timeout_ms = 2000: answered about 2 s after the stuck note-on, not before.
tmp_out = tempfile.mkdtemp(prefix="continuo-held-")
out_fifo = os.path.join(tmp_out, "out")
reader = FifoReader(out_fifo)
sv = Service("phrase_silence_ms=300", "held_note_timeout_ms=2000", "midi_thru=yes", output="fifo:" + out_fifo)
try:
    t0 = play_over_a_stuck_note(sv)
    time.sleep(max(0.0, t0 + 1.5 - time.monotonic()))
    check(responses(sv) == 0, "the stuck note holds the phrase open before the timeout")
    t_answer = wait_answer(sv, t0 + 6)
    check(t_answer is not None, "the phrase is answered once the stuck note times out")
    if t_answer is not None:
        check(1.9 <= t_answer - t0 <= 3.0, "answered about held_note_timeout_ms after the note-on "
              "(%.2f s)" % (t_answer - t0))
    time.sleep(0.8)
    rc, _ = sv.stop()
    reader.close()
    check(rc == 0, "clean exit")
    log = sv.read_log()
    check(log.count("without a note-off") == 1, "the lost note-off is logged once:\n" + log[-1500:])
    check("held_note_timeout_ms" in log and "D3" in log, "the log names the note and the setting")
    msgs = parse_midi_bytes(reader.data())
    offs_50 = [m for m in msgs if m[1] == 50 and (m[0] & 0xF0 == 0x80 or (m[0] & 0xF0 == 0x90 and m[2] == 0))]
    check(len(offs_50) >= 1, "the stuck note is ended on the outputs it was sent to")
    check(unended_notes(msgs) == [], "nothing is left sounding: %r" % unended_notes(msgs))
finally:
    sv.cleanup()
    shutil.rmtree(tmp_out, ignore_errors=True)

# held_note_timeout_ms = 0 (never): the same playing is not answered.
sv = Service("phrase_silence_ms=300", "held_note_timeout_ms=0")
try:
    t0 = play_over_a_stuck_note(sv)
    check(wait_answer(sv, t0 + 3.0) is None, "with held_note_timeout_ms = 0 the stuck note keeps the phrase open")
    sv.play([0x80, 50, 0])
    check(wait_answer(sv, time.monotonic() + 3.0) is not None, "and its late note-off ends it")
    sv.stop()
finally:
    sv.cleanup()
done()

"""test_sigterm.py: SIGTERM/SIGINT while notes sound: every note ends, on the outputs and in the recording, at once."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from servetest import (Service, FifoReader, check, done, parse_midi_bytes, read_smf,  # noqa: E402
                       unended_notes, sanitized)

# Notes must be silent within 100 ms of the signal (what a listener hears,
# docs/RELIABILITY.md) and the process gone within 500 ms: after the silence
# it writes the recording and closes the journal, each synced to disk, which
# is the disk's time (40 ms here, 148 ms once on a CI machine); more room on
# a machine busier than its cores (parallel builds) and under sanitizers.
limit = 0.5 if sanitized() else 0.1
busy = os.getloadavg()[0] > (os.cpu_count() or 1)
exit_limit = 5 * limit * (3 if busy else 1)


def scenario(sig, answer_sounding):
    """Plays so that notes sound at the moment SIG arrives: the model's
    answer (long notes) or the player's held keys (MIDI thru)."""
    tmp_out = None
    sv = None
    try:
        import tempfile
        tmp_out = tempfile.mkdtemp(prefix="continuo-out-")
        out_fifo = os.path.join(tmp_out, "out")
        rec = os.path.join(tmp_out, "rec.mid")
        reader = FifoReader(out_fifo)
        sv = Service("phrase_silence_ms=150", "recording=" + rec, output="fifo:" + out_fifo)
        if answer_sounding:
            # Long overlapping notes: the echo answer holds them too.
            sv.play([0x90, 60, 100])
            sv.play([0x90, 64, 100])
            sv.play([0x90, 67, 100])
            time.sleep(0.05)
            sv.play([0x80, 60, 0, 0x80, 64, 0, 0x80, 67, 0])  # notes end together, 50 ms
            sv.play([0x90, 72, 100])
            time.sleep(0.6)            # 72 is held 0.6 s: in the answer too
            sv.play([0x80, 72, 0])
            time.sleep(0.15 + 0.2)     # phrase end, then the answer's 72 sounds
            status = sv.request("status")
            check("responding" in status, "answer playing at the signal: %r" % status)
        else:
            sv.play([0x90, 48, 80, 0x90, 55, 80, 0xB0, 64, 127])   # keys held, pedal down
            time.sleep(0.1)
        t_sig = time.monotonic()
        rc, elapsed = sv.stop(sig)
        reader.close()
        check(rc == 0, "exit status 0 after signal %d, got %r\n%s" % (sig, rc, sv.read_log()))
        check(elapsed < exit_limit, "exit within %.0f ms of the signal: %.1f ms"
              % (exit_limit * 1000, elapsed * 1000))
        print("signal %d: exit after %.1f ms" % (sig, elapsed * 1000))
        msgs = parse_midi_bytes(reader.data())
        ons = [m for m in msgs if m[0] & 0xF0 == 0x90 and m[2] > 0]
        check(len(ons) >= (4 if answer_sounding else 2), "notes were sounding: %r" % ons)
        check(unended_notes(msgs) == [], "every note on the output ended: %r" % unended_notes(msgs))
        # Even without CC 123, each note got its own note-off.
        no_cc = [m for m in msgs if not (m[0] & 0xF0 == 0xB0 and m[1] == 123)]
        check(unended_notes(no_cc) == [], "note-offs for every note: %r" % unended_notes(no_cc))
        chans = {m[0] & 0x0F for m in msgs if m[0] & 0xF0 == 0xB0 and m[1] == 123}
        check(chans == set(range(16)), "all-notes-off on every channel: %r" % sorted(chans))
        # The final silence came promptly after the signal.
        last_t = reader.chunks[-1][0] if reader.chunks else t_sig
        check(last_t - t_sig < limit, "silence within %.0f ms: %.1f ms" % (limit * 1000, (last_t - t_sig) * 1000))
        tracks, _ = read_smf(rec)
        for name, evs in tracks.items():
            msgs = [(st, d1, d2) for _, st, d1, d2 in evs]
            check(unended_notes(msgs) == [], "track %s: every note ended: %r" % (name, unended_notes(msgs)))
        model_ons = [e for e in tracks.get("continuo", []) if e[1] & 0xF0 == 0x90 and e[3] > 0]
        if answer_sounding:
            check(len(model_ons) >= 4, "the answer was recorded: %r" % model_ons)
    finally:
        if sv:
            sv.cleanup()
        if tmp_out:
            import shutil
            shutil.rmtree(tmp_out, ignore_errors=True)


scenario(signal.SIGTERM, True)
scenario(signal.SIGINT, False)
scenario(signal.SIGTERM, False)
done()

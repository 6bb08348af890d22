"""test_motif_answered.py: a motif played in real time into a FIFO gets a continuation: recorded, audible (FluidSynth file driver), every note ended."""

import array
import math
import os
import shutil
import sys
import tempfile
import time
import wave

sys.path.insert(0, os.path.dirname(__file__))
from servetest import Service, check, done, read_smf, tiny_model, unended_notes  # noqa: E402

SOUNDFONT = "/usr/share/sounds/sf2/FluidR3_GM.sf2"
if not os.path.exists(SOUNDFONT):
    print("skipped: no General MIDI soundfont at " + SOUNDFONT)
    sys.exit(77)
model = tiny_model()   # random weights: its velocities are a draw, so the velocity knob holds
                       # them near 100 and the sound checks hear the path, not the draw (a
                       # candidate of velocity 10 read -56 dBFS once under a loaded CI)

out_dir = tempfile.mkdtemp(prefix="continuo-e2e-")
wav = os.path.join(out_dir, "out.wav")
rec = os.path.join(out_dir, "rec.mid")
try:
    sv = Service("model=" + model, "soundfont=" + SOUNDFONT, "audio_driver=file",
                 "audio_file=" + wav, "recording=" + rec, "midi_thru=no",
                 "phrase_end=silence", "phrase_silence_ms=300", "response_seconds=2", "seed=1", "velocity=100",
                 output="fluidsynth")
except RuntimeError as e:
    shutil.rmtree(out_dir, ignore_errors=True)
    if "built without FluidSynth" in str(e) or "no model engine" in str(e):
        print("skipped:", str(e).splitlines()[-1])
        sys.exit(77)
    raise
try:
    motif = [(60, 96, 0.15), (62, 90, 0.15), (64, 100, 0.15), (65, 84, 0.15),
             (67, 110, 0.3), (64, 90, 0.15), (60, 96, 0.4)]
    sv.play_motif(motif, gap=0.03)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        st = sv.request("status")
        if "responses=1" in st and "state=listening" in st:
            break
        time.sleep(0.1)
    check("responses=1" in st, "the phrase was answered: %r" % st)
    rc, _ = sv.stop()
    check(rc == 0, "clean exit: %r\n%s" % (rc, sv.read_log()))

    tracks, div = read_smf(rec)
    player = tracks.get("player", [])
    model_ev = tracks.get("continuo", [])
    p_on = [e for e in player if e[1] & 0xF0 == 0x90 and e[3] > 0]
    m_on = [e for e in model_ev if e[1] & 0xF0 == 0x90 and e[3] > 0]
    check([e[2] for e in p_on] == [m[0] for m in motif], "the motif was recorded: %r" % p_on)
    check(len(m_on) > 0, "a continuation was recorded")
    motif_end = max(e[0] for e in player) / 1000.0        # 1 tick = 1 ms
    first = m_on[0][0] / 1000.0 if m_on else 0
    check(first > motif_end, "the continuation starts after the motif (%.3f > %.3f s)"
          % (first, motif_end))
    for name, evs in tracks.items():
        u = unended_notes([(st, d1, d2) for _, st, d1, d2 in evs])
        check(u == [], "track %s: every note that started ended: %r" % (name, u))

    with wave.open(wav) as w:
        rate, ch = w.getframerate(), w.getnchannels()
        check(w.getsampwidth() == 2, "16-bit WAV")
        samples = array.array("h", w.readframes(w.getnframes()))

    def rms(t0, t1):
        seg = samples[int(t0 * rate) * ch:int(t1 * rate) * ch]
        return math.sqrt(sum(s * s for s in seg) / max(1, len(seg))) / 32768.0

    # The audio driver starts once the soundfont is loaded, after the
    # session clock; both end at the stop, where the last recorded event is.
    rec_end = max(e[0] for evs in tracks.values() for e in evs) / 1000.0
    offset = rec_end - len(samples) / ch / rate
    t_first = first - offset
    check(0 <= offset < rec_end, "audio and recording line up (offset %.3f s)" % offset)
    # Where the sound starts: the first 10 ms window above -60 dBFS.
    win = rate // 100
    onset = next((i / 100.0 for i in range(len(samples) // ch // win)
                  if rms(i / 100.0, (i + 1) / 100.0) > 0.001), None)
    check(onset is not None, "the audio file is not silent")
    onset = onset or 0.0
    # Audible: its loudest 50 ms within the answer's 2 s (response_seconds)
    # above -40 dBFS, the level of the whole at least -54 dBFS.
    after = rms(t_first, t_first + 2.0)
    loudest = max(rms(t_first + i * 0.05, t_first + (i + 1) * 0.05) for i in range(40))
    print("continuation at %.3f s (audio clock), sound from %.3f s, rms of its 2 s %.5f, loudest 50 ms %.5f"
          % (t_first, onset, after, loudest))
    check(loudest > 0.01 and after > 0.002, "the continuation is audible: rms %.5f, loudest 50 ms %.5f"
          % (after, loudest))
    # Thru is off: nothing sounds while the player plays, the sound is the continuation's.
    check(abs(onset - t_first) < 0.25, "the sound starts with the continuation (%.3f vs %.3f s)"
          % (onset, t_first))
finally:
    sv.cleanup()
    shutil.rmtree(out_dir, ignore_errors=True)
done()

"""test_gain.py: `continuo ctl set gain` changes FluidSynth's loudness at once, as a player turning it down hears it.

The echo engine answers the same motif twice through the FluidSynth output
(file driver); between the two, `ctl set gain` goes from 0.8 to 0.2.  The
second answer's level in the WAV is a quarter of the first's (-12 dB),
with no restart; a bad value is refused and changes nothing.
"""

import array
import math
import os
import shutil
import sys
import tempfile
import time
import wave

sys.path.insert(0, os.path.dirname(__file__))
from servetest import Service, check, done  # noqa: E402

SOUNDFONT = "/usr/share/sounds/sf2/FluidR3_GM.sf2"
if not os.path.exists(SOUNDFONT):
    print("skipped: no General MIDI soundfont at " + SOUNDFONT)
    sys.exit(77)

MOTIF = [(60, 96, 0.15), (64, 90, 0.15), (67, 100, 0.15), (72, 84, 0.3)]

out_dir = tempfile.mkdtemp(prefix="continuo-gain-")
wav = os.path.join(out_dir, "out.wav")
try:
    sv = Service("model=echo", "soundfont=" + SOUNDFONT, "audio_driver=file", "audio_file=" + wav,
                 "gain=0.8", "midi_thru=no", "phrase_silence_ms=300", output="fluidsynth")
except RuntimeError as e:
    shutil.rmtree(out_dir, ignore_errors=True)
    if "built without FluidSynth" in str(e):
        print("skipped:", str(e).splitlines()[-1])
        sys.exit(77)
    raise


def answered(n):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        st = sv.request("status")
        if "responses=%d" % n in st and "state=listening" in st:
            return True
        time.sleep(0.05)
    return False


def bursts(samples, rate, ch):
    """(start s, end s, rms) of each stretch of sound (10 ms windows above
    -50 dBFS) longer than 0.2 s, gaps under 0.3 s bridged."""
    win = rate // 100
    n = len(samples) // ch // win
    loud = []
    for i in range(n):
        seg = samples[i * win * ch:(i + 1) * win * ch]
        loud.append(math.sqrt(sum(s * s for s in seg) / len(seg)) / 32768.0)
    out, start, last = [], None, None
    for i, v in enumerate(loud + [0.0] * 31):
        if v > 0.003:
            if start is None:
                start = i
            last = i
        elif start is not None and i - last > 30:
            if last - start >= 20:
                e = sum(x * x for x in loud[start:last + 1]) / (last + 1 - start)
                out.append((start / 100.0, (last + 1) / 100.0, math.sqrt(e)))
            start = None
    return out


try:
    sv.play_motif(MOTIF, gap=0.03)
    check(answered(1), "the first phrase was answered")
    time.sleep(1.5)                                 # its sound and reverb die away
    check(sv.request("set gain 11").startswith("error gain: expected a number from 0 to 10"),
          "a gain out of range is refused")
    check(sv.request("get gain") == "ok gain = 0.8", "and changes nothing: %r" % sv.request("get gain"))
    check(sv.request("set gain 0.2") == "ok gain = 0.2", "gain set live: %r" % sv.request("get gain"))
    sv.play_motif(MOTIF, gap=0.03)
    check(answered(2), "the second phrase was answered")
    time.sleep(1.5)
    rc, _ = sv.stop()
    check(rc == 0, "clean exit")

    with wave.open(wav) as w:
        rate, ch = w.getframerate(), w.getnchannels()
        samples = array.array("h", w.readframes(w.getnframes()))
    b = bursts(samples, rate, ch)
    print("sound in the WAV (start s, end s, rms):", " ".join("(%.2f %.2f %.4f)" % x for x in b))
    if check(len(b) == 2, "two answers heard: %d stretches of sound" % len(b)):
        ratio = b[1][2] / b[0][2]
        print("second answer / first: %.3f (%.1f dB; gain 0.2 / 0.8 = 0.25, -12.0 dB)"
              % (ratio, 20 * math.log10(ratio)))
        check(0.2 <= ratio <= 0.3, "the second answer is a quarter as loud: %.3f" % ratio)
finally:
    sv.cleanup()
    shutil.rmtree(out_dir, ignore_errors=True)
done()

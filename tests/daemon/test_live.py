"""test_live.py: call and response as a player meets it: thru, sustain pedal, hand-over, interruption, re-roll, panic, CCs."""

import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from servetest import Service, check, done, parse_midi_bytes, unended_notes  # noqa: E402


def status(sv, key):
    m = re.search(r"\b%s=(\S+)" % key, sv.request("status"))
    return m.group(1) if m else None


def outputs(path):
    with open(path, "rb") as f:
        return parse_midi_bytes(f.read())


def model_ons(msgs):
    return [m for m in msgs if m[0] == 0x90 and m[2] > 0]   # the model plays on channel 1


def player_ons(msgs):
    return [m for m in msgs if m[0] == 0x91 and m[2] > 0]   # the player here plays on channel 2


# The player plays on channel 2 so the output tells thru (0x91) from the model (0x90).
d = tempfile.mkdtemp(prefix="continuo-live-")
out = os.path.join(d, "out.raw")
sv = Service("phrase_silence_ms=400", output="fifo:" + out)
try:
    # MIDI thru at once; no answer while a key or the pedal is held.
    sv.play([0xB1, 64, 127, 0x91, 60, 90])
    time.sleep(0.05)
    check(player_ons(outputs(out)) == [(0x91, 60, 90)], "thru: the player's note is sent at once")
    sv.play([0x81, 60, 0])
    time.sleep(0.6)
    check(status(sv, "phrases") == "0", "pedal down: the phrase has not ended")
    sv.play([0xB1, 64, 0])
    time.sleep(0.2)
    check(status(sv, "phrases") == "0", "silence counts from the pedal release")
    time.sleep(0.45)
    check(status(sv, "phrases") == "1", "phrase ended after the silence")
    time.sleep(0.2)
    check([m[1] for m in model_ons(outputs(out))] == [67], "echo answer: %r" % model_ons(outputs(out)))

    # Hand-over CC: the answer starts without waiting for the silence.
    sv.play([0x91, 62, 80])
    time.sleep(0.05)
    sv.play([0x81, 62, 0, 0xB1, 20, 127])
    time.sleep(0.1)
    check(status(sv, "responses") == "2", "hand-over answered at once")
    check(len(model_ons(outputs(out))) == 2, "hand-over answer played")
    check(not any(m[0] == 0xB1 and m[1] == 20 for m in outputs(out)), "mapped CCs are not sent thru")

    # Interruption: a long answer stops when the player plays again.
    time.sleep(0.7)
    interrupted = int(status(sv, "interrupted"))
    responses = int(status(sv, "responses"))
    check(status(sv, "state") == "listening", "the earlier answers are over")
    for p in (48, 52, 55, 60, 64, 67):
        sv.play([0x91, p, 70])
        time.sleep(0.15)
        sv.play([0x81, p, 0])
    time.sleep(0.4 + 0.35)                  # silence, then about two notes of the answer
    n_before = len(model_ons(outputs(out)))
    sv.play([0x91, 72, 100])
    t_int = time.monotonic()
    time.sleep(0.6)
    n_after = len(model_ons(outputs(out)))
    check(int(status(sv, "interrupted")) == interrupted + 1, "the answer was interrupted: %s" % sv.request("status"))
    check(0 < n_after - 2 < 6, "the answer stopped early: %d of 6 notes" % (n_after - 2))
    check(n_after == n_before or n_after == n_before + 1, "nothing new after the interruption")
    check(status(sv, "queued") == "0", "queue dropped")
    sv.play([0x81, 72, 0])
    time.sleep(0.6)                          # this phrase (one note) is answered
    check(int(status(sv, "responses")) == responses + 2, "answered again after the interruption")

    # Re-roll CC: the last answer again (the echo engine repeats it).
    time.sleep(0.2)
    before = len(model_ons(outputs(out)))
    sv.play([0xB1, 24, 127])
    time.sleep(0.2)
    check(int(status(sv, "responses")) == responses + 3, "re-roll started an answer")
    check(len(model_ons(outputs(out))) == before + 1, "re-roll played the answer again")

    # Panic CC during an answer: silence at once, nothing queued.
    time.sleep(0.3)
    sv.play([0x91, 50, 70])
    time.sleep(0.3)
    sv.play([0x81, 50, 0])
    time.sleep(0.05)
    sv.play([0x91, 53, 70])
    time.sleep(0.05)
    sv.play([0x81, 53, 0])          # answer: 57 (0.3 s long) at T, 60 at T + 0.35 s
    time.sleep(0.4 + 0.15)
    check(status(sv, "sounding") == "1", "the answer's first note sounds")
    sv.play([0xB1, 23, 127])
    time.sleep(0.05)
    check(status(sv, "sounding") == "0" and status(sv, "queued") == "0", "panic: silent, queue empty")
    check(unended_notes(outputs(out)) == [], "panic ended every note: %r" % unended_notes(outputs(out)))
    time.sleep(0.5)
    check([m[1] for m in model_ons(outputs(out))][-1] == 57, "nothing played after panic")

    # CC mapping of temperature, top-p and length.
    sv.play([0xB1, 21, 127, 0xB1, 22, 0, 0xB1, 25, 127])
    time.sleep(0.05)
    check(sv.request("get temperature") == "ok temperature = 2", "CC temperature 127 -> 2.0")
    check(sv.request("get top_p") == "ok top_p = 0.05", "CC top_p 0 -> 0.05")
    check(sv.request("get response_seconds") == "ok response_seconds = 30", "CC length 127 -> 30 s")

    # Thru off: the player's notes no longer reach the outputs.
    sv.request("set midi_thru no")
    n = len(player_ons(outputs(out)))
    sv.play([0x91, 70, 90, 0x81, 70, 0])
    time.sleep(0.05)
    check(len(player_ons(outputs(out))) == n, "thru off")
    rc, _ = sv.stop()
    check(rc == 0, "clean exit")
    check(unended_notes(outputs(out)) == [], "every note ended")
finally:
    sv.cleanup()
    shutil.rmtree(d, ignore_errors=True)
done()

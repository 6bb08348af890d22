"""test_takes.py: every answer is a take: `ctl takes` lists them, `replay` plays one again note for
note (now, or as the next answer; by controller too: cc_replay, cc_previous_take), `save-take`
writes one, and they survive a reload; an answer the player plays into keeps only what sounded.
The echo engine answers (a phrase a fifth up), so each take's notes are known."""

import os
import re
import shutil
import sys
import tempfile
import time

import mido

sys.path.insert(0, os.path.dirname(__file__))
from servetest import Service, check, done  # noqa: E402


def write_phrase(path, pitches):
    """A phrase of quarter notes (0.25 s) at 120 bpm, 480 ticks a beat."""
    f = mido.MidiFile(ticks_per_beat=480)
    t = mido.MidiTrack()
    f.tracks.append(t)
    for p in pitches:
        t.append(mido.Message("note_on", note=p, velocity=80, time=0))
        t.append(mido.Message("note_off", note=p, velocity=0, time=240))
    f.save(path)


def model_notes(path):
    """(onset, release, pitch, velocity) of the model's track, in seconds."""
    f = mido.MidiFile(path)
    track = [tr for tr in f.tracks if any(m.type == "track_name" and m.name == "continuo" for m in tr)][0]
    return track_notes(f, track)


def track_notes(f, track):
    """(onset, release, pitch, velocity) of TRACK of the MIDI file F, in seconds."""
    out, on, t = [], {}, 0.0
    for m in track:
        t += mido.tick2second(m.time, f.ticks_per_beat, 500000)
        if m.type == "note_on" and m.velocity > 0:
            on[m.note] = (t, m.velocity)
        elif m.type in ("note_on", "note_off") and m.note in on:
            start, vel = on.pop(m.note)
            out.append((start, t, m.note, vel))
    return sorted(out)


def same_notes(a, b, tol=0.015):
    """The same pitches and velocities in order, times from each one's first
    note within TOL (the service plays in real time)."""
    return len(a) == len(b) and all(
        x[2:] == y[2:] and abs((x[0] - a[0][0]) - (y[0] - b[0][0])) <= tol
        and abs((x[1] - a[0][0]) - (y[1] - b[0][0])) <= tol for x, y in zip(a, b))


def main():
    d = tempfile.mkdtemp(prefix="continuo-takes-")
    sv = Service("cc_replay=40", "cc_previous_take=41", "recording=" + os.path.join(d, "session.mid"))
    a, b = os.path.join(d, "a.mid"), os.path.join(d, "b.mid")
    write_phrase(a, [60, 62, 64, 65])
    write_phrase(b, [67, 69, 71])
    saved = []

    def wait_listening(n):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            st = sv.request("status")
            if "state=listening" in st and "responses=%d " % n in st:
                return
            time.sleep(0.05)
        check(False, "answer %d was not over: %s" % (n, sv.request("status")[:200]))

    def since_last():
        path = os.path.join(d, "rec%d.mid" % len(saved))
        check(sv.request("save " + path).startswith("ok"), "save " + path)
        notes = model_notes(path)
        new = notes[len(sum(saved, [])):]
        saved.append(new)
        return new

    try:
        check(sv.request("takes") == "ok 0 takes", "no take yet: %r" % sv.request("takes"))
        check(sv.request("replay").startswith("error no take #0"), "replay with no take: %r" % sv.request("replay"))
        check(sv.request("play " + a).startswith("ok"), "play a")
        wait_listening(1)
        take1 = since_last()
        check([n[2] for n in take1] == [67, 69, 71, 72], "take 1 is a's echo a fifth up: %s" % take1)
        check(sv.request("play " + b).startswith("ok"), "play b")
        wait_listening(2)
        since_last()
        listing = sv.request("takes")
        check(re.match(r"ok 2 takes: #2 at [0-9.]+ s, [0-9.]+ s, 3 notes, seed \d+; #1 at [0-9.]+ s, [0-9.]+ s, "
                       r"4 notes, seed \d+$", listing), "takes lists both, the newest first: %r" % listing)

        # replay 1: the same notes, note for note, as a take of its own
        r = sv.request("replay 1")
        check(r == "ok take #1 again, as take #3", "replay 1: %r" % r)
        wait_listening(3)
        again = since_last()
        check(same_notes(again, take1), "the replay is take 1 note for note:\n%s\n%s" % (again, take1))
        check("(replays #1)" in sv.request("takes"), "takes marks the replay")

        # replay 2 next: the next phrase is answered with take 2, not a new echo
        r = sv.request("replay 2 next")
        check(r == "ok take #2 answers the next phrase", "replay 2 next: %r" % r)
        check(sv.request("play " + a).startswith("ok"), "play a again")
        wait_listening(4)
        check([n[2] for n in since_last()] == [74, 76, 78], "the next phrase was answered with take 2")

        # the controllers: previous take steps back over replays to take 2, then take 1
        sv.play([0xB0, 41, 127])
        wait_listening(5)
        check([n[2] for n in since_last()] == [74, 76, 78], "cc_previous_take: take 2 (the sampled take before)")
        sv.play([0xB0, 41, 127])
        wait_listening(6)
        check([n[2] for n in since_last()] == [67, 69, 71, 72], "cc_previous_take again: take 1")
        sv.play([0xB0, 40, 127])
        wait_listening(7)
        check([n[2] for n in since_last()] == [67, 69, 71, 72], "cc_replay: the newest take (take 6, take 1's notes)")

        # save-take writes one take; bad numbers and relative paths are refused
        out = os.path.join(d, "take2.mid")
        r = sv.request("save-take 2 " + out)
        check(r == "ok saved take #2 (6 events) to " + out, "save-take: %r" % r)
        f = mido.MidiFile(out)
        check([m.note for m in f.tracks[-1] if m.type == "note_on" and m.velocity] == [74, 76, 78],
              "the file holds take 2's notes")
        check(sv.request("save-take 99 " + out) == "error no take '99' is kept (see takes)", "save-take 99")
        check(sv.request("save-take 2 x.mid") == "error save-take needs an absolute path", "relative path")
        check(sv.request("replay x").startswith("error replay takes a take's number"), "replay x")

        # the player plays into an answer: it stops, and its take keeps the
        # notes that sounded (those the recording holds), not the whole echo
        listening = sv.request("status")
        n = int(re.search(r"responses=(\d+)", listening).group(1))
        sv.play_motif([(p, 80, 0.2) for p in (60, 62, 64, 65, 67, 69, 71, 72)], gap=0.05)
        deadline = time.monotonic() + 10
        while "state=responding" not in sv.request("status") and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.6)             # about two of the echo's eight notes
        sv.play([0x90, 48, 80])     # the player comes back, and holds the key
        while "interrupted=1 " not in sv.request("status") and time.monotonic() < deadline:
            time.sleep(0.02)
        st = sv.request("status")
        check("interrupted=1 " in st and "responses=%d " % (n + 1) in st, "the answer was stopped: %s" % st[:200])
        cut = os.path.join(d, "cut.mid")
        r = sv.request("save-take %d %s" % (n + 1, cut))
        check(r.startswith("ok saved take #%d" % (n + 1)), "save-take of the stopped answer: %r" % r)
        sounded = since_last()
        taken = mido.MidiFile(cut)
        kept = track_notes(taken, taken.tracks[-1])
        check(1 <= len(sounded) < 8, "some of the echo sounded, not all: %s" % sounded)
        check([x[2] for x in kept] == [x[2] for x in sounded],
              "the stopped take holds the notes that sounded: %s, sounded %s" % (kept, sounded))
        check(all(x[1] > x[0] for x in kept), "every note of the stopped take ends: %s" % kept)
        check(re.search(r"#%d at [0-9.]+ s, [0-9.]+ s, %d notes" % (n + 1, len(sounded)), sv.request("takes")),
              "takes counts what sounded: %r" % sv.request("takes"))
        sv.play([0x80, 48, 0])
        wait_listening(n + 2)       # the player's note is answered in turn
        since_last()

        # a reload keeps them
        before = sv.request("takes")
        check(sv.request("reload").startswith("ok"), "reload")
        time.sleep(0.3)
        check(sv.request("takes") == before, "the takes survive a reload")
        rc, _ = sv.stop()
        check(rc == 0, "clean exit")
    finally:
        sv.cleanup()
        shutil.rmtree(d, ignore_errors=True)
    return done()


if __name__ == "__main__":
    sys.exit(main())

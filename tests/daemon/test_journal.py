#!/usr/bin/python3
"""test_journal.py: the session journal is a three-track MIDI file, and survives kill -9.

20 times in a row a service (the echo engine) hears phrases cut from a real
performance (ASAP's, else the bundled motif), played in real time over its
FIFO input, and is killed with SIGKILL at a random moment.  Each time the
newest journal file opens in `continuo inspect` and in mido as three
tracks (tempo, player, continuo); `continuo journal export` (the reader)
gives, in its player track, every phrase that ended a second before the
kill, note for note; and once the service starts again on the folder, so
does the session file itself, still three tracks, with nothing left
beside it.  A new file after journal_idle_minutes of silence: the one
before is whole at once, three tracks.  Then the journal folder cannot
be written when the session starts (a 256 kB tmpfs filled up, as root;
else a read-only folder): the service answers all the same, says so once
(log and status), and once there is room again writes what it held,
nothing of the meantime missing; after the stop every file has three
tracks; `continuo journal` lists the sessions, and `continuo journal
export` writes the last one as a two-track file with no note left
sounding.
"""
import os
import random
from collections import Counter
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import mido

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servetest import CONTINUO, Service, check, done  # noqa: E402

SRC = os.environ.get("CONTINUO_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
ASAP = os.environ.get("ASAP_DIR", "")
RUNS = 20


def performance_notes():
    """(onset, pitch, velocity, length) of the first 60 s of a real performance."""
    path = None
    split = os.path.join(ASAP, "split.tsv") if ASAP else ""
    if split and os.path.exists(split):
        for line in open(split):
            f = line.rstrip("\n").split("\t")
            if f[0] == "valid":
                path = os.path.join(ASAP, f[3])
                break
    path = path or os.path.join(SRC, "models", "motif.mid")
    mid, t, on, out = mido.MidiFile(path), 0.0, {}, []
    for msg in mid:
        t += msg.time
        if msg.type == "note_on" and msg.velocity > 0:
            on[msg.note] = (t, msg.velocity)
        elif msg.type in ("note_off", "note_on") and msg.note in on:
            t0, v = on.pop(msg.note)
            out.append((t0, msg.note, v, max(0.02, t - t0)))
    out.sort()
    return [n for n in out if n[0] < 60], path


def phrases(notes, length=3.0):
    """Cuts NOTES into phrases of about LENGTH seconds, each starting at 0."""
    out, cur, start = [], [], None
    for n in notes:
        if start is None:
            start = n[0]
        if n[0] - start > length and cur:
            out.append(cur)
            cur, start = [], n[0]
        cur.append((n[0] - start, n[1], n[2], min(n[3], length)))
    if cur:
        out.append(cur)
    return out


def play_phrase(sv, ph):
    """Plays PH in real time; returns the monotonic time of its last note-off."""
    events = sorted([(t, 1, p, v) for t, p, v, _ in ph] + [(t + d, 0, p, 0) for t, p, _, d in ph])
    t0 = time.monotonic()
    for t, kind, p, v in events:
        wait = t0 + t - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        sv.play([0x90, p, v] if kind else [0x80, p, 0])
    return time.monotonic()


def journal_dir(sv):
    return os.path.join(sv.dir, "state", "continuo", "journal")


def newest(folder):
    files = sorted(f for f in os.listdir(folder) if f.startswith("session-") and f.endswith(".mid"))
    return os.path.join(folder, files[-1]) if files else None


def player_pitches(path):
    f = mido.MidiFile(path)
    out = []
    for tr in f.tracks:
        if any(m.type == "track_name" and m.name == "player" for m in tr):
            t = 0
            for m in tr:
                t += m.time
                if m.type == "note_on" and m.velocity > 0:
                    out.append((t, m.note))
    return [p for _, p in sorted(out)]


def track_names(path):
    """The names of PATH's tracks, as mido reads them (None: a track without one)."""
    f = mido.MidiFile(path)
    return [next((m.name for m in tr if m.type == "track_name"), None) for tr in f.tracks]


def check_three_tracks(path, what):
    """PATH opens in `continuo inspect` and in mido as the tempo track, player and continuo."""
    r = subprocess.run([CONTINUO, "inspect", path], capture_output=True, text=True)
    check(r.returncode == 0 and "3 tracks" in r.stdout and 'track 1 "player"' in r.stdout
          and 'track 2 "continuo"' in r.stdout, f"{what}: continuo inspect shows three tracks "
          f"({(r.stdout + r.stderr).strip()[-300:]})")
    try:
        names = track_names(path)
    except Exception as e:  # noqa: BLE001
        check(False, f"{what}: mido opens it ({e})")
        return
    check(names == [None, "player", "continuo"], f"{what}: mido reads the tempo track, player, continuo ({names})")


def hidden(folder):
    return sorted(f for f in os.listdir(folder) if f.startswith("."))


def exported_pitches(folder, out):
    """The player's pitches of the newest session as `continuo journal export` gives them."""
    r = subprocess.run([CONTINUO, "journal", "export", "--dir", folder, "-o", out], capture_output=True, text=True)
    return player_pitches(out) if r.returncode == 0 else None


def restart(folder):
    """A service started on FOLDER and stopped: its journal writer folds what a crash left."""
    sv = Service("journal_dir=" + folder)
    try:
        sv.stop()
        return sv.read_log()
    finally:
        sv.cleanup()


def kill_run(k, all_phrases, rng):
    sv = Service("phrase_silence_ms=300", "response_seconds=1", "seed=%d" % k)
    try:
        deadline = time.monotonic() + rng.uniform(2.0, 9.0)
        ended = []          # (monotonic end, pitches) of each phrase played
        i = rng.randrange(len(all_phrases))
        while time.monotonic() < deadline:
            ph = all_phrases[i % len(all_phrases)]
            i += 1
            try:
                end = play_phrase(sv, ph)
            except OSError as e:
                check(False, f"run {k}: the service hears the phrases ({e}, exit {sv.proc.poll()}):\n"
                      f"{sv.read_log()[-3000:]}")
                return
            ended.append((end, [p for _, p, _, _ in sorted(ph)]))
            time.sleep(min(0.5, max(0, deadline - time.monotonic())))
        kill_at = time.monotonic()
        sv.proc.send_signal(signal.SIGKILL)
        sv.proc.wait()
        folder = journal_dir(sv)
        path = newest(folder)
        check(path is not None, f"run {k}: a journal file is there after kill -9")
        if not path:
            return
        check_three_tracks(path, f"run {k}, after kill -9")
        want = [p for end, ps in ended if end <= kill_at - 1.0 for p in ps]
        # Note for note, as multisets: notes struck within one tick of the
        # journal (1 ms) are stored by pitch, not in the order they came.
        got = exported_pitches(folder, os.path.join(sv.dir, "export.mid"))
        check(got is not None and Counter(got[:len(want)]) == Counter(want),
              f"run {k}: `continuo journal export` has every phrase that ended a second before the kill "
              f"({len(want)} notes wanted, {len(got or [])} there)")
        log = restart(folder)
        check_three_tracks(path, f"run {k}, after the next start")
        got = player_pitches(path)
        check(Counter(got[:len(want)]) == Counter(want) and newest(folder) == path,
              f"run {k}: after the next start the session file has every phrase that ended a second before the "
              f"kill ({len(want)} notes wanted, {len(got)} there)")
        check(not hidden(folder), f"run {k}: nothing is left beside the session files ({hidden(folder)}):\n{log}")
    finally:
        sv.cleanup()


def rotation(all_phrases):
    """A new file after journal_idle_minutes (0.1: 6 s) of silence: the one before
    is whole at once; the one a kill -9 cut is whole after the next start."""
    sv = Service("phrase_silence_ms=300", "response_seconds=1", "journal_idle_minutes=0.1")
    try:
        folder = journal_dir(sv)
        play_phrase(sv, all_phrases[0])
        time.sleep(9.5)             # the answer's end included: over 6 s of silence
        play_phrase(sv, all_phrases[1])
        time.sleep(2.5)
        files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.startswith("session-"))
        check(len(files) == 2, f"rotation: a new file after 6 s of silence ({files})")
        if len(files) != 2:
            return
        check_three_tracks(files[0], "rotation, the file before")
        check(player_pitches(files[0]) == [p for _, p, _, _ in sorted(all_phrases[0])],
              "rotation: the file before has the first phrase, whole")
        f = mido.MidiFile(files[0])
        check(any(m.type == "note_on" for m in f.tracks[2]), "rotation: and the answer to it in its continuo track")
        check(len(hidden(folder)) == 1, f"rotation: only the new file's log is beside them ({hidden(folder)})")
        sv.proc.send_signal(signal.SIGKILL)
        sv.proc.wait()
        restart(folder)
        check_three_tracks(files[1], "rotation, the new file after kill -9 and the next start")
        check(player_pitches(files[1]) == [p for _, p, _, _ in sorted(all_phrases[1])],
              "rotation: the new file has the second phrase after kill -9 and the next start")
        check(not hidden(folder), f"rotation: nothing left beside the files ({hidden(folder)})")
    finally:
        sv.cleanup()


def main() -> int:
    notes, source = performance_notes()
    all_phrases = phrases(notes)
    print(f"{len(all_phrases)} phrases from {source}")
    rng = random.Random(17)
    for k in range(RUNS):
        kill_run(k, all_phrases, rng)
    rotation(all_phrases)

    # a folder that cannot be written for a while (a full tmpfs as root, else
    # a folder made read-only), then listing and exporting
    base = tempfile.mkdtemp(prefix="continuo-journal-")
    folder = os.path.join(base, "journal")
    os.mkdir(folder)
    as_root = os.geteuid() == 0
    mounted = as_root and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", folder]).returncode == 0
    sv = Service("phrase_silence_ms=300", "response_seconds=1", "journal_dir=" + folder, verbose=True)
    try:
        filler = os.path.join(folder, "filler")
        if mounted:
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)    # the file system is full
            try:
                while os.write(fd, b"\0" * 4096) > 0:
                    pass
            except OSError:
                pass
            os.close(fd)
        else:
            os.chmod(folder, 0o500)
        play_phrase(sv, all_phrases[0])     # the session's first file cannot be made
        time.sleep(1.0)
        play_phrase(sv, all_phrases[1])
        time.sleep(2.5)
        st = sv.request("status")
        check("journal=" in st and "failing" in st,
              f"status says the journal cannot write ({'full tmpfs' if mounted else 'read-only folder'}): {st[-200:]}")
        answered = int([w for w in st.split() if w.startswith("responses=")][0].split("=")[1])
        check(answered >= 2, "the service answers while the journal cannot write")
        if mounted:
            os.remove(filler)
        else:
            os.chmod(folder, 0o700)
        time.sleep(6.5)             # the writer tries again every 5 s
        st = sv.request("status")
        check("failing" not in st.split("journal=")[-1], f"the journal writes again ({st[-200:]})")
        rc, _ = sv.stop()
        log = sv.read_log()
        check(log.count("journal: cannot write") == 1, "the log says it once")
        files = sorted(f for f in os.listdir(folder) if f.startswith("session-"))
        got = [p for f in files for p in player_pitches(os.path.join(folder, f))]
        want = [p for ph in all_phrases[:2] for _, p, _, _ in sorted(ph)]
        check(got == want, f"nothing played while it could not write is missing ({len(got)} of {len(want)})")
        for f in files:
            check_three_tracks(os.path.join(folder, f), f"{f} after a clean stop")
        check(not hidden(folder), f"after a clean stop no log is left ({hidden(folder)})")
        r = subprocess.run([CONTINUO, "journal", "--dir", folder], capture_output=True, text=True)
        check(r.returncode == 0 and "session-" in r.stdout and "player" in r.stdout, f"journal lists ({r.stdout})")
        out = os.path.join(base, "export.mid")
        r = subprocess.run([CONTINUO, "journal", "export", "--dir", folder, "-o", out], capture_output=True, text=True)
        check(r.returncode == 0 and os.path.exists(out), f"journal export ({r.stdout}{r.stderr})")
        if os.path.exists(out):
            f = mido.MidiFile(out)
            names = [m.name for tr in f.tracks for m in tr if m.type == "track_name"]
            check(names == ["player", "continuo"], f"the export has two tracks ({names})")
            sounding = set()
            for tr in f.tracks:
                for m in tr:
                    if m.type == "note_on" and m.velocity > 0:
                        sounding.add((m.channel, m.note))
                    elif m.type in ("note_off", "note_on"):
                        sounding.discard((m.channel, m.note))
            check(not sounding, f"no note is left sounding in the export ({sounding})")
    finally:
        sv.cleanup()
        if mounted:
            subprocess.run(["umount", folder])
        shutil.rmtree(base, ignore_errors=True)
    return done()


if __name__ == "__main__":
    sys.exit(main())

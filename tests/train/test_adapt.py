"""test_adapt.py: `continuo adapt` on a few MIDI files with a tiny random model (issue 40).

What a user of `continuo adapt` sees, in a state folder of the test's own:
  * without PyTorch it says to install python3-torch, and nothing changes;
  * a journal with under a minute of the player's playing (and more than a
    minute of the model's, which does not count), in two sessions, one with
    a track per part and one with a track per stretch of a part's playing
    (the journal's layout today), changes nothing and says how much there
    was;
  * a run that does not improve (--max-steps 0 --no-memory: the start model itself) is
    not kept, and says why; nor is one that drifts on the general reference
    (music unlike the player's) by more than 1% (the drift guards off);
  * a run that improves prints its progress, holds back the newest tenth
    of the playing, and is kept in the state folder with its card, no work
    files left; `model = auto` then plays it (`continuo doctor` names it),
    `--list` marks it, `--use 0` / `--reset` go back to the shipped model,
    `--use 1` to it again, and `--use 5` is refused;
  * adapt --if-new does nothing until the journal holds a session newer
    than the last verdict on it (adapted/last-run).
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import mido

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth   # noqa: E402

CONTINUO = os.environ.get("CONTINUO")
SRC = os.environ.get("CONTINUO_SRC", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FAILS = []


def check(cond: bool, what: str) -> None:
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILS.append(what)


def arpeggio_notes(seconds: float, seed: int, t0: float = 0.0) -> list:
    """(onset, pitch, velocity, length) of arpeggios, one note every 0.15 s, for SECONDS."""
    notes, t, k = [], t0, seed
    root = 48 + seed % 12
    while t < t0 + seconds:
        for iv in (0, 4, 7, 12):
            notes.append((t, root + iv, 70 + (k % 3) * 8, 0.12))
            t += 0.15
        k += 1
        if k % 5 == 0:
            root = 48 + (root - 48 + 5) % 24
    return notes


def write_midi(path: str, parts) -> None:
    """A format 1 file, one track per PARTS entry ((name, notes) pairs, or a dict), one tick a millisecond."""
    mf = mido.MidiFile(type=1, ticks_per_beat=500)
    tempo = mido.MidiTrack()
    tempo.append(mido.MetaMessage("set_tempo", tempo=500000, time=0))
    mf.tracks.append(tempo)
    for ch, (name, notes) in enumerate(parts.items() if isinstance(parts, dict) else parts):
        ch = 1 if name == "continuo" else 0
        ev = []
        for on, p, v, ln in notes:
            ev.append((round(on * 1000), 1, mido.Message("note_on", channel=ch, note=p, velocity=v)))
            ev.append((round((on + ln) * 1000), 0, mido.Message("note_off", channel=ch, note=p, velocity=0)))
        ev.sort(key=lambda e: (e[0], e[1]))
        tr = mido.MidiTrack()
        tr.append(mido.MetaMessage("track_name", name=name, time=0))
        last = 0
        for tick, _, msg in ev:
            tr.append(msg.copy(time=tick - last))
            last = tick
        mf.tracks.append(tr)
    mf.save(path)


def arpeggio_reference(folder: str, continuo: str) -> str:
    """FOLDER/reference.tok: other arpeggios like the player's, encoded by
    CONTINUO (a general reference that adapting on arpeggios does not drift
    from); the MIDI files it is made of are removed."""
    mids = [os.path.join(folder, f"ref{i}.mid") for i in range(2)]
    for i, f in enumerate(mids):
        write_midi(f, {"piano": arpeggio_notes(20, 11 + i)})
    ref = os.path.join(folder, "reference.tok")
    subprocess.run([continuo, "encode", *mids, "-o", ref], check=True, capture_output=True)
    for f in mids:
        os.remove(f)
    return ref


def adapt(env: dict, *args, timeout: int = 120) -> subprocess.CompletedProcess:
    r = subprocess.run([CONTINUO, "adapt", *args], env=env, capture_output=True, text=True, timeout=timeout)
    print(f"$ continuo adapt {' '.join(args)}  (exit {r.returncode})\n{r.stdout}{r.stderr}")
    return r


def kept(adapted: str) -> list:
    return sorted(glob.glob(os.path.join(adapted, "adapted-*.gguf")))


def doctor_model(env: dict) -> str:
    r = subprocess.run([CONTINUO, "doctor"], env=env, capture_output=True, text=True, timeout=120, cwd=SRC)
    line = next((ln for ln in r.stdout.splitlines() if re.match(r"\S+\s+model\s", ln)), "")
    print("doctor:", line)
    return line


def no_torch(env: dict, tmp: str, files: list, model: str, adapted: str) -> None:
    fake = os.path.join(tmp, "notorch", "torch")
    os.makedirs(fake)
    with open(os.path.join(fake, "__init__.py"), "w") as fh:
        fh.write("raise ImportError('No module named torch')\n")
    r = adapt(dict(env, PYTHONPATH=os.path.dirname(fake)), *files, "--model", model, "--minutes", "0.5")
    check(r.returncode == 1 and "python3-torch" in r.stderr,
          "without PyTorch: adapt fails and says to install python3-torch")
    check(not kept(adapted), "without PyTorch: no adapted model")


def short_journal(env: dict, state: str, model: str, adapted: str) -> None:
    journal = os.path.join(state, "continuo", "journal")
    os.makedirs(journal)
    # two sessions: one in the two-track layout, one as the journal writes it today (a track per
    # stretch of one part's playing): 20 s of the player's in each, 90 s of the model's in all
    write_midi(os.path.join(journal, "session-20261201-200000.mid"),
               {"player": arpeggio_notes(20, 1), "continuo": arpeggio_notes(45, 2, 20)})
    player, model_part = arpeggio_notes(20, 3), arpeggio_notes(45, 4, 20)
    fragments = [("player", player[k::4]) for k in range(4)] + [("continuo", model_part[k::3]) for k in range(3)]
    write_midi(os.path.join(journal, "session-20261202-200000.mid"), fragments)
    r = adapt(env, "--model", model, "--minutes", "0.5")
    m = re.search(r"not adapted: (\d+) s of playing in 2 sessions", r.stdout)
    check(r.returncode == 0 and m is not None and "nothing changed" in r.stdout,
          "a journal with under a minute of playing: not adapted, nothing changed, and why")
    check(m is not None and 39 <= int(m.group(1)) <= 43,
          "only the player's tracks count, in both journal layouts (40 s; the model's 90 s do not)")
    check(not kept(adapted), "too little playing: no adapted model")
    # --if-new (continuo-adapt.timer): the verdict is recorded; nothing newer in the journal, nothing to do
    with open(os.path.join(adapted, "last-run")) as fh:
        check("verdict: too little playing" in fh.read(), "the journal's verdict is recorded in adapted/last-run")
    r = adapt(env, "--if-new", "--model", model, "--minutes", "0.5")
    check(r.returncode == 0 and "nothing new since the last adapt" in r.stdout and "not adapted" not in r.stdout,
          "--if-new: nothing new in the journal, nothing done")
    newer = os.path.join(journal, "session-20261202-200000.mid")
    os.utime(newer, (time.time() + 5, time.time() + 5))
    r = adapt(env, "--if-new", "--model", model, "--minutes", "0.5")
    check(r.returncode == 0 and "not adapted" in r.stdout, "--if-new: a newer session in the journal, adapt runs")


def not_better(env: dict, files: list, model: str, ref: str, adapted: str) -> None:
    r = adapt(env, *files, "--model", model, "--reference", ref, "--minutes", "0.5", "--max-steps", "0",
              "--no-memory")
    check(r.returncode == 0 and re.search(r"not kept: the held-back tenth .* not lower", r.stdout) is not None
          and "nothing changed" in r.stdout, "a result that does not improve is not kept, and adapt says why")
    check("no training step fitted" not in r.stdout,
          "--max-steps 0 asked for no step: adapt does not blame the budget (it does when --minutes left none)")
    check(not kept(adapted), "not improved: no adapted model")
    check(not glob.glob(os.path.join(adapted, ".work-*")), "not improved: no work files left")


def drifting(env: dict, files: list, model: str, other: str, adapted: str) -> None:
    # the guards off (no pull toward the start model's odds, no replay), so that it drifts for sure
    t = time.monotonic()
    r = adapt(env, *files, "--model", model, "--reference", other, "--minutes", "0.25", "--lr", "1e-3",
              "--kl-weight", "0", "--replay-weight", "0")
    took = time.monotonic() - t
    check(took <= 0.25 * 60 + 4, f"the whole run keeps to --minutes 0.25 (15 s; took {took:.1f} s)")
    check(r.returncode == 0 and re.search(r"not kept: the general reference scores .* drifted", r.stdout)
          is not None, "a result that drifts more than 1% on the general reference is not kept, and why")
    check(not kept(adapted), "drifted: no adapted model")


def passing(env: dict, files: list, model: str, ref: str, adapted: str) -> str:
    t = time.monotonic()
    r = adapt(env, *files, "--model", model, "--reference", ref, "--minutes", "0.3", "--lr", "1e-3")
    took = time.monotonic() - t
    check(took <= 0.3 * 60 + 4, f"the whole run keeps to --minutes 0.3 (18 s; took {took:.1f} s)")
    check("adapt [" in r.stderr and re.search(r"\d+%.*held-back NLL", r.stderr) is not None,
          "the progress bar shows the share done and the held-back NLL")
    m = re.search(r"on ([\d.]+) min of playing in 4 sessions .* newest ([\d.]+) min \(\d+ events, from (\S+) on\)",
                  r.stdout)
    check(m is not None and 0.08 <= float(m.group(2)) / float(m.group(1)) <= 0.12,
          "4 sessions read; a tenth of the playing is held back")
    check(m is not None and os.path.basename(m.group(3)) == "day4.mid",
          "the held-back tenth is the newest playing (the last file given: day4.mid)")
    got = kept(adapted)
    check(r.returncode == 0 and "kept: " in r.stdout and len(got) == 1, "a result that improves is kept")
    if len(got) != 1:
        return ""
    card = got[0][:-len(".gguf")] + ".card"
    text = open(card).read() if os.path.exists(card) else ""
    for field in ("date:", "minutes:", "sessions: 4", "held-back NLL:", "reference NLL:"):
        check(field in text, f"the card says {field}")
    before, after = map(float, re.search(r"held-back NLL: ([\d.]+) -> ([\d.]+)", text).groups())
    check(after < before, f"the card's held-back NLL fell ({before:.4f} -> {after:.4f})")
    check(not glob.glob(os.path.join(adapted, ".work-*")) and not glob.glob(os.path.join(adapted, "*.part")),
          "no work or half-written files left beside it")
    ev = subprocess.run([CONTINUO, "eval", "--model", got[0], ref], capture_output=True, text=True, timeout=60)
    check(ev.returncode == 0 and ev.stdout.startswith(ref + ": nll"), "the kept model loads in the engine")
    notes = re.search(r"memory of the player: (\d+) note-ons", text)
    check(notes is not None and int(notes.group(1)) > 100
          and f"a memory of the player: {notes.group(1)} note-ons" in ev.stderr,
          "the kept model holds a memory of the notes played (the card and the engine say how many)")
    return got[0]


def choices(env: dict, path: str) -> None:
    env = {k: v for k, v in env.items() if k != "CONTINUO_MODEL"}
    check(path in doctor_model(env), "model = auto plays the kept adapted model (doctor names it)")
    r = adapt(env, "--list")
    check(re.search(r"^\* 1\s+" + re.escape(os.path.basename(path)), r.stdout, re.M) is not None,
          "--list marks the adapted model as the one in use")
    adapt(env, "--use", "0")
    check(re.search(r"^\* 0\s+the shipped model", adapt(env, "--list").stdout, re.M) is not None
          and "continuo-default.gguf" in doctor_model(env), "--use 0: model = auto plays the shipped model")
    adapt(env, "--use", "1")
    check(path in doctor_model(env), "--use 1: the adapted model again")
    adapt(env, "--reset")
    check("continuo-default.gguf" in doctor_model(env), "--reset: the shipped model")
    r = adapt(env, "--use", "5")
    check(r.returncode == 1 and "there is 1 adapted model" in r.stderr, "--use 5 with one model is refused")


def main() -> int:
    tmp = tempfile.mkdtemp(prefix="continuo-adapt-")
    state, conf = os.path.join(tmp, "state"), os.path.join(tmp, "config")
    adapted = os.path.join(state, "continuo", "adapted")
    env = dict(os.environ, XDG_STATE_HOME=state, XDG_CONFIG_HOME=conf, STATE_DIRECTORY="", CONTINUO_SRC=SRC)
    env.pop("CONTINUO_MODEL", None)
    model = os.path.join(tmp, "tiny.gguf")
    subprocess.run([sys.executable, os.path.join(SRC, "train", "export.py"), "--random", model, "--layers", "2",
                    "--d-model", "64", "--heads", "4", "--d-ff", "128", "--max-rel", "32", "--context", "64",
                    "--dtype", "f32"], check=True, capture_output=True)
    files = []
    for i in range(4):
        files.append(os.path.join(tmp, f"day{i + 1}.mid"))
        write_midi(files[-1], {"piano": arpeggio_notes(30, 3 + i)})
    # The reference: other arpeggios like the player's (adapting on them is no drift) ...
    ref = arpeggio_reference(tmp, CONTINUO)
    # ... and music of another kind, which a model fitted to the player forgets
    other = synth.write(os.path.join(tmp, "other.tok"), 4, 400, 7)
    no_torch(env, tmp, files, model, adapted)
    short_journal(env, state, model, adapted)
    not_better(env, files, model, ref, adapted)
    drifting(env, files, model, other, adapted)
    path = passing(env, files, model, ref, adapted)
    if path:
        choices(env, path)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

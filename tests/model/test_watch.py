#!/usr/bin/python3
"""test_watch.py: a `watch` subscriber sees what `serve` hears and plays, with the shipped model.

A viewer (docs/WATCH.md) subscribes on the control socket and the player
plays a phrase over the FIFO: the viewer gets a hello with the settings,
the player's notes with ids and times as they are played, the phrase end,
the model's answer with times after it (each note it strikes ends with a
note-off frame, those it leaves sounding at its end too), and for each of the model's
note-ons an attention frame: one list per head of the model, pointing
only at notes played before it (the player's, or the model's own earlier
ones), with weights that are probabilities.  That holds for the
one-sequence answer (candidates 1) and for the best of candidates decoded
side by side (candidates 4).  `ctl set density` sends a set frame.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from servetest import Service, check, done, read_smf  # noqa: E402
from watchclient import Watcher  # noqa: E402

SRC = os.environ["CONTINUO_SRC"]
MODEL = os.path.join(SRC, "models", "continuo-default.gguf")
sys.path.insert(0, os.path.join(SRC, "train"))
from export import read_gguf  # noqa: E402

HEADS = int(read_gguf(MODEL)[0]["continuo.n_heads"])   # the shipped model's
MOTIF = [(60, 80, 0.12), (64, 76, 0.12), (67, 84, 0.12), (72, 90, 0.24), (67, 70, 0.12), (64, 72, 0.24)]
SILENCE_MS = 500


def number(note_id):
    return int(note_id[1:])


def settled(w, since, timeout=10.0):
    """The frames after index SINCE once every model note-on among them has had
    its attention frame, which comes shortly after the note's (docs/WATCH.md):
    a slow machine may still be sending the answer's last ones.  At most
    TIMEOUT s; then as they are (the check names what is missing)."""
    deadline = time.monotonic() + timeout
    while True:
        frames = [f for _, f in w.frames[since:]]
        ons = {f["id"] for f in frames if f["type"] == "note" and f["who"] == "model" and f["on"]}
        if ons <= {f["id"] for f in frames if f["type"] == "attention"} or time.monotonic() > deadline:
            return frames
        time.sleep(0.1)


def check_answer(w, since, what, pitches):
    """The answer to PITCHES after frame index SINCE: its notes, their attention."""
    frames = settled(w, since)
    player = [f for f in frames if f["type"] == "note" and f["who"] == "player"]
    ons = [f for f in player if f["on"]]
    check(sorted(f["pitch"] for f in ons) == sorted(pitches),
          f"{what}: the player's note-ons ({[f['pitch'] for f in ons]})")
    check(len({f["id"] for f in ons}) == len(pitches) and all(re.fullmatch(r"p\d+", f["id"]) for f in ons),
          f"{what}: each player's note-on has its own id ({[f.get('id') for f in ons]})")
    check(all(a["t"] <= b["t"] for a, b in zip(player, player[1:])), f"{what}: the player's notes in time order")
    ends = [f for f in frames if f["type"] == "phrase_end"]
    check(len(ends) == 1 and ends[0]["t"] >= player[-1]["t"], f"{what}: one phrase end, after the last note")
    how = {k: v for k, v in ends[0].items() if k in ("by", "after_ms", "margin")} if ends else {}
    if what == "ctl play":
        said = how == {"by": "play"}
    else:
        said = how.get("by") == "silence" and SILENCE_MS <= how.get("after_ms", 0) < SILENCE_MS + 100
    check(said and "margin" not in how, f"{what}: the phrase end says how it ended (the silence rule after "
          f"{SILENCE_MS} ms, or the file's end; no verdict's margin with phrase_end = silence): {how}")
    model = [f for f in frames if f["type"] == "note" and f["who"] == "model" and f["on"]]
    # an answer of 2 s may be a chord and a held note: what matters is that it comes, with its attention
    check(len(model) >= 1, f"{what}: the model's answer comes ({len(model)} note-ons)")
    check(ends and all(f["t"] >= ends[0]["t"] for f in model), f"{what}: the answer's notes come after the phrase end")
    check(all(re.fullmatch(r"m\d+", f["id"]) for f in model), f"{what}: the model's note-ons have ids")
    last = {}
    for f in frames:
        if f["type"] == "note" and f["who"] == "model":
            last[f["pitch"]] = f
    open_ = sorted(p for p, f in last.items() if f["on"])
    check(not open_, f"{what}: each pitch the model struck ends with a note-off frame, those sounding at "
          f"the answer's end included (left open: {open_})")
    att = {f["id"]: f for f in frames if f["type"] == "attention"}
    check(set(att) == {f["id"] for f in model}, f"{what}: one attention frame for each model note-on "
          f"({len(att)} for {len(model)})")
    known = {f["id"]: f["t"] for f in w.of("note") if f["on"]}
    bad, to_player, heads_ok = [], 0, True
    for f in model:
        a = att.get(f["id"])
        if not a:
            continue
        heads_ok &= len(a["heads"]) == HEADS and all(1 <= len(h) <= 3 for h in a["heads"])
        for head in a["heads"]:
            for src, weight in head:
                earlier = src in known and (src[0] == "p" or number(src) < number(f["id"]))
                earlier &= known.get(src, 1e9) <= f["t"] and 0 < weight <= 1
                if not earlier:
                    bad.append((f["id"], src, weight))
                to_player += src[0] == "p"
    check(heads_ok, f"{what}: {HEADS} heads (the model's), up to 3 sources each")
    check(not bad, f"{what}: attention points only at earlier notes, weights in (0, 1] ({bad[:5]})")
    check(to_player > 0, f"{what}: some heads attend to the player's notes")
    return len(model)


def play_phrase(sv, w):
    since = len(w.frames)
    t0 = time.monotonic()
    sv.play_motif(MOTIF, gap=0.02)
    time.sleep(SILENCE_MS / 1000 + 2.5)
    heard = [t for t, f in w.frames[since:] if f["type"] == "note" and f["who"] == "player"]
    # the first note's frame comes as it is played, not at the phrase end
    check(heard and heard[0] - t0 < 0.2, f"the player's first note is sent at once ({heard[:1]}, {t0})")
    return since


def main() -> int:
    sv = Service("model=" + MODEL, "candidates=1", "phrase_silence_ms=%d" % SILENCE_MS, "response_seconds=2",
                 "seed=5", verbose=True)
    try:
        w = Watcher(sv.sock)
        time.sleep(0.3)
        check(w.reply and w.reply.startswith("ok watching"), f"watch is answered ({w.reply})")
        hello = w.of("hello")
        check(len(hello) == 1 and hello[0]["settings"].get("candidates") == "1"
              and hello[0]["attention"]["top"] == 3, f"a hello with the settings ({hello})")
        pitches = [p for p, _, _ in MOTIF]
        n1 = check_answer(w, play_phrase(sv, w), "candidates 1", pitches)
        # the batched path: candidates decoded side by side in the silence
        check(sv.request("set candidates 4").startswith("ok"), "ctl set candidates 4")
        since = play_phrase(sv, w)
        n4 = check_answer(w, since, "candidates 4", pitches)
        check(len(re.findall(r"candidates: \d+ of 4 played", sv.read_log())) == 1, "that answer was a candidate's")
        # a file heard as the phrase (ctl play): shown as if played just before, then its answer
        since = len(w.frames)
        rc, out, _ = sv.ctl("play", os.path.join(SRC, "models", "motif.mid"))
        time.sleep(3.0)
        check(rc == 0, f"ctl play motif.mid ({out})")
        tracks, _ = read_smf(os.path.join(SRC, "models", "motif.mid"))
        played = [d1 for events in tracks.values() for _, st, d1, d2 in events if st & 0xF0 == 0x90 and d2 > 0]
        check_answer(w, since, "ctl play", played)
        # a setting changed elsewhere: a set frame
        rc, out, _ = sv.ctl("set", "density", "1.5")
        time.sleep(0.2)
        sets = w.of("set", key="density")
        check(rc == 0 and sets and sets[-1]["value"] == "1.5", f"ctl set density 1.5 sends a set frame ({sets})")
        check(not w.of("dropped"), "a viewer that reads loses nothing")
        st = sv.request("status")
        check("responses=3" in st, f"the three phrases answered ({st[:200]})")
        print(f"answers of {n1} and {n4} note-ons, {len(w.frames)} frames")
        w.close()
        rc, _ = sv.stop()
        check(rc == 0, f"serve exits 0 ({rc})")
    finally:
        sv.cleanup()
    done()


if __name__ == "__main__":
    sys.exit(main())

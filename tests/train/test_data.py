"""test_data.py: training data: transposition on events, time-stretch
re-encoding with `continuo encode` (cached), deterministic sharded crops."""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "train"))
import data   # noqa: E402
import tokfile   # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def test_transpose():
    lay = data.layout("mt310")
    on = lambda p: lay.note_on_base + p - lay.min_pitch     # noqa: E731
    off = lambda p: lay.note_off_base + p - lay.min_pitch   # noqa: E731
    ts = lay.time_shift_base + 9
    vel = lay.velocity_base + 20
    ids = np.array([vel, on(60), ts, off(60), on(64), ts, off(64), 1], dtype=np.uint16)
    up = data.transpose(ids, 3, lay)
    check(up is not None and list(up) == [vel, on(63), ts, off(63), on(67), ts, off(67), 1],
          "transpose +3 shifts NOTE_ON/NOTE_OFF only")
    check(list(data.transpose(up, -3, lay)) == list(ids), "transpose -3 undoes +3")
    check(up.dtype == ids.dtype, "transpose keeps the dtype")
    top = np.array([on(107), ts, off(107)], dtype=np.uint16)
    check(data.transpose(top, 1, lay) is not None, "pitch 108 is in range")
    check(data.transpose(top, 2, lay) is None, "pitch 109 leaves mt310: dropped")
    low = np.array([off(22)], dtype=np.uint16)
    check(data.transpose(low, -2, lay) is None, "NOTE_OFF(20) leaves mt310: dropped")
    p = data.layout("prnn388")
    check(list(data.transpose(np.array([p.note_on_base + 0, p.note_off_base + 127]), 0, p))
          == [0, 255], "prnn388 layout: ids of pitch 0 on and 127 off")
    check(data.transpose(np.array([p.note_on_base + 126]), 1, p)[0] == 127, "prnn388 127 in range")
    check(data.transpose(np.array([p.note_on_base + 127]), 1, p) is None, "prnn388 128 out")


def test_crops():
    lay = data.layout("mt310")
    rng = np.random.default_rng(0)
    # Random events with pitches 40..90 (so every transposition by -3..3 fits).
    def events(n):
        kind = rng.integers(0, 4, n)
        pitch = rng.integers(40, 91, n) - lay.min_pitch
        return np.where(kind == 0, lay.note_on_base + pitch,
                        np.where(kind == 1, lay.note_off_base + pitch,
                                 np.where(kind == 2, lay.time_shift_base + pitch,
                                          lay.velocity_base + pitch % 32))).astype(np.uint16)
    seqs = [events(n) for n in (50, 400, 1000)]
    c = data.Corpus(seqs, lay, context=64, transpose_max=3, seed=7)
    b1 = c.batch(5, 8)
    check(b1.shape == (8, 65), "batch has context+1 tokens per row")
    check(np.array_equal(b1, c.batch(5, 8)), "a step's batch is a pure function of the step")
    check(not np.array_equal(b1, c.batch(6, 8)), "different steps draw different crops")
    r0, r1 = c.batch(5, 8, 0, 2), c.batch(5, 8, 1, 2)
    check(np.array_equal(np.concatenate([r0, r1]), np.concatenate([b1[0::2], b1[1::2]])),
          "two ranks share out the global batch")
    check(not np.array_equal(r0, r1), "ranks get different crops")
    # The short sequence is PAD-filled at the end; the others are plain crops.
    many = np.concatenate([c.batch(s, 8) for s in range(40)])
    check((many == lay.pad_id).any(), "crops of a short sequence are PAD-filled")
    # Every crop (transposed or not) is a window of a sequence shifted on NOTE ids.
    nt = 0
    for row in many[:40]:
        found = False
        for s in seqs:
            for t in range(-3, 4):
                ts = data.transpose(s, t, lay)
                if ts is None:
                    continue
                k = int((row != lay.pad_id).sum())
                cut = row[:k]
                for off in range(0, len(ts) - k + 1):
                    if np.array_equal(ts[off:off + k], cut):
                        found = True
                        nt += t != 0
                        break
                if found:
                    break
            if found:
                break
        check(found, "a crop is a window of a (transposed) sequence")
    check(nt > 0, "some crops are transposed")


def test_end_crops():
    """end_share: that share of the crops hold a performance's end, its
    last events then EOS in the crop's last quarter, PAD after; without it
    EOS never appears, and a layout without EOS refuses it."""
    lay = data.layout("mt310")
    rng = np.random.default_rng(1)
    seqs = [(lay.time_shift_base + rng.integers(0, 100, n)).astype(np.uint16) for n in (300, 2000, 5000)]
    L = 65
    plain = data.Corpus(seqs, lay, context=L - 1, transpose_max=0, seed=3)
    rows = np.concatenate([plain.batch(s, 64) for s in range(20)])
    check(not (rows == lay.eos_id).any(), "without end_share no crop holds EOS")
    ends = data.Corpus(seqs, lay, context=L - 1, transpose_max=0, seed=3, end_share=0.25)
    rows = np.concatenate([ends.batch(s, 64) for s in range(20)])
    has = (rows == lay.eos_id).any(axis=1)
    check(0.2 < has.mean() < 0.3, f"a quarter of the crops hold an end ({has.mean():.3f})")
    ok = True
    for row in rows[has]:
        at = int(np.flatnonzero(row == lay.eos_id)[0])
        ok &= at >= L - 1 - L // 4 and (row[at + 1:] == lay.pad_id).all()
        ok &= any(np.array_equal(row[max(at - 40, 0):at], s[len(s) - min(at, 40):]) for s in seqs)
    check(ok, "EOS in the crop's last quarter, after the sequence's own last events, PAD after it")
    try:
        data.Corpus(seqs, data.layout("prnn388"), context=L - 1, end_share=0.1)
        check(False, "prnn388 (no EOS) refuses end_share")
    except ValueError as e:
        check("no EOS" in str(e), f"prnn388 (no EOS) refuses end_share: {e}")


def write_midi(path, pitches, dt=240):
    import mido
    mid = mido.MidiFile(ticks_per_beat=480)
    tr = mido.MidiTrack()
    mid.tracks.append(tr)
    tr.append(mido.MetaMessage("set_tempo", tempo=500000, time=0))
    for p in pitches:
        tr.append(mido.Message("note_on", note=p, velocity=64, time=0))
        tr.append(mido.Message("note_off", note=p, velocity=0, time=dt))
    mid.save(path)


def test_encode(continuo):
    with tempfile.TemporaryDirectory() as tmp:
        midi = os.path.join(tmp, "midi")
        os.makedirs(os.path.join(midi, "a"))
        for i in range(6):
            write_midi(os.path.join(midi, "a", f"piece{i}.mid"), [60 + i, 64 + i, 67 + i] * 4)
        dcfg = {"folder": midi, "valid_fraction": 0.3, "stretches": [0.95, 1.0, 1.05],
                "continuo": continuo, "vocab": "mt310"}
        files = data.build_token_files(dcfg, os.path.join(tmp, "run"))
        check(len(files["train"]) == 3, "one train token file per stretch factor")
        n = {s: sum(len(x) for x in tokfile.read(p).seqs) for s, p in files["train"]}
        check(len(files["valid"]) == 1, "one valid token file")
        v = tokfile.read(files["valid"][0])
        t = tokfile.read(files["train"][1][1])
        check(len(v.seqs) >= 1 and len(t.seqs) >= 1 and len(v.seqs) + len(t.seqs) == 6,
              "the plain folder is split by file into train and valid")
        check(not set(v.sources) & set(t.sources), "no file is in both splits")
        # 0.25 s per note = 25 steps at 1.0; a stretch changes the time shifts, not the notes.
        ts = lambda p: [x for s in tokfile.read(p).seqs for x in s if x >= 178 and x < 278]  # noqa
        steps = {s: sum(int(x) - 177 for x in ts(p)) for s, p in files["train"]}
        check(steps[0.95] < steps[1.0] < steps[1.05], f"stretch scales time: {steps}")
        print("events per stretch:", n, "time steps:", steps)
        mt = {s: os.path.getmtime(p) for s, p in files["train"]}
        again = data.build_token_files(dcfg, os.path.join(tmp, "run"))
        check(all(os.path.getmtime(p) == mt[s] for s, p in again["train"]),
              "token files are cached, not encoded again")

        # Several data folders: the plain one above, and one with a split.tsv
        # whose rows are all train (as maestro-extra): both add training data,
        # only the first has validation data.
        extra = os.path.join(tmp, "extra")
        os.makedirs(extra)
        rows = ["split\tcomposer\ttitle\tfile"]
        for i in range(3):
            write_midi(os.path.join(extra, f"x{i}.mid"), [50 + i, 55 + i] * 5)
            rows.append(f"train\t-\tx{i}\tx{i}.mid")
        with open(os.path.join(extra, "split.tsv"), "w") as fh:
            fh.write("\n".join(rows) + "\n")
        dcfg2 = {"sources": [midi, extra], "valid_fraction": 0.3, "stretches": [1.0],
                 "continuo": continuo, "vocab": "mt310"}
        files2 = data.build_token_files(dcfg2, os.path.join(tmp, "run2"), log=lambda m: None)
        check(len(files2["train"]) == 2 and len(files2["valid"]) == 1,
              f"two sources: a train file each, one valid file: {files2}")
        srcs = [set(tokfile.read(p).sources) for _, p in files2["train"]]
        check(any(all("x" in os.path.basename(f) for f in s) and len(s) == 3 for s in srcs),
              f"the second source's three files are training data: {srcs}")
        check(set(tokfile.read(files2["valid"][0]).sources) == set(v.sources),
              "validation comes from the first source only")
        try:
            data.build_token_files({"sources": [extra], "stretches": [1.0], "continuo": continuo,
                                    "vocab": "mt310"}, os.path.join(tmp, "run3"), log=lambda m: None)
            check(False, "a run with no valid split anywhere is refused")
        except ValueError as e:
            check("valid" in str(e), f"the error says what is missing: {e}")


def main() -> int:
    test_transpose()
    test_crops()
    test_end_crops()
    continuo = os.environ.get("CONTINUO")
    if continuo:
        test_encode(continuo)
    else:
        print("no CONTINUO: encode test not run")
    print("FAIL" if FAILS else "OK")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

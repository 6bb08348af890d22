"""test_memory_play.py: an adapted model's memory of its player, as a player meets it: primed with
the start of a piece the memory holds, `continuo continue` goes on with that piece's notes far more
often than the same weights without it (alone and with candidates); the memory is in the file
(`continuo inspect` says so) and a continuation of music it does not hold is left alone."""

import os
import subprocess
import sys
import tempfile

import mido
import numpy as np

SRC = os.environ["CONTINUO_SRC"]
CONTINUO = os.environ["CONTINUO"]
sys.path.insert(0, os.path.join(SRC, "train"))
import data  # noqa: E402
import export  # noqa: E402
import player_memory as pm  # noqa: E402

SHIPPED = os.path.join(SRC, "models", "continuo-default.gguf")
PRIMER_NOTES = 60
SEEDS = range(1, 7)


def write_midi(path, pitches, step=0.22):
    """PITCHES as eighth notes STEP seconds apart (120 bpm: 960 ticks a second)."""
    mid = mido.MidiFile(ticks_per_beat=480)
    tr = mido.MidiTrack()
    mid.tracks.append(tr)
    tr.append(mido.MetaMessage("set_tempo", tempo=500000))
    ev = sorted([(step * i, 1, p) for i, p in enumerate(pitches)] + [(step * i + 0.18, 0, p) for i, p in enumerate(pitches)])
    now = 0
    for t, on, p in ev:
        tick = int(round(t * 960))
        tr.append(mido.Message("note_on" if on else "note_off", note=p, velocity=72 if on else 0, time=tick - now))
        now = tick
    mid.save(path)


def a_piece(seed, n=200, scale=(0, 2, 4, 5, 7, 9, 11), tonic=48):
    """A melody of N notes: a walk over SCALE (C major), steps of up to three degrees."""
    rng = np.random.default_rng(seed)
    k = len(scale)
    deg, out = 2 * k, []
    for _ in range(n):
        deg = int(np.clip(deg + rng.choice([-3, -2, -1, 1, 2, 3]), k, 3 * k + 3))
        out.append(tonic + 12 * (deg // k) + scale[deg % k])
    return out


def continuation(model, primer, out, seed, *extra):
    r = subprocess.run([CONTINUO, "continue", primer, "-o", out, "--seconds", "5", "--seed", str(seed),
                        "--model", model, *extra], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"continuo continue --model {model} failed: {r.stderr}")
    return [m.note for m in mido.MidiFile(out).tracks[-1] if m.type == "note_on" and m.velocity > 0]


def piece_share(piece, got):
    """The share of the continuation's notes that, with the four before them, are five notes
    in a row of the piece."""
    grams = {tuple(piece[i:i + 5]) for i in range(len(piece) - 4)}
    seq = piece[:PRIMER_NOTES] + got
    return sum(tuple(seq[PRIMER_NOTES + i - 4:PRIMER_NOTES + i + 1]) in grams for i in range(len(got))) / max(len(got), 1)


def main() -> int:
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        piece = a_piece(5)
        write_midi(os.path.join(d, "piece.mid"), piece)
        write_midi(os.path.join(d, "primer.mid"), piece[:PRIMER_NOTES])
        other = a_piece(6, scale=(0, 2, 4, 7, 9), tonic=54)    # F# pentatonic: no note of the piece's
        write_midi(os.path.join(d, "other.mid"), other[:PRIMER_NOTES])
        tok = os.path.join(d, "piece.tok")
        subprocess.run([CONTINUO, "encode", os.path.join(d, "piece.mid"), "-o", tok], check=True, capture_output=True)
        kvs, tensors = export.read_gguf(SHIPPED)
        seqs, _ = data.load_seqs([tok], kvs["continuo.vocab.name"])
        memory = pm.Memory.from_ids(seqs, data.layout(kvs["continuo.vocab.name"]))
        mkv, mt = pm.file_parts(memory)
        adapted = os.path.join(d, "adapted.gguf")           # the shipped weights and the memory of the piece
        export.write_gguf(adapted, dict({k: v for k, v in kvs.items() if k != "general.alignment"}, **mkv),
                          list(tensors.items()) + mt)

        primer, out = os.path.join(d, "primer.mid"), os.path.join(d, "out.mid")
        r = subprocess.run([CONTINUO, "continue", primer, "-o", out, "--seconds", "1", "--model", adapted],
                           capture_output=True, text=True)
        ok = r.returncode == 0 and "a memory of the player: 200 note-ons" in r.stderr
        print(f"continuo continue says: {'the memory is there' if ok else 'FAILED: ' + r.stderr[-400:]}")
        failures += not ok

        shares = {}
        one = ("--candidates", "1")
        for label, model, extra in (("shipped", SHIPPED, one), ("with the memory", adapted, one),
                                    ("with the memory, candidates", adapted, ())):
            s = [piece_share(piece, continuation(model, primer, out, seed, *extra)) for seed in SEEDS]
            shares[label] = sum(s) / len(s)
            print(f"{label}: the piece's own notes go on in {shares[label]:.2f} of the continuation's notes "
                  f"(seeds {SEEDS.start}..{SEEDS.stop - 1}: {', '.join(f'{x:.2f}' for x in s)})")
        for label in ("with the memory", "with the memory, candidates"):
            # measured here: 0.16 and 0.21, the weights alone 0.01 (the memory's weight is 0.8 at full
            # confidence: a note off the piece, about one in four, takes four more to be found again)
            ok = shares[label] >= 0.10 and shares[label] >= 3 * shares["shipped"]
            print(f"  {label}: {'ok' if ok else 'FAILED: expected at least 0.10 and 3 times the weights alone'}")
            failures += not ok

        # music the memory does not hold: the same continuation as the weights alone (the weight stays 0)
        same = all(continuation(SHIPPED, os.path.join(d, "other.mid"), out, seed, *one)
                   == continuation(adapted, os.path.join(d, "other.mid"), out, seed, *one) for seed in (1, 2))
        print(f"another melody: {'the same notes as without the memory' if same else 'FAILED: the memory changed it'}")
        failures += not same
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

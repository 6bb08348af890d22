"""test_continue.py: `continuo continue` and `continuo eval` on MIDI files with a small random model:
two tracks, the continuation starts where the primer ends and is not the primer, seeds reproduce,
the memory modes, the piano roll, clear errors and no partial output."""

import os
import re
import subprocess
import sys
import tempfile

import mido

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from servetest import check, done  # noqa: E402

SRC = os.environ["CONTINUO_SRC"]
CONTINUO = os.environ["CONTINUO"]


def write_primer(path):
    mid = mido.MidiFile(ticks_per_beat=480)
    tr = mido.MidiTrack()
    mid.tracks.append(tr)
    tr.append(mido.MetaMessage("set_tempo", tempo=500000))
    pitches = [60, 64, 67, 72, 67, 64, 60, 62, 65, 69]
    for p in pitches:                     # eighth notes at 120 bpm: 0.25 s each
        tr.append(mido.Message("note_on", note=p, velocity=70, time=0))
        tr.append(mido.Message("note_off", note=p, velocity=0, time=240))
    mid.save(path)
    return pitches, 0.25 * len(pitches)


def notes(track):
    """(onset seconds, pitch) of the note-ons of a track written by continuo (1 tick = 1 ms)."""
    t, out = 0, []
    for msg in track:
        t += msg.time
        if msg.type == "note_on" and msg.velocity > 0:
            out.append((t / 1000.0, msg.note))
    return out


def run(*args, **kw):
    return subprocess.run([CONTINUO, *args], capture_output=True, text=True, **kw)


def main() -> int:

    with tempfile.TemporaryDirectory() as d:
        model = os.path.join(d, "m.gguf")
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "train", "export.py"), "--random", model,
                        "--layers", "2", "--d-model", "64", "--heads", "4", "--d-ff", "128",
                        "--max-rel", "32", "--context", "64", "--scale", "0.1", "--dtype", "f16"],
                       check=True, stdout=subprocess.DEVNULL)
        primer = os.path.join(d, "primer.mid")
        pitches, primer_end = write_primer(primer)
        out, svg = os.path.join(d, "out.mid"), os.path.join(d, "out.svg")
        r = run("continue", primer, "-o", out, "--model", model, "--seconds", "6", "--seed", "5", "--plot", svg)
        print(r.stdout, r.stderr)
        check(r.returncode == 0, "continue exits 0")
        mid = mido.MidiFile(out)
        names = [next((m.name for m in t if m.type == "track_name"), None) for t in mid.tracks]
        check("primer" in names and "continuation" in names, f"two named tracks ({names})")
        prim = notes(mid.tracks[names.index("primer")])
        cont = notes(mid.tracks[names.index("continuation")])
        check([p for _, p in prim] == pitches, "the primer track holds the primer's notes")
        check(len(cont) > 0, f"the continuation has notes ({len(cont)})")
        check(all(t >= primer_end - 0.011 for t, _ in cont), "the continuation starts where the primer ends")
        check(all(t <= primer_end + 6.01 for t, _ in cont), "and lasts about --seconds")
        check([p for _, p in cont][:len(pitches)] != pitches, "the continuation is not a copy of the primer")
        text = open(svg).read() if os.path.exists(svg) else ""
        check(text.startswith("<svg") and "#1f77b4" in text and "#ff7f0e" in text and "seconds" in text,
              "the piano roll has both colours and a time axis")

        # The same roll as a PNG: a real image, primer (blue) left of the
        # primer's end and continuation (orange) right of it.
        png = os.path.join(d, "out.png")
        r = run("continue", primer, "-o", out, "--model", model, "--seconds", "6", "--seed", "5", "--plot", png)
        check(r.returncode == 0 and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", "--plot .png writes a PNG")
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.image
        import numpy as np
        img = (matplotlib.image.imread(png) * 255).round().astype(int)
        # notes are blended over white by velocity: tell them apart by hue
        blue = img[..., 2] > img[..., 0] + 60
        orange = img[..., 0] > img[..., 2] + 60
        bx, ox = np.nonzero(blue)[1], np.nonzero(orange)[1]
        check(len(bx) > 100 and len(ox) > 100, f"the PNG has primer and continuation notes ({len(bx)}, {len(ox)})")
        check(len(bx) and len(ox) and bx.max() <= ox.min() + 1,
              "the primer is drawn left of the continuation")
        r = run("continue", primer, "-o", out, "--model", model, "--plot", os.path.join(d, "roll.jpg"))
        check(r.returncode == 2 and ".svg or .png" in r.stderr, "an unknown plot format is a usage error")

        out2, out3 = os.path.join(d, "out2.mid"), os.path.join(d, "out3.mid")
        run("continue", primer, "-o", out2, "--model", model, "--seconds", "6", "--seed", "5")
        run("continue", primer, "-o", out3, "--model", model, "--seconds", "6", "--seed", "6",
            "--top-p", "0.95", "--temperature", "1.2")
        check(open(out, "rb").read() == open(out2, "rb").read(), "the same seed gives the same file")
        check(open(out, "rb").read() != open(out3, "rb").read(), "another seed gives another continuation")

        # Memory modes: the context (64 events) fills during 60 s of continuation.
        # Until it does, window and stream are the same model state: the same
        # seed gives the same first notes; past it the window slid where the
        # stream rolled, and the music goes on differently.
        ow, os_, od = (os.path.join(d, f) for f in ("win.mid", "stream.mid", "default.mid"))
        # (one continuation each: candidates are chosen on the whole 60 s, past where the modes part)
        runs = [run("continue", primer, "-o", o, "--model", model, "--seconds", "60", "--seed", "5", "--candidates", "1",
                    *extra) for o, extra in ((ow, ["--memory", "window"]), (os_, ["--memory", "stream"]), (od, []))]
        counts = [re.search(r"continuation (\d+) notes \((\d+) events", r.stdout) for r in runs]
        check(all(r.returncode == 0 and c and int(c.group(2)) > 2 * 64 for r, c in zip(runs, counts)),
              f"--memory window and stream continue past the context ({[c and c.group(2) for c in counts]} events)")
        if all(r.returncode == 0 for r in runs):
            def cont_notes(path):
                mf = mido.MidiFile(path)
                return notes(next(t for t in mf.tracks if any(m.type == "track_name" and m.name == "continuation"
                                                              for m in t)))
            cw, cs = cont_notes(ow), cont_notes(os_)
            check(len(cw) > 3 and cw[:3] == cs[:3], f"the same first notes in both modes ({cw[:3]}, {cs[:3]})")
            check(cw != cs, "different continuations once the context is full")
            check(open(od, "rb").read() == open(os_, "rb").read(), "stream memory is the default")
        r = run("continue", primer, "-o", os.path.join(d, "o5.mid"), "--model", model,
                "--memory", "rolling")
        check(r.returncode == 2 and "window" in r.stderr and "stream" in r.stderr
              and not os.path.exists(os.path.join(d, "o5.mid")), "an unknown --memory is a usage error")

        # errors: no partial output
        bad = os.path.join(d, "bad.mid")
        open(bad, "wb").write(b"MThd\0\0\0\6garbage")
        o4 = os.path.join(d, "o4.mid")
        r = run("continue", bad, "-o", o4, "--model", model)
        check(r.returncode == 1 and "bad.mid" in r.stderr and not os.path.exists(o4), "a bad primer: error, no output")
        env = {k: v for k, v in os.environ.items() if k != "CONTINUO_MODEL"}
        datadir = None
        with open(os.path.join(os.environ["CONTINUO_BUILD"], "config.h")) as fh:
            for line in fh:
                if "CONTINUO_DATADIR" in line:
                    datadir = line.split('"')[1]
        if datadir and os.path.exists(os.path.join(datadir, "continuo-default.gguf")):
            print("skip no-model check: a default model is installed in", datadir)
        else:
            r = run("continue", primer, "-o", o4, cwd=d, env=env)
            check(r.returncode == 1 and "no model file" in r.stderr and "continuo-default.gguf" in r.stderr
                  and not os.path.exists(o4), "no model: the places tried are named")
        r = run("continue", primer, "-o", o4, "--model", model, "--top-p", "2")
        check(r.returncode == 2, "a bad option value is a usage error")

        # eval on a MIDI file equals eval on its token file
        tok = os.path.join(d, "primer.tok")
        subprocess.run([CONTINUO, "encode", "-o", tok, primer], check=True, capture_output=True)
        a = run("eval", "--model", model, primer).stdout.strip().splitlines()[-1]
        b = run("eval", "--model", model, tok).stdout.strip().splitlines()[-1]
        print(a, "|", b)
        check(a.startswith("nll ") and a == b, "eval of a MIDI file equals eval of its token file")

        # bench times decode at 256 and at the model's own context (512 here),
        # nothing beyond it, for the C engine and PyTorch alike.
        m512 = os.path.join(d, "m512.gguf")
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "train", "export.py"), "--random", m512,
                        "--layers", "1", "--d-model", "32", "--heads", "2", "--d-ff", "64",
                        "--max-rel", "64", "--context", "512", "--dtype", "f16"],
                       check=True, stdout=subprocess.DEVNULL)
        r = run("bench", "--model", m512, "--events", "8", "--threads", "1", timeout=120)
        print(r.stdout[-1500:], r.stderr[-500:])
        rows = {ln.split()[3]: ln.split() for ln in r.stdout.splitlines()
                if ln.strip().startswith("decode at context")}
        check(r.returncode == 0 and sorted(rows, key=int) == ["256", "512"]
              and all(float(v[5]) > 0 and float(v[6]) > 0 for v in rows.values()),
              f"bench decodes at contexts 256 and 512 in C and PyTorch ({sorted(rows)})")
        batch = {int(ln.split()[0]): [float(x) for x in ln.split()[1:3]] for ln in r.stdout.splitlines()
                 if re.match(r"\s+[1248]\s+\d+\s+\d+\s+[\d.]+x$", ln)}
        check(sorted(batch) == [1, 2, 4, 8] and all(t > 0 and abs(e * b - t) <= b for b, (e, t) in batch.items()),
              f"bench decodes batches of 1, 2, 4 and 8: events/s each and in all ({batch})")

        # what the model listens to: a line from each note it plays back to earlier notes
        att = os.path.join(d, "attention.svg")
        r = run("continue", primer, "-o", o4, "--model", model, "--seconds", "4", "--seed", "5",
                "--plot-attention", att)
        text = open(att).read() if os.path.exists(att) else ""
        lines = re.findall(r'<line x1="([\d.]+)" y1="[\d.]+" x2="([\d.]+)" y2="[\d.]+" stroke="#2ca02c"', text)
        played = re.search(r"continuation (\d+) notes", r.stdout)
        check(r.returncode == 0 and played and len(lines) >= int(played.group(1)),
              f"--plot-attention draws lines for the notes played ({len(lines)} lines, {r.stdout.strip()})")
        check(lines and all(float(x2) <= float(x1) + 0.1 for x1, x2 in lines),
              "each line goes back to an earlier note")
        r = run("continue", primer, "-o", o4, "--model", model, "--plot-attention", att + ".png")
        check(r.returncode == 2 and "SVG" in r.stderr, "--plot-attention wants an .svg")
        # with candidates (the default), the one played is drawn: it alone, sampled again with its seed
        o5, att2 = os.path.join(d, "out5.mid"), os.path.join(d, "attention2.svg")
        r = run("continue", primer, "-o", o5, "--model", model, "--seconds", "4", "--seed", "5",
                "--candidates", "3", "--plot-attention", att2)
        m = re.search(r"seed (\d+) \(candidate (\d+) of 3", r.stdout)
        alone = re.search(r"attention of candidate (\d+), sampled again alone \(seed (\d+)\)", r.stderr)
        check(r.returncode == 0 and m and alone and alone.group(1) == m.group(2) and alone.group(2) == m.group(1),
              f"--plot-attention with candidates draws the one played ({r.stdout.strip()}; {r.stderr.strip()[-200:]})")
        if m:
            r1 = run("continue", primer, "-o", o4, "--model", model, "--seconds", "4", "--seed", m.group(1),
                     "--candidates", "1", "--plot-attention", att)
            check(r1.returncode == 0 and os.path.exists(att2) and open(att).read() == open(att2).read(),
                  "its picture is the one `continue --candidates 1 --seed S+i` draws")
    done()


if __name__ == "__main__":
    sys.exit(main())

"""test_listen.py: `continuo continue --wav` and `--play` through FluidSynth with the system soundfont:
the WAV is as long as the music, loud where notes sound and near-silent where none do; --play plays in
real time through an audio driver; bad files, soundfonts and drivers give clear errors."""

import array
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import wave

import mido

SRC = os.environ["CONTINUO_SRC"]
CONTINUO = os.environ["CONTINUO"]
SOUNDFONT = "/usr/share/sounds/sf2/FluidR3_GM.sf2"
fails = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)
    return cond


def write_primer(path):
    """Two bars with a 3 s rest between them: C E G C at 0..1 s, rest, G B D G at 4..5 s."""
    mid = mido.MidiFile(ticks_per_beat=480)
    tr = mido.MidiTrack()
    mid.tracks.append(tr)
    tr.append(mido.MetaMessage("set_tempo", tempo=500000))
    gap = 0
    for i, p in enumerate([60, 64, 67, 72, 67, 71, 74, 79]):
        if i == 4:
            gap = 480 * 6             # 3 s
        tr.append(mido.Message("note_on", note=p, velocity=90, time=gap))
        tr.append(mido.Message("note_off", note=p, velocity=0, time=240))
        gap = 0
    mid.save(path)


def sounding(path):
    """(onset, release, velocity) of every note of a MIDI file continuo wrote, in seconds."""
    out = []
    for tr in mido.MidiFile(path).tracks:
        t, on = 0.0, {}
        for msg in tr:
            t += msg.time / 1000.0      # continuo writes 1 tick = 1 ms
            if msg.type == "note_on" and msg.velocity > 0:
                on[(msg.channel, msg.note)] = (t, msg.velocity)
            elif msg.type in ("note_off", "note_on") and (msg.channel, msg.note) in on:
                t0, v = on.pop((msg.channel, msg.note))
                out.append((t0, t, v))
    return sorted(out)


def read_wav(path):
    with wave.open(path) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 2
        rate = w.getframerate()
        samples = array.array("h", w.readframes(w.getnframes()))
    return rate, samples


def level(rate, samples, t0, t1):
    """RMS of [t0, t1) in dBFS."""
    seg = samples[max(0, int(t0 * rate)) * 2:int(t1 * rate) * 2]
    if not seg:
        return -200.0
    r = math.sqrt(sum(s * s for s in seg) / len(seg)) / 32768.0
    return 20 * math.log10(r) if r > 0 else -200.0


def run(*args, **kw):
    r = subprocess.run([CONTINUO, *args], capture_output=True, text=True, **kw)
    print("$ continuo", " ".join(args), "->", r.returncode, "\n" + r.stdout + r.stderr)
    return r


def check_follows_notes(wav, mid, what, slack=0.0, expect_rest=True):
    """The WAV lasts the music plus its release, and is loud where notes are, quiet where none are
    (from 1.5 s after the last note ended to SLACK before the next starts: a real-time recording
    may run a little early)."""
    rate, samples = read_wav(wav)
    dur = len(samples) / 2 / rate
    notes = sounding(mid)
    end = max(r for _, r, _ in notes)
    check(end <= dur <= end + 3.2, f"{what}: the WAV lasts the music and its release ({dur:.2f} s, music {end:.2f} s)")
    # The rests measure below -90 dBFS, the softest notes (velocity 17) near -55.
    heard = [n for n in notes if n[2] >= 10 and n[1] - n[0] >= 0.08]
    quiet_onsets = [t0 for t0, _, _ in heard if level(rate, samples, t0 + 0.005, t0 + 0.06) < -65]
    check(len(heard) > 0 and not quiet_onsets,
          f"{what}: sound at every note ({len(heard)} notes; silent at {quiet_onsets[:5]})")
    # Rests: 1.5 s after every note has ended until the next note starts.
    rests, busy_until = [], 0.0
    for t0, t1, _ in notes:
        if t0 - slack - (busy_until + 1.5) >= 0.2:
            rests.append((busy_until + 1.5, t0 - slack))
        busy_until = max(busy_until, t1)
    loud_rests = [(round(a, 2), round(b, 2), round(level(rate, samples, a, b), 1)) for a, b in rests
                  if level(rate, samples, a, b) > -75]
    check((rests or not expect_rest) and not loud_rests,
          f"{what}: near-silence in the rests {[(round(a, 2), round(b, 2)) for a, b in rests]} (too loud: {loud_rests})")
    tail = level(rate, samples, dur - 0.05, dur)
    check(dur > end + 3.0 or tail < -75, f"{what}: the file ends once the sound has died away ({tail:.1f} dBFS)")
    return rate, samples, dur


def main():
    if not os.path.exists(SOUNDFONT):
        print("skipped: no General MIDI soundfont at " + SOUNDFONT)
        return 77
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(d, "config"), XDG_CONFIG_DIRS=os.path.join(d, "xdg"))
        conf_dir = os.path.join(d, "config", "continuo")
        os.makedirs(conf_dir)
        conf = os.path.join(conf_dir, "continuo.conf")

        def config(text):
            with open(conf, "w") as f:
                f.write("soundfont = " + SOUNDFONT + "\n" + text)

        model = os.path.join(d, "m.gguf")
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "train", "export.py"), "--random", model,
                        "--layers", "2", "--d-model", "64", "--heads", "4", "--d-ff", "128",
                        "--max-rel", "32", "--context", "64", "--scale", "0.1", "--dtype", "f16"],
                       check=True, stdout=subprocess.DEVNULL)
        primer = os.path.join(d, "primer.mid")
        write_primer(primer)
        out, wav = os.path.join(d, "out.mid"), os.path.join(d, "out.wav")
        config("")

        # The rendered continuation follows the notes of the MIDI file written beside it.
        t = time.monotonic()
        r = run("continue", primer, "-o", out, "--model", model, "--seconds", "8", "--seed", "3", "--wav", wav, env=env)
        wall = time.monotonic() - t
        check(r.returncode == 0 and os.path.exists(wav), "continue --wav exits 0 and writes the WAV")
        if os.path.exists(wav):
            _, _, dur = check_follows_notes(wav, out, "continue --wav")
            check(wall < dur, f"faster than real time ({wall:.1f} s for {dur:.1f} s of audio, model included)")
            check("dBFS" in r.stdout and "real time" in r.stdout, "it says how long, how fast and how loud")
            sox = subprocess.run(["sox", wav, "-n", "stat"], capture_output=True, text=True)
            if sox.returncode == 0:
                length = float(next(ln.split()[-1] for ln in sox.stderr.splitlines() if ln.startswith("Length")))
                check(abs(length - dur) < 0.01, f"sox reads the same length ({length:.3f} s)")
            # The gain: louder than FluidSynth's default 0.2, by its ratio, and not clipped.
            _, s08 = read_wav(wav)
            config("gain = 0.2\n")
            wav02 = os.path.join(d, "quiet.wav")
            run("continue", primer, "-o", out, "--model", model, "--seconds", "8", "--seed", "3", "--wav", wav02, env=env)
            _, s02 = read_wav(wav02)
            p08, p02 = max(abs(min(s08)), max(s08)), max(abs(min(s02)), max(s02))
            check(p08 < 32767 and 3.0 < p08 / max(p02, 1) < 5.0,
                  f"the default gain plays about 4x (12 dB) louder than gain 0.2, unclipped ({p08} vs {p02})")

        # --play through an audio driver in real time: the file driver, headless.
        played = os.path.join(d, "played.wav")
        config("audio_driver = file\naudio_file = " + played + "\n")
        short = os.path.join(d, "short.mid")
        t = time.monotonic()
        r = run("continue", primer, "-o", short, "--model", model, "--seconds", "1", "--seed", "3", "--play", env=env)
        wall = time.monotonic() - t
        music = max(n[1] for n in sounding(short)) if os.path.exists(short) else 0
        check(r.returncode == 0 and music - 0.3 < wall, f"--play exits 0 after playing in real time "
              f"({wall:.1f} s for {music:.1f} s of music)")
        if os.path.exists(played):
            check_follows_notes(played, short, "continue --play (file driver)", slack=0.3)
        else:
            check(False, "--play through the file driver wrote " + played)

        # Ctrl-C while playing: it stops at once, silences what sounds, exits 0.
        os.unlink(played)
        p = subprocess.Popen([CONTINUO, "continue", primer, "-o", short, "--model", model, "--seconds", "8",
                              "--seed", "3", "--play"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        first = p.stdout.readline() + p.stdout.readline()
        time.sleep(0.5)             # into the primer's first bar
        t = time.monotonic()
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        stop = time.monotonic() - t
        print(first + out + err)
        check(p.returncode == 0 and stop < 1.0 and "stopped at" in err,
              f"Ctrl-C stops the playing within a second, exit 0 ({p.returncode}, {stop:.2f} s)")
        if os.path.exists(played):
            rate, samples = read_wav(played)
            dur = len(samples) / 2 / rate
            playing, end = level(rate, samples, 0.1, 0.4), level(rate, samples, dur - 0.02, dur)
            # all sound off ends the notes at once; what is left is the reverb's tail
            check(dur < 3.0 and playing > -50 and end < min(-50, playing - 25),
                  f"it was sounding ({playing:.1f} dBFS), and is silent when it stops ({dur:.2f} s, end {end:.1f} dBFS)")
        else:
            check(False, "the interrupted play wrote " + played)

        # A driver that cannot open: named, with its device, and what to try.
        config("audio_driver = oss\naudio_device = /nonexistent/dsp\n")
        o2 = os.path.join(d, "o2.mid")
        r = run("continue", primer, "-o", o2, "--model", model, "--seconds", "1", "--play", env=env)
        check(r.returncode == 1 and "audio driver oss" in r.stderr and "/nonexistent/dsp" in r.stderr
              and "--wav" in r.stderr and "pulseaudio" in r.stderr and os.path.exists(o2),
              "a driver that fails: named with its device, other drivers and --wav offered; the MIDI file is kept")

        # Bad soundfont, bad config, unwritable WAV, missing file name.
        config("")
        with open(conf, "w") as f:
            f.write("soundfont = " + os.path.join(d, "nope.sf2") + "\n")
        w3 = os.path.join(d, "w3.wav")
        r = run("continue", primer, "-o", o2, "--model", model, "--seconds", "1", "--wav", w3, env=env)
        check(r.returncode == 1 and "nope.sf2" in r.stderr and not os.path.exists(w3),
              "a missing soundfont is named; no WAV")
        not_sf = os.path.join(d, "notes.sf2")
        with open(not_sf, "w") as f:
            f.write("not a soundfont")
        with open(conf, "w") as f:
            f.write("soundfont = " + not_sf + "\n")
        r = run("continue", primer, "-o", o2, "--model", model, "--seconds", "1", "--wav", w3, env=env)
        check(r.returncode == 1 and "notes.sf2" in r.stderr and "not a SoundFont" in r.stderr
              and not os.path.exists(w3), "a file that is no soundfont is named; no WAV")
        with open(conf, "w") as f:
            f.write("gain = loud\n")
        r = run("continue", primer, "-o", o2, "--model", model, "--seconds", "1", "--wav", w3, env=env)
        check(r.returncode == 1 and "continuo.conf:1" in r.stderr and "gain" in r.stderr, "a bad config line is named")
        config("")
        bad_dir = os.path.join(d, "no", "such", "dir", "x.wav")
        r = run("continue", primer, "-o", o2, "--model", model, "--seconds", "1", "--wav", bad_dir, env=env)
        check(r.returncode == 1 and bad_dir in r.stderr, "an unwritable WAV path is named")
        r = run("continue", primer, "-o", o2, "--model", model, "--wav", env=env)
        check(r.returncode == 2 and "--wav needs a file name" in r.stderr, "--wav without a file is a usage error")
        leftovers = [f for f in os.listdir(d) if ".tmp-" in f]
        check(not leftovers, f"no partial files left ({leftovers})")

        # demo --wav from an empty folder: the motif and its continuation (or the motif alone).
        empty = os.path.join(d, "empty")
        os.mkdir(empty)
        r = run("demo", "--wav", "demo.wav", cwd=empty, env=dict(env, CONTINUO_DATADIR=os.path.join(SRC, "models")),
                timeout=120)
        dwav = os.path.join(empty, "demo.wav")
        check(r.returncode == 0 and os.path.exists(dwav), "demo --wav writes the WAV")
        if os.path.exists(dwav):
            check_follows_notes(dwav, os.path.join(empty, "continuo-demo.mid"), "demo --wav", expect_rest=False)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

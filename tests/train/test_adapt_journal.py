"""test_adapt_journal.py: `continuo adapt` on the journal a running `serve` wrote (issue 40).

The path a player meets: `serve` runs (the echo engine, so that the model's
track holds its answers too), a little over a minute of arpeggios is played
into its input in real time, with breaths it answers, and the service
stops.  Then, with nothing given but the state folder, `continuo adapt`
(a tiny random model, a reference of the same kind of music) reads that
journal: one session, the player's track only (the answers are not the
player's), its newest tenth held back, and keeps the result; a service
started with `model = auto` then plays the adapted model (`ctl status`
names it).
"""

import glob
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
import servetest   # noqa: E402
from servetest import Service, check, done   # noqa: E402
from test_adapt import arpeggio_notes, arpeggio_reference, write_midi   # noqa: E402

CONTINUO = servetest.CONTINUO
SRC = servetest.SRC
PLAY_S = 66.0        # a little over the minute adapt asks for
BREATH_EVERY_S = 12.0


def phrases() -> list:
    """(onset, pitch, velocity, length): arpeggios with a breath of 1.2 s
    every 12 s (a phrase end: the echo engine answers)."""
    return [(on + 1.2 * int(on // BREATH_EVERY_S), p, v, ln) for on, p, v, ln in arpeggio_notes(PLAY_S, 5)]


def events_of(tmp: str, notes: list) -> int:
    """The events `continuo encode` makes of NOTES played alone."""
    path = os.path.join(tmp, "played.mid")
    write_midi(path, {"piano": notes})
    r = subprocess.run([CONTINUO, "encode", path, "-o", path + ".tok"], capture_output=True, text=True, check=True)
    return int(re.search(r"(\d+) events", r.stdout + r.stderr).group(1))


def play_arpeggios(sv: Service) -> float:
    """phrases() into the service's input in real time; the seconds played."""
    t0 = time.monotonic()
    for on, pitch, vel, length in phrases():
        at = t0 + on
        time.sleep(max(0.0, at - time.monotonic()))
        sv.play([0x90, pitch, vel])
        time.sleep(max(0.0, at + length - time.monotonic()))
        sv.play([0x80, pitch, 0])
    return time.monotonic() - t0


def main() -> int:
    if servetest.sanitized():
        print("SKIP: sanitized build (a minute of real-time playing; adapt's C side runs in train_adapt)")
        return 77
    with tempfile.TemporaryDirectory(prefix="continuo-adapt-journal-") as tmp:
        model = os.path.join(tmp, "tiny.gguf")
        subprocess.run([sys.executable, os.path.join(SRC, "train", "export.py"), "--random", model,
                        "--layers", "2", "--d-model", "64", "--heads", "4", "--d-ff", "128", "--max-rel", "32",
                        "--context", "64", "--dtype", "f32"], check=True, capture_output=True)
        ref = arpeggio_reference(tmp, CONTINUO)

        got = []
        state = os.path.join(tmp, "state")      # outlives the service's own folder
        sv = Service("phrase_silence_ms=800", "response_seconds=2", env_extra={"XDG_STATE_HOME": state})
        env = dict(os.environ, XDG_STATE_HOME=state, XDG_CONFIG_HOME=sv.env["XDG_CONFIG_HOME"],
                   CONTINUO_SRC=SRC)
        env.pop("STATE_DIRECTORY", None)
        env.pop("CONTINUO_MODEL", None)
        try:
            played = play_arpeggios(sv)
            time.sleep(2.5)
            st = sv.request("status")
            m = re.search(r"responses=(\d+)", st)
            check(m is not None and int(m.group(1)) >= 3, f"the service answered the breaths ({st[:160]})")
            rc, _ = sv.stop()
            check(rc == 0, f"serve stops cleanly ({rc})")
            journals = sorted(glob.glob(os.path.join(state, "continuo", "journal", "session-*.mid")))
            check(len(journals) == 1, f"one session in the journal ({journals})")
            if journals:
                r = subprocess.run([CONTINUO, "inspect", journals[0]], capture_output=True, text=True)
                check(r.returncode == 0 and "format 1, 3 tracks" in r.stdout,
                      f"the journal file: the tempo track, the player's and continuo's ({r.stdout[:300]})")

            t = time.monotonic()
            r = subprocess.run([CONTINUO, "adapt", "--model", model, "--reference", ref, "--minutes", "0.3",
                                "--lr", "1e-3"], env=env, capture_output=True, text=True, timeout=120)
            took = time.monotonic() - t
            print(f"$ continuo adapt (exit {r.returncode}, {took:.1f} s)\n{r.stdout}{r.stderr}")
            m = re.search(r"on ([\d.]+) min of playing in (\d+) sessions? .*?, (\d+) events; holding back the "
                          r"newest [\d.]+ min \((\d+) events", r.stdout)
            check(m is not None and m.group(2) == "1", "adapt reads the journal by itself: one session")
            check(m is not None and 0.9 * (PLAY_S / 60) <= float(m.group(1)) <= (played + 6) / 60,
                  f"about the minute played ({m.group(1) if m else None} min; {played:.1f} s played)")
            # the player's notes alone encode to WANT events (the journal's times move a few ms, which
            # seldom changes a token); the echo's answers would add about a tenth
            want = events_of(tmp, phrases())
            have = int(m.group(3)) + int(m.group(4)) if m else 0     # learnt from, and held back
            check(abs(have - want) <= 0.02 * want,
                  f"the player's playing only, the answers left out ({have} events; the notes played alone: {want})")
            got = sorted(glob.glob(os.path.join(state, "continuo", "adapted", "adapted-*.gguf")))
            check(r.returncode == 0 and "kept: " in r.stdout and len(got) == 1,
                  "the adapted model is kept in the state folder")
            card = got[0][:-len(".gguf")] + ".card" if got else ""
            text = open(card).read() if card and os.path.exists(card) else ""
            check("sessions: 1" in text and "held-back NLL:" in text, "its card names the session and the scores")
        finally:
            sv.cleanup()

        if got:
            # model = auto: the service plays the adapted model
            sv2 = Service("model=auto", env_extra={"XDG_STATE_HOME": state, "CONTINUO_SRC": SRC})
            try:
                st = sv2.request("status")
                check(os.path.basename(got[0]) in st, f"model = auto plays the adapted model ({st[:240]})")
                rc, _ = sv2.stop()
                check(rc == 0, f"that service stops cleanly ({rc})")
            finally:
                sv2.cleanup()
    done()


if __name__ == "__main__":
    sys.exit(main())

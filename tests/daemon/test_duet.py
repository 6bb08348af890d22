"""test_duet.py: mode = duet over a real performance replayed in real time: the model plays on its own channel throughout, never more than max_held_notes at once, ends its own notes, and leaves nothing sounding.

The player's part is a piano performance from ASAP_DIR, replayed into the
input FIFO at its own timing for CONTINUO_DUET_SECONDS (default 60, 30
under the sanitizers, whose build runs the same paths for memory errors;
the issue's figure is 300, run by hand as docs/DAW.md says).  The model is the shipped one (models/, else the
small random-weight test model; CONTINUO_DUET_MODEL names another): what
is checked is the service's behaviour, not the music.
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from servetest import FifoReader, Service, check, done, sanitized, tiny_model, unended_notes, teardown  # noqa: E402

try:
    import mido
except ImportError:
    print("skipped: needs the mido module to read the performance")
    sys.exit(77)

SECONDS = float(os.environ.get("CONTINUO_DUET_SECONDS", "30" if sanitized() else "60"))
MAX_HELD = 6
asap = os.environ.get("ASAP_DIR", "")
files = sorted(os.path.join(r, f) for r, _, fs in os.walk(asap) for f in fs if f.endswith(".mid")) if asap else []
if not files:
    print("skipped: no performances under ASAP_DIR (%r)" % asap)
    sys.exit(77)


def performance(seconds):
    """(time, bytes) of note on/off and pedal on channel 1, from the first
    performances long enough, back to back."""
    out, t0 = [], 0.0
    for path in files:
        t = t0
        for msg in mido.MidiFile(path):
            t += msg.time
            if msg.type in ("note_on", "note_off") or (msg.type == "control_change" and msg.control == 64):
                b = msg.copy(channel=0).bytes()
                out.append((t, bytes(b)))
            if t > seconds:
                return out
        t0 = t + 1.0
    return out


shipped = os.path.join(os.environ.get("CONTINUO_SRC", "."), "models", "continuo-default.gguf")
model = os.environ.get("CONTINUO_DUET_MODEL") or (shipped if os.path.exists(shipped) else tiny_model())
events = performance(SECONDS)
d = tempfile.mkdtemp(prefix="continuo-duet-")
out_path = os.path.join(d, "out")
reader = FifoReader(out_path)
sv = Service("model=" + model, "mode=duet", "duet_density=0.5", "model_channel=2",
             "max_held_notes=%d" % MAX_HELD, "midi_thru=no", "seed=3", "response_seconds=4",
             output="fifo:" + out_path)
try:
    st = sv.request("status")
    check("mode=duet" in st, "status shows the mode: %s" % st)
    t_start = time.monotonic()
    for t, b in events:
        delay = t_start + t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        sv.play(b)
    played = time.monotonic() - t_start
    # Release everything the replay may have left down.
    sv.play([0xB0, 64, 0] + [x for p in range(21, 109) for x in (0x80, p, 0)])
    time.sleep(0.5)
    st = sv.request("status")
    print("status:", st)
    rc, secs = sv.stop()
    check(rc == 0, "clean exit (%r after %.1f s):\n%s" % (rc, secs, sv.read_log()[-2000:]))
    reader.close()

    msgs = []
    for t, data in reader.chunks:
        for i in range(0, len(data) - 2, 3):
            msgs.append((t - t_start, data[i], data[i + 1], data[i + 2]))
    model_msgs = [m for m in msgs if m[1] & 0x0F == 1]
    check(all(m[1] & 0x0F == 1 for m in msgs if m[1] & 0xF0 in (0x80, 0x90)),
          "the model plays only on its channel (2)")
    ons = [t for t, s, p, v in model_msgs if s == 0x91 and v > 0]
    print("replayed %.0f s of %s...: %d player events, %d model note-ons"
          % (played, os.path.basename(files[0]), len(events), len(ons)))
    # Throughout: model notes in every 10 s of the replay.
    windows = int(played // 10)
    print("model note-ons per 10 s:", [sum(1 for t in ons if w * 10 <= t < w * 10 + 10) for w in range(windows)])
    print("player note-ons per 10 s:", [sum(1 for t, b in events if b[0] & 0xF0 == 0x90 and b[2] > 0 and w * 10 <= t < w * 10 + 10)
                                        for w in range(windows)])
    empty = [w for w in range(windows) if not any(w * 10 <= t < w * 10 + 10 for t in ons)]
    check(windows > 0 and empty == [], "the model played in every 10 s window (silent: %r of %d)" % (empty, windows))
    # Never more than max_held_notes sounding.
    sounding, most = set(), 0
    for t, s, p, v in model_msgs:
        if s == 0x91 and v > 0:
            sounding.add(p)
        elif s == 0x81 or (s == 0x91 and v == 0):
            sounding.discard(p)
        elif s == 0xB1 and p == 123:
            sounding.clear()
        most = max(most, len(sounding))
    print("most model notes sounding at once: %d (max_held_notes %d)" % (most, MAX_HELD))
    check(most <= MAX_HELD, "never more than max_held_notes: %d" % most)
    u = unended_notes([(s, p, v) for t, s, p, v in model_msgs])
    check(u == [], "no model note left sounding: %r" % u)
    # The model ends its own notes: none waits for the max_note_ms sweep
    # because the player struck or released its pitch (the model's context
    # then says it has ended), and the model keeps to max_held_notes itself,
    # so the outputs seldom have to drop a note-on of it.
    swept = int(st.split(" swept=")[1].split()[0])
    dropped = int(st.split(" dropped=")[1].split()[0])
    print("model notes: %d played, %d ended by the max_note_ms sweep, %d note-ons dropped at max_held_notes"
          % (len(ons), swept, dropped))
    check(swept <= 0.015 * len(ons), "model notes left to the sweep: %d of %d" % (swept, len(ons)))
    check(dropped <= 0.05 * (len(ons) + dropped), "model note-ons dropped at max_held_notes: %d of %d"
          % (dropped, len(ons) + dropped))
    thinned = int(st.split("duet_thinned=")[1].split()[0])
    check(thinned > 0, "duet_density left some of the model's notes out while the player played")
finally:
    teardown(sv, reader, d)
done()

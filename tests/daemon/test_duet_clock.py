"""test_duet_clock.py: a duet under a DAW's transport: the model plays while it runs (past response_bars: a duet has no end), Stop silences it within 20 ms and keeps it silent, Continue brings it back."""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from servetest import BAR, PPQN, STOP_RACE_S, Daw, FifoReader, Service, check, done, sanitized, tiny_model, unended_notes, teardown  # noqa: E402

STOP_MS = 60.0 if sanitized() else 20.0
shipped = os.path.join(os.environ.get("CONTINUO_SRC", "."), "models", "continuo-default.gguf")
model = os.environ.get("CONTINUO_DUET_MODEL") or (shipped if os.path.exists(shipped) else tiny_model())

d = tempfile.mkdtemp(prefix="continuo-duetclock-")
out_path = os.path.join(d, "out")
reader = FifoReader(out_path)
sv = Service("model=" + model, "mode=duet", "sync=clock", "response_bars=1", "duet_density=1",
             "model_channel=2", "midi_thru=no", "seed=5", output="fifo:" + out_path)
try:
    daw = Daw(sv)
    start_k, stop_k = 48, 48 + 4 * BAR
    cont_k = stop_k + BAR
    end_k = cont_k + 2 * BAR
    daw.add(start_k, b"\xfa")
    for b in range(4 * 4):                          # the player: a note on each beat
        k = start_k + b * PPQN
        daw.add(k, bytes([0x90, 60 + (b % 8), 90]))
        daw.add(k + 12, bytes([0x80, 60 + (b % 8), 0]))
    daw.add(stop_k, b"\xfc")
    daw.add(cont_k, b"\xfb")
    daw.add(end_k, b"\xfc")
    daw.run(end_k + 24)
    time.sleep(0.3)
    st = sv.request("status")
    print("status:", st)
    rc, _ = sv.stop()
    check(rc == 0, "clean exit")
    reader.close()

    tick = {k: t for k, t, _ in daw.sent}
    msgs = []
    for t, data in reader.chunks:
        for i in range(0, len(data) - 2, 3):
            msgs.append((t, data[i], data[i + 1], data[i + 2]))
    ons = [t for t, s, p, v in msgs if s == 0x91 and v > 0]
    offs = [t for t, s, p, v in msgs if s == 0x81 or (s == 0x91 and v == 0)]
    t_start, t_stop, t_cont, t_end = tick[start_k], tick[stop_k], tick[cont_k], tick[end_k]
    bar = lambda n: [t for t in ons if tick[start_k + n * BAR] <= t < tick[start_k + (n + 1) * BAR]]  # noqa: E731
    print("model note-ons per bar while running: %s; after Continue: %d"
          % ([len(bar(n)) for n in range(4)], len([t for t in ons if t_cont <= t < t_end])))
    check(not [t for t in ons if t < t_start], "silent before Start")
    check(len(bar(0)) > 0 and len(bar(2)) + len(bar(3)) > 0,
          "the model plays from the first bar and goes on past response_bars")
    raced = [t for t in ons if t_stop <= t < t_stop + STOP_RACE_S]
    if raced:
        print("note-ons within %.0f ms of Stop (sent as it came): %s"
              % (STOP_RACE_S * 1000, ["%.2f ms" % ((t - t_stop) * 1000) for t in raced]))
    stopped_ons = [t for t in ons if t_stop + STOP_RACE_S <= t < t_cont]
    check(stopped_ons == [], "no note-on between Stop and Continue: %d" % len(stopped_ons))
    offs_after = [t for t in offs if t_stop <= t < t_cont]
    if offs_after:
        print("Stop -> last model note-off: %.2f ms" % ((max(offs_after) - t_stop) * 1000))
    check(not offs_after or max(offs_after) - t_stop <= STOP_MS / 1000.0,
          "silent within %.0f ms of Stop" % STOP_MS)
    check(unended_notes([(s, p, v) for t, s, p, v in msgs if t < t_cont]) == [], "nothing sounding after Stop")
    check(len([t for t in ons if t_cont <= t < t_end]) > 0, "Continue: the model plays again")
    check(unended_notes([(s, p, v) for t, s, p, v in msgs]) == [], "every note ended")
finally:
    teardown(sv, reader, d)
done()

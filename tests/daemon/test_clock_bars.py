"""test_clock_bars.py: with MIDI clock, response_bars ends the answer on a bar line and quantize puts its onsets on the eighth-note grid.

The same DAW client as test_clock.py (clock at 120 BPM, notes off the
grid); judged against the clock ticks it really sent.  The first note is
placed on its tick; the others are on the grid the tempo predicts, so their
error includes the client's own tick jitter, measured around each one
(printed) and allowed for on top of the limit: a few tenths of a ms on a
quiet machine, 4 ms once on a busy CI machine.
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from clockscene import tick_jitter_ms  # noqa: E402
from servetest import BAR, Daw, FifoReader, Service, check, done, sanitized, unended_notes, teardown  # noqa: E402

LIMIT_MS = 10.0 if sanitized() else 3.0

d = tempfile.mkdtemp(prefix="continuo-bars-")
out_path = os.path.join(d, "out")
reader = FifoReader(out_path)
sv = Service("sync=clock", "response_start=bar", "response_bars=1", "quantize=1/8",
             "quantize_strength=1", "phrase_silence_ms=300", "midi_thru=no",
             output="fifo:" + out_path)
try:
    check(sv.request("set quantize 1/5").startswith("error quantize: expected one of off|1/8|1/16|1/8t|1/16t"),
          "a bad grid is refused, naming the choices")
    check(sv.request("set response_bars -1").startswith("error response_bars: expected an integer from 0 to 64"),
          "a bad length is refused")
    # No clock yet: a phrase is not answered, and the log says why.
    sv.play([0x90, 50, 90])
    time.sleep(0.05)
    sv.play([0x80, 50, 0])
    time.sleep(0.5)
    check("responses=0" in sv.request("status"), "no answer without the clock")
    check("no MIDI clock or Start has come from any input" in sv.read_log(),
          "the log says the clock is missing:\n" + sv.read_log()[-1000:])
    # sync = free, live: the next phrase is answered at once, clock or not
    # (and the echo engine has answered what it heard so far).
    check(sv.request("set sync free") == "ok sync = free", "sync changes live")
    sv.play([0x90, 52, 90])
    time.sleep(0.05)
    sv.play([0x80, 52, 0])
    time.sleep(0.5)
    check("responses=1" in sv.request("status"), "free: answered without a clock")
    time.sleep(1.2)                         # the answer (two notes, 0.6 s apart) is over
    check(sv.request("set sync clock") == "ok sync = clock", "back to the clock")
    daw = Daw(sv)
    start_k = 96
    daw.add(start_k, b"\xfa")
    phrase_k = start_k + BAR                # on a bar line: offsets are song positions
    offsets = [0, 7, 19, 31, 43, 55, 67, 79, 91, 103, 115]
    notes = [(o, 60 + i, 30 if o == 79 else 10) for i, o in enumerate(offsets)]
    last = daw.phrase(phrase_k, notes)
    end_k = last + 4 * BAR
    daw.add(end_k, b"\xfc")
    daw.run(end_k + 24)
    time.sleep(0.2)
    status_line = sv.request("status")
    rc, _ = sv.stop()
    check(rc == 0, "clean exit")
    reader.close()

    msgs = []
    for t, data in reader.chunks:
        for i in range(0, len(data) - 2, 3):
            msgs.append((t, data[i], data[i + 1], data[i + 2]))
    ons = [(t, p) for t, s, p, v in msgs if s == 0x90 and v > 0]
    offs = [(t, p) for t, s, p, v in msgs if s == 0x80 or (s == 0x90 and v == 0)]
    sent = daw.sent
    tick = {k: t for k, t, _ in sent}
    pos_of = {k: p for k, _, p in sent}
    t_end = tick[last] + 0.300
    bar_k = next(k for k, t, p in sent if p is not None and p % BAR == 0 and t >= t_end + 0.010)
    print("answer due on tick %d (song position %d)" % (bar_k, pos_of[bar_k]))
    # The client's own jitter: its ticks against a straight line through them.
    jit_all = tick_jitter_ms(sent, bar_k + BAR // 2, span=BAR // 2 + 24)
    print("client tick jitter over the answer, ms: max %.2f" % jit_all)

    # Onsets: eighths from the bar line, 0 12 24 ... 84 (91 -> 96: past the end).
    want = [bar_k + q for q in (0, 12, 24, 36, 48, 60, 72, 84)]
    got = [(t, p) for t, p in ons if t > t_end]
    print("status:", status_line)
    check(len(got) == len(want), "one note-on per eighth before the bar line: %d of %d" % (len(got), len(want)))
    errs = []
    for (t, p), k in zip(got, want):
        errs.append((t - tick[k]) * 1000)
    print("quantized onsets vs their eighth-note ticks, ms:", " ".join("%+.2f" % e for e in errs))
    # Each within the limit plus the client's own jitter around it (its
    # ticks and its reads stall alike when its machine does: seen, 4 ms once).
    jits = [tick_jitter_ms(sent, k, span=12) for k in want]
    print("the client's tick jitter around each, ms:", " ".join("%.2f" % j for j in jits))
    for i, e in enumerate(errs):
        check(abs(e) <= LIMIT_MS + jits[i], "onset %d on its eighth (%+.2f ms, limit %.0f ms + the client's jitter %.2f ms)"
              % (i, e, LIMIT_MS, jits[i]))
    check([p for _, p in got] == [67 + i for i in range(len(want))], "the answer's notes in order: %r" % got)
    # The end: the note over the bar line is cut on it; nothing after.
    t_bar_end = tick[bar_k + BAR]
    late_ons = [t for t, p in got if t >= t_bar_end - 0.001]
    check(late_ons == [], "no note starts on or after the closing bar line")
    cut = [t for t, p in offs if p == 67 + 7 and t > t_end]
    end_ms = LIMIT_MS + tick_jitter_ms(sent, bar_k + BAR, span=12)
    check(len(cut) == 1 and abs(cut[0] - t_bar_end) * 1000 <= end_ms,
          "the note held over the bar line ends on it: %s (limit %.2f ms)"
          % (["%+.2f ms" % ((t - t_bar_end) * 1000) for t in cut], end_ms))
    check(all(t <= t_bar_end + end_ms / 1000 for t, p in offs if t > t_end),
          "every note of the answer ended by the bar line")
    check(unended_notes([(s, p, v) for t, s, p, v in msgs]) == [], "every note ended")
finally:
    teardown(sv, reader, d)
done()

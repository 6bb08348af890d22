"""test_clock.py: a DAW's MIDI clock and transport drive the answers: first note on the beat (or bar), Stop silences at once, a new tempo is followed within a beat.

A client sends clock (24 per beat), Start/Stop/Continue and the player's
notes into the service's FIFO on one thread, at absolute times, and records
when each clock actually went out; the service's output FIFO is read with
a timestamp per read.  Onsets are judged against the clock ticks the client
really sent.  The figures are printed whether the checks pass or not.
"""

import os
import re
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from servetest import BAR, PPQN, Daw, FifoReader, Service, check, done, sanitized, unended_notes, teardown  # noqa: E402

ONSET_MS = 3.0          # the issue: the first note within 3 ms of its beat
STOP_MS = 20.0          # the issue: silent within 20 ms of Stop
if sanitized():
    ONSET_MS, STOP_MS = 10.0, 60.0


def status(sv, key):
    m = re.search(r"\b%s=(\S+)" % key, sv.request("status"))
    return m.group(1) if m else None


d = tempfile.mkdtemp(prefix="continuo-clock-")
out_path = os.path.join(d, "out")
reader = FifoReader(out_path)
sv = Service("sync=clock", "response_start=beat", "phrase_silence_ms=300", "midi_thru=no",
             "lookahead_ms=10", output="fifo:" + out_path)
try:
    daw = Daw(sv)
    # Clock runs one bar before Start (the tempo is known by then).
    start_k = 96
    daw.add(start_k, b"\xfa")
    phrases = []                # (tick of its last note-off, unit the answer must start on)
    motif = [(0, 60, 10), (12, 64, 10), (24, 67, 10)]

    # Six answers at response_start=beat, phrase ends falling at different
    # places in the beat; then two at response_start=bar.
    k = start_k
    for i in range(6):
        last = daw.phrase(k, [(o, p, ln + 3 * i) for o, p, ln in motif])
        phrases.append((last, PPQN))
        k += 2 * BAR
    daw.add(k - 8, lambda: sv.request("set response_start bar"))
    for i in range(2):
        last = daw.phrase(k + PPQN, [(o, p, ln + 5 * i) for o, p, ln in motif])
        phrases.append((last, BAR))
        k += 3 * BAR
    daw.add(k - 8, lambda: sv.request("set response_start beat"))

    # Stop in the middle of a long answer; a phrase played while stopped is
    # not answered; Continue, and the next phrase is.
    long_motif = [(12 * j, 48 + 2 * j, 10) for j in range(10)]
    stop_phrase_end = daw.phrase(k, long_motif)
    stop_k = stop_phrase_end + 15 + 24 + 36      # ~0.75 s into the answer
    daw.add(stop_k, b"\xfc")
    stopped_phrase_end = daw.phrase(stop_k + 48, motif)
    cont_k = stopped_phrase_end + 2 * BAR
    daw.add(cont_k, b"\xfb")
    last = daw.phrase(cont_k + 24, motif)
    phrases.append((last, PPQN))
    k = cont_k + 24 + 2 * BAR

    # A new tempo: 140 BPM from tick `change_k`; status one beat later.
    change_k = k
    daw.tempo[change_k] = 140.0
    seen = {}
    daw.add(change_k + PPQN, lambda: seen.update(tempo=float(status(sv, "tempo"))))
    last = daw.phrase(change_k + PPQN, motif)
    phrases.append((last, PPQN))
    end_k = change_k + PPQN + 2 * BAR
    daw.add(end_k, b"\xfc")
    responses_before_stop = None

    sender = threading.Thread(target=daw.run, args=(end_k + 24,))
    sender.start()
    # While it plays, look at the status during the stopped stretch.
    sender.join()
    time.sleep(0.3)
    st = sv.request("status")
    print("status:", st)
    check("transport=stopped" in st and "sync=clock" in st and "mode=call" in st,
          "status shows the transport: %s" % st)
    rc, _ = sv.stop()
    check(rc == 0, "clean exit")
    check("phrase not answered: the transport is stopped" in sv.read_log(),
          "the log says why the phrase played while stopped was not answered")
    reader.close()

    # ---- the output, message by message, with the time it was read ----
    msgs = []
    for t, data in reader.chunks:
        for i in range(0, len(data) - 2, 3):
            msgs.append((t, data[i], data[i + 1], data[i + 2]))
    ons = [(t, p) for t, s, p, v in msgs if s == 0x90 and v > 0]
    offs = [(t, p) for t, s, p, v in msgs if s == 0x80 or (s == 0x90 and v == 0)]
    sent = daw.sent
    tick_time = {k: t for k, t, _ in sent}
    tick_pos = {k: p for k, _, p in sent}

    def nearest_tick(t):
        return min(sent, key=lambda e: abs(e[1] - t))

    # First note of each answer: the first model note-on after each phrase end.
    errors = []
    for i, (last, unit) in enumerate(phrases):
        t_end = tick_time[last] + 0.300
        first = next(((t, p) for t, p in ons if t > t_end - 0.05), None)
        if not check(first is not None, "phrase %d was answered" % i):
            continue
        k_n, t_n, pos = nearest_tick(first[0])
        err_ms = (first[0] - t_n) * 1000.0
        errors.append(err_ms)
        check(pos is not None and pos % unit == 0,
              "answer %d starts on a %s line (tick %d, song position %s)"
              % (i, "beat" if unit == PPQN else "bar", k_n, pos))
        # The first line after the phrase end and the head start.
        want = next(kk for kk, tt, pp in sent
                    if pp is not None and pp % unit == 0 and tt >= t_end + 0.010)
        check(abs(k_n - want) <= 0 or (abs(k_n - want) == unit and abs(tick_time[want] - t_end - 0.010) < 0.01),
              "answer %d on the first line after the phrase end (tick %d, expected %d)" % (i, k_n, want))
        check(abs(err_ms) <= ONSET_MS, "answer %d: first note %+.2f ms from its beat tick (limit %.0f ms)"
              % (i, err_ms, ONSET_MS))
    if errors:
        a = sorted(abs(e) for e in errors)
        print("first note vs beat tick, ms: n=%d %s | |err| median %.2f max %.2f"
              % (len(errors), " ".join("%+.2f" % e for e in errors), a[len(a) // 2], a[-1]))

    # Stop: the last note-off within STOP_MS, no note-on after it.
    t_stop = tick_time[stop_k]
    t_cont = tick_time[cont_k]
    during = [t for t, p in ons if t_stop - 0.5 < t < t_stop]
    check(len(during) > 0, "the answer was playing when Stop came")
    offs_after = [t for t, p in offs if t_stop <= t < t_cont]
    ons_after = [t for t, p in ons if t_stop <= t < t_cont]
    if offs_after:
        print("Stop -> last note-off: %.2f ms" % ((max(offs_after) - t_stop) * 1000))
    check(offs_after and max(offs_after) - t_stop <= STOP_MS / 1000.0,
          "silent within %.0f ms of Stop: %s" % (STOP_MS, ["%.2f ms" % ((t - t_stop) * 1000) for t in offs_after]))
    check(ons_after == [], "no note-on after Stop until Continue: %r" % ons_after)
    check(unended_notes([(s, p, v) for t, s, p, v in msgs if t < t_cont]) == [],
          "nothing sounding after Stop")

    # A new tempo followed within one beat.
    print("tempo one beat after the change to 140 BPM: %.2f" % seen.get("tempo", 0))
    check(abs(seen.get("tempo", 0) - 140.0) < 1.0, "tempo followed within a beat: %r" % seen)

    check(unended_notes([(s, p, v) for t, s, p, v in msgs]) == [], "every note ended")
finally:
    teardown(sv, reader, d)
done()

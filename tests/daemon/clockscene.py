"""clockscene.py: one DAW session against the service with sync = clock, and how it is judged; played over a FIFO (test_clock.py) and over the ALSA sequencer in the Debian guest (test_systemd_user.py with seq_daw).

The session: clock at 120 BPM a bar before Start; six phrases answered at
response_start = beat, their ends at different places in the beat, then
two at bar (set live); a long phrase whose answer is cut by Stop; a phrase
played while stopped (not answered); a Song Position Pointer that moves
the song half a beat or so off its old beat grid; Continue and a phrase
answered on the new grid; a tempo change to 140 BPM, read back one beat
later, and a phrase answered at the new tempo; Stop.
"""

import re

from servetest import BAR, PPQN, STOP_RACE_S, Ctl, check, unended_notes


class Scene:
    """What judge() needs to know of the session built on a Daw."""

    def __init__(self):
        self.phrases = []           # (tick of its last note-off, ticks in the line it must start on)
        self.stop_k = self.cont_k = self.change_k = self.end_k = 0
        self.n_ticks = 0


def build(daw):
    """Puts the session on DAW's timeline; returns its Scene."""
    sc = Scene()
    start_k = 96                    # the tempo is known by Start
    daw.add(start_k, b"\xfa")
    motif = [(0, 60, 10), (12, 64, 10), (24, 67, 10)]
    k = start_k
    for i in range(6):
        last = daw.phrase(k, [(o, p, ln + 3 * i) for o, p, ln in motif])
        sc.phrases.append((last, PPQN))
        k += 2 * BAR
    daw.add(k - 8, Ctl("set response_start bar"))
    for i in range(2):
        last = daw.phrase(k + PPQN, [(o, p, ln + 5 * i) for o, p, ln in motif])
        sc.phrases.append((last, BAR))
        k += 3 * BAR
    daw.add(k - 8, Ctl("set response_start beat"))

    # Stop in the middle of a long answer; a phrase played while stopped is
    # not answered; the Song Position Pointer moves the song 7 to 12 clocks
    # off its old beat grid (a service that ignored it would answer off the
    # beat); Continue, and the next phrase is answered on the new grid.
    long_motif = [(12 * j, 48 + 2 * j, 10) for j in range(10)]
    stop_phrase_end = daw.phrase(k, long_motif)
    # ~1.6 s into the answer: 4 clocks into the echo's eighth note, 6 before
    # its end (a clock or two of lateness still leaves a note sounding, and
    # an answer that came too late for its beat line and starts up to three
    # beats later is still playing).
    sc.stop_k = stop_phrase_end + 15 + 24 + 39 + 36
    daw.add(sc.stop_k, b"\xfc")
    stopped_phrase_end = daw.phrase(sc.stop_k + 48, motif)
    sc.cont_k = stopped_phrase_end + 2 * BAR
    stop_pos = sc.stop_k - start_k                  # where Continue would go on from
    sixteenths = (stop_pos + 12) // 6 + 4 * 16      # four bars on, off the old grid
    daw.add(sc.cont_k - BAR, bytes([0xF2, sixteenths & 0x7F, sixteenths >> 7]))
    daw.add(sc.cont_k, b"\xfb")
    last = daw.phrase(sc.cont_k + 24, motif)
    sc.phrases.append((last, PPQN))
    k = sc.cont_k + 24 + 2 * BAR

    # A new tempo: 140 BPM from tick change_k; status one beat later.
    sc.change_k = k
    daw.tempo[sc.change_k] = 140.0
    daw.add(sc.change_k + PPQN, Ctl("status", "tempo"))
    last = daw.phrase(sc.change_k + PPQN, motif)
    sc.phrases.append((last, PPQN))
    sc.end_k = sc.change_k + PPQN + 2 * BAR
    daw.add(sc.end_k, b"\xfc")
    sc.n_ticks = sc.end_k + 24
    return sc


def field(status, key):
    m = re.search(r"\b%s=(\S+)" % key, status or "")
    return m.group(1) if m else None


def theil_sen_bpm(times):
    """The tempo of clocks that came at TIMES (seconds), as the service fits it."""
    slopes = sorted((times[j] - times[i]) / (j - i) for i in range(len(times)) for j in range(i + 1, len(times)))
    n = len(slopes)
    median = slopes[n // 2] if n % 2 else 0.5 * (slopes[n // 2 - 1] + slopes[n // 2])
    return 60.0 / (median * PPQN)


def tick_jitter_ms(sent, k, span=PPQN, avoid=None):
    """How far the client's ticks from K - SPAN to K + SPAN (not across tick
    AVOID, a tempo change) left from a straight line through them, at most,
    in ms: the noise of the client's own timing, its reads included."""
    lo, hi = k - span, k + span
    if avoid is not None:
        if lo < avoid <= k:
            lo = avoid
        elif k < avoid <= hi:
            hi = avoid - 1
    run = [(kk, t) for kk, t, _ in sent if lo <= kk <= hi]
    n = len(run)
    if n < 3:
        return 0.0
    mk = sum(kk for kk, _ in run) / n
    mt = sum(t for _, t in run) / n
    slope = sum((kk - mk) * (t - mt) for kk, t in run) / sum((kk - mk) ** 2 for kk, _ in run)
    return max(abs(t - (mt + slope * (kk - mk))) for kk, t in run) * 1000.0


def judge(sc, sent, msgs, replies, status, log, silence_s, onset_ms, stop_ms, transport=None,
          tempo_bpm=1.0, line_slack=0):
    """Checks what came back.  SENT: (tick, time, song position or None) of
    each clock as it went out; MSGS: (time, status, d1, d2) of what the
    service sent, on the same clock (seconds); REPLIES: the Daw's Ctl
    replies; STATUS: `ctl status` after the session; LOG: the service's
    log; SILENCE_S: its phrase_silence_ms; TRANSPORT: {tick: time} of the
    transport messages when they went out apart from their tick's clock;
    TEMPO_BPM: how far the followed tempo may be from the clocks'; LINE_SLACK:
    how many beat (bar) lines an answer may start off the first one after
    the phrase end (0 but in an emulated guest, whose own clocks stall).
    Prints the figures."""
    transport = transport or {}
    check("transport=stopped" in status and "sync=clock" in status,
          "status shows the transport: %s" % status)
    check("phrase not answered: the transport is stopped" in log,
          "the log says why the phrase played while stopped was not answered")
    ons = [(t, p) for t, s, p, v in msgs if s & 0xF0 == 0x90 and v > 0]
    offs = [(t, p) for t, s, p, v in msgs if s & 0xF0 == 0x80 or (s & 0xF0 == 0x90 and v == 0)]
    tick_time = {k: t for k, t, _ in sent}
    check(len(tick_time) == sc.n_ticks, "every clock went out: %d of %d" % (len(tick_time), sc.n_ticks))
    if len(tick_time) != sc.n_ticks:
        return

    # First note of each answer: the first note-on after each phrase end,
    # measured from the beat (bar) line nearest it.  The measure is the
    # client's own: its ticks leave late when its machine stalls, and its
    # reads of what came back are stamped late alike; both show as the
    # ticks' jitter around the answer, which is printed and allowed for
    # (on a quiet machine a few tenths of a ms).
    errors, jitters = [], []
    for i, (last, unit) in enumerate(sc.phrases):
        t_end = tick_time[last] + silence_s
        first = next(((t, p) for t, p in ons if t > t_end - 0.05), None)
        if not check(first is not None, "phrase %d was answered" % i):
            continue
        lines = [e for e in sent if e[2] is not None and e[2] % unit == 0]
        k_n, t_n, pos = min(lines, key=lambda e: abs(e[1] - first[0]))
        err_ms = (first[0] - t_n) * 1000.0
        jit = tick_jitter_ms(sent, k_n, avoid=sc.change_k)
        errors.append(err_ms)
        jitters.append(jit)
        # The first line after the phrase end and the head start.
        want = next(kk for kk, tt, pp in sent
                    if pp is not None and pp % unit == 0 and tt >= t_end + 0.010)
        check(abs(k_n - want) <= line_slack * unit
              or (abs(k_n - want) == unit and abs(tick_time[want] - t_end - 0.010) < 0.01),
              "answer %d on the first %s line after the phrase end (tick %d, song position %s; expected tick %d)"
              % (i, "beat" if unit == PPQN else "bar", k_n, pos, want))
        check(abs(err_ms) <= onset_ms + jit,
              "answer %d: first note %+.2f ms from its %s line (limit %.1f ms + the client's jitter there, %.2f ms)"
              % (i, err_ms, "beat" if unit == PPQN else "bar", onset_ms, jit))
    if errors:
        a = sorted(abs(e) for e in errors)
        print("first note vs beat tick, ms: n=%d %s | |err| median %.2f max %.2f"
              % (len(errors), " ".join("%+.2f" % e for e in errors), a[len(a) // 2], a[-1]))
        print("the client's tick jitter around each, ms: %s" % " ".join("%.2f" % j for j in jitters))

    # Stop: the last note-off within stop_ms, no note-on after it.
    t_stop = transport.get(sc.stop_k, tick_time[sc.stop_k])
    t_cont = tick_time[sc.cont_k]
    sounding = unended_notes([(s, p, v) for t, s, p, v in msgs if t < t_stop])
    print("notes sounding at Stop: %d" % len(sounding))
    check(len(sounding) > 0, "the answer was playing when Stop came")
    offs_after = [t for t, p in offs if t_stop <= t < t_cont]
    ons_after = [t for t, p in ons if t_stop + STOP_RACE_S <= t < t_cont]
    if offs_after:
        print("Stop -> last note-off: %.2f ms" % ((max(offs_after) - t_stop) * 1000))
    check(offs_after and max(offs_after) - t_stop <= stop_ms / 1000.0,
          "silent within %.0f ms of Stop: %s" % (stop_ms, ["%.2f ms" % ((t - t_stop) * 1000) for t in offs_after]))
    check(ons_after == [], "no note-on after Stop until Continue: %r" % ons_after)
    check(unended_notes([(s, p, v) for t, s, p, v in msgs if t < t_cont]) == [],
          "nothing sounding after Stop")

    # A new tempo followed within one beat: the service's tempo is that of
    # the beat of clocks it got at the new tempo (140 BPM as sent; a DAW
    # that cannot keep time, as in an emulated guest under load, delivers
    # a little less or more).
    tempo = field(replies.get("tempo"), "tempo")
    got = theil_sen_bpm([tick_time[k] for k in range(sc.change_k, sc.change_k + PPQN)])
    print("tempo one beat after the change to 140 BPM: %s (the clocks as delivered: %.2f)" % (tempo, got))
    check(abs(got - 140.0) < 5.0, "the DAW sent the new tempo: %.2f BPM" % got)
    check(tempo is not None and abs(float(tempo) - got) < tempo_bpm,
          "tempo followed within a beat: %r" % replies.get("tempo"))
    check(unended_notes([(s, p, v) for t, s, p, v in msgs]) == [], "every note ended")

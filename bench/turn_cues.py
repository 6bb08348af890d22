#!/usr/bin/env python3
"""turn_cues.py: how far the phrase end can be heard from what was played (issue 38).

bench_turn keeps, at every silence of a split, the model's odds of the
player's next event.  This script adds what a listener hears besides: how
long the last chord was held against the phrase's pace, how loud it was
against the notes before it, whether the pedal was the last thing lifted,
whether the last chord stands on the key's tonic, and fits, on train, one
logistic per moment of the silence (300 and 600 ms by default): at each,
the phrase has ended when the fit's score passes its threshold, else the
silence rule answers at 800 ms.  The thresholds are the fastest that keep
train's barge-ins within 0.1 a minute of the 800 ms rule's; the table is
then printed for valid, with the definitions of bench_turn.c (a real end:
the end of a performance, or 2 s or more with nothing sounding; a
barge-in: the player plays within 2 s of an answer's start).

    build/bench/bench_turn odds ROOT ROOT/split.tsv train T0.bin --part 0/2   # and 1/2
    build/bench/bench_turn odds ROOT ROOT/split.tsv valid V0.bin --part 0/2   # and 1/2
    python3 bench/turn_cues.py ROOT --train T0.bin T1.bin --valid V0.bin V1.bin --out DIR \
        [--folds 4] [--probe K [--emit FILE]] [--oracle]

With --folds K, train's silences are also answered by rules fitted and tuned
on other pieces only (K folds of train's pieces): how the rule does on
music it was not fitted to, with all of train's ends behind the figures.

With --probe K (the odds files made with bench_turn odds --logits), a
third rule also weighs the model's whole distribution of the player's next
event at the silence, not only its odds of a rest: the first K principal
components (over train) of its log-probabilities, a linear probe of what
the model expects (a new phrase's first note, a note-off, a run going on).
With --emit FILE it writes the cue rule and the probe's, fitted on all of
train, as play/turn.c weighs them (src/play/turn_fit.h).

With --oracle it also prints how far each rule's inputs could go on valid
if its thresholds were chosen there (never how the rule is tuned): the
fewest barge-ins with half of valid's real ends answered by the first
moment and 90 % by the last, and how well single inputs tell valid's real
ends from its pauses of at most 800 ms (the chance an end scores above a
pause: the model's log-odds of a rest, and with --probe its log-probability
of EOS, which a model trained with data.end_share has learnt).

The cues of each split are kept in DIR (reading the MIDI files is the slow
part: about 10 minutes for all of train), with a picture of the trade-off
on valid (frontier.png): the share of real ends answered by 600 ms against
the barge-ins a minute, for the odds alone and for the odds with the cues.
"""
import argparse
import bisect
import copy
import csv
import math
import os
import struct
import sys
import time

import mido
import numpy as np
import torch

END_S, BARGE_S, SILENCE_S, BUDGET = 2.0, 2.0, 0.8, 0.1
EOS_ID = 1      # in mt310 (PAD 0, EOS 1: train/data.py's Layout), the layout bench_turn's logits are in
MAJOR = np.array([6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88])
MINOR = np.array([6.33, 2.68, 3.52, 5.38, 2.60, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34, 3.17])
CUES = ["log age", "log pace", "chord size", "loudness", "pedal last", "bass on tonic",
        "key clarity", "tonic triad"]

# ---- the performances: silences and their cues ----


def read_events(path):
    """Note-ons, note-offs and pedal messages of PATH, in seconds."""
    mf = mido.MidiFile(path)
    out, t, tempo = [], 0.0, 500000
    for msg in mido.merge_tracks(mf.tracks):
        t += mido.tick2second(msg.time, mf.ticks_per_beat, tempo)
        if msg.type == "set_tempo":
            tempo = msg.tempo
        elif msg.type == "note_on" and msg.velocity > 0:
            out.append((t, "on", msg.note, msg.velocity))
        elif msg.type == "note_off" or msg.type == "note_on":
            out.append((t, "off", msg.note, 0))
        elif msg.type == "control_change" and msg.control == 64:
            out.append((t, "pedal", 0, msg.value))
    return out


def key_of(hist):
    """(correlation, tonic pitch class, minor) of the best Krumhansl-Kessler key; of keys
    that fit alike (within 1e-9: a histogram of few classes) the first, major before minor,
    as play/key_fit.c, whose rounding differs."""
    best = (-2.0, 0, 0)
    if np.ptp(hist) == 0:       # nothing, or every class alike: no key
        return best
    for minor, profile in ((0, MAJOR), (1, MINOR)):
        for k in range(12):
            c = np.corrcoef(hist, np.roll(profile, k))[0, 1]
            if c > best[0] + 1e-9:
                best = (c, k, minor)
    return best


def last_chord(on_t, on_v, n):
    """The slice of the last chord among the first N note-ons: the onsets within 60 ms
    of the last, or the chord before when those are a ghost note just after it."""
    def start_of(j):
        while j > 0 and on_t[j] - on_t[j - 1] < 0.06:
            j -= 1
        return j
    j = start_of(n - 1)
    loud = on_v[max(0, n - 20):n].mean()
    if j > 0 and on_v[j:n].max() < 0.4 * loud and on_t[n - 1] - on_t[j - 1] < 0.3:
        j = start_of(j - 1)
    return j


def performance_cues(path):
    """Every silence of the performance (nothing held, pedal up, until the next note-on or
    pedal press): its start, end, next note-on and cues; and the minutes of playing."""
    ev = read_events(path)
    down, pedal, quiet_from = set(), False, None
    on_t, on_p, on_v, rows = [], [], [], []
    for t, kind, note, value in ev:
        if kind == "on":
            down.add(note)
            on_t.append(t), on_p.append(note), on_v.append(value)
        elif kind == "off":
            down.discard(note)
        elif (value >= 64) == pedal:
            continue            # a half-pedal's values: no press, no lift
        else:
            pedal = value >= 64
        quiet = not down and not pedal
        if quiet and quiet_from is None and len(on_t) > 1:
            quiet_from = (t, len(on_t), kind == "pedal")
        elif not quiet and quiet_from is not None:
            rows.append(quiet_from + (t,))
            quiet_from = None
    if quiet_from is not None:
        rows.append(quiet_from + (math.inf,))
    on_t, on_p, on_v = np.array(on_t), np.array(on_p), np.array(on_v, float)
    out = []
    for start, n, pedal_last, end in rows:
        j = last_chord(on_t, on_v, n)
        chord = on_p[j:n]
        k8 = max(0, n - 8)
        pace = (on_t[n - 1] - on_t[k8]) / max(1, n - 1 - k8)
        loud = on_v[j:n].mean() / max(1.0, on_v[max(0, n - 20):n].mean())
        clarity, tonic, minor = key_of(np.bincount(on_p[max(0, n - 200):n] % 12, minlength=12).astype(float))
        pcs = set((chord - tonic) % 12)
        triad = {0, 3, 7} if minor else {0, 4, 7}
        nxt = bisect.bisect_right(on_t, start)
        out.append([start, end, on_t[nxt] if nxt < len(on_t) else math.inf,
                    math.log(start - on_t[n - 1] + 0.01), math.log(pace + 0.01), n - j, loud,
                    float(pedal_last), float((chord.min() - tonic) % 12 == 0), clarity,
                    float(0 in pcs and pcs <= triad)])
    minutes = (ev[-1][0] - on_t[0]) / 60 if len(on_t) else 0
    return np.array(out, float).reshape(-1, 3 + len(CUES)), minutes


def split_files(root, split):
    with open(os.path.join(root, "split.tsv")) as f:
        return [os.path.join(root, r["file"]) for r in csv.DictReader(f, delimiter="\t") if r["split"] == split]


def split_cues(root, split, every, cache):
    """Per performance (every EVERY-th of the split): the silences' rows, and the minutes."""
    if os.path.exists(cache):
        z = np.load(cache, allow_pickle=True)
        return list(z["perfs"]), list(z["minutes"])
    files = split_files(root, split)[::every]
    perfs, minutes, t0 = [], [], time.time()
    for i, path in enumerate(files):
        rows, m = performance_cues(path)
        perfs.append(rows)
        minutes.append(m)
        el = time.time() - t0
        if (i + 1) % 25 == 0 or i + 1 == len(files):
            print(f"{split}: {i + 1}/{len(files)} performances read, {sum(minutes):.0f} min of playing, "
                  f"about {el / (i + 1) * (len(files) - i - 1):.0f} s left", file=sys.stderr)
    tmp = cache + ".part.npz"
    np.savez(tmp, perfs=np.array(perfs, dtype=object), minutes=np.array(minutes))
    os.replace(tmp, cache)
    return perfs, minutes


# ---- the model's odds, from bench_turn's files ----

SILENCE2 = [("perf", "<i4"), ("notes", "<i4"), ("start", "<f8"), ("next", "<f8"),
            ("quiet_start", "<f8"), ("quiet_end", "<f8"), ("next_note", "<f8"),
            ("ioi", "<f4"), ("last_len", "<f4"), ("survive", "<f4", 129), ("cues", "<f4", len(CUES)),
            ("have_cues", "<i4")]
SILENCE = np.dtype(SILENCE2 + [("probe", "<f4", 2), ("have_probe", "<i4"), ("unused", "<i4")])
MAGIC, MAGIC2 = 0x33727574, 0x32727574     # "tur3" (the probe), "tur2" (before it)
DTYPES = {MAGIC: SILENCE, MAGIC2: np.dtype(SILENCE2)}
LOGITS_MAGIC = 0x4c727574       # "turL": bench_turn odds --logits


def read_logits(path, n):
    """The N silences' log-probabilities (n, vocabulary) from bench_turn's PATH.logits."""
    with open(path + ".logits", "rb") as f:
        b = f.read()
    magic, count, size = struct.unpack("<3I", b[:12]) if len(b) >= 12 else (0, 0, 0)
    if magic != LOGITS_MAGIC or count != n or len(b) != 12 + 4 * n * size:
        sys.exit(f"{path}.logits: not the logits of {path}'s {n} silences (bench_turn odds --logits)")
    x = np.frombuffer(b, "<f4", n * size, 12).reshape(n, size).astype(float)
    x -= x.max(1, keepdims=True)
    return x - np.log(np.exp(x).sum(1, keepdims=True))


def read_odds(paths, logits=False):
    """{(performance, quiet start in ms): (survive[0..steps], the cues play/turn.c heard or
    None, with LOGITS the log-probabilities of the next event or else None)} from the parts
    of one split."""
    odds = {}
    for part, path in enumerate(paths):
        with open(path, "rb") as f:
            b = f.read()
        magic, n_perf, n, steps, step_ms = struct.unpack("<5I", b[:20]) if len(b) >= 20 else (0,) * 5
        dt = DTYPES.get(magic)
        if dt is None or step_ms != 10 or len(b) < 20 + 8 * n_perf + dt.itemsize * n:
            sys.exit(f"{path}: not a bench_turn odds file of 10 ms steps")
        a = np.frombuffer(b, dt, n, 20 + 8 * n_perf)
        logp = read_logits(path, n) if logits else [None] * n
        for x, lp in zip(a, logp):
            key = (int(x["perf"]) * len(paths) + part, int(round(x["quiet_start"] * 1000)))
            odds.setdefault(key, (x["survive"][:steps + 1].astype(float),
                                  x["cues"].astype(float) if x["have_cues"] else None, lp))
    return odds


class Split:
    """A split's silences: when each starts and ends, the next note, the cues, the odds."""

    def __init__(self, perfs, minutes, odds):
        rows, surv, perf, logp, self.c_cues = [], [], [], [], []
        for p, r in enumerate(perfs):
            for x in r:
                s = odds.get((p, int(round(x[0] * 1000))))
                if s is not None:       # bench_turn keeps the silences over 30 ms
                    rows.append(x)
                    surv.append(s[0])
                    perf.append(p)
                    self.c_cues.append(s[1])
                    logp.append(s[2])
        rows, self.perf, self.perf_minutes = np.array(rows), np.array(perf), np.array(minutes)
        self.logp = np.array(logp) if logp and logp[0] is not None else None
        self.probe = np.zeros((len(rows), 0))   # set_probe: the probe's inputs
        self.start, self.end, self.next_note = rows[:, 0], rows[:, 1], rows[:, 2]
        self.cues, self.survive = rows[:, 3:], np.array(surv)
        self.minutes = sum(minutes)
        self.real_end = self.end - self.start >= END_S

    def take(self, perfs):
        """The silences of the performances PERFS (a mask over them) only."""
        part = copy.copy(self)
        keep = perfs[self.perf]
        for name in ("start", "end", "next_note", "cues", "survive", "real_end", "perf", "probe"):
            setattr(part, name, getattr(self, name)[keep])
        part.c_cues = [c for c, k in zip(self.c_cues, keep) if k]
        part.minutes = self.perf_minutes[perfs].sum()
        return part

    def parity(self):
        """(silences, the largest difference) between these cues and play/turn.c's."""
        d = [np.abs(c - x).max() for c, x in zip(self.c_cues, self.cues) if c is not None]
        return len(d), max(d) if d else math.nan

    def rest_logit(self, t):
        """log-odds of P(at rest | no note for t s)"""
        k = int(round(t * 100))
        p = np.clip(self.survive[:, -1] / np.maximum(self.survive[:, k], 1e-12), 1e-6, 1 - 1e-6)
        return np.log(p / (1 - p))

    def set_probe(self, mean, comps):
        """The probe's inputs: the log-probabilities' coordinates on COMPS (about MEAN)."""
        self.probe = (self.logp - mean) @ comps.T

    def design(self, t, cues=True, probe=False):
        x = self.rest_logit(t)[:, None]
        x = np.hstack([self.cues, x]) if cues else x
        return np.hstack([x, self.probe]) if probe else x

    def outcome(self, at):
        """(median, p90 delay in ms at the real ends, barge-ins, per minute, answers) when
        the answer comes AT s into each silence (unless the player comes first)."""
        answered = self.start + at < self.end
        barge = int((answered & (self.next_note - (self.start + at) < BARGE_S)).sum())
        d = np.sort(at[self.real_end & answered]) * 1000
        p90 = d[max(0, math.ceil(0.9 * len(d)) - 1)] if len(d) else math.nan
        return np.median(d), p90, barge, barge / self.minutes, int(answered.sum())


def fit_logistic(x, y, l2=1e-3):
    """Weights (on the raw features) and bias of an L2-regularised logistic regression."""
    x, y = torch.tensor(x), torch.tensor(y, dtype=torch.float64)
    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = (x - mu) / sd
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=500, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z @ w + b, y) + l2 * (w * w).sum()
        loss.backward()
        return loss
    opt.step(closure)
    return (w / sd).detach().numpy(), float(b - (w / sd * mu).sum())


def thresholds(n_moments, top=3.0):
    """The thresholds a rule of N_MOMENTS is tuned over, each a tuple: the first moment's
    from -3 to TOP by 0.1, the last's (of two) from -4 up to the first's (a later moment
    is not stricter)."""
    for h1 in np.arange(-3, top + 0.01, 0.1):
        if n_moments == 1:
            yield (h1,)
            continue
        for h2 in np.arange(-4, h1 + 0.01, 0.1):
            yield (h1, h2)


def share(s, at, moments):
    """The shares of S's real ends answered by the first and by the last of MOMENTS when
    the answers come AT s into each silence."""
    return tuple(((at <= t + 1e-9) & s.real_end).sum() / s.real_end.sum() for t in (moments[0], moments[-1]))


class Rule:
    """One logistic per moment of the silence; the earliest moment whose score passes its
    threshold answers, else the silence rule.

    Each moment's logistic is fitted on the silences whose answer there changes the
    figures: the real ends (answered sooner) against the pauses the 800 ms rule would not
    answer (a barge-in added).  A pause of 0.8 to 2 s is left out: the silence rule answers
    into it too, so answering it sooner adds no barge-in (one of 1.5 s is barged into at
    300 ms as at 800).  Fitted on every silence still going on, the logistic spent itself
    on telling those from real ends, which costs nothing here."""

    def __init__(self, train, moments, cues, probe=False):
        self.moments, self.cues, self.probe, self.fits = moments, cues, probe, []
        length = train.end - train.start
        for t in moments:
            use = (length > t) & (train.real_end | (length <= SILENCE_S))
            self.fits.append(fit_logistic(train.design(t, cues, probe)[use], train.real_end[use]))

    def scores(self, s):
        return [s.design(t, self.cues, self.probe) @ w + b for t, (w, b) in zip(self.moments, self.fits)]

    @staticmethod
    def answer(scores, moments, th):
        at = np.full(len(scores[0]), SILENCE_S)
        for sc, t, h in reversed(list(zip(scores, moments, th))):
            at = np.where(sc > h, t, at)
        return at

    def tune(self, train, budget=BUDGET):
        """The thresholds that answer the real ends of train soonest (the worse of median
        / first moment and p90 / last moment; then the most by the last moment) within
        BUDGET barge-ins a minute above the 800 ms rule's."""
        sc, limit = self.scores(train), train.outcome(np.full(len(train.start), SILENCE_S))[3] + budget
        best = None
        for th in thresholds(len(self.moments)):
            at = self.answer(sc, self.moments, th)
            o = train.outcome(at)
            if o[3] > limit:
                continue
            by_last = ((at <= self.moments[-1] + 1e-9) & train.real_end).sum()
            key = (max(o[0] / self.moments[0], o[1] / self.moments[-1]), -by_last, o[3])
            if best is None or key < best[0]:
                best = (key, th)
        self.th = best[1]
        return self.th


def held_out(train, pieces, folds, moments, cues, probe=False, budget=BUDGET):
    """Each silence of train answered by a rule fitted and tuned on the other
    folds' pieces: train's pieces go round the FOLDS in order of name, so no
    piece is heard both in a rule's fitting and in its scoring (as valid's
    pieces are not train's).  The answers' moments, over all of train."""
    names = sorted(set(pieces))
    fold_of = np.array([names.index(p) % folds for p in pieces])
    at = np.zeros(len(train.start))
    for f in range(folds):
        fit, score = train.take(fold_of != f), train.take(fold_of == f)
        r = Rule(fit, moments, cues, probe)
        th = r.tune(fit, budget)
        at[(fold_of == f)[train.perf]] = r.answer(r.scores(score), moments, th)
        print(f"  fold {f + 1}/{folds}: {(fold_of == f).sum()} performances held out, thresholds "
              f"{', '.join(f'{h:+.1f}' for h in th)}", file=sys.stderr)
    return at


def auc(pos, neg):
    """The chance a score of POS is above one of NEG (ties count half)."""
    pos, neg = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float((pos > neg).mean() + 0.5 * (pos == neg).mean())


def oracle(valid, rules, moments):
    """Each rule's fewest barge-ins on VALID with both delay goals met, its thresholds chosen
    on VALID itself: how far its inputs go; and single inputs' separation of ends from pauses."""
    allowed = valid.outcome(np.full(len(valid.start), SILENCE_S))[2] + BUDGET * valid.minutes
    print(f"\noracle (valid's own thresholds; {allowed:.0f} barge-ins allowed):")
    for name, r in rules.items():
        sc, best = r.scores(valid), None
        for th in thresholds(len(moments), top=4.0):
            at = r.answer(sc, moments, th)
            by = share(valid, at, moments)
            if by[0] >= 0.5 and by[1] >= 0.9:
                b = valid.outcome(at)[2]
                if best is None or b < best[0]:
                    best = (b, th, by)
        print(f"  {name}: " + (f"{best[0]} barge-ins at {', '.join(f'{h:+.1f}' for h in best[1])} ({best[2][0]:.0%} "
                               f"by {moments[0] * 1000:.0f}, {best[2][1]:.0%} by {moments[-1] * 1000:.0f})"
                               if best else "no thresholds meet both delay goals"))
    length = valid.end - valid.start
    for t in moments:
        end, pause = (length > t) & valid.real_end, (length > t) & (length <= SILENCE_S)
        inputs = [("log-odds of a rest", valid.rest_logit(t))]
        if valid.logp is not None:
            inputs.append(("log P(EOS)", valid.logp[:, EOS_ID]))
        print(f"  at {t * 1000:.0f} ms, ends above pauses of at most {SILENCE_S * 1000:.0f} ms: "
              + ", ".join(f"{n} {auc(x[end], x[pause]):.3f} (medians {np.median(x[end]):+.2f}, "
                          f"{np.median(x[pause]):+.2f})" for n, x in inputs))


def row(name, o, by):
    """A table row: O (median, p90, barge-ins, per minute, answers) and BY, the shares of the
    real ends answered by the first and the last moment."""
    return (f"| {name:<38} | {o[0]:6.0f} | {o[1]:6.0f} | {by[0]:6.0%} | {by[1]:6.0%} | {o[2]:7d} | {o[3]:6.3f} "
            f"| {o[4]:7d} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", help="the ASAP folder (split.tsv and the MIDI files)")
    ap.add_argument("--train", nargs="+", required=True, help="bench_turn odds files of train, its parts in order")
    ap.add_argument("--valid", nargs="+", required=True, help="bench_turn odds files of valid, its parts in order")
    ap.add_argument("--train-every", type=int, default=1, help="the --every the train files were made with")
    ap.add_argument("--moments", default="0.3,0.6", help="s into the silence at which the rule judges")
    ap.add_argument("--folds", type=int, default=0,
                    help="also answer train's silences by rules fitted on other pieces (K folds of train's pieces)")
    ap.add_argument("--probe", type=int, default=0,
                    help="also a rule on K principal components of the model's next-event log-probabilities "
                         "(odds files made with --logits)")
    ap.add_argument("--budget", type=float, default=BUDGET,
                    help="barge-ins a minute above the 800 ms rule's that the tuning on train allows "
                         f"(default {BUDGET}: the goal's)")
    ap.add_argument("--emit", help="with --probe: write the cue rule and the probe's, fitted on all of train, "
                                    "as C (src/play/turn_fit.h)")
    ap.add_argument("--oracle", action="store_true",
                    help="also each rule's fewest barge-ins on valid with thresholds chosen there (how far its "
                         "inputs go), and single inputs' separation of ends from pauses")
    ap.add_argument("--out", required=True, help="folder for the cues' cache and frontier.png")
    a = ap.parse_args()
    if a.emit and not a.probe:
        ap.error("--emit writes the probe's rule with the cue rule: it needs --probe K")
    os.makedirs(a.out, exist_ok=True)
    moments = [float(x) for x in a.moments.split(",")]
    sets = {}
    for name, files, every in (("train", a.train, a.train_every), ("valid", a.valid, 1)):
        perfs, minutes = split_cues(a.root, name, every, os.path.join(a.out, f"cues-{name}-{every}.npz"))
        sets[name] = Split(perfs, minutes, read_odds(files, a.probe > 0))
    train, valid = sets["train"], sets["valid"]
    if a.probe:
        mean = train.logp.mean(0)
        comps = np.linalg.svd(train.logp[::5] - mean, full_matrices=False)[2][:a.probe]
        for s in (train, valid):
            s.set_probe(mean, comps)
    for name, s in sets.items():
        n, diff = s.parity()
        print(f"{name}: {len(s.start)} silences over 30 ms, {s.real_end.sum()} real ends, "
              f"{s.minutes:.0f} min of playing; play/turn.c's cues agree on {n} of them to {diff:.1e}")
    rules = {"odds alone": Rule(train, moments, False), "odds and cues": Rule(train, moments, True)}
    if a.probe:
        rules[f"odds, cues, probe ({a.probe})"] = Rule(train, moments, True, True)
    print("\nweights (per unit of each cue; the last: the model's log-odds of a rest):")
    for t, (w, b) in zip(moments, rules["odds and cues"].fits):
        print(f"  at {t * 1000:.0f} ms: " + ", ".join(f"{n} {x:+.3f}" for n, x in zip(CUES + ["odds"], w))
              + f", bias {b:+.3f}")
    head = (f"| median | p90    | by {moments[0] * 1000:.0f} | by {moments[-1] * 1000:.0f} | barge-ins | per min "
            "| answers |\n|----------------------------------------|--------|--------|--------|--------|---------|"
            "--------|---------|")
    print(f"\n| {'rule (valid)':<38} " + head)

    def silence_rows(s):
        for ms in (800, 300):
            at = np.full(len(s.start), ms / 1000)
            print(row(f"silence {ms} ms", s.outcome(at), share(s, at, moments)))
    silence_rows(valid)
    for name, r in rules.items():
        th = r.tune(train, a.budget)
        at_train, at = r.answer(r.scores(train), moments, th), r.answer(r.scores(valid), moments, th)
        o_train = train.outcome(at_train)
        print(row(f"{name} ({', '.join(f'{h:+.1f}' for h in th)})", valid.outcome(at), share(valid, at, moments))
              + f"  train: {o_train[0]:.0f} / {o_train[1]:.0f} ms, {share(train, at_train, moments)[1]:.0%} by "
              f"{moments[-1] * 1000:.0f}, {o_train[3]:.3f}/min")
    if a.folds > 1:
        print(f"\n| {f'rule (train, pieces held out, {a.folds} folds)':<38} " + head)
        pieces = [os.path.dirname(f) for f in split_files(a.root, "train")[::a.train_every]]
        silence_rows(train)
        for name, r in rules.items():
            at = held_out(train, pieces, a.folds, moments, r.cues, r.probe, a.budget)
            print(row(name, train.outcome(at), share(train, at, moments)))
    if a.oracle:
        oracle(valid, rules, moments)
    plot(valid, rules, moments, os.path.join(a.out, "frontier.png"))
    if a.emit:
        emit(a.emit, rules["odds and cues"], rules[f"odds, cues, probe ({a.probe})"], train, mean, comps, a)


def emit(path, cue_rule, r, train, mean, comps, a):
    """Both rules as play/turn.c weighs them: the cue rule (any vocabulary), and the probe's,
    its components folded into one weight per id of the vocabulary on the log-probabilities
    (and their mean into the bias)."""
    n_in = len(CUES) + 1
    cue_w, id_w = [], []
    for w, b in r.fits:
        ids = comps.T @ w[n_in:]
        cue_w.append(list(w[:n_in]) + [b - mean @ ids])
        id_w.append(ids)
    for m, (t, score) in enumerate(zip(r.moments, r.scores(train))):     # the folded weights: the rule's scores
        x = np.hstack([train.cues, train.rest_logit(t)[:, None]])
        assert np.abs(x @ np.array(cue_w[m][:n_in]) + cue_w[m][n_in] + train.logp @ id_w[m] - score).max() < 1e-6

    def num(v, f):
        return ", ".join(f % x for x in v)

    def th(rule):
        return ", ".join(f"{h:.1f}" for h in rule.th)
    rows_c = ",\n".join(f"    {{ {num(list(w) + [b], '%.6f')} }}" for w, b in cue_rule.fits)
    rows_p = ",\n".join(f"    {{ {num(w, '%.6f')} }}" for w in cue_w)
    rows_i = ",\n".join("    {\n" + "\n".join("        " + num(ids[i:i + 6], "%+.9e") + ","
                                               for i in range(0, len(ids), 6)) + "\n    }" for ids in id_w)
    text = f"""/* turn_fit.h: the phrase end's rules as fitted and tuned on all of ASAP's train split ({len(train.start)} silences, {train.real_end.sum()} real ends) by bench/turn_cues.py --probe {a.probe} --emit; generated, do not edit. */
#ifndef CONTINUO_PLAY_TURN_FIT_H
#define CONTINUO_PLAY_TURN_FIT_H

/* The rules' thresholds at TURN_MOMENTS_MS: the cue rule's (the cues and the odds of a
 * rest), and the probe's (with the model's whole expectation); the vocabulary the probe
 * reads (mt310). */
#define TURN_TH_CUES     {{ {th(cue_rule)} }}
#define TURN_TH_PROBE    {{ {th(r)} }}
#define TURN_PROBE_VOCAB {comps.shape[1]}

/* Per moment: the weights on the cues in turn.h's order, on the log-odds of a rest, and
 * the bias; the cue rule's, then the probe rule's. */
static const double turn_fit_cues[2][TURN_CUES + 2] = {{
{rows_c},
}};

static const double turn_fit_probe_cues[2][TURN_CUES + 2] = {{
{rows_p},
}};

/* Per moment: the probe rule's weight per id on the log-probabilities of the player's next
 * event (the first {a.probe} principal components of train's, and the fit's weights on
 * them, folded). */
static const double turn_fit_probe_ids[2][TURN_PROBE_VOCAB] = {{
{rows_i},
}};

#endif
"""
    tmp = path + ".part"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    print(f"{path}: the cue rule (thresholds {th(cue_rule)}) and the probe's ({th(r)})")


def plot(valid, rules, moments, path):
    """Valid's trade-off: over every pair of thresholds that answers at least half the real
    ends by the first moment (the median goal), the most answered by the last moment for
    each count of barge-ins a minute."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    base = valid.outcome(np.full(len(valid.start), SILENCE_S))[3]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, r in rules.items():
        sc, pts = r.scores(valid), []
        for h1 in np.arange(-4, 4.01, 0.1):
            for h2 in np.arange(-5, h1 + 0.01, 0.1):
                at = r.answer(sc, moments, (h1, h2))
                if ((at <= moments[0] + 1e-9) & valid.real_end).sum() * 2 < valid.real_end.sum():
                    continue
                pts.append((valid.outcome(at)[3] - base, ((at <= moments[-1] + 1e-9) & valid.real_end).mean()
                            / valid.real_end.mean()))
        pts.sort()
        xs, ys, top = [], [], 0.0
        for x, y in pts:
            if y > top:
                top = y
                xs.append(x)
                ys.append(y)
        ax.step(xs, ys, where="post", label=name)
    ax.axvline(BUDGET, color="grey", ls="--", lw=0.8)
    ax.axhline(0.9, color="grey", ls="--", lw=0.8)
    ax.set_xlabel("barge-ins a minute above the 800 ms rule's (valid)")
    ax.set_ylabel(f"share of real ends answered by {moments[-1] * 1000:.0f} ms")
    ax.set_xlim(0, 0.5)
    ax.set_ylim(0.5, 1.0)
    ax.legend(loc="lower right")
    ax.set_title(f"half the real ends answered by {moments[0] * 1000:.0f} ms; the goal: the top left corner",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"\n{path}: the trade-off on valid")


if __name__ == "__main__":
    main()

"""player_memory.py: the player's memory: the notes the player played next after the same notes, mixed into a model's odds.

A player who plays the same pieces every day plays the same notes in the
same order, give or take the order of a chord's notes and of the two hands.
The memory keeps, for every run of K note-ons the player played (K from
KMIN to KMAX), the pitch that came next, the run keyed by its notes as a
multiset (sorted pitches): a chord rolled the other way, or the hands a
little apart, is the same key.  Given what has sounded so far, it finds the
longest run of the last K pitches it holds and gives the odds of the next
pitch from what followed it.

Those odds are mixed into the model's odds of the next note-on only, with
a weight LAMBDA x the memory's recent confidence (CONFIDENCE_DECAY: an
exponential average of the odds it gave the pitches that came, over the
note-ons it had a run for):

    p'(NOTE_ON x) = (1 - w) p(NOTE_ON x) + w P(a note-on) c(x)
    p'(anything else) = p(anything else)

so the model decides when a note comes, and the memory, once it has been
right, which one.  In music the player has not played, runs match rarely
and their odds are wrong, the confidence stays near 0 and the model's odds
are untouched: bench/adapt_memory.py measured -4.3 to -9.7 % NLL on other
performances of the pieces played, and +0.00 to +0.06 % on other music
(docs/TRAINING.md, "The player's memory").

This is the reference: nothing here trains; a Memory is built from token
sequences in a few seconds.  Follower is one stream (what sounded, the
confidence, the last odds), fed event by event.
"""

import collections
import math

import numpy as np

KMIN = 4                  # the shortest run of note-ons the memory answers for
KMAX = 12                 # the longest it matches
LAMBDA = 0.8              # the memory's weight when it has been right every time
CONFIDENCE_DECAY = 0.85   # the confidence: an exponential average of the odds it gave the notes that came


def pitches_of(ids, lay) -> list:
    """The note-on pitches of IDS (a token sequence in layout LAY), in order (0-based in the layout)."""
    on = lay.note_on_base
    return [int(t) - on for t in ids if on <= t < on + lay.n_pitches]


class Memory:
    """Runs of KMIN..KMAX note-ons of the player's playing (keyed as multisets) -> counts of the next pitch.
    LAM and DECAY are the Follower's settings that go with it into a model file."""

    def __init__(self, pitch_seqs, kmin: int = KMIN, kmax: int = KMAX, lam: float = LAMBDA,
                 decay: float = CONFIDENCE_DECAY, lay=None):
        self.kmin, self.kmax, self.lam, self.decay, self.lay = kmin, kmax, lam, decay, lay
        self.seqs = [list(p) for p in pitch_seqs]
        self.table = collections.defaultdict(collections.Counter)
        for p in self.seqs:
            for i in range(kmin, len(p)):
                for k in range(kmin, min(kmax, i) + 1):
                    self.table[tuple(sorted(p[i - k:i]))][p[i]] += 1

    @classmethod
    def from_ids(cls, seqs, lay, **kw) -> "Memory":
        return cls([pitches_of(s, lay) for s in seqs], lay=lay, **kw)

    def notes(self) -> int:
        return sum(len(p) for p in self.seqs)

    def lookup(self, hist):
        """{pitch: odds} of the next pitch after the longest run of HIST's last
        pitches the memory holds, or None."""
        for k in range(min(self.kmax, len(hist)), self.kmin - 1, -1):
            c = self.table.get(tuple(sorted(hist[-k:])))
            if c:
                n = sum(c.values())
                return {p: m / n for p, m in c.items()}
        return None


class Follower:
    """One stream through a Memory: feed() every event that sounds; weight() and
    odds are what the next event's mix uses (mix_row, or mixed_prob)."""

    def __init__(self, memory: Memory, lay, lam: float = None, decay: float = None):
        self.mem, self.lay = memory, lay
        self.lam = memory.lam if lam is None else lam
        self.decay = memory.decay if decay is None else decay
        self.hist = collections.deque(maxlen=memory.kmax)
        self.confidence = 0.0
        self.odds = None

    def weight(self) -> float:
        return self.lam * self.confidence if self.odds is not None else 0.0

    def feed(self, token: int) -> None:
        """TOKEN sounded: the confidence learns from the odds the memory gave it
        (when it was a note-on and the memory had a run), then the odds of the next."""
        on, n = self.lay.note_on_base, self.lay.n_pitches
        if not on <= token < on + n:
            return
        p = int(token) - on
        if self.odds is not None:
            self.confidence = self.decay * self.confidence + (1 - self.decay) * self.odds.get(p, 0.0)
        self.hist.append(p)
        self.odds = self.mem.lookup(list(self.hist))

    def mixed_prob(self, token: int, p_token: float, p_note_on: float) -> float:
        """The mixed odds of TOKEN coming next, from the model's odds of it
        (P_TOKEN) and of any note-on (P_NOTE_ON)."""
        w = self.weight()
        on, n = self.lay.note_on_base, self.lay.n_pitches
        if w == 0.0 or not on <= token < on + n:
            return p_token
        return (1 - w) * p_token + w * p_note_on * self.odds.get(int(token) - on, 0.0)

    def mix_row(self, logp: np.ndarray) -> np.ndarray:
        """The model's log-odds of the next event (LOGP, the vocabulary) mixed: a new row."""
        w = self.weight()
        if w == 0.0:
            return logp.copy()
        on, n = self.lay.note_on_base, self.lay.n_pitches
        p = np.exp(logp.astype(np.float64))
        p_on = p[on:on + n].sum()
        c = np.zeros(n)
        for pitch, q in self.odds.items():
            c[pitch] = q
        p[on:on + n] = (1 - w) * p[on:on + n] + w * p_on * c
        return np.log(np.maximum(p, 1e-300))


def nll_with_memory(memory: Memory, lay, seqs, logp_target, logp_note_on, **kw) -> float:
    """NLL per event of SEQS with the memory mixed in, from the model's log-odds
    of each sequence's events 1..n-1 (LOGP_TARGET[i], as `continuo eval`
    predicts them) and of any note-on at each (LOGP_NOTE_ON[i]): the same as
    mixing every row with mix_row and reading the target."""
    total, count = 0.0, 0
    for s, lt, lo in zip(seqs, logp_target, logp_note_on):
        f = Follower(memory, lay, **kw)
        for t in range(1, len(s)):
            f.feed(int(s[t - 1]))
            total -= math.log(max(f.mixed_prob(int(s[t]), math.exp(lt[t - 1]), math.exp(lo[t - 1])), 1e-300))
            count += 1
    return total / max(count, 1)


# ----------------------------------------------------------------------------- in a model file

MAX_FILE_NOTES = 200_000    # the newest note-ons a model file keeps (some 6 hours of playing; 16 MB of runs at load)


def file_parts(memory: Memory):
    """(kvs, tensors) for export.export_model's EXTRA: the tensor player.pitches
    (I32: the note-ons, 0-based in the layout, -1 between sequences; the newest
    MAX_FILE_NOTES) and the keys continuo.memory.* (models/FORMAT.md)."""
    flat = []
    for p in memory.seqs:
        flat.extend(p)
        flat.append(-1)
    flat = flat[-(MAX_FILE_NOTES + len(memory.seqs)):]
    kvs = {"continuo.memory.kmin": memory.kmin, "continuo.memory.kmax": memory.kmax,
           "continuo.memory.lambda": float(memory.lam), "continuo.memory.decay": float(memory.decay)}
    return kvs, [("player.pitches", np.asarray(flat, dtype="<i4"))]


def from_file(path: str):
    """The Memory a model file carries (as the engine builds it at load), or None."""
    import data
    import export
    kvs, tensors = export.read_gguf(path)
    if "player.pitches" not in tensors:
        return None
    flat = [int(x) for x in tensors["player.pitches"]]
    seqs, cur = [], []
    for x in flat:
        if x < 0:
            seqs.append(cur)
            cur = []
        else:
            cur.append(x)
    seqs.append(cur)
    return Memory([p for p in seqs if p], int(kvs["continuo.memory.kmin"]), int(kvs["continuo.memory.kmax"]),
                  float(kvs["continuo.memory.lambda"]), float(kvs["continuo.memory.decay"]),
                  lay=data.layout(kvs.get("continuo.vocab.name", "mt310")))


def model_odds(model, seqs: list, context: int, lay, batch: int = 8):
    """Per sequence, MODEL's log-odds of events 1..n-1 and of any note-on at
    each, in `continuo eval`'s windows (model.eval_windows), for nll_with_memory."""
    import torch
    from model import eval_windows
    on, n_p = lay.note_on_base, lay.n_pitches
    lt = [np.zeros(len(s) - 1) for s in seqs]
    lo = [np.zeros(len(s) - 1) for s in seqs]
    wins = sorted(((i, a, b) for i, s in enumerate(seqs) for a, b in eval_windows(len(s), context)),
                  key=lambda w: w[2] - w[1])
    with torch.no_grad():
        for j in range(0, len(wins), batch):
            group = wins[j:j + batch]
            L = max(b - a for _, a, b in group)
            x = np.zeros((len(group), L), np.int64)
            for r, (i, a, b) in enumerate(group):
                x[r, :b - a] = seqs[i][a:b]
            logp = torch.log_softmax(model(torch.from_numpy(x[:, :-1])).float(), -1)
            tgt = logp.gather(-1, torch.from_numpy(x[:, 1:]).unsqueeze(-1)).squeeze(-1).numpy()
            note_on = torch.logsumexp(logp[:, :, on:on + n_p], -1).numpy()
            for r, (i, a, b) in enumerate(group):
                lt[i][a:b - 1] = tgt[r, :b - a - 1]
                lo[i][a:b - 1] = note_on[r, :b - a - 1]
    return lt, lo

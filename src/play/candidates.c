/* candidates.c: B continuations of one context, decoded in one batch, measured and scored; the chosen one goes on as the continuation. */
#include "play/candidates.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/log.h"

#define EVENTS_START 1024       /* events a candidate holds before its list grows */

int candidates_init(candidates *k, continuation *home, int cap)
{
    memset(k, 0, sizeof *k);
    if (cap < 1 || cap > CANDIDATES_MAX) {
        log_error("candidates: %d asked for, 1..%d", cap, CANDIDATES_MAX);
        return -1;
    }
    k->home = home;
    if (model_batch_init(&k->batch, continuation_model_state(home), cap) != 0)
        return -1;
    for (int i = 0; i < cap; i++, k->cap++) {
        k->ev[i] = malloc(sizeof *k->ev[i] * EVENTS_START);
        if (!k->ev[i] || continuation_fork_init(&k->c[i], home) != 0) {
            free(k->ev[i]);
            log_error("candidates: out of memory");
            candidates_free(k);
            return -1;
        }
        k->cap_ev[i] = EVENTS_START;
    }
    return 0;
}

void candidates_free(candidates *k)
{
    for (int i = 0; i < k->cap; i++) {
        continuation_fork_free(&k->c[i]);
        free(k->ev[i]);
    }
    model_batch_free(&k->batch);
    memset(k, 0, sizeof *k);
}

int candidates_start(candidates *k, int n)
{
    if (n < 1 || n > k->cap) {
        log_error("candidates: %d started, room for 1..%d", n, k->cap);
        return -1;
    }
    if (k->home->s.spec.duet) {
        log_error("candidates: a duet has none");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        continuation_fork(&k->c[i], k->home, &k->batch, i, candidates_seed(k->home->s.spec.seed, i));
        k->n_ev[i] = 0;
        k->ended[i] = 0;
    }
    k->n = n;
    k->steps = 0;
    return 0;
}

/* Keeps candidate I's event E.  0, or -1 out of memory (logged). */
static int keep_event(candidates *k, int i, const cont_event *e)
{
    if (k->n_ev[i] == k->cap_ev[i]) {
        int cap = k->cap_ev[i] * 2;
        cont_event *p = realloc(k->ev[i], sizeof *p * (size_t)cap);
        if (!p) {
            log_error("candidates: out of memory for candidate %d's events", i);
            return -1;
        }
        k->ev[i] = p;
        k->cap_ev[i] = cap;
    }
    k->ev[i][k->n_ev[i]++] = *e;
    return 0;
}

/* Candidate I up to its next decode (or its end): its id for the batch
 * into *ID, or -1 when it has ended.  0, or -1 on error. */
static int advance(candidates *k, int i, int *id)
{
    continuation *c = &k->c[i];
    *id = -1;
    while (!k->ended[i]) {
        cont_event e;
        int r = continuation_step(c, &e);
        if (r < 0)
            return -1;
        if (r == CONT_STEP_END) {
            k->ended[i] = 1;        /* an id it fed on the way still enters its cache */
            *id = c->s.queued;
            c->s.queued = -1;
            return 0;
        } else if (r == CONT_STEP_EVENT) {
            if (keep_event(k, i, &e) != 0)
                return -1;
        } else {
            *id = c->s.queued;
            c->s.queued = -1;
            return 0;
        }
    }
    return 0;
}

int candidates_step(candidates *k)
{
    int seqs[CANDIDATES_MAX], ids[CANDIDATES_MAX], n = 0, going = 0;
    for (int i = 0; i < k->n; i++) {
        int id;
        if (advance(k, i, &id) != 0)
            return -1;
        if (id >= 0) {
            seqs[n] = i;
            ids[n++] = id;
        }
        going += !k->ended[i];
    }
    if (n > 0) {
        if (model_batch_decode(&k->batch, seqs, ids, n) != 0)
            return -1;
        k->steps++;
    }
    return going;
}

int candidates_ahead(const candidates *k, double seconds)
{
    for (int i = 0; i < k->n; i++)
        if (!k->ended[i] && (k->n_ev[i] == 0 || k->ev[i][k->n_ev[i] - 1].time <= seconds))
            return 0;
    return 1;
}

int candidates_judged(const candidates *k)
{
    return candidates_ahead(k, CANDIDATES_HORIZON_S);
}

/* ---- measures ---- */

/* PITCH (N) of the note-ons of EV, in onset order and, at one onset, by
 * pitch (as bench/realism.py orders notes).  Returns N (at most MAX). */
static int note_ons(const cont_event *ev, int n_ev, unsigned char *pitch, int max)
{
    int n = 0;
    double at[2048];
    if (max > 2048)
        max = 2048;
    for (int i = 0; i < n_ev && n < max; i++)
        if (ev[i].kind == CONT_NOTE_ON)
            n = chord_order_insert(pitch, at, n, ev[i].pitch, ev[i].time);
    return n;
}

/* The share of the 3-interval runs of P (N notes) that occur among those
 * of the phrase heard H (NH notes), in any transposition. */
static double motif_share(const unsigned char *p, int n, const unsigned char *h, int nh)
{
    int found = 0, total = 0;
    for (int i = 0; i + 3 < n; i++, total++)
        for (int j = 0; j + 3 < nh; j++)
            if (p[i + 1] - p[i] == h[j + 1] - h[j] && p[i + 2] - p[i + 1] == h[j + 2] - h[j + 1]
                && p[i + 3] - p[i + 2] == h[j + 3] - h[j + 2]) {
                found++;
                break;
            }
    return total ? (double)found / total : 0;
}

/* The share of the most repeated of the N pitches P (0 without any). */
static double top_share(const unsigned char *p, int n)
{
    int count[128] = { 0 }, top = 0;
    for (int i = 0; i < n; i++)
        if (p[i] < 128 && ++count[p[i]] > top)
            top = count[p[i]];
    return n ? (double)top / n : 0;
}

/* The notes of EV (N) sounding at once, on average, over its first SPAN
 * seconds: each note-on's length to its note-off (or to SPAN, still
 * held), summed, over SPAN; note-offs of notes it did not strike are not
 * its own. */
static double polyphony(const cont_event *ev, int n, double span)
{
    double on[128];
    double sounding = 0;
    for (int p = 0; p < 128; p++)
        on[p] = -1;
    for (int i = 0; i < n; i++) {
        int p = ev[i].pitch & 127;
        if (ev[i].kind == CONT_NOTE_ON) {
            if (on[p] >= 0)                     /* struck again while it sounds */
                sounding += ev[i].time - on[p];
            on[p] = ev[i].time;
        } else if (ev[i].kind == CONT_NOTE_OFF && on[p] >= 0) {
            sounding += ev[i].time - on[p];
            on[p] = -1;
        }
    }
    for (int p = 0; p < 128; p++)
        if (on[p] >= 0 && on[p] < span)
            sounding += span - on[p];
    return sounding / span;
}

/* How near X keeps to AIM: -|ln((X + 0.1) / (AIM + 0.1))|, 0 at the aim
 * (and with no aim: 0). */
static double near_aim(double x, double aim)
{
    return aim > 0 ? -fabs(log((x + 0.1) / (aim + 0.1))) : 0;
}

void candidates_measure(const candidates *k, int i, cand_measures *m)
{
    const continuation *c = &k->c[i];
    unsigned char pitch[2048];
    int n = note_ons(k->ev[i], k->n_ev[i], pitch, 2048);
    double span = k->n_ev[i] ? k->ev[i][k->n_ev[i] - 1].time : 0;
    double aim = k->home->ctx.pos.follow.aim, aim_poly = k->home->ctx.pos.follow.aim_poly;
    if (span < 1)
        span = 1;
    memset(m, 0, sizeof *m);
    const knobs_heard *h = &k->home->s.heard;
    int ids = c->own.n_sampled;
    m->ids = ids;
    m->notes = n;
    m->likelihood = ids ? c->s.loglik_model / ids : -1e9;
    m->nudged = ids ? c->s.loglik_nudged / ids : -1e9;
    m->motif = motif_share(pitch, n, h->phrase, h->n_phrase);
    m->pace = near_aim(n / span, aim);
    m->texture = near_aim(polyphony(k->ev[i], k->n_ev[i], span), aim_poly);
    m->repeats = top_share(pitch, n) - top_share(h->phrase, h->n_phrase);
    m->capped = n ? (double)c->s.n_capped / n : 0;
}

static double score_of(const cand_measures *m, int s)
{
    switch (s) {
    case PLAY_SCORE_NUDGED: return m->nudged;
    case PLAY_SCORE_MOTIF: return m->motif;
    case PLAY_SCORE_PACE: return m->pace;
    case PLAY_SCORE_TEXTURE: return m->texture;
    case PLAY_SCORE_MIX:
        return m->likelihood + MIX_MOTIF * m->motif + m->pace + MIX_TEXTURE * m->texture - MIX_REPEATS * m->repeats
               - MIX_CAPPED * m->capped;
    default: return m->likelihood;
    }
}

int candidates_best(const candidates *k, int score)
{
    int best = 0;
    double top = -1e300;
    for (int i = 0; i < k->n; i++) {
        cand_measures m;
        candidates_measure(k, i, &m);
        double v = score_of(&m, score);
        if (v > top) {
            top = v;
            best = i;
        }
    }
    return best;
}

int candidates_choose(candidates *k, int i)
{
    if (i < 0 || i >= k->n) {
        log_error("candidates: no candidate %d (0..%d)", i, k->n - 1);
        return -1;
    }
    model_batch_adopt(&k->batch, i);
    int rc = continuation_adopt(k->home, &k->c[i], k->ev[i], k->n_ev[i], k->ended[i]);
    k->n = 0;
    return rc;
}

int candidates_play(candidates *k, double budget_s, log_level level, double seconds)
{
    double t0 = clock_now_seconds();
    int going = 0, score = k->home->s.spec.play.candidate_score;
    while (!candidates_judged(k) && clock_now_seconds() - t0 < budget_s && (going = candidates_step(k)) > 0)
        ;
    if (going < 0)
        return -1;
    int best = candidates_best(k, score);
    for (int i = 0; i < k->n; i++) {
        cand_measures m;
        candidates_measure(k, i, &m);
        log_msg(level, "candidate %d (seed %llu): %d notes, %d events; likelihood %.4f, nudged %.4f, motif %.4f, "
                "pace %.4f, texture %.4f, repeats %.4f, capped %.4f%s", i, (unsigned long long)k->c[i].s.spec.seed, m.notes,
                m.ids, m.likelihood, m.nudged, m.motif, m.pace, m.texture, m.repeats, m.capped, i == best ? " (played)" : "");
    }
    if (candidates_choose(k, best) < 0)
        return -1;
    continuation_set_seconds(k->home, seconds);
    return best;
}

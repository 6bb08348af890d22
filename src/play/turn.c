/* turn.c: the phrase end judged from the model's odds of the player's next event and the cues of the last chord (turn.h). */
#include "play/turn.h"

#include <math.h>
#include <string.h>

#include "play/key_fit.h"
#include "play/turn_fit.h"

void turn_odds_read(turn_odds *o, const vocab *v, const float *logits)
{
    int n = v->n_time_shifts < TURN_MAX_STEPS ? v->n_time_shifts : TURN_MAX_STEPS;
    double top = -1e30, total = 0, shift[TURN_MAX_STEPS + 1] = { 0 };
    memset(o, 0, sizeof *o);
    o->steps = n;
    o->step_ms = v->step_ms;
    for (int i = 0; i < v->size; i++)
        if (logits[i] > top)
            top = logits[i];
    double eos = 0;
    for (int i = 0; i < v->size; i++) {
        int value;
        double w = exp(logits[i] - top);
        event_type t = vocab_decode(v, i, &value);
        total += w;
        if (t == EVENT_TIME_SHIFT)
            shift[value < n ? value : n] += w;
        else if (t == EVENT_EOS)
            eos += w;
    }
    double tail = eos;          /* P(gap >= k steps), from the longest down */
    for (int k = n; k >= 1; k--) {
        tail += shift[k];
        o->survive[k] = tail / total;
    }
    o->survive[0] = 1.0;
    if (v->size == TURN_PROBE_VOCAB && strcmp(v->name, "mt310") == 0) {
        double lse = top + log(total);
        for (int i = 0; i < v->size; i++)
            for (int m = 0; m < 2; m++)
                o->probe[m] += turn_fit_probe_ids[m][i] * (logits[i] - lse);
        o->have_probe = 1;
    }
}

/* ---- the ear: the cues of bench/turn_cues.py, computed the same way ---- */

#define RING(i) ((int)((i) % TURN_KEY_NOTES))     /* a note-on's place in the ring */

void turn_ear_reset(turn_ear *e)
{
    memset(e, 0, sizeof *e);
    e->quiet_start = -1;
}

int turn_ear_hear(turn_ear *e, double t, uint8_t status, uint8_t data1, uint8_t data2)
{
    int kind = status & 0xF0, note = data1 & 0x7F, pedal_msg = 0;
    if (kind == 0x90 && data2 > 0) {
        e->held += !e->down[note];
        e->down[note] = 1;
        int i = RING(e->n);
        e->on_t[i] = t;
        e->on_p[i] = (uint8_t)note;
        e->on_v[i] = data2;
        e->n++;
    } else if (kind == 0x80 || kind == 0x90) {
        e->held -= e->down[note];
        e->down[note] = 0;
    } else if (kind == 0xB0 && data1 == 64 && (data2 >= 64) != e->pedal) {
        e->pedal = data2 >= 64;     /* a press or a lift: a half-pedal's values are no playing */
        pedal_msg = 1;
    } else {
        return 0;
    }
    int quiet = e->held == 0 && !e->pedal;
    if (quiet && e->quiet_start < 0 && e->n > 1) {
        e->quiet_start = t;
        e->pedal_last = pedal_msg;
    } else if (!quiet) {
        e->quiet_start = -1;
    }
    return 1;
}

/* The first onset of the chord that ends at ring index LAST (onsets within 60 ms). */
static long chord_start(const turn_ear *e, long last, long oldest)
{
    long j = last;
    while (j > oldest && e->on_t[RING(j)] - e->on_t[RING(j - 1)] < 0.06)
        j--;
    return j;
}

void turn_ear_cues(const turn_ear *e, turn_odds *o)
{
    o->have_cues = 0;
    if (e->quiet_start < 0 || e->n < 2)
        return;
    long n = e->n, oldest = n > TURN_KEY_NOTES ? n - TURN_KEY_NOTES : 0;
    double last_t = e->on_t[RING(n - 1)], loud = 0;
    long from20 = n - 20 > oldest ? n - 20 : oldest;
    for (long i = from20; i < n; i++)
        loud += e->on_v[RING(i)];
    loud /= (double)(n - from20);
    long j = chord_start(e, n - 1, oldest);
    int top = 0;
    for (long i = j; i < n; i++)
        top = e->on_v[RING(i)] > top ? e->on_v[RING(i)] : top;
    if (j > oldest && top < 0.4 * loud && last_t - e->on_t[RING(j - 1)] < 0.3)
        j = chord_start(e, j - 1, oldest);      /* a ghost note just after the chord */
    double vel = 0, hist[12] = { 0 };
    int bass = 127;
    for (long i = j; i < n; i++) {
        vel += e->on_v[RING(i)];
        bass = e->on_p[RING(i)] < bass ? e->on_p[RING(i)] : bass;
    }
    for (long i = oldest; i < n; i++)
        hist[e->on_p[RING(i)] % 12] += 1;
    int tonic, minor;
    double clarity = key_fit(hist, &tonic, &minor);
    int triad = 1, has_tonic = 0;
    for (long i = j; i < n; i++) {
        int pc = (e->on_p[RING(i)] - tonic + 12) % 12;
        has_tonic |= pc == 0;
        triad &= pc == 0 || pc == 7 || pc == (minor ? 3 : 4);
    }
    long k8 = n - 8 > 0 ? n - 8 : 0;
    double pace = (last_t - e->on_t[RING(k8)]) / (double)(n - 1 - k8 > 1 ? n - 1 - k8 : 1);
    o->cues[TURN_CUE_AGE] = log(e->quiet_start - last_t + 0.01);
    o->cues[TURN_CUE_PACE] = log(pace + 0.01);
    o->cues[TURN_CUE_SIZE] = (double)(n - j);
    o->cues[TURN_CUE_LOUD] = vel / (double)(n - j) / (loud > 1 ? loud : 1);
    o->cues[TURN_CUE_PEDAL] = e->pedal_last;
    o->cues[TURN_CUE_BASS] = (bass - tonic + 12) % 12 == 0;
    o->cues[TURN_CUE_CLARITY] = clarity;
    o->cues[TURN_CUE_TRIAD] = has_tonic && triad;
    o->have_cues = 1;
}

/* The cue rule's score at moment M (0, 1) of TURN_MOMENTS_MS less the
 * threshold it must pass there (phrase_end_bias included): > 0 passes.
 * NAN when the moment is not judged (at or past max_ms, past the odds). */
static double cue_margin(const turn_odds *o, const turn_rule *r, int m)
{
    static const int moments[2] = TURN_MOMENTS_MS;
    int probe = r->probe && o->have_probe, k = moments[m] / o->step_ms;
    if (moments[m] >= r->max_ms || k > o->steps)
        return NAN;
    const double *w = (probe ? turn_fit_probe_cues : turn_fit_cues)[m];
    double p = o->survive[o->steps] / (o->survive[k] > 1e-12 ? o->survive[k] : 1e-12);
    p = p < 1e-6 ? 1e-6 : p > 1 - 1e-6 ? 1 - 1e-6 : p;
    double score = w[TURN_CUES] * log(p / (1 - p)) + w[TURN_CUES + 1] + (probe ? o->probe[m] : 0);
    for (int i = 0; i < TURN_CUES; i++)
        score += w[i] * o->cues[i];
    return score - ((probe ? r->th_probe : r->th)[m] + r->bias);
}

/* The cue rule over the moments before max_ms: the first at which the
 * score passes (else max_ms), and in *MARGIN the most any passed by. */
static int cue_judge(const turn_odds *o, const turn_rule *r, double *margin)
{
    static const int moments[2] = TURN_MOMENTS_MS;
    int at = r->max_ms;
    *margin = NAN;
    for (int m = 0; m < 2; m++) {
        double d = cue_margin(o, r, m);
        if (isnan(d))
            break;
        if (d > 0 && at == r->max_ms)
            at = moments[m];
        *margin = isnan(*margin) || d > *margin ? d : *margin;
    }
    return at;
}

turn_rule turn_rule_cues(int max_ms)
{
    return (turn_rule){ .cues = 1, .th = TURN_TH_CUES, .max_ms = max_ms };
}

turn_rule turn_rule_auto(int max_ms)
{
    static const double th_probe[2] = TURN_TH_PROBE;
    turn_rule r = turn_rule_cues(max_ms);      /* a vocabulary without the probe: the cue rule */
    r.probe = 1;
    memcpy(r.th_probe, th_probe, sizeof th_probe);
    return r;
}

int turn_verdict(const turn_odds *o, const turn_rule *r, double *margin)
{
    double unused;
    if (!margin)
        margin = &unused;
    *margin = NAN;
    if (o->steps <= 0 || o->step_ms <= 0)
        return r->max_ms;
    if (r->cues)
        return o->have_cues ? cue_judge(o, r, margin) : r->max_ms;
    if (r->rest > 1.0)
        return r->max_ms;
    int k = r->min_ms > 0 ? (r->min_ms + o->step_ms - 1) / o->step_ms : 0;
    double rest = o->survive[o->steps];
    if (r->hold > 0 && o->onset_age > 0)
        rest *= pow(o->onset_age / TURN_HOLD_REF_S, r->hold);
    for (; k <= o->steps && k * o->step_ms < r->max_ms; k++)
        if (o->survive[k] > 0 && rest >= r->rest * o->survive[k])
            return k * o->step_ms > r->min_ms ? k * o->step_ms : r->min_ms;
    return r->max_ms;
}

/* test_turn.c: the phrase end judged from the odds of the next event and the last chord's cues (play/turn.h), on stub logits without a model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codec/vocab.h"
#include "play/turn.h"

#define MAX_IDS 1024

/* Logits with a weight W(id) each: ln W, and -1e9 (nothing) where W is 0. */
static void set_weight(float *l, int id, double w)
{
    l[id] = w > 0 ? (float)log(w) : -1e9f;
}

/* Odds of a note now (NOW), of a shift of 1..SPREAD steps (SHIFTS, spread
 * evenly), of the longest shift (REST): a cadence puts most on the rest, a
 * run on a note now and shifts of any length. */
static void odds_of(turn_odds *o, const vocab *v, double now, double shifts, int spread, double rest)
{
    float l[MAX_IDS];
    for (int i = 0; i < v->size; i++)
        l[i] = -1e9f;
    set_weight(l, vocab_id(v, EVENT_NOTE_ON, 60), now);
    for (int k = 1; k <= spread; k++)
        set_weight(l, vocab_id(v, EVENT_TIME_SHIFT, k), shifts / spread);
    set_weight(l, vocab_id(v, EVENT_TIME_SHIFT, v->n_time_shifts), rest);
    turn_odds_read(o, v, l);
}

static void test_survival(const vocab *v)
{
    turn_odds o;
    odds_of(&o, v, 0.5, 0.3, 20, 0.2);
    CHECK_INT(o.steps, v->n_time_shifts);
    CHECK_NEAR(o.survive[0], 1.0, 1e-12);
    CHECK_NEAR(o.survive[1], 0.5, 1e-6);                    /* not a note now */
    CHECK_NEAR(o.survive[11], 0.2 + 0.3 * 10 / 20, 1e-6);   /* shifts 11..20 and the rest */
    CHECK_NEAR(o.survive[21], 0.2, 1e-6);
    CHECK_NEAR(o.survive[v->n_time_shifts], 0.2, 1e-6);
    for (int k = 1; k <= o.steps; k++)
        CHECK(o.survive[k] <= o.survive[k - 1] + 1e-12);
}

static void test_verdicts(const vocab *v)
{
    turn_odds cadence, run;
    turn_rule r = { .rest = 0.5, .min_ms = 100, .max_ms = 800 };
    odds_of(&cadence, v, 0.05, 0.05, 20, 0.9);
    odds_of(&run, v, 0.6, 0.39, v->n_time_shifts - 1, 0.01);
    /* a cadence ends the phrase at the earliest moment the rule allows */
    CHECK_INT(turn_verdict(&cadence, &r, NULL), 100);
    /* a run: the model expects a note soon, and a silence of any length
     * short of a rest leaves the odds of a rest low: the silence rule decides */
    CHECK_INT(turn_verdict(&run, &r, NULL), 800);
    /* a note expected within 200 ms: judged once most of them have passed
     * (at 180 ms, the odds of a rest are 0.1 / (0.1 + 0.6 x 3/20) = 0.53) */
    turn_odds mid;
    odds_of(&mid, v, 0.3, 0.6, 20, 0.1);
    CHECK_INT(turn_verdict(&mid, &r, NULL), 180);
    /* the hold: the same odds after a chord held 2 s end it at the earliest
     * (0.1 x (2 / 0.5)^0.75 = 0.28 reaches 0.5 x 0.57 at 60 ms), after a
     * note struck 0.1 s ago never before the silence rule; its age not known
     * (0) or hold 0: the odds alone */
    r.hold = 0.75;
    mid.onset_age = 2.0;
    CHECK_INT(turn_verdict(&mid, &r, NULL), 100);
    mid.onset_age = 0.1;
    CHECK_INT(turn_verdict(&mid, &r, NULL), 800);
    mid.onset_age = 0;
    CHECK_INT(turn_verdict(&mid, &r, NULL), 180);
    r.hold = 0;
    mid.onset_age = 2.0;
    CHECK_INT(turn_verdict(&mid, &r, NULL), 180);
    /* the latest moment bounds it; above 1 never judges early */
    r.max_ms = 150;
    CHECK_INT(turn_verdict(&mid, &r, NULL), 150);
    r.max_ms = 800;
    r.rest = 1.5;
    CHECK_INT(turn_verdict(&cadence, &r, NULL), 800);
}

/* A run of eighths in C major (16 notes, velocity 60, 0.25 s apart, each
 * held 0.2 s) from time 0, into EAR. */
static void play_run(turn_ear *e)
{
    static const int run[16] = { 60, 62, 64, 65, 67, 69, 71, 72, 71, 69, 67, 65, 64, 62, 64, 62 };
    turn_ear_reset(e);
    for (int i = 0; i < 16; i++) {
        turn_ear_hear(e, i * 0.25, 0x90, (uint8_t)run[i], 60);
        turn_ear_hear(e, i * 0.25 + 0.2, 0x80, (uint8_t)run[i], 0);
    }
}

/* turn_verdict's margin for O under R (ctl status's phrase_end_margin). */
static double margin_of(const turn_odds *o, const turn_rule *r)
{
    double margin;
    turn_verdict(o, r, &margin);
    return margin;
}

static void test_cues(const vocab *v)
{
    turn_ear e;
    turn_odds cadence, run;
    odds_of(&cadence, v, 0.05, 0.05, 20, 0.9);
    odds_of(&run, v, 0.6, 0.39, v->n_time_shifts - 1, 0.01);
    turn_rule r = turn_rule_cues(800);

    /* the run, then a loud C major chord at 4 s held 1.5 s under the pedal,
     * the pedal lifted at 5.6 s: a cadence */
    play_run(&e);
    turn_ear_hear(&e, 4.0, 0x90, 48, 90);
    turn_ear_hear(&e, 4.0, 0x90, 64, 90);
    turn_ear_hear(&e, 4.0, 0xB0, 64, 127);
    turn_ear_hear(&e, 4.0, 0x90, 67, 90);
    turn_ear_hear(&e, 4.0, 0x90, 72, 90);
    turn_ear_hear(&e, 4.5, 0xB0, 64, 90);       /* half-pedal values: no playing */
    for (int p = 0; p < 4; p++)
        turn_ear_hear(&e, 5.5, 0x80, (uint8_t)(int[]){ 48, 64, 67, 72 }[p], 0);
    turn_ear_cues(&e, &cadence);
    CHECK(!cadence.have_cues);                  /* the pedal still sounds */
    turn_ear_hear(&e, 5.6, 0xB0, 64, 0);
    turn_ear_cues(&e, &cadence);
    CHECK(cadence.have_cues);
    CHECK_NEAR(cadence.cues[TURN_CUE_AGE], log(1.6 + 0.01), 1e-9);
    CHECK_NEAR(cadence.cues[TURN_CUE_PACE], log(1.0 / 7 + 0.01), 1e-9);   /* 3.0 .. 4.0 s: 8 onsets */
    CHECK_NEAR(cadence.cues[TURN_CUE_SIZE], 4, 0);
    CHECK_NEAR(cadence.cues[TURN_CUE_LOUD], 90 / ((16 * 60 + 4 * 90) / 20.0), 1e-9);
    CHECK_NEAR(cadence.cues[TURN_CUE_PEDAL], 1, 0);
    CHECK_NEAR(cadence.cues[TURN_CUE_BASS], 1, 0);  /* C: the key of the run */
    CHECK_NEAR(cadence.cues[TURN_CUE_TRIAD], 1, 0);
    CHECK(cadence.cues[TURN_CUE_CLARITY] > 0.7);
    CHECK_INT(turn_verdict(&cadence, &r, NULL), 300);
    turn_rule sure = r, eager = r;              /* phrase_end_bias: how sure it must be */
    sure.bias = 50;
    eager.bias = -50;
    CHECK_INT(turn_verdict(&cadence, &sure, NULL), 800);
    CHECK_INT(turn_verdict(&cadence, &eager, NULL), 300);
    /* how sure (ctl status's phrase_end_margin): above 0 it passed, and a
     * bias moves it by as much; a bias just above it leaves the silence to
     * the silence rule */
    double margin = margin_of(&cadence, &r);
    CHECK(margin > 0);
    CHECK_NEAR(margin_of(&cadence, &sure), margin - 50, 1e-9);
    sure.bias = margin + 0.01;
    CHECK_INT(turn_verdict(&cadence, &sure, NULL), 800);
    CHECK(margin_of(&cadence, &sure) < 0);
    sure.bias = margin - 0.01;
    CHECK(turn_verdict(&cadence, &sure, NULL) < 800);
    r.max_ms = 250;                             /* the moments past the latest are not asked */
    CHECK_INT(turn_verdict(&cadence, &r, NULL), 250);
    CHECK(isnan(margin_of(&cadence, &r)));
    r.max_ms = 800;

    /* the run ends on a short D, released at 3.95 s: a breath; the model
     * expects a note soon, and the silence rule decides */
    play_run(&e);
    turn_ear_cues(&e, &run);
    CHECK(run.have_cues);
    CHECK_NEAR(run.cues[TURN_CUE_AGE], log(0.2 + 0.01), 1e-9);
    CHECK_NEAR(run.cues[TURN_CUE_SIZE], 1, 0);
    CHECK_NEAR(run.cues[TURN_CUE_PEDAL], 0, 0);
    CHECK_NEAR(run.cues[TURN_CUE_BASS], 0, 0);
    CHECK_NEAR(run.cues[TURN_CUE_TRIAD], 0, 0);
    CHECK_INT(turn_verdict(&run, &r, NULL), 800);
    CHECK_INT(turn_verdict(&run, &eager, NULL), 300); /* a bias below 0 answers the breath too */
    /* its odds with the cadence's cues: the cues alone do not end it at 300 ms */
    memcpy(run.cues, cadence.cues, sizeof run.cues);
    CHECK(turn_verdict(&run, &r, NULL) > 300);

    /* one note heard: no cues, the silence rule */
    turn_ear_reset(&e);
    turn_ear_hear(&e, 0, 0x90, 60, 80);
    turn_ear_hear(&e, 0.5, 0x80, 60, 0);
    turn_ear_cues(&e, &cadence);
    CHECK(!cadence.have_cues);
    CHECK_INT(turn_verdict(&cadence, &r, NULL), 800);
    CHECK(isnan(margin_of(&cadence, &r)));
}

/* The probe (turn_fit.h): read for the vocabulary it was fitted on, from
 * log-probabilities (logits shifted alike weigh the same), and weighed in
 * the verdict only by a rule that asks for it. */
static void test_probe(const vocab *v)
{
    float l[MAX_IDS];
    turn_odds a, b;
    for (int i = 0; i < v->size; i++)
        l[i] = (float)(-4.0 + 0.01 * (i % 97));     /* a spread like a model's, no id ruled out */
    l[vocab_id(v, EVENT_TIME_SHIFT, v->n_time_shifts)] = 2.0f;
    turn_odds_read(&a, v, l);
    for (int i = 0; i < v->size; i++)
        l[i] += 7.5f;
    turn_odds_read(&b, v, l);
    CHECK(a.have_probe && b.have_probe);
    CHECK(fabs(a.probe[0]) > 1e-3 && fabs(a.probe[1]) > 1e-3);
    CHECK_NEAR(a.probe[0], b.probe[0], 1e-4);
    CHECK_NEAR(a.probe[1], b.probe[1], 1e-4);

    const vocab *other = vocab_find("prnn388");
    CHECK(other != NULL);
    if (other && other->size <= MAX_IDS) {
        turn_odds c;
        for (int i = 0; i < other->size; i++)
            l[i] = -4.0f;
        turn_odds_read(&c, other, l);
        CHECK(!c.have_probe);       /* another vocabulary: the cue rule */
    }

    /* the cues and odds of a cadence weighed with the probe: it decides
     * between 300 ms and the silence rule */
    turn_rule cues = turn_rule_cues(800), probe = turn_rule_auto(800);
    a.have_cues = 1;
    a.cues[TURN_CUE_AGE] = log(1.6 + 0.01);
    a.cues[TURN_CUE_PACE] = log(1.0 / 7 + 0.01);
    a.cues[TURN_CUE_SIZE] = 4;
    a.cues[TURN_CUE_LOUD] = 1.3;
    a.cues[TURN_CUE_BASS] = a.cues[TURN_CUE_TRIAD] = 1;
    a.cues[TURN_CUE_CLARITY] = 0.8;
    int without = turn_verdict(&a, &cues, NULL);
    a.probe[0] = a.probe[1] = 50;
    CHECK_INT(turn_verdict(&a, &probe, NULL), 300);
    turn_rule strict = probe;                       /* the probe's thresholds are the rule's own */
    strict.th_probe[0] = strict.th_probe[1] = 1e9;
    CHECK_INT(turn_verdict(&a, &strict, NULL), 800);
    CHECK_INT(turn_verdict(&a, &cues, NULL), without);    /* a rule without the probe ignores it */
    a.probe[0] = a.probe[1] = -50;
    CHECK_INT(turn_verdict(&a, &probe, NULL), 800);
    a.have_probe = 0;                               /* no probe: the cue rule's verdict */
    CHECK_INT(turn_verdict(&a, &probe, NULL), without);
}

int main(void)
{
    const vocab *v = vocab_default();
    if (v->size > MAX_IDS)
        abort();
    test_survival(v);
    test_verdicts(v);
    test_cues(v);
    test_probe(v);
    return CHECK_DONE();
}

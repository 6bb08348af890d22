/* test_pace.c: the pace of the music so far (codec/pace.h): the rate it
 * measures, the aim, and which way it tilts the model's waits. */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "codec/pace.h"
#include "codec/vocab.h"

static void push_notes(perf_pace *p, const vocab *v, double from, double to, double per_s)
{
    for (double t = from; t < to - 1e-9; t += 1.0 / per_s)
        perf_pace_push(p, v, vocab_id(v, EVENT_NOTE_ON, 60), t);
}

/* Time-shift logits after perf_pace_apply on flat logits. */
static void tilted(const perf_pace *p, const vocab *v, double now, float *logits)
{
    for (int i = 0; i < v->size; i++)
        logits[i] = 0;
    perf_pace_apply(p, v, now, logits);
}

int main(void)
{
    const vocab *v = vocab_default();
    static perf_pace p;
    float logits[512];

    /* rate: note-ons only, over the last 10 s */
    perf_pace_init(&p, 1);
    push_notes(&p, v, 0, 20, 4);
    perf_pace_push(&p, v, vocab_id(v, EVENT_NOTE_OFF, 60), 19.9);
    perf_pace_push(&p, v, vocab_id(v, EVENT_TIME_SHIFT, 10), 19.9);
    perf_pace_push(&p, v, vocab_id(v, EVENT_VELOCITY, 10), 19.9);
    CHECK_NEAR(perf_pace_rate(&p, 20), 4.0, 0.5);
    /* a short phrase after a long silence counts at its own pace */
    perf_pace_init(&p, 1);
    push_notes(&p, v, 0, 3, 5);
    push_notes(&p, v, 60, 62, 6);
    CHECK_NEAR(perf_pace_rate(&p, 62.2), 6.0, 0.7);
    CHECK(perf_pace_rate(&p, 100) == 0);        /* nothing in the window */

    /* at its aim the model's odds are untouched */
    perf_pace_init(&p, 1);
    push_notes(&p, v, 0, 10, 2);
    perf_pace_aim(&p, 10);
    CHECK_NEAR(p.aim, 2.0, 0.25);
    push_notes(&p, v, 10, 14, 2);
    tilted(&p, v, 14, logits);
    CHECK_NEAR(logits[vocab_id(v, EVENT_TIME_SHIFT, 100)], 0, 0.3);

    /* running faster than the aim: longer waits likelier, notes untouched */
    push_notes(&p, v, 14, 20, 12);
    CHECK(perf_pace_tilt(&p, 20) > 0.5f);
    tilted(&p, v, 20, logits);
    CHECK(logits[vocab_id(v, EVENT_TIME_SHIFT, 100)] > logits[vocab_id(v, EVENT_TIME_SHIFT, 10)]);
    CHECK(logits[vocab_id(v, EVENT_TIME_SHIFT, 10)] > logits[vocab_id(v, EVENT_TIME_SHIFT, 1)]);
    CHECK_NEAR(logits[vocab_id(v, EVENT_TIME_SHIFT, 1)], 0, 1e-6);
    CHECK_NEAR(logits[vocab_id(v, EVENT_NOTE_ON, 60)], 0, 0);
    CHECK_NEAR(logits[vocab_id(v, EVENT_NOTE_OFF, 60)], 0, 0);
    CHECK_NEAR(logits[vocab_id(v, EVENT_VELOCITY, 3)], 0, 0);

    /* slower than the aim: shorter waits likelier */
    perf_pace_init(&p, 1);
    push_notes(&p, v, 0, 10, 10);
    perf_pace_aim(&p, 10);
    push_notes(&p, v, 10, 20, 1);
    CHECK(perf_pace_tilt(&p, 20) < -0.5f);
    tilted(&p, v, 20, logits);
    CHECK(logits[vocab_id(v, EVENT_TIME_SHIFT, 100)] < logits[vocab_id(v, EVENT_TIME_SHIFT, 2)]);

    /* the tilt is bounded, and strength 0 turns it off */
    perf_pace_init(&p, 4);
    push_notes(&p, v, 0, 10, 0.2);
    perf_pace_aim(&p, 10);
    push_notes(&p, v, 10, 20, 100);
    CHECK_NEAR(perf_pace_tilt(&p, 20), 3.0, 1e-6);
    p.strength = 0;
    tilted(&p, v, 20, logits);
    CHECK(logits[vocab_id(v, EVENT_TIME_SHIFT, 100)] == 0);

    /* the ring keeps the newest note-ons when more come than it holds */
    perf_pace_init(&p, 1);
    push_notes(&p, v, 0, 10, 300);
    CHECK(perf_pace_rate(&p, 10) > 90);
    return CHECK_DONE();
}

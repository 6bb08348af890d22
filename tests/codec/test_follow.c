/* test_follow.c: the pace and key of the music so far (codec/follow.h): the rate it
 * measures, the polyphony, the aim, which way it tilts the model's waits, and which notes it
 * draws nearer. */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "codec/follow.h"
#include "codec/vocab.h"

static void push_notes(perf_follow *p, const vocab *v, double from, double to, double per_s)
{
    for (double t = from; t < to - 1e-9; t += 1.0 / per_s)
        perf_follow_push(p, v, vocab_id(v, EVENT_NOTE_ON, 60), t);
}

/* Time-shift logits after perf_follow_apply on flat logits. */
static void tilted(const perf_follow *p, const vocab *v, double now, float *logits)
{
    for (int i = 0; i < v->size; i++)
        logits[i] = 0;
    perf_follow_apply(p, v, now, logits);
}

int main(void)
{
    const vocab *v = vocab_default();
    static perf_follow p;
    float logits[512];

    /* rate: note-ons only, over the last 10 s */
    perf_follow_init(&p, 1, 0);
    push_notes(&p, v, 0, 20, 4);
    perf_follow_push(&p, v, vocab_id(v, EVENT_NOTE_OFF, 60), 19.9);
    perf_follow_push(&p, v, vocab_id(v, EVENT_TIME_SHIFT, 10), 19.9);
    perf_follow_push(&p, v, vocab_id(v, EVENT_VELOCITY, 10), 19.9);
    CHECK_NEAR(perf_follow_rate(&p, 20), 4.0, 0.5);
    /* a short phrase after a long silence counts at its own pace */
    perf_follow_init(&p, 1, 0);
    push_notes(&p, v, 0, 3, 5);
    push_notes(&p, v, 60, 62, 6);
    CHECK_NEAR(perf_follow_rate(&p, 62.2), 6.0, 0.7);
    CHECK(perf_follow_rate(&p, 100) == 0);        /* nothing in the window */

    /* at its aim the model's odds are untouched */
    perf_follow_init(&p, 1, 0);
    push_notes(&p, v, 0, 10, 2);
    perf_follow_aim(&p, 10);
    CHECK_NEAR(p.aim, 2.0, 0.25);
    push_notes(&p, v, 10, 14, 2);
    tilted(&p, v, 14, logits);
    CHECK_NEAR(logits[vocab_id(v, EVENT_TIME_SHIFT, 100)], 0, 0.3);

    /* running faster than the aim: longer waits likelier, notes untouched */
    push_notes(&p, v, 14, 20, 12);
    CHECK(perf_follow_tilt(&p, 20) > 0.5f);
    tilted(&p, v, 20, logits);
    CHECK(logits[vocab_id(v, EVENT_TIME_SHIFT, 100)] > logits[vocab_id(v, EVENT_TIME_SHIFT, 10)]);
    CHECK(logits[vocab_id(v, EVENT_TIME_SHIFT, 10)] > logits[vocab_id(v, EVENT_TIME_SHIFT, 1)]);
    CHECK_NEAR(logits[vocab_id(v, EVENT_TIME_SHIFT, 1)], 0, 1e-6);
    CHECK_NEAR(logits[vocab_id(v, EVENT_NOTE_ON, 60)], 0, 0);
    CHECK_NEAR(logits[vocab_id(v, EVENT_NOTE_OFF, 60)], 0, 0);
    CHECK_NEAR(logits[vocab_id(v, EVENT_VELOCITY, 3)], 0, 0);

    /* slower than the aim: shorter waits likelier */
    perf_follow_init(&p, 1, 0);
    push_notes(&p, v, 0, 10, 10);
    perf_follow_aim(&p, 10);
    push_notes(&p, v, 10, 20, 1);
    CHECK(perf_follow_tilt(&p, 20) < -0.5f);
    tilted(&p, v, 20, logits);
    CHECK(logits[vocab_id(v, EVENT_TIME_SHIFT, 100)] < logits[vocab_id(v, EVENT_TIME_SHIFT, 2)]);

    /* the tilt is bounded, and strength 0 turns it off */
    perf_follow_init(&p, 4, 0);
    push_notes(&p, v, 0, 10, 0.2);
    perf_follow_aim(&p, 10);
    push_notes(&p, v, 10, 20, 100);
    CHECK_NEAR(perf_follow_tilt(&p, 20), 3.0, 1e-6);
    p.pace = 0;
    tilted(&p, v, 20, logits);
    CHECK(logits[vocab_id(v, EVENT_TIME_SHIFT, 100)] == 0);

    /* the key: after a primer in C major the white keys are drawn nearer,
     * the black ones pushed away, every octave alike, and nothing else moves */
    perf_follow_init(&p, 0, 0.5f);
    const int c_major[] = { 60, 62, 64, 65, 67, 69, 71 };
    for (int i = 0; i < 70; i++)
        perf_follow_push(&p, v, vocab_id(v, EVENT_NOTE_ON, c_major[i % 7]), i * 0.125);
    perf_follow_aim(&p, 9);
    tilted(&p, v, 9, logits);
    float white = logits[vocab_id(v, EVENT_NOTE_ON, 60)], black = logits[vocab_id(v, EVENT_NOTE_ON, 61)];
    CHECK(white > 0 && black < 0);
    CHECK_NEAR(logits[vocab_id(v, EVENT_NOTE_ON, 48)], white, 1e-6);
    CHECK_NEAR(logits[vocab_id(v, EVENT_NOTE_ON, 97)], black, 1e-6);
    CHECK_NEAR(white - black, 0.5 * log(11.0), 1e-3);   /* (10 + 1) / (0 + 1) */
    CHECK(logits[vocab_id(v, EVENT_NOTE_OFF, 61)] == 0);
    CHECK(logits[vocab_id(v, EVENT_TIME_SHIFT, 50)] == 0);
    /* key_pull 0: untouched */
    p.key_pull = 0;
    tilted(&p, v, 9, logits);
    CHECK(logits[vocab_id(v, EVENT_NOTE_ON, 61)] == 0);

    /* polyphony: a 3-note chord held 1 s every 2 s sounds 1.5 notes at once
     * on average; a note-off of a note never struck changes nothing, one held
     * past NOW counts up to NOW, and the window forgets what is older */
    perf_follow_init(&p, 1, 0);
    perf_follow_push(&p, v, vocab_id(v, EVENT_NOTE_OFF, 72), 0.5);
    for (int k = 0; k < 10; k++)
        for (int n = 0; n < 3; n++) {
            perf_follow_push(&p, v, vocab_id(v, EVENT_NOTE_ON, 60 + 4 * n), 2.0 * k);
            perf_follow_push(&p, v, vocab_id(v, EVENT_NOTE_OFF, 60 + 4 * n), 2.0 * k + 1);
        }
    CHECK_NEAR(perf_follow_poly(&p, 20), 1.5, 1e-9);   /* chords at 12..18: 12 note-s over 8 s */
    perf_follow_aim(&p, 20);
    CHECK_NEAR(p.aim_poly, perf_follow_poly(&p, 20), 0);
    perf_follow q = p;
    perf_follow_push(&q, v, vocab_id(v, EVENT_NOTE_ON, 48), 20);           /* held on */
    CHECK_NEAR(perf_follow_poly(&q, 24) - perf_follow_poly(&p, 24), 4 / 8.0, 1e-9);
    CHECK(perf_follow_poly(&p, 100) == 0);
    /* a note struck again before its note-off: the off ends the newest */
    perf_follow_init(&p, 1, 0);
    perf_follow_push(&p, v, vocab_id(v, EVENT_NOTE_ON, 60), 0);
    perf_follow_push(&p, v, vocab_id(v, EVENT_NOTE_ON, 60), 1);
    perf_follow_push(&p, v, vocab_id(v, EVENT_NOTE_OFF, 60), 2);
    CHECK_NEAR(perf_follow_poly(&p, 4), (4 + 1) / 4.0, 1e-9);   /* the first still held: 4 s + 1 s over 4 s */

    /* the ring keeps the newest note-ons when more come than it holds */
    perf_follow_init(&p, 1, 0);
    push_notes(&p, v, 0, 10, 300);
    CHECK(perf_follow_rate(&p, 10) > 90);
    return CHECK_DONE();
}

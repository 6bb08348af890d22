/* test_scheduler.c: on-time order, absolute deadlines, the held-note cap, the sweep and silence. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "daemon/scheduler.h"

#define MS 1000000LL

/* What the scheduler sent, in order. */
typedef struct sent_log {
    midi_msg msg[256];
    int64_t  at[256];
    int      n;
} sent_log;

static void record(void *user, const midi_msg *m, int64_t now)
{
    sent_log *l = user;
    if (l->n < 256) {
        l->msg[l->n] = *m;
        l->at[l->n++] = now;
    }
}

static midi_msg on(int p) { midi_msg m = { 0x90, (uint8_t)p, 100, 3 }; return m; }
static midi_msg off(int p) { midi_msg m = { 0x80, (uint8_t)p, 0, 3 }; return m; }

int main(void)
{
    scheduler s;
    sent_log log;
    midi_msg m;

    /* Pushed out of order, sent in deadline order, none early. */
    CHECK_INT(scheduler_init(&s, 64, 5000 * MS, 4), 0);
    memset(&log, 0, sizeof log);
    m = on(62); scheduler_push(&s, 20 * MS, &m);
    m = on(60); scheduler_push(&s, 10 * MS, &m);
    m = off(60); scheduler_push(&s, 30 * MS, &m);
    m = off(62); scheduler_push(&s, 30 * MS, &m);
    CHECK_INT(scheduler_next_deadline(&s), 10 * MS);
    scheduler_run(&s, 5 * MS, 0, record, &log);
    CHECK_INT(log.n, 0);
    scheduler_run(&s, 10 * MS, 0, record, &log);
    CHECK_INT(log.n, 1);
    CHECK_INT(log.msg[0].data1, 60);
    scheduler_run(&s, 31 * MS, 0, record, &log);
    CHECK_INT(log.n, 4);
    CHECK_INT(log.msg[1].data1, 62);
    CHECK_INT(log.msg[2].data1, 60);   /* equal deadlines keep push order */
    CHECK_INT(log.msg[3].data1, 62);
    CHECK_INT(s.notes.count, 0);
    CHECK_INT(s.max_late_ns, 11 * MS);   /* on(62) was due at 20 ms */
    CHECK_INT(scheduler_next_deadline(&s), INT64_MAX);

    /* Taken back: the one of its kind at its time, the heap's order kept
     * (pitch 40 + k is due at 50 + k ms, pushed in a scrambled order); one
     * sent already cannot be. */
    scheduler s2;
    CHECK_INT(scheduler_init(&s2, 64, 5000 * MS, 16), 0);
    memset(&log, 0, sizeof log);
    for (int j = 0; j < 12; j++) {
        int k = (j * 7) % 12;
        m = on(40 + k); scheduler_push(&s2, (50 + k) * MS, &m);
    }
    m = on(45); CHECK_INT(scheduler_unpush(&s2, 55 * MS, &m), 1);
    CHECK_INT(scheduler_unpush(&s2, 55 * MS, &m), 0);                       /* gone */
    m = on(46); CHECK_INT(scheduler_unpush(&s2, 10 * MS, &m), 0);           /* not at that time */
    m = off(46); CHECK_INT(scheduler_unpush(&s2, 56 * MS, &m), 0);          /* not that message */
    scheduler_run(&s2, 70 * MS, 0, record, &log);
    CHECK_INT(log.n, 11);
    for (int i = 0, want = 40; i < log.n; i++, want++) {
        want += want == 45;
        CHECK_INT(log.msg[i].data1, want);
    }
    m = on(40); CHECK_INT(scheduler_unpush(&s2, 50 * MS, &m), 0);           /* sent */
    scheduler_free(&s2);

    /* At most max_held notes sound; the dropped note's off is dropped too. */
    memset(&log, 0, sizeof log);
    for (int p = 0; p < 6; p++) {
        m = on(60 + p);
        scheduler_push(&s, 100 * MS, &m);
    }
    for (int p = 0; p < 6; p++) {
        m = off(60 + p);
        scheduler_push(&s, 200 * MS, &m);
    }
    scheduler_run(&s, 100 * MS, 0, record, &log);
    CHECK_INT(log.n, 4);
    CHECK_INT(s.notes.count, 4);
    CHECK_INT(s.dropped_held, 2);
    scheduler_run(&s, 200 * MS, 0, record, &log);
    CHECK_INT(log.n, 8);
    CHECK_INT(s.notes.count, 0);

    /* A note with no off is ended by the sweep at max_note_ns. */
    memset(&log, 0, sizeof log);
    m = on(70);
    scheduler_push(&s, 1000 * MS, &m);
    scheduler_run(&s, 1000 * MS, 0, record, &log);
    CHECK_INT(scheduler_next_deadline(&s), 6000 * MS);
    scheduler_run(&s, 5999 * MS, 0, record, &log);
    CHECK_INT(log.n, 1);
    scheduler_run(&s, 6000 * MS, 0, record, &log);
    CHECK_INT(log.n, 2);
    CHECK(midi_msg_is_note_off(&log.msg[1]) && log.msg[1].data1 == 70);
    CHECK_INT(s.swept, 1);

    /* A re-struck pitch is ended first. */
    memset(&log, 0, sizeof log);
    m = on(72); scheduler_push(&s, 7000 * MS, &m);
    m = on(72); scheduler_push(&s, 7100 * MS, &m);
    scheduler_run(&s, 7100 * MS, 0, record, &log);
    CHECK_INT(log.n, 3);
    CHECK(midi_msg_is_note_off(&log.msg[1]));
    CHECK_INT(s.notes.count, 1);

    /* Panic: queued messages go, sounding notes end at once. */
    memset(&log, 0, sizeof log);
    m = on(74); scheduler_push(&s, 8000 * MS, &m);
    m = off(74); scheduler_push(&s, 9000 * MS, &m);
    scheduler_run(&s, 8000 * MS, 0, record, &log);
    CHECK_INT(s.notes.count, 2);
    scheduler_drop_queued(&s);
    scheduler_silence(&s, 8001 * MS, record, &log);
    CHECK_INT(s.notes.count, 0);
    CHECK_INT(scheduler_queued(&s), 0);
    CHECK_INT(log.n, 3);
    scheduler_run(&s, 10000 * MS, 0, record, &log);
    CHECK_INT(log.n, 3);

    /* A full queue drops instead of growing. */
    for (int i = 0; i < 64; i++) {
        m = on(40);
        CHECK_INT(scheduler_push(&s, 20000 * MS, &m), 0);
    }
    m = on(41);
    CHECK_INT(scheduler_push(&s, 20000 * MS, &m), -1);
    CHECK_INT(s.dropped_full, 1);
    scheduler_free(&s);
    return CHECK_DONE();
}

/* test_take_ring.c: the kept takes: numbering, the oldest replaced, a take played again as a take of its own, a stopped take keeping what sounded. */
#include <string.h>

#include "check.h"
#include "daemon/takes.h"

/* Take NUMBER's notes: pitches NUMBER, NUMBER + 1, ..., N of them, at
 * 0.1 s steps, with a time mark between (which a take does not keep). */
static void record(takes *ts, unsigned number, int n)
{
    play_settings play;
    memset(&play, 0, sizeof play);
    play.density = number / 10.0;
    take *t = takes_start(ts, number, 1000 + number, &play, 0);
    for (int i = 0; i < n; i++) {
        cont_event on = { i * 0.1, CONT_NOTE_ON, (uint8_t)(number + i), 80, 0 };
        cont_event mark = { i * 0.1, CONT_TIME, 0, 0, 0 };
        takes_add(t, &on);
        takes_add(t, &mark);
    }
}

/* T holds take NUMBER's N notes (record's), seed and settings. */
static void check_notes_of(const take *t, unsigned number, int n)
{
    CHECK_INT(t->n, n);
    CHECK_INT(t->seed, 1000 + number);
    CHECK_NEAR(t->play.density, number / 10.0, 1e-12);
    for (int i = 0; i < t->n && i < n; i++) {
        CHECK_INT(t->ev[i].kind, CONT_NOTE_ON);
        CHECK_INT(t->ev[i].pitch, number + i);
        CHECK_NEAR(t->ev[i].time, i * 0.1, 1e-12);
    }
}

/* An answer stopped at 0.55 s keeps what sounded by then: the notes
 * struck before, ended where they ended or at the stop, and nothing
 * struck at or after it. */
static void check_cut(takes *ts)
{
    play_settings play;
    memset(&play, 0, sizeof play);
    take *t = takes_start(ts, 1, 7, &play, 0);
    static const cont_event played[] = {
        { 0.00, CONT_NOTE_ON, 60, 80, 1 }, { 0.20, CONT_NOTE_OFF, 60, 0, 0 },
        { 0.25, CONT_NOTE_ON, 62, 80, 2 }, { 0.30, CONT_NOTE_ON, 64, 80, 3 },
        { 0.50, CONT_NOTE_OFF, 62, 0, 0 }, { 0.55, CONT_NOTE_ON, 67, 80, 4 },
        { 0.60, CONT_NOTE_ON, 65, 80, 5 }, { 0.70, CONT_NOTE_OFF, 64, 0, 0 },
        { 0.80, CONT_NOTE_OFF, 65, 0, 0 }, { 0.80, CONT_NOTE_OFF, 67, 0, 0 },
    };
    for (size_t i = 0; i < sizeof played / sizeof *played; i++)
        takes_add(t, &played[i]);
    takes_cut(t, 0.55);
    static const cont_event kept[] = {
        { 0.00, CONT_NOTE_ON, 60, 80, 1 }, { 0.20, CONT_NOTE_OFF, 60, 0, 0 },
        { 0.25, CONT_NOTE_ON, 62, 80, 2 }, { 0.30, CONT_NOTE_ON, 64, 80, 3 },
        { 0.50, CONT_NOTE_OFF, 62, 0, 0 }, { 0.55, CONT_NOTE_OFF, 64, 0, 0 },
    };
    CHECK_INT(t->n, (int)(sizeof kept / sizeof *kept));
    for (int i = 0; i < t->n && i < (int)(sizeof kept / sizeof *kept); i++) {
        CHECK_NEAR(t->ev[i].time, kept[i].time, 1e-12);
        CHECK_INT(t->ev[i].kind, kept[i].kind);
        CHECK_INT(t->ev[i].pitch, kept[i].pitch);
        CHECK_INT(t->ev[i].note, kept[i].note);
    }
    takes_cut(t, 0.55);         /* stopped again (a panic after the stop): nothing changes */
    CHECK_INT(t->n, (int)(sizeof kept / sizeof *kept));
    takes_cut(NULL, 1);
}

int main(void)
{
    static takes ts;            /* about a megabyte */
    memset(&ts, 0, sizeof ts);
    CHECK(takes_find(&ts, 0) == NULL);
    CHECK(takes_find(&ts, 1) == NULL);
    for (unsigned k = 1; k <= TAKES_KEPT; k++)
        record(&ts, k, (int)k);
    CHECK_INT(ts.last, TAKES_KEPT);
    check_notes_of(takes_find(&ts, 1), 1, 1);
    check_notes_of(takes_find(&ts, TAKES_KEPT), TAKES_KEPT, TAKES_KEPT);

    /* A take played again, not the oldest: a new take with its notes, the
     * take itself still kept; "previous take" stays where it was. */
    ts.cursor = 5;
    take *again = takes_replay(&ts, 99, 10);
    CHECK_INT(again->number, TAKES_KEPT + 1);
    CHECK_INT(again->replay_of, 10);
    CHECK_NEAR(again->when, 99, 1e-12);
    check_notes_of(again, 10, 10);
    check_notes_of(takes_find(&ts, 10), 10, 10);
    CHECK(takes_find(&ts, 1) == NULL);          /* the oldest made room */
    CHECK_INT(ts.cursor, 5);

    /* The oldest played again: the new take reuses its slot, and the notes
     * stay in place. */
    unsigned oldest = ts.last - TAKES_KEPT + 1;
    take *slot = (take *)takes_find(&ts, oldest);
    again = takes_replay(&ts, 100, oldest);
    CHECK(again == slot);
    CHECK_INT(again->number, TAKES_KEPT + 2);
    CHECK_INT(again->replay_of, oldest);
    check_notes_of(again, oldest, (int)oldest);
    CHECK(takes_find(&ts, oldest) == NULL);
    CHECK_INT(ts.cursor, 5);

    /* A sampled take starts from the newest again. */
    record(&ts, 40, 3);
    CHECK_INT(ts.cursor, 0);
    check_notes_of(takes_find(&ts, ts.last), 40, 3);

    check_cut(&ts);
    return CHECK_DONE();
}

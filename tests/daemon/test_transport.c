/* test_transport.c: MIDI clock to tempo (jitter, bursts, a new tempo), transport and song position. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "daemon/transport.h"

#define MS 1000000LL

static const midi_msg CLOCK = { 0xF8, 0, 0, 1 }, START = { 0xFA, 0, 0, 1 },
                      CONT = { 0xFB, 0, 0, 1 }, STOP = { 0xFC, 0, 0, 1 };

/* Period of a clock at BPM, ns. */
static double period(double bpm)
{
    return 60e9 / (bpm * TRANSPORT_PPQN);
}

int main(void)
{
    transport t;
    transport_init(&t);
    CHECK(!transport_locked(&t, 0));
    CHECK_INT(transport_bpm(&t), 0);

    /* 120 BPM with up to +-1.5 ms of jitter: the tempo within 0.5 BPM, the
     * predicted beat within 1 ms of the ideal grid. */
    srand(7);
    double p = period(120);
    int64_t t0 = 1000 * MS, ideal = 0;
    int k;
    for (k = 0; k < 96; k++) {
        ideal = t0 + (int64_t)(k * p);
        int64_t jitter = (rand() % 3001 - 1500) * 1000LL;
        CHECK_INT(transport_input(&t, &CLOCK, ideal + jitter), TRANSPORT_CLOCK);
    }
    CHECK(transport_locked(&t, ideal + 1 * MS));
    CHECK_NEAR(transport_bpm(&t), 120.0, 0.5);
    CHECK_INT(t.running, 0);
    CHECK_INT(transport_position(&t), 0);          /* stopped: clocks do not move it */

    /* Start: the next clock is song position 0. */
    CHECK_INT(transport_input(&t, &START, ideal + 5 * MS), TRANSPORT_STARTED);
    int64_t at;
    int64_t pos = transport_next_line(&t, ideal + 10 * MS, TRANSPORT_PPQN, &at);
    CHECK_INT(pos, 0);
    CHECK_NEAR((double)at, (double)(t0 + (int64_t)(96 * p)), 1.0 * MS);
    for (; k < 96 + 30; k++)
        transport_input(&t, &CLOCK, t0 + (int64_t)(k * p));
    CHECK_INT(transport_position(&t), 29);
    /* The next bar line (4/4) after now: position 96, 67 clocks ahead. */
    int64_t now = t0 + (int64_t)((k - 1) * p) + 1 * MS;
    pos = transport_next_line(&t, now, 4 * TRANSPORT_PPQN, &at);
    CHECK_INT(pos, 96);
    CHECK_NEAR((double)at, (double)(t0 + (int64_t)((96 + 96) * p)), 0.1 * MS);
    pos = transport_next_line(&t, now, TRANSPORT_PPQN, &at);
    CHECK_INT(pos, 48);

    /* A burst: the sender stalled 60 ms, then sent 4 clocks at once; the
     * tempo hardly moves. */
    int64_t tb = t0 + (int64_t)(k * p) + 60 * MS;
    for (int i = 0; i < 4; i++, k++)
        transport_input(&t, &CLOCK, tb);
    CHECK_NEAR(transport_bpm(&t), 120.0, 2.0);
    for (int i = 0; i < 24; i++, k++)
        transport_input(&t, &CLOCK, t0 + (int64_t)(k * p));
    CHECK_NEAR(transport_bpm(&t), 120.0, 0.01);

    /* A new tempo, 140 BPM: followed within one beat of clocks. */
    int64_t tc = t0 + (int64_t)((k - 1) * p);
    double q = period(140);
    for (int i = 1; i <= TRANSPORT_PPQN; i++, k++)
        transport_input(&t, &CLOCK, tc + (int64_t)(i * q));
    CHECK_NEAR(transport_bpm(&t), 140.0, 0.01);

    /* Stop, Song Position Pointer (16ths: 8 = two beats), Continue. */
    CHECK_INT(transport_input(&t, &STOP, tc + 1000 * MS), TRANSPORT_STOPPED);
    CHECK_INT(transport_input(&t, &STOP, tc + 1001 * MS), 0);   /* already stopped */
    midi_msg spp = { 0xF2, 8, 0, 3 };
    CHECK_INT(transport_input(&t, &spp, tc + 1002 * MS), TRANSPORT_POSITION);
    CHECK_INT(transport_position(&t), 48);
    midi_msg spp_hi = { 0xF2, 0, 1, 3 };            /* MSB: 128 16ths = 32 beats */
    CHECK_INT(transport_input(&t, &spp_hi, tc + 1003 * MS), TRANSPORT_POSITION);
    CHECK_INT(transport_position(&t), 128 * 6);
    CHECK_INT(transport_input(&t, &CONT, tc + 1004 * MS), TRANSPORT_STARTED);
    CHECK_INT(transport_input(&t, &spp, tc + 1005 * MS), 0);    /* ignored while running */
    transport_input(&t, &CLOCK, tc + 1010 * MS);
    CHECK_INT(transport_position(&t), 128 * 6);
    /* The clock paused for over a second: the fit starts over, not locked. */
    CHECK(!transport_locked(&t, tc + 1010 * MS));
    transport_input(&t, &CLOCK, tc + 1010 * MS + (int64_t)q);
    CHECK(transport_locked(&t, tc + 1011 * MS + (int64_t)q));
    CHECK(!transport_locked(&t, tc + 1010 * MS + (int64_t)(5 * q)));   /* the clock went away */
    CHECK_INT(t.clocks, (uint64_t)k + 2);
    return CHECK_DONE();
}

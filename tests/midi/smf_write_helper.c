/* smf_write_helper.c: writes a known two-hand performance with smf_write_file, and lists what it wrote, for test_smf_mido.py. */
#include <stdio.h>
#include <stdlib.h>

#include "midi/smf.h"

#define N_NOTES 200

/* A small deterministic generator so the file is the same on every run. */
static uint32_t rng_state = 12345u;
static uint32_t rng_next(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* Notes of one hand: onsets at irregular sub-millisecond times, each note
 * off before the next on; the right hand also pedals. */
static size_t make_hand(smf_event *ev, int lo, int span, int channel, int pedal)
{
    size_t n = 0;
    double t = 0.0123;
    for (int i = 0; i < N_NOTES; i++) {
        int key = lo + (int)(rng_next() % (uint32_t)span);
        int vel = 1 + (int)(rng_next() % 127);
        double len = 0.05 + (rng_next() % 100000) / 100000.0 * 0.4;
        ev[n++] = (smf_event){ t, 0, 0, (uint8_t)(0x90 | channel), (uint8_t)key, (uint8_t)vel };
        if (pedal && i % 10 == 0)
            ev[n++] = (smf_event){ t, 0, 0, (uint8_t)(0xB0 | channel), 64, 127 };
        t += len;
        ev[n++] = (smf_event){ t, 0, 0, (uint8_t)(0x80 | channel), (uint8_t)key, 64 };
        if (pedal && i % 10 == 5)
            ev[n++] = (smf_event){ t, 0, 0, (uint8_t)(0xB0 | channel), 64, 0 };
        t += (rng_next() % 1000) / 1000.0 * 0.2 + 0.00037;
    }
    return n;
}

int main(int argc, char **argv)
{
    static smf_event right[4 * N_NOTES], left[4 * N_NOTES];

    if (argc != 3) {
        fprintf(stderr, "usage: smf_write_helper OUT.mid OUT.txt\n");
        return 2;
    }
    size_t nr = make_hand(right, 60, 25, 0, 1);
    size_t nl = make_hand(left, 30, 30, 1, 0);
    smf_track_out tracks[2] = { { "right hand", right, nr }, { "left hand", left, nl } };
    if (smf_write_file(argv[1], tracks, 2) != 0)
        return 1;
    FILE *fp = fopen(argv[2], "w");
    if (!fp) {
        perror(argv[2]);
        return 1;
    }
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < tracks[t].n_events; i++) {
            const smf_event *e = &tracks[t].events[i];
            fprintf(fp, "%d %.9f %d %d %d\n", t, e->time, e->status, e->data1, e->data2);
        }
    return fclose(fp) == 0 ? 0 : 1;
}

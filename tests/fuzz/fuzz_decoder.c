/* fuzz_decoder.c: libFuzzer target for the streaming event decoder: any id sequence, both layouts; every note ends, in order, capped. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "codec/perf.h"
#include "codec/vocab.h"
#include "fuzz_quiet.h"

/* Input: byte 0 picks the layout (bit 0) and the note cap (bits 1..7: 0.05 s
 * steps, 0 = the default cap); then each pair of bytes is one id, a signed
 * little-endian 16-bit number, so negative and out-of-range ids come too. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const vocab *v = vocab_at(data[0] & 1);
    REQUIRE(v != NULL);
    double cap = (data[0] >> 1) * 0.05;
    double limit = cap > 0 ? cap : PERF_MAX_NOTE_S_DEFAULT;

    perf_decoder d;
    note_list out = { 0 };
    perf_decoder_init(&d, v, cap);
    size_t n_on = 0;             /* NOTE_ON ids fed */
    size_t done = 0;             /* notes checked so far */
    double last_release = 0.0;
    for (size_t i = 1; i < size; i += 2) {
        int id = i + 1 < size ? (int16_t)(uint16_t)(data[i] | data[i + 1] << 8) : data[i];
        int value;
        if (vocab_decode(v, id, &value) == EVENT_NOTE_ON)
            n_on++;
        double before = d.time;
        REQUIRE(perf_decoder_push(&d, id, &out) == 0);
        REQUIRE(d.time >= before);
        REQUIRE(d.n_sounding >= 0 && d.n_sounding <= 128);
        /* Notes come out as they end: never after the decoder's clock. */
        for (; done < out.n; done++) {
            const note *n = &out.notes[done];
            REQUIRE(n->release <= d.time + 1e-9);
            REQUIRE(n->release >= last_release);
            last_release = n->release;
        }
    }
    REQUIRE(perf_decoder_finish(&d, &out) == 0);
    REQUIRE(d.n_sounding == 0);
    for (int p = 0; p < 128; p++)
        REQUIRE(d.onset[p] < 0);
    /* Every NOTE_ON gave one note or one zero-length drop: nothing hangs. */
    REQUIRE(out.n + d.n_zero == n_on);
    for (size_t i = 0; i < out.n; i++) {
        const note *n = &out.notes[i];
        REQUIRE(isfinite(n->onset) && n->onset >= 0.0);
        REQUIRE(n->release > n->onset);
        REQUIRE(n->release - n->onset <= limit + 1e-9);
        REQUIRE(n->pitch >= v->min_pitch && n->pitch <= v->max_pitch);
        REQUIRE(n->velocity >= 1 && n->velocity <= 127);
    }
    /* What a player is sent: every note-on has its note-off, none before it. */
    smf_event *ev;
    size_t n_ev;
    REQUIRE(perf_notes_to_events(out.notes, out.n, &ev, &n_ev) == 0);
    int sounding[128];
    memset(sounding, 0, sizeof sounding);
    for (size_t i = 0; i < n_ev; i++) {
        if (i > 0)
            REQUIRE(ev[i].time >= ev[i - 1].time);
        if ((ev[i].status & 0xF0) == 0x90)
            sounding[ev[i].data1]++;
        else
            REQUIRE(--sounding[ev[i].data1] >= 0);
    }
    for (int p = 0; p < 128; p++)
        REQUIRE(sounding[p] == 0);
    free(ev);
    note_list_free(&out);
    return 0;
}

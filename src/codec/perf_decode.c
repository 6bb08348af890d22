/* perf_decode.c: performance events -> notes: the streaming decoder, and the mask of what may come next for a sampler. */
#include "codec/perf.h"

#include <string.h>

/* ---- decoder --------------------------------------------------------------- */

void perf_decoder_init(perf_decoder *d, const vocab *v, double max_note_s)
{
    memset(d, 0, sizeof *d);
    d->v = v;
    d->velocity = PERF_DEFAULT_VELOCITY;
    d->max_note_s = max_note_s > 0 ? max_note_s : PERF_MAX_NOTE_S_DEFAULT;
    for (int p = 0; p < 128; p++)
        d->onset[p] = -1;
}

static int decoder_end(perf_decoder *d, int p, double t, note_list *out)
{
    double on = d->onset[p];
    d->onset[p] = -1;
    d->n_sounding--;
    /* on + max_note_s, computed alike here and at each time shift: a note
     * the last shift left sounding is then never cut before that shift's
     * time (t - on > cap and on + cap < t can disagree by one ulp, and a
     * cut note's release came out before an earlier note's: found by
     * fuzz_decoder) */
    if (on + d->max_note_s < t) {
        t = on + d->max_note_s;
        d->n_capped++;
    }
    if (!(t > on)) {
        d->n_zero++;
        return 0;
    }
    note nt = { on, t, (uint8_t)p, d->onset_vel[p] };
    return note_list_append(out, &nt);
}

int perf_decoder_push(perf_decoder *d, int id, note_list *out)
{
    int value;

    switch (vocab_decode(d->v, id, &value)) {
    case EVENT_NOTE_ON:
        if (d->onset[value] >= 0 && decoder_end(d, value, d->time, out) < 0)
            return -1;
        d->onset[value] = d->time;
        d->onset_vel[value] = (uint8_t)d->velocity;
        d->n_sounding++;
        return 0;
    case EVENT_NOTE_OFF:
        if (d->onset[value] < 0) {
            d->n_ignored++;
            return 0;
        }
        return decoder_end(d, value, d->time, out);
    case EVENT_TIME_SHIFT: {
        d->steps += value;
        d->time = (double)d->steps * d->v->step_ms / 1000.0;
        size_t first = out->n;
        for (int p = 0; d->n_sounding > 0 && p < 128; p++)
            if (d->onset[p] >= 0 && d->onset[p] + d->max_note_s < d->time
                && decoder_end(d, p, d->time, out) < 0)
                return -1;
        /* Cut notes end at onset + max_note_s, not in pitch order: keep OUT
         * in order of release (insertion sort; at most 128 notes, stable). */
        for (size_t i = first + 1; i < out->n; i++) {
            note nt = out->notes[i];
            size_t j = i;
            for (; j > first && out->notes[j - 1].release > nt.release; j--)
                out->notes[j] = out->notes[j - 1];
            out->notes[j] = nt;
        }
        return 0;
    }
    case EVENT_VELOCITY:
        d->velocity = bin_to_velocity(d->v, value);
        return 0;
    case EVENT_EOS:
        d->eos = 1;
        return perf_decoder_finish(d, out);
    case EVENT_PAD:
    case EVENT_INVALID:
        break;
    }
    d->n_ignored++;
    return 0;
}

int perf_decoder_finish(perf_decoder *d, note_list *out)
{
    for (int p = 0; d->n_sounding > 0 && p < 128; p++)
        if (d->onset[p] >= 0 && decoder_end(d, p, d->time, out) < 0)
            return -1;
    return 0;
}

static void next_set(uint8_t *mask, int n, int id, uint8_t what)
{
    if (id >= 0 && id < n)
        mask[id] = what;
}

void perf_decoder_next_mask(const perf_decoder *d, int max_held, int allow_eos, int protect_time,
                            uint8_t *mask, int n)
{
    const vocab *v = d->v;
    memset(mask, PERF_NEXT_ALLOWED, (size_t)n);
    if (v->has_pad_eos) {
        next_set(mask, n, vocab_id(v, EVENT_PAD, 0), PERF_NEXT_FORBIDDEN);
        if (!allow_eos)
            next_set(mask, n, vocab_id(v, EVENT_EOS, 0), PERF_NEXT_FORBIDDEN);
    }
    int held = 0;
    for (int p = 0; p < 128; p++)
        held += d->onset[p] >= 0;
    for (int p = v->min_pitch; p <= v->max_pitch; p++) {
        int sounding = d->onset[p] >= 0;
        if (!sounding)
            next_set(mask, n, vocab_id(v, EVENT_NOTE_OFF, p), PERF_NEXT_FORBIDDEN);
        /* re-striking a sounding pitch ends it first: the count does not grow */
        if (!sounding && max_held > 0 && held >= max_held)
            next_set(mask, n, vocab_id(v, EVENT_NOTE_ON, p), PERF_NEXT_FORBIDDEN);
    }
    if (protect_time)
        for (int i = 1; i <= v->n_time_shifts; i++)
            next_set(mask, n, vocab_id(v, EVENT_TIME_SHIFT, i), PERF_NEXT_PROTECTED);
}

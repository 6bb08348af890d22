/* perf_pedal.c: the sustain pedal, folded in once: the rules (perf_fold_event, shared with the streaming encoder) and MIDI events -> notes (perf_notes_from_midi). */
#include "codec/perf.h"
#include "codec/perf_internal.h"

/* ---- the sustain pedal, folded in once for both encoders ------------------ */

/* The rules of REFERENCE.md, as perf_internal.h writes them down. */
void perf_fold_event(pedal_fold *f, const smf_event *ev, fold_step *out)
{
    int type = ev->status & 0xF0, p = ev->data1 & 0x7F;

    out->n_ends = 0;
    out->struck = -1;
    if (type == 0x90 && ev->data2 > 0) {
        if (f->state[p] != KEY_SILENT)
            out->ends[out->n_ends++] = (uint8_t)p;
        f->state[p] = KEY_HELD;
        out->struck = p;
        out->velocity = ev->data2 & 0x7F;
    } else if (type == 0x80 || type == 0x90) {
        if (f->state[p] != KEY_HELD)
            return;                                 /* silent, or already sustained */
        f->state[p] = f->pedal ? KEY_SUSTAINED : KEY_SILENT;
        if (!f->pedal)
            out->ends[out->n_ends++] = (uint8_t)p;
    } else if (type == 0xB0 && p == 64) {
        int down = ev->data2 >= 64;
        if (f->pedal && !down) {
            for (int q = 0; q < 128; q++) {
                if (f->state[q] == KEY_SUSTAINED) {
                    f->state[q] = KEY_SILENT;
                    out->ends[out->n_ends++] = (uint8_t)q;
                }
            }
        }
        f->pedal = down;
    }
}

/* ---- MIDI events -> notes -------------------------------------------------- */

/* Insertion sort by onset, then pitch: stable, and linear on the nearly
 * sorted lists perf_notes_from_midi builds (out of order only among notes
 * that start together). */
static void sort_nearly_sorted(note *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (!note_before(&a[i], &a[i - 1]))
            continue;
        note x = a[i];
        size_t j = i;
        for (; j > 0 && note_before(&x, &a[j - 1]); j--)
            a[j] = a[j - 1];
        a[j] = x;
    }
}

int perf_notes_from_midi(const smf_event *ev, size_t n, note_list *out)
{
    /* Each note gets its slot in OUT when it starts (so OUT stays in onset
     * order) and its release when it ends. */
    pedal_fold fold = { { 0 }, 0 };
    fold_step step;
    size_t slot[128];
    double last = 0;
    size_t first = out->n;

    for (size_t i = 0; i < n; i++) {
        double t = ev[i].time;
        if (t > last)
            last = t;
        perf_fold_event(&fold, &ev[i], &step);
        for (int k = 0; k < step.n_ends; k++)
            out->notes[slot[step.ends[k]]].release = t;
        if (step.struck >= 0) {
            note nt = { t, t, (uint8_t)step.struck, (uint8_t)step.velocity };
            if (note_list_append(out, &nt) < 0)
                return -1;
            slot[step.struck] = out->n - 1;
        }
    }
    for (int q = 0; q < 128; q++)                   /* still sounding at the end */
        if (fold.state[q] != KEY_SILENT)
            out->notes[slot[q]].release = last;
    if (first == 0) {
        sort_nearly_sorted(out->notes, out->n);
        return 0;
    }
    return note_list_sort(out);
}

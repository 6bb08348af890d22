/* perf_notes.c: note lists (append, stable sort) and notes -> MIDI channel events (perf_notes_to_events). */
#include "codec/perf.h"
#include "codec/perf_internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* ---- note lists ---------------------------------------------------------- */

void note_list_free(note_list *l)
{
    free(l->notes);
    memset(l, 0, sizeof *l);
}

int note_list_append(note_list *l, const note *n)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 256;
        note *p = realloc(l->notes, ncap * sizeof *p);
        if (!p) {
            log_error("cannot store notes: out of memory");
            return -1;
        }
        l->notes = p;
        l->cap = ncap;
    }
    l->notes[l->n++] = *n;
    return 0;
}

int note_list_sort(note_list *l)
{
    size_t n = l->n, i;

    for (i = 1; i < n && !note_before(&l->notes[i], &l->notes[i - 1]); i++)
        ;
    if (i >= n)
        return 0;                       /* already sorted: the usual case */
    note *tmp = malloc(n * sizeof *tmp);
    if (!tmp) {
        log_error("cannot sort notes: out of memory");
        return -1;
    }
    note *src = l->notes, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {     /* bottom-up merge sort: stable */
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi)
                dst[k++] = note_before(&src[b], &src[a]) ? src[b++] : src[a++];
            while (a < mid)
                dst[k++] = src[a++];
            while (b < hi)
                dst[k++] = src[b++];
        }
        note *t = src;
        src = dst;
        dst = t;
    }
    if (src != l->notes)
        memcpy(l->notes, src, n * sizeof *src);
    free(tmp);
    return 0;
}

/* ---- notes -> MIDI channel events ------------------------------------------ */

static int event_cmp(const void *pa, const void *pb)
{
    const smf_event *a = pa, *b = pb;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    int a_on = (a->status & 0xF0) == 0x90, b_on = (b->status & 0xF0) == 0x90;
    if (a_on != b_on)
        return a_on - b_on;                 /* offs first */
    return (int)a->data1 - (int)b->data1;
}

int perf_notes_to_events(const note *notes, size_t n, smf_event **ev, size_t *n_ev)
{
    smf_event *e = malloc((2 * n + 1) * sizeof *e);

    *ev = NULL;
    *n_ev = 0;
    if (!e) {
        log_error("cannot convert %zu notes to MIDI events: out of memory", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t vel = notes[i].velocity < 1 ? 1 : notes[i].velocity > 127 ? 127 : notes[i].velocity;
        e[2 * i] = (smf_event){ .time = notes[i].onset, .status = 0x90,
                                .data1 = notes[i].pitch & 0x7F, .data2 = vel };
        e[2 * i + 1] = (smf_event){ .time = notes[i].release, .status = 0x80,
                                    .data1 = notes[i].pitch & 0x7F, .data2 = 0 };
    }
    qsort(e, 2 * n, sizeof *e, event_cmp);
    *ev = e;
    *n_ev = 2 * n;
    return 0;
}

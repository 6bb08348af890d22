/* scheduler.c: a deadline heap and a note table: on-time output without stuck notes. */
#include "daemon/scheduler.h"

#include <stdlib.h>
#include <string.h>

void note_table_clear(note_table *t)
{
    memset(t, 0, sizeof *t);
}

void note_table_update(note_table *t, const midi_msg *m, int64_t now)
{
    int ch = m->status & 0x0F;
    if (midi_msg_is_note_on(m)) {
        if (!t->on[ch][m->data1]) {
            t->on[ch][m->data1] = 1;
            t->count++;
        }
        t->start[ch][m->data1] = now;
    } else if (midi_msg_is_note_off(m) && t->on[ch][m->data1]) {
        t->on[ch][m->data1] = 0;
        t->count--;
    }
}

int scheduler_init(scheduler *s, size_t capacity, int64_t max_note_ns, int max_held)
{
    memset(s, 0, sizeof *s);
    s->heap = calloc(capacity, sizeof *s->heap);
    if (!s->heap)
        return -1;
    s->capacity = capacity;
    s->oldest_start = INT64_MAX;
    s->max_note_ns = max_note_ns;
    s->max_held = max_held;
    return 0;
}

void scheduler_free(scheduler *s)
{
    free(s->heap);
    s->heap = NULL;
}

static int before(const sched_event *a, const sched_event *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

int scheduler_push(scheduler *s, int64_t due, const midi_msg *m)
{
    if (s->n == s->capacity) {
        s->dropped_full++;
        return -1;
    }
    size_t i = s->n++;
    sched_event ev = { due, s->next_seq++, *m };
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&ev, &s->heap[parent]))
            break;
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = ev;
    return 0;
}

/* Takes the event at heap index I out: the last one fills its place and
 * moves down, or up, to where it belongs. */
static void remove_at(scheduler *s, size_t i)
{
    sched_event last = s->heap[--s->n];
    if (i == s->n)
        return;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->n)
            break;
        if (c + 1 < s->n && before(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!before(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    while (i > 0 && before(&last, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = last;
}

static void pop_min(scheduler *s)
{
    remove_at(s, 0);
}

int scheduler_unpush(scheduler *s, int64_t due, const midi_msg *m)
{
    size_t found = s->n;
    for (size_t i = 0; i < s->n; i++) {
        const sched_event *e = &s->heap[i];
        if (e->due == due && e->msg.status == m->status && e->msg.data1 == m->data1 && e->msg.data2 == m->data2
            && (found == s->n || e->seq > s->heap[found].seq))
            found = i;
    }
    if (found == s->n)
        return 0;
    remove_at(s, found);
    return 1;
}

int64_t scheduler_next_deadline(const scheduler *s)
{
    int64_t t = s->n ? s->heap[0].due : INT64_MAX;
    if (s->notes.count > 0 && s->oldest_start + s->max_note_ns < t)
        t = s->oldest_start + s->max_note_ns;
    return t;
}

static void send(scheduler *s, const midi_msg *m, int64_t now, sched_emit_fn emit, void *user)
{
    note_table_update(&s->notes, m, now);
    if (s->notes.count == 0)
        s->oldest_start = INT64_MAX;
    else if (midi_msg_is_note_on(m) && now < s->oldest_start)
        s->oldest_start = now;
    s->sent++;
    emit(user, m, now);
}

static void send_off(scheduler *s, int ch, int pitch, int64_t now, sched_emit_fn emit, void *user)
{
    midi_msg off = { (uint8_t)(0x80 | ch), (uint8_t)pitch, 0, 3 };
    send(s, &off, now, emit, user);
}

void scheduler_run(scheduler *s, int64_t now, int64_t slack_ns, sched_emit_fn emit, void *user)
{
    while (s->n > 0 && s->heap[0].due <= now + slack_ns) {
        sched_event ev = s->heap[0];
        pop_min(s);
        int ch = ev.msg.status & 0x0F;
        if (midi_msg_is_note_on(&ev.msg)) {
            if (s->notes.on[ch][ev.msg.data1])
                send_off(s, ch, ev.msg.data1, now, emit, user);
            else if (s->notes.count >= s->max_held) {
                s->dropped_held++;
                continue;
            }
        } else if (midi_msg_is_note_off(&ev.msg) && !s->notes.on[ch][ev.msg.data1]) {
            continue;   /* its note-on was dropped, swept or re-struck */
        }
        /* Timing error of what is actually sent. */
        if (now - ev.due > 1000000)
            s->late++;
        if (now - ev.due > s->max_late_ns)
            s->max_late_ns = now - ev.due;
        int64_t late_us = (now - ev.due) / 1000;
        s->late_us[s->n_late_samples++ % SCHED_LATE_SAMPLES] =
            (int32_t)(late_us > INT32_MAX ? INT32_MAX : late_us < INT32_MIN ? INT32_MIN : late_us);
        send(s, &ev.msg, now, emit, user);
    }
    /* The sweep: a scan of the table only when the oldest note may be due
     * (OLDEST_START can be early after offs: then the scan just renews it). */
    if (s->notes.count == 0 || now - s->oldest_start < s->max_note_ns)
        return;
    s->oldest_start = INT64_MAX;
    for (int ch = 0; ch < 16; ch++)
        for (int p = 0; p < 128; p++) {
            if (!s->notes.on[ch][p])
                continue;
            if (now - s->notes.start[ch][p] >= s->max_note_ns) {
                s->swept++;
                send_off(s, ch, p, now, emit, user);
            } else if (s->notes.start[ch][p] < s->oldest_start) {
                s->oldest_start = s->notes.start[ch][p];
            }
        }
}

void scheduler_drop_queued(scheduler *s)
{
    s->n = 0;
}

void scheduler_shift_queued(scheduler *s, int64_t delta)
{
    for (size_t i = 0; i < s->n; i++)   /* the same for all: the heap keeps its order */
        s->heap[i].due += delta;
}

void scheduler_silence(scheduler *s, int64_t now, sched_emit_fn emit, void *user)
{
    for (int ch = 0; ch < 16 && s->notes.count > 0; ch++)
        for (int p = 0; p < 128; p++)
            if (s->notes.on[ch][p])
                send_off(s, ch, p, now, emit, user);
}

size_t scheduler_queued(const scheduler *s)
{
    return s->n;
}

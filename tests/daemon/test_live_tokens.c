/* test_live_tokens.c: real performances played into the service's input path give the model the tokens `continuo encode` writes.
 *
 * Each performance of ASAP's valid split ($ASAP_DIR/split.tsv) is replayed
 * message by message, with its times, through the functions the service
 * runs for each MIDI message it reads: phrase_input (the loop: what the
 * model hears) and context_hear (the model engine's listen: the codec's
 * streaming encoder, then the context's tokens).  The ids the context feeds
 * the model must equal perf_encode's for the file (what `continuo encode`
 * writes), but for the two rules of a live context: no silence before the
 * player's first event (the service's time 0 is not the performance's), and
 * a silence longer than CONTEXT_MAX_GAP_S enters as that long.  At the end
 * the player lifts the pedal and every key, as the file's end does for
 * `encode`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codec/perf.h"
#include "play/context.h"
#include "daemon/phrase.h"
#include "midi/smf.h"

typedef struct id_list {
    int   *ids;
    size_t n, cap;
} id_list;

static int record(void *user, int id)
{
    id_list *l = user;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 4096;
        l->ids = realloc(l->ids, l->cap * sizeof *l->ids);
        if (!l->ids)
            abort();
    }
    l->ids[l->n++] = id;
    return 0;
}

/* perf_encode's ids with the live rules applied (see the top). */
static void live_rules(const vocab *v, const uint16_t *in, size_t n, id_list *out)
{
    int64_t max_gap = (int64_t)(CONTEXT_MAX_GAP_S * 1000 / v->step_ms);
    size_t i = 0;
    while (i < n && vocab_decode(v, in[i], &(int){ 0 }) == EVENT_TIME_SHIFT)
        i++;                                /* no leading silence */
    while (i < n) {
        int64_t gap = 0;
        int value;
        while (i < n && vocab_decode(v, in[i], &value) == EVENT_TIME_SHIFT) {
            gap += value;
            i++;
        }
        if (gap > max_gap)
            gap = max_gap;
        for (; gap > 0; gap -= v->n_time_shifts)
            record(out, vocab_id(v, EVENT_TIME_SHIFT, gap > v->n_time_shifts ? v->n_time_shifts : (int)gap));
        if (i < n)
            record(out, in[i++]);
    }
}

/* The service's input path: phrase_input decides what the model hears;
 * context_hear is what the engine does with it. */
static void hear(phrase *ph, config *cfg, context *ctx, uint8_t status, uint8_t d1, uint8_t d2, double t)
{
    midi_msg m = { status, d1, d2, 3 };
    phrase_changes asked;   /* the controllers' settings: not what this test is about */
    if (phrase_input(ph, cfg, &m, (int64_t)(t * 1e9), &asked) & PHRASE_HEAR) {
        smf_event e = { .time = t, .status = status, .data1 = d1, .data2 = d2 };
        CHECK_INT(context_hear(ctx, &e), 0);
    }
}

static size_t n_files, n_tokens, n_pedal, n_capped;

static void one_file(const vocab *v, const char *path)
{
    smf f;
    note_list notes = { 0 };
    uint16_t *ref = NULL;
    size_t n_ref = 0;
    id_list want = { 0 }, got = { 0 };
    if (smf_read_file(path, &f) < 0) {
        CHECK(!"readable");
        return;
    }
    encode_opts opt = { .stretch = 1.0 };      /* `continuo encode`'s defaults */
    CHECK_INT(perf_notes_from_midi(f.events, f.n_events, &notes), 0);
    CHECK_INT(perf_encode(v, notes.notes, notes.n, &opt, &ref, &n_ref), 0);
    live_rules(v, ref, n_ref, &want);

    config cfg;
    config_defaults(&cfg);
    cfg.held_note_timeout_ms = 0;   /* a key held long in the file is held long */
    phrase ph;
    phrase_init(&ph);
    context ctx;
    CHECK_INT(context_init(&ctx, v, 1024, PERF_MAX_NOTE_S_DEFAULT, record, &got), 0);
    double last = 0;
    for (size_t i = 0; i < f.n_events; i++) {
        const smf_event *e = &f.events[i];
        n_pedal += (e->status & 0xF0) == 0xB0 && e->data1 == 64;
        hear(&ph, &cfg, &ctx, e->status, e->data1, e->data2, e->time);
        last = e->time > last ? e->time : last;
    }
    hear(&ph, &cfg, &ctx, 0xB0, 64, 0, last);  /* the end: pedal and keys up */
    for (int p = 0; p < 128; p++)
        hear(&ph, &cfg, &ctx, 0x80, (uint8_t)p, 0, last);
    CHECK_INT(context_hear_until(&ctx, last + 1.0), 0);

    size_t i = 0;
    while (i < want.n && i < got.n && want.ids[i] == got.ids[i])
        i++;
    if (i < want.n || i < got.n) {
        char a[32] = "(end)", b[32] = "(end)";
        if (i < want.n)
            vocab_id_name(v, want.ids[i], a, sizeof a);
        if (i < got.n)
            vocab_id_name(v, got.ids[i], b, sizeof b);
        fprintf(stderr, "%s: the service fed the model %zu ids, encode gives %zu; first difference at "
                "%zu: encode %s, service %s\n", path, got.n, want.n, i, a, b);
        CHECK(!"the same tokens");
    }
    n_files++;
    n_tokens += got.n;
    size_t lead = 0;
    while (lead < n_ref && vocab_decode(v, ref[lead], &(int){ 0 }) == EVENT_TIME_SHIFT)
        lead++;
    n_capped += want.n != n_ref - lead;
    context_free(&ctx);
    free(want.ids);
    free(got.ids);
    free(ref);
    note_list_free(&notes);
    smf_free(&f);
}

/* The live rules themselves, on a few messages: a step's events wait for
 * the step to end or the continuation to begin; the first event has no
 * silence before it; a NOTE_OFF the model already sampled for the player's
 * note is not fed twice; a long gap enters as CONTEXT_MAX_GAP_S. */
static void test_rules(const vocab *v)
{
    id_list got = { 0 };
    context ctx;
    char buf[64];
    CHECK_INT(context_init(&ctx, v, 64, PERF_MAX_NOTE_S_DEFAULT, record, &got), 0);
    smf_event on = { .time = 5.0, .status = 0x90, .data1 = 60, .data2 = 80 };
    CHECK_INT(context_hear(&ctx, &on), 0);
    CHECK_INT(got.n, 0);                                    /* its step may get more */
    CHECK_INT(context_begin(&ctx, 5.0), 0);                 /* the phrase ends: it is final */
    CHECK_INT(got.n, 2);
    CHECK_STR_CONTAINS(vocab_id_name(v, got.ids[0], buf, sizeof buf), "VELOCITY(19)");
    CHECK_STR_CONTAINS(vocab_id_name(v, got.ids[1], buf, sizeof buf), "NOTE_ON(60)");
    CHECK_INT(context_feed(&ctx, vocab_id(v, EVENT_NOTE_OFF, 60)), 0);   /* sampled by the model */
    context_end(&ctx);
    smf_event off = { .time = 5.5, .status = 0x80, .data1 = 60, .data2 = 0 };
    CHECK_INT(context_hear(&ctx, &off), 0);
    CHECK_INT(context_hear_until(&ctx, 6.0), 0);
    CHECK_INT(got.n, 3);                                    /* not a second NOTE_OFF(60) */
    smf_event late = { .time = 30.0, .status = 0x90, .data1 = 62, .data2 = 80 };
    CHECK_INT(context_hear(&ctx, &late), 0);
    CHECK_INT(context_hear_until(&ctx, 31.0), 0);
    int shifted = 0, value;
    for (size_t i = 3; i < got.n; i++)
        if (vocab_decode(v, got.ids[i], &value) == EVENT_TIME_SHIFT)
            shifted += value;
    CHECK_INT(shifted, (int)(CONTEXT_MAX_GAP_S * 1000 / v->step_ms));   /* 24.5 s in: 2 s */
    CHECK_STR_CONTAINS(vocab_id_name(v, got.ids[got.n - 1], buf, sizeof buf), "NOTE_ON(62)");
    context_free(&ctx);
    free(got.ids);
}

int main(void)
{
    const vocab *v = vocab_default();
    test_rules(v);

    const char *dir = getenv("ASAP_DIR");
    char path[4096], line[4096];
    snprintf(path, sizeof path, "%s/split.tsv", dir ? dir : ".");
    FILE *fp = dir ? fopen(path, "r") : NULL;
    if (!fp) {
        printf("SKIP: no ASAP split (%s): set the meson option asap_dir or ASAP_DIR\n", path);
        return check_failures ? CHECK_DONE() : 77;
    }
    while (fgets(line, sizeof line, fp)) {
        char *split = strtok(line, "\t\n"), *file = NULL;
        for (int col = 1; col <= 3 && split; col++)
            file = strtok(NULL, "\t\n");
        if (split && file && strcmp(split, "valid") == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, file);
            one_file(v, path);
        }
    }
    fclose(fp);
    printf("%zu performances, %zu tokens fed to the model, compared with `continuo encode`'s (%zu pedal messages; "
           "%zu with a gap between events capped at %.0f s)\n", n_files, n_tokens, n_pedal, n_capped, CONTEXT_MAX_GAP_S);
    CHECK(n_files > 0);
    CHECK(n_pedal > 0);     /* the pedal was exercised */
    return CHECK_DONE();
}

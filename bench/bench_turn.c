/* bench_turn.c: when does the phrase end?  The rules of serve's phrase end (silence 800 ms,
 * silence 300 ms, auto: play/turn.h on the model's odds, the last chord's cues and the probe of its whole
 * expectation) over a split's performances in
 * simulated time: the answer's delay at the real ends, the barge-ins into the pauses.
 *
 *   bench_turn odds ROOT SPLIT.tsv SPLIT OUT [--part I/N] [--every K] [--model PATH] [--logits]
 *       the model hears each performance as serve does (continuation_hear, stream memory,
 *       512 events); at every silence (nothing held, pedal up, 30 ms in: serve's prepare)
 *       the odds of the next event and the cues (turn_ear, as serve's engine hears them) are
 *       kept, with where the silence ends, in OUT; with --logits, the model's raw logits
 *       there too, in OUT.logits (turn_cues.py --probe: its whole next-event distribution)
 *   bench_turn table FILE... [--auto-th1 X] [--auto-th2 X] [--th1 X] [--th2 X] [--bias X] [--rest X]
 *                    [--hold H] [--min-ms MS] [--silence-ms MS] [--grid]
 *       the table for the rules, from those files (no model: quick enough to tune): auto (its
 *       thresholds at 300 and 600 ms), the cue rule without the probe (th1, th2), both with
 *       phrase_end_bias X added to their thresholds, and the odds' rule (rest, hold, min-ms)
 *   bench_turn answers MIDI [--model PATH] [--silence-ms MS] [--bias X]
 *       one performance heard and judged by the shipped rule (auto): when each answer
 *       starts, and how sure the rule was (turn_verdict's margin, as serve's status gives it; for
 *       tests/model/test_phrase_end_live.py, which plays it into serve)
 *
 * A real end: the end of a performance, or a silence (nothing held, pedal up) of 2 s or
 * more; a pause: one shorter, ended by a note.  An answer starts when the rule's deadline
 * passes in a silence (as live.c's live_due: the deadline counts from the last note-off or
 * pedal lift, and at most one answer per phrase: a note must come first); it is a
 * barge-in when the player plays a note within 2 s of its start. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/vocab.h"
#include "midi/smf.h"
#include "model/model.h"
#include "play/continuation.h"
#include "play/turn.h"
#include "util/clock.h"
#include "util/fileio.h"
#include "util/log.h"

#define PREPARE_S   0.030   /* serve asks for the verdict this long into a silence (live.c) */
#define END_S       2.0     /* a silence this long is a real end */
#define BARGE_S     2.0     /* a note this soon after an answer's start: it barged in */
#define N_CTX       512     /* serve's context (context_events, capped by the model's) */
#define PACE_NOTES  8       /* the phrase's pace: the mean time between its last onsets */
_Static_assert(PACE_NOTES <= TURN_KEY_NOTES, "the pace's onsets come from the ear's ring");
#define FILE_MAGIC  0x33727574u /* "tur3": with the cues and the probe */
#define LOGITS_MAGIC 0x4c727574u /* "turL": then the silence count, the vocabulary's size,
                                   and each silence's logits (float32), in OUT's order */

/* One silence as serve's timer sees it: from a message that left nothing
 * sounding (or a pedal message while nothing sounds) to the next message. */
typedef struct silence {
    int32_t perf;           /* performance index in its file */
    int32_t notes;          /* note-ons of the performance before it */
    double  start;          /* s: its message (the timer counts from it) */
    double  next;           /* s: the next message of any kind (INFINITY: none) */
    double  quiet_start;    /* s: when nothing sounded any more (the last release) */
    double  quiet_end;      /* s: the next note-on or pedal down (INFINITY: none) */
    double  next_note;      /* s: the next note-on (INFINITY: none) */
    float   ioi;            /* s: the mean time between the last PACE_NOTES note-ons */
    float   last_len;       /* s: from the last note-on to the silence */
    float   survive[TURN_MAX_STEPS + 1];    /* turn_odds.survive at the prepare */
    float   cues[TURN_CUES];                /* turn_odds.cues (play/turn.h) */
    int32_t have_cues;
    float   probe[2];                       /* turn_odds.probe */
    int32_t have_probe;
    int32_t unused;                         /* the file's rows are the struct: no padding */
} silence;
_Static_assert(sizeof(silence) == 624, "turn_cues.py's SILENCE is this struct, packed");

typedef struct perf_info {
    double minutes;         /* of playing: first to last message */
} perf_info;

typedef struct store {
    silence   *s;
    int        n, cap;
    perf_info *p;
    int        n_perf, cap_perf;
    int        steps, step_ms;
    FILE      *logits;      /* --logits: each kept silence's logits, as they come */
} store;

static int store_add(store *st, const silence *x)
{
    if (st->n == st->cap) {
        int cap = st->cap ? 2 * st->cap : 4096;
        silence *s = realloc(st->s, sizeof *s * (size_t)cap);
        if (!s)
            return -1;
        st->s = s;
        st->cap = cap;
    }
    st->s[st->n++] = *x;
    return 0;
}

static void store_free(store *st)
{
    free(st->s);
    free(st->p);
    memset(st, 0, sizeof *st);
}

static int store_perf(store *st, double minutes)
{
    if (st->n_perf == st->cap_perf) {
        int cap = st->cap_perf ? 2 * st->cap_perf : 256;
        perf_info *p = realloc(st->p, sizeof *p * (size_t)cap);
        if (!p)
            return -1;
        st->p = p;
        st->cap_perf = cap;
    }
    st->p[st->n_perf++].minutes = minutes;
    return 0;
}

/* ---- the model's pass ---- */

static int is_note_on(const smf_event *e)
{
    return (e->status & 0xF0) == 0x90 && e->data2 > 0;
}

static int is_note_off(const smf_event *e)
{
    return (e->status & 0xF0) == 0x80 || ((e->status & 0xF0) == 0x90 && e->data2 == 0);
}

static int is_pedal(const smf_event *e)
{
    return (e->status & 0xF0) == 0xB0 && e->data1 == 64;
}

/* What the phrase (daemon/phrase.c) keeps of the player: the ear (held
 * keys, pedal, note-ons; live.c's engine keeps the same), and when the
 * last message and the quiet stretch came. */
typedef struct player {
    turn_ear ear;
    double  last, quiet_start;
    int     first_of_quiet;     /* store index of the quiet stretch's first silence, -1 */
} player;

/* The time of the Ith note-on heard (the ear's ring holds the last TURN_KEY_NOTES). */
static double onset_of(const turn_ear *e, long i)
{
    return e->on_t[i % TURN_KEY_NOTES];
}

/* The odds at the prepare of the silence from P->last to NEXT, kept. */
static int keep_silence(store *st, continuation *c, const vocab *v, const player *p, int perf, double next)
{
    const turn_ear *e = &p->ear;
    if (e->n == 0 || e->held > 0 || e->pedal || next - p->last <= PREPARE_S)
        return 0;
    if (continuation_hear_until(c, p->last + PREPARE_S) < 0)
        return -1;
    turn_odds o;
    turn_odds_read(&o, v, continuation_model_state(c)->logits);
    turn_ear_cues(e, &o);
    silence x = { .perf = perf, .notes = (int)e->n, .start = p->last, .next = next,
                  .quiet_start = p->quiet_start, .quiet_end = INFINITY, .next_note = INFINITY };
    long n = e->n < PACE_NOTES ? e->n : PACE_NOTES;
    double newest = onset_of(e, e->n - 1), oldest = onset_of(e, e->n - n);
    x.ioi = n > 1 ? (float)((newest - oldest) / (n - 1)) : 0;
    x.last_len = (float)(p->last - newest);
    for (int k = 0; k <= TURN_MAX_STEPS; k++)
        x.survive[k] = (float)o.survive[k];
    for (int k = 0; k < TURN_CUES; k++)
        x.cues[k] = (float)o.cues[k];
    x.have_cues = o.have_cues;
    x.probe[0] = (float)o.probe[0];
    x.probe[1] = (float)o.probe[1];
    x.have_probe = o.have_probe;
    st->steps = o.steps;
    st->step_ms = o.step_ms;
    if (st->logits && fwrite(continuation_model_state(c)->logits, sizeof(float), (size_t)v->size, st->logits)
                      != (size_t)v->size)
        return -1;
    return store_add(st, &x);
}

/* Message E at its time: the player's state as phrase.c keeps it; the
 * silences of the quiet stretch it ends learn where it ended. */
static void player_take(player *p, store *st, const smf_event *e)
{
    int quiet = p->ear.held == 0 && !p->ear.pedal;
    if (!turn_ear_hear(&p->ear, e->time, e->status, e->data1, e->data2))
        return;
    p->last = e->time;
    int now_quiet = p->ear.held == 0 && !p->ear.pedal;
    if (quiet && !now_quiet && p->first_of_quiet >= 0) {
        for (int i = p->first_of_quiet; i < st->n; i++)
            st->s[i].quiet_end = e->time;
        p->first_of_quiet = -1;
    }
    if (!quiet && now_quiet) {
        p->quiet_start = e->time;
        p->first_of_quiet = st->n;
    }
}

/* Every silence's next note-on, from the end backwards. */
static void mark_next_notes(store *st, int from, const smf *f)
{
    size_t j = f->n_events;
    double next = INFINITY;
    for (int i = st->n - 1; i >= from; i--) {
        while (j > 0 && f->events[j - 1].time > st->s[i].start) {
            j--;
            if (is_note_on(&f->events[j]))
                next = f->events[j].time;
        }
        st->s[i].next_note = next;
    }
}

/* One performance heard; its silences kept.  0, or -1 (logged). */
static int hear_performance(store *st, model *m, const vocab *v, const smf *f, int perf)
{
    continuation c;
    if (continuation_init(&c, m, v, N_CTX, 1, MODEL_MEMORY_STREAM, PLAY_MAX_NOTE_MS / 1000.0, 0) < 0)
        return -1;
    player p;
    memset(&p, 0, sizeof p);
    p.first_of_quiet = -1;
    turn_ear_reset(&p.ear);
    int from = st->n, rc = 0;
    double first = -1, last = 0;
    for (size_t i = 0; i < f->n_events && rc == 0; i++) {
        const smf_event *e = &f->events[i];
        if (!is_note_on(e) && !is_note_off(e) && !is_pedal(e))
            continue;
        if (first < 0 && is_note_on(e))
            first = e->time;
        rc = keep_silence(st, &c, v, &p, perf, e->time);
        player_take(&p, st, e);
        if (rc == 0)
            rc = continuation_hear(&c, e);
        last = e->time;
    }
    if (rc == 0)
        rc = keep_silence(st, &c, v, &p, perf, INFINITY);
    mark_next_notes(st, from, f);
    continuation_free(&c);
    if (rc == 0)
        rc = store_perf(st, first < 0 ? 0 : (last - first) / 60.0);
    return rc;
}

static int write_store(const store *st, const char *path)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        perror(path);
        return -1;
    }
    uint32_t head[5] = { FILE_MAGIC, (uint32_t)st->n_perf, (uint32_t)st->n, (uint32_t)st->steps,
                         (uint32_t)st->step_ms };
    int ok = fwrite(head, sizeof head, 1, fp) == 1
             && fwrite(st->p, sizeof *st->p, (size_t)st->n_perf, fp) == (size_t)st->n_perf
             && fwrite(st->s, sizeof *st->s, (size_t)st->n, fp) == (size_t)st->n;
    if (fclose(fp) != 0 || !ok) {
        fprintf(stderr, "%s: cannot write\n", path);
        return -1;
    }
    return 0;
}

/* The split's files, one path per line of the tsv's rows of SPLIT. */
static int split_files(const char *root, const char *tsv_path, const char *split, char ***out)
{
    uint8_t *tsv;
    size_t len;
    if (file_read_all(tsv_path, &tsv, &len) < 0)
        return -1;
    char *text = realloc(tsv, len + 1), *save = NULL;
    if (!text)
        return -1;
    text[len] = '\0';
    int n = 0;
    char **files = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *f[4];
        int nf = 0;
        for (char *q = line; nf < 4 && q; nf++) {
            f[nf] = q;
            q = strchr(q, '\t');
            if (q)
                *q++ = '\0';
        }
        if (nf < 4 || strcmp(f[0], split) != 0)
            continue;
        f[3][strcspn(f[3], "\r")] = '\0';
        char **more = realloc(files, sizeof *files * (size_t)(n + 1));
        size_t plen = strlen(root) + strlen(f[3]) + 2;
        if (!more || !(more[n] = malloc(plen)))
            return -1;
        files = more;
        snprintf(files[n++], plen, "%s/%s", root, f[3]);
    }
    free(text);
    *out = files;
    return n;
}

static int cmd_odds(int argc, char **argv)
{
    if (argc < 6)
        return 2;
    const char *root = argv[2], *tsv = argv[3], *split = argv[4], *out = argv[5], *model_path = NULL;
    int part = 0, parts = 1, every = 1, logits = 0;
    for (int i = 6; i < argc; i++) {
        if (strcmp(argv[i], "--logits") == 0)
            logits = 1;
        else if (strcmp(argv[i], "--part") == 0 && i + 1 < argc && sscanf(argv[++i], "%d/%d", &part, &parts) == 2)
            continue;
        else if (strcmp(argv[i], "--every") == 0 && i + 1 < argc && (every = atoi(argv[++i])) > 0)
            continue;
        else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc)
            model_path = argv[++i];
        else
            return 2;
    }
    char **files;
    int n = split_files(root, tsv, split, &files), rc = 1;
    model m;
    const vocab *v;
    if (n < 0)
        return 1;
    store st;
    memset(&st, 0, sizeof st);
    char logits_path[4096] = "", logits_part[4112] = "";
    if (model_open(&m, model_path, &v) != 0)
        goto out;
    if (logits) {
        snprintf(logits_path, sizeof logits_path, "%s.logits", out);
        snprintf(logits_part, sizeof logits_part, "%s.part", logits_path);
        uint32_t head[3] = { LOGITS_MAGIC, 0, (uint32_t)v->size };     /* the count comes at the end */
        if (!(st.logits = fopen(logits_part, "wb")) || fwrite(head, sizeof head, 1, st.logits) != 1) {
            perror(logits_part);
            goto out_model;
        }
    }
    double t0 = clock_now_seconds(), minutes = 0;
    int done = 0, todo = 0;
    for (int i = 0; i < n; i++)
        todo += i % every == 0 && (i / every) % parts == part;
    for (int i = 0; i < n; i++) {
        if (i % every != 0 || (i / every) % parts != part)
            continue;
        smf f;
        if (smf_read_file(files[i], &f) < 0)
            continue;
        int heard = hear_performance(&st, &m, v, &f, st.n_perf);
        smf_free(&f);
        if (heard < 0)
            goto out_model;
        minutes += st.p[st.n_perf - 1].minutes;
        double el = clock_now_seconds() - t0;
        done++;
        fprintf(stderr, "%d/%d %s: %d silences so far, %.0f min of playing in %.0f s (%.0fx real time), "
                "about %.0f s left\n", done, todo, files[i], st.n, minutes, el, minutes * 60 / el,
                el / done * (todo - done));
    }
    rc = write_store(&st, out) < 0 ? 1 : 0;
    if (rc == 0 && st.logits) {
        uint32_t head[3] = { LOGITS_MAGIC, (uint32_t)st.n, (uint32_t)v->size };
        if (fseek(st.logits, 0, SEEK_SET) != 0 || fwrite(head, sizeof head, 1, st.logits) != 1
            || fclose(st.logits) != 0 || rename(logits_part, logits_path) != 0) {
            fprintf(stderr, "%s: cannot write\n", logits_path);
            rc = 1;
        }
        st.logits = NULL;
    }
out_model:
    if (st.logits)
        fclose(st.logits);
    if (rc != 0 && logits_part[0])
        remove(logits_part);    /* a pass that failed leaves no half-written logits */
    model_free(&m);
out:
    store_free(&st);
    for (int i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return rc;
}

/* ---- the table ---- */

static int read_store(store *st, const char *path)
{
    FILE *fp = fopen(path, "rb");
    uint32_t head[5];
    if (!fp || fread(head, sizeof head, 1, fp) != 1 || head[0] != FILE_MAGIC) {
        fprintf(stderr, "%s: not a bench_turn odds file\n", path);
        if (fp)
            fclose(fp);
        return -1;
    }
    int base = st->n_perf, ok = 1;
    for (uint32_t i = 0; i < head[1] && ok; i++) {
        perf_info p;
        ok = fread(&p, sizeof p, 1, fp) == 1 && store_perf(st, p.minutes) == 0;
    }
    for (uint32_t i = 0; i < head[2] && ok; i++) {
        silence x;
        ok = fread(&x, sizeof x, 1, fp) == 1;
        x.perf += base;
        ok = ok && store_add(st, &x) == 0;
    }
    fclose(fp);
    st->steps = (int)head[3];
    st->step_ms = (int)head[4];
    return ok ? 0 : -1;
}

/* A rule: a fixed silence (rule.rest > 1) or turn_verdict's. */
typedef struct outcome {
    double *delay;          /* ms from the last release to the answer, at each real end */
    int     n_delay;        /* real ends answered */
    int     ends, ends_final, unanswered, barge_ins, answers, pauses;
    double  minutes;
} outcome;

/* The odds serve's prepare read at silence X, as kept. */
static void odds_of(const store *st, const silence *x, turn_odds *o)
{
    o->steps = st->steps;
    o->step_ms = st->step_ms;
    for (int k = 0; k <= TURN_MAX_STEPS; k++)
        o->survive[k] = x->survive[k];
    o->onset_age = x->last_len + PREPARE_S;     /* read at the prepare, as serve does */
    o->have_cues = x->have_cues;
    for (int k = 0; k < TURN_CUES; k++)
        o->cues[k] = x->cues[k];
    o->have_probe = x->have_probe;
    o->probe[0] = x->probe[0];
    o->probe[1] = x->probe[1];
}

/* The answer's start (s) in silence X under rule R, or INFINITY when the
 * player's next message comes first; MARGIN (may be NULL): the verdict's. */
static double answer_at(const store *st, const silence *x, const turn_rule *r, double *margin)
{
    turn_odds o;
    odds_of(st, x, &o);
    int ms = turn_verdict(&o, r, margin);
    double at = x->start + (ms < PREPARE_S * 1000 ? PREPARE_S : ms / 1000.0);
    return at < x->next ? at : INFINITY;
}

static void evaluate(const store *st, const turn_rule *r, outcome *out)
{
    memset(out, 0, sizeof *out);
    out->delay = malloc(sizeof *out->delay * (size_t)(st->n + 1));
    int answered_perf = -1, answered_notes = -1;
    double last_quiet = -1;
    int last_perf = -1;
    for (int i = 0; i < st->n; i++) {
        const silence *x = &st->s[i];
        int new_quiet = x->perf != last_perf || x->quiet_start != last_quiet;
        int real_end = x->quiet_end - x->quiet_start >= END_S;
        if (new_quiet) {
            out->ends += real_end;
            out->ends_final += x->quiet_end == INFINITY;
            out->pauses += !real_end && x->quiet_end < INFINITY;
            last_perf = x->perf;
            last_quiet = x->quiet_start;
        }
        if (x->perf == answered_perf && x->notes == answered_notes)
            continue;       /* answered: no phrase until a note comes */
        double at = answer_at(st, x, r, NULL);
        if (at == INFINITY) {
            out->unanswered += real_end && x->next == INFINITY;
            continue;
        }
        answered_perf = x->perf;
        answered_notes = x->notes;
        out->answers++;
        out->barge_ins += x->next_note - at < BARGE_S;
        if (real_end)
            out->delay[out->n_delay++] = (at - x->quiet_start) * 1000;
    }
    for (int p = 0; p < st->n_perf; p++)
        out->minutes += st->p[p].minutes;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The value under which a share Q of V's N sorted values lies (nearest rank). */
static double quantile(const double *v, int n, double q)
{
    if (n == 0)
        return NAN;
    int i = (int)ceil(q * n) - 1;
    return v[i < 0 ? 0 : i];
}

static void print_row(const char *name, const outcome *o)
{
    qsort(o->delay, (size_t)o->n_delay, sizeof *o->delay, cmp_double);
    double med = o->n_delay ? (o->n_delay % 2 ? o->delay[o->n_delay / 2]
                                              : (o->delay[o->n_delay / 2 - 1] + o->delay[o->n_delay / 2]) / 2)
                            : NAN;
    printf("| %-36s | %5d | %6.0f | %6.0f | %7d | %6.3f | %7d |\n", name, o->n_delay, med,
           quantile(o->delay, o->n_delay, 0.9), o->barge_ins, o->minutes > 0 ? o->barge_ins / o->minutes : 0,
           o->answers);
}

static void print_head(const store *st, const outcome *o)
{
    printf("%d performances, %.1f min of playing, %d silences over %.0f ms (nothing held, pedal up): "
           "%d real ends (%d at a performance's end, the rest silences of %.0f s or more; %d performances end "
           "with a key or the pedal held: no silence), %d pauses, %d real ends unanswered\n\n",
           st->n_perf, o->minutes, st->n, PREPARE_S * 1000, o->ends, o->ends_final, END_S,
           st->n_perf - o->ends_final, o->pauses, o->unanswered);
    printf("| rule                                 | ends  | median | p90    | barge-ins | per min | answers |\n");
    printf("|--------------------------------------|-------|--------|--------|---------|--------|---------|\n");
}

static void rule_row(const store *st, const turn_rule *r, const char *name, int head)
{
    outcome o;
    evaluate(st, r, &o);
    if (head)
        print_head(st, &o);
    print_row(name, &o);
    free(o.delay);
}

static int cmd_table(int argc, char **argv)
{
    store st;
    memset(&st, 0, sizeof st);
    turn_rule cue = turn_rule_cues(800);
    turn_rule probe = turn_rule_auto(800);
    turn_rule r = { .rest = TURN_REST_DEFAULT, .hold = TURN_HOLD_DEFAULT, .min_ms = TURN_MIN_MS_DEFAULT,
                    .max_ms = 800 };
    int grid = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--grid") == 0)
            grid = 1;
        else if (strcmp(argv[i], "--auto-th1") == 0 && i + 1 < argc)
            probe.th_probe[0] = atof(argv[++i]);
        else if (strcmp(argv[i], "--auto-th2") == 0 && i + 1 < argc)
            probe.th_probe[1] = atof(argv[++i]);
        else if (strcmp(argv[i], "--bias") == 0 && i + 1 < argc)
            probe.bias = cue.bias = atof(argv[++i]);
        else if (strcmp(argv[i], "--th1") == 0 && i + 1 < argc)
            cue.th[0] = atof(argv[++i]);
        else if (strcmp(argv[i], "--th2") == 0 && i + 1 < argc)
            cue.th[1] = atof(argv[++i]);
        else if (strcmp(argv[i], "--rest") == 0 && i + 1 < argc)
            r.rest = atof(argv[++i]);
        else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc)
            r.hold = atof(argv[++i]);
        else if (strcmp(argv[i], "--min-ms") == 0 && i + 1 < argc)
            r.min_ms = atoi(argv[++i]);
        else if (strcmp(argv[i], "--silence-ms") == 0 && i + 1 < argc)
            r.max_ms = cue.max_ms = probe.max_ms = atoi(argv[++i]);
        else if (read_store(&st, argv[i]) < 0) {
            store_free(&st);
            return 1;
        }
    }
    char name[64];
    turn_rule s800 = { .rest = 2, .max_ms = 800 }, s300 = { .rest = 2, .max_ms = 300 };
    rule_row(&st, &s800, "silence 800 ms", 1);
    rule_row(&st, &s300, "silence 300 ms", 0);
    snprintf(name, sizeof name, "auto (cues and probe) (%+.1f, %+.1f)", probe.th_probe[0] + probe.bias,
             probe.th_probe[1] + probe.bias);
    rule_row(&st, &probe, name, 0);
    snprintf(name, sizeof name, "cues alone (%+.1f, %+.1f)", cue.th[0] + cue.bias, cue.th[1] + cue.bias);
    rule_row(&st, &cue, name, 0);
    snprintf(name, sizeof name, "odds (rest %.2f, hold %.2f, min %d)", r.rest, r.hold, r.min_ms);
    rule_row(&st, &r, name, 0);
    static const double rests[] = { 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98 };
    static const double holds[] = { 0, 0.25, 0.5, 0.75, 1, 1.5 };
    static const int mins[] = { 30, 100, 150, 200, 250, 300 };
    for (size_t h = 0; grid && h < sizeof holds / sizeof *holds; h++)
        for (size_t i = 0; i < sizeof rests / sizeof *rests; i++)
            for (size_t j = 0; j < sizeof mins / sizeof *mins; j++) {
                turn_rule g = { .rest = rests[i], .hold = holds[h], .min_ms = mins[j], .max_ms = r.max_ms };
                snprintf(name, sizeof name, "odds (rest %.2f, hold %.2f, min %d)", g.rest, g.hold, g.min_ms);
                rule_row(&st, &g, name, 0);
            }
    store_free(&st);
    return 0;
}

/* One file, the shipped rule: each answer's start and delay, and a summary. */
static int cmd_answers(int argc, char **argv)
{
    const char *model_path = NULL;
    turn_rule r = turn_rule_auto(800);
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--model") == 0)
            model_path = argv[i + 1];
        else if (strcmp(argv[i], "--silence-ms") == 0)
            r.max_ms = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--bias") == 0)
            r.bias = atof(argv[i + 1]);
        else
            return 2;
    }
    model m;
    const vocab *v;
    smf f;
    store st;
    memset(&st, 0, sizeof st);
    if (smf_read_file(argv[2], &f) < 0)
        return 1;
    if (model_open(&m, model_path, &v) != 0) {
        smf_free(&f);
        return 1;
    }
    int rc = hear_performance(&st, &m, v, &f, 0) < 0;
    smf_free(&f);
    model_free(&m);
    if (rc) {
        store_free(&st);
        return 1;
    }
    int answers = 0, barge_ins = 0, notes = -1;
    for (int i = 0; i < st.n; i++) {
        const silence *x = &st.s[i];
        double margin;
        double at = x->notes == notes ? INFINITY : answer_at(&st, x, &r, &margin);
        if (at == INFINITY)
            continue;
        notes = x->notes;
        answers++;
        barge_ins += x->next_note - at < BARGE_S;
        printf("answer %d at %.3f s: %.0f ms after the release at %.3f s, margin %+.2f%s\n", answers, at,
               (at - x->quiet_start) * 1000, x->quiet_start, margin,
               x->next_note - at < BARGE_S ? " (barge-in)" : "");
    }
    double last = NAN;          /* the last silence judged: serve's status gives it */
    if (st.n > 0) {
        turn_odds o;
        odds_of(&st, &st.s[st.n - 1], &o);
        turn_verdict(&o, &r, &last);
    }
    printf("answers=%d barge_ins=%d last_margin=%+.2f\n", answers, barge_ins, last);
    store_free(&st);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = 2;
    log_set_level(LOG_LEVEL_WARN);
    if (argc > 1 && strcmp(argv[1], "odds") == 0)
        rc = cmd_odds(argc, argv);
    else if (argc > 2 && strcmp(argv[1], "table") == 0)
        rc = cmd_table(argc, argv);
    else if (argc > 2 && strcmp(argv[1], "answers") == 0)
        rc = cmd_answers(argc, argv);
    if (rc == 2)
        fprintf(stderr, "usage: bench_turn odds ROOT SPLIT.tsv SPLIT OUT [--part I/N] [--every K] [--model PATH] "
                        "[--logits]\n"
                        "       bench_turn table FILE... [--auto-th1 X] [--auto-th2 X] [--th1 X] [--th2 X] [--bias X]\n"
                        "                        [--rest X] [--hold H] [--min-ms MS] [--silence-ms MS] [--grid]\n"
                        "       bench_turn answers MIDI [--model PATH] [--silence-ms MS] [--bias X]\n");
    return rc;
}

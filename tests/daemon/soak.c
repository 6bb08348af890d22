/* soak.c: drives the service pipeline (phrases, generator thread, engine, scheduler, journal) with phrases cut from real performances on a sped-up clock, and prints what it saw: notes, memory, descriptors, latency. In a run of 2,000 phrases or more the last thousand replay the first thousand, with a fresh process playing them beside it in turns, so the latencies compare the same music on the machine as it is then. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/engine.h"
#include "daemon/generator.h"
#include "daemon/options.h"
#include "daemon/phrase.h"
#include "daemon/scheduler.h"
#include "io/midi_port.h"
#include "midi/journal.h"
#include "midi/smf.h"
#include "util/clock.h"
#include "util/log.h"

#define NS 1000000000LL

/* Under AddressSanitizer freed memory sits in quarantine: RSS says nothing. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define WINDOW 1000        /* phrases compared at the start and the end of a run */

/* What the soak counts. */
typedef struct soak_stats {
    unsigned long files, phrases, responses, interrupted, gen_events;
    unsigned long model_on, model_off;     /* note-ons / note-offs the scheduler sent */
    double gen_seconds;                    /* wall time spent waiting for the generator */
    double music_seconds;                  /* length of the continuations */
    long rss_start_kb, rss_mid_kb;
    long rss_first_kb, fds_first;          /* after the first WINDOW phrases (or 10 % of a short run) */
    double *latency_ms;                    /* per phrase: the ask to its answer's first event, wall clock (NAN: none) */
    unsigned long replay_at;               /* at this phrase the files start again from the first */
    int replay;                            /* set when it is reached: the last WINDOW phrases are the first's */
    int child;                             /* the fresh process: no progress lines, always takes its turn back */
    int turn_in, turn_out;                 /* lockstep with the other process: a byte each way per turn (-1: none) */
    unsigned long turn_base;               /* phrases played before the compared thousand began */
} soak_stats;

static soak_stats st = { .turn_in = -1, .turn_out = -1 };

/* Lockstep: this process's turn is over; the other one plays before this
 * one goes on.  LAST: no turn is taken back. */
static void pass_turn(int last)
{
    char b = 1;
    if (st.turn_out < 0)
        return;
    if (write(st.turn_out, &b, 1) != 1 || (!last && read(st.turn_in, &b, 1) != 1)) {
        close(st.turn_out);             /* the other process is gone: go on alone */
        st.turn_out = st.turn_in = -1;
    }
}

/* After each phrase of the compared thousand: the fresh process hands over
 * after its odd phrases, the soak after its even ones, so that each plays
 * two in a row (F1 | A1 A2 | F2 F3 | A3 A4 ...): each goes first on every
 * other phrase, and neither is always the one that meets the caches as
 * the other left them. */
static void take_turns(int last)
{
    unsigned long k = st.phrases - st.turn_base;
    if (st.turn_out >= 0 && (k & 1) == (unsigned long)st.child)
        pass_turn(last);
}

static midi_port *journal;  /* the journal output, as the service has one */

static long rss_kb(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Descriptors open now. */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3;       /* ., .. and the one opendir holds */
}

static void count(void *user, const midi_msg *m, int64_t now)
{
    (void)user;
    if (journal)
        midi_port_keep(journal, m, MIDI_PART_MODEL, (double)now / NS);
    if (midi_msg_is_note_on(m))
        st.model_on++;
    else if (midi_msg_is_note_off(m))
        st.model_off++;
}

static void send_cmd(generator *g, const gen_cmd *c)
{
    while (generator_send(g, c) < 0)
        usleep(100);
}

/* Until the generator has taken every command sent and waits for the next.
 * The soak sends a phrase's seconds of playing at once; a player's reach
 * it as they are played, each heard (a decode step, a window slide now and
 * then) long before the phrase's end, so the latency clock starts when the
 * phrase is heard, as the service's does at the phrase end.  (Race-free:
 * the thread marks itself busy before it pops, idle after the last pop.) */
static void wait_heard(generator *g)
{
    while (!generator_idle(g))
        usleep(200);
}

/* Asks for a continuation at virtual time NOW and collects all of it. */
static void respond(generator *g, scheduler *s, const config *cfg, uint32_t id, int64_t now)
{
    gen_cmd c;
    gen_out o;
    memset(&c, 0, sizeof c);
    c.kind = GEN_RESPOND;
    c.id = id;
    c.at = (double)now / NS;
    config_spec(cfg, id, &c.spec);
    wait_heard(g);
    double t0 = clock_now_seconds(), last = 0;
    int first = 1;
    send_cmd(g, &c);
    st.responses++;
    for (int done = 0; !done; ) {
        struct pollfd p = { g->wake_loop, POLLIN, 0 };
        poll(&p, 1, 1000);
        generator_ack_wake(g);
        while (generator_receive(g, &o)) {
            if (o.id != id)
                continue;
            if (o.done) {
                done = 1;
                break;
            }
            st.gen_events++;
            if (first && st.latency_ms) {
                st.latency_ms[st.phrases - 1] = (clock_now_seconds() - t0) * 1e3;
                first = 0;
            }
            midi_msg m = { (uint8_t)(o.ev.kind == CONT_NOTE_ON ? 0x90 : 0x80), o.ev.pitch,
                           o.ev.kind == CONT_NOTE_ON ? o.ev.velocity : 0, 3 };
            scheduler_push(s, now + (int64_t)(o.ev.time * NS), &m);
            if (o.ev.time > last)
                last = o.ev.time;
        }
    }
    st.gen_seconds += clock_now_seconds() - t0;
    st.music_seconds += last;
    /* Play it on the virtual clock, then end what it left sounding. */
    int64_t end = now + (int64_t)(last * NS);
    for (int64_t t = scheduler_next_deadline(s); t <= end; t = scheduler_next_deadline(s))
        scheduler_run(s, t, 0, count, NULL);
    scheduler_drop_queued(s);
    scheduler_silence(s, end + NS / 2, count, NULL);
}

/* One performance: its notes as the player, phrase by phrase. */
/* A controller's settings, as the service takes them (without its apply steps). */
static void take_changes(config *cfg, const phrase_changes *asked)
{
    char value[32], why[256];
    for (int i = 0; i < asked->n; i++) {
        snprintf(value, sizeof value, "%.17g", asked->item[i].value);
        if (config_set(cfg, config_find(asked->item[i].option), value, why, sizeof why) < 0)
            fprintf(stderr, "soak: %s: %s\n", asked->item[i].option, why);
    }
}

/* The player's message M at virtual time T: the phrase detector, the
 * context (GEN_LISTEN) and the journal, as the service takes it. */
static void hear(generator *g, phrase *ph, config *cfg, const midi_msg *m, int64_t t)
{
    phrase_changes asked;
    int act = phrase_input(ph, cfg, m, t, &asked);
    take_changes(cfg, &asked);
    if (journal)
        midi_port_keep(journal, m, MIDI_PART_PLAYER, (double)t / NS);
    if (act & PHRASE_HEAR) {
        gen_cmd c;
        memset(&c, 0, sizeof c);
        c.kind = GEN_LISTEN;
        c.heard = (smf_event){ .time = (double)t / NS, .status = m->status, .data1 = m->data1, .data2 = m->data2 };
        send_cmd(g, &c);
    }
}

/* A phrase cut at virtual time T: what is held ends (note-offs, the pedal
 * up), as a player would lift the hands. */
static void lift(generator *g, phrase *ph, config *cfg, uint8_t held[16][128], uint16_t *pedal, int64_t t)
{
    for (int ch = 0; ch < 16; ch++) {
        for (int p = 0; p < 128; p++)
            if (held[ch][p]) {
                midi_msg off = { (uint8_t)(0x80 | ch), (uint8_t)p, 0, 3 };
                hear(g, ph, cfg, &off, t);
                held[ch][p] = 0;
            }
        if (*pedal & 1u << ch) {
            midi_msg up = { (uint8_t)(0xB0 | ch), 64, 0, 3 };
            hear(g, ph, cfg, &up, t);
        }
    }
    *pedal = 0;
}

/* Keeps what M holds down. */
static void track_held(const midi_msg *m, uint8_t held[16][128], uint16_t *pedal)
{
    int type = m->status & 0xF0, ch = m->status & 15;
    if (type == 0x90 || type == 0x80)
        held[ch][m->data1] = type == 0x90 && m->data2 > 0;
    else if (type == 0xB0 && m->data1 == 64)
        *pedal = m->data2 >= 64 ? (uint16_t)(*pedal | 1u << ch) : (uint16_t)(*pedal & ~(1u << ch));
}

/* One performance as phrases: every CUT seconds (0: as it is) the player
 * lifts the hands and waits out the silence that ends a phrase. */
static int soak_file(const char *path, generator *g, scheduler *s, config *cfg, int64_t *clock,
                     uint32_t *id, unsigned long max_phrases, double cut)
{
    smf f;
    phrase ph;
    uint8_t held[16][128];
    uint16_t pedal = 0;
    if (smf_read_file(path, &f) < 0)
        return 0;
    st.files++;
    phrase_init(&ph);
    memset(held, 0, sizeof held);
    int64_t base = *clock, gap = (int64_t)cfg->phrase_silence_ms * 1000000 + NS / 2;
    double chunk = 0;
    for (size_t i = 0; i < f.n_events && st.phrases < max_phrases; i++) {
        const smf_event *e = &f.events[i];
        if (cut > 0 && e->time - chunk >= cut) {
            lift(g, &ph, cfg, held, &pedal, *clock);
            base += gap;
            chunk = e->time;
        }
        int64_t t = base + (int64_t)(e->time * NS);
        /* The silence before this event ended the phrase? */
        int64_t dl = phrase_deadline(&ph, cfg);
        if (dl <= t) {
            phrase_end(&ph);
            st.phrases++;
            respond(g, s, cfg, ++*id, dl);
            take_turns(!st.child && st.phrases == max_phrases);
            if (st.phrases == max_phrases / 10)
                st.rss_mid_kb = rss_kb();
            if (st.phrases == (max_phrases >= 2 * WINDOW ? WINDOW : max_phrases / 10)) {
                st.rss_first_kb = rss_kb();
                st.fds_first = open_fds();
            }
            /* Progress: a line per tenth of the run, so a long soak shows it is alive. */
            if (!st.child && max_phrases >= 10 && st.phrases % (max_phrases / 10) == 0)
                fprintf(stderr, "soak: %lu/%lu phrases, %lu continuations, notes %lu on %lu off, "
                        "RSS %ld kB\n", st.phrases, max_phrases, st.responses, st.model_on,
                        st.model_off, rss_kb());
            if (st.phrases == st.replay_at) {
                /* The last WINDOW phrases replay the first WINDOW, so that
                 * their latencies compare the same music. */
                lift(g, &ph, cfg, held, &pedal, *clock);
                st.replay = 1;
                break;
            }
        }
        midi_msg m = { e->status, e->data1, e->data2, 3 };
        track_held(&m, held, &pedal);
        hear(g, &ph, cfg, &m, t);
        *clock = t;
    }
    *clock += 2 * NS;
    smf_free(&f);
    return 0;
}

static int collect(const char *dir, char ***paths, size_t *n, size_t *cap)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    if (!d)
        return -1;
    while ((de = readdir(d))) {
        char p[4096];
        if (de->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        size_t len = strlen(de->d_name);
        if (len > 4 && (strcmp(de->d_name + len - 4, ".mid") == 0 || strcmp(de->d_name + len - 5, ".midi") == 0)) {
            if (*n == *cap) {
                *cap = *cap ? *cap * 2 : 256;
                *paths = realloc(*paths, *cap * sizeof **paths);
            }
            (*paths)[(*n)++] = strdup(p);
        } else {
            collect(p, paths, n, cap);
        }
    }
    closedir(d);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of the N latencies from X that were measured (NAN: none). */
static double median(const double *x, unsigned long n)
{
    double *c = malloc((n ? n : 1) * sizeof *c), m = NAN;
    unsigned long k = 0;
    if (!c)
        return NAN;
    for (unsigned long i = 0; i < n; i++)
        if (!isnan(x[i]))
            c[k++] = x[i];
    if (k > 0) {
        qsort(c, k, sizeof *c, cmp_double);
        m = k % 2 ? c[k / 2] : (c[k / 2 - 1] + c[k / 2]) / 2;
    }
    free(c);
    return m;
}

/* The spread of the median of X's N values (NAN: none): the standard
 * deviation of the medians of 500 resamples with replacement (a fixed
 * seed: the same figure for the same run). */
static double median_se(const double *x, unsigned long n)
{
    double *r = malloc((n ? n : 1) * sizeof *r), sum = 0, sum2 = 0;
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    const int reps = 500;
    if (!r || n == 0) {
        free(r);
        return NAN;
    }
    for (int k = 0; k < reps; k++) {
        for (unsigned long i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            r[i] = x[(seed >> 33) % n];
        }
        double m = median(r, n);
        sum += m;
        sum2 += m * m;
    }
    free(r);
    double mean = sum / reps;
    return sqrt(sum2 / reps - mean * mean > 0 ? sum2 / reps - mean * mean : 0);
}

/* The journal output into DIR, as the service opens it (NULL: none). */
static midi_port *open_journal(const char *dir)
{
    char spec[4200];
    snprintf(spec, sizeof spec, "journal:%s", dir);
    return midi_port_open(spec, MIDI_OUT);
}

/* The engine, the generator thread and the scheduler, as the service
 * starts them.  The engine, or NULL. */
static const engine_ops *start_pipeline(config *cfg, generator *g, scheduler *s)
{
    const engine_ops *eng = engine_for(cfg);
    if (!eng || generator_start(g, eng, cfg) < 0)
        return NULL;
    if (scheduler_init(s, 16384, (int64_t)cfg->play.max_note_ms * 1000000, cfg->play.max_held) < 0) {
        generator_stop(g);
        return NULL;
    }
    return eng;
}

/* The fresh process: loads the model as the soak did at its start, waits
 * for its turn, plays WARM_UP phrases of other music unmeasured (so that
 * its context is as full as the aged service's: a decode step costs more
 * in a full context), then the first WINDOW phrases in lockstep with the
 * soak's last WINDOW (the same music and seeds, on the machine as it is
 * then) and writes their latencies to RESULT_FD, one double per phrase. */
#define WARM_UP 20
static int fresh_run(char **paths, size_t n, const config *cfg0, double cut, int result_fd)
{
    char dir[] = "/tmp/continuo-soak-fresh-XXXXXX";
    config cfg = *cfg0;
    generator g;
    scheduler s;
    char b;
    journal = mkdtemp(dir) ? open_journal(dir) : NULL;     /* its own, as a fresh service writes */
    if (!start_pipeline(&cfg, &g, &s))
        return 1;
    if (read(st.turn_in, &b, 1) != 1)   /* the soak's last thousand begin */
        return 1;
    int64_t clock = NS;
    uint32_t id = 0;
    double *measured = st.latency_ms;
    int turn_out = st.turn_out;
    st.latency_ms = NULL;               /* the warm-up: not measured, no turns, then the hands lift */
    st.turn_out = -1;
    st.replay_at = WARM_UP;
    for (size_t i = n / 2; !st.replay; i = (i + 1) % n)
        soak_file(paths[i], &g, &s, &cfg, &clock, &id, WARM_UP, cut);
    st.latency_ms = measured;
    st.turn_out = turn_out;
    st.replay_at = 0;
    st.replay = 0;
    st.phrases = 0;
    id = 0;                             /* the seeds of the soak's first thousand */
    for (size_t i = 0; st.phrases < WINDOW; i = (i + 1) % n)
        soak_file(paths[i], &g, &s, &cfg, &clock, &id, WINDOW, cut);
    generator_stop(&g);
    int sounding = s.notes.count;
    scheduler_free(&s);
    if (journal) {
        midi_port_close(journal);
        journal_prune(dir, NULL, 0, 1);
    }
    rmdir(dir);
    size_t want = WINDOW * sizeof *st.latency_ms;
    int ok = write(result_fd, st.latency_ms, want) == (ssize_t)want;
    return ok && st.model_on == st.model_off && sounding == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *dir = getenv("ASAP_DIR"), *model = "echo", *journal_dir = NULL, *latencies = NULL;
    unsigned long max_phrases = 1000;
    double cut = 3;
    char tmp_journal[] = "/tmp/continuo-soak-XXXXXX";
    config cfg;
    generator g;
    scheduler s;
    char **paths = NULL;
    size_t n = 0, cap = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc)
            model = argv[++i];
        else if (strcmp(argv[i], "--phrases") == 0 && i + 1 < argc)
            max_phrases = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--cut") == 0 && i + 1 < argc)
            cut = atof(argv[++i]);
        else if (strcmp(argv[i], "--journal") == 0 && i + 1 < argc)
            journal_dir = argv[++i];
        else if (strcmp(argv[i], "--latencies") == 0 && i + 1 < argc)
            latencies = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--model FILE|echo] [--phrases N] [--dir MIDI_DIR] [--cut S] "
                    "[--journal DIR|off] [--latencies FILE]\n", argv[0]);
            return 2;
        }
    }
    if (!journal_dir)
        journal_dir = mkdtemp(tmp_journal);
    if (!dir || collect(dir, &paths, &n, &cap) < 0 || n == 0) {
        fprintf(stderr, "soak: no MIDI files under %s (set ASAP_DIR or --dir)\n", dir ? dir : "(unset)");
        return 77;
    }
    qsort(paths, n, sizeof *paths, cmp_str);
    log_set_level(LOG_LEVEL_ERROR);
    config_defaults(&cfg);
    snprintf(cfg.model, sizeof cfg.model, "%s", model);
    cfg.response_seconds = 2;
    cfg.phrase_silence_ms = 400;
    st.latency_ms = malloc((max_phrases + 1) * sizeof *st.latency_ms);
    for (unsigned long i = 0; i <= max_phrases; i++)
        st.latency_ms[i] = NAN;
    /* A run long enough to compare its ends has a fresh process beside it,
     * forked before anything is loaded: the soak's last thousand phrases
     * and its first thousand are played in turns (take_turns), so that
     * the aged and the fresh service meet the same music on the same
     * machine at the same moment (these machines' speed drifts by a fifth
     * over minutes, far more than the 1 ms asked). */
    pid_t fresh = -1;
    int to_fresh[2] = { -1, -1 }, from_fresh[2] = { -1, -1 }, results[2] = { -1, -1 };
    double *fresh_ms = NULL;
    if (max_phrases >= 2 * WINDOW && pipe(to_fresh) == 0 && pipe(from_fresh) == 0 && pipe(results) == 0) {
        signal(SIGPIPE, SIG_IGN);       /* a fresh process that died: EPIPE, and the soak goes on alone */
        fflush(NULL);
        fresh = fork();
        if (fresh == 0) {
            close(to_fresh[1]);
            close(from_fresh[0]);
            close(results[0]);
            st.child = 1;
            st.turn_in = to_fresh[0];
            st.turn_out = from_fresh[1];
            _exit(fresh_run(paths, n, &cfg, cut, results[1]));
        }
        close(to_fresh[0]);
        close(from_fresh[1]);
        close(results[1]);
    }
    if (journal_dir && strcmp(journal_dir, "off") != 0)
        journal = open_journal(journal_dir);
    st.rss_start_kb = rss_kb();
    const engine_ops *eng = start_pipeline(&cfg, &g, &s);
    if (!eng)
        return 1;
    int64_t clock = NS;
    uint32_t id = 0;
    double t0 = clock_now_seconds();
    st.replay_at = max_phrases >= 2 * WINDOW ? max_phrases - WINDOW : 0;
    for (size_t i = 0; st.phrases < max_phrases; ) {
        soak_file(paths[i], &g, &s, &cfg, &clock, &id, max_phrases, cut);
        i = (i + 1) % n;
        if (st.replay) {
            i = 0;
            id = 0;                     /* the same seeds as the first thousand's (a seed per answer id) */
            st.replay = 0;
            if (fresh > 0) {            /* the fresh process plays first, then we take turns */
                st.turn_out = to_fresh[1];
                st.turn_in = from_fresh[0];
                st.turn_base = st.phrases;
                pass_turn(0);
            }
        }
    }
    double elapsed = clock_now_seconds() - t0;
    long rss_end = rss_kb(), fds_end = open_fds();      /* the fresh process's pipes open, as at phrase 1000 */
    if (fresh > 0) {
        size_t want = WINDOW * sizeof *fresh_ms, got = 0;
        fresh_ms = malloc(want);
        close(to_fresh[1]);
        close(from_fresh[0]);
        while (fresh_ms && got < want) {
            ssize_t r = read(results[0], (char *)fresh_ms + got, want - got);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        close(results[0]);
        int status = 0;
        waitpid(fresh, &status, 0);
        if (got < want || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("FAIL: the fresh process beside the soak did not finish (status %d)\n", status);
            free(fresh_ms);
            fresh_ms = NULL;
        }
    }
    unsigned long w = max_phrases >= 2 * WINDOW ? WINDOW : max_phrases / 10 ? max_phrases / 10 : 1;
    double p50_first = median(st.latency_ms, w);
    double p50_last = median(st.latency_ms + (max_phrases - w), w);
    double p50_fresh = fresh_ms ? median(fresh_ms, WINDOW) : NAN;
    if (latencies) {             /* a line per phrase: its answer's first-event latency in ms, the fresh process's beside the last thousand */
        FILE *f = fopen(latencies, "w");
        for (unsigned long i = 0; f && i < max_phrases; i++)
            if (fresh_ms && i >= max_phrases - WINDOW)
                fprintf(f, "%.3f %.3f\n", st.latency_ms[i], fresh_ms[i - (max_phrases - WINDOW)]);
            else
                fprintf(f, "%.3f\n", st.latency_ms[i]);
        if (!f || fclose(f) != 0)
            fprintf(stderr, "soak: cannot write %s: %s\n", latencies, strerror(errno));
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    generator_stop(&g);
    int sounding = s.notes.count;
    scheduler_free(&s);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);

    printf("soak: engine %s, %lu files, %lu phrases, %lu continuations, %.0f s of music in %.1f s\n",
           eng->name, st.files, st.phrases, st.responses, (double)clock / NS, elapsed);
    printf("  generated events %lu; continuation music %.1f s generated in %.1f s (%.1fx real time)\n",
           st.gen_events, st.music_seconds, st.gen_seconds,
           st.gen_seconds > 0 ? st.music_seconds / st.gen_seconds : 0);
    printf("  model notes started %lu, ended %lu, still sounding %d\n", st.model_on, st.model_off, sounding);
    printf("  memory RSS: start %ld kB, after 10%% of phrases %ld kB, end %ld kB, peak %ld kB\n",
           st.rss_start_kb, st.rss_mid_kb, rss_end, ru.ru_maxrss);
    printf("  first %lu phrases against the last %lu%s: RSS %ld / %ld kB, open descriptors %ld / %ld, "
           "first-event latency p50 %.3f / %.3f ms\n", w, w, st.replay_at ? " (the same music)" : "", st.rss_first_kb, rss_end, st.fds_first, fds_end,
           p50_first, p50_last);
    /* The latency figure: phrase by phrase, the aged service's first event
     * less the fresh one's on the same phrase a moment apart, at the
     * median, with its standard error.  The difference of the two medians
     * is printed beside it. */
    double paired = NAN, paired_se = NAN;
    if (fresh_ms) {
        double *d = malloc(WINDOW * sizeof *d);
        for (unsigned long i = 0; d && i < WINDOW; i++)
            d[i] = st.latency_ms[max_phrases - WINDOW + i] - fresh_ms[i];
        if (d) {
            paired = median(d, WINDOW);
            paired_se = median_se(d, WINDOW);
        }
        printf("  beside it, a fresh process on the same %d phrases in turns: first-event latency p50 %.3f ms "
               "(this run's last %d: %.3f ms, %+.3f ms)\n", WINDOW, p50_fresh, WINDOW, p50_last, p50_last - p50_fresh);
        printf("  the aged service's first event later than the fresh one's on the same phrase, p50 of the %d: "
               "%+.3f ms (standard error %.3f ms)\n", WINDOW, paired, paired_se);
        free(d);
    }
    if (journal) {
        char state[256] = "";
        midi_port_describe(journal, state, sizeof state);
        midi_port_close(journal);       /* writes what it holds */
        printf("  journal %s: %s\n", journal_dir, state);
        if (journal_dir == tmp_journal) {   /* ours: it goes */
            journal_prune(journal_dir, NULL, 0, 1);
            rmdir(journal_dir);
        }
    }
    int ok = st.model_on == st.model_off && sounding == 0;
    if (!ok)
        printf("FAIL: notes started and ended differ\n");
    if (st.fds_first > 0 && fds_end != st.fds_first) {
        printf("FAIL: open descriptors went from %ld to %ld\n", st.fds_first, fds_end);
        ok = 0;
    }
    /* Flat memory: the end within 8 MB of the 10% mark. */
    if (UNDER_ASAN)
        printf("  (AddressSanitizer build: memory growth not judged)\n");
    else if (st.rss_mid_kb && rss_end > st.rss_mid_kb + 8192) {
        printf("FAIL: memory grew by %ld kB after the first 10%% of phrases\n", rss_end - st.rss_mid_kb);
        ok = 0;
    } else if (max_phrases >= 2 * WINDOW && labs(rss_end - st.rss_first_kb) > 1024) {
        printf("FAIL: memory moved by %ld kB from the first %d phrases to the end\n", rss_end - st.rss_first_kb,
               WINDOW);
        ok = 0;
    }
    /* Latency: the aged service against a fresh one, side by side (the
     * first thousand ran minutes ago, on a machine as fast as it was then). */
    if (fresh_ms && (isnan(paired) || fabs(paired) > 1.0)) {     /* NAN: no figure, no pass */
        printf("FAIL: the last %d phrases' first events are %+.3f ms (p50, phrase by phrase) from a fresh "
               "process's on the same music\n", WINDOW, paired);
        ok = 0;
    } else if (max_phrases >= 2 * WINDOW && !fresh_ms) {
        printf("FAIL: no fresh process to compare the latency with\n");
        ok = 0;
    }
    free(fresh_ms);
    free(st.latency_ms);
    return ok ? 0 : 1;
}

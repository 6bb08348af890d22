/* soak.c: drives the service pipeline (phrases, generator thread, engine, scheduler) with real performances on a sped-up clock and prints what it saw. */
#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon/engine.h"
#include "daemon/generator.h"
#include "daemon/options.h"
#include "daemon/phrase.h"
#include "daemon/scheduler.h"
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

/* What the soak counts. */
typedef struct soak_stats {
    unsigned long files, phrases, responses, interrupted, gen_events;
    unsigned long model_on, model_off;     /* note-ons / note-offs the scheduler sent */
    double gen_seconds;                    /* wall time spent waiting for the generator */
    double music_seconds;                  /* length of the continuations */
    long rss_start_kb, rss_mid_kb;
} soak_stats;

static soak_stats st;

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

static void count(void *user, const midi_msg *m, int64_t now)
{
    (void)user;
    (void)now;
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
    double t0 = clock_now_seconds(), last = 0;
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

static int soak_file(const char *path, generator *g, scheduler *s, config *cfg, int64_t *clock,
                     uint32_t *id, unsigned long max_phrases)
{
    smf f;
    phrase ph;
    if (smf_read_file(path, &f) < 0)
        return 0;
    st.files++;
    phrase_init(&ph);
    int64_t base = *clock;
    for (size_t i = 0; i < f.n_events && st.phrases < max_phrases; i++) {
        const smf_event *e = &f.events[i];
        int64_t t = base + (int64_t)(e->time * NS);
        /* The silence before this event ended the phrase? */
        int64_t dl = phrase_deadline(&ph, cfg);
        if (dl <= t) {
            phrase_end(&ph);
            st.phrases++;
            respond(g, s, cfg, ++*id, dl);
            if (st.phrases == max_phrases / 10)
                st.rss_mid_kb = rss_kb();
            /* Progress: a line per tenth of the run, so a long soak shows it is alive. */
            if (max_phrases >= 10 && st.phrases % (max_phrases / 10) == 0)
                fprintf(stderr, "soak: %lu/%lu phrases, %lu continuations, notes %lu on %lu off, "
                        "RSS %ld kB\n", st.phrases, max_phrases, st.responses, st.model_on,
                        st.model_off, rss_kb());
        }
        midi_msg m = { e->status, e->data1, e->data2, 3 };
        phrase_changes asked;
        int act = phrase_input(&ph, cfg, &m, t, &asked);
        take_changes(cfg, &asked);
        if (act & PHRASE_HEAR) {
            gen_cmd c;
            memset(&c, 0, sizeof c);
            c.kind = GEN_LISTEN;
            c.heard = (smf_event){ .time = (double)t / NS, .status = m.status, .data1 = m.data1,
                                   .data2 = m.data2 };
            send_cmd(g, &c);
        }
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

int main(int argc, char **argv)
{
    const char *dir = getenv("ASAP_DIR"), *model = "echo";
    unsigned long max_phrases = 1000;
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
        else {
            fprintf(stderr, "usage: %s [--model FILE|echo] [--phrases N] [--dir MIDI_DIR]\n", argv[0]);
            return 2;
        }
    }
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
    st.rss_start_kb = rss_kb();
    const engine_ops *eng = engine_for(&cfg);
    if (!eng || generator_start(&g, eng, &cfg) < 0 ||
        scheduler_init(&s, 16384, (int64_t)cfg.play.max_note_ms * 1000000, cfg.play.max_held) < 0)
        return 1;
    int64_t clock = NS;
    uint32_t id = 0;
    double t0 = clock_now_seconds();
    for (size_t i = 0; st.phrases < max_phrases; i = (i + 1) % n)
        soak_file(paths[i], &g, &s, &cfg, &clock, &id, max_phrases);
    double elapsed = clock_now_seconds() - t0;
    long rss_end = rss_kb();
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
    int ok = st.model_on == st.model_off && sounding == 0;
    if (!ok)
        printf("FAIL: notes started and ended differ\n");
    /* Flat memory: the end within 8 MB of the 10% mark. */
    if (UNDER_ASAN)
        printf("  (AddressSanitizer build: memory growth not judged)\n");
    else if (st.rss_mid_kb && rss_end > st.rss_mid_kb + 8192) {
        printf("FAIL: memory grew by %ld kB after the first 10%% of phrases\n", rss_end - st.rss_mid_kb);
        ok = 0;
    }
    return ok ? 0 : 1;
}

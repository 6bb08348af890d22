/* continue.c: `continuo continue`: continues a MIDI primer with the model; writes primer and continuation as two tracks, optionally a piano roll (SVG or PNG). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/listen.h"
#include "cli/pianoroll.h"
#include "codec/perf.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "model/model.h"
#include "model/sampler.h"
#include "util/fileio.h"
#include "util/log.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: continuo continue PRIMER.mid -o OUT.mid [options]\n"
        "Continues the primer with the model and writes a MIDI file with two tracks: the\n"
        "primer as read (channel 1) and the continuation (channel 2), which starts where\n"
        "the primer ends.\n"
        "  --model FILE        model file (default: $CONTINUO_MODEL, the installed default\n"
        "                      model, ./models/continuo-default.gguf)\n"
        "  --seconds S         length of the continuation (default 10)\n"
        "  --temperature T     0 = greedy (default " PLAY_STR(PLAY_TEMPERATURE) ")\n"
        "  --top-k K           sample among the K most likely events, 0: off (default "
        PLAY_STR(PLAY_TOP_K) ")\n"
        "  --top-p P           nucleus sampling, 1: off (default " PLAY_STR(PLAY_TOP_P) ")\n"
        "  --min-p P           drop events below P times the most likely, 0: off (default "
        PLAY_STR(PLAY_MIN_P) ")\n"
        "  --filter-time-shifts  let top-k, top-p and min-p cut time shifts too (default:\n"
        "                      they choose among notes and velocities only, and how long\n"
        "                      to wait keeps the model's own odds)\n"
        "  --seed N            random seed: the same seed gives the same continuation\n"
        "                      (default: from the clock, printed)\n"
        "  --memory M          what a full model context does (default stream): window\n"
        "                      slides it, prefilling its last 3/4 again (a pause every\n"
        "                      context/4 events); stream rolls it, each event overwriting\n"
        "                      the oldest, at a constant cost per event. A long primer\n"
        "                      enters as its last 3/4 context (window) or context (stream)\n"
        "                      events\n"
        "  --max-held N        never more than N notes sounding at once (default "
        PLAY_STR(PLAY_MAX_HELD) ")\n"
        "  --max-note-seconds S  end a note held longer than S seconds (default "
        PLAY_STR(PLAY_MAX_NOTE_MS) " ms)\n"
        "                      (sampling and caps default to what `serve` uses: the same\n"
        "                      settings sound the same in both)\n"
        "  --plot OUT.svg|png  also draw a piano roll (primer and continuation in two colours)\n"
        "%s"
        "  --threads N         threads (default 2)\n", listen_usage);
}

/* ------------------------------------------------------------------ generation */

typedef struct continue_opts {
    const char *primer_path, *out_path, *plot_path, *model_arg;
    double seconds, max_note_s;
    int max_held, threads, seed_given, memory;    /* memory: a model_memory */
    sampling_settings so;
    uint64_t seed;
    listen_opts listen;     /* --play, --wav FILE */
} continue_opts;

static int parse_args(int argc, char **argv, continue_opts *o)
{
    memset(o, 0, sizeof *o);
    sampling_default(&o->so);
    o->seconds = 10;
    o->max_held = PLAY_MAX_HELD;
    o->max_note_s = PLAY_MAX_NOTE_MS / 1000.0;
    o->threads = 2;
    o->memory = MODEL_MEMORY_STREAM;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double v;
        int rc;
        int has = i + 1 < argc;
        if (cli_is_help(a)) {
            usage(stdout);
            return 1;
        }
#define NUM(lo, hi) (cli_number("continue", a, has ? argv[++i] : NULL, lo, hi, &v) == 0)
        if (strcmp(a, "-o") == 0 && has) o->out_path = argv[++i];
        else if (strcmp(a, "--model") == 0 && has) o->model_arg = argv[++i];
        else if (strcmp(a, "--plot") == 0 && has) o->plot_path = argv[++i];
        else if ((rc = listen_parse("continue", argc, argv, &i, &o->listen)) != 0) { if (rc < 0) goto bad; }
        else if (strcmp(a, "--seconds") == 0) { if (!NUM(0.01, 3600)) goto bad; o->seconds = v; }
        else if (strcmp(a, "--temperature") == 0) { if (!NUM(SAMPLING_TEMPERATURE_MIN, SAMPLING_TEMPERATURE_MAX)) goto bad; o->so.temperature = v; }
        else if (strcmp(a, "--top-p") == 0) { if (!NUM(SAMPLING_TOP_P_MIN, SAMPLING_TOP_P_MAX)) goto bad; o->so.top_p = v; }
        else if (strcmp(a, "--min-p") == 0) { if (!NUM(SAMPLING_MIN_P_MIN, SAMPLING_MIN_P_MAX)) goto bad; o->so.min_p = v; }
        else if (strcmp(a, "--top-k") == 0) { if (!NUM(SAMPLING_TOP_K_MIN, SAMPLING_TOP_K_MAX)) goto bad; o->so.top_k = (int)v; }
        else if (strcmp(a, "--seed") == 0) { if (!NUM(0, 1e18)) goto bad; o->seed = (uint64_t)v; o->seed_given = 1; }
        else if (strcmp(a, "--max-held") == 0) { if (!NUM(0, 128)) goto bad; o->max_held = (int)v; }
        else if (strcmp(a, "--filter-time-shifts") == 0) o->so.filter_time = 1;
        else if (strcmp(a, "--max-note-seconds") == 0) { if (!NUM(0.1, 60)) goto bad; o->max_note_s = v; }
        else if (strcmp(a, "--threads") == 0) { if (!NUM(1, 64)) goto bad; o->threads = (int)v; }
        else if (strcmp(a, "--memory") == 0) { if (cli_memory("continue", has ? argv[++i] : NULL, &o->memory) < 0) goto bad; }
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "continuo continue: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (!o->primer_path) o->primer_path = a;
        else {
            fprintf(stderr, "continuo continue: one primer only ('%s')\n", a);
            return 2;
        }
        continue;
bad:
        return 2;
#undef NUM
    }
    if (!o->primer_path || !o->out_path) {
        usage(stderr);
        return 2;
    }
    if (o->plot_path && !pianoroll_format_ok(o->plot_path)) {
        fprintf(stderr, "continuo continue: --plot draws SVG or PNG: give a file name ending in .svg or .png\n");
        return 2;
    }
    if (!o->seed_given)
        o->seed = (uint64_t)time(NULL);
    return 0;
}

/* Notes -> channel events on CHANNEL (0-based). */
static int notes_to_track(const note_list *notes, int channel, smf_event **ev, size_t *n)
{
    if (perf_notes_to_events(notes->notes, notes->n, ev, n) != 0)
        return -1;
    for (size_t i = 0; i < *n; i++)
        (*ev)[i].status = (uint8_t)(((*ev)[i].status & 0xF0) | channel);
    return 0;
}

/* Samples events after the primer until SECONDS of music; completed notes go to CONT. */
static int generate(model_state *s, sampler *sp, perf_decoder *dec, const continue_opts *o,
                    double t_start, note_list *cont, size_t *n_events)
{
    const float *logits = s->logits;
    size_t max_events = (size_t)(o->seconds * 400) + 64;   /* far above any real density */
    int id = -1;
    *n_events = 0;
    while (dec->time < t_start + o->seconds && *n_events < max_events) {
        /* the last sampled event is decoded only when another one follows */
        if (id >= 0 && !(logits = model_decode(s, id)))
            return -1;
        perf_decoder_next_mask(dec, o->max_held, 0, !o->so.filter_time, sampler_mask(sp), sp->vocab_size);
        id = sampler_sample(sp, logits);
        if (perf_decoder_push(dec, id, cont) != 0)
            return -1;
        (*n_events)++;
    }
    return perf_decoder_finish(dec, cont);
}

int cmd_continue(int argc, char **argv)
{
    continue_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    int status = 1;
    model m;
    model_state s;
    sampler sp;
    smf f;
    int have_model = 0, have_state = 0, have_sampler = 0, have_smf = 0;
    note_list primer = { 0 }, scratch = { 0 }, cont = { 0 };
    uint16_t *ids = NULL;
    int *ctx = NULL;
    smf_event *ev_p = NULL, *ev_c = NULL;
    size_t n_ids = 0, n_ep = 0, n_ec = 0, n_events = 0;
    const vocab *v = NULL;

    if (model_open(&m, o.model_arg, &v) != 0)
        goto done;
    have_model = 1;
    if (smf_read_file(o.primer_path, &f) != 0)
        goto done;
    have_smf = 1;
    if (perf_notes_from_midi(f.events, f.n_events, &primer) != 0
        || perf_encode(v, primer.notes, primer.n, NULL, &ids, &n_ids) != 0)
        goto done;
    if (primer.n == 0 || n_ids == 0) {
        log_error("%s: the primer has no notes to continue", o.primer_path);
        goto done;
    }
    if (model_state_init(&s, &m, o.threads) != 0)
        goto done;
    have_state = 1;
    model_state_set_memory(&s, (model_memory)o.memory);
    if (sampler_init(&sp, m.cfg.vocab_size, &o.so, o.seed) != 0)
        goto done;
    have_sampler = 1;

    /* The decoder follows the primer's events so the mask knows what sounds. */
    perf_decoder dec;
    perf_decoder_init(&dec, v, o.max_note_s);
    for (size_t i = 0; i < n_ids; i++)
        if (perf_decoder_push(&dec, ids[i], &scratch) != 0)
            goto done;
    double t_start = dec.time;
    /* a primer that fills the window starts as a slid window would (the last
     * `keep` events), or in stream memory as a full one */
    int full = o.memory == MODEL_MEMORY_STREAM ? m.cfg.context : s.keep;
    int n_ctx = n_ids < (size_t)m.cfg.context ? (int)n_ids : full;
    ctx = malloc(sizeof(int) * (size_t)n_ctx);
    if (!ctx) {
        log_error("continue: out of memory");
        goto done;
    }
    for (int i = 0; i < n_ctx; i++)
        ctx[i] = ids[n_ids - (size_t)n_ctx + (size_t)i];
    if (model_prefill(&s, ctx, n_ctx, NULL) != 0)
        goto done;
    if (generate(&s, &sp, &dec, &o, t_start, &cont, &n_events) != 0)
        goto done;
    if (note_list_sort(&cont) != 0)
        goto done;
    if (notes_to_track(&primer, 0, &ev_p, &n_ep) != 0 || notes_to_track(&cont, 1, &ev_c, &n_ec) != 0)
        goto done;
    smf_track_out tracks[2] = { { "primer", ev_p, n_ep }, { "continuation", ev_c, n_ec } };
    if (smf_write_file(o.out_path, tracks, 2) != 0)
        goto done;
    if (o.plot_path && pianoroll_write(o.plot_path, &primer, &cont, t_start) != 0)
        goto done;
    printf("%s: primer %zu notes (%zu events, %.2f s), continuation %zu notes (%zu events, %.2f s from %.2f s), "
           "seed %llu\n", o.out_path, primer.n, n_ids, t_start, cont.n, n_events, dec.time - t_start, t_start,
           (unsigned long long)o.seed);
    if (listen_output(&o.listen, tracks, 2) != 0)
        goto done;
    status = 0;
done:
    free(ev_p);
    free(ev_c);
    free(ctx);
    free(ids);
    note_list_free(&cont);
    note_list_free(&scratch);
    note_list_free(&primer);
    if (have_smf)
        smf_free(&f);
    if (have_sampler)
        sampler_free(&sp);
    if (have_state)
        model_state_free(&s);
    if (have_model)
        model_free(&m);
    return status;
}

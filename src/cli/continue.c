/* continue.c: `continuo continue`: continues a MIDI primer with the model; writes primer and continuation as two tracks, optionally a piano roll (SVG or PNG). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/listen.h"
#include "cli/opts.h"
#include "cli/pianoroll.h"
#include "codec/follow.h"
#include "codec/perf.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "model/model.h"
#include "model/sampler.h"
#include "util/fileio.h"
#include "util/log.h"

static const char continue_usage[] =
    "usage: continuo continue PRIMER.mid -o OUT.mid [options]\n"
    "Continues the primer with the model and writes a MIDI file with two tracks: the\n"
    "primer as read (channel 1) and the continuation (channel 2), which starts where\n"
    "the primer ends.\n";

#define SEED_FROM_CLOCK UINT64_MAX      /* no --seed (its largest value is 1e18) */

/* ------------------------------------------------------------------ generation */

typedef struct continue_opts {
    const char *primer_path, *out_path, *plot_path, *model_arg;
    double seconds, max_note_s;
    sampling_settings so;
    uint64_t seed;                      /* SEED_FROM_CLOCK until parsed */
    int max_held, threads, memory;      /* memory: a model_memory */
    listen_opts listen;     /* --play, --wav FILE */
} continue_opts;

static void set_defaults(continue_opts *o)
{
    memset(o, 0, sizeof *o);
    sampling_default(&o->so);
    o->seed = SEED_FROM_CLOCK;
    o->seconds = 10;
    o->max_held = PLAY_MAX_HELD;
    o->max_note_s = PLAY_MAX_NOTE_MS / 1000.0;
    o->threads = 2;
    o->memory = MODEL_MEMORY_STREAM;
}

/* The options into O; CLI_GO_ON, or the exit status. */
static int parse_args(int argc, char **argv, continue_opts *o)
{
    set_defaults(o);
    const cli_option options[] = {
        CLI_FILE("output", 'o', "OUT.mid", &o->out_path, "the MIDI file to write: primer and continuation"),
        CLI_OPT_MODEL(&o->model_arg),
        CLI_DOUBLE("seconds", 0, "S", 0.01, 3600, &o->seconds, "length of the continuation (default 10)"),
        CLI_DOUBLE("temperature", 0, "T", SAMPLING_TEMPERATURE_MIN, SAMPLING_TEMPERATURE_MAX, &o->so.temperature,
                   "0 = greedy (default " PLAY_STR(PLAY_TEMPERATURE) ")"),
        CLI_INT("top-k", 0, "K", SAMPLING_TOP_K_MIN, SAMPLING_TOP_K_MAX, &o->so.top_k,
                "sample among the K most likely events, 0: off (default " PLAY_STR(PLAY_TOP_K) ")"),
        CLI_DOUBLE("top-p", 0, "P", SAMPLING_TOP_P_MIN, SAMPLING_TOP_P_MAX, &o->so.top_p,
                   "nucleus sampling, 1: off (default " PLAY_STR(PLAY_TOP_P) ")"),
        CLI_DOUBLE("min-p", 0, "P", SAMPLING_MIN_P_MIN, SAMPLING_MIN_P_MAX, &o->so.min_p,
                   "drop events below P times the most likely, 0: off (default " PLAY_STR(PLAY_MIN_P) ")"),
        CLI_FLAG("filter-time-shifts", 0, &o->so.filter_time,
                 "let top-k, top-p and min-p cut time shifts too (default:\n"
                 "they choose among notes and velocities only, and how long\n"
                 "to wait keeps the model's own odds)"),
        CLI_U64("seed", 0, "N", 0, 1e18, &o->seed,
                "random seed: the same seed gives the same continuation\n"
                "(default: from the clock, printed)"),
        CLI_OPT_MEMORY(&o->memory,
                       "what a full model context does (default stream): window\n"
                       "slides it, prefilling its last 3/4 again (a pause every\n"
                       "context/4 events); stream rolls it, each event overwriting\n"
                       "the oldest, at a constant cost per event. A long primer\n"
                       "enters as its last 3/4 context (window) or context (stream)\n"
                       "events"),
        CLI_DOUBLE("pace", 0, "S", SAMPLING_PACE_MIN, SAMPLING_PACE_MAX, &o->so.pace,
                   "keep the pace (notes per second) of the primer's last 10 s:\n"
                   "waits grow longer while the continuation runs faster and\n"
                   "shorter while it runs slower, by strength S, 0: off\n"
                   "(default " PLAY_STR(PLAY_PACE) ")"),
        CLI_DOUBLE("key-pull", 0, "K", SAMPLING_KEY_PULL_MIN, SAMPLING_KEY_PULL_MAX, &o->so.key_pull,
                   "draw the notes toward the pitch classes of the primer's last\n"
                   "10 s, by strength K, 0: off (default " PLAY_STR(PLAY_KEY_PULL) ")"),
        CLI_INT("max-held", 0, "N", 0, 128, &o->max_held,
                "never more than N notes sounding at once (default " PLAY_STR(PLAY_MAX_HELD) ")"),
        CLI_DOUBLE("max-note-seconds", 0, "S", 0.1, 60, &o->max_note_s,
                   "end a note held longer than S seconds (default " PLAY_STR(PLAY_MAX_NOTE_MS) " ms)\n"
                   "(sampling and caps default to what `serve` uses: the same\n"
                   "settings sound the same in both)"),
        CLI_FILE("plot", 0, "OUT.svg|png", &o->plot_path,
                 "also draw a piano roll (primer and continuation in two colours)"),
        LISTEN_OPTIONS(&o->listen),
        CLI_OPT_THREADS(&o->threads),
        CLI_OPT_HELP,
        CLI_END
    };
    const cli_spec spec = { .name = "continue", .usage = continue_usage, .options = options,
                            .max_operands = 1 };
    int n_in;
    int rc = cli_parse(&spec, argc, argv, &n_in);
    if (rc != CLI_GO_ON)
        return rc;
    o->primer_path = n_in ? argv[1] : NULL;
    if (!o->primer_path || !o->out_path) {
        cli_usage(&spec, stderr);
        return 2;
    }
    if (o->plot_path && !pianoroll_format_ok(o->plot_path)) {
        fprintf(stderr, "continuo continue: --plot draws SVG or PNG: give a file name ending in .svg or .png\n");
        return 2;
    }
    if (o->seed == SEED_FROM_CLOCK)
        o->seed = (uint64_t)time(NULL);
    return CLI_GO_ON;
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
static int generate(model_state *s, sampler *sp, perf_decoder *dec, perf_follow *follow, const continue_opts *o,
                    double t_start, note_list *cont, size_t *n_events)
{
    size_t max_events = (size_t)(o->seconds * 400) + 64;   /* far above any real density */
    int id = -1;
    *n_events = 0;
    while (dec->time < t_start + o->seconds && *n_events < max_events) {
        /* the last sampled event is decoded only when another one follows */
        if (id >= 0 && !model_decode(s, id))
            return -1;
        perf_decoder_next_mask(dec, o->max_held, 0, !o->so.filter_time, sampler_mask(sp), sp->vocab_size);
        perf_follow_apply(follow, dec->v, dec->time, s->logits);
        id = sampler_sample(sp, s->logits);
        perf_follow_push(follow, dec->v, id, dec->time);
        if (perf_decoder_push(dec, id, cont) != 0)
            return -1;
        (*n_events)++;
    }
    return perf_decoder_finish(dec, cont);
}

/* Everything a run holds, freed by run_free whatever step failed. */
typedef struct continue_run {
    model m;
    model_state s;
    sampler sp;
    perf_decoder dec;
    perf_follow follow;                /* the primer's note-ons, then the continuation's */
    const vocab *v;
    int have_model, have_state, have_sampler;
    note_list primer, scratch, cont;   /* scratch: the primer as decoded */
    uint16_t *ids;                     /* the primer's events */
    size_t n_ids, n_events;            /* n_events: sampled */
    double t_start;                    /* the primer's end, where the continuation starts */
} continue_run;

static void run_free(continue_run *r)
{
    free(r->ids);
    note_list_free(&r->cont);
    note_list_free(&r->scratch);
    note_list_free(&r->primer);
    if (r->have_sampler)
        sampler_free(&r->sp);
    if (r->have_state)
        model_state_free(&r->s);
    if (r->have_model)
        model_free(&r->m);
}

/* The model, and the primer's notes and events in its layout. */
static int load_primer(continue_run *r, const continue_opts *o)
{
    smf f;
    if (model_open(&r->m, o->model_arg, &r->v) != 0)
        return -1;
    r->have_model = 1;
    if (smf_read_file(o->primer_path, &f) != 0)
        return -1;
    int rc = perf_notes_from_midi(f.events, f.n_events, &r->primer);
    smf_free(&f);
    if (rc != 0 || perf_encode(r->v, r->primer.notes, r->primer.n, NULL, &r->ids, &r->n_ids) != 0)
        return -1;
    if (r->primer.n == 0 || r->n_ids == 0) {
        log_error("%s: the primer has no notes to continue", o->primer_path);
        return -1;
    }
    return 0;
}

/* The engine's state and the sampler, the decoder following the primer's
 * events (so the mask knows what sounds), and the primer prefilled. */
static int start_engine(continue_run *r, const continue_opts *o)
{
    if (model_state_init(&r->s, &r->m, o->threads) != 0)
        return -1;
    r->have_state = 1;
    model_state_set_memory(&r->s, (model_memory)o->memory);
    if (sampler_init(&r->sp, r->m.cfg.vocab_size, &o->so, o->seed) != 0)
        return -1;
    r->have_sampler = 1;
    perf_decoder_init(&r->dec, r->v, o->max_note_s);
    perf_follow_init(&r->follow, (float)o->so.pace, (float)o->so.key_pull);
    for (size_t i = 0; i < r->n_ids; i++) {
        perf_follow_push(&r->follow, r->v, r->ids[i], r->dec.time);
        if (perf_decoder_push(&r->dec, r->ids[i], &r->scratch) != 0)
            return -1;
    }
    r->t_start = r->dec.time;
    perf_follow_aim(&r->follow, r->t_start);
    /* a primer that fills the window starts as a slid window would (the last
     * `keep` events), or in stream memory as a full one */
    int full = o->memory == MODEL_MEMORY_STREAM ? r->m.cfg.context : r->s.keep;
    int n_ctx = r->n_ids < (size_t)r->m.cfg.context ? (int)r->n_ids : full;
    int *ctx = malloc(sizeof(int) * (size_t)n_ctx);
    if (!ctx) {
        log_error("continue: out of memory");
        return -1;
    }
    for (int i = 0; i < n_ctx; i++)
        ctx[i] = r->ids[r->n_ids - (size_t)n_ctx + (size_t)i];
    int rc = model_prefill(&r->s, ctx, n_ctx, NULL);
    free(ctx);
    return rc;
}

/* The MIDI file of primer and continuation, the piano roll, the summary
 * line, then --wav and --play. */
static int write_outputs(continue_run *r, const continue_opts *o)
{
    smf_event *ev_p = NULL, *ev_c = NULL;
    size_t n_ep = 0, n_ec = 0;
    int rc = -1;
    if (note_list_sort(&r->cont) != 0 || notes_to_track(&r->primer, 0, &ev_p, &n_ep) != 0
        || notes_to_track(&r->cont, 1, &ev_c, &n_ec) != 0)
        goto done;
    smf_track_out tracks[2] = { { "primer", ev_p, n_ep }, { "continuation", ev_c, n_ec } };
    if (smf_write_file(o->out_path, tracks, 2) != 0)
        goto done;
    if (o->plot_path && pianoroll_write(o->plot_path, &r->primer, &r->cont, r->t_start) != 0)
        goto done;
    printf("%s: primer %zu notes (%zu events, %.2f s), continuation %zu notes (%zu events, %.2f s from %.2f s), "
           "seed %llu\n", o->out_path, r->primer.n, r->n_ids, r->t_start, r->cont.n, r->n_events,
           r->dec.time - r->t_start, r->t_start, (unsigned long long)o->seed);
    rc = listen_output(&o->listen, tracks, 2);
done:
    free(ev_p);
    free(ev_c);
    return rc;
}

int cmd_continue(int argc, char **argv)
{
    continue_opts o;
    continue_run r = { 0 };
    int rc = parse_args(argc, argv, &o);
    if (rc != CLI_GO_ON)
        return rc;
    int ok = load_primer(&r, &o) == 0 && start_engine(&r, &o) == 0
             && generate(&r.s, &r.sp, &r.dec, &r.follow, &o, r.t_start, &r.cont, &r.n_events) == 0
             && write_outputs(&r, &o) == 0;
    run_free(&r);
    return ok ? 0 : 1;
}

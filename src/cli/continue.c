/* continue.c: `continuo continue`: continues a MIDI primer with the model; writes primer and continuation as two tracks, optionally a piano roll (SVG or PNG). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/listen.h"
#include "cli/opts.h"
#include "cli/pianoroll.h"
#include "codec/perf.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "model/model.h"
#include "play/candidates.h"
#include "play/continuation.h"
#include "play/play_options.h"
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
    const char *primer_path, *out_path, *plot_path, *attention_path, *model_arg;
    double seconds;
    play_settings play;                 /* the table `serve` reads too (play_options.h) */
    uint64_t seed;                      /* SEED_FROM_CLOCK until parsed */
    int threads, memory, step, verbose; /* memory: a model_memory */
    listen_opts listen;     /* --play, --wav FILE */
} continue_opts;

static void set_defaults(continue_opts *o)
{
    memset(o, 0, sizeof *o);
    play_default(&o->play);
    o->seed = SEED_FROM_CLOCK;
    o->seconds = 10;
    o->threads = 2;
    o->memory = MODEL_MEMORY_STREAM;
}

/* A row of the play table (play_options.h) as an option of ours. */
#define PLAY_CLI_DOUBLE(cli, arg, lo, hi, dst, help) CLI_DOUBLE(cli, 0, arg, lo, hi, dst, help)
#define PLAY_CLI_INT(cli, arg, lo, hi, dst, help)    CLI_INT(cli, 0, arg, lo, hi, dst, help)
#define PLAY_CLI_BOOL(cli, arg, lo, hi, dst, help)   CLI_FLAG(cli, 0, dst, help)
#define PLAY_CLI_VELOCITY(cli, arg, lo, hi, dst, help) CLI_PARSED(cli, 0, arg, &play_type_velocity, dst, help)
#define PLAY_CLI_KEY(cli, arg, lo, hi, dst, help)    CLI_PARSED(cli, 0, arg, &play_type_key, dst, help)
#define PLAY_CLI_SCORE(cli, arg, lo, hi, dst, help)  CLI_PARSED(cli, 0, arg, &play_type_score, dst, help)
#define PLAY_CLI_ROW(key, cli, kind, field, def, lo, hi, arg, apply, help) \
    PLAY_CLI_##kind(cli, arg, lo, hi, &o->play.field, help "\n(default " def "; serve's " key ")"),

/* The options that depend on one another or on a file name, checked;
 * the seed from the clock when none was given.  CLI_GO_ON, or 2. */
static int check_args(continue_opts *o)
{
    if (o->plot_path && !pianoroll_format_ok(o->plot_path)) {
        fprintf(stderr, "continuo continue: --plot draws SVG or PNG: give a file name ending in .svg or .png\n");
        return 2;
    }
    if (o->attention_path && !cli_has_suffix(o->attention_path, ".svg")) {
        fprintf(stderr, "continuo continue: --plot-attention draws SVG: give a file name ending in .svg\n");
        return 2;
    }
    if (o->seed == SEED_FROM_CLOCK)
        o->seed = (uint64_t)time(NULL);
    if (o->verbose)
        log_set_level(LOG_LEVEL_DEBUG);
    char why[256];
    if (play_check(&o->play, why, sizeof why) < 0) {
        fprintf(stderr, "continuo continue: %s\n", why);
        return 2;
    }
    return CLI_GO_ON;
}

/* The options into O; CLI_GO_ON, or the exit status. */
static int parse_args(int argc, char **argv, continue_opts *o)
{
    set_defaults(o);
    const cli_option options[] = {
        CLI_FILE("output", 'o', "OUT.mid", &o->out_path, "the MIDI file to write: primer and continuation"),
        CLI_OPT_MODEL(&o->model_arg),
        CLI_DOUBLE("seconds", 0, "S", 0.01, 3600, &o->seconds, "length of the continuation (default 10)"),
        PLAY_OPTIONS(PLAY_CLI_ROW)
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
        CLI_FLAG("step", 0, &o->step,
                 "feed the primer to the model one event at a time, as `serve`\n"
                 "hears a player (slower; the same arithmetic as serve, so a seed\n"
                 "gives exactly the continuation serve plays for the same phrase;\n"
                 "default: one prefill, which agrees to about 1e-5)"),
        CLI_FLAG("verbose", 'v', &o->verbose, "log more: the ids sampled, as `serve -v` logs them"),
        CLI_FILE("plot", 0, "OUT.svg|png", &o->plot_path,
                 "also draw a piano roll (primer and continuation in two colours)"),
        CLI_FILE("plot-attention", 0, "OUT.svg", &o->attention_path,
                 "also draw what the model listens to: the piano roll with, for\n"
                 "each note it plays, lines to the earlier notes its last layer\n"
                 "attended to most (the relative attention finding the motif)"),
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
    return check_args(o);
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

/* Everything a run holds, freed by run_free whatever step failed. */
typedef struct continue_run {
    model m;
    continuation cont;                 /* the context, the sampler, the rules: serve's */
    candidates cands;                  /* --candidates B > 1 */
    int have_cands, chosen;
    const vocab *v;
    int have_model, have_cont;
    smf primer_file;                   /* the primer as read */
    note_list primer, cont_notes;      /* the primer's notes (its track), the continuation's */
    size_t n_primer_ids, n_events;     /* the primer's events in the context; sampled */
    double t_start;                    /* the primer's end, where the continuation starts */
    double t_end;                      /* its end: the last note-off */
} continue_run;

static void run_free(continue_run *r)
{
    note_list_free(&r->cont_notes);
    note_list_free(&r->primer);
    smf_free(&r->primer_file);
    if (r->have_cands)
        candidates_free(&r->cands);
    if (r->have_cont)
        continuation_free(&r->cont);
    if (r->have_model)
        model_free(&r->m);
}

/* --plot-attention draws the continuation as it is sampled: one alone
 * (with candidates, attention_of_played samples the one played again). */
static int attention_as_sampled(const continue_opts *o)
{
    return o->attention_path != NULL && o->play.candidates <= 1;
}

/* The model, and the primer's notes (the first track of the output). */
static int load_primer(continue_run *r, const continue_opts *o)
{
    if (model_open(&r->m, o->model_arg, &r->v) != 0)
        return -1;
    r->have_model = 1;
    if (smf_read_file(o->primer_path, &r->primer_file) != 0)
        return -1;
    if (perf_notes_from_midi(r->primer_file.events, r->primer_file.n_events, &r->primer) != 0)
        return -1;
    if (r->primer.n == 0) {
        log_error("%s: the primer has no notes to continue", o->primer_path);
        return -1;
    }
    return 0;
}

/* The primer's messages heard, as `serve` hears a player's (the codec's
 * streaming encoder, the pedal folded, a silence over 2 s shortened), in
 * one prefill or (--step) one event at a time; then the continuation
 * starts at the primer's end. */
static int hear_primer(continue_run *r, const continue_opts *o)
{
    const smf *f = &r->primer_file;
    if (continuation_init(&r->cont, &r->m, r->v, r->m.cfg.context, o->threads, (model_memory)o->memory,
                          o->play.max_note_ms / 1000.0, !o->step) != 0)
        return -1;
    r->have_cont = 1;
    if (attention_as_sampled(o))
        continuation_keep_attention(&r->cont);
    double end = 0;
    for (size_t i = 0; i < f->n_events; i++) {
        if (continuation_hear(&r->cont, &f->events[i]) != 0)
            return -1;
        if (context_takes(&f->events[i]) && f->events[i].time > end)
            end = f->events[i].time;
    }
    cont_spec spec = { .play = o->play, .seed = o->seed, .seconds = o->seconds, .max_events = INT32_MAX };
    if (continuation_begin(&r->cont, end, &spec) != 0)
        return -1;
    r->n_primer_ids = (size_t)continuation_n_ids(&r->cont);
    /* the context's time line starts at the primer's first event */
    r->t_start = continuation_session_time(&r->cont);
    return 0;
}

/* Its notes end where its note-offs say; one re-struck ends the one
 * sounding; what is left sounding at the end rings CONT_TAIL_S past the
 * last event (as `serve` lets it), within the length cap. */
static int end_note(continue_run *r, const double *on, const uint8_t *vel, int p, double t)
{
    double cap = continuation_spec(&r->cont)->play.max_note_ms / 1000.0;
    if (t > on[p] + cap)
        t = on[p] + cap;
    if (t <= on[p])
        return 0;
    note n = { .pitch = (uint8_t)p, .velocity = vel[p], .onset = r->t_start + on[p], .release = r->t_start + t };
    if (t > r->t_end - r->t_start)
        r->t_end = r->t_start + t;
    return note_list_append(&r->cont_notes, &n);
}

/* --candidates B: B continuations sampled side by side (seeds
 * candidates_seed(seed, 0 .. B - 1), one batched decode for all), each measured (logged), the
 * best by --candidate-score played: the continuation goes on as that one. */
static int pick_candidate(continue_run *r, const play_settings *p)
{
    int b = p->candidates;
    r->chosen = 0;
    if (b <= 1)
        return 0;
    if (candidates_init(&r->cands, &r->cont, b) != 0)
        return -1;
    r->have_cands = 1;
    if (candidates_start(&r->cands, b) != 0)
        return -1;
    r->chosen = candidates_play(&r->cands, 1e9, LOG_LEVEL_INFO, continuation_spec(&r->cont)->seconds);
    if (r->chosen < 0)
        return -1;
    log_info("candidates: %d side by side in %ld batched steps; %d played (best %s)", b, r->cands.steps,
             r->chosen, play_score_name(p->candidate_score));
    return 0;
}

/* Samples the continuation: its events become notes. */
static int generate(continue_run *r)
{
    double on[128];
    uint8_t vel[128] = { 0 };
    for (int p = 0; p < 128; p++)
        on[p] = -1;
    cont_event ev = { 0 };
    double last = 0;
    int rc;
    r->t_end = r->t_start;
    if (pick_candidate(r, &continuation_spec(&r->cont)->play) != 0)
        return -1;
    while ((rc = continuation_next(&r->cont, &ev)) > 0) {
        int p = ev.pitch;
        last = ev.time;
        if (on[p] >= 0 && end_note(r, on, vel, p, ev.time) != 0)
            return -1;
        on[p] = ev.kind == CONT_NOTE_ON ? ev.time : -1;
        vel[p] = ev.velocity;
    }
    r->n_events = (size_t)continuation_n_sampled(&r->cont);
    if (continuation_end(&r->cont) != 0 || rc < 0)
        return -1;
    for (int p = 0; p < 128; p++)
        if (on[p] >= 0 && end_note(r, on, vel, p, last + CONT_TAIL_S) != 0)
            return -1;
    return 0;
}

/* --plot-attention: the piano roll with, for each note the continuation
 * played, lines back to the earlier notes its last layer attended to most. */
static int write_attention(const continue_run *r, const char *path)
{
    int n_at;
    const cont_attention *at = continuation_attention(&r->cont, &n_at);
    roll_link *links = malloc(sizeof *links * (size_t)(n_at * CONT_ATTENTION_TOP + 1));
    size_t n = 0;
    if (!links) {
        log_error("%s: out of memory for the attention picture", path);
        return -1;
    }
    for (int i = 0; i < n_at; i++) {
        const cont_attention *a = &at[i];
        for (int k = 0; k < a->n; k++)
            links[n++] = (roll_link){ r->t_start + a->time, r->t_start + a->src_time[k], a->pitch,
                                      a->src_pitch[k], a->weight[k] };
    }
    int rc = pianoroll_write_links(path, &r->primer, &r->cont_notes, r->t_start, links, n);
    free(links);
    return rc;
}

/* The MIDI file of primer and continuation, the piano roll, the summary
 * line, then --wav and --play. */
static int write_outputs(continue_run *r, const continue_opts *o)
{
    smf_event *ev_p = NULL, *ev_c = NULL;
    size_t n_ep = 0, n_ec = 0;
    int rc = -1;
    if (note_list_sort(&r->cont_notes) != 0 || notes_to_track(&r->primer, 0, &ev_p, &n_ep) != 0
        || notes_to_track(&r->cont_notes, 1, &ev_c, &n_ec) != 0)
        goto done;
    smf_track_out tracks[2] = { { "primer", ev_p, n_ep }, { "continuation", ev_c, n_ec } };
    if (smf_write_file(o->out_path, tracks, 2) != 0)
        goto done;
    if (o->plot_path && pianoroll_write(o->plot_path, &r->primer, &r->cont_notes, r->t_start) != 0)
        goto done;
    if (attention_as_sampled(o) && write_attention(r, o->attention_path) != 0)
        goto done;
    printf("%s: primer %zu notes (%zu events, %.2f s), continuation %zu notes (%zu events, %.2f s from %.2f s), "
           "seed %llu", o->out_path, r->primer.n, r->n_primer_ids, r->t_start, r->cont_notes.n, r->n_events,
           r->t_end - r->t_start, r->t_start, (unsigned long long)candidates_seed(o->seed, r->chosen));
    if (o->play.candidates > 1)
        printf(" (candidate %d of %d, best %s)", r->chosen, o->play.candidates,
               play_score_name(o->play.candidate_score));
    printf("\n");
    rc = listen_output(&o->listen, tracks, 2);
done:
    free(ev_p);
    free(ev_c);
    return rc;
}

/* --plot-attention with candidates: a batch keeps no attention, so the
 * candidate played is sampled again alone with its seed (the very same
 * continuation: `model candidates` checks it), and that one is drawn. */
static int attention_of_played(const continue_run *r, const continue_opts *o)
{
    continue_opts a = *o;
    continue_run again = { 0 };
    a.play.candidates = 1;
    a.seed = candidates_seed(o->seed, r->chosen);
    log_info("%s: the attention of candidate %d, sampled again alone (seed %llu)", o->attention_path, r->chosen,
             (unsigned long long)a.seed);
    int ok = load_primer(&again, &a) == 0 && hear_primer(&again, &a) == 0 && generate(&again) == 0;
    if (ok && again.cont_notes.n != r->cont_notes.n) {
        log_error("%s: candidate %d alone played %zu notes, not %zu", o->attention_path, r->chosen,
                  again.cont_notes.n, r->cont_notes.n);
        ok = 0;
    }
    ok = ok && note_list_sort(&again.cont_notes) == 0 && write_attention(&again, o->attention_path) == 0;
    run_free(&again);
    return ok ? 0 : -1;
}

int cmd_continue(int argc, char **argv)
{
    continue_opts o;
    continue_run r = { 0 };
    int rc = parse_args(argc, argv, &o);
    if (rc != CLI_GO_ON)
        return rc;
    int ok = load_primer(&r, &o) == 0 && hear_primer(&r, &o) == 0 && generate(&r) == 0
             && (!o.attention_path || attention_as_sampled(&o) || attention_of_played(&r, &o) == 0)
             && write_outputs(&r, &o) == 0;
    run_free(&r);
    return ok ? 0 : 1;
}

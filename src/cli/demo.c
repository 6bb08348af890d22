/* demo.c: `continuo demo`: encode the bundled motif, show the events, decode it back and compare. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cli/commands.h"
#include "cli/listen.h"
#include "cli/opts.h"
#include "codec/perf.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "model/model.h"
#include "util/datafile.h"
#include "util/log.h"

#define MOTIF_NAME "motif.mid"

static const char demo_usage[] =
    "usage: continuo demo [MOTIF.mid] [-o OUT.mid] [--seconds S] [--play] [--wav OUT.wav]\n"
    "\n"
    "Encodes the bundled motif (models/motif.mid) as performance events, shows\n"
    "them and a small piano roll, decodes the events back to a MIDI file and\n"
    "reports how close the round trip came.  The motif is looked up in\n"
    "$CONTINUO_DATADIR, then " CONTINUO_DATADIR ", then models/ beside the\n"
    "program's source tree, then ./models/.\n";

/* The motif: $CONTINUO_DATADIR (a data folder, or a source tree), the
 * installed one, the source tree beside the binary, ./models/'s. */
static const datafile motif_file = {
    .name = MOTIF_NAME, .env = "CONTINUO_DATADIR", .env_kind = DATAFILE_ENV_DATA_DIR,
    .source_dir = "models", .installed = 1, .beside_binary = 1, .cwd_dot = 1,
};

/* Looks for the motif; returns 0 and fills BUF, or -1 after listing the places tried. */
static int find_motif(char *buf, size_t size)
{
    char places[DATAFILE_MAX_PLACES][DATAFILE_PATH_MAX], tried[4096];
    size_t k = 0;

    if (datafile_find(&motif_file, buf, size) == 0)
        return 0;
    int np = datafile_places(&motif_file, places);
    tried[0] = '\0';
    for (int i = 0; i < np; i++)
        if (k < sizeof tried)
            k += (size_t)snprintf(tried + k, sizeof tried - k, "\n  %s", places[i]);
    log_error("demo: cannot find the bundled motif; tried:%s\n"
              "(set CONTINUO_DATADIR to the folder that holds " MOTIF_NAME ")", tried);
    return -1;
}

/* One row per pitch that sounds, highest first; 8 columns per second. */
static void piano_roll(const note *notes, size_t n)
{
    enum { COLS_PER_S = 8, MAX_COLS = 96 };
    int used[128] = { 0 };
    double end = 0;

    for (size_t i = 0; i < n; i++) {
        used[notes[i].pitch] = 1;
        if (notes[i].release > end)
            end = notes[i].release;
    }
    int cols = (int)ceil(end * COLS_PER_S);
    if (cols > MAX_COLS)
        cols = MAX_COLS;
    printf("\npiano roll (one column = %d ms, # = onset, = = sounding):\n", 1000 / COLS_PER_S);
    for (int p = 127; p >= 0; p--) {
        if (!used[p])
            continue;
        char row[MAX_COLS + 1], nm[16];
        memset(row, '.', (size_t)cols);
        row[cols] = '\0';
        for (size_t i = 0; i < n; i++) {
            if (notes[i].pitch != p)
                continue;
            int a = (int)(notes[i].onset * COLS_PER_S), b = (int)ceil(notes[i].release * COLS_PER_S);
            for (int c = a; c < b && c < cols; c++)
                if (row[c] != '#')
                    row[c] = '=';
            if (a < cols)
                row[a] = '#';
        }
        printf("  %-4s %s\n", midi_pitch_name(p, nm, sizeof nm), row);
    }
}

/* For each note of A, the unused note of B with the same pitch and the
 * nearest onset within TOL; counts matches and the worst errors. */
static size_t match_notes(const vocab *v, const note *a, size_t na, const note *b, size_t nb,
                          double tol, double *max_on, double *max_off, size_t *vel_ok)
{
    char *used = calloc(nb ? nb : 1, 1);
    size_t matched = 0;

    *max_on = *max_off = 0;
    *vel_ok = 0;
    if (!used)
        return 0;
    for (size_t i = 0; i < na; i++) {
        size_t best = nb;
        double bd = tol;
        for (size_t j = 0; j < nb; j++) {
            double d = fabs(b[j].onset - a[i].onset);
            if (!used[j] && b[j].pitch == a[i].pitch && d <= bd) {
                best = j;
                bd = d;
            }
        }
        if (best == nb)
            continue;
        used[best] = 1;
        matched++;
        if (bd > *max_on)
            *max_on = bd;
        double dr = fabs(b[best].release - a[i].release);
        if (dr > *max_off)
            *max_off = dr;
        if (velocity_to_bin(v, a[i].velocity) == velocity_to_bin(v, b[best].velocity))
            (*vel_ok)++;
    }
    free(used);
    return matched;
}

/* The main job: the motif continued by the model, written to OUTPUT with a
 * piano roll beside it (OUTPUT with .svg), through `continuo continue`. */
static int continue_motif(const char *motif, const char *model_path, const char *output, double seconds,
                          const listen_opts *listen)
{
    char svg[PATH_MAX + 8], secs[32];
    snprintf(secs, sizeof secs, "%g", seconds);
    size_t n = strlen(output);
    if (n > 4 && strcmp(output + n - 4, ".mid") == 0)
        n -= 4;
    snprintf(svg, sizeof svg, "%.*s.svg", (int)n, output);
    char *args[16] = { "continue", (char *)motif, "--model", (char *)model_path, "-o", (char *)output,
                       "--seconds", secs, "--seed", "1", "--plot", svg };
    int argc = 12;
    if (listen->wav) {
        args[argc++] = "--wav";
        args[argc++] = (char *)listen->wav;
    }
    if (listen->play)
        args[argc++] = "--play";
    printf("\ncontinuing the motif with %s (%s s, seed 1):\n", model_path, secs);
    fflush(stdout);
    int rc = cmd_continue(argc, args);
    if (rc == 0 && !listen->play)
        printf("\nlisten: continuo demo --play (or --wav FILE), or fluidsynth -ni "
               "/usr/share/sounds/sf2/FluidR3_GM.sf2 %s\n", output);
    if (rc == 0)
        printf("piano roll (motif and continuation in two colours): %s\n", svg);
    return rc;
}

/* The motif and what became of it, freed by demo_free. */
typedef struct demo_run {
    char path[PATH_MAX + 64];   /* the motif */
    const char *output;         /* the MIDI file written */
    double seconds;             /* of the continuation */
    const vocab *v;
    smf f;
    note_list notes, back;      /* the motif's notes, and decoded back */
    uint16_t *ids;
    size_t n_ids;
    smf_event *ev;              /* BACK as MIDI events (without a model) */
    size_t n_ev;
} demo_run;

static void demo_free(demo_run *r)
{
    free(r->ids);
    free(r->ev);
    note_list_free(&r->notes);
    note_list_free(&r->back);
    smf_free(&r->f);
}

/* The options into R and LISTEN; CLI_GO_ON, or the exit status. */
static int parse_args(int argc, char **argv, demo_run *r, listen_opts *listen)
{
    const cli_option options[] = {
        CLI_FILE("output", 'o', "FILE", &r->output, "the decoded MIDI file (default ./continuo-demo.mid)"),
        CLI_DOUBLE("seconds", 0, "S", 0.5, 120, &r->seconds, "how long the model continues the motif (default 12)"),
        LISTEN_OPTIONS(listen),
        CLI_OPT_HELP,
        CLI_END
    };
    const cli_spec spec = { .name = "demo", .usage = demo_usage, .options = options,
                            .max_operands = 1 };
    int n_in;
    int rc = cli_parse(&spec, argc, argv, &n_in);
    if (rc != CLI_GO_ON)
        return rc;
    if (n_in)
        snprintf(r->path, sizeof r->path, "%s", argv[1]);
    else if (find_motif(r->path, sizeof r->path) < 0)
        return 1;
    return CLI_GO_ON;
}

/* Reads the motif and says what it holds. */
static int read_motif(demo_run *r)
{
    if (smf_read_file(r->path, &r->f) < 0 || perf_notes_from_midi(r->f.events, r->f.n_events, &r->notes) < 0)
        return -1;
    size_t n_pedal = 0;
    for (size_t i = 0; i < r->f.n_events; i++)
        if ((r->f.events[i].status & 0xF0) == 0xB0 && r->f.events[i].data1 == 64)
            n_pedal++;
    printf("motif: %s\n  %zu MIDI events (%zu sustain pedal changes), %.2f s, %zu notes after "
           "folding the pedal into note lengths\n", r->path, r->f.n_events, n_pedal, r->f.duration, r->notes.n);
    return 0;
}

/* Encodes the motif and shows its first events and a piano roll. */
static int show_events(demo_run *r)
{
    const vocab *v = r->v;
    perf_encode_info info;
    if (perf_encode_ex(v, r->notes.notes, r->notes.n, NULL, &r->ids, &r->n_ids, &info) < 0)
        return -1;
    printf("\nencoded (%s, %d ids): %zu events for %zu notes", v->name, v->size, r->n_ids, info.n_notes);
    if (info.n_out_of_range || info.n_collapsed)
        printf(" (%zu notes outside %d..%d, %zu struck twice within 10 ms: dropped)",
               info.n_out_of_range, v->min_pitch, v->max_pitch, info.n_collapsed);
    printf("\nfirst events:\n ");
    size_t shown = r->n_ids < 40 ? r->n_ids : 40, col = 1;
    for (size_t i = 0; i < shown; i++) {
        char nm[32];
        vocab_id_name(v, r->ids[i], nm, sizeof nm);
        if (col + strlen(nm) + 1 > 78) {
            printf("\n ");
            col = 1;
        }
        col += (size_t)printf(" %s", nm);
    }
    printf("%s\n", r->n_ids > shown ? " ..." : "");
    piano_roll(r->notes.notes, r->notes.n);
    return 0;
}

/* Decodes the events back to notes; without a model (HAVE_MODEL 0) writes
 * them to the output, which `continue` writes otherwise. */
static int decode_back(demo_run *r, int have_model)
{
    perf_decoder d;
    perf_decoder_init(&d, r->v, PERF_MAX_NOTE_S_DEFAULT);
    for (size_t i = 0; i < r->n_ids; i++)
        if (perf_decoder_push(&d, r->ids[i], &r->back) < 0)
            return -1;
    if (perf_decoder_finish(&d, &r->back) < 0 || note_list_sort(&r->back) < 0)
        return -1;
    if (have_model)
        return 0;
    if (perf_notes_to_events(r->back.notes, r->back.n, &r->ev, &r->n_ev) < 0)
        return -1;
    smf_track_out track = { .name = "continuo demo: motif decoded", .events = r->ev, .n_events = r->n_ev };
    return smf_write_file(r->output, &track, 1);
}

/* How close the round trip came; 0 when every note came back. */
static int report_round_trip(const demo_run *r, int have_model)
{
    double max_on, max_off;
    size_t vel_ok;
    size_t matched = match_notes(r->v, r->notes.notes, r->notes.n, r->back.notes, r->back.n, 0.0105,
                                 &max_on, &max_off, &vel_ok);
    printf("\ndecoded back%s%s: %zu notes\nround trip: %zu of %zu notes matched (same pitch, "
           "onset within 10 ms); max onset error %.1f ms, max release error %.1f ms; "
           "%zu velocities in the same bin\n", have_model ? "" : " to ", have_model ? "" : r->output,
           r->back.n, matched, r->notes.n, max_on * 1e3, max_off * 1e3, vel_ok);
    if (matched == r->notes.n && r->back.n == r->notes.n)
        return 0;
    log_error("demo: the round trip lost notes");
    return -1;
}

int cmd_demo(int argc, char **argv)
{
    demo_run r = { .output = "continuo-demo.mid", .seconds = 12, .v = vocab_default() };
    listen_opts listen = { 0 };
    char model_path[PATH_MAX];
    int status = parse_args(argc, argv, &r, &listen);
    if (status != CLI_GO_ON)
        return status;
    int have_model = model_find_default(model_path, sizeof model_path) == 0;
    status = 1;
    if (read_motif(&r) < 0 || show_events(&r) < 0 || decode_back(&r, have_model) < 0
        || report_round_trip(&r, have_model) < 0)
        goto done;
    if (have_model) {
        status = continue_motif(r.path, model_path, r.output, r.seconds, &listen);
    } else {
        printf("\nno model installed (models/continuo-default.gguf): the continuation step was skipped\n");
        smf_track_out track = { .name = "motif", .events = r.ev, .n_events = r.n_ev };
        status = listen_output(&listen, &track, 1) == 0 ? 0 : 1;
    }
done:
    demo_free(&r);
    return status;
}

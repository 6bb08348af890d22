/* demo.c: `continuo demo`: encode the bundled motif, show the events, decode it back and compare. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cli/commands.h"
#include "cli/listen.h"
#include "codec/perf.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "model/model.h"
#include "util/log.h"

#define MOTIF_NAME "motif.mid"

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: continuo demo [MOTIF.mid] [-o OUT.mid] [--play] [--wav OUT.wav]\n"
        "\n"
        "Encodes the bundled motif (models/motif.mid) as performance events, shows\n"
        "them and a small piano roll, decodes the events back to a MIDI file and\n"
        "reports how close the round trip came.  The motif is looked up in\n"
        "$CONTINUO_DATADIR, then %s, then models/ beside the\n"
        "program's source tree, then ./models/.\n"
        "\n"
        "options:\n"
        "  -o, --output FILE   the decoded MIDI file (default ./continuo-demo.mid)\n"
        "%s"
        "  -h, --help          this help\n", CONTINUO_DATADIR, listen_usage);
}

static int readable(const char *path) { return access(path, R_OK) == 0; }

/* A folder and a file name in it, to look for the motif. */
typedef struct place {
    const char *dir, *file;
} place;

/* Looks for the motif; returns 0 and fills BUF, or -1 after listing the places tried. */
static int find_motif(char *buf, size_t size)
{
    char exe[PATH_MAX], tried[4096];
    const char *env = getenv("CONTINUO_DATADIR");
    place places[5];
    int np = 0;
    size_t k = 0;

    if (env && *env) {
        places[np++] = (place){ env, MOTIF_NAME };
        places[np++] = (place){ env, "models/" MOTIF_NAME };
    }
    places[np++] = (place){ CONTINUO_DATADIR, MOTIF_NAME };
    /* A build folder inside the source tree: <src>/<build>/continuo. */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 16);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            strcpy(slash, "/..");
            places[np++] = (place){ exe, "models/" MOTIF_NAME };
        }
    }
    places[np++] = (place){ ".", "models/" MOTIF_NAME };
    tried[0] = '\0';
    for (int i = 0; i < np; i++) {
        snprintf(buf, size, "%s/%s", places[i].dir, places[i].file);
        if (readable(buf))
            return 0;
        if (k < sizeof tried)
            k += (size_t)snprintf(tried + k, sizeof tried - k, "\n  %s", buf);
    }
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
static int continue_motif(const char *motif, const char *model_path, const char *output,
                          const listen_opts *listen)
{
    char svg[PATH_MAX + 8];
    size_t n = strlen(output);
    if (n > 4 && strcmp(output + n - 4, ".mid") == 0)
        n -= 4;
    snprintf(svg, sizeof svg, "%.*s.svg", (int)n, output);
    char *args[16] = { "continue", (char *)motif, "--model", (char *)model_path, "-o", (char *)output,
                       "--seconds", "12", "--seed", "1", "--plot", svg };
    int argc = 12;
    if (listen->wav) {
        args[argc++] = "--wav";
        args[argc++] = (char *)listen->wav;
    }
    if (listen->play)
        args[argc++] = "--play";
    printf("\ncontinuing the motif with %s (12 s, seed 1):\n", model_path);
    fflush(stdout);
    int rc = cmd_continue(argc, args);
    if (rc == 0 && !listen->play)
        printf("\nlisten: continuo demo --play (or --wav FILE), or fluidsynth -ni "
               "/usr/share/sounds/sf2/FluidR3_GM.sf2 %s\n", output);
    if (rc == 0)
        printf("piano roll (motif and continuation in two colours): %s\n", svg);
    return rc;
}

int cmd_demo(int argc, char **argv)
{
    const char *output = "continuo-demo.mid", *input = NULL;
    char path[PATH_MAX + 64];
    int status = 1;
    smf f = { 0 };
    note_list notes = { 0 }, back = { 0 };
    uint16_t *ids = NULL;
    smf_event *ev = NULL;
    listen_opts listen = { 0 };

    for (int i = 1; i < argc; i++) {
        int r = listen_parse("demo", argc, argv, &i, &listen);
        if (r < 0)
            return 2;
        if (r > 0)
            continue;
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "continuo demo: %s needs a file name\n", argv[i]);
                return 2;
            }
            output = argv[++i];
        } else if (argv[i][0] != '-' && !input) {
            input = argv[i];
        } else {
            fprintf(stderr, "continuo demo: unknown argument '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (input)
        snprintf(path, sizeof path, "%s", input);
    else if (find_motif(path, sizeof path) < 0)
        return 1;

    const vocab *v = vocab_default();
    if (smf_read_file(path, &f) < 0)
        goto done;
    if (perf_notes_from_midi(f.events, f.n_events, &notes) < 0)
        goto done;
    size_t n_pedal = 0;
    for (size_t i = 0; i < f.n_events; i++)
        if ((f.events[i].status & 0xF0) == 0xB0 && f.events[i].data1 == 64)
            n_pedal++;
    printf("motif: %s\n  %zu MIDI events (%zu sustain pedal changes), %.2f s, %zu notes after "
           "folding the pedal into note lengths\n", path, f.n_events, n_pedal, f.duration, notes.n);

    size_t n_ids;
    perf_encode_info info;
    if (perf_encode_ex(v, notes.notes, notes.n, NULL, &ids, &n_ids, &info) < 0)
        goto done;
    printf("\nencoded (%s, %d ids): %zu events for %zu notes", v->name, v->size, n_ids, info.n_notes);
    if (info.n_out_of_range || info.n_collapsed)
        printf(" (%zu notes outside %d..%d, %zu struck twice within 10 ms: dropped)",
               info.n_out_of_range, v->min_pitch, v->max_pitch, info.n_collapsed);
    printf("\nfirst events:\n ");
    size_t shown = n_ids < 40 ? n_ids : 40, col = 1;
    for (size_t i = 0; i < shown; i++) {
        char nm[32];
        vocab_id_name(v, ids[i], nm, sizeof nm);
        if (col + strlen(nm) + 1 > 78) {
            printf("\n ");
            col = 1;
        }
        col += (size_t)printf(" %s", nm);
    }
    printf("%s\n", n_ids > shown ? " ..." : "");
    piano_roll(notes.notes, notes.n);

    perf_decoder d;
    perf_decoder_init(&d, v, PERF_MAX_NOTE_S_DEFAULT);
    for (size_t i = 0; i < n_ids; i++)
        if (perf_decoder_push(&d, ids[i], &back) < 0)
            goto done;
    if (perf_decoder_finish(&d, &back) < 0 || note_list_sort(&back) < 0)
        goto done;
    char model_path[PATH_MAX];
    int have_model = model_find_default(model_path, sizeof model_path) == 0;
    size_t n_ev_motif = 0;
    if (!have_model) {      /* else `continue` writes OUTPUT */
        if (perf_notes_to_events(back.notes, back.n, &ev, &n_ev_motif) < 0)
            goto done;
        smf_track_out track = { .name = "continuo demo: motif decoded", .events = ev,
                                .n_events = n_ev_motif };
        if (smf_write_file(output, &track, 1) < 0)
            goto done;
    }
    double max_on, max_off;
    size_t vel_ok;
    size_t matched = match_notes(v, notes.notes, notes.n, back.notes, back.n, 0.0105,
                                 &max_on, &max_off, &vel_ok);
    printf("\ndecoded back%s%s: %zu notes\nround trip: %zu of %zu notes matched (same pitch, "
           "onset within 10 ms); max onset error %.1f ms, max release error %.1f ms; "
           "%zu velocities in the same bin\n", have_model ? "" : " to ", have_model ? "" : output, back.n, matched, notes.n,
           max_on * 1e3, max_off * 1e3, vel_ok);
    status = matched == notes.n && back.n == notes.n ? 0 : 1;
    if (status) {
        log_error("demo: the round trip lost notes");
        goto done;
    }
    if (have_model) {
        status = continue_motif(path, model_path, output, &listen);
    } else {
        printf("\nno model installed (models/continuo-default.gguf): the continuation step was skipped\n");
        smf_track_out track = { .name = "motif", .events = ev, .n_events = n_ev_motif };
        if (listen_output(&listen, &track, 1) != 0)
            status = 1;
    }
done:
    free(ids);
    free(ev);
    note_list_free(&notes);
    note_list_free(&back);
    smf_free(&f);
    return status;
}

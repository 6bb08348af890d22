/* inspect.c: `continuo inspect`: tracks, duration, notes, pedal, tempo and problems of MIDI files. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "midi/smf.h"

#define SUSTAIN_CC        64
#define MAX_TRACKS_LISTED 16
#define MAX_TEMPOS_LISTED 5

/* What one file holds, in the terms a player uses. */
typedef struct file_summary {
    size_t notes;               /* note-ons with velocity > 0 */
    int    pitch_lo, pitch_hi;
    int    vel_lo, vel_hi;
    size_t pedal_presses;       /* sustain pedal going down (CC64 >= 64) */
    double pedal_down_s;        /* seconds with the pedal down on any channel */
} file_summary;

static const char inspect_usage[] =
    "usage: continuo inspect FILE.mid...\n"
    "\n"
    "Prints, for each MIDI file: format, tracks (names and event counts),\n"
    "time division, duration, notes (count, pitch and velocity ranges),\n"
    "sustain pedal use, tempo changes and any problems found while reading.\n"
    "A file that cannot be read gets a one-line error naming the byte and\n"
    "the problem; the other files are still inspected.\n";

/* "mm:ss.s", rounded to a tenth of a second. */
static void format_time(char *buf, size_t n, double seconds)
{
    long long tenths = llround(seconds * 10.0);
    if (tenths < 0)
        tenths = 0;
    snprintf(buf, n, "%02lld:%02lld.%lld", tenths / 600, tenths % 600 / 10, tenths % 10);
}

static void summarize(const smf *f, file_summary *s)
{
    unsigned down_mask = 0;     /* channels with the sustain pedal down */
    double down_since = 0.0;

    memset(s, 0, sizeof *s);
    s->pitch_lo = s->vel_lo = 128;
    s->pitch_hi = s->vel_hi = -1;
    for (size_t i = 0; i < f->n_events; i++) {
        const smf_event *e = &f->events[i];
        int type = e->status & 0xF0, ch = e->status & 0x0F;
        if (type == 0x90 && e->data2 > 0) {
            s->notes++;
            if (e->data1 < s->pitch_lo) s->pitch_lo = e->data1;
            if (e->data1 > s->pitch_hi) s->pitch_hi = e->data1;
            if (e->data2 < s->vel_lo) s->vel_lo = e->data2;
            if (e->data2 > s->vel_hi) s->vel_hi = e->data2;
        } else if (type == 0xB0 && e->data1 == SUSTAIN_CC) {
            unsigned bit = 1u << ch;
            if (e->data2 >= 64 && !(down_mask & bit)) {
                s->pedal_presses++;
                if (!down_mask)
                    down_since = e->time;
                down_mask |= bit;
            } else if (e->data2 < 64 && (down_mask & bit)) {
                down_mask &= ~bit;
                if (!down_mask)
                    s->pedal_down_s += e->time - down_since;
            }
        }
    }
    if (down_mask && f->duration > down_since)
        s->pedal_down_s += f->duration - down_since;
}

static void print_tracks(const smf *f)
{
    if (f->smpte_fps)
        printf("  format %d, %d track%s, SMPTE %s fps, %d ticks per frame\n", f->format, f->n_tracks,
               f->n_tracks == 1 ? "" : "s", f->smpte_fps == 29 ? "29.97" : f->smpte_fps == 24 ? "24"
               : f->smpte_fps == 25 ? "25" : "30", f->smpte_ticks_per_frame);
    else
        printf("  format %d, %d track%s, %d ticks per quarter note\n", f->format, f->n_tracks,
               f->n_tracks == 1 ? "" : "s", f->division);
    for (int i = 0; i < f->n_tracks && i < MAX_TRACKS_LISTED; i++) {
        const smf_track *t = &f->tracks[i];
        if (t->name)
            printf("  track %d \"%s\": %zu events\n", i, t->name, t->n_events);
        else
            printf("  track %d: %zu events\n", i, t->n_events);
    }
    if (f->n_tracks > MAX_TRACKS_LISTED)
        printf("  ... and %d more tracks\n", f->n_tracks - MAX_TRACKS_LISTED);
}

static void print_summary(const smf *f, const file_summary *s)
{
    char t[32], lo[16], hi[16];

    format_time(t, sizeof t, f->duration);
    printf("  duration: %s (%.3f s)\n", t, f->duration);
    if (s->notes) {
        printf("  notes: %zu, pitch %d (%s) to %d (%s), velocity %d to %d\n",
               s->notes, s->pitch_lo, midi_pitch_name(s->pitch_lo, lo, sizeof lo), s->pitch_hi,
               midi_pitch_name(s->pitch_hi, hi, sizeof hi), s->vel_lo, s->vel_hi);
    } else {
        printf("  notes: 0\n");
    }
    if (s->pedal_presses)
        printf("  sustain pedal: %zu presses, down %.1f%% of the time\n", s->pedal_presses,
               f->duration > 0 ? 100.0 * s->pedal_down_s / f->duration : 0.0);
    else
        printf("  sustain pedal: not used\n");
    printf("  tempo changes: %zu", f->n_tempos);
    for (size_t i = 0; i < f->n_tempos && i < MAX_TEMPOS_LISTED; i++) {
        format_time(t, sizeof t, f->tempos[i].time);
        printf("%s %s %.1f bpm", i ? "," : ":", t, 60e6 / f->tempos[i].usec_per_quarter);
    }
    printf("%s\n", f->n_tempos > MAX_TEMPOS_LISTED ? ", ..." : "");
    if (f->n_warnings == 0) {
        printf("  problems: none\n");
        return;
    }
    printf("  problems: %d\n", f->n_warnings);
    const char *line = f->warnings;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        printf("    %.*s\n", len, line);
        line = nl ? nl + 1 : line + len;
    }
}

/* Inspects one file; 0 when it could be read. */
static int inspect_file(const char *path, int first)
{
    smf f;
    file_summary s;

    if (smf_read_file(path, &f) != 0)
        return -1;
    summarize(&f, &s);
    printf("%s%s\n", first ? "" : "\n", path);
    print_tracks(&f);
    print_summary(&f, &s);
    smf_free(&f);
    fflush(stdout);             /* before a later file's error on stderr */
    return 0;
}

int cmd_inspect(int argc, char **argv)
{
    const cli_option options[] = { CLI_OPT_HELP, CLI_END };
    const cli_spec spec = { .name = "inspect", .usage = inspect_usage, .options = options,
                            .epilog = "exit status: 0 all files read, 1 a file could not be read, 2 bad usage\n",
                            .min_operands = 1, .max_operands = CLI_MANY };
    int n_files, status = 0, printed = 0;
    int rc = cli_parse(&spec, argc, argv, &n_files);
    if (rc != CLI_GO_ON)
        return rc;
    for (int i = 1; i <= n_files; i++) {
        if (inspect_file(argv[i], !printed) != 0)
            status = 1;
        else
            printed = 1;
    }
    return status;
}

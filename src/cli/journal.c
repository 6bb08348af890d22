/* journal.c: `continuo journal`: the sessions the service journaled, listed, and one exported as a MIDI file. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "daemon/options.h"
#include "midi/journal.h"
#include "midi/smf.h"
#include "util/log.h"

static const char journal_usage[] =
    "usage: continuo journal [list] [--dir DIR] [--config FILE]\n"
    "       continuo journal export [SESSION] -o OUT.mid [--minutes N] [--dir DIR] [--config FILE]\n"
    "\n"
    "The service writes every session, what the player and the model played, into\n"
    "its journal as it is played (journal_dir; by default\n"
    "$XDG_STATE_HOME/continuo/journal, or the user unit's state directory:\n"
    "~/.config/continuo/journal under systemd 252's user manager, Debian 12's;\n"
    "without --dir, the one of the two written last), so a crash or a kill\n"
    "loses nothing but the last second.  Each session is a MIDI file with two\n"
    "tracks, player and continuo (after the tempo track), complete at every\n"
    "pause, and whole again once the service stops or starts again after a\n"
    "crash; list and export read what it played up to the last second.\n"
    "list: one line per session, oldest first: its number, when it started\n"
    "(UTC), how long it is, the notes of the player and of the model, and\n"
    "its file.  export: one session (a number from the list, a file, or by default\n"
    "the newest, also while the service still writes it) as a MIDI file with two\n"
    "tracks, player and continuo; --minutes N: only its last N minutes.\n";

/* One session as read: its events by part. */
typedef struct session {
    smf_event *ev[2];           /* 0 player, 1 continuo; owned */
    size_t     n[2];
    double     duration;
} session;

static void session_free(session *s)
{
    free(s->ev[0]);
    free(s->ev[1]);
    memset(s, 0, sizeof *s);
}

/* The session file PATH's events into S, by the name of the track each came
 * from: all of them, from its log while there is one (the service still
 * writes it, or a crash left it for the next start to fold).  0 or -1 (logged). */
static int session_read(const char *path, session *s)
{
    smf f;
    char from[2100];
    memset(s, 0, sizeof *s);
    if (smf_read_file(journal_read_path(path, from, sizeof from), &f) != 0)
        return -1;
    for (int p = 0; p < 2; p++) {
        s->ev[p] = malloc(sizeof *s->ev[p] * (f.n_events ? f.n_events : 1));
        if (!s->ev[p]) {
            log_error("%s: out of memory", path);
            smf_free(&f);
            session_free(s);
            return -1;
        }
    }
    for (size_t i = 0; i < f.n_events; i++) {
        const char *name = f.tracks[f.events[i].track].name;
        int part = name && strcmp(name, "continuo") == 0;
        s->ev[part][s->n[part]++] = f.events[i];
    }
    s->duration = f.duration;
    smf_free(&f);
    return 0;
}

static size_t count_notes(const smf_event *ev, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += (ev[i].status & 0xF0) == 0x90 && ev[i].data2 > 0;
    return c;
}

/* ---- list ---- */

typedef struct lister {
    int index;
    char (*paths)[2048];        /* export: the files, in order */
    int n, cap;
    int print;
} lister;

/* "20261201-154622" of .../session-20261201-154622.mid as "2026-12-01 15:46:22". */
static void start_of(const char *path, char *buf, size_t len)
{
    const char *b = strrchr(path, '/');
    int y, mo, d, h, mi, s;
    b = b ? b + 1 : path;
    if (sscanf(b, "session-%4d%2d%2d-%2d%2d%2d", &y, &mo, &d, &h, &mi, &s) == 6)
        snprintf(buf, len, "%04d-%02d-%02d %02d:%02d:%02d", y, mo, d, h, mi, s);
    else
        snprintf(buf, len, "?");
}

static void list_one(const char *path, uint64_t size, time_t mtime, void *user)
{
    lister *l = user;
    (void)mtime;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        void *p = realloc(l->paths, sizeof *l->paths * (size_t)cap);
        if (!p)
            return;
        l->paths = p;
        l->cap = cap;
    }
    snprintf(l->paths[l->n++], sizeof l->paths[0], "%s", path);
    if (!l->print)
        return;
    session s;
    char when[32];
    start_of(path, when, sizeof when);
    if (session_read(path, &s) != 0) {
        printf("%3d  %s UTC  (cannot be read: see above)  %s\n", l->n, when, path);
        return;
    }
    long secs = lround(s.duration);
    printf("%3d  %s UTC  %3ld:%02ld  player %6zu notes  continuo %6zu notes  %7.1f kB  %s\n", l->n, when,
           secs / 60, secs % 60, count_notes(s.ev[0], s.n[0]), count_notes(s.ev[1], s.n[1]), size / 1024.0, path);
    session_free(&s);
}

/* ---- export ---- */

/* The events of EV (N) from FROM seconds on, shifted to start at 0, into
 * OUT (*N_OUT): a note that began before FROM is left out with its
 * note-off, and one still sounding at the end ends at END. */
static void cut(const smf_event *ev, size_t n, double from, double end, smf_event *out, size_t *n_out)
{
    uint8_t on[16][128];
    size_t k = 0;
    memset(on, 0, sizeof on);
    for (size_t i = 0; i < n; i++) {
        smf_event e = ev[i];
        int type = e.status & 0xF0, ch = e.status & 0x0F;
        int is_on = type == 0x90 && e.data2 > 0, is_off = type == 0x80 || (type == 0x90 && e.data2 == 0);
        if (e.time < from) {
            if (is_on || is_off)
                continue;
            e.time = from;          /* a controller (the pedal) in force at the cut */
        }
        if (is_off && !on[ch][e.data1])
            continue;
        on[ch][e.data1] = is_on ? 1 : is_off ? 0 : on[ch][e.data1];
        e.time -= from;
        out[k++] = e;
    }
    for (int ch = 0; ch < 16; ch++)
        for (int p = 0; p < 128; p++)
            if (on[ch][p])
                out[k++] = (smf_event){ .time = end - from, .status = (uint8_t)(0x80 | ch), .data1 = (uint8_t)p };
    *n_out = k;
}

static int export_session(const char *path, const char *out, double minutes)
{
    session s;
    if (session_read(path, &s) != 0)
        return 1;
    double end = s.duration, from = minutes > 0 && end > minutes * 60 ? end - minutes * 60 : 0;
    smf_event *kept[2] = { malloc(sizeof(smf_event) * (s.n[0] + 2048)), malloc(sizeof(smf_event) * (s.n[1] + 2048)) };
    size_t n[2] = { 0, 0 };
    int rc = 1;
    if (!kept[0] || !kept[1]) {
        log_error("%s: out of memory", path);
        goto done;
    }
    for (int p = 0; p < 2; p++)
        cut(s.ev[p], s.n[p], from, end, kept[p], &n[p]);
    smf_track_out tracks[2] = { { "player", kept[0], n[0] }, { "continuo", kept[1], n[1] } };
    if (smf_write_file(out, tracks, 2) == 0) {
        printf("%s: %.1f s of %s (player %zu notes, continuo %zu notes)\n", out, end - from, path,
               count_notes(kept[0], n[0]), count_notes(kept[1], n[1]));
        rc = 0;
    }
done:
    free(kept[0]);
    free(kept[1]);
    session_free(&s);
    return rc;
}

/* The folder: --dir, else the config's journal_dir as a reader looks for
 * it (util/statedir.h: the shell's state folder or the user unit's,
 * whichever journal changed last). */
static int folder(const char *dir_arg, const char *config_arg, char *dir, size_t len)
{
    config c;
    char found[CONFIG_STR_MAX];
    if (dir_arg) {
        snprintf(dir, len, "%s", dir_arg);
        return 0;
    }
    config_defaults(&c);
    const char *path = config_arg ? config_arg : config_find_file(found, sizeof found) ? found : NULL;
    if (path && config_load_file(&c, path) < 0)
        return -1;
    int r = config_journal_dir(&c, STATE_READ, dir, len);
    if (r > 0)
        log_error("the journal is off (journal_dir = off in %s): give the folder with --dir", path ? path : "?");
    else if (r < 0)
        log_error("no journal folder: set HOME or give it with --dir");
    return r == 0 ? 0 : -1;
}

int cmd_journal(int argc, char **argv)
{
    const char *dir_arg = NULL, *config_arg = NULL, *out = NULL;
    double minutes = 0;
    const cli_option options[] = {
        CLI_FILE("dir", 0, "DIR", &dir_arg, "the journal folder (default: journal_dir of the config)"),
        CLI_OPT_CONFIG(&config_arg),
        CLI_FILE("output", 'o', "OUT.mid", &out, "export: the MIDI file to write"),
        CLI_DOUBLE("minutes", 0, "N", 0.01, 1e6, &minutes, "export: only the session's last N minutes"),
        CLI_OPT_HELP,
        CLI_END
    };
    const cli_spec spec = { .name = "journal", .usage = journal_usage, .options = options, .max_operands = 2 };
    int n_in, status = cli_parse(&spec, argc, argv, &n_in);
    if (status != CLI_GO_ON)
        return status;
    const char *what = n_in >= 1 ? argv[1] : "list";
    int exporting = strcmp(what, "export") == 0;
    if (!exporting && (strcmp(what, "list") != 0 || n_in > 1)) {
        fprintf(stderr, "continuo journal: unknown argument '%s' (list or export)\n", n_in > 1 ? argv[2] : what);
        return 2;
    }
    if (exporting && !out) {
        fprintf(stderr, "continuo journal: export needs -o OUT.mid\n");
        return 2;
    }
    char dir[CONFIG_STR_MAX];
    if (folder(dir_arg, config_arg, dir, sizeof dir) != 0)
        return 1;
    lister l = { .print = !exporting };
    if (journal_list(dir, list_one, &l) < 0) {
        log_error("%s: cannot read the journal folder: %s", dir, strerror(errno));
        return 1;
    }
    int rc = 0;
    if (exporting) {
        const char *which = n_in >= 2 ? argv[2] : NULL;
        int k = which ? atoi(which) : l.n;
        if (which && strchr(which, '/'))
            rc = export_session(which, out, minutes);
        else if (k < 1 || k > l.n) {
            log_error("%s: no session %s (%d in the journal)", dir, which ? which : "", l.n);
            rc = 1;
        } else
            rc = export_session(l.paths[k - 1], out, minutes);
    } else if (l.n == 0) {
        printf("no sessions in %s\n", dir);
    }
    free(l.paths);
    return rc;
}

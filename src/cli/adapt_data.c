/* adapt_data.c: the player's playing for `continuo adapt`: sessions read, the player's notes taken, the newest tenth held back, token files written. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli/adapt.h"
#include "cli/commands.h"
#include "codec/perf.h"
#include "codec/tokfile.h"
#include "midi/journal.h"
#include "midi/smf.h"
#include "util/log.h"

static int inputs_push(adapt_inputs *in, const char *path)
{
    char **grown = realloc(in->path, sizeof *grown * (size_t)(in->n + 1));
    char *copy = strdup(path);
    if (!grown || !copy) {
        free(copy);
        if (grown)
            in->path = grown;
        log_error("%s: out of memory", path);
        return -1;
    }
    in->path = grown;
    in->path[in->n++] = copy;
    return 0;
}

static int is_midi_name(const char *name)
{
    return name[0] != '.' && (cli_has_suffix(name, ".mid") || cli_has_suffix(name, ".midi")
                              || cli_has_suffix(name, ".MID") || cli_has_suffix(name, ".MIDI"));
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int adapt_inputs_add(adapt_inputs *in, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        log_error("%s: no such file or folder", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return inputs_push(in, path);
    DIR *d = opendir(path);
    if (!d) {
        log_error("%s: cannot read the folder", path);
        return -1;
    }
    int first = in->n, rc = 0;
    struct dirent *e;
    char full[4096];
    while (rc == 0 && (e = readdir(d)))
        if (is_midi_name(e->d_name)) {
            snprintf(full, sizeof full, "%s/%s", path, e->d_name);
            rc = inputs_push(in, full);
        }
    closedir(d);
    if (rc == 0 && in->n == first)
        log_warn("%s: no .mid or .midi files in the folder", path);
    qsort(in->path + first, (size_t)(in->n - first), sizeof *in->path, by_string);
    return rc;
}

static void journal_add(const char *path, uint64_t size, time_t mtime, void *user)
{
    (void)size;
    (void)mtime;
    adapt_inputs *in = user;
    if (in->from_journal >= 0 && inputs_push(in, path) != 0)
        in->from_journal = -1;
}

int adapt_inputs_journal(adapt_inputs *in, const char *dir)
{
    in->from_journal = 1;
    if (journal_list(dir, journal_add, in) < 0) {
        log_error("%s: cannot read the journal folder (give MIDI files or folders instead)", dir);
        return -1;
    }
    return in->from_journal < 0 ? -1 : 0;
}

void adapt_inputs_free(adapt_inputs *in)
{
    for (int i = 0; i < in->n; i++)
        free(in->path[i]);
    free(in->path);
    memset(in, 0, sizeof *in);
}

/* ------------------------------------------------------------ one session */

static int track_named(const smf *f, int track, const char *name)
{
    const char *t = track < f->n_tracks ? f->tracks[track].name : NULL;
    return t && strcasecmp(t, name) == 0;
}

/* The player's notes of PATH into NOTES: the tracks named "player" when the
 * file has any (the journal's, a recording's), else every track but those
 * named "continuo" (the model's part).  0, or -1 (logged). */
static int player_notes(const char *path, note_list *notes)
{
    smf f;
    if (smf_read_file(path, &f) != 0)
        return -1;
    int any_player = 0;
    for (int t = 0; t < f.n_tracks; t++)
        any_player |= track_named(&f, t, "player");
    size_t k = 0;
    for (size_t i = 0; i < f.n_events; i++) {
        int t = f.events[i].track;
        if (any_player ? track_named(&f, t, "player") : !track_named(&f, t, "continuo"))
            f.events[k++] = f.events[i];
    }
    int rc = perf_notes_from_midi(f.events, k, notes);
    smf_free(&f);
    return rc;
}

static double capped(double s)
{
    return s < ADAPT_GAP_CAP_S ? s : ADAPT_GAP_CAP_S;
}

/* Seconds of playing from note FROM to the end of L: the gaps between
 * onsets, each capped at ADAPT_GAP_CAP_S, and the last note's length. */
static double playing_from(const note_list *l, size_t from)
{
    if (from >= l->n)
        return 0;
    double s = capped(l->notes[l->n - 1].release - l->notes[l->n - 1].onset);
    for (size_t i = from + 1; i < l->n; i++)
        s += capped(l->notes[i].onset - l->notes[i - 1].onset);
    return s;
}

/* The first note of L (non-empty) from which on at most HOLD seconds of
 * playing remain (the last note at least). */
static size_t cut_for(const note_list *l, double hold)
{
    size_t i = l->n - 1;
    double s = capped(l->notes[i].release - l->notes[i].onset);
    while (i > 0 && s + capped(l->notes[i].onset - l->notes[i - 1].onset) <= hold) {
        s += capped(l->notes[i].onset - l->notes[i - 1].onset);
        i--;
    }
    return i;
}

/* Encodes notes FROM..TO of L (times from the first of them) into W as SOURCE. */
static int add_part(tokfile_writer *w, const vocab *v, const note_list *l, size_t from, size_t to,
                    const char *source, size_t *events)
{
    if (to <= from)
        return 0;
    double t0 = l->notes[from].onset;
    for (size_t i = from; i < to; i++) {
        l->notes[i].onset -= t0;
        l->notes[i].release -= t0;
    }
    uint16_t *ids = NULL;
    size_t n = 0;
    int rc = perf_encode(v, l->notes + from, to - from, NULL, &ids, &n);
    if (rc == 0 && n >= 2) {
        rc = tokfile_writer_add(w, ids, n, source);
        *events += n;
    }
    free(ids);
    return rc;
}

/* ------------------------------------------------------------ all sessions */

static void free_notes(note_list *notes, int n)
{
    for (int i = 0; i < n; i++)
        note_list_free(&notes[i]);
    free(notes);
}

/* Every session's player's notes into *NOTES (IN->n lists; unreadable
 * journal files left empty with a warning), the playing counted in OUT. */
static int read_sessions(const adapt_inputs *in, note_list **notes, adapt_data *out)
{
    *notes = calloc((size_t)(in->n ? in->n : 1), sizeof **notes);
    if (!*notes) {
        log_error("adapt: out of memory");
        return -1;
    }
    for (int i = 0; i < in->n; i++) {
        if (player_notes(in->path[i], &(*notes)[i]) != 0) {
            if (!in->from_journal) {
                free_notes(*notes, in->n);
                return -1;
            }
            log_warn("%s: skipped (see above)", in->path[i]);
            continue;
        }
        double s = playing_from(&(*notes)[i], 0);
        out->seconds += s;
        out->sessions += s > 0;
    }
    return 0;
}

/* The newest HELD seconds of NOTES (oldest session first) to HW, the rest to TW. */
static int split_sessions(const adapt_inputs *in, const vocab *v, note_list *notes, tokfile_writer *tw,
                          tokfile_writer *hw, adapt_data *out)
{
    double need = out->seconds * ADAPT_HELD_SHARE;
    int rc = 0;
    for (int i = in->n - 1; i >= 0 && rc == 0; i--) {
        const note_list *l = &notes[i];
        size_t cut = need > 0 && l->n ? cut_for(l, need) : l->n;
        if (cut < l->n) {
            double held = playing_from(l, cut);
            need = cut > 0 ? 0 : need - held;   /* a session cut part way holds the rest of the tenth */
            out->held_seconds += held;
            out->held_from = i;
        }
        rc = add_part(hw, v, l, cut, l->n, in->path[i], &out->held_events);
        if (rc == 0)
            rc = add_part(tw, v, l, 0, cut, in->path[i], &out->train_events);
    }
    return rc;
}

int adapt_data_build(const adapt_inputs *in, const vocab *v, const char *train_tok, const char *held_tok,
                     adapt_data *out)
{
    note_list *notes;
    memset(out, 0, sizeof *out);
    if (read_sessions(in, &notes, out) != 0)
        return -1;
    if (out->seconds < ADAPT_MIN_SECONDS) {
        free_notes(notes, in->n);
        return 1;
    }
    tokfile_writer tw, hw;
    int rc = -1;
    if (tokfile_writer_init(&tw, v->name, (uint32_t)v->size) == 0) {
        if (tokfile_writer_init(&hw, v->name, (uint32_t)v->size) == 0) {
            rc = split_sessions(in, v, notes, &tw, &hw, out);
            if (rc == 0 && (out->train_events < 2 || out->held_events < 2)) {
                log_error("adapt: the playing did not split into a part to learn from and a part to judge with");
                rc = -1;
            }
            if (rc == 0)
                rc = tokfile_writer_save(&tw, train_tok) == 0 && tokfile_writer_save(&hw, held_tok) == 0 ? 0 : -1;
            tokfile_writer_free(&hw);
        }
        tokfile_writer_free(&tw);
    }
    free_notes(notes, in->n);
    return rc;
}

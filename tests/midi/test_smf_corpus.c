/* test_smf_corpus.c: every MIDI file of the ASAP corpus ($ASAP_DIR) reads without error; prints counts and time. */
#define _XOPEN_SOURCE 700    /* nftw */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "check.h"
#include "midi/smf.h"
#include "util/clock.h"

/* Totals over the corpus. */
typedef struct corpus_totals {
    size_t files, failed, events, notes, tempos, warnings, unsorted, empty;
    double seconds_of_music;
    double read_seconds;
} corpus_totals;

static corpus_totals totals;

static int is_midi_name(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot && (strcasecmp(dot, ".mid") == 0 || strcasecmp(dot, ".midi") == 0);
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type != FTW_F || !is_midi_name(path))
        return 0;
    smf f;
    double t0 = clock_now_seconds();
    int rc = smf_read_file(path, &f);
    totals.read_seconds += clock_now_seconds() - t0;
    totals.files++;
    if (rc != 0) {
        totals.failed++;
        return 0;
    }
    size_t notes = 0;
    for (size_t i = 0; i < f.n_events; i++) {
        if ((f.events[i].status & 0xF0) == 0x90 && f.events[i].data2 > 0)
            notes++;
        if (i > 0 && f.events[i].time < f.events[i - 1].time)
            totals.unsorted++;
    }
    if (notes == 0 || f.n_events == 0 || f.events[f.n_events - 1].time > f.duration)
        totals.empty++;
    totals.events += f.n_events;
    totals.notes += notes;
    totals.tempos += f.n_tempos;
    totals.warnings += (size_t)f.n_warnings;
    totals.seconds_of_music += f.duration;
    smf_free(&f);
    return 0;
}

int main(void)
{
    const char *dir = getenv("ASAP_DIR");
    struct stat st;

    if (!dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "ASAP_DIR (%s) is not a folder: skipped\n", dir ? dir : "unset");
        return 77;
    }
    CHECK_INT(nftw(dir, visit, 32, FTW_PHYS), 0);
    printf("%zu files read in %.3f s (%.0f files/s): %zu events, %zu notes, %zu tempo events, "
           "%.1f hours of music, %zu warnings, %zu failed\n",
           totals.files, totals.read_seconds, totals.files / (totals.read_seconds > 0 ? totals.read_seconds : 1),
           totals.events, totals.notes, totals.tempos, totals.seconds_of_music / 3600.0,
           totals.warnings, totals.failed);
    if (totals.files == 0) {
        fprintf(stderr, "no MIDI files under %s: skipped\n", dir);
        return 77;
    }
    CHECK_INT(totals.failed, 0);
    CHECK_INT(totals.unsorted, 0);
    CHECK_INT(totals.empty, 0);
    return CHECK_DONE();
}

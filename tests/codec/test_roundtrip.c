/* test_roundtrip.c: decode(encode(file)) on every performance in $ASAP_DIR, note by note;
 * the streaming encoder must give the batch encoder's tokens on every file. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codec/perf.h"
#include "midi/smf.h"

/* What the test counts.  Mismatches fail the test; exclusions are notes the
 * encoding, by its definition, cannot bring back within 10 ms:
 *  - out of range: pitches outside the layout (21..108) are not encoded;
 *  - collapsed: the same pitch struck twice within one 10 ms step: one
 *    NOTE_ON per pitch and step, so the earlier note is dropped;
 *  - lengthened: onset and release round onto the same step, and the note
 *    is given one step (as Magenta does), so its release may move up to
 *    15 ms; those beyond 10 ms are checked against 15 ms instead. */
typedef struct counts {
    size_t files, bad_files, notes, matched;
    size_t missing, extra, onset, release, velocity;            /* mismatches */
    size_t out_of_range, collapsed, lengthened, lengthened_over; /* exclusions */
    size_t stream_mismatch_files, tokens;
    double max_onset_err, max_release_err, max_lengthened_err;
} counts;

static counts C;
static const vocab *V;
static const double TOL = 0.010 + 1e-9;

static int cmp_note(const void *pa, const void *pb)
{
    const note *a = pa, *b = pb;
    if (a->pitch != b->pitch)
        return a->pitch - b->pitch;
    return (a->onset > b->onset) - (a->onset < b->onset);
}

static void compare(const char *path, const note_list *ref, note_list *out)
{
    /* Both by pitch, then onset; ref notes of one pitch in input order. */
    note *r = malloc((ref->n + 1) * sizeof *r);
    char *used = calloc(out->n + 1, 1);
    if (!r || !used) {
        CHECK(!"out of memory");
        free(r);
        free(used);
        return;
    }
    memcpy(r, ref->notes, ref->n * sizeof *r);
    /* Bucketed by pitch, keeping ref's order (onset, then input order for
     * equal onsets, which decides which note collapses). */
    size_t start[129] = { 0 }, fill[128];
    for (size_t i = 0; i < ref->n; i++)
        start[ref->notes[i].pitch + 1]++;
    for (int p = 0; p < 128; p++)
        start[p + 1] += start[p];
    memcpy(fill, start, sizeof fill);
    for (size_t i = 0; i < ref->n; i++)
        r[fill[ref->notes[i].pitch]++] = ref->notes[i];
    qsort(out->notes, out->n, sizeof *out->notes, cmp_note);

    size_t j = 0;
    int reported = 0;
    for (size_t i = 0; i < ref->n; i++) {
        const note *a = &r[i];
        C.notes++;
        if (a->pitch < V->min_pitch || a->pitch > V->max_pitch) {
            C.out_of_range++;
            continue;
        }
        int64_t on = perf_quantize(V, 1.0, a->onset), off = perf_quantize(V, 1.0, a->release);
        if (i + 1 < ref->n && r[i + 1].pitch == a->pitch
            && perf_quantize(V, 1.0, r[i + 1].onset) == on) {
            C.collapsed++;
            continue;
        }
        /* the decoded note of this pitch that starts at the same step */
        while (j < out->n && (out->notes[j].pitch < a->pitch
               || (out->notes[j].pitch == a->pitch
                   && perf_quantize(V, 1.0, out->notes[j].onset) < on)))
            j++;
        if (j == out->n || out->notes[j].pitch != a->pitch
            || perf_quantize(V, 1.0, out->notes[j].onset) != on) {
            C.missing++;
            if (reported++ < 3)
                fprintf(stderr, "%s: note %d at %.4f s: not decoded\n", path, a->pitch, a->onset);
            continue;
        }
        const note *b = &out->notes[j];
        used[j] = 1;
        double eo = fabs(b->onset - a->onset), er = fabs(b->release - a->release);
        int ok = 1;
        if (eo > TOL) {
            C.onset++;
            ok = 0;
        }
        if (eo > C.max_onset_err)
            C.max_onset_err = eo;
        if (off <= on) {
            C.lengthened++;
            if (er > C.max_lengthened_err)
                C.max_lengthened_err = er;
            if (er > 0.015 + 1e-9) {
                C.release++;
                ok = 0;
            } else if (er > TOL) {
                C.lengthened_over++;
                ok = 2;
            }
        } else {
            if (er > TOL) {
                C.release++;
                ok = 0;
            }
            if (er > C.max_release_err)
                C.max_release_err = er;
        }
        if (velocity_to_bin(V, b->velocity) != velocity_to_bin(V, a->velocity)) {
            C.velocity++;
            ok = 0;
        }
        if (ok == 1)
            C.matched++;
        else if (ok == 2)
            ;                                   /* excluded, counted above */
        else if (reported++ < 3)
            fprintf(stderr, "%s: note %d: onset %.4f -> %.4f, release %.4f -> %.4f, velocity %d -> %d\n",
                    path, a->pitch, a->onset, b->onset, a->release, b->release, a->velocity, b->velocity);
    }
    for (size_t k = 0; k < out->n; k++)
        if (!used[k]) {
            C.extra++;
            if (reported++ < 3)
                fprintf(stderr, "%s: decoded note %d at %.4f s has no original\n", path,
                        out->notes[k].pitch, out->notes[k].onset);
        }
    free(r);
    free(used);
}

static int stream_tokens(const smf *f, const uint16_t *ids, size_t n)
{
    perf_encoder *e = perf_encoder_new(V, NULL);
    uint16_t buf[4096];
    size_t k = 0;
    int same = 1;
    if (!e)
        return 0;
    for (size_t i = 0; i <= f->n_events; i++) {
        if (i < f->n_events)
            CHECK(perf_encoder_push(e, &f->events[i]) == 0);
        else
            CHECK(perf_encoder_finish(e) == 0);
        size_t got;
        while ((got = perf_encoder_pop(e, buf, sizeof buf / sizeof buf[0])) > 0) {
            if (k + got > n || memcmp(buf, ids + k, got * sizeof *buf) != 0)
                same = 0;
            k += got;
        }
    }
    perf_encoder_free(e);
    return same && k == n;
}

static void one_file(const char *path)
{
    smf f;
    note_list ref = { 0 }, out = { 0 };
    uint16_t *ids = NULL;
    size_t n;

    if (smf_read_file(path, &f) < 0) {
        C.bad_files++;
        return;
    }
    C.files++;
    CHECK(perf_notes_from_midi(f.events, f.n_events, &ref) == 0);
    CHECK(perf_encode(V, ref.notes, ref.n, NULL, &ids, &n) == 0);
    C.tokens += n;
    if (!stream_tokens(&f, ids, n)) {
        C.stream_mismatch_files++;
        fprintf(stderr, "%s: the streaming encoder's tokens differ from the batch encoder's\n", path);
    }
    perf_decoder d;
    perf_decoder_init(&d, V, 1e6);
    for (size_t i = 0; i < n; i++)
        CHECK(perf_decoder_push(&d, ids[i], &out) == 0);
    CHECK(perf_decoder_finish(&d, &out) == 0);
    compare(path, &ref, &out);
    free(ids);
    note_list_free(&ref);
    note_list_free(&out);
    smf_free(&f);
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    size_t n = strlen(path);
    if (type == FTW_F && n > 4 && (strcmp(path + n - 4, ".mid") == 0 || strcmp(path + n - 5, ".midi") == 0))
        one_file(path);
    return 0;
}

int main(void)
{
    const char *dir = getenv("ASAP_DIR");
    V = vocab_default();
    if (!dir || nftw(dir, visit, 16, FTW_PHYS) != 0 || C.files + C.bad_files == 0) {
        printf("SKIP: no MIDI files under ASAP_DIR (%s)\n", dir ? dir : "unset");
        return 77;
    }
    size_t mism = C.missing + C.extra + C.onset + C.release + C.velocity;
    printf("files %zu (unreadable %zu), tokens %zu, notes %zu, matched within 10 ms %zu\n", C.files,
           C.bad_files, C.tokens, C.notes, C.matched);
    printf("mismatches: %zu (missing %zu, extra %zu, onset %zu, release %zu, velocity %zu)\n",
           mism, C.missing, C.extra, C.onset, C.release, C.velocity);
    printf("excluded by the encoding's definition: out of range %zu, struck twice in one "
           "step %zu, lengthened to one step with release error over 10 ms %zu (of %zu "
           "lengthened; worst %.1f ms, bound 15)\n", C.out_of_range, C.collapsed,
           C.lengthened_over, C.lengthened, C.max_lengthened_err * 1e3);
    printf("max onset error %.2f ms, max release error %.2f ms (other notes)\n",
           C.max_onset_err * 1e3, C.max_release_err * 1e3);
    printf("streaming encoder: %zu of %zu files differ from the batch encoder\n",
           C.stream_mismatch_files, C.files);
    CHECK_INT(C.bad_files, 0);
    CHECK_INT(mism, 0);
    CHECK_INT(C.stream_mismatch_files, 0);
    /* rounding to the nearest step: half a step at most */
    CHECK(C.max_onset_err <= 0.005 + 1e-6);
    CHECK(C.max_release_err <= 0.005 + 1e-6);
    CHECK_INT(C.matched + C.out_of_range + C.collapsed + C.lengthened_over, C.notes);
    return CHECK_DONE();
}

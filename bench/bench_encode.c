/* bench_encode.c: encodes one split of a corpus (ASAP's split.tsv) and prints the time spent
 * reading, parsing MIDI and encoding, and events per second. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/perf.h"
#include "midi/smf.h"
#include "util/clock.h"
#include "util/fileio.h"

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: bench_encode ROOT SPLIT.tsv [SPLIT]   (SPLIT default: train)\n"
                        "Encodes every file of that split with the default layout (mt310).\n");
        return 2;
    }
    const char *root = argv[1], *split = argc > 3 ? argv[3] : "train";
    uint8_t *tsv;
    size_t tsv_len;
    if (file_read_all(argv[2], &tsv, &tsv_len) < 0)
        return 1;
    char *text = realloc(tsv, tsv_len + 1);
    if (!text)
        return 1;
    text[tsv_len] = '\0';

    const vocab *v = vocab_default();
    double t_read = 0, t_parse = 0, t_notes = 0, t_encode = 0;
    size_t files = 0, events = 0, notes_total = 0, midi_events = 0, bytes = 0;
    char *save = NULL;
    int header = 1, status = 0;
    double t_start = clock_now_seconds();
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (header) {                           /* columns: split composer title file */
            header = 0;
            continue;
        }
        char *f[4];
        int nf = 0;
        for (char *p = line; nf < 4 && p; nf++) {
            f[nf] = p;
            p = strchr(p, '\t');
            if (p)
                *p++ = '\0';
        }
        if (nf < 4 || strcmp(f[0], split) != 0)
            continue;
        f[3][strcspn(f[3], "\r")] = '\0';
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, f[3]);

        double t0 = clock_now_seconds();
        uint8_t *data;
        size_t len;
        if (file_read_all(path, &data, &len) < 0) {
            status = 1;
            continue;
        }
        double t1 = clock_now_seconds();
        smf m;
        int rc = smf_read_mem(data, len, path, &m);
        free(data);
        if (rc < 0) {
            status = 1;
            continue;
        }
        double t2 = clock_now_seconds();
        note_list notes = { 0 };
        uint16_t *ids = NULL;
        size_t n = 0;
        rc = perf_notes_from_midi(m.events, m.n_events, &notes);
        double t3 = clock_now_seconds();
        if (rc == 0)
            rc = perf_encode(v, notes.notes, notes.n, NULL, &ids, &n);
        double t4 = clock_now_seconds();
        if (rc < 0)
            status = 1;
        t_read += t1 - t0;
        t_parse += t2 - t1;
        t_notes += t3 - t2;
        t_encode += t4 - t3;
        files++;
        bytes += len;
        midi_events += m.n_events;
        notes_total += notes.n;
        events += n;
        free(ids);
        note_list_free(&notes);
        smf_free(&m);
    }
    double total = clock_now_seconds() - t_start;
    free(text);
    printf("split %s: %zu files, %.1f MB of MIDI, %zu MIDI events, %zu notes, %zu performance events\n",
           split, files, bytes / 1e6, midi_events, notes_total, events);
    printf("read files     %7.3f s\n", t_read);
    printf("parse MIDI     %7.3f s  (%.1f M MIDI events/s)\n", t_parse,
           t_parse > 0 ? midi_events / t_parse / 1e6 : 0.0);
    printf("fold pedal     %7.3f s\n", t_notes);
    printf("encode         %7.3f s  (%.1f M events/s)\n", t_encode,
           t_encode > 0 ? events / t_encode / 1e6 : 0.0);
    printf("total          %7.3f s  (%.2f M events/s end to end; reference: a Python+mido "
           "encoder took 336 s)\n", total, total > 0 ? events / total / 1e6 : 0.0);
    return status;
}

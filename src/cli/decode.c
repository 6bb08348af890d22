/* decode.c: `continuo decode`: a token file (or ids written by hand) to a MIDI file. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "codec/perf.h"
#include "codec/tokfile.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "util/fileio.h"
#include "util/log.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: continuo decode IN.tok -o OUT.mid [options]\n"
        "       continuo decode IN.txt -o OUT.mid [options]\n"
        "\n"
        "Turns performance events back into a MIDI file (one track, channel 0).\n"
        "IN is a token file written by `continuo encode` (docs/TOKENS.md), or a\n"
        "text file of ids separated by spaces, commas or new lines: numbers, or\n"
        "names such as VELOCITY(20) NOTE_ON(60) TIME_SHIFT(50) NOTE_OFF(60)\n"
        "('#' starts a comment).  Any sequence decodes: a NOTE_OFF of a silent\n"
        "pitch is ignored, a re-struck pitch ends the old note, notes never\n"
        "released are cut at the maximum length.\n"
        "\n"
        "options:\n"
        "  -o, --output FILE         the MIDI file to write (all or nothing)\n"
        "  --index N                 which sequence of a token file (default 0)\n"
        "  --vocab NAME              layout of a text file: mt310 (default) or prnn388\n"
        "  --max-note-seconds S      cut notes longer than S seconds (default %g)\n"
        "  -q, --quiet               no summary line\n"
        "  -h, --help                this help\n", PERF_MAX_NOTE_S_DEFAULT);
}

/* Ids from the text form; IDS is a new array. */
static int parse_text(const char *path, const char *text, size_t len, const vocab *v,
                      uint16_t **ids, size_t *n)
{
    size_t cap = 1024, k = 0;
    uint16_t *out = malloc(cap * sizeof *out);
    int line = 1;

    if (!out) {
        log_error("%s: out of memory", path);
        return -1;
    }
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n')
            line++;
        if (c == '#') {
            while (i < len && text[i] != '\n')
                i++;
            continue;
        }
        if (isspace(c) || c == ',') {
            i++;
            continue;
        }
        /* A word runs to the next separator, but "NOTE_ON( 60 )" is one. */
        char word[64];
        size_t w = 0;
        int depth = 0;
        while (i < len && (depth > 0 || !(isspace((unsigned char)text[i]) || text[i] == ','
                                           || text[i] == '#'))) {
            if (text[i] == '(')
                depth++;
            else if (text[i] == ')')
                depth--;
            else if (text[i] == '\n')
                break;
            if (w + 1 < sizeof word)
                word[w++] = text[i];
            i++;
        }
        word[w] = '\0';
        int id = w + 1 < sizeof word ? vocab_parse(v, word) : -1;
        if (id < 0) {
            log_error("%s:%d: '%s' is not an event of %s (numbers 0..%d, or names like "
                      "NOTE_ON(60), TIME_SHIFT(10), VELOCITY(20))", path, line, word, v->name,
                      v->size - 1);
            free(out);
            return -1;
        }
        if (k == cap) {
            cap *= 2;
            uint16_t *p = realloc(out, cap * sizeof *p);
            if (!p) {
                log_error("%s: out of memory", path);
                free(out);
                return -1;
            }
            out = p;
        }
        out[k++] = (uint16_t)id;
    }
    *ids = out;
    *n = k;
    return 0;
}

int cmd_decode(int argc, char **argv)
{
    const char *input = NULL, *output = NULL, *vocab_name = NULL;
    double max_note_s = PERF_MAX_NOTE_S_DEFAULT;
    long index = 0;
    int quiet = 0, status = 1;
    uint8_t *data = NULL;
    size_t len = 0;
    tokfile tf = { 0 };
    uint16_t *text_ids = NULL;
    note_list notes = { 0 };
    smf_event *ev = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
            continue;
        }
        if (a[0] != '-') {
            if (input) {
                fprintf(stderr, "continuo decode: one input file only ('%s' and '%s')\n", input, a);
                return 2;
            }
            input = a;
            continue;
        }
        if (!val) {
            fprintf(stderr, "continuo decode: %s needs a value (see --help)\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            output = val;
        } else if (strcmp(a, "--vocab") == 0) {
            vocab_name = val;
        } else if (strcmp(a, "--index") == 0) {
            if (cli_integer("decode", a, val, 0, 0x7fffffffL, &index) < 0)
                return 2;
        } else if (strcmp(a, "--max-note-seconds") == 0) {
            if (cli_number("decode", a, val, 0.001, 1e6, &max_note_s) < 0)
                return 2;
        } else {
            fprintf(stderr, "continuo decode: unknown option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (!input || !output) {
        fprintf(stderr, "continuo decode: give an input file and -o OUT.mid (see --help)\n");
        return 2;
    }
    const vocab *v = vocab_default();
    if (vocab_name && !(v = vocab_find(vocab_name))) {
        fprintf(stderr, "continuo decode: unknown vocabulary '%s' (mt310 or prnn388)\n", vocab_name);
        return 2;
    }

    const uint16_t *ids;
    size_t n_ids;
    const char *source;
    if (file_read_all(input, &data, &len) < 0)
        goto done;
    if (len >= 4 && memcmp(data, "CTOK", 4) == 0) {
        int rc = tokfile_read_mem(data, len, input, &tf);
        free(data);             /* tf holds its own copy */
        data = NULL;
        if (rc < 0)
            goto done;
        const vocab *fv = vocab_find(tf.vocab_name);
        if (!fv)
            fv = vocab_by_size((int)tf.vocab_size);
        if (!fv || fv->size != (int)tf.vocab_size) {
            log_error("%s: unknown vocabulary '%s' of %u ids", input, tf.vocab_name, tf.vocab_size);
            goto done;
        }
        if (vocab_name && fv != v) {
            log_error("%s: the file uses %s, not %s", input, fv->name, v->name);
            goto done;
        }
        v = fv;
        if ((uint64_t)index >= tf.n_seqs) {
            log_error("%s: no sequence %ld: the file has %u (0..%ld)", input, index, tf.n_seqs,
                      (long)tf.n_seqs - 1);
            goto done;
        }
        ids = tf.tokens + tf.starts[index];
        n_ids = (size_t)(tf.starts[index + 1] - tf.starts[index]);
        source = tf.sources[index];
    } else {
        if (index != 0) {
            log_error("%s: a text file holds one sequence (--index 0)", input);
            goto done;
        }
        if (parse_text(input, (const char *)data, len, v, &text_ids, &n_ids) < 0)
            goto done;
        ids = text_ids;
        source = input;
    }

    perf_decoder d;
    perf_decoder_init(&d, v, max_note_s);
    for (size_t i = 0; i < n_ids; i++)
        if (perf_decoder_push(&d, ids[i], &notes) < 0)
            goto done;
    if (perf_decoder_finish(&d, &notes) < 0 || note_list_sort(&notes) < 0)
        goto done;
    size_t n_ev;
    if (perf_notes_to_events(notes.notes, notes.n, &ev, &n_ev) < 0)
        goto done;
    smf_track_out track = { .name = source, .events = ev, .n_events = n_ev };
    if (smf_write_file(output, &track, 1) < 0)
        goto done;
    if (!quiet) {
        printf("decoded %zu ids (%s) to %zu notes, %.2f s, in %s\n", n_ids, v->name, notes.n,
               d.time, output);
        if (d.n_ignored || d.n_zero || d.n_capped)
            printf("ignored %zu ids (PAD, NOTE_OFF of a silent pitch); dropped %zu zero-length "
                   "notes; cut %zu notes at %g s\n", d.n_ignored, d.n_zero, d.n_capped, max_note_s);
    }
    status = 0;
done:
    free(data);
    free(text_ids);
    free(ev);
    note_list_free(&notes);
    tokfile_free(&tf);
    return status;
}

/* decode.c: `continuo decode`: a token file (or ids written by hand) to a MIDI file. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "codec/perf.h"
#include "codec/tokfile.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "util/fileio.h"
#include "util/log.h"

/* Room for one word of the text form, its NUL included. */
#define WORD_ROOM 64

/* The word at TEXT[*I] into WORD (room for WORD_ROOM), *I past it; returns
 * its length, at most WORD_ROOM - 1 (a longer word is cut there).  A word
 * runs to the next separator, but "NOTE_ON( 60 )" is one. */
static size_t read_word(const char *text, size_t len, size_t *i, char *word)
{
    size_t w = 0;
    int depth = 0;
    while (*i < len && (depth > 0 || !(isspace((unsigned char)text[*i]) || text[*i] == ','
                                        || text[*i] == '#'))) {
        if (text[*i] == '(')
            depth++;
        else if (text[*i] == ')')
            depth--;
        else if (text[*i] == '\n')
            break;
        if (w + 1 < WORD_ROOM)
            word[w++] = text[*i];
        (*i)++;
    }
    word[w] = '\0';
    return w;
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
        char word[WORD_ROOM];
        size_t w = read_word(text, len, &i, word);
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

static const char decode_usage[] =
    "usage: continuo decode IN.tok -o OUT.mid [options]\n"
    "       continuo decode IN.txt -o OUT.mid [options]\n"
    "\n"
    "Turns performance events back into a MIDI file (one track, channel 0).\n"
    "IN is a token file written by `continuo encode` (docs/TOKENS.md), or a\n"
    "text file of ids separated by spaces, commas or new lines: numbers, or\n"
    "names such as VELOCITY(20) NOTE_ON(60) TIME_SHIFT(50) NOTE_OFF(60)\n"
    "('#' starts a comment).  Any sequence decodes: a NOTE_OFF of a silent\n"
    "pitch is ignored, a re-struck pitch ends the old note, notes never\n"
    "released are cut at the maximum length.\n";

/* What the command line asks for. */
typedef struct decode_args {
    const char *input, *output, *vocab_name;
    double max_note_s;
    int index, quiet;
    const vocab *v;
} decode_args;

/* The ids to decode: a sequence of a token file, or read from text. */
typedef struct decode_source {
    uint8_t *data;          /* the file as read (text), owned */
    tokfile tf;             /* a token file, owned */
    uint16_t *text_ids;     /* ids parsed from text, owned */
    const uint16_t *ids;    /* the sequence: into tf or text_ids */
    size_t n_ids;
    const char *name;       /* the track's name */
} decode_source;

/* The options into A; CLI_GO_ON, or the exit status. */
static int parse_args(int argc, char **argv, decode_args *a)
{
    char max_note_help[64];
    snprintf(max_note_help, sizeof max_note_help, "cut notes longer than S seconds (default %g)",
             PERF_MAX_NOTE_S_DEFAULT);
    *a = (decode_args){ .max_note_s = PERF_MAX_NOTE_S_DEFAULT };
    const cli_option options[] = {
        CLI_FILE("output", 'o', "FILE", &a->output, "the MIDI file to write (all or nothing)"),
        CLI_INT("index", 0, "N", 0, 0x7fffffff, &a->index, "which sequence of a token file (default 0)"),
        CLI_STRING("vocab", 0, "NAME", &a->vocab_name, "layout of a text file: mt310 (default) or prnn388"),
        CLI_DOUBLE("max-note-seconds", 0, "S", 0.001, 1e6, &a->max_note_s, max_note_help),
        CLI_OPT_QUIET(&a->quiet),
        CLI_OPT_HELP,
        CLI_END
    };
    const cli_spec spec = { .name = "decode", .usage = decode_usage, .options = options,
                            .max_operands = 1 };
    int n_in;
    int rc = cli_parse(&spec, argc, argv, &n_in);
    if (rc != CLI_GO_ON)
        return rc;
    a->input = n_in ? argv[1] : NULL;
    if (!a->input || !a->output) {
        fprintf(stderr, "continuo decode: give an input file and -o OUT.mid (see --help)\n");
        return 2;
    }
    a->v = vocab_default();
    if (a->vocab_name && !(a->v = vocab_find(a->vocab_name))) {
        fprintf(stderr, "continuo decode: unknown vocabulary '%s' (mt310 or prnn388)\n", a->vocab_name);
        return 2;
    }
    return CLI_GO_ON;
}

/* Sequence A->index of the token file in S->data (LEN bytes); A->v becomes its layout. */
static int source_from_tokfile(decode_args *a, decode_source *s, size_t len)
{
    int rc = tokfile_read_mem(s->data, len, a->input, &s->tf);
    free(s->data);             /* tf holds its own copy */
    s->data = NULL;
    if (rc < 0)
        return -1;
    const tokfile *tf = &s->tf;
    const vocab *fv = vocab_find(tf->vocab_name);
    if (!fv)
        fv = vocab_by_size((int)tf->vocab_size);
    if (!fv || fv->size != (int)tf->vocab_size) {
        log_error("%s: unknown vocabulary '%s' of %u ids", a->input, tf->vocab_name, tf->vocab_size);
        return -1;
    }
    if (a->vocab_name && fv != a->v) {
        log_error("%s: the file uses %s, not %s", a->input, fv->name, a->v->name);
        return -1;
    }
    a->v = fv;
    if ((uint64_t)a->index >= tf->n_seqs) {
        log_error("%s: no sequence %d: the file has %u (0..%ld)", a->input, a->index, tf->n_seqs,
                  (long)tf->n_seqs - 1);
        return -1;
    }
    s->ids = tf->tokens + tf->starts[a->index];
    s->n_ids = (size_t)(tf->starts[a->index + 1] - tf->starts[a->index]);
    s->name = tf->sources[a->index];
    return 0;
}

/* The ids of A->input, a token file or text; 0 or -1 (logged). */
static int read_source(decode_args *a, decode_source *s)
{
    size_t len;
    if (file_read_all(a->input, &s->data, &len) < 0)
        return -1;
    if (len >= 4 && memcmp(s->data, "CTOK", 4) == 0)
        return source_from_tokfile(a, s, len);
    if (a->index != 0) {
        log_error("%s: a text file holds one sequence (--index 0)", a->input);
        return -1;
    }
    if (parse_text(a->input, (const char *)s->data, len, a->v, &s->text_ids, &s->n_ids) < 0)
        return -1;
    s->ids = s->text_ids;
    s->name = a->input;
    return 0;
}

/* The ids decoded to A->output; prints the summary unless quiet. */
static int write_notes(const decode_args *a, const decode_source *src)
{
    note_list notes = { 0 };
    smf_event *ev = NULL;
    size_t n_ev;
    perf_decoder d;
    int rc = -1;
    perf_decoder_init(&d, a->v, a->max_note_s);
    for (size_t i = 0; i < src->n_ids; i++)
        if (perf_decoder_push(&d, src->ids[i], &notes) < 0)
            goto done;
    if (perf_decoder_finish(&d, &notes) < 0 || note_list_sort(&notes) < 0
        || perf_notes_to_events(notes.notes, notes.n, &ev, &n_ev) < 0)
        goto done;
    smf_track_out track = { .name = src->name, .events = ev, .n_events = n_ev };
    if (smf_write_file(a->output, &track, 1) < 0)
        goto done;
    if (!a->quiet) {
        printf("decoded %zu ids (%s) to %zu notes, %.2f s, in %s\n", src->n_ids, a->v->name, notes.n,
               d.time, a->output);
        if (d.n_ignored || d.n_zero || d.n_capped)
            printf("ignored %zu ids (PAD, NOTE_OFF of a silent pitch); dropped %zu zero-length "
                   "notes; cut %zu notes at %g s\n", d.n_ignored, d.n_zero, d.n_capped, a->max_note_s);
    }
    rc = 0;
done:
    free(ev);
    note_list_free(&notes);
    return rc;
}

int cmd_decode(int argc, char **argv)
{
    decode_args a;
    decode_source src = { 0 };
    int status = parse_args(argc, argv, &a);
    if (status != CLI_GO_ON)
        return status;
    status = read_source(&a, &src) == 0 && write_notes(&a, &src) == 0 ? 0 : 1;
    free(src.data);
    free(src.text_ids);
    tokfile_free(&src.tf);
    return status;
}

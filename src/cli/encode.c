/* encode.c: `continuo encode`: MIDI files (one, a list, or a split file) to a token file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "codec/perf.h"
#include "codec/tokfile.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "util/clock.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/progress.h"

/* The inputs: path to read, and the name stored in the token file. */
typedef struct input_list {
    char **path;
    char **name;
    size_t n, cap;
} input_list;

static int inputs_add(input_list *l, const char *path, const char *name)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 256;
        char **p = realloc(l->path, nc * sizeof *p);
        if (p)
            l->path = p;
        char **q = realloc(l->name, nc * sizeof *q);
        if (q)
            l->name = q;
        if (!p || !q) {
            log_error("encode: out of memory");
            return -1;
        }
        l->cap = nc;
    }
    l->path[l->n] = strdup(path);
    l->name[l->n] = strdup(name);
    if (!l->path[l->n] || !l->name[l->n]) {
        free(l->path[l->n]);
        free(l->name[l->n]);
        log_error("encode: out of memory");
        return -1;
    }
    l->n++;
    return 0;
}

static void inputs_free(input_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->path[i]);
        free(l->name[i]);
    }
    free(l->path);
    free(l->name);
}

/* The next line of the text at *CURSOR (modified in place: the newline
 * becomes NUL), without trailing blanks and '\r'; NULL at the end. */
static char *next_line(char **cursor)
{
    char *s = *cursor;
    if (!s || !*s)
        return NULL;
    char *e = strchr(s, '\n');
    if (e) {
        *e = '\0';
        *cursor = e + 1;
    } else {
        *cursor = s + strlen(s);
    }
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

static int read_text(const char *path, char **text)
{
    uint8_t *data;
    size_t len;
    if (file_read_all(path, &data, &len) < 0)
        return -1;
    char *t = realloc(data, len + 1);
    if (!t) {
        free(data);
        log_error("%s: out of memory", path);
        return -1;
    }
    t[len] = '\0';
    if (strlen(t) != len) {
        log_error("%s: byte %zu: a NUL byte in a text file", path, strlen(t));
        free(t);
        return -1;
    }
    *text = t;
    return 0;
}

static int read_list(const char *path, input_list *l)
{
    char *text, *cur, *line;
    if (read_text(path, &text) < 0)
        return -1;
    cur = text;
    int rc = 0;
    while (rc == 0 && (line = next_line(&cur)) != NULL) {
        while (*line == ' ' || *line == '\t')
            line++;
        if (*line && *line != '#')
            rc = inputs_add(l, line, line);
    }
    free(text);
    return rc;
}

/* Cuts LINE in place at its tabs into FIELD (room for 64); returns how many. */
static int split_fields(char *line, char **field)
{
    int nf = 0;
    for (char *f = line; nf < 64;) {
        field[nf++] = f;
        char *tab = strchr(f, '\t');
        if (!tab)
            break;
        *tab = '\0';
        f = tab + 1;
    }
    return nf;
}

/* The header row: where the 'split' and 'file' columns are; -1 (logged)
 * when it lacks one. */
static int find_columns(const char *path, int lineno, char **field, int nf, int *col_split,
                        int *col_file)
{
    for (int i = 0; i < nf; i++) {
        if (strcmp(field[i], "split") == 0)
            *col_split = i;
        else if (strcmp(field[i], "file") == 0)
            *col_file = i;
    }
    if (*col_split < 0 || *col_file < 0) {
        log_error("%s:%d: the header names no 'split' and 'file' columns", path, lineno);
        return -1;
    }
    return 0;
}

/* Rows of an ASAP-style split file: a header naming the columns (split and
 * file are needed), then tab-separated rows. */
static int read_split(const char *path, const char *split, const char *root, input_list *l)
{
    char *text, *cur, *line;
    int col_split = -1, col_file = -1, lineno = 0, rc = 0;
    size_t before = l->n;

    if (read_text(path, &text) < 0)
        return -1;
    cur = text;
    while (rc == 0 && (line = next_line(&cur)) != NULL) {
        char *field[64];
        lineno++;
        if (!*line)
            continue;
        int nf = split_fields(line, field);
        if (col_file < 0) {                     /* the header */
            rc = find_columns(path, lineno, field, nf, &col_split, &col_file);
            continue;
        }
        if (nf <= col_split || nf <= col_file) {
            log_error("%s:%d: %d columns, expected at least %d", path, lineno, nf,
                      (col_split > col_file ? col_split : col_file) + 1);
            rc = -1;
            break;
        }
        if (split && strcmp(field[col_split], split) != 0)
            continue;
        size_t n = strlen(root) + strlen(field[col_file]) + 2;
        char *full = malloc(n);
        if (!full) {
            log_error("encode: out of memory");
            rc = -1;
            break;
        }
        snprintf(full, n, "%s/%s", root, field[col_file]);
        rc = inputs_add(l, full, field[col_file]);
        free(full);
    }
    if (rc == 0 && col_file < 0) {
        log_error("%s: empty split file", path);
        rc = -1;
    }
    if (rc == 0 && split && l->n == before) {
        log_error("%s: no rows of split '%s'", path, split);
        rc = -1;
    }
    free(text);
    return rc;
}

static const char encode_usage[] =
    "usage: continuo encode IN.mid... -o OUT.tok [options]\n"
    "       continuo encode --list FILES.txt -o OUT.tok [options]\n"
    "       continuo encode --split-file split.tsv --split train -o OUT.tok [--root DIR]\n"
    "\n"
    "Encodes MIDI performances as performance events (docs/TOKENS.md): sustain\n"
    "pedal folded into note lengths, 10 ms time steps, 32 velocity bins.  All\n"
    "files go into one token file, one sequence per file.\n";

/* What the command line asks for. */
typedef struct encode_args {
    const char *output, *vocab_name, *list, *split_file, *split, *root;
    int skip_bad, quiet;
    encode_opts opt;
    const vocab *v;
    input_list in;
    char *root_buf;     /* the split file's folder when no --root: owned */
} encode_args;

/* Totals over the files encoded, for the summary line. */
typedef struct encode_totals {
    size_t n_files, n_bad, n_events;
    perf_encode_info info;
    double seconds;
} encode_totals;

/* The options into A, the operands into A->in; CLI_GO_ON, or the exit status. */
static int parse_args(int argc, char **argv, encode_args *a)
{
    *a = (encode_args){ .vocab_name = "mt310", .opt = { .stretch = 1.0 } };
    const cli_option options[] = {
        CLI_FILE("output", 'o', "FILE", &a->output, "the token file to write (all or nothing; '-' = stdout)"),
        CLI_STRING("vocab", 0, "NAME", &a->vocab_name, "mt310 (default: Music Transformer, 310 ids) or prnn388"),
        CLI_DOUBLE("stretch", 0, "F", 0.1, 10, &a->opt.stretch,
                   "multiply times by F before quantizing (augmentation), default 1"),
        CLI_INT("transpose", 0, "N", -127, 127, &a->opt.transpose,
                "shift pitches by N semitones; notes leaving the layout's\n"
                "range are dropped and counted"),
        CLI_FLAG("eos", 0, &a->opt.add_eos, "end each sequence with EOS (layouts that have it)"),
        CLI_FILE("list", 0, "FILE", &a->list, "read input paths from FILE, one per line ('#' comments)"),
        CLI_FILE("split-file", 0, "TSV", &a->split_file,
                 "inputs from a split file with columns split and file\n"
                 "(ASAP's split.tsv; file is relative to --root)"),
        CLI_STRING("split", 0, "NAME", &a->split, "only the rows of that split (train, valid, ...)"),
        CLI_FILE("root", 0, "DIR", &a->root,
                 "folder the split file's paths are relative to\n"
                 "(default: the split file's folder)"),
        CLI_FLAG("skip-bad", 0, &a->skip_bad,
                 "warn about a bad MIDI file and go on (default: error,\n"
                 "exit 1, no output file)"),
        CLI_OPT_QUIET(&a->quiet),
        CLI_OPT_HELP,
        CLI_END
    };
    const cli_spec spec = { .name = "encode", .usage = encode_usage, .options = options,
                            .max_operands = CLI_MANY };
    int n_in;
    int rc = cli_parse(&spec, argc, argv, &n_in);
    if (rc != CLI_GO_ON)
        return rc;
    if (!(a->v = vocab_find(a->vocab_name))) {
        fprintf(stderr, "continuo encode: unknown vocabulary '%s' (mt310 or prnn388)\n", a->vocab_name);
        return 2;
    }
    if (!a->output) {
        fprintf(stderr, "continuo encode: no output file: give -o OUT.tok (see --help)\n");
        return 2;
    }
    if ((a->split || a->root) && !a->split_file) {
        fprintf(stderr, "continuo encode: --split and --root go with --split-file\n");
        return 2;
    }
    for (int i = 1; i <= n_in; i++)
        if (inputs_add(&a->in, argv[i], argv[i]) < 0)
            return 1;
    return CLI_GO_ON;
}

/* The files named by --list and --split-file, after the operands; 0, 1 (a
 * file could not be read) or 2 (no input at all). */
static int gather_inputs(encode_args *a)
{
    if (a->list && read_list(a->list, &a->in) < 0)
        return 1;
    if (a->split_file) {
        if (!a->root) {
            if (!(a->root_buf = strdup(a->split_file)))
                return 1;
            char *slash = strrchr(a->root_buf, '/');
            if (slash)
                *slash = '\0';
            else
                strcpy(a->root_buf, ".");
            a->root = a->root_buf;
        }
        if (read_split(a->split_file, a->split, a->root, &a->in) < 0)
            return 1;
    }
    if (a->in.n == 0) {
        fprintf(stderr, "continuo encode: no input files (see --help)\n");
        return 2;
    }
    return 0;
}

/* Input I into W; 0, 1 when it is a bad MIDI file (to skip), -1 on failure. */
static int encode_one(const encode_args *a, size_t i, tokfile_writer *w, encode_totals *t)
{
    smf f;
    note_list notes = { 0 };
    uint16_t *ids = NULL;
    size_t nid = 0;
    perf_encode_info info;

    if (smf_read_file(a->in.path[i], &f) < 0)
        return 1;
    int rc = perf_notes_from_midi(f.events, f.n_events, &notes);
    smf_free(&f);
    if (rc == 0)
        rc = perf_encode_ex(a->v, notes.notes, notes.n, &a->opt, &ids, &nid, &info);
    if (rc == 0)
        rc = tokfile_writer_add(w, ids, nid, a->in.name[i]);
    note_list_free(&notes);
    free(ids);
    if (rc < 0)
        return -1;
    if (info.n_notes == 0)
        log_warn("%s: no notes to encode", a->in.path[i]);
    t->n_files++;
    t->n_events += nid;
    t->info.n_notes += info.n_notes;
    t->info.n_out_of_range += info.n_out_of_range;
    t->info.n_collapsed += info.n_collapsed;
    t->info.n_lengthened += info.n_lengthened;
    return 0;
}

/* Every input into W, with a progress bar; 0 or -1 (logged). */
static int encode_all(const encode_args *a, tokfile_writer *w, encode_totals *t)
{
    progress pg;
    int rc = 0;
    progress_begin(&pg, "encoding", a->in.n);
    for (size_t i = 0; rc == 0 && i < a->in.n; i++) {
        progress_update(&pg, i, a->in.name[i]);
        int one = encode_one(a, i, w, t);
        if (one == 1 && a->skip_bad) {
            log_warn("encode: skipping %s", a->in.path[i]);
            t->n_bad++;
        } else if (one == 1) {
            progress_end(&pg);
            log_error("encode: stopped at %s (bad MIDI file); no output written "
                      "(--skip-bad goes on without it)", a->in.path[i]);
            return -1;
        } else {
            rc = one;
        }
    }
    if (rc == 0)
        progress_update(&pg, a->in.n, NULL);
    progress_end(&pg);
    return rc;
}

static void print_summary(const encode_args *a, const encode_totals *t)
{
    FILE *fp = strcmp(a->output, "-") == 0 ? stderr : stdout;
    fprintf(fp, "encoded %zu file%s (%s): %zu notes, %zu events in %.2f s (%.2f M events/s)\n",
            t->n_files, t->n_files == 1 ? "" : "s", a->v->name, t->info.n_notes, t->n_events, t->seconds,
            t->seconds > 0 ? (double)t->n_events / t->seconds / 1e6 : 0.0);
    if (t->n_bad)
        fprintf(fp, "skipped %zu bad file%s\n", t->n_bad, t->n_bad == 1 ? "" : "s");
    if (t->info.n_out_of_range || t->info.n_collapsed || t->info.n_lengthened)
        fprintf(fp, "notes dropped: %zu out of range, %zu struck twice within 10 ms; "
                "%zu shorter than 10 ms given one step\n",
                t->info.n_out_of_range, t->info.n_collapsed, t->info.n_lengthened);
}

int cmd_encode(int argc, char **argv)
{
    encode_args a;
    encode_totals t = { 0 };
    tokfile_writer w;
    int status = parse_args(argc, argv, &a);
    if (status != CLI_GO_ON || (status = gather_inputs(&a)) != 0)
        goto done;
    status = 1;
    if (tokfile_writer_init(&w, a.v->name, (uint32_t)a.v->size) < 0)
        goto done;
    double t0 = clock_now_seconds();
    if (encode_all(&a, &w, &t) == 0 && tokfile_writer_save(&w, a.output) == 0) {
        t.seconds = clock_now_seconds() - t0;
        if (!a.quiet)
            print_summary(&a, &t);
        status = 0;
    }
    tokfile_writer_free(&w);
done:
    inputs_free(&a.in);
    free(a.root_buf);
    return status;
}

/* encode.c: `continuo encode`: MIDI files (one, a list, or a split file) to a token file. */
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
#include "util/progress.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: continuo encode IN.mid... -o OUT.tok [options]\n"
        "       continuo encode --list FILES.txt -o OUT.tok [options]\n"
        "       continuo encode --split-file split.tsv --split train -o OUT.tok [--root DIR]\n"
        "\n"
        "Encodes MIDI performances as performance events (docs/TOKENS.md): sustain\n"
        "pedal folded into note lengths, 10 ms time steps, 32 velocity bins.  All\n"
        "files go into one token file, one sequence per file.\n"
        "\n"
        "options:\n"
        "  -o, --output FILE    the token file to write (all or nothing; '-' = stdout)\n"
        "  --vocab NAME         mt310 (default: Music Transformer, 310 ids) or prnn388\n"
        "  --stretch F          multiply times by F before quantizing (augmentation), default 1\n"
        "  --transpose N        shift pitches by N semitones; notes leaving the layout's\n"
        "                       range are dropped and counted\n"
        "  --eos                end each sequence with EOS (layouts that have it)\n"
        "  --list FILE          read input paths from FILE, one per line ('#' comments)\n"
        "  --split-file TSV     inputs from a split file with columns split and file\n"
        "                       (ASAP's split.tsv; file is relative to --root)\n"
        "  --split NAME         only the rows of that split (train, valid, ...)\n"
        "  --root DIR           folder the split file's paths are relative to\n"
        "                       (default: the split file's folder)\n"
        "  --skip-bad           warn about a bad MIDI file and go on (default: error,\n"
        "                       exit 1, no output file)\n"
        "  -q, --quiet          no summary line\n"
        "  -h, --help           this help\n");
}

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
        int nf = 0;
        lineno++;
        if (!*line)
            continue;
        for (char *f = line; nf < 64;) {
            field[nf++] = f;
            char *tab = strchr(f, '\t');
            if (!tab)
                break;
            *tab = '\0';
            f = tab + 1;
        }
        if (col_file < 0) {                     /* the header */
            for (int i = 0; i < nf; i++) {
                if (strcmp(field[i], "split") == 0)
                    col_split = i;
                else if (strcmp(field[i], "file") == 0)
                    col_file = i;
            }
            if (col_split < 0 || col_file < 0) {
                log_error("%s:%d: the header names no 'split' and 'file' columns", path, lineno);
                rc = -1;
            }
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

int cmd_encode(int argc, char **argv)
{
    const char *output = NULL, *vocab_name = "mt310", *list = NULL;
    const char *split_file = NULL, *split = NULL, *root = NULL;
    int skip_bad = 0, quiet = 0, status = 1;
    encode_opts opt = { .stretch = 1.0, .transpose = 0, .add_eos = 0 };
    input_list in = { 0 };
    tokfile_writer w;
    int have_writer = 0;
    char *root_buf = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            usage(stdout);
            status = 0;
            goto done;
        }
        if (strcmp(a, "--skip-bad") == 0) {
            skip_bad = 1;
            continue;
        }
        if (strcmp(a, "--eos") == 0) {
            opt.add_eos = 1;
            continue;
        }
        if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
            continue;
        }
        if (a[0] != '-') {
            if (inputs_add(&in, a, a) < 0)
                goto done;
            continue;
        }
        if (!val) {
            fprintf(stderr, "continuo encode: %s needs a value (see --help)\n", a);
            status = 2;
            goto done;
        }
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            output = val;
        } else if (strcmp(a, "--vocab") == 0) {
            vocab_name = val;
        } else if (strcmp(a, "--stretch") == 0) {
            if (cli_number("encode", a, val, 0.1, 10, &opt.stretch) < 0) {
                status = 2;
                goto done;
            }
        } else if (strcmp(a, "--transpose") == 0) {
            long t;
            if (cli_integer("encode", a, val, -127, 127, &t) < 0) {
                status = 2;
                goto done;
            }
            opt.transpose = (int)t;
        } else if (strcmp(a, "--list") == 0) {
            list = val;
        } else if (strcmp(a, "--split-file") == 0) {
            split_file = val;
        } else if (strcmp(a, "--split") == 0) {
            split = val;
        } else if (strcmp(a, "--root") == 0) {
            root = val;
        } else {
            fprintf(stderr, "continuo encode: unknown option '%s' (see --help)\n", a);
            status = 2;
            goto done;
        }
        i++;
    }
    const vocab *v = vocab_find(vocab_name);
    if (!v) {
        fprintf(stderr, "continuo encode: unknown vocabulary '%s' (mt310 or prnn388)\n", vocab_name);
        status = 2;
        goto done;
    }
    if (!output) {
        fprintf(stderr, "continuo encode: no output file: give -o OUT.tok (see --help)\n");
        status = 2;
        goto done;
    }
    if ((split || root) && !split_file) {
        fprintf(stderr, "continuo encode: --split and --root go with --split-file\n");
        status = 2;
        goto done;
    }
    if (list && read_list(list, &in) < 0)
        goto done;
    if (split_file) {
        if (!root) {
            root_buf = strdup(split_file);
            if (!root_buf)
                goto done;
            char *slash = strrchr(root_buf, '/');
            if (slash)
                *slash = '\0';
            else
                strcpy(root_buf, ".");
            root = root_buf;
        }
        if (read_split(split_file, split, root, &in) < 0)
            goto done;
    }
    if (in.n == 0) {
        fprintf(stderr, "continuo encode: no input files (see --help)\n");
        status = 2;
        goto done;
    }

    if (tokfile_writer_init(&w, v->name, (uint32_t)v->size) < 0)
        goto done;
    have_writer = 1;
    progress pg;
    size_t n_files = 0, n_bad = 0, n_events = 0;
    perf_encode_info total = { 0 };
    double t0 = now_seconds();
    progress_begin(&pg, "encoding", in.n);
    for (size_t i = 0; i < in.n; i++) {
        smf f;
        note_list notes = { 0 };
        uint16_t *ids = NULL;
        size_t nid = 0;
        perf_encode_info info;

        progress_update(&pg, i, in.name[i]);
        if (smf_read_file(in.path[i], &f) < 0) {
            if (!skip_bad) {
                progress_end(&pg);
                log_error("encode: stopped at %s (bad MIDI file); no output written "
                          "(--skip-bad goes on without it)", in.path[i]);
                goto done;
            }
            log_warn("encode: skipping %s", in.path[i]);
            n_bad++;
            continue;
        }
        int rc = perf_notes_from_midi(f.events, f.n_events, &notes);
        smf_free(&f);
        if (rc == 0)
            rc = perf_encode_ex(v, notes.notes, notes.n, &opt, &ids, &nid, &info);
        if (rc == 0)
            rc = tokfile_writer_add(&w, ids, nid, in.name[i]);
        note_list_free(&notes);
        free(ids);
        if (rc < 0) {
            progress_end(&pg);
            goto done;
        }
        if (info.n_notes == 0)
            log_warn("%s: no notes to encode", in.path[i]);
        n_files++;
        n_events += nid;
        total.n_notes += info.n_notes;
        total.n_out_of_range += info.n_out_of_range;
        total.n_collapsed += info.n_collapsed;
        total.n_lengthened += info.n_lengthened;
    }
    progress_update(&pg, in.n, NULL);
    progress_end(&pg);
    if (tokfile_writer_save(&w, output) < 0)
        goto done;
    double secs = now_seconds() - t0;
    if (!quiet) {
        FILE *fp = strcmp(output, "-") == 0 ? stderr : stdout;
        fprintf(fp, "encoded %zu file%s (%s): %zu notes, %zu events in %.2f s (%.2f M events/s)\n",
                n_files, n_files == 1 ? "" : "s", v->name, total.n_notes, n_events, secs,
                secs > 0 ? (double)n_events / secs / 1e6 : 0.0);
        if (n_bad)
            fprintf(fp, "skipped %zu bad file%s\n", n_bad, n_bad == 1 ? "" : "s");
        if (total.n_out_of_range || total.n_collapsed || total.n_lengthened)
            fprintf(fp, "notes dropped: %zu out of range, %zu struck twice within 10 ms; "
                    "%zu shorter than 10 ms given one step\n",
                    total.n_out_of_range, total.n_collapsed, total.n_lengthened);
    }
    status = 0;
done:
    if (have_writer)
        tokfile_writer_free(&w);
    inputs_free(&in);
    free(root_buf);
    return status;
}

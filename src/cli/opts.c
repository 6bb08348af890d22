/* opts.c: the subcommands' option parser and help, driven by their option tables (opts.h). */
#include "cli/opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/choices.h"

#define HELP_COLUMN_MAX 24      /* longer option names put their help after two spaces */

static int takes_value(const cli_option *o)
{
    return o->kind != CLI_KIND_FLAG && o->kind != CLI_KIND_HELP;
}

/* The row of "--NAME" (LEN characters of NAME) or of "-L". */
static const cli_option *find_long(const cli_option *opts, const char *name, size_t len)
{
    for (const cli_option *o = opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

static const cli_option *find_letter(const cli_option *opts, char letter)
{
    for (const cli_option *o = opts; o->name; o++)
        if (o->letter && o->letter == letter)
            return o;
    return NULL;
}

/* "a, b or c" from "a|b|c", for messages. */
static void print_choices(FILE *fp, const char *choices)
{
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        fprintf(fp, "%.*s", (int)len, p);
        if (!bar)
            break;
        p = bar + 1;
        fputs(strchr(p, '|') ? ", " : " or ", fp);
    }
}

static int parse_number(const cli_option *o, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < o->min || v > o->max)
        return -1;
    *out = v;
    return 0;
}

static int parse_whole(const cli_option *o, const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || (double)v < o->min || (double)v > o->max)
        return -1;
    *out = v;
    return 0;
}

/* store's two kinds that are more than a number or a word: a value type's
 * (its parse says what was wrong), and a repeatable option. */
static int store_more(const cli_spec *spec, const cli_option *o, const char *spelled, const char *value)
{
    char why[512];
    if (o->kind == CLI_KIND_PARSED) {
        if (o->vtype->parse(value, o->dest, why, sizeof why) < 0) {
            fprintf(stderr, "continuo %s: %s: %s\n", spec->name, spelled, why);
            return 2;
        }
        return 0;
    }
    cli_list *l = o->dest;
    if (l->n == l->max) {
        fprintf(stderr, "continuo %s: too many %s options (at most %d)\n", spec->name, spelled, l->max);
        return 2;
    }
    l->item[l->n++] = value;
    return 0;
}

/* Stores VALUE (not NULL) of option O, given as SPELLED; 0, or 2 after the message. */
static int store(const cli_spec *spec, const cli_option *o, const char *spelled, const char *value)
{
    double d;
    long long w;
    int idx;
    switch (o->kind) {
    case CLI_KIND_INT:
    case CLI_KIND_U64:
        if (parse_whole(o, value, &w) < 0) {
            fprintf(stderr, "continuo %s: %s wants a whole number in %.0f..%.0f, not '%s'\n", spec->name,
                    spelled, o->min, o->max, value);
            return 2;
        }
        if (o->kind == CLI_KIND_INT)
            *(int *)o->dest = (int)w;
        else
            *(uint64_t *)o->dest = (uint64_t)w;
        return 0;
    case CLI_KIND_DOUBLE:
        if (parse_number(o, value, &d) < 0) {
            fprintf(stderr, "continuo %s: %s wants a number in %g..%g, not '%s'\n", spec->name, spelled,
                    o->min, o->max, value);
            return 2;
        }
        *(double *)o->dest = d;
        return 0;
    case CLI_KIND_FILE:
        if (!*value) {
            fprintf(stderr, "continuo %s: %s needs a file name\n", spec->name, spelled);
            return 2;
        }
        *(const char **)o->dest = value;
        return 0;
    case CLI_KIND_STRING:
        *(const char **)o->dest = value;
        return 0;
    case CLI_KIND_ENUM:
        if ((idx = choice_index(o->choices, value)) < 0) {
            fprintf(stderr, "continuo %s: %s wants ", spec->name, spelled);
            print_choices(stderr, o->choices);
            fprintf(stderr, ", not '%s'\n", value);
            return 2;
        }
        *(int *)o->dest = idx;
        return 0;
    case CLI_KIND_PARSED:
    case CLI_KIND_LIST:
        return store_more(spec, o, spelled, value);
    case CLI_KIND_FLAG:
    case CLI_KIND_HELP:
        break;
    }
    return 0;
}

/* One option at ARGV[*I] (moved past its value); CLI_GO_ON, or the exit status. */
static int take_option(const cli_spec *spec, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *inline_value = NULL;
    const cli_option *o;
    size_t len = strlen(a);
    if (a[1] == '-') {
        const char *eq = strchr(a, '=');
        if (eq) {
            inline_value = eq + 1;
            len = (size_t)(eq - a);
        }
        o = find_long(spec->options, a + 2, len - 2);
    } else {
        o = a[2] == '\0' ? find_letter(spec->options, a[1]) : NULL;
    }
    if (!o) {
        fprintf(stderr, "continuo %s: unknown option '%s' (see --help)\n", spec->name, a);
        return 2;
    }
    char spelled[64];
    snprintf(spelled, sizeof spelled, "%.*s", (int)len, a);
    if (!takes_value(o)) {
        if (inline_value) {
            fprintf(stderr, "continuo %s: %s takes no value ('%s')\n", spec->name, spelled, a);
            return 2;
        }
        if (o->kind == CLI_KIND_HELP) {
            cli_usage(spec, stdout);
            return 0;
        }
        *(int *)o->dest = 1;
        return CLI_GO_ON;
    }
    const char *value = inline_value ? inline_value : *i + 1 < argc ? argv[++*i] : NULL;
    if (!value) {
        fprintf(stderr, "continuo %s: %s needs %s (see --help)\n", spec->name, spelled,
                o->kind == CLI_KIND_FILE ? "a file name" : "a value");
        return 2;
    }
    int rc = store(spec, o, spelled, value);
    return rc ? rc : CLI_GO_ON;
}

int cli_parse(const cli_spec *spec, int argc, char **argv, int *n_operands)
{
    int n = 0, options_over = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options_over || a[0] != '-' || a[1] == '\0') {
            argv[1 + n++] = argv[i];
            options_over = spec->options_first;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options_over = 1;
            continue;
        }
        int rc = take_option(spec, argc, argv, &i);
        if (rc != CLI_GO_ON)
            return rc;
    }
    *n_operands = n;
    if (n > spec->max_operands) {
        fprintf(stderr, "continuo %s: unknown argument '%s' (%s; see --help)\n", spec->name,
                argv[1 + spec->max_operands], spec->max_operands == 0 ? "it takes none"
                : spec->max_operands == 1 ? "it takes one" : "too many");
        return 2;
    }
    if (n < spec->min_operands) {
        cli_usage(spec, stderr);
        return 2;
    }
    return CLI_GO_ON;
}

/* "  -o, --output FILE" into BUF; its length. */
static size_t option_left(const cli_option *o, char *buf, size_t size)
{
    char letter[8] = "";
    if (o->letter)
        snprintf(letter, sizeof letter, "-%c, ", o->letter);
    int n = snprintf(buf, size, "  %s--%s%s%s", letter, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

void cli_usage(const cli_spec *spec, FILE *fp)
{
    char left[128];
    size_t col = 0;
    fputs(spec->usage, fp);
    if (spec->more_usage)
        spec->more_usage(fp);
    for (const cli_option *o = spec->options; o->name; o++) {
        size_t n = option_left(o, left, sizeof left);
        if (n <= HELP_COLUMN_MAX && n > col)
            col = n;
    }
    col += 2;
    fputs("\noptions:\n", fp);
    for (const cli_option *o = spec->options; o->name; o++) {
        size_t n = option_left(o, left, sizeof left);
        fprintf(fp, "%s%*s", left, n < col ? (int)(col - n) : 2, "");
        if (!*o->help)
            fputc('\n', fp);
        for (const char *line = o->help; *line;) {
            const char *nl = strchr(line, '\n');
            int len = nl ? (int)(nl - line) : (int)strlen(line);
            fprintf(fp, "%.*s\n", len, line);
            line += len + (nl ? 1 : 0);
            if (*line)
                fprintf(fp, "%*s", (int)col, "");
        }
    }
    if (spec->epilog)
        fprintf(fp, "\n%s", spec->epilog);
}

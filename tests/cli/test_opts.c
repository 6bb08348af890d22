/* test_opts.c: the subcommands' option parser (src/cli/opts.c): each kind of option, operands, errors
 * that name the option and the value with exit status 2, and the generated help. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cli/opts.h"

/* The destinations of the test table, reset before each parse. */
typedef struct dests {
    int flag, n, choice, help_seen;
    uint64_t seed;
    double x;
    const char *name, *file;
    const char *item[2];
    cli_list list;
} dests;

static dests d;
static char err_text[4096];

static const char usage_text[] = "usage: continuo test [options] FILES...\n";

static void more_usage(FILE *fp)
{
    fputs("files:\n  FILES  what to read\n", fp);
}

#define TABLE \
    CLI_FLAG("quiet", 'q', &d.flag, "no summary line"), \
    CLI_INT("count", 'n', "N", -5, 10, &d.n, "how many"), \
    CLI_U64("seed", 0, "N", 0, 1e18, &d.seed, "random seed"), \
    CLI_DOUBLE("ratio", 0, "F", 0.5, 2, &d.x, "a ratio\nwith a second line"), \
    CLI_STRING("name", 0, "NAME", &d.name, "any text"), \
    CLI_FILE("output", 'o', "FILE", &d.file, "the file to write"), \
    CLI_ENUM("memory", 0, "window|stream", "window|stream", &d.choice, "the mode"), \
    CLI_LIST("set", 0, "KEY=VALUE", &d.list, "repeatable"), \
    CLI_FLAG("a-very-long-option-name", 0, &d.help_seen, "help after two spaces"), \
    CLI_OPT_HELP, \
    CLI_END

static const cli_option *table(void)
{
    static cli_option options[] = { TABLE };
    return options;
}

static int min_ops = 0, max_ops = CLI_MANY;     /* the spec's operand limits */

/* Parses the NULL-terminated words (after argv[0] = "test") with stderr
 * captured into err_text; the operands are left in ARGV[1..*N]. */
static int parse(int options_first, char **argv, int *n)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    memset(&d, 0, sizeof d);
    d.list = (cli_list){ d.item, 0, 2 };
    cli_spec spec = { .name = "test", .usage = usage_text, .more_usage = more_usage, .options = table(),
                      .epilog = "the end\n", .options_first = options_first,
                      .min_operands = min_ops, .max_operands = max_ops };
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    int rc = cli_parse(&spec, argc, argv, n);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t k = fread(err_text, 1, sizeof err_text - 1, tmp);
    err_text[k] = '\0';
    fclose(tmp);
    return rc;
}

/* A parse that must fail with status 2 and a message holding NEEDLE1 and NEEDLE2. */
#define CHECK_USAGE_ERROR(needle1, needle2, ...) do { \
    char *argv_[] = { "test", __VA_ARGS__, NULL }; \
    int n_; \
    CHECK_INT(parse(0, argv_, &n_), 2); \
    CHECK_STR_CONTAINS(err_text, "continuo test: "); \
    CHECK_STR_CONTAINS(err_text, needle1); \
    CHECK_STR_CONTAINS(err_text, needle2); \
} while (0)

static void test_values_and_operands(void)
{
    char *argv[] = { "test", "a.mid", "-q", "--count", "-3", "b.mid", "--ratio=1.5", "--seed", "1000000000000000000",
                     "--name", "", "-o", "out.tok", "--memory", "stream", "--set", "x=1", "-", "--set=y=2",
                     "--", "--count", NULL };
    int n = -1;
    CHECK_INT(parse(0, argv, &n), CLI_GO_ON);
    CHECK_INT(d.flag, 1);
    CHECK_INT(d.n, -3);
    CHECK(d.seed == 1000000000000000000ull);
    CHECK_NEAR(d.x, 1.5, 0);
    CHECK(d.name && strcmp(d.name, "") == 0);
    CHECK(d.file && strcmp(d.file, "out.tok") == 0);
    CHECK_INT(d.choice, 1);
    CHECK_INT(d.list.n, 2);
    CHECK(strcmp(d.item[0], "x=1") == 0 && strcmp(d.item[1], "y=2") == 0);
    /* operands in order, '-' one of them, and after "--" everything is one */
    CHECK_INT(n, 4);
    CHECK(strcmp(argv[1], "a.mid") == 0 && strcmp(argv[2], "b.mid") == 0);
    CHECK(strcmp(argv[3], "-") == 0 && strcmp(argv[4], "--count") == 0);
    CHECK_INT(err_text[0], '\0');
}

static void test_options_first(void)
{
    char *argv[] = { "test", "-n", "2", "set", "cc_panic", "-1", "--count", NULL };
    int n = -1;
    CHECK_INT(parse(1, argv, &n), CLI_GO_ON);
    CHECK_INT(d.n, 2);
    CHECK_INT(n, 4);
    CHECK(strcmp(argv[1], "set") == 0 && strcmp(argv[3], "-1") == 0 && strcmp(argv[4], "--count") == 0);
    /* without options_first, the same words are an unknown option */
    char *argv2[] = { "test", "set", "-1", NULL };
    CHECK_INT(parse(0, argv2, &n), 2);
    CHECK_STR_CONTAINS(err_text, "unknown option '-1'");
}

static void test_errors(void)
{
    CHECK_USAGE_ERROR("unknown option '--nope'", "see --help", "--nope");
    CHECK_USAGE_ERROR("unknown option '-x'", "'-x'", "-x");
    CHECK_USAGE_ERROR("unknown option '-qn'", "'-qn'", "-qn");
    CHECK_USAGE_ERROR("--count needs a value", "--count", "a.mid", "--count");
    CHECK_USAGE_ERROR("-o needs a file name", "-o", "-o");
    CHECK_USAGE_ERROR("--output needs a file name", "--output", "--output", "");
    CHECK_USAGE_ERROR("--count wants a whole number in -5..10", "not '11'", "--count", "11");
    CHECK_USAGE_ERROR("-n wants a whole number in -5..10", "not '2.5'", "-n", "2.5");
    CHECK_USAGE_ERROR("--seed wants a whole number in 0..1000000000000000000", "not '-1'", "--seed", "-1");
    CHECK_USAGE_ERROR("--ratio wants a number in 0.5..2", "not 'abc'", "--ratio", "abc");
    CHECK_USAGE_ERROR("--ratio wants a number in 0.5..2", "not '3'", "--ratio=3");
    CHECK_USAGE_ERROR("--ratio wants a number", "not 'nan'", "--ratio", "nan");
    CHECK_USAGE_ERROR("--memory wants window or stream", "not 'rolling'", "--memory", "rolling");
    CHECK_USAGE_ERROR("--quiet takes no value", "--quiet=1", "--quiet=1");
    CHECK_USAGE_ERROR("too many --set options", "at most 2", "--set", "a=1", "--set", "b=2", "--set", "c=3");
}

static void test_help(void)
{
    char *argv[] = { "test", "--count", "3", "-h", "--nope", NULL };
    int n;
    fflush(stdout);
    FILE *tmp = tmpfile();
    int saved = dup(1);
    dup2(fileno(tmp), 1);
    int rc = parse(0, argv, &n);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    char out[4096];
    rewind(tmp);
    size_t k = fread(out, 1, sizeof out - 1, tmp);
    out[k] = '\0';
    fclose(tmp);
    CHECK_INT(rc, 0);                       /* help ends the parse: --nope is not reached */
    CHECK_INT(err_text[0], '\0');
    CHECK(strncmp(out, usage_text, strlen(usage_text)) == 0);
    CHECK_STR_CONTAINS(out, "FILES...\nfiles:\n  FILES  what to read\n\noptions:\n");
    /* one column for the help, wide enough for the longest usual name */
    CHECK_STR_CONTAINS(out, "\noptions:\n  -q, --quiet             no summary line\n");
    CHECK_STR_CONTAINS(out, "\n  -n, --count N           how many\n");
    CHECK_STR_CONTAINS(out, "\n  --memory window|stream  the mode\n");
    CHECK_STR_CONTAINS(out, "\n  --ratio F               a ratio\n                          with a second line\n");
    CHECK_STR_CONTAINS(out, "\n  --a-very-long-option-name  help after two spaces\n");
    CHECK_STR_CONTAINS(out, "\n  -h, --help              this help\n\nthe end\n");
}

/* Too many operands name the first one too many; too few print the usage. */
static void test_operand_limits(void)
{
    int n;
    char *none[] = { "test", "x.mid", NULL }, *two[] = { "test", "-q", "a.mid", "b.mid", NULL };
    char *zero[] = { "test", "-q", NULL }, *one[] = { "test", "a.mid", NULL };
    max_ops = 0;
    CHECK_INT(parse(0, none, &n), 2);
    CHECK_STR_CONTAINS(err_text, "continuo test: unknown argument 'x.mid' (it takes none; see --help)");
    max_ops = 1;
    CHECK_INT(parse(0, two, &n), 2);
    CHECK_STR_CONTAINS(err_text, "continuo test: unknown argument 'b.mid' (it takes one; see --help)");
    CHECK_INT(parse(0, one, &n), CLI_GO_ON);
    CHECK_INT(n, 1);
    min_ops = 1;
    CHECK_INT(parse(0, zero, &n), 2);
    CHECK(strncmp(err_text, usage_text, strlen(usage_text)) == 0);
    min_ops = 0;
    max_ops = CLI_MANY;
}

int main(void)
{
    test_values_and_operands();
    test_options_first();
    test_errors();
    test_help();
    test_operand_limits();
    return CHECK_DONE();
}

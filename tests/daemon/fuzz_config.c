/* fuzz_config.c: libFuzzer target for the config file parser: any bytes give -1 or a warning count, values stay in range, a second read changes nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/options.h"
#include "util/choices.h"

#include "fuzz/fuzz_quiet.h"  /* quiet stderr under libFuzzer; REQUIRE */
#include "fuzz_watch_stub.h"

/* Lines as config_load_text counts them: each '\n' ends one, and text after
 * the last '\n' is one more. */
static size_t count_lines(const uint8_t *data, size_t size)
{
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    return lines + (size > 0 && data[size - 1] != '\n');
}

/* 1 when A and B hold the same value for every option. */
static int same_values(const config *a, const config *b)
{
    for (size_t i = 0; i < config_n_options; i++) {
        const option_def *o = &config_options[i];
        const char *fa = (const char *)a + o->offset, *fb = (const char *)b + o->offset;
        switch (o->type) {
        case OPT_STRING:
            if (strcmp(fa, fb) != 0)
                return 0;
            break;
        case OPT_DOUBLE:
            if (*(const double *)fa != *(const double *)fb)
                return 0;
            break;
        case OPT_INT: case OPT_BOOL: case OPT_ENUM:
            if (*(const int *)fa != *(const int *)fb)
                return 0;
            break;
        case OPT_PARSED:
            if (memcmp(fa, fb, o->vtype->size) != 0)
                return 0;
            break;
        }
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static config c, again;
    config_defaults(&c);
    int r = config_load_text(&c, (const char *)data, size, "fuzz.conf");
    /* options.h: -1 (an error), or the number of warnings, one at most a line. */
    REQUIRE(r == -1 || (r >= 0 && (size_t)r <= count_lines(data, size)));
    for (size_t i = 0; i < config_n_options; i++) {
        const option_def *o = &config_options[i];
        const char *field = (const char *)&c + o->offset;
        char name[CONFIG_STR_MAX];
        switch (o->type) {
        case OPT_STRING:
            REQUIRE(memchr(field, '\0', CONFIG_STR_MAX) != NULL);
            break;
        case OPT_INT:
            REQUIRE(*(const int *)field >= o->min && *(const int *)field <= o->max);
            break;
        case OPT_DOUBLE:
            REQUIRE(*(const double *)field >= o->min && *(const double *)field <= o->max);
            break;
        case OPT_BOOL:
            REQUIRE(*(const int *)field == 0 || *(const int *)field == 1);
            break;
        case OPT_ENUM:   /* the value is one of the option's own choices */
            REQUIRE(*(const int *)field >= 0);
            config_enum_name(o, *(const int *)field, name, sizeof name);
            REQUIRE(choice_index(o->choices, name) == *(const int *)field);
            break;
        case OPT_PARSED: { /* what it prints reads back as the very value */
            unsigned char back[64] = { 0 };
            char why[512];
            o->vtype->format(field, name, sizeof name);
            REQUIRE(o->vtype->size <= sizeof back && o->vtype->parse(name, back, why, sizeof why) == 0);
            REQUIRE(memcmp(back, field, o->vtype->size) == 0);
            break;
        }
        }
    }
    /* Each line sets its key whatever was there before (the last one wins)
     * and nothing else carries over: the same text read again over what it
     * gave answers the same and changes nothing, accepted or refused. */
    again = c;
    REQUIRE(config_load_text(&again, (const char *)data, size, "fuzz.conf") == r);
    REQUIRE(same_values(&c, &again));
    return 0;
}

/* fuzz_config.c: libFuzzer target for the config file parser: any bytes parse cleanly, values stay in range. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/options.h"

#include "fuzz/fuzz_quiet.h"  /* quiet stderr under libFuzzer; REQUIRE */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static config c;
    config_defaults(&c);
    int r = config_load_text(&c, (const char *)data, size, "fuzz.conf");
    REQUIRE(r >= -1);
    for (size_t i = 0; i < config_n_options; i++) {
        const option_def *o = &config_options[i];
        const char *field = (const char *)&c + o->offset;
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
        case OPT_ENUM:
            REQUIRE(*(const int *)field >= 0 && *(const int *)field < 8);
            break;
        }
    }
    return 0;
}

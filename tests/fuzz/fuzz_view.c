/* fuzz_view.c: libFuzzer target for what the view's page may send on to the service: any bytes are judged without reading past them, and a line let through is one line of text that starts with an allowed command. */
#include <stdint.h>
#include <string.h>

#include "fuzz_quiet.h"
#include "view/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!view_command_allowed((const char *)data, size))
        return 0;
    REQUIRE(size >= 5 && size <= VIEW_COMMAND_MAX);
    for (size_t i = 0; i < size; i++)
        REQUIRE(data[i] >= 0x20 && data[i] <= 0x7e);   /* no newline: the service reads one command */
    static const char *const words[] = { "set ", "replay", "reroll", "panic" };
    int known = 0;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        known |= size >= strlen(words[i]) && memcmp(data, words[i], strlen(words[i])) == 0;
    REQUIRE(known);
    return 0;
}

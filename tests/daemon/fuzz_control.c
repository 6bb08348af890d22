/* fuzz_control.c: libFuzzer target for the control protocol: any bytes give bounded buffers and one ok/error line per request. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control.h"
#include "daemon/options.h"

#include "fuzz/fuzz_quiet.h"  /* quiet stderr under libFuzzer; REQUIRE */
#include "fuzz_watch_stub.h"

/* A stand-in for the service: get and set on a config, like the real one. */
static void handle(void *user, char *line, char *reply, size_t len)
{
    config *c = user;
    char *save = NULL, *cmd = strtok_r(line, " \t", &save), *key = strtok_r(NULL, " \t", &save);
    char why[256] = "bad request", buf[CONFIG_STR_MAX];
    const option_def *o = key ? config_find(key) : NULL;
    REQUIRE(strlen(line) < CONTROL_LINE_MAX);
    if (cmd && strcmp(cmd, "get") == 0 && o)
        snprintf(reply, len, "ok %s = %.*s", o->name, (int)(len - 80), config_format(c, o, buf, sizeof buf));
    else if (cmd && strcmp(cmd, "set") == 0 && o && save && config_set(c, o, save, why, sizeof why) == 0)
        snprintf(reply, len, "ok");
    else
        snprintf(reply, len, "error %.100s", why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static control_server cs;
    static config c;
    control_client cl;
    config_defaults(&c);
    if (control_client_init(&cl, -1) < 0)
        return 0;
    /* The first byte picks the chunk size, as a socket would split the stream. */
    size_t chunk = size ? (size_t)data[0] % 64 + 1 : 1, pos = size ? 1 : 0;
    int r = CONTROL_OK;
    while (pos < size && r == CONTROL_OK) {
        size_t n = size - pos < chunk ? size - pos : chunk;
        r = control_feed(&cs, &cl, (const char *)data + pos, n, handle, &c);
        pos += n;
        REQUIRE(cl.n_in < CONTROL_LINE_MAX);
        REQUIRE(cl.n_out <= CONTROL_OUT_MAX);
        if (r == CONTROL_OK && cl.n_out > CONTROL_OUT_MAX / 2)
            cl.n_out = 0;       /* the client reads now and then */
    }
    /* Every queued reply is one line starting with ok or error. */
    for (size_t i = 0; i < cl.n_out; ) {
        REQUIRE(cl.n_out - i >= 2);
        REQUIRE(memcmp(cl.out + i, "ok", 2) == 0 || memcmp(cl.out + i, "error", 5) == 0);
        char *nl = memchr(cl.out + i, '\n', cl.n_out - i);
        REQUIRE(nl != NULL);
        i = (size_t)(nl - cl.out) + 1;
    }
    control_client_free(&cl);
    return 0;
}

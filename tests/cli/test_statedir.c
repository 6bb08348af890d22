/* test_statedir.c: the one lookup of the state folder (util/statedir.h) that the journal, adapt and model = auto share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"
#include "util/statedir.h"

static char root[] = "/tmp/continuo-statedir-XXXXXX";

static void make(const char *rel, long mtime)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *s = path + strlen(root) + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(path, 0700);
            *s = '/';
        }
    mkdir(path, 0700);
    struct timeval tv[2] = { { mtime, 0 }, { mtime, 0 } };
    utimes(path, tv);
}

static const char *lookup(state_use use)
{
    static char out[512];
    if (state_dir(use, "journal", out, sizeof out) != 0)
        snprintf(out, sizeof out, "(none)");
    return out;
}

int main(void)
{
    char want[512], home[512], shell[512], unit[512];
    if (!mkdtemp(root))
        return 1;
    snprintf(home, sizeof home, "%s/home", root);
    snprintf(shell, sizeof shell, "%s/home/.local/state/continuo", root);
    snprintf(unit, sizeof unit, "%s/home/.config/continuo", root);
    setenv("HOME", home, 1);
    unsetenv("XDG_STATE_HOME");
    unsetenv("XDG_CONFIG_HOME");
    unsetenv("STATE_DIRECTORY");
    /* A shell with nothing written yet: the shell's folder, for readers and the writer alike. */
    CHECK(strcmp(lookup(STATE_WRITE), shell) == 0);
    CHECK(strcmp(lookup(STATE_READ), shell) == 0);
    /* The user unit (systemd 252) journaled last: readers take its folder, the writer keeps its own. */
    make("home/.local/state/continuo/journal", 1000000);
    make("home/.config/continuo/journal", 2000000);
    CHECK(strcmp(lookup(STATE_READ), unit) == 0);
    CHECK(strcmp(lookup(STATE_WRITE), shell) == 0);
    /* The shell's service journaled last: readers come back to it. */
    make("home/.local/state/continuo/journal", 3000000);
    CHECK(strcmp(lookup(STATE_READ), shell) == 0);
    /* $XDG_STATE_HOME and $XDG_CONFIG_HOME move both places. */
    snprintf(want, sizeof want, "%s/xdg-state", root);
    setenv("XDG_STATE_HOME", want, 1);
    snprintf(want, sizeof want, "%s/xdg-state/continuo", root);
    CHECK(strcmp(lookup(STATE_WRITE), want) == 0);
    CHECK(strcmp(lookup(STATE_READ), unit) == 0);      /* nothing journaled there yet: the unit's was */
    make("xdg-state/continuo/journal", 3500000);
    CHECK(strcmp(lookup(STATE_READ), want) == 0);
    snprintf(want, sizeof want, "%s/xdg-config", root);
    setenv("XDG_CONFIG_HOME", want, 1);
    make("xdg-config/continuo/journal", 4000000);
    snprintf(want, sizeof want, "%s/xdg-config/continuo", root);
    CHECK(strcmp(lookup(STATE_READ), want) == 0);
    /* Under the unit: $STATE_DIRECTORY, whatever changed last. */
    setenv("STATE_DIRECTORY", "/var/lib/unit-state", 1);
    CHECK(strcmp(lookup(STATE_READ), "/var/lib/unit-state") == 0);
    CHECK(strcmp(lookup(STATE_WRITE), "/var/lib/unit-state") == 0);
    /* No HOME and nothing set: no place. */
    unsetenv("STATE_DIRECTORY");
    unsetenv("XDG_STATE_HOME");
    unsetenv("XDG_CONFIG_HOME");
    unsetenv("HOME");
    CHECK(strcmp(lookup(STATE_READ), "(none)") == 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", root);
    return CHECK_DONE();
}

/* statedir.c: the one lookup of continuo's state folder (statedir.h). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "statedir.h"

/* Seconds since the epoch of PATH's last change, or -1 when it is not there. */
static double changed_at(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9 : -1;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* BASE/REL, or HOME/HOME_REL when BASE is unset: 0, or -1 without either. */
static int xdg_place(const char *base, const char *rel, const char *home_rel, char *out, size_t len)
{
    const char *home = env("HOME");
    if (base)
        snprintf(out, len, "%s/%s", base, rel);
    else if (home)
        snprintf(out, len, "%s/%s/%s", home, home_rel, rel);
    else
        return -1;
    return 0;
}

int state_dir(state_use use, const char *sub, char *out, size_t len)
{
    const char *state = env("STATE_DIRECTORY");
    if (state) {
        snprintf(out, len, "%s", state);
        return 0;
    }
    if (xdg_place(env("XDG_STATE_HOME"), "continuo", ".local/state", out, len) != 0)
        return -1;
    char unit[4096], a[4200], b[4200];
    if (use != STATE_READ || xdg_place(env("XDG_CONFIG_HOME"), "continuo", ".config", unit, sizeof unit) != 0)
        return 0;
    snprintf(a, sizeof a, "%s/%s", unit, sub);
    snprintf(b, sizeof b, "%s/%s", out, sub);
    if (changed_at(a) > changed_at(b))
        snprintf(out, len, "%s", unit);
    return 0;
}

/* datafile.c: one lookup for the files continuo ships: environment override, installed data folder, source tree. */
#include "util/datafile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

int datafile_self(char out[DATAFILE_PATH_MAX])
{
    ssize_t n = readlink("/proc/self/exe", out, DATAFILE_PATH_MAX - 1);
    out[n > 0 ? n : 0] = '\0';
    return n > 0 ? 0 : -1;
}

/* The folder above the running binary's (a build folder in the source
 * tree: <src>/<build>/continuo gives <src>'s path as <src>/<build>/..)
 * into DIR; 0, or -1 when /proc/self/exe cannot be read. */
static int binary_parent(char dir[DATAFILE_PATH_MAX])
{
    if (datafile_self(dir) != 0 || strlen(dir) > DATAFILE_PATH_MAX - 16)
        return -1;
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    strcpy(slash, "/..");
    return 0;
}

int datafile_places(const datafile *f, char places[][DATAFILE_PATH_MAX])
{
    const char *env = f->env ? getenv(f->env) : NULL;
    int np = 0;

    if (env && *env) {
        if (f->env_kind == DATAFILE_ENV_FILE)
            snprintf(places[np++], DATAFILE_PATH_MAX, "%s", env);
        if (f->env_kind == DATAFILE_ENV_DATA_DIR)
            snprintf(places[np++], DATAFILE_PATH_MAX, "%s/%s", env, f->name);
        if (f->env_kind == DATAFILE_ENV_DATA_DIR || f->env_kind == DATAFILE_ENV_SOURCE_DIR)
            snprintf(places[np++], DATAFILE_PATH_MAX, "%s/%s/%s", env, f->source_dir, f->name);
    }
    if (f->installed)
        snprintf(places[np++], DATAFILE_PATH_MAX, "%s/%s%s%s", CONTINUO_DATADIR, f->installed_sub ? f->installed_sub : "",
                 f->installed_sub ? "/" : "", f->name);
    char dir[DATAFILE_PATH_MAX];
    if (f->beside_binary && binary_parent(dir) == 0)
        np += snprintf(places[np], DATAFILE_PATH_MAX, "%s/%s/%s", dir, f->source_dir, f->name) > 0;
    snprintf(places[np++], DATAFILE_PATH_MAX, "%s%s/%s", f->cwd_dot ? "./" : "", f->source_dir, f->name);
    return np;
}

int datafile_find(const datafile *f, char *out, size_t len)
{
    char places[DATAFILE_MAX_PLACES][DATAFILE_PATH_MAX];
    int np = datafile_places(f, places);

    for (int i = 0; i < np; i++) {
        if (access(places[i], R_OK) == 0) {
            snprintf(out, len, "%s", places[i]);
            return 0;
        }
    }
    return -1;
}

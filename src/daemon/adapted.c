/* adapted.c: the models `continuo adapt` kept and the one `model = auto` plays with (adapted.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/adapted.h"
#include "util/fileio.h"
#include "util/log.h"

int adapted_dir(char *out, size_t len)
{
    char state[ADAPTED_PATH_MAX - 16];
    if (state_dir(STATE_READ, "journal", state, sizeof state) != 0) {
        log_error("no state folder for adapted models: set HOME (or STATE_DIRECTORY)");
        return -1;
    }
    snprintf(out, len, "%s/adapted", state);
    return 0;
}

static int is_model_name(const char *name)
{
    size_t n = strlen(name);
    return n < ADAPTED_NAME_MAX && n > 13 && strncmp(name, "adapted-", 8) == 0
           && strcmp(name + n - 5, ".gguf") == 0;
}

/* Reads DIR/NAME's card into M: 0, or -1 when it is missing or lacks a figure. */
static int read_card(const char *dir, const char *name, adapted_model *m)
{
    char path[ADAPTED_PATH_MAX], line[256];
    snprintf(path, sizeof path, "%s/%.*s.card", dir, (int)(strlen(name) - 5), name);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    int found = 0;
    while (fgets(line, sizeof line, fp)) {
        found += sscanf(line, "date: %31s", m->date) == 1;
        found += sscanf(line, "minutes: %lf", &m->minutes) == 1;
        found += sscanf(line, "sessions: %d", &m->sessions) == 1;
        found += sscanf(line, "held-back NLL: %lf -> %lf", &m->held_before, &m->held_after) == 2;
        found += sscanf(line, "reference NLL: %lf -> %lf", &m->ref_before, &m->ref_after) == 2;
    }
    fclose(fp);
    return found == 5 ? 0 : -1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const adapted_model *)a)->name, ((const adapted_model *)b)->name);
}

int adapted_list(const char *dir, adapted_model **out, int *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int cap = 0;
    while ((e = readdir(d))) {
        adapted_model m;
        if (!is_model_name(e->d_name) || read_card(dir, e->d_name, &m) != 0)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            adapted_model *grown = realloc(*out, (size_t)cap * sizeof *grown);
            if (!grown) {
                log_error("cannot list %s: out of memory", dir);
                closedir(d);
                free(*out);
                *out = NULL;
                return -1;
            }
            *out = grown;
        }
        (*out)[(*n)++] = m;
    }
    closedir(d);
    if (*n > 1)
        qsort(*out, (size_t)*n, sizeof **out, by_name);   /* names sort by date */
    return 0;
}

int adapted_set_use(const char *dir, const char *choice)
{
    char path[ADAPTED_PATH_MAX], text[ADAPTED_NAME_MAX + 2];
    snprintf(path, sizeof path, "%s/use", dir);
    if (!choice) {
        if (unlink(path) == 0 || access(path, F_OK) != 0)
            return 0;
        log_error("cannot remove %s", path);
        return -1;
    }
    int n = snprintf(text, sizeof text, "%s\n", choice);
    return file_write_atomic(path, text, (size_t)n);
}

/* DIR/use's first line into OUT, or "" when there is none. */
static void read_choice(const char *dir, char *out, size_t len)
{
    char path[ADAPTED_PATH_MAX];
    snprintf(path, sizeof path, "%s/use", dir);
    out[0] = 0;
    FILE *fp = fopen(path, "r");
    if (!fp)
        return;
    if (!fgets(out, (int)len, fp))
        out[0] = 0;
    out[strcspn(out, "\r\n")] = 0;
    fclose(fp);
}

int adapted_in_use(const char *dir, char *path, size_t len)
{
    char choice[ADAPTED_NAME_MAX + 2];
    adapted_model *m;
    int n, pick = -1;
    read_choice(dir, choice, sizeof choice);
    if (strcmp(choice, "shipped") == 0 || adapted_list(dir, &m, &n) != 0)
        return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(m[i].name, choice) == 0)
            pick = i;
    if (pick < 0 && choice[0])
        log_warn("%s/use names %s, which is not kept there: playing the newest adapted model", dir, choice);
    if (pick < 0)
        pick = n - 1;
    if (pick >= 0)
        snprintf(path, len, "%s/%s", dir, m[pick].name);
    free(m);
    return pick >= 0;
}

const char *adapted_model_for(const char *setting, char *buf, size_t len)
{
    const char *env = getenv("CONTINUO_MODEL");
    char dir[ADAPTED_PATH_MAX];
    if (setting[0] && strcmp(setting, "auto") != 0)
        return setting;
    if (env && *env)
        return NULL;
    if (adapted_dir(dir, sizeof dir) != 0)
        return NULL;
    return adapted_in_use(dir, buf, len) == 1 ? buf : NULL;
}

int adapted_read_last_run(const char *dir, adapted_last_run *r)
{
    char path[ADAPTED_PATH_MAX + 16], line[256];
    snprintf(path, sizeof path, "%s/last-run", dir);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    memset(r, 0, sizeof *r);
    int found = 0;
    while (fgets(line, sizeof line, fp)) {
        found += sscanf(line, "date: %31s", r->date) == 1;
        found += sscanf(line, "newest session: %lld", &r->newest) == 1;
        if (strncmp(line, "verdict: ", 9) == 0) {
            snprintf(r->verdict, sizeof r->verdict, "%.127s", line + 9);
            r->verdict[strcspn(r->verdict, "\n")] = '\0';
            found++;
        }
    }
    fclose(fp);
    return found == 3 ? 0 : -1;
}

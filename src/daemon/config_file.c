/* config_file.c: `continuo serve`'s settings as text: the config file read line by line (and found by the XDG rules), a --set KEY=VALUE, and the file written back as documentation from the option table. */
#include "daemon/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fileio.h"
#include "util/log.h"

int config_set_arg(config *c, const char *arg)
{
    const char *eq = strchr(arg, '=');
    char name[64], why[256];
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof name) {
        log_error("--set %s: expected KEY=VALUE", arg);
        return -1;
    }
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = '\0';
    const option_def *opt = config_find(name);
    if (!opt) {
        log_error("--set %s: unknown key '%s'", arg, name);
        return -1;
    }
    if (config_set(c, opt, eq + 1, why, sizeof why) < 0) {
        log_error("--set %s: %s", arg, why);
        return -1;
    }
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* One line (already NUL-terminated, no newline).  Returns 0 ok, 1 warning, -1 error. */
static int parse_line(config *c, char *line, const char *name, int lineno)
{
    char why[256];
    char *s = trim(line);
    if (*s == '\0' || *s == '#' || *s == ';')
        return 0;
    if (*s == '[') {   /* sections are accepted and ignored: keys are global */
        if (s[strlen(s) - 1] != ']') {
            log_error("%s:%d: expected a section name in [brackets]", name, lineno);
            return -1;
        }
        return 0;
    }
    char *eq = strchr(s, '=');
    if (!eq) {
        log_error("%s:%d: expected 'key = value'", name, lineno);
        return -1;
    }
    *eq = '\0';
    char *key = trim(s), *value = trim(eq + 1);
    if (*key == '\0') {
        log_error("%s:%d: expected a key before '='", name, lineno);
        return -1;
    }
    size_t vn = strlen(value);
    if (vn >= 1 && value[0] == '"') {
        if (vn < 2 || value[vn - 1] != '"') {
            log_error("%s:%d: %s: expected a closing '\"'", name, lineno, key);
            return -1;
        }
        value[vn - 1] = '\0';
        value++;
    }
    const option_def *opt = config_find(key);
    if (!opt) {
        log_warn("%s:%d: unknown key '%s' (ignored)", name, lineno, key);
        return 1;
    }
    if (config_set(c, opt, value, why, sizeof why) < 0) {
        log_error("%s:%d: %s: %s", name, lineno, key, why);
        return -1;
    }
    return 0;
}

int config_load_text(config *c, const char *text, size_t len, const char *name)
{
    char line[CONFIG_STR_MAX + 256];
    int lineno = 0, warnings = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        lineno++;
        if (n >= sizeof line) {
            log_error("%s:%d: line longer than %zu bytes", name, lineno, sizeof line - 1);
            return -1;
        }
        if (memchr(text + pos, '\0', n)) {
            log_error("%s:%d: NUL byte in a text file", name, lineno);
            return -1;
        }
        memcpy(line, text + pos, n);
        line[n] = '\0';
        pos += n + (nl ? 1 : 0);
        int r = parse_line(c, line, name, lineno);
        if (r < 0)
            return -1;
        warnings += r;
    }
    return warnings;
}

int config_load_file(config *c, const char *path)
{
    uint8_t *data;
    size_t len;
    if (file_read_all(path, &data, &len) < 0)
        return -1;
    int r = config_load_text(c, (const char *)data, len, path);
    free(data);
    return r;
}

static int try_dir(char *buf, size_t len, const char *dir, size_t dirlen)
{
    struct stat st;
    if (dirlen == 0 || dir[0] != '/')   /* XDG: relative paths are invalid, ignore */
        return 0;
    int n = snprintf(buf, len, "%.*s/continuo/continuo.conf", (int)dirlen, dir);
    return n > 0 && (size_t)n < len && stat(buf, &st) == 0 && S_ISREG(st.st_mode);
}

int config_find_file(char *buf, size_t len)
{
    const char *home = getenv("XDG_CONFIG_HOME");
    char tmp[CONFIG_STR_MAX];
    if (home && *home) {
        if (try_dir(buf, len, home, strlen(home)))
            return 1;
    } else if ((home = getenv("HOME")) && *home) {
        snprintf(tmp, sizeof tmp, "%s/.config", home);
        if (try_dir(buf, len, tmp, strlen(tmp)))
            return 1;
    }
    const char *dirs = getenv("XDG_CONFIG_DIRS");
    if (!dirs || !*dirs)
        dirs = "/etc/xdg";
    for (const char *p = dirs; *p; ) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (try_dir(buf, len, p, n))
            return 1;
        if (!colon)
            break;
        p = colon + 1;
    }
    return 0;
}

void config_write_doc(FILE *fp)
{
    fprintf(fp,
        "# continuo.conf: settings of `continuo serve`, one 'key = value' per line.\n"
        "#\n"
        "# Looked up at --config FILE, else $XDG_CONFIG_HOME/continuo/continuo.conf\n"
        "# (~/.config/continuo/continuo.conf), else continuo/continuo.conf in each\n"
        "# directory of $XDG_CONFIG_DIRS (/etc/xdg).  Lines starting with '#' or ';'\n"
        "# are comments; values may be quoted \"like this\"; [sections] are ignored.\n"
        "# Every key is shown commented out with its default.  Keys marked (live)\n"
        "# can be changed while running with `continuo ctl set KEY VALUE` or by\n"
        "# editing this file and `continuo ctl reload` (or SIGHUP).\n"
        "#\n"
        "# This file is generated by `continuo serve --dump-config`; a test checks\n"
        "# that the two agree.\n");
    for (size_t i = 0; i < config_n_options; i++) {
        const option_def *o = &config_options[i];
        char help[512];
        fprintf(fp, "\n");
        const char *h = config_help(o, help, sizeof help);
        while (*h) {
            const char *nl = strchr(h, '\n');
            int n = nl ? (int)(nl - h) : (int)strlen(h);
            fprintf(fp, "# %.*s\n", n, h);
            h += n + (nl ? 1 : 0);
        }
        switch (o->type) {
        case OPT_INT:
            fprintf(fp, "# Integer, %.0f..%.0f%s.\n", o->min, o->max, !config_needs_restart(o) ? " (live)" : "");
            break;
        case OPT_DOUBLE:
            fprintf(fp, "# Number, %g..%g%s.\n", o->min, o->max, !config_needs_restart(o) ? " (live)" : "");
            break;
        case OPT_BOOL:
            fprintf(fp, "# yes or no%s.\n", !config_needs_restart(o) ? " (live)" : "");
            break;
        case OPT_ENUM:
            fprintf(fp, "# One of %s%s.\n", o->choices, !config_needs_restart(o) ? " (live)" : "");
            break;
        case OPT_PARSED:
            fprintf(fp, "# %s%s.\n", o->vtype->what, !config_needs_restart(o) ? " (live)" : "");
            break;
        case OPT_STRING:
            if (!config_needs_restart(o))
                fprintf(fp, "# (live)\n");
            break;
        }
        if (o->type == OPT_STRING && o->default_value[0] == '\0')
            fprintf(fp, "#%s = \"\"\n", o->name);
        else
            fprintf(fp, "#%s = %s\n", o->name, o->default_value);
    }
}

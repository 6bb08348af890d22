/* ports.c: the service's MIDI inputs and outputs, opened by name through the backend table (src/io). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/service.h"

/* The backends' settings (the fluidsynth output's soundfont, ...) are the
 * options of the same name. */
static const char *get_setting(void *user, const char *key, char *buf, size_t len)
{
    const service *sv = user;
    const option_def *o = config_find(key);
    return o ? config_format(&sv->cfg, o, buf, len) : NULL;
}

static int have_output(const service *sv, const char *spec)
{
    for (int i = 0; i < sv->n_outputs; i++)
        if (strcmp(midi_port_name(sv->outputs[i]), spec) == 0)
            return 1;
    return 0;
}

static int open_output(service *sv, const char *spec)
{
    midi_port_settings settings = { get_setting, sv };
    if (have_output(sv, spec))
        return 0;
    midi_port *p = midi_port_open_with(spec, MIDI_OUT, &settings);
    if (!p)
        return -1;
    sv->outputs[sv->n_outputs++] = p;
    return 0;
}

/* The outputs the config lists, then the session recording. */
static int open_outputs(service *sv)
{
    char list[CONFIG_STR_MAX], *save = NULL;
    snprintf(list, sizeof list, "%s", sv->cfg.output);
    for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        while (*s == ' ')
            s++;
        if (!*s || strcmp(s, "none") == 0 || strcmp(s, "record") == 0)
            continue;
        if (sv->n_outputs == MAX_PORTS) {
            log_error("too many outputs (at most %d)", MAX_PORTS);
            return -1;
        }
        if (open_output(sv, s) < 0)
            return -1;
    }
    return open_output(sv, "record");
}

static int open_inputs(service *sv)
{
    char list[CONFIG_STR_MAX], *save = NULL, spec[2 * CONFIG_STR_MAX + 8];
    struct stat st;
    snprintf(list, sizeof list, "%s", sv->cfg.input);
    for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        while (*s == ' ')
            s++;
        if (!*s)
            continue;
        if (sv->n_inputs == MAX_PORTS) {
            log_error("too many inputs (at most %d)", MAX_PORTS);
            return -1;
        }
        if (strcmp(s, "alsa") == 0 && sv->cfg.input_connect[0])
            snprintf(spec, sizeof spec, "alsa:%s", sv->cfg.input_connect);
        else
            snprintf(spec, sizeof spec, "%s", s);
        if (strncmp(spec, "fifo:", 5) == 0 && stat(spec + 5, &st) < 0 && errno == ENOENT &&
            mkfifo(spec + 5, 0600) < 0) {
            log_error("cannot create FIFO %s: %s", spec + 5, strerror(errno));
            return -1;
        }
        midi_port *p = midi_port_open(spec, MIDI_IN);
        if (!p)
            return -1;
        sv->inputs[sv->n_inputs++] = p;
    }
    return 0;
}

int service_open_ports(service *sv)
{
    return open_outputs(sv) < 0 || open_inputs(sv) < 0 ? -1 : 0;
}

void service_close_ports(service *sv)
{
    for (int i = 0; i < sv->n_outputs; i++)
        midi_port_close(sv->outputs[i]);
    for (int i = 0; i < sv->n_inputs; i++)
        midi_port_close(sv->inputs[i]);
    sv->n_outputs = sv->n_inputs = 0;
}

size_t service_kept(const service *sv, midi_part part)
{
    uint64_t n = 0;
    for (int i = 0; i < sv->n_outputs; i++)
        n += midi_port_get_stats(sv->outputs[i])->kept[part];
    return (size_t)n;
}

int service_save(service *sv, const char *path)
{
    int rc = 1;
    for (int i = 0; i < sv->n_outputs && rc >= 0; i++) {
        int r = midi_port_save(sv->outputs[i], path);
        if (r <= 0)
            rc = r;
    }
    return rc;
}

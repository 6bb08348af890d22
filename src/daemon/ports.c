/* ports.c: the service's MIDI inputs and outputs, opened by name through the backend table (src/io). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The outputs the config lists, then the session recording and the journal. */
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
    char dir[CONFIG_STR_MAX], spec[CONFIG_STR_MAX + 16];
    int j = config_journal_dir(&sv->cfg, STATE_WRITE, dir, sizeof dir);
    if (j == 0 && !sv->cfg.journal_dir[0])     /* the default's parents: .../continuo */
        for (char *s = strchr(dir + 1, '/'); s; s = strchr(s + 1, '/')) {
            *s = 0;
            mkdir(dir, 0700);
            *s = '/';
        }
    if (j < 0)
        log_warn("journal: no folder (set journal_dir, or HOME): the session is not journaled");
    if (open_output(sv, "record") < 0)
        return -1;
    if (j != 0)
        return 0;
    snprintf(spec, sizeof spec, "journal:%s", dir);
    return open_output(sv, spec);
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

/* What the outputs that have something to say say (the journal's state),
 * appended to REPLY as " journal=DIR STATE". */
void service_describe_outputs(service *sv, char *reply, size_t len)
{
    for (int i = 0; i < sv->n_outputs; i++) {
        char what[256];
        size_t used = strlen(reply);
        const char *name = midi_port_name(sv->outputs[i]), *colon = strchr(name, ':');
        if (used < len && midi_port_describe(sv->outputs[i], what, sizeof what))
            snprintf(reply + used, len - used, " %.*s=%s %s", colon ? (int)(colon - name) : (int)strlen(name), name,
                     colon ? colon + 1 : "", what);
    }
}

/* ---- output fan-out ---- */

/* Plays M on every output (the recording plays nothing). */
void service_play(service *sv, const midi_msg *m)
{
    for (int i = 0; i < sv->n_outputs; i++)
        midi_port_write(sv->outputs[i], m);
}

/* Gives every output a copy of PART's message M, sent or heard at NOW (the
 * recording keeps it; the others ignore it). */
void service_record(service *sv, const midi_msg *m, midi_part part, int64_t now)
{
    for (int i = 0; i < sv->n_outputs; i++)
        midi_port_keep(sv->outputs[i], m, part, session_time(sv, now));
}

/* The scheduler's emit: a model message goes out now. */
void service_emit_model(void *user, const midi_msg *m, int64_t now)
{
    service *sv = user;
    service_play(sv, m);
    service_record(sv, m, MIDI_PART_MODEL, now);
    if (midi_msg_is_note_on(m)) {
        sv->notes_out++;
        if (sv->cont.first_note_pending) {
            sv->cont.first_note_pending = 0;
            sv->lat_ns[sv->n_lat++ % LAT_SAMPLES] = now - sv->cont.phrase_end_ns;
            if (sv->cont.release_ns)
                sv->delay_ns[sv->n_delay++ % LAT_SAMPLES] = now - sv->cont.release_ns;
        }
    }
}

void service_send_thru(service *sv, const midi_msg *m, int64_t now)
{
    note_table_update(&sv->thru, m, now);
    service_play(sv, m);
}

/* Ends every sounding note at once (model and thru), then all-notes-off on
 * every channel of every output. */
void service_silence_all(service *sv, int64_t now)
{
    scheduler_silence(&sv->sched, now, service_emit_model, sv);
    for (int ch = 0; ch < 16; ch++)
        for (int p = 0; p < 128 && sv->thru.count > 0; p++)
            if (sv->thru.on[ch][p]) {
                midi_msg off = { (uint8_t)(0x80 | ch), (uint8_t)p, 0, 3 };
                service_send_thru(sv, &off, now);
                service_record(sv, &off, MIDI_PART_PLAYER, now);
            }
    for (int ch = 0; ch < 16; ch++) {
        midi_msg ano = { (uint8_t)(0xB0 | ch), 123, 0, 3 };
        service_play(sv, &ano);
    }
}

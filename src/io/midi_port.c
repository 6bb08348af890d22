/* midi_port.c: the backend table, port names, argument checks and counters. */
#include "config.h"

#include "io/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

static const midi_backend *const backends[] = {
    &midi_backend_null,
    &midi_backend_fifo,
    &midi_backend_raw,
    &midi_backend_fluidsynth,
    &midi_backend_record,
    &midi_backend_journal,
#if HAVE_ALSA
    &midi_backend_alsa,
#endif
#if HAVE_PORTMIDI
    &midi_backend_portmidi,
#endif
};
#define N_BACKENDS ((int)(sizeof backends / sizeof backends[0]))

static char client_name[64] = "continuo";

void midi_port_set_client_name(const char *name)
{
    if (name && *name)
        snprintf(client_name, sizeof client_name, "%s", name);
}

const char *midi_port_client_name(void)
{
    return client_name;
}

const midi_backend *midi_backend_find(const char *name)
{
    for (int i = 0; i < N_BACKENDS; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

int midi_backend_names(const char **names, int max)
{
    for (int i = 0; i < N_BACKENDS && i < max; i++)
        names[i] = backends[i]->name;
    return N_BACKENDS;
}

const char *midi_backend_usage(const char *name)
{
    const midi_backend *b = name ? midi_backend_find(name) : NULL;
    return b ? b->usage : NULL;
}

static const char *dir_word(midi_dir dir)
{
    return dir == MIDI_IN ? "input" : "output";
}

midi_port *midi_port_open(const char *spec, midi_dir dir)
{
    return midi_port_open_with(spec, dir, NULL);
}

midi_port *midi_port_open_with(const char *spec, midi_dir dir, const midi_port_settings *settings)
{
    if (!spec || !*spec) {
        log_error("cannot open MIDI %s: no port named", dir_word(dir));
        return NULL;
    }
    if (dir != MIDI_IN && dir != MIDI_OUT) {
        log_error("cannot open MIDI port '%s': bad direction %d", spec, (int)dir);
        return NULL;
    }
    const char *colon = strchr(spec, ':');
    size_t blen = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *arg = colon ? colon + 1 : "";
    char bname[32];
    const midi_backend *b = NULL;
    if (blen < sizeof bname) {
        memcpy(bname, spec, blen);
        bname[blen] = '\0';
        b = midi_backend_find(bname);
    }
    if (!b) {
        char avail[256] = "";
        for (int i = 0; i < N_BACKENDS; i++) {
            size_t used = strlen(avail);
            snprintf(avail + used, sizeof avail - used, "%s%s", i ? ", " : "",
                     backends[i]->name);
        }
        log_error("cannot open MIDI %s '%s': unknown backend '%.*s' (built in: %s)",
                  dir_word(dir), spec, (int)(blen < 64 ? blen : 64), spec, avail);
        return NULL;
    }
    if (!(b->dirs & (unsigned)dir)) {
        log_error("cannot open MIDI %s '%s': backend '%s' has no %ss",
                  dir_word(dir), spec, b->name, dir_word(dir));
        return NULL;
    }
    midi_port *p = calloc(1, sizeof *p);
    char *name = strdup(spec);
    if (!p || !name) {
        log_error("cannot open MIDI %s '%s': out of memory", dir_word(dir), spec);
        free(p);
        free(name);
        return NULL;
    }
    p->backend = b;
    p->dir = dir;
    p->name = name;
    p->settings = settings;
    char err[256] = "unknown error";
    int r = b->open(p, arg, err, sizeof err);
    p->settings = NULL;
    if (r != 0) {
        if (err[0])
            log_error("cannot open MIDI %s '%s': %s", dir_word(dir), spec, err);
        free(p->name);
        free(p);
        return NULL;
    }
    return p;
}

void midi_port_close(midi_port *p)
{
    if (!p)
        return;
    p->backend->close(p);
    free(p->name);
    free(p);
}

int midi_port_poll_fds(midi_port *p, struct pollfd *fds, int max)
{
    if (!p || !p->backend->poll_fds || max <= 0)
        return 0;
    return p->backend->poll_fds(p, fds, max);
}

int midi_port_read(midi_port *p, midi_msg *out, int64_t *age_ns, int max)
{
    if (!p || p->dir != MIDI_IN || !p->backend->read || max <= 0)
        return 0;
    int64_t scratch[64];
    if (!age_ns) {
        age_ns = scratch;
        if (max > 64)
            max = 64;
    }
    memset(age_ns, 0, (size_t)max * sizeof *age_ns);
    int n = p->backend->read(p, out, age_ns, max);
    if (n > 0)
        p->stats.received += (uint64_t)n;
    return n;
}

void midi_port_update(midi_port *p, const char *key, const char *value)
{
    if (p && p->backend->update)
        p->backend->update(p, key, value);
}

int midi_port_write(midi_port *p, const midi_msg *msg)
{
    uint8_t bytes[3];
    if (!p || p->dir != MIDI_OUT)
        return -1;
    if (!p->backend->write)
        return 0;
    if (!midi_msg_encode(msg, bytes)) {
        log_error("MIDI output '%s': invalid message %02x %02x %02x (length %d)",
                  p->name, msg->status, msg->data1, msg->data2, msg->length);
        return -1;
    }
    errno = 0;
    if (p->backend->write(p, msg) != 0) {
        p->stats.dropped++;
        if (!p->failing)
            log_error("MIDI output '%s': message dropped: %s", p->name,
                      errno ? strerror(errno) : "not ready");
        p->failing = 1;
        return -1;
    }
    if (p->failing)
        log_info("MIDI output '%s': sending again (%llu message(s) dropped so far)",
                 p->name, (unsigned long long)p->stats.dropped);
    p->failing = 0;
    p->stats.sent++;
    return 0;
}

int midi_port_keep(midi_port *p, const midi_msg *msg, midi_part part, double time)
{
    if (!p || p->dir != MIDI_OUT || !p->backend->keep || (unsigned)part >= MIDI_PARTS)
        return 0;
    if (p->backend->keep(p, msg, part, time) != 0) {
        p->stats.dropped++;
        return -1;
    }
    p->stats.kept[part]++;
    return 0;
}

const char *midi_port_describe(midi_port *p, char *buf, size_t len)
{
    if (!p || !p->backend->describe)
        return NULL;
    p->backend->describe(p, buf, len);
    return buf;
}

int midi_port_save(midi_port *p, const char *path)
{
    if (!p || !p->backend->save)
        return 1;
    return p->backend->save(p, path);
}

const char *midi_port_name(const midi_port *p)
{
    return p->name;
}

const midi_port_stats *midi_port_get_stats(const midi_port *p)
{
    return &p->stats;
}

int midi_port_list(midi_port_list_fn fn, void *user)
{
    int total = 0, failed = 0;
    for (int i = 0; i < N_BACKENDS; i++) {
        if (!backends[i]->list)
            continue;
        int n = backends[i]->list(fn, user);
        if (n < 0)
            failed = 1;
        else
            total += n;
    }
    return failed ? -1 : total;
}

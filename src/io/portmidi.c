/* portmidi.c: PortMidi backend: a device chosen by a piece of its name, polled on a timer. */
#include "config.h"

#include "io/backend.h"

#include <errno.h>
#include <portmidi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

/* PortMidi has no file descriptor to poll: an input port exposes a timer fd
 * that fires every PM_POLL_NS, and each read drains PortMidi's queue. */
#define PM_POLL_NS 2000000L     /* 2 ms */
#define PM_BUFFER  1024         /* events PortMidi buffers per stream */

static int pm_users;            /* open ports; Pm_Terminate after the last */

/* State of one PortMidi port. */
typedef struct pm_port {
    PortMidiStream *stream;
    int             timer_fd;   /* input only, else -1 */
    int             failed;     /* a read failed (logged once) */
} pm_port;

/* PortMidi's time callback: milliseconds on the shared monotonic clock. */
static PmTimestamp pm_now_ms(void *info)
{
    (void)info;
    return (PmTimestamp)(clock_now_ns() / 1000000);
}

static int pm_ref(char *err, size_t errlen)
{
    if (pm_users == 0) {
        PmError rc = Pm_Initialize();
        if (rc != pmNoError) {
            snprintf(err, errlen, "cannot start PortMidi: %s", Pm_GetErrorText(rc));
            return -1;
        }
    }
    pm_users++;
    return 0;
}

static void pm_unref(void)
{
    if (--pm_users == 0)
        Pm_Terminate();
}

/* The first device for DIR whose name contains NAME ("" matches any). */
static PmDeviceID pm_find(const char *name, midi_dir dir)
{
    int n = Pm_CountDevices();
    for (PmDeviceID id = 0; id < n; id++) {
        const PmDeviceInfo *info = Pm_GetDeviceInfo(id);
        if (!info || !(dir == MIDI_IN ? info->input : info->output))
            continue;
        if (strstr(info->name, name))
            return id;
    }
    return pmNoDevice;
}

static int pm_open(midi_port *p, const char *arg, char *err, size_t errlen)
{
    pm_port *pp = calloc(1, sizeof *pp);
    if (!pp) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pp->timer_fd = -1;
    if (pm_ref(err, errlen) != 0) {
        free(pp);
        return -1;
    }
    PmDeviceID id = pm_find(arg, p->dir);
    if (id == pmNoDevice) {
        snprintf(err, errlen, "no PortMidi %s device whose name contains \"%s\"",
                 p->dir == MIDI_IN ? "input" : "output", arg);
        goto fail;
    }
    PmError rc = p->dir == MIDI_IN
        ? Pm_OpenInput(&pp->stream, id, NULL, PM_BUFFER, pm_now_ms, NULL)
        : Pm_OpenOutput(&pp->stream, id, NULL, PM_BUFFER, pm_now_ms, NULL, 0);
    if (rc != pmNoError) {
        char host[256] = "";
        if (rc == pmHostError)
            Pm_GetHostErrorText(host, sizeof host);
        snprintf(err, errlen, "PortMidi: %s", rc == pmHostError ? host : Pm_GetErrorText(rc));
        pp->stream = NULL;
        goto fail;
    }
    if (p->dir == MIDI_IN) {
        Pm_SetFilter(pp->stream, PM_FILT_ACTIVE | PM_FILT_SYSEX);
        pp->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        struct itimerspec its = { { 0, PM_POLL_NS }, { 0, PM_POLL_NS } };
        if (pp->timer_fd < 0 || timerfd_settime(pp->timer_fd, 0, &its, NULL) != 0) {
            snprintf(err, errlen, "cannot make a poll timer: %s", strerror(errno));
            goto fail;
        }
    }
    p->priv = pp;
    return 0;
fail:
    if (pp->timer_fd >= 0)
        close(pp->timer_fd);
    if (pp->stream)
        Pm_Close(pp->stream);
    pm_unref();
    free(pp);
    return -1;
}

static void pm_close(midi_port *p)
{
    pm_port *pp = p->priv;
    if (!pp)
        return;
    if (pp->timer_fd >= 0)
        close(pp->timer_fd);
    Pm_Close(pp->stream);
    pm_unref();
    free(pp);
    p->priv = NULL;
}

static int pm_poll_fds(midi_port *p, struct pollfd *fds, int max)
{
    pm_port *pp = p->priv;
    if (pp->timer_fd < 0 || max < 1)
        return 0;
    fds[0] = (struct pollfd){ .fd = pp->timer_fd, .events = POLLIN };
    return 1;
}

static int pm_read(midi_port *p, midi_msg *out, int64_t *age_ns, int max)
{
    (void)age_ns;              /* arrival times unknown: read time it is */
    pm_port *pp = p->priv;
    uint64_t ticks;
    if (read(pp->timer_fd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
        log_warn("MIDI input '%s': poll timer: %s", p->name, strerror(errno));
    PmEvent ev[64];
    int n = 0;
    while (n < max) {
        int want = max - n < 64 ? max - n : 64;
        int got = Pm_Read(pp->stream, ev, want);
        if (got < 0) {
            if (got == pmBufferOverflow) {
                p->stats.dropped++;
                continue;
            }
            if (!pp->failed)
                log_error("MIDI input '%s': PortMidi read failed: %s", p->name,
                          Pm_GetErrorText((PmError)got));
            pp->failed = 1;
            return -1;
        }
        for (int i = 0; i < got; i++) {
            midi_msg m = { (uint8_t)Pm_MessageStatus(ev[i].message),
                           (uint8_t)Pm_MessageData1(ev[i].message),
                           (uint8_t)Pm_MessageData2(ev[i].message), 0 };
            int len = midi_status_length(m.status);
            if (len == 0)
                continue;
            m.length = (uint8_t)len;
            if (len < 3) m.data2 = 0;
            if (len < 2) m.data1 = 0;
            out[n++] = m;
        }
        if (got < want)
            break;
    }
    return n;
}

static int pm_write(midi_port *p, const midi_msg *m)
{
    pm_port *pp = p->priv;
    PmError rc = Pm_WriteShort(pp->stream, 0, Pm_Message(m->status, m->data1, m->data2));
    if (rc != pmNoError) {
        errno = EIO;
        return -1;
    }
    return 0;
}

static int pm_list(midi_port_list_fn fn, void *user)
{
    char err[128];
    if (pm_ref(err, sizeof err) != 0) {
        log_error("cannot list PortMidi devices: %s", err);
        return -1;
    }
    int count = Pm_CountDevices(), n = 0;
    for (PmDeviceID id = 0; id < count; id++) {
        const PmDeviceInfo *info = Pm_GetDeviceInfo(id);
        if (!info)
            continue;
        char spec[300];
        snprintf(spec, sizeof spec, "portmidi:%s", info->name);
        midi_port_info pi = { "portmidi", spec, info->interf,
                              (info->input ? MIDI_IN : 0u) | (info->output ? MIDI_OUT : 0u) };
        fn(&pi, user);
        n++;
    }
    pm_unref();
    return n;
}

const midi_backend midi_backend_portmidi = {
    .name = "portmidi",
    .usage = "portmidi:NAME (the first device whose name contains NAME)",
    .dirs = MIDI_IN | MIDI_OUT,
    .open = pm_open,
    .close = pm_close,
    .poll_fds = pm_poll_fds,
    .read = pm_read,
    .write = pm_write,
    .list = pm_list,
};

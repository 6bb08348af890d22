/* linksync.c: sync = link: joining and leaving the session, its state read again when Link's thread says it changed. */
#include "daemon/linksync.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "config.h"
#include "util/log.h"
#if HAVE_LINK
#include "link/link.h"
#endif

void link_sync_init(link_sync *s)
{
    memset(s, 0, sizeof *s);
    s->wake_fd = -1;
    s->start_stop = 1;
    s->playing = 1;
}

int link_sync_built(void)
{
    return HAVE_LINK;
}

int link_sync_joined(const link_sync *s)
{
    return s->l != NULL;
}

int link_sync_fd(const link_sync *s)
{
    return s->l ? s->wake_fd : -1;
}

#if HAVE_LINK

int link_sync_join(link_sync *s, double bpm, int start_stop, char *why, size_t len)
{
    if (s->l)
        return 0;
    s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->wake_fd < 0) {
        snprintf(why, len, "cannot make an eventfd: %s", strerror(errno));
        return -1;
    }
    s->l = link_new(bpm, s->wake_fd);
    if (!s->l || link_join(s->l, 1) < 0) {
        snprintf(why, len, "cannot join an Ableton Link session (see the log)");
        link_sync_leave(s);
        return -1;
    }
    s->start_stop = start_stop;
    link_start_stop_sync(s->l, start_stop);
    s->seen_playing = 0;
    s->playing = 1;
    link_sync_update(s, 0);
    log_info("sync = link: joined the Ableton Link session (%.2f BPM, %u peers, start/stop sync %s)",
             s->tempo, s->peers, start_stop ? "on" : "off");
    return 0;
}

void link_sync_leave(link_sync *s)
{
    if (s->l) {
        link_join(s->l, 0);
        link_free(s->l);     /* its thread joined, its sockets closed */
        s->l = NULL;
        log_info("sync = link: left the Ableton Link session");
    }
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    s->wake_fd = -1;
    s->playing = 1;
    s->peers = 0;
}

void link_sync_set_start_stop(link_sync *s, int on)
{
    s->start_stop = on;
    if (s->l) {
        link_start_stop_sync(s->l, on);
        uint64_t one = 1;       /* the loop reads the state again at once */
        ssize_t n = write(s->wake_fd, &one, sizeof one);
        (void)n;
    }
}

int link_sync_update(link_sync *s, int64_t now)
{
    if (!s->l)
        return 0;
    uint64_t n;
    while (read(s->wake_fd, &n, sizeof n) == (ssize_t)sizeof n)
        ;
    link_state st;
    link_read(s->l, 1.0, now, &st);
    s->tempo = st.tempo;
    s->peers = st.peers;
    if (st.peers == 0)
        s->seen_playing = 0;            /* alone: playing */
    else if (st.playing)
        s->seen_playing = 1;
    int was = s->playing, bits = 0;
    s->playing = !s->start_stop || !s->seen_playing || st.playing;
    if (s->playing && !was) {
        s->starts++;
        bits |= LINK_STARTED;
    } else if (!s->playing && was) {
        s->stops++;
        bits |= LINK_STOPPED;
    }
    return bits;
}

double link_sync_beat_at(link_sync *s, int64_t now, double quantum)
{
    link_state st;
    link_read(s->l, quantum, now, &st);
    return st.beat;
}

double link_sync_phase_at(link_sync *s, int64_t now, double quantum)
{
    link_state st;
    link_read(s->l, quantum, now, &st);
    return st.phase;
}

int64_t link_sync_time_of(link_sync *s, double beat, double quantum)
{
    return link_time_at_beat(s->l, beat, quantum);
}

int link_sync_set_tempo(link_sync *s, double bpm)
{
    if (!s->l)
        return -1;
    link_set_tempo(s->l, bpm);
    s->tempo = bpm;
    return 0;
}

#else   /* built without Ableton Link */

int link_sync_join(link_sync *s, double bpm, int start_stop, char *why, size_t len)
{
    (void)s;
    (void)bpm;
    (void)start_stop;
    snprintf(why, len, "this continuo was built without Ableton Link "
             "(meson -Dlink=disabled, or ableton-link-dev was missing); use sync = clock or free");
    return -1;
}

void link_sync_leave(link_sync *s)
{
    (void)s;
}

void link_sync_set_start_stop(link_sync *s, int on)
{
    s->start_stop = on;
}

int link_sync_update(link_sync *s, int64_t now)
{
    (void)s;
    (void)now;
    return 0;
}

double link_sync_beat_at(link_sync *s, int64_t now, double quantum)
{
    (void)s;
    (void)now;
    (void)quantum;
    return 0;
}

double link_sync_phase_at(link_sync *s, int64_t now, double quantum)
{
    (void)s;
    (void)now;
    (void)quantum;
    return 0;
}

int64_t link_sync_time_of(link_sync *s, double beat, double quantum)
{
    (void)s;
    (void)beat;
    (void)quantum;
    return 0;
}

int link_sync_set_tempo(link_sync *s, double bpm)
{
    (void)s;
    (void)bpm;
    return -1;
}

#endif

/* alsa_seq.c: ALSA sequencer backend: client "continuo" with three ports.
 *
 *   0 "continuo"  duplex, as a hardware MIDI device's port 0: what is written
 *                 to it is input, what continuo plays is sent from it, so the
 *                 client's name alone reaches it (`aconnect KEYBOARD continuo`,
 *                 `aconnect continuo SYNTH`, `aplaymidi -p continuo`,
 *                 `arecordmidi -p continuo`: alsa-lib reads a bare client
 *                 name as port 0, and a port *name* after the colon as 0 too);
 *   1 "in"        input only, and 2 "out" output only, for DAWs that list
 *                 inputs and outputs apart (`continuo:1`, `continuo:2`).
 * Port 0 carries the directions that are open: writable while an ALSA input
 * is, readable while an ALSA output is.
 *
 * Every event that reaches our ports is stamped by the kernel with the real
 * time of our queue as it arrives, so a clock tick keeps its true time even
 * when the service reads it late (a busy machine, an emulated one): the
 * read returns each message's age, queue time now minus its stamp. */
#include "config.h"

#include "io/backend.h"

#include <alsa/asoundlib.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define ALSA_CLIENT_NAME midi_port_client_name()
#define ALSA_PORT_MAIN 0    /* "continuo": aplaymidi -p continuo, arecordmidi -p continuo */
#define ALSA_PORT_IN   1    /* "continuo:in": aplaymidi -p continuo:1 */
#define ALSA_PORT_OUT  2    /* "continuo:out": arecordmidi -p continuo:2 */
#define CAPS_IN  (SND_SEQ_PORT_CAP_WRITE | SND_SEQ_PORT_CAP_SUBS_WRITE)
#define CAPS_OUT (SND_SEQ_PORT_CAP_READ | SND_SEQ_PORT_CAP_SUBS_READ)
#define ALSA_MAX_PEERS 8

/* A port to keep connected to ours: a source for input, a destination for
 * output, as the user named it. */
typedef struct alsa_peer {
    char  spec[128];        /* "Midi Through:0", "14:0", "VirMIDI 1-0" */
    int   connected;
    snd_seq_addr_t addr;    /* valid while connected */
} alsa_peer;

/* The one sequencer client of this process, shared by its ports. */
typedef struct alsa_client {
    snd_seq_t *seq;
    int        refs;        /* ports open on it */
    int        watching;    /* subscribed to the system announce port */
    unsigned   main_caps;   /* capabilities of port 0 now, 0: not created */
    int        queue;       /* running queue that stamps our input, -1: none */
} alsa_client;

static alsa_client g_client;

/* A source that played into our input: what it holds down (notes, the
 * sustain pedal), so that if it goes away mid-chord they are let go. */
#define ALSA_MAX_SOURCES 16
typedef struct alsa_source {
    snd_seq_addr_t addr;
    int            used;
    uint8_t        held[16][128];   /* note on without its note-off, by channel */
    uint16_t       pedal;           /* channels with CC64 >= 64 */
} alsa_source;

/* Messages of release waiting for the next read (more than a read takes). */
#define ALSA_RELEASE_MAX (16 * 128 + 16)

/* State of one of our ports. */
typedef struct alsa_port {
    int       port;         /* ALSA_PORT_IN or ALSA_PORT_OUT */
    alsa_peer peers[ALSA_MAX_PEERS];
    int       n_peers;
    alsa_source sources[ALSA_MAX_SOURCES];
    midi_msg  release[ALSA_RELEASE_MAX];
    int       n_release, i_release;
    uint64_t  released;     /* notes let go because their source left */
} alsa_port;

/* alsa-lib prints its own line for a failed open; we log the cause once
 * ourselves, so it is kept quiet around snd_seq_open. */
static void quiet_handler(const char *file, int line, const char *function, int err,
                          const char *fmt, ...)
{
    (void)file;
    (void)line;
    (void)function;
    (void)err;
    (void)fmt;
}

static int open_seq(snd_seq_t **seq)
{
    snd_lib_error_set_handler(quiet_handler);
    int rc = snd_seq_open(seq, "default", SND_SEQ_OPEN_DUPLEX, SND_SEQ_NONBLOCK);
    snd_lib_error_set_handler(NULL);
    return rc;
}

static int client_ref(char *err, size_t errlen)
{
    if (g_client.seq) {
        g_client.refs++;
        return 0;
    }
    int rc = open_seq(&g_client.seq);
    if (rc < 0) {
        snprintf(err, errlen, "cannot open the ALSA sequencer: %s", snd_strerror(rc));
        g_client.seq = NULL;
        return -1;
    }
    rc = snd_seq_set_client_name(g_client.seq, ALSA_CLIENT_NAME);
    if (rc < 0) {
        snprintf(err, errlen, "cannot name the ALSA client \"%s\": %s", ALSA_CLIENT_NAME,
                 snd_strerror(rc));
        snd_seq_close(g_client.seq);
        g_client.seq = NULL;
        return -1;
    }
    g_client.refs = 1;
    g_client.watching = 0;
    g_client.main_caps = 0;
    g_client.queue = snd_seq_alloc_named_queue(g_client.seq, ALSA_CLIENT_NAME);
    if (g_client.queue >= 0) {
        rc = snd_seq_start_queue(g_client.seq, g_client.queue, NULL);
        if (rc >= 0)
            rc = snd_seq_drain_output(g_client.seq);
        if (rc < 0) {
            snd_seq_free_queue(g_client.seq, g_client.queue);
            g_client.queue = rc;
        }
    }
    if (g_client.queue < 0) {
        log_warn("ALSA: no queue to time-stamp input (%s): MIDI clock is timed when read",
                 snd_strerror(g_client.queue));
        g_client.queue = -1;
    } else
        log_info("ALSA: input time-stamped by queue %d as it arrives", g_client.queue);
    return 0;
}

static void client_unref(void)
{
    if (--g_client.refs > 0)
        return;
    if (g_client.queue >= 0)
        snd_seq_free_queue(g_client.seq, g_client.queue);
    g_client.queue = -1;
    snd_seq_close(g_client.seq);
    g_client.seq = NULL;
    g_client.watching = 0;
    g_client.main_caps = 0;
}

static int create_port(int number, const char *name, unsigned caps, char *err, size_t errlen)
{
    snd_seq_port_info_t *pi;
    snd_seq_port_info_alloca(&pi);
    snd_seq_port_info_set_port(pi, number);
    snd_seq_port_info_set_port_specified(pi, 1);
    snd_seq_port_info_set_name(pi, name);
    snd_seq_port_info_set_capability(pi, caps);
    snd_seq_port_info_set_type(pi, SND_SEQ_PORT_TYPE_MIDI_GENERIC | SND_SEQ_PORT_TYPE_APPLICATION);
    if (g_client.queue >= 0) {      /* what arrives gets the queue's real time */
        snd_seq_port_info_set_timestamping(pi, 1);
        snd_seq_port_info_set_timestamp_real(pi, 1);
        snd_seq_port_info_set_timestamp_queue(pi, g_client.queue);
    }
    int rc = snd_seq_create_port(g_client.seq, pi);
    if (rc < 0) {
        snprintf(err, errlen, "cannot create port \"%s:%s\": %s", ALSA_CLIENT_NAME, name,
                 snd_strerror(rc));
        return -1;
    }
    return 0;
}

/* Gives port 0 the directions CAPS (CAPS_IN, CAPS_OUT or both): creates it,
 * changes it, or deletes it when CAPS is 0. */
static int main_port_set(unsigned caps, char *err, size_t errlen)
{
    if (caps == g_client.main_caps)
        return 0;
    if (caps == 0) {
        snd_seq_delete_port(g_client.seq, ALSA_PORT_MAIN);
        g_client.main_caps = 0;
        return 0;
    }
    if (g_client.main_caps == 0) {
        if (create_port(ALSA_PORT_MAIN, ALSA_CLIENT_NAME, caps, err, errlen) != 0)
            return -1;
    } else {
        snd_seq_port_info_t *pi;
        snd_seq_port_info_alloca(&pi);
        int rc = snd_seq_get_port_info(g_client.seq, ALSA_PORT_MAIN, pi);
        if (rc >= 0) {
            snd_seq_port_info_set_capability(pi, caps);
            rc = snd_seq_set_port_info(g_client.seq, ALSA_PORT_MAIN, pi);
        }
        if (rc < 0) {
            snprintf(err, errlen, "cannot change port \"%s:%s\": %s", ALSA_CLIENT_NAME,
                     ALSA_CLIENT_NAME, snd_strerror(rc));
            return -1;
        }
    }
    g_client.main_caps = caps;
    return 0;
}

/* Tries to connect PEER to our port; returns 1 when connected. Quiet when
 * the peer is not there (it may come later). */
static int peer_connect(alsa_port *ap, alsa_peer *peer, int verbose)
{
    snd_seq_addr_t addr;
    if (snd_seq_parse_address(g_client.seq, &addr, peer->spec) < 0) {
        if (verbose)
            log_warn("ALSA port '%s' is not there yet; %s:%s will connect when it appears",
                     peer->spec, ALSA_CLIENT_NAME, ap->port == ALSA_PORT_IN ? "in" : "out");
        return 0;
    }
    int rc = ap->port == ALSA_PORT_IN
        ? snd_seq_connect_from(g_client.seq, ap->port, addr.client, addr.port)
        : snd_seq_connect_to(g_client.seq, ap->port, addr.client, addr.port);
    if (rc < 0 && rc != -EBUSY) {
        if (verbose)
            log_warn("cannot connect ALSA port '%s' (%d:%d) %s %s:%s: %s", peer->spec,
                     addr.client, addr.port, ap->port == ALSA_PORT_IN ? "to" : "from",
                     ALSA_CLIENT_NAME,
                     ap->port == ALSA_PORT_IN ? "in" : "out", snd_strerror(rc));
        return 0;
    }
    peer->connected = 1;
    peer->addr = addr;
    log_info("ALSA: connected %s (%d:%d) %s %s:%s", peer->spec, addr.client, addr.port,
             ap->port == ALSA_PORT_IN ? "to" : "from", ALSA_CLIENT_NAME, ap->port == ALSA_PORT_IN ? "in" : "out");
    return 1;
}

/* Splits ARG ("a:0,b:1") into AP's peers. */
static int parse_peers(alsa_port *ap, const char *arg, char *err, size_t errlen)
{
    const char *s = arg;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len > 0) {
            if (ap->n_peers == ALSA_MAX_PEERS) {
                snprintf(err, errlen, "more than %d ports to connect", ALSA_MAX_PEERS);
                return -1;
            }
            if (len >= sizeof ap->peers[0].spec) {
                snprintf(err, errlen, "port name too long: %.*s...", 40, s);
                return -1;
            }
            alsa_peer *peer = &ap->peers[ap->n_peers++];
            memcpy(peer->spec, s, len);
            peer->spec[len] = '\0';
        }
        s += len;
        if (*s == ',')
            s++;
    }
    return 0;
}

static int alsa_open(midi_port *p, const char *arg, char *err, size_t errlen)
{
    alsa_port *ap = calloc(1, sizeof *ap);
    if (!ap) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ap->port = p->dir == MIDI_IN ? ALSA_PORT_IN : ALSA_PORT_OUT;
    if (parse_peers(ap, arg, err, errlen) != 0) {
        free(ap);
        return -1;
    }
    if (client_ref(err, errlen) != 0) {
        free(ap);
        return -1;
    }
    unsigned caps = p->dir == MIDI_IN ? CAPS_IN : CAPS_OUT;
    int rc = create_port(ap->port, p->dir == MIDI_IN ? "in" : "out", caps, err, errlen);
    if (rc == 0 && main_port_set(g_client.main_caps | caps, err, errlen) != 0) {
        snd_seq_delete_port(g_client.seq, ap->port);
        rc = -1;
    }
    if (rc != 0) {
        client_unref();
        free(ap);
        return -1;
    }
    if (p->dir == MIDI_IN && ap->n_peers > 0 && !g_client.watching) {
        /* Announcements of clients and ports coming and going reach our
         * input port, so a source that comes back is connected again. */
        rc = snd_seq_connect_from(g_client.seq, ALSA_PORT_IN, SND_SEQ_CLIENT_SYSTEM,
                                  SND_SEQ_PORT_SYSTEM_ANNOUNCE);
        if (rc < 0)
            log_warn("ALSA: cannot watch for ports coming and going: %s", snd_strerror(rc));
        else
            g_client.watching = 1;
    }
    for (int i = 0; i < ap->n_peers; i++)
        peer_connect(ap, &ap->peers[i], 1);
    p->priv = ap;
    return 0;
}

static void alsa_close(midi_port *p)
{
    alsa_port *ap = p->priv;
    if (!ap)
        return;
    if (ap->port == ALSA_PORT_IN)
        g_client.watching = 0;      /* the subscription goes with the port */
    snd_seq_delete_port(g_client.seq, ap->port);
    char err[160];
    if (main_port_set(g_client.main_caps & ~(ap->port == ALSA_PORT_IN ? CAPS_IN : CAPS_OUT),
                      err, sizeof err) != 0)
        log_warn("ALSA: %s", err);
    client_unref();
    free(ap);
    p->priv = NULL;
}

static int alsa_poll_fds(midi_port *p, struct pollfd *fds, int max)
{
    if (p->dir != MIDI_IN)
        return 0;
    int n = snd_seq_poll_descriptors_count(g_client.seq, POLLIN);
    if (n > max)
        n = max;
    return snd_seq_poll_descriptors(g_client.seq, fds, (unsigned)n, POLLIN);
}

/* The source EV came from (a slot of ap->sources; the oldest one's is
 * reused when all are taken), or NULL. */
static alsa_source *source_of(alsa_port *ap, const snd_seq_addr_t *a, int make)
{
    alsa_source *free_slot = NULL;
    for (int i = 0; i < ALSA_MAX_SOURCES; i++) {
        alsa_source *s = &ap->sources[i];
        if (s->used && s->addr.client == a->client && s->addr.port == a->port)
            return s;
        if (!s->used && !free_slot)
            free_slot = s;
    }
    if (!make)
        return NULL;
    if (!free_slot)
        free_slot = &ap->sources[a->client % ALSA_MAX_SOURCES];
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->addr = *a;
    free_slot->used = 1;
    return free_slot;
}

/* What message M from A holds down, noted. */
static void note_held(alsa_port *ap, const snd_seq_addr_t *a, const midi_msg *m)
{
    int type = m->status & 0xF0, ch = m->status & 15;
    int on = type == 0x90 && m->data2 > 0, off = type == 0x80 || (type == 0x90 && m->data2 == 0);
    int pedal = type == 0xB0 && m->data1 == 64;
    if (!on && !off && !pedal)
        return;
    alsa_source *s = source_of(ap, a, on || (pedal && m->data2 >= 64));
    if (!s)
        return;
    if (pedal)
        s->pedal = m->data2 >= 64 ? (uint16_t)(s->pedal | 1u << ch) : (uint16_t)(s->pedal & ~(1u << ch));
    else
        s->held[ch][m->data1] = (uint8_t)on;
}

/* A source left (CLIENT: all of that client's ports): what it held down is
 * let go at the next read: a note-off for each note, the pedal up. */
static void release_source(alsa_port *ap, const snd_seq_addr_t *a, int client)
{
    for (int i = 0; i < ALSA_MAX_SOURCES; i++) {
        alsa_source *s = &ap->sources[i];
        if (!s->used || s->addr.client != a->client || (!client && s->addr.port != a->port))
            continue;
        for (int ch = 0; ch < 16; ch++) {
            for (int p = 0; p < 128; p++)
                if (s->held[ch][p] && ap->n_release < ALSA_RELEASE_MAX) {
                    ap->release[ap->n_release++] = (midi_msg){ (uint8_t)(0x80 | ch), (uint8_t)p, 0, 3 };
                    ap->released++;
                }
            if ((s->pedal & 1u << ch) && ap->n_release < ALSA_RELEASE_MAX)
                ap->release[ap->n_release++] = (midi_msg){ (uint8_t)(0xB0 | ch), 64, 0, 3 };
        }
        if (ap->n_release > ap->i_release)
            log_warn("MIDI input: ALSA source %d:%d left holding notes; they are let go", s->addr.client,
                     s->addr.port);
        s->used = 0;
    }
}

/* A client or port came or went: connect what came back; what one that
 * went held down is let go. */
static void handle_announce(alsa_port *ap, const snd_seq_event_t *ev)
{
    switch (ev->type) {
    case SND_SEQ_EVENT_PORT_EXIT:
    case SND_SEQ_EVENT_CLIENT_EXIT:
        release_source(ap, &ev->data.addr, ev->type == SND_SEQ_EVENT_CLIENT_EXIT);
        for (int i = 0; i < ap->n_peers; i++) {
            alsa_peer *peer = &ap->peers[i];
            if (peer->connected && peer->addr.client == ev->data.addr.client &&
                (ev->type == SND_SEQ_EVENT_CLIENT_EXIT || peer->addr.port == ev->data.addr.port)) {
                peer->connected = 0;
                log_warn("ALSA port '%s' went away; waiting for it to come back", peer->spec);
            }
        }
        break;
    case SND_SEQ_EVENT_PORT_UNSUBSCRIBED:     /* aconnect -d: a source unplugged from us */
        if (ev->data.connect.dest.client == snd_seq_client_id(g_client.seq)
            && (ev->data.connect.dest.port == ap->port || ev->data.connect.dest.port == ALSA_PORT_MAIN))
            release_source(ap, &ev->data.connect.sender, 0);
        break;
    case SND_SEQ_EVENT_PORT_START:
    case SND_SEQ_EVENT_CLIENT_START:
    case SND_SEQ_EVENT_CLIENT_CHANGE:
        for (int i = 0; i < ap->n_peers; i++)
            if (!ap->peers[i].connected)
                peer_connect(ap, &ap->peers[i], 0);
        break;
    default:
        break;
    }
}

/* Sequencer event -> MIDI message; returns 0 for events that are not one. */
static int event_to_msg(const snd_seq_event_t *ev, midi_msg *m)
{
    const snd_seq_ev_note_t *n = &ev->data.note;
    const snd_seq_ev_ctrl_t *c = &ev->data.control;
    switch (ev->type) {
    case SND_SEQ_EVENT_NOTEON:
        *m = (midi_msg){ (uint8_t)(0x90 | (n->channel & 15)), n->note & 127, n->velocity & 127, 3 };
        return 1;
    case SND_SEQ_EVENT_NOTEOFF:
        *m = (midi_msg){ (uint8_t)(0x80 | (n->channel & 15)), n->note & 127, n->velocity & 127, 3 };
        return 1;
    case SND_SEQ_EVENT_KEYPRESS:
        *m = (midi_msg){ (uint8_t)(0xA0 | (n->channel & 15)), n->note & 127, n->velocity & 127, 3 };
        return 1;
    case SND_SEQ_EVENT_CONTROLLER:
        *m = (midi_msg){ (uint8_t)(0xB0 | (c->channel & 15)), (uint8_t)(c->param & 127),
                         (uint8_t)(c->value & 127), 3 };
        return 1;
    case SND_SEQ_EVENT_PGMCHANGE:
        *m = (midi_msg){ (uint8_t)(0xC0 | (c->channel & 15)), (uint8_t)(c->value & 127), 0, 2 };
        return 1;
    case SND_SEQ_EVENT_CHANPRESS:
        *m = (midi_msg){ (uint8_t)(0xD0 | (c->channel & 15)), (uint8_t)(c->value & 127), 0, 2 };
        return 1;
    case SND_SEQ_EVENT_PITCHBEND: {
        int v = c->value + 8192;
        if (v < 0) v = 0;
        if (v > 16383) v = 16383;
        *m = (midi_msg){ (uint8_t)(0xE0 | (c->channel & 15)), (uint8_t)(v & 127),
                         (uint8_t)(v >> 7), 3 };
        return 1;
    }
    case SND_SEQ_EVENT_CLOCK: *m = (midi_msg){ 0xF8, 0, 0, 1 }; return 1;
    case SND_SEQ_EVENT_START: *m = (midi_msg){ 0xFA, 0, 0, 1 }; return 1;
    case SND_SEQ_EVENT_CONTINUE: *m = (midi_msg){ 0xFB, 0, 0, 1 }; return 1;
    case SND_SEQ_EVENT_STOP: *m = (midi_msg){ 0xFC, 0, 0, 1 }; return 1;
    case SND_SEQ_EVENT_SONGPOS: {        /* value: 16ths from the song's start */
        int v = c->value < 0 ? 0 : c->value > 16383 ? 16383 : c->value;
        *m = (midi_msg){ 0xF2, (uint8_t)(v & 127), (uint8_t)(v >> 7), 3 };
        return 1;
    }
    default:
        return 0;
    }
}

/* EV's stamp in ns of our queue's real time, or -1 when it has none. */
static int64_t event_stamp(const snd_seq_event_t *ev)
{
    if (g_client.queue < 0 || ev->queue != g_client.queue ||
        (ev->flags & SND_SEQ_TIME_STAMP_MASK) != SND_SEQ_TIME_STAMP_REAL)
        return -1;
    return (int64_t)ev->time.time.tv_sec * 1000000000 + ev->time.time.tv_nsec;
}

/* Our queue's real time now in ns, or -1. */
static int64_t queue_now(void)
{
    snd_seq_queue_status_t *st;
    snd_seq_queue_status_alloca(&st);
    if (g_client.queue < 0 || snd_seq_get_queue_status(g_client.seq, g_client.queue, st) < 0)
        return -1;
    const snd_seq_real_time_t *rt = snd_seq_queue_status_get_real_time(st);
    return (int64_t)rt->tv_sec * 1000000000 + rt->tv_nsec;
}

/* The notes of a source that left, into OUT from N (up to MAX): the new N. */
static int take_release(alsa_port *ap, midi_msg *out, int64_t *age_ns, int n, int max)
{
    while (n < max && ap->i_release < ap->n_release) {
        age_ns[n] = -1;
        out[n++] = ap->release[ap->i_release++];
    }
    if (ap->i_release == ap->n_release)
        ap->i_release = ap->n_release = 0;
    return n;
}

/* Reads what came; the notes of a source that left go out in the same read
 * that saw it leave (no later read may come: nothing else need arrive), or
 * at the next one when OUT is full (the caller reads again then). */
static int alsa_read(midi_port *p, midi_msg *out, int64_t *age_ns, int max)
{
    alsa_port *ap = p->priv;
    int n = take_release(ap, out, age_ns, 0, max), stamped = 0;
    while (n < max) {
        snd_seq_event_t *ev = NULL;
        int rc = snd_seq_event_input(g_client.seq, &ev);
        if (rc == -EAGAIN)
            break;
        if (rc == -ENOSPC) {            /* the kernel's queue overflowed */
            p->stats.dropped++;
            continue;
        }
        if (rc < 0) {
            log_error("MIDI input '%s': cannot read ALSA events: %s", p->name, snd_strerror(rc));
            return -1;
        }
        if (!ev)
            continue;
        if (ev->source.client == SND_SEQ_CLIENT_SYSTEM) {
            handle_announce(ap, ev);
            n = take_release(ap, out, age_ns, n, max);
        } else if (event_to_msg(ev, &out[n])) {
            note_held(ap, &ev->source, &out[n]);
            age_ns[n] = event_stamp(ev);    /* the stamp for now, made an age below */
            stamped += age_ns[n] >= 0;
            n++;
        }
    }
    int64_t now = stamped ? queue_now() : -1;
    for (int i = 0; i < n; i++)
        age_ns[i] = now < 0 || age_ns[i] < 0 || age_ns[i] > now ? 0 : now - age_ns[i];
    return n;
}

/* Sends M to the subscribers of "out" and of port 0. */
static int alsa_write(midi_port *p, const midi_msg *m)
{
    (void)p;
    snd_seq_event_t ev;
    snd_seq_ev_clear(&ev);
    snd_seq_ev_set_subs(&ev);
    snd_seq_ev_set_direct(&ev);
    int ch = m->status & 15;
    switch (m->status & 0xF0) {
    case 0x80: snd_seq_ev_set_noteoff(&ev, ch, m->data1, m->data2); break;
    case 0x90: snd_seq_ev_set_noteon(&ev, ch, m->data1, m->data2); break;
    case 0xA0: snd_seq_ev_set_keypress(&ev, ch, m->data1, m->data2); break;
    case 0xB0: snd_seq_ev_set_controller(&ev, ch, m->data1, m->data2); break;
    case 0xC0: snd_seq_ev_set_pgmchange(&ev, ch, m->data1); break;
    case 0xD0: snd_seq_ev_set_chanpress(&ev, ch, m->data1); break;
    case 0xE0: snd_seq_ev_set_pitchbend(&ev, ch, (m->data1 | (m->data2 << 7)) - 8192); break;
    default:
        switch (m->status) {
        case 0xF8: ev.type = SND_SEQ_EVENT_CLOCK; break;
        case 0xFA: ev.type = SND_SEQ_EVENT_START; break;
        case 0xFB: ev.type = SND_SEQ_EVENT_CONTINUE; break;
        case 0xFC: ev.type = SND_SEQ_EVENT_STOP; break;
        case 0xF2:
            ev.type = SND_SEQ_EVENT_SONGPOS;
            ev.data.control.value = m->data1 | (m->data2 << 7);
            break;
        default:
            return 0;   /* other system messages are not sent to ALSA peers */
        }
    }
    static const int ports[] = { ALSA_PORT_OUT, ALSA_PORT_MAIN };
    for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++) {
        snd_seq_ev_set_source(&ev, ports[i]);
        int rc = snd_seq_event_output_direct(g_client.seq, &ev);
        if (rc < 0) {
            errno = -rc;
            return -1;
        }
    }
    return 0;
}

static int alsa_list(midi_port_list_fn fn, void *user)
{
    snd_seq_t *seq = g_client.seq;
    int own = 0;
    if (!seq) {
        int rc = open_seq(&seq);
        if (rc < 0) {
            log_error("cannot list ALSA ports: cannot open the ALSA sequencer: %s",
                      snd_strerror(rc));
            return -1;
        }
        own = 1;
    }
    int self = snd_seq_client_id(seq), n = 0;
    snd_seq_client_info_t *ci;
    snd_seq_port_info_t *pi;
    snd_seq_client_info_alloca(&ci);
    snd_seq_port_info_alloca(&pi);
    snd_seq_client_info_set_client(ci, -1);
    while (snd_seq_query_next_client(seq, ci) >= 0) {
        int client = snd_seq_client_info_get_client(ci);
        if (client == SND_SEQ_CLIENT_SYSTEM || client == self)
            continue;
        snd_seq_port_info_set_client(pi, client);
        snd_seq_port_info_set_port(pi, -1);
        while (snd_seq_query_next_port(seq, pi) >= 0) {
            unsigned caps = snd_seq_port_info_get_capability(pi), dirs = 0;
            if ((caps & (SND_SEQ_PORT_CAP_READ | SND_SEQ_PORT_CAP_SUBS_READ)) ==
                (SND_SEQ_PORT_CAP_READ | SND_SEQ_PORT_CAP_SUBS_READ))
                dirs |= MIDI_IN;
            if ((caps & (SND_SEQ_PORT_CAP_WRITE | SND_SEQ_PORT_CAP_SUBS_WRITE)) ==
                (SND_SEQ_PORT_CAP_WRITE | SND_SEQ_PORT_CAP_SUBS_WRITE))
                dirs |= MIDI_OUT;
            if (!dirs)
                continue;
            char spec[64], desc[160];
            snprintf(spec, sizeof spec, "alsa:%d:%d", client, snd_seq_port_info_get_port(pi));
            snprintf(desc, sizeof desc, "%s:%s", snd_seq_client_info_get_name(ci),
                     snd_seq_port_info_get_name(pi));
            midi_port_info info = { "alsa", spec, desc, dirs };
            fn(&info, user);
            n++;
        }
    }
    if (own)
        snd_seq_close(seq);
    return n;
}

const midi_backend midi_backend_alsa = {
    .name = "alsa",
    .usage = "alsa[:PORT,...] (ALSA sequencer client continuo: port 0 \"continuo\" both "
             "ways, 1 \"in\", 2 \"out\"; optionally connected to the named \"client:port\" peers)",
    .dirs = MIDI_IN | MIDI_OUT,
    .open = alsa_open,
    .close = alsa_close,
    .poll_fds = alsa_poll_fds,
    .read = alsa_read,
    .write = alsa_write,
    .list = alsa_list,
};

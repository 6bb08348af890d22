/* seq_daw.c: a DAW on the ALSA sequencer, for the guest tests: plays MIDI
 * clock, transport and notes into a port on a script's time line and
 * records what the port sends back, every event stamped by the kernel.
 *
 * usage: seq_daw PORT SCRIPT
 *   PORT    the port to play into and record from ("continuo": port 0)
 *   SCRIPT  one item a line, in tick order:
 *             end N          send N clock ticks (0 .. N-1)
 *             tempo K BPM    the tempo from tick K on (120 before the first)
 *             K HEX...       MIDI bytes sent with tick K: transport (FA FB
 *                            FC, F2 LL MM) before its clock, the rest after
 *             K ! COMMAND    `sh -c COMMAND` started after tick K, not waited
 *                            for (its output goes to ours)
 * Output, one line each, times in microseconds of the client's queue (real
 * time, stamped by the sequencer as it delivers the event):
 *   S K T      tick K's clock, as delivered (seq_daw hears its own output
 *              through a second subscription, stamped the same way)
 *   T K T      the transport message sent with tick K (before its clock)
 *   R T HEX... an event PORT sent us, as MIDI bytes
 *   E ticks=N received=N lost=N   at the end
 * Exit status 0, or 1 with a message on stderr naming what failed.
 *
 * Two ports: "out" sends (subscribed to PORT and to our own "in"), "in"
 * receives (subscribed from PORT); both subscriptions into "in" carry the
 * queue's real-time stamp, so a tick and an answer to it are measured on
 * one clock, without this program's own wake-up delays. */
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <errno.h>
#include <poll.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

#define MAX_ITEMS 8192
#define MAX_BYTES 16
#define TAIL_NS   1500000000LL  /* recording goes on this long after the last tick */

/* One thing the script sends or runs with a tick. */
typedef struct item {
    long    tick;
    int     n;                  /* MIDI bytes; 0: a command */
    uint8_t bytes[MAX_BYTES];
    char   *command;            /* owned; NULL for bytes */
} item;

typedef struct tempo_change {
    long   tick;
    double bpm;
} tempo_change;

typedef struct script {
    item         items[MAX_ITEMS];
    int          n_items;
    tempo_change tempo[256];
    int          n_tempo;
    long         n_ticks;
} script;

typedef struct daw {
    snd_seq_t        *seq;
    int               me, port_out, port_in, queue;
    snd_seq_addr_t    dest;
    snd_midi_event_t *enc, *dec;
    long              heard_ticks;     /* our own clocks heard back */
    long              received, lost;
} daw;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int parse_script(const char *path, script *s)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "seq_daw: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        char *p = line;
        long k;
        double bpm;
        int used;
        if (*p == '\0' || *p == '#')
            continue;
        if (sscanf(p, "end %ld", &k) == 1) {
            s->n_ticks = k;
        } else if (sscanf(p, "tempo %ld %lf", &k, &bpm) == 2 && bpm > 0) {
            if (s->n_tempo == (int)(sizeof s->tempo / sizeof s->tempo[0]))
                rc = -1;
            else
                s->tempo[s->n_tempo++] = (tempo_change){ k, bpm };
        } else if (sscanf(p, "%ld%n", &k, &used) == 1 && s->n_items < MAX_ITEMS) {
            item *it = &s->items[s->n_items];
            memset(it, 0, sizeof *it);
            it->tick = k;
            p += used;
            while (*p == ' ')
                p++;
            if (*p == '!') {
                it->command = strdup(p + 1);
                if (!it->command)
                    rc = -1;
            } else {
                unsigned b;
                while (sscanf(p, "%2x%n", &b, &used) == 1 && it->n < MAX_BYTES) {
                    it->bytes[it->n++] = (uint8_t)b;
                    p += used;
                    while (*p == ' ')
                        p++;
                }
                if (it->n == 0 || *p)
                    rc = -1;
            }
            s->n_items++;
        } else {
            rc = -1;
        }
        if (rc)
            fprintf(stderr, "seq_daw: %s:%d: cannot read \"%s\"\n", path, lineno, line);
    }
    fclose(f);
    if (rc == 0 && s->n_ticks <= 0) {
        fprintf(stderr, "seq_daw: %s: no \"end N\" line\n", path);
        rc = -1;
    }
    return rc;
}

static int make_port(daw *d, const char *name, unsigned caps)
{
    int port = snd_seq_create_simple_port(d->seq, name, caps,
                                          SND_SEQ_PORT_TYPE_MIDI_GENERIC | SND_SEQ_PORT_TYPE_APPLICATION);
    if (port < 0)
        fprintf(stderr, "seq_daw: cannot create port \"%s\": %s\n", name, snd_strerror(port));
    return port;
}

/* SENDER -> our "in", every event stamped with the queue's real time. */
static int subscribe_stamped(daw *d, snd_seq_addr_t sender, const char *what)
{
    snd_seq_port_subscribe_t *sub;
    snd_seq_port_subscribe_alloca(&sub);
    snd_seq_addr_t in = { (unsigned char)d->me, (unsigned char)d->port_in };
    snd_seq_port_subscribe_set_sender(sub, &sender);
    snd_seq_port_subscribe_set_dest(sub, &in);
    snd_seq_port_subscribe_set_queue(sub, d->queue);
    snd_seq_port_subscribe_set_time_update(sub, 1);
    snd_seq_port_subscribe_set_time_real(sub, 1);
    int rc = snd_seq_subscribe_port(d->seq, sub);
    if (rc < 0)
        fprintf(stderr, "seq_daw: cannot subscribe to %s: %s\n", what, snd_strerror(rc));
    return rc;
}

static int daw_open(daw *d, const char *port)
{
    int rc = snd_seq_open(&d->seq, "default", SND_SEQ_OPEN_DUPLEX, SND_SEQ_NONBLOCK);
    if (rc < 0) {
        fprintf(stderr, "seq_daw: cannot open the ALSA sequencer: %s\n", snd_strerror(rc));
        return -1;
    }
    snd_seq_set_client_name(d->seq, "seq_daw");
    d->me = snd_seq_client_id(d->seq);
    d->port_out = make_port(d, "out", SND_SEQ_PORT_CAP_READ | SND_SEQ_PORT_CAP_SUBS_READ);
    d->port_in = make_port(d, "in", SND_SEQ_PORT_CAP_WRITE | SND_SEQ_PORT_CAP_SUBS_WRITE);
    if (d->port_out < 0 || d->port_in < 0)
        return -1;
    d->queue = snd_seq_alloc_named_queue(d->seq, "seq_daw");
    if (d->queue < 0) {
        fprintf(stderr, "seq_daw: cannot allocate a queue: %s\n", snd_strerror(d->queue));
        return -1;
    }
    if ((rc = snd_seq_start_queue(d->seq, d->queue, NULL)) < 0 || (rc = snd_seq_drain_output(d->seq)) < 0) {
        fprintf(stderr, "seq_daw: cannot start the queue: %s\n", snd_strerror(rc));
        return -1;
    }
    if ((rc = snd_seq_parse_address(d->seq, &d->dest, port)) < 0) {
        fprintf(stderr, "seq_daw: no port \"%s\": %s\n", port, snd_strerror(rc));
        return -1;
    }
    if ((rc = snd_seq_connect_to(d->seq, d->port_out, d->dest.client, d->dest.port)) < 0) {
        fprintf(stderr, "seq_daw: cannot connect to %s: %s\n", port, snd_strerror(rc));
        return -1;
    }
    snd_seq_addr_t out = { (unsigned char)d->me, (unsigned char)d->port_out };
    if (subscribe_stamped(d, d->dest, port) < 0 || subscribe_stamped(d, out, "our own output") < 0)
        return -1;
    if (snd_midi_event_new(MAX_BYTES, &d->enc) < 0 || snd_midi_event_new(64, &d->dec) < 0) {
        fprintf(stderr, "seq_daw: out of memory\n");
        return -1;
    }
    snd_midi_event_no_status(d->dec, 1);        /* a status byte on every message */
    return 0;
}

static long stamp_us(const snd_seq_event_t *ev)
{
    return (long)ev->time.time.tv_sec * 1000000L + (long)ev->time.time.tv_nsec / 1000L;
}

/* Reads what has come: our own clocks become S lines, PORT's events R lines. */
static int drain_input(daw *d)
{
    for (;;) {
        snd_seq_event_t *ev = NULL;
        int rc = snd_seq_event_input(d->seq, &ev);
        if (rc == -EAGAIN)
            return 0;
        if (rc == -ENOSPC) {            /* the kernel's queue for us overflowed */
            d->lost++;
            continue;
        }
        if (rc < 0) {
            fprintf(stderr, "seq_daw: cannot read events: %s\n", snd_strerror(rc));
            return -1;
        }
        if (!ev)
            continue;
        if (ev->source.client == d->me) {
            if (ev->type == SND_SEQ_EVENT_CLOCK)
                printf("S %ld %ld\n", d->heard_ticks++, stamp_us(ev));
            else if (ev->type == SND_SEQ_EVENT_START || ev->type == SND_SEQ_EVENT_STOP ||
                     ev->type == SND_SEQ_EVENT_CONTINUE || ev->type == SND_SEQ_EVENT_SONGPOS)
                printf("T %ld %ld\n", d->heard_ticks, stamp_us(ev));
            continue;
        }
        if (ev->source.client != d->dest.client || ev->source.port != d->dest.port)
            continue;
        unsigned char buf[64];
        long n = snd_midi_event_decode(d->dec, buf, sizeof buf, ev);
        if (n <= 0)
            continue;
        d->received++;
        printf("R %ld", stamp_us(ev));
        for (long i = 0; i < n; i++)
            printf(" %02x", buf[i]);
        printf("\n");
    }
}

/* Reads events until DEADLINE (CLOCK_MONOTONIC, ns). */
static int listen_until(daw *d, int64_t deadline)
{
    struct pollfd fds[4];
    int nfds = snd_seq_poll_descriptors(d->seq, fds, 4, POLLIN);
    for (;;) {
        if (drain_input(d) < 0)
            return -1;
        int64_t left = deadline - now_ns();
        if (left <= 0)
            return 0;
        struct timespec ts = { (time_t)(left / 1000000000LL), (long)(left % 1000000000LL) };
        if (ppoll(fds, (nfds_t)nfds, &ts, NULL) < 0 && errno != EINTR) {
            fprintf(stderr, "seq_daw: poll: %s\n", strerror(errno));
            return -1;
        }
    }
}

static int send_bytes(daw *d, const uint8_t *bytes, int n)
{
    snd_seq_event_t ev;
    snd_midi_event_reset_encode(d->enc);
    for (int i = 0; i < n;) {
        snd_seq_ev_clear(&ev);
        long used = snd_midi_event_encode(d->enc, bytes + i, n - i, &ev);
        if (used <= 0) {
            fprintf(stderr, "seq_daw: cannot encode MIDI byte %02x\n", bytes[i]);
            return -1;
        }
        i += (int)used;
        if (ev.type == SND_SEQ_EVENT_NONE)
            continue;           /* the message is not complete yet */
        snd_seq_ev_set_source(&ev, d->port_out);
        snd_seq_ev_set_subs(&ev);
        snd_seq_ev_set_direct(&ev);
        int rc = snd_seq_event_output_direct(d->seq, &ev);
        if (rc < 0) {
            fprintf(stderr, "seq_daw: cannot send: %s\n", snd_strerror(rc));
            return -1;
        }
    }
    return 0;
}

static int is_transport(const item *it)
{
    return it->n > 0 && (it->bytes[0] == 0xFA || it->bytes[0] == 0xFB || it->bytes[0] == 0xFC ||
                         it->bytes[0] == 0xF2);
}

static void run_command(const char *command)
{
    char *argv[] = { "sh", "-c", (char *)command, NULL };
    pid_t pid;
    fflush(stdout);
    int rc = posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ);
    if (rc != 0)
        fprintf(stderr, "seq_daw: cannot run \"%s\": %s\n", command, strerror(rc));
}

/* Sends the script's ticks at their times, recording all along. */
static int play(daw *d, const script *s)
{
    int64_t t = now_ns() + 200000000LL;
    double bpm = 120.0;
    int next = 0, tempo_i = 0;
    uint8_t clock = 0xF8;
    for (long k = 0; k < s->n_ticks; k++) {
        while (tempo_i < s->n_tempo && s->tempo[tempo_i].tick <= k)
            bpm = s->tempo[tempo_i++].bpm;
        if (listen_until(d, t) < 0)
            return -1;
        int first = next;
        while (next < s->n_items && s->items[next].tick <= k)
            next++;
        for (int i = first; i < next; i++)
            if (is_transport(&s->items[i]) && send_bytes(d, s->items[i].bytes, s->items[i].n) < 0)
                return -1;
        if (send_bytes(d, &clock, 1) < 0)
            return -1;
        for (int i = first; i < next; i++) {
            const item *it = &s->items[i];
            if (it->command)
                run_command(it->command);
            else if (!is_transport(it) && send_bytes(d, it->bytes, it->n) < 0)
                return -1;
        }
        t += (int64_t)(60e9 / bpm / 24.0 + 0.5);
    }
    return listen_until(d, t + TAIL_NS);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: seq_daw PORT SCRIPT\n");
        return 2;
    }
    static script s;
    daw d;
    memset(&d, 0, sizeof d);
    setvbuf(stdout, NULL, _IOLBF, 0);  /* whole lines: commands write to it too */
    int rc = parse_script(argv[2], &s) == 0 && daw_open(&d, argv[1]) == 0 && play(&d, &s) == 0 ? 0 : 1;
    printf("E ticks=%ld received=%ld lost=%ld\n", d.heard_ticks, d.received, d.lost);
    while (wait(NULL) > 0)
        ;                       /* the commands started */
    if (d.enc)
        snd_midi_event_free(d.enc);
    if (d.dec)
        snd_midi_event_free(d.dec);
    if (d.seq)
        snd_seq_close(d.seq);
    for (int i = 0; i < s.n_items; i++)
        free(s.items[i].command);
    return rc;
}

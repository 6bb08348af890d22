/* midi_echo.c: test harness: forwards MIDI from one port to another, transposed. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/midi_port.h"
#include "util/clock.h"
#include "util/log.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void usage(FILE *to)
{
    fprintf(to,
        "usage: midi_echo [-t SEMITONES] [-n COUNT] [-s SECONDS] [-c CLIENT] [-l] INPUT OUTPUT\n"
        "Forwards every MIDI message from port INPUT to port OUTPUT (names as\n"
        "in midi_port_open: null, fifo:PATH, raw:DEV, alsa[:SRC], portmidi:NAME),\n"
        "notes transposed by SEMITONES (notes that leave 0..127 are dropped).\n"
        "Prints \"ready\" on stdout once both ports are open. Stops after COUNT\n"
        "messages (0: no limit) or SECONDS (default 10), or on SIGTERM/SIGINT.\n"
        "Exit status: 0, or 3 when time ran out before COUNT messages.\n"
        "-c names the ALSA client (default continuo).\n"
        "-l lists the ports every backend can see and exits.\n");
}

static void print_port(const midi_port_info *info, void *user)
{
    (void)user;
    const char *dirs = info->dirs == (MIDI_IN | MIDI_OUT) ? "in/out"
                     : info->dirs == MIDI_IN ? "in" : "out";
    printf("%-30s %-6s  %s\n", info->spec, dirs, info->description);
}

int main(int argc, char **argv)
{
    int transpose = 0;
    long count = 0;
    double seconds = 10.0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(opt, "-l") == 0)
            return midi_port_list(print_port, NULL) < 0 ? 1 : 0;
        if (i + 1 >= argc) {
            usage(stderr);
            return 2;
        }
        char *end;
        const char *val = argv[++i];
        if (strcmp(opt, "-t") == 0)
            transpose = (int)strtol(val, &end, 10);
        else if (strcmp(opt, "-n") == 0)
            count = strtol(val, &end, 10);
        else if (strcmp(opt, "-s") == 0)
            seconds = strtod(val, &end);
        else if (strcmp(opt, "-c") == 0) {
            midi_port_set_client_name(val);
            end = (char *)val + strlen(val);
        }
        else {
            usage(stderr);
            return 2;
        }
        if (*end || end == val) {
            fprintf(stderr, "midi_echo: bad value for %s: %s\n", opt, val);
            return 2;
        }
    }
    if (argc - i != 2) {
        usage(stderr);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    midi_port *in = midi_port_open(argv[i], MIDI_IN);
    if (!in)
        return 1;
    midi_port *out = midi_port_open(argv[i + 1], MIDI_OUT);
    if (!out) {
        midi_port_close(in);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);

    struct pollfd fds[8];
    int nfds = midi_port_poll_fds(in, fds, 8);
    double deadline = clock_now_seconds() + seconds;
    long forwarded = 0;
    int rc = 0;
    while (!stop && (count == 0 || forwarded < count)) {
        double left = deadline - clock_now_seconds();
        if (left <= 0)
            break;
        int ready = poll(fds, (nfds_t)nfds, (int)(left * 1000) + 1);
        if (ready < 0 && errno != EINTR) {
            log_error("poll: %s", strerror(errno));
            rc = 1;
            break;
        }
        if (ready <= 0)
            continue;
        midi_msg msgs[64];
        int n;
        do {
            n = midi_port_read(in, msgs, NULL, 64);
            if (n < 0) {
                rc = 1;
                break;
            }
            for (int k = 0; k < n; k++) {
                midi_msg m = msgs[k];
                unsigned type = m.status & 0xF0;
                if (midi_msg_is_channel(&m) && (type == 0x80 || type == 0x90 || type == 0xA0)) {
                    int key = m.data1 + transpose;
                    if (key < 0 || key > 127)
                        continue;
                    m.data1 = (uint8_t)key;
                }
                if (midi_port_write(out, &m) == 0)
                    forwarded++;
            }
        } while (n == 64 && rc == 0);
        if (rc)
            break;
    }
    if (rc == 0 && count > 0 && forwarded < count)
        rc = 3;
    const midi_port_stats *st = midi_port_get_stats(in);
    fprintf(stderr, "midi_echo: forwarded %ld message(s); received %llu, junk bytes %llu, "
            "reopened %llu\n", forwarded, (unsigned long long)st->received,
            (unsigned long long)st->parser.junk, (unsigned long long)st->reopened);
    midi_port_close(out);
    midi_port_close(in);
    return rc;
}

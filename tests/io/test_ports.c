/* test_ports.c: backend table, null and fifo ports, and the errors users see. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "io/midi_port.h"
#include "midi/smf.h"

/* libportmidi leaks a few bytes in Pm_Initialize (find_default_device);
 * not ours: tell LeakSanitizer, when it runs, to let it pass. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:find_default_device\n";
}

static char tmpdir[] = "/tmp/continuo-io-XXXXXX";
static char stderr_path[300];
static int saved_stderr = -1;

/* Sends stderr to a file until stderr_end, which returns what was written. */
static void stderr_begin(void)
{
    fflush(stderr);
    saved_stderr = dup(2);
    int fd = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
}

static const char *stderr_end(void)
{
    static char text[2048];
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    FILE *f = fopen(stderr_path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f)
        fclose(f);
    fputs(text, stderr);        /* still show it in the test log */
    return text;
}

static void test_table(void)
{
    const char *names[16];
    int n = midi_backend_names(names, 16);
    CHECK(n >= 3);
    int have_null = 0, have_fifo = 0, have_raw = 0;
    for (int i = 0; i < n && i < 16; i++) {
        have_null |= strcmp(names[i], "null") == 0;
        have_fifo |= strcmp(names[i], "fifo") == 0;
        have_raw |= strcmp(names[i], "raw") == 0;
    }
    CHECK(have_null && have_fifo && have_raw);
    CHECK_STR_CONTAINS(midi_backend_usage("fifo"), "fifo:PATH");
    CHECK(midi_backend_usage("carrier-pigeon") == NULL);
}

static void test_unknown_backend(void)
{
    stderr_begin();
    midi_port *p = midi_port_open("carrier-pigeon:coop", MIDI_IN);
    const char *err = stderr_end();
    CHECK(p == NULL);
    CHECK_STR_CONTAINS(err, "cannot open MIDI input 'carrier-pigeon:coop': unknown backend "
                       "'carrier-pigeon'");
    CHECK_STR_CONTAINS(err, "null, fifo, raw");
}

static void test_unopenable(void)
{
    stderr_begin();
    midi_port *p = midi_port_open("fifo:/nope", MIDI_IN);
    const char *err = stderr_end();
    CHECK(p == NULL);
    CHECK_STR_CONTAINS(err, "cannot open MIDI input 'fifo:/nope': No such file or directory");

    stderr_begin();
    p = midi_port_open("raw:/nope/midiC9D9", MIDI_OUT);
    err = stderr_end();
    CHECK(p == NULL);
    CHECK_STR_CONTAINS(err, "cannot open MIDI output 'raw:/nope/midiC9D9': No such file or directory");

    stderr_begin();
    p = midi_port_open("fifo:/etc/hostname", MIDI_IN);   /* a regular file */
    err = stderr_end();
    CHECK(p == NULL);
    CHECK_STR_CONTAINS(err, "cannot open MIDI input 'fifo:/etc/hostname': not a FIFO");

    stderr_begin();
    p = midi_port_open("fifo", MIDI_IN);
    err = stderr_end();
    CHECK(p == NULL);
    CHECK_STR_CONTAINS(err, "no path given");
}

/* Without /dev/snd/seq (as on this build machine) the ALSA backend, when
 * built, refuses with the cause. */
static void test_alsa_unavailable(void)
{
    const char *names[16];
    int n = midi_backend_names(names, 16), have_alsa = 0;
    for (int i = 0; i < n && i < 16; i++)
        have_alsa |= strcmp(names[i], "alsa") == 0;
    if (!have_alsa || access("/dev/snd/seq", F_OK) == 0)
        return;
    stderr_begin();
    midi_port *p = midi_port_open("alsa", MIDI_IN);
    const char *err = stderr_end();
    CHECK(p == NULL);
    CHECK_STR_CONTAINS(err, "cannot open MIDI input 'alsa': cannot open the ALSA sequencer");
    midi_port_close(p);
}

static void test_null(void)
{
    midi_port *in = midi_port_open("null", MIDI_IN);
    midi_port *out = midi_port_open("null:", MIDI_OUT);
    CHECK(in && out);
    if (!in || !out)
        return;
    struct pollfd fds[4];
    CHECK_INT(midi_port_poll_fds(in, fds, 4), 0);
    midi_msg m[4];
    CHECK_INT(midi_port_read(in, m, NULL, 4), 0);
    midi_msg note = { 0x90, 60, 100, 3 };
    for (int i = 0; i < 5; i++)
        CHECK_INT(midi_port_write(out, &note), 0);
    CHECK_INT(midi_port_get_stats(out)->sent, 5);
    /* an invalid message is refused, not sent */
    midi_msg bad = { 0x90, 160, 100, 3 };
    stderr_begin();
    CHECK_INT(midi_port_write(out, &bad), -1);
    CHECK_STR_CONTAINS(stderr_end(), "invalid message");
    CHECK_INT(midi_port_get_stats(out)->sent, 5);
    CHECK_STR_CONTAINS(midi_port_name(out), "null:");
    midi_port_close(in);
    midi_port_close(out);
}

/* Polls FDS for up to MS milliseconds; returns poll's result. */
static int wait_ready(struct pollfd *fds, int n, int ms)
{
    for (int i = 0; i < n; i++)
        fds[i].revents = 0;
    return poll(fds, (nfds_t)n, ms);
}

static void test_fifo_input(void)
{
    char path[300], spec[310];
    snprintf(path, sizeof path, "%s/in.fifo", tmpdir);
    snprintf(spec, sizeof spec, "fifo:%s", path);
    CHECK_INT(mkfifo(path, 0600), 0);
    midi_port *in = midi_port_open(spec, MIDI_IN);
    CHECK(in != NULL);
    if (!in)
        return;
    struct pollfd fds[4];
    int nfds = midi_port_poll_fds(in, fds, 4);
    CHECK_INT(nfds, 1);
    CHECK_INT(wait_ready(fds, nfds, 20), 0);    /* no writer yet: quiet */

    for (int round = 0; round < 2; round++) {
        int w = open(path, O_WRONLY);
        CHECK(w >= 0);
        /* junk, running status, a clock inside a note, a note split in two writes */
        const uint8_t a[] = { 0x33, 0x90, 60, 100, 62, 0xF8, 101, 0x80, 60 };
        const uint8_t b[] = { 0, 0x80, 62, 0 };
        CHECK_INT(write(w, a, sizeof a), sizeof a);
        CHECK_INT(wait_ready(fds, nfds, 1000), 1);
        midi_msg m[8];
        int n = midi_port_read(in, m, NULL, 8);
        CHECK_INT(n, 3);
        CHECK_INT(m[0].status, 0x90);
        CHECK_INT(m[1].status, 0xF8);
        CHECK_INT(m[2].data1, 62);
        CHECK_INT(m[2].data2, 101);
        CHECK_INT(write(w, b, sizeof b), sizeof b);
        CHECK_INT(wait_ready(fds, nfds, 1000), 1);
        n = midi_port_read(in, m, NULL, 8);
        CHECK_INT(n, 2);
        CHECK_INT(m[0].status, 0x80);
        CHECK_INT(m[1].data1, 62);
        /* The writer goes away: one wake-up, the port reopens, then poll
         * stays quiet instead of reporting POLLHUP forever. */
        close(w);
        CHECK_INT(wait_ready(fds, nfds, 1000), 1);
        CHECK_INT(midi_port_read(in, m, NULL, 8), 0);
        CHECK_INT(wait_ready(fds, nfds, 50), 0);
        CHECK_INT(midi_port_get_stats(in)->reopened, (uint64_t)round + 1);
    }
    const midi_port_stats *st = midi_port_get_stats(in);
    CHECK_INT(st->received, 10);
    CHECK_INT(st->parser.junk, 2);      /* 0x33 before any status, both rounds */
    midi_port_close(in);
    unlink(path);
}

/* The FIFO is removed while its writer is away, then made again: the port
 * waits quietly (no spinning) and reads from the new FIFO. */
static void test_fifo_comes_back(void)
{
    char path[300], spec[310];
    snprintf(path, sizeof path, "%s/back.fifo", tmpdir);
    snprintf(spec, sizeof spec, "fifo:%s", path);
    CHECK_INT(mkfifo(path, 0600), 0);
    midi_port *in = midi_port_open(spec, MIDI_IN);
    CHECK(in != NULL);
    if (!in)
        return;
    struct pollfd fds[4];
    int nfds = midi_port_poll_fds(in, fds, 4);
    int w = open(path, O_WRONLY);
    unlink(path);
    close(w);
    midi_msg m[8];
    stderr_begin();
    CHECK_INT(wait_ready(fds, nfds, 1000), 1);
    CHECK_INT(midi_port_read(in, m, NULL, 8), 0);         /* EOF, reopen fails: waits */
    CHECK_STR_CONTAINS(stderr_end(), "trying to open it again");
    int wakeups = 0;
    for (int i = 0; i < 5; i++)                      /* 0.5 s: at most one retry tick */
        if (wait_ready(fds, nfds, 100) > 0) {
            wakeups++;
            CHECK_INT(midi_port_read(in, m, NULL, 8), 0);
        }
    CHECK(wakeups <= 1);
    CHECK_INT(mkfifo(path, 0600), 0);
    /* within about a second the port opens the new FIFO */
    for (int i = 0; i < 30 && midi_port_get_stats(in)->reopened == 0; i++)
        if (wait_ready(fds, nfds, 100) > 0)
            midi_port_read(in, m, NULL, 8);
    CHECK_INT(midi_port_get_stats(in)->reopened, 1);
    w = open(path, O_WRONLY | O_NONBLOCK);
    CHECK(w >= 0);
    const uint8_t note[] = { 0x90, 70, 70 };
    CHECK_INT(write(w, note, 3), 3);
    CHECK_INT(wait_ready(fds, nfds, 1000), 1);
    CHECK_INT(midi_port_read(in, m, NULL, 8), 1);
    CHECK_INT(m[0].data1, 70);
    close(w);
    midi_port_close(in);
    unlink(path);
}

static void test_fifo_output(void)
{
    char path[300], spec[310];
    snprintf(path, sizeof path, "%s/out.mid.raw", tmpdir);
    snprintf(spec, sizeof spec, "fifo:%s", path);
    midi_port *out = midi_port_open(spec, MIDI_OUT);   /* created */
    CHECK(out != NULL);
    if (!out)
        return;
    midi_msg on = { 0x90, 60, 100, 3 }, pc = { 0xC1, 9, 0, 2 }, off = { 0x80, 60, 0, 3 };
    CHECK_INT(midi_port_write(out, &on), 0);
    CHECK_INT(midi_port_write(out, &pc), 0);
    CHECK_INT(midi_port_write(out, &off), 0);
    midi_msg none[4];
    CHECK_INT(midi_port_read(out, none, NULL, 4), 0);     /* an output has nothing to read */
    struct pollfd fds[4];
    CHECK_INT(midi_port_poll_fds(out, fds, 4), 0);
    midi_port_close(out);
    uint8_t got[16];
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    size_t n = f ? fread(got, 1, sizeof got, f) : 0;
    if (f)
        fclose(f);
    const uint8_t want[] = { 0x90, 60, 100, 0xC1, 9, 0x80, 60, 0 };
    CHECK_INT(n, sizeof want);
    CHECK(n == sizeof want && memcmp(got, want, n) == 0);
    unlink(path);

    /* A FIFO nobody reads: opening does not wait, and once it is full
     * messages are dropped and counted rather than blocking. */
    snprintf(path, sizeof path, "%s/out.fifo", tmpdir);
    snprintf(spec, sizeof spec, "fifo:%s", path);
    CHECK_INT(mkfifo(path, 0600), 0);
    out = midi_port_open(spec, MIDI_OUT);
    CHECK(out != NULL);
    if (!out)
        return;
    int failed = 0;
    stderr_begin();
    for (int i = 0; i < 40000 && !failed; i++)
        failed = midi_port_write(out, &on) != 0;
    const char *err = stderr_end();
    CHECK(failed);
    CHECK_INT(midi_port_get_stats(out)->dropped, 1);
    CHECK_STR_CONTAINS(err, "message dropped");
    midi_port_close(out);
    unlink(path);
}

static int listed;
static void count_port(const midi_port_info *info, void *user)
{
    (void)user;
    CHECK(info->backend && info->spec && info->description && info->dirs);
    if (strcmp(info->spec, "null") == 0)
        listed++;
}

/* The session recording is an output like the others: it plays nothing,
 * keeps each part's messages, and writes them to a MIDI file, one track
 * each. */
static void test_record(void)
{
    char path[400];
    midi_msg on = { 0x90, 60, 100, 3 }, off = { 0x80, 60, 0, 3 }, answer = { 0x90, 67, 90, 3 };
    midi_msg clock = { 0xF8, 0, 0, 1 };
    snprintf(path, sizeof path, "%s/session.mid", tmpdir);

    stderr_begin();
    midi_port *bad = midi_port_open("record", MIDI_IN);
    CHECK_STR_CONTAINS(stderr_end(), "backend 'record' has no inputs");
    CHECK(bad == NULL);
    midi_port *p = midi_port_open("record", MIDI_OUT);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK_INT(midi_port_write(p, &on), 0);                      /* plays nothing */
    CHECK_INT(midi_port_keep(p, &on, MIDI_PART_PLAYER, 0.5), 0);
    CHECK_INT(midi_port_keep(p, &off, MIDI_PART_PLAYER, 1.0), 0);
    CHECK_INT(midi_port_keep(p, &answer, MIDI_PART_MODEL, 1.5), 0);
    CHECK_INT(midi_port_keep(p, &clock, MIDI_PART_MODEL, 1.6), -1);  /* not a channel message */
    const midi_port_stats *st = midi_port_get_stats(p);
    CHECK_INT((int)st->kept[MIDI_PART_PLAYER], 2);
    CHECK_INT((int)st->kept[MIDI_PART_MODEL], 1);
    CHECK_INT((int)st->sent, 0);
    CHECK_INT(midi_port_save(p, path), 0);
    midi_port_close(p);

    smf f;
    CHECK_INT(smf_read_file(path, &f), 0);
    CHECK_INT((int)f.n_events, 3);
    if (f.n_events == 3) {
        CHECK(f.events[0].data1 == 60 && f.events[2].data1 == 67);
        CHECK_STR_CONTAINS(f.tracks[f.events[0].track].name, "player");
        CHECK_STR_CONTAINS(f.tracks[f.events[2].track].name, "continuo");
        CHECK(f.events[2].time > 1.45 && f.events[2].time < 1.55);
    }
    smf_free(&f);
    unlink(path);

    /* Other outputs keep nothing and have nothing to save. */
    midi_port *null = midi_port_open("null", MIDI_OUT);
    CHECK_INT(midi_port_keep(null, &on, MIDI_PART_PLAYER, 0.5), 0);
    CHECK_INT((int)midi_port_get_stats(null)->kept[MIDI_PART_PLAYER], 0);
    CHECK_INT(midi_port_save(null, path), 1);
    midi_port_close(null);
}

static const char *test_setting(void *user, const char *key, char *buf, size_t len)
{
    const char *const *kv = user;
    for (; kv[0]; kv += 2)
        if (strcmp(kv[0], key) == 0) {
            snprintf(buf, len, "%s", kv[1]);
            return buf;
        }
    return NULL;
}

/* The FluidSynth output takes its soundfont from the settings; one that is
 * missing is one error (the synth's own), or with on_missing_soundfont =
 * midi-only a warning and a silent port. */
static void test_fluidsynth(void)
{
    const char *refuse[] = { "soundfont", "/no/such.sf2", "on_missing_soundfont", "error", NULL };
    const char *go_on[] = { "soundfont", "/no/such.sf2", "on_missing_soundfont", "midi-only", NULL };
    midi_port_settings s1 = { test_setting, (void *)refuse }, s2 = { test_setting, (void *)go_on };
    midi_msg on = { 0x90, 60, 100, 3 };

    stderr_begin();
    midi_port *p = midi_port_open_with("fluidsynth", MIDI_OUT, &s1);
    const char *err = stderr_end();
    CHECK(p == NULL);
#if HAVE_FLUIDSYNTH
    CHECK_STR_CONTAINS(err, "cannot open soundfont /no/such.sf2: No such file or directory");
#else
    CHECK_STR_CONTAINS(err, "built without FluidSynth");
#endif
    CHECK(strstr(err, "cannot open MIDI output") == NULL);     /* said once */

    stderr_begin();
    p = midi_port_open_with("fluidsynth", MIDI_OUT, &s2);
    err = stderr_end();
    CHECK(p != NULL);
    CHECK_STR_CONTAINS(err, "going on without sound from FluidSynth (on_missing_soundfont = midi-only)");
    CHECK_INT(midi_port_write(p, &on), 0);
    midi_port_close(p);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(stderr_path, sizeof stderr_path, "%s/stderr.txt", tmpdir);
    test_table();
    test_unknown_backend();
    test_unopenable();
    test_alsa_unavailable();
    test_null();
    test_fifo_input();
    test_fifo_comes_back();
    test_fifo_output();
    test_record();
    test_fluidsynth();
    midi_port_list(count_port, NULL);   /* other backends may fail without hardware */
    CHECK_INT(listed, 1);
    unlink(stderr_path);
    rmdir(tmpdir);
    return CHECK_DONE();
}

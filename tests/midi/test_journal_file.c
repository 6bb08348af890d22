/* test_journal_file.c: the journal's file is a valid MIDI file whenever the writer dies: a child appends tracks and is killed with SIGKILL at random moments. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "midi/journal.h"
#include "midi/smf.h"

#define KILLS 20

/* Track K of the child: K % 7 + 1 notes of pitch 40 + K % 40, from K seconds. */
static int track_notes(int k)
{
    return k % 7 + 1;
}

static void fill_track(int k, smf_event *ev, size_t *n)
{
    *n = 0;
    for (int i = 0; i < track_notes(k); i++) {
        double t = k + 0.1 * i;
        ev[(*n)++] = (smf_event){ .time = t, .status = 0x90, .data1 = (uint8_t)(40 + k % 40), .data2 = 64 };
        ev[(*n)++] = (smf_event){ .time = t + 0.05, .status = 0x80, .data1 = (uint8_t)(40 + k % 40) };
    }
}

/* The child: appends tracks until it is killed, telling the parent (over
 * FD) how many are complete after each. */
static void child(const char *dir, int fd)
{
    journal_file j;
    if (journal_file_create(&j, dir, time(NULL)) != 0)
        _exit(3);
    if (write(fd, j.path, sizeof j.path) != (ssize_t)sizeof j.path)
        _exit(4);
    for (int k = 0;; k++) {
        smf_event ev[16];
        size_t n;
        fill_track(k, ev, &n);
        smf_track_out t = { k % 2 ? "continuo" : "player", ev, n };
        if (journal_file_append(&j, &t) != 0)
            _exit(5);
        if (write(fd, &k, sizeof k) != (ssize_t)sizeof k)
            _exit(6);
    }
}

/* The file after a kill: it reads, and holds tracks 0.. in order, at least
 * every one the child said was complete, each with its notes. */
static void check_file(const char *path, int complete)
{
    smf f;
    CHECK_INT(smf_read_file(path, &f), 0);
    int tracks = f.n_tracks - 1;        /* after the tempo track */
    CHECK(tracks >= complete + 1);
    size_t notes = 0;
    for (size_t i = 0; i < f.n_events; i++)
        notes += (f.events[i].status & 0xF0) == 0x90;
    size_t want = 0;
    for (int k = 0; k < tracks; k++)
        want += (size_t)track_notes(k);
    CHECK_INT(notes, want);
    for (int k = 1; k < f.n_tracks && k < 8; k++)
        CHECK(f.tracks[k].name && strcmp(f.tracks[k].name, (k - 1) % 2 ? "continuo" : "player") == 0);
    smf_free(&f);
}

int main(void)
{
    char dir[] = "/tmp/continuo-journal-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    srand(12345);
    for (int r = 0; r < KILLS; r++) {
        int p[2];
        CHECK_INT(pipe(p), 0);
        pid_t pid = fork();
        if (pid == 0) {
            close(p[0]);
            child(dir, p[1]);
        }
        close(p[1]);
        char path[1024];
        CHECK((size_t)read(p[0], path, sizeof path) == sizeof path);
        usleep((useconds_t)(1000 + rand() % 40000));    /* 1 to 41 ms of appending */
        kill(pid, SIGKILL);
        int last = -1, k;
        while (read(p[0], &k, sizeof k) == (ssize_t)sizeof k)
            last = k;
        close(p[0]);
        waitpid(pid, NULL, 0);
        check_file(path, last);
        fprintf(stderr, "kill %d: %d tracks complete, the file reads\n", r, last + 1);
        unlink(path);
    }
    /* appended after a failed try: the next append goes where the failed one began */
    journal_file j;
    CHECK_INT(journal_file_create(&j, dir, 0), 0);
    smf_event ev[16];
    size_t n;
    fill_track(0, ev, &n);
    smf_track_out t = { "player", ev, n };
    CHECK_INT(journal_file_append(&j, &t), 0);
    uint64_t end = j.end;
    CHECK_INT(journal_file_append(&j, &t), 0);
    CHECK(j.end > end && j.n_tracks == 2);
    journal_file_close(&j);
    struct stat st;
    CHECK(stat(j.path, &st) == 0 && (uint64_t)st.st_size == end + (end - SMF_HEAD_BYTES));
    unlink(j.path);
    rmdir(dir);
    return CHECK_DONE();
}

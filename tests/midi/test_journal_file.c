/* test_journal_file.c: a session's journal is a three-track MIDI file whenever a reader opens it, and whole after a crash: a child appends and folds and is killed with SIGKILL at random moments; the next start folds what it left, nothing lost and nothing twice. */
#include <dirent.h>
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
#define FOLD_EVERY 4    /* the child folds after every 4th track (a pause) */

/* Track K of the child: K % 7 + 1 notes of pitch 40 + K % 40, from K
 * seconds; even K the player's, odd K continuo's. */
static int track_notes(int k)
{
    return k % 7 + 1;
}

static const char *track_part(int k)
{
    return k % 2 ? "continuo" : "player";
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

static int append(journal_file *j, int k)
{
    smf_event ev[16];
    size_t n;
    fill_track(k, ev, &n);
    smf_track_out t = { track_part(k), ev, n };
    return journal_file_append(j, &t);
}

/* What a reader finds in a session file. */
typedef struct seen {
    int    tracks;          /* MTrk chunks, the tempo track's included */
    int    names_ok;        /* track 1 "player", track 2 "continuo" */
    size_t notes[2];        /* note-ons of the player, of continuo */
} seen;

static int read_session(const char *path, seen *s)
{
    smf f;
    memset(s, 0, sizeof *s);
    if (smf_read_file(path, &f) != 0)
        return -1;
    s->tracks = f.n_tracks;
    s->names_ok = f.n_tracks == 3 && f.tracks[1].name && strcmp(f.tracks[1].name, "player") == 0 &&
                  f.tracks[2].name && strcmp(f.tracks[2].name, "continuo") == 0;
    for (size_t i = 0; i < f.n_events; i++)
        s->notes[f.events[i].track == 2] += (f.events[i].status & 0xF0) == 0x90;
    smf_free(&f);
    return 0;
}

/* The notes of tracks 0..T-1 by part. */
static void notes_of(int t, size_t want[2])
{
    want[0] = want[1] = 0;
    for (int k = 0; k < t; k++)
        want[k % 2] += (size_t)track_notes(k);
}

/* The tracks whose notes S holds (each part's tracks whole, in order), or -1. */
static int tracks_held(const seen *s)
{
    for (int t = 0; t < 100000; t++) {
        size_t want[2];
        notes_of(t, want);
        if (want[0] == s->notes[0] && want[1] == s->notes[1])
            return t;
        if (want[0] + want[1] > s->notes[0] + s->notes[1])
            break;
    }
    return -1;
}

/* Files in DIR (the hidden ones included), "." and ".." not. */
static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

/* The child: appends tracks, folding after every FOLD_EVERY, until it is
 * killed, telling the parent (over FD) how many are complete after each. */
static void child(const char *dir, int fd)
{
    journal_file j;
    if (journal_file_create(&j, dir, time(NULL)) != 0)
        _exit(3);
    if (write(fd, j.path, sizeof j.path) != (ssize_t)sizeof j.path)
        _exit(4);
    for (int k = 0;; k++) {
        if (append(&j, k) != 0 || ((k + 1) % FOLD_EVERY == 0 && journal_file_fold(&j) != 0))
            _exit(5);
        if (write(fd, &k, sizeof k) != (ssize_t)sizeof k)
            _exit(6);
    }
}

/* After a kill: the session file reads as three tracks holding whole
 * tracks of the child's; the next start's recovery makes it hold every one
 * the child said was complete, none twice, and leaves nothing beside it. */
static void check_kill(const char *dir, const char *path, int complete)
{
    seen s;
    CHECK_INT(read_session(path, &s), 0);
    CHECK(s.tracks == 3 && s.names_ok);
    int before = tracks_held(&s);
    CHECK(before >= 0 && before <= complete + 2);
    int folded = journal_recover(dir);
    if (complete < 0 && folded == 0) {          /* killed before its first track: no session */
        CHECK_INT(files_in(dir), 0);
        return;
    }
    CHECK_INT(folded, 1);
    CHECK_INT(read_session(path, &s), 0);
    CHECK(s.tracks == 3 && s.names_ok);
    int after = tracks_held(&s);
    CHECK(after >= complete + 1 && after <= complete + 2);
    CHECK_INT(files_in(dir), 1);
    fprintf(stderr, "kill: %d tracks complete, %d in the session file, %d after the recovery\n", complete + 1,
            before, after);
}

static void kills(const char *dir)
{
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
        check_kill(dir, path, last);
        unlink(path);
    }
}

/* A session as the service writes one: the session file has three tracks
 * from the start, what was folded in a pause, and all of it after the
 * close, with no log left; a reader finds the rest in the log meanwhile. */
static void session_lifecycle(const char *dir)
{
    journal_file j;
    seen s;
    char from[2100];
    CHECK_INT(journal_file_create(&j, dir, 0), 0);
    CHECK_INT(read_session(j.path, &s), 0);
    CHECK(s.tracks == 3 && s.names_ok && s.notes[0] == 0 && s.notes[1] == 0);
    CHECK_INT(append(&j, 0), 0);
    CHECK_INT(append(&j, 1), 0);
    CHECK_INT(journal_file_fold(&j), 0);
    CHECK_INT(j.n_tracks, 2);                   /* the log compacted to the same two tracks */
    CHECK_INT(append(&j, 2), 0);
    CHECK_INT(read_session(j.path, &s), 0);
    CHECK(s.tracks == 3 && tracks_held(&s) == 2);
    CHECK(strcmp(journal_read_path(j.path, from, sizeof from), j.path) != 0);
    CHECK_INT(read_session(from, &s), 0);       /* (the log: tracks "player", "continuo", "player") */
    CHECK_INT(tracks_held(&s), 3);
    /* a log its writer holds is no crash's: recovery leaves it */
    CHECK_INT(journal_recover(dir), 0);
    CHECK_INT(files_in(dir), 2);
    CHECK_INT(journal_file_close(&j), 0);
    CHECK_INT(read_session(j.path, &s), 0);
    CHECK(s.tracks == 3 && s.names_ok && tracks_held(&s) == 3);
    CHECK_INT(files_in(dir), 1);
    CHECK(strcmp(journal_read_path(j.path, from, sizeof from), j.path) == 0);
    unlink(j.path);
    /* a session without a message leaves no file */
    CHECK_INT(journal_file_create(&j, dir, 0), 0);
    CHECK_INT(journal_file_close(&j), 0);
    CHECK_INT(files_in(dir), 0);
}

/* A log that does not read stays, named in the log with its byte, and its
 * session file is not touched. */
static void bad_log(const char *dir)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/.session-20260101-000000.log", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    for (int i = 0; i < 100; i++)
        fputc('x', f);
    fclose(f);
    CHECK_INT(journal_recover(dir), 0);
    CHECK_INT(files_in(dir), 1);
    unlink(path);
}

int main(void)
{
    char dir[] = "/tmp/continuo-journal-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    kills(dir);
    session_lifecycle(dir);
    bad_log(dir);
    rmdir(dir);
    return CHECK_DONE();
}

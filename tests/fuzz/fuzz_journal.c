/* fuzz_journal.c: libFuzzer target for the journal's recovery: whatever a crash or a disk leaves in a session's log, journal_recover leaves the log as it is or makes a three-track session file (tempo, player, continuo) with every message of it, and folding that file again gives the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "midi/journal.h"
#include "midi/smf.h"
#include "util/fileio.h"

#include "fuzz_quiet.h"  /* quiet stderr under libFuzzer; REQUIRE */

static char dir[] = "/tmp/continuo-fuzz-journal-XXXXXX";
static char log_path[128], session[128];

static void remove_dir(void)
{
    rmdir(dir);
}

/* Messages of F by part: tracks named "continuo" (1) or not (0). */
static void count_parts(const smf *f, size_t n[2])
{
    n[0] = n[1] = 0;
    for (size_t i = 0; i < f->n_events; i++) {
        const char *name = f->tracks[f->events[i].track].name;
        n[name && strcmp(name, "continuo") == 0]++;
    }
}

/* DATA (SIZE) as the log, recovered: 1 when the session file was written. */
static int recover(const uint8_t *data, size_t size)
{
    FILE *fp = fopen(log_path, "wb");
    REQUIRE(fp != NULL);
    REQUIRE(size == 0 || fwrite(data, 1, size, fp) == size);
    REQUIRE(fclose(fp) == 0);
    int folded = journal_recover(dir);
    REQUIRE(folded == 0 || folded == 1);
    REQUIRE(folded == 0 || access(log_path, F_OK) != 0);
    return folded;
}

/* The session file: three tracks holding IN's messages by part, and a fixed
 * point of the fold. */
static void check_session(const smf *in)
{
    uint8_t *bytes, *again;
    size_t len, len_again, want[2], got[2];
    smf out;
    REQUIRE(file_read_all(session, &bytes, &len) == 0);
    REQUIRE(smf_read_mem(bytes, len, "session", &out) == 0);
    REQUIRE(out.n_tracks == 3 && out.tracks[1].name && strcmp(out.tracks[1].name, "player") == 0);
    REQUIRE(out.tracks[2].name && strcmp(out.tracks[2].name, "continuo") == 0);
    count_parts(in, want);
    count_parts(&out, got);
    REQUIRE(got[0] == want[0] && got[1] == want[1]);
    smf_free(&out);
    REQUIRE(recover(bytes, len) == 1);
    REQUIRE(file_read_all(session, &again, &len_again) == 0);
    REQUIRE(len_again == len && memcmp(again, bytes, len) == 0);
    free(again);
    free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    smf in;
    if (!log_path[0]) {
        REQUIRE(mkdtemp(dir) != NULL);
        atexit(remove_dir);
        snprintf(log_path, sizeof log_path, "%s/.session-20260101-000000.log", dir);
        snprintf(session, sizeof session, "%s/session-20260101-000000.mid", dir);
    }
    int reads = smf_read_mem(data, size, "log", &in) == 0;
    int folded = recover(data, size);
    if (folded) {
        REQUIRE(reads && in.n_events > 0);
        check_session(&in);
    } else {
        /* it held nothing (both gone), or it stays as it is */
        REQUIRE(access(session, F_OK) != 0);
        if (access(log_path, F_OK) != 0)
            REQUIRE(reads ? in.n_events == 0 : size < SMF_HEAD_BYTES);
        else
            REQUIRE(reads ? in.n_events > 0 : size >= SMF_HEAD_BYTES);
    }
    if (reads)
        smf_free(&in);
    unlink(log_path);
    unlink(session);
    return 0;
}

/* test_tokfile.c: token files written and read back; corrupted files rejected with "PATH: byte N" errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "codec/tokfile.h"
#include "util/fileio.h"

static char dir[] = "/tmp/continuo-tokfile-XXXXXX";
static char path[256], bad[256], errpath[256];

/* Reads BAD with stderr redirected; returns tokfile_read's result and leaves
 * what it logged in MSG. */
static int read_capture(tokfile *t, char *msg, size_t size)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *fp = fopen(errpath, "w+");
    if (!fp || saved < 0)
        return -2;
    dup2(fileno(fp), 2);
    int rc = tokfile_read(bad, t);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(fp);
    size_t n = fread(msg, 1, size - 1, fp);
    msg[n] = '\0';
    fclose(fp);
    return rc;
}

static uint8_t *orig;
static size_t orig_len;

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i); }

/* Writes ORIG with a change (or cut to LEN) as BAD and checks that reading
 * it fails with a message naming the file and byte WHERE. */
static void expect_bad(const char *what, size_t len, size_t at, const uint8_t *bytes, size_t nbytes,
                       const char *where)
{
    uint8_t *d = malloc(orig_len + 16);
    memcpy(d, orig, orig_len);
    if (bytes)
        memcpy(d + at, bytes, nbytes);
    CHECK(file_write_atomic(bad, d, len) == 0);
    free(d);
    tokfile t;
    char msg[2048], want[512];
    int rc = read_capture(&t, msg, sizeof msg);
    if (rc != -1)
        fprintf(stderr, "case '%s': read gave %d\n", what, rc);
    CHECK_INT(rc, -1);
    snprintf(want, sizeof want, "%s: %s", bad, where);
    CHECK_STR_CONTAINS(msg, want);
    CHECK(t.tokens == NULL && t.starts == NULL && t.sources == NULL);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 99;
    snprintf(path, sizeof path, "%s/ok.tok", dir);
    snprintf(bad, sizeof bad, "%s/bad.tok", dir);
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);

    /* Write three sequences (one empty) and read them back. */
    tokfile_writer w;
    uint16_t a[] = { 280, 2, 200, 90 }, b[] = { 1 };
    CHECK(tokfile_writer_init(&w, "mt310", 310) == 0);
    CHECK(tokfile_writer_add(&w, a, 4, "Bach/one.mid") == 0);
    CHECK(tokfile_writer_add(&w, NULL, 0, "empty.mid") == 0);
    CHECK(tokfile_writer_add(&w, b, 1, "") == 0);
    uint16_t too_big[] = { 310 };
    CHECK(tokfile_writer_add(&w, too_big, 1, "x") == -1);      /* id out of range: refused */
    CHECK(tokfile_writer_save(&w, path) == 0);
    tokfile_writer_free(&w);

    tokfile t;
    CHECK(tokfile_read(path, &t) == 0);
    CHECK_INT(t.vocab_size, 310);
    CHECK(strcmp(t.vocab_name, "mt310") == 0);
    CHECK_INT(t.n_seqs, 3);
    CHECK_INT(t.n_tokens, 5);
    if (t.n_seqs == 3 && t.n_tokens == 5) {
        CHECK_INT(t.starts[0], 0);
        CHECK_INT(t.starts[1], 4);
        CHECK_INT(t.starts[2], 4);
        CHECK_INT(t.starts[3], 5);
        CHECK(memcmp(t.tokens, a, sizeof a) == 0);
        CHECK_INT(t.tokens[4], 1);
        CHECK(strcmp(t.sources[0], "Bach/one.mid") == 0);
        CHECK(strcmp(t.sources[1], "empty.mid") == 0);
        CHECK(strcmp(t.sources[2], "") == 0);
    }
    tokfile_free(&t);

    /* The layout on disk, byte by byte where it matters. */
    CHECK(file_read_all(path, &orig, &orig_len) == 0);
    size_t expect_len = 40 + 8 * 4 + 2 * 5 + (2 + 12) + (2 + 9) + 2;
    CHECK_INT(orig_len, expect_len);
    CHECK(memcmp(orig, "CTOK", 4) == 0);
    CHECK_INT(orig[4], 1);
    CHECK_INT(orig[8] | orig[9] << 8, 310);
    CHECK_INT(orig[40 + 8], 4);                     /* second start offset */
    CHECK_INT(orig[72] | orig[73] << 8, 280);       /* first id */

    /* The same bytes from memory (decode reads a file once and parses it so). */
    CHECK(tokfile_read_mem(orig, orig_len, "mem", &t) == 0);
    CHECK_INT(t.n_seqs, 3);
    CHECK_INT(t.n_tokens, 5);
    if (t.n_seqs == 3)
        CHECK(strcmp(t.sources[0], "Bach/one.mid") == 0);
    tokfile_free(&t);

    uint8_t v[8];
    expect_bad("empty", 0, 0, NULL, 0, "byte 0: truncated header");
    expect_bad("short header", 39, 0, NULL, 0, "byte 39: truncated header");
    expect_bad("magic", orig_len, 0, (const uint8_t *)"MThd", 4, "byte 0: not a token file");
    put32(v, 2);
    expect_bad("version", orig_len, 4, v, 4, "byte 4: unsupported version 2");
    put32(v, 0);
    expect_bad("vocab size 0", orig_len, 8, v, 4, "byte 8:");
    put32(v, 1000000);
    expect_bad("huge n_seqs", orig_len, 12, v, 4, "byte 12:");
    put64(v, 1000);
    expect_bad("n_tokens past the end", orig_len, 16, v, 8, "byte 16:");
    put64(v, 1);
    expect_bad("first offset not 0", orig_len, 40, v, 8, "byte 40: sequence offset 1 should be 0");
    put64(v, 3);
    expect_bad("offsets decrease", orig_len, 56, v, 8, "byte 56: sequence offset 3 is below");
    put64(v, 4);
    expect_bad("last offset short", orig_len, 64, v, 8, "byte 64:");
    put32(v, 310);
    expect_bad("id out of range", orig_len, 74, v, 2, "byte 74: id 310 is not below");
    expect_bad("truncated sources", orig_len - 5, 0, NULL, 0, "byte 96: truncated");
    expect_bad("truncated ids", 80, 0, NULL, 0, "byte 16:");
    v[0] = 0xAB;
    expect_bad("trailing bytes", orig_len + 1, orig_len, v, 1, "byte 109: 1 unexpected bytes");
    put32(v, 0xFFFF);
    expect_bad("source length past end", orig_len, 82, v, 2, "byte 82: truncated");

    /* A missing file: the cause is named. */
    char msg[1024];
    snprintf(bad, sizeof bad, "%s/missing.tok", dir);
    CHECK_INT(read_capture(&t, msg, sizeof msg), -1);
    CHECK_STR_CONTAINS(msg, "missing.tok");

    free(orig);
    snprintf(bad, sizeof bad, "%s/bad.tok", dir);
    unlink(bad);
    unlink(path);
    unlink(errpath);
    rmdir(dir);
    return CHECK_DONE();
}

/* tokfile.c: reading (with every size checked) and writing token files. */
#include "codec/tokfile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"
#include "util/log.h"

enum { HEADER_SIZE = 40, TOKFILE_VERSION = 1, NAME_SIZE = 16 };
static const char MAGIC[4] = { 'C', 'T', 'O', 'K' };

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void tokfile_free(tokfile *t)
{
    if (t->sources)
        for (uint32_t i = 0; i < t->n_seqs; i++)
            free(t->sources[i]);
    free(t->sources);
    free(t->starts);
    free(t->tokens);
    memset(t, 0, sizeof *t);
}

/* The fixed header: magic, version, vocabulary size, counts, layout name. */
static int parse_header(const uint8_t *d, size_t len, const char *path, tokfile *t)
{
    if (len < HEADER_SIZE) {
        log_error("%s: byte %zu: truncated header (a token file starts with %d bytes)",
                  path, len, HEADER_SIZE);
        return -1;
    }
    if (memcmp(d, MAGIC, 4) != 0) {
        log_error("%s: byte 0: not a token file (magic is not \"CTOK\")", path);
        return -1;
    }
    uint32_t version = get_u32(d + 4);
    if (version != TOKFILE_VERSION) {
        log_error("%s: byte 4: unsupported version %" PRIu32 " (this program reads version %d)",
                  path, version, TOKFILE_VERSION);
        return -1;
    }
    t->vocab_size = get_u32(d + 8);
    if (t->vocab_size == 0 || t->vocab_size > 65536) {
        log_error("%s: byte 8: vocabulary size %" PRIu32 " out of range 1..65536",
                  path, t->vocab_size);
        return -1;
    }
    t->n_seqs = get_u32(d + 12);
    t->n_tokens = get_u64(d + 16);
    memcpy(t->vocab_name, d + 24, NAME_SIZE);
    t->vocab_name[NAME_SIZE] = '\0';
    return 0;
}

/* Checks that the offsets and the tokens the header announces fit in LEN
 * bytes and allocates their tables; *STARTS_END: where the tokens begin. */
static int alloc_tables(size_t len, const char *path, tokfile *t, uint64_t *starts_end)
{
    *starts_end = HEADER_SIZE + 8 * ((uint64_t)t->n_seqs + 1);
    if (*starts_end > len) {
        log_error("%s: byte 12: %" PRIu32 " sequences need %" PRIu64
                  " bytes of offsets, but the file has %zu bytes", path, t->n_seqs, *starts_end, len);
        return -1;
    }
    if (t->n_tokens > (len - *starts_end) / 2) {
        log_error("%s: byte 16: %" PRIu64 " tokens need %" PRIu64 " bytes after byte %" PRIu64
                  ", but the file has %zu bytes", path, t->n_tokens, 2 * t->n_tokens, *starts_end, len);
        return -1;
    }
    t->starts = malloc(((size_t)t->n_seqs + 1) * sizeof *t->starts);
    t->tokens = malloc((t->n_tokens ? (size_t)t->n_tokens : 1) * sizeof *t->tokens);
    t->sources = calloc(t->n_seqs ? t->n_seqs : 1, sizeof *t->sources);
    if (!t->starts || !t->tokens || !t->sources) {
        log_error("%s: out of memory", path);
        return -1;
    }
    return 0;
}

/* The n_seqs + 1 sequence offsets: from 0, never decreasing, ending at n_tokens. */
static int parse_starts(const uint8_t *d, const char *path, tokfile *t)
{
    for (uint64_t i = 0; i <= t->n_seqs; i++) {
        uint64_t at = HEADER_SIZE + 8 * i;
        uint64_t s = get_u64(d + at);
        uint64_t prev = i ? t->starts[i - 1] : 0;
        if ((i == 0 && s != 0) || s < prev || s > t->n_tokens
            || (i == t->n_seqs && s != t->n_tokens)) {
            log_error("%s: byte %" PRIu64 ": sequence offset %" PRIu64 " %s", path, at, s,
                      i == 0 ? "should be 0" : s < prev ? "is below the one before it"
                      : s > t->n_tokens ? "is past the number of tokens"
                      : "should equal the number of tokens");
            return -1;
        }
        t->starts[i] = s;
    }
    return 0;
}

/* The tokens, 16 bits each from byte STARTS_END, every one below the vocabulary size. */
static int parse_tokens(const uint8_t *d, uint64_t starts_end, const char *path, tokfile *t)
{
    const uint8_t *tp = d + starts_end;
    for (uint64_t i = 0; i < t->n_tokens; i++) {
        uint16_t id = (uint16_t)(tp[2 * i] | tp[2 * i + 1] << 8);
        if (id >= t->vocab_size) {
            log_error("%s: byte %" PRIu64 ": id %u is not below the vocabulary size %" PRIu32,
                      path, starts_end + 2 * i, id, t->vocab_size);
            return -1;
        }
        t->tokens[i] = id;
    }
    return 0;
}

/* One source name per sequence from byte AT (16-bit length, bytes), which
 * must end the file. */
static int parse_sources(const uint8_t *d, size_t len, uint64_t at, const char *path, tokfile *t)
{
    for (uint32_t i = 0; i < t->n_seqs; i++) {
        if (at + 2 > len) {
            log_error("%s: byte %" PRIu64 ": truncated: the source name of sequence %" PRIu32
                      " is missing", path, at, i);
            return -1;
        }
        size_t n = (size_t)(d[at] | d[at + 1] << 8);
        if (at + 2 + n > len) {
            log_error("%s: byte %" PRIu64 ": truncated: source name of %zu bytes runs past the end",
                      path, at, n);
            return -1;
        }
        t->sources[i] = malloc(n + 1);
        if (!t->sources[i]) {
            log_error("%s: out of memory", path);
            return -1;
        }
        memcpy(t->sources[i], d + at + 2, n);
        t->sources[i][n] = '\0';
        at += 2 + n;
    }
    if (at != len) {
        log_error("%s: byte %" PRIu64 ": %" PRIu64 " unexpected bytes after the last source name",
                  path, at, (uint64_t)len - at);
        return -1;
    }
    return 0;
}

static int parse(const uint8_t *d, size_t len, const char *path, tokfile *t)
{
    uint64_t starts_end;
    if (parse_header(d, len, path, t) || alloc_tables(len, path, t, &starts_end)
        || parse_starts(d, path, t) || parse_tokens(d, starts_end, path, t))
        return -1;
    return parse_sources(d, len, starts_end + 2 * t->n_tokens, path, t);
}

int tokfile_read_mem(const uint8_t *data, size_t len, const char *name, tokfile *out)
{
    memset(out, 0, sizeof *out);
    int rc = parse(data, len, name, out);
    if (rc < 0)
        tokfile_free(out);
    return rc;
}

int tokfile_read(const char *path, tokfile *out)
{
    uint8_t *data;
    size_t len;

    memset(out, 0, sizeof *out);
    if (file_read_all(path, &data, &len) < 0)
        return -1;
    int rc = tokfile_read_mem(data, len, path, out);
    free(data);
    return rc;
}

/* ---- writer ---------------------------------------------------------------- */

int tokfile_writer_init(tokfile_writer *w, const char *vocab_name, uint32_t vocab_size)
{
    memset(w, 0, sizeof *w);
    if (strlen(vocab_name) > NAME_SIZE) {
        log_error("token file: vocabulary name \"%s\" is longer than %d bytes", vocab_name, NAME_SIZE);
        return -1;
    }
    strcpy(w->t.vocab_name, vocab_name);
    w->t.vocab_size = vocab_size;
    w->cap_seqs = 64;
    w->cap_tokens = 65536;
    w->t.starts = malloc((w->cap_seqs + 1) * sizeof *w->t.starts);
    w->t.sources = malloc(w->cap_seqs * sizeof *w->t.sources);
    w->t.tokens = malloc(w->cap_tokens * sizeof *w->t.tokens);
    if (!w->t.starts || !w->t.sources || !w->t.tokens) {
        log_error("token file: out of memory");
        tokfile_writer_free(w);
        return -1;
    }
    w->t.starts[0] = 0;
    return 0;
}

int tokfile_writer_add(tokfile_writer *w, const uint16_t *ids, size_t n, const char *source)
{
    tokfile *t = &w->t;
    size_t slen = strlen(source);

    if (slen > UINT16_MAX) {
        log_error("token file: source name of %zu bytes is too long", slen);
        return -1;
    }
    if (t->n_seqs == UINT32_MAX) {
        log_error("token file: too many sequences");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= t->vocab_size) {
            log_error("token file: %s: id %u is not below the vocabulary size %" PRIu32,
                      source, ids[i], t->vocab_size);
            return -1;
        }
    }
    if (t->n_seqs == w->cap_seqs) {
        size_t nc = w->cap_seqs * 2;
        uint64_t *s = realloc(t->starts, (nc + 1) * sizeof *s);
        if (s)
            t->starts = s;
        char **src = realloc(t->sources, nc * sizeof *src);
        if (src)
            t->sources = src;
        if (!s || !src)
            goto oom;
        w->cap_seqs = nc;
    }
    if (t->n_tokens + n > w->cap_tokens) {
        size_t nc = w->cap_tokens;
        while (nc < t->n_tokens + n)
            nc *= 2;
        uint16_t *p = realloc(t->tokens, nc * sizeof *p);
        if (!p)
            goto oom;
        t->tokens = p;
        w->cap_tokens = nc;
    }
    char *name = strdup(source);
    if (!name)
        goto oom;
    if (n)
        memcpy(t->tokens + t->n_tokens, ids, n * sizeof *ids);
    t->n_tokens += n;
    t->sources[t->n_seqs++] = name;
    t->starts[t->n_seqs] = t->n_tokens;
    return 0;
oom:
    log_error("token file: out of memory");
    return -1;
}

int tokfile_writer_save(tokfile_writer *w, const char *path)
{
    const tokfile *t = &w->t;
    uint8_t buf[8192];
    atomic_file af;

    if (atomic_file_open(&af, path) < 0)
        return -1;
    memset(buf, 0, HEADER_SIZE);
    memcpy(buf, MAGIC, 4);
    put_u32(buf + 4, TOKFILE_VERSION);
    put_u32(buf + 8, t->vocab_size);
    put_u32(buf + 12, t->n_seqs);
    put_u64(buf + 16, t->n_tokens);
    memcpy(buf + 24, t->vocab_name, strlen(t->vocab_name));
    fwrite(buf, 1, HEADER_SIZE, af.fp);
    for (uint64_t i = 0; i <= t->n_seqs; i++) {
        put_u64(buf, t->starts[i]);
        fwrite(buf, 1, 8, af.fp);
    }
    for (uint64_t i = 0; i < t->n_tokens;) {   /* little-endian whatever the host */
        size_t k = 0;
        for (; k < sizeof buf / 2 && i < t->n_tokens; k++, i++)
            put_u16(buf + 2 * k, t->tokens[i]);
        fwrite(buf, 2, k, af.fp);
    }
    for (uint32_t i = 0; i < t->n_seqs; i++) {
        size_t n = strlen(t->sources[i]);
        put_u16(buf, (uint16_t)n);
        fwrite(buf, 1, 2, af.fp);
        fwrite(t->sources[i], 1, n, af.fp);
    }
    return atomic_file_commit(&af);            /* checks ferror, fsyncs, renames */
}

void tokfile_writer_free(tokfile_writer *w)
{
    tokfile_free(&w->t);
    memset(w, 0, sizeof *w);
}

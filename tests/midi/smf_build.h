/* smf_build.h: a tiny in-memory MIDI file builder for the tests (header only, static functions). */
#ifndef CONTINUO_TEST_SMF_BUILD_H
#define CONTINUO_TEST_SMF_BUILD_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A file being built; tests stay far below the capacity. */
typedef struct smf_build {
    uint8_t d[1 << 16];
    size_t  n;
    size_t  chunk_len_at;       /* offset of the open chunk's length field */
} smf_build;

static void sb_byte(smf_build *b, int v)
{
    if (b->n < sizeof b->d)
        b->d[b->n++] = (uint8_t)v;
}

/* Appends COUNT bytes given as ints. */
static void sb_bytes(smf_build *b, int count, ...)
{
    va_list ap;
    va_start(ap, count);
    for (int i = 0; i < count; i++)
        sb_byte(b, va_arg(ap, int));
    va_end(ap);
}

static void sb_str(smf_build *b, const char *s)
{
    while (*s)
        sb_byte(b, (unsigned char)*s++);
}

static void sb_be32(smf_build *b, uint32_t v)
{
    sb_bytes(b, 4, (int)(v >> 24 & 0xFF), (int)(v >> 16 & 0xFF), (int)(v >> 8 & 0xFF), (int)(v & 0xFF));
}

static void sb_vlq(smf_build *b, uint32_t v)
{
    uint8_t tmp[5];
    int n = 0;
    tmp[n++] = v & 0x7F;
    while ((v >>= 7) != 0)
        tmp[n++] = (uint8_t)(0x80 | (v & 0x7F));
    while (n > 0)
        sb_byte(b, tmp[--n]);
}

/* MThd with FORMAT, N_TRACKS and the raw 16-bit DIVISION word. */
static void sb_header(smf_build *b, int format, int n_tracks, int division)
{
    b->n = 0;
    sb_str(b, "MThd");
    sb_be32(b, 6);
    sb_bytes(b, 6, format >> 8, format & 0xFF, n_tracks >> 8, n_tracks & 0xFF,
             division >> 8 & 0xFF, division & 0xFF);
}

/* Opens a chunk of type ID; its length is filled in by sb_chunk_end. */
static void sb_chunk_begin(smf_build *b, const char *id)
{
    sb_str(b, id);
    b->chunk_len_at = b->n;
    sb_be32(b, 0);
}

static void sb_chunk_end(smf_build *b)
{
    uint32_t len = (uint32_t)(b->n - b->chunk_len_at - 4);
    for (int i = 0; i < 4; i++)
        b->d[b->chunk_len_at + (size_t)i] = (uint8_t)(len >> (24 - 8 * i));
}

static void sb_track_begin(smf_build *b) { sb_chunk_begin(b, "MTrk"); }

/* End-of-track after DELTA ticks, then closes the chunk. */
static void sb_track_end(smf_build *b, uint32_t delta)
{
    sb_vlq(b, delta);
    sb_bytes(b, 3, 0xFF, 0x2F, 0x00);
    sb_chunk_end(b);
}

/* A channel message after DELTA ticks; D2 < 0 for one-data-byte messages. */
static void sb_msg(smf_build *b, uint32_t delta, int status, int d1, int d2)
{
    sb_vlq(b, delta);
    sb_byte(b, status);
    sb_byte(b, d1);
    if (d2 >= 0)
        sb_byte(b, d2);
}

static void sb_tempo(smf_build *b, uint32_t delta, uint32_t usec)
{
    sb_vlq(b, delta);
    sb_bytes(b, 6, 0xFF, 0x51, 0x03, (int)(usec >> 16 & 0xFF), (int)(usec >> 8 & 0xFF), (int)(usec & 0xFF));
}

static void sb_meta_text(smf_build *b, uint32_t delta, int type, const char *text)
{
    sb_vlq(b, delta);
    sb_bytes(b, 2, 0xFF, type);
    sb_vlq(b, (uint32_t)strlen(text));
    sb_str(b, text);
}

#endif

/* stream.h: live MIDI byte-stream parser: bytes in, complete messages out. */
#ifndef CONTINUO_MIDI_STREAM_H
#define CONTINUO_MIDI_STREAM_H

#include <stddef.h>
#include <stdint.h>

/* One complete MIDI message as it travels on the wire (never SysEx).
 *   channel voice (0x80..0xEF): length 2 (0xC0, 0xD0) or 3, status carries
 *     the channel in its low nibble; a NOTE ON with velocity 0 is left as it
 *     came (see midi_msg_is_note_off);
 *   system common (0xF1, 0xF2, 0xF3, 0xF6): length 2, 3, 2, 1;
 *   real-time (0xF8, 0xFA..0xFC, 0xFE, 0xFF): length 1.
 * Unused data bytes are 0. */
typedef struct midi_msg {
    uint8_t status;     /* 0x80..0xFF */
    uint8_t data1;      /* key / controller / program / LSB; 0 if unused */
    uint8_t data2;      /* velocity / value / MSB; 0 if unused */
    uint8_t length;     /* bytes on the wire, 1..3 */
} midi_msg;

/* What the parser saw besides complete messages (counters only grow). */
typedef struct midi_stream_stats {
    uint64_t messages;      /* complete messages delivered (all kinds) */
    uint64_t realtime;      /* of which real-time bytes (0xF8..0xFF) */
    uint64_t junk;          /* bytes dropped: data with no status, stray 0xF7,
                               undefined 0xF4/0xF5/0xF9/0xFD */
    uint64_t truncated;     /* messages cut short by a new status byte */
    uint64_t sysex;         /* SysEx messages skipped (ended by 0xF7 or by
                               another status byte) */
    uint64_t sysex_bytes;   /* bytes inside SysEx messages, skipped unstored */
} midi_stream_stats;

/* Parser state: plain data, no allocation; zero it with midi_stream_init.
 * SysEx content is never stored, so memory stays bounded whatever the
 * input. Not thread-safe: one stream per byte source. */
typedef struct midi_stream {
    uint8_t running;        /* running status (channel voice), 0 if none */
    uint8_t status;         /* status of the message being read, 0 if none */
    uint8_t data[2];        /* data bytes read so far */
    uint8_t have;           /* how many of them */
    uint8_t need;           /* how many the status wants */
    uint8_t in_sysex;       /* 1 between 0xF0 and its end */
    midi_stream_stats stats;
} midi_stream;

void midi_stream_init(midi_stream *s);

/* Feeds one byte. Returns 1 and fills *OUT when the byte completes a
 * message (a real-time byte completes one at once, even in the middle of
 * another message, which carries on), else 0. */
int midi_stream_feed(midi_stream *s, uint8_t byte, midi_msg *out);

/* Feeds up to LEN bytes of BUF, storing complete messages in OUT (room for
 * MAX_OUT, at least 1). Stops early when OUT is full; *CONSUMED (if not
 * NULL) says how many bytes were used, so the caller can feed the rest
 * later. Returns the number of messages stored. */
size_t midi_stream_parse(midi_stream *s, const uint8_t *buf, size_t len,
                         midi_msg *out, size_t max_out, size_t *consumed);

/* Bytes on the wire of a message starting with STATUS (1..3), or 0 for a
 * byte that does not start a complete short message (data, SysEx 0xF0,
 * 0xF7, undefined 0xF4/0xF5/0xF9/0xFD). */
int midi_status_length(uint8_t status);

/* Writes MSG as MSG->length bytes into BUF (room for 3); returns the length,
 * or 0 when MSG is not a valid message (bad status, length or data >= 0x80). */
int midi_msg_encode(const midi_msg *msg, uint8_t buf[3]);

/* 1 for a channel voice message (0x80..0xEF). */
static inline int midi_msg_is_channel(const midi_msg *m)
{
    return m->status >= 0x80 && m->status < 0xF0;
}
/* 1 for NOTE ON with velocity > 0. */
static inline int midi_msg_is_note_on(const midi_msg *m)
{
    return (m->status & 0xF0) == 0x90 && m->data2 > 0;
}
/* 1 for NOTE OFF, or NOTE ON with velocity 0. */
static inline int midi_msg_is_note_off(const midi_msg *m)
{
    return (m->status & 0xF0) == 0x80 || ((m->status & 0xF0) == 0x90 && m->data2 == 0);
}

#endif

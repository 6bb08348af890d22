/* stream.c: live MIDI byte-stream parser (running status, real-time, SysEx, junk). */
#include "midi/stream.h"

#include <string.h>

void midi_stream_init(midi_stream *s)
{
    memset(s, 0, sizeof *s);
}

int midi_status_length(uint8_t status)
{
    if (status < 0x80)
        return 0;
    if (status < 0xF0) {
        uint8_t type = status & 0xF0;
        return (type == 0xC0 || type == 0xD0) ? 2 : 3;
    }
    switch (status) {
    case 0xF1: case 0xF3: return 2;     /* MTC quarter frame, song select */
    case 0xF2: return 3;                /* song position */
    case 0xF6: return 1;                /* tune request */
    case 0xF8: case 0xFA: case 0xFB: case 0xFC: case 0xFE: case 0xFF:
        return 1;                       /* real-time */
    default: return 0;                  /* 0xF0, 0xF4, 0xF5, 0xF7, 0xF9, 0xFD */
    }
}

int midi_msg_encode(const midi_msg *msg, uint8_t buf[3])
{
    int len = midi_status_length(msg->status);
    if (len == 0 || len != msg->length)
        return 0;
    if ((len > 1 && msg->data1 >= 0x80) || (len > 2 && msg->data2 >= 0x80))
        return 0;
    buf[0] = msg->status;
    if (len > 1)
        buf[1] = msg->data1;
    if (len > 2)
        buf[2] = msg->data2;
    return len;
}

/* Fills OUT from the message gathered in S and starts over. */
static int deliver(midi_stream *s, midi_msg *out)
{
    out->status = s->status;
    out->data1 = s->have > 0 ? s->data[0] : 0;
    out->data2 = s->have > 1 ? s->data[1] : 0;
    out->length = (uint8_t)(1 + s->have);
    s->stats.messages++;
    /* Channel voice keeps its status for running status; system common
     * does not (running status was already cleared when it began). */
    s->status = 0;
    s->have = 0;
    s->need = 0;
    return 1;
}

/* A status byte (not real-time) arrived: the message in progress, if any,
 * is abandoned; a SysEx in progress ends. */
static void end_pending(midi_stream *s)
{
    if (s->in_sysex) {
        s->in_sysex = 0;
        s->stats.sysex++;
    }
    if (s->status && s->have < s->need)
        s->stats.truncated++;
    s->status = 0;
    s->have = 0;
    s->need = 0;
}

/* A status byte 0xF0..0xF7 (the pending message already ended): SysEx
 * begins or ends, or a system common message starts; all of them cancel
 * running status.  WAS_SYSEX: a SysEx was in progress. */
static int system_status(midi_stream *s, uint8_t byte, int was_sysex, midi_msg *out)
{
    if (byte == 0xF0) {
        s->in_sysex = 1;
        s->running = 0;
        return 0;
    }
    if (byte == 0xF7) {                 /* EOX: ends a SysEx, else stray */
        if (!was_sysex)
            s->stats.junk++;
        s->running = 0;
        return 0;
    }
    int len = midi_status_length(byte);
    s->running = 0;                     /* system common cancels running status */
    if (len == 0) {                     /* 0xF4, 0xF5 */
        s->stats.junk++;
        return 0;
    }
    s->status = byte;
    s->need = (uint8_t)(len - 1);
    s->have = 0;
    if (s->need == 0)
        return deliver(s, out);         /* tune request */
    return 0;
}

int midi_stream_feed(midi_stream *s, uint8_t byte, midi_msg *out)
{
    if (byte >= 0xF8) {                 /* real-time: never disturbs the rest */
        if (byte == 0xF9 || byte == 0xFD) {
            s->stats.junk++;
            return 0;
        }
        out->status = byte;
        out->data1 = out->data2 = 0;
        out->length = 1;
        s->stats.messages++;
        s->stats.realtime++;
        return 1;
    }
    if (byte >= 0x80) {                 /* status */
        int was_sysex = s->in_sysex;
        end_pending(s);
        if (byte >= 0xF0)
            return system_status(s, byte, was_sysex, out);
        s->running = byte;
        s->status = byte;
        s->need = (uint8_t)(midi_status_length(byte) - 1);  /* 1 or 2: never empty */
        s->have = 0;
        return 0;
    }
    /* data byte */
    if (s->in_sysex) {
        s->stats.sysex_bytes++;
        return 0;
    }
    if (!s->status) {
        if (!s->running) {
            s->stats.junk++;
            return 0;
        }
        s->status = s->running;         /* running status */
        s->need = (uint8_t)(midi_status_length(s->running) - 1);
        s->have = 0;
    }
    s->data[s->have++] = byte;
    if (s->have == s->need)
        return deliver(s, out);
    return 0;
}

size_t midi_stream_parse(midi_stream *s, const uint8_t *buf, size_t len,
                         midi_msg *out, size_t max_out, size_t *consumed)
{
    size_t n = 0, i = 0;
    while (i < len && n < max_out) {
        if (midi_stream_feed(s, buf[i], &out[n]))
            n++;
        i++;
    }
    if (consumed)
        *consumed = i;
    return n;
}

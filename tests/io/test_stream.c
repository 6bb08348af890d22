/* test_stream.c: the live MIDI byte parser on running status, real-time, SysEx and junk. */
#include <stdint.h>

#include "check.h"
#include "midi/stream.h"

/* Parses LEN bytes from a fresh parser into OUT; returns the count. */
static size_t parse(midi_stream *s, const uint8_t *bytes, size_t len, midi_msg *out, size_t max)
{
    midi_stream_init(s);
    size_t used = 0;
    size_t n = midi_stream_parse(s, bytes, len, out, max, &used);
    CHECK_INT(used, len);
    return n;
}

#define MSG_IS(m, st, d1, d2, len) do { CHECK_INT((m).status, st); CHECK_INT((m).data1, d1); \
    CHECK_INT((m).data2, d2); CHECK_INT((m).length, len); } while (0)

static void test_plain_messages(void)
{
    const uint8_t b[] = { 0x90, 60, 100, 0x80, 60, 0, 0xC3, 5, 0xE1, 0x00, 0x40, 0xB0, 64, 127 };
    midi_stream s;
    midi_msg m[8];
    CHECK_INT(parse(&s, b, sizeof b, m, 8), 5);
    MSG_IS(m[0], 0x90, 60, 100, 3);
    MSG_IS(m[1], 0x80, 60, 0, 3);
    MSG_IS(m[2], 0xC3, 5, 0, 2);
    MSG_IS(m[3], 0xE1, 0, 0x40, 3);
    MSG_IS(m[4], 0xB0, 64, 127, 3);
    CHECK_INT(s.stats.junk, 0);
    CHECK_INT(s.stats.messages, 5);
}

static void test_running_status(void)
{
    /* One NOTE ON status, then three notes; then program changes. */
    const uint8_t b[] = { 0x91, 60, 100, 64, 90, 67, 0, 0xC0, 1, 2, 3 };
    midi_stream s;
    midi_msg m[8];
    CHECK_INT(parse(&s, b, sizeof b, m, 8), 6);
    MSG_IS(m[0], 0x91, 60, 100, 3);
    MSG_IS(m[1], 0x91, 64, 90, 3);
    MSG_IS(m[2], 0x91, 67, 0, 3);
    CHECK(midi_msg_is_note_off(&m[2]));
    CHECK(!midi_msg_is_note_on(&m[2]));
    MSG_IS(m[3], 0xC0, 1, 0, 2);
    MSG_IS(m[5], 0xC0, 3, 0, 2);
}

static void test_realtime_inside_message(void)
{
    /* Clock and active sensing between the bytes of a note and of a
     * running-status note: delivered at once, the notes arrive whole. */
    const uint8_t b[] = { 0x90, 0xF8, 60, 0xFE, 100, 62, 0xFA, 80 };
    midi_stream s;
    midi_msg m[8];
    CHECK_INT(parse(&s, b, sizeof b, m, 8), 5);
    MSG_IS(m[0], 0xF8, 0, 0, 1);
    MSG_IS(m[1], 0xFE, 0, 0, 1);
    MSG_IS(m[2], 0x90, 60, 100, 3);
    MSG_IS(m[3], 0xFA, 0, 0, 1);
    MSG_IS(m[4], 0x90, 62, 80, 3);
    CHECK_INT(s.stats.realtime, 3);
    CHECK_INT(s.stats.truncated, 0);
}

static void test_transport_messages(void)
{
    /* What a DAW sends: Song Position Pointer with a clock between its data
     * bytes, Continue, Stop and clock between running-status notes. */
    const uint8_t b[] = { 0xF2, 0x10, 0xF8, 0x01, 0xFB, 0x90, 60, 0xF8, 100, 0xFC, 62, 0xF8, 0 };
    midi_stream s;
    midi_msg m[10];
    CHECK_INT(parse(&s, b, sizeof b, m, 10), 8);
    MSG_IS(m[0], 0xF8, 0, 0, 1);
    MSG_IS(m[1], 0xF2, 0x10, 0x01, 3);      /* 16 + 128 sixteenths */
    MSG_IS(m[2], 0xFB, 0, 0, 1);
    MSG_IS(m[3], 0xF8, 0, 0, 1);
    MSG_IS(m[4], 0x90, 60, 100, 3);
    MSG_IS(m[5], 0xFC, 0, 0, 1);
    MSG_IS(m[6], 0xF8, 0, 0, 1);
    MSG_IS(m[7], 0x90, 62, 0, 3);
    CHECK_INT(s.stats.truncated, 0);
    CHECK_INT(s.stats.junk, 0);
}

static void test_sysex_skipped(void)
{
    /* A SysEx (with a clock inside it) between two notes; after it running
     * status is gone, so the bare data bytes are junk. */
    const uint8_t b[] = { 0x90, 60, 100, 0xF0, 0x7E, 0x7F, 0xF8, 0x09, 0x01, 0xF7, 61, 62,
                          0x90, 64, 100 };
    midi_stream s;
    midi_msg m[8];
    CHECK_INT(parse(&s, b, sizeof b, m, 8), 3);
    MSG_IS(m[0], 0x90, 60, 100, 3);
    MSG_IS(m[1], 0xF8, 0, 0, 1);
    MSG_IS(m[2], 0x90, 64, 100, 3);
    CHECK_INT(s.stats.sysex, 1);
    CHECK_INT(s.stats.sysex_bytes, 4);
    CHECK_INT(s.stats.junk, 2);
}

static void test_sysex_ended_by_status(void)
{
    /* A SysEx whose F7 was lost: the next status byte ends it and counts. */
    const uint8_t b[] = { 0xF0, 0x43, 0x10, 0xB2, 1, 2 };
    midi_stream s;
    midi_msg m[4];
    CHECK_INT(parse(&s, b, sizeof b, m, 4), 1);
    MSG_IS(m[0], 0xB2, 1, 2, 3);
    CHECK_INT(s.stats.sysex, 1);
    CHECK_INT(s.stats.junk, 0);
}

static void test_long_sysex_bounded(void)
{
    /* 100000 bytes of SysEx with no end, then a note: the note is not lost
     * and nothing was stored (the parser is a fixed-size struct). */
    midi_stream s;
    midi_stream_init(&s);
    midi_msg m;
    CHECK_INT(midi_stream_feed(&s, 0xF0, &m), 0);
    for (int i = 0; i < 100000; i++)
        CHECK_INT(midi_stream_feed(&s, (uint8_t)(i & 0x7F), &m), 0);
    CHECK_INT(midi_stream_feed(&s, 0x92, &m), 0);
    CHECK_INT(midi_stream_feed(&s, 70, &m), 0);
    CHECK_INT(midi_stream_feed(&s, 1, &m), 1);
    MSG_IS(m, 0x92, 70, 1, 3);
    CHECK_INT(s.stats.sysex, 1);
    CHECK_INT(s.stats.sysex_bytes, 100000);
}

static void test_junk_dropped(void)
{
    /* Data bytes before any status, a stray EOX, undefined status bytes. */
    const uint8_t b[] = { 1, 2, 3, 0xF7, 0xF4, 5, 0xF9, 0xFD, 0x90, 60, 100 };
    midi_stream s;
    midi_msg m[8];
    CHECK_INT(parse(&s, b, sizeof b, m, 8), 1);
    MSG_IS(m[0], 0x90, 60, 100, 3);
    CHECK_INT(s.stats.junk, 8);
}

static void test_status_interrupts(void)
{
    /* A note cut after its key by a CC: the note is dropped, the CC comes
     * through, running status follows the CC. */
    const uint8_t b[] = { 0x90, 60, 0xB0, 7, 100, 10, 20, 0x90, 61 };
    midi_stream s;
    midi_msg m[8];
    CHECK_INT(parse(&s, b, sizeof b, m, 8), 2);
    MSG_IS(m[0], 0xB0, 7, 100, 3);
    MSG_IS(m[1], 0xB0, 10, 20, 3);
    CHECK_INT(s.stats.truncated, 1);
    /* the last NOTE ON is still incomplete; a new status counts it */
    midi_msg x;
    CHECK_INT(midi_stream_feed(&s, 0xF6, &x), 1);
    MSG_IS(x, 0xF6, 0, 0, 1);
    CHECK_INT(s.stats.truncated, 2);
}

static void test_system_common_cancels_running_status(void)
{
    const uint8_t b[] = { 0x90, 60, 100, 0xF2, 0x10, 0x20, 61, 100, 0xF1, 0x35, 0xF3, 4 };
    midi_stream s;
    midi_msg m[8];
    CHECK_INT(parse(&s, b, sizeof b, m, 8), 4);
    MSG_IS(m[0], 0x90, 60, 100, 3);
    MSG_IS(m[1], 0xF2, 0x10, 0x20, 3);
    MSG_IS(m[2], 0xF1, 0x35, 0, 2);
    MSG_IS(m[3], 0xF3, 4, 0, 2);
    CHECK_INT(s.stats.junk, 2);
}

static void test_output_full_resumes(void)
{
    /* With room for 2 messages, parse stops and the rest is fed later. */
    const uint8_t b[] = { 0x90, 1, 1, 2, 2, 3, 3, 4, 4 };
    midi_stream s;
    midi_stream_init(&s);
    midi_msg m[2];
    size_t used = 0, total = 0, got = 0;
    while (total < sizeof b) {
        size_t n = midi_stream_parse(&s, b + total, sizeof b - total, m, 2, &used);
        for (size_t i = 0; i < n; i++)
            CHECK_INT(m[i].data1, (int)got + i + 1);
        got += n;
        total += used;
    }
    CHECK_INT(got, 4);
}

static void test_encode_round_trip(void)
{
    uint8_t buf[3];
    midi_msg note = { 0x93, 64, 99, 3 }, pc = { 0xC0, 7, 0, 2 }, clk = { 0xF8, 0, 0, 1 };
    CHECK_INT(midi_msg_encode(&note, buf), 3);
    CHECK_INT(buf[0], 0x93);
    CHECK_INT(buf[2], 99);
    CHECK_INT(midi_msg_encode(&pc, buf), 2);
    CHECK_INT(midi_msg_encode(&clk, buf), 1);
    midi_msg bad_len = { 0x90, 60, 0, 2 }, bad_data = { 0x90, 200, 1, 3 }, sysex = { 0xF0, 0, 0, 1 };
    CHECK_INT(midi_msg_encode(&bad_len, buf), 0);
    CHECK_INT(midi_msg_encode(&bad_data, buf), 0);
    CHECK_INT(midi_msg_encode(&sysex, buf), 0);
    CHECK_INT(midi_status_length(0xD5), 2);
    CHECK_INT(midi_status_length(0x45), 0);
}

int main(void)
{
    test_plain_messages();
    test_running_status();
    test_realtime_inside_message();
    test_transport_messages();
    test_sysex_skipped();
    test_sysex_ended_by_status();
    test_long_sysex_bounded();
    test_junk_dropped();
    test_status_interrupts();
    test_system_common_cancels_running_status();
    test_output_full_resumes();
    test_encode_round_trip();
    return CHECK_DONE();
}

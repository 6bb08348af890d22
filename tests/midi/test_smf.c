/* test_smf.c: the MIDI file reader and writer on files built in memory: formats, tempo map, SMPTE, merging, bad input. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "midi/smf.h"
#include "smf_build.h"

static char messages[8192];     /* what the last read_capture logged */

/* Reads B as "test.mid" with stderr captured into MESSAGES (and echoed). */
static int read_capture(const smf_build *b, smf *f)
{
    FILE *tmp = tmpfile();
    int saved = dup(2);
    int rc;

    fflush(stderr);
    if (!tmp || saved < 0) {
        fprintf(stderr, "cannot capture stderr\n");
        exit(1);
    }
    dup2(fileno(tmp), 2);
    rc = smf_read_mem(b->d, b->n, "test.mid", f);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(messages, 1, sizeof messages - 1, tmp);
    messages[n] = '\0';
    fclose(tmp);
    fputs(messages, stderr);
    return rc;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* A bad file: -1, nothing left to free, exactly one line naming the file,
 * the byte offset WHERE ("byte N") and the problem WHAT. */
static void expect_error(const char *label, const smf_build *b, const char *where, const char *what)
{
    smf f;
    fprintf(stderr, "-- bad input: %s\n", label);
    int rc = read_capture(b, &f);
    CHECK_INT(rc, -1);
    CHECK(f.events == NULL && f.n_events == 0 && f.tracks == NULL && f.tempos == NULL && f.warnings == NULL);
    CHECK_STR_CONTAINS(messages, "test.mid: ");
    CHECK_STR_CONTAINS(messages, where);
    CHECK_STR_CONTAINS(messages, what);
    CHECK_INT(count_lines(messages), 1);
}

/* Format 0, explicit status bytes, default tempo (120 bpm). */
static void test_format0(void)
{
    smf_build b;
    smf f;

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_meta_text(&b, 0, 0x03, "Piano");
    sb_msg(&b, 0, 0x90, 60, 100);
    sb_msg(&b, 480, 0x80, 60, 64);      /* 0.5 s at 120 bpm */
    sb_msg(&b, 240, 0x91, 64, 90);      /* 0.75 s */
    sb_track_end(&b, 960);              /* 1.75 s */
    CHECK_INT(read_capture(&b, &f), 0);
    CHECK_INT(f.format, 0);
    CHECK_INT(f.n_tracks, 1);
    CHECK_INT(f.division, 480);
    CHECK_INT(f.smpte_fps, 0);
    CHECK_INT(f.n_warnings, 0);
    CHECK_INT(f.n_events, 3);
    CHECK_INT(f.n_tempos, 0);
    if (f.n_events == 3) {
        CHECK_INT(f.events[0].status, 0x90);
        CHECK_INT(f.events[0].data1, 60);
        CHECK_INT(f.events[0].data2, 100);
        CHECK_NEAR(f.events[0].time, 0.0, 1e-12);
        CHECK_INT(f.events[1].status, 0x80);
        CHECK_INT(f.events[1].data2, 64);
        CHECK_NEAR(f.events[1].time, 0.5, 1e-12);
        CHECK_INT(f.events[1].tick, 480);
        CHECK_INT(f.events[2].status, 0x91);
        CHECK_NEAR(f.events[2].time, 0.75, 1e-12);
    }
    CHECK(f.tracks && f.tracks[0].name && strcmp(f.tracks[0].name, "Piano") == 0);
    CHECK_INT(f.tracks[0].n_events, 3);
    CHECK_INT(f.tracks[0].end_tick, 1680);
    CHECK_NEAR(f.duration, 1.75, 1e-12);
    smf_free(&f);
    CHECK(f.events == NULL && f.tracks == NULL);
}

/* Running status over every kind of channel message, with note-on
 * velocity 0 kept as it is, and a status change in the middle. */
static void test_running_status_and_messages(void)
{
    smf_build b;
    smf f;

    sb_header(&b, 0, 1, 96);
    sb_track_begin(&b);
    sb_bytes(&b, 4, 0, 0x92, 60, 80);   /* note on, ch 2 */
    sb_bytes(&b, 3, 10, 64, 81);        /* running: note on 64 */
    sb_bytes(&b, 3, 10, 60, 0);         /* running: note on vel 0 */
    sb_bytes(&b, 4, 0, 0xA2, 64, 30);   /* poly pressure */
    sb_bytes(&b, 4, 0, 0xB2, 64, 127);  /* sustain down */
    sb_bytes(&b, 3, 5, 64, 0);          /* running: sustain up */
    sb_bytes(&b, 3, 0, 0xC2, 5);        /* program change: one data byte */
    sb_bytes(&b, 2, 0, 6);              /* running program change */
    sb_bytes(&b, 3, 0, 0xD2, 50);       /* channel pressure */
    sb_bytes(&b, 4, 0, 0xE2, 0x00, 0x40); /* pitch bend centre */
    sb_bytes(&b, 3, 1, 0x10, 0x41);     /* running pitch bend */
    sb_track_end(&b, 0);
    CHECK_INT(read_capture(&b, &f), 0);
    static const uint8_t want[][4] = {
        { 0x92, 60, 80, 0 }, { 0x92, 64, 81, 10 }, { 0x92, 60, 0, 20 }, { 0xA2, 64, 30, 20 },
        { 0xB2, 64, 127, 20 }, { 0xB2, 64, 0, 25 }, { 0xC2, 5, 0, 25 }, { 0xC2, 6, 0, 25 },
        { 0xD2, 50, 0, 25 }, { 0xE2, 0, 0x40, 25 }, { 0xE2, 0x10, 0x41, 26 },
    };
    size_t n = sizeof want / sizeof want[0];
    CHECK_INT(f.n_events, n);
    for (size_t i = 0; i < n && i < f.n_events; i++) {
        CHECK_INT(f.events[i].status, want[i][0]);
        CHECK_INT(f.events[i].data1, want[i][1]);
        CHECK_INT(f.events[i].data2, want[i][2]);
        CHECK_INT(f.events[i].tick, want[i][3]);
    }
    CHECK_INT(f.n_warnings, 0);
    smf_free(&f);
}

/* Format 1: the tempo changes mid-file in one track and applies to the
 * notes of another track; times in seconds are exact. */
static void test_tempo_map(void)
{
    smf_build b;
    smf f;

    sb_header(&b, 1, 3, 480);
    sb_track_begin(&b);                 /* conductor */
    sb_tempo(&b, 0, 500000);            /* 120 bpm: 480 ticks = 0.5 s */
    sb_tempo(&b, 960, 250000);          /* at 1.0 s: 240 bpm */
    sb_track_end(&b, 0);
    sb_track_begin(&b);                 /* notes every 480 ticks */
    for (int i = 0; i < 5; i++)
        sb_msg(&b, i ? 480 : 0, 0x90, 60 + i, 100);
    sb_track_end(&b, 0);
    sb_track_begin(&b);                 /* a late tempo change in another track */
    sb_tempo(&b, 1920, 1000000);        /* at 1.5 s: 60 bpm */
    sb_msg(&b, 480, 0x90, 70, 1);       /* 2.5 s */
    sb_track_end(&b, 0);
    CHECK_INT(read_capture(&b, &f), 0);
    CHECK_INT(f.format, 1);
    CHECK_INT(f.n_tracks, 3);
    CHECK_INT(f.n_events, 6);
    static const double want[] = { 0.0, 0.5, 1.0, 1.25, 1.5, 2.5 };
    for (size_t i = 0; i < 6 && i < f.n_events; i++) {
        CHECK_NEAR(f.events[i].time, want[i], 1e-12);
        CHECK_INT(f.events[i].data1, i < 5 ? 60 + (int)i : 70);
    }
    CHECK_INT(f.n_tempos, 3);
    if (f.n_tempos == 3) {
        CHECK_NEAR(f.tempos[1].time, 1.0, 1e-12);
        CHECK_INT(f.tempos[1].usec_per_quarter, 250000);
        CHECK_NEAR(f.tempos[2].time, 1.5, 1e-12);
        CHECK_INT(f.tempos[2].tick, 1920);
    }
    CHECK_NEAR(f.duration, 2.5, 1e-12);
    smf_free(&f);
}

/* SMPTE division: time = ticks / (fps * ticks per frame), tempo ignored. */
static void test_smpte(void)
{
    smf_build b;
    smf f;

    sb_header(&b, 0, 1, 0xE728);        /* -25 fps, 40 ticks per frame: 1000 per second */
    sb_track_begin(&b);
    sb_tempo(&b, 0, 1000000);           /* must not matter */
    sb_msg(&b, 1000, 0x90, 60, 100);
    sb_msg(&b, 500, 0x80, 60, 0);
    sb_track_end(&b, 0);
    CHECK_INT(read_capture(&b, &f), 0);
    CHECK_INT(f.division, 0);
    CHECK_INT(f.smpte_fps, 25);
    CHECK_INT(f.smpte_ticks_per_frame, 40);
    CHECK_INT(f.n_events, 2);
    if (f.n_events == 2) {
        CHECK_NEAR(f.events[0].time, 1.0, 1e-12);
        CHECK_NEAR(f.events[1].time, 1.5, 1e-12);
    }
    smf_free(&f);

    sb_header(&b, 0, 1, 0xE30A);        /* -29: 29.97 fps, 10 ticks per frame */
    sb_track_begin(&b);
    sb_msg(&b, 2997, 0x90, 60, 100);    /* exactly 10 s */
    sb_track_end(&b, 0);
    CHECK_INT(read_capture(&b, &f), 0);
    CHECK_INT(f.smpte_fps, 29);
    CHECK(f.n_events == 1 && fabs(f.events[0].time - 10.0) < 1e-9);
    smf_free(&f);
}

/* SysEx, escapes, text and unknown meta events and unknown chunks are skipped. */
static void test_skipped(void)
{
    smf_build b;
    smf f;

    sb_header(&b, 1, 1, 100);
    sb_chunk_begin(&b, "XFIH");         /* unknown chunk before the track */
    sb_bytes(&b, 5, 1, 2, 3, 4, 5);
    sb_chunk_end(&b);
    sb_track_begin(&b);
    sb_msg(&b, 0, 0x90, 60, 100);
    sb_bytes(&b, 7, 0, 0xF0, 4, 0x43, 0x10, 0x4C, 0xF7);  /* SysEx */
    sb_bytes(&b, 5, 0, 0xF7, 2, 0xF8, 0xFA);             /* escape with real-time bytes */
    sb_meta_text(&b, 0, 0x01, "a text event");
    sb_meta_text(&b, 0, 0x7F, "sequencer specific");
    sb_meta_text(&b, 0, 0x60, "unknown meta");
    sb_bytes(&b, 8, 0, 0xFF, 0x58, 4, 4, 2, 24, 8);     /* time signature */
    sb_bytes(&b, 3, 50, 61, 90);        /* running status survives the meta events */
    sb_track_end(&b, 0);
    sb_chunk_begin(&b, "ZZZZ");         /* unknown chunk after the track */
    sb_chunk_end(&b);
    CHECK_INT(read_capture(&b, &f), 0);
    CHECK_INT(f.n_tracks, 1);
    CHECK_INT(f.n_events, 2);
    if (f.n_events == 2) {
        CHECK_INT(f.events[1].status, 0x90);
        CHECK_INT(f.events[1].data1, 61);
        CHECK_INT(f.events[1].tick, 50);
    }
    CHECK_INT(f.n_warnings, 0);
    CHECK(f.tracks && f.tracks[0].name == NULL);
    smf_free(&f);
}

/* Tracks merged by time; ties keep track order, then file order. */
static void test_merge_order(void)
{
    smf_build b;
    smf f;

    sb_header(&b, 1, 4, 1000);
    sb_track_begin(&b);
    sb_tempo(&b, 0, 1000000);           /* 1000 ticks = 1 s */
    sb_track_end(&b, 0);
    sb_track_begin(&b);                 /* track 1: ticks 0 0 20 40 */
    sb_msg(&b, 0, 0x90, 1, 1);
    sb_msg(&b, 0, 0x90, 2, 1);
    sb_msg(&b, 20, 0x90, 3, 1);
    sb_msg(&b, 20, 0x90, 4, 1);
    sb_track_end(&b, 0);
    sb_track_begin(&b);                 /* track 2: ticks 0 10 20 */
    sb_msg(&b, 0, 0x91, 5, 1);
    sb_msg(&b, 10, 0x91, 6, 1);
    sb_msg(&b, 10, 0x91, 7, 1);
    sb_track_end(&b, 0);
    sb_track_begin(&b);                 /* track 3: ticks 5 20 */
    sb_msg(&b, 5, 0x92, 8, 1);
    sb_msg(&b, 15, 0x92, 9, 1);
    sb_track_end(&b, 100);
    CHECK_INT(read_capture(&b, &f), 0);
    static const int want_key[] = { 1, 2, 5, 8, 6, 3, 7, 9, 4 };
    static const int want_track[] = { 1, 1, 2, 3, 2, 1, 2, 3, 1 };
    CHECK_INT(f.n_events, 9);
    for (size_t i = 0; i < 9 && i < f.n_events; i++) {
        CHECK_INT(f.events[i].data1, want_key[i]);
        CHECK_INT(f.events[i].track, want_track[i]);
        if (i > 0)
            CHECK(f.events[i].time >= f.events[i - 1].time);
    }
    CHECK_INT(f.tracks[1].n_events, 4);
    CHECK_INT(f.tracks[2].n_events, 3);
    CHECK_INT(f.tracks[3].n_events, 2);
    CHECK_NEAR(f.duration, 0.120, 1e-12);
    smf_free(&f);
}

/* A track without end-of-track is read, with one warning. */
static void test_missing_end_of_track(void)
{
    smf_build b;
    smf f;

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_msg(&b, 0, 0x90, 60, 100);
    sb_msg(&b, 480, 0x80, 60, 0);
    sb_chunk_end(&b);
    CHECK_INT(read_capture(&b, &f), 0);
    CHECK_INT(f.n_events, 2);
    CHECK_INT(f.n_warnings, 1);
    CHECK_STR_CONTAINS(messages, "warning: test.mid: byte ");
    CHECK_STR_CONTAINS(messages, "no end-of-track");
    CHECK_STR_CONTAINS(f.warnings, "no end-of-track");
    CHECK_NEAR(f.duration, 0.5, 1e-12);
    smf_free(&f);

    /* Trailing garbage after the last chunk: a warning too. */
    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_msg(&b, 0, 0x90, 60, 100);
    sb_track_end(&b, 0);
    size_t garbage_at = b.n;
    sb_bytes(&b, 3, 0x00, 0x0D, 0x0A);
    CHECK_INT(read_capture(&b, &f), 0);
    CHECK_INT(f.n_events, 1);
    CHECK_INT(f.n_warnings, 1);
    char where[32];
    snprintf(where, sizeof where, "byte %zu: ", garbage_at);
    CHECK_STR_CONTAINS(messages, where);
    CHECK_STR_CONTAINS(messages, "trailing garbage");
    smf_free(&f);
}

/* Every bad input: a one-line error with offset and problem, -1. The first
 * track's data starts at byte 22 (14 header + 8 chunk header). */
static void test_bad_input(void)
{
    smf_build b;

    b.n = 0;
    sb_str(&b, "RIFF....RMID");
    expect_error("bad magic", &b, "byte 0: ", "not a MIDI file");

    b.n = 0;
    expect_error("empty file", &b, "byte 0: ", "not a MIDI file");

    sb_header(&b, 0, 1, 480);
    b.n = 10;
    expect_error("truncated header", &b, "byte 10: ", "truncated header");

    sb_header(&b, 0, 1, 480);
    b.d[7] = 200;                       /* header length 200 */
    expect_error("header length past the end", &b, "byte 4: ", "truncated header");

    sb_header(&b, 2, 1, 480);
    sb_track_begin(&b);
    sb_track_end(&b, 0);
    expect_error("format 2", &b, "byte 8: ", "format 2 (sequential tracks) is not supported");

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_msg(&b, 0, 0x90, 60, 100);
    sb_track_end(&b, 0);
    b.n -= 3;                           /* the chunk says 8 bytes, 5 remain */
    expect_error("truncated chunk", &b, "byte 18: ", "truncated chunk");

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_track_end(&b, 0);
    b.d[21] = 0xFF;                     /* chunk length 0x00000FF... past the end */
    b.d[20] = 0x7F;
    expect_error("chunk length past the end", &b, "byte 18: ", "goes past the end of the file");

    sb_header(&b, 1, 2, 480);
    sb_track_begin(&b);
    sb_track_end(&b, 0);
    sb_bytes(&b, 5, 'M', 'T', 'r', 'k', 0);   /* half a chunk header */
    expect_error("truncated chunk header", &b, "byte 26: ", "truncated chunk header");

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_bytes(&b, 8, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x90, 60, 100);   /* 5-byte delta */
    sb_track_end(&b, 0);
    expect_error("bad VLQ", &b, "byte 22: ", "bad VLQ");

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_bytes(&b, 3, 0, 60, 100);        /* data bytes before any status */
    sb_track_end(&b, 0);
    expect_error("running status with no status", &b, "byte 23: ", "running status with no status byte");

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_bytes(&b, 4, 0, 0x90, 60, 0x90); /* a status byte where velocity should be */
    sb_track_end(&b, 0);
    expect_error("status byte as data", &b, "byte 25: ", "where a data byte");

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_msg(&b, 0, 0x90, 60, 100);
    sb_bytes(&b, 3, 0, 0x90, 62);       /* velocity would be past the end */
    sb_chunk_end(&b);
    expect_error("data bytes past the end of the track", &b, "byte 27: ", "past the end of the track");

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_bytes(&b, 1, 0);                 /* a delta time and then nothing */
    sb_chunk_end(&b);
    expect_error("delta with no event", &b, "byte 22: ", "past the end of the track");

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_bytes(&b, 6, 0, 0xFF, 0x51, 0x02, 0x07, 0xA1);   /* tempo with 2 bytes */
    sb_track_end(&b, 0);
    expect_error("bad tempo meta length", &b, "byte 25: ", "bad meta length 2 for tempo");

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_bytes(&b, 6, 0, 0xFF, 0x01, 0x40, 'a', 'b');     /* text of 64 bytes in a short track */
    sb_track_end(&b, 0);
    expect_error("meta length past the end", &b, "byte 25: ", "bad meta length 64");

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_bytes(&b, 5, 0, 0xF0, 0x20, 0x43, 0xF7);         /* SysEx of 32 bytes */
    sb_track_end(&b, 0);
    expect_error("SysEx length past the end", &b, "byte 24: ", "SysEx length 32");

    sb_header(&b, 0, 1, 0);
    sb_track_begin(&b);
    sb_track_end(&b, 0);
    expect_error("division 0", &b, "byte 12: ", "division");

    sb_header(&b, 0, 1, 0xE128);        /* -31 fps */
    sb_track_begin(&b);
    sb_track_end(&b, 0);
    expect_error("bad SMPTE rate", &b, "byte 12: ", "SMPTE frame rate");

    sb_header(&b, 0, 1, 480);
    sb_track_begin(&b);
    sb_bytes(&b, 2, 0, 0xF2);           /* song position: not allowed in a file */
    sb_track_end(&b, 0);
    expect_error("system common byte", &b, "byte 23: ", "not allowed");
}

/* Every prefix of a good file reads or fails cleanly; a cut inside the
 * track chunk is an error. */
static void test_truncations(void)
{
    smf_build b, cut;
    smf f;
    int errors = 0;

    sb_header(&b, 1, 2, 96);
    sb_track_begin(&b);
    sb_tempo(&b, 0, 400000);
    sb_track_end(&b, 0);
    size_t second_track = b.n;
    sb_track_begin(&b);
    sb_meta_text(&b, 0, 0x03, "Right hand");
    for (int i = 0; i < 8; i++)
        sb_msg(&b, 48, 0x90, 60 + i, 100);
    sb_track_end(&b, 0);
    for (size_t n = 0; n < b.n; n++) {
        memcpy(cut.d, b.d, n);
        cut.n = n;
        int rc = read_capture(&cut, &f);
        if (rc == 0)
            smf_free(&f);
        else
            errors++;
        if (n > second_track + 8)
            CHECK_INT(rc, -1);
    }
    CHECK(errors > 0);
}

/* The writer: read back exactly; bad events refused with no file left. */
static void test_writer(void)
{
    char dir[] = "/tmp/continuo-test-smf-XXXXXX";
    char path[128];
    smf f;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/out.mid", dir);

    smf_event right[] = {
        { 0.0, 0, 0, 0x90, 60, 100 }, { 0.0004, 0, 0, 0x90, 64, 90 }, { 0.5, 0, 0, 0x80, 60, 0 },
        { 0.5, 0, 0, 0x80, 64, 0 }, { 1.2345, 0, 0, 0xB0, 64, 127 }, { 3.0, 0, 0, 0xB0, 64, 0 },
    };
    smf_event left[] = {
        { 0.25, 0, 0, 0x91, 36, 70 }, { 0.25, 0, 0, 0xC1, 3, 0 }, { 2.9996, 0, 0, 0x81, 36, 1 },
        { 600.0, 0, 0, 0xE1, 0, 64 },
    };
    smf_track_out tracks[] = {
        { "right hand", right, sizeof right / sizeof right[0] },
        { NULL, left, sizeof left / sizeof left[0] },
    };
    CHECK_INT(smf_write_file(path, tracks, 2), 0);
    CHECK_INT(smf_read_file(path, &f), 0);
    CHECK_INT(f.format, 1);
    CHECK_INT(f.division, 500);
    CHECK_INT(f.n_tracks, 3);
    CHECK_INT(f.n_warnings, 0);
    CHECK_INT(f.n_events, 10);
    CHECK(f.n_tracks == 3 && f.tracks[1].name && strcmp(f.tracks[1].name, "right hand") == 0);
    CHECK(f.n_tracks == 3 && f.tracks[2].name == NULL);
    /* Each event comes back at its time rounded to the millisecond, in
     * merged order; compare track by track. */
    for (int t = 0; t < 2; t++) {
        size_t k = 0;
        for (size_t i = 0; i < f.n_events; i++) {
            if (f.events[i].track != t + 1)
                continue;
            const smf_event *w = &tracks[t].events[k++];
            CHECK_INT(f.events[i].status, w->status);
            CHECK_INT(f.events[i].data1, w->data1);
            CHECK_INT(f.events[i].data2, w->data2);
            CHECK(f.events[i].time == lround(w->time * 1000) / 1000.0);
        }
        CHECK_INT(k, tracks[t].n_events);
    }
    CHECK_NEAR(f.duration, 600.0, 1e-9);
    smf_free(&f);

    /* Refused: a non-channel status and events out of order. */
    smf_event bad_status[] = { { 0.0, 0, 0, 0xF0, 1, 2 } };
    smf_event bad_order[] = { { 1.0, 0, 0, 0x90, 60, 1 }, { 0.5, 0, 0, 0x80, 60, 0 } };
    smf_track_out bad1 = { "x", bad_status, 1 }, bad2 = { "x", bad_order, 2 };
    char path2[160];
    snprintf(path2, sizeof path2, "%s/bad.mid", dir);
    CHECK_INT(smf_write_file(path2, &bad1, 1), -1);
    CHECK_INT(smf_write_file(path2, &bad2, 1), -1);
    CHECK(access(path2, F_OK) != 0);
    snprintf(path2, sizeof path2, "%s/no/such/dir.mid", dir);
    CHECK_INT(smf_write_file(path2, tracks, 2), -1);

    unlink(path);
    CHECK(rmdir(dir) == 0);
}

/* The fuzzing seeds say by their names how they read: good_* clean,
 * warn_* with warnings, bad_* refused. */
static void test_seed_corpus(void)
{
    const char *src = getenv("CONTINUO_SRC");
    char dir[1024];
    int good = 0, warned = 0, bad = 0;

    if (!src)
        return;
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/smf", src);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char path[2048];
        smf f;
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        int rc = smf_read_file(path, &f);
        if (strncmp(de->d_name, "good_", 5) == 0) {
            good++;
            if (rc != 0 || f.n_warnings != 0)
                fprintf(stderr, "%s: expected a clean read\n", de->d_name);
            CHECK(rc == 0 && f.n_warnings == 0 && f.n_events > 0);
        } else if (strncmp(de->d_name, "warn_", 5) == 0) {
            warned++;
            if (rc != 0 || f.n_warnings == 0)
                fprintf(stderr, "%s: expected a read with warnings\n", de->d_name);
            CHECK(rc == 0 && f.n_warnings > 0);
        } else if (strncmp(de->d_name, "bad_", 4) == 0) {
            bad++;
            CHECK_INT(rc, -1);
        }
        if (rc == 0)
            smf_free(&f);
    }
    closedir(d);
    fprintf(stderr, "seed corpus: %d good, %d with warnings, %d bad\n", good, warned, bad);
    CHECK(good > 0 && warned > 0 && bad > 0);
}

int main(void)
{
    test_format0();
    test_running_status_and_messages();
    test_tempo_map();
    test_smpte();
    test_skipped();
    test_merge_order();
    test_missing_end_of_track();
    test_bad_input();
    test_truncations();
    test_writer();
    test_seed_corpus();
    return CHECK_DONE();
}

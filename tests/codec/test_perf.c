/* test_perf.c: unit tests of the vocabulary layouts, pedal folding, the encoders and the decoder. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codec/perf.h"
#include "codec/vocab.h"

/* ---- helpers ---- */

typedef struct evbuf {
    smf_event ev[4096];
    size_t n;
} evbuf;

static void add(evbuf *b, double t, int status, int d1, int d2)
{
    b->ev[b->n++] = (smf_event){ .time = t, .status = (uint8_t)status,
                                 .data1 = (uint8_t)d1, .data2 = (uint8_t)d2 };
}
static void on(evbuf *b, double t, int p, int v) { add(b, t, 0x90, p, v); }
static void off(evbuf *b, double t, int p) { add(b, t, 0x80, p, 64); }
static void pedal(evbuf *b, double t, int value) { add(b, t, 0xB0, 64, value); }

/* The ids as names separated by spaces, in a static buffer. */
static const char *names(const vocab *v, const uint16_t *ids, size_t n)
{
    static char out[8192];
    char one[32];
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && k + 40 < sizeof out; i++) {
        vocab_id_name(v, ids[i], one, sizeof one);
        k += (size_t)snprintf(out + k, sizeof out - k, "%s%s", i ? " " : "", one);
    }
    return out;
}

#define CHECK_STREQ(a, b) do { const char *a_ = (a), *b_ = (b); if (strcmp(a_, b_) != 0) { \
    fprintf(stderr, "%s:%d: got\n    %s\nexpected\n    %s\n", __FILE__, __LINE__, a_, b_); \
    check_failures++; } } while (0)

/* Encodes NOTES with OPT in layout V and returns the names of the ids. */
static const char *encode_names(const vocab *v, const note *notes, size_t n,
                                const encode_opts *opt, perf_encode_info *info)
{
    uint16_t *ids;
    size_t nid;
    if (perf_encode_ex(v, notes, n, opt, &ids, &nid, info) < 0)
        return "(failed)";
    const char *s = names(v, ids, nid);
    free(ids);
    return s;
}

static const char *encode_events(const evbuf *b, perf_encode_info *info)
{
    note_list l = { 0 };
    if (perf_notes_from_midi(b->ev, b->n, &l) < 0)
        return "(failed)";
    const char *s = encode_names(vocab_default(), l.notes, l.n, NULL, info);
    note_list_free(&l);
    return s;
}

/* ---- vocabulary ---- */

static void test_layouts(void)
{
    const vocab *mt = vocab_default();
    CHECK_STREQ(mt->name, "mt310");
    CHECK(vocab_find("mt310") == mt);
    CHECK(vocab_find("nonsense") == NULL);
    CHECK(vocab_by_size(388) == vocab_find("prnn388"));
    CHECK(vocab_by_size(123) == NULL);
    CHECK_INT(vocab_id(mt, EVENT_PAD, 0), 0);
    CHECK_INT(vocab_id(mt, EVENT_EOS, 0), 1);
    CHECK_INT(vocab_id(mt, EVENT_NOTE_ON, 21), 2);
    CHECK_INT(vocab_id(mt, EVENT_NOTE_ON, 108), 89);
    CHECK_INT(vocab_id(mt, EVENT_NOTE_OFF, 21), 90);
    CHECK_INT(vocab_id(mt, EVENT_TIME_SHIFT, 1), 178);
    CHECK_INT(vocab_id(mt, EVENT_TIME_SHIFT, 100), 277);
    CHECK_INT(vocab_id(mt, EVENT_VELOCITY, 0), 278);
    CHECK_INT(vocab_id(mt, EVENT_VELOCITY, 31), 309);
    CHECK_INT(vocab_id(mt, EVENT_NOTE_ON, 20), -1);
    CHECK_INT(vocab_id(mt, EVENT_NOTE_ON, 109), -1);
    CHECK_INT(vocab_id(mt, EVENT_TIME_SHIFT, 0), -1);
    CHECK_INT(vocab_id(mt, EVENT_TIME_SHIFT, 101), -1);

    const vocab *pr = vocab_find("prnn388");
    CHECK(pr != NULL);
    if (!pr)
        return;
    CHECK_INT(pr->size, 388);
    CHECK_INT(vocab_id(pr, EVENT_PAD, 0), -1);
    CHECK_INT(vocab_id(pr, EVENT_EOS, 0), -1);
    CHECK_INT(vocab_id(pr, EVENT_NOTE_ON, 0), 0);
    CHECK_INT(vocab_id(pr, EVENT_NOTE_OFF, 127), 255);
    CHECK_INT(vocab_id(pr, EVENT_TIME_SHIFT, 100), 355);
    CHECK_INT(vocab_id(pr, EVENT_VELOCITY, 31), 387);

    /* Every layout: the ranges tile the ids, and id -> (type, value) -> id. */
    for (int li = 0; vocab_at(li); li++) {
        const vocab *v = vocab_at(li);
        int n_pitch = v->max_pitch - v->min_pitch + 1;
        CHECK_INT(v->note_on_base, v->has_pad_eos ? 2 : 0);
        CHECK_INT(v->note_off_base, v->note_on_base + n_pitch);
        CHECK_INT(v->time_shift_base, v->note_off_base + n_pitch);
        CHECK_INT(v->velocity_base, v->time_shift_base + v->n_time_shifts);
        CHECK_INT(v->size, v->velocity_base + v->n_velocity_bins);
        char buf[32];
        for (int id = 0; id < v->size; id++) {
            int value;
            event_type t = vocab_decode(v, id, &value);
            CHECK(t != EVENT_INVALID);
            CHECK_INT(vocab_id(v, t, value), id);
            CHECK_INT(vocab_parse(v, vocab_id_name(v, id, buf, sizeof buf)), id);
        }
        CHECK(vocab_decode(v, v->size, NULL) == EVENT_INVALID);
        CHECK(vocab_decode(v, -1, NULL) == EVENT_INVALID);
    }
    char buf[32];
    CHECK_STREQ(vocab_id_name(mt, vocab_id(mt, EVENT_NOTE_ON, 60), buf, sizeof buf), "NOTE_ON(60)");
    CHECK_STREQ(vocab_id_name(mt, 400, buf, sizeof buf), "INVALID(400)");
    CHECK_INT(vocab_parse(mt, " note_off( 60 ) "), vocab_id(mt, EVENT_NOTE_OFF, 60));
    CHECK_INT(vocab_parse(mt, "300"), 300);
    CHECK_INT(vocab_parse(mt, "310"), -1);
    CHECK_INT(vocab_parse(mt, "NOTE_ON(10)"), -1);       /* outside 21..108 */
    CHECK_INT(vocab_parse(mt, "NOTE_ON(60"), -1);
    CHECK_INT(vocab_parse(mt, "CHORD(60)"), -1);
    CHECK_INT(vocab_parse(mt, "EOS"), 1);
    CHECK_INT(vocab_parse(pr, "EOS"), -1);
}

static void test_velocity_bins(void)
{
    const vocab *v = vocab_default();
    CHECK_INT(velocity_to_bin(v, 1), 0);
    CHECK_INT(velocity_to_bin(v, 4), 0);
    CHECK_INT(velocity_to_bin(v, 5), 1);
    CHECK_INT(velocity_to_bin(v, 64), 15);
    CHECK_INT(velocity_to_bin(v, 127), 31);
    for (int b = 0; b < 32; b++)
        CHECK_INT(bin_to_velocity(v, b), 4 * b + 1);
    for (int vel = 1; vel <= 127; vel++) {
        CHECK_INT(velocity_to_bin(v, vel), (vel - 1) / 4);
        int back = bin_to_velocity(v, velocity_to_bin(v, vel));
        CHECK(back <= vel && vel - back <= 3);
    }
}

/* ---- pedal folding ---- */

static int find_note(const note_list *l, int pitch, double onset, double release)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->notes[i].pitch == pitch && fabs(l->notes[i].onset - onset) < 1e-9
            && fabs(l->notes[i].release - release) < 1e-9)
            return 1;
    return 0;
}

static void test_pedal_folding(void)
{
    evbuf b = { .n = 0 };
    note_list l = { 0 };

    /* Released while the pedal is down: lasts until the pedal lifts. Released
     * before the pedal goes down: not extended. Held when the pedal goes down
     * and released under it: extended. CC64 63 is up, 64 is down. */
    on(&b, 0.0, 60, 80);
    off(&b, 0.4, 60);           /* before the pedal */
    on(&b, 0.5, 64, 80);
    pedal(&b, 0.6, 64);
    on(&b, 0.7, 67, 80);
    off(&b, 0.8, 64);           /* held, released under the pedal */
    off(&b, 0.9, 67);
    pedal(&b, 1.5, 63);         /* up */
    on(&b, 2.0, 72, 90);
    off(&b, 2.1, 72);
    CHECK(perf_notes_from_midi(b.ev, b.n, &l) == 0);
    CHECK_INT(l.n, 4);
    CHECK(find_note(&l, 60, 0.0, 0.4));
    CHECK(find_note(&l, 64, 0.5, 1.5));
    CHECK(find_note(&l, 67, 0.7, 1.5));
    CHECK(find_note(&l, 72, 2.0, 2.1));
    note_list_free(&l);

    /* Struck again under the pedal: the sustained note ends at the new onset;
     * the new one, released under the pedal too, lasts to the pedal lift. */
    b.n = 0;
    pedal(&b, 0.0, 127);
    on(&b, 0.1, 60, 50);
    off(&b, 0.2, 60);
    on(&b, 0.8, 60, 70);
    off(&b, 0.9, 60);
    pedal(&b, 1.2, 0);
    CHECK(perf_notes_from_midi(b.ev, b.n, &l) == 0);
    CHECK_INT(l.n, 2);
    CHECK(find_note(&l, 60, 0.1, 0.8));
    CHECK(find_note(&l, 60, 0.8, 1.2));
    if (l.n == 2) {
        CHECK_INT(l.notes[0].velocity, 50);
        CHECK_INT(l.notes[1].velocity, 70);
    }
    note_list_free(&l);

    /* Pedal never lifted and a key never released: both close at the last
     * event (here a CC of another controller).  Note-on velocity 0 is a
     * note-off; channels are merged; a note-off of a silent pitch is ignored;
     * a pitch struck while held ends the held note. */
    b.n = 0;
    on(&b, 0.0, 50, 60);
    add(&b, 0.3, 0x91, 50, 0);          /* channel 2, velocity 0: ends pitch 50 */
    off(&b, 0.35, 51);                  /* silent: ignored */
    on(&b, 0.4, 52, 60);
    on(&b, 0.6, 52, 61);                /* struck again while held */
    off(&b, 0.7, 52);
    off(&b, 0.75, 52);                  /* silent by now: ignored */
    pedal(&b, 1.0, 100);
    on(&b, 1.1, 55, 60);
    off(&b, 1.2, 55);                   /* sustained, pedal never lifts */
    on(&b, 1.3, 57, 60);                /* never released */
    add(&b, 3.0, 0xB0, 7, 100);         /* volume: the last event */
    CHECK(perf_notes_from_midi(b.ev, b.n, &l) == 0);
    CHECK_INT(l.n, 5);
    CHECK(find_note(&l, 50, 0.0, 0.3));
    CHECK(find_note(&l, 52, 0.4, 0.6));
    CHECK(find_note(&l, 52, 0.6, 0.7));
    CHECK(find_note(&l, 55, 1.1, 3.0));
    CHECK(find_note(&l, 57, 1.3, 3.0));
    for (size_t i = 1; i < l.n; i++)
        CHECK(l.notes[i - 1].onset <= l.notes[i].onset);
    note_list_free(&l);
}

/* ---- encoding rules ---- */

static void test_encode_rules(void)
{
    const vocab *v = vocab_default();
    perf_encode_info info;

    /* One note: VELOCITY before NOTE_ON, TIME_SHIFT in 10 ms steps. */
    note one[] = { { 0.0, 0.5, 60, 80 } };
    CHECK_STREQ(encode_names(v, one, 1, NULL, &info),
                "VELOCITY(19) NOTE_ON(60) TIME_SHIFT(50) NOTE_OFF(60)");
    CHECK_INT(info.n_notes, 1);

    /* VELOCITY only when the bin changes (77 and 80 share bin 19), never
     * before a NOTE_OFF; leading silence is kept. */
    note vel[] = { { 0.1, 0.2, 60, 77 }, { 0.3, 0.4, 62, 80 }, { 0.5, 0.6, 64, 100 } };
    CHECK_STREQ(encode_names(v, vel, 3, NULL, NULL),
                "TIME_SHIFT(10) VELOCITY(19) NOTE_ON(60) TIME_SHIFT(10) NOTE_OFF(60) "
                "TIME_SHIFT(10) NOTE_ON(62) TIME_SHIFT(10) NOTE_OFF(62) TIME_SHIFT(10) "
                "VELOCITY(24) NOTE_ON(64) TIME_SHIFT(10) NOTE_OFF(64)");

    /* Same step: offs before ons, each by pitch, whatever the input order. */
    note same[] = { { 0.0, 1.0, 72, 80 }, { 0.0, 1.0, 48, 80 },
                    { 1.0, 1.5, 67, 80 }, { 1.0, 1.5, 60, 40 } };
    CHECK_STREQ(encode_names(v, same, 4, NULL, NULL),
                "VELOCITY(19) NOTE_ON(48) NOTE_ON(72) TIME_SHIFT(100) NOTE_OFF(48) NOTE_OFF(72) "
                "VELOCITY(9) NOTE_ON(60) VELOCITY(19) NOTE_ON(67) TIME_SHIFT(50) "
                "NOTE_OFF(60) NOTE_OFF(67)");

    /* A gap over 1 s becomes several TIME_SHIFTs. */
    note gap[] = { { 0.0, 0.01, 60, 80 }, { 2.51, 2.52, 60, 80 } };
    CHECK_STREQ(encode_names(v, gap, 2, NULL, NULL),
                "VELOCITY(19) NOTE_ON(60) TIME_SHIFT(1) NOTE_OFF(60) TIME_SHIFT(100) "
                "TIME_SHIFT(100) TIME_SHIFT(50) NOTE_ON(60) TIME_SHIFT(1) NOTE_OFF(60)");

    /* Rounding to the nearest step. */
    CHECK_INT(perf_quantize(v, 1.0, 0.0149), 1);
    CHECK_INT(perf_quantize(v, 1.0, 0.0151), 2);
    CHECK_INT(perf_quantize(v, 1.0, -0.5), 0);
    CHECK_INT(perf_quantize(v, 2.0, 0.0149), 3);

    /* Zero length after quantizing: one step (Magenta does the same). */
    note zero[] = { { 0.101, 0.103, 60, 80 } };
    CHECK_STREQ(encode_names(v, zero, 1, NULL, &info),
                "TIME_SHIFT(10) VELOCITY(19) NOTE_ON(60) TIME_SHIFT(1) NOTE_OFF(60)");
    CHECK_INT(info.n_lengthened, 1);

    /* The same pitch struck twice within one step: only the later note can
     * be encoded; the earlier one is dropped and counted. */
    note twice[] = { { 0.100, 0.101, 60, 20 }, { 0.102, 0.3, 60, 100 } };
    CHECK_STREQ(encode_names(v, twice, 2, NULL, &info),
                "TIME_SHIFT(10) VELOCITY(24) NOTE_ON(60) TIME_SHIFT(20) NOTE_OFF(60)");
    CHECK_INT(info.n_collapsed, 1);
    CHECK_INT(info.n_notes, 1);
    /* ... while a one-step note followed a step later is kept. */
    note next[] = { { 0.100, 0.101, 60, 20 }, { 0.11, 0.3, 60, 20 } };
    CHECK_STREQ(encode_names(v, next, 2, NULL, &info),
                "TIME_SHIFT(10) VELOCITY(4) NOTE_ON(60) TIME_SHIFT(1) NOTE_OFF(60) NOTE_ON(60) "
                "TIME_SHIFT(19) NOTE_OFF(60)");

    /* Stretch multiplies times before quantizing. */
    encode_opts st = { .stretch = 1.05 };
    note sn[] = { { 1.0, 2.0, 60, 80 } };
    CHECK_STREQ(encode_names(v, sn, 1, &st, NULL),
                "TIME_SHIFT(100) TIME_SHIFT(5) VELOCITY(19) NOTE_ON(60) TIME_SHIFT(100) "
                "TIME_SHIFT(5) NOTE_OFF(60)");

    /* Transposition; notes leaving 21..108 are dropped and counted. */
    encode_opts up = { .stretch = 1.0, .transpose = 3 };
    note tn[] = { { 0.0, 0.1, 60, 80 }, { 0.0, 0.1, 106, 80 } };
    CHECK_STREQ(encode_names(v, tn, 2, &up, &info),
                "VELOCITY(19) NOTE_ON(63) TIME_SHIFT(10) NOTE_OFF(63)");
    CHECK_INT(info.n_out_of_range, 1);
    encode_opts down = { .stretch = 1.0, .transpose = -3 };
    note dn[] = { { 0.0, 0.1, 23, 80 }, { 0.0, 0.1, 24, 80 } };
    CHECK_STREQ(encode_names(v, dn, 2, &down, &info),
                "VELOCITY(19) NOTE_ON(21) TIME_SHIFT(10) NOTE_OFF(21)");
    CHECK_INT(info.n_out_of_range, 1);

    /* EOS when asked and the layout has one; prnn388 keeps all 128 pitches. */
    encode_opts eos = { .stretch = 1.0, .add_eos = 1 };
    CHECK_STREQ(encode_names(v, one, 1, &eos, NULL),
                "VELOCITY(19) NOTE_ON(60) TIME_SHIFT(50) NOTE_OFF(60) EOS");
    const vocab *pr = vocab_find("prnn388");
    note low[] = { { 0.0, 0.05, 5, 127 } };
    CHECK_STREQ(encode_names(pr, low, 1, &eos, &info),
                "VELOCITY(31) NOTE_ON(5) TIME_SHIFT(5) NOTE_OFF(5)");
    CHECK_INT(info.n_out_of_range, 0);
    CHECK_STREQ(encode_names(v, low, 1, NULL, &info), "");
    CHECK_INT(info.n_out_of_range, 1);

    /* Empty input: no events. */
    CHECK_STREQ(encode_names(v, NULL, 0, NULL, &info), "");
}

/* A pedal-folded performance through the encoder: sustain shows up as a
 * later NOTE_OFF. */
static void test_encode_pedal(void)
{
    evbuf b = { .n = 0 };
    on(&b, 0.0, 60, 64);
    pedal(&b, 0.05, 127);
    off(&b, 0.1, 60);
    pedal(&b, 0.3, 0);
    CHECK_STREQ(encode_events(&b, NULL),
                "VELOCITY(15) NOTE_ON(60) TIME_SHIFT(30) NOTE_OFF(60)");
}

/* ---- decoding ---- */

static void decode_all(const vocab *v, const uint16_t *ids, size_t n, double max_s,
                       note_list *out, perf_decoder *d)
{
    perf_decoder_init(d, v, max_s);
    for (size_t i = 0; i < n; i++)
        CHECK(perf_decoder_push(d, ids[i], out) == 0);
    CHECK(perf_decoder_finish(d, out) == 0);
    CHECK(note_list_sort(out) == 0);
}

static void test_decoder(void)
{
    const vocab *v = vocab_default();
    perf_decoder d;
    note_list l = { 0 };
    int ON60 = vocab_id(v, EVENT_NOTE_ON, 60), OFF60 = vocab_id(v, EVENT_NOTE_OFF, 60);
    int TS10 = vocab_id(v, EVENT_TIME_SHIFT, 10), TS100 = vocab_id(v, EVENT_TIME_SHIFT, 100);
    int VEL9 = vocab_id(v, EVENT_VELOCITY, 9);

    /* Round trip of a small hand-made performance. */
    note in[] = { { 0.0, 0.5, 60, 80 }, { 0.25, 1.75, 64, 33 }, { 3.0, 3.01, 21, 127 } };
    uint16_t *ids;
    size_t nid;
    CHECK(perf_encode(v, in, 3, NULL, &ids, &nid) == 0);
    decode_all(v, ids, nid, 10, &l, &d);
    free(ids);
    CHECK_INT(l.n, 3);
    for (size_t i = 0; i < l.n && i < 3; i++) {
        CHECK_INT(l.notes[i].pitch, in[i].pitch);
        CHECK_NEAR(l.notes[i].onset, in[i].onset, 1e-9);
        CHECK_NEAR(l.notes[i].release, in[i].release, 1e-9);
        CHECK_INT(l.notes[i].velocity, 4 * ((in[i].velocity - 1) / 4) + 1);
    }
    note_list_free(&l);

    /* NOTE_OFF of a silent pitch is ignored; a re-struck pitch ends the old
     * note first; velocity before any VELOCITY is the default. */
    uint16_t s1[] = { (uint16_t)OFF60, (uint16_t)ON60, (uint16_t)TS10, (uint16_t)VEL9,
                      (uint16_t)ON60, (uint16_t)TS10, (uint16_t)OFF60, (uint16_t)OFF60 };
    decode_all(v, s1, 8, 10, &l, &d);
    CHECK_INT(l.n, 2);
    CHECK_INT(d.n_ignored, 2);
    if (l.n == 2) {
        CHECK_NEAR(l.notes[0].onset, 0.0, 1e-9);
        CHECK_NEAR(l.notes[0].release, 0.1, 1e-9);
        CHECK_INT(l.notes[0].velocity, PERF_DEFAULT_VELOCITY);
        CHECK_NEAR(l.notes[1].onset, 0.1, 1e-9);
        CHECK_NEAR(l.notes[1].release, 0.2, 1e-9);
        CHECK_INT(l.notes[1].velocity, 37);
    }
    note_list_free(&l);

    /* A note never released is cut at max_note_s, while decoding. */
    perf_decoder_init(&d, v, 2.0);
    CHECK(perf_decoder_push(&d, ON60, &l) == 0);
    for (int i = 0; i < 5; i++)
        CHECK(perf_decoder_push(&d, TS100, &l) == 0);
    CHECK_INT(l.n, 1);                  /* out before finish */
    if (l.n == 1)
        CHECK_NEAR(l.notes[0].release - l.notes[0].onset, 2.0, 1e-9);
    CHECK_INT(d.n_capped, 1);
    note_list_free(&l);

    /* PAD ignored; EOS ends the sounding notes; zero-length notes dropped. */
    uint16_t s2[] = { 0, (uint16_t)ON60, (uint16_t)TS10, 1, (uint16_t)ON60, (uint16_t)OFF60 };
    decode_all(v, s2, 6, 10, &l, &d);
    CHECK_INT(l.n, 1);
    CHECK(d.eos);
    CHECK_INT(d.n_zero, 1);
    note_list_free(&l);
}

/* Random id sequences (including ids out of range): no crash, every note
 * ends, lengths capped, times within the decoded span. */
static void test_decoder_random(void)
{
    srand(12345);
    for (int li = 0; vocab_at(li); li++) {
        const vocab *v = vocab_at(li);
        for (int round = 0; round < 200; round++) {
            perf_decoder d;
            note_list l = { 0 };
            double cap = 0.05 + (round % 7) * 0.5;
            perf_decoder_init(&d, v, cap);
            int n = 1 + rand() % 3000;
            for (int i = 0; i < n; i++) {
                int id = rand() % (v->size + 20) - 5;
                if (perf_decoder_push(&d, id, &l) != 0) {
                    CHECK(0);
                    break;
                }
            }
            CHECK(perf_decoder_finish(&d, &l) == 0);
            CHECK_INT(d.n_sounding, 0);
            for (int p = 0; p < 128; p++)
                CHECK(d.onset[p] < 0);
            for (size_t i = 0; i < l.n; i++) {
                const note *x = &l.notes[i];
                CHECK(x->release > x->onset);
                CHECK(x->release - x->onset <= cap + 1e-9);
                CHECK(x->onset >= 0 && x->release <= d.time + 1e-9);
                CHECK(x->pitch >= v->min_pitch && x->pitch <= v->max_pitch);
                CHECK(x->velocity >= 1 && x->velocity <= 127);
            }
            note_list_free(&l);
        }
    }
}

/* ---- streaming encoder == batch encoder ---- */

static int stream_encode(const vocab *v, const evbuf *b, const encode_opts *opt,
                         int chunked, uint16_t *ids, size_t max, perf_encode_info *info)
{
    perf_encoder *e = perf_encoder_new(v, opt);
    size_t n = 0;
    if (!e)
        return -1;
    for (size_t i = 0; i < b->n; i++) {
        CHECK(perf_encoder_push(e, &b->ev[i]) == 0);
        if (chunked)
            n += perf_encoder_pop(e, ids + n, max - n);
    }
    CHECK(perf_encoder_finish(e) == 0);
    n += perf_encoder_pop(e, ids + n, max - n);
    *info = perf_encoder_info(e);
    perf_encoder_free(e);
    return (int)n;
}

static void test_stream_matches_batch(void)
{
    static uint16_t sids[1 << 16];
    size_t tot_notes = 0, tot_len = 0, tot_col = 0, tot_range = 0;
    srand(777);
    for (int round = 0; round < 300; round++) {
        evbuf b = { .n = 0 };
        double t = 0;
        int n = 20 + rand() % 400;
        /* Dense random playing: times often within one step, so that
         * lengthened and collapsed notes, re-strikes and pedal changes occur. */
        for (int i = 0; i < n; i++) {
            t += (rand() % 4 == 0) ? 0.0 : (rand() % 1000) * (rand() % 3 ? 0.00003 : 0.003);
            int r = rand() % 10, p = 55 + rand() % 12;
            if (rand() % 20 == 0)       /* near the edges of 21..108 */
                p = rand() % 2 ? 19 + rand() % 4 : 106 + rand() % 4;
            if (r < 4)
                on(&b, t, p, 1 + rand() % 127);
            else if (r < 8)
                (rand() % 2 ? off(&b, t, p) : on(&b, t, p, 0));
            else
                pedal(&b, t, rand() % 128);
        }
        encode_opts opt = { .stretch = round % 3 ? 1.0 : 0.975, .transpose = round % 5 - 2,
                            .add_eos = round % 2 };
        const vocab *v = round % 4 == 3 ? vocab_find("prnn388") : vocab_default();
        note_list l = { 0 };
        uint16_t *ids;
        size_t nid;
        perf_encode_info bi, si;
        CHECK(perf_notes_from_midi(b.ev, b.n, &l) == 0);
        CHECK(perf_encode_ex(v, l.notes, l.n, &opt, &ids, &nid, &bi) == 0);
        int ns = stream_encode(v, &b, &opt, round % 2, sids, sizeof sids / sizeof sids[0], &si);
        CHECK_INT(ns, nid);
        if ((size_t)ns == nid && memcmp(ids, sids, nid * sizeof *ids) != 0) {
            CHECK(!"streaming and batch tokens differ");
            fprintf(stderr, "batch:  %s\n", names(v, ids, nid));
            fprintf(stderr, "stream: %s\n", names(v, sids, (size_t)ns));
        }
        CHECK_INT(si.n_notes, bi.n_notes);
        CHECK_INT(si.n_lengthened, bi.n_lengthened);
        CHECK_INT(si.n_collapsed, bi.n_collapsed);
        CHECK_INT(si.n_out_of_range, bi.n_out_of_range);
        tot_notes += bi.n_notes;
        tot_len += bi.n_lengthened;
        tot_col += bi.n_collapsed;
        tot_range += bi.n_out_of_range;
        free(ids);
        note_list_free(&l);
    }
    printf("streaming vs batch: 300 performances, %zu notes (%zu lengthened, %zu collapsed, "
           "%zu out of range): same tokens\n", tot_notes, tot_len, tot_col, tot_range);
    /* the random playing must exercise the tricky cases */
    CHECK(tot_len > 0 && tot_col > 0 && tot_range > 0);
}

/* A NOTE_OFF under the pedal is only final once the pedal lifts. */
static void test_stream_defers(void)
{
    const vocab *v = vocab_default();
    perf_encoder *e = perf_encoder_new(v, NULL);
    uint16_t ids[64];
    smf_event ev[] = {
        { .time = 0.0, .status = 0x90, .data1 = 60, .data2 = 80 },
        { .time = 0.1, .status = 0xB0, .data1 = 64, .data2 = 127 },
        { .time = 0.2, .status = 0x80, .data1 = 60 },
        { .time = 0.5, .status = 0xB0, .data1 = 64, .data2 = 0 },
    };
    CHECK(e != NULL);
    if (!e)
        return;
    CHECK(perf_encoder_push(e, &ev[0]) == 0);
    CHECK_INT(perf_encoder_pop(e, ids, 64), 0);     /* step 0 may still get events */
    CHECK(perf_encoder_push(e, &ev[1]) == 0);
    CHECK_STREQ(names(v, ids, perf_encoder_pop(e, ids, 64)), "VELOCITY(19) NOTE_ON(60)");
    CHECK(perf_encoder_push(e, &ev[2]) == 0);
    CHECK(perf_encoder_advance(e, 0.4) == 0);
    CHECK_INT(perf_encoder_pop(e, ids, 64), 0);     /* sustained: nothing yet */
    CHECK(perf_encoder_push(e, &ev[3]) == 0);
    CHECK(perf_encoder_advance(e, 0.6) == 0);
    CHECK_STREQ(names(v, ids, perf_encoder_pop(e, ids, 64)), "TIME_SHIFT(50) NOTE_OFF(60)");
    perf_encoder_free(e);
}

static void test_notes_to_events(void)
{
    note in[] = { { 0.0, 0.5, 60, 80 }, { 0.5, 1.0, 60, 90 }, { 0.2, 0.5, 40, 10 } };
    smf_event *ev;
    size_t n;
    CHECK(perf_notes_to_events(in, 3, &ev, &n) == 0);
    CHECK_INT(n, 6);
    for (size_t i = 1; i < n; i++)
        CHECK(ev[i - 1].time <= ev[i].time);
    /* at 0.5: both offs (40, 60) before the on of 60 */
    CHECK_INT(ev[2].status, 0x80);
    CHECK_INT(ev[2].data1, 40);
    CHECK_INT(ev[3].status, 0x80);
    CHECK_INT(ev[4].status, 0x90);
    CHECK_INT(ev[4].data2, 90);
    note_list l = { 0 };
    CHECK(perf_notes_from_midi(ev, n, &l) == 0);
    CHECK_INT(l.n, 3);
    note_list_free(&l);
    free(ev);
}

int main(void)
{
    test_layouts();
    test_velocity_bins();
    test_pedal_folding();
    test_encode_rules();
    test_encode_pedal();
    test_decoder();
    test_decoder_random();
    test_stream_matches_batch();
    test_stream_defers();
    test_notes_to_events();
    return CHECK_DONE();
}

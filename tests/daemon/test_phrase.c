/* test_phrase.c: held keys, the sustain pedal, phrase ends, what the model hears, mapped controls. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "daemon/phrase.h"

#define MS 1000000LL

static phrase_changes asked;   /* what the last message fed asked for */

/* The controllers' mappings as the config file describes them. */
static double map_temperature(int v) { return 0.1 + 1.9 * v / 127.0; }
static double map_top_p(int v)       { return 0.05 + 0.95 * v / 127.0; }
static double map_length(int v)      { return 1.0 + 29.0 * v / 127.0; }
static double map_factor(int v)      { return 0.25 * pow(16.0, v / 127.0); }
static double map_register(int v)    { return (double)lround(-24.0 + 48.0 * v / 127.0); }
static double map_value(int v)       { return v; }
static double map_switch(int v)      { return v >= 64; }
static double map_unit(int v)        { return v / 127.0; }

static int feed(phrase *p, config *c, int st, int d1, int d2, int64_t t)
{
    midi_msg m = { (uint8_t)st, (uint8_t)d1, (uint8_t)d2, 3 };
    return phrase_input(p, c, &m, t, &asked);
}

/* The last message asked for exactly one setting, OPTION = VALUE. */
static void check_asked(const char *option, double value)
{
    CHECK_INT(asked.n, 1);
    CHECK(asked.n >= 1 && strcmp(asked.item[0].option, option) == 0);
    CHECK_NEAR(asked.item[0].value, value, 1e-9);
}

int main(void)
{
    phrase p;
    config c;

    config_defaults(&c);
    c.phrase_silence_ms = 500;
    phrase_init(&p);
    CHECK_INT(phrase_deadline(&p, &c), INT64_MAX);   /* nothing played yet */

    /* A key held: no phrase end; released: silence counts from the release.
     * The model hears notes and the pedal as they are (the codec folds the
     * pedal in: tests/daemon/test_live_tokens.c). */
    CHECK_INT(feed(&p, &c, 0x90, 60, 90, 0), PHRASE_NOTE_ON | PHRASE_HEAR);
    CHECK_INT(phrase_deadline(&p, &c), INT64_MAX);
    CHECK_INT(feed(&p, &c, 0x90, 60, 0, 100 * MS), PHRASE_HEAR);   /* note-on velocity 0 = off */
    CHECK_INT(phrase_deadline(&p, &c), 600 * MS);

    /* Pedal down: a released key keeps sounding and the phrase cannot end. */
    CHECK_INT(feed(&p, &c, 0xB0, 64, 127, 200 * MS), PHRASE_HEAR);
    feed(&p, &c, 0x91, 62, 80, 210 * MS);   /* any channel */
    CHECK_INT(feed(&p, &c, 0x81, 62, 0, 300 * MS), PHRASE_HEAR);
    CHECK_INT(phrase_deadline(&p, &c), INT64_MAX);
    feed(&p, &c, 0x90, 62, 70, 400 * MS);
    feed(&p, &c, 0x80, 62, 0, 450 * MS);
    CHECK_INT(phrase_deadline(&p, &c), INT64_MAX);
    /* Pedal up releases it, and the silence starts there. */
    CHECK_INT(feed(&p, &c, 0xB0, 64, 0, 1000 * MS), PHRASE_HEAR);
    CHECK_INT(phrase_deadline(&p, &c), 1500 * MS);
    /* A half-pedal's values under 64 are heard, but are no playing: the
     * silence still counts from the lift. */
    CHECK_INT(feed(&p, &c, 0xB0, 64, 20, 1100 * MS), PHRASE_HEAR);
    CHECK_INT(feed(&p, &c, 0xB0, 64, 3, 1150 * MS), PHRASE_HEAR);
    CHECK_INT(phrase_deadline(&p, &c), 1500 * MS);
    /* phrase_end = auto: a verdict on this silence ends it sooner; one on
     * a silence that is over is not taken; silence: verdicts do nothing. */
    phrase_judge(&p, 900 * MS, 1100 * MS);
    CHECK_INT(phrase_deadline(&p, &c), 1500 * MS);
    phrase_judge(&p, 1000 * MS, 1120 * MS);
    CHECK_INT(phrase_deadline(&p, &c), 1500 * MS);
    c.phrase_end = PHRASE_END_AUTO;
    CHECK_INT(phrase_deadline(&p, &c), 1120 * MS);
    c.phrase_silence_ms = 100;      /* the silence rule is the latest */
    CHECK_INT(phrase_deadline(&p, &c), 1100 * MS);
    c.phrase_silence_ms = 500;
    feed(&p, &c, 0x90, 60, 90, 1110 * MS);      /* played on: the verdict is spent */
    feed(&p, &c, 0x80, 60, 0, 1200 * MS);
    CHECK_INT(phrase_deadline(&p, &c), 1700 * MS);
    c.phrase_end = PHRASE_END_SILENCE;
    phrase_end(&p);
    CHECK_INT(phrase_deadline(&p, &c), INT64_MAX);
    CHECK_INT(p.phrases, 1);
    /* Other controllers are not for the model. */
    CHECK_INT(feed(&p, &c, 0xB0, 7, 100, 1100 * MS), 0);
    CHECK_INT(feed(&p, &c, 0xE0, 0, 64, 1100 * MS), 0);

    /* A key whose note-off was lost stops holding the phrase open after
     * held_note_timeout_ms (counted from its note-on), once. */
    uint8_t keys[128];
    c.held_note_timeout_ms = 2000;
    phrase_init(&p);
    feed(&p, &c, 0x90, 50, 90, 0);                  /* never released */
    CHECK_INT(phrase_next_lost(&p, &c), 2000 * MS);
    feed(&p, &c, 0x90, 60, 90, 300 * MS);           /* a phrase over it */
    feed(&p, &c, 0x80, 60, 0, 500 * MS);
    CHECK_INT(phrase_deadline(&p, &c), INT64_MAX);   /* held open by key 50 */
    CHECK_INT(phrase_release_lost(&p, &c, 1999 * MS, keys), 0);
    CHECK_INT(phrase_release_lost(&p, &c, 2000 * MS, keys), 1);
    CHECK_INT(keys[0], 50);                          /* the model is to hear it end */
    CHECK_INT(phrase_deadline(&p, &c), 1000 * MS);   /* silence since 0.5 s: due */
    CHECK_INT(phrase_next_lost(&p, &c), INT64_MAX);
    CHECK_INT(phrase_release_lost(&p, &c, 9000 * MS, keys), 0);   /* once */
    feed(&p, &c, 0x80, 50, 0, 9100 * MS);           /* the late note-off: nothing held */
    CHECK_INT(p.keys_held, 0);
    /* Re-struck, the clock starts again; 0 = never. */
    feed(&p, &c, 0x90, 50, 90, 10000 * MS);
    feed(&p, &c, 0x90, 50, 90, 11000 * MS);
    CHECK_INT(phrase_next_lost(&p, &c), 13000 * MS);
    c.held_note_timeout_ms = 0;
    CHECK_INT(phrase_next_lost(&p, &c), INT64_MAX);
    CHECK_INT(phrase_release_lost(&p, &c, 99000 * MS, keys), 0);
    c.held_note_timeout_ms = 30000;

    /* Mapped controls ask for their setting (the loop sets it through
     * service_set_option) and leave the config as it is. */
    config before = c;
    int a = feed(&p, &c, 0xB0, c.cc_temperature, 127, 0);
    CHECK(a & PHRASE_CONTROL);
    check_asked("temperature", 2.0);
    feed(&p, &c, 0xB0, c.cc_temperature, 0, 0);
    check_asked("temperature", 0.1);
    feed(&p, &c, 0xB0, c.cc_top_p, 127, 0);
    check_asked("top_p", 1.0);
    feed(&p, &c, 0xB0, c.cc_length, 0, 0);
    check_asked("response_seconds", 1.0);
    CHECK(memcmp(&before, &c, sizeof c) == 0);
    /* Each asked-for name is an option, and "%.17g" gives the same number back. */
    for (int v = 0; v < 128; v += 127) {
        feed(&p, &c, 0xB0, c.cc_length, v, 0);
        char text[32], why[256];
        snprintf(text, sizeof text, "%.17g", asked.item[0].value);
        CHECK_INT(config_set(&c, config_find(asked.item[0].option), text, why, sizeof why), 0);
        CHECK(c.response_seconds == 1.0 + 29.0 * v / 127.0);
    }
    /* Every knob's controller maps 0..127 as its help says, to the bit. */
    static const struct {
        const char *key, *option;
        double (*map)(int v);
    } knobs[] = {
        { "cc_temperature", "temperature", map_temperature }, { "cc_top_p", "top_p", map_top_p },
        { "cc_length", "response_seconds", map_length }, { "cc_density", "density", map_factor },
        { "cc_register", "register", map_register }, { "cc_pitch_low", "pitch_low", map_value },
        { "cc_pitch_high", "pitch_high", map_value }, { "cc_velocity", "velocity", map_value },
        { "cc_key_lock", "key_lock", map_switch }, { "cc_rhythm_temperature", "rhythm_temperature", map_factor },
        { "cc_pitch_temperature", "pitch_temperature", map_factor }, { "cc_motif", "motif", map_unit },
    };
    for (size_t k = 0; k < sizeof knobs / sizeof knobs[0]; k++) {
        config m;
        config_defaults(&m);
        m.cc_handover = m.cc_temperature = m.cc_top_p = m.cc_panic = m.cc_reroll = m.cc_length = -1;
        *(int *)((char *)&m + config_find(knobs[k].key)->offset) = 30;
        for (int v = 0; v < 128; v++) {
            CHECK_INT(feed(&p, &m, 0xB0, 30, v, 0), PHRASE_CONTROL);
            CHECK(asked.n == 1 && strcmp(asked.item[0].option, knobs[k].option) == 0);
            CHECK(asked.n == 1 && asked.item[0].value == knobs[k].map(v));
        }
    }
    /* Other messages ask for nothing. */
    feed(&p, &c, 0x90, 60, 90, 0);
    CHECK_INT(asked.n, 0);
    CHECK(feed(&p, &c, 0xB0, c.cc_handover, 127, 0) & PHRASE_HANDOVER);
    CHECK(!(feed(&p, &c, 0xB0, c.cc_handover, 0, 0) & PHRASE_HANDOVER));
    CHECK(feed(&p, &c, 0xB0, c.cc_panic, 100, 0) & PHRASE_PANIC);
    CHECK(feed(&p, &c, 0xB0, c.cc_reroll, 64, 0) & PHRASE_REROLL);
    CHECK_INT(asked.n, 0);
    /* A CC turned off (-1) maps nothing; an unmapped CC passes thru. */
    c.cc_panic = -1;
    CHECK_INT(feed(&p, &c, 0xB0, 23, 127, 0), 0);
    CHECK_INT(feed(&p, &c, 0xB0, 7, 100, 0), 0);
    return CHECK_DONE();
}

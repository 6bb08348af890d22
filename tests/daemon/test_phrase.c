/* test_phrase.c: held keys, the sustain pedal folded in, phrase ends and mapped controls. */
#include <string.h>

#include "check.h"
#include "daemon/phrase.h"

#define MS 1000000LL

static int feed(phrase *p, config *c, int st, int d1, int d2, int64_t t, gen_event *ev, int *n)
{
    midi_msg m = { (uint8_t)st, (uint8_t)d1, (uint8_t)d2, 3 };
    return phrase_input(p, c, &m, t, t / 1e9, ev, n);
}

int main(void)
{
    phrase p;
    config c;
    gen_event ev[130];
    int n;

    config_defaults(&c);
    c.phrase_silence_ms = 500;
    phrase_init(&p);
    CHECK_INT(phrase_deadline(&p, &c), INT64_MAX);   /* nothing played yet */

    /* A key held: no phrase end; released: silence counts from the release. */
    CHECK(feed(&p, &c, 0x90, 60, 90, 0, ev, &n) & PHRASE_NOTE_ON);
    CHECK_INT(n, 1);
    CHECK(ev[0].on && ev[0].pitch == 60 && ev[0].velocity == 90);
    CHECK_INT(phrase_deadline(&p, &c), INT64_MAX);
    feed(&p, &c, 0x90, 60, 0, 100 * MS, ev, &n);    /* note-on velocity 0 = off */
    CHECK_INT(n, 1);
    CHECK(!ev[0].on);
    CHECK_INT(phrase_deadline(&p, &c), 600 * MS);

    /* Pedal down: a released key keeps sounding and the phrase cannot end. */
    feed(&p, &c, 0xB0, 64, 127, 200 * MS, ev, &n);
    feed(&p, &c, 0x91, 62, 80, 210 * MS, ev, &n);   /* any channel */
    feed(&p, &c, 0x81, 62, 0, 300 * MS, ev, &n);
    CHECK_INT(n, 0);                                  /* folded: no off yet */
    CHECK_INT(phrase_deadline(&p, &c), INT64_MAX);
    /* Re-struck under the pedal: off then on. */
    feed(&p, &c, 0x90, 62, 70, 400 * MS, ev, &n);
    CHECK_INT(n, 2);
    CHECK(!ev[0].on && ev[1].on && ev[1].pitch == 62);
    feed(&p, &c, 0x80, 62, 0, 450 * MS, ev, &n);
    CHECK_INT(n, 0);
    /* Pedal up releases it, and the silence starts there. */
    feed(&p, &c, 0xB0, 64, 0, 1000 * MS, ev, &n);
    CHECK_INT(n, 1);
    CHECK(!ev[0].on && ev[0].pitch == 62);
    CHECK_INT(phrase_deadline(&p, &c), 1500 * MS);
    phrase_end(&p);
    CHECK_INT(phrase_deadline(&p, &c), INT64_MAX);
    CHECK_INT(p.phrases, 1);

    /* A key whose note-off was lost stops holding the phrase open after
     * held_note_timeout_ms (counted from its note-on), once. */
    uint8_t keys[128];
    c.held_note_timeout_ms = 2000;
    phrase_init(&p);
    feed(&p, &c, 0x90, 50, 90, 0, ev, &n);                 /* never released */
    CHECK_INT(phrase_next_lost(&p, &c), 2000 * MS);
    feed(&p, &c, 0x90, 60, 90, 300 * MS, ev, &n);          /* a phrase over it */
    feed(&p, &c, 0x80, 60, 0, 500 * MS, ev, &n);
    CHECK_INT(phrase_deadline(&p, &c), INT64_MAX);          /* held open by key 50 */
    CHECK_INT(phrase_release_lost(&p, &c, 1999 * MS, 1.999, ev, &n, keys), 0);
    CHECK_INT(phrase_release_lost(&p, &c, 2000 * MS, 2.0, ev, &n, keys), 1);
    CHECK_INT(keys[0], 50);
    CHECK_INT(n, 1);
    CHECK(!ev[0].on && ev[0].pitch == 50);                   /* the model hears it end */
    CHECK_INT(phrase_deadline(&p, &c), 1000 * MS);           /* silence since 0.5 s: due */
    CHECK_INT(phrase_next_lost(&p, &c), INT64_MAX);
    CHECK_INT(phrase_release_lost(&p, &c, 9000 * MS, 9.0, ev, &n, keys), 0);   /* once */
    feed(&p, &c, 0x80, 50, 0, 9100 * MS, ev, &n);          /* the late note-off: nothing */
    CHECK_INT(n, 0);
    CHECK_INT(p.keys_held, 0);
    /* Re-struck, the clock starts again; 0 = never. */
    feed(&p, &c, 0x90, 50, 90, 10000 * MS, ev, &n);
    feed(&p, &c, 0x90, 50, 90, 11000 * MS, ev, &n);
    CHECK_INT(phrase_next_lost(&p, &c), 13000 * MS);
    c.held_note_timeout_ms = 0;
    CHECK_INT(phrase_next_lost(&p, &c), INT64_MAX);
    CHECK_INT(phrase_release_lost(&p, &c, 99000 * MS, 99.0, ev, &n, keys), 0);
    c.held_note_timeout_ms = 30000;

    /* Mapped controls. */
    int a = feed(&p, &c, 0xB0, c.cc_temperature, 127, 0, ev, &n);
    CHECK(a & PHRASE_CONTROL);
    CHECK_NEAR(c.sampling.temperature, 2.0, 1e-9);
    feed(&p, &c, 0xB0, c.cc_temperature, 0, 0, ev, &n);
    CHECK_NEAR(c.sampling.temperature, 0.1, 1e-9);
    feed(&p, &c, 0xB0, c.cc_top_p, 127, 0, ev, &n);
    CHECK_NEAR(c.sampling.top_p, 1.0, 1e-9);
    feed(&p, &c, 0xB0, c.cc_length, 0, 0, ev, &n);
    CHECK_NEAR(c.response_seconds, 1.0, 1e-9);
    CHECK(feed(&p, &c, 0xB0, c.cc_handover, 127, 0, ev, &n) & PHRASE_HANDOVER);
    CHECK(!(feed(&p, &c, 0xB0, c.cc_handover, 0, 0, ev, &n) & PHRASE_HANDOVER));
    CHECK(feed(&p, &c, 0xB0, c.cc_panic, 100, 0, ev, &n) & PHRASE_PANIC);
    CHECK(feed(&p, &c, 0xB0, c.cc_reroll, 64, 0, ev, &n) & PHRASE_REROLL);
    /* A CC turned off (-1) maps nothing; an unmapped CC passes thru. */
    c.cc_panic = -1;
    CHECK_INT(feed(&p, &c, 0xB0, 23, 127, 0, ev, &n), 0);
    CHECK_INT(feed(&p, &c, 0xB0, 7, 100, 0, ev, &n), 0);
    return CHECK_DONE();
}

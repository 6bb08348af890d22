/* test_option_table.c: the option table, value parsing and config file errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "daemon/options.h"

static int load(config *c, const char *text)
{
    return config_load_text(c, text, strlen(text), "test.conf");
}

int main(void)
{
    config c, d;
    char buf[CONFIG_STR_MAX], why[256];

    /* Every default parses and formats back to itself. */
    config_defaults(&c);
    for (size_t i = 0; i < config_n_options; i++) {
        const option_def *o = &config_options[i];
        config_format(&c, o, buf, sizeof buf);
        if (o->type == OPT_DOUBLE)
            CHECK_NEAR(atof(buf), atof(o->default_value), 1e-12);
        else
            CHECK(strcmp(buf, o->default_value) == 0);
        const char *help = config_help(o, buf, sizeof buf);
        CHECK(help && help[0]);
        CHECK(config_find(o->name) == o);
        /* A controller key sets an option there is, or asks for an action. */
        if (o->cc.map == CC_ACTION)
            CHECK(o->cc.action != 0 && o->cc.does);
        else if (o->cc.map != CC_NONE)
            CHECK(o->cc.sets && config_find(o->cc.sets) && !config_needs_restart(config_find(o->cc.sets)));
    }
    /* A controller key's help is written from its row. */
    CHECK(strcmp(config_help(config_find("cc_length"), buf, sizeof buf),
                 "Controller number (0..127) that sets response_seconds (0..127 -> 1..30 s); -1 turns it off.") == 0);
    /* `continue`'s defaults (play_default) are serve's, each read from the
     * play table's DEFAULT: the PLAY_* values, the knobs neutral. */
    play_settings pd;
    sampling_settings sd;
    play_default(&pd);
    CHECK(memcmp(&pd, &c.play, sizeof pd) == 0);
    memset(&sd, 0, sizeof sd);
    sampling_default(&sd);
    CHECK(memcmp(&pd.sampling, &sd, sizeof sd) == 0);
    CHECK(pd.max_held == PLAY_MAX_HELD && pd.max_note_ms == PLAY_MAX_NOTE_MS && pd.release == PLAY_RELEASE);
    CHECK(pd.motif == PLAY_MOTIF && pd.candidates == PLAY_CANDIDATES && pd.candidate_score == PLAY_SCORE_MIX);
    CHECK(pd.density == 1 && pd.register_shift == 0 && pd.pitch_low == 0 && pd.pitch_high == 127);
    CHECK(pd.velocity == 0 && pd.key.kind == PLAY_KEY_AUTO && pd.key_lock == 0);
    CHECK(pd.rhythm_temperature == 1 && pd.pitch_temperature == 1);
    CHECK_NEAR(c.play.sampling.temperature, 1.0, 0);
    CHECK_INT(c.phrase_silence_ms, 800);
    CHECK_INT(c.midi_thru, 1);
    CHECK_INT(c.on_missing_soundfont, MISSING_SF_ERROR);
    CHECK(config_find("no_such_key") == NULL);

    /* A file sets values; comments, blank lines, quotes and sections are fine. */
    CHECK_INT(load(&c, "# comment\n\n[sampling]\ntemperature = 0.5\n top_k=40 \r\n"
                        "soundfont = \"/a b/#c.sf2\"\nmidi_thru = no\n"
                        "on_missing_soundfont = midi-only\naudio_driver=file\n"), 0);
    CHECK_NEAR(c.play.sampling.temperature, 0.5, 1e-12);
    CHECK_INT(c.play.sampling.top_k, 40);
    CHECK(strcmp(c.soundfont, "/a b/#c.sf2") == 0);
    CHECK_INT(c.midi_thru, 0);
    CHECK_INT(c.on_missing_soundfont, MISSING_SF_MIDI_ONLY);
    CHECK_INT(c.audio_driver, AUDIO_FILE);

    /* Unknown keys are warnings (counted), the rest still applies. */
    config_defaults(&c);
    CHECK_INT(load(&c, "tempreature = 3\ntop_p = 0.5\nfoo = bar\n"), 2);
    CHECK_NEAR(c.play.sampling.top_p, 0.5, 1e-12);

    /* Bad values and bad lines are errors. */
    static const char *const bad[] = {
        "temperature = hot\n", "temperature = 9\n", "temperature = nan\n",
        "top_k = -1\n", "top_k = 1.5\n", "top_k = \n", "midi_thru = maybe\n",
        "audio_driver = jackd\n", "gain = 11\n", "held_note_timeout_ms = -1\n", "just a line\n", "= 3\n", "soundfont = \"x\n",
        "[section\n", "seed = 99999999999999999999\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        config_defaults(&c);
        d = c;
        CHECK_INT(load(&c, bad[i]), -1);
    }
    /* A bad value leaves the field untouched. */
    config_defaults(&c);
    CHECK(config_set(&c, config_find("temperature"), "7", why, sizeof why) < 0);
    CHECK_STR_CONTAINS(why, "expected a number from 0 to 4");
    CHECK_NEAR(c.play.sampling.temperature, 1.0, 0);
    CHECK(config_set(&c, config_find("audio_driver"), "jackd", why, sizeof why) < 0);
    CHECK_STR_CONTAINS(why, "alsa|jack|pulseaudio|pipewire|sdl2|oss|portaudio|file");
    /* Every driver FluidSynth can have on Linux; the device and the gain. */
    CHECK_INT(load(&c, "audio_driver = jack\naudio_device = studio\ngain = 1.5\nheld_note_timeout_ms = 0\n"), 0);
    CHECK_INT(c.audio_driver, AUDIO_JACK);
    CHECK(strcmp(c.audio_device, "studio") == 0);
    CHECK_NEAR(c.gain, 1.5, 0);
    CHECK_INT(c.held_note_timeout_ms, 0);
    config_defaults(&c);
    CHECK_NEAR(c.gain, 0.8, 0);
    CHECK_INT(c.held_note_timeout_ms, 30000);
    CHECK(c.audio_device[0] == '\0');

    /* --set form. */
    CHECK_INT(config_set_arg(&c, "top_p=0.25"), 0);
    CHECK_NEAR(c.play.sampling.top_p, 0.25, 1e-12);
    CHECK_INT(config_set_arg(&c, "top_p"), -1);
    CHECK_INT(config_set_arg(&c, "nope=1"), -1);

    /* Two controller keys may not name one controller; off (-1) twice is fine. */
    config_defaults(&c);
    CHECK_INT(config_check(&c, why, sizeof why), 0);
    c.cc_panic = c.cc_reroll = -1;
    CHECK_INT(config_check(&c, why, sizeof why), 0);
    c.cc_top_p = 21;
    CHECK_INT(config_check(&c, why, sizeof why), -1);
    CHECK(strcmp(why, "cc_top_p = 21: controller 21 is cc_temperature's already") == 0);
    /* A change names the key that changed, earlier in the table or not. */
    config_defaults(&c);
    c.cc_handover = 25;
    CHECK_INT(config_check_change(&c, config_find("cc_handover"), why, sizeof why), -1);
    CHECK(strcmp(why, "cc_handover = 25: controller 25 is cc_length's already") == 0);
    CHECK_INT(config_check(&c, why, sizeof why), -1);
    CHECK(strcmp(why, "cc_length = 25: controller 25 is cc_handover's already") == 0);
    config_defaults(&c);

    /* A huge line is an error, not a crash. */
    size_t n = 100000;
    char *huge = malloc(n + 1);
    memset(huge, 'a', n);
    huge[n] = '\0';
    CHECK_INT(config_load_text(&c, huge, n, "huge.conf"), -1);
    free(huge);
    /* Binary junk. */
    static const char junk[] = "model = \0\xff\n";
    CHECK_INT(config_load_text(&c, junk, sizeof junk - 1, "junk.conf"), -1);
    (void)d;
    /* The knobs: velocity auto|1..127, a key by tonic and mode, read back as
     * written (a flat stays a flat); bad ones refused by what was wrong. */
    {
        static const char *const keys[][2] = {
            { "auto", "auto" }, { "off", "off" }, { "C major", "C major" }, { "a minor", "A minor" },
            { "F# dorian", "F# dorian" }, { "Bb harmonic minor", "Bb harmonic minor" },
            { "Eb aeolian", "Eb minor" }, { "G ionian", "G major" }, { "B locrian", "B locrian" },
        };
        const option_def *key = config_find("key"), *vel = config_find("velocity");
        config_defaults(&c);
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            CHECK_INT(config_set(&c, key, keys[i][0], why, sizeof why), 0);
            CHECK(strcmp(config_format(&c, key, buf, sizeof buf), keys[i][1]) == 0);
        }
        unsigned char scale[12];
        CHECK_INT(config_set(&c, key, "D dorian", why, sizeof why), 0);
        CHECK_INT(play_key_scale(&c.play.key, scale), 0);
        CHECK(scale[2] && scale[4] && scale[5] && scale[7] && scale[9] && scale[11] && scale[0] && !scale[1]
              && !scale[3] && !scale[6] && !scale[8] && !scale[10]);
        CHECK_INT(config_set(&c, key, "H major", why, sizeof why), -1);
        CHECK_STR_CONTAINS(why, "got 'H major'");
        CHECK_INT(config_set(&c, key, "C majestic", why, sizeof why), -1);
        CHECK_INT(config_set(&c, key, "Cmajor", why, sizeof why), -1);
        CHECK(strcmp(config_format(&c, key, buf, sizeof buf), "D dorian") == 0);     /* refused: unchanged */
        CHECK_INT(config_set(&c, vel, "auto", why, sizeof why), 0);
        CHECK_INT(c.play.velocity, 0);
        CHECK_INT(config_set(&c, vel, "100", why, sizeof why), 0);
        CHECK(strcmp(config_format(&c, vel, buf, sizeof buf), "100") == 0);
        CHECK_INT(config_set(&c, vel, "0", why, sizeof why), 0);
        CHECK(strcmp(config_format(&c, vel, buf, sizeof buf), "auto") == 0);
        CHECK_INT(config_set(&c, vel, "128", why, sizeof why), -1);
        CHECK_STR_CONTAINS(why, "expected auto (or 0) or a velocity from 1 to 127, got '128'");
        /* A low bound above the high one: the file is refused, naming both. */
        config_defaults(&c);
        CHECK_INT(load(&c, "pitch_low = 80\npitch_high = 60\n"), 0);
        CHECK_INT(config_check(&c, why, sizeof why), -1);
        CHECK_STR_CONTAINS(why, "pitch_low = 80 is above pitch_high = 60");
        CHECK_INT(load(&c, "key = F# lydian\n"), 0);
        CHECK(strcmp(config_format(&c, key, buf, sizeof buf), "F# lydian") == 0);
    }
    return CHECK_DONE();
}

/* phrase.c: the player's phrase: held keys, sustain pedal, silence, control changes. */
#include "daemon/phrase.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

void phrase_init(phrase *p)
{
    memset(p, 0, sizeof *p);
}

double phrase_cc_temperature(int v) { return 0.1 + 1.9 * v / 127.0; }
double phrase_cc_top_p(int v)       { return 0.05 + 0.95 * v / 127.0; }
double phrase_cc_length(int v)      { return 1.0 + 29.0 * v / 127.0; }
double phrase_cc_factor(int v)      { return 0.25 * pow(16.0, v / 127.0); }
double phrase_cc_register(int v)    { return (double)lround(-24.0 + 48.0 * v / 127.0); }
static double cc_value(int v)       { return v; }
static double cc_switch(int v)      { return v >= 64; }
static double cc_unit(int v)        { return v / 127.0; }

/* The controllers that set a value: the cc_* key (its field), the
 * setting, how 0..127 maps onto it. */
static const struct {
    size_t cc;
    const char *option;
    double (*map)(int value);
} setters[] = {
    { offsetof(config, cc_temperature), "temperature", phrase_cc_temperature },
    { offsetof(config, cc_top_p), "top_p", phrase_cc_top_p },
    { offsetof(config, cc_length), "response_seconds", phrase_cc_length },
    { offsetof(config, cc_density), "density", phrase_cc_factor },
    { offsetof(config, cc_register), "register", phrase_cc_register },
    { offsetof(config, cc_pitch_low), "pitch_low", cc_value },
    { offsetof(config, cc_pitch_high), "pitch_high", cc_value },
    { offsetof(config, cc_velocity), "velocity", cc_value },
    { offsetof(config, cc_key_lock), "key_lock", cc_switch },
    { offsetof(config, cc_rhythm_temperature), "rhythm_temperature", phrase_cc_factor },
    { offsetof(config, cc_pitch_temperature), "pitch_temperature", phrase_cc_factor },
    { offsetof(config, cc_motif), "motif", cc_unit },
};

static void ask(phrase_changes *out, const char *option, double value)
{
    if (out->n < PHRASE_MAX_CHANGES)
        out->item[out->n++] = (phrase_change){ option, value };
}

/* A control change other than the pedal: what the cc_* keys map it to. */
static int control_change(const config *cfg, int key, int val, phrase_changes *out)
{
    int act = 0;
    for (size_t i = 0; i < sizeof setters / sizeof setters[0]; i++)
        if (key == *(const int *)((const char *)cfg + setters[i].cc)) {
            ask(out, setters[i].option, setters[i].map(val));
            act |= PHRASE_CONTROL;
        }
    if (key == cfg->cc_handover)
        act |= PHRASE_CONTROL | (val >= 64 ? PHRASE_HANDOVER : 0);
    if (key == cfg->cc_panic)
        act |= PHRASE_CONTROL | (val >= 64 ? PHRASE_PANIC : 0);
    if (key == cfg->cc_reroll)
        act |= PHRASE_CONTROL | (val >= 64 ? PHRASE_REROLL : 0);
    if (key == cfg->cc_replay)
        act |= PHRASE_CONTROL | (val >= 64 ? PHRASE_REPLAY : 0);
    if (key == cfg->cc_previous_take)
        act |= PHRASE_CONTROL | (val >= 64 ? PHRASE_PREVIOUS : 0);
    return act;
}

int phrase_input(phrase *p, const config *cfg, const midi_msg *m, int64_t now, phrase_changes *out)
{
    int type = m->status & 0xF0, key = m->data1, val = m->data2;
    out->n = 0;
    if (m->status >= 0xF0)
        return 0;
    if (midi_msg_is_note_on(m)) {
        if (!p->key_down[key])
            p->keys_held++;
        p->key_down[key] = 1;
        p->key_down_at[key] = now;
        p->notes_in_phrase++;
        p->last_activity = now;
        return PHRASE_NOTE_ON | PHRASE_HEAR;
    }
    if (midi_msg_is_note_off(m)) {
        if (p->key_down[key]) {
            p->key_down[key] = 0;
            p->keys_held--;
        }
        p->last_activity = now;
        return PHRASE_HEAR;
    }
    if (type != 0xB0)
        return 0;
    if (key == 64) {
        p->pedal_down = val >= 64;
        p->last_activity = now;
        return PHRASE_HEAR;
    }
    return control_change(cfg, key, val, out);
}

int64_t phrase_next_lost(const phrase *p, const config *cfg)
{
    int64_t first = INT64_MAX;
    if (cfg->held_note_timeout_ms <= 0 || p->keys_held == 0)
        return INT64_MAX;
    for (int k = 0; k < 128; k++)
        if (p->key_down[k] && p->key_down_at[k] < first)
            first = p->key_down_at[k];
    return first == INT64_MAX ? first : first + (int64_t)cfg->held_note_timeout_ms * 1000000;
}

int phrase_release_lost(phrase *p, const config *cfg, int64_t now, uint8_t *keys)
{
    int n = 0;
    if (cfg->held_note_timeout_ms <= 0)
        return 0;
    int64_t limit = (int64_t)cfg->held_note_timeout_ms * 1000000;
    for (int k = 0; k < 128; k++) {
        if (!p->key_down[k] || now - p->key_down_at[k] < limit)
            continue;
        p->key_down[k] = 0;
        p->keys_held--;
        keys[n++] = (uint8_t)k;
    }
    return n;
}

int64_t phrase_deadline(const phrase *p, const config *cfg)
{
    if (p->notes_in_phrase == 0 || p->keys_held > 0 || p->pedal_down)
        return INT64_MAX;
    return p->last_activity + (int64_t)cfg->phrase_silence_ms * 1000000;
}

void phrase_end(phrase *p)
{
    p->notes_in_phrase = 0;
    p->phrases++;
}

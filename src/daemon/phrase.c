/* phrase.c: the player's phrase: held keys, sustain pedal, silence, control changes. */
#include "daemon/phrase.h"

#include <stddef.h>
#include <string.h>

void phrase_init(phrase *p)
{
    memset(p, 0, sizeof *p);
}

static void ask(phrase_changes *out, const char *option, double value)
{
    if (out->n < PHRASE_MAX_CHANGES)
        out->item[out->n++] = (phrase_change){ option, value };
}

/* A control change other than the pedal: what the controller keys (cc_*,
 * options.c's rows with a controller) map it to. */
static int control_change(const config *cfg, int key, int val, phrase_changes *out)
{
    int act = 0;
    for (size_t i = 0; i < config_n_options; i++) {
        const option_def *o = &config_options[i];
        if (o->cc.map == CC_NONE || key != *(const int *)((const char *)cfg + o->offset))
            continue;
        act |= PHRASE_CONTROL;
        if (o->cc.map == CC_ACTION)
            act |= val >= CC_ON ? o->cc.action : 0;
        else
            ask(out, o->cc.sets, config_cc_value(o, val));
    }
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
        /* only a press or a lift: a half-pedal's values on either side of
         * 64 are no playing, and would hold the phrase end back */
        if ((val >= 64) != p->pedal_down) {
            p->pedal_down = val >= 64;
            p->last_activity = now;
        }
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
    int64_t at = p->last_activity + (int64_t)cfg->phrase_silence_ms * 1000000;
    if (cfg->phrase_end == PHRASE_END_AUTO && p->judged_for == p->last_activity && p->judged_end < at)
        return p->judged_end;
    return at;
}

void phrase_judge(phrase *p, int64_t silence_from, int64_t end)
{
    if (silence_from != p->last_activity)
        return;             /* the player played on: a verdict on a silence that is over */
    p->judged_for = silence_from;
    p->judged_end = end;
}

void phrase_end(phrase *p)
{
    p->notes_in_phrase = 0;
    p->phrases++;
}

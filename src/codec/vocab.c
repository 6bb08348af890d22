/* vocab.c: the vocabulary layouts (a const table) and id <-> event mapping. */
#include "codec/vocab.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Each row is one layout; the bases follow from the ranges (tests check it). */
static const vocab layouts[] = {
    {
        .name = "mt310",
        .description = "Music Transformer: PAD, EOS, 88 NOTE_ON, 88 NOTE_OFF (21..108), "
                       "100 TIME_SHIFT of 10 ms, 32 VELOCITY",
        .size = 310, .has_pad_eos = 1, .min_pitch = 21, .max_pitch = 108,
        .n_time_shifts = 100, .step_ms = 10, .n_velocity_bins = 32,
        .note_on_base = 2, .note_off_base = 90, .time_shift_base = 178, .velocity_base = 278,
    },
    {
        .name = "prnn388",
        .description = "Performance RNN: 128 NOTE_ON, 128 NOTE_OFF (0..127), "
                       "100 TIME_SHIFT of 10 ms, 32 VELOCITY",
        .size = 388, .has_pad_eos = 0, .min_pitch = 0, .max_pitch = 127,
        .n_time_shifts = 100, .step_ms = 10, .n_velocity_bins = 32,
        .note_on_base = 0, .note_off_base = 128, .time_shift_base = 256, .velocity_base = 356,
    },
};

enum { N_LAYOUTS = sizeof layouts / sizeof layouts[0] };

static const char *const type_names[] = {
    [EVENT_PAD] = "PAD", [EVENT_EOS] = "EOS", [EVENT_NOTE_ON] = "NOTE_ON",
    [EVENT_NOTE_OFF] = "NOTE_OFF", [EVENT_TIME_SHIFT] = "TIME_SHIFT",
    [EVENT_VELOCITY] = "VELOCITY", [EVENT_INVALID] = "INVALID",
};

const vocab *vocab_default(void) { return &layouts[0]; }

const vocab *vocab_at(int index)
{
    return index >= 0 && index < N_LAYOUTS ? &layouts[index] : NULL;
}

const vocab *vocab_find(const char *name)
{
    for (int i = 0; i < N_LAYOUTS; i++)
        if (name && strcmp(layouts[i].name, name) == 0)
            return &layouts[i];
    return NULL;
}

const vocab *vocab_by_size(int size)
{
    for (int i = 0; i < N_LAYOUTS; i++)
        if (layouts[i].size == size)
            return &layouts[i];
    return NULL;
}

int vocab_id(const vocab *v, event_type type, int value)
{
    switch (type) {
    case EVENT_PAD:
        return v->has_pad_eos ? 0 : -1;
    case EVENT_EOS:
        return v->has_pad_eos ? 1 : -1;
    case EVENT_NOTE_ON:
    case EVENT_NOTE_OFF:
        if (value < v->min_pitch || value > v->max_pitch)
            return -1;
        return (type == EVENT_NOTE_ON ? v->note_on_base : v->note_off_base)
               + (value - v->min_pitch);
    case EVENT_TIME_SHIFT:
        if (value < 1 || value > v->n_time_shifts)
            return -1;
        return v->time_shift_base + value - 1;
    case EVENT_VELOCITY:
        if (value < 0 || value >= v->n_velocity_bins)
            return -1;
        return v->velocity_base + value;
    case EVENT_INVALID:
        break;
    }
    return -1;
}

event_type vocab_decode(const vocab *v, int id, int *value)
{
    int n_pitch = v->max_pitch - v->min_pitch + 1;
    int dummy;

    if (!value)
        value = &dummy;
    *value = 0;
    if (id < 0 || id >= v->size)
        return EVENT_INVALID;
    if (v->has_pad_eos && id < 2)
        return id == 0 ? EVENT_PAD : EVENT_EOS;
    if (id >= v->note_on_base && id < v->note_on_base + n_pitch) {
        *value = v->min_pitch + id - v->note_on_base;
        return EVENT_NOTE_ON;
    }
    if (id >= v->note_off_base && id < v->note_off_base + n_pitch) {
        *value = v->min_pitch + id - v->note_off_base;
        return EVENT_NOTE_OFF;
    }
    if (id >= v->time_shift_base && id < v->time_shift_base + v->n_time_shifts) {
        *value = id - v->time_shift_base + 1;
        return EVENT_TIME_SHIFT;
    }
    if (id >= v->velocity_base && id < v->velocity_base + v->n_velocity_bins) {
        *value = id - v->velocity_base;
        return EVENT_VELOCITY;
    }
    return EVENT_INVALID;
}

const char *vocab_id_name(const vocab *v, int id, char *buf, int bufsize)
{
    int value;
    event_type t = vocab_decode(v, id, &value);

    if (bufsize <= 0)
        return buf;
    if (t == EVENT_PAD || t == EVENT_EOS)
        snprintf(buf, (size_t)bufsize, "%s", type_names[t]);
    else if (t == EVENT_INVALID)
        snprintf(buf, (size_t)bufsize, "INVALID(%d)", id);
    else
        snprintf(buf, (size_t)bufsize, "%s(%d)", type_names[t], value);
    return buf;
}

int vocab_parse(const vocab *v, const char *text)
{
    const char *s = text;
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    if (isdigit((unsigned char)*s)) {
        long id = strtol(s, &end, 10);
        while (isspace((unsigned char)*end))
            end++;
        return *end == '\0' && id < v->size ? (int)id : -1;
    }
    for (int t = EVENT_PAD; t < EVENT_INVALID; t++) {
        size_t n = strlen(type_names[t]);
        if (strncasecmp(s, type_names[t], n) != 0)
            continue;
        const char *p = s + n;
        if (t == EVENT_PAD || t == EVENT_EOS) {
            while (isspace((unsigned char)*p))
                p++;
            if (*p != '\0')
                continue;               /* e.g. "NOTE_ON" is not "NOTE_OFF" */
            return vocab_id(v, (event_type)t, 0);
        }
        while (isspace((unsigned char)*p))
            p++;
        if (*p++ != '(')
            continue;
        long value = strtol(p, &end, 10);
        if (end == p)
            return -1;
        while (isspace((unsigned char)*end))
            end++;
        if (*end++ != ')')
            return -1;
        while (isspace((unsigned char)*end))
            end++;
        if (*end != '\0' || value < -1000 || value > 1000)
            return -1;
        return vocab_id(v, (event_type)t, (int)value);
    }
    return -1;
}

int velocity_to_bin(const vocab *v, int velocity)
{
    if (velocity < 1)
        velocity = 1;
    if (velocity > 127)
        velocity = 127;
    return (velocity - 1) * v->n_velocity_bins / 128;
}

int bin_to_velocity(const vocab *v, int bin)
{
    if (bin < 0)
        bin = 0;
    if (bin >= v->n_velocity_bins)
        bin = v->n_velocity_bins - 1;
    int vel = bin * 128 / v->n_velocity_bins + 1;
    return vel > 127 ? 127 : vel;
}

/* play_options.c: the defaults of how a continuation is played, the rules across its settings, and its value types (velocity, key, candidate score). */
#include "play/play_options.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/log.h"

/* A row's DEFAULT read into its field as the config file reads its value
 * (util/value.h, the value types): the table is the one place a default is
 * written.  The compiler checks each field's type against its kind. */
static int parse_int(const char *text, int *out)
{
    long v;
    if (value_parse_long(text, &v) < 0 || v < INT_MIN || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}
#define PARSE_DOUBLE(text, dst)   value_parse_double(text, dst)
#define PARSE_INT(text, dst)      parse_int(text, dst)
#define PARSE_BOOL(text, dst)     value_parse_bool(text, dst)
#define PARSE_VELOCITY(text, dst) play_type_velocity.parse(text, dst, why, sizeof why)
#define PARSE_KEY(text, dst)      play_type_key.parse(text, dst, why, sizeof why)
#define PARSE_SCORE(text, dst)    play_type_score.parse(text, dst, why, sizeof why)
#define DEFAULT_ROW(KEY, CLI, KIND, FIELD, DEF, LO, HI, ARG, APPLY, HELP)                              \
    if (PARSE_##KIND(DEF, &p->FIELD) < 0)                                                            \
        log_error("internal error: the default of %s, '%s', does not parse", KEY, DEF);

void play_default(play_settings *p)
{
    char why[256];
    memset(p, 0, sizeof *p);
    PLAY_OPTIONS(DEFAULT_ROW)
}

int play_check(const play_settings *p, char *why, size_t len)
{
    if (p->pitch_low > p->pitch_high) {
        snprintf(why, len, "pitch_low = %d is above pitch_high = %d", p->pitch_low, p->pitch_high);
        return -1;
    }
    return 0;
}

/* ---- velocity: auto, or 1..127 ---- */

static int parse_velocity(const char *text, void *dst, char *why, size_t len)
{
    char *end;
    if (strcasecmp(text, "auto") == 0 || strcmp(text, "0") == 0) {     /* 0: a controller's auto */
        *(int *)dst = 0;
        return 0;
    }
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < 1 || v > 127) {
        snprintf(why, len, "expected auto (or 0) or a velocity from 1 to 127, got '%s'", text);
        return -1;
    }
    *(int *)dst = (int)v;
    return 0;
}

static const char *format_velocity(const void *src, char *buf, size_t len)
{
    int v = *(const int *)src;
    if (v <= 0)
        snprintf(buf, len, "auto");
    else
        snprintf(buf, len, "%d", v);
    return buf;
}

const value_type play_type_velocity = {
    .what = "auto or 1..127",
    .size = sizeof(int),
    .parse = parse_velocity,
    .format = format_velocity,
};

/* ---- key: auto, off, or a tonic and a mode ---- */

/* The modes by name (two names for two of them), and their steps from the
 * tonic: the church modes are rotations of the major scale. */
static const struct {
    const char *name;
    int kind;
} mode_names[] = {
    { "major", PLAY_MODE_IONIAN }, { "minor", PLAY_MODE_AEOLIAN }, { "ionian", PLAY_MODE_IONIAN },
    { "dorian", PLAY_MODE_DORIAN }, { "phrygian", PLAY_MODE_PHRYGIAN }, { "lydian", PLAY_MODE_LYDIAN },
    { "mixolydian", PLAY_MODE_MIXOLYDIAN }, { "aeolian", PLAY_MODE_AEOLIAN }, { "locrian", PLAY_MODE_LOCRIAN },
    { "harmonic minor", PLAY_MODE_HARMONIC_MINOR },
};
static const unsigned char mode_steps[][7] = {
    [PLAY_MODE_IONIAN] = { 0, 2, 4, 5, 7, 9, 11 },     [PLAY_MODE_DORIAN] = { 0, 2, 3, 5, 7, 9, 10 },
    [PLAY_MODE_PHRYGIAN] = { 0, 1, 3, 5, 7, 8, 10 },   [PLAY_MODE_LYDIAN] = { 0, 2, 4, 6, 7, 9, 11 },
    [PLAY_MODE_MIXOLYDIAN] = { 0, 2, 4, 5, 7, 9, 10 }, [PLAY_MODE_AEOLIAN] = { 0, 2, 3, 5, 7, 8, 10 },
    [PLAY_MODE_LOCRIAN] = { 0, 1, 3, 5, 6, 8, 10 },    [PLAY_MODE_HARMONIC_MINOR] = { 0, 2, 3, 5, 7, 8, 11 },
};
static const char *const sharp_names[12] = { "C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B" };
static const char *const flat_names[12] = { "C", "Db", "D", "Eb", "E", "F", "Gb", "G", "Ab", "A", "Bb", "B" };

int play_key_scale(const play_key *k, unsigned char mask[12])
{
    if (k->kind < PLAY_MODE_IONIAN || k->kind > PLAY_MODE_HARMONIC_MINOR)
        return -1;
    memset(mask, 0, 12);
    for (int i = 0; i < 7; i++)
        mask[(k->tonic + mode_steps[k->kind][i]) % 12] = 1;
    return 0;
}

/* "C", "c#", "Db": the tonic's pitch class and whether it was a flat; the
 * letters read in *N.  -1 if TEXT does not start with one. */
static int parse_tonic(const char *text, int *flat, size_t *n)
{
    static const int letter_pc[7] = { 9, 11, 0, 2, 4, 5, 7 };     /* A..G */
    int c = toupper((unsigned char)text[0]);
    if (c < 'A' || c > 'G')
        return -1;
    int pc = letter_pc[c - 'A'];
    *flat = 0;
    *n = 1;
    if (text[1] == '#') {
        pc++;
        *n = 2;
    } else if (text[1] == 'b') {
        pc += 11;
        *flat = 1;
        *n = 2;
    }
    return pc % 12;
}

static int parse_key(const char *text, void *dst, char *why, size_t len)
{
    play_key k = { PLAY_KEY_AUTO, 0, 0 };
    int flat = 0;
    size_t n = 0;
    int pc = parse_tonic(text, &flat, &n);
    if (strcasecmp(text, "auto") == 0 || strcasecmp(text, "off") == 0) {
        k.kind = strcasecmp(text, "off") == 0 ? PLAY_KEY_OFF : PLAY_KEY_AUTO;
        *(play_key *)dst = k;
        return 0;
    }
    const char *mode = text + n;
    while (pc >= 0 && *mode == ' ')
        mode++;
    for (size_t i = 0; pc >= 0 && mode != text + n && i < sizeof mode_names / sizeof mode_names[0]; i++)
        if (strcasecmp(mode, mode_names[i].name) == 0) {
            k = (play_key){ (unsigned char)mode_names[i].kind, (unsigned char)pc, (unsigned char)flat };
            *(play_key *)dst = k;
            return 0;
        }
    snprintf(why, len, "expected auto, off, or a tonic (C, C#, Db, ... B) and a mode (major, minor, "
             "dorian, phrygian, lydian, mixolydian, locrian, ionian, aeolian, harmonic minor), got '%s'", text);
    return -1;
}

static const char *format_key(const void *src, char *buf, size_t len)
{
    const play_key *k = src;
    if (k->kind == PLAY_KEY_AUTO || k->kind == PLAY_KEY_OFF) {
        snprintf(buf, len, "%s", k->kind == PLAY_KEY_OFF ? "off" : "auto");
        return buf;
    }
    const char *mode = "major";
    for (size_t i = 0; i < sizeof mode_names / sizeof mode_names[0]; i++)
        if (mode_names[i].kind == k->kind) {
            mode = mode_names[i].name;
            break;
        }
    snprintf(buf, len, "%s %s", (k->flat ? flat_names : sharp_names)[k->tonic % 12], mode);
    return buf;
}

const value_type play_type_key = {
    .what = "auto, off, or a key: C major, A minor, D dorian, ...",
    .size = sizeof(play_key),
    .parse = parse_key,
    .format = format_key,
    .spaced = 1,
};

/* ---- candidate_score: likelihood, nudged, motif, pace, texture, mix ---- */

static const char *const score_names[PLAY_SCORE_COUNT] = { "likelihood", "nudged", "motif", "pace", "texture", "mix" };

const char *play_score_name(int score)
{
    return score >= 0 && score < PLAY_SCORE_COUNT ? score_names[score] : "likelihood";
}

static int parse_score(const char *text, void *dst, char *why, size_t len)
{
    for (int i = 0; i < PLAY_SCORE_COUNT; i++)
        if (strcasecmp(text, score_names[i]) == 0) {
            *(int *)dst = i;
            return 0;
        }
    snprintf(why, len, "expected likelihood, nudged, motif, pace, texture or mix, got '%s'", text);
    return -1;
}

static const char *format_score(const void *src, char *buf, size_t len)
{
    snprintf(buf, len, "%s", play_score_name(*(const int *)src));
    return buf;
}

const value_type play_type_score = {
    .what = "likelihood, nudged, motif, pace, texture or mix",
    .size = sizeof(int),
    .parse = parse_score,
    .format = format_score,
};

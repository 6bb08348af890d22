/* play_options.h: how a continuation is played, in one table that `continue` and `serve` both read. */
#ifndef CONTINUO_PLAY_OPTIONS_H
#define CONTINUO_PLAY_OPTIONS_H

#include <stddef.h>

#include "model/sampler.h"

/* A key: auto (the key of what was heard, its pitch classes), off, or a
 * tonic and a mode. */
enum {
    PLAY_KEY_AUTO, PLAY_KEY_OFF,
    PLAY_MODE_IONIAN, PLAY_MODE_DORIAN, PLAY_MODE_PHRYGIAN, PLAY_MODE_LYDIAN, PLAY_MODE_MIXOLYDIAN,
    PLAY_MODE_AEOLIAN, PLAY_MODE_LOCRIAN, PLAY_MODE_HARMONIC_MINOR,
};
typedef struct play_key {
    unsigned char kind;         /* PLAY_KEY_* or PLAY_MODE_* */
    unsigned char tonic;        /* pitch class, 0 = C */
    unsigned char flat;         /* spelled with a flat (Bb), for printing it back */
} play_key;

/* How a continuation is played: the sampler's settings, the nudges, the
 * caps on the model's notes, the candidates, and the knobs a player turns
 * (each neutral at its default but motif and release, whose defaults were
 * measured to bring the music nearer a pianist's, docs/REALISM.md; with
 * both at 0 and candidates 1 the music is what the model's odds, the pace
 * and the key heard make it).  `serve` keeps one in its config (live: each
 * continuation takes the values in force when it starts); `continue`
 * fills one from its options. */
typedef struct play_settings {
    sampling_settings sampling;     /* temperature, top_k, top_p, min_p, filter_time, pace, key_pull */
    int    max_held;                /* the continuation's notes sounding at once, 1..128 */
    int    max_note_ms;             /* a note of the continuation held longer is ended */
    double release;                 /* how firmly a note nearing max_note_ms is let go */
    double density;                 /* the pace kept, times the one heard */
    int    register_shift;          /* semitones its notes are drawn up (down) */
    int    pitch_low, pitch_high;   /* no note of it outside */
    int    velocity;                /* the dynamic it moves around, 1..127; 0: auto (its own) */
    play_key key;                   /* the key key_pull draws toward */
    int    key_lock;                /* every note in the key's scale */
    double rhythm_temperature;      /* the time shifts' own temperature */
    double pitch_temperature;       /* the pitches' own temperature */
    double motif;                   /* 0..1: how much it comes back to the motifs heard */
    int    candidates;              /* continuations sampled side by side, the best played */
    int    candidate_score;         /* PLAY_SCORE_*: what "best" is */
} play_settings;

/* What picks the candidate that is played (play/candidates.c measures it). */
enum {
    PLAY_SCORE_LIKELIHOOD,  /* mean ln p per event under the model's own odds */
    PLAY_SCORE_NUDGED,      /* ... under the odds the pace, key and knobs made */
    PLAY_SCORE_MOTIF,       /* the share of its 4-note interval patterns heard before */
    PLAY_SCORE_PACE,        /* how near its notes per second keep to the aim */
    PLAY_SCORE_TEXTURE,     /* how near its notes sounding at once keep to the aim */
    PLAY_SCORE_MIX,         /* likelihood, motif, pace, texture, repeats and capped, weighed by MIX_* */
    PLAY_SCORE_COUNT
};

/* PLAY_SCORE_MIX: likelihood + MIX_MOTIF x motif + pace + MIX_TEXTURE x
 * texture - MIX_REPEATS x repeats - MIX_CAPPED x capped (the option
 * table's help spells them from here).  Chosen on ASAP's valid split (docs/REALISM.md, "The
 * candidates"): a candidate's likelihood per event spans about 0.1-0.3
 * between candidates, its motif share 0-0.3, its pace 0-1; the repeats
 * and the notes held to the cap weigh most, as the model's own choice
 * errs toward both (its likeliest candidate repeats a pitch 1.6 times as
 * often as the pianist). */
#define MIX_MOTIF   2
#define MIX_TEXTURE 4
#define MIX_REPEATS 12
#define MIX_CAPPED  20

/* Every setting's DEFAULT in the table below (there the PLAY_* values of
 * model/sampler.h: the knobs neutral, motif and release as measured, 8
 * candidates by the mix), read as the config file reads it. */
void play_default(play_settings *p);
/* The rules across settings: pitch_low above pitch_high is refused.
 * Returns 0, or -1 with "pitch_low = 80 is above pitch_high = 60" in WHY. */
int  play_check(const play_settings *p, char *why, size_t len);

/* The key's scale: MASK[c] = 1 for the pitch classes in it.  Returns 0,
 * or -1 for auto and off (no scale of their own). */
int  play_key_scale(const play_key *k, unsigned char mask[12]);

#include "util/value.h"
/* The settings that are not plain numbers: velocity (auto or 1..127),
 * key ("auto", "off", "C major", "F# dorian", "Bb harmonic minor") and
 * candidate_score ("likelihood", ...: play_score_name). */
extern const value_type play_type_velocity, play_type_key, play_type_score;
const char *play_score_name(int score);

/* The table: X(KEY, CLI, KIND, FIELD, DEFAULT, MIN, MAX, ARG, APPLY, HELP)
 *   KEY      `serve`'s config key          CLI      `continue`'s --option
 *   KIND     DOUBLE, INT, BOOL, VELOCITY,    FIELD    in play_settings
 *            KEY or SCORE (play_type_*)
 *   DEFAULT  as written in a file          MIN, MAX inclusive (not for BOOL)
 *   ARG      the value's name in --help    APPLY    what a live change in `serve` runs:
 *            value (read at the next continuation) or scheduler (the output's caps too)
 *   HELP     one text for both: `--help` adds "(default ...)", the config file its line.
 * Add a row here and both commands have it, with the same name, range,
 * default and help; tests/model/test_same_ids.py plays both.  It is two
 * parts: how it samples and its caps, then the knobs a player turns and
 * the candidates, whose values `ctl status` shows. */
#define PLAY_OPTIONS(X) PLAY_SAMPLING_OPTIONS(X) PLAY_KNOB_OPTIONS(X)
#define PLAY_SAMPLING_OPTIONS(X)                                                                             \
    X("temperature", "temperature", DOUBLE, sampling.temperature, PLAY_STR(PLAY_TEMPERATURE),               \
      SAMPLING_TEMPERATURE_MIN, SAMPLING_TEMPERATURE_MAX, "T", value,                                       \
      "Sampling temperature; 0 always takes the most likely event.")                                         \
    X("top_p", "top-p", DOUBLE, sampling.top_p, PLAY_STR(PLAY_TOP_P), SAMPLING_TOP_P_MIN,                    \
      SAMPLING_TOP_P_MAX, "P", value,                                                                        \
      "Nucleus sampling: keep the most likely events up to this probability;\n"                             \
      "1 turns it off.")              \
    X("top_k", "top-k", INT, sampling.top_k, PLAY_STR(PLAY_TOP_K), SAMPLING_TOP_K_MIN, SAMPLING_TOP_K_MAX,   \
      "K", value, "Keep only the k most likely events; 0 turns it off.")                                     \
    X("min_p", "min-p", DOUBLE, sampling.min_p, PLAY_STR(PLAY_MIN_P), SAMPLING_MIN_P_MIN,                    \
      SAMPLING_MIN_P_MAX, "P", value,                                                                        \
      "Drop events less likely than min_p times the most likely; 0 turns it\n"                              \
      "off.")                          \
    X("filter_time_shifts", "filter-time-shifts", BOOL, sampling.filter_time, "no", 0, 1, NULL, value,       \
      "Let top_k, top_p and min_p cut time shifts too (off: they choose among\n"                            \
      "notes and velocities only, and how long to wait keeps the model's own\n"                             \
      "odds).")                                                                                              \
    X("pace", "pace", DOUBLE, sampling.pace, PLAY_STR(PLAY_PACE), SAMPLING_PACE_MIN, SAMPLING_PACE_MAX,      \
      "S", value,                                                                                            \
      "Keep the pace (notes per second) of the last 10 s of what is continued:\n"                           \
      "the continuation's waits grow longer while it runs faster, shorter while\n"                          \
      "it runs slower, by this strength; 0 turns it off (and so does a duet,\n"                             \
      "where duet_density thins the model's part instead).")                                                \
    X("key_pull", "key-pull", DOUBLE, sampling.key_pull, PLAY_STR(PLAY_KEY_PULL), SAMPLING_KEY_PULL_MIN,     \
      SAMPLING_KEY_PULL_MAX, "K", value,                                                                     \
      "Draw the continuation's notes toward the pitch classes of the last 10 s\n"                           \
      "of what is continued (its key), by this strength; 0 turns it off (and so\n"                          \
      "does a duet).")                                                                                       \
    X("max_held_notes", "max-held", INT, max_held, PLAY_STR(PLAY_MAX_HELD), 1, 128, "N", scheduler,          \
      "Most notes of the continuation sounding at once: the model may not start\n"                          \
      "another (and an output drops a note-on past it).")                                                   \
    X("max_note_ms", "max-note-ms", INT, max_note_ms, PLAY_STR(PLAY_MAX_NOTE_MS), 100, 60000, "MS",          \
      scheduler, "Longest note of the continuation, in ms: one held longer is ended\n"                        \
      "there.")                                                                                             \
    X("release", "release", DOUBLE, release, PLAY_STR(PLAY_RELEASE), 0, 4, "R", value,                                       \
      "How firmly a note of the continuation held past 40% of max_note_ms is\n"                           \
      "let go: its note-off drawn nearer the longer it is held, so that it\n"                              \
      "ends as a pianist lets go rather than at the cap; 0: the model's odds.")
#define PLAY_KNOB_OPTIONS(X)                                                                                 \
    X("density", "density", DOUBLE, density, "1", 0.25, 4, "X", value,                                     \
      "How busy the continuation is: the pace it keeps (notes per second) as\n"                             \
      "a multiple of the one it heard (0.5: half as many notes, 2: twice as\n"                              \
      "many); it works through the pace rule, so pace 0 turns it off too.")                                \
    X("register", "register", INT, register_shift, "0", -24, 24, "S", value,                               \
      "Where the continuation's notes sit, in semitones from where the ones it\n"                           \
      "heard sat (+12: an octave higher): a pull on the model's odds, not a\n"                              \
      "transposition.")                                                                                      \
    X("pitch_low", "pitch-low", INT, pitch_low, "0", 0, 127, "N", value,                                   \
      "Lowest note the continuation may play (a MIDI number: 21 is A0, 60 C4).")                             \
    X("pitch_high", "pitch-high", INT, pitch_high, "127", 0, 127, "N", value,                              \
      "Highest note the continuation may play (a MIDI number: 108 is C8).")                                 \
    X("velocity", "velocity", VELOCITY, velocity, "auto", 0, 127, "auto|V", value,                         \
      "How loud the continuation plays: a velocity (1..127) its dynamics move\n"                            \
      "around; auto: its own.")                                                                              \
    X("key", "key", KEY, key, "auto", 0, 0, "KEY", value,                                                  \
      "The key key_pull draws the continuation's notes toward: auto (the pitch\n"                           \
      "classes of the last 10 s heard), off, or a tonic and a mode: C major,\n"                             \
      "A minor, D dorian, E phrygian, F lydian, G mixolydian, B locrian,\n"                                 \
      "A harmonic minor (ionian and aeolian too; sharps and flats: F#, Bb).")                               \
    X("key_lock", "key-lock", BOOL, key_lock, "no", 0, 1, NULL, value,                                     \
      "Keep every note of the continuation in the key's scale (with key auto:\n"                            \
      "the major or minor scale nearest what was heard).")                                                   \
    X("rhythm_temperature", "rhythm-temperature", DOUBLE, rhythm_temperature, "1", 0.1, 4, "T", value,      \
      "The temperature of how long it waits (the time shifts), apart from the\n"                            \
      "overall one: below 1 it keeps to its likeliest rhythms, above 1 it\n"                                \
      "varies them; how often it waits stays the model's.")                                                  \
    X("pitch_temperature", "pitch-temperature", DOUBLE, pitch_temperature, "1", 0.1, 4, "T", value,         \
      "The temperature of which notes it plays, apart from the overall one:\n"                              \
      "below 1 it keeps to its likeliest pitches, above 1 it varies them.")                                 \
    X("motif", "motif", DOUBLE, motif, PLAY_STR(PLAY_MOTIF), 0, 1, "M", value,                                              \
      "How much the continuation comes back to the motifs of what it heard:\n"                              \
      "0 lets it wander off, 1 keeps it close (a note that goes on a run of\n"                              \
      "intervals heard is drawn toward the interval that came next there).")     \
    X("candidates", "candidates", INT, candidates, PLAY_STR(PLAY_CANDIDATES), 1, 8, "B", value,                                  \
      "Continuations sampled side by side (one batched decode for all, seeds\n"                            \
      "seed, seed+1000000, seed+2000000, ...), of which the best by\n"                                     \
      "candidate_score is played; 1 plays the first as it comes.")                                                                        \
    X("candidate_score", "candidate-score", SCORE, candidate_score, "mix", 0, 0, "S", value,       \
      "What the best candidate is: likelihood (its mean log-likelihood per\n"                              \
      "event under the model's own odds), nudged (under the odds the pace,\n"                              \
      "key and knobs made), motif (the share of its 4-note interval patterns\n"                            \
      "that were heard before), pace (its notes per second nearest the aim),\n"                            \
      "texture (its notes sounding at once nearest those heard), or mix\n"                                  \
      "(likelihood + " PLAY_STR(MIX_MOTIF) " motif + pace + " PLAY_STR(MIX_TEXTURE) " texture, less " PLAY_STR(MIX_REPEATS) \
      " times how much more its\n"                                                                          \
      "most repeated pitch's share is than in what was heard and " PLAY_STR(MIX_CAPPED) " times the\n"     \
      "share of its notes held to the length cap).")

#endif

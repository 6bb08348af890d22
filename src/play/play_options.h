/* play_options.h: how a continuation is played, in one table that `continue` and `serve` both read. */
#ifndef CONTINUO_PLAY_OPTIONS_H
#define CONTINUO_PLAY_OPTIONS_H

#include "model/sampler.h"

/* How a continuation is played: the sampler's settings, the nudges, and
 * the caps on the model's notes.  `serve` keeps one in its config (live:
 * each continuation takes the values in force when it starts); `continue`
 * fills one from its options. */
typedef struct play_settings {
    sampling_settings sampling;     /* temperature, top_k, top_p, min_p, filter_time, pace, key_pull */
    int max_held;                   /* the continuation's notes sounding at once, 1..128 */
    int max_note_ms;                /* a note of the continuation held longer is ended */
} play_settings;

/* The PLAY_* values (model/sampler.h). */
void play_default(play_settings *p);

/* The table: X(KEY, CLI, KIND, FIELD, DEFAULT, MIN, MAX, ARG, APPLY, HELP)
 *   KEY      `serve`'s config key          CLI      `continue`'s --option
 *   KIND     DOUBLE, INT or BOOL           FIELD    in play_settings
 *   DEFAULT  as written in a file          MIN, MAX inclusive (not for BOOL)
 *   ARG      the value's name in --help    APPLY    what a live change in `serve` runs:
 *            value (read at the next continuation) or scheduler (the output's caps too)
 *   HELP     one text for both: `--help` adds "(default ...)", the config file its line.
 * Add a row here and both commands have it, with the same name, range,
 * default and help; tests/model/test_same_ids.py plays both. */
#define PLAY_OPTIONS(X)                                                                                      \
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
      "there.")

#endif

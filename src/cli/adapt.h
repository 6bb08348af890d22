/* adapt.h: the player's playing as `continuo adapt` learns from it (adapt_data.c), shared with adapt.c. */
#ifndef CONTINUO_CLI_ADAPT_H
#define CONTINUO_CLI_ADAPT_H

#include <stddef.h>

#include "codec/vocab.h"

/* Less playing than this and adapt changes nothing. */
#define ADAPT_MIN_SECONDS 60.0
/* The newest share of the playing held back to judge with. */
#define ADAPT_HELD_SHARE 0.1
/* A silence counts as playing up to this long (a break is not playing). */
#define ADAPT_GAP_CAP_S 5.0

/* The sessions to learn from: MIDI files, oldest first; owned. */
typedef struct adapt_inputs {
    char **path;
    int    n;
    int    from_journal;   /* read from the journal: a file that cannot be read is skipped */
} adapt_inputs;

/* What was read: the player's playing, and how it was split. */
typedef struct adapt_data {
    double seconds;        /* the player's playing in all sessions (silences capped) */
    double held_seconds;   /* of it held back: the newest tenth */
    int    sessions;       /* files with some of the player's playing */
    int    held_from;      /* the oldest session (index in the inputs) with held-back playing */
    size_t train_events, held_events;
} adapt_data;

/* Adds the MIDI files of PATH: a file as it is, a folder's .mid/.midi
 * files by name.  0, or -1 (logged, naming PATH) when it cannot be read. */
int  adapt_inputs_add(adapt_inputs *in, const char *path);
/* The session files of the journal folder DIR, oldest first.  0, or -1 (logged). */
int  adapt_inputs_journal(adapt_inputs *in, const char *dir);
void adapt_inputs_free(adapt_inputs *in);

/* Reads IN's sessions, takes the player's notes of each (tracks named
 * "player" when there are any, never those named "continuo"), holds back
 * the newest ADAPT_HELD_SHARE of the playing and writes the rest to
 * TRAIN_TOK, that to HELD_TOK, in layout V.  0 with OUT filled; 1 when
 * there is less than ADAPT_MIN_SECONDS of playing (OUT says how much,
 * nothing written); -1 (logged, naming the file) on a bad input. */
int  adapt_data_build(const adapt_inputs *in, const vocab *v, const char *train_tok, const char *held_tok,
                      adapt_data *out);

#endif

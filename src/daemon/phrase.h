/* phrase.h: call and response: what the player holds, when a phrase ends, control changes. */
#ifndef CONTINUO_DAEMON_PHRASE_H
#define CONTINUO_DAEMON_PHRASE_H

#include <stdint.h>

#include "daemon/options.h"
#include "midi/stream.h"

/* What a player's message asks the service to do (bits). */
enum {
    PHRASE_NOTE_ON  = 1,    /* the player struck a note (a continuation stops) */
    PHRASE_HANDOVER = 2,    /* the hand-over CC: answer now */
    PHRASE_PANIC    = 4,    /* the panic CC */
    PHRASE_REROLL   = 8,    /* the re-roll CC */
    PHRASE_CONTROL  = 16,   /* a mapped CC (not to be sent thru) */
    PHRASE_HEAR     = 32,   /* a note on/off or the sustain pedal: the model hears
                               the message (the engine folds the pedal in) */
    PHRASE_REPLAY   = 64,   /* the replay CC: the newest take again */
    PHRASE_PREVIOUS = 128,  /* the previous-take CC: the take before, again */
};

/* The player's side as the phrase sees it: keys held (all channels merged),
 * the sustain pedal, and the silence timer.  What the model hears is the
 * messages themselves (PHRASE_HEAR): the codec folds the pedal in. */
typedef struct phrase {
    uint8_t key_down[128];      /* keys physically held */
    int     keys_held;
    int     pedal_down;
    int     notes_in_phrase;    /* note-ons since the last phrase end */
    int64_t last_activity;      /* ns, CLOCK_MONOTONIC: the last note on or off, pedal
                                   press or lift */
    int64_t judged_for;         /* ns: the silence (its last_activity) judged over ... */
    int64_t judged_end;         /* ... at this moment (phrase_judge; phrase_end = auto) */
    int64_t key_down_at[128];   /* ns: when each held key was struck */
    uint64_t phrases;           /* phrases ended so far */
} phrase;

void phrase_init(phrase *p);

/* A setting a mapped controller asks for: the option's name (config_find)
 * and its new value. */
typedef struct phrase_change {
    const char *option;         /* static: "temperature", "top_p", "response_seconds" */
    double      value;
} phrase_change;

#define PHRASE_MAX_CHANGES 12   /* one controller has one key (config_check); room for
                                   more in a config that did not pass it */

/* The settings one message asks for, in the option table's order. */
typedef struct phrase_changes {
    int           n;
    phrase_change item[PHRASE_MAX_CHANGES];
} phrase_changes;

/* Takes one message of the player received at NOW (ns) and returns
 * PHRASE_* bits.  A mapped controller (a controller key's, as CFG maps
 * them and its option_cc says: options.c) asks for its action, or, when it
 * sets a value, does not change CFG: the new values go to OUT (n = 0 when
 * none), for the caller to set through the one path every setting takes
 * (service_set_option). */
int phrase_input(phrase *p, const config *cfg, const midi_msg *m, int64_t now, phrase_changes *out);

/* When the phrase ends if nothing else comes: ns, or INT64_MAX when it
 * cannot end yet (no note since the last end, a key or the pedal held):
 * cfg->phrase_silence_ms into the silence, or (phrase_end = auto) when it
 * was judged ended, if sooner. */
int64_t phrase_deadline(const phrase *p, const config *cfg);

/* The silence that began at SILENCE_FROM (ns: the last_activity it was
 * judged on) is judged ended at END (ns; play/turn.h's verdict, which the
 * generator computes from the model's odds): phrase_deadline ends the
 * phrase then.  Nothing when the player has played since. */
void phrase_judge(phrase *p, int64_t silence_from, int64_t end);

/* When the longest-held key will have been held cfg->held_note_timeout_ms
 * (its note-off taken as lost): ns, or INT64_MAX (no key held, or the
 * timeout is 0: never). */
int64_t phrase_next_lost(const phrase *p, const config *cfg);

/* Releases, at NOW, every key held for cfg->held_note_timeout_ms or
 * longer, as if its note-off had come: the released keys go to KEYS (room
 * for 128; the model is to hear a note-off of each) and their count is
 * returned.  Does not count as activity: the phrase may end at once. */
int phrase_release_lost(phrase *p, const config *cfg, int64_t now, uint8_t *keys);

/* Marks the phrase ended (silence reached or hand-over). */
void phrase_end(phrase *p);

#endif

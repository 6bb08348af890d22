/* phrase.h: call and response: what the player holds, when a phrase ends, control changes. */
#ifndef CONTINUO_DAEMON_PHRASE_H
#define CONTINUO_DAEMON_PHRASE_H

#include <stdint.h>

#include "daemon/options.h"
#include "daemon/engine.h"
#include "midi/stream.h"

/* What a player's message asks the service to do (bits). */
enum {
    PHRASE_NOTE_ON  = 1,    /* the player struck a note (a continuation stops) */
    PHRASE_HANDOVER = 2,    /* the hand-over CC: answer now */
    PHRASE_PANIC    = 4,    /* the panic CC */
    PHRASE_REROLL   = 8,    /* the re-roll CC */
    PHRASE_CONTROL  = 16,   /* a mapped CC (not to be sent thru) */
};

/* The player's side: notes held (all channels merged), the sustain pedal
 * folded in (a key released while the pedal is down sounds on until the
 * pedal lifts or the key is struck again), and the silence timer. */
typedef struct phrase {
    uint8_t key_down[128];      /* keys physically held */
    uint8_t sounding[128];      /* notes sounding for the model (pedal folded) */
    int     keys_held;
    int     pedal_down;
    int     notes_in_phrase;    /* note-ons since the last phrase end */
    int64_t last_activity;      /* ns, CLOCK_MONOTONIC */
    int64_t key_down_at[128];   /* ns: when each held key was struck */
    uint64_t phrases;           /* phrases ended so far */
} phrase;

void phrase_init(phrase *p);

/* Takes one message of the player received at NOW (ns; SESSION_T is the
 * same instant in session seconds).  Appends the note events it gives the
 * model to EV (room for 130; returns their count in *N_EV), applies mapped
 * CCs to the live settings in CFG, and returns PHRASE_* bits. */
int phrase_input(phrase *p, config *cfg, const midi_msg *m, int64_t now, double session_t,
                 gen_event *ev, int *n_ev);

/* When the phrase ends if nothing else comes: ns, or INT64_MAX when it
 * cannot end yet (no note since the last end, a key or the pedal held). */
int64_t phrase_deadline(const phrase *p, const config *cfg);

/* When the longest-held key will have been held cfg->held_note_timeout_ms
 * (its note-off taken as lost): ns, or INT64_MAX (no key held, or the
 * timeout is 0: never). */
int64_t phrase_next_lost(const phrase *p, const config *cfg);

/* Releases, at NOW (SESSION_T in session seconds), every key held for
 * cfg->held_note_timeout_ms or longer, as if its note-off had come (the
 * pedal still holds its sound while down).  Appends the note events it
 * gives the model to EV (room for 128; count in *N_EV) and the released
 * keys to KEYS (room for 128); returns how many keys it released.  Does
 * not count as activity: the phrase may end at once. */
int phrase_release_lost(phrase *p, const config *cfg, int64_t now, double session_t,
                        gen_event *ev, int *n_ev, uint8_t *keys);

/* Marks the phrase ended (silence reached or hand-over). */
void phrase_end(phrase *p);

/* The mappings of the control changes (0..127). */
double phrase_cc_temperature(int value);   /* 0.1 .. 2.0 */
double phrase_cc_top_p(int value);         /* 0.05 .. 1.0 */
double phrase_cc_length(int value);        /* 1 .. 30 s */

#endif

/* engine.h: what the generator thread runs: a model that listens and continues. */
#ifndef CONTINUO_DAEMON_ENGINE_H
#define CONTINUO_DAEMON_ENGINE_H

#include <stdint.h>

#include "daemon/options.h"
#include "midi/smf.h"
#include "play/continuation.h"
#include "play/turn.h"

/* An engine: a const table entry; all calls come from the generator thread.
 * open:     loads what CFG names into *STATE; logs and returns -1 on error.
 * close:    frees STATE.
 * listen:   one channel message of the player (note on/off, the sustain
 *           pedal) at session time msg->time, in time order, as the loop
 *           read it; the engine folds the pedal in (the model: through the
 *           codec's streaming encoder, context.h) and it goes into the
 *           context at once, so a continuation only has sampling left.
 * begin:    a continuation starts at session time AT (the phrase end; in a
 *           duet, the time of its first event), as SPEC says (how it is
 *           played, its seed and length, whether it is a duet): a player's
 *           event that comes during a duet is placed on its time line by AT.
 * next:     the next event of the continuation (times never decrease; in a
 *           duet, CONT_TIME is time passing, not a note); returns 1, 0 at
 *           its end (end of sequence, past spec.seconds or
 *           spec.max_events), -1 on error (logged).
 * end:      the continuation stopped after PLAYED seconds of it (the
 *           player came back, or the length was reached).
 * keep_played: (may be NULL) the last continuation was stopped PLAYED
 *           seconds after its time 0, its first note (live_stop): what had not sounded of
 *           it leaves the context (after end, or after its own end).
 * rewind:   forget the last continuation: the context is back at its
 *           phrase end (re-roll).
 * replay:   (may be NULL) a take played again: its events, from session
 *           time AT, enter the context as the model's playing (nothing is
 *           sampled; the loop plays them).
 * hear_until: (may be NULL) a duet: no message of the player earlier than
 *           session time T will come, so what listen held back (the events
 *           of a message's own 10 ms step) enters the context.
 * prepare:  (may be NULL) the phrase heard up to session time AT may have
 *           ended (nothing held, the pedal up): the candidate answers of
 *           SPEC (spec.play.candidates) start, to be thought over in the
 *           silence; a begin with the same spec takes the best of them, a
 *           listen that the context takes (the player plays on) drops them.
 * think:    (may be NULL) one step of the prepared candidates (one batched
 *           decode of all): 1 while there is more to think, 0 when there is
 *           none (none prepared, or all at their end), -1 on error.
 * ready:    (may be NULL: never) 1 when the prepared answer is thought over
 *           far enough that a begin with its spec hands out its first
 *           ENGINE_READY_S at once: the loop then gives it no head start.
 * take_over: (may be NULL: a new model starts from silence) STATE, just
 *           opened (a model switched live, daemon/model_switch.h), stands
 *           where FROM stands, between continuations: FROM's candidates
 *           dropped, its context heard by STATE's model; FROM is closed
 *           after.  0, or -1 (logged; FROM still usable).
 * odds:     (may be NULL: the silence rule alone) the model's odds of the
 *           player's next event after the phrase heard up to session time
 *           AT (nothing held, the pedal up), into OUT (play/turn.h); called
 *           before prepare, on the same silence; 0, or -1 on error. */
typedef struct engine_ops {
    const char *name;
    int  (*open)(void **state, const config *cfg);
    void (*close)(void *state);
    int  (*listen)(void *state, const smf_event *msg);
    int  (*begin)(void *state, double at, const cont_spec *spec);
    int  (*next)(void *state, cont_event *out);
    void (*end)(void *state, double played);
    void (*rewind)(void *state);
    int  (*keep_played)(void *state, double played);
    int  (*hear_until)(void *state, double t);
    /* ms one event costs the engine, measured at open (NULL: next costs
     * nothing worth a head start), for lookahead_ms = -1 (auto). */
    double (*ms_per_event)(void *state);
    int  (*replay)(void *state, double at, const cont_event *ev, int n);
    int  (*prepare)(void *state, double at, const cont_spec *spec);
    int  (*think)(void *state);
    int  (*ready)(void *state);
    int  (*odds)(void *state, double at, turn_odds *out);
    int  (*take_over)(void *state, void *from);
    /* (may be NULL: no file) the model file STATE plays with, read after
     * open, before the state goes to the generator thread */
    const char *(*file)(void *state);
    /* (may be NULL: nothing to watch) watch: ON 1 while `serve` has
     * watchers, so each head's sources of the note-ons to come are kept
     * (the candidates forked from then on too); attention: those of the
     * note-on tagged NOTE (cont_event.note) into OUT, 1, or 0 when none
     * were kept. */
    void (*watch)(void *state, int on);
    int  (*attention)(void *state, uint32_t note, note_attention *out);
} engine_ops;

/* How much of a prepared answer `ready` asks for: its notes due in this
 * time are sampled before it starts; the rest comes from the chosen
 * candidate alone, many times faster than it plays. */
#define ENGINE_READY_S 0.1

/* "echo": answers with the player's last phrase a fifth up, at its timing
 * (a model-free engine for tests and for checking the MIDI path). */
extern const engine_ops engine_echo;
/* "stall": echo's first note, then it hangs in the engine for good (a test
 * engine: the watchdog must see it and systemd restart the service). */
extern const engine_ops engine_stall;
/* The Music Transformer from src/model (engine_model.c). */
extern const engine_ops *const engine_model;

/* The engine CFG asks for: "echo" or "stall" when cfg->model says so, else the model. */
const engine_ops *engine_for(const config *cfg);

#endif

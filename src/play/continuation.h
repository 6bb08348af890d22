/* continuation.h: one continuation of the Music Transformer, the same for `continue` (offline) and `serve` (live). */
#ifndef CONTINUO_PLAY_CONTINUATION_H
#define CONTINUO_PLAY_CONTINUATION_H

#include <stdint.h>

#include "codec/follow.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "model/model.h"
#include "model/sampler.h"
#include "play/attention.h"
#include "play/context.h"
#include "play/knobs.h"
#include "play/play_options.h"

/* What a continuation hands out, from its first note on. */
typedef enum cont_event_kind {
    CONT_NOTE_OFF = 0,
    CONT_NOTE_ON  = 1,
    CONT_TIME     = 2,  /* a duet only: the model let time pass (no note), so the
                           caller can keep it from running ahead of the music */
} cont_event_kind;

typedef struct cont_event {
    double  time;       /* seconds from the continuation's first note; never decreases */
    uint8_t kind;       /* cont_event_kind */
    uint8_t pitch;
    uint8_t velocity;   /* 1..127 for a note-on */
    uint32_t note;      /* a note-on's tag in the context (CONTEXT_MODEL_TAG | its number):
                           serve's id of the note; 0 for the others */
} cont_event;

/* Notes a continuation leaves sounding ring this long past its last event. */
#define CONT_TAIL_S 0.5

/* One continuation: how it is played, how long it may be, and whether the
 * player plays along. */
typedef struct cont_spec {
    play_settings play;
    uint64_t seed;
    double   seconds;       /* it ends at its first event later than this */
    int      max_events;    /* or at its event number max_events + 1 */
    int      duet;          /* the player's events join it (continuation_hear_until)
                               instead of ending it; next reports CONT_TIME too; no
                               pace or key nudges */
} cont_spec;

/* What a continuation owns, which a fork or an adopt never copies over:
 * its model state (a candidate's holds only the model: its batch
 * decodes), its sampler and its buffers.  Allocated by continuation_init
 * (continuation_fork_init: no KV cache), freed by continuation_free
 * (continuation_fork_free). */
typedef struct cont_own {
    model_state  st;
    sampler      smp;
    int          have_smp;
    float       *raw;           /* (vocab) scratch: this step's logits before the nudges */
    uint16_t    *sampled;       /* the ids sampled (logged at debug level at the end) */
    int          n_sampled, cap_sampled;
    int          want_attention;    /* continuation_keep_attention (not for candidates) */
    cont_attention *attention;      /* one entry per note-on handed out */
    int          n_attention, cap_attention;
    int          watch;             /* continuation_watch: each head's sources are kept */
    note_attention *heads;          /* one entry per note-on handed out, while watched */
    int          n_heads, cap_heads, i_heads;   /* i_heads: where the next lookup starts */
} cont_own;

/* Where a continuation stands: plain values (and borrowed pointers) that a
 * fork copies whole from its home, and an adopt back. */
typedef struct cont_state {
    cont_spec    spec;
    int          prefill;       /* the ids heard wait in the context and enter the
                                   model in one prefill at begin (offline) */
    int          pending;       /* a note event handed out before it was decoded (so it
                                   sounds one model step sooner); fed next call; -1: none */
    uint32_t     pending_tag;   /* its tag (a note-on's), 0: none */
    uint32_t     next_note;     /* the number of the next note-on handed out (its tag's);
                                   forks start from their home's, an adopt goes on from
                                   the chosen one's */
    int          hearing;       /* the ids entering the context are the player's */
    uint8_t      model_on[128]; /* pitches the continuation started and did not end */
    double       onset[128];    /* their onsets, continuation time */
    double       cut_at[128];   /* >= 0: a note of the model's that ends at this time
                                   (continuation time) without the model's NOTE_OFF: the
                                   length cap, or (duet) the player struck its pitch */
    int          n_cut;
    int          n_out;         /* events handed out */
    int          n_capped;      /* of its notes, those ended at the length cap */
    knobs_heard  heard;         /* what the knobs steer by, read at begin */
    double       loglik_model;  /* sum of ln p of the ids sampled, under the model's own odds */
    double       loglik_nudged; /* ... under the odds the nudges and knobs made (before the
                                   sampler's temperature and cuts) */
    int          guard;         /* ids sampled since its last event */
    /* a candidate (a fork, play/candidates.h): its decodes wait for its batch */
    struct model_batch *batch;  /* NULL: the continuation's own st decodes; borrowed */
    int          seq;           /* its sequence in batch */
    int          queued;        /* an id fed to the context, for the batch's next step; -1 */
    /* a chosen candidate's events, handed out by continuation_next first */
    const cont_event *queue;    /* borrowed from the candidates */
    int          n_queue, i_queue;
    int          queue_ended;   /* the candidate had reached its end */
} cont_state;

/* The model's side of the music: the context (the player's and the
 * model's events as one token stream, play/context.h), the KV cache, the
 * sampler, and the rules of what may come next.  Owned by one thread.
 *
 * The rules, for every continuation: it starts with a note (no leading
 * silence, and no VELOCITY first when one is in force: the first note
 * sounds one model step sooner), it never ends by itself (no EOS: its
 * length is asked for), never more than max_held of its own notes sound
 * at once (the player's, in a duet, do not count), a note of its own
 * held past max_note_ms is ended there, the pace and key nudges of
 * codec/follow.h apply (not in a duet), and it ends past spec.seconds or
 * spec.max_events.  Callers use the functions below, not the fields. */
typedef struct continuation {
    const vocab *v;
    cont_own     own;
    context      ctx;           /* its buffers its own: a fork copies it by context_copy */
    cont_state   s;
} continuation;

/* A context of at most N_CTX ids over model M (its KV cache, THREADS
 * threads, MEMORY), empty; notes longer than MAX_NOTE_S are cut in it
 * (the player's too) until a continuation's own max_note_ms applies.
 * PREFILL: see cont_state.prefill.  Returns 0, or -1 (logged). */
int  continuation_init(continuation *c, model *m, const vocab *v, int n_ctx, int threads, model_memory memory,
                       double max_note_s, int prefill);
void continuation_free(continuation *c);

/* The player's channel message (note on/off, the sustain pedal; others are
 * ignored) at time MSG->time, in time order.  In window memory a context
 * within an eighth of full slides now, while the player plays, so that a
 * continuation's first context/8 events are slide-free.  Returns 0 or -1. */
int  continuation_hear(continuation *c, const smf_event *msg);
/* No message of the player earlier than T will come (context_hear_until). */
int  continuation_hear_until(continuation *c, double t);

/* A continuation starts at time AT (the phrase end, or the primer's),
 * after everything heard.  Returns 0 or -1 (logged). */
int  continuation_begin(continuation *c, double at, const cont_spec *s);
/* Its next event: 1, or 0 at its end (a length limit), or -1 (logged). */
int  continuation_next(continuation *c, cont_event *out);
/* It stops (its end, or the player came back): the notes it left sounding
 * end in the context too; the ids sampled are logged at debug level.
 * Returns 0, or -1 (logged) when the context could not take them. */
int  continuation_end(continuation *c);
/* It was stopped PLAYED seconds after its first note (the time of its
 * events, as the service plays them: the player played on,
 * a hand-over, the transport stopped): only what sounded stays in the
 * context, as if it had been sampled up to there and ended (its notes
 * sounding then end), and the model's cache is rebuilt by one prefill.
 * During the continuation (then end it) or after its end; nothing to do
 * when all of it sounded, or when the player's events have entered the
 * context since it began (a duet).  Returns 0, or -1 (logged). */
int  continuation_keep_played(continuation *c, double played);
/* Back to the last continuation's start (a re-roll): the context's ids
 * before it are prefilled again.  Returns 0, or -1 (logged). */
int  continuation_rewind(continuation *c);

/* DST, just initialised over another model (a model switched live),
 * stands where SRC stands between continuations: the context (the
 * player's and the model's ids, the re-roll mark, the player's encoder)
 * and the state move over, and DST's model hears the ids in one prefill.
 * A model of another vocabulary or context size starts from silence
 * instead (logged).  SRC keeps its cache, not its encoder: free it after.
 * Returns 0, or -1 (logged: SRC unchanged when it was mid-continuation). */
int  continuation_take_over(continuation *dst, continuation *src);

/* A take played again (`ctl replay`): its events EV (N, times from its
 * first note, in order) enter the context at time AT as the model's
 * playing, as if it had sampled them (time shifts, velocities, notes; the
 * notes it left sounding end CONT_TAIL_S after its last event).  Returns
 * 0 or -1 (logged). */
int  continuation_replay(continuation *c, double at, const cont_event *ev, int n);

/* ---- what callers read ---- */

/* Its spec, as begun (the length as last set). */
const cont_spec *continuation_spec(const continuation *c);
/* The answer's length becomes SECONDS (a chosen candidate's may be another). */
void continuation_set_seconds(continuation *c, double seconds);
/* Ids in the context (after continuation_begin: those heard). */
int  continuation_n_ids(const continuation *c);
/* Ids sampled since the continuation began. */
int  continuation_n_sampled(const continuation *c);
/* Seconds of the session (the player's clock, as its messages are stamped)
 * at the context's current position: right after continuation_begin, the
 * continuation's time 0. */
double continuation_session_time(const continuation *c);
/* The model state, for a warm-up before the first continuation. */
model_state *continuation_model_state(continuation *c);
/* The attention of every note-on it hands out is kept from now on (for
 * continue --plot-attention; a candidate keeps none). */
void continuation_keep_attention(continuation *c);
/* The attention kept for its note-ons, N of them, in the order played. */
const cont_attention *continuation_attention(const continuation *c, int *n);

/* WATCH 1: from its next note-on on, each head's sources of every note-on
 * it hands out are kept (note_attention; candidates too, forked after);
 * 0: none are (the default: nothing is computed). */
void continuation_watch(continuation *c, int watch);
/* The sources kept for the note-on of tag NOTE since the last begin, or
 * NULL.  Looked up in the order handed out: cheap when asked in order. */
const note_attention *continuation_note_attention(continuation *c, uint32_t note);
/* Appends A to C's kept sources (an adopt: the chosen candidate's). */
void continuation_keep_heads(continuation *c, const note_attention *a);
/* While watched: the sources of the note-on NOTE (PITCH) about to be
 * handed out, from the decode whose odds chose it, kept (heads.c). */
void continuation_capture_heads(continuation *c, uint32_t note, int pitch);

/* ---- candidates (play/candidates.h and play/fork.c build on these) ---- */

/* One move of a continuation: CONT_STEP_EVENT with its next event in OUT
 * (more may follow before a decode), CONT_STEP_DECODE (an id entered the
 * context: the continuation's own model state has decoded it, or for a
 * candidate it waits in s.queued for the batch's next step),
 * CONT_STEP_END, or -1 (logged).  continuation_next is a loop over it. */
enum { CONT_STEP_END = 0, CONT_STEP_EVENT = 1, CONT_STEP_DECODE = 2 };
int  continuation_step(continuation *c, cont_event *out);
/* Keeps the sampled ID for the debug log at the end. */
void continuation_remember(continuation *c, int id);
/* The id's feed into the model (context_feed_fn): continuation_init and
 * continuation_fork_init give it to their context. */
int  continuation_decode_id(void *continuation, int id);

#endif

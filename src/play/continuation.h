/* continuation.h: one continuation of the Music Transformer, the same for `continue` (offline) and `serve` (live). */
#ifndef CONTINUO_PLAY_CONTINUATION_H
#define CONTINUO_PLAY_CONTINUATION_H

#include <stdint.h>

#include "codec/follow.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "model/model.h"
#include "model/sampler.h"
#include "play/context.h"
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
} cont_event;

/* Notes a continuation leaves sounding ring this long past its last event. */
#define CONT_TAIL_S 0.5

/* What the model listened to when it chose a note (continue
 * --plot-attention): the earlier note-ons its last layer attended to
 * most, averaged over the heads.  Times in seconds from the
 * continuation's first note (the primer's are negative). */
#define CONT_ATTENTION_TOP 3
typedef struct cont_attention {
    double  time;
    uint8_t pitch;
    int     n;                              /* sources, most attended first */
    double  src_time[CONT_ATTENTION_TOP];
    uint8_t src_pitch[CONT_ATTENTION_TOP];
    float   weight[CONT_ATTENTION_TOP];     /* attention on the source's NOTE_ON, 0..1 */
} cont_attention;

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
 * spec.max_events. */
typedef struct continuation {
    const vocab *v;
    model_state  st;
    sampler      smp;
    int          have_smp;
    context      ctx;
    cont_spec    spec;
    int          prefill;       /* the ids heard wait in the context and enter the
                                   model in one prefill at begin (offline) */
    int          pending;       /* a note event handed out before it was decoded (so it
                                   sounds one model step sooner); fed next call; -1: none */
    int          hearing;       /* the ids entering the context are the player's */
    uint8_t      model_on[128]; /* pitches the continuation started and did not end */
    double       onset[128];    /* their onsets, continuation time */
    double       cut_at[128];   /* >= 0: a note of the model's that ends at this time
                                   (continuation time) without the model's NOTE_OFF: the
                                   length cap, or (duet) the player struck its pitch */
    int          n_cut;
    int          n_out;         /* events handed out */
    int          n_capped;      /* of its notes, those ended at the length cap */
    /* what the knobs steer by, set at begin (play_options.h) */
    double       heard_pitch;   /* mean pitch of the note-ons heard (register) */
    unsigned char scale[12];    /* key_lock: the pitch classes it may play */
    int          have_scale;
    unsigned char phrase[FOLLOW_RING];  /* motif: the pitches of the note-ons heard, in order */
    int          n_phrase;
    uint16_t    *sampled;       /* the ids sampled (logged at debug level at the end) */
    int          n_sampled, cap_sampled;
    float       *raw;           /* (vocab) scratch: this step's logits before the nudges */
    double       loglik_model;  /* sum of ln p of the ids sampled, under the model's own odds */
    double       loglik_nudged; /* ... under the odds the nudges and knobs made (before the
                                   sampler's temperature and cuts) */
    /* a candidate (a fork, play/candidates.h): its decodes wait for its batch */
    struct model_batch *batch;  /* NULL: the continuation's own st decodes */
    int          seq;           /* its sequence in batch */
    int          queued;        /* an id fed to the context, for the batch's next step; -1 */
    int          guard;         /* ids sampled since its last event */
    /* continue --plot-attention (not for candidates): one entry per note-on */
    int          want_attention;
    cont_attention *attention;
    int          n_attention, cap_attention;
    /* a chosen candidate's events, handed out by continuation_next first */
    const cont_event *queue;
    int          n_queue, i_queue;
    int          queue_ended;   /* the candidate had reached its end */
} continuation;

/* A context of at most N_CTX ids over model M (its KV cache, THREADS
 * threads, MEMORY), empty.  PREFILL: see continuation.prefill.  Returns 0,
 * or -1 (logged). */
int  continuation_init(continuation *c, model *m, const vocab *v, int n_ctx, int threads, model_memory memory,
                       int prefill);
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
 * end in the context too; the ids sampled are logged at debug level. */
void continuation_end(continuation *c);
/* Back to the last continuation's start (a re-roll): the context's ids
 * before it are prefilled again. */
void continuation_rewind(continuation *c);

/* A take played again (`ctl replay`): its events EV (N, times from its
 * first note, in order) enter the context at time AT as the model's
 * playing, as if it had sampled them (time shifts, velocities, notes; the
 * notes it left sounding end CONT_TAIL_S after its last event).  Returns
 * 0 or -1 (logged). */
int  continuation_replay(continuation *c, double at, const cont_event *ev, int n);

/* Seconds of the context's time line at the continuation's first note (its
 * time 0), valid once it has one. */
double continuation_origin(const continuation *c);

/* ---- candidates (play/candidates.h builds on these) ---- */

struct model_batch;
/* DST becomes a candidate of SRC, just begun: the same context, rules and
 * knobs, its own sampler seeded SEED, its decodes in sequence SEQ of
 * BATCH (forked from SRC's model state).  DST's buffers (HIST of n_ctx
 * ids, a sampler, a note list) are its own, made by
 * continuation_fork_init.  With SRC's seed it plays exactly what SRC would. */
int  continuation_fork_init(continuation *dst, const continuation *src);
void continuation_fork_free(continuation *dst);
void continuation_fork(continuation *dst, const continuation *src, struct model_batch *batch, int seq,
                       uint64_t seed);
/* One move of a candidate: CONT_STEP_EVENT with its next event in OUT
 * (more may follow before a decode), CONT_STEP_DECODE (an id waits in
 * c->queued for the batch's next step), CONT_STEP_END, or -1 (logged).
 * Its events are the ones continuation_next would hand out, in order
 * (not in a duet: no CONT_TIME). */
enum { CONT_STEP_END = 0, CONT_STEP_EVENT = 1, CONT_STEP_DECODE = 2 };
int  continuation_step(continuation *c, cont_event *out);
/* HOME goes on as its candidate CAND did (its batch sequence already
 * adopted into HOME's model state): context, sampler, notes, likelihoods;
 * CAND's events EV (N) are handed out first, then HOME samples on unless
 * ENDED. */
int  continuation_adopt(continuation *home, const continuation *cand, const cont_event *ev, int n, int ended);

/* Notes in the order the motif measures read them: by onset and, struck
 * together, low to high (as the codec and bench/realism.py order them).
 * PITCH and AT hold N such notes; the note P struck at T, no earlier than
 * any of them, goes in at its place.  Returns N + 1. */
int  chord_order_insert(unsigned char *pitch, double *at, int n, int p, double t);

#endif

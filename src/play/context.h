/* context.h: the model's context as one token stream: the player's MIDI through the codec's streaming encoder, the model's samples through its streaming decoder. */
#ifndef CONTINUO_PLAY_CONTEXT_H
#define CONTINUO_PLAY_CONTEXT_H

#include <stdint.h>

#include "codec/follow.h"
#include "codec/perf.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "model/memory.h"

/* The model's note-ons are tagged with this bit, the player's without. */
#define CONTEXT_MODEL_TAG 0x80000000u

/* A longer time between two events of the player (a silence, or a chord
 * held long) enters the context as this long. */
#define CONTEXT_MAX_GAP_S 2.0

/* Where the token stream stands: saved at a continuation's start so a
 * re-roll can go back to it. */
typedef struct context_pos {
    perf_emit_pos emit;     /* step the TIME_SHIFTs reached; velocity bin in force */
    perf_decoder  dec;      /* what sounds (for the sampler's mask) */
    perf_follow   follow;   /* the note-ons heard and played: pace and key (codec/follow.h) */
    memory_follower memory; /* the same note-ons through the player's memory (model/memory.h) */
    int           n_hist;   /* ids in hist */
} context_pos;

/* Called with every id that enters the context, in order (the engine
 * decodes it into the model's KV cache); returns 0 or -1 (logged). */
typedef int (*context_feed_fn)(void *user, int id);

/* The glue between the service and the model, owned by the generator
 * thread.  The player's channel messages go through the codec's streaming
 * encoder (perf_encoder_new_events: the pedal folded, quantized, ordered as
 * `continuo encode` does) and its events are written with perf_emit into
 * the stream, where the model's own ids come in between: on the session's
 * time line (a gap longer than CONTEXT_MAX_GAP_S enters as that long,
 * the first event with none), or in a duet on the continuation's.  Every
 * id, the player's and the model's, goes through context_feed. */
typedef struct context {
    const vocab     *v;
    perf_encoder    *enc;           /* the player's messages; owned */
    context_feed_fn  feed;          /* may be NULL */
    void            *user;
    int             *hist;          /* (n_ctx) the context's ids, oldest first; owned */
    uint32_t        *tag;           /* (n_ctx) beside hist: a NOTE_ON's tag, the note's id
                                       for `serve`'s watchers (the player's: the tick of the
                                       message heard; the model's: CONTEXT_MODEL_TAG | its
                                       number), else 0; owned */
    uint32_t         next_tag;      /* the tag of the next NOTE_ON fed */
    uint32_t         heard_tag[128];    /* the tag of each pitch's last note-on heard */
    int              n_ctx;
    context_pos      pos, mark;     /* now; at the last continuation's start */
    uint8_t          open[128];     /* 1: the last NOTE_ON/NOTE_OFF of the pitch in the
                                       stream is a NOTE_ON (the decoder's state may
                                       differ: it cuts long notes) */
    uint8_t          mark_open[128];
    note_list        done;          /* scratch for the decoder's completed notes */
    int              in_continuation;   /* between context_begin and context_end */
    int              mark_stale;        /* the ids after the mark are not the continuation's
                                           alone: a player's came in, the window pushed the
                                           mark out, or there is no mark yet */
    int64_t          first_step;    /* step of the continuation's first note, -1 before */
    int64_t          begin_step;    /* the continuation's time 0, in context steps */
    int64_t          origin;        /* the session step of the first event heard: the context's
                                       step 0 (its time line is the same whenever the
                                       player starts, as in `continue`), -1 before */
} context;

/* An empty context of at most N_CTX ids; MAX_NOTE_S caps notes for the
 * decoder.  Returns 0, or -1 out of memory (logged). */
int  context_init(context *c, const vocab *v, int n_ctx, double max_note_s, context_feed_fn feed, void *user);
void context_free(context *c);
/* DST (of as many ids as SRC) stands where SRC stands: its ids, position,
 * mark and continuation.  DST keeps its own buffers (hist, done, the
 * encoder) and its own feed; a new field of the stream's state is copied
 * here too. */
void context_copy(context *dst, const context *src);

/* The player's memory M (the model's; NULL or empty: none) follows the
 * stream from now: its followers (now and at the mark) hear again the ids
 * the context holds.  Called when the context starts and when it moves to
 * another model. */
void context_follow_memory(context *c, const player_memory *m);

/* One id into the context (the model's samples; the player's come through
 * context_hear).  Returns 0 or -1. */
int  context_feed(context *c, int id);

/* 1 when the context takes MSG: a note on or off, the sustain pedal. */
int  context_takes(const smf_event *msg);

/* One channel message of the player (note on/off, sustain pedal; others
 * are ignored) at session time MSG->time, in time order, as the service
 * reads it; a note-on's MSG->tick is its tag (serve: the note's id;
 * offline the file's tick, unused).  The events a message makes final enter the context now; those
 * of its own 10 ms step wait for a later message or context_hear_until.
 * Returns 0 or -1. */
int  context_hear(context *c, const smf_event *msg);
/* No message of the player earlier than session time T will come: what
 * the encoder held back enters the context.  Returns 0 or -1. */
int  context_hear_until(context *c, double t);

/* The context's time line: seconds of its TIME_SHIFTs so far (0 at the
 * first event heard). */
double context_time(const context *c);

/* A continuation starts at session time AT: everything heard so far enters
 * the context (a message that comes later is placed after it; with nothing
 * heard yet, a mid VELOCITY starts it), the pace and key heard so far become
 * the aim of pos.follow (whose strengths the engine sets), and the position is
 * marked for a re-roll.  Returns 0 or -1. */
int  context_begin(context *c, double at);
/* The continuation's first note is at the current position. */
void context_first_note(context *c);
void context_end(context *c);
/* Back to the mark (the engine rebuilds the model's cache from hist). */
void context_rewind(context *c);
/* How many of the ids after the mark sounded when the continuation
 * stopped PLAYED seconds after its first note (the time of its events):
 * those before the first that stands past it (a TIME_SHIFT that goes
 * past; none before its first note).  -1 when the ids after the mark are
 * not the continuation's alone. */
int  context_played_ids(const context *c, double played);

#endif

/* memory.h: the player's memory (train/player_memory.py, its reference): the pitches the player played after the same notes, mixed into the model's odds of the next note-on. */
#ifndef CONTINUO_MEMORY_H
#define CONTINUO_MEMORY_H

#include <stddef.h>
#include <stdint.h>

/* The settings come from the model file (model.c checks them; the
 * defaults are train/player_memory.py's). */
#define MEMORY_KMAX_LIMIT 32        /* the longest run a file may ask for */
#define MEMORY_PITCHES 128          /* the widest layout's pitch count */

/* Every run of kmin..kmax note-ons of the playing, keyed by an order-free
 * hash of its pitches (a multiset: a chord rolled the other way is the
 * same run) and its length, with the pitch that came next: one entry per
 * (position, length), sorted by key then pitch.  Built once; read-only
 * after, so followers on several threads share it. */
typedef struct player_memory {
    int kmin, kmax;
    float lambda, decay;
    int note_on_base;           /* the layout's first note-on id */
    int n_pitches;              /* the layout's pitch count (<= MEMORY_PITCHES) */
    size_t n_notes;             /* the note-ons it was built from */
    size_t n;                   /* entries */
    uint64_t *key;              /* (n) sorted */
    uint8_t *next;              /* (n) the pitch that came after the run, 0-based */
} player_memory;

/* Builds M from PITCHES (N of them, 0-based; -1 separates sessions: no run
 * crosses it) for a layout of N_PITCHES note-ons from id NOTE_ON_BASE.
 * The caller has checked the arguments (model.c's loader, naming the file
 * and byte): 1 <= KMIN <= KMAX <= MEMORY_KMAX_LIMIT, N_PITCHES <=
 * MEMORY_PITCHES, every pitch -1..N_PITCHES-1.  Returns 0, or -1 out of
 * memory (logged; nothing to free). */
int  player_memory_build(player_memory *m, const int32_t *pitches, size_t n, int note_on_base, int n_pitches,
                         int kmin, int kmax, float lambda, float decay);
void player_memory_free(player_memory *m);

/* One stream through a memory (what sounded: the context heard and played;
 * a candidate's fork copies its parent's by value).  The next event's odds
 * are mixed with weight memory_weight(): lambda x the confidence, 0 while
 * the memory holds no run of what sounded last. */
typedef struct memory_follower {
    const player_memory *m;
    int hist[MEMORY_KMAX_LIMIT];    /* the last pitches, oldest first */
    int n_hist;
    float confidence;               /* exponential average of the odds given to the notes that came */
    int have;                       /* odds[] holds the memory's odds of the next pitch */
    float odds[MEMORY_PITCHES];
} memory_follower;

/* M may be NULL or hold nothing (a model without a memory): the follower
 * then never mixes. */
void  memory_follower_init(memory_follower *f, const player_memory *m);
/* TOKEN sounded: when it is a note-on the confidence learns from the odds
 * the memory gave it, and the odds of the next pitch are looked up.  Other
 * events change nothing. */
void  memory_follower_feed(memory_follower *f, int token);
float memory_weight(const memory_follower *f);
/* LOGITS (V of them) become the log of the mixed odds:
 * p'(note-on x) = (1 - w) p(note-on x) + w P(a note-on) odds(x), every
 * other event's p unchanged; nothing changes while the weight is 0. */
void  memory_mix(const memory_follower *f, float *logits, int V);

#endif

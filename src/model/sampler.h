/* sampler.h: picks the next id from logits and a mask: temperature, top-k, top-p, min-p, a seeded RNG. */
#ifndef CONTINUO_SAMPLER_H
#define CONTINUO_SAMPLER_H

#include <stdint.h>

/* How continuations are played by default, in one place so that `continue`,
 * `demo` and `serve` sound the same: sampling (sampling_default) and the
 * two caps the decoder applies. Chosen on ASAP's valid split with
 * bench/realism.py (the table is in models/MODEL_CARD.md). Plain numbers: the
 * service's option table spells them as strings with PLAY_STR. */
#define PLAY_TEMPERATURE 1.0
#define PLAY_TOP_P       0.95
#define PLAY_TOP_K       0
#define PLAY_MIN_P       0
#define PLAY_FILTER_TIME 0       /* top-k/p, min-p leave time shifts alone */
#define PLAY_MAX_HELD    24      /* notes sounding at once */
#define PLAY_MAX_NOTE_MS 5000    /* a note held longer is ended */
#define PLAY_PACE        1       /* keep the pace of what is continued (codec/follow.h) */
#define PLAY_KEY_PULL    0.1     /* and draw it toward its key (codec/follow.h) */
#define PLAY_RELEASE     1       /* let a note go as it nears PLAY_MAX_NOTE_MS (play/knobs.c) */
#define PLAY_MOTIF       0.4     /* come back to the motifs heard (play/knobs.c) */
#define PLAY_CANDIDATES  8       /* continuations side by side, the best by the mix played */
#define PLAY_STR_(x) #x
#define PLAY_STR(x) PLAY_STR_(x)

/* How to sample: the one settings type that the config (`serve`'s option
 * table), the engine and the CLI (`continue`, `demo`) share, with one set of
 * ranges (SAMPLING_*: the option table, the CLI and sampler_configure check
 * against them).  The seed is not a setting: it is given with them. */
typedef struct sampling_settings {
    double temperature;     /* 0: greedy (argmax) */
    int    top_k;           /* keep the K most likely; 0: off */
    double top_p;           /* keep the smallest set with mass >= P; 1: off */
    double min_p;           /* drop events below MIN_P times the most likely; 0: off */
    int    filter_time;     /* 0: top-k, top-p and min-p choose among the ids the
                               mask does not protect (SAMPLER_PROTECTED: the
                               time shifts), so how long to wait keeps the
                               model's own odds; 1: they cut every id alike */
    /* Keep the pace of what is continued, and draw its notes toward its
     * key: the strengths of codec/follow.h's nudges, which whoever owns the
     * decoder adds to the logits before sampling (the sampler does not read
     * them); 0: off. */
    double pace;
    double key_pull;
} sampling_settings;

#define SAMPLING_TEMPERATURE_MIN 0.0
#define SAMPLING_TEMPERATURE_MAX 4.0
#define SAMPLING_TOP_K_MIN       0
#define SAMPLING_TOP_K_MAX       1000
#define SAMPLING_TOP_P_MIN       0.01
#define SAMPLING_TOP_P_MAX       1.0
#define SAMPLING_MIN_P_MIN       0.0
#define SAMPLING_MIN_P_MAX       1.0
#define SAMPLING_PACE_MIN        0.0
#define SAMPLING_PACE_MAX        4.0
#define SAMPLING_KEY_PULL_MIN    0.0
#define SAMPLING_KEY_PULL_MAX    2.0

/* The PLAY_* values. */
void sampling_default(sampling_settings *o);

/* Values of the sampler's mask, one byte per id. */
enum {
    SAMPLER_ALLOWED   = 0,
    SAMPLER_FORBIDDEN = 1,  /* never chosen */
    SAMPLER_PROTECTED = 2,  /* kept whatever top-k, top-p and min-p cut (unless
                               settings.filter_time) */
};

typedef struct sampler_candidate {
    float p;
    int id;
} sampler_candidate;

/* The sampler owns its RNG and scratch; sampling allocates nothing.  It
 * knows ids, logits and its mask, nothing of music: whoever knows what may
 * come next (the codec's decoder, through the caller) fills the mask. */
typedef struct sampler {
    sampling_settings set;
    float temperature, top_p, min_p;    /* set's, as the sampler computes with them */
    uint64_t seed;          /* the seed it was (re)configured with */
    int vocab_size;
    uint64_t rng;           /* xorshift64* state */
    float *probs;           /* (vocab_size) scratch; owned */
    sampler_candidate *order;   /* (vocab_size) scratch; owned */
    uint8_t *mask;          /* (vocab_size) SAMPLER_ALLOWED / _FORBIDDEN /
                               _PROTECTED by id; owned */
} sampler;

/* Returns 0, or -1 on a bad setting or no memory (logged).  The mask starts
 * all SAMPLER_ALLOWED. */
int  sampler_init(sampler *s, int vocab_size, const sampling_settings *o, uint64_t seed);
/* New settings and seed for an initialized sampler, without allocating: it
 * then draws exactly what sampler_init with them would.  The mask is kept.
 * Returns 0, or -1 on a bad setting (logged; the sampler is unchanged). */
int  sampler_configure(sampler *s, const sampling_settings *o, uint64_t seed);
void sampler_free(sampler *s);

/* The mask (vocab_size bytes) for the caller to fill before sampling. */
uint8_t *sampler_mask(sampler *s);
void sampler_forbid(sampler *s, int id);

/* The next id from LOGITS (vocab_size, not modified). If every id is
 * forbidden, returns the most likely one regardless. */
int  sampler_sample(sampler *s, const float *logits);

/* A uniform float in [0, 1) from the sampler's RNG. */
float sampler_random(sampler *s);

#endif

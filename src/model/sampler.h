/* sampler.h: picks the next event from logits: temperature, top-k, top-p, min-p, a seeded RNG and a mask of events the decoder would discard. */
#ifndef CONTINUO_SAMPLER_H
#define CONTINUO_SAMPLER_H

#include <stdint.h>

struct vocab;
struct perf_decoder;

/* How continuations are played by default, in one place so that `continue`,
 * `demo` and `serve` sound the same: sampling (sampler_opts_default) and the
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
#define PLAY_STR_(x) #x
#define PLAY_STR(x) PLAY_STR_(x)

typedef struct sampler_opts {
    float    temperature;   /* 0: greedy (argmax) */
    int      top_k;         /* keep the K most likely; 0: off */
    float    top_p;         /* keep the smallest set with mass >= P; 1: off */
    float    min_p;         /* drop events below MIN_P times the most likely; 0: off */
    int      filter_time;   /* 0: top-k, top-p and min-p choose among notes and
                               velocities only, a protected event (a time shift,
                               see sampler_mask_from_decoder) is never cut: how
                               long to wait keeps the model's own odds;
                               1: they cut every event alike */
    uint64_t seed;          /* same seed, same logits: same choices */
} sampler_opts;

void sampler_opts_default(sampler_opts *o);

typedef struct sampler_candidate {
    float p;
    int id;
} sampler_candidate;

/* The sampler owns its RNG and scratch; sampling allocates nothing. */
typedef struct sampler {
    sampler_opts opts;
    int vocab_size;
    uint64_t rng;           /* xorshift64* state */
    float *probs;           /* (vocab_size) scratch; owned */
    sampler_candidate *order;   /* (vocab_size) scratch; owned */
    uint8_t *forbidden;     /* (vocab_size) 1: never chosen, 2: protected from
                               the filters, 0: neither; owned */
} sampler;

/* Returns 0, or -1 on a bad option or no memory (logged). */
int  sampler_init(sampler *s, int vocab_size, const sampler_opts *o);
/* New options and seed for an initialized sampler, without allocating: it
 * then draws exactly what sampler_init with O would.  The mask is kept.
 * Returns 0, or -1 on a bad option (logged; the sampler is unchanged). */
int  sampler_configure(sampler *s, const sampler_opts *o);
void sampler_free(sampler *s);

void sampler_allow_all(sampler *s);
void sampler_forbid(sampler *s, int id);
/* ID stays a candidate whatever top-k, top-p and min-p cut (unless forbidden). */
void sampler_protect(sampler *s, int id);
/* Forbids what the streaming decoder D would discard or what breaks the
 * performance: PAD, EOS unless ALLOW_EOS, NOTE_OFF of a silent pitch, and a
 * NOTE_ON of a silent pitch while MAX_HELD notes already sound (0: no cap).
 * Protects the time shifts unless the options say filter_time.
 * V gives the id layout; only its fields and D's fields are read. */
void sampler_mask_from_decoder(sampler *s, const struct vocab *v, const struct perf_decoder *d,
                               int max_held, int allow_eos);

/* The next id from LOGITS (vocab_size, not modified). If every id is
 * forbidden, returns the most likely one regardless. */
int  sampler_sample(sampler *s, const float *logits);

/* A uniform float in [0, 1) from the sampler's RNG. */
float sampler_random(sampler *s);

#endif

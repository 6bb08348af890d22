/* model.h: the Music Transformer: hyperparameters, weights mapped from a GGUF file, run state with KV cache. */
#ifndef CONTINUO_MODEL_H
#define CONTINUO_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "model/gguf.h"
#include "model/kernels.h"
#include "model/memory.h"
#include "model/pool.h"

/* Hyperparameters (continuo.* keys; models/FORMAT.md). */
typedef struct model_config {
    int n_layers;
    int d_model;
    int n_heads;
    int d_head;             /* d_model / n_heads */
    int d_ff;
    int max_rel;            /* relative distances >= max_rel add nothing */
    int context;            /* longest window the model runs on */
    int vocab_size;
    float ln_eps;           /* LayerNorm epsilon (1e-5) */
} model_config;

/* The vocabulary layout the model was trained on (continuo.vocab.*);
 * compare with the codec's with model_check_vocab. */
typedef struct model_vocab {
    char name[32];
    int size, has_pad_eos, min_pitch, max_pitch, n_time_shifts, step_ms, n_velocity_bins;
    int note_on_base, note_off_base, time_shift_base, velocity_base;
} model_vocab;

/* Training provenance (continuo.provenance.*); strings borrowed from the file. */
typedef struct model_provenance {
    const char *data;       /* NULL if absent */
    const char *date;
    const char *command;
    long long   steps;      /* -1 if absent */
    double      valid_nll;  /* NAN if absent */
} model_provenance;

/* One Transformer block's weights: pointers into the mapped file. */
typedef struct layer_weights {
    const float *attn_norm_w;   /* (d_model) */
    const float *attn_norm_b;   /* (d_model) */
    matrix wq;                  /* (d_model out, d_model in) */
    matrix wk;                  /* (d_model, d_model) */
    matrix wv;                  /* (d_model, d_model) */
    matrix wo;                  /* (d_model, d_model) */
    matrix er;                  /* (n_heads * max_rel, d_head): head h's table is rows h*max_rel .. */
    const float *ffn_norm_w;    /* (d_model) */
    const float *ffn_norm_b;    /* (d_model) */
    matrix w_up;                /* (d_ff, d_model) */
    const float *b_up;          /* (d_ff) */
    matrix w_down;              /* (d_model, d_ff) */
    const float *b_down;        /* (d_model) */
} layer_weights;

typedef struct model_weights {
    matrix token_embd;          /* (vocab_size, d_model); also the output projection (tied) */
    layer_weights *layers;      /* (n_layers); owned */
    const float *out_norm_w;    /* (d_model) */
    const float *out_norm_b;    /* (d_model) */
    size_t n_params;
    size_t bytes;               /* bytes of all weight data in the file */
    size_t decode_bytes;        /* weight bytes read per decoded event */
} model_weights;

typedef struct model {
    gguf_file file;             /* the mapping; weights point into it */
    model_config cfg;
    model_vocab vocab;
    model_provenance prov;
    model_weights w;
    const char *name;           /* general.name, or "" */
    int f16;                    /* 1 when any matrix is stored as F16 */
    int i8;                     /* 1 when any matrix is stored as I8 (with its rows' scales) */
    player_memory player;       /* an adapted model's memory of its player (player.pitches);
                                   kmax 0: the file has none */
} model;

/* Maps PATH and checks everything (structure, keys, every tensor's name,
 * type and shape against the hyperparameters). On a bad file logs one
 * error naming the file, byte offset and key/tensor, with how to
 * regenerate it, and returns -1 (nothing to free). */
int  model_load(model *m, const char *path);
void model_free(model *m);

/* The model file to use: EXPLICIT when not NULL, else $CONTINUO_MODEL, else
 * CONTINUO_DATADIR/continuo-default.gguf, else ./models/continuo-default.gguf,
 * the first that exists. Writes it to OUT (N bytes) and returns 0; if none
 * exists logs the places tried and returns -1. */
int model_resolve_path(const char *explicit_path, char *out, size_t n);
/* The same search without an explicit path, quietly: 0 with OUT set, or -1. */
int model_find_default(char *out, size_t n);

/* 0 when the model's vocabulary matches the codec layout given by fields;
 * else logs what differs and returns -1. */
struct vocab;
int model_check_vocab(const model *m, const struct vocab *v);

/* model_resolve_path (EXPLICIT_PATH may be NULL), model_load, then the codec
 * vocabulary the model names, checked with model_check_vocab: 0 with *V set,
 * or -1 (logged, nothing to free). */
int model_open(model *m, const char *explicit_path, const struct vocab **v);

/* How a full cache makes room for the next event. */
typedef enum model_memory {
    MODEL_MEMORY_WINDOW = 0,    /* slide: the last `keep` events are prefilled again, so
                                   the state is a fresh run on that window (a stall of one
                                   prefill every context/4 events) */
    MODEL_MEMORY_STREAM = 1     /* roll: the new event overwrites the oldest one in the
                                   ring; cached keys and values keep what they saw when
                                   computed (constant cost per event, no stall) */
} model_memory;

/* "window" / "stream". */
const char *model_memory_name(model_memory mem);

/* N floats, zeroed and 64-byte aligned; *FAIL set (and NULL) if out of
 * memory; free() frees them.  One of MODEL_HUGE_BYTES or more (a batch's
 * caches: 42 MB for 8 candidates; the prefill's F32 weights) starts on a
 * 2 MiB boundary and is offered transparent huge pages (madvise): it is
 * written whole at once, and 512 times fewer page faults made `continue`
 * with 8 candidates 10-20 % faster here.  A state's own keys and values
 * (5.2 MB) stay on 4 KiB pages: on 2 MiB ones the one-sequence step was
 * no faster at 2 threads and 7 % slower at 1 (docs/INTERNALS.md, "Huge
 * pages"). */
#define MODEL_HUGE_BYTES ((size_t)8 << 20)
float *model_alloc_floats(size_t n, int *fail);
/* The same for N half floats (a cache). */
uint16_t *model_alloc_halves(size_t n, int *fail);

/* One decode step of up to `cap` sequences over one pass of the weights:
 * the layer recipe of forward.c (model_step_run), for model_decode a step
 * of one (the live path), for a batch a step of its candidates.  Item k's
 * new event goes to slot slot[k] of its own cache and attends over
 * n_keys[k] events.  The scratch is one row per item, allocated by
 * model_step_init; the caches and the logits are the owner's. */
typedef struct model_step {
    int cap;
    int threads;                /* the pool's: each normalizes into its own rows of xb */
    int n;                      /* items this step, 1..cap */
    uint16_t **k, **v;          /* (cap) item k's keys and values, (n_layers, n_heads, context,
                                   d_head) half floats; borrowed */
    int *slot;                  /* (cap) the cache slot of item k's new event */
    int *n_keys;                /* (cap) the events item k attends over, its new one included */
    struct { int j0, j1, shared; } runs[3]; /* the slots in order: shared by every item (item 0's
                                   rows read once for all) or each one's own */
    int n_runs;                 /* 0: each item attends over its own cache alone */
    float *x, *q, *kn, *vn, *att;   /* (cap, d_model) residual, query, new key and value,
                                   attention output */
    float *xb;                  /* (threads, cap, d_model) normalized, each thread's copy
                                   (then its scratch) */
    float *hb;                  /* (cap, d_ff) */
    float *scores;              /* (cap, n_heads, context) each head's attention probabilities */
    float *rel;                 /* (cap, n_heads, max_rel) q . E_r */
    float *logits;              /* (cap, vocab_size) the step's output; borrowed (the owner's) */
} model_step;

/* Scratch for steps of up to CAP items on a pool of THREADS; LOGITS
 * (cap, vocab_size) is the caller's.  Returns 0, or -1 (out of memory; nothing to free but
 * model_step_free, which a failed init leaves safe to call). */
int  model_step_init(model_step *st, const model_config *c, int cap, int threads, float *logits);
void model_step_free(model_step *st);

/* Where a prefill writes: a cache's events by slot, its keys and values
 * (n_layers, n_heads, context, d_head), the last row's logits and, when
 * SCORES is not NULL, the last row's attention in the last layer
 * (n_heads, context: by slot, as a decode leaves them). */
typedef struct model_cache {
    int *tokens;
    uint16_t *k, *v;
    float *logits;
    float *scores;
} model_cache;

/* Run state: activations and KV cache, all allocated by model_state_init;
 * prefill and decode allocate nothing. Borrows the model.
 * The cache is a ring of `context` slots per layer and head. In window
 * memory it never wraps: slot i holds the window's event i. In stream
 * memory the event fed `pos`-th since the last prefill (0-based) sits in
 * slot pos % context; once full, slot (pos-1) % context is the newest. */
typedef struct model_state {
    const model *m;
    pool *pool;                 /* n_threads workers; owned */
    model_memory memory;        /* MODEL_MEMORY_WINDOW after init; see model_state_set_memory */
    int n;                      /* events in the cache, 0..context */
    long long pos;              /* events fed since the last prefill (prefilled ones included);
                                   equals n in window memory */
    int keep;                   /* events kept when the window slides: context - context/4
                                   (context - 1 below a context of 4) */
    int n_slides;               /* times the window slid (statistics) */
    unsigned long long version; /* moves whenever the cache changes (a batch's forks
                                   of one version share its rows) */
    int *tokens;                /* (context) the cached events, by slot */
    uint16_t *k_cache;          /* (n_layers, n_heads, context, d_head) half floats: head-major,
                                   by slot */
    uint16_t *v_cache;          /* (n_layers, n_heads, context, d_head) half floats */
    float *logits;              /* (vocab_size) after the last prefill/decode */
    model_step step;            /* decode: a step of one (its logits are the state's) */
    float *scores;              /* (n_heads, context) = step.scores: each head's attention
                                   probabilities in the last decode (or a prefill's last row) */
    unsigned long long scores_version; /* the version the last decode or prefill left (scores
                                   are stale after a reset, or a batch's adopt without
                                   the sequence's last step) */
    /* prefill: a whole window */
    float *X;                   /* (context, d_model) */
    float *XB;                  /* (context, d_model) */
    float *Q;                   /* (context, d_model) */
    float *ATT;                 /* (context, d_model) */
    float *KF, *VF;             /* (context, d_model) one layer's keys and values as the cache
                                   holds them (rounded to half floats), for sgemm */
    float *H;                   /* (context, d_ff) */
    float *S;                   /* (context, context) scores of one head (causal half filled) */
    float *R;                   /* (context, min(context, max_rel)) q . E_r of one head */
    model_weights pw;           /* the weights prefill hands to sgemm, every matrix F32: the
                                   model's own where stored F32, else converted once by
                                   model_state_init into w32; pw.layers owned */
    float *w32;                 /* F16 matrices as F32 (NULL for an all-F32 model); owned */
} model_state;

/* The attention of the last decode (or of a prefill's last row): each
 * head's probabilities in the last layer, (n_heads, context) over the
 * cache's *N_KEYS slots, the newest event in slot *NEWEST; NULL when the
 * cache is empty, or was reset or took a batch's sequence whose last step
 * it does not hold since.  Borrowed: the next decode writes over it. */
const float *model_state_scores(const model_state *s, int *n_keys, int *newest);
int  model_state_init(model_state *s, const model *m, int n_threads);
void model_state_free(model_state *s);
/* Empties the cache (the memory mode stays). */
void model_state_reset(model_state *s);
/* Chooses how a full cache makes room (model_memory) and empties it. */
void model_state_set_memory(model_state *s, model_memory mem);

/* Runs TOKENS (1 <= n <= context) from an empty cache. The last row's logits
 * land in s->logits, its attention in the last layer in s->scores
 * (model_state_scores); ALL_LOGITS, when not NULL, gets all n rows (n, vocab).
 * Returns 0, or -1 for a bad argument (logged). */
int model_prefill(model_state *s, const int *tokens, int n, float *all_logits);
/* model_prefill into DST's rows instead of the state's cache (a batch's
 * sequence sliding its window): the state's scratch and pool do the work;
 * its own cache, n, pos and version are untouched. */
int model_prefill_into(model_state *s, model_cache dst, const int *tokens, int n, float *all_logits);
/* Appends TOKEN after the cached ones and returns the logits for the next
 * event (s->logits). When the cache holds `context` events, window memory
 * slides first (the last `keep` events are prefilled again, so the result
 * equals a fresh run on that window); stream memory overwrites the oldest
 * event's keys and values in place (the result equals a run of the whole
 * stream in which each event attends to itself and the context-1 before
 * it: train/model.py, window=context). Allocates nothing. */
const float *model_decode(model_state *s, int token);
/* Runs ST's items (x holds each one's embedding; k, v, slot, n_keys and
 * runs set) through every layer on S's pool: each item's key and value
 * into its cache at its slot, its logits into st->logits.  A weight row
 * is read once for all the items, and each item's logits have the bits
 * it would get alone.  Allocates nothing. */
void model_step_run(model_state *s, model_step *st);
/* Slides the window now, as model_decode does when the cache is full: the
 * last `keep` events are prefilled again (nothing happens when the cache
 * holds no more than that, or in stream memory, which never slides).  For
 * callers that have idle time now and want no slide in the next
 * context - keep decodes.  Returns 0, or -1. */
int model_slide(model_state *s);

#endif

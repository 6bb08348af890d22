/* batch.h: several sequences decoded together over one model's weights (candidate continuations): each step reads every weight once for all of them. */
#ifndef CONTINUO_BATCH_H
#define CONTINUO_BATCH_H

#include "model/model.h"

/* The most sequences a batch holds. */
#define MODEL_BATCH_MAX 16

/* Up to `cap` sequences, each with its own KV cache, events and logits,
 * that branch from one run state (their home) and decode side by side:
 * a step is model_decode's layer recipe for all of them at once
 * (model_step_run), so a weight row is read (and converted from F16) once
 * for every sequence that steps, and each sequence's logits have exactly
 * the bits model_decode would give it alone (golden tests).  The
 * sequences' memory mode is the home's.  Owned by one thread, the home's. */
typedef struct model_batch {
    model_state *home;          /* borrowed: its pool runs the batch's jobs; in window
                                   memory its prefill scratch slides a sequence's window
                                   into the sequence's own rows (model_prefill_into) */
    int cap;
    int *n;                     /* (cap) events in each cache, 0..context */
    long long *pos;             /* (cap) events fed since the cache's last prefill */
    int *tokens;                /* (cap, context) each cache's events, by slot */
    uint16_t *k_cache, *v_cache; /* (cap, n_layers, n_heads, context, d_head) half floats */
    float *logits;              /* (cap, vocab_size): each sequence's after its last step */
    /* what a sequence still shares with the home state it was forked from:
     * the rows of the home's cache it has not written over since (every
     * fork of one home version holds the same ones, read once a step for
     * all of them: attention's memory traffic does not grow with B) */
    int *forked;                /* (cap) 1 from a fork until a window slide or an adopt */
    unsigned long long *origin; /* (cap) the home's version at the fork */
    long long *origin_pos;      /* (cap) the home's pos then */
    long shared_steps;          /* steps that read the shared rows once (statistics, tests) */
    /* one step: item k is sequence seq[k]; the layers are forward.c's (model_step_run) */
    int *seq;                   /* (cap) */
    int *item;                  /* (cap) sequence i's item in the last step; -1 since its fork */
    model_step step;            /* the step's items: caches, slots, shared runs, scratch */
    float *item_logits;         /* (cap, vocab_size) the step's logits, item by item */
} model_batch;

/* A batch of CAP (1..MODEL_BATCH_MAX) sequences that branch from HOME.
 * About 2 * n_layers * context * d_model floats a sequence (4 MiB for the
 * default model).  Returns 0, or -1 (logged). */
int  model_batch_init(model_batch *b, model_state *home, int cap);
void model_batch_free(model_batch *b);

/* Sequence I becomes a copy of the home's state: its cached events, their
 * keys and values, and its logits (what the home would sample from next).
 * Copies what the cache holds, nothing is computed. */
void model_batch_fork(model_batch *b, int i);
/* The home becomes sequence I (the chosen candidate goes on from there),
 * with the attention of its last step (model_state_scores). */
void model_batch_adopt(model_batch *b, int i);

/* Appends TOKENS[k] to sequence SEQS[k], for k < N (1 <= N <= cap, each
 * sequence at most once, in any order), all in one pass over the weights.
 * A full cache makes room as model_decode's does (window memory slides
 * that sequence alone; stream memory rolls).  Each sequence's logits are
 * then model_batch_logits(b, seqs[k]).  Returns 0, or -1 (logged).
 * Allocates nothing. */
int  model_batch_decode(model_batch *b, const int *seqs, const int *tokens, int n);
/* Sequence I's logits (vocab_size) after its last step, or as forked. */
float *model_batch_logits(const model_batch *b, int i);
/* Sequence I's attention in its last step, as model_state_scores gives
 * the home's (the home's own when I has not stepped since its fork). */
const float *model_batch_scores(const model_batch *b, int i, int *n_keys, int *newest);

#endif

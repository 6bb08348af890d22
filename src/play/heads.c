/* heads.c: each head's sources of the note-ons a continuation hands out, kept while `serve` has watchers (docs/WATCH.md). */
#include <stdlib.h>

#include "model/batch.h"
#include "play/continuation.h"

void continuation_watch(continuation *c, int watch)
{
    c->own.watch = watch != 0;
}

void continuation_keep_heads(continuation *c, const note_attention *a)
{
    cont_own *o = &c->own;
    if (o->n_heads == o->cap_heads) {
        int cap = o->cap_heads ? 2 * o->cap_heads : 64;
        note_attention *p = realloc(o->heads, sizeof *p * (size_t)cap);
        if (!p)
            return;     /* a watcher misses one note's lines; the music goes on */
        o->heads = p;
        o->cap_heads = cap;
    }
    o->heads[o->n_heads++] = *a;
}

/* The decode whose odds are being sampled: the batch's step for a
 * candidate (its home's decode before its first step), else its own. */
static int last_scores(const continuation *c, attention_scores *a)
{
    if (c->s.batch)
        a->scores = model_batch_scores(c->s.batch, c->s.seq, &a->n_keys, &a->newest);
    else
        a->scores = model_state_scores(&c->own.st, &a->n_keys, &a->newest);
    return a->scores != NULL;
}

void continuation_capture_heads(continuation *c, uint32_t note, int pitch)
{
    attention_scores sc;
    note_attention a;
    if (!last_scores(c, &sc))
        return;
    attention_heads_of(&a, &sc, &c->own.st.m->cfg, c->ctx.tag, c->ctx.pos.n_hist, note, pitch);
    continuation_keep_heads(c, &a);
}

const note_attention *continuation_note_attention(continuation *c, uint32_t note)
{
    cont_own *o = &c->own;
    for (int k = 0; k < o->n_heads; k++) {
        int i = (o->i_heads + k) % o->n_heads;
        if (o->heads[i].note == note) {
            o->i_heads = i + 1;
            return &o->heads[i];
        }
    }
    return NULL;
}

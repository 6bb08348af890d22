/* fork.c: a continuation's candidates: forks of it that decode in a batch, and the home that goes on as the one chosen. */
#include "play/fork.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

int continuation_fork_init(continuation *dst, const continuation *src)
{
    memset(dst, 0, sizeof *dst);
    sampling_settings o;
    sampling_default(&o);
    int n_ids = src->own.st.m->cfg.vocab_size;
    dst->v = src->v;
    dst->own.st.m = src->own.st.m;      /* a candidate decodes in the batch, never here */
    dst->own.raw = malloc(sizeof(float) * (size_t)n_ids);
    dst->own.have_smp = sampler_init(&dst->own.smp, n_ids, &o, 1) == 0;
    if (!dst->own.raw || !dst->own.have_smp
        || context_init(&dst->ctx, src->v, src->ctx.n_ctx, src->ctx.pos.dec.max_note_s, continuation_decode_id, dst) < 0) {
        log_error("continuation: out of memory for a candidate");
        continuation_fork_free(dst);
        return -1;
    }
    return 0;
}

void continuation_fork_free(continuation *dst)
{
    context_free(&dst->ctx);
    if (dst->own.have_smp)
        sampler_free(&dst->own.smp);
    free(dst->own.raw);
    free(dst->own.sampled);
    free(dst->own.heads);
    memset(dst, 0, sizeof *dst);
}

void continuation_fork(continuation *dst, const continuation *src, model_batch *batch, int seq, uint64_t seed)
{
    dst->s = src->s;
    context_copy(&dst->ctx, &src->ctx);
    sampler_configure(&dst->own.smp, &src->s.spec.play.sampling, seed);    /* src's settings: valid */
    dst->own.n_sampled = 0;
    dst->own.watch = src->own.watch;
    dst->own.n_heads = dst->own.i_heads = 0;
    dst->s.spec.seed = seed;
    dst->s.batch = batch;
    dst->s.seq = seq;
    dst->s.queued = -1;
    dst->s.guard = 0;
    dst->s.queue = NULL;
    dst->s.loglik_model = dst->s.loglik_nudged = 0;
    model_batch_fork(batch, seq);
}

int continuation_adopt(continuation *home, const continuation *cand, const cont_event *ev, int n, int ended)
{
    home->s = cand->s;
    context_copy(&home->ctx, &cand->ctx);
    if (sampler_configure(&home->own.smp, &cand->own.smp.set, cand->own.smp.seed) < 0)
        return -1;
    home->own.smp.rng = cand->own.smp.rng;
    home->own.n_sampled = 0;
    for (int i = 0; i < cand->own.n_sampled; i++)
        continuation_remember(home, cand->own.sampled[i]);
    for (int i = 0; i < cand->own.n_heads; i++)
        continuation_keep_heads(home, &cand->own.heads[i]);
    home->s.batch = NULL;
    home->s.seq = -1;
    home->s.queued = -1;
    home->s.guard = 0;
    home->s.queue = ev;
    home->s.n_queue = n;
    home->s.i_queue = 0;
    home->s.queue_ended = ended;
    if (cand->s.queued >= 0 && !model_decode(&home->own.st, cand->s.queued))
        return -1;
    return 0;
}

/* fork.h: a continuation's candidates: forks of it that decode in a batch, and the home that goes on as the one chosen. */
#ifndef CONTINUO_PLAY_FORK_H
#define CONTINUO_PLAY_FORK_H

#include "model/batch.h"
#include "play/continuation.h"

/* DST's own part (cont_own: a sampler, the scratch logits, the ids list)
 * and a context of SRC's size, for forks of SRC; no KV cache (its batch
 * decodes).  Freed by continuation_fork_free.  0, or -1 (logged). */
int  continuation_fork_init(continuation *dst, const continuation *src);
void continuation_fork_free(continuation *dst);

/* DST becomes a candidate of SRC, just begun: SRC's state and context
 * copied into DST's own buffers, its sampler seeded SEED, its decodes in
 * sequence SEQ of BATCH (forked from SRC's model state).  With SRC's seed
 * it plays exactly what SRC would.  A duet has no candidates. */
void continuation_fork(continuation *dst, const continuation *src, model_batch *batch, int seq, uint64_t seed);

/* HOME goes on as its candidate CAND did (its batch sequence already
 * adopted into HOME's model state): state, context, sampler, ids; CAND's
 * events EV (N, borrowed until they are handed out) come first, then HOME
 * samples on unless ENDED.  0, or -1 (logged). */
int  continuation_adopt(continuation *home, const continuation *cand, const cont_event *ev, int n, int ended);

#endif

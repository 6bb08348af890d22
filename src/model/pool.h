/* pool.h: a persistent pool of worker threads that run one parallel job at a time. */
#ifndef CONTINUO_POOL_H
#define CONTINUO_POOL_H

/* A job: FN(CTX, I, N) is called once for each I in 0..N-1, where N is the
 * pool's thread count; the caller's thread runs I = 0. */
typedef void (*pool_fn)(void *ctx, int i, int n);

typedef struct pool pool;

/* A pool of N_THREADS (>= 1; the caller counts as one, so N_THREADS-1 workers
 * are started once here). Workers spin briefly after a job, then sleep on a
 * condition variable: no thread is created per job. NULL on error (logged).
 * Free with pool_free. */
pool *pool_new(int n_threads);
void  pool_free(pool *p);
/* Runs FN on every thread and returns when all are done. Allocates nothing.
 * Not reentrant: one caller thread at a time. */
void  pool_run(pool *p, pool_fn fn, void *ctx);

/* Inside a job, on every one of its threads: returns once all of them
 * have called it (the next stage reads what the others wrote).  Cheaper
 * than ending the job and starting another: each thread spins on one
 * counter (yielding now and then), and nothing is handed over.  A job
 * that calls it must call it the same number of times on every thread. */
void  pool_barrier(pool *p);

/* [lo, hi) of the I-th of N near-equal parts of [0, total), rounded to multiples of ALIGN. */
void  pool_split(int total, int i, int n, int align, int *lo, int *hi);

#endif

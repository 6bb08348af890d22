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
/* pool_run for a job of stages (pool_barrier) whose results are the same
 * bits for any N.  After one in which a thread waited at a barrier for
 * over a millisecond (a program beside us held a core, and the thread
 * waited for was off it), the next staged jobs run on the caller alone,
 * as FN(CTX, 0, 1), for a back-off that doubles while the stalls go on:
 * lockstep threads on a shared core are ten times slower than one. */
void  pool_run_staged(pool *p, pool_fn fn, void *ctx);
/* The next JOBS staged jobs run on the caller alone, as after a stall
 * (tests: the same bits either way). */
void  pool_hold_alone(pool *p, int jobs);
/* Staged jobs run so far, and how many of them the caller ran alone. */
void  pool_stats(const pool *p, long long *jobs, long long *alone);

/* Inside a job, on every one of its threads: returns once all of them
 * have called it (the next stage reads what the others wrote).  Cheaper
 * than ending the job and starting another: each thread spins on one
 * counter for a few microseconds, then sleeps until the last one arrives
 * (another program holding a core must not stall the rest), and nothing
 * is handed over.  A job
 * that calls it must call it the same number of times on every thread. */
void  pool_barrier(pool *p);

/* [lo, hi) of the I-th of N near-equal parts of [0, total), rounded to multiples of ALIGN. */
void  pool_split(int total, int i, int n, int align, int *lo, int *hi);

#endif

/* pool.c: persistent worker threads: spin-then-sleep hand-off of one job at a time. */
#include "model/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define SPIN_ROUNDS 20000   /* polls before a worker sleeps (about 100 us) */

struct pool {
    int n;                          /* threads including the caller */
    pthread_t *threads;             /* n - 1 workers */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    atomic_uint generation;         /* bumped once per job */
    atomic_int  pending;            /* workers still running the current job */
    atomic_int  sleepers;           /* workers waiting on WAKE */
    atomic_int  quit;
    pool_fn fn;                     /* the current job (published by generation) */
    void *ctx;
    int started;                    /* workers created */
    struct {                        /* pool_barrier, on a cache line of its own */
        _Alignas(64) atomic_int arrived;    /* threads at the current barrier */
        atomic_uint passed;                 /* barriers passed (moves when the last arrives) */
    } bar;
};

typedef struct worker_arg {
    pool *p;
    int index;
} worker_arg;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *arg)
{
    worker_arg wa = *(worker_arg *)arg;
    free(arg);
    pool *p = wa.p;
    unsigned seen = 0;          /* generation before the first job (pool_new runs none) */
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load(&p->generation)) == seen && !atomic_load(&p->quit)) {
            if (++spins < SPIN_ROUNDS) {
                cpu_relax();
                if ((spins & 255) == 0)
                    sched_yield();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->quit))
                pthread_cond_wait(&p->wake, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
        if (atomic_load(&p->quit))
            return NULL;
        seen = g;
        p->fn(p->ctx, wa.index, p->n);
        atomic_fetch_sub(&p->pending, 1);
    }
}

pool *pool_new(int n_threads)
{
    pool *p = NULL;
    if (posix_memalign((void **)&p, 64, sizeof *p) != 0)    /* the barrier's line aligned */
        p = NULL;
    if (p)
        memset(p, 0, sizeof *p);
    if (!p) {
        log_error("thread pool: out of memory");
        return NULL;
    }
    p->n = n_threads < 1 ? 1 : n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    if (p->n > 1) {
        p->threads = calloc((size_t)p->n - 1, sizeof *p->threads);
        if (!p->threads) {
            log_error("thread pool: out of memory");
            pool_free(p);
            return NULL;
        }
    }
    for (int i = 1; i < p->n; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        int rc = wa ? 0 : -1;
        if (wa) {
            wa->p = p;
            wa->index = i;
            rc = pthread_create(&p->threads[i - 1], NULL, worker_main, wa);
            if (rc) {
                free(wa);
                log_error("thread pool: cannot start a worker thread: %s", strerror(rc));
            }
        } else {
            log_error("thread pool: out of memory");
        }
        if (rc) {
            pool_free(p);
            return NULL;
        }
        p->started++;
    }
    return p;
}

void pool_free(pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}

void pool_run(pool *p, pool_fn fn, void *ctx)
{
    if (p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->pending, p->n - 1);
    atomic_fetch_add(&p->generation, 1);        /* publishes fn, ctx */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    fn(ctx, 0, p->n);
    int spins = 0;
    while (atomic_load(&p->pending) > 0) {
        cpu_relax();
        if ((++spins & 255) == 0)
            sched_yield();
    }
}

void pool_barrier(pool *p)
{
    if (p->n == 1)
        return;
    unsigned g = atomic_load(&p->bar.passed);
    if (atomic_fetch_add(&p->bar.arrived, 1) == p->n - 1) {
        atomic_store(&p->bar.arrived, 0);       /* before the others can arrive at the next one */
        atomic_fetch_add(&p->bar.passed, 1);
        return;
    }
    int spins = 0;
    while (atomic_load(&p->bar.passed) == g) {
        cpu_relax();
        if ((++spins & 255) == 0)
            sched_yield();
    }
}

void pool_split(int total, int i, int n, int align, int *lo, int *hi)
{
    if (align < 1)
        align = 1;
    int units = (total + align - 1) / align;
    int a = (int)((long long)units * i / n) * align, b = (int)((long long)units * (i + 1) / n) * align;
    *lo = a < total ? a : total;
    *hi = b < total ? b : total;
}

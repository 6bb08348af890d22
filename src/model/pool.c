/* pool.c: persistent worker threads: spin-then-sleep hand-off of one job at a time. */
#include "model/pool.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

#define SPIN_ROUNDS 20000   /* polls before a worker sleeps (about 100 us) */
/* Polls before a thread waiting at a barrier or for the workers sleeps.  A
 * stage is 5-50 us, so on a machine of our own the wait ends spinning; on
 * a machine where another program holds a core, the thread we wait for
 * may be off its core for a whole time slice (3 ms and more), and a
 * waiter that kept spinning would take its own core's share too: it
 * sleeps instead, and is woken by the last to arrive. */
#define WAIT_SPINS 8192
/* Jobs the caller runs alone after one in which a thread waited at a
 * barrier for over STALL_NS (another program held a core): the first back-off, doubled at each
 * stall that follows a back-off, up to the longest (a few seconds of
 * decode steps).  One thread alone never waits for one that is off its
 * core, and every job gives the same bits on any number of threads. */
#define STALL_NS 1000000    /* a barrier wait this long: a thread was off its core */
#define ALONE_MIN 32
#define ALONE_MAX 8192

struct pool {
    int n;                          /* threads including the caller */
    pthread_t *threads;             /* n - 1 workers */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    atomic_uint generation;         /* bumped once per job */
    atomic_uint pending;            /* workers still running the current job */
    atomic_int  caller_sleeps;      /* the caller sleeps on PENDING */
    atomic_int  stalled;            /* a thread slept waiting in the current job */
    int alone;                      /* jobs left to run on the caller alone */
    int backoff;                    /* ALONE for the next stall */
    int solo;                       /* the current job runs on the caller alone */
    long long jobs, jobs_alone;     /* staged jobs, and those run alone (pool_stats) */
    atomic_int  sleepers;           /* workers waiting on WAKE */
    atomic_int  quit;
    pool_fn fn;                     /* the current job (published by generation) */
    void *ctx;
    int started;                    /* workers created */
    struct {                        /* pool_barrier, on a cache line of its own */
        _Alignas(64) atomic_int arrived;    /* threads at the current barrier */
        atomic_uint passed;                 /* barriers passed (moves when the last arrives) */
        atomic_int  sleepers;               /* threads asleep on PASSED */
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

/* Sleeps while *WORD is VALUE (or until woken; the caller checks again). */
static void futex_wait(atomic_uint *word, unsigned value)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static void futex_wake(atomic_uint *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Until *WORD differs from VALUE: spins WAIT_SPINS polls, then sleeps (and
 * returns the ns it slept) with
 * *SLEEPERS counted (whoever changes WORD wakes it when SLEEPERS is not 0:
 * it changes WORD before reading SLEEPERS, and a sleeper counts itself
 * before the kernel compares WORD, so no wake-up is missed). */
static int64_t wait_change(atomic_uint *word, unsigned value, atomic_int *sleepers)
{
    for (int spins = 0; spins < WAIT_SPINS; spins++) {
        if (atomic_load(word) != value)
            return 0;
        cpu_relax();
    }
    int64_t t0 = clock_now_ns();
    atomic_fetch_add(sleepers, 1);
    while (atomic_load(word) == value)
        futex_wait(word, value);
    atomic_fetch_sub(sleepers, 1);
    return clock_now_ns() - t0;
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
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->caller_sleeps))
            futex_wake(&p->pending);
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

/* FN on every thread; with STAGED, the stall watch of pool_run_staged. */
static void run_job(pool *p, pool_fn fn, void *ctx, int staged)
{
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
    unsigned left;
    while ((left = atomic_load(&p->pending)) > 0)
        wait_change(&p->pending, left, &p->caller_sleeps);
    if (atomic_exchange(&p->stalled, 0) && staged) {
        p->alone = p->backoff > ALONE_MIN ? p->backoff : ALONE_MIN;
        p->backoff = p->alone * 2 < ALONE_MAX ? p->alone * 2 : ALONE_MAX;
    } else if (staged) {
        p->backoff = ALONE_MIN;
    }
}

void pool_run(pool *p, pool_fn fn, void *ctx)
{
    if (p->n == 1)
        fn(ctx, 0, 1);
    else
        run_job(p, fn, ctx, 0);
}

void pool_run_staged(pool *p, pool_fn fn, void *ctx)
{
    p->jobs++;
    if (p->n == 1) {
        fn(ctx, 0, 1);
    } else if (p->alone > 0) {
        p->alone--;
        p->jobs_alone++;
        p->solo = 1;
        fn(ctx, 0, 1);
        p->solo = 0;
    } else {
        run_job(p, fn, ctx, 1);
    }
}

void pool_hold_alone(pool *p, int jobs)
{
    p->alone = jobs;
}

void pool_stats(const pool *p, long long *jobs, long long *alone)
{
    *jobs = p->jobs;
    *alone = p->jobs_alone;
}

void pool_barrier(pool *p)
{
    if (p->n == 1 || p->solo)
        return;
    unsigned g = atomic_load(&p->bar.passed);
    if (atomic_fetch_add(&p->bar.arrived, 1) == p->n - 1) {
        atomic_store(&p->bar.arrived, 0);       /* before the others can arrive at the next one */
        atomic_fetch_add(&p->bar.passed, 1);
        if (atomic_load(&p->bar.sleepers))
            futex_wake(&p->bar.passed);
        return;
    }
    /* A stage's parts are even and far shorter than STALL_NS: a wait this
     * long means a thread was off its core (the caller's wait for a job's
     * end is not counted: prefill's jobs are long and uneven by nature). */
    if (wait_change(&p->bar.passed, g, &p->bar.sleepers) > STALL_NS)
        atomic_store(&p->stalled, 1);
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

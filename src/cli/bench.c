/* bench.c: `continuo bench`: C engine vs the PyTorch reference on one model file: prefill, decode by context, memory, bandwidth. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "model/batch.h"
#include "model/model.h"
#include "model/pool.h"
#include "util/clock.h"
#include "util/datafile.h"
#include "util/log.h"
#include "util/stats.h"

/* Decode is timed at 256, 1024 and 2048 events of context when the model
 * reaches them, and at the model's own context (the largest) when that is
 * none of them. */
#define N_CTX 4
static int contexts[N_CTX];
static int n_contexts;

static void pick_contexts(int model_context)
{
    static const int fixed[] = { 256, 1024, 2048 };
    n_contexts = 0;
    for (int k = 0; k < 3 && fixed[k] <= model_context; k++)
        contexts[n_contexts++] = fixed[k];
    if (model_context >= 2 && (n_contexts == 0 || contexts[n_contexts - 1] != model_context))
        contexts[n_contexts++] = model_context;
}

static const char bench_usage[] =
    "usage: continuo bench [--model FILE] [--threads N] [--events N] [--no-torch]\n"
    "Measures on one model file, in one run: prefill events/s for a 1024-event primer,\n"
    "decode events/s at contexts 256, 1024, 2048 and the model's own (KV cache; none\n"
    "beyond the model's context), peak memory, and the weight bytes read per second\n"
    "against a measured memory read bandwidth; the same for the PyTorch reference\n"
    "(/usr/bin/python3 train/bench_torch.py) with the same threads.  Then the C engine's\n"
    "batched decode of 1, 2, 4 and 8 sequences at the model's context (the candidate\n"
    "answers): events/s per sequence and in all, medians of 7 rounds that each time every\n"
    "batch size in turn, and each size against one sequence in the same round; the cost of\n"
    "8 candidates against one inside the context and past it (stream memory, once the\n"
    "forks' rows are all their own); the one-sequence step split into its kernels (one\n"
    "thread's step shared out) and the rest (hand-off, waits, serial parts).\n";

/* Batched decoding is timed for these numbers of sequences, each in turn
 * in every one of BATCH_ROUNDS rounds: a slow spell of a shared machine
 * then slows every size alike instead of one of them. */
#define N_BATCH 4
#define BATCH_ROUNDS 7
static const int batch_sizes[N_BATCH] = { 1, 2, 4, 8 };

/* Results of one side. */
typedef struct bench_result {
    double prefill_eps;         /* events/s */
    int    prefill_n;
    double decode_eps[N_CTX];   /* 0: not measured (context too small) */
    double batch_eps[N_BATCH];  /* C engine: events/s of all sequences together, at batch_context
                                   (median of the rounds) */
    double batch_gain[N_BATCH]; /* median of the rounds' batch_eps / the same round's one sequence */
    int    batch_context;
    double past_cost;           /* past the context, stream memory: a step of 8 candidates over a
                                   step of one (median of the rounds); 0 when not measured */
    double step_us, kernel_us;  /* one sequence at the model's context: a step with the threads
                                   asked for, and one thread's step over that many threads */
    double busy_eps;            /* one sequence at the model's context with a busy thread on every core */
    long long busy_jobs, busy_alone;    /* its steps, and those the pool's caller ran alone */
    long long idle_jobs, idle_alone;    /* the same, decoding on an otherwise idle machine */
    double rss_mb;
    double weight_bytes;        /* read per decoded event */
} bench_result;

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

/* ------------------------------------------------------------------ memory bandwidth */

typedef struct bw_job {
    const float *buf;
    size_t n;
    double sink[16];
} bw_job;

static void bw_read(void *ctx, int i, int n)
{
    bw_job *j = ctx;
    int lo, hi;
    pool_split((int)(j->n / 1024), i, n, 1, &lo, &hi);
    const float *p = j->buf + (size_t)lo * 1024;
    /* dot of the buffer with itself: each byte comes from memory once */
    j->sink[i] = dot_f32(p, p, (hi - lo) * 1024);
}

/* GB/s of a streaming read over 512 MiB with N threads (best of 3). */
static double measure_bandwidth(float *buf, size_t n, int threads)
{
    pool *p = pool_new(threads);
    if (!p)
        return 0;
    bw_job j = { buf, n, { 0 } };
    double best = 1e9;
    for (int r = 0; r < 3; r++) {
        double t0 = clock_now_seconds();
        pool_run(p, bw_read, &j);
        double dt = clock_now_seconds() - t0;
        best = dt < best ? dt : best;
    }
    pool_free(p);
    return (double)n * sizeof(float) / best / 1e9;
}

/* ------------------------------------------------------------------ C engine */

/* Batched decoding at the model's own context: B sequences forked from a
 * context of context - EV events, each stepped EV times together; events/s
 * of all of them, every size once a round, and each size's total over one
 * sequence's in the same round: medians of the rounds. */
static void bench_batch(model_state *s, const int *toks, int events, bench_result *r)
{
    const model_config *c = &s->m->cfg;
    int ev = events < c->context - 1 ? events : c->context - 1, seqs[8], ids[8];
    double eps[N_BATCH][BATCH_ROUNDS], gain[N_BATCH][BATCH_ROUNDS];
    model_batch b;
    if (model_batch_init(&b, s, 8) != 0)
        return;
    r->batch_context = c->context;
    for (int round = 0; round < BATCH_ROUNDS; round++)
        for (int k = 0; k < N_BATCH; k++) {
            int nb = batch_sizes[k];
            model_prefill(s, toks, c->context - ev, NULL);
            for (int i = 0; i < nb; i++)
                model_batch_fork(&b, seqs[i] = i);
            double t0 = clock_now_seconds();
            for (int e = 0; e < ev; e++) {
                for (int i = 0; i < nb; i++)
                    ids[i] = toks[(c->context - ev + e + 97 * i) % c->context];
                model_batch_decode(&b, seqs, ids, nb);
            }
            double dt = clock_now_seconds() - t0;
            eps[k][round] = (double)nb * ev / (dt > 0 ? dt : 1e-9);
            gain[k][round] = eps[k][round] / eps[0][round];
        }
    for (int k = 0; k < N_BATCH; k++) {
        r->batch_eps[k] = median_in_place(eps[k], BATCH_ROUNDS);
        r->batch_gain[k] = median_in_place(gain[k], BATCH_ROUNDS);
    }
    model_batch_free(&b);
}

/* Candidates past the context in stream memory: 8 sequences forked from
 * a full context step `context` events untimed, so that every row of their
 * caches is their own (none still shared with the home), then, by turns,
 * EV steps of sequence 0 alone and EV steps of all 8: the time of a step
 * of 8 over that of one, the median of the rounds. */
static void bench_past(model_state *s, const int *toks, int events, bench_result *r)
{
    const model_config *c = &s->m->cfg;
    int ev = events, seqs[8], ids[8];
    double cost[BATCH_ROUNDS];
    model_batch b;
    if (model_batch_init(&b, s, 8) != 0)
        return;
    model_state_set_memory(s, MODEL_MEMORY_STREAM);
    model_prefill(s, toks, c->context, NULL);
    for (int i = 0; i < 8; i++)
        model_batch_fork(&b, seqs[i] = i);
    long long t = 0;
    for (; t < c->context; t++) {
        for (int i = 0; i < 8; i++)
            ids[i] = toks[(t + 97 * i) % c->context];
        model_batch_decode(&b, seqs, ids, 8);
    }
    for (int round = 0; round < BATCH_ROUNDS; round++) {
        double dt[2];
        for (int k = 0; k < 2; k++) {
            int nb = k ? 8 : 1;
            double t0 = clock_now_seconds();
            for (int e = 0; e < ev; e++, t++) {
                for (int i = 0; i < nb; i++)
                    ids[i] = toks[(t + 97 * i) % c->context];
                model_batch_decode(&b, seqs, ids, nb);
            }
            dt[k] = clock_now_seconds() - t0;
        }
        cost[round] = dt[1] / (dt[0] > 0 ? dt[0] : 1e-9);
    }
    r->past_cost = median_in_place(cost, BATCH_ROUNDS);
    model_state_set_memory(s, MODEL_MEMORY_WINDOW);
    model_batch_free(&b);
}

/* Microseconds per one-sequence decode at the model's context on S (the
 * best of 3 runs of EV events). */
static double step_us(model_state *s, const int *toks, int ev)
{
    const model_config *c = &s->m->cfg;
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        model_prefill(s, toks, c->context - ev, NULL);
        double t0 = clock_now_seconds();
        for (int i = 0; i < ev; i++)
            model_decode(s, toks[(c->context - ev + i) % c->context]);
        double dt = clock_now_seconds() - t0;
        best = dt < best ? dt : best;
    }
    return best / ev * 1e6;
}

/* The one-sequence step split: its kernels (one thread's step shared out
 * among THREADS) and the rest (hand-off, waits, what runs on one thread). */
static void bench_split(const model *m, model_state *s, int threads, const int *toks, int events, bench_result *r)
{
    model_state one;
    int ev = events < m->cfg.context - 1 ? events : m->cfg.context - 1;
    if (model_state_init(&one, m, 1) != 0)
        return;
    double t1 = step_us(&one, toks, ev), tn = step_us(s, toks, ev);
    t1 = fmin(t1, step_us(&one, toks, ev));
    tn = fmin(tn, step_us(s, toks, ev));
    r->step_us = tn;
    r->kernel_us = t1 / threads;
    model_state_free(&one);
}

/* ------------------------------------------------------------------ a busy machine */

static atomic_int busy_stop;

static void *busy_loop(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load_explicit(&busy_stop, memory_order_relaxed))
        x++;
    return NULL;
}

/* Events/s of one sequence at context P over EV steps (the best of 3). */
static double decode_eps(model_state *s, const int *toks, int p, int ev)
{
    int ctx = s->m->cfg.context;
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        model_prefill(s, toks, p - ev, NULL);
        double t0 = clock_now_seconds();
        for (int i = 0; i < ev; i++)
            model_decode(s, toks[(p - ev + i) % ctx]);
        double dt = clock_now_seconds() - t0;
        best = dt < best ? dt : best;
    }
    return ev / best;
}

/* What a pianist's machine meets when another program (a DAW, a browser)
 * keeps every core busy: the decode at the model's context with a spinning
 * thread per core, and how many steps the pool ran on one thread. */
static void bench_busy(model_state *s, const int *toks, int events, bench_result *r)
{
    int p = s->m->cfg.context, ev = events < p - 1 ? events : p - 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_t th[64];
    int started = 0;
    long long j0, a0, j1, a1;
    pool_stats(s->pool, &j0, &a0);
    decode_eps(s, toks, p, ev);
    pool_stats(s->pool, &j1, &a1);
    r->idle_jobs = j1 - j0;
    r->idle_alone = a1 - a0;
    atomic_store(&busy_stop, 0);
    for (long k = 0; k < cores && k < 64; k++)
        if (pthread_create(&th[started], NULL, busy_loop, NULL) == 0)
            started++;
    pool_stats(s->pool, &j0, &a0);
    r->busy_eps = decode_eps(s, toks, p, ev);
    pool_stats(s->pool, &j1, &a1);
    atomic_store(&busy_stop, 1);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    r->busy_jobs = j1 - j0;
    r->busy_alone = a1 - a0;
}

static int bench_engine(const model *m, int threads, int events, bench_result *r)
{
    model_state s;
    if (model_state_init(&s, m, threads) != 0)
        return -1;
    const model_config *c = &m->cfg;
    int *toks = malloc(sizeof(int) * (size_t)c->context);
    if (!toks) {
        model_state_free(&s);
        return -1;
    }
    for (int i = 0; i < c->context; i++)
        toks[i] = 2 + (int)((unsigned)(i * 2654435761u) % (unsigned)(c->vocab_size - 2));
    int n = c->context < 1024 ? c->context : 1024;
    model_prefill(&s, toks, 16, NULL);
    double best = 1e9;
    for (int k = 0; k < 3; k++) {
        double t0 = clock_now_seconds();
        model_prefill(&s, toks, n, NULL);
        double dt = clock_now_seconds() - t0;
        best = dt < best ? dt : best;
    }
    r->prefill_n = n;
    r->prefill_eps = n / best;
    for (int k = 0; k < n_contexts; k++) {
        int p = contexts[k];
        if (p > c->context)
            continue;
        r->decode_eps[k] = decode_eps(&s, toks, p, events < p - 1 ? events : p - 1);
    }
    bench_batch(&s, toks, events, r);
    bench_past(&s, toks, events, r);
    bench_split(m, &s, threads, toks, events, r);
    bench_busy(&s, toks, events, r);
    r->weight_bytes = (double)m->w.decode_bytes;
    r->rss_mb = peak_rss_mb();
    free(toks);
    model_state_free(&s);
    return 0;
}

/* ------------------------------------------------------------------ PyTorch */

/* The PyTorch script (not installed): $CONTINUO_SRC's, the source tree
 * beside the binary, ./train/'s. */
static const datafile torch_script = {
    .name = "bench_torch.py", .env = "CONTINUO_SRC", .env_kind = DATAFILE_ENV_SOURCE_DIR,
    .source_dir = "train", .beside_binary = 1,
};

static int find_script(const char *given, char *out, size_t n)
{
    if (given) {
        snprintf(out, n, "%s", given);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    return datafile_find(&torch_script, out, n);
}

static int bench_torch(const char *script, const char *model_path, int threads, int events, bench_result *r)
{
    char cmd[2 * PATH_MAX + 256], list[64] = "";
    for (int k = 0, w = 0; k < n_contexts; k++)
        w += snprintf(list + w, sizeof list - (size_t)w, "%s%d", k ? "," : "", contexts[k]);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' '%s' --threads %d --events %d --contexts %s", script,
             model_path, threads, events, list);
    if (strchr(script, '\'') || strchr(model_path, '\'')) {
        log_error("bench: paths with quotes are not supported");
        return -1;
    }
    FILE *fp = popen(cmd, "r");
    if (!fp) {
        log_error("bench: cannot run %s", cmd);
        return -1;
    }
    char line[256];
    while (fgets(line, sizeof line, fp)) {
        int a;
        double v;
        if (sscanf(line, "prefill_eps %d %lf", &a, &v) == 2) {
            r->prefill_n = a;
            r->prefill_eps = v;
        } else if (sscanf(line, "decode_eps %d %lf", &a, &v) == 2) {
            for (int k = 0; k < n_contexts; k++)
                if (contexts[k] == a)
                    r->decode_eps[k] = v;
        } else if (sscanf(line, "rss_mb %lf", &v) == 1) {
            r->rss_mb = v;
        } else if (sscanf(line, "weight_bytes %lf", &v) == 1) {
            r->weight_bytes = v;
        }
    }
    int st = pclose(fp);
    if (st != 0 || r->prefill_eps <= 0) {
        log_error("bench: %s failed (status %d)", cmd, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ report */

/* The last column is C/PyTorch, or PyTorch/C when INVERT (times: higher is better for C). */
static void row(const char *label, double c, double t, int have_t, const char *fmt, int invert)
{
    char a[32], b[32] = "-", q[32] = "-";
    snprintf(a, sizeof a, fmt, c);
    if (have_t && t > 0) {
        snprintf(b, sizeof b, fmt, t);
        snprintf(q, sizeof q, "%.1fx", invert ? t / c : c / t);
    }
    printf("  %-44s %12s %12s %9s\n", label, a, b, q);
}

/* What the command line asks for. */
typedef struct bench_args {
    const char *model_arg, *script_arg;
    int threads, events, no_torch;
} bench_args;

/* What was measured. */
typedef struct bench_report {
    bench_result ce, te;    /* C engine, PyTorch */
    int have_t;             /* te was measured */
    double bw1, bw2;        /* memory read GB/s with 1 and with max(threads, 2) threads */
} bench_report;

/* The options into A; CLI_GO_ON, or the exit status. */
static int parse_args(int argc, char **argv, bench_args *a)
{
    *a = (bench_args){ .threads = 2, .events = 64 };
    const cli_option options[] = {
        CLI_OPT_MODEL(&a->model_arg),
        CLI_OPT_THREADS(&a->threads),
        CLI_INT("events", 0, "N", 1, 100000, &a->events, "decoded events timed per context (default 64)"),
        CLI_FILE("torch-script", 0, "PATH", &a->script_arg, "bench_torch.py (default: found beside the source tree)"),
        CLI_FLAG("no-torch", 0, &a->no_torch, "C engine only"),
        CLI_OPT_HELP,
        CLI_END
    };
    const cli_spec spec = { .name = "bench", .usage = bench_usage, .options = options };
    int n_in;
    return cli_parse(&spec, argc, argv, &n_in);
}

/* The memory read bandwidth with 1 and with max(THREADS, 2) threads. */
static void measure_bandwidths(int threads, bench_report *r)
{
    size_t n = (size_t)512 << 20 >> 2;  /* 512 MiB of floats, far beyond the caches */
    float *buf = malloc(n * sizeof(float));
    if (!buf)
        return;
    for (size_t i = 0; i < n; i++)
        buf[i] = 1.0f;
    r->bw1 = measure_bandwidth(buf, n, 1);
    r->bw2 = measure_bandwidth(buf, n, threads > 1 ? threads : 2);
    free(buf);
}

static void print_table(const bench_report *r)
{
    const bench_result *ce = &r->ce, *te = &r->te;
    char label[64];
    printf("\n  %-44s %12s %12s %9s\n", "", "C engine", "PyTorch", "C/PyTorch");
    snprintf(label, sizeof label, "prefill %d events (events/s)", ce->prefill_n);
    row(label, ce->prefill_eps, te->prefill_eps, r->have_t, "%.0f", 0);
    for (int k = 0; k < n_contexts; k++) {
        if (ce->decode_eps[k] <= 0)
            continue;
        snprintf(label, sizeof label, "decode at context %d (events/s)", contexts[k]);
        row(label, ce->decode_eps[k], te->decode_eps[k], r->have_t, "%.1f", 0);
    }
    for (int k = 0; k < n_contexts; k++) {
        if (ce->decode_eps[k] <= 0)
            continue;
        snprintf(label, sizeof label, "  ms per event at context %d (PyTorch/C)", contexts[k]);
        row(label, 1e3 / ce->decode_eps[k], te->decode_eps[k] > 0 ? 1e3 / te->decode_eps[k] : 0, r->have_t,
            "%.2f", 1);
    }
    row("peak memory, RSS (MB)", ce->rss_mb, te->rss_mb, r->have_t, "%.0f", 0);
    row("weight bytes per event (MB)", ce->weight_bytes / 1e6, te->weight_bytes / 1e6, r->have_t, "%.1f", 0);
    for (int k = 0; k < n_contexts; k++) {
        if (ce->decode_eps[k] <= 0)
            continue;
        snprintf(label, sizeof label, "weight GB/s at context %d", contexts[k]);
        row(label, ce->weight_bytes * ce->decode_eps[k] / 1e9, te->weight_bytes * te->decode_eps[k] / 1e9,
            r->have_t, "%.2f", 0);
    }
}

/* Batched decoding: events/s per sequence and in all, against one sequence
 * (the median of the rounds' ratios, so not quite the ratio of the medians). */
static void print_batch(const bench_report *r)
{
    const bench_result *ce = &r->ce;
    if (ce->batch_eps[0] <= 0)
        return;
    printf("\nbatched decode at context %d (C engine; candidates decode this way)\n", ce->batch_context);
    printf("  %-12s %16s %16s %12s\n", "sequences", "events/s each", "events/s total", "total / B=1");
    for (int k = 0; k < N_BATCH; k++)
        printf("  %-12d %16.0f %16.0f %11.2fx\n", batch_sizes[k], ce->batch_eps[k] / batch_sizes[k],
               ce->batch_eps[k], ce->batch_gain[k]);
    if (ce->batch_gain[N_BATCH - 1] > 0 && ce->past_cost > 0)
        printf("8 candidates cost x%.2f one inside the context (forks sharing the primer's rows), x%.2f past it "
               "(stream memory, every row a fork's own)\n", batch_sizes[N_BATCH - 1] / ce->batch_gain[N_BATCH - 1],
               ce->past_cost);
}

/* The bandwidth, the decode speed against its limit, and the cost of context. */
static void print_limits(const bench_report *r, int threads)
{
    const bench_result *ce = &r->ce;
    double bw = threads > 1 ? r->bw2 : r->bw1;
    printf("\nmemory read bandwidth (streaming 512 MiB): %.1f GB/s with 1 thread, %.1f GB/s with %d\n", r->bw1,
           r->bw2, threads > 1 ? threads : 2);
    if (bw > 0 && ce->decode_eps[0] > 0) {
        double limit = bw * 1e9 / ce->weight_bytes;
        printf("bandwidth limit for decode (weights only, %d thread%s): %.0f events/s; C engine at context %d "
               "reaches %.0f%% of it\n", threads, threads > 1 ? "s" : "", limit, contexts[0],
               100.0 * ce->decode_eps[0] / limit);
    }
    if (ce->step_us > 0)
        printf("one-sequence step at context %d: %.1f us with %d thread%s; its kernels %.1f us (one thread's step "
               "/ %d), hand-off, waits and serial parts %.1f us\n", contexts[n_contexts - 1], ce->step_us, threads,
               threads > 1 ? "s" : "", ce->kernel_us, threads, ce->step_us - ce->kernel_us);
    if (ce->busy_eps > 0)
        printf("with a busy thread on every core (another program): one sequence at context %d decodes %.0f "
               "events/s; steps run on one thread: %lld of %lld (idle machine: %lld of %lld)\n",
               contexts[n_contexts - 1], ce->busy_eps, ce->busy_alone, ce->busy_jobs, ce->idle_alone,
               ce->idle_jobs);
    int last = -1;
    for (int k = 0; k < n_contexts; k++)
        if (ce->decode_eps[k] > 0)
            last = k;
    if (last > 0)
        printf("cost per event from context %d to %d: x%.2f (context x%.0f)\n", contexts[0], contexts[last],
               ce->decode_eps[0] / ce->decode_eps[last], (double)contexts[last] / contexts[0]);
}

static void print_model(const model *m, const char *path, int threads)
{
    const model_config *c = &m->cfg;
    printf("model %s: %zu parameters, %d layers, d %d, %d heads, ff %d, max_rel %d, context %d, %s weights "
           "(%.1f MB)\nthreads %d, kernels %s\n", path, m->w.n_params, c->n_layers, c->d_model, c->n_heads,
           c->d_ff, c->max_rel, c->context,
           m->i8 ? "I8 (relative tables F16)" : m->f16 ? "F16" : "F32", m->w.bytes / 1e6, threads,
           kernels_level_name(kernels_level()));
    fflush(stdout);
}

int cmd_bench(int argc, char **argv)
{
    bench_args a;
    bench_report r = { 0 };
    char path[1024], script[PATH_MAX + 64];
    model m;
    int status = parse_args(argc, argv, &a);
    if (status != CLI_GO_ON)
        return status;
    if (model_resolve_path(a.model_arg, path, sizeof path) != 0)
        return 1;
    if (!a.no_torch && find_script(a.script_arg, script, sizeof script) != 0) {
        log_error("bench: cannot find train/bench_torch.py (pass --torch-script PATH or --no-torch)");
        return 1;
    }
    if (model_load(&m, path) != 0)
        return 1;
    print_model(&m, path, a.threads);
    pick_contexts(m.cfg.context);
    if (bench_engine(&m, a.threads, a.events, &r.ce) != 0) {
        model_free(&m);
        return 1;
    }
    r.have_t = !a.no_torch && bench_torch(script, path, a.threads, a.events, &r.te) == 0;
    measure_bandwidths(a.threads, &r);
    print_table(&r);
    print_batch(&r);
    print_limits(&r, a.threads);
    model_free(&m);
    return 0;
}

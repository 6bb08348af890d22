/* eval.c: `continuo eval`: negative log-likelihood of MIDI or token files under the model, in the training's eval windows or as rolling streams. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "codec/perf.h"
#include "codec/tokfile.h"
#include "codec/vocab.h"
#include "midi/smf.h"
#include "model/model.h"
#include "util/log.h"
#include "util/progress.h"

static const char eval_usage[] =
    "usage: continuo eval [--model FILE] [--memory window|stream] [--threads N] FILES...\n"
    "Scores MIDI files (.mid) or token files (.tok, from `continuo encode`) with the model;\n"
    "every event after a sequence's first is predicted once. Prints one line per file,\n"
    "then `nll <nats per event> events <count>`.  An adapted model's memory of its player\n"
    "(`continuo adapt`) is mixed into the odds as `serve` mixes it.\n";

/* Running totals over everything scored. */
typedef struct nll_sum {
    double nats;
    size_t events;
} nll_sum;

/* -log p(TARGET) under the logits ROW (V) into SUM; PAD targets are skipped. */
static void add_nll(nll_sum *sum, const float *row, int V, int target, int pad_id)
{
    if (target == pad_id)
        return;
    float mx = row[0];
    for (int k = 1; k < V; k++)
        mx = row[k] > mx ? row[k] : mx;
    double z = 0;
    for (int k = 0; k < V; k++)
        z += exp((double)row[k] - mx);
    sum->nats += log(z) + mx - row[target];
    sum->events++;
}

/* The row for the event after PREV (the sequence's events fed to F one by
 * one): the model's logits ROW, with the player's memory mixed in (into
 * SCRATCH) when the model has one and it has a run for what sounded. */
static const float *mixed_row(memory_follower *f, int prev, const float *row, float *scratch, int V)
{
    memory_follower_feed(f, prev);
    if (memory_weight(f) <= 0.0f)
        return row;
    memcpy(scratch, row, sizeof(float) * (size_t)V);
    memory_mix(f, scratch, V);
    return scratch;
}

/* Scores one sequence window by window (model.py eval_windows), or in
 * stream memory as one stream: a prefill of the first window, then one
 * decode per event, the cache rolling.  An adapted model's memory of its
 * player follows the whole sequence from its first event, as it follows
 * the context in `serve` (train/player_memory.py nll_with_memory). */
static int score_sequence(model_state *s, float *logits, int *buf, float *scratch, const uint16_t *ids, size_t n,
                          int pad_id, nll_sum *sum)
{
    const model_config *c = &s->m->cfg;
    int V = c->vocab_size;
    memory_follower f;
    memory_follower_init(&f, &s->m->player);
    size_t start = 0;
    while (start + 1 < n) {
        size_t end = start + (size_t)c->context + 1 < n ? start + (size_t)c->context + 1 : n;
        int len = (int)(end - start - 1);
        for (int i = 0; i < len; i++)
            buf[i] = ids[start + (size_t)i];
        if (model_prefill(s, buf, len, logits) != 0)
            return -1;
        for (int i = 0; i < len; i++)
            add_nll(sum, mixed_row(&f, buf[i], logits + (size_t)i * V, scratch, V), V, ids[start + (size_t)i + 1],
                    pad_id);
        if (s->memory == MODEL_MEMORY_STREAM) {
            for (size_t i = end - 1; i + 1 < n; i++) {
                const float *row = model_decode(s, ids[i]);
                if (!row)
                    return -1;
                add_nll(sum, mixed_row(&f, ids[i], row, scratch, V), V, ids[i + 1], pad_id);
            }
            break;
        }
        start = end - 1;
    }
    return 0;
}

static int check_ids(const char *path, const uint16_t *ids, size_t n, int vocab_size)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= vocab_size) {
            log_error("%s: event %zu has id %d, outside the model's vocabulary (0..%d)", path, i, ids[i],
                      vocab_size - 1);
            return -1;
        }
    return 0;
}

static int score_file(const char *path, const vocab *v, model_state *s, float *logits, int *buf, float *scratch,
                      nll_sum *sum)
{
    int pad_id = v->has_pad_eos ? 0 : -1;
    if (cli_has_suffix(path, ".tok")) {
        tokfile t;
        if (tokfile_read(path, &t) != 0)
            return -1;
        int rc = 0;
        if (strcmp(t.vocab_name, v->name) != 0 || (int)t.vocab_size != v->size) {
            log_error("%s: token file in vocabulary '%s' (%u ids), the model uses '%s' (%d ids): "
                      "re-encode it with `continuo encode --vocab %s`", path, t.vocab_name, t.vocab_size,
                      v->name, v->size, v->name);
            rc = -1;
        }
        for (uint32_t q = 0; rc == 0 && q < t.n_seqs; q++) {
            const uint16_t *ids = t.tokens + t.starts[q];
            size_t n = (size_t)(t.starts[q + 1] - t.starts[q]);
            rc = check_ids(path, ids, n, v->size);
            if (rc == 0)
                rc = score_sequence(s, logits, buf, scratch, ids, n, pad_id, sum);
        }
        tokfile_free(&t);
        return rc;
    }
    smf f;
    if (smf_read_file(path, &f) != 0)
        return -1;
    note_list notes = { 0 };
    uint16_t *ids = NULL;
    size_t n = 0;
    int rc = perf_notes_from_midi(f.events, f.n_events, &notes);
    if (rc == 0)
        rc = perf_encode(v, notes.notes, notes.n, NULL, &ids, &n);
    if (rc == 0)
        rc = score_sequence(s, logits, buf, scratch, ids, n, pad_id, sum);
    free(ids);
    note_list_free(&notes);
    smf_free(&f);
    return rc;
}

/* What the command line asks for; the files are ARGV[1..n_files]. */
typedef struct eval_args {
    const char *model_arg;
    int threads, memory;    /* memory: a model_memory */
    int n_files;
} eval_args;

/* The options into A, the files to ARGV[1..]; CLI_GO_ON, or the exit status. */
static int parse_args(int argc, char **argv, eval_args *a)
{
    *a = (eval_args){ .threads = 2, .memory = MODEL_MEMORY_WINDOW };
    const cli_option options[] = {
        CLI_OPT_MODEL(&a->model_arg),
        CLI_OPT_MEMORY(&a->memory,
                       "window (default): each sequence is cut into windows of\n"
                       "context+1 events overlapping by one (train/model.py\n"
                       "eval_windows), scored from scratch: what the model saw in\n"
                       "training.  stream: each sequence is one stream through the\n"
                       "rolling cache, as `continue` and `serve` run with memory\n"
                       "stream: the first context events as in a window, then each\n"
                       "event sees the context-1 before it, their cached states\n"
                       "computed when they came (train/model.py window=context)"),
        CLI_OPT_THREADS(&a->threads),
        CLI_OPT_HELP,
        CLI_END
    };
    const cli_spec spec = { .name = "eval", .usage = eval_usage, .options = options,
                            .min_operands = 1, .max_operands = CLI_MANY };
    int rc = cli_parse(&spec, argc, argv, &a->n_files);
    if (rc != CLI_GO_ON)
        return rc;
    return CLI_GO_ON;
}

/* Scores FILES one by one, a line each, then the total; 0 or 1. */
static int score_files(model_state *s, const vocab *v, char **files, int n_files)
{
    const model_config *c = &s->m->cfg;
    float *logits = malloc(sizeof(float) * (size_t)c->context * (size_t)c->vocab_size);
    int *buf = malloc(sizeof(int) * (size_t)c->context);
    float *scratch = malloc(sizeof(float) * (size_t)c->vocab_size);
    int status = 0;
    nll_sum total = { 0, 0 };
    progress pr;
    progress_begin(&pr, "scoring", (size_t)n_files);
    if (!logits || !buf || !scratch) {
        log_error("eval: out of memory");
        status = 1;
    }
    for (int i = 0; status == 0 && i < n_files; i++) {
        nll_sum one = { 0, 0 };
        progress_update(&pr, (size_t)i, files[i]);
        if (score_file(files[i], v, s, logits, buf, scratch, &one) != 0) {
            status = 1;
            break;
        }
        printf("%s: nll %.6f events %zu\n", files[i], one.events ? one.nats / (double)one.events : 0.0,
               one.events);
        total.nats += one.nats;
        total.events += one.events;
    }
    progress_end(&pr);
    if (status == 0 && total.events == 0) {
        log_error("eval: nothing to score (every sequence has fewer than 2 events)");
        status = 1;
    }
    if (status == 0)
        printf("nll %.6f events %zu\n", total.nats / (double)total.events, total.events);
    free(scratch);
    free(buf);
    free(logits);
    return status;
}

int cmd_eval(int argc, char **argv)
{
    eval_args a;
    model m;
    model_state s;
    const vocab *v;
    int status = parse_args(argc, argv, &a);
    if (status != CLI_GO_ON)
        return status;
    if (model_open(&m, a.model_arg, &v) != 0)
        return 1;
    if (model_state_init(&s, &m, a.threads) != 0) {
        model_free(&m);
        return 1;
    }
    model_state_set_memory(&s, (model_memory)a.memory);
    status = score_files(&s, v, argv + 1, a.n_files);
    model_state_free(&s);
    model_free(&m);
    return status;
}

/* model.c: loads a model file (checks every key and tensor) and builds/frees the run state. */
#include "model/model.h"

#include <cblas.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "codec/vocab.h"
#include "util/datafile.h"
#include "util/log.h"

#define ARCH "continuo-music-transformer"
#define REGEN "; regenerate the file with train/export.py (models/FORMAT.md, \"Regenerating\")"

/* A required unsigned hyperparameter in [1, max]. */
static int get_uint(const gguf_file *f, const char *key, int max, int *out)
{
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) {
        log_error("%s: metadata key '%s' is missing" REGEN, f->path, key);
        return -1;
    }
    if (kv->type != GGUF_TYPE_UINT32 && kv->type != GGUF_TYPE_UINT64
        && kv->type != GGUF_TYPE_INT32 && kv->type != GGUF_TYPE_INT64) {
        log_error("%s: byte %" PRIu64 ": metadata key '%s' has type %s, expected an integer" REGEN,
                  f->path, kv->file_offset, key, gguf_type_name(kv->type));
        return -1;
    }
    if (kv->i < 0 || kv->i > max) {
        log_error("%s: byte %" PRIu64 ": metadata key '%s' is %" PRId64 ", expected 0..%d" REGEN,
                  f->path, kv->file_offset, key, kv->i, max);
        return -1;
    }
    *out = (int)kv->i;
    return 0;
}

static const char *get_str(const gguf_file *f, const char *key)
{
    const gguf_kv *kv = gguf_find_kv(f, key);
    return kv && kv->type == GGUF_TYPE_STRING ? kv->str : NULL;
}

/* Finds tensor NAME with row-major shape (d0, d1[, d2]) (d2 = 0: 2-D, d1 = 0: 1-D);
 * F32_ONLY restricts the type. */
static const gguf_tensor *get_tensor(const gguf_file *f, const char *name, int f32_only,
                                     int d0, int d1, int d2)
{
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        log_error("%s: tensor '%s' is missing" REGEN, f->path, name);
        return NULL;
    }
    uint32_t nd = d1 == 0 ? 1 : d2 == 0 ? 2 : 3;
    uint64_t want[3];   /* GGUF order: innermost first */
    if (nd == 1) { want[0] = (uint64_t)d0; }
    else if (nd == 2) { want[0] = (uint64_t)d1; want[1] = (uint64_t)d0; }
    else { want[0] = (uint64_t)d2; want[1] = (uint64_t)d1; want[2] = (uint64_t)d0; }
    int ok = t->n_dims == nd;
    for (uint32_t k = 0; ok && k < nd; k++)
        ok = t->dims[k] == want[k];
    if (!ok) {
        char got[96] = "", exp[96] = "";
        size_t gl = 0, el = 0;
        for (uint32_t k = 0; k < t->n_dims && gl < sizeof got - 24; k++)
            gl += (size_t)snprintf(got + gl, sizeof got - gl, "%s%" PRIu64, k ? ", " : "", t->dims[k]);
        for (uint32_t k = 0; k < nd; k++)
            el += (size_t)snprintf(exp + el, sizeof exp - el, "%s%" PRIu64, k ? ", " : "", want[k]);
        log_error("%s: byte %" PRIu64 ": tensor '%s' has dims [%s], expected [%s] (innermost first) "
                  "for the hyperparameters in the file" REGEN, f->path, t->info_offset, name, got, exp);
        return NULL;
    }
    if (t->type != GGML_TYPE_F32 && (f32_only || (t->type != GGML_TYPE_F16 && t->type != GGML_TYPE_I8))) {
        log_error("%s: byte %" PRIu64 ": tensor '%s' has type %s, expected %s" REGEN, f->path,
                  t->info_offset, name, ggml_type_name(t->type), f32_only ? "F32" : "F32, F16 or I8");
        return NULL;
    }
    return t;
}

static int get_vec(const gguf_file *f, const char *name, int n, const float **out)
{
    const gguf_tensor *t = get_tensor(f, name, 1, n, 0, 0);
    if (!t)
        return -1;
    *out = t->data;
    return 0;
}

/* Matrix NAME ("X.weight"); an I8 one comes with its rows' scales, the
 * F32 vector "X.scale" (models/FORMAT.md). */
static int get_mat(const gguf_file *f, const char *name, int rows, int cols, matrix *out)
{
    const gguf_tensor *t = get_tensor(f, name, 0, rows, cols, 0);
    if (!t)
        return -1;
    *out = (matrix){ t->data, (int)t->type, rows, cols, NULL };
    if (t->type != GGML_TYPE_I8)
        return 0;
    char sname[96];
    size_t n = strlen(name), suffix = strlen(".weight");
    if (n < suffix || n - suffix + sizeof ".scale" > sizeof sname) {
        log_error("%s: tensor '%s': an I8 matrix's name must end in .weight" REGEN, f->path, name);
        return -1;
    }
    snprintf(sname, sizeof sname, "%.*s.scale", (int)(n - suffix), name);
    return get_vec(f, sname, rows, &out->scale);
}

static size_t mat_bytes(const matrix *m)
{
    size_t n = (size_t)m->rows * (size_t)m->cols;
    return m->type == GGML_TYPE_I8 ? n + 4 * (size_t)m->rows : n * (m->type == GGML_TYPE_F16 ? 2 : 4);
}

/* The transformer's hyperparameters (continuo.*), checked for range. */
static int load_hparams(model *m)
{
    const gguf_file *f = &m->file;
    model_config *c = &m->cfg;
    if (get_uint(f, "continuo.n_layers", 256, &c->n_layers) || get_uint(f, "continuo.d_model", 16384, &c->d_model)
        || get_uint(f, "continuo.n_heads", 1024, &c->n_heads) || get_uint(f, "continuo.d_ff", 65536, &c->d_ff)
        || get_uint(f, "continuo.max_rel", 65536, &c->max_rel) || get_uint(f, "continuo.context", 65536, &c->context)
        || get_uint(f, "continuo.vocab_size", 65536, &c->vocab_size))
        return -1;
    if (c->n_layers < 1 || c->d_model < 1 || c->n_heads < 1 || c->d_ff < 1 || c->max_rel < 1
        || c->context < 2 || c->vocab_size < 2 || c->d_model % c->n_heads != 0) {
        log_error("%s: hyperparameters out of range (n_layers %d, d_model %d, n_heads %d, d_ff %d, "
                  "max_rel %d, context %d, vocab_size %d; d_model must be a multiple of n_heads)" REGEN,
                  f->path, c->n_layers, c->d_model, c->n_heads, c->d_ff, c->max_rel, c->context, c->vocab_size);
        return -1;
    }
    c->d_head = c->d_model / c->n_heads;
    c->ln_eps = 1e-5f;
    const gguf_kv *eps = gguf_find_kv(f, "continuo.layer_norm_eps");
    if (eps && (eps->type == GGUF_TYPE_FLOAT32 || eps->type == GGUF_TYPE_FLOAT64) && eps->f > 0 && eps->f < 1)
        c->ln_eps = (float)eps->f;
    return 0;
}

/* The vocabulary the model was trained on (continuo.vocab.*); its size must
 * match the hyperparameters'. */
static int load_vocab_layout(model *m)
{
    const gguf_file *f = &m->file;
    model_vocab *v = &m->vocab;
    const char *vname = get_str(f, "continuo.vocab.name");
    if (!vname) {
        log_error("%s: metadata key 'continuo.vocab.name' is missing or not a string" REGEN, f->path);
        return -1;
    }
    snprintf(v->name, sizeof v->name, "%s", vname);
    if (get_uint(f, "continuo.vocab.size", 65536, &v->size)
        || get_uint(f, "continuo.vocab.has_pad_eos", 1, &v->has_pad_eos)
        || get_uint(f, "continuo.vocab.min_pitch", 127, &v->min_pitch)
        || get_uint(f, "continuo.vocab.max_pitch", 127, &v->max_pitch)
        || get_uint(f, "continuo.vocab.n_time_shifts", 65536, &v->n_time_shifts)
        || get_uint(f, "continuo.vocab.step_ms", 65536, &v->step_ms)
        || get_uint(f, "continuo.vocab.n_velocity_bins", 128, &v->n_velocity_bins)
        || get_uint(f, "continuo.vocab.note_on_base", 65536, &v->note_on_base)
        || get_uint(f, "continuo.vocab.note_off_base", 65536, &v->note_off_base)
        || get_uint(f, "continuo.vocab.time_shift_base", 65536, &v->time_shift_base)
        || get_uint(f, "continuo.vocab.velocity_base", 65536, &v->velocity_base))
        return -1;
    if (v->size != m->cfg.vocab_size) {
        log_error("%s: continuo.vocab.size %d differs from continuo.vocab_size %d" REGEN, f->path,
                  v->size, m->cfg.vocab_size);
        return -1;
    }
    return 0;
}

/* Where the weights came from (continuo.provenance.*); every key optional. */
static void load_provenance(model *m)
{
    const gguf_file *f = &m->file;
    model_provenance *p = &m->prov;
    p->data = get_str(f, "continuo.provenance.data");
    p->date = get_str(f, "continuo.provenance.date");
    p->command = get_str(f, "continuo.provenance.command");
    const gguf_kv *kv = gguf_find_kv(f, "continuo.provenance.steps");
    p->steps = kv && kv->type != GGUF_TYPE_STRING && kv->type != GGUF_TYPE_ARRAY ? (long long)kv->i : -1;
    kv = gguf_find_kv(f, "continuo.provenance.valid_nll");
    p->valid_nll = kv && kv->type != GGUF_TYPE_STRING && kv->type != GGUF_TYPE_ARRAY ? kv->f : NAN;
}

static int load_config(model *m)
{
    const gguf_file *f = &m->file;
    const char *arch = get_str(f, "general.architecture");
    if (!arch || strcmp(arch, ARCH) != 0) {
        log_error("%s: general.architecture is %s%s%s, expected \"" ARCH "\"" REGEN, f->path,
                  arch ? "\"" : "", arch ? arch : "missing", arch ? "\"" : "");
        return -1;
    }
    if (load_hparams(m) < 0 || load_vocab_layout(m) < 0)
        return -1;
    load_provenance(m);
    m->name = get_str(f, "general.name");
    if (!m->name)
        m->name = "";
    return 0;
}

static int load_weights(model *m)
{
    const gguf_file *f = &m->file;
    const model_config *c = &m->cfg;
    model_weights *w = &m->w;
    int d = c->d_model;
    char name[64];
    w->layers = calloc((size_t)c->n_layers, sizeof *w->layers);
    if (!w->layers) {
        log_error("%s: out of memory", f->path);
        return -1;
    }
    if (get_mat(f, "token_embd.weight", c->vocab_size, d, &w->token_embd)
        || get_vec(f, "output_norm.weight", d, &w->out_norm_w) || get_vec(f, "output_norm.bias", d, &w->out_norm_b))
        return -1;
    size_t vec_bytes = 4 * (size_t)(2 * d);
    w->decode_bytes = mat_bytes(&w->token_embd) + vec_bytes;
    w->bytes = w->decode_bytes;
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *L = &w->layers[l];
#define NM(s) (snprintf(name, sizeof name, "blk.%d." s, l), name)
        if (get_vec(f, NM("attn_norm.weight"), d, &L->attn_norm_w) || get_vec(f, NM("attn_norm.bias"), d, &L->attn_norm_b)
            || get_mat(f, NM("attn_q.weight"), d, d, &L->wq) || get_mat(f, NM("attn_k.weight"), d, d, &L->wk)
            || get_mat(f, NM("attn_v.weight"), d, d, &L->wv) || get_mat(f, NM("attn_output.weight"), d, d, &L->wo)
            || get_vec(f, NM("ffn_norm.weight"), d, &L->ffn_norm_w) || get_vec(f, NM("ffn_norm.bias"), d, &L->ffn_norm_b)
            || get_mat(f, NM("ffn_up.weight"), c->d_ff, d, &L->w_up) || get_vec(f, NM("ffn_up.bias"), c->d_ff, &L->b_up)
            || get_mat(f, NM("ffn_down.weight"), d, c->d_ff, &L->w_down) || get_vec(f, NM("ffn_down.bias"), d, &L->b_down))
            return -1;
        const gguf_tensor *t = get_tensor(f, NM("attn_rel.weight"), 0, c->n_heads, c->max_rel, c->d_head);
#undef NM
        if (!t)
            return -1;
        if (t->type == GGML_TYPE_I8) {
            log_error("%s: byte %" PRIu64 ": tensor '%s' has type I8, expected F32 or F16 (the relative "
                      "tables have no scales)" REGEN, f->path, t->info_offset, t->name);
            return -1;
        }
        L->er = (matrix){ t->data, (int)t->type, c->n_heads * c->max_rel, c->d_head, NULL };
        size_t b = mat_bytes(&L->wq) + mat_bytes(&L->wk) + mat_bytes(&L->wv) + mat_bytes(&L->wo)
                   + mat_bytes(&L->w_up) + mat_bytes(&L->w_down) + 4 * (size_t)(5 * d + c->d_ff);
        w->bytes += b + mat_bytes(&L->er);
        w->decode_bytes += b;   /* E_r: only min(position, max_rel) rows are read, counted apart */
        const matrix *all[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->w_up, &L->w_down, &L->er };
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
            m->f16 |= all[k]->type == GGML_TYPE_F16;
            m->i8 |= all[k]->type == GGML_TYPE_I8;
        }
    }
    m->f16 |= w->token_embd.type == GGML_TYPE_F16;
    m->i8 |= w->token_embd.type == GGML_TYPE_I8;
    w->n_params = (size_t)c->vocab_size * d + 2 * (size_t)d
                  + (size_t)c->n_layers * (4 * (size_t)d * d + (size_t)c->n_heads * c->max_rel * c->d_head
                                           + 2 * (size_t)d * c->d_ff + 5 * (size_t)d + (size_t)c->d_ff);
    return 0;
}

/* A required float setting in [lo, hi]. */
static int get_float(const gguf_file *f, const char *key, double lo, double hi, float *out)
{
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv || (kv->type != GGUF_TYPE_FLOAT32 && kv->type != GGUF_TYPE_FLOAT64) || !(kv->f >= lo && kv->f <= hi)) {
        log_error("%s: metadata key '%s' is %s, expected a float in %g..%g" REGEN, f->path, key,
                  !kv ? "missing" : kv->type != GGUF_TYPE_FLOAT32 && kv->type != GGUF_TYPE_FLOAT64 ? "not a float"
                                                                                                  : "out of range",
                  lo, hi);
        return -1;
    }
    *out = (float)kv->f;
    return 0;
}

/* The player's memory of an adapted model (player.pitches, continuo.memory.*;
 * models/FORMAT.md): built now, or none when the file has no such tensor. */
static int load_player(model *m)
{
    const gguf_file *f = &m->file;
    const gguf_tensor *t = gguf_find_tensor(f, "player.pitches");
    if (!t)
        return 0;
    if (t->type != GGML_TYPE_I32 || t->n_dims != 1) {
        log_error("%s: byte %" PRIu64 ": tensor 'player.pitches' has type %s and %u dims, expected I32 and 1"
                  REGEN, f->path, t->info_offset, ggml_type_name(t->type), t->n_dims);
        return -1;
    }
    int kmin, kmax;
    float lambda, decay;
    if (get_uint(f, "continuo.memory.kmin", MEMORY_KMAX_LIMIT, &kmin)
        || get_uint(f, "continuo.memory.kmax", MEMORY_KMAX_LIMIT, &kmax)
        || get_float(f, "continuo.memory.lambda", 0, 0.99, &lambda)
        || get_float(f, "continuo.memory.decay", 0, 1, &decay))
        return -1;
    if (kmin < 1 || kmin > kmax) {
        log_error("%s: the player's memory's runs are %d..%d note-ons long, expected 1 <= kmin <= kmax" REGEN,
                  f->path, kmin, kmax);
        return -1;
    }
    int n_pitches = m->vocab.max_pitch - m->vocab.min_pitch + 1;
    const int32_t *p = t->data;
    for (uint64_t i = 0; i < t->n_elems; i++)
        if (p[i] < -1 || p[i] >= n_pitches) {
            log_error("%s: byte %" PRIu64 ": player.pitches[%" PRIu64 "] is %d, expected a pitch 0..%d of the "
                      "layout or -1 (a session's end)" REGEN, f->path, t->file_offset + 4 * i, i, (int)p[i],
                      n_pitches - 1);
            return -1;
        }
    if (player_memory_build(&m->player, p, (size_t)t->n_elems, m->vocab.note_on_base, n_pitches, kmin, kmax, lambda,
                            decay) != 0)
        return -1;
    log_info("%s: a memory of the player: %zu note-ons (continuo adapt; runs of %d..%d, weight %.2f)", f->path,
             m->player.n_notes, kmin, kmax, lambda);
    return 0;
}

int model_load(model *m, const char *path)
{
    memset(m, 0, sizeof *m);
    if (gguf_open(&m->file, path, REGEN))
        return -1;
    if (load_config(m) || load_weights(m) || load_player(m)) {
        model_free(m);
        return -1;
    }
    return 0;
}

void model_free(model *m)
{
    if (!m)
        return;
    free(m->w.layers);
    player_memory_free(&m->player);
    gguf_close(&m->file);
    memset(m, 0, sizeof *m);
}

/* The default model: $CONTINUO_MODEL (the file), the installed one, ./models/'s. */
static const datafile default_model = {
    .name = "continuo-default.gguf", .env = "CONTINUO_MODEL", .env_kind = DATAFILE_ENV_FILE,
    .source_dir = "models", .installed = 1,
};

int model_find_default(char *out, size_t n)
{
    return datafile_find(&default_model, out, n);
}

int model_resolve_path(const char *explicit_path, char *out, size_t n)
{
    if (explicit_path) {
        snprintf(out, n, "%s", explicit_path);
        return 0;
    }
    if (model_find_default(out, n) == 0)
        return 0;
    char cands[DATAFILE_MAX_PLACES][DATAFILE_PATH_MAX];
    int nc = datafile_places(&default_model, cands);
    log_error("no model file: tried %s%s%s%s and %s; pass --model FILE or set CONTINUO_MODEL "
              "(make one with train/train.py, or a random one with train/export.py --random)",
              nc == 3 ? "$CONTINUO_MODEL=" : "", nc == 3 ? cands[0] : "", nc == 3 ? ", " : "",
              cands[nc - 2], cands[nc - 1]);
    return -1;
}

int model_check_vocab(const model *m, const vocab *v)
{
    const model_vocab *a = &m->vocab;
    if (strcmp(a->name, v->name) != 0 || a->size != v->size || a->has_pad_eos != v->has_pad_eos
        || a->min_pitch != v->min_pitch || a->max_pitch != v->max_pitch
        || a->n_time_shifts != v->n_time_shifts || a->step_ms != v->step_ms
        || a->n_velocity_bins != v->n_velocity_bins || a->note_on_base != v->note_on_base
        || a->note_off_base != v->note_off_base || a->time_shift_base != v->time_shift_base
        || a->velocity_base != v->velocity_base) {
        log_error("%s: the model's vocabulary '%s' (%d ids, bases %d/%d/%d/%d) does not match this "
                  "build's layout '%s' (%d ids, bases %d/%d/%d/%d)", m->file.path, a->name, a->size,
                  a->note_on_base, a->note_off_base, a->time_shift_base, a->velocity_base, v->name,
                  v->size, v->note_on_base, v->note_off_base, v->time_shift_base, v->velocity_base);
        return -1;
    }
    return 0;
}

int model_open(model *m, const char *explicit_path, const vocab **v)
{
    char path[1024];
    if (model_resolve_path(explicit_path, path, sizeof path) != 0 || model_load(m, path) != 0)
        return -1;
    *v = vocab_find(m->vocab.name);
    if (!*v)
        log_error("%s: vocabulary '%s' is unknown to this build", path, m->vocab.name);
    if (!*v || model_check_vocab(m, *v) != 0) {
        model_free(m);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ run state */

#define HUGE_PAGE ((size_t)2 << 20)     /* x86-64's transparent huge page */

float *model_alloc_floats(size_t n, int *fail)
{
    if (n == 0)
        n = 1;
    size_t bytes = n * sizeof(float);
    int huge = bytes >= MODEL_HUGE_BYTES;
    float *p = NULL;
    if (posix_memalign((void **)&p, huge ? HUGE_PAGE : 64, bytes) != 0) {
        *fail = 1;
        return NULL;
    }
    if (huge)       /* a hint: where transparent huge pages are off, 4 KiB pages as before */
        madvise(p, bytes, MADV_HUGEPAGE);
    memset(p, 0, bytes);    /* resident from the start: no page faults in the first steps */
    return p;
}

uint16_t *model_alloc_halves(size_t n, int *fail)
{
    return (uint16_t *)model_alloc_floats((n + 1) / 2, fail);
}

int model_step_init(model_step *st, const model_config *c, int cap, int threads, float *logits)
{
    memset(st, 0, sizeof *st);
    threads = threads < 1 ? 1 : threads;
    size_t B = (size_t)cap, d = (size_t)c->d_model, H = (size_t)c->n_heads;
    int fail = 0;
    st->cap = cap;
    st->threads = threads;
    st->logits = logits;
    st->k = calloc(B, sizeof *st->k);
    st->v = calloc(B, sizeof *st->v);
    st->slot = calloc(B, sizeof *st->slot);
    st->n_keys = calloc(B, sizeof *st->n_keys);
    fail |= !st->k || !st->v || !st->slot || !st->n_keys;
    float **rows[] = { &st->x, &st->q, &st->kn, &st->vn, &st->att };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++)
        *rows[k] = model_alloc_floats(B * d, &fail);
    st->xb = model_alloc_floats((size_t)threads * B * d, &fail);
    st->hb = model_alloc_floats(B * (size_t)c->d_ff, &fail);
    st->scores = model_alloc_floats(B * H * (size_t)c->context, &fail);
    st->rel = model_alloc_floats(B * H * (size_t)c->max_rel, &fail);
    return fail ? -1 : 0;
}

void model_step_free(model_step *st)
{
    float *bufs[] = { st->x, st->xb, st->q, st->kn, st->vn, st->att, st->hb, st->scores, st->rel };
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        free(bufs[k]);
    free(st->k);
    free(st->v);
    free(st->slot);
    free(st->n_keys);
    memset(st, 0, sizeof *st);
}

/* Number of floats M needs as F32 when it is stored as F16 or I8, else 0. */
static size_t converted_floats(const matrix *m)
{
    return m->type != GGML_TYPE_F32 ? (size_t)m->rows * (size_t)m->cols : 0;
}

/* OUT = M as an F32 matrix: M itself when it is F32, else converted into *SLAB
 * (which advances). */
static void to_f32_matrix(matrix *out, const matrix *m, float **slab)
{
    *out = *m;
    if (m->type == GGML_TYPE_F32)
        return;
    matrix_to_f32(*slab, m);
    out->data = *slab;
    out->type = GGML_TYPE_F32;
    out->scale = NULL;
    *slab += converted_floats(m);
}

/* s->pw: the weights for prefill's sgemm, all F32; F16 and I8 ones converted once
 * (a prefill used to convert every matrix again each time). */
static int prefill_weights_init(model_state *s, int *fail)
{
    const model *m = s->m;
    const model_weights *w = &m->w;
    s->pw = *w;
    s->pw.layers = calloc((size_t)m->cfg.n_layers, sizeof *s->pw.layers);
    if (!s->pw.layers) {
        *fail = 1;
        return -1;
    }
    size_t n = converted_floats(&w->token_embd);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const layer_weights *L = &w->layers[l];
        n += converted_floats(&L->wq) + converted_floats(&L->wk) + converted_floats(&L->wv) + converted_floats(&L->wo)
             + converted_floats(&L->er) + converted_floats(&L->w_up) + converted_floats(&L->w_down);
    }
    if (n > 0) {
        s->w32 = model_alloc_floats(n, fail);
        if (!s->w32)
            return -1;
    }
    float *slab = s->w32;
    to_f32_matrix(&s->pw.token_embd, &w->token_embd, &slab);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const layer_weights *L = &w->layers[l];
        layer_weights *P = &s->pw.layers[l];
        *P = *L;
        to_f32_matrix(&P->wq, &L->wq, &slab);
        to_f32_matrix(&P->wk, &L->wk, &slab);
        to_f32_matrix(&P->wv, &L->wv, &slab);
        to_f32_matrix(&P->wo, &L->wo, &slab);
        to_f32_matrix(&P->er, &L->er, &slab);
        to_f32_matrix(&P->w_up, &L->w_up, &slab);
        to_f32_matrix(&P->w_down, &L->w_down, &slab);
    }
    return 0;
}

int model_state_init(model_state *s, const model *m, int n_threads)
{
    memset(s, 0, sizeof *s);
    const model_config *c = &m->cfg;
    s->m = m;
    s->memory = MODEL_MEMORY_WINDOW;
    s->keep = c->context - (c->context >= 4 ? c->context / 4 : 1);   /* a slide frees a slot at least */
    size_t C = (size_t)c->context, d = (size_t)c->d_model, L = (size_t)c->n_layers;
    size_t mr = (size_t)(c->max_rel < c->context ? c->max_rel : c->context);
    int fail = 0;
    s->tokens = calloc(C, sizeof *s->tokens);
    fail |= !s->tokens;
    s->k_cache = model_alloc_halves(L * C * d, &fail);
    s->v_cache = model_alloc_halves(L * C * d, &fail);
    s->logits = model_alloc_floats((size_t)c->vocab_size, &fail);
    if (!fail && model_step_init(&s->step, c, 1, n_threads, s->logits) != 0)
        fail = 1;
    s->scores = s->step.scores;
    s->X = model_alloc_floats(C * d, &fail);
    s->XB = model_alloc_floats(C * d, &fail);
    s->Q = model_alloc_floats(C * d, &fail);
    s->ATT = model_alloc_floats(C * d, &fail);
    s->KF = model_alloc_floats(C * d, &fail);
    s->VF = model_alloc_floats(C * d, &fail);
    s->H = model_alloc_floats(C * (size_t)c->d_ff, &fail);
    s->S = model_alloc_floats(C * C, &fail);
    s->R = model_alloc_floats(C * mr, &fail);
    if (!fail)
        prefill_weights_init(s, &fail);
    if (fail) {
        log_error("%s: out of memory for the run state (context %d)", m->file.path, c->context);
        model_state_free(s);
        return -1;
    }
    s->pool = pool_new(n_threads);
    if (!s->pool) {
        model_state_free(s);
        return -1;
    }
    openblas_set_num_threads(1);    /* the pool splits prefill's products (forward.c) */
    return 0;
}

void model_state_free(model_state *s)
{
    if (!s)
        return;
    pool_free(s->pool);
    model_step_free(&s->step);
    void *bufs[] = { s->k_cache, s->v_cache, s->logits, s->X, s->XB, s->Q, s->ATT, s->KF, s->VF, s->H, s->S, s->R,
                     s->w32 };
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        free(bufs[k]);
    free(s->pw.layers);
    free(s->tokens);
    memset(s, 0, sizeof *s);
}

void model_state_reset(model_state *s)
{
    s->n = 0;
    s->pos = 0;
    s->version++;
}

void model_state_set_memory(model_state *s, model_memory mem)
{
    s->memory = mem;
    model_state_reset(s);
}

const char *model_memory_name(model_memory mem)
{
    return mem == MODEL_MEMORY_STREAM ? "stream" : "window";
}

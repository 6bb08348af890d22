/* gguf.c: maps a GGUF v3 file and checks every byte count before anything is read. */
#include "model/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

/* Logs one error about F, followed by F's hint (how to regenerate the file). */
#define gerr(f, fmt, ...) log_error(fmt "%s", __VA_ARGS__, (f)->hint ? (f)->hint : "")

#define GGUF_MAX_KVS      (1u << 16)
#define GGUF_MAX_TENSORS  (1u << 16)
#define GGUF_MAX_STRING   (1u << 20)
#define GGUF_MAX_ARRAY    (1u << 24)

/* A bounds-checked read position in the mapping. */
typedef struct cursor {
    const gguf_file *f;
    uint64_t pos;
} cursor;

static int need(cursor *c, uint64_t n, const char *what)
{
    if (c->pos > c->f->size || n > c->f->size - c->pos) {
        gerr(c->f, "%s: byte %" PRIu64 ": file ends inside %s (file is %zu bytes): truncated",
                  c->f->path, c->pos, what, c->f->size);
        return -1;
    }
    return 0;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what)
{
    if (need(c, 4, what))
        return -1;
    memcpy(v, c->f->map + c->pos, 4);   /* the format and the host are little-endian */
    c->pos += 4;
    return 0;
}

static int rd_u64(cursor *c, uint64_t *v, const char *what)
{
    if (need(c, 8, what))
        return -1;
    memcpy(v, c->f->map + c->pos, 8);
    c->pos += 8;
    return 0;
}

/* A length-prefixed string, copied and NUL-terminated (NULL OUT: skipped). */
static int rd_string(cursor *c, char **out, const char *what)
{
    uint64_t at = c->pos, n;
    if (rd_u64(c, &n, what))
        return -1;
    if (n > GGUF_MAX_STRING) {
        gerr(c->f, "%s: byte %" PRIu64 ": %s has length %" PRIu64 " (limit %u): corrupt",
                  c->f->path, at, what, n, GGUF_MAX_STRING);
        return -1;
    }
    if (need(c, n, what))
        return -1;
    if (out) {
        char *s = malloc(n + 1);
        if (!s) {
            log_error("%s: out of memory reading %s", c->f->path, what);
            return -1;
        }
        memcpy(s, c->f->map + c->pos, n);
        s[n] = '\0';
        if (strlen(s) != n) {
            gerr(c->f, "%s: byte %" PRIu64 ": %s contains a NUL byte: corrupt", c->f->path, at, what);
            free(s);
            return -1;
        }
        *out = s;
    }
    c->pos += n;
    return 0;
}

static const uint8_t scalar_size[GGUF_TYPE_COUNT] = {
    [GGUF_TYPE_UINT8] = 1, [GGUF_TYPE_INT8] = 1, [GGUF_TYPE_UINT16] = 2, [GGUF_TYPE_INT16] = 2,
    [GGUF_TYPE_UINT32] = 4, [GGUF_TYPE_INT32] = 4, [GGUF_TYPE_FLOAT32] = 4, [GGUF_TYPE_BOOL] = 1,
    [GGUF_TYPE_UINT64] = 8, [GGUF_TYPE_INT64] = 8, [GGUF_TYPE_FLOAT64] = 8,
};

const char *gguf_type_name(uint32_t type)
{
    static const char *names[GGUF_TYPE_COUNT] = {
        "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL",
        "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64" };
    return type < GGUF_TYPE_COUNT ? names[type] : "unknown";
}

const char *ggml_type_name(uint32_t type)
{
    switch (type) {
    case GGML_TYPE_F32: return "F32";
    case GGML_TYPE_F16: return "F16";
    case GGML_TYPE_I8:  return "I8";
    case GGML_TYPE_I32: return "I32";
    case 30:            return "BF16";
    default:            return "unsupported";
    }
}

/* A float as an integer without undefined behaviour: NaN gives 0, values
 * beyond int64_t saturate (so a range check on kv->i still rejects them). */
static int64_t float_to_i64(double x)
{
    if (x != x)
        return 0;
    if (x >= 9223372036854775807.0)
        return INT64_MAX;
    if (x <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)x;
}

/* Reads a scalar number of TYPE into KV's u/i/f. */
static void set_number(gguf_kv *kv, uint32_t type, const uint8_t *p)
{
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
    uint64_t u64; int64_t i64; float f32; double f64;
    switch (type) {
    case GGUF_TYPE_UINT8:  case GGUF_TYPE_BOOL: memcpy(&u8, p, 1); kv->u = u8; kv->i = u8; kv->f = u8; break;
    case GGUF_TYPE_INT8:   memcpy(&i8, p, 1);  kv->i = i8;  kv->u = (uint64_t)i8;  kv->f = i8;  break;
    case GGUF_TYPE_UINT16: memcpy(&u16, p, 2); kv->u = u16; kv->i = u16; kv->f = u16; break;
    case GGUF_TYPE_INT16:  memcpy(&i16, p, 2); kv->i = i16; kv->u = (uint64_t)i16; kv->f = i16; break;
    case GGUF_TYPE_UINT32: memcpy(&u32, p, 4); kv->u = u32; kv->i = u32; kv->f = u32; break;
    case GGUF_TYPE_INT32:  memcpy(&i32, p, 4); kv->i = i32; kv->u = (uint64_t)i32; kv->f = i32; break;
    case GGUF_TYPE_UINT64: memcpy(&u64, p, 8); kv->u = u64; kv->i = (int64_t)u64; kv->f = (double)u64; break;
    case GGUF_TYPE_INT64:  memcpy(&i64, p, 8); kv->i = i64; kv->u = (uint64_t)i64; kv->f = (double)i64; break;
    case GGUF_TYPE_FLOAT32: memcpy(&f32, p, 4); kv->f = f32; kv->i = float_to_i64(f32); kv->u = (uint64_t)kv->i; break;
    case GGUF_TYPE_FLOAT64: memcpy(&f64, p, 8); kv->f = f64; kv->i = float_to_i64(f64); kv->u = (uint64_t)kv->i; break;
    default: break;
    }
}

static int read_kv(cursor *c, gguf_kv *kv)
{
    kv->file_offset = c->pos;
    if (rd_string(c, &kv->key, "a metadata key"))
        return -1;
    uint64_t at = c->pos;
    if (rd_u32(c, &kv->type, "a metadata type"))
        return -1;
    if (kv->type >= GGUF_TYPE_COUNT) {
        gerr(c->f, "%s: byte %" PRIu64 ": metadata key '%s' has unknown type %u: corrupt",
                  c->f->path, at, kv->key, kv->type);
        return -1;
    }
    if (kv->type == GGUF_TYPE_STRING)
        return rd_string(c, &kv->str, kv->key);
    if (kv->type == GGUF_TYPE_ARRAY) {
        at = c->pos;
        if (rd_u32(c, &kv->elem_type, kv->key) || rd_u64(c, &kv->n_elems, kv->key))
            return -1;
        if (kv->elem_type >= GGUF_TYPE_COUNT || kv->elem_type == GGUF_TYPE_ARRAY
            || kv->n_elems > GGUF_MAX_ARRAY) {
            gerr(c->f, "%s: byte %" PRIu64 ": metadata key '%s': bad array (element type %u, %" PRIu64
                      " elements): corrupt", c->f->path, at, kv->key, kv->elem_type, kv->n_elems);
            return -1;
        }
        if (kv->elem_type == GGUF_TYPE_STRING) {
            for (uint64_t k = 0; k < kv->n_elems; k++)
                if (rd_string(c, NULL, kv->key))
                    return -1;
            return 0;
        }
        if (need(c, kv->n_elems * scalar_size[kv->elem_type], kv->key))
            return -1;
        c->pos += kv->n_elems * scalar_size[kv->elem_type];
        return 0;
    }
    if (need(c, scalar_size[kv->type], kv->key))
        return -1;
    set_number(kv, kv->type, c->f->map + c->pos);
    c->pos += scalar_size[kv->type];
    return 0;
}

static int read_tensor_info(cursor *c, gguf_tensor *t)
{
    t->info_offset = c->pos;
    if (rd_string(c, &t->name, "a tensor name"))
        return -1;
    uint64_t at = c->pos;
    if (rd_u32(c, &t->n_dims, t->name))
        return -1;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS) {
        gerr(c->f, "%s: byte %" PRIu64 ": tensor '%s' has %u dimensions (1..%d allowed): corrupt",
                  c->f->path, at, t->name, t->n_dims, GGUF_MAX_DIMS);
        return -1;
    }
    t->n_elems = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        at = c->pos;
        if (rd_u64(c, &t->dims[d], t->name))
            return -1;
        if (t->dims[d] == 0 || t->dims[d] > (1u << 30) || t->n_elems > (UINT64_C(1) << 40) / t->dims[d]) {
            gerr(c->f, "%s: byte %" PRIu64 ": tensor '%s' dimension %u is %" PRIu64 ": corrupt",
                      c->f->path, at, t->name, d, t->dims[d]);
            return -1;
        }
        t->n_elems *= t->dims[d];
    }
    for (uint32_t d = t->n_dims; d < GGUF_MAX_DIMS; d++)
        t->dims[d] = 1;
    at = c->pos;
    if (rd_u32(c, &t->type, t->name))
        return -1;
    uint64_t esize;
    switch (t->type) {
    case GGML_TYPE_F32: case GGML_TYPE_I32: esize = 4; break;
    case GGML_TYPE_F16: esize = 2; break;
    case GGML_TYPE_I8:  esize = 1; break;
    default:
        gerr(c->f, "%s: byte %" PRIu64 ": tensor '%s' has type %u (%s); only F32, F16, I8 and I32 are supported",
                  c->f->path, at, t->name, t->type, ggml_type_name(t->type));
        return -1;
    }
    t->size = t->n_elems * esize;
    return rd_u64(c, &t->file_offset, t->name);   /* relative for now */
}

void gguf_close(gguf_file *f)
{
    if (!f)
        return;
    if (f->kvs)
        for (uint64_t k = 0; k < f->n_kvs; k++) {
            free(f->kvs[k].key);
            free(f->kvs[k].str);
        }
    if (f->tensors)
        for (uint64_t k = 0; k < f->n_tensors; k++)
            free(f->tensors[k].name);
    free(f->kvs);
    free(f->tensors);
    if (f->map)
        munmap((void *)f->map, f->size);
    free(f->path);
    memset(f, 0, sizeof *f);
}

static int map_file(gguf_file *f, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        log_error("cannot open model file %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        log_error("%s: not a regular file", path);
        close(fd);
        return -1;
    }
    f->size = (size_t)st.st_size;
    if (f->size < 24) {
        gerr(f, "%s: byte 0: file is %zu bytes, too short for a GGUF header: truncated", path, f->size);
        close(fd);
        return -1;
    }
    void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        log_error("cannot map model file %s: %s", path, strerror(errno));
        return -1;
    }
    f->map = p;
    return 0;
}

/* Magic, version and the two counts; allocates the tables. */
static int read_header(gguf_file *f, cursor *c)
{
    if (memcmp(f->map, "GGUF", 4) != 0) {
        gerr(f, "%s: byte 0: bad magic \"%.4s\", expected \"GGUF\": not a model file", f->path,
                  (const char *)f->map);
        return -1;
    }
    if (rd_u32(c, &f->version, "the version"))
        return -1;
    if (f->version != 3) {
        gerr(f, "%s: byte 4: GGUF version %u, this engine reads version 3", f->path, f->version);
        return -1;
    }
    if (rd_u64(c, &f->n_tensors, "the tensor count") || rd_u64(c, &f->n_kvs, "the metadata count"))
        return -1;
    if (f->n_tensors > GGUF_MAX_TENSORS || f->n_kvs > GGUF_MAX_KVS) {
        gerr(f, "%s: byte 8: %" PRIu64 " tensors and %" PRIu64 " metadata entries (limit %u each): corrupt",
                  f->path, f->n_tensors, f->n_kvs, GGUF_MAX_TENSORS);
        return -1;
    }
    f->kvs = calloc(f->n_kvs ? f->n_kvs : 1, sizeof *f->kvs);
    f->tensors = calloc(f->n_tensors ? f->n_tensors : 1, sizeof *f->tensors);
    if (!f->kvs || !f->tensors) {
        log_error("%s: out of memory", f->path);
        return -1;
    }
    return 0;
}

/* The metadata: every key once; general.alignment, when present, sets f->alignment. */
static int read_kvs(gguf_file *f, cursor *c)
{
    f->alignment = 32;
    for (uint64_t k = 0; k < f->n_kvs; k++) {
        if (read_kv(c, &f->kvs[k]))
            return -1;
        for (uint64_t j = 0; j < k; j++)
            if (strcmp(f->kvs[j].key, f->kvs[k].key) == 0) {
                gerr(f, "%s: byte %" PRIu64 ": metadata key '%s' appears twice: corrupt",
                          f->path, f->kvs[k].file_offset, f->kvs[k].key);
                return -1;
            }
        if (strcmp(f->kvs[k].key, "general.alignment") == 0) {
            const gguf_kv *kv = &f->kvs[k];
            if (kv->type != GGUF_TYPE_UINT32 || kv->u == 0 || kv->u > 4096 || (kv->u & (kv->u - 1))) {
                gerr(f, "%s: byte %" PRIu64 ": general.alignment must be a UINT32 power of two <= 4096",
                          f->path, kv->file_offset);
                return -1;
            }
            f->alignment = kv->u;
        }
    }
    return 0;
}

/* The tensor table: every name once. */
static int read_tensor_infos(gguf_file *f, cursor *c)
{
    for (uint64_t k = 0; k < f->n_tensors; k++) {
        if (read_tensor_info(c, &f->tensors[k]))
            return -1;
        for (uint64_t j = 0; j < k; j++)
            if (strcmp(f->tensors[j].name, f->tensors[k].name) == 0) {
                gerr(f, "%s: byte %" PRIu64 ": tensor '%s' appears twice: corrupt",
                          f->path, f->tensors[k].info_offset, f->tensors[k].name);
                return -1;
            }
    }
    return 0;
}

/* Each tensor's data: aligned, inside the file, after the header that ends
 * at END; points t->data into the mapping. */
static int place_tensors(gguf_file *f, uint64_t end)
{
    f->data_start = (end + f->alignment - 1) / f->alignment * f->alignment;
    for (uint64_t k = 0; k < f->n_tensors; k++) {
        gguf_tensor *t = &f->tensors[k];
        uint64_t rel = t->file_offset;
        if (rel % f->alignment) {
            gerr(f, "%s: byte %" PRIu64 ": tensor '%s' data offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                      f->path, t->info_offset, t->name, rel, f->alignment);
            return -1;
        }
        if (rel > f->size || f->data_start > f->size - rel || t->size > f->size - f->data_start - rel) {
            gerr(f, "%s: byte %" PRIu64 ": tensor '%s' data [%" PRIu64 ", +%" PRIu64 ") lies past the end of the file (%zu bytes): truncated or corrupt",
                      f->path, t->info_offset, t->name, f->data_start + rel, t->size, f->size);
            return -1;
        }
        t->file_offset = f->data_start + rel;
        t->data = f->map + t->file_offset;
    }
    return 0;
}

int gguf_open(gguf_file *f, const char *path, const char *hint)
{
    memset(f, 0, sizeof *f);
    f->hint = hint;
    f->path = strdup(path);
    if (!f->path) {
        log_error("%s: out of memory", path);
        return -1;
    }
    cursor c = { f, 4 };
    if (map_file(f, path) || read_header(f, &c) || read_kvs(f, &c) || read_tensor_infos(f, &c)
        || place_tensors(f, c.pos))
        goto fail;
    return 0;
fail:
    gguf_close(f);
    return -1;
}

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key)
{
    for (uint64_t k = 0; k < f->n_kvs; k++)
        if (strcmp(f->kvs[k].key, key) == 0)
            return &f->kvs[k];
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name)
{
    for (uint64_t k = 0; k < f->n_tensors; k++)
        if (strcmp(f->tensors[k].name, name) == 0)
            return &f->tensors[k];
    return NULL;
}

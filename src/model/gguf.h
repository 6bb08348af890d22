/* gguf.h: a memory-mapped GGUF v3 file: typed metadata and a table of aligned tensors. */
#ifndef CONTINUO_GGUF_H
#define CONTINUO_GGUF_H

#include <stddef.h>
#include <stdint.h>

/* Metadata value types (GGUF v3). */
enum {
    GGUF_TYPE_UINT8 = 0, GGUF_TYPE_INT8 = 1, GGUF_TYPE_UINT16 = 2, GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4, GGUF_TYPE_INT32 = 5, GGUF_TYPE_FLOAT32 = 6, GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8, GGUF_TYPE_ARRAY = 9, GGUF_TYPE_UINT64 = 10, GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12, GGUF_TYPE_COUNT
};

/* Tensor element types (ggml numbering); only these are accepted. */
enum { GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_I8 = 24, GGML_TYPE_I32 = 26 };

#define GGUF_MAX_DIMS 4

/* One metadata entry. Numbers are widened: an unsigned or bool value is in
 * u (and i), a signed one in i, a float in f; all three are filled when the
 * value is a scalar number. Arrays are skipped over (n_elems, elem_type kept). */
typedef struct gguf_kv {
    char    *key;           /* NUL-terminated copy; owned by the gguf_file */
    uint32_t type;          /* GGUF_TYPE_* */
    uint64_t file_offset;   /* byte where the entry starts (for messages) */
    uint64_t u;
    int64_t  i;
    double   f;
    char    *str;           /* STRING: NUL-terminated copy; owned; else NULL */
    uint32_t elem_type;     /* ARRAY: element type */
    uint64_t n_elems;       /* ARRAY: element count */
} gguf_kv;

/* One tensor. dims[] is in GGUF order: innermost (contiguous) first, so a
 * row-major (rows, cols) matrix has dims {cols, rows}. */
typedef struct gguf_tensor {
    char       *name;            /* NUL-terminated copy; owned by the gguf_file */
    uint32_t    type;            /* GGML_TYPE_* */
    uint32_t    n_dims;
    uint64_t    dims[GGUF_MAX_DIMS];
    uint64_t    n_elems;
    uint64_t    file_offset;     /* absolute byte offset of the data in the file */
    uint64_t    size;            /* bytes */
    uint64_t    info_offset;     /* byte where its tensor info starts (for messages) */
    const void *data;            /* points into the mapping */
} gguf_tensor;

/* An open file. The mapping stays valid (read-only) until gguf_close. */
typedef struct gguf_file {
    char        *path;           /* owned copy */
    const uint8_t *map;          /* whole file, mmap'ed read-only */
    size_t       size;
    uint32_t     version;
    uint64_t     alignment;      /* general.alignment, default 32 */
    uint64_t     data_start;     /* absolute offset of the data section */
    gguf_kv     *kvs;            /* n_kvs; owned */
    uint64_t     n_kvs;
    gguf_tensor *tensors;        /* n_tensors; owned */
    uint64_t     n_tensors;
    const char  *hint;           /* appended to every error (borrowed, may be NULL) */
} gguf_file;

/* Maps PATH and checks its structure: magic, version 3, counts, every
 * metadata entry's type and length, every tensor's type, dims, offset,
 * alignment and size against the file length, and no duplicate names.
 * On a bad file logs one error "PATH: byte N: what was wrong" and returns
 * -1 (nothing to free); HINT (static, may be NULL) ends every message, e.g.
 * how to regenerate the file. On success the caller frees F with gguf_close. */
int gguf_open(gguf_file *f, const char *path, const char *hint);
void gguf_close(gguf_file *f);

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key);          /* NULL if absent */
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);  /* NULL if absent */
const char *gguf_type_name(uint32_t type);                                  /* "UINT32", ... */
const char *ggml_type_name(uint32_t type);                                  /* "F32", "F16", ... */

#endif

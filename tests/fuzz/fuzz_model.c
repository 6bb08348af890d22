/* fuzz_model.c: libFuzzer target for the model file loader (GGUF structure, keys, tensor shapes); a loaded tiny model also runs. */
#include "memfile.h"

#include <math.h>
#include <string.h>

#include "model/gguf.h"
#include "model/model.h"
#include "fuzz_quiet.h"

/* Largest run state worth building per input: context and width bound it. */
enum { RUN_MAX_CONTEXT = 64, RUN_MAX_WIDTH = 64 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = memfile_make(data, size, path, sizeof path);
    if (fd < 0)
        return 0;

    /* The container alone: every tensor lies inside the file. */
    gguf_file g;
    if (gguf_open(&g, path, NULL) == 0) {
        REQUIRE(g.version == 3 && g.size == size);
        for (uint64_t i = 0; i < g.n_tensors; i++) {
            const gguf_tensor *t = &g.tensors[i];
            REQUIRE(t->file_offset >= g.data_start && t->file_offset <= size);
            REQUIRE(t->size <= size - t->file_offset);
            REQUIRE(t->n_dims >= 1 && t->n_dims <= GGUF_MAX_DIMS);
            REQUIRE(gguf_find_tensor(&g, t->name) == t);
        }
        for (uint64_t i = 0; i < g.n_kvs; i++)
            REQUIRE(g.kvs[i].key != NULL && gguf_find_kv(&g, g.kvs[i].key) != NULL);
        gguf_close(&g);
    }

    /* The model: hyperparameters consistent; a small one decodes. */
    model m;
    if (model_load(&m, path) == 0) {
        const model_config *c = &m.cfg;
        REQUIRE(c->n_layers >= 1 && c->n_heads >= 1 && c->d_model % c->n_heads == 0);
        REQUIRE(c->d_head * c->n_heads == c->d_model && c->context >= 2 && c->vocab_size >= 2);
        if (c->context <= RUN_MAX_CONTEXT && c->d_model <= RUN_MAX_WIDTH && c->d_ff <= 4 * RUN_MAX_WIDTH
            && c->n_layers <= 4) {
            model_state s;
            if (model_state_init(&s, &m, 1) == 0) {
                int toks[3] = { 0, c->vocab_size - 1, 1 };
                REQUIRE(model_prefill(&s, toks, 2, NULL) == 0);
                for (int i = 0; i < c->context + 2; i++)   /* past the window: it slides */
                    REQUIRE(model_decode(&s, toks[i % 3]) != NULL);
                REQUIRE(s.n >= 1 && s.n <= c->context);
                model_state_free(&s);
            }
        }
        model_free(&m);
    }
    close(fd);
    return 0;
}

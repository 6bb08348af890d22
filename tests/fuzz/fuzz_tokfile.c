/* fuzz_tokfile.c: libFuzzer target for the token file reader: any bytes read cleanly, and a read file keeps its invariants. */
#include "memfile.h"

#include <string.h>

#include "codec/tokfile.h"
#include "fuzz_quiet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = memfile_make(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    tokfile t;
    int rc = tokfile_read(path, &t);
    close(fd);
    if (rc != 0) {
        REQUIRE(t.starts == NULL && t.tokens == NULL && t.sources == NULL);
        return 0;
    }
    REQUIRE(t.vocab_size >= 1 && t.vocab_size <= 65536);
    REQUIRE(strlen(t.vocab_name) <= 16);
    /* Every byte is accounted for: header, offsets, ids, sources. */
    REQUIRE(40 + 8 * ((uint64_t)t.n_seqs + 1) + 2 * t.n_tokens <= size);
    REQUIRE(t.starts[0] == 0 && t.starts[t.n_seqs] == t.n_tokens);
    for (uint32_t i = 0; i < t.n_seqs; i++) {
        REQUIRE(t.starts[i] <= t.starts[i + 1]);
        REQUIRE(t.sources[i] != NULL);
    }
    for (uint64_t i = 0; i < t.n_tokens; i++)
        REQUIRE(t.tokens[i] < t.vocab_size);
    tokfile_free(&t);
    REQUIRE(t.starts == NULL && t.tokens == NULL && t.sources == NULL);
    return 0;
}

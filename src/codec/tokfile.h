/* tokfile.h: token files: sequences of event ids written by `continuo encode`. */
#ifndef CONTINUO_TOKFILE_H
#define CONTINUO_TOKFILE_H

#include <stddef.h>
#include <stdint.h>

/* Layout (all little-endian), documented in docs/TOKENS.md:
 *   0  char[4]  magic "CTOK"
 *   4  u32      version = 1
 *   8  u32      vocabulary size (310 or 388)
 *  12  u32      n_seqs
 *  16  u64      n_tokens (all sequences)
 *  24  char[16] vocabulary name, NUL padded ("mt310")
 *  40  u64[n_seqs + 1]  start of each sequence, in tokens; the last is n_tokens
 *  ..  u16[n_tokens]    the ids
 *  ..  per sequence: u16 length, then that many bytes: its source (file path)
 */
typedef struct tokfile {
    char      vocab_name[17];
    uint32_t  vocab_size;
    uint32_t  n_seqs;
    uint64_t  n_tokens;
    uint64_t *starts;       /* n_seqs + 1; owned */
    uint16_t *tokens;       /* n_tokens; owned */
    char    **sources;      /* n_seqs strings; owned */
} tokfile;

int  tokfile_read(const char *path, tokfile *out);   /* logs "PATH: byte N: ..." */
/* The same for a file already in memory (borrowed); NAME is used in messages. */
int  tokfile_read_mem(const uint8_t *data, size_t len, const char *name, tokfile *out);
void tokfile_free(tokfile *t);

/* Building one in memory, then writing it all or nothing. */
typedef struct tokfile_writer {
    tokfile t;
    size_t  cap_tokens, cap_seqs;
} tokfile_writer;

int  tokfile_writer_init(tokfile_writer *w, const char *vocab_name, uint32_t vocab_size);
int  tokfile_writer_add(tokfile_writer *w, const uint16_t *ids, size_t n, const char *source);
int  tokfile_writer_save(tokfile_writer *w, const char *path);
void tokfile_writer_free(tokfile_writer *w);

#endif

/* datafile.h: one lookup for the files continuo ships (the default model, the demo's motif, bench's PyTorch script). */
#ifndef CONTINUO_DATAFILE_H
#define CONTINUO_DATAFILE_H

#include <stddef.h>

/* How a datafile's environment variable names it. */
typedef enum datafile_env {
    DATAFILE_ENV_FILE,      /* the file itself ($CONTINUO_MODEL) */
    DATAFILE_ENV_DATA_DIR,  /* a data folder: $ENV/NAME, then $ENV/SOURCE_DIR/NAME ($CONTINUO_DATADIR) */
    DATAFILE_ENV_SOURCE_DIR /* a source tree: $ENV/SOURCE_DIR/NAME ($CONTINUO_SRC) */
} datafile_env;

/* A file and where it may be.  The places, in order (each only where it
 * applies): the environment variable when set and not empty; the installed
 * data folder, CONTINUO_DATADIR (config.h, meson's datadir/continuo)/NAME;
 * the source tree a build folder's binary sits in,
 * <the binary's folder>/../SOURCE_DIR/NAME; SOURCE_DIR/NAME in the working
 * folder.  The callers differ where their files do: CONTINUO_MODEL names a
 * model file, CONTINUO_DATADIR a data folder, CONTINUO_SRC a source tree;
 * bench's script is not installed; the model is not looked for beside the
 * binary (it never was). */
typedef struct datafile {
    const char  *name;          /* "continuo-default.gguf" */
    const char  *env;           /* overriding variable, NULL: none */
    datafile_env env_kind;
    const char  *source_dir;    /* its folder in the source tree: "models", "train" */
    int          installed;     /* installed into CONTINUO_DATADIR */
    int          beside_binary; /* look in the source tree above the binary */
    int          cwd_dot;       /* write the working folder's place ./SOURCE_DIR/NAME (as demo always has) */
    const char  *installed_sub; /* installed into this folder of CONTINUO_DATADIR ("train"); NULL: itself */
} datafile;

enum { DATAFILE_MAX_PLACES = 6, DATAFILE_PATH_MAX = 4096 };

/* The places F may be, in order, into PLACES; returns how many (at most
 * DATAFILE_MAX_PLACES).  Paths too long for DATAFILE_PATH_MAX are cut. */
int datafile_places(const datafile *f, char places[][DATAFILE_PATH_MAX]);
/* The first readable place of F into OUT (LEN bytes): 0, or -1 when none is
 * (quietly: the caller says what it looked for, datafile_places says where). */
int datafile_find(const datafile *f, char *out, size_t len);

/* The running binary's path (/proc/self/exe) into OUT; 0, or -1 (OUT "")
 * when it cannot be read. */
int datafile_self(char out[DATAFILE_PATH_MAX]);

#endif

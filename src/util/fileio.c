/* fileio.c: whole-file reads and all-or-nothing writes. */
#include "fileio.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_read_all(const char *path, uint8_t **data, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;

    if (!fp) {
        log_error("cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            uint8_t *nbuf = realloc(buf, ncap);
            if (!nbuf) {
                log_error("cannot read %s: out of memory", path);
                goto fail;
            }
            buf = nbuf;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0) {
            if (ferror(fp)) {
                log_error("cannot read %s: %s", path, strerror(errno));
                goto fail;
            }
            break;
        }
    }
    fclose(fp);
    *data = buf;
    *len = n;
    return 0;
fail:
    free(buf);
    fclose(fp);
    return -1;
}

int atomic_file_open(atomic_file *af, const char *path)
{
    memset(af, 0, sizeof *af);
    if (strcmp(path, "-") == 0) {
        af->fp = stdout;
        return 0;
    }
    size_t n = strlen(path);
    af->path = strdup(path);
    af->tmp_path = malloc(n + sizeof ".tmp-XXXXXX");
    if (!af->path || !af->tmp_path) {
        log_error("cannot write %s: out of memory", path);
        goto fail;
    }
    memcpy(af->tmp_path, path, n);
    memcpy(af->tmp_path + n, ".tmp-XXXXXX", sizeof ".tmp-XXXXXX");
    int fd = mkstemp(af->tmp_path);
    if (fd < 0) {
        log_error("cannot write %s: %s", path, strerror(errno));
        goto fail;
    }
    /* mkstemp makes 0600; give the file the usual umask-based mode. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    af->fp = fdopen(fd, "wb");
    if (!af->fp) {
        log_error("cannot write %s: %s", path, strerror(errno));
        close(fd);
        unlink(af->tmp_path);
        goto fail;
    }
    return 0;
fail:
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
    return -1;
}

int atomic_file_commit(atomic_file *af)
{
    int rc = 0;

    if (!af->tmp_path) {                        /* stdout */
        if (fflush(af->fp) != 0) {
            log_error("cannot write standard output: %s", strerror(errno));
            rc = -1;
        }
        memset(af, 0, sizeof *af);
        return rc;
    }
    if (ferror(af->fp) || fflush(af->fp) != 0 || fsync(fileno(af->fp)) != 0) {
        log_error("cannot write %s: %s", af->path, strerror(errno ? errno : EIO));
        rc = -1;
    }
    if (fclose(af->fp) != 0 && rc == 0) {
        log_error("cannot write %s: %s", af->path, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && rename(af->tmp_path, af->path) != 0) {
        log_error("cannot write %s: rename from %s: %s", af->path, af->tmp_path, strerror(errno));
        rc = -1;
    }
    if (rc != 0)
        unlink(af->tmp_path);
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
    return rc;
}

void atomic_file_abort(atomic_file *af)
{
    if (af->tmp_path) {
        fclose(af->fp);
        unlink(af->tmp_path);
    }
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
}

int file_write_atomic(const char *path, const void *data, size_t len)
{
    atomic_file af;

    if (atomic_file_open(&af, path) != 0)
        return -1;
    if (fwrite(data, 1, len, af.fp) != len) {
        log_error("cannot write %s: %s", path, strerror(errno));
        atomic_file_abort(&af);
        return -1;
    }
    return atomic_file_commit(&af);
}

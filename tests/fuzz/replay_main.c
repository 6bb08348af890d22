/* replay_main.c: runs a libFuzzer target's LLVMFuzzerTestOneInput over files and folders (the seed corpus) in a normal build. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fileio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* In a sanitized build, undefined behaviour fails the replay (by default
 * UBSan prints and goes on, and the test would pass). Ignored otherwise. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "halt_on_error=1:print_stacktrace=1";
}

static int replay_file(const char *path)
{
    uint8_t *data;
    size_t len;
    if (file_read_all(path, &data, &len) != 0)
        return -1;
    /* An exact-size copy, so ASan sees reads past the end of the input. */
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) {
        free(data);
        return -1;
    }
    memcpy(copy, data, len);
    free(data);
    LLVMFuzzerTestOneInput(copy, len);
    free(copy);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = 0;
    int failed = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            failed = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed |= replay_file(argv[i]) != 0;
            n++;
            continue;
        }
        DIR *dir = opendir(argv[i]);
        struct dirent *de;
        if (!dir) {
            perror(argv[i]);
            failed = 1;
            continue;
        }
        while ((de = readdir(dir)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                failed |= replay_file(path) != 0;
                n++;
            }
        }
        closedir(dir);
    }
    printf("%zu inputs replayed\n", n);
    if (n == 0) {
        fprintf(stderr, "no inputs found\n");
        return 1;
    }
    return failed;
}

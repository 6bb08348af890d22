/* test_datafile.c: where continuo looks for the files it ships, in order, and that the first readable place wins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "util/datafile.h"

static const datafile model = { "continuo-default.gguf", "CONTINUO_TEST_MODEL", DATAFILE_ENV_FILE,
                                "models", 1, 0, 0, NULL };
static const datafile motif = { "motif.mid", "CONTINUO_TEST_DATADIR", DATAFILE_ENV_DATA_DIR,
                                "models", 1, 1, 1, NULL };
static const datafile script = { "bench_torch.py", "CONTINUO_TEST_SRC", DATAFILE_ENV_SOURCE_DIR,
                                 "train", 0, 1, 0, NULL };

int main(void)
{
    char p[DATAFILE_MAX_PLACES][DATAFILE_PATH_MAX], inst[DATAFILE_PATH_MAX], out[DATAFILE_PATH_MAX];

    /* No variable: the installed folder, then the working folder's. */
    unsetenv("CONTINUO_TEST_MODEL");
    CHECK_INT(datafile_places(&model, p), 2);
    snprintf(inst, sizeof inst, "%s/continuo-default.gguf", CONTINUO_DATADIR);
    CHECK(strcmp(p[0], inst) == 0);
    CHECK(strcmp(p[1], "models/continuo-default.gguf") == 0);
    /* A variable naming the file comes first; an empty one counts as unset. */
    setenv("CONTINUO_TEST_MODEL", "/elsewhere/m.gguf", 1);
    CHECK_INT(datafile_places(&model, p), 3);
    CHECK(strcmp(p[0], "/elsewhere/m.gguf") == 0);
    setenv("CONTINUO_TEST_MODEL", "", 1);
    CHECK_INT(datafile_places(&model, p), 2);

    /* A data folder: $DIR/NAME, $DIR/models/NAME, installed, beside the binary, ./models. */
    setenv("CONTINUO_TEST_DATADIR", "/d", 1);
    CHECK_INT(datafile_places(&motif, p), 5);
    CHECK(strcmp(p[0], "/d/motif.mid") == 0);
    CHECK(strcmp(p[1], "/d/models/motif.mid") == 0);
    CHECK_STR_CONTAINS(p[3], "/../models/motif.mid");
    CHECK(strcmp(p[4], "./models/motif.mid") == 0);

    /* A source tree, never installed: $SRC/train/NAME, beside the binary, train/NAME. */
    setenv("CONTINUO_TEST_SRC", "/s", 1);
    CHECK_INT(datafile_places(&script, p), 3);
    CHECK(strcmp(p[0], "/s/train/bench_torch.py") == 0);
    CHECK(strcmp(p[2], "train/bench_torch.py") == 0);

    /* The first readable place is the one found, and none gives -1. */
    char dir[] = "/tmp/continuo-datafile.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[DATAFILE_PATH_MAX + 32];
    snprintf(file, sizeof file, "%s/motif.mid", dir);
    FILE *fp = fopen(file, "w");
    CHECK(fp != NULL);
    if (fp)
        fclose(fp);
    setenv("CONTINUO_TEST_DATADIR", dir, 1);
    CHECK_INT(datafile_find(&motif, out, sizeof out), 0);
    CHECK(strcmp(out, file) == 0);
    setenv("CONTINUO_TEST_MODEL", "/no/such/model.gguf", 1);
    if (chdir(dir) == 0)          /* no models/ here, and nothing installed under this name */
        CHECK_INT(datafile_find(&(datafile){ "no-such.gguf", "CONTINUO_TEST_MODEL", DATAFILE_ENV_FILE,
                                             "models", 1, 0, 0, NULL }, out, sizeof out), -1);
    unlink(file);
    /* A file installed in a folder of the data folder: adapt's train/adapt.py. */
    static const datafile sub = { "adapt.py", NULL, DATAFILE_ENV_FILE, "train", 1, 0, 0, "train" };
    char places[DATAFILE_MAX_PLACES][DATAFILE_PATH_MAX];
    CHECK(datafile_places(&sub, places) == 2);
    CHECK(strcmp(places[0], CONTINUO_DATADIR "/train/adapt.py") == 0);
    rmdir(dir);
    return CHECK_DONE();
}

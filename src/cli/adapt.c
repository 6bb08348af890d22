/* adapt.c: `continuo adapt`: fine-tunes the model on the player's playing with train/adapt.py, keeps it only if it fits better. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/adapt.h"
#include "cli/commands.h"
#include "cli/opts.h"
#include "daemon/adapted.h"
#include "daemon/options.h"
#include "model/model.h"
#include "util/clock.h"
#include "util/datafile.h"
#include "util/fileio.h"
#include "util/log.h"

static const char adapt_usage[] =
    "usage: continuo adapt [MIDI files or folders] [--minutes N] [options]\n"
    "       continuo adapt --list | --use N | --reset\n"
    "\n"
    "Fine-tunes the model serve plays with (model = auto: the shipped one, or\n"
    "$CONTINUO_MODEL) on the player's own playing: the journal's player track by\n"
    "default, or the MIDI files and folders given (oldest first), with PyTorch on\n"
    "the CPU (python3-torch), in at most --minutes for the whole run.  The newest\n"
    "tenth of the playing is held back to judge with.  The adapted model also\n"
    "keeps a memory of the notes played (--no-memory: not), so that a piece\n"
    "played again is followed note for note.  The result is kept only\n"
    "if it scores lower there than the model it started from and at most 1%\n"
    "higher on a general reference (continuations the shipped model sampled\n"
    "itself); otherwise nothing changes, and adapt says why.  It needs a minute\n"
    "of playing at least.  Kept models and their cards are in the state folder\n"
    "(adapted/ beside the journal); model = auto plays the newest, or the one\n"
    "chosen with --use (0: the shipped model); --reset goes back to the shipped\n"
    "model until the next kept adapt.\n";

typedef struct adapt_args {
    double minutes;
    int list, use, reset, threads, max_steps, if_new, transpose, no_memory;
    double lr, kl_weight, replay_weight, blend;
    const char *model, *reference, *journal, *config, *output;
} adapt_args;

/* The settings serve reads (--config, else the XDG places): 0, or -1 (logged). */
static int load_config(const adapt_args *a, config *c)
{
    char found[CONFIG_STR_MAX];
    config_defaults(c);
    const char *path = a->config ? a->config : config_find_file(found, sizeof found) ? found : NULL;
    return path && config_load_file(c, path) < 0 ? -1 : 0;
}

/* The start model: --model, else the config's model as `auto` reads it
 * without adapted models ($CONTINUO_MODEL, the shipped one): an adapt
 * always starts from the same model, so its drift never adds up. */
static int start_model(const config *c, const adapt_args *a, char *out, size_t len)
{
    const char *m = a->model ? a->model : strcmp(c->model, "auto") != 0 && c->model[0] ? c->model : NULL;
    if (m && (strcmp(m, "echo") == 0 || strcmp(m, "stall") == 0)) {
        log_error("adapt: model = %s is a test engine, not a model file: give --model FILE.gguf", m);
        return -1;
    }
    return model_resolve_path(m, out, len);
}

static const datafile adapt_script = {
    .name = "adapt.py", .env = "CONTINUO_SRC", .env_kind = DATAFILE_ENV_SOURCE_DIR,
    .source_dir = "train", .installed = 1, .installed_sub = "train", .beside_binary = 1,
};

static const datafile adapt_reference = {
    .name = "adapt-reference.tok", .env = "CONTINUO_DATADIR", .env_kind = DATAFILE_ENV_DATA_DIR,
    .source_dir = "models", .installed = 1, .beside_binary = 1,
};

static const datafile adapt_replay = {
    .name = "adapt-replay.tok", .env = "CONTINUO_DATADIR", .env_kind = DATAFILE_ENV_DATA_DIR,
    .source_dir = "models", .installed = 1, .beside_binary = 1,
};

static const char *python(void)
{
    const char *p = getenv("CONTINUO_PYTHON");
    return p && *p ? p : "/usr/bin/python3";
}

/* SIGINT or SIGTERM while adapting: the child is ended and the work folder removed. */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

/* Runs ARGV (a NULL-terminated list) and waits; it is ended when it runs
 * past LIMIT_S seconds.  Its exit status, or -1 when it could not run or
 * was ended (logged). */
static int run_child(char *const *argv, double limit_s)
{
    pid_t pid = fork();
    if (pid < 0) {
        log_error("adapt: cannot start %s: %s", argv[0], strerror(errno));
        return -1;
    }
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    double until = clock_now_seconds() + limit_s;
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -1;
        if (clock_now_seconds() > until || stop_signal) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            if (stop_signal)
                log_error("adapt: stopped by signal %d", (int)stop_signal);
            else
                log_error("adapt: %s ran past its time (%.0f s): ended", argv[0], limit_s);
            return -1;
        }
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* What to install, when Python or PyTorch is missing (adapt.py exits 3 when torch does not import). */
static void say_install(const char *py)
{
    log_error("continuo adapt needs Python 3 with PyTorch and NumPy (%s could not import them): "
              "install python3-torch (sudo apt install python3-torch python3-numpy)", py);
}

/* ------------------------------------------------------------ --list, --use, --reset */

static double change_pct(double before, double after)
{
    return before > 0 ? 100.0 * (after - before) / before : 0;
}

static int list_models(const char *dir)
{
    adapted_model *m;
    int n;
    char in_use[ADAPTED_PATH_MAX] = "";
    if (adapted_list(dir, &m, &n) != 0)
        return 1;
    int adapted = adapted_in_use(dir, in_use, sizeof in_use);
    printf("%s 0  the shipped model\n", adapted ? " " : "*");
    for (int i = 0; i < n; i++) {
        int used = adapted && strcmp(strrchr(in_use, '/') + 1, m[i].name) == 0;
        printf("%s %d  %s  %s  %.1f min in %d session%s  held-back NLL %.4f -> %.4f (%+.1f%%)  "
               "reference %.4f -> %.4f (%+.1f%%)\n", used ? "*" : " ", i + 1, m[i].name, m[i].date,
               m[i].minutes, m[i].sessions, m[i].sessions == 1 ? "" : "s", m[i].held_before, m[i].held_after,
               change_pct(m[i].held_before, m[i].held_after), m[i].ref_before, m[i].ref_after,
               change_pct(m[i].ref_before, m[i].ref_after));
    }
    printf("(%s; * plays with model = auto)\n", dir);
    free(m);
    return 0;
}

static int use_model(const char *dir, int which)
{
    adapted_model *m;
    int n;
    if (adapted_list(dir, &m, &n) != 0)
        return 1;
    if (which > n) {
        log_error("adapt --use %d: there %s %d adapted model%s in %s (adapt --list)", which, n == 1 ? "is" : "are",
                  n, n == 1 ? "" : "s", dir);
        free(m);
        return 1;
    }
    int rc = adapted_set_use(dir, which == 0 ? "shipped" : m[which - 1].name);
    if (rc == 0)
        printf("model = auto now plays %s (a running serve: after `continuo ctl reload`)\n",
               which == 0 ? "the shipped model" : m[which - 1].name);
    free(m);
    return rc == 0 ? 0 : 1;
}

/* ------------------------------------------------------------ the result */

typedef struct adapt_result {
    double held_before, held_after, ref_before, ref_after, seconds;
    double blend;       /* the share of the fine-tune's step kept (adapt.py --blend) */
    double held_weights, ref_weights;   /* held_after, ref_after of the weights alone (no memory) */
    int steps;
    long memory_notes;  /* the note-ons the file's memory of the player holds (0: none) */
} adapt_result;

/* The JSON train/adapt.py writes: one "key": number per line. */
static int read_result(const char *path, adapt_result *r)
{
    FILE *fp = fopen(path, "r");
    char line[256];
    int found = 0;
    if (!fp) {
        log_error("adapt: %s: not written (train/adapt.py failed, see above)", path);
        return -1;
    }
    memset(r, 0, sizeof *r);
    while (fgets(line, sizeof line, fp)) {
        found += sscanf(line, " \"held_before\": %lf", &r->held_before) == 1;
        found += sscanf(line, " \"held_after\": %lf", &r->held_after) == 1;
        found += sscanf(line, " \"ref_before\": %lf", &r->ref_before) == 1;
        found += sscanf(line, " \"ref_after\": %lf", &r->ref_after) == 1;
        found += sscanf(line, " \"steps\": %d", &r->steps) == 1;
        sscanf(line, " \"seconds\": %lf", &r->seconds);
        sscanf(line, " \"blend\": %lf", &r->blend);
        sscanf(line, " \"held_after_weights\": %lf", &r->held_weights);
        sscanf(line, " \"ref_after_weights\": %lf", &r->ref_weights);
        sscanf(line, " \"memory_notes\": %ld", &r->memory_notes);
    }
    fclose(fp);
    if (found != 5)
        log_error("adapt: %s: the scores are not all there", path);
    return found == 5 ? 0 : -1;
}

/* Why the result is not kept, into WHY; or 0 when it passes.  MAX_STEPS:
 * the steps asked for (0: scoring only), so that a budget that left no
 * step says so instead of only the score. */
static int refuse(const adapt_result *r, int max_steps, char *why, size_t len)
{
    if (!(r->held_after < r->held_before)) {
        snprintf(why, len, "the held-back tenth of the playing scores %.4f, not lower than the start "
                 "model's %.4f%s", r->held_after, r->held_before,
                 r->steps == 0 && max_steps > 0 ? " (no training step fitted in --minutes: give it more)" : "");
        return 1;
    }
    if (r->ref_after > r->ref_before * 1.01) {
        snprintf(why, len, "the general reference scores %.4f, %.1f%% above the start model's %.4f "
                 "(at most 1%% is allowed: it drifted)", r->ref_after, change_pct(r->ref_before, r->ref_after),
                 r->ref_before);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ keeping it */

/* The paths of one run: the work folder (in DIR, so a rename is atomic) and its files. */
typedef struct adapt_paths {
    char dir[ADAPTED_PATH_MAX];         /* STATE/adapted */
    char work[ADAPTED_PATH_MAX + 16];   /* DIR/.work-XXXXXX */
    char train[ADAPTED_PATH_MAX + 48], held[ADAPTED_PATH_MAX + 48], out[ADAPTED_PATH_MAX + 48],
        result[ADAPTED_PATH_MAX + 48];
    char start[ADAPTED_PATH_MAX], reference[ADAPTED_PATH_MAX];
} adapt_paths;

static int write_card(const char *path, const char *name, const adapt_paths *p, const adapt_data *d,
                      const adapt_result *r, const char *date)
{
    char text[8192];
    int n = snprintf(text, sizeof text,
                     "# continuo adapted model (continuo adapt)\n"
                     "model: %s\ndate: %s\nstarted from: %s\n"
                     "minutes: %.2f\nsessions: %d\nheld-back minutes: %.2f\n"
                     "held-back NLL: %.4f -> %.4f (%+.2f%%)\nreference NLL: %.4f -> %.4f (%+.2f%%)\n"
                     "reference: %s\nsteps: %d\nstep kept: %.2f\nfine-tune seconds: %.0f\n"
                     "memory of the player: %ld note-ons\n"
                     "the weights alone: held-back NLL %.4f, reference NLL %.4f\n",
                     name, date, p->start, d->seconds / 60, d->sessions, d->held_seconds / 60, r->held_before,
                     r->held_after, change_pct(r->held_before, r->held_after), r->ref_before, r->ref_after,
                     change_pct(r->ref_before, r->ref_after), p->reference, r->steps, r->blend, r->seconds,
                     r->memory_notes, r->held_weights, r->ref_weights);
    return file_write_atomic(path, text, (size_t)n);
}

/* The card, then the model renamed into place (synced first), then auto set back to the newest. */
static int keep(const adapt_paths *p, const adapt_data *d, const adapt_result *r)
{
    char stamp[32], date[32], name[ADAPTED_NAME_MAX], model[ADAPTED_PATH_MAX + 80], card[ADAPTED_PATH_MAX + 80];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    for (int k = 1;; k++) {
        snprintf(name, sizeof name, k == 1 ? "adapted-%s.gguf" : "adapted-%s-%d.gguf", stamp, k);
        snprintf(model, sizeof model, "%s/%s", p->dir, name);
        if (access(model, F_OK) != 0)
            break;
    }
    snprintf(card, sizeof card, "%.*s.card", (int)(strlen(model) - 5), model);
    int fd = open(p->out, O_RDONLY);
    int synced = fd >= 0 && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    if (!synced || write_card(card, name, p, d, r, date) != 0) {
        log_error("adapt: cannot write %s", synced ? card : p->out);
        return -1;
    }
    if (rename(p->out, model) != 0) {
        log_error("adapt: cannot move the model to %s: %s", model, strerror(errno));
        unlink(card);
        return -1;
    }
    if (adapted_set_use(p->dir, NULL) != 0)
        return -1;
    printf("kept: %s (held-back NLL %.4f -> %.4f, %+.1f%%; reference %.4f -> %.4f, %+.1f%%); "
           "model = auto plays it (a running serve: after `continuo ctl reload`)\n", model, r->held_before, r->held_after,
           change_pct(r->held_before, r->held_after), r->ref_before, r->ref_after,
           change_pct(r->ref_before, r->ref_after));
    return 0;
}

/* ------------------------------------------------------------ the last run */

/* DIR/last-run: when adapt last ran to a verdict on the journal, the
 * newest session it read (its mtime: --if-new compares), and the verdict;
 * all or nothing.  `continuo doctor` shows it (adapted_read_last_run).  A
 * run on files given (DIR NULL) is not recorded: their mtimes say nothing
 * of what the journal holds. */
static void record_run(const char *dir, time_t newest, const char *verdict)
{
    char path[ADAPTED_PATH_MAX + 16], text[1024], date[32];
    time_t now = time(NULL);
    struct tm tm;
    if (!dir)
        return;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(path, sizeof path, "%s/last-run", dir);
    int n = snprintf(text, sizeof text, "date: %s\nnewest session: %lld\nverdict: %.100s\n", date,
                     (long long)newest, verdict);
    if (file_write_atomic(path, text, (size_t)(n < (int)sizeof text ? n : (int)sizeof text - 1)) != 0)
        log_warn("adapt: cannot write %s (the next --if-new adapts again)", path);
}

/* The mtime of the newest of IN's files (0: none). */
static time_t newest_session(const adapt_inputs *in)
{
    time_t newest = 0;
    struct stat st;
    for (int i = 0; i < in->n; i++)
        if (stat(in->path[i], &st) == 0 && st.st_mtime > newest)
            newest = st.st_mtime;
    return newest;
}

/* ------------------------------------------------------------ the run */

static void remove_work(const adapt_paths *p)
{
    const char *files[] = { p->train, p->held, p->out, p->result };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        unlink(files[i]);
    char part[ADAPTED_PATH_MAX + 64];
    snprintf(part, sizeof part, "%s.part", p->out);
    unlink(part);
    snprintf(part, sizeof part, "%s.part", p->result);
    unlink(part);
    /* adapt.py's continuations of the player's playing, when it was ended while making them */
    snprintf(part, sizeof part, "%s/primed", p->work);
    DIR *d = opendir(part);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char f[ADAPTED_PATH_MAX + 384];
        if (e->d_name[0] != '.' && snprintf(f, sizeof f, "%s/%s", part, e->d_name) < (int)sizeof f)
            unlink(f);
    }
    if (d)
        closedir(d);
    rmdir(part);
    rmdir(p->work);
}

/* PATH and the folders above it that are missing (mkdir -p): 0, or -1 (errno). */
static int make_folders(const char *path)
{
    char buf[ADAPTED_PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *s = buf + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(buf, 0700) != 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    return mkdir(buf, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

static int make_work(adapt_paths *p)
{
    if (make_folders(p->dir) != 0) {
        log_error("adapt: cannot create %s: %s", p->dir, strerror(errno));
        return -1;
    }
    snprintf(p->work, sizeof p->work, "%s/.work-XXXXXX", p->dir);
    if (!mkdtemp(p->work)) {
        log_error("adapt: cannot create a work folder in %s: %s", p->dir, strerror(errno));
        return -1;
    }
    snprintf(p->train, sizeof p->train, "%s/train.tok", p->work);
    snprintf(p->held, sizeof p->held, "%s/held.tok", p->work);
    snprintf(p->out, sizeof p->out, "%s/adapted.gguf", p->work);
    snprintf(p->result, sizeof p->result, "%s/result.json", p->work);
    return 0;
}

/* train/adapt.py on P's files, for what is left of the budget. */
static int fine_tune(const adapt_args *a, const adapt_paths *p, double t0, adapt_result *r)
{
    char script[DATAFILE_PATH_MAX], replay[DATAFILE_PATH_MAX], seconds[32], threads[16], lr[32], kl[32],
        rw[32], steps[16], until[32], blend[32], transpose[16], self[DATAFILE_PATH_MAX];
    if (datafile_find(&adapt_script, script, sizeof script) != 0
        || datafile_find(&adapt_replay, replay, sizeof replay) != 0) {
        log_error("adapt: train/adapt.py or models/adapt-replay.tok is not installed (reinstall continuo, "
                  "or set CONTINUO_SRC and CONTINUO_DATADIR)");
        return -1;
    }
    double left = a->minutes * 60 - (clock_now_seconds() - t0) - 1;
    snprintf(seconds, sizeof seconds, "%.1f", left > 1 ? left : 1);
    snprintf(until, sizeof until, "%.3f", clock_now_seconds() + (left > 1 ? left : 1));
    snprintf(threads, sizeof threads, "%d", a->threads);
    snprintf(lr, sizeof lr, "%g", a->lr);
    snprintf(kl, sizeof kl, "%g", a->kl_weight);
    snprintf(steps, sizeof steps, "%d", a->max_steps);
    snprintf(rw, sizeof rw, "%g", a->replay_weight);
    snprintf(blend, sizeof blend, "%g", a->blend);
    snprintf(transpose, sizeof transpose, "%d", a->transpose);
    /* this binary continues crops of the player's playing for the replay (adapt.py --continuo) */
    int have_self = datafile_self(self) == 0;
    char *argv[] = { (char *)python(), script, "--model", (char *)p->start, "--train", (char *)p->train,
                     "--held", (char *)p->held, "--reference", (char *)p->reference, "--out", (char *)p->out,
                     "--result", (char *)p->result, "--seconds", seconds, "--until", until, "--threads", threads,
                     "--lr", lr, "--kl-weight", kl, "--replay", replay, "--replay-weight", rw, "--max-steps", steps,
                     "--blend", blend, "--transpose", transpose, NULL, NULL, NULL, NULL };
    size_t n = sizeof argv / sizeof argv[0] - 4;
    if (a->no_memory)
        argv[n++] = "--no-memory";
    if (have_self) {
        argv[n++] = "--continuo";
        argv[n++] = self;
    }
    if (access(argv[0], X_OK) != 0) {
        say_install(argv[0]);
        return -1;
    }
    int rc = run_child(argv, (left > 1 ? left : 1) + 60);
    if (rc == 3)
        say_install(argv[0]);
    if (rc != 0) {
        log_error("adapt: %s %s failed (exit %d): nothing changed", argv[0], script, rc);
        return -1;
    }
    return read_result(p->result, r);
}

/* FROM's bytes to TO, all or nothing.  0, or -1 (logged). */
static int copy_file(const char *from, const char *to)
{
    uint8_t *data;
    size_t len;
    if (file_read_all(from, &data, &len) != 0)
        return -1;
    int rc = file_write_atomic(to, data, len);
    free(data);
    if (rc == 0)
        printf("wrote %s\n", to);
    return rc;
}

/* The sessions: FILES given, else the journal's.  0, or -1 (logged). */
static int gather(const config *c, const adapt_args *a, char **files, int n_files, adapt_inputs *in, char *from,
                  size_t len)
{
    for (int i = 0; i < n_files; i++)
        if (adapt_inputs_add(in, files[i]) != 0)
            return -1;
    if (n_files) {
        snprintf(from, len, "%d file%s given", in->n, in->n == 1 ? "" : "s");
        return 0;
    }
    char dir[CONFIG_STR_MAX];
    if (a->journal)
        snprintf(dir, sizeof dir, "%s", a->journal);
    else if (config_journal_dir(c, STATE_READ, dir, sizeof dir) != 0) {
        log_error("adapt: no journal folder (journal_dir = off, or no HOME): give MIDI files or --journal DIR");
        return -1;
    }
    snprintf(from, len, "the journal, %s", dir);
    if (!a->journal && access(dir, F_OK) != 0)
        return 0;                               /* no journal yet: no playing */
    return adapt_inputs_journal(in, dir);
}

/* PATH made absolute in place (the card names files wherever adapt ran): 0, or -1 (logged). */
static int absolute(char *path, size_t len)
{
    char *full = realpath(path, NULL);
    if (!full) {
        log_error("%s: %s", path, strerror(errno));
        return -1;
    }
    snprintf(path, len, "%s", full);
    free(full);
    return 0;
}

/* Everything before the fine-tune: sessions, start model, reference, the
 * token files; *NEWEST the newest session's mtime.  0, 1 too little, 2
 * nothing new in the journal since the last run (--if-new), -1. */
static int prepare(const adapt_args *a, char **files, int n_files, adapt_paths *p, adapt_data *d, time_t *newest)
{
    adapt_inputs in = { 0 };
    char from[CONFIG_STR_MAX + 32];
    model m;
    const vocab *v;
    config c;
    int rc = load_config(a, &c);
    if (rc == 0)
        rc = gather(&c, a, files, n_files, &in, from, sizeof from);
    *newest = newest_session(&in);
    adapted_last_run last;
    if (rc == 0 && a->if_new && n_files == 0 && adapted_read_last_run(p->dir, &last) == 0 && *newest <= last.newest) {
        printf("nothing new since the last adapt (%s: %s): nothing to do\n", last.date, last.verdict);
        adapt_inputs_free(&in);
        return 2;
    }
    if (rc == 0 && start_model(&c, a, p->start, sizeof p->start) != 0)
        rc = -1;
    if (rc == 0 && a->reference)
        snprintf(p->reference, sizeof p->reference, "%s", a->reference);
    else if (rc == 0 && datafile_find(&adapt_reference, p->reference, sizeof p->reference) != 0) {
        log_error("adapt: the general reference models/adapt-reference.tok is not installed: give --reference FILE.tok");
        rc = -1;
    }
    if (rc == 0)
        rc = absolute(p->start, sizeof p->start) | absolute(p->reference, sizeof p->reference);
    if (rc == 0 && (rc = model_open(&m, p->start, &v)) == 0) {
        model_free(&m);
        rc = make_work(p);
    }
    if (rc == 0 && (rc = adapt_data_build(&in, v, p->train, p->held, d)) == 1)
        printf("not adapted: %.0f s of playing in %d session%s (%s); adapt needs %.0f s at least: nothing "
               "changed\n", d->seconds, d->sessions, d->sessions == 1 ? "" : "s", from, ADAPT_MIN_SECONDS);
    else if (rc == 0)
        printf("adapting %s on %.1f min of playing in %d session%s (%s), %zu events; holding back the newest "
               "%.1f min (%zu events, from %s on) to judge with\n", p->start, d->seconds / 60, d->sessions,
               d->sessions == 1 ? "" : "s", from, d->train_events, d->held_seconds / 60, d->held_events,
               in.path[d->held_from]);
    adapt_inputs_free(&in);
    return rc;
}

static int adapt_run(const adapt_args *a, char **files, int n_files, const char *dir)
{
    double t0 = clock_now_seconds();
    adapt_paths p;
    adapt_data d;
    adapt_result r;
    char why[512];
    memset(&p, 0, sizeof p);
    snprintf(p.dir, sizeof p.dir, "%s", dir);
    struct sigaction sa = { .sa_handler = on_stop };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    time_t newest = 0;
    const char *record = n_files == 0 ? dir : NULL;
    int rc = prepare(a, files, n_files, &p, &d, &newest);
    fflush(stdout);
    if (rc == 2)
        return 0;                       /* --if-new: nothing new */
    if (rc == 1)
        record_run(record, newest, "too little playing");
    if (rc == 0 && (stop_signal || fine_tune(a, &p, t0, &r) != 0))
        rc = -1;
    if (rc == 0 && a->output)
        rc = copy_file(p.out, a->output);
    if (rc == 0 && refuse(&r, a->max_steps, why, sizeof why)) {
        printf("not kept: %s: nothing changed\n", why);
        record_run(record, newest, "not kept");
    } else if (rc == 0 && (rc = keep(&p, &d, &r)) == 0) {
        record_run(record, newest, "kept");
    }
    if (p.work[0])
        remove_work(&p);
    return rc < 0 ? 1 : 0;
}

int cmd_adapt(int argc, char **argv)
{
    adapt_args a = { .minutes = 10, .use = -1, .threads = 1, .max_steps = 100000, .lr = 3e-4, .kl_weight = 0.3,
                    .replay_weight = 3, .blend = 0.005, .transpose = 3 };
    const cli_option options[] = {
        CLI_DOUBLE("minutes", 0, "N", 0.05, 1440, &a.minutes, "the whole run at most, data and checks included "
                   "(default 10)"),
        CLI_FLAG("list", 0, &a.list, "the kept adapted models, numbered, and the one model = auto plays"),
        CLI_INT("use", 0, "N", 0, 1000000, &a.use, "play adapted model N of --list (0: the shipped model)"),
        CLI_FLAG("reset", 0, &a.reset, "back to the shipped model (until the next kept adapt)"),
        CLI_FLAG("if-new", 0, &a.if_new, "only when a journal session is newer than the last adapt's "
                 "verdict on the journal (continuo-adapt.timer)"),
        CLI_FILE("journal", 0, "DIR", &a.journal, "the journal folder (default: the state folder's)"),
        CLI_FILE("model", 0, "FILE", &a.model, "the model to start from (default: the config's model, "
                 "$CONTINUO_MODEL, the shipped one)"),
        CLI_FILE("reference", 0, "FILE.tok", &a.reference, "the general reference (default: the shipped "
                 "adapt-reference.tok)"),
        CLI_INT("threads", 0, "N", 1, 64, &a.threads, "PyTorch threads (default 1)"),
        CLI_DOUBLE("lr", 0, "R", 1e-7, 1, &a.lr, "learning rate (default 3e-4)"),
        CLI_DOUBLE("kl-weight", 0, "W", 0, 100, &a.kl_weight, "the pull toward the start model's odds "
                   "(default 0.3; 0: none)"),
        CLI_DOUBLE("replay-weight", 0, "W", 0, 100, &a.replay_weight, "the pull toward the start model's odds "
                   "on general music (adapt-replay.tok; default 3; 0: none)"),
        CLI_DOUBLE("blend", 0, "S", 0, 0.01, &a.blend, "scale the fine-tune's step back until the general "
                   "reference scores at most this share above the start model (default 0.005; 0: never)"),
        CLI_FLAG("no-memory", 0, &a.no_memory, "the weights alone: no memory of the notes played in the "
                 "adapted model (it keeps them to follow a piece played again)"),
        CLI_INT("transpose", 0, "N", 0, 12, &a.transpose, "the player's crops moved by up to N semitones "
                "(default 3; 0: in the keys played, which fits the pieces played more)"),
        CLI_INT("max-steps", 0, "N", 0, 100000000, &a.max_steps, "training steps at most (0: score only)"),
        CLI_FILE("output", 'o', "FILE.gguf", &a.output, "also write the adapted model here, kept or not "
                 "(to measure it: bench/adapt_player.py)"),
        CLI_OPT_CONFIG(&a.config),
        CLI_OPT_HELP,
        CLI_END
    };
    const cli_spec spec = { .name = "adapt", .usage = adapt_usage, .options = options, .max_operands = CLI_MANY };
    int n_in, status = cli_parse(&spec, argc, argv, &n_in);
    if (status != CLI_GO_ON)
        return status;
    if (a.list + (a.use >= 0) + a.reset > 1 || ((a.list || a.use >= 0 || a.reset) && n_in > 0)) {
        fprintf(stderr, "continuo adapt: --list, --use and --reset go alone\n");
        return 2;
    }
    char dir[ADAPTED_PATH_MAX];
    if (adapted_dir(dir, sizeof dir) != 0)
        return 1;
    if (a.list)
        return list_models(dir);
    if (a.use >= 0 || a.reset)
        return use_model(dir, a.reset ? 0 : a.use);
    return adapt_run(&a, argv + 1, n_in, dir);
}

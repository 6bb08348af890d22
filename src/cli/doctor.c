/* doctor.c: `continuo doctor`: one line per thing `continuo serve` needs, each with a fix when it fails. */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "cli/commands.h"
#include "cli/opts.h"
#include "daemon/adapted.h"
#include "daemon/control.h"
#include "daemon/linksync.h"
#include "daemon/options.h"
#include "io/midi_port.h"
#include "model/model.h"
#include "synth/fluid.h"
#include "util/clock.h"
#include "util/log.h"

#define NEED_EPS 800.0      /* events/s: 20x real time at 40 events/s of playing */

static const char doctor_usage[] =
    "usage: continuo doctor [--config FILE] [--set KEY=VALUE ...]\n"
    "\n"
    "Checks what `continuo serve` needs with the config it would read (the same\n"
    "file and --set options): the config file, the ALSA sequencer, the MIDI ports,\n"
    "the soundfont, the audio drivers, the model and its speed, the control\n"
    "socket's folder.  One line each: ok, warn (serve starts, but see the fix) or\n"
    "FAIL (serve would not start), with a fix.  Exits 0 only when serve would\n"
    "start with this config.\n";

typedef struct doctor {
    int fails, warns;
} doctor;

/* One line: "ok    what  text" and, when not ok, "      fix: ...". */
static void report(doctor *d, int level, const char *what, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

enum { OK, WARN, FAIL, INFO };

static void report(doctor *d, int level, const char *what, const char *fix, const char *fmt, ...)
{
    static const char *const tag[] = { "ok", "warn", "FAIL", "--" };
    va_list ap;
    fflush(stderr);
    printf("%-5s %-11s ", tag[level], what);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (fix && (level == WARN || level == FAIL))
        printf("      %-11s fix: %s\n", "", fix);
    fflush(stdout);
    d->fails += level == FAIL;
    d->warns += level == WARN;
}

/* 1 when the comma-separated LIST has an entry BACKEND or BACKEND:... */
static int uses(const char *list, const char *backend)
{
    size_t n = strlen(backend);
    for (const char *p = list; *p; ) {
        while (*p == ' ' || *p == ',')
            p++;
        if (strncmp(p, backend, n) == 0 && (p[n] == ',' || p[n] == ':' || p[n] == ' ' || !p[n]))
            return 1;
        p = strchr(p, ',');
        if (!p)
            break;
    }
    return 0;
}

/* ---- the config file ---- */

static int check_config(doctor *d, config *c, const char *path_arg, const char **sets, int n_sets)
{
    char found[CONFIG_STR_MAX], source[CONFIG_STR_MAX + 16], why[512];
    const char *path = path_arg;
    config_defaults(c);
    if (!path && config_find_file(found, sizeof found))
        path = found;
    if (path) {
        int r = config_load_file(c, path);
        if (r < 0) {
            report(d, FAIL, "config", "correct the line named above (`continuo serve --dump-config` "
                   "shows every key with its default)", "%s: cannot be used (see above)", path);
            return -1;
        }
        if (r > 0)
            report(d, WARN, "config", "remove or correct the keys named above",
                   "%s: %d unknown key(s), ignored (see above)", path, r);
        else
            report(d, OK, "config", NULL, "%s", path);
    } else {
        report(d, OK, "config", NULL, "no config file (built-in defaults); looked in "
               "$XDG_CONFIG_HOME/continuo and $XDG_CONFIG_DIRS (/etc/xdg)/continuo");
    }
    for (int i = 0; i < n_sets; i++)
        if (config_set_arg(c, sets[i]) < 0) {
            report(d, FAIL, "config", "see `continuo serve --dump-config`", "--set %s: bad (see above)",
                   sets[i]);
            return -1;
        }
    if (config_check(c, why, sizeof why) < 0) {
        report(d, FAIL, "config", "give each controller key its own controller, or -1 (off)",
               "%s: %s", config_source(path, n_sets, source, sizeof source), why);
        return -1;
    }
    return 0;
}

/* ---- MIDI: the sequencer, the ports, the configured input and output ---- */

typedef struct port_names {
    char   text[1024];
    int    n;
} port_names;

static void add_port(const midi_port_info *info, void *user)
{
    port_names *p = user;
    size_t k = strlen(p->text);
    if (strcmp(info->backend, "null") == 0)
        return;     /* always there: not a port anyone plays on */
    if (k + 4 < sizeof p->text)
        snprintf(p->text + k, sizeof p->text - k, "%s%s \"%s\" (%s%s%s)", k ? "," : "", info->spec,
                 info->description, info->dirs & MIDI_IN ? "in" : "",
                 info->dirs == (MIDI_IN | MIDI_OUT) ? "/" : "", info->dirs & MIDI_OUT ? "out" : "");
    p->n++;
}

/* The ALSA sequencer device: FAIL when the config's input or output uses it, else WARN. */
static void check_sequencer(doctor *d, const config *c)
{
    int need_seq = uses(c->input, "alsa") || uses(c->output, "alsa");
    struct stat st;
    if (stat("/dev/snd/seq", &st) == 0)
        report(d, OK, "sequencer", NULL, "ALSA sequencer /dev/snd/seq present");
    else
        report(d, need_seq ? FAIL : WARN, "sequencer",
               "load it: sudo modprobe snd-seq (in a container: pass --device /dev/snd); or take MIDI "
               "from elsewhere: input=portmidi:NAME, input=raw:/dev/snd/midiC1D0 or input=fifo:PATH, "
               "and output=fluidsynth or raw:PATH",
               "no ALSA sequencer (/dev/snd/seq: %s)%s", strerror(errno),
               need_seq ? "; the config uses it (input or output = alsa)" : "");
}

/* The ports every backend lists, with stderr silenced while they are asked. */
static void check_ports(doctor *d)
{
    port_names names = { "", 0 };
    fflush(stdout);
    int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
    if (saved >= 0 && null >= 0)
        dup2(null, STDERR_FILENO);      /* the backends that cannot be asked say why above */
    midi_port_list(add_port, &names);
    if (saved >= 0) {
        dup2(saved, STDERR_FILENO);
        close(saved);
    }
    if (null >= 0)
        close(null);
    if (names.n)
        report(d, OK, "midi ports", NULL, "%d seen:%s", names.n, names.text);
    else
        report(d, WARN, "midi ports", "plug in a MIDI keyboard (and check `aconnect -l`), or start the DAW "
               "that should talk to continuo", "none seen by any backend (alsa, portmidi)");
}

/* SPEC "fifo:PATH": serve creates the FIFO, so it is enough that PATH
 * exists or that its folder can be written in. */
static void check_fifo(doctor *d, const char *what, const char *spec)
{
    char dir[CONFIG_STR_MAX];
    snprintf(dir, sizeof dir, "%s", spec + 5);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    const char *dd = slash ? (dir[0] ? dir : "/") : ".";
    if (access(spec + 5, F_OK) == 0 || access(dd, W_OK | X_OK) == 0)
        report(d, OK, what, NULL, "%s", spec);
    else
        report(d, FAIL, what, "create the folder, or choose another path", "%s: folder %s: %s",
               spec, dd, strerror(errno));
}

/* One entry S of input (OUT 0) or output (OUT 1), opened and closed again as serve would open it. */
static void check_endpoint(doctor *d, const config *c, const char *s, int out)
{
    const char *what = out ? "midi output" : "midi input";
    if (!*s || strcmp(s, "none") == 0 || strcmp(s, "fluidsynth") == 0)
        return;
    if (strncmp(s, "fifo:", 5) == 0) {
        check_fifo(d, what, s);
        return;
    }
    if (strncmp(s, "alsa", 4) == 0 && (s[4] == ':' || !s[4]) && access("/dev/snd/seq", F_OK) != 0)
        return;     /* check_sequencer said so */
    char spec[2 * CONFIG_STR_MAX + 8];
    if (strcmp(s, "alsa") == 0 && !out && c->input_connect[0])
        snprintf(spec, sizeof spec, "alsa:%s", c->input_connect);   /* as serve opens it */
    else
        snprintf(spec, sizeof spec, "%s", s);
    midi_port *p = midi_port_open(spec, out ? MIDI_OUT : MIDI_IN);
    if (p)
        report(d, OK, what, NULL, "%s opens", s);
    else
        report(d, FAIL, what, out ? "another output (see `continuo serve --list-ports`), or output=fluidsynth"
               : "another input (see `continuo serve --list-ports`)", "%s does not open (see above)", s);
    midi_port_close(p);
}

static void check_midi(doctor *d, const config *c)
{
    check_sequencer(d, c);
    check_ports(d);
    const char *lists[2] = { c->input, c->output };
    for (int out = 0; out < 2; out++) {
        char list[CONFIG_STR_MAX], *save = NULL;
        snprintf(list, sizeof list, "%s", lists[out]);
        for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
            while (*s == ' ')
                s++;
            check_endpoint(d, c, s, out);
        }
    }
}

/* ---- sound: the soundfont, the audio drivers ---- */

/* Probes DRIVER in a child (its libraries may print, hang or try to start
 * a JACK server): 0 when it opens, else -1 with the cause in WHY. */
static int probe_driver(const char *driver, const char *device, char *why, size_t len)
{
    int fds[2];
    if (pipe(fds) < 0) {
        snprintf(why, len, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, len, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        char buf[512];
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        close(fds[0]);
        setenv("JACK_NO_START_SERVER", "1", 1);
        alarm(5);
        int r = synth_fluid_probe(driver, device, buf, sizeof buf);
        ssize_t w = write(fds[1], r == 0 ? "" : buf, r == 0 ? 0 : strlen(buf));
        (void)w;
        _exit(r == 0 ? 0 : 1);
    }
    close(fds[1]);
    size_t k = 0;
    ssize_t got;
    while (k + 1 < len && (got = read(fds[0], why + k, len - 1 - k)) > 0)
        k += (size_t)got;
    why[k] = '\0';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
        snprintf(why, len, WTERMSIG(status) == SIGALRM ? "did not open within 5 s"
                 : "crashed while opening (signal %d)", WTERMSIG(status));
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (!why[0])
        snprintf(why, len, "FluidSynth could not open it");
    return -1;
}

/* The soundfont: loaded when output uses FluidSynth, else only looked at.
 * FATAL is the level of a failure, SKIP a note for lines that do not matter. */
static void check_soundfont(doctor *d, const config *c, int need, int fatal, const char *skip)
{
    struct stat st;
    errno = 0;
    if (stat(c->soundfont, &st) == 0 && S_ISREG(st.st_mode) && need) {
        synth_fluid_opts so = { .soundfont = c->soundfont, .gain = c->gain };
        synth_fluid *sf = synth_fluid_open(&so);
        if (sf)
            report(d, OK, "soundfont", NULL, "%s (%.0f MB) loads", c->soundfont, st.st_size / 1e6);
        else
            report(d, fatal, "soundfont", "soundfont = PATH of a General MIDI .sf2 file (apt-get install "
                   "fluid-soundfont-gm), or on_missing_soundfont=midi-only", "%s: does not load (see above)",
                   c->soundfont);
        synth_fluid_close(sf);
    } else if (errno == 0 && S_ISREG(st.st_mode)) {
        report(d, OK, "soundfont", NULL, "%s (%.0f MB)%s", c->soundfont, st.st_size / 1e6, skip);
    } else
        report(d, fatal, "soundfont", "apt-get install fluid-soundfont-gm, or soundfont = PATH of a .sf2 "
               "file; or on_missing_soundfont=midi-only to go on without sound",
               "%s: %s%s", c->soundfont, errno ? strerror(errno) : "not a regular file", skip);
}

/* What probing FluidSynth's audio drivers found. */
typedef struct driver_probe {
    char opened[512];       /* the drivers that open, ", " between */
    char failed[2048];      /* "driver (cause)" of those that do not, "; " between */
    int configured;         /* audio_driver: 1 opens, 0 does not, -1 not among them */
} driver_probe;

/* Probes each of DRIVERS (comma-separated), the configured one, DRV, with
 * the config's audio_device.  "file" is not probed: it always opens. */
static void probe_drivers(driver_probe *pr, const config *c, const char *drivers, const char *drv)
{
    char list[512], why[512], *save = NULL;
    pr->opened[0] = pr->failed[0] = '\0';
    pr->configured = -1;
    snprintf(list, sizeof list, "%s", drivers);
    for (char *s = strtok_r(list, ", ", &save); s; s = strtok_r(NULL, ", ", &save)) {
        int mine = strcmp(s, drv) == 0, opens = 1;
        if (strcmp(s, "file") != 0) {
            opens = probe_driver(s, mine ? c->audio_device : NULL, why, sizeof why) == 0;
            size_t k = strlen(opens ? pr->opened : pr->failed);
            if (opens)
                snprintf(pr->opened + k, sizeof pr->opened - k, "%s%s", k ? ", " : "", s);
            else
                snprintf(pr->failed + k, sizeof pr->failed - k, "%s%s (%s)", k ? "; " : "", s, why);
        }
        if (mine)
            pr->configured = opens;
    }
}

/* The probe's lines: all drivers, those that open, those that do not, and the configured one. */
static void report_drivers(doctor *d, const config *c, const char *drivers, const char *drv,
                           const driver_probe *pr, int fatal, const char *skip)
{
    report(d, INFO, "audio", NULL, "FluidSynth's drivers: %s", drivers);
    if (pr->opened[0])
        report(d, OK, "audio", NULL, "open here: %s, file", pr->opened);
    if (pr->failed[0])
        report(d, pr->opened[0] ? INFO : WARN, "audio", pr->opened[0] ? NULL
               : "a sound card or sound server is needed to hear continuo here: start PipeWire/PulseAudio "
                 "or JACK, or check `aplay -l`; or output=alsa to play through a DAW or another synth",
               "do not open: %s", pr->failed);
    char fix[1024];
    snprintf(fix, sizeof fix, "audio_driver = %s%s, output=alsa to play through a DAW or another synth "
             "(continuo:out), or on_missing_soundfont=midi-only to go on without sound",
             pr->opened[0] ? "one that opens: " : "another driver once one opens", pr->opened);
    if (pr->configured == 1)
        report(d, OK, "audio", NULL, "audio_driver = %s%s%s opens%s", drv, c->audio_device[0] ? ", device " : "",
               c->audio_device, skip);
    else if (pr->configured == 0)
        report(d, fatal, "audio", fix, "audio_driver = %s (device %s) does not open%s", drv,
               c->audio_device[0] ? c->audio_device : "default", skip);
    else
        report(d, fatal, "audio", fix, "audio_driver = %s: this FluidSynth has no such driver%s", drv, skip);
}

/* The soundfont and the audio drivers: failures are FAIL or WARN (by
 * on_missing_soundfont) when output uses FluidSynth, else only notes. */
static void check_sound(doctor *d, const config *c)
{
    int need = uses(c->output, "fluidsynth");
    int fatal = !need ? INFO : c->on_missing_soundfont == MISSING_SF_ERROR ? FAIL : WARN;
    const char *skip = need ? "" : " (not used: output has no fluidsynth)";
    char drivers[512], drv[32];
    driver_probe pr;

    check_soundfont(d, c, need, fatal, skip);
    synth_fluid_drivers(drivers, sizeof drivers);
    if (!drivers[0]) {
        report(d, fatal, "audio", "install a build with FluidSynth (libfluidsynth-dev) and rebuild; "
               "or output=alsa to play through a DAW or another synth", "no FluidSynth in this build%s", skip);
        return;
    }
    config_enum_name(config_find("audio_driver"), c->audio_driver, drv, sizeof drv);
    probe_drivers(&pr, c, drivers, drv);
    report_drivers(d, c, drivers, drv, &pr, fatal, skip);
}

/* ---- the model and its speed ---- */

static void check_model(doctor *d, const config *c)
{
    model m;
    model_state s;
    const struct vocab *v;
    if (strcmp(c->model, "echo") == 0) {
        report(d, OK, "model", NULL, "echo (model-free test engine: answers with the phrase a fifth up)");
        return;
    }
    char adapted[ADAPTED_PATH_MAX];
    const char *file = adapted_model_for(c->model, adapted, sizeof adapted);
    if (model_open(&m, file, &v) != 0) {
        report(d, FAIL, "model", "model = PATH of a .gguf model (`continuo serve --dump-config`), "
               "or install continuo's default model", "%s: cannot be loaded (see above)",
               file ? file : "the default model");
        return;
    }
    char path[CONFIG_STR_MAX];
    if (model_resolve_path(file, path, sizeof path) != 0)
        snprintf(path, sizeof path, "%s", file ? file : "(default)");
    if (model_state_init(&s, &m, c->model_threads) != 0) {
        report(d, FAIL, "model", "a smaller model, or more memory", "%s: loaded, but no memory for its state",
               path);
        model_free(&m);
        return;
    }
    /* Decode speed at half the context serve keeps: what a continuation costs. */
    int ctx = c->context_events < m.cfg.context ? c->context_events : m.cfg.context;
    int n_pre = ctx / 2 > 1 ? ctx / 2 : 1, n_dec = 128;
    if (n_pre + n_dec > m.cfg.context)
        n_dec = m.cfg.context - n_pre;
    int *toks = malloc(sizeof(int) * (size_t)n_pre);
    double eps = 0;
    if (toks && n_dec > 0) {
        for (int i = 0; i < n_pre; i++)
            toks[i] = (i * 7 + 3) % m.cfg.vocab_size;
        if (model_prefill(&s, toks, n_pre, NULL) == 0) {
            double t0 = clock_now_seconds();
            int i;
            for (i = 0; i < n_dec; i++)
                if (!model_decode(&s, (i * 13 + 5) % m.cfg.vocab_size))
                    break;
            double dt = clock_now_seconds() - t0;
            eps = i == n_dec && dt > 0 ? n_dec / dt : 0;
        }
    }
    free(toks);
    if (eps <= 0)
        report(d, FAIL, "model", "check the model file (`continuo eval`)", "%s: loaded, but decoding failed", path);
    else if (eps < NEED_EPS)
        report(d, WARN, "model", "model_threads = 2 or more on a machine with cores to spare, a smaller "
               "context_events, a smaller model, or a machine with less else to do",
               "%s: decodes %.0f events/s here at context %d (%d thread(s)): below the %.0f events/s "
               "(20x real time) a live answer needs", path, eps, n_pre, c->model_threads, NEED_EPS);
    else
        report(d, OK, "model", NULL, "%s: decodes %.0f events/s here at context %d (%.1fx the %.0f events/s "
               "live answers need)", path, eps, n_pre, eps / NEED_EPS, NEED_EPS);
    model_state_free(&s);
    model_free(&m);
}

/* ---- adapt: PyTorch, and the last run ---- */

/* PyTorch's version, as the Python `continuo adapt` runs imports it, into
 * OUT; 0, or -1 when it does not import (OUT: why). */
static int torch_version(char *out, size_t len)
{
    const char *py = getenv("CONTINUO_PYTHON");
    char cmd[512], line[128] = "";
    snprintf(cmd, sizeof cmd, "'%s' -c 'import numpy, torch; print(torch.__version__)' 2>/dev/null",
             py && *py && !strchr(py, '\'') ? py : "/usr/bin/python3");
    FILE *fp = popen(cmd, "r");
    if (!fp) {
        snprintf(out, len, "cannot run Python: %s", strerror(errno));
        return -1;
    }
    int got = fgets(line, sizeof line, fp) != NULL;
    int status = pclose(fp);
    line[strcspn(line, "\n")] = '\0';
    if (!got || status != 0) {
        snprintf(out, len, "PyTorch and NumPy do not import");
        return -1;
    }
    snprintf(out, len, "%s", line);
    return 0;
}

/* Not a problem for serve either way: INFO and WARN only. */
static void check_adapt(doctor *d)
{
    char version[128], dir[ADAPTED_PATH_MAX];
    adapted_last_run last;
    if (torch_version(version, sizeof version) == 0)
        report(d, OK, "adapt", NULL, "PyTorch %s: `continuo adapt` can run", version);
    else
        report(d, INFO, "adapt", NULL, "%s: `continuo adapt` needs them (sudo apt install python3-torch "
               "python3-numpy); serve does not", version);
    if (adapted_dir(dir, sizeof dir) != 0)
        return;
    if (adapted_read_last_run(dir, &last) == 0)
        report(d, INFO, "adapt", NULL, "last run %s: %s (%s/last-run)", last.date, last.verdict, dir);
    else
        report(d, INFO, "adapt", NULL, "never ran here (%s; continuo-adapt.timer runs it at night once "
               "enabled: systemctl --user enable --now continuo-adapt.timer)", dir);
}

/* ---- the control socket ---- */

static void check_socket(doctor *d, const config *c)
{
    char sock[CONFIG_STR_MAX], dir[CONFIG_STR_MAX];
    struct stat st;
    if (c->control_socket[0]) {
        snprintf(sock, sizeof sock, "%s", c->control_socket);
    } else {
        const char *rt = getenv("XDG_RUNTIME_DIR");
        if (!rt || rt[0] != '/') {
            report(d, FAIL, "socket", "log in through a session that sets XDG_RUNTIME_DIR (systemd-logind), "
                   "export XDG_RUNTIME_DIR=/run/user/$(id -u), or control_socket = /tmp/continuo-$USER/ctl",
                   "XDG_RUNTIME_DIR is not set: nowhere to put the control socket");
            return;
        }
        snprintf(sock, sizeof sock, "%s/continuo/ctl", rt);
    }
    snprintf(dir, sizeof dir, "%s", sock);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir)
        *slash = '\0';
    struct sockaddr_un sa;
    if (strlen(sock) >= sizeof sa.sun_path) {
        report(d, FAIL, "socket", "a shorter control_socket path", "%s: longer than a socket path can be "
               "(%zu bytes)", sock, sizeof sa.sun_path - 1);
        return;
    }
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
            report(d, FAIL, "socket", "fix the folder's owner or mode (chmod 700), or another control_socket",
                   "%s: %s", dir, !S_ISDIR(st.st_mode) ? "not a folder" : "not writable by this user");
            return;
        }
    } else {
        char parent[CONFIG_STR_MAX];
        snprintf(parent, sizeof parent, "%s", dir);
        char *p = strrchr(parent, '/');
        if (p && p != parent)
            *p = '\0';
        if (access(parent, W_OK | X_OK) != 0) {
            report(d, FAIL, "socket", "create it, or another control_socket", "%s: missing, and %s is not "
                   "writable (%s)", dir, parent, strerror(errno));
            return;
        }
    }
    /* A service that answers there already: serve would refuse. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, sock, strlen(sock) + 1);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
        report(d, FAIL, "socket", "stop it (systemctl --user stop continuo, or `continuo ctl status` to see it), "
               "or give this one another control_socket", "%s: another continuo serve answers there", sock);
    else
        report(d, OK, "socket", NULL, "%s (folder %s usable)", sock, dir);
    if (fd >= 0)
        close(fd);
}

/* "yes" or "no": the user unit's PrivateNetwork= as its manager has it
 * loaded, or "" when there is no such unit (or no user manager). */
static void unit_private_network(char *out, size_t len)
{
    out[0] = '\0';
    FILE *p = popen("systemctl --user show --property=PrivateNetwork,LoadState continuo.service 2>/dev/null", "r");
    if (!p)
        return;
    char line[256], private_net[16] = "";
    int loaded = 0;
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "PrivateNetwork=", 15) == 0)
            snprintf(private_net, sizeof private_net, "%.8s", line + 15);
        else if (strcmp(line, "LoadState=loaded") == 0)
            loaded = 1;
    }
    pclose(p);
    if (loaded)
        snprintf(out, len, "%s", private_net);
}

/* sync = link: built with Link, IPv4 sockets allowed, a network beyond
 * loopback here, and the user unit's network not private. */
static void check_sync(doctor *d, const config *c)
{
    char name[16];
    const char *dropin = "install the drop-in: mkdir -p ~/.config/systemd/user/continuo.service.d && cp "
                         CONTINUO_DATADIR "/link.conf ~/.config/systemd/user/continuo.service.d/ && "
                         "systemctl --user daemon-reload && systemctl --user restart continuo";
    if (c->sync != SYNC_LINK) {
        report(d, OK, "sync", NULL, "sync = %s%s", config_format(c, config_find("sync"), name, sizeof name),
               link_sync_built() ? " (this build can also sync = link)" : "");
        return;
    }
    if (!link_sync_built()) {
        report(d, FAIL, "sync", "install ableton-link-dev and rebuild (meson -Dlink=enabled), or sync = clock",
               "sync = link: this continuo was built without Ableton Link");
        return;
    }
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) {
        report(d, FAIL, "sync", dropin, "sync = link: no IPv4 socket here (%s): the sandbox allows only "
               "other address families (RestrictAddressFamilies=)", strerror(errno));
        return;
    }
    close(s);
    struct ifaddrs *ifs = NULL, *i;
    char seen[512] = "";
    size_t used = 0;
    if (getifaddrs(&ifs) == 0) {
        for (i = ifs; i; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP)
                && !(i->ifa_flags & IFF_LOOPBACK) && used < sizeof seen)
                used += (size_t)snprintf(seen + used, sizeof seen - used, " %s", i->ifa_name);
        freeifaddrs(ifs);
    }
    char unit[16];
    unit_private_network(unit, sizeof unit);
    if (strcmp(unit, "yes") == 0)
        report(d, WARN, "sync", dropin, "sync = link, but the user unit continuo.service has PrivateNetwork=yes: "
               "run by it, continuo sees only its own loopback and no Link peer");
    else if (!seen[0])
        report(d, WARN, "sync", "connect to the network the other Link apps are on (or, under the user unit, "
               "install its drop-in)", "sync = link, but the network is private here: no IPv4 interface "
               "beyond loopback is up, so Link finds only peers on this machine");
    else
        report(d, OK, "sync", NULL, "sync = link: Ableton Link can use%s%s", seen,
               unit[0] ? " (the user unit's network is open)" : "");
}

int cmd_doctor(int argc, char **argv)
{
    const char *path = NULL, *set_item[256];
    cli_list sets = { set_item, 0, 256 };
    doctor d = { 0, 0 };
    config c;
    const cli_option options[] = { CLI_OPT_CONFIG(&path), CLI_OPT_SET(&sets), CLI_OPT_HELP, CLI_END };
    const cli_spec spec = { .name = "doctor", .usage = doctor_usage, .options = options };
    int n_in;
    int rc = cli_parse(&spec, argc, argv, &n_in);
    if (rc != CLI_GO_ON)
        return rc;
    /* One report in order: the errors of the parts checked go with it. */
    fflush(stdout);
    dup2(STDOUT_FILENO, STDERR_FILENO);
    if (check_config(&d, &c, path, sets.item, sets.n) == 0) {
        check_midi(&d, &c);
        check_sound(&d, &c);
        check_model(&d, &c);
        check_adapt(&d);
        check_socket(&d, &c);
        check_sync(&d, &c);
    }
    if (d.fails)
        printf("\n%d problem(s) stop `continuo serve` from starting with this config; see the fixes above.\n",
               d.fails);
    else
        printf("\n`continuo serve` can start with this config%s.\n", d.warns ? " (see the warnings)" : "");
    return d.fails ? 1 : 0;
}

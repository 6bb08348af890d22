/* commands.c: the control commands as one table (name, arguments, handler, help); dispatch is a lookup. */
#include "daemon/commands.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/service.h"
#include "util/clock.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* p50/p90/p99/max of the last samples, in ms, into BUF. */
static void percentiles(char *buf, size_t len, const char *name, int64_t *v, size_t n, double unit)
{
    if (n == 0) {
        snprintf(buf, len, " %s_n=0", name);
        return;
    }
    qsort(v, n, sizeof *v, cmp_i64);
    snprintf(buf, len, " %s_n=%zu %s_p50=%.3f %s_p90=%.3f %s_p99=%.3f %s_max=%.3f", name, n,
             name, v[n / 2] / unit, name, v[n * 9 / 10] / unit, name, v[n * 99 / 100] / unit,
             name, v[n - 1] / unit);
}

/* The knobs and the candidates (play_options.h's PLAY_KNOB_OPTIONS rows)
 * after the status line's counters, each as `get` gives it: a value that
 * can hold a space (a key's) in quotes; density says when the pace rule it
 * works through is off. */
#define KNOB_NAME(KEY, CLI, KIND, FIELD, DEF, LO, HI, ARG, APPLY, HELP) KEY,
static void status_knobs(const config *c, char *reply, size_t len)
{
    static const char *const knobs[] = { PLAY_KNOB_OPTIONS(KNOB_NAME) };
    char value[CONFIG_STR_MAX];
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        const option_def *o = config_find(knobs[i]);
        const char *quote = o->vtype && o->vtype->spaced ? "\"" : "";
        int pace_off = strcmp(o->name, "density") == 0 && c->play.sampling.pace <= 0 && c->play.density != 1;
        size_t used = strlen(reply);
        if (used >= len)
            return;
        snprintf(reply + used, len - used, " %s=%s%s%s%s", o->name, quote,
                 config_format(c, o, value, sizeof value), quote, pace_off ? "(off:pace=0)" : "");
    }
}

/* The phrase end: how it is decided (and auto's bias), the answers' delay
 * from the player's last release to their first note (phrases ended by
 * silence or a verdict), the verdicts taken (sooner than the silence rule),
 * how sure the last one was (turn_verdict's margin: what phrase_end_bias it passed), the
 * barge-ins (the player played within 2 s of such an answer's start). */
static void status_turn(service *sv, int64_t *tmp, char *reply, size_t len)
{
    char delay[256], how[16], margin[32] = "none";
    if (sv->cfg.phrase_end == PHRASE_END_AUTO && !isnan(sv->cont.margin))
        snprintf(margin, sizeof margin, "%+.2f", sv->cont.margin);
    size_t d = sv->n_delay < LAT_SAMPLES ? sv->n_delay : LAT_SAMPLES, used = strlen(reply);
    memcpy(tmp, sv->delay_ns, d * sizeof *tmp);
    percentiles(delay, sizeof delay, "answer_delay_ms", tmp, d, 1e6);
    if (used < len)
        snprintf(reply + used, len - used, " phrase_end=%s phrase_end_bias=%g%s judged=%" PRIu64
                 " judged_early=%" PRIu64 " phrase_end_margin=%s barge_ins=%" PRIu64,
                 config_format(&sv->cfg, config_find("phrase_end"), how, sizeof how), sv->cfg.phrase_end_bias,
                 delay, sv->cont.judged, sv->cont.judged_early, margin, sv->barge_ins);
}

/* " model=FILE" (in quotes when it holds a space): the model file in use,
 * and the one loading, if any. */
static void status_model(const service *sv, char *reply, size_t len)
{
    const model_switch *ms = &sv->models;
    size_t used = strlen(reply);
    const char *q = strchr(ms->in_use, ' ') ? "\"" : "";
    if (used < len && ms->in_use[0])
        used += (size_t)snprintf(reply + used, len - used, " model=%s%s%s", q, ms->in_use, q);
    q = strchr(ms->want, ' ') ? "\"" : "";
    if (used < len && ms->want[0] && (ms->loading || ms->swapping))
        snprintf(reply + used, len - used, " model_loading=%s%s%s", q, ms->want, q);
}

/* The watchers now, and the model note-ons' attention records the loop
 * had not taken when the generator sent them (docs/WATCH.md). */
static void status_watch(service *sv, char *reply, size_t len)
{
    size_t used = strlen(reply);
    if (used < len)
        snprintf(reply + used, len - used, " watchers=%d watch_heads_dropped=%" PRIu64, sv->ctl.watchers,
                 (uint64_t)atomic_load(&sv->gen.heads_dropped));
}

static void cmd_status(service *sv, char *arg, char *rest, char *reply, size_t len)
{
    static int64_t tmp[SCHED_LATE_SAMPLES];
    char lat[256], err[256];
    (void)arg;
    (void)rest;
    size_t n = sv->n_lat < LAT_SAMPLES ? sv->n_lat : LAT_SAMPLES;
    memcpy(tmp, sv->lat_ns, n * sizeof *tmp);
    percentiles(lat, sizeof lat, "latency_ms", tmp, n, 1e6);
    size_t m = sv->sched.n_late_samples < SCHED_LATE_SAMPLES ? sv->sched.n_late_samples : SCHED_LATE_SAMPLES;
    for (size_t i = 0; i < m; i++)
        tmp[i] = sv->sched.late_us[i];
    percentiles(err, sizeof err, "timing_error_ms", tmp, m, 1e3);
    snprintf(reply, len,
             "ok state=%s engine=%s uptime=%.1f phrases=%" PRIu64 " responses=%" PRIu64
             " interrupted=%" PRIu64 " notes_in=%" PRIu64 " notes_out=%" PRIu64
             " sounding=%d queued=%zu swept=%" PRIu64 " dropped=%" PRIu64 " recorded=%zu+%zu%s%s",
             service_responding(sv) ? "responding" : "listening", sv->gen.engine->name,
             session_time(sv, clock_now_ns()), sv->phrase.phrases, sv->responses, sv->interrupted,
             sv->notes_in, sv->notes_out, sv->sched.notes.count + sv->thru.count,
             scheduler_queued(&sv->sched), sv->sched.swept,
             sv->sched.dropped_full + sv->sched.dropped_held,
             service_kept(sv, MIDI_PART_PLAYER), service_kept(sv, MIDI_PART_MODEL), lat, err);
    /* The clock: tempo (0: none heard yet), transport, where the song is;
     * with sync = link the session's tempo and whether it plays (as the
     * loop read them when Link's thread last woke it). */
    char sync_name[16];
    int64_t now = clock_now_ns();
    int link = sv->cfg.sync == SYNC_LINK && link_sync_joined(&sv->link);
    size_t used = strlen(reply);
    int64_t pos = transport_position(&sv->transport);
    int64_t bar_len = (int64_t)TRANSPORT_PPQN * sv->cfg.beats_per_bar;
    if (used < len)
        snprintf(reply + used, len - used,
                 " sync=%s tempo=%.2f clock=%s transport=%s bar=%" PRId64 " beat=%" PRId64 " mode=%s"
                 " on_tick=%" PRIu64 " off_tick=%" PRIu64 " duet_thinned=%" PRIu64 " late_starts=%" PRIu64
                 " candidates_prepared=%" PRIu64,
                 config_format(&sv->cfg, config_find("sync"), sync_name, sizeof sync_name), link ? sv->link.tempo : transport_bpm(&sv->transport),
                 link ? "link" : transport_locked(&sv->transport, clock_now_ns()) ? "locked" : "none",
                 (link ? sv->link.playing : sv->transport.running) ? "playing" : "stopped", pos / bar_len + 1,
                 pos % bar_len / TRANSPORT_PPQN + 1, sv->cfg.mode == MODE_DUET ? "duet" : "call",
                 sv->cont.anchored, sv->cont.anchor_missed, sv->cont.duet_thinned, sv->cont.late_starts,
                 sv->cont.prepared);
    used = strlen(reply);
    if (used < len && link) {
        double q = sv->cfg.beats_per_bar;
        snprintf(reply + used, len - used, " link=joined link_peers=%u link_tempo=%.3f link_beat=%.3f"
                 " link_phase=%.3f link_playing=%s link_starts=%" PRIu64 " link_stops=%" PRIu64,
                 sv->link.peers, sv->link.tempo, link_sync_beat_at(&sv->link, now, q),
                 link_sync_phase_at(&sv->link, now, q), sv->link.playing ? "yes" : "no", sv->link.starts,
                 sv->link.stops);
    } else if (used < len) {
        snprintf(reply + used, len - used, " link=off");
    }
    status_turn(sv, tmp, reply, len);
    status_watch(sv, reply, len);
    status_model(sv, reply, len);
    status_knobs(&sv->cfg, reply, len);
    service_describe_outputs(sv, reply, len);
}

/* model: the setting and the file in use; model VALUE: as `set model
 * VALUE`, the file loading while the one in use plays on. */
static void cmd_model(service *sv, char *arg, char *rest, char *reply, size_t len)
{
    char value[CONFIG_STR_MAX + 2], why[1024];
    const model_switch *ms = &sv->models;
    if (!arg) {
        snprintf(reply, len, "ok model = %s: %.1500s%s%.1500s", sv->cfg.model, ms->in_use[0] ? ms->in_use : "none",
                 ms->loading || ms->swapping ? " plays, loading " : "", ms->loading || ms->swapping ? ms->want : "");
        return;
    }
    if (snprintf(value, sizeof value, "%s%s%s", arg, rest ? " " : "", rest ? rest : "") >= CONFIG_STR_MAX) {
        snprintf(reply, len, "error model: a value longer than %d bytes", CONFIG_STR_MAX - 1);
        return;
    }
    if (service_set_option(sv, config_find("model"), value, why, sizeof why) < 0)
        snprintf(reply, len, "error %.3000s", why);
    else if (ms->loading || ms->swapping)
        snprintf(reply, len, "ok model = %.1000s: loading %.1500s (%.1500s plays meanwhile)", sv->cfg.model, ms->want,
                 ms->in_use);
    else
        snprintf(reply, len, "ok model = %.1000s: %.1500s in use", sv->cfg.model, ms->in_use);
}

/* tempo: the tempo followed; tempo BPM: proposed to the Link session. */
static void cmd_tempo(service *sv, char *arg, char *rest, char *reply, size_t len)
{
    char why[1024];
    (void)rest;
    if (!arg) {
        snprintf(reply, len, "ok tempo = %.3f (%s)", sv->cfg.sync == SYNC_LINK ? sv->link.tempo
                 : transport_bpm(&sv->transport), sv->cfg.sync == SYNC_LINK ? "the Link session's"
                 : sv->cfg.sync == SYNC_CLOCK ? "the MIDI clock's" : "sync = free: none");
        return;
    }
    if (sv->cfg.sync != SYNC_LINK || !link_sync_joined(&sv->link)) {
        snprintf(reply, len, "error tempo %.64s: continuo sets a tempo only in an Ableton Link session "
                 "(sync = link); with sync = %s the %s", arg, sv->cfg.sync == SYNC_CLOCK ? "clock" : "free",
                 sv->cfg.sync == SYNC_CLOCK ? "DAW's clock sets it" : "answers keep the player's time");
        return;
    }
    const option_def *o = config_find("tempo");
    if (service_set_option(sv, o, arg, why, sizeof why) < 0)
        snprintf(reply, len, "error %.3000s", why);
    else
        snprintf(reply, len, "ok tempo = %.3f proposed to the Link session (%u peers)", sv->cfg.tempo,
                 sv->link.peers);
}

static void cmd_panic(service *sv, char *arg, char *rest, char *reply, size_t len)
{
    (void)arg;
    (void)rest;
    service_panic(sv, clock_now_ns());
    snprintf(reply, len, "ok all notes off");
}

static void cmd_get(service *sv, char *key, char *rest, char *reply, size_t len)
{
    char buf[CONFIG_STR_MAX];
    const option_def *o = config_find(key);
    (void)rest;
    if (!o)
        snprintf(reply, len, "error unknown key '%.64s'", key);
    else
        snprintf(reply, len, "ok %s = %.*s", o->name, (int)(len - 80),
                 config_format(&sv->cfg, o, buf, sizeof buf));
}

/* The value may hold spaces: it is the rest of the line. */
static void cmd_set(service *sv, char *key, char *value, char *reply, size_t len)
{
    char buf[CONFIG_STR_MAX], why[1024];
    const option_def *o = config_find(key);
    while (*value == ' ' || *value == '\t')
        value++;
    if (!o)
        snprintf(reply, len, "error unknown key '%.64s'", key);
    else if (config_needs_restart(o))
        snprintf(reply, len, "error %s cannot change while running "
                 "(edit the config file and restart)", o->name);
    else if (service_set_option(sv, o, value, why, sizeof why) < 0)
        snprintf(reply, len, "error %.3000s", why);
    else
        snprintf(reply, len, "ok %s = %.*s", o->name, (int)(len - 80),
                 config_format(&sv->cfg, o, buf, sizeof buf));
}

static void cmd_reload(service *sv, char *arg, char *rest, char *reply, size_t len)
{
    (void)arg;
    (void)rest;
    sv->reload = 1;
    snprintf(reply, len, sv->config_path ? "ok reloading %.3000s" : "ok reloading%.0s",
             sv->config_path ? sv->config_path : "");
}

/* The path may hold spaces: the first word and the rest of the line. */
static void cmd_save(service *sv, char *first, char *rest, char *reply, size_t len)
{
    char path[CONFIG_STR_MAX];
    snprintf(path, sizeof path, "%s%s%s", first, rest ? " " : "", rest ? rest : "");
    if (path[0] != '/')
        snprintf(reply, len, "error save needs an absolute path");
    else if (service_save(sv, path) != 0)
        snprintf(reply, len, "error cannot write %.3000s (see the service log)", path);
    else {
        snprintf(reply, len, "ok saved %zu player and %zu model events to %.3000s",
                 service_kept(sv, MIDI_PART_PLAYER), service_kept(sv, MIDI_PART_MODEL), path);
        watch_mark(sv, "saved", session_time(sv, clock_now_ns()), "\"what\":\"session\"");
    }
}

/* A file name may hold spaces: the rest of the line is part of it. */
static void cmd_play(service *sv, char *first, char *rest, char *reply, size_t len)
{
    char path[CONFIG_STR_MAX];
    snprintf(path, sizeof path, "%s%s%s", first, rest ? " " : "", rest ? rest : "");
    if (path[0] != '/')
        snprintf(reply, len, "error play needs an absolute path");
    else
        live_play_file(sv, path, reply, len);
}

static void cmd_takes(service *sv, char *arg, char *rest, char *reply, size_t len)
{
    (void)arg;
    (void)rest;
    snprintf(reply, len, "ok ");
    takes_list(&sv->takes, reply + 3, len - 3);
}

/* A take's number: "3" or "#3". */
static int take_number(const char *word, unsigned *n)
{
    char *end;
    unsigned long v = strtoul(word[0] == '#' ? word + 1 : word, &end, 10);
    if (!*word || *end || v == 0 || v > 0xFFFFFFFFul)
        return -1;
    *n = (unsigned)v;
    return 0;
}

/* replay [N] [next]: take N (default the newest) now, or as the next answer. */
static void cmd_replay(service *sv, char *arg, char *rest, char *reply, size_t len)
{
    char msg[256];
    unsigned n = 0;
    int next = (arg && strcmp(arg, "next") == 0) || (rest && strcmp(rest, "next") == 0);
    if (arg && strcmp(arg, "next") != 0 && take_number(arg, &n) < 0) {
        snprintf(reply, len, "error replay takes a take's number (see takes), not '%.64s'", arg);
        return;
    }
    if (rest && strcmp(rest, "next") != 0) {
        snprintf(reply, len, "error replay [N] [next]: '%.64s' is neither", rest);
        return;
    }
    if (next) {
        n = n ? n : sv->takes.last;
        if (!takes_find(&sv->takes, n)) {
            snprintf(reply, len, "error no take #%u is kept (see takes)", n);
            return;
        }
        sv->cont.replay_next = n;
        snprintf(reply, len, "ok take #%u answers the next phrase", n);
    } else if (live_replay(sv, n, 0, msg, sizeof msg) < 0) {
        snprintf(reply, len, "error %s", msg);
    } else {
        snprintf(reply, len, "ok %s", msg);
    }
}

/* save-take N FILE: one take as a MIDI file. */
static void cmd_save_take(service *sv, char *arg, char *rest, char *reply, size_t len)
{
    unsigned n;
    const take *t;
    if (take_number(arg, &n) < 0 || !(t = takes_find(&sv->takes, n)))
        snprintf(reply, len, "error no take '%.64s' is kept (see takes)", arg);
    else if (rest[0] != '/')
        snprintf(reply, len, "error save-take needs an absolute path");
    else if (takes_save(t, sv->cfg.model_channel, rest) != 0)
        snprintf(reply, len, "error cannot write %.3000s (see the service log)", rest);
    else {
        char extra[64];
        snprintf(reply, len, "ok saved take #%u (%d events) to %.3000s", n, t->n, rest);
        snprintf(extra, sizeof extra, "\"what\":\"take\",\"take\":%u", n);
        watch_mark(sv, "saved", session_time(sv, clock_now_ns()), extra);
    }
}

/* watch: from now on this connection also gets frames (docs/WATCH.md),
 * the hello first, right after this reply. */
static void cmd_watch(service *sv, char *arg, char *rest, char *reply, size_t len)
{
    (void)arg;
    (void)rest;
    if (!sv->ctl.current) {
        snprintf(reply, len, "error watch needs a connection");
        return;
    }
    sv->ctl.current->watching = 1;
    control_watchers(&sv->ctl);
    watch_hello(sv, sv->ctl.hello, sizeof sv->ctl.hello);
    snprintf(reply, len, "ok watching: JSON frames follow, one a line (docs/WATCH.md)");
}

static void cmd_help(service *sv, char *name, char *rest, char *reply, size_t len);

const control_command control_commands[] = {
    { .name = "status", .min_args = 0, .max_args = 0, .run = cmd_status, .usage = "status",
      .help = "state, counters, latency and timing figures" },
    { .name = "panic", .min_args = 0, .max_args = 0, .run = cmd_panic, .usage = "panic",
      .help = "all notes off, drop what is queued" },
    { .name = "get", .min_args = 1, .max_args = 1, .run = cmd_get, .usage = "get KEY",
      .help = "a setting's value" },
    { .name = "set", .min_args = 2, .max_args = 2, .run = cmd_set, .usage = "set KEY VALUE",
      .help = "change a live setting (see continuo.conf)" },
    { .name = "reload", .min_args = 0, .max_args = 0, .run = cmd_reload, .usage = "reload",
      .help = "re-read the config file (as SIGHUP)" },
    { .name = "save", .min_args = 1, .max_args = 2, .run = cmd_save, .usage = "save FILE",
      .help = "write the session (player, model) to a MIDI file" },
    { .name = "play", .min_args = 1, .max_args = 2, .run = cmd_play, .usage = "play FILE",
      .help = "hear a MIDI file's notes as the player's phrase (at their own times) and answer it" },
    { .name = "model", .min_args = 0, .max_args = 2, .run = cmd_model, .usage = "model [FILE|auto]",
      .help = "the model file in use; FILE (or auto): load it and play with it from the next answer" },
    { .name = "tempo", .min_args = 0, .max_args = 1, .run = cmd_tempo, .usage = "tempo [BPM]",
      .help = "the tempo followed; with sync = link, propose BPM to the Link session" },
    { .name = "takes", .min_args = 0, .max_args = 0, .run = cmd_takes, .usage = "takes",
      .help = "the last answers kept: when, how long, notes, seed" },
    { .name = "replay", .min_args = 0, .max_args = 2, .run = cmd_replay, .usage = "replay [N] [next]",
      .help = "play take N (default: the newest) again, now or as the next answer" },
    { .name = "save-take", .min_args = 2, .max_args = 2, .run = cmd_save_take, .usage = "save-take N FILE",
      .help = "write take N to a MIDI file" },
    { .name = "watch", .min_args = 0, .max_args = 0, .run = cmd_watch, .usage = "watch",
      .help = "stay connected and get the notes, attention, settings and marks as JSON lines" },
    { .name = "help", .min_args = 0, .max_args = 1, .run = cmd_help, .usage = "help [COMMAND]",
      .help = "the commands, or what one does" },
};
const size_t control_n_commands = sizeof control_commands / sizeof control_commands[0];

static const control_command *find_command(const char *name)
{
    for (size_t i = 0; i < control_n_commands; i++)
        if (strcmp(control_commands[i].name, name) == 0)
            return &control_commands[i];
    return NULL;
}

/* "status, panic, get KEY, ...": every command's usage. */
static void list_commands(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < control_n_commands && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                                 control_commands[i].usage);
}

static void unknown_command(const char *name, char *reply, size_t len)
{
    char list[512];
    list_commands(list, sizeof list);
    snprintf(reply, len, "error unknown command '%.64s' (%s)", name, list);
}

/* A known command with too few or too many words after it. */
static void wrong_arguments(const control_command *c, int n, char *reply, size_t len)
{
    snprintf(reply, len, "error too %s arguments for %s (usage: %s)", n < c->min_args ? "few" : "many",
             c->name, c->usage);
}

static void cmd_help(service *sv, char *name, char *rest, char *reply, size_t len)
{
    char list[512];
    const control_command *c = name ? find_command(name) : NULL;
    (void)sv;
    (void)rest;
    if (name && !c) {
        unknown_command(name, reply, len);
    } else if (c) {
        snprintf(reply, len, "ok %s: %s", c->usage, c->help);
    } else {
        list_commands(list, sizeof list);
        snprintf(reply, len, "ok %s", list);
    }
}

void service_command(void *user, char *line, char *reply, size_t len)
{
    char *save = NULL, *name = strtok_r(line, " \t", &save);
    char *arg = strtok_r(NULL, " \t", &save);
    char *rest = save && *save ? save : NULL;
    int n = (arg != NULL) + (rest != NULL);
    if (!name) {
        snprintf(reply, len, "error empty command");
        return;
    }
    const control_command *c = find_command(name);
    if (!c)
        unknown_command(name, reply, len);
    else if (n < c->min_args || n > c->max_args)
        wrong_arguments(c, n, reply, len);
    else
        c->run(user, arg, rest, reply, len);
}

void control_commands_usage(FILE *fp)
{
    for (size_t i = 0; i < control_n_commands; i++)
        fprintf(fp, "  %-18s%s\n", control_commands[i].usage, control_commands[i].help);
}

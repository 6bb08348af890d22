/* loop.c: the service: one poll() loop over MIDI in, control socket, signals, timers. */
#include "daemon/loop.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "daemon/control.h"
#include "daemon/engine.h"
#include "daemon/generator.h"
#include "daemon/notify.h"
#include "daemon/phrase.h"
#include "daemon/scheduler.h"
#include "daemon/transport.h"
#include "io/midi_port.h"
#include "midi/smf.h"
#include "synth/fluid.h"
#include "synth/record.h"
#include "util/log.h"

#define MAX_PORTS     8
#define MAX_POLL      (3 + CONTROL_MAX_CLIENTS + 1 + MAX_PORTS * 4)
#define SCHED_CAP     16384
#define LAT_SAMPLES   1024
#define NS            1000000000LL
#define TAIL_NS       (NS / 2)  /* notes left sounding at a continuation's end ring this long */

/* Everything the service owns; one instance, on daemon_run's stack. */
typedef struct service {
    config       cfg;               /* live settings (set, reload, CCs change them) */
    const char  *config_path;       /* borrowed; NULL: built-in defaults */
    char *const *sets;              /* --set KEY=VALUE overrides, re-applied on reload */
    int          n_sets;
    int64_t      t0;                /* session start, ns */
    int          sig_fd, timer_fd;
    control_server ctl;
    midi_port   *inputs[MAX_PORTS];
    int          n_inputs;
    midi_port   *outputs[MAX_PORTS];
    int          n_outputs;
    synth_fluid *fluid;
    recorder     rec;
    scheduler    sched;             /* the model's output */
    note_table   thru;              /* the player's notes sent thru */
    phrase       ph;
    transport    tp;                /* MIDI clock and transport from the inputs */
    generator    gen;
    uint64_t     seed;
    /* the current continuation */
    uint32_t     next_id, response_id;  /* 0: none */
    int          response_gen_done;
    int          response_duet;     /* it is a duet (mode = duet): endless, not interrupted */
    uint64_t     duet_rng;          /* duet_density's draws (xorshift64) */
    uint64_t     duet_thinned;      /* the model's note-ons left out while the player played */
    int64_t      response_start;    /* ns: time zero of its events */
    int64_t      response_end;      /* ns: bar line it ends on (response_bars); INT64_MAX: none */
    int64_t      grid_origin;       /* ns: a beat line, for quantize; grid_ns 0: off */
    double       grid_ns;           /* quantize grid step */
    int64_t      anchor_pos;        /* song position of the clock tick the first note
                                       waits for (response_start = beat|bar); -1: none */
    int64_t      anchor_until;      /* ns: past this the answer goes on without the tick */
    uint64_t     anchored, anchor_missed;   /* answers started on their tick, or not */
    int64_t      shift_ns[128];     /* quantize: how far each pitch's sounding note moved */
    int64_t      last_off[128];     /* due time of each pitch's last note-off */
    double       response_last_t;   /* time of its latest event so far, s */
    int64_t      phrase_end_ns;     /* when the phrase it answers ended */
    double       phrase_end_t;      /* the same in session seconds */
    int          have_last_phrase;  /* a phrase was answered (re-roll possible) */
    int          first_note_pending;
    int64_t      lat_ns[LAT_SAMPLES];   /* phrase end -> first note, last ones */
    uint64_t     n_lat;
    /* watchdog */
    int64_t      watchdog_ns, next_watchdog;
    /* counters */
    uint64_t     notes_in, notes_out, responses, interrupted;
    int64_t      duet_retry;        /* ns: next try to start a duet after a failed one */
    log_limit    busy_warn;         /* "generator busy" warnings, at most 1/s */
    int          quit, reload;
    int64_t      quit_ns;           /* when the stop signal was read */
} service;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static double session_time(const service *sv, int64_t t)
{
    return (double)(t - sv->t0) / (double)NS;
}

/* ---- output fan-out ---- */

static void send_outputs(service *sv, const midi_msg *m)
{
    for (int i = 0; i < sv->n_outputs; i++)
        midi_port_write(sv->outputs[i], m);
    if (sv->fluid)
        synth_fluid_send(sv->fluid, m);
}

/* The scheduler's emit: a model message goes out now. */
static void emit_model(void *user, const midi_msg *m, int64_t now)
{
    service *sv = user;
    send_outputs(sv, m);
    recorder_add(&sv->rec, RECORD_MODEL, session_time(sv, now), m);
    if (midi_msg_is_note_on(m)) {
        sv->notes_out++;
        if (sv->first_note_pending) {
            sv->first_note_pending = 0;
            sv->lat_ns[sv->n_lat++ % LAT_SAMPLES] = now - sv->phrase_end_ns;
        }
    }
}

static void send_thru(service *sv, const midi_msg *m, int64_t now)
{
    note_table_update(&sv->thru, m, now);
    send_outputs(sv, m);
}

/* Ends every sounding note at once (model and thru), then all-notes-off on
 * every channel of every output. */
static void silence_all(service *sv, int64_t now)
{
    scheduler_silence(&sv->sched, now, emit_model, sv);
    for (int ch = 0; ch < 16; ch++)
        for (int p = 0; p < 128 && sv->thru.count > 0; p++)
            if (sv->thru.on[ch][p]) {
                midi_msg off = { (uint8_t)(0x80 | ch), (uint8_t)p, 0, 3 };
                send_thru(sv, &off, now);
                recorder_add(&sv->rec, RECORD_PLAYER, session_time(sv, now), &off);
            }
    for (int ch = 0; ch < 16; ch++) {
        midi_msg ano = { (uint8_t)(0xB0 | ch), 123, 0, 3 };
        send_outputs(sv, &ano);
    }
}

/* ---- continuations ---- */

static int responding(const service *sv)
{
    return sv->response_id != 0 &&
           (!sv->response_gen_done || scheduler_queued(&sv->sched) > 0 || sv->sched.notes.count > 0);
}

/* Drops what is queued of the current continuation and ends its notes. */
static void stop_response(service *sv, int64_t now)
{
    if (sv->response_id) {
        gen_cmd c;
        memset(&c, 0, sizeof c);
        c.kind = GEN_STOP;
        c.at = (double)(now - sv->response_start) / NS;
        generator_send(&sv->gen, &c);
    }
    sv->response_id = 0;
    sv->first_note_pending = 0;
    sv->anchor_pos = -1;
    scheduler_drop_queued(&sv->sched);
    scheduler_silence(&sv->sched, now, emit_model, sv);
}

/* mode = duet, and (with sync = clock) the transport runs. */
static int duet_on(const service *sv)
{
    return sv->cfg.mode == MODE_DUET && (sv->cfg.sync != SYNC_CLOCK || sv->tp.running);
}

static void start_response(service *sv, int64_t now, int reroll)
{
    gen_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = reroll ? GEN_REROLL : GEN_RESPOND;
    c.id = ++sv->next_id;
    if (c.id == 0)
        c.id = ++sv->next_id;
    if (!reroll) {
        sv->phrase_end_t = session_time(sv, now);
        sv->have_last_phrase = 1;
    }
    c.at = sv->phrase_end_t;
    c.s.set = sv->cfg.sampling;
    c.s.seed = sv->seed + sv->next_id;
    c.max_events = sv->cfg.response_events;
    c.max_seconds = sv->cfg.response_seconds;
    int64_t begin = now + (int64_t)sv->cfg.lookahead_ms * 1000000, end = INT64_MAX;
    double grid = 0;
    int64_t origin = 0, anchor = -1;
    int duet = !reroll && duet_on(sv);
    if (sv->cfg.sync == SYNC_CLOCK && transport_locked(&sv->tp, now)) {
        int64_t beat = TRANSPORT_PPQN, bar = beat * sv->cfg.beats_per_bar, pos, at;
        if (sv->cfg.response_start != START_NOW) {
            pos = transport_next_line(&sv->tp, begin, sv->cfg.response_start == START_BAR ? bar : beat, &at);
            begin = at;
            anchor = pos;
        } else {
            pos = transport_next_line(&sv->tp, begin, 1, &at);  /* the clock nearest the start */
        }
        origin = transport_time_of(&sv->tp, pos / beat * beat);
        if (sv->cfg.response_bars > 0 && !duet) {   /* a duet has no end */
            end = transport_time_of(&sv->tp, (pos / bar + sv->cfg.response_bars) * bar);
            c.max_seconds = (double)(end - begin) / NS;
        }
        static const double per_beat[] = { 0, 2, 4, 3, 6 };   /* quantize_kind -> steps a beat */
        if (sv->cfg.quantize != QUANTIZE_OFF)
            grid = sv->tp.period_ns * TRANSPORT_PPQN / per_beat[sv->cfg.quantize];
    }
    if (duet) {         /* endless; the player's notes join it as they come */
        c.duet = 1;
        c.s.report_time = 1;
        c.start_ns = begin;
        c.at = session_time(sv, begin);
        c.max_events = 1 << 30;
        c.max_seconds = 1e9;
    }
    if (generator_send(&sv->gen, &c) < 0) {
        log_warn_limited(&sv->busy_warn, "generator busy: phrase not answered");
        return;
    }
    sv->response_id = c.id;
    sv->response_duet = duet;
    sv->response_gen_done = 0;
    sv->response_last_t = 0;
    sv->phrase_end_ns = now;
    sv->response_start = begin;
    sv->anchor_pos = anchor;
    sv->anchor_until = begin + (int64_t)(sv->tp.period_ns / 2);   /* half a clock */
    sv->response_end = end;
    sv->grid_origin = origin;
    sv->grid_ns = grid;
    memset(sv->shift_ns, 0, sizeof sv->shift_ns);
    memset(sv->last_off, 0, sizeof sv->last_off);
    sv->first_note_pending = 1;
    sv->responses++;
}

static void panic(service *sv, int64_t now)
{
    stop_response(sv, now);
    silence_all(sv, now);
}

/* quantize: a note-on moves quantize_strength of the way to the nearest
 * grid line (never before its pitch's last note-off), its note-off by as
 * much, so the note keeps its length. */
static int64_t place_on_grid(service *sv, const midi_msg *m, int64_t due)
{
    int p = m->data1;
    if (sv->grid_ns <= 0)
        return due;
    if (midi_msg_is_note_on(m)) {
        double steps = (double)(due - sv->grid_origin) / sv->grid_ns;
        double line = (double)sv->grid_origin + (double)(int64_t)(steps + (steps < 0 ? -0.5 : 0.5)) * sv->grid_ns;
        int64_t moved = due + (int64_t)(sv->cfg.quantize_strength * (line - (double)due));
        if (moved < sv->last_off[p])
            moved = sv->last_off[p];
        sv->shift_ns[p] = moved - due;
        return moved;
    }
    due += sv->shift_ns[p];
    sv->last_off[p] = due;
    return due;
}

/* The player is playing: a key held, or a note struck or released in
 * the last half second. */
static int player_active(const service *sv, int64_t now)
{
    return sv->ph.keys_held > 0 || (sv->ph.last_activity && now - sv->ph.last_activity < NS / 2);
}

static void receive_generated(service *sv)
{
    gen_out o;
    generator_ack_wake(&sv->gen);
    while (generator_receive(&sv->gen, &o)) {
        if (o.id != sv->response_id || sv->response_id == 0)
            continue;           /* from a continuation that was stopped */
        if (o.done) {
            /* The continuation is over: what it left sounding rings for
             * TAIL_NS more, then ends (offs of silent pitches are dropped
             * by the scheduler). */
            sv->response_gen_done = 1;
            int64_t end = sv->response_start + (int64_t)(sv->response_last_t * NS + 0.5) + TAIL_NS;
            if (end > sv->response_end)
                end = sv->response_end;
            for (int p = 0; p < 128; p++) {
                midi_msg off = { (uint8_t)(0x80 | (sv->cfg.model_channel - 1)), (uint8_t)p, 0, 3 };
                scheduler_push(&sv->sched, end, &off);
            }
            continue;
        }
        if (o.ev.time > sv->response_last_t)
            sv->response_last_t = o.ev.time;
        midi_msg m = { (uint8_t)((o.ev.on ? 0x90 : 0x80) | (sv->cfg.model_channel - 1)),
                       (uint8_t)(o.ev.pitch & 0x7F), (uint8_t)(o.ev.on ? (o.ev.velocity ? o.ev.velocity : 64) : 0), 3 };
        /* Absolute deadline from the continuation's start: no drift. */
        int64_t due = sv->response_start + (int64_t)(o.ev.time * NS + 0.5);
        if (sv->response_duet && o.ev.on && player_active(sv, now_ns())) {
            uint64_t x = sv->duet_rng;      /* xorshift64 */
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            sv->duet_rng = x;
            if ((double)(x >> 11) / 9007199254740992.0 >= sv->cfg.duet_density) {
                sv->duet_thinned++;
                continue;   /* its note-off finds nothing sounding and is skipped */
            }
        }
        due = place_on_grid(sv, &m, due);
        if (due > sv->response_end - 1000000) {    /* 1 ms: rounding of the grid */
            if (midi_msg_is_note_on(&m))
                continue;           /* on or past the answer's last bar line */
            due = sv->response_end;
        }
        scheduler_push(&sv->sched, due, &m);
    }
    if (atomic_exchange(&sv->gen.failed, 0))
        log_warn("the engine reported an error (see above); still listening");
}

/* ---- the player's input ---- */

/* A clock tick came while an answer waits for its beat: when it is the
 * beat's own tick, the answer's time line moves onto it (the DAW's tick is
 * the beat, however early or late it comes against the prediction, within
 * half a clock); the first note goes out now. */
static void anchor_on_tick(service *sv, int64_t now)
{
    int64_t pos = transport_position(&sv->tp), want = sv->anchor_pos;
    if (!sv->tp.running || pos < want)
        return;
    int64_t delta = now - sv->response_start, half = (int64_t)(sv->tp.period_ns / 2);
    sv->anchor_pos = -1;
    if (pos != want || delta < -half || delta > half) {
        sv->anchor_missed++;
        return;
    }
    scheduler_shift_queued(&sv->sched, delta);
    sv->response_start += delta;
    if (sv->response_end != INT64_MAX)
        sv->response_end += delta;
    sv->grid_origin += delta;
    sv->anchored++;
}

/* With sync = clock the model answers only while the transport runs. */
static int may_answer(const service *sv)
{
    return sv->cfg.sync != SYNC_CLOCK || sv->tp.running;
}

/* A message of the player (a note, the pedal) to the generator, whose
 * engine feeds it into the model's context as it comes. */
static void hear_player(service *sv, const midi_msg *m, double t)
{
    gen_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = GEN_LISTEN;
    c.heard = (smf_event){ .time = t, .status = m->status, .data1 = m->data1, .data2 = m->data2 };
    if (generator_send(&sv->gen, &c) < 0)
        log_warn_limited(&sv->busy_warn, "generator busy: a note of the player was not heard");
}

static void handle_input(service *sv, const midi_msg *m, int64_t now)
{
    double t = session_time(sv, now);

    if (!midi_msg_is_channel(m)) {
        int tr = transport_input(&sv->tp, m, now);
        if ((tr & TRANSPORT_CLOCK) && sv->anchor_pos >= 0)
            anchor_on_tick(sv, now);
        if ((tr & TRANSPORT_STOPPED) && sv->cfg.sync == SYNC_CLOCK) {
            stop_response(sv, now);     /* Stop: the model is silent at once */
            log_debug("transport stopped at bar %" PRId64 ": the model is silent",
                      transport_position(&sv->tp) / (TRANSPORT_PPQN * sv->cfg.beats_per_bar) + 1);
        }
        return;     /* active sensing, ... */
    }
    recorder_add(&sv->rec, RECORD_PLAYER, t, m);
    int act = phrase_input(&sv->ph, &sv->cfg, m, now);
    if (act & PHRASE_NOTE_ON) {
        sv->notes_in++;
        if (responding(sv) && !sv->response_duet) {   /* the player came back: the model stops */
            sv->interrupted++;
            stop_response(sv, now);
        }
    }
    if (act & PHRASE_HEAR)
        hear_player(sv, m, t);
    if (sv->cfg.midi_thru && !(act & PHRASE_CONTROL))
        send_thru(sv, m, now);
    if (act & PHRASE_PANIC)
        panic(sv, now);
    if ((act & (PHRASE_HANDOVER | PHRASE_REROLL)) && sv->response_duet)
        act &= ~(PHRASE_HANDOVER | PHRASE_REROLL);     /* a duet has no turns */
    if (act & PHRASE_HANDOVER) {
        stop_response(sv, now);
        phrase_end(&sv->ph);
        if (may_answer(sv))
            start_response(sv, now, 0);
    }
    if ((act & PHRASE_REROLL) && sv->have_last_phrase && may_answer(sv)) {
        stop_response(sv, now);
        start_response(sv, now, 1);
    }
}

/* Keys held past held_note_timeout_ms: their note-off was lost.  The model
 * hears them released, the thru outputs get their note-off, and the phrase
 * may end. */
static void release_lost_keys(service *sv, int64_t now)
{
    uint8_t keys[128];
    double t = session_time(sv, now);
    int n = phrase_release_lost(&sv->ph, &sv->cfg, now, keys);
    for (int i = 0; i < n; i++) {
        midi_msg lost = { 0x80, keys[i], 0, 3 };
        hear_player(sv, &lost, t);
        char name[16];
        log_warn("the player's %s has been held %.0f s without a note-off: taken as released "
                 "(held_note_timeout_ms = %d)", midi_pitch_name(keys[i], name, sizeof name),
                 sv->cfg.held_note_timeout_ms / 1000.0, sv->cfg.held_note_timeout_ms);
        for (int ch = 0; ch < 16; ch++)
            if (sv->thru.on[ch][keys[i]]) {
                midi_msg off = { (uint8_t)(0x80 | ch), keys[i], 0, 3 };
                send_thru(sv, &off, now);
                recorder_add(&sv->rec, RECORD_PLAYER, t, &off);
            }
    }
}

static void read_inputs(service *sv, const struct pollfd *fds, int n)
{
    midi_msg msgs[64];
    for (int i = 0; i < sv->n_inputs; i++) {
        struct pollfd mine[4];
        int k = midi_port_poll_fds(sv->inputs[i], mine, 4), ready = 0;
        for (int a = 0; a < k && !ready; a++)
            for (int b = 0; b < n; b++)
                if (fds[b].fd == mine[a].fd && fds[b].revents)
                    ready = 1;
        if (!ready)
            continue;
        int got;
        while ((got = midi_port_read(sv->inputs[i], msgs, 64)) > 0) {
            int64_t now = now_ns();
            for (int j = 0; j < got; j++)
                handle_input(sv, &msgs[j], now);
            if (got < 64)
                break;
        }
    }
}

/* ---- control commands ---- */

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

static void cmd_status(service *sv, char *reply, size_t len)
{
    static int64_t tmp[SCHED_LATE_SAMPLES];
    char lat[256], err[256];
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
             responding(sv) ? "responding" : "listening", sv->gen.engine->name,
             session_time(sv, now_ns()), sv->ph.phrases, sv->responses, sv->interrupted,
             sv->notes_in, sv->notes_out, sv->sched.notes.count + sv->thru.count,
             scheduler_queued(&sv->sched), sv->sched.swept,
             sv->sched.dropped_full + sv->sched.dropped_held,
             recorder_count(&sv->rec, RECORD_PLAYER), recorder_count(&sv->rec, RECORD_MODEL), lat, err);
    /* The clock: tempo (0: none heard yet), transport, where the song is. */
    size_t used = strlen(reply);
    int64_t pos = transport_position(&sv->tp);
    int64_t bar_len = (int64_t)TRANSPORT_PPQN * sv->cfg.beats_per_bar;
    if (used < len)
        snprintf(reply + used, len - used,
                 " sync=%s tempo=%.2f clock=%s transport=%s bar=%" PRId64 " beat=%" PRId64 " mode=%s"
                 " on_tick=%" PRIu64 " off_tick=%" PRIu64 " duet_thinned=%" PRIu64,
                 sv->cfg.sync == SYNC_CLOCK ? "clock" : "free", transport_bpm(&sv->tp),
                 transport_locked(&sv->tp, now_ns()) ? "locked" : "none",
                 sv->tp.running ? "playing" : "stopped", pos / bar_len + 1,
                 pos % bar_len / TRANSPORT_PPQN + 1, sv->cfg.mode == MODE_DUET ? "duet" : "call",
                 sv->anchored, sv->anchor_missed, sv->duet_thinned);
}

/* The scheduler's limits follow the live settings. */
static void apply_limits(service *sv)
{
    sv->sched.max_note_ns = (int64_t)sv->cfg.max_note_ms * 1000000;
    sv->sched.max_held = sv->cfg.max_held_notes;
}

static void control_line(void *user, char *line, char *reply, size_t len)
{
    service *sv = user;
    char *save = NULL, *cmd = strtok_r(line, " \t", &save);
    char *arg1 = strtok_r(NULL, " \t", &save);
    char *rest = save && *save ? save : NULL;   /* the value may hold spaces */
    char buf[CONFIG_STR_MAX], why[256];

    if (!cmd) {
        snprintf(reply, len, "error empty command");
    } else if (strcmp(cmd, "status") == 0 && !arg1) {
        cmd_status(sv, reply, len);
    } else if (strcmp(cmd, "panic") == 0 && !arg1) {
        panic(sv, now_ns());
        snprintf(reply, len, "ok all notes off");
    } else if (strcmp(cmd, "get") == 0 && arg1 && !rest) {
        const option_def *o = config_find(arg1);
        if (!o)
            snprintf(reply, len, "error unknown key '%.64s'", arg1);
        else
            snprintf(reply, len, "ok %s = %.*s", o->name, (int)(len - 80),
                     config_format(&sv->cfg, o, buf, sizeof buf));
    } else if (strcmp(cmd, "set") == 0 && arg1 && rest) {
        const option_def *o = config_find(arg1);
        while (*rest == ' ' || *rest == '\t')
            rest++;
        if (!o)
            snprintf(reply, len, "error unknown key '%.64s'", arg1);
        else if (!o->live)
            snprintf(reply, len, "error %s cannot change while running "
                     "(edit the config file and restart)", o->name);
        else if (config_set(&sv->cfg, o, rest, why, sizeof why) < 0)
            snprintf(reply, len, "error %s: %s", o->name, why);
        else {
            snprintf(reply, len, "ok %s = %.*s", o->name, (int)(len - 80),
                     config_format(&sv->cfg, o, buf, sizeof buf));
            apply_limits(sv);
        }
    } else if (strcmp(cmd, "reload") == 0 && !arg1) {
        sv->reload = 1;
        snprintf(reply, len, sv->config_path ? "ok reloading %.3000s" : "ok reloading%.0s",
                 sv->config_path ? sv->config_path : "");
    } else if (strcmp(cmd, "save") == 0 && arg1) {
        char path[CONFIG_STR_MAX];
        snprintf(path, sizeof path, "%s%s%s", arg1, rest ? " " : "", rest ? rest : "");
        if (path[0] != '/')
            snprintf(reply, len, "error save needs an absolute path");
        else if (recorder_save(&sv->rec, path) < 0)
            snprintf(reply, len, "error cannot write %.3000s (see the service log)", path);
        else
            snprintf(reply, len, "ok saved %zu player and %zu model events to %.3000s",
                     recorder_count(&sv->rec, RECORD_PLAYER),
                     recorder_count(&sv->rec, RECORD_MODEL), path);
    } else {
        snprintf(reply, len, "error unknown command (status, panic, get KEY, set KEY VALUE, "
                 "reload, save FILE)");
    }
}

/* ---- reload ---- */

static int load_config(config *c, const char *path, char *const *sets, int n_sets)
{
    config_defaults(c);
    if (path && config_load_file(c, path) < 0)
        return -1;
    for (int i = 0; i < n_sets; i++)
        if (config_set_arg(c, sets[i]) < 0)
            return -1;
    return 0;
}

static void do_reload(service *sv)
{
    config fresh;
    char a[CONFIG_STR_MAX], b[CONFIG_STR_MAX];
    sv->reload = 0;
    if (load_config(&fresh, sv->config_path, sv->sets, sv->n_sets) < 0) {
        log_error("reload failed: keeping the settings in use");
        return;
    }
    for (size_t i = 0; i < config_n_options; i++) {
        const option_def *o = &config_options[i];
        config_format(&fresh, o, a, sizeof a);
        if (strcmp(a, config_format(&sv->cfg, o, b, sizeof b)) == 0)
            continue;
        if (o->live) {
            memcpy((char *)&sv->cfg + o->offset, (char *)&fresh + o->offset,
                   o->type == OPT_STRING ? CONFIG_STR_MAX : o->type == OPT_DOUBLE ? sizeof(double) : sizeof(int));
            log_info("reload: %s = %s", o->name, a);
        } else {
            log_warn("reload: %s changed; it takes effect after a restart", o->name);
        }
    }
    apply_limits(sv);
}

/* ---- start and stop ---- */

static int open_outputs(service *sv)
{
    char list[CONFIG_STR_MAX], *save = NULL;
    snprintf(list, sizeof list, "%s", sv->cfg.output);
    for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        while (*s == ' ')
            s++;
        if (!*s || strcmp(s, "none") == 0)
            continue;
        if (strcmp(s, "fluidsynth") == 0) {
            char drv[32];
            config_enum_name(config_find("audio_driver"), sv->cfg.audio_driver, drv, sizeof drv);
            if (sv->fluid)
                continue;
            synth_fluid_opts so = {
                .soundfont = sv->cfg.soundfont, .driver = drv, .device = sv->cfg.audio_device,
                .file = sv->cfg.audio_file, .gain = sv->cfg.gain,
                .advice = "output=alsa to play through a DAW or another synth (continuo:out), "
                          "or on_missing_soundfont=midi-only to go on without sound",
            };
            sv->fluid = synth_fluid_open(&so);
            if (!sv->fluid) {
                if (sv->cfg.on_missing_soundfont != MISSING_SF_MIDI_ONLY)
                    return -1;
                log_warn("going on without sound from FluidSynth (on_missing_soundfont = midi-only)");
            }
            continue;
        }
        if (sv->n_outputs == MAX_PORTS) {
            log_error("too many outputs (at most %d)", MAX_PORTS);
            return -1;
        }
        midi_port *p = midi_port_open(s, MIDI_OUT);
        if (!p)
            return -1;
        sv->outputs[sv->n_outputs++] = p;
    }
    return 0;
}

static int open_inputs(service *sv)
{
    char list[CONFIG_STR_MAX], *save = NULL, spec[2 * CONFIG_STR_MAX + 8];
    struct stat st;
    snprintf(list, sizeof list, "%s", sv->cfg.input);
    for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        while (*s == ' ')
            s++;
        if (!*s)
            continue;
        if (sv->n_inputs == MAX_PORTS) {
            log_error("too many inputs (at most %d)", MAX_PORTS);
            return -1;
        }
        if (strcmp(s, "alsa") == 0 && sv->cfg.input_connect[0])
            snprintf(spec, sizeof spec, "alsa:%s", sv->cfg.input_connect);
        else
            snprintf(spec, sizeof spec, "%s", s);
        if (strncmp(spec, "fifo:", 5) == 0 && stat(spec + 5, &st) < 0 && errno == ENOENT &&
            mkfifo(spec + 5, 0600) < 0) {
            log_error("cannot create FIFO %s: %s", spec + 5, strerror(errno));
            return -1;
        }
        midi_port *p = midi_port_open(spec, MIDI_IN);
        if (!p)
            return -1;
        sv->inputs[sv->n_inputs++] = p;
    }
    return 0;
}

static void close_all(service *sv)
{
    generator_stop(&sv->gen);
    synth_fluid_close(sv->fluid);
    sv->fluid = NULL;
    for (int i = 0; i < sv->n_outputs; i++)
        midi_port_close(sv->outputs[i]);
    for (int i = 0; i < sv->n_inputs; i++)
        midi_port_close(sv->inputs[i]);
    sv->n_outputs = sv->n_inputs = 0;
    control_close(&sv->ctl);
    scheduler_free(&sv->sched);
    recorder_free(&sv->rec);
    if (sv->timer_fd >= 0)
        close(sv->timer_fd);
    if (sv->sig_fd >= 0)
        close(sv->sig_fd);
}

static void arm_timer(service *sv, int64_t when)
{
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (when != INT64_MAX) {
        if (when <= 0)
            when = 1;
        its.it_value.tv_sec = when / NS;
        its.it_value.tv_nsec = when % NS;
    }
    timerfd_settime(sv->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void handle_signals(service *sv)
{
    struct signalfd_siginfo si;
    while (read(sv->sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGHUP)
            sv->reload = 1;
        else if (!sv->quit) {
            sv->quit = 1;
            sv->quit_ns = now_ns();
        }
    }
}

static int run_loop(service *sv)
{
    struct pollfd fds[MAX_POLL];
    while (!sv->quit) {
        int64_t now = now_ns(), until = now;
        if (sv->anchor_pos >= 0 && now >= sv->anchor_until) {
            sv->anchor_pos = -1;            /* the beat's tick did not come: go on */
            sv->anchor_missed++;
        }
        if (sv->anchor_pos >= 0 && until >= sv->response_start)
            until = sv->response_start - 1; /* the answer waits for its tick */
        scheduler_run(&sv->sched, until, 0, emit_model, sv);
        int64_t lost = phrase_next_lost(&sv->ph, &sv->cfg);
        if (lost <= now) {
            release_lost_keys(sv, now);
            continue;
        }
        int duet = duet_on(sv);
        if (duet && (!sv->response_id || sv->response_gen_done || !sv->response_duet) &&
            now >= sv->duet_retry) {
            /* A duet goes on: a new continuation when the last one ended
             * (the model's end of sequence) or the mode just changed. */
            stop_response(sv, now);
            start_response(sv, now, 0);
            sv->duet_retry = now + NS / 10;     /* at most ten starts a second */
            continue;
        }
        if (!duet && sv->response_duet && sv->response_id) {
            stop_response(sv, now);     /* mode = call again, or the transport stopped */
            sv->response_duet = 0;
        }
        int64_t pd = responding(sv) || duet ? INT64_MAX : phrase_deadline(&sv->ph, &sv->cfg);
        if (pd <= now) {
            phrase_end(&sv->ph);
            stop_response(sv, now);
            if (may_answer(sv))
                start_response(sv, now, 0);
            else if (sv->tp.clocks == 0 && sv->tp.starts == 0)
                log_warn("phrase not answered: sync = clock, but no MIDI clock or Start has come "
                         "from any input (send clock from the DAW to continuo, or set sync = free)");
            else
                log_info("phrase not answered: the transport is stopped (sync = clock)");
            continue;
        }
        if (sv->watchdog_ns && now >= sv->next_watchdog) {
            notify_send("WATCHDOG=1");
            sv->next_watchdog = now + sv->watchdog_ns / 2;
        }
        int64_t wake = scheduler_next_deadline(&sv->sched);
        if (sv->anchor_pos >= 0 && wake >= sv->response_start && wake < sv->anchor_until)
            wake = sv->anchor_until;
        if (pd < wake)
            wake = pd;
        if (lost < wake)
            wake = lost;
        if (duet && (!sv->response_id || sv->response_gen_done) && sv->duet_retry < wake)
            wake = sv->duet_retry;
        if (sv->watchdog_ns && sv->next_watchdog < wake)
            wake = sv->next_watchdog;
        arm_timer(sv, wake);

        int n = 0;
        fds[n++] = (struct pollfd){ sv->sig_fd, POLLIN, 0 };
        fds[n++] = (struct pollfd){ sv->timer_fd, POLLIN, 0 };
        fds[n++] = (struct pollfd){ sv->gen.wake_loop, POLLIN, 0 };
        int n_ctl = control_poll_fds(&sv->ctl, fds + n, MAX_POLL - n);
        int ctl_at = n;
        n += n_ctl;
        int in_at = n;
        for (int i = 0; i < sv->n_inputs; i++)
            n += midi_port_poll_fds(sv->inputs[i], fds + n, MAX_POLL - n);
        int r = poll(fds, (nfds_t)n, -1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            log_error("poll: %s", strerror(errno));
            return -1;
        }
        if (fds[0].revents)
            handle_signals(sv);
        if (fds[1].revents) {
            uint64_t ticks;
            ssize_t rd = read(sv->timer_fd, &ticks, sizeof ticks);
            (void)rd;
        }
        if (fds[2].revents)
            receive_generated(sv);
        if (n > in_at)
            read_inputs(sv, fds + in_at, n - in_at);
        control_dispatch(&sv->ctl, fds + ctl_at, n_ctl, control_line, sv);
        if (sv->reload)
            do_reload(sv);
    }
    return 0;
}

/* Threads started before daemon_run (OpenBLAS starts its workers when the
 * library loads) did not inherit the blocked mask, so the kernel may hand
 * them a SIGTERM.  This handler, run in such a thread, passes the signal on
 * to the loop's thread, where it stays pending for the signalfd
 * (pthread_kill is async-signal-safe). */
static pthread_t loop_thread;

static void forward_signal(int sig)
{
    pthread_kill(loop_thread, sig);
}

int daemon_run(const config *cfg, const char *config_path, char *const *sets, int n_sets)
{
    static service sv_storage;      /* large: keep it off the stack */
    service *sv = &sv_storage;
    char sock[CONFIG_STR_MAX];
    sigset_t mask;
    int rc = -1;

    memset(sv, 0, sizeof *sv);
    sv->cfg = *cfg;
    sv->config_path = config_path;
    sv->sets = sets;
    sv->n_sets = n_sets;
    sv->sig_fd = sv->timer_fd = -1;
    sv->ctl.fd = -1;
    sv->gen.wake_gen = sv->gen.wake_loop = -1;
    sv->t0 = now_ns();
    sv->seed = cfg->seed ? (uint64_t)cfg->seed : (uint64_t)sv->t0;
    sv->duet_rng = sv->seed * 0x9E3779B97F4A7C15ULL | 1;
    phrase_init(&sv->ph);
    transport_init(&sv->tp);
    sv->response_end = INT64_MAX;
    sv->anchor_pos = -1;
    note_table_clear(&sv->thru);

    /* Signals become readable on a signalfd; blocked before any thread
     * starts (generator, FluidSynth), so they all inherit the mask. */
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    loop_thread = pthread_self();
    struct sigaction sa, old_sa[3];
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, &old_sa[0]);
    sigaction(SIGINT, &sa, &old_sa[1]);
    sigaction(SIGHUP, &sa, &old_sa[2]);
    signal(SIGPIPE, SIG_IGN);      /* a reader that leaves: an error, not death */
    signal(SIGXFSZ, SIG_IGN);      /* a file size limit: a failed save, not death */
    sv->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    sv->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (sv->sig_fd < 0 || sv->timer_fd < 0) {
        log_error("cannot start the service loop: %s", strerror(errno));
        goto out;
    }
    if (scheduler_init(&sv->sched, SCHED_CAP, (int64_t)cfg->max_note_ms * 1000000,
                       cfg->max_held_notes) < 0 ||
        recorder_init(&sv->rec, 65536, 4u << 20) < 0) {
        log_error("cannot start the service: out of memory");
        goto out;
    }
    if (cfg->control_socket[0])
        snprintf(sock, sizeof sock, "%s", cfg->control_socket);
    else if (control_default_path(sock, sizeof sock) < 0)
        goto out;
    if (control_open(&sv->ctl, sock) < 0)
        goto out;
    const engine_ops *engine = engine_for(cfg);
    if (!engine || generator_start(&sv->gen, engine, cfg) < 0)
        goto out;
    if (open_outputs(sv) < 0 || open_inputs(sv) < 0)
        goto out;

    sv->watchdog_ns = notify_watchdog_ns();
    sv->next_watchdog = now_ns() + sv->watchdog_ns / 2;
    log_info("listening: engine %s, %d input(s), %d output(s)%s, control socket %s",
             engine->name, sv->n_inputs, sv->n_outputs, sv->fluid ? " + fluidsynth" : "", sock);
    notify_send("READY=1\nSTATUS=listening");
    rc = run_loop(sv);

    /* Stop: silence first (within milliseconds of the signal), then the rest. */
    int64_t now = now_ns();
    stop_response(sv, now);
    silence_all(sv, now);
    notify_send("STOPPING=1");
    generator_stop(&sv->gen);
    synth_fluid_close(sv->fluid);
    sv->fluid = NULL;
    log_debug("stop: silent after %.1f ms, generator and synth stopped after %.1f ms",
              (double)(now - sv->quit_ns) / 1e6, (double)(now_ns() - sv->quit_ns) / 1e6);
    if (sv->cfg.recording[0] && recorder_save(&sv->rec, sv->cfg.recording) < 0)
        rc = -1;
    log_debug("stop: recording saved after %.1f ms", (double)(now_ns() - sv->quit_ns) / 1e6);
    log_info("stopped after %.1f s: %" PRIu64 " phrases, %" PRIu64 " notes in, %" PRIu64 " out",
             session_time(sv, now_ns()), sv->ph.phrases, sv->notes_in, sv->notes_out);
out:
    close_all(sv);
    sigaction(SIGTERM, &old_sa[0], NULL);
    sigaction(SIGINT, &old_sa[1], NULL);
    sigaction(SIGHUP, &old_sa[2], NULL);
    pthread_sigmask(SIG_UNBLOCK, &mask, NULL);
    return rc;
}

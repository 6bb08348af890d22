/* loop.c: the service: one poll() loop over MIDI in, control socket, signals, timers. */
#include "daemon/loop.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/engine.h"
#include "daemon/notify.h"
#include "daemon/service.h"
#include "daemon/transport.h"
#include "midi/smf.h"
#include "util/clock.h"
#include "util/log.h"

/* ---- output fan-out ---- */

/* Plays M on every output (the recording plays nothing). */
static void play(service *sv, const midi_msg *m)
{
    for (int i = 0; i < sv->n_outputs; i++)
        midi_port_write(sv->outputs[i], m);
}

/* Gives every output a copy of PART's message M, sent or heard at NOW (the
 * recording keeps it; the others ignore it). */
static void keep(service *sv, const midi_msg *m, midi_part part, int64_t now)
{
    for (int i = 0; i < sv->n_outputs; i++)
        midi_port_keep(sv->outputs[i], m, part, session_time(sv, now));
}

/* The scheduler's emit: a model message goes out now. */
static void emit_model(void *user, const midi_msg *m, int64_t now)
{
    service *sv = user;
    play(sv, m);
    keep(sv, m, MIDI_PART_MODEL, now);
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
    play(sv, m);
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
                keep(sv, &off, MIDI_PART_PLAYER, now);
            }
    for (int ch = 0; ch < 16; ch++) {
        midi_msg ano = { (uint8_t)(0xB0 | ch), 123, 0, 3 };
        play(sv, &ano);
    }
}

/* ---- continuations ---- */

int service_responding(const service *sv)
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

/* The generator's head start: lookahead_ms, or with -1 (auto) 10 ms or 30
 * events of the engine's measured cost if more, so that a chord's notes,
 * all due at once, are sampled in time (a 22 M model: about 33 ms). */
static int lookahead_ms(const service *sv)
{
    if (sv->cfg.lookahead_ms >= 0)
        return sv->cfg.lookahead_ms;
    int ms = (int)ceil(30.0 * sv->gen.ms_per_event);
    return ms > 10 ? ms : 10;
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
    int64_t begin = now + (int64_t)lookahead_ms(sv) * 1000000, end = INT64_MAX;
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

void service_panic(service *sv, int64_t now)
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
        if (sv->response_duet && o.ev.on && player_active(sv, clock_now_ns())) {
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

/* The settings a controller asked for, through the path `ctl set` takes;
 * "%.17g" gives back the very number. */
static void set_from_controller(service *sv, const phrase_changes *asked)
{
    char value[32], why[1024];
    for (int i = 0; i < asked->n; i++) {
        const option_def *o = config_find(asked->item[i].option);
        snprintf(value, sizeof value, "%.17g", asked->item[i].value);
        if (o && service_set_option(sv, o, value, why, sizeof why) < 0)
            log_warn_limited(&sv->cc_warn, "controller: %s", why);
    }
}

/* M, read at NOW, arrived at AT (<= NOW; the time clock and transport
 * are followed by, so a tick read late keeps its place in the beat). */
static void handle_input(service *sv, const midi_msg *m, int64_t now, int64_t at)
{
    double t = session_time(sv, now);

    if (!midi_msg_is_channel(m)) {
        int tr = transport_input(&sv->tp, m, at);
        if ((tr & TRANSPORT_CLOCK) && sv->anchor_pos >= 0)
            anchor_on_tick(sv, at);
        if ((tr & TRANSPORT_STOPPED) && sv->cfg.sync == SYNC_CLOCK) {
            stop_response(sv, now);     /* Stop: the model is silent at once */
            log_debug("transport stopped at bar %" PRId64 ": the model is silent",
                      transport_position(&sv->tp) / (TRANSPORT_PPQN * sv->cfg.beats_per_bar) + 1);
        }
        return;     /* active sensing, ... */
    }
    keep(sv, m, MIDI_PART_PLAYER, now);
    phrase_changes asked;
    int act = phrase_input(&sv->ph, &sv->cfg, m, now, &asked);
    set_from_controller(sv, &asked);
    if (act & PHRASE_NOTE_ON) {
        sv->notes_in++;
        if (service_responding(sv) && !sv->response_duet) {   /* the player came back: the model stops */
            sv->interrupted++;
            stop_response(sv, now);
        }
    }
    if (act & PHRASE_HEAR)
        hear_player(sv, m, t);
    if (sv->cfg.midi_thru && !(act & PHRASE_CONTROL))
        send_thru(sv, m, now);
    if (act & PHRASE_PANIC)
        service_panic(sv, now);
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
                keep(sv, &off, MIDI_PART_PLAYER, now);
            }
    }
}

static void read_inputs(service *sv, const struct pollfd *fds, int n)
{
    midi_msg msgs[64];
    int64_t age[64];
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
        while ((got = midi_port_read(sv->inputs[i], msgs, age, 64)) > 0) {
            int64_t now = clock_now_ns();
            for (int j = 0; j < got; j++)
                handle_input(sv, &msgs[j], now, now - age[j]);
            if (got < 64)
                break;
        }
    }
}

/* ---- start and stop ---- */

static void close_all(service *sv)
{
    generator_stop(&sv->gen);
    service_close_ports(sv);
    control_close(&sv->ctl);
    scheduler_free(&sv->sched);
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
            sv->quit_ns = clock_now_ns();
        }
    }
}

/* WATCHDOG=1, but only while the generator moves or waits for work: a
 * generator stuck in the engine leaves systemd to restart the service. */
static void watchdog_ping(service *sv, int64_t now)
{
    int64_t stalled = generator_stalled_ns(&sv->gen, now);
    if (stalled > sv->gen.stall_ns) {
        if (!sv->stalled) {
            log_error("the generator has made no progress for %.1f s (a stall is %.1f s): "
                      "no more watchdog pings, so systemd restarts the service",
                      (double)stalled / 1e9, (double)sv->gen.stall_ns / 1e9);
            notify_send("STATUS=the generator is stalled");
            sv->stalled = 1;
        }
        return;
    }
    if (sv->stalled) {
        log_info("the generator moves again: watchdog pings again");
        notify_send("STATUS=listening");
        sv->stalled = 0;
    }
    notify_send("WATCHDOG=1");
}

/* What is due by NOW: the scheduler's messages, lost keys, a duet to go
 * on, a phrase end.  Returns 1 when it acted (look again before waiting),
 * else 0 with the time of the next due work in *WAKE_AT. */
static int run_due(service *sv, int64_t now, int64_t *wake_at)
{
    int64_t until = now;
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
        return 1;
    }
    int duet = duet_on(sv);
    if (duet && (!sv->response_id || sv->response_gen_done || !sv->response_duet) &&
        now >= sv->duet_retry) {
        /* A duet goes on: a new continuation when the last one ended
         * (the model's end of sequence) or the mode just changed. */
        stop_response(sv, now);
        start_response(sv, now, 0);
        sv->duet_retry = now + NS / 10;     /* at most ten starts a second */
        return 1;
    }
    if (!duet && sv->response_duet && sv->response_id) {
        stop_response(sv, now);     /* mode = call again, or the transport stopped */
        sv->response_duet = 0;
    }
    int64_t pd = service_responding(sv) || duet ? INT64_MAX : phrase_deadline(&sv->ph, &sv->cfg);
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
        return 1;
    }
    if (sv->watchdog_ns && now >= sv->next_watchdog) {
        watchdog_ping(sv, now);
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
    *wake_at = wake;
    return 0;
}

/* One poll() over every fd; serves what is ready.  Returns -1 on an error
 * poll cannot recover from (logged), else 0. */
static int poll_once(service *sv)
{
    struct pollfd fds[MAX_POLL];
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
            return 0;
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
    control_dispatch(&sv->ctl, fds + ctl_at, n_ctl, service_command, sv);
    if (sv->reload)
        service_reload(sv);
    return 0;
}

static int run_loop(service *sv)
{
    while (!sv->quit) {
        int64_t wake;
        if (run_due(sv, clock_now_ns(), &wake))
            continue;
        arm_timer(sv, wake);
        if (poll_once(sv) < 0)
            return -1;
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

/* The service before anything is opened: the settings, clocks, counters. */
static void init_service(service *sv, const config *cfg, const char *config_path,
                         char *const *sets, int n_sets)
{
    memset(sv, 0, sizeof *sv);
    sv->cfg = *cfg;
    sv->config_path = config_path;
    sv->sets = sets;
    sv->n_sets = n_sets;
    sv->sig_fd = sv->timer_fd = -1;
    sv->ctl.fd = -1;
    sv->gen.wake_gen = sv->gen.wake_loop = -1;
    sv->t0 = clock_now_ns();
    sv->seed = cfg->seed ? (uint64_t)cfg->seed : (uint64_t)sv->t0;
    sv->duet_rng = sv->seed * 0x9E3779B97F4A7C15ULL | 1;
    phrase_init(&sv->ph);
    transport_init(&sv->tp);
    sv->response_end = INT64_MAX;
    sv->anchor_pos = -1;
    note_table_clear(&sv->thru);
}

/* Signals become readable on a signalfd; blocked before any thread starts
 * (generator, FluidSynth), so they all inherit the mask.  OLD_SA (3) keeps
 * the handlers to put back. */
static int start_signals(service *sv, sigset_t *mask, struct sigaction *old_sa)
{
    struct sigaction sa;
    sigemptyset(mask);
    sigaddset(mask, SIGTERM);
    sigaddset(mask, SIGINT);
    sigaddset(mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, mask, NULL);
    loop_thread = pthread_self();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, &old_sa[0]);
    sigaction(SIGINT, &sa, &old_sa[1]);
    sigaction(SIGHUP, &sa, &old_sa[2]);
    signal(SIGPIPE, SIG_IGN);      /* a reader that leaves: an error, not death */
    signal(SIGXFSZ, SIG_IGN);      /* a file size limit: a failed save, not death */
    sv->sig_fd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
    sv->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (sv->sig_fd < 0 || sv->timer_fd < 0) {
        log_error("cannot start the service loop: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static void stop_signals(const sigset_t *mask, const struct sigaction *old_sa)
{
    sigaction(SIGTERM, &old_sa[0], NULL);
    sigaction(SIGINT, &old_sa[1], NULL);
    sigaction(SIGHUP, &old_sa[2], NULL);
    pthread_sigmask(SIG_UNBLOCK, mask, NULL);
}

/* The scheduler, the control socket, the generator and the ports; then
 * READY.  Returns 0, or -1 after logging. */
static int start_service(service *sv)
{
    char sock[CONFIG_STR_MAX];
    const config *cfg = &sv->cfg;
    if (scheduler_init(&sv->sched, SCHED_CAP, (int64_t)cfg->max_note_ms * 1000000,
                       cfg->max_held_notes) < 0) {
        log_error("cannot start the service: out of memory");
        return -1;
    }
    if (cfg->control_socket[0])
        snprintf(sock, sizeof sock, "%s", cfg->control_socket);
    else if (control_default_path(sock, sizeof sock) < 0)
        return -1;
    if (control_open(&sv->ctl, sock) < 0)
        return -1;
    const engine_ops *engine = engine_for(cfg);
    if (generator_start(&sv->gen, engine, cfg) < 0)
        return -1;
    if (service_open_ports(sv) < 0)
        return -1;
    /* An instance before this one may have died with notes sounding (killed
     * by the watchdog, a crash): whatever listens hears all notes off. */
    silence_all(sv, clock_now_ns());
    sv->watchdog_ns = notify_watchdog_ns();
    sv->next_watchdog = clock_now_ns() + sv->watchdog_ns / 2;
    log_info("listening: engine %s (%.2f ms per event, head start %d ms), %d input(s), %d output(s), "
             "control socket %s", engine->name, sv->gen.ms_per_event, lookahead_ms(sv), sv->n_inputs,
             sv->n_outputs, sock);
    if (sv->watchdog_ns)
        log_info("watchdog: a ping every %.1f s while the generator moves (stalled: %.1f s without progress)",
                 (double)sv->watchdog_ns / 2e9, (double)sv->gen.stall_ns / 1e9);
    notify_send("READY=1\nSTATUS=listening");
    return 0;
}

/* Silence first (within milliseconds of the signal), then the generator;
 * the recording is written before the outputs close.  Returns 0, or -1
 * when the recording could not be written. */
static int stop_service(service *sv)
{
    int rc = 0;
    int64_t now = clock_now_ns();
    stop_response(sv, now);
    silence_all(sv, now);
    notify_send("STOPPING=1");
    generator_stop(&sv->gen);
    log_debug("stop: silent after %.1f ms, generator stopped after %.1f ms",
              (double)(now - sv->quit_ns) / 1e6, (double)(clock_now_ns() - sv->quit_ns) / 1e6);
    if (sv->cfg.recording[0] && service_save(sv, sv->cfg.recording) < 0)
        rc = -1;
    service_close_ports(sv);
    log_debug("stop: recording saved, outputs closed after %.1f ms",
              (double)(clock_now_ns() - sv->quit_ns) / 1e6);
    log_info("stopped after %.1f s: %" PRIu64 " phrases, %" PRIu64 " notes in, %" PRIu64 " out",
             session_time(sv, clock_now_ns()), sv->ph.phrases, sv->notes_in, sv->notes_out);
    return rc;
}

int daemon_run(const config *cfg, const char *config_path, char *const *sets, int n_sets)
{
    static service sv_storage;      /* large: keep it off the stack */
    service *sv = &sv_storage;
    sigset_t mask;
    struct sigaction old_sa[3];
    int rc = -1;

    init_service(sv, cfg, config_path, sets, n_sets);
    if (start_signals(sv, &mask, old_sa) == 0 && start_service(sv) == 0) {
        rc = run_loop(sv);
        if (stop_service(sv) < 0)
            rc = -1;
    }
    close_all(sv);
    stop_signals(&mask, old_sa);
    return rc;
}

/* loop.c: the service: one poll() loop over MIDI in, control socket, signals, timers; when things are due. */
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
                service_input(sv, &msgs[j], now, now - age[j]);
            if (got < 64)
                break;
        }
    }
}

/* ---- start and stop ---- */

static void close_all(service *sv)
{
    link_sync_leave(&sv->link);
    model_switch_stop(&sv->models);
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

/* What is due by NOW: the scheduler's messages, lost keys, the
 * continuation's work (live_due), the watchdog.  Returns 1 when it acted
 * (look again before waiting), else 0 with the time of the next due work
 * in *WAKE_AT. */
static int run_due(service *sv, int64_t now, int64_t *wake_at)
{
    scheduler_run(&sv->sched, live_hold(sv, now), 0, service_emit_model, sv);
    int64_t lost = phrase_next_lost(&sv->phrase, &sv->cfg), wake;
    if (lost <= now) {
        service_release_lost_keys(sv, now);
        return 1;
    }
    if (live_due(sv, now, &wake))
        return 1;
    if (sv->watchdog_ns && now >= sv->next_watchdog) {
        watchdog_ping(sv, now);
        sv->next_watchdog = now + sv->watchdog_ns / 2;
    }
    int64_t sched = live_hold_wake(sv, scheduler_next_deadline(&sv->sched));
    if (sched < wake)
        wake = sched;
    if (lost < wake)
        wake = lost;
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
    fds[n++] = (struct pollfd){ link_sync_fd(&sv->link), POLLIN, 0 };   /* -1: ignored */
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
    if (fds[2].revents) {
        live_receive(sv);
        watch_heads(sv);
        model_switch_poll(sv);
    }
    if (fds[3].revents)
        service_link_changed(sv, clock_now_ns());
    if (n > in_at)
        read_inputs(sv, fds + in_at, n - in_at);
    control_dispatch(&sv->ctl, fds + ctl_at, n_ctl, service_command, sv);
    atomic_store(&sv->gen.watchers, control_watchers(&sv->ctl));
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
    sv->cont.duet_rng = sv->seed * 0x9E3779B97F4A7C15ULL | 1;
    phrase_init(&sv->phrase);
    transport_init(&sv->transport);
    link_sync_init(&sv->link);
    sv->cont.end = INT64_MAX;
    sv->cont.anchor_pos = -1;
    sv->cont.margin = NAN;          /* no verdict yet */
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
    if (scheduler_init(&sv->sched, SCHED_CAP, (int64_t)cfg->play.max_note_ms * 1000000,
                       cfg->play.max_held) < 0) {
        log_error("cannot start the service: out of memory");
        return -1;
    }
    if (cfg->control_socket[0])
        snprintf(sock, sizeof sock, "%s", cfg->control_socket);
    else if (control_default_path(sock, sizeof sock) < 0)
        return -1;
    if (control_open(&sv->ctl, sock) < 0)
        return -1;
    if (cfg->sync == SYNC_LINK) {
        char why[512];
        if (link_sync_join(&sv->link, cfg->tempo, cfg->link_start_stop, why, sizeof why) < 0) {
            log_error("sync = link: %s", why);
            return -1;
        }
    }
    const engine_ops *engine = engine_for(cfg);
    if (generator_start(&sv->gen, engine, cfg) < 0)
        return -1;
    model_switch_init(&sv->models, engine, sv->gen.state, sv->gen.wake_loop);
    if (service_open_ports(sv) < 0)
        return -1;
    /* An instance before this one may have died with notes sounding (killed
     * by the watchdog, a crash): whatever listens hears all notes off. */
    service_silence_all(sv, clock_now_ns());
    sv->watchdog_ns = notify_watchdog_ns();
    sv->next_watchdog = clock_now_ns() + sv->watchdog_ns / 2;
    log_info("listening: engine %s (%.2f ms per event, head start %d ms), %d input(s), %d output(s), "
             "control socket %s", engine->name, sv->gen.ms_per_event, timeline_lookahead_ms(sv), sv->n_inputs,
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
    live_stop(sv, now);
    service_silence_all(sv, now);
    notify_send("STOPPING=1");
    model_switch_stop(&sv->models);
    generator_stop(&sv->gen);
    log_debug("stop: silent after %.1f ms, generator stopped after %.1f ms",
              (double)(now - sv->quit_ns) / 1e6, (double)(clock_now_ns() - sv->quit_ns) / 1e6);
    if (sv->cfg.recording[0] && service_save(sv, sv->cfg.recording) < 0)
        rc = -1;
    service_close_ports(sv);
    link_sync_leave(&sv->link);
    log_debug("stop: recording saved, outputs closed after %.1f ms",
              (double)(clock_now_ns() - sv->quit_ns) / 1e6);
    log_info("stopped after %.1f s: %" PRIu64 " phrases, %" PRIu64 " notes in, %" PRIu64 " out",
             session_time(sv, clock_now_ns()), sv->phrase.phrases, sv->notes_in, sv->notes_out);
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

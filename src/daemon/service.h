/* service.h: the state of `continuo serve`, shared by the daemon's files (loop, player, ports, live, timeline, replay, commands, settings). */
#ifndef CONTINUO_DAEMON_SERVICE_H
#define CONTINUO_DAEMON_SERVICE_H

#include <stdint.h>

#include "daemon/control.h"
#include "daemon/generator.h"
#include "daemon/linksync.h"
#include "daemon/live.h"
#include "daemon/model_switch.h"
#include "daemon/takes.h"
#include "daemon/options.h"
#include "daemon/phrase.h"
#include "daemon/replay.h"
#include "daemon/scheduler.h"
#include "daemon/timeline.h"
#include "daemon/transport.h"
#include "daemon/watch.h"
#include "io/midi_port.h"
#include "util/log.h"

#define MAX_PORTS     8         /* inputs; outputs the config names (the recording is one more) */
#define MAX_POLL      (3 + CONTROL_MAX_CLIENTS + 1 + MAX_PORTS * 4)
#define SCHED_CAP     16384
#define LAT_SAMPLES   1024
#define BARGE_IN_NS   2000000000LL  /* a note this soon after an answer's start: it barged in */
#define NS            1000000000LL

/* Everything the service owns; one instance (static storage in daemon_run). */
typedef struct service {
    config       cfg;               /* live settings: set, reload and CCs change them,
                                       all through service_set_option or service_reload */
    const char  *config_path;       /* borrowed; NULL: built-in defaults */
    char *const *sets;              /* --set KEY=VALUE overrides, re-applied on reload */
    int          n_sets;
    int64_t      t0;                /* session start, ns */
    int          sig_fd, timer_fd;
    control_server ctl;
    midi_port   *inputs[MAX_PORTS];
    int          n_inputs;
    midi_port   *outputs[MAX_PORTS + 1];    /* the config's, then the recording */
    int          n_outputs;
    scheduler    sched;             /* the model's output */
    note_table   thru;              /* the player's notes sent thru */
    phrase       phrase;            /* the player's phrase: when it ends, controllers */
    transport    transport;         /* MIDI clock and transport from the inputs */
    link_sync    link;              /* sync = link: the Ableton Link session */
    generator    gen;
    model_switch models;            /* a model switched live (model_switch.h) */
    uint64_t     seed;
    live_cont    cont;              /* the continuation playing (live.h) */
    watch_ids    watch;             /* note ids for the watchers (watch.h) */
    takes        takes;             /* the last answers, to play again (takes.h) */
    int64_t      lat_ns[LAT_SAMPLES];   /* phrase end -> first note, last ones */
    uint64_t     n_lat;
    int64_t      delay_ns[LAT_SAMPLES]; /* the player's last release -> first note, of the
                                           phrases that silence or a verdict ended */
    uint64_t     n_delay;
    uint64_t     barge_ins;         /* the player played within BARGE_IN_NS of such an
                                       answer's start */
    /* watchdog */
    int64_t      watchdog_ns, next_watchdog;
    int          stalled;           /* the generator is stalled: no pings */
    /* counters */
    uint64_t     notes_in, notes_out, responses, interrupted;
    int64_t      duet_retry;        /* ns: next try to start a duet after a failed one */
    log_limit    busy_warn;         /* "generator busy" warnings, at most 1/s */
    log_limit    cc_warn;           /* a controller's setting refused, at most 1/s */
    int          quit, reload;
    int64_t      quit_ns;           /* when the stop signal was read */
} service;

static inline double session_time(const service *sv, int64_t t)
{
    return (double)(t - sv->t0) / (double)NS;
}

/* The player's message M, read at NOW, that arrived at AT (<= NOW): the
 * phrase, thru, the clock, the controllers (player.c). */
void service_input(service *sv, const midi_msg *m, int64_t now, int64_t at);
/* The Link session's state changed (Link's thread woke the loop, or
 * link_start_stop turned): a stop silences the model (player.c). */
void service_link_changed(service *sv, int64_t now);
/* Keys held past held_note_timeout_ms are taken as released (player.c). */
void service_release_lost_keys(service *sv, int64_t now);

/* The outputs (ports.c).  play: M on every output (the recording plays
 * nothing); record: a copy of PART's message M, sent or heard at NOW, for
 * the outputs that keep one (the recording); emit_model: the scheduler's
 * emit, a model message goes out now (USER: the service); send_thru: a
 * player's message to the outputs, its notes tracked; silence_all: every
 * sounding note ends at once (model and thru), then all-notes-off on every
 * channel of every output. */
void service_play(service *sv, const midi_msg *m);
void service_record(service *sv, const midi_msg *m, midi_part part, int64_t now);
void service_emit_model(void *user, const midi_msg *m, int64_t now);
void service_send_thru(service *sv, const midi_msg *m, int64_t now);
void service_silence_all(service *sv, int64_t now);
/* Appends " journal=DIR ok written=N dropped=M" to REPLY (LEN bytes) for
 * each output with a state of its own (ctl status). */
void service_describe_outputs(service *sv, char *reply, size_t len);

/* Changes live option O to VALUE (`ctl set`, a controller): VALUE is
 * parsed into a copy of the config, the rules across keys are checked on
 * it (config_check), then the one value goes in and O's apply step runs.
 * Returns 0, or -1 with the reason in WHY, "KEY: expected ..." for a bad
 * value, "KEY = VALUE: ..." for one refused: nothing changed then (a
 * refused value's old one is put back and applied again).  O must not
 * need a restart (config_needs_restart). */
int  service_set_option(service *sv, const option_def *o, const char *value, char *why, size_t len);
/* Reads the config file and --set overrides again (SIGHUP, `ctl reload`),
 * all or nothing: a file that does not parse or breaks a rule across keys
 * leaves every setting as it is; otherwise each live option that changed
 * goes through its apply step in table order, and when one refuses, the
 * ones applied are put back (in reverse order) and the old settings stay.
 * Everything is logged: the reason of a refusal, the options that need a
 * restart (in one line), each one applied. */
void service_reload(service *sv);

/* Opens the outputs the config lists and the session recording ("record"),
 * then the inputs (ports.c).  Returns 0, or -1 after logging. */
int  service_open_ports(service *sv);
void service_close_ports(service *sv);
/* Messages of PART the outputs kept (the session recording). */
size_t service_kept(const service *sv, midi_part part);
/* Writes the session recording to PATH.  Returns 0, 1 when no output keeps
 * one, or -1 after logging why it could not. */
int  service_save(service *sv, const char *path);

/* The control socket's handler: one request line, one reply (commands.c). */
void service_command(void *user, char *line, char *reply, size_t len);

#endif

/* loop.h: the service: one poll() loop over MIDI input, control socket, signals and timers. */
#ifndef CONTINUO_DAEMON_LOOP_H
#define CONTINUO_DAEMON_LOOP_H

#include "daemon/options.h"

/* Runs `continuo serve` until SIGTERM/SIGINT.  CFG is copied; CONFIG_PATH
 * (may be NULL) is re-read on SIGHUP and `reload`, then the N_SETS
 * "KEY=VALUE" overrides in SETS (borrowed: they must outlive the call).
 * Returns 0 after a clean stop, -1 when it could not start or could not
 * save the recording (already logged). */
int daemon_run(const config *cfg, const char *config_path, char *const *sets, int n_sets);

#endif

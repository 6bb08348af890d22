/* notify.h: the systemd notification protocol (READY, STOPPING, WATCHDOG, STATUS). */
#ifndef CONTINUO_DAEMON_NOTIFY_H
#define CONTINUO_DAEMON_NOTIFY_H

#include <stdint.h>

/* Sends STATE ("READY=1", "STOPPING=1", "WATCHDOG=1", "STATUS=...") to the
 * service manager when $NOTIFY_SOCKET is set; a no-op otherwise.  Uses
 * libsystemd's sd_notify when built with it, else writes the datagram
 * itself (AF_UNIX, SOCK_DGRAM; '@' means the abstract namespace). Returns 1
 * sent, 0 nobody listening, -1 error (logged once per call). */
int notify_send(const char *state);

/* The watchdog period asked for by $WATCHDOG_USEC (and $WATCHDOG_PID, when
 * set, naming this process), in ns; 0 when there is no watchdog.  Pings
 * should come at half of it. */
int64_t notify_watchdog_ns(void);

#endif

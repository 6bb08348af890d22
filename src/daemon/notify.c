/* notify.c: sd_notify, through libsystemd or by hand over $NOTIFY_SOCKET. */
#include "daemon/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "util/log.h"

#if HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

int notify_send(const char *state)
{
    int r = sd_notify(0, state);
    if (r < 0)
        log_warn("cannot notify the service manager (%s): %s", state, strerror(-r));
    return r < 0 ? -1 : r > 0;
}

#else

int notify_send(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa;
    if (!path || !*path)
        return 0;
    size_t n = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || n >= sizeof sa.sun_path) {
        log_warn("cannot notify the service manager: bad NOTIFY_SOCKET '%s'", path);
        return -1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, n);
    if (path[0] == '@')
        sa.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        log_warn("cannot notify the service manager (%s): socket: %s", state, strerror(errno));
        return -1;
    }
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    ssize_t w = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
    int err = errno;
    close(fd);
    if (w < 0) {
        log_warn("cannot notify the service manager (%s): %s", state, strerror(err));
        return -1;
    }
    return 1;
}

#endif

int64_t notify_watchdog_ns(void)
{
    const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
    if (!usec || !*usec)
        return 0;
    if (pid && *pid && strtol(pid, NULL, 10) != (long)getpid())
        return 0;
    char *end;
    long long v = strtoll(usec, &end, 10);
    if (*end || v <= 0)
        return 0;
    return (int64_t)v * 1000;
}

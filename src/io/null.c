/* null.c: the null MIDI backend: input never produces, output discards. */
#include "config.h"

#include "io/backend.h"

static int null_open(midi_port *p, const char *arg, char *err, size_t errlen)
{
    (void)arg;
    (void)err;
    (void)errlen;
    p->priv = NULL;
    return 0;
}

static void null_close(midi_port *p)
{
    (void)p;
}

static int null_read(midi_port *p, midi_msg *out, int64_t *age_ns, int max)
{
    (void)p;
    (void)out;
    (void)age_ns;
    (void)max;
    return 0;
}

static int null_write(midi_port *p, const midi_msg *msg)
{
    (void)p;
    (void)msg;
    return 0;   /* midi_port.c counts it in stats.sent */
}

static int null_list(midi_port_list_fn fn, void *user)
{
    midi_port_info info = { "null", "null", "discards output, never produces input",
                            MIDI_IN | MIDI_OUT };
    fn(&info, user);
    return 1;
}

const midi_backend midi_backend_null = {
    .name = "null",
    .usage = "null (no argument)",
    .dirs = MIDI_IN | MIDI_OUT,
    .open = null_open,
    .close = null_close,
    .poll_fds = NULL,
    .read = null_read,
    .write = null_write,
    .list = null_list,
};

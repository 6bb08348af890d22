/* backend.h: the contract every MIDI backend implements (one file each). */
#ifndef CONTINUO_IO_BACKEND_H
#define CONTINUO_IO_BACKEND_H

#include <stddef.h>

#include "io/midi_port.h"

/* What midi_port_open builds; backends fill in priv. */
struct midi_port {
    const struct midi_backend *backend;
    midi_dir        dir;
    char           *name;       /* spec as opened; owned */
    void           *priv;       /* backend state; owned by the backend */
    const midi_port_settings *settings; /* during open only; may be NULL */
    midi_port_stats stats;      /* received/sent are counted by midi_port.c;
                                   dropped/reopened/parser by the backend */
    int             failing;    /* 1 while writes fail (to log once) */
};

/* A backend: a const table entry. midi_port.c checks arguments (port
 * direction supported, message valid) before calling in, and counts
 * received/sent messages, so backends only move data.
 *
 * open:     opens P (P->dir says which way) for ARG, the text after
 *           "name:" ("" when none), reading P->settings (may be NULL) if
 *           it takes any. On failure writes the cause, without the port
 *           name, into ERR (ERRLEN bytes, e.g. "No such file or
 *           directory"), frees what it took, logs nothing and returns -1;
 *           a backend whose library logs the cause itself (fluidsynth)
 *           leaves ERR empty, and nothing more is logged.
 * close:    frees P->priv and everything open returned; never fails.
 * poll_fds: as midi_port_poll_fds; may be NULL (nothing to watch).
 * read:     as midi_port_read, P is an input; may be NULL for a backend
 *           without inputs.  AGE_NS (never NULL, zeroed by the caller):
 *           a backend that knows when each message arrived (the ALSA
 *           sequencer stamps them) writes how long before the read that
 *           was; the others leave it 0.
 * write:    sends one valid message without blocking; returns 0, or -1
 *           with errno set when it was dropped (the caller counts and logs);
 *           may be NULL for a backend that plays nothing.
 * update:   setting KEY of open port P is now VALUE (the service's `ctl
 *           set`, a reload): takes it up where it can change while open
 *           (FluidSynth's gain), else ignores it; NULL for a backend with
 *           no such setting.
 * keep:     keeps a copy of channel message MSG of PART at TIME (seconds);
 *           returns 0, or -1 when it was dropped (the caller counts); NULL
 *           for a backend that keeps nothing (all but record).
 * save:     writes what was kept to PATH, all or nothing; returns 0, or -1
 *           after logging why not; NULL with keep.
 * list:     calls FN for each port the backend can see; returns how many,
 *           or -1 after logging why it could not look. May be NULL.
 * describe: (may be NULL) its state in a few words for `ctl status`, into
 *           BUF (LEN bytes): the journal's "ok written=N dropped=M". */
typedef struct midi_backend {
    const char *name;
    const char *usage;          /* one line: what ARG means */
    unsigned    dirs;           /* MIDI_IN | MIDI_OUT */
    int  (*open)(midi_port *p, const char *arg, char *err, size_t errlen);
    void (*close)(midi_port *p);
    int  (*poll_fds)(midi_port *p, struct pollfd *fds, int max);
    int  (*read)(midi_port *p, midi_msg *out, int64_t *age_ns, int max);
    int  (*write)(midi_port *p, const midi_msg *msg);
    void (*update)(midi_port *p, const char *key, const char *value);
    int  (*keep)(midi_port *p, const midi_msg *msg, midi_part part, double time);
    int  (*save)(midi_port *p, const char *path);
    int  (*list)(midi_port_list_fn fn, void *user);
    void (*describe)(midi_port *p, char *buf, size_t len);
} midi_backend;

extern const midi_backend midi_backend_null;
extern const midi_backend midi_backend_fifo;
extern const midi_backend midi_backend_raw;
extern const midi_backend midi_backend_fluidsynth;
extern const midi_backend midi_backend_record;
extern const midi_backend midi_backend_journal;
#if HAVE_ALSA
extern const midi_backend midi_backend_alsa;
#endif
#if HAVE_PORTMIDI
extern const midi_backend midi_backend_portmidi;
#endif

/* The name set by midi_port_set_client_name ("continuo" by default). */
const char *midi_port_client_name(void);

/* Finds a built-in backend by exact name; NULL if none. */
const midi_backend *midi_backend_find(const char *name);

#endif

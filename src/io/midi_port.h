/* midi_port.h: MIDI input and output ports, opened by "backend:argument" name. */
#ifndef CONTINUO_MIDI_PORT_H
#define CONTINUO_MIDI_PORT_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "midi/stream.h"

/* Which way a port goes. */
typedef enum midi_dir {
    MIDI_IN  = 1,   /* messages come from the outside world */
    MIDI_OUT = 2,   /* messages go to it */
} midi_dir;

/* Whose a message sent to the outputs is, for an output that keeps the
 * parts apart (the session recording: one track each). */
typedef enum midi_part {
    MIDI_PART_PLAYER = 0,
    MIDI_PART_MODEL  = 1,
} midi_part;
#define MIDI_PARTS 2

/* Counters of one port (they only grow). */
typedef struct midi_port_stats {
    uint64_t received;      /* messages returned by midi_port_read */
    uint64_t sent;          /* messages accepted by midi_port_write */
    uint64_t kept[MIDI_PARTS];  /* messages kept by midi_port_keep, per part */
    uint64_t dropped;       /* messages lost: output not ready, input queue full */
    uint64_t reopened;      /* times the port went away and was opened again */
    midi_stream_stats parser;   /* byte-stream backends (fifo, raw) only */
} midi_port_stats;

/* Settings a backend asks for by name when it opens (the fluidsynth
 * output: soundfont, audio_driver, ...).  GET writes the value of KEY into
 * BUF (LEN bytes) and returns BUF, or returns NULL when it has no such
 * setting (the backend then uses its default). */
typedef struct midi_port_settings {
    const char *(*get)(void *user, const char *key, char *buf, size_t len);
    void *user;
} midi_port_settings;

/* An open port; owned by whoever opened it, freed by midi_port_close.
 * Ports are not thread-safe: one thread (the service loop) opens, polls,
 * reads, writes and closes them all. Nothing here blocks. */
typedef struct midi_port midi_port;

/* Opens the port named SPEC, "BACKEND" or "BACKEND:ARGUMENT":
 *   null                 input that never produces, output that discards
 *                        (and counts)
 *   fifo:PATH            a FIFO or file: input reads bytes without blocking
 *                        and reopens when the writer goes away; output
 *                        writes bytes (a regular file is created/truncated)
 *   raw:PATH             the same for a raw MIDI device, /dev/snd/midiC1D0;
 *                        an input that goes away (device unplugged, FIFO
 *                        removed) is tried again every second
 *   alsa[:SRC,...]       ALSA sequencer client "continuo" (see
 *                        midi_port_set_client_name): an input is port 1
 *                        "in" (writable), an output port 2 "out"
 *                        (readable), and port 0, named after the client,
 *                        takes the directions that are open, so the
 *                        client's name alone reaches it (`aconnect KEYBOARD
 *                        continuo`); for input, optional source ports
 *                        ("client:port" by name or number) are connected to
 *                        port 1, now and whenever they come back (the input
 *                        port must be polled and read for that); for
 *                        output, optional destination ports are connected
 *                        from port 2 if they exist at open. Output goes to
 *                        the subscribers of ports 2 and 0, sent direct (not
 *                        through an ALSA queue): the caller times it.
 *   portmidi:NAME        the first PortMidi device whose name contains NAME
 *                        (input polled every 2 ms)
 * On failure logs "cannot open MIDI input 'SPEC': cause" and returns NULL. */
midi_port *midi_port_open(const char *spec, midi_dir dir);
/* The same, with SETTINGS (borrowed for the call; NULL: every default) for
 * the backends that take some:
 *   fluidsynth           output only: the built-in synthesizer (src/synth);
 *                        settings soundfont, audio_driver, audio_device,
 *                        audio_file, gain, and on_missing_soundfont: with
 *                        "midi-only" a synthesizer that cannot start is
 *                        logged and the port opens silent
 *   record               output only: keeps what midi_port_keep gives it,
 *                        in memory, for midi_port_save (a MIDI file, one
 *                        track per part); plays nothing */
midi_port *midi_port_open_with(const char *spec, midi_dir dir, const midi_port_settings *settings);
void midi_port_close(midi_port *p);     /* NULL is fine */

/* Names the client under which this process's ports appear to others
 * (ALSA sequencer client name; default "continuo"; at most 63 bytes).
 * Call it before the first ALSA port is opened. */
void midi_port_set_client_name(const char *name);

/* Fills FDS (room for MAX) with what poll() should watch for this port and
 * returns how many (0 for a port that never produces, e.g. null or an
 * output with nothing to watch). Every input that can produce exposes at
 * least one fd; outputs expose none. The fds stay valid until
 * midi_port_close (a backend that reopens keeps the same fd number), so
 * they can be collected once. PortMidi has no fd of its own: its inputs
 * expose a timer fd that fires every 2 ms. */
int midi_port_poll_fds(midi_port *p, struct pollfd *fds, int max);

/* Reads the messages waiting on input P into OUT (room for MAX), never
 * blocking; returns how many (0 if none; MAX when more may be waiting, so
 * call again before the next poll()), or -1 after logging an error the
 * port cannot recover from (logged once). Call it when poll() reports any
 * of the port's fds ready; it also does the port's housekeeping (FIFO
 * reopened, ALSA source ports reconnected). Returns 0 for an output.
 * AGE_NS (room for MAX, or NULL): for each message, how long before this
 * call it arrived, where the backend knows (the ALSA sequencer's own time
 * stamps: a clock tick read late by a busy process keeps its true time),
 * else 0. */
int midi_port_read(midi_port *p, midi_msg *out, int64_t *age_ns, int max);

/* Setting KEY (as midi_port_settings names it) is now VALUE while P is
 * open: the backend takes it up if it can (FluidSynth's gain); else
 * nothing happens. */
void midi_port_update(midi_port *p, const char *key, const char *value);

/* Sends MSG on output P at once, never blocking. Returns 0 (also for an
 * output that plays nothing, as record), or -1 when the message was
 * dropped (counted in stats.dropped; logged once per run of failures) or
 * is invalid. */
int midi_port_write(midi_port *p, const midi_msg *msg);

/* Gives output P a copy of channel message MSG of PART, TIME seconds into
 * the session, to keep (record); other outputs ignore it.  Returns 0, or -1
 * when P could not keep it (counted in stats.dropped). */
int midi_port_keep(midi_port *p, const midi_msg *msg, midi_part part, double time);

/* P's state in a few words for `ctl status` (the journal's), into BUF
 * (LEN bytes), or NULL for a port with nothing to say. */
const char *midi_port_describe(midi_port *p, char *buf, size_t len);

/* Writes what output P kept to PATH, all or nothing.  Returns 1 when P
 * keeps nothing (not a recording), 0 when written, -1 after logging why
 * it could not be. */
int midi_port_save(midi_port *p, const char *path);

/* The name P was opened with ("fifo:/tmp/in"); borrowed. */
const char *midi_port_name(const midi_port *p);
const midi_port_stats *midi_port_get_stats(const midi_port *p);

/* Names of the backends built in, in table order: ("null", "fifo", ...);
 * returns the count and stores up to MAX names in NAMES (borrowed). */
int midi_backend_names(const char **names, int max);

/* One line on how to name ports of backend NAME ("fifo:PATH (...)"), or
 * NULL when no such backend is built in. */
const char *midi_backend_usage(const char *name);

/* One port that midi_port_list found. All strings are borrowed for the
 * duration of the callback. */
typedef struct midi_port_info {
    const char *backend;        /* "alsa" */
    const char *spec;           /* what to pass to midi_port_open: "alsa:14:0" */
    const char *description;    /* "Midi Through Port-0" */
    unsigned    dirs;           /* MIDI_IN | MIDI_OUT it can be opened as */
} midi_port_info;

typedef void (*midi_port_list_fn)(const midi_port_info *info, void *user);

/* Calls FN for every port each built-in backend can see (for
 * `continuo serve --list-ports`); returns the number of ports, or -1 when a
 * backend could not be asked (logged; the others are still listed). */
int midi_port_list(midi_port_list_fn fn, void *user);

#endif

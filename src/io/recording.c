/* recording.c: the "record" output: keeps the last keep_minutes of the player's and the model's messages for a MIDI file (src/synth/record.c). */
#include "config.h"

#include "io/backend.h"

#include <stdio.h>
#include <stdlib.h>

#include "synth/record.h"

/* Messages a track keeps for each minute of keep_minutes: 50 a second (a
 * dense passage with the pedal is about 40); past it the oldest go first. */
#define RECORD_PER_MINUTE 3000
#define RECORD_MIN_EVENTS 65536

static int rec_open(midi_port *p, const char *arg, char *err, size_t errlen)
{
    recorder *r = malloc(sizeof *r);
    char buf[64];
    const char *v = p->settings && p->settings->get ? p->settings->get(p->settings->user, "keep_minutes", buf,
                                                                        sizeof buf) : NULL;
    double minutes = v && *v ? atof(v) : 60;
    size_t cap = (size_t)(minutes * RECORD_PER_MINUTE);
    if (*arg) {
        snprintf(err, errlen, "takes no argument (the file is named when saved)");
        free(r);
        return -1;
    }
    if (!r || recorder_init(r, cap > RECORD_MIN_EVENTS ? cap : RECORD_MIN_EVENTS, minutes * 60) < 0) {
        snprintf(err, errlen, "out of memory");
        free(r);
        return -1;
    }
    p->priv = r;
    return 0;
}

static void rec_close(midi_port *p)
{
    recorder_free(p->priv);
    free(p->priv);
}

static int rec_keep(midi_port *p, const midi_msg *msg, midi_part part, double time)
{
    return recorder_add(p->priv, part == MIDI_PART_MODEL ? RECORD_MODEL : RECORD_PLAYER, time, msg);
}

static int rec_save(midi_port *p, const char *path)
{
    return recorder_save(p->priv, path);
}

const midi_backend midi_backend_record = {
    .name = "record",
    .usage = "record (no argument: the session in memory, saved to a MIDI file)",
    .dirs = MIDI_OUT,
    .open = rec_open,
    .close = rec_close,
    .keep = rec_keep,
    .save = rec_save,
};

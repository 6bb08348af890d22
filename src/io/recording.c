/* recording.c: the "record" output: keeps the player's and the model's messages for a MIDI file (src/synth/record.c). */
#include "config.h"

#include "io/backend.h"

#include <stdio.h>
#include <stdlib.h>

#include "synth/record.h"

#define RECORD_RESERVE    65536         /* events per track allocated at open */
#define RECORD_MAX_EVENTS (4u << 20)    /* per track; later ones are dropped */

static int rec_open(midi_port *p, const char *arg, char *err, size_t errlen)
{
    recorder *r = malloc(sizeof *r);
    if (*arg) {
        snprintf(err, errlen, "takes no argument (the file is named when saved)");
        free(r);
        return -1;
    }
    if (!r || recorder_init(r, RECORD_RESERVE, RECORD_MAX_EVENTS) < 0) {
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

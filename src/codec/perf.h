/* perf.h: notes <-> performance events (pedal folding, quantization, decoding). */
#ifndef CONTINUO_PERF_H
#define CONTINUO_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "codec/vocab.h"
#include "midi/smf.h"

/* A sounding note on a time line in seconds. */
typedef struct note {
    double  onset;
    double  release;
    uint8_t pitch;
    uint8_t velocity;   /* 1..127 */
} note;

typedef struct note_list {
    note  *notes;       /* sorted by onset, then pitch; owned */
    size_t n;
    size_t cap;
} note_list;

void note_list_free(note_list *l);

/* Notes from channel events, all channels merged, with the sustain pedal
 * (CC64 >= 64 down) folded into note lengths as REFERENCE.md describes,
 * then dropped.  Returns 0, or -1 out of memory (logged). */
int perf_notes_from_midi(const smf_event *ev, size_t n, note_list *out);

typedef struct encode_opts {
    double stretch;     /* time-stretch factor, 1.0 = none */
    int    transpose;   /* semitones; notes leaving the range are dropped */
    int    add_eos;     /* append EOS when the layout has one */
} encode_opts;

/* Events for NOTES in layout V; TOKENS is a new array (caller frees). */
int perf_encode(const vocab *v, const note *notes, size_t n, const encode_opts *opt,
                uint16_t **tokens, size_t *n_tokens);

/* Streaming decoder: tokens in, notes out.  Robust to any id sequence:
 * NOTE_OFF of a silent pitch is ignored, a re-struck pitch ends the sounding
 * one first, a note held longer than max_note_s is cut there. */
typedef struct perf_decoder {
    const vocab *v;
    double time;            /* seconds */
    int    velocity;        /* current velocity (MIDI value) */
    double max_note_s;      /* cap on note length */
    double onset[128];      /* < 0 when the pitch is silent */
    uint8_t onset_vel[128];
} perf_decoder;

void perf_decoder_init(perf_decoder *d, const vocab *v, double max_note_s);
/* Feeds one id; completed notes are appended to OUT.  Returns 0 or -1 (oom). */
int perf_decoder_push(perf_decoder *d, int id, note_list *out);
/* Ends every sounding note at the current time. */
int perf_decoder_finish(perf_decoder *d, note_list *out);

/* Notes -> channel events (note on/off pairs, channel 0) sorted by time. */
int perf_notes_to_events(const note *notes, size_t n, smf_event **ev, size_t *n_ev);

#endif

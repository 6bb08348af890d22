/* perf.h: notes <-> performance events (pedal folding, quantization, decoding). */
#ifndef CONTINUO_PERF_H
#define CONTINUO_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "codec/vocab.h"
#include "midi/smf.h"

/* Default cap on a decoded note's length (continuo decode --max-note-seconds). */
#define PERF_MAX_NOTE_S_DEFAULT 30.0
/* Velocity of NOTE_ONs decoded before any VELOCITY event (Magenta's default). */
#define PERF_DEFAULT_VELOCITY 100

/* A sounding note on a time line in seconds. */
typedef struct note {
    double  onset;
    double  release;
    uint8_t pitch;
    uint8_t velocity;   /* 1..127 */
} note;

/* A growable array of notes.  Zero-initialise it; free with note_list_free. */
typedef struct note_list {
    note  *notes;       /* sorted by onset, then pitch (where documented); owned */
    size_t n;
    size_t cap;
} note_list;

void note_list_free(note_list *l);
int  note_list_append(note_list *l, const note *n);   /* 0, or -1 out of memory (logged) */
/* Stable sort by onset, then pitch.  Returns 0, or -1 out of memory (logged). */
int  note_list_sort(note_list *l);

/* Notes from channel events (sorted by time), appended to OUT and sorted by
 * onset then pitch.  All channels are merged: a note is keyed by its pitch
 * alone.  Note-on with velocity 0 is a note-off.  A note-on of a pitch
 * already sounding (held or sustained) ends that note at the new onset; a
 * note-off of a silent pitch is ignored.  The sustain pedal (CC64 >= 64
 * down, any channel) is folded into note lengths as REFERENCE.md describes,
 * then dropped: a note released while the pedal is down lasts until the
 * pedal lifts or the same pitch is struck again; notes still sounding at
 * the end close at the time of the last event.  Returns 0, or -1 out of
 * memory (logged). */
int perf_notes_from_midi(const smf_event *ev, size_t n, note_list *out);

typedef struct encode_opts {
    double stretch;     /* time-stretch factor, 1.0 = none (0 also means none) */
    int    transpose;   /* semitones; notes leaving the range are dropped */
    int    add_eos;     /* append EOS when the layout has one */
} encode_opts;

/* What encoding did besides emitting events (every field a count of notes). */
typedef struct perf_encode_info {
    size_t n_notes;         /* notes encoded (NOTE_ON/NOTE_OFF pairs) */
    size_t n_out_of_range;  /* dropped: pitch (after transpose) outside the layout */
    size_t n_lengthened;    /* onset and release fell on one step: given one step */
    size_t n_collapsed;     /* dropped: the same pitch struck again in the same step */
} perf_encode_info;

/* Quantization, shared by both encoders: step = floor(t * stretch / step + 0.5),
 * negative times count as 0. */
int64_t perf_quantize(const vocab *v, double stretch, double seconds);

/* Events for NOTES in layout V; TOKENS is a new array (caller frees).
 * Rules (docs/TOKENS.md): times are multiplied by the stretch and rounded to
 * the nearest 10 ms step; a note whose release rounds onto its onset step
 * lasts one step (as Magenta does); if a pitch is struck again in the same
 * step as an earlier note of that pitch, the earlier one is dropped (the
 * encoding cannot hold both; input order decides which is earlier).  Events
 * at one step: NOTE_OFFs, then NOTE_ONs, each by pitch; VELOCITY only before
 * a NOTE_ON whose bin differs from the last one emitted; gaps are split into
 * TIME_SHIFTs of at most n_time_shifts steps.  OPT may be NULL (defaults).
 * Returns 0, or -1 out of memory (logged). */
int perf_encode(const vocab *v, const note *notes, size_t n, const encode_opts *opt,
                uint16_t **tokens, size_t *n_tokens);
/* The same, also filling INFO (may be NULL). */
int perf_encode_ex(const vocab *v, const note *notes, size_t n, const encode_opts *opt,
                   uint16_t **tokens, size_t *n_tokens, perf_encode_info *info);

/* A note event as the encoders order them: at STEP (10 ms steps by default),
 * NOTE_ON with its velocity or NOTE_OFF, of PITCH (after transposition). */
typedef struct perf_event {
    int64_t step;
    uint8_t on;             /* 1 NOTE_ON, 0 NOTE_OFF */
    uint8_t pitch;
    uint8_t velocity;       /* 1..127 for NOTE_ON */
} perf_event;

/* Where a token stream stands: the step its TIME_SHIFTs have reached and
 * the velocity bin in force (-1: none yet).  Start at { 0, -1 }. */
typedef struct perf_emit_pos {
    int64_t step;
    int     bin;
} perf_emit_pos;

/* Tokenizing, the one place for every encoder and the service: the ids of
 * EV after POS into OUT (room for perf_emit_room ids): TIME_SHIFTs of at
 * most n_time_shifts steps up to ev->step (none if it is not later), a
 * VELOCITY before a NOTE_ON whose bin differs from POS's, the note.
 * Advances POS; returns how many ids. */
size_t perf_emit(const vocab *v, perf_emit_pos *pos, const perf_event *ev, uint16_t *out);
/* Most ids perf_emit writes for an event at STEP from POS. */
size_t perf_emit_room(const vocab *v, const perf_emit_pos *pos, int64_t step);

/* Streaming encoder for live input: timed channel events in, tokens out.
 * It gives exactly the tokens that perf_notes_from_midi + perf_encode give
 * for the same events (the sustain pedal folded in by the same code).  A
 * step's events are final only once an event of a later step arrives (or
 * perf_encoder_advance/finish says time has moved on); a note-off under the
 * pedal is held back until the pedal lifts.  perf_encoder_push and _pop
 * allocate nothing unless a queue must grow (they start with room for 4096
 * ids and 1024 events). */
typedef struct perf_encoder perf_encoder;

/* A new encoder (OPT may be NULL), or NULL out of memory (logged).  Free with
 * perf_encoder_free. */
perf_encoder *perf_encoder_new(const vocab *v, const encode_opts *opt);
/* The same encoder, but it hands out its final note events (pedal folded,
 * quantized, collapsed, in token order) with perf_encoder_pop_events instead
 * of ids, for a caller that writes them into a token stream of its own with
 * perf_emit: the service's model context, where the model's own events come
 * in between.  No EOS. */
perf_encoder *perf_encoder_new_events(const vocab *v, const encode_opts *opt);
void perf_encoder_free(perf_encoder *e);
/* Feeds one channel event; times must not decrease (an earlier time is taken
 * as the latest one seen).  Returns 0, or -1 out of memory (logged). */
int perf_encoder_push(perf_encoder *e, const smf_event *ev);
/* Declares that no event earlier than SECONDS will come: steps before it
 * become final.  Returns 0 or -1 (oom). */
int perf_encoder_advance(perf_encoder *e, double seconds);
/* Ends the performance: sounding notes close at the last event's time,
 * every pending event becomes final, then EOS if asked.  Pushing after this
 * starts from a clean state at time 0.  Returns 0 or -1 (oom). */
int perf_encoder_finish(perf_encoder *e);
/* Copies up to MAX final ids into IDS and removes them; returns how many. */
size_t perf_encoder_pop(perf_encoder *e, uint16_t *ids, size_t max);
/* Copies up to MAX final events into OUT and removes them (an encoder from
 * perf_encoder_new_events); returns how many. */
size_t perf_encoder_pop_events(perf_encoder *e, perf_event *out, size_t max);
/* Counts so far (since perf_encoder_new). */
perf_encode_info perf_encoder_info(const perf_encoder *e);

/* Streaming decoder: tokens in, notes out.  Robust to any id sequence:
 * NOTE_OFF of a silent pitch is ignored, a re-struck pitch ends the sounding
 * one first, a note held longer than max_note_s is cut there (checked at
 * every TIME_SHIFT, so notes come out while decoding), a note that would end
 * where it started (zero length) is dropped, PAD and ids out of range are
 * ignored (counted), EOS ends every sounding note and sets eos (decoding may
 * go on after it).  Plain data: no allocation, nothing to free. */
typedef struct perf_decoder {
    const vocab *v;
    int64_t steps;          /* time in steps since the start */
    double time;            /* seconds: steps * step_ms / 1000 */
    int    velocity;        /* current velocity (MIDI value) */
    double max_note_s;      /* cap on note length (<= 0: PERF_MAX_NOTE_S_DEFAULT) */
    double onset[128];      /* < 0 when the pitch is silent */
    uint8_t onset_vel[128];
    int    n_sounding;      /* pitches with onset >= 0 */
    int    eos;             /* an EOS has been seen */
    size_t n_ignored;       /* PAD, out-of-range ids, NOTE_OFF of a silent pitch */
    size_t n_zero;          /* notes dropped for zero length */
    size_t n_capped;        /* notes cut at max_note_s */
} perf_decoder;

void perf_decoder_init(perf_decoder *d, const vocab *v, double max_note_s);
/* Feeds one id; completed notes are appended to OUT (in order of release,
 * not onset: note_list_sort them if needed).  Returns 0 or -1 (oom). */
int perf_decoder_push(perf_decoder *d, int id, note_list *out);
/* Ends every sounding note at the current time (capped). */
int perf_decoder_finish(perf_decoder *d, note_list *out);

/* What may come next after what D has decoded, as a sampler's mask: one
 * byte per id in MASK (N ids; the model's vocabulary), PERF_NEXT_*.
 * Forbidden: what D would discard or what breaks the performance: PAD, EOS
 * unless ALLOW_EOS, NOTE_OFF of a silent pitch, and a NOTE_ON of a silent
 * pitch while MAX_HELD notes already sound (0: no cap).  Protected (kept
 * whatever a sampler's filters cut): the time shifts, when PROTECT_TIME.
 * The values are the sampler's (SAMPLER_ALLOWED, _FORBIDDEN, _PROTECTED). */
enum { PERF_NEXT_ALLOWED = 0, PERF_NEXT_FORBIDDEN = 1, PERF_NEXT_PROTECTED = 2 };
void perf_decoder_next_mask(const perf_decoder *d, int max_held, int allow_eos, int protect_time,
                            uint8_t *mask, int n);

/* Notes -> channel events (note on/off pairs, channel 0) sorted by time,
 * note-offs before note-ons at the same time.  EV is a new array (caller
 * frees).  Returns 0, or -1 out of memory (logged). */
int perf_notes_to_events(const note *notes, size_t n, smf_event **ev, size_t *n_ev);

#endif

/* vocab.h: performance-event vocabulary layouts, as data. */
#ifndef CONTINUO_VOCAB_H
#define CONTINUO_VOCAB_H

typedef enum event_type {
    EVENT_PAD,          /* padding, id 0 when the layout has it */
    EVENT_EOS,          /* end of sequence */
    EVENT_NOTE_ON,      /* value: MIDI pitch */
    EVENT_NOTE_OFF,     /* value: MIDI pitch */
    EVENT_TIME_SHIFT,   /* value: steps, 1..n_time_shifts */
    EVENT_VELOCITY,     /* value: bin, 0..n_velocity_bins-1 */
    EVENT_INVALID
} event_type;

/* A layout: ids are [PAD, EOS]? then NOTE_ON, NOTE_OFF, TIME_SHIFT,
 * VELOCITY ranges, in that order. All fields are constant data (one row of
 * the table in vocab.c); layouts are static and never freed. */
typedef struct vocab {
    const char *name;           /* "mt310" (default) or "prnn388" */
    const char *description;
    int size;                   /* number of ids */
    int has_pad_eos;            /* 1: PAD=0, EOS=1 come first */
    int min_pitch, max_pitch;   /* inclusive: 21..108 or 0..127 */
    int n_time_shifts;          /* 100 */
    int step_ms;                /* 10 */
    int n_velocity_bins;        /* 32 */
    int note_on_base;           /* first id of each range */
    int note_off_base;
    int time_shift_base;
    int velocity_base;
} vocab;

const vocab *vocab_default(void);               /* mt310 */
const vocab *vocab_find(const char *name);      /* NULL if unknown */
const vocab *vocab_by_size(int size);           /* NULL if none */
/* The layouts in table order, NULL past the end (for listing them). */
const vocab *vocab_at(int index);
/* Id of (type, value), or -1 when the layout cannot represent it. */
int vocab_id(const vocab *v, event_type type, int value);
/* Type of ID and its value (pitch, steps or bin); EVENT_INVALID if out of range. */
event_type vocab_decode(const vocab *v, int id, int *value);
/* "NOTE_ON(60)", "TIME_SHIFT(25)", "VELOCITY(12)", "PAD", "EOS" into BUF
 * (an id out of range gives "INVALID(id)").  Returns BUF. */
const char *vocab_id_name(const vocab *v, int id, char *buf, int bufsize);
/* The reverse: "NOTE_ON(60)" (case-insensitive, spaces allowed inside the
 * parentheses) or a plain decimal id.  Returns the id, or -1 when TEXT names
 * no id of the layout. */
int vocab_parse(const vocab *v, const char *text);

int velocity_to_bin(const vocab *v, int velocity);   /* (v-1)/4 for 32 bins; v clamped to 1..127 */
int bin_to_velocity(const vocab *v, int bin);        /* 4*bin+1 */

#endif

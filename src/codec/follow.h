/* follow.h: keeps a continuation near the pace and the key of the music it
 * continues, by nudging the model's odds before sampling. */
#ifndef CONTINUO_FOLLOW_H
#define CONTINUO_FOLLOW_H

struct vocab;

#define FOLLOW_RING     1024    /* note-ons remembered: above 100 a second over the window */
#define FOLLOW_WINDOW_S 10.0    /* seconds of music the rate and the key are measured over */

/* Left to its own odds the model drifts away from what it continues (why
 * these two pulls exist: measured on ASAP's valid split with the model of
 * valid NLL 2.172, docs/REALISM.md, "Keeping the pace and the key"):
 *
 * - the pace: after slow openings it plays too many notes per second, in
 *   fast runs rather than more often, so making waits likelier does not
 *   help; making them longer does.  With
 *   rate the note-ons per second of the last FOLLOW_WINDOW_S seconds and aim
 *   that rate at the end of the primer (or the player's phrase), each time
 *   shift of k steps gets
 *
 *       tilt * ln(k) / 2,   tilt = pace * ln((rate + 1) / (aim + 1))
 *
 *   (tilt clamped to +-3) on its logit: faster than its aim, long waits grow
 *   likelier; slower, short ones; at its aim nothing changes.
 * - the key: its pitch classes drift from the primer's.  Each NOTE_ON of
 *   pitch class c gets key_pull * ln(12 * (n_c + 1) / (n + 12)), n_c the
 *   primer's note-ons of class c over its last FOLLOW_WINDOW_S seconds (n in
 *   all), measured with the aim: classes the primer played are drawn a
 *   little nearer, the others pushed a little away, and which octave, how
 *   loud and how long keep the model's odds.
 *
 * Fixed size, no allocation: a struct copy saves and restores it. */
typedef struct perf_follow {
    float  pace;                /* strength of the pace's tilt; 0: off */
    float  key_pull;            /* strength of the key's pull; 0: off */
    double aim;                 /* note-ons per second to keep */
    double aim_poly;            /* the notes sounding at once, on average, to keep */
    float  key_bias[12];        /* per pitch class, set by perf_follow_aim */
    double onset[FOLLOW_RING];  /* times (s) of the last note-ons, a ring */
    double release[FOLLOW_RING];/* when each ended; -1 while it sounds */
    unsigned char pitch[FOLLOW_RING];
    unsigned head, n;
} perf_follow;

void   perf_follow_init(perf_follow *f, float pace, float key_pull);
/* Event ID of layout V happened at TIME seconds (note-ons and note-offs
 * count). */
void   perf_follow_push(perf_follow *f, const struct vocab *v, int id, double time);
/* Note-ons per second at NOW: those of the last FOLLOW_WINDOW_S seconds over
 * the time from the first of them (at least 1 s), so a short phrase after
 * a silence counts at its own pace. */
double perf_follow_rate(const perf_follow *f, double now);
/* The notes sounding at once at NOW, on average: the lengths of the
 * note-ons of the last FOLLOW_WINDOW_S seconds (those still held up to
 * NOW) over the time from the first of them (at least 1 s), as
 * bench/realism.py measures a performance's polyphony. */
double perf_follow_poly(const perf_follow *f, double now);
/* When the newest note-on heard came (s), or -1: none. */
double perf_follow_last_onset(const perf_follow *f);
/* The music up to NOW becomes the aim: its rate, polyphony and pitch
 * classes. */
void   perf_follow_aim(perf_follow *f, double now);
/* The pace's tilt at NOW (0 when off). */
float  perf_follow_tilt(const perf_follow *f, double now);
/* Adds both nudges to LOGITS (layout V) at NOW. */
void   perf_follow_apply(const perf_follow *f, const struct vocab *v, double now, float *logits);

#endif

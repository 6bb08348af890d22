/* pianoroll.h: a piano roll of a primer and its continuation, as SVG or PNG. */
#ifndef CONTINUO_PIANOROLL_H
#define CONTINUO_PIANOROLL_H

#include "codec/perf.h"

/* 1 when PATH ends in .svg or .png (the formats pianoroll_write draws). */
int pianoroll_format_ok(const char *path);

/* Draws PRIMER (blue) and CONT (orange, starting at T_SPLIT seconds) with a
 * dashed line at T_SPLIT; a long primer is shown from its last part only.
 * The format follows PATH's extension. Written all or nothing; logs and
 * returns -1 on error. Both lists are borrowed. */
int pianoroll_write(const char *path, const note_list *primer, const note_list *cont, double t_split);

/* A line from a note of the continuation back to an earlier note it
 * attended to (the onsets, seconds, and pitches), WEIGHT 0..1. */
typedef struct roll_link {
    double  t_to, t_from;
    uint8_t pitch_to, pitch_from;
    float   weight;
} roll_link;

/* pianoroll_write's picture with LINKS (N) drawn over it, each as dark as
 * its weight (SVG only: PATH must end in .svg). */
int pianoroll_write_links(const char *path, const note_list *primer, const note_list *cont, double t_split,
                          const roll_link *links, size_t n);

#endif

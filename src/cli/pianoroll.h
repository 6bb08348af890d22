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

#endif

/* replay.h: music played again into the session: a kept take as the answer (`replay`), a MIDI file as the player's phrase (`ctl play`). */
#ifndef CONTINUO_DAEMON_REPLAY_H
#define CONTINUO_DAEMON_REPLAY_H

#include <stddef.h>

struct service;

/* `ctl play FILE`: the MIDI file's notes are heard as the player's phrase,
 * at their own times (from the next whole second of the session on), and
 * answered at once.  Returns 0 with the ok reply, or -1 with the error. */
int  live_play_file(struct service *sv, const char *path, char *reply, size_t len);
/* Plays take NUMBER again (0: the newest; PREVIOUS: the sampled take before
 * the one last stepped to), now, placed as an answer is (on the beat with
 * sync = clock); its notes enter the context as the model's playing, and
 * it is a take of its own.  Returns 0 with "take #3 again, as take #7" in
 * MSG, or -1 with why not. */
int  live_replay(struct service *sv, unsigned number, int previous, char *msg, size_t len);

#endif

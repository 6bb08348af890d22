/* statedir.h: the one lookup of continuo's state folder (the journal, adapted models), for every reader and writer. */
#ifndef CONTINUO_STATEDIR_H
#define CONTINUO_STATEDIR_H

#include <stddef.h>

/* Who asks: the service writing its journal takes its own folder; a reader
 * (journal, adapt, model = auto) takes the folder where SUB changed last. */
typedef enum state_use { STATE_WRITE, STATE_READ } state_use;

/* Continuo's state folder into OUT (LEN bytes), without a trailing slash:
 * $STATE_DIRECTORY when set (the user unit's StateDirectory=); else a
 * shell's, $XDG_STATE_HOME/continuo, else ~/.local/state/continuo.  With
 * STATE_READ and no $STATE_DIRECTORY, the folder the user unit gets under
 * systemd 252 (Debian 12), $XDG_CONFIG_HOME/continuo or ~/.config/continuo
 * (systemd put user units' state there before 254), is taken instead when
 * its SUB ("journal", "adapted") changed later than the shell's.  0, or -1
 * when there is no place (no HOME). */
int state_dir(state_use use, const char *sub, char *out, size_t len);

#endif

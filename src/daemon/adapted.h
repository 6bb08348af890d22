/* adapted.h: the models `continuo adapt` kept, their cards, and which one `model = auto` plays with. */
#ifndef CONTINUO_ADAPTED_H
#define CONTINUO_ADAPTED_H

#include <stddef.h>

#include "util/statedir.h"

/* The folder STATE/adapted (adapted_dir) holds, for each adapt that
 * passed its check, adapted-YYYYMMDD-HHMMSS.gguf and its card beside it
 * (the same name, .card: "key: value" lines), and a file "use" naming the
 * one to play with ("shipped", or a model's name) when the user chose one
 * (adapt --use N, --reset).  The card is written before the model, each
 * all or nothing, so a model without a card is never seen. */
#define ADAPTED_NAME_MAX 64
#define ADAPTED_PATH_MAX 4096

/* One kept model, as its card tells it. */
typedef struct adapted_model {
    char   name[ADAPTED_NAME_MAX];  /* adapted-YYYYMMDD-HHMMSS.gguf */
    char   date[32];                /* ISO 8601 UTC, from the card */
    double minutes;                 /* the player's playing it learnt from */
    int    sessions;                /* files (sessions) that playing came from */
    double held_before, held_after; /* NLL on the held-back tenth: start model, adapted */
    double ref_before, ref_after;   /* NLL on the general reference */
} adapted_model;

/* DIR/last-run, as `continuo adapt` wrote it after its last verdict. */
typedef struct adapted_last_run {
    char      date[32];         /* ISO 8601 UTC */
    long long newest;           /* mtime of the newest session it read */
    char      verdict[128];     /* "kept", "not kept", "too little playing" */
} adapted_last_run;
/* 0 with *R read, or -1 when DIR/last-run is missing or unreadable. */
int adapted_read_last_run(const char *dir, adapted_last_run *r);

/* STATE/adapted into OUT (LEN bytes), STATE the state folder whose
 * journal a reader sees (statedir.h, STATE_READ: the models stay beside
 * the playing they came from): 0, or -1 (no state folder, logged). */
int adapted_dir(char *out, size_t len);
/* The models in DIR with their cards, oldest first, into *OUT (malloc'd,
 * the caller frees; NULL when none) and *N.  A missing DIR is none.  0, or
 * -1 (logged) when DIR cannot be read or memory runs out. */
int adapted_list(const char *dir, adapted_model **out, int *n);
/* Writes CHOICE ("shipped" or a model's name) to DIR/use, all or nothing;
 * NULL removes the file (auto: the newest again).  0, or -1 (logged). */
int adapted_set_use(const char *dir, const char *choice);
/* The model file `model = auto` plays: the choice in DIR/use when it names
 * a kept model, none when it says "shipped", else the newest kept model.
 * 1 with PATH set, 0 when it is the shipped model (or $CONTINUO_MODEL). */
int adapted_in_use(const char *dir, char *path, size_t len);
/* The model file a `model` setting names: itself, or for "auto" (and the
 * empty setting) $CONTINUO_MODEL when set, else adapted_in_use of the state
 * folder, else NULL (the shipped model: model_resolve_path(NULL)).  BUF
 * (LEN bytes) holds the path when one is found; the result is SETTING, BUF
 * or NULL. */
const char *adapted_model_for(const char *setting, char *buf, size_t len);

#endif

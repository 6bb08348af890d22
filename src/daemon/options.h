/* options.h: the options of `continuo serve`, in one table, and the config file parser. */
#ifndef CONTINUO_DAEMON_OPTIONS_H
#define CONTINUO_DAEMON_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "play/play_options.h"
#include "util/statedir.h"

#define CONFIG_STR_MAX 1024     /* longest string value, with its NUL */

/* OPT_PARSED: a type of its own, parsed and printed by option_def.vtype. */
typedef enum { OPT_STRING, OPT_INT, OPT_DOUBLE, OPT_BOOL, OPT_ENUM, OPT_PARSED } option_type;

/* Output of the model (and MIDI thru) when the soundfont or audio device is missing. */
typedef enum { MISSING_SF_ERROR, MISSING_SF_MIDI_ONLY } missing_sf_policy;
/* Audio drivers FluidSynth 2 can have on Linux; which ones the installed
 * library has is asked at run time (synth_fluid_has_driver). */
typedef enum {
    AUDIO_ALSA, AUDIO_JACK, AUDIO_PULSEAUDIO, AUDIO_PIPEWIRE, AUDIO_SDL2, AUDIO_OSS, AUDIO_PORTAUDIO,
    AUDIO_FILE
} audio_driver_kind;
#define AUDIO_DRIVER_CHOICES "alsa|jack|pulseaudio|pipewire|sdl2|oss|portaudio|file"
/* What times the answers: their own clock, or MIDI clock from an input. */
typedef enum { SYNC_FREE, SYNC_CLOCK, SYNC_LINK } sync_kind;
/* Where an answer's first note falls (with sync = clock). */
typedef enum { START_NOW, START_BEAT, START_BAR } response_start_kind;
/* The grid the model's onsets are moved toward (with sync = clock). */
/* How the player's phrase end is decided (phrase.h, play/turn.h). */
typedef enum { PHRASE_END_SILENCE, PHRASE_END_AUTO } phrase_end_kind;
/* Call and response, or playing along all the time. */
typedef enum { MODE_CALL, MODE_DUET } mode_kind;
typedef enum { QUANTIZE_OFF, QUANTIZE_8, QUANTIZE_16, QUANTIZE_8T, QUANTIZE_16T } quantize_kind;

/* Every setting of the service; plain data, copied by value (no pointers). */
typedef struct config {
    char   model[CONFIG_STR_MAX];          /* model file; "" = the installed default */
    char   input[CONFIG_STR_MAX];          /* comma-separated input specs, "backend[:arg]" */
    char   input_connect[CONFIG_STR_MAX];  /* ALSA source ports to follow, comma-separated */
    char   output[CONFIG_STR_MAX];         /* comma-separated output specs */
    char   soundfont[CONFIG_STR_MAX];
    int    audio_driver;                   /* audio_driver_kind */
    char   audio_device[CONFIG_STR_MAX];   /* "" = the driver's default */
    char   audio_file[CONFIG_STR_MAX];     /* WAV written by audio_driver = file */
    double gain;                           /* FluidSynth synth.gain */
    int    on_missing_soundfont;           /* missing_sf_policy */
    char   recording[CONFIG_STR_MAX];      /* session MIDI file written at exit; "" = none */
    char   journal_dir[CONFIG_STR_MAX];    /* "" = $XDG_STATE_HOME/continuo/journal; "off" */
    double keep_minutes;                   /* what `ctl save` writes: the last minutes in memory */
    double journal_idle_minutes;           /* a new session file after this long silent */
    double journal_max_mb, journal_max_days;   /* the folder's bounds; 0: none */
    char   control_socket[CONFIG_STR_MAX]; /* "" = $XDG_RUNTIME_DIR/continuo/ctl */
    int    phrase_silence_ms;
    int    phrase_end;                     /* phrase_end_kind */
    double phrase_end_bias;                /* auto: added to its thresholds (log-odds) */
    int    held_note_timeout_ms;           /* a key held longer is taken as released; 0 = never */
    double response_seconds;
    int    response_events;
    play_settings play;                    /* how the continuation is played: sampling,
                                              nudges, caps (play/play_options.h) */
    int    seed;                           /* 0: from the clock; continuation n gets seed + n */
    /* Controller keys: a controller number, -1 = off; what each does is
     * its row's option_cc (options.c). */
    int    cc_handover, cc_temperature, cc_top_p, cc_panic, cc_reroll, cc_length; /* -1 = off */
    int    cc_density, cc_register, cc_pitch_low, cc_pitch_high, cc_velocity, cc_key_lock,
           cc_rhythm_temperature, cc_pitch_temperature, cc_motif;      /* the knobs; -1 = off */
    int    cc_replay, cc_previous_take;    /* the takes; -1 = off */
    int    midi_thru;                      /* bool */
    int    model_channel;                  /* 1..16 */
    int    lookahead_ms;
    int    context_events;                 /* tokens kept in the model's context */
    int    model_threads;                  /* threads of the model's forward pass */
    int    memory;                         /* model_memory: 0 window (slides), 1 stream (rolls) */
    int    sync;                           /* sync_kind */
    int    link_start_stop;                /* with sync = link: follow the session's start/stop */
    double tempo;                          /* BPM proposed to a Link session */
    int    response_start;                 /* response_start_kind */
    int    beats_per_bar;
    int    response_bars;                  /* 0: response_seconds decides */
    int    quantize;                       /* quantize_kind */
    double quantize_strength;              /* 0..1 */
    int    mode;                           /* mode_kind */
    double duet_density;                   /* 0..1: the model's share while the player plays */
} config;

struct service;
/* What a change of an option's value does to the running service (settings.c);
 * called after the new value is in the service's config.  Returns 0, or -1
 * with the reason it cannot take the value in WHY (size LEN), for example
 * "cannot write in /x: No such file or directory"; the caller then puts the
 * old value back and runs the step again. */
typedef int (*option_apply)(struct service *sv, char *why, size_t len);
int apply_value(struct service *sv, char *why, size_t len);      /* nothing more: it is read where it is used */
int apply_scheduler(struct service *sv, char *why, size_t len);  /* the scheduler's note limits follow */
int apply_seed(struct service *sv, char *why, size_t len);       /* the next continuation samples from it */
int apply_gain(struct service *sv, char *why, size_t len);       /* FluidSynth's loudness, at once */
int apply_recording(struct service *sv, char *why, size_t len);  /* refuses a folder it cannot write in */
int apply_sync(struct service *sv, char *why, size_t len);       /* joins or leaves the Link session */
int apply_link(struct service *sv, char *why, size_t len);       /* Link's start/stop sync on or off */
int apply_tempo(struct service *sv, char *why, size_t len);      /* proposed to the Link session */
int apply_model(struct service *sv, char *why, size_t len);      /* loaded off the loop, then swapped in (model_switch.h) */

/* What a controller key (cc_*) does with the value (0..127) of the
 * controller it names: it sets an option through a mapping, or asks for an
 * action at CC_ON and above.  Its row says so once: phrase.c maps the
 * controller by it, config_check keeps two keys off one controller, and the
 * config file's help is written from it. */
#define CC_ON 64
typedef enum {
    CC_NONE,        /* not a controller key */
    CC_ACTION,      /* value >= CC_ON asks for ACTION */
    CC_LINEAR,      /* LO + (HI - LO) value / 127 */
    CC_WHOLE,       /* the same, to the nearest whole number */
    CC_FACTOR,      /* LO (HI / LO)^(value / 127): from LO to HI by equal ratios */
    CC_VALUE,       /* the value itself (a MIDI number) */
    CC_SWITCH,      /* value >= CC_ON: 1 (yes), else 0 */
} cc_map;

typedef struct option_cc {
    cc_map      map;
    const char *sets;       /* the option it sets (config_find); not for CC_ACTION */
    double      lo, hi;     /* CC_LINEAR, CC_WHOLE, CC_FACTOR: what 0 and 127 give */
    const char *unit;       /* written after LO..HI in the help (" s"), or NULL */
    int         action;     /* CC_ACTION: the PHRASE_* bit (daemon/phrase.h) */
    const char *does;       /* CC_ACTION: what it does, for the help: "re-rolls the last response" */
    const char *note;       /* more for the help, after the mapping, or NULL */
} option_cc;

/* One option: the single place that names, types, bounds, applies and documents it. */
typedef struct option_def {
    const char *name;
    option_type type;
    const char *default_value;  /* as it would be written in the file */
    double      min, max;       /* OPT_INT / OPT_DOUBLE bounds, inclusive */
    const char *choices;        /* OPT_ENUM: "a|b|c" (value = index) */
    option_apply apply;         /* run when `set` or `reload` change it while
                                   running; NULL: it needs a restart */
    size_t      offset;         /* of the field in struct config */
    const char *help;           /* one or more lines, '\n'-separated; a controller
                                   key's is written from CC (config_help) */
    const value_type *vtype;    /* OPT_PARSED: how its text is read and written */
    option_cc   cc;             /* a controller key's controller (CC_NONE: not one) */
} option_def;

extern const option_def config_options[];
extern const size_t config_n_options;

const option_def *config_find(const char *name);
/* What value V (0..127) of a controller key OPT's controller sets
 * OPT->cc.sets to (not for CC_ACTION). */
double config_cc_value(const option_def *opt, int v);
/* OPT's help: its text, or a controller key's written from its row
 * ("Controller number (0..127) that sets top_p (0..127 -> 0.05..1); -1
 * turns it off."), in BUF (LEN bytes) then. */
const char *config_help(const option_def *opt, char *buf, size_t len);
/* 1 when OPT cannot change while the service runs. */
int config_needs_restart(const option_def *opt);

/* What a continuation started under C is: how it is played, seeded with
 * SEED, as long as response_seconds and response_events allow (call mode). */
struct cont_spec;
void config_spec(const config *c, uint64_t seed, struct cont_spec *out);

/* Fills C with every default. */
void config_defaults(config *c);

/* Parses VALUE for OPT into C.  On a bad value writes "expected ..." into
 * WHY (size WHYLEN) and returns -1 without touching C. */
int config_set(config *c, const option_def *opt, const char *value, char *why, size_t whylen);
/* The rules across keys: no two controller keys (cc_*) name the same
 * controller, and the play settings' (play_check: pitch_low <= pitch_high).
 * Returns 0, or -1 with "cc_top_p = 21: controller 21 is cc_temperature's
 * already" in WHY (size LEN).  config_check_change names CHANGED (NULL: the
 * later key in the table) as the one that clashes. */
int config_check(const config *c, char *why, size_t len);
int config_check_change(const config *c, const option_def *changed, char *why, size_t len);
/* Swaps OPT's value between A and B (B then holds the one A had). */
void config_swap(config *a, config *b, const option_def *opt);
/* 1 when OPT's value in A is not the one in B, as written in the file. */
int config_differs(const config *a, const config *b, const option_def *opt);
/* Where settings came from, for messages: "PATH", "PATH with --set",
 * "--set" or "the built-in defaults", into BUF. */
const char *config_source(const char *path, int n_sets, char *buf, size_t len);
/* "name=value" (the --set form); logs "--set NAME=VALUE: ..." on error. */
int config_set_arg(config *c, const char *arg);

/* The value of OPT in C as it would be written in the file, into BUF. */
const char *config_format(const config *c, const option_def *opt, char *buf, size_t len);

/* Reads PATH over C (keys not in the file keep their value).  Unknown keys
 * are warnings "PATH:LINE: unknown key 'k'"; a bad line or value is an error
 * "PATH:LINE: ..." and makes it return -1 (C may be partly updated: parse
 * into a copy).  Returns the number of warnings, or -1. */
int config_load_file(config *c, const char *path);
/* The journal's folder into DIR (LEN bytes): journal_dir, else the state
 * folder's journal (util/statedir.h: USE says whether the service writes
 * it or a reader looks for it).  0, 1 when journal_dir is off, -1 when
 * there is no place (no HOME). */
int config_journal_dir(const config *c, state_use use, char *dir, size_t len);
/* Parses TEXT (from NAME) the same way; for tests and fuzzing. */
int config_load_text(config *c, const char *text, size_t len, const char *name);

/* The config file to read when none is given: $XDG_CONFIG_HOME/continuo/
 * continuo.conf (default ~/.config), then each dir of $XDG_CONFIG_DIRS
 * (default /etc/xdg).  Writes the first that exists into BUF and returns 1,
 * or 0 when there is none. */
int config_find_file(char *buf, size_t len);

/* Writes the documented default config (config/continuo.conf) to FP. */
void config_write_doc(FILE *fp);

/* Enum helpers. */
const char *config_enum_name(const option_def *opt, int index, char *buf, size_t len);

#endif

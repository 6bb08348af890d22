/* options.c: the option table of `continuo serve`, its parser and its documentation. */
#include "daemon/options.h"
#include "play/continuation.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "util/choices.h"
#include "util/fileio.h"
#include "util/log.h"

#define OFF(f) offsetof(config, f)
#define RESTART NULL            /* the value is read once, at start */
#define LIVE    apply_value     /* the new value is read where it is used */
/* A row of play/play_options.h's table (OPT_BOOL's MIN and MAX are unused). */
#define PLAY_ROW(key, cli, kind, field, def, lo, hi, arg, apply, help) \
    { key, PLAY_OPT_##kind, def, lo, hi, NULL, apply_##apply, OFF(play.field), help, PLAY_VTYPE_##kind },
#define PLAY_OPT_DOUBLE   OPT_DOUBLE
#define PLAY_OPT_INT      OPT_INT
#define PLAY_OPT_BOOL     OPT_BOOL
#define PLAY_OPT_VELOCITY OPT_PARSED
#define PLAY_OPT_KEY      OPT_PARSED
#define PLAY_OPT_SCORE    OPT_PARSED
#define PLAY_VTYPE_DOUBLE   NULL
#define PLAY_VTYPE_INT      NULL
#define PLAY_VTYPE_BOOL     NULL
#define PLAY_VTYPE_VELOCITY (&play_type_velocity)
#define PLAY_VTYPE_KEY      (&play_type_key)
#define PLAY_VTYPE_SCORE    (&play_type_score)
#define CC_HELP(what) "Controller number (0..127) that " what "; -1 turns it off."

/* The one table: add an option here and everything else follows (parser,
 * `set`/`get`, --set, reload through its apply step, the documented config
 * file and its test). */
const option_def config_options[] = {
    { "model", OPT_STRING, "", 0, 0, NULL, RESTART, OFF(model),
      "Model file (a Music Transformer exported by the engine's tools).\n"
      "Empty: $CONTINUO_MODEL, else the model installed with continuo\n"
      "(continuo-default.gguf).  echo: a model-free engine that answers with\n"
      "the phrase a fifth up (for tests); stall: echo's first note, then it\n"
      "hangs (tests the watchdog: systemd restarts the service).", NULL },
    { "input", OPT_STRING, "alsa", 0, 0, NULL, RESTART, OFF(input),
      "Where the player's MIDI comes from, comma-separated:\n"
      "  alsa             the ALSA sequencer client continuo: write to it by\n"
      "                   name (aconnect KEYBOARD continuo), or to port 1 \"in\"\n"
      "  portmidi:NAME    a PortMidi input device by name\n"
      "  raw:PATH         a raw MIDI byte stream: /dev/snd/midiC1D0 or a FIFO\n"
      "  fifo:PATH        the same (the FIFO is created when missing)\n"
      "  null             nothing (control socket only)", NULL },
    { "input_connect", OPT_STRING, "", 0, 0, NULL, RESTART, OFF(input_connect),
      "ALSA source ports connected to continuo's port \"in\", comma-separated\n"
      "(client names or client:port); reconnected when they come back.", NULL },
    { "output", OPT_STRING, "fluidsynth", 0, 0, NULL, RESTART, OFF(output),
      "Where the continuation (and MIDI thru) goes, comma-separated:\n"
      "  fluidsynth       the built-in synthesizer (soundfont, audio_driver)\n"
      "  alsa             the ALSA sequencer client continuo, for DAWs and synths:\n"
      "                   aconnect continuo SYNTH, or from port 2 \"out\"\n"
      "  portmidi:NAME    a PortMidi output device by name\n"
      "  raw:PATH         raw MIDI bytes to a MIDI device or FIFO\n"
      "  fifo:PATH        raw MIDI bytes to a FIFO, or to a file (created)\n"
      "  none             no sound (the recording still works)", NULL },
    { "soundfont", OPT_STRING, "/usr/share/sounds/sf2/default-GM.sf2", 0, 0, NULL, RESTART, OFF(soundfont),
      "SoundFont for the fluidsynth output (the system General MIDI one).", NULL },
    { "audio_driver", OPT_ENUM, "alsa", 0, 0, AUDIO_DRIVER_CHOICES, RESTART, OFF(audio_driver),
      "Audio driver of the fluidsynth output, one the installed FluidSynth has\n"
      "(`continuo doctor` lists them and which open): alsa, jack (its ports\n"
      "are connected to the system outputs), pulseaudio (also PipeWire's),\n"
      "pipewire, sdl2, oss, portaudio; file writes audio_file (headless).", NULL },
    { "audio_device", OPT_STRING, "", 0, 0, NULL, RESTART, OFF(audio_device),
      "Device of audio_driver (FluidSynth's audio.<driver>.device: hw:1 or\n"
      "plughw:1,0 for alsa, a sink name for pulseaudio, /dev/dsp1 for oss;\n"
      "the server name for jack); empty: the driver's default.", NULL },
    { "audio_file", OPT_STRING, "continuo.wav", 0, 0, NULL, RESTART, OFF(audio_file),
      "WAV file written by audio_driver = file.", NULL },
    { "gain", OPT_DOUBLE, "0.8", 0, 10, NULL, apply_gain, OFF(gain),
      "Loudness of the fluidsynth output (FluidSynth's synth.gain, linear;\n"
      "changes at once: `continuo ctl set gain 0.4`).\n"
      "0.8 puts a continuation of the bundled motif's peaks near -14 dBFS and\n"
      "the loudest piano recording tried (Liszt's Mephisto Waltz) near -3 dBFS,\n"
      "without clipping; FluidSynth's own default, 0.2, is 12 dB quieter.", NULL },
    { "on_missing_soundfont", OPT_ENUM, "error", 0, 0, "error|midi-only", RESTART, OFF(on_missing_soundfont),
      "When the soundfont or audio device cannot be opened: error (refuse to\n"
      "start) or midi-only (go on with the other outputs).", NULL },
    { "recording", OPT_STRING, "", 0, 0, NULL, apply_recording, OFF(recording),
      "Session recording (MIDI file: player and model on separate tracks)\n"
      "written when the service stops; empty: none (`continuo ctl save FILE`\n"
      "still works).  `ctl set` and reload refuse a file in a folder the\n"
      "service cannot write in.", NULL },
    { "journal_dir", OPT_STRING, "", 0, 0, NULL, RESTART, OFF(journal_dir),
      "The session journal: everything played, the player's and the model's,\n"
      "written as it is played into a MIDI file per session (a new one at\n"
      "start and after journal_idle_minutes of silence) that a crash, a kill\n"
      "or a power cut leaves valid with every phrase that ended a second\n"
      "before.  Empty: $XDG_STATE_HOME/continuo/journal (~/.local/state/...),\n"
      "or under the user unit its state directory's journal folder\n"
      "(~/.config/continuo/journal with systemd 252, Debian 12's); off: no\n"
      "journal.  `continuo journal` lists and exports the sessions.", NULL },
    { "keep_minutes", OPT_DOUBLE, "60", 1, 1440, NULL, RESTART, OFF(keep_minutes),
      "Minutes of the session kept in memory for `ctl save` and the recording\n"
      "(the memory for it is taken at start, and stays the same however long the\n"
      "service runs); what is older is in the journal.", NULL },
    { "journal_idle_minutes", OPT_DOUBLE, "10", 0.1, 1440, NULL, RESTART, OFF(journal_idle_minutes),
      "Minutes without playing after which the journal starts a new session file.", NULL },
    { "journal_max_mb", OPT_DOUBLE, "2048", 0, 1048576, NULL, RESTART, OFF(journal_max_mb),
      "The journal folder's largest size in MB: the oldest sessions go first; 0: no limit.", NULL },
    { "journal_max_days", OPT_DOUBLE, "0", 0, 36500, NULL, RESTART, OFF(journal_max_days),
      "Sessions older than this many days leave the journal folder; 0: none do.", NULL },
    { "control_socket", OPT_STRING, "", 0, 0, NULL, RESTART, OFF(control_socket),
      "Control socket; empty: $XDG_RUNTIME_DIR/continuo/ctl.", NULL },
    { "phrase_silence_ms", OPT_INT, "800", 50, 10000, NULL, LIVE, OFF(phrase_silence_ms),
      "Silence (nothing held, pedal up) that ends the player's phrase, in ms.", NULL },
    { "held_note_timeout_ms", OPT_INT, "30000", 0, 3600000, NULL, LIVE, OFF(held_note_timeout_ms),
      "A player's key held longer than this, in ms, counts as released (its\n"
      "note-off was lost: a glitch, a cable pulled), so the phrase can end;\n"
      "logged once per note.  0: never.", NULL },
    { "response_seconds", OPT_DOUBLE, "8", 0.5, 120, NULL, LIVE, OFF(response_seconds),
      "Longest continuation, in seconds.", NULL },
    { "response_events", OPT_INT, "512", 1, 8192, NULL, LIVE, OFF(response_events),
      "Longest continuation, in model events (whichever limit comes first).", NULL },
    PLAY_OPTIONS(PLAY_ROW)
    { "seed", OPT_INT, "0", 0, 2147483647, NULL, apply_seed, OFF(seed),
      "Random seed of the sampler; 0 picks one from the clock.", NULL },
    { "cc_handover", OPT_INT, "20", -1, 127, NULL, LIVE, OFF(cc_handover),
      CC_HELP("hands over to the model at once (value >= 64)"), NULL },
    { "cc_temperature", OPT_INT, "21", -1, 127, NULL, LIVE, OFF(cc_temperature),
      CC_HELP("sets the temperature (0..127 -> 0.1..2.0)"), NULL },
    { "cc_top_p", OPT_INT, "22", -1, 127, NULL, LIVE, OFF(cc_top_p),
      CC_HELP("sets top_p (0..127 -> 0.05..1.0)"), NULL },
    { "cc_panic", OPT_INT, "23", -1, 127, NULL, LIVE, OFF(cc_panic),
      CC_HELP("is panic (value >= 64): all notes off, drop what is queued"), NULL },
    { "cc_reroll", OPT_INT, "24", -1, 127, NULL, LIVE, OFF(cc_reroll),
      CC_HELP("re-rolls the last response (value >= 64)"), NULL },
    { "cc_length", OPT_INT, "25", -1, 127, NULL, LIVE, OFF(cc_length),
      CC_HELP("sets response_seconds (0..127 -> 1..30 s)"), NULL },
    { "cc_replay", OPT_INT, "-1", -1, 127, NULL, LIVE, OFF(cc_replay),
      CC_HELP("plays the newest take again (value >= 64; `continuo ctl replay`)"), NULL },
    { "cc_previous_take", OPT_INT, "-1", -1, 127, NULL, LIVE, OFF(cc_previous_take),
      CC_HELP("plays the take before again (value >= 64; each press one further back)"), NULL },
    { "cc_density", OPT_INT, "-1", -1, 127, NULL, LIVE, OFF(cc_density),
      CC_HELP("sets density (0..127 -> 0.25..4, 64 about 1)"), NULL },
    { "cc_register", OPT_INT, "-1", -1, 127, NULL, LIVE, OFF(cc_register),
      CC_HELP("sets register (0..127 -> -24..+24 semitones, 64: 0)"), NULL },
    { "cc_pitch_low", OPT_INT, "-1", -1, 127, NULL, LIVE, OFF(cc_pitch_low),
      CC_HELP("sets pitch_low (the value is the MIDI number)"), NULL },
    { "cc_pitch_high", OPT_INT, "-1", -1, 127, NULL, LIVE, OFF(cc_pitch_high),
      CC_HELP("sets pitch_high (the value is the MIDI number)"), NULL },
    { "cc_velocity", OPT_INT, "-1", -1, 127, NULL, LIVE, OFF(cc_velocity),
      CC_HELP("sets velocity (0: auto, 1..127 the velocity)"), NULL },
    { "cc_key_lock", OPT_INT, "-1", -1, 127, NULL, LIVE, OFF(cc_key_lock),
      CC_HELP("sets key_lock (value >= 64: yes)"), NULL },
    { "cc_rhythm_temperature", OPT_INT, "-1", -1, 127, NULL, LIVE, OFF(cc_rhythm_temperature),
      CC_HELP("sets rhythm_temperature (0..127 -> 0.25..4, 64 about 1)"), NULL },
    { "cc_pitch_temperature", OPT_INT, "-1", -1, 127, NULL, LIVE, OFF(cc_pitch_temperature),
      CC_HELP("sets pitch_temperature (0..127 -> 0.25..4, 64 about 1)"), NULL },
    { "cc_motif", OPT_INT, "-1", -1, 127, NULL, LIVE, OFF(cc_motif),
      CC_HELP("sets motif (0..127 -> 0..1)"), NULL },
    { "midi_thru", OPT_BOOL, "yes", 0, 0, NULL, LIVE, OFF(midi_thru),
      "Send the player's notes to the outputs too.", NULL },
    { "model_channel", OPT_INT, "1", 1, 16, NULL, LIVE, OFF(model_channel),
      "MIDI channel of the continuation.", NULL },
    { "lookahead_ms", OPT_INT, "-1", -1, 500, NULL, LIVE, OFF(lookahead_ms),
      "Time from the phrase end to the start of the continuation's time line,\n"
      "in ms: the generator's head start for the events after the first one.\n"
      "-1 (auto): 10 ms, or 30 times what one event costs the model (measured\n"
      "when it loads) if that is more: a chord's notes are all due at once, and\n"
      "a 22 M model decodes one in about 1.1 ms (33 ms then).", NULL },
    { "model_threads", OPT_INT, "1", 1, 64, NULL, RESTART, OFF(model_threads),
      "Threads the model uses for each step (more help on a machine with\n"
      "cores to spare; the audio and the service loop need one).", NULL },
    { "context_events", OPT_INT, "1024", 16, 65536, NULL, RESTART, OFF(context_events),
      "Model events kept as context (the oldest are forgotten beyond it).", NULL },
    { "memory", OPT_ENUM, "stream", 0, 0, "window|stream", RESTART, OFF(memory),
      "How the model makes room when its context is full: stream rolls it,\n"
      "each event overwriting the oldest in its cache, at the same cost for\n"
      "every event; window slides it, computing its last 3/4 again (a pause\n"
      "of one prefill every context/4 events, done while the player plays\n"
      "when it can).", NULL },
    { "sync", OPT_ENUM, "free", 0, 0, "free|clock|link", apply_sync, OFF(sync),
      "What times the answers.  free: their own clock, an answer as soon as\n"
      "the phrase ends.  clock: MIDI clock (24 per beat) and transport (Start,\n"
      "Continue, Stop, Song Position) from any input, as a DAW sends them:\n"
      "answers only while the transport runs, Stop silences the model at once,\n"
      "and response_start, response_bars and quantize follow the beat.  link:\n"
      "an Ableton Link session on the local network (DAWs and apps that join\n"
      "it): its tempo and beat phase (beats_per_bar is the quantum), and with\n"
      "link_start_stop its start and stop, as clock's.  Link's sockets are\n"
      "open only while sync = link (the user unit needs its network drop-in).", NULL },
    { "link_start_stop", OPT_BOOL, "yes", 0, 0, NULL, apply_link, OFF(link_start_stop),
      "With sync = link, follow the session's start and stop (the peers that\n"
      "share theirs): stopped, the model is silent and does not answer.\n"
      "Alone, or before any peer starts the session, it counts as playing.", NULL },
    { "tempo", OPT_DOUBLE, "120", 20, 999, NULL, apply_tempo, OFF(tempo),
      "With sync = link, the tempo (BPM) continuo proposes to the session:\n"
      "`ctl set tempo 100` (or `ctl tempo 100`) moves every peer to it.  It\n"
      "starts a session at this tempo when it is alone; joining a session\n"
      "that began earlier, it takes the session's (Link keeps the older of\n"
      "two sessions that meet).", NULL },
    { "response_start", OPT_ENUM, "beat", 0, 0, "now|beat|bar", LIVE, OFF(response_start),
      "With sync = clock or link, where an answer's first note falls: now\n"
      "(the phrase end, as free), the next beat, or the next bar line after\n"
      "the phrase end.", NULL },
    { "beats_per_bar", OPT_INT, "4", 1, 32, NULL, LIVE, OFF(beats_per_bar),
      "Beats (quarter notes of the MIDI clock) in a bar, counted from Start or\n"
      "the Song Position Pointer; with sync = link, the session's quantum.", NULL },
    { "response_bars", OPT_INT, "0", 0, 64, NULL, LIVE, OFF(response_bars),
      "With sync = clock or link, an answer's length in bars: it ends on the\n"
      "bar line this many bars after the one where it starts (notes still\n"
      "sounding end there).  0: response_seconds and response_events decide.", NULL },
    { "quantize", OPT_ENUM, "off", 0, 0, "off|1/8|1/16|1/8t|1/16t", LIVE, OFF(quantize),
      "With sync = clock or link, the grid the model's note onsets are moved\n"
      "toward (eighths, sixteenths, or their triplets); each note keeps its\n"
      "length.", NULL },
    { "quantize_strength", OPT_DOUBLE, "1", 0, 1, NULL, LIVE, OFF(quantize_strength),
      "How far onsets move toward the grid: 1 onto it, 0.5 half way, 0 not.", NULL },
    { "mode", OPT_ENUM, "call", 0, 0, "call|duet", LIVE, OFF(mode),
      "call: the model answers each phrase once the player stops, and stops\n"
      "when the player plays again.  duet: the model plays all the time on\n"
      "model_channel, the player's notes entering its context as they come\n"
      "(it hears both parts as one piece); phrase ends, hand-over and re-roll\n"
      "do nothing.  With sync = clock (or link) it plays only while the\n"
      "transport (the session) runs.", NULL },
    { "duet_density", OPT_DOUBLE, "0.5", 0, 1, NULL, LIVE, OFF(duet_density),
      "In a duet, the share of the model's notes that sound while the player\n"
      "plays (a key held, or a note in the last half second): 1 all of them,\n"
      "0 none (the model only fills the player's rests).", NULL },
};
const size_t config_n_options = sizeof config_options / sizeof config_options[0];

int config_needs_restart(const option_def *opt)
{
    return opt->apply == NULL;
}

const option_def *config_find(const char *name)
{
    for (size_t i = 0; i < config_n_options; i++)
        if (strcmp(config_options[i].name, name) == 0)
            return &config_options[i];
    return NULL;
}

const char *config_enum_name(const option_def *opt, int index, char *buf, size_t len)
{
    const char *p = opt->choices;
    for (int i = 0; i < index && p; i++) {
        p = strchr(p, '|');
        if (p)
            p++;
    }
    if (!p) {
        snprintf(buf, len, "?");
        return buf;
    }
    const char *bar = strchr(p, '|');
    int n = bar ? (int)(bar - p) : (int)strlen(p);
    snprintf(buf, len, "%.*s", n, p);
    return buf;
}

static int parse_bool(const char *v)
{
    static const char *const yes[] = { "yes", "true", "on", "1" };
    static const char *const no[] = { "no", "false", "off", "0" };
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return 1;
        if (strcasecmp(v, no[i]) == 0)
            return 0;
    }
    return -1;
}

int config_set(config *c, const option_def *opt, const char *value, char *why, size_t whylen)
{
    char *field = (char *)c + opt->offset;
    char *end;
    switch (opt->type) {
    case OPT_STRING:
        if (strlen(value) >= CONFIG_STR_MAX) {
            snprintf(why, whylen, "expected a string shorter than %d bytes", CONFIG_STR_MAX);
            return -1;
        }
        snprintf(field, CONFIG_STR_MAX, "%s", value);
        return 0;
    case OPT_INT: {
        errno = 0;
        long v = strtol(value, &end, 10);
        if (!*value || *end || errno || v < opt->min || v > opt->max) {
            snprintf(why, whylen, "expected an integer from %.0f to %.0f, got '%s'",
                     opt->min, opt->max, value);
            return -1;
        }
        *(int *)field = (int)v;
        return 0;
    }
    case OPT_DOUBLE: {
        errno = 0;
        double v = strtod(value, &end);
        if (!*value || *end || errno || !isfinite(v) || v < opt->min || v > opt->max) {
            snprintf(why, whylen, "expected a number from %g to %g, got '%s'",
                     opt->min, opt->max, value);
            return -1;
        }
        *(double *)field = v;
        return 0;
    }
    case OPT_BOOL: {
        int v = parse_bool(value);
        if (v < 0) {
            snprintf(why, whylen, "expected yes or no, got '%s'", value);
            return -1;
        }
        *(int *)field = v;
        return 0;
    }
    case OPT_PARSED:
        return opt->vtype->parse(value, field, why, whylen);
    case OPT_ENUM: {
        int v = choice_index(opt->choices, value);
        if (v < 0) {
            snprintf(why, whylen, "expected one of %s, got '%s'", opt->choices, value);
            return -1;
        }
        *(int *)field = v;
        return 0;
    }
    }
    snprintf(why, whylen, "internal error: bad option type");
    return -1;
}

int config_journal_dir(const config *c, char *dir, size_t len)
{
    const char *set = c->journal_dir, *state = getenv("STATE_DIRECTORY"), *xdg = getenv("XDG_STATE_HOME"),
               *home = getenv("HOME");
    if (strcmp(set, "off") == 0)
        return 1;
    if (*set)
        snprintf(dir, len, "%s", set);
    else if (state && *state)
        snprintf(dir, len, "%s/journal", state);
    else if (xdg && *xdg)
        snprintf(dir, len, "%s/continuo/journal", xdg);
    else if (home && *home)
        snprintf(dir, len, "%s/.local/state/continuo/journal", home);
    else
        return -1;
    return 0;
}

void config_spec(const config *c, uint64_t seed, cont_spec *out)
{
    memset(out, 0, sizeof *out);
    out->play = c->play;
    out->seed = seed;
    out->seconds = c->response_seconds;
    out->max_events = c->response_events;
}

void config_defaults(config *c)
{
    char why[256];
    memset(c, 0, sizeof *c);
    play_default(&c->play);
    for (size_t i = 0; i < config_n_options; i++)
        if (config_set(c, &config_options[i], config_options[i].default_value, why, sizeof why) < 0)
            log_error("internal error: default of %s: %s", config_options[i].name, why);
}

const char *config_format(const config *c, const option_def *opt, char *buf, size_t len)
{
    const char *field = (const char *)c + opt->offset;
    switch (opt->type) {
    case OPT_STRING: snprintf(buf, len, "%s", field); break;
    case OPT_INT:    snprintf(buf, len, "%d", *(const int *)field); break;
    case OPT_DOUBLE: snprintf(buf, len, "%g", *(const double *)field); break;
    case OPT_BOOL:   snprintf(buf, len, "%s", *(const int *)field ? "yes" : "no"); break;
    case OPT_ENUM:   config_enum_name(opt, *(const int *)field, buf, len); break;
    case OPT_PARSED: opt->vtype->format(field, buf, len); break;
    }
    return buf;
}

/* The keys that map a controller to something; two may not share one. */
static const char *const controller_keys[] = {
    "cc_handover", "cc_temperature", "cc_top_p", "cc_panic", "cc_reroll", "cc_length", "cc_density",
    "cc_register", "cc_pitch_low", "cc_pitch_high", "cc_velocity", "cc_key_lock", "cc_rhythm_temperature",
    "cc_pitch_temperature", "cc_motif", "cc_replay", "cc_previous_take"
};

static int int_value(const config *c, const option_def *opt)
{
    return *(const int *)((const char *)c + opt->offset);
}

int config_check_change(const config *c, const option_def *changed, char *why, size_t len)
{
    enum { N = sizeof controller_keys / sizeof controller_keys[0] };
    const option_def *key[N];
    for (size_t i = 0; i < N; i++)
        key[i] = config_find(controller_keys[i]);
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < i; j++) {
            const option_def *later = key[i], *earlier = key[j];
            int v = int_value(c, later);
            if (v < 0 || v != int_value(c, earlier))
                continue;
            if (earlier == changed) {
                earlier = later;
                later = changed;
            }
            snprintf(why, len, "%s = %d: controller %d is %s's already", later->name, v, v,
                     earlier->name);
            return -1;
        }
    return play_check(&c->play, why, len);     /* pitch_low <= pitch_high */
}

int config_check(const config *c, char *why, size_t len)
{
    return config_check_change(c, NULL, why, len);
}

static size_t value_size(const option_def *opt)
{
    switch (opt->type) {
    case OPT_STRING: return CONFIG_STR_MAX;
    case OPT_DOUBLE: return sizeof(double);
    case OPT_INT: case OPT_BOOL: case OPT_ENUM: return sizeof(int);
    case OPT_PARSED: return opt->vtype->size;
    }
    return 0;
}

void config_swap(config *a, config *b, const option_def *opt)
{
    char tmp[CONFIG_STR_MAX];
    char *x = (char *)a + opt->offset, *y = (char *)b + opt->offset;
    size_t n = value_size(opt);
    memcpy(tmp, x, n);
    memcpy(x, y, n);
    memcpy(y, tmp, n);
}

int config_differs(const config *a, const config *b, const option_def *opt)
{
    char x[CONFIG_STR_MAX], y[CONFIG_STR_MAX];
    return strcmp(config_format(a, opt, x, sizeof x), config_format(b, opt, y, sizeof y)) != 0;
}

const char *config_source(const char *path, int n_sets, char *buf, size_t len)
{
    if (path)
        snprintf(buf, len, "%s%s", path, n_sets > 0 ? " with --set" : "");
    else
        snprintf(buf, len, "%s", n_sets > 0 ? "--set" : "the built-in defaults");
    return buf;
}

int config_set_arg(config *c, const char *arg)
{
    const char *eq = strchr(arg, '=');
    char name[64], why[256];
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof name) {
        log_error("--set %s: expected KEY=VALUE", arg);
        return -1;
    }
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = '\0';
    const option_def *opt = config_find(name);
    if (!opt) {
        log_error("--set %s: unknown key '%s'", arg, name);
        return -1;
    }
    if (config_set(c, opt, eq + 1, why, sizeof why) < 0) {
        log_error("--set %s: %s", arg, why);
        return -1;
    }
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* One line (already NUL-terminated, no newline).  Returns 0 ok, 1 warning, -1 error. */
static int parse_line(config *c, char *line, const char *name, int lineno)
{
    char why[256];
    char *s = trim(line);
    if (*s == '\0' || *s == '#' || *s == ';')
        return 0;
    if (*s == '[') {   /* sections are accepted and ignored: keys are global */
        if (s[strlen(s) - 1] != ']') {
            log_error("%s:%d: expected a section name in [brackets]", name, lineno);
            return -1;
        }
        return 0;
    }
    char *eq = strchr(s, '=');
    if (!eq) {
        log_error("%s:%d: expected 'key = value'", name, lineno);
        return -1;
    }
    *eq = '\0';
    char *key = trim(s), *value = trim(eq + 1);
    if (*key == '\0') {
        log_error("%s:%d: expected a key before '='", name, lineno);
        return -1;
    }
    size_t vn = strlen(value);
    if (vn >= 1 && value[0] == '"') {
        if (vn < 2 || value[vn - 1] != '"') {
            log_error("%s:%d: %s: expected a closing '\"'", name, lineno, key);
            return -1;
        }
        value[vn - 1] = '\0';
        value++;
    }
    const option_def *opt = config_find(key);
    if (!opt) {
        log_warn("%s:%d: unknown key '%s' (ignored)", name, lineno, key);
        return 1;
    }
    if (config_set(c, opt, value, why, sizeof why) < 0) {
        log_error("%s:%d: %s: %s", name, lineno, key, why);
        return -1;
    }
    return 0;
}

int config_load_text(config *c, const char *text, size_t len, const char *name)
{
    char line[CONFIG_STR_MAX + 256];
    int lineno = 0, warnings = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        lineno++;
        if (n >= sizeof line) {
            log_error("%s:%d: line longer than %zu bytes", name, lineno, sizeof line - 1);
            return -1;
        }
        if (memchr(text + pos, '\0', n)) {
            log_error("%s:%d: NUL byte in a text file", name, lineno);
            return -1;
        }
        memcpy(line, text + pos, n);
        line[n] = '\0';
        pos += n + (nl ? 1 : 0);
        int r = parse_line(c, line, name, lineno);
        if (r < 0)
            return -1;
        warnings += r;
    }
    return warnings;
}

int config_load_file(config *c, const char *path)
{
    uint8_t *data;
    size_t len;
    if (file_read_all(path, &data, &len) < 0)
        return -1;
    int r = config_load_text(c, (const char *)data, len, path);
    free(data);
    return r;
}

static int try_dir(char *buf, size_t len, const char *dir, size_t dirlen)
{
    struct stat st;
    if (dirlen == 0 || dir[0] != '/')   /* XDG: relative paths are invalid, ignore */
        return 0;
    int n = snprintf(buf, len, "%.*s/continuo/continuo.conf", (int)dirlen, dir);
    return n > 0 && (size_t)n < len && stat(buf, &st) == 0 && S_ISREG(st.st_mode);
}

int config_find_file(char *buf, size_t len)
{
    const char *home = getenv("XDG_CONFIG_HOME");
    char tmp[CONFIG_STR_MAX];
    if (home && *home) {
        if (try_dir(buf, len, home, strlen(home)))
            return 1;
    } else if ((home = getenv("HOME")) && *home) {
        snprintf(tmp, sizeof tmp, "%s/.config", home);
        if (try_dir(buf, len, tmp, strlen(tmp)))
            return 1;
    }
    const char *dirs = getenv("XDG_CONFIG_DIRS");
    if (!dirs || !*dirs)
        dirs = "/etc/xdg";
    for (const char *p = dirs; *p; ) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (try_dir(buf, len, p, n))
            return 1;
        if (!colon)
            break;
        p = colon + 1;
    }
    return 0;
}

void config_write_doc(FILE *fp)
{
    fprintf(fp,
        "# continuo.conf: settings of `continuo serve`, one 'key = value' per line.\n"
        "#\n"
        "# Looked up at --config FILE, else $XDG_CONFIG_HOME/continuo/continuo.conf\n"
        "# (~/.config/continuo/continuo.conf), else continuo/continuo.conf in each\n"
        "# directory of $XDG_CONFIG_DIRS (/etc/xdg).  Lines starting with '#' or ';'\n"
        "# are comments; values may be quoted \"like this\"; [sections] are ignored.\n"
        "# Every key is shown commented out with its default.  Keys marked (live)\n"
        "# can be changed while running with `continuo ctl set KEY VALUE` or by\n"
        "# editing this file and `continuo ctl reload` (or SIGHUP).\n"
        "#\n"
        "# This file is generated by `continuo serve --dump-config`; a test checks\n"
        "# that the two agree.\n");
    for (size_t i = 0; i < config_n_options; i++) {
        const option_def *o = &config_options[i];
        fprintf(fp, "\n");
        const char *h = o->help;
        while (*h) {
            const char *nl = strchr(h, '\n');
            int n = nl ? (int)(nl - h) : (int)strlen(h);
            fprintf(fp, "# %.*s\n", n, h);
            h += n + (nl ? 1 : 0);
        }
        switch (o->type) {
        case OPT_INT:
            fprintf(fp, "# Integer, %.0f..%.0f%s.\n", o->min, o->max, !config_needs_restart(o) ? " (live)" : "");
            break;
        case OPT_DOUBLE:
            fprintf(fp, "# Number, %g..%g%s.\n", o->min, o->max, !config_needs_restart(o) ? " (live)" : "");
            break;
        case OPT_BOOL:
            fprintf(fp, "# yes or no%s.\n", !config_needs_restart(o) ? " (live)" : "");
            break;
        case OPT_ENUM:
            fprintf(fp, "# One of %s%s.\n", o->choices, !config_needs_restart(o) ? " (live)" : "");
            break;
        case OPT_PARSED:
            fprintf(fp, "# %s%s.\n", o->vtype->what, !config_needs_restart(o) ? " (live)" : "");
            break;
        case OPT_STRING:
            if (!config_needs_restart(o))
                fprintf(fp, "# (live)\n");
            break;
        }
        if (o->type == OPT_STRING && o->default_value[0] == '\0')
            fprintf(fp, "#%s = \"\"\n", o->name);
        else
            fprintf(fp, "#%s = %s\n", o->name, o->default_value);
    }
}

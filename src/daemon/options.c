/* options.c: the option table of `continuo serve`: its rows, setting and checking a value, the rules across keys (config_file.c reads and writes it as text). */
#include "daemon/options.h"
#include "daemon/phrase.h"
#include "play/continuation.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/choices.h"
#include "util/fileio.h"
#include "util/log.h"

#define OFF(f) offsetof(config, f)
#define RESTART NULL            /* the value is read once, at start */
#define LIVE    apply_value     /* the new value is read where it is used */
/* A row of play/play_options.h's table (OPT_BOOL's MIN and MAX are unused). */
#define PLAY_ROW(KEY, CLI, KIND, FIELD, DEF, LO, HI, ARG, APPLY, HELP)                                      \
    { .name = KEY, .type = PLAY_OPT_##KIND, .default_value = DEF, .min = LO, .max = HI,                  \
      .apply = apply_##APPLY, .offset = OFF(play.FIELD), .help = HELP, .vtype = PLAY_VTYPE_##KIND },
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
/* A controller key: the controller (0..127, -1: none) that does what its
 * option_cc (the rest of the row) says; config_help writes its help. */
#define CC_KEY(key, def, ...)                                                                             \
    { .name = #key, .type = OPT_INT, .default_value = def, .min = -1, .max = 127, .apply = LIVE,         \
      .offset = OFF(key), .cc = { __VA_ARGS__ } },

/* The one table: add an option here and everything else follows (parser,
 * `set`/`get`, --set, reload through its apply step, the documented config
 * file and its test).  A controller key's row also says what its controller
 * does: phrase.c maps the controller by it, config_check keeps two keys off
 * one controller, config_help writes its help. */
const option_def config_options[] = {
    { .name = "model", .type = OPT_STRING, .default_value = "auto", .apply = apply_model, .offset = OFF(model),
      .help = "Model file (a Music Transformer exported by the engine's tools).\n"
              "auto (or empty): $CONTINUO_MODEL, else the model `continuo adapt` kept\n"
              "last (or the one chosen with adapt --use), else the model installed\n"
              "with continuo (continuo-default.gguf).  echo: a model-free engine that answers with\n"
              "the phrase a fifth up (for tests); stall: echo's first note, then it\n"
              "hangs (tests the watchdog: systemd restarts the service).\n"
              "Live: the new file loads beside the one playing and takes over between\n"
              "answers (ctl model, or a reload that resolves auto to a newer model);\n"
              "to or from echo and stall only at a restart." },
    { .name = "input", .type = OPT_STRING, .default_value = "alsa", .apply = RESTART, .offset = OFF(input),
      .help = "Where the player's MIDI comes from, comma-separated:\n"
              "  alsa             the ALSA sequencer client continuo: write to it by\n"
              "                   name (aconnect KEYBOARD continuo), or to port 1 \"in\"\n"
              "  portmidi:NAME    a PortMidi input device by name\n"
              "  raw:PATH         a raw MIDI byte stream: /dev/snd/midiC1D0 or a FIFO\n"
              "  fifo:PATH        the same (the FIFO is created when missing)\n"
              "  null             nothing (control socket only)" },
    { .name = "input_connect", .type = OPT_STRING, .default_value = "", .apply = RESTART,
      .offset = OFF(input_connect),
      .help = "ALSA source ports connected to continuo's port \"in\", comma-separated\n"
              "(client names or client:port); reconnected when they come back." },
    { .name = "output", .type = OPT_STRING, .default_value = "fluidsynth", .apply = RESTART,
      .offset = OFF(output),
      .help = "Where the continuation (and MIDI thru) goes, comma-separated:\n"
              "  fluidsynth       the built-in synthesizer (soundfont, audio_driver)\n"
              "  alsa             the ALSA sequencer client continuo, for DAWs and synths:\n"
              "                   aconnect continuo SYNTH, or from port 2 \"out\"\n"
              "  portmidi:NAME    a PortMidi output device by name\n"
              "  raw:PATH         raw MIDI bytes to a MIDI device or FIFO\n"
              "  fifo:PATH        raw MIDI bytes to a FIFO, or to a file (created)\n"
              "  none             no sound (the recording still works)" },
    { .name = "soundfont", .type = OPT_STRING, .default_value = "/usr/share/sounds/sf2/default-GM.sf2",
      .apply = RESTART, .offset = OFF(soundfont),
      .help = "SoundFont for the fluidsynth output (the system General MIDI one)." },
    { .name = "audio_driver", .type = OPT_ENUM, .default_value = "alsa", .choices = AUDIO_DRIVER_CHOICES,
      .apply = RESTART, .offset = OFF(audio_driver),
      .help = "Audio driver of the fluidsynth output, one the installed FluidSynth has\n"
              "(`continuo doctor` lists them and which open): alsa, jack (its ports\n"
              "are connected to the system outputs), pulseaudio (also PipeWire's),\n"
              "pipewire, sdl2, oss, portaudio; file writes audio_file (headless)." },
    { .name = "audio_device", .type = OPT_STRING, .default_value = "", .apply = RESTART,
      .offset = OFF(audio_device),
      .help = "Device of audio_driver (FluidSynth's audio.<driver>.device: hw:1 or\n"
              "plughw:1,0 for alsa, a sink name for pulseaudio, /dev/dsp1 for oss;\n"
              "the server name for jack); empty: the driver's default." },
    { .name = "audio_file", .type = OPT_STRING, .default_value = "continuo.wav", .apply = RESTART,
      .offset = OFF(audio_file),
      .help = "WAV file written by audio_driver = file." },
    { .name = "gain", .type = OPT_DOUBLE, .default_value = "0.8", .min = 0, .max = 10, .apply = apply_gain,
      .offset = OFF(gain),
      .help = "Loudness of the fluidsynth output (FluidSynth's synth.gain, linear;\n"
              "changes at once: `continuo ctl set gain 0.4`).\n"
              "0.8 puts a continuation of the bundled motif's peaks near -14 dBFS and\n"
              "the loudest piano recording tried (Liszt's Mephisto Waltz) near -3 dBFS,\n"
              "without clipping; FluidSynth's own default, 0.2, is 12 dB quieter." },
    { .name = "on_missing_soundfont", .type = OPT_ENUM, .default_value = "error", .choices = "error|midi-only",
      .apply = RESTART, .offset = OFF(on_missing_soundfont),
      .help = "When the soundfont or audio device cannot be opened: error (refuse to\n"
              "start) or midi-only (go on with the other outputs)." },
    { .name = "recording", .type = OPT_STRING, .default_value = "", .apply = apply_recording,
      .offset = OFF(recording),
      .help = "Session recording (MIDI file: player and model on separate tracks)\n"
              "written when the service stops; empty: none (`continuo ctl save FILE`\n"
              "still works).  `ctl set` and reload refuse a file in a folder the\n"
              "service cannot write in." },
    { .name = "journal_dir", .type = OPT_STRING, .default_value = "", .apply = RESTART,
      .offset = OFF(journal_dir),
      .help = "The session journal: everything played, the player's and the model's,\n"
              "written as it is played, a MIDI file per session (a new one at start\n"
              "and after journal_idle_minutes of silence) with the player and the\n"
              "model on a track each; a crash, a kill or a power cut loses no phrase\n"
              "that ended a second before (the next start completes the file).\n"
              "Empty: $XDG_STATE_HOME/continuo/journal (~/.local/state/...),\n"
              "or under the user unit its state directory's journal folder\n"
              "(~/.config/continuo/journal with systemd 252, Debian 12's); off: no\n"
              "journal.  `continuo journal` lists and exports the sessions." },
    { .name = "keep_minutes", .type = OPT_DOUBLE, .default_value = "60", .min = 1, .max = 1440,
      .apply = RESTART, .offset = OFF(keep_minutes),
      .help = "Minutes of the session kept in memory for `ctl save` and the recording\n"
              "(the memory for it is taken at start, and stays the same however long the\n"
              "service runs); what is older is in the journal." },
    { .name = "journal_idle_minutes", .type = OPT_DOUBLE, .default_value = "10", .min = 0.1, .max = 1440,
      .apply = RESTART, .offset = OFF(journal_idle_minutes),
      .help = "Minutes without playing after which the journal starts a new session file." },
    { .name = "journal_max_mb", .type = OPT_DOUBLE, .default_value = "2048", .min = 0, .max = 1048576,
      .apply = RESTART, .offset = OFF(journal_max_mb),
      .help = "The journal folder's largest size in MB: the oldest sessions go first; 0: no limit." },
    { .name = "journal_max_days", .type = OPT_DOUBLE, .default_value = "0", .min = 0, .max = 36500,
      .apply = RESTART, .offset = OFF(journal_max_days),
      .help = "Sessions older than this many days leave the journal folder; 0: none do." },
    { .name = "control_socket", .type = OPT_STRING, .default_value = "", .apply = RESTART,
      .offset = OFF(control_socket),
      .help = "Control socket; empty: $XDG_RUNTIME_DIR/continuo/ctl." },
    { .name = "phrase_silence_ms", .type = OPT_INT, .default_value = "800", .min = 50, .max = 10000,
      .apply = LIVE, .offset = OFF(phrase_silence_ms),
      .help = "Silence (nothing held, pedal up) that ends the player's phrase, in ms;\n"
              "with phrase_end = auto, the longest it waits." },
    { .name = "phrase_end", .type = OPT_ENUM, .default_value = "silence", .choices = "silence|auto",
      .apply = LIVE, .offset = OFF(phrase_end),
      .help = "How the end of the player's phrase is decided.  silence: after\n"
              "phrase_silence_ms of silence (nothing held, pedal up).  auto: 30 ms into\n"
              "each silence it weighs the model's odds of the player's next note (and\n"
              "what else it expects: which note, how loud) with what the last chord says\n"
              "(how long it was held against the pace, how loud, whether it is the key's\n"
              "tonic, whether the pedal was lifted last):\n"
              "an end heard (a cadence) is answered 300 or 600 ms after the release, a\n"
              "breath in a run waits; phrase_silence_ms is the latest it waits.  The\n"
              "hand-over controller answers at once either way." },
    { .name = "phrase_end_bias", .type = OPT_DOUBLE, .default_value = "0", .min = -5, .max = 5,
      .apply = LIVE, .offset = OFF(phrase_end_bias),
      .help = "With phrase_end = auto, how sure of an end it must be, in log-odds added to\n"
              "its thresholds: 0 as tuned; above 0 it answers fewer of the player's pauses\n"
              "and more of the ends late, below 0 the other way (docs/REALISM.md has the\n"
              "table)." },
    { .name = "held_note_timeout_ms", .type = OPT_INT, .default_value = "30000", .min = 0, .max = 3600000,
      .apply = LIVE, .offset = OFF(held_note_timeout_ms),
      .help = "A player's key held longer than this, in ms, counts as released (its\n"
              "note-off was lost: a glitch, a cable pulled), so the phrase can end;\n"
              "logged once per note.  0: never." },
    { .name = "response_seconds", .type = OPT_DOUBLE, .default_value = "8", .min = 0.5, .max = 120,
      .apply = LIVE, .offset = OFF(response_seconds),
      .help = "Longest continuation, in seconds." },
    { .name = "response_events", .type = OPT_INT, .default_value = "512", .min = 1, .max = 8192, .apply = LIVE,
      .offset = OFF(response_events),
      .help = "Longest continuation, in model events (whichever limit comes first)." },
    PLAY_OPTIONS(PLAY_ROW)
    { .name = "seed", .type = OPT_INT, .default_value = "0", .min = 0, .max = 2147483647, .apply = apply_seed,
      .offset = OFF(seed),
      .help = "Random seed of the sampler; 0 picks one from the clock." },
    CC_KEY(cc_handover, "20", .map = CC_ACTION, .action = PHRASE_HANDOVER,
           .does = "hands over to the model at once")
    CC_KEY(cc_temperature, "21", .map = CC_LINEAR, .sets = "temperature", .lo = 0.1, .hi = 2.0)
    CC_KEY(cc_top_p, "22", .map = CC_LINEAR, .sets = "top_p", .lo = 0.05, .hi = 1.0)
    CC_KEY(cc_panic, "23", .map = CC_ACTION, .action = PHRASE_PANIC, .does = "is panic",
           .note = "all notes off, drop what is queued")
    CC_KEY(cc_reroll, "24", .map = CC_ACTION, .action = PHRASE_REROLL, .does = "re-rolls the last response")
    CC_KEY(cc_length, "25", .map = CC_LINEAR, .sets = "response_seconds", .lo = 1, .hi = 30, .unit = " s")
    CC_KEY(cc_replay, "-1", .map = CC_ACTION, .action = PHRASE_REPLAY, .does = "plays the newest take again",
           .note = "`continuo ctl replay`")
    CC_KEY(cc_previous_take, "-1", .map = CC_ACTION, .action = PHRASE_PREVIOUS,
           .does = "plays the take before again", .note = "each press one further back")
    CC_KEY(cc_density, "-1", .map = CC_FACTOR, .sets = "density", .lo = 0.25, .hi = 4)
    CC_KEY(cc_register, "-1", .map = CC_WHOLE, .sets = "register", .lo = -24, .hi = 24, .unit = " semitones")
    CC_KEY(cc_pitch_low, "-1", .map = CC_VALUE, .sets = "pitch_low", .note = "the value is the MIDI number")
    CC_KEY(cc_pitch_high, "-1", .map = CC_VALUE, .sets = "pitch_high", .note = "the value is the MIDI number")
    CC_KEY(cc_velocity, "-1", .map = CC_VALUE, .sets = "velocity", .note = "0: auto, 1..127 the velocity")
    CC_KEY(cc_key_lock, "-1", .map = CC_SWITCH, .sets = "key_lock")
    CC_KEY(cc_rhythm_temperature, "-1", .map = CC_FACTOR, .sets = "rhythm_temperature", .lo = 0.25, .hi = 4)
    CC_KEY(cc_pitch_temperature, "-1", .map = CC_FACTOR, .sets = "pitch_temperature", .lo = 0.25, .hi = 4)
    CC_KEY(cc_motif, "-1", .map = CC_LINEAR, .sets = "motif", .lo = 0, .hi = 1)
    { .name = "midi_thru", .type = OPT_BOOL, .default_value = "yes", .apply = LIVE, .offset = OFF(midi_thru),
      .help = "Send the player's notes to the outputs too." },
    { .name = "model_channel", .type = OPT_INT, .default_value = "1", .min = 1, .max = 16, .apply = LIVE,
      .offset = OFF(model_channel),
      .help = "MIDI channel of the continuation." },
    { .name = "lookahead_ms", .type = OPT_INT, .default_value = "-1", .min = -1, .max = 500, .apply = LIVE,
      .offset = OFF(lookahead_ms),
      .help = "Time from the phrase end to the start of the continuation's time line,\n"
              "in ms: the generator's head start for the events after the first one.\n"
              "-1 (auto): 10 ms, or 30 times what one event costs the model (measured\n"
              "when it loads) if that is more: a chord's notes are all due at once, and\n"
              "a 22 M model decodes one in about 1.1 ms (33 ms then); 3 ms for an\n"
              "answer thought over in the silence, whose first notes are sampled." },
    { .name = "model_threads", .type = OPT_INT, .default_value = "1", .min = 1, .max = 64, .apply = RESTART,
      .offset = OFF(model_threads),
      .help = "Threads the model uses for each step (more help on a machine with\n"
              "cores to spare; the audio and the service loop need one)." },
    { .name = "context_events", .type = OPT_INT, .default_value = "1024", .min = 16, .max = 65536,
      .apply = RESTART, .offset = OFF(context_events),
      .help = "Model events kept as context (the oldest are forgotten beyond it)." },
    { .name = "memory", .type = OPT_ENUM, .default_value = "stream", .choices = "window|stream",
      .apply = RESTART, .offset = OFF(memory),
      .help = "How the model makes room when its context is full: stream rolls it,\n"
              "each event overwriting the oldest in its cache, at the same cost for\n"
              "every event; window slides it, computing its last 3/4 again (a pause\n"
              "of one prefill every context/4 events, done while the player plays\n"
              "when it can)." },
    { .name = "sync", .type = OPT_ENUM, .default_value = "free", .choices = "free|clock|link",
      .apply = apply_sync, .offset = OFF(sync),
      .help = "What times the answers.  free: their own clock, an answer as soon as\n"
              "the phrase ends.  clock: MIDI clock (24 per beat) and transport (Start,\n"
              "Continue, Stop, Song Position) from any input, as a DAW sends them:\n"
              "answers only while the transport runs, Stop silences the model at once,\n"
              "and response_start, response_bars and quantize follow the beat.  link:\n"
              "an Ableton Link session on the local network (DAWs and apps that join\n"
              "it): its tempo and beat phase (beats_per_bar is the quantum), and with\n"
              "link_start_stop its start and stop, as clock's.  Link's sockets are\n"
              "open only while sync = link (the user unit needs its network drop-in)." },
    { .name = "link_start_stop", .type = OPT_BOOL, .default_value = "yes", .apply = apply_link,
      .offset = OFF(link_start_stop),
      .help = "With sync = link, follow the session's start and stop (the peers that\n"
              "share theirs): stopped, the model is silent and does not answer.\n"
              "Alone, or before any peer starts the session, it counts as playing." },
    { .name = "tempo", .type = OPT_DOUBLE, .default_value = "120", .min = 20, .max = 999, .apply = apply_tempo,
      .offset = OFF(tempo),
      .help = "With sync = link, the tempo (BPM) continuo proposes to the session:\n"
              "`ctl set tempo 100` (or `ctl tempo 100`) moves every peer to it.  It\n"
              "starts a session at this tempo when it is alone; joining a session\n"
              "that began earlier, it takes the session's (Link keeps the older of\n"
              "two sessions that meet)." },
    { .name = "response_start", .type = OPT_ENUM, .default_value = "beat", .choices = "now|beat|bar",
      .apply = LIVE, .offset = OFF(response_start),
      .help = "With sync = clock or link, where an answer's first note falls: now\n"
              "(the phrase end, as free), the next beat, or the next bar line after\n"
              "the phrase end." },
    { .name = "beats_per_bar", .type = OPT_INT, .default_value = "4", .min = 1, .max = 32, .apply = LIVE,
      .offset = OFF(beats_per_bar),
      .help = "Beats (quarter notes of the MIDI clock) in a bar, counted from Start or\n"
              "the Song Position Pointer; with sync = link, the session's quantum." },
    { .name = "response_bars", .type = OPT_INT, .default_value = "0", .min = 0, .max = 64, .apply = LIVE,
      .offset = OFF(response_bars),
      .help = "With sync = clock or link, an answer's length in bars: it ends on the\n"
              "bar line this many bars after the one where it starts (notes still\n"
              "sounding end there).  0: response_seconds and response_events decide." },
    { .name = "quantize", .type = OPT_ENUM, .default_value = "off", .choices = "off|1/8|1/16|1/8t|1/16t",
      .apply = LIVE, .offset = OFF(quantize),
      .help = "With sync = clock or link, the grid the model's note onsets are moved\n"
              "toward (eighths, sixteenths, or their triplets); each note keeps its\n"
              "length." },
    { .name = "quantize_strength", .type = OPT_DOUBLE, .default_value = "1", .min = 0, .max = 1, .apply = LIVE,
      .offset = OFF(quantize_strength),
      .help = "How far onsets move toward the grid: 1 onto it, 0.5 half way, 0 not." },
    { .name = "mode", .type = OPT_ENUM, .default_value = "call", .choices = "call|duet", .apply = LIVE,
      .offset = OFF(mode),
      .help = "call: the model answers each phrase once the player stops, and stops\n"
              "when the player plays again.  duet: the model plays all the time on\n"
              "model_channel, the player's notes entering its context as they come\n"
              "(it hears both parts as one piece); phrase ends, hand-over and re-roll\n"
              "do nothing.  With sync = clock (or link) it plays only while the\n"
              "transport (the session) runs." },
    { .name = "duet_density", .type = OPT_DOUBLE, .default_value = "0.5", .min = 0, .max = 1, .apply = LIVE,
      .offset = OFF(duet_density),
      .help = "In a duet, the share of the model's notes that sound while the player\n"
              "plays (a key held, or a note in the last half second): 1 all of them,\n"
              "0 none (the model only fills the player's rests)." },
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

double config_cc_value(const option_def *opt, int v)
{
    const option_cc *cc = &opt->cc;
    switch (cc->map) {
    case CC_LINEAR: return cc->lo + (cc->hi - cc->lo) * v / 127.0;
    case CC_WHOLE:  return (double)lround(cc->lo + (cc->hi - cc->lo) * v / 127.0);
    case CC_FACTOR: return cc->lo * pow(cc->hi / cc->lo, v / 127.0);
    case CC_VALUE:  return v;
    case CC_SWITCH: return v >= CC_ON;
    case CC_NONE: case CC_ACTION: break;
    }
    return 0;
}

const char *config_help(const option_def *opt, char *buf, size_t len)
{
    const option_cc *cc = &opt->cc;
    const char *unit = cc->unit ? cc->unit : "";
    char does[128], map[128] = "";
    if (cc->map == CC_NONE)
        return opt->help;
    switch (cc->map) {
    case CC_ACTION: snprintf(map, sizeof map, "value >= %d", CC_ON); break;
    case CC_LINEAR: snprintf(map, sizeof map, "0..127 -> %g..%g%s", cc->lo, cc->hi, unit); break;
    case CC_WHOLE:
        snprintf(map, sizeof map, "0..127 -> %+g..%+g%s, 64: %g", cc->lo, cc->hi, unit, config_cc_value(opt, 64));
        break;
    case CC_FACTOR:
        snprintf(map, sizeof map, "0..127 -> %g..%g%s, 64 about %.2g", cc->lo, cc->hi, unit,
                 config_cc_value(opt, 64));
        break;
    case CC_SWITCH: snprintf(map, sizeof map, "value >= %d: yes", CC_ON); break;
    case CC_VALUE: case CC_NONE: break;
    }
    if (cc->map == CC_ACTION)
        snprintf(does, sizeof does, "%s", cc->does);
    else
        snprintf(does, sizeof does, "sets %s", cc->sets);
    snprintf(buf, len, "Controller number (0..127) that %s (%s%s%s); -1 turns it off.", does, map,
             *map && cc->note ? "; " : "", cc->note ? cc->note : "");
    return buf;
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

int config_set(config *c, const option_def *opt, const char *value, char *why, size_t whylen)
{
    char *field = (char *)c + opt->offset;
    switch (opt->type) {
    case OPT_STRING:
        if (strlen(value) >= CONFIG_STR_MAX) {
            snprintf(why, whylen, "expected a string shorter than %d bytes", CONFIG_STR_MAX);
            return -1;
        }
        snprintf(field, CONFIG_STR_MAX, "%s", value);
        return 0;
    case OPT_INT: {
        long v;
        if (value_parse_long(value, &v) < 0 || v < opt->min || v > opt->max) {
            snprintf(why, whylen, "expected an integer from %.0f to %.0f, got '%s'",
                     opt->min, opt->max, value);
            return -1;
        }
        *(int *)field = (int)v;
        return 0;
    }
    case OPT_DOUBLE: {
        double v;
        if (value_parse_double(value, &v) < 0 || v < opt->min || v > opt->max) {
            snprintf(why, whylen, "expected a number from %g to %g, got '%s'",
                     opt->min, opt->max, value);
            return -1;
        }
        *(double *)field = v;
        return 0;
    }
    case OPT_BOOL: {
        int v;
        if (value_parse_bool(value, &v) < 0) {
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

int config_journal_dir(const config *c, state_use use, char *dir, size_t len)
{
    const char *set = c->journal_dir;
    if (strcmp(set, "off") == 0)
        return 1;
    if (*set) {
        snprintf(dir, len, "%s", set);
        return 0;
    }
    char state[CONFIG_STR_MAX];
    if (state_dir(use, "journal", state, sizeof state) != 0)
        return -1;
    snprintf(dir, len, "%s/journal", state);
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
    memset(c, 0, sizeof *c);     /* then every field from its row, the play settings' too */
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

static int int_value(const config *c, const option_def *opt)
{
    return *(const int *)((const char *)c + opt->offset);
}

int config_check_change(const config *c, const option_def *changed, char *why, size_t len)
{
    for (size_t i = 0; i < config_n_options; i++)
        for (size_t j = 0; j < i && config_options[i].cc.map != CC_NONE; j++) {
            const option_def *later = &config_options[i], *earlier = &config_options[j];
            int v = int_value(c, later);
            if (earlier->cc.map == CC_NONE || v < 0 || v != int_value(c, earlier))
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

/* watch.c: what `serve` tells its watchers: notes, attention per head, settings and marks as JSON lines (docs/WATCH.md). */
#include "daemon/watch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "daemon/service.h"
#include "util/clock.h"

#define WATCH_VERSION 1

uint32_t watch_player_id(service *sv, int pitch)
{
    watch_ids *w = &sv->watch;
    if (w->next_player == 0 || w->next_player >= CONTEXT_MODEL_TAG)
        w->next_player = 1;
    return w->player[pitch & 0x7F] = w->next_player++;
}

/* "p12" (the player's) or "m7" (the model's) for TAG, into BUF. */
static const char *note_id(uint32_t tag, char *buf, size_t len)
{
    snprintf(buf, len, "\"%c%" PRIu32 "\"", tag & CONTEXT_MODEL_TAG ? 'm' : 'p', tag & ~CONTEXT_MODEL_TAG);
    return buf;
}

/* S as a JSON string (quoted, escaped) into BUF. */
static const char *json_string(const char *s, char *buf, size_t len)
{
    size_t n = 0;
    if (len < 3)
        return "\"\"";
    buf[n++] = '"';
    for (; *s && n + 8 < len; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            n += (size_t)snprintf(buf + n, len - n, "\\%c", ch);
        else if (ch < 0x20)
            n += (size_t)snprintf(buf + n, len - n, "\\u%04x", ch);
        else
            buf[n++] = (char)ch;
    }
    buf[n++] = '"';
    buf[n] = '\0';
    return buf;
}

/* Appends FORMAT's text to BUF (LEN bytes, *USED of them written). */
#define APPEND(buf, len, used, ...)                                                     \
    do {                                                                                \
        if (*(used) < (len))                                                            \
            *(used) += (size_t)snprintf((buf) + *(used), (len) - *(used), __VA_ARGS__); \
    } while (0)

/* "KEY":"VALUE" of every knob row (play_options.h) into BUF. */
#define KNOB_KEY(KEY, CLI, KIND, FIELD, DEF, LO, HI, ARG, APPLY, HELP) KEY,
static void knob_values(const config *c, char *buf, size_t len, size_t *used)
{
    static const char *const knobs[] = { PLAY_KNOB_OPTIONS(KNOB_KEY) "temperature", "phrase_end",
                                         "phrase_end_bias", "mode", "sync" };
    char value[CONFIG_STR_MAX], quoted[2 * CONFIG_STR_MAX];
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        const option_def *o = config_find(knobs[i]);
        if (o)
            APPEND(buf, len, used, "%s\"%s\":%s", i ? "," : "", o->name,
                   json_string(config_format(c, o, value, sizeof value), quoted, sizeof quoted));
    }
}

void watch_hello(service *sv, char *buf, size_t len)
{
    char model[2 * CONFIG_STR_MAX];
    size_t used = 0;
    int link = sv->cfg.sync == SYNC_LINK && link_sync_joined(&sv->link);
    APPEND(buf, len, &used, "{\"type\":\"hello\",\"version\":%d,\"t\":%.6f,\"engine\":\"%s\",\"model\":%s,"
           "\"attention\":{\"layer\":\"last\",\"heads\":\"all, up to %d\",\"top\":%d},\"settings\":{", WATCH_VERSION,
           session_time(sv, clock_now_ns()), sv->gen.engine->name,
           json_string(sv->cfg.model[0] ? sv->cfg.model : "default", model, sizeof model), NOTE_ATTENTION_HEADS,
           NOTE_ATTENTION_TOP);
    knob_values(&sv->cfg, buf, len, &used);
    APPEND(buf, len, &used, "},\"sync\":{\"tempo\":%.3f,\"link\":%s,\"peers\":%u}}",
           link ? sv->link.tempo : transport_bpm(&sv->transport), link ? "true" : "false",
           link ? sv->link.peers : 0u);
    if (used >= len)
        buf[0] = '\0';      /* cut JSON is worse than none */
}

void watch_note(service *sv, int model, int on, int pitch, int velocity, double t, uint32_t tag)
{
    char frame[256], id[32];
    uint32_t *last = model ? sv->watch.model : sv->watch.player;
    if (on)
        last[pitch & 0x7F] = tag;
    else
        tag = last[pitch & 0x7F];
    if (!sv->ctl.watchers)
        return;
    snprintf(frame, sizeof frame, "{\"type\":\"note\",\"who\":\"%s\",\"on\":%s,\"pitch\":%d,\"vel\":%d,\"t\":%.6f%s%s}",
             model ? "model" : "player", on ? "true" : "false", pitch, on ? velocity : 0, t, tag ? ",\"id\":" : "",
             tag ? note_id(tag, id, sizeof id) : "");
    control_broadcast(&sv->ctl, frame);
}

void watch_set(service *sv, const option_def *o)
{
    char frame[3 * CONFIG_STR_MAX], value[CONFIG_STR_MAX], quoted[2 * CONFIG_STR_MAX];
    if (!sv->ctl.watchers)
        return;
    snprintf(frame, sizeof frame, "{\"type\":\"set\",\"key\":\"%s\",\"value\":%s,\"t\":%.6f}", o->name,
             json_string(config_format(&sv->cfg, o, value, sizeof value), quoted, sizeof quoted),
             session_time(sv, clock_now_ns()));
    control_broadcast(&sv->ctl, frame);
}

void watch_mark(service *sv, const char *kind, double t, const char *extra)
{
    char frame[CONTROL_FRAME_MAX];
    if (!sv->ctl.watchers)
        return;
    snprintf(frame, sizeof frame, "{\"type\":\"%s\",\"t\":%.6f%s%s}", kind, t, extra[0] ? "," : "", extra);
    control_broadcast(&sv->ctl, frame);
}

/* A's frame: per head, its sources as [id, weight], most attended first. */
static void heads_frame(const note_attention *a, char *buf, size_t len)
{
    char id[32];
    size_t used = 0;
    APPEND(buf, len, &used, "{\"type\":\"attention\",\"id\":%s,\"pitch\":%d,\"layer\":\"last\",\"heads\":[",
           note_id(a->note, id, sizeof id), a->pitch);
    for (int h = 0; h < a->n_heads; h++) {
        APPEND(buf, len, &used, "%s[", h ? "," : "");
        for (int k = 0; k < a->n[h]; k++)
            APPEND(buf, len, &used, "%s[%s,%.4f]", k ? "," : "", note_id(a->src[h][k], id, sizeof id),
                   a->weight[h][k]);
        APPEND(buf, len, &used, "]");
    }
    APPEND(buf, len, &used, "]}");
}

void watch_heads(service *sv)
{
    note_attention a;
    char frame[CONTROL_FRAME_MAX];
    while (generator_receive_heads(&sv->gen, &a))
        if (sv->ctl.watchers) {
            heads_frame(&a, frame, sizeof frame);
            control_broadcast(&sv->ctl, frame);
        }
}

void watch_sync(service *sv)
{
    char frame[256];
    const link_sync *l = &sv->link;
    watch_ids *w = &sv->watch;
    if (!sv->ctl.watchers || (l->tempo == w->link_tempo && l->peers == w->link_peers && l->playing == w->link_playing))
        return;
    w->link_tempo = l->tempo;
    w->link_peers = l->peers;
    w->link_playing = l->playing;
    snprintf(frame, sizeof frame, "{\"type\":\"sync\",\"t\":%.6f,\"link\":%s,\"tempo\":%.3f,\"peers\":%u,"
             "\"playing\":%s}", session_time(sv, clock_now_ns()), link_sync_joined(l) ? "true" : "false", l->tempo,
             l->peers, l->playing ? "true" : "false");
    control_broadcast(&sv->ctl, frame);
}

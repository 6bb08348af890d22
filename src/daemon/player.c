/* player.c: the player's input: the phrase it makes, what goes thru, what it asks of the continuation (stop, hand over, re-roll, settings). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "daemon/service.h"
#include "util/log.h"

/* A message of the player (a note, the pedal) to the generator, whose
 * engine feeds it into the model's context as it comes. */
static void hear_player(service *sv, const midi_msg *m, double t)
{
    gen_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = GEN_LISTEN;
    c.heard = (smf_event){ .time = t, .status = m->status, .data1 = m->data1, .data2 = m->data2 };
    int type = m->status & 0xF0, on = type == 0x90 && m->data2 > 0;
    if (on)
        c.heard.tick = watch_player_id(sv, m->data1);      /* its tag in the context */
    if (type == 0x90 || type == 0x80)
        watch_note(sv, 0, on, m->data1, m->data2, t, c.heard.tick);
    if (generator_send(&sv->gen, &c) < 0)
        log_warn_limited(&sv->busy_warn, "generator busy: a note of the player was not heard");
}

/* The settings a controller asked for, through the path `ctl set` takes;
 * "%.17g" gives back the very number. */
static void set_from_controller(service *sv, const phrase_changes *asked)
{
    char value[32], why[1024];
    for (int i = 0; i < asked->n; i++) {
        const option_def *o = config_find(asked->item[i].option);
        snprintf(value, sizeof value, "%.17g", asked->item[i].value);
        if (o && service_set_option(sv, o, value, why, sizeof why) < 0)
            log_warn_limited(&sv->cc_warn, "controller: %s", why);
    }
}

void service_link_changed(service *sv, int64_t now)
{
    int bits = link_sync_update(&sv->link, now);
    watch_sync(sv);
    if ((bits & LINK_STOPPED) && sv->cfg.sync == SYNC_LINK) {
        live_stop(sv, now);     /* the session stopped: the model is silent at once */
        log_debug("the Link session stopped: the model is silent");
    }
    if (bits & LINK_STARTED)
        log_debug("the Link session plays (%.2f BPM, %u peers)", sv->link.tempo, sv->link.peers);
}

/* M, read at NOW, arrived at AT (<= NOW).  The clock and the transport
 * follow AT, the time it arrived, so a tick read late keeps its place in
 * the beat; the rest is taken at NOW. */
void service_input(service *sv, const midi_msg *m, int64_t now, int64_t at)
{
    double t = session_time(sv, now);

    if (!midi_msg_is_channel(m)) {
        int tr = transport_input(&sv->transport, m, at);
        if ((tr & TRANSPORT_CLOCK) && sv->cont.anchor_pos >= 0)
            live_on_tick(sv, at);
        if ((tr & TRANSPORT_STOPPED) && sv->cfg.sync == SYNC_CLOCK) {
            live_stop(sv, now);     /* Stop: the model is silent at once */
            log_debug("transport stopped at bar %" PRId64 ": the model is silent",
                      transport_position(&sv->transport) / (TRANSPORT_PPQN * sv->cfg.beats_per_bar) + 1);
        }
        return;     /* active sensing, ... */
    }
    service_record(sv, m, MIDI_PART_PLAYER, now);
    phrase_changes asked;
    int act = phrase_input(&sv->phrase, &sv->cfg, m, now, &asked);
    set_from_controller(sv, &asked);
    if (act & PHRASE_NOTE_ON) {
        sv->notes_in++;
        if (sv->cont.barge_open && now - sv->cont.phrase_end_ns < BARGE_IN_NS)
            sv->barge_ins++;            /* the phrase had not ended: the player plays on */
        sv->cont.barge_open = 0;
        if (service_responding(sv) && !sv->cont.duet) {   /* the player came back: the model stops */
            sv->interrupted++;
            live_stop(sv, now);
        }
    }
    if (act & PHRASE_HEAR)
        hear_player(sv, m, t);
    if (sv->cfg.midi_thru && !(act & PHRASE_CONTROL))
        service_send_thru(sv, m, now);
    if (act & PHRASE_PANIC)
        service_panic(sv, now);
    if ((act & (PHRASE_HANDOVER | PHRASE_REROLL)) && sv->cont.duet)
        act &= ~(PHRASE_HANDOVER | PHRASE_REROLL);     /* a duet has no turns */
    if (act & PHRASE_HANDOVER) {
        live_stop(sv, now);
        phrase_end(&sv->phrase);
        if (timeline_playing(sv))
            live_start(sv, now, "\"by\":\"handover\"");
    }
    if ((act & PHRASE_REROLL) && sv->cont.have_last_phrase && timeline_playing(sv)) {
        live_stop(sv, now);
        live_reroll(sv, now);
    }
    char why[128];
    if ((act & (PHRASE_REPLAY | PHRASE_PREVIOUS)) && !sv->cont.duet
        && live_replay(sv, 0, (act & PHRASE_PREVIOUS) != 0, why, sizeof why) < 0)
        log_warn_limited(&sv->cc_warn, "controller: %s", why);
}

/* Keys held past held_note_timeout_ms: their note-off was lost.  The model
 * hears them released, the thru outputs get their note-off, and the phrase
 * may end. */
void service_release_lost_keys(service *sv, int64_t now)
{
    uint8_t keys[128];
    double t = session_time(sv, now);
    int n = phrase_release_lost(&sv->phrase, &sv->cfg, now, keys);
    for (int i = 0; i < n; i++) {
        midi_msg lost = { 0x80, keys[i], 0, 3 };
        hear_player(sv, &lost, t);
        char name[16];
        log_warn("the player's %s has been held %.0f s without a note-off: taken as released "
                 "(held_note_timeout_ms = %d)", midi_pitch_name(keys[i], name, sizeof name),
                 sv->cfg.held_note_timeout_ms / 1000.0, sv->cfg.held_note_timeout_ms);
        for (int ch = 0; ch < 16; ch++)
            if (sv->thru.on[ch][keys[i]]) {
                midi_msg off = { (uint8_t)(0x80 | ch), keys[i], 0, 3 };
                service_send_thru(sv, &off, now);
                service_record(sv, &off, MIDI_PART_PLAYER, now);
            }
    }
}

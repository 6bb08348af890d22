/* live.c: the answer's life: its start, its notes' deadlines (grid, beat, bars), the duet's thinning, its end and stop, what is due on the music's side. */
#include "daemon/live.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/service.h"
#include "util/clock.h"
#include "util/log.h"

int service_responding(const service *sv)
{
    return sv->cont.id != 0 &&
           (!sv->cont.gen_done || scheduler_queued(&sv->sched) > 0 || sv->sched.notes.count > 0);
}

/* Drops what is queued of the current continuation and ends its notes.
 * The generator hears of it only while some of it is still to come or
 * sounding: one that has played out has nothing to take back, and the
 * stop would drop the answer prepared for the phrase ending now. */
void live_stop(service *sv, int64_t now)
{
    if (service_responding(sv)) {
        gen_cmd c;
        memset(&c, 0, sizeof c);
        c.kind = GEN_STOP;
        c.at = (double)(now - sv->cont.start) / NS;
        generator_send(&sv->gen, &c);
        takes_cut(sv->cont.take, c.at);     /* the take, as the context, keeps what sounded */
    }
    if (sv->cont.id)
        watch_mark(sv, "answer_stop", session_time(sv, now), "");
    sv->cont.id = 0;
    sv->cont.first_note_pending = 0;
    sv->cont.anchor_pos = -1;
    scheduler_drop_queued(&sv->sched);
    scheduler_silence(&sv->sched, now, service_emit_model, sv);
}

/* mode = duet, and the music plays (timeline_playing). */
static int duet_on(const service *sv)
{
    return sv->cfg.mode == MODE_DUET && timeline_playing(sv);
}

/* The loop's side of a continuation that the generator was asked for at
 * NOW, on time line TL: it is take TK. */
static void begin_live(service *sv, const gen_cmd *c, const timeline *tl, int duet, int64_t now, take *tk)
{
    live_cont *lc = &sv->cont;
    lc->take = tk;
    lc->id = c->id;
    lc->duet = duet;
    lc->gen_done = 0;
    lc->last_t = 0;
    lc->phrase_end_ns = now;
    lc->start = tl->begin;
    lc->anchor_pos = tl->anchor;
    lc->anchor_until = tl->begin + (int64_t)(sv->transport.period_ns / 2);   /* half a clock */
    lc->end = tl->end;
    lc->grid_origin = tl->origin;
    lc->grid_ns = tl->grid;
    memset(lc->shift_ns, 0, sizeof lc->shift_ns);
    memset(lc->last_off, 0, sizeof lc->last_off);
    memset(lc->on_due, 0, sizeof lc->on_due);
    lc->first_note_pending = 1;
    lc->n_received = 0;
    lc->release_ns = 0;
    lc->barge_open = 0;
    sv->responses++;
    char extra[64];
    snprintf(extra, sizeof extra, "\"answer\":%" PRIu32 ",\"phrase_end\":%.6f", c->id, session_time(sv, now));
    watch_mark(sv, "answer", session_time(sv, tl->begin), extra);
}

void live_command(service *sv, gen_cmd *c, gen_cmd_kind kind)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->id = ++sv->cont.next_id;
    if (c->id == 0)
        c->id = ++sv->cont.next_id;
    config_spec(&sv->cfg, sv->seed + sv->cont.next_id, &c->spec);
}

/* The head start of the answer C: none to speak of when the generator has
 * thought it over in the silence (its first notes are sampled: the
 * generator only has to choose and send them), else the lookahead. */
#define READY_HEAD_MS 3
static int head_start_ms(service *sv, const gen_cmd *c, int duet)
{
    int ready = sv->cont.answer_ready && !duet && c->kind == GEN_RESPOND && sv->cfg.lookahead_ms < 0
                && sv->cont.prepared_spec.seed == c->spec.seed
                && memcmp(&sv->cont.prepared_spec.play, &c->spec.play, sizeof c->spec.play) == 0;
    sv->cont.answer_ready = 0;
    int ms = timeline_lookahead_ms(sv);
    return ready && ms > READY_HEAD_MS ? READY_HEAD_MS : ms;
}

/* A continuation of what was heard up to session time AT starts (REROLL:
 * the last one's context again), asked of the generator at NOW.  Returns
 * 0, or -1 when the generator's ring is full (logged). */
static int start_at(service *sv, int64_t now, int reroll, double at)
{
    gen_cmd c;
    live_command(sv, &c, reroll ? GEN_REROLL : GEN_RESPOND);
    c.at = at;
    int duet = !reroll && duet_on(sv);
    timeline tl = timeline_plan(sv, now, duet, head_start_ms(sv, &c, duet));
    if (tl.end != INT64_MAX)
        c.spec.seconds = (double)(tl.end - tl.begin) / NS;
    if (duet) {         /* endless; the player's notes join it as they come */
        c.spec.duet = 1;
        c.start_ns = tl.begin;
        c.at = session_time(sv, tl.begin);
        c.spec.max_events = 1 << 30;
        c.spec.seconds = 1e9;
    }
    if (generator_send(&sv->gen, &c) < 0) {
        log_warn_limited(&sv->busy_warn, "generator busy: phrase not answered");
        return -1;
    }
    begin_live(sv, &c, &tl, duet, now, takes_start(&sv->takes, session_time(sv, now), c.spec.seed, &c.spec.play, 0));
    return 0;
}

int live_answer(service *sv, int64_t now, double at)
{
    unsigned next = sv->cont.replay_next;
    char why[128];
    sv->cont.replay_next = 0;
    if (next) {
        if (live_replay(sv, next, 0, why, sizeof why) == 0)
            return 0;
        log_warn("replay next: %s; the phrase is answered as it comes", why);
    }
    return start_at(sv, now, 0, at);
}

void live_start(service *sv, int64_t now, const char *why)
{
    sv->cont.phrase_end_t = session_time(sv, now);
    sv->cont.have_last_phrase = 1;
    watch_mark(sv, "phrase_end", sv->cont.phrase_end_t, why);
    live_answer(sv, now, sv->cont.phrase_end_t);
}

void live_reroll(service *sv, int64_t now)
{
    sv->cont.replay_next = 0;       /* a re-roll samples the last phrase's answer again */
    start_at(sv, now, 1, sv->cont.phrase_end_t);
}

void service_panic(service *sv, int64_t now)
{
    live_stop(sv, now);
    service_silence_all(sv, now);
}

/* quantize: a note-on moves quantize_strength of the way to the nearest
 * grid line (never before its pitch's last note-off), its note-off by as
 * much, so the note keeps its length. */
static int64_t place_on_grid(service *sv, const midi_msg *m, int64_t due)
{
    int p = m->data1;
    if (sv->cont.grid_ns <= 0)
        return due;
    if (midi_msg_is_note_on(m)) {
        double steps = (double)(due - sv->cont.grid_origin) / sv->cont.grid_ns;
        double line = (double)sv->cont.grid_origin + (double)(int64_t)(steps + (steps < 0 ? -0.5 : 0.5)) * sv->cont.grid_ns;
        int64_t moved = due + (int64_t)(sv->cfg.quantize_strength * (line - (double)due));
        if (moved < sv->cont.last_off[p])
            moved = sv->cont.last_off[p];
        sv->cont.shift_ns[p] = moved - due;
        return moved;
    }
    due += sv->cont.shift_ns[p];
    sv->cont.last_off[p] = due;
    return due;
}

/* The player is playing: a key held, or a note struck or released in
 * the last half second. */
static int player_active(const service *sv, int64_t now)
{
    return sv->phrase.keys_held > 0 || (sv->phrase.last_activity && now - sv->phrase.last_activity < NS / 2);
}

/* The continuation is over: what it left sounding rings for CONT_TAIL_S
 * more, then ends (offs of silent pitches are dropped by the scheduler). */
static void received_end(service *sv)
{
    live_cont *c = &sv->cont;
    c->gen_done = 1;
    int64_t end = c->start + (int64_t)((c->last_t + CONT_TAIL_S) * NS + 0.5);
    if (end > c->end)
        end = c->end;
    for (int p = 0; p < 128; p++) {
        midi_msg off = { (uint8_t)(0x80 | (sv->cfg.model_channel - 1)), (uint8_t)p, 0, 3 };
        scheduler_push(&sv->sched, end, &off);
        if (c->on_due[p])       /* its last note-on has had no note-off: the watchers' ends then */
            watch_note(sv, 1, 0, p, 0, session_time(sv, end), 0);
    }
}

/* A duet: while the player plays, the model keeps only duet_density of
 * its note-ons (a note left out: its note-off finds nothing sounding and
 * is skipped). */
static int thinned(service *sv)
{
    live_cont *c = &sv->cont;
    if (!c->duet || !player_active(sv, clock_now_ns()))
        return 0;
    uint64_t x = c->duet_rng;       /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c->duet_rng = x;
    if ((double)(x >> 11) / 9007199254740992.0 < sv->cfg.duet_density)
        return 0;
    c->duet_thinned++;
    return 1;
}

/* The first event came after it was due (the generator was still hearing
 * a long phrase, `ctl play`'s file, or is slower than the head start):
 * on the free time line the continuation starts now instead, so its notes
 * keep their spacing rather than going out in a bunch.  On the clock's
 * time line (a beat, a grid, a bar to end on) it stays where it is. */
static void start_late(service *sv, int64_t due)
{
    live_cont *c = &sv->cont;
    int64_t now = clock_now_ns();
    if (sv->cfg.sync != SYNC_FREE || c->anchor_pos >= 0 || due >= now)
        return;
    c->start += now - due;
    c->late_starts++;
}

/* One event of the continuation onto the scheduler: its deadline from the
 * continuation's start (absolute: no drift), the duet's thinning (THIN),
 * the grid, the last bar line. */
static void place_event(service *sv, const cont_event *e, int thin)
{
    live_cont *c = &sv->cont;
    int64_t due = c->start + (int64_t)(e->time * NS + 0.5);
    if (e->time > c->last_t)
        c->last_t = e->time;
    int on = e->kind == CONT_NOTE_ON;
    midi_msg m = { (uint8_t)((on ? 0x90 : 0x80) | (sv->cfg.model_channel - 1)), (uint8_t)(e->pitch & 0x7F),
                   (uint8_t)(on ? (e->velocity ? e->velocity : 64) : 0), 3 };
    if (on && thin && thinned(sv))
        return;
    due = place_on_grid(sv, &m, due);
    if (due > c->end - 1000000) {   /* 1 ms: rounding of the grid */
        if (on)
            return;                 /* on or past the continuation's last bar line */
        due = c->end;
    }
    /* struck and let go at one moment: no note (as `continue` writes none) */
    int p = m.data1;
    if (!on && c->on_due[p] == due && scheduler_unpush(&sv->sched, due, &c->on_msg[p])) {
        c->on_due[p] = 0;
        watch_note(sv, 1, 0, m.data1, m.data2, session_time(sv, due), e->note);   /* the view's note ends */
        return;
    }
    c->on_due[p] = on ? due : 0;
    if (on)
        c->on_msg[p] = m;
    scheduler_push(&sv->sched, due, &m);
    watch_note(sv, 1, on, m.data1, m.data2, session_time(sv, due), e->note);
}

/* The generator's verdict on a silence: the phrase ends then, unless the
 * player has played since (phrase_judge) or a later silence's verdict is
 * awaited. */
static void take_verdict(service *sv, const gen_out *o)
{
    live_cont *c = &sv->cont;
    if (o->id != c->prepare_id || sv->cfg.phrase_end != PHRASE_END_AUTO)
        return;
    int64_t end = c->prepared_for + (int64_t)(o->ev.time * NS + 0.5);
    c->margin = o->margin;
    phrase_judge(&sv->phrase, c->prepared_for, end);
    if (sv->phrase.judged_for == c->prepared_for && sv->phrase.judged_end == end) {
        c->judged++;
        c->judged_early += o->ev.time * 1000 < sv->cfg.phrase_silence_ms - 0.5;
    }
}

void live_receive(service *sv)
{
    live_cont *c = &sv->cont;
    gen_out o;
    generator_ack_wake(&sv->gen);
    while (generator_receive(&sv->gen, &o)) {
        if (o.swap) {
            model_switch_swapped(sv, o.swap);
            continue;
        }
        if (o.turn) {
            take_verdict(sv, &o);
            continue;
        }
        if (o.id != c->id || c->id == 0)
            continue;           /* from a continuation that was stopped */
        if (o.done) {
            received_end(sv);
            continue;
        }
        if (c->n_received++ == 0)
            start_late(sv, c->start + (int64_t)(o.ev.time * NS + 0.5));
        takes_add(c->take, &o.ev);
        place_event(sv, &o.ev, 1);
    }
    if (atomic_exchange(&sv->gen.failed, 0))
        log_warn("the engine reported an error (see above); still listening");
}

void live_begin_replay(service *sv, const gen_cmd *c, int64_t now, take *tk)
{
    timeline tl = timeline_plan(sv, now, 0, timeline_lookahead_ms(sv));
    begin_live(sv, c, &tl, 0, now, tk);
    for (int i = 0; i < tk->n; i++) {
        cont_event e = tk->ev[i];
        e.note = 0;     /* its notes are not in the context as these: no ids */
        place_event(sv, &e, 0);
    }
    received_end(sv);
}

/* A clock tick came while an answer waits for its beat: when it is the
 * beat's own tick, the answer's time line moves onto it (the DAW's tick is
 * the beat, however early or late it comes against the prediction, within
 * half a clock); the first note goes out now. */
void live_on_tick(service *sv, int64_t now)
{
    int64_t pos = transport_position(&sv->transport), want = sv->cont.anchor_pos;
    if (!sv->transport.running || pos < want)
        return;
    int64_t delta = now - sv->cont.start, half = (int64_t)(sv->transport.period_ns / 2);
    sv->cont.anchor_pos = -1;
    if (pos != want || delta < -half || delta > half) {
        sv->cont.anchor_missed++;
        return;
    }
    scheduler_shift_queued(&sv->sched, delta);
    sv->cont.start += delta;
    if (sv->cont.end != INT64_MAX)
        sv->cont.end += delta;
    sv->cont.grid_origin += delta;
    sv->cont.anchored++;
}

int64_t live_hold(service *sv, int64_t now)
{
    live_cont *c = &sv->cont;
    if (c->anchor_pos >= 0 && now >= c->anchor_until) {
        c->anchor_pos = -1;             /* the beat's tick did not come: go on */
        c->anchor_missed++;
    }
    return c->anchor_pos >= 0 && now >= c->start ? c->start - 1 : now;
}

int64_t live_hold_wake(const service *sv, int64_t wake)
{
    const live_cont *c = &sv->cont;
    return c->anchor_pos >= 0 && wake >= c->start && wake < c->anchor_until ? c->anchor_until : wake;
}

/* Why the phrase whose silence began at RELEASE ends at NOW, for the
 * watchers' phrase_end frame (docs/WATCH.md): by the silence rule or auto's
 * verdict, how long after the release, and, when auto judged this silence,
 * the verdict's margin (turn_verdict's; finite, or the frame would not be JSON). */
static void phrase_end_why(const service *sv, int64_t now, int64_t release, char *buf, size_t len)
{
    int judged = sv->cfg.phrase_end == PHRASE_END_AUTO && sv->phrase.judged_for == release
                 && isfinite(sv->cont.margin);
    int early = phrase_deadline(&sv->phrase, &sv->cfg) < release + (int64_t)sv->cfg.phrase_silence_ms * 1000000;
    int n = snprintf(buf, len, "\"by\":\"%s\",\"after_ms\":%.0f", early ? "verdict" : "silence",
                     (double)(now - release) / 1e6);
    if (judged && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ",\"margin\":%.2f", sv->cont.margin);
}

/* A phrase ended: it is answered, if the transport lets it. */
static void answer_phrase(service *sv, int64_t now)
{
    int64_t release = sv->phrase.last_activity;
    char why[96];
    phrase_end_why(sv, now, release, why, sizeof why);
    sv->cont.answer_ready = sv->cont.prepared_for == release && sv->cont.prepare_id
                            && generator_ready(&sv->gen) == sv->cont.prepare_id;
    phrase_end(&sv->phrase);
    live_stop(sv, now);
    if (timeline_playing(sv)) {
        live_start(sv, now, why);
        sv->cont.release_ns = release;      /* for ctl status: the answer's delay, barge-ins */
        sv->cont.barge_open = 1;
    }
    else if (sv->cfg.sync == SYNC_LINK)
        log_info("phrase not answered: the Link session is stopped (sync = link, link_start_stop)");
    else if (sv->transport.clocks == 0 && sv->transport.starts == 0)
        log_warn("phrase not answered: sync = clock, but no MIDI clock or Start has come "
                 "from any input (send clock from the DAW to continuo, or set sync = free)");
    else
        log_info("phrase not answered: the transport is stopped (sync = clock)");
}

/* Candidates are asked for this long into a silence that may end the
 * phrase (nothing held, the pedal up): late enough that what the encoder
 * holds back is final, early enough to leave the generator most of
 * phrase_silence_ms to think them over. */
#define PREPARE_AFTER_NS (30 * 1000000LL)

/* The phrase may have ended: the generator thinks over the candidate
 * answers of the spec its GEN_RESPOND will carry (the next id's seed), and
 * with phrase_end = auto judges when the phrase ends (a verdict back:
 * take_verdict). */
static void prepare_answer(service *sv, int64_t now)
{
    gen_cmd c;
    memset(&c, 0, sizeof c);
    c.kind = GEN_PREPARE;
    c.id = ++sv->cont.prepare_id;
    if (sv->cfg.phrase_end == PHRASE_END_AUTO) {
        c.turn = turn_rule_auto(sv->cfg.phrase_silence_ms);
        c.turn.bias = sv->cfg.phrase_end_bias;
    }
    uint32_t id = sv->cont.next_id + 1 ? sv->cont.next_id + 1 : 1;
    config_spec(&sv->cfg, sv->seed + id, &c.spec);
    sv->cont.prepared_spec = c.spec;
    c.at = session_time(sv, now);
    sv->cont.prepared_for = sv->phrase.last_activity;
    if (generator_send(&sv->gen, &c) == 0)
        sv->cont.prepared++;
    log_debug("phrase: its answer asked for %.0f ms into the silence", (double)(now - sv->cont.prepared_for) / 1e6);
}

/* Before a phrase's deadline: its candidates and its verdict, once,
 * PREPARE_AFTER_NS into its silence; *WAKE for that moment. */
static void prepare_due(service *sv, int64_t now, int64_t *wake)
{
    if (!timeline_playing(sv)
        || phrase_deadline(&sv->phrase, &sv->cfg) == INT64_MAX || sv->cont.prepared_for == sv->phrase.last_activity)
        return;
    int64_t at = sv->phrase.last_activity + PREPARE_AFTER_NS;
    if (now >= at)
        prepare_answer(sv, now);
    else if (at < *wake)
        *wake = at;
}

int live_due(service *sv, int64_t now, int64_t *wake)
{
    live_cont *c = &sv->cont;
    int duet = duet_on(sv);
    *wake = INT64_MAX;
    if (duet && (!c->id || c->gen_done || !c->duet) && now >= sv->duet_retry) {
        /* A duet goes on: a new continuation when the last one ended
         * (the model's end of sequence) or the mode just changed. */
        live_stop(sv, now);
        live_start(sv, now, "\"by\":\"duet\"");
        sv->duet_retry = now + NS / 10;     /* at most ten starts a second */
        return 1;
    }
    if (!duet && c->duet && c->id) {
        live_stop(sv, now);     /* mode = call again, or the transport stopped */
        c->duet = 0;
    }
    int64_t pd = service_responding(sv) || duet ? INT64_MAX : phrase_deadline(&sv->phrase, &sv->cfg);
    if (pd <= now) {
        answer_phrase(sv, now);
        return 1;
    }
    *wake = pd;
    if (pd != INT64_MAX)
        prepare_due(sv, now, wake);
    if (duet && (!c->id || c->gen_done) && sv->duet_retry < *wake)
        *wake = sv->duet_retry;
    return 0;
}

/* replay.c: music played again into the session: a kept take as the answer (`replay`), a MIDI file as the player's phrase (`ctl play`). */
#include "daemon/replay.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/service.h"
#include "midi/smf.h"
#include "play/context.h"
#include "util/clock.h"

/* `play` hears at most this many messages of a file: the generator's
 * command ring holds 4096, and the model takes them as they come. */
#define PLAY_FILE_MAX 3000

/* The messages of F the context takes, and the time of the last (0 if none). */
static size_t count_heard(const smf *f, double *end)
{
    size_t n = 0;
    *end = 0;
    for (size_t i = 0; i < f->n_events; i++)
        if (context_takes(&f->events[i])) {
            n++;
            if (f->events[i].time > *end)
                *end = f->events[i].time;
        }
    return n;
}

/* F's messages to the generator, at BASE + their times; the watchers see
 * them at SHOWN + their times.  Returns 0, or -1 when the ring filled up. */
static int hear_file(service *sv, const smf *f, double base, double shown)
{
    for (size_t i = 0; i < f->n_events; i++) {
        if (!context_takes(&f->events[i]))
            continue;
        gen_cmd c;
        memset(&c, 0, sizeof c);
        c.kind = GEN_LISTEN;
        c.heard = f->events[i];
        c.heard.time = base + f->events[i].time;
        int type = c.heard.status & 0xF0, on = type == 0x90 && c.heard.data2 > 0;
        c.heard.tick = on ? watch_player_id(sv, c.heard.data1) : 0;    /* its tag in the context */
        if (type == 0x90 || type == 0x80)
            watch_note(sv, 0, on, c.heard.data1, c.heard.data2, shown + f->events[i].time, c.heard.tick);
        if (generator_send(&sv->gen, &c) < 0)
            return -1;
    }
    return 0;
}

int live_play_file(service *sv, const char *path, char *reply, size_t len)
{
    smf f;
    double end;
    if (smf_read_file(path, &f) != 0) {
        snprintf(reply, len, "error cannot read %.3000s (see the service log)", path);
        return -1;
    }
    size_t n = count_heard(&f, &end);
    int rc = -1;
    if (n == 0 || n > PLAY_FILE_MAX) {
        snprintf(reply, len, "error %.3000s: %zu note and pedal messages (play takes 1 to %d)", path, n,
                 PLAY_FILE_MAX);
        goto done;
    }
    int64_t now = clock_now_ns();
    /* After everything heard and played so far: the last answer's events
     * sit on the context's time line from its phrase's end, which can run
     * ahead of the session's (a file's answer starts before the file's own
     * time has passed).  From the next whole second after both, and a whole
     * silence cap further (the context shortens longer gaps to
     * CONTEXT_MAX_GAP_S): the file is a new phrase, the gap before it the
     * same whatever came before, so the same file and seed answer the
     * same; whole seconds keep its times on the codec's 10 ms steps. */
    double heard = session_time(sv, now), played = sv->cont.phrase_end_t + sv->cont.last_t + CONT_TAIL_S + 1;
    double base = ceil(played > heard ? played : heard) + CONTEXT_MAX_GAP_S;
    live_stop(sv, now);
    phrase_end(&sv->phrase);
    sv->cont.phrase_end_t = base + end;     /* a re-roll answers the file again */
    sv->cont.have_last_phrase = 1;
    /* the watchers see the file as if played just now, ending now */
    double shown = session_time(sv, now) - end;
    int heard_all = hear_file(sv, &f, base, shown) == 0;
    if (heard_all)
        watch_mark(sv, "phrase_end", shown + end, "\"by\":\"play\"");
    if (!heard_all || live_answer(sv, now, base + end) < 0) {
        snprintf(reply, len, "error the generator is busy: %.3000s not played", path);
        goto done;
    }
    snprintf(reply, len, "ok heard %zu messages of %.3000s (%.2f s); continuation %" PRIu32, n, path, end,
             sv->cont.id);
    rc = 0;
done:
    smf_free(&f);
    return rc;
}

/* The take to play for NUMBER: 0 the newest; PREVIOUS: the sampled take
 * before the last one stepped to (replays are skipped). */
static const take *choose_take(service *sv, unsigned number, int previous)
{
    takes *ts = &sv->takes;
    if (!previous)
        return takes_find(ts, number ? number : ts->last);
    unsigned from = ts->cursor ? ts->cursor : ts->last;
    for (unsigned n = from; n-- > 1;) {
        const take *t = takes_find(ts, n);
        if (!t)
            break;
        if (!t->replay_of) {
            ts->cursor = n;
            return t;
        }
    }
    return NULL;
}

/* The generator's copy of T's events (it frees it: generator.h), the one
 * copy a replay makes: the takes are the loop thread's alone.  NULL out of
 * memory. */
static cont_event *events_for_generator(const take *t)
{
    cont_event *c = malloc(sizeof *c * (size_t)t->n);
    if (c)
        memcpy(c, t->ev, sizeof *c * (size_t)t->n);
    return c;
}

int live_replay(service *sv, unsigned number, int previous, char *why, size_t len)
{
    const take *t = choose_take(sv, number, previous);
    if (!t || t->n == 0) {
        snprintf(why, len, t ? "take #%u has no notes" : "no take #%u is kept (see takes)", t ? t->number : number);
        return -1;
    }
    unsigned played = t->number;
    int64_t now = clock_now_ns();
    gen_cmd c;
    live_stop(sv, now);
    live_command(sv, &c, GEN_REPLAY);
    c.spec.play = t->play;
    c.spec.seed = t->seed;
    c.at = session_time(sv, now);
    c.n_replay = t->n;
    c.replay = events_for_generator(t);
    if (!c.replay || generator_send(&sv->gen, &c) < 0) {
        free(c.replay);
        snprintf(why, len, "the generator is busy: take #%u not played", played);
        return -1;
    }
    /* the new take may reuse T's slot: T is not read past this line */
    live_begin_replay(sv, &c, now, takes_replay(&sv->takes, session_time(sv, now), played));
    snprintf(why, len, "take #%u again, as take #%u", played, sv->takes.last);
    return 0;
}

/* turn.c: the phrase end judged from the model's odds of the player's next event (turn.h). */
#include "play/turn.h"

#include <math.h>
#include <string.h>

void turn_odds_read(turn_odds *o, const vocab *v, const float *logits)
{
    int n = v->n_time_shifts < TURN_MAX_STEPS ? v->n_time_shifts : TURN_MAX_STEPS;
    double top = -1e30, total = 0, shift[TURN_MAX_STEPS + 1] = { 0 };
    memset(o, 0, sizeof *o);
    o->steps = n;
    o->step_ms = v->step_ms;
    for (int i = 0; i < v->size; i++)
        if (logits[i] > top)
            top = logits[i];
    double eos = 0;
    for (int i = 0; i < v->size; i++) {
        int value;
        double w = exp(logits[i] - top);
        event_type t = vocab_decode(v, i, &value);
        total += w;
        if (t == EVENT_TIME_SHIFT)
            shift[value < n ? value : n] += w;
        else if (t == EVENT_EOS)
            eos += w;
    }
    double tail = eos;          /* P(gap >= k steps), from the longest down */
    for (int k = n; k >= 1; k--) {
        tail += shift[k];
        o->survive[k] = tail / total;
    }
    o->survive[0] = 1.0;
}

int turn_verdict(const turn_odds *o, const turn_rule *r)
{
    if (o->steps <= 0 || o->step_ms <= 0 || r->rest > 1.0)
        return r->max_ms;
    int k = r->min_ms > 0 ? (r->min_ms + o->step_ms - 1) / o->step_ms : 0;
    double rest = o->survive[o->steps];
    if (r->hold > 0 && o->onset_age > 0)
        rest *= pow(o->onset_age / TURN_HOLD_REF_S, r->hold);
    for (; k <= o->steps && k * o->step_ms < r->max_ms; k++)
        if (o->survive[k] > 0 && rest >= r->rest * o->survive[k])
            return k * o->step_ms > r->min_ms ? k * o->step_ms : r->min_ms;
    return r->max_ms;
}

/* attention.c: what the model listened to when it chose a note: its last layer's attention on the earlier note-ons, captured as it plays (the drawing is the CLI's). */
#include "play/attention.h"

#include <string.h>

/* SRC_TIME, SRC_PITCH, W into A's sources, kept most attended first. */
static void add_source(cont_attention *a, double src_time, int src_pitch, float w)
{
    int k;
    if (a->n < CONT_ATTENTION_TOP)
        k = a->n++;
    else if (w > a->weight[CONT_ATTENTION_TOP - 1])
        k = CONT_ATTENTION_TOP - 1;     /* the least attended one goes */
    else
        return;
    for (; k > 0 && a->weight[k - 1] < w; k--) {
        a->src_time[k] = a->src_time[k - 1];
        a->src_pitch[k] = a->src_pitch[k - 1];
        a->weight[k] = a->weight[k - 1];
    }
    a->src_time[k] = src_time;
    a->src_pitch[k] = (uint8_t)src_pitch;
    a->weight[k] = w;
}

/* The cache's entry at distance d from the newest is hist[n_hist - 1 - d]. */
int attention_of_note(cont_attention *a, const model_state *s, const vocab *v, const int *hist, int n_hist, double now,
                      int pitch)
{
    const model_config *mc = &s->m->cfg;
    int nk = s->n, C = mc->context;
    if (nk <= 0)
        return 0;
    int newest = s->memory == MODEL_MEMORY_STREAM ? (int)((s->pos - 1) % C) : s->n - 1;
    double back = 0;
    *a = (cont_attention){ .time = now, .pitch = (uint8_t)pitch };
    for (int d = 0; d < nk && d < n_hist; d++) {
        int val;
        event_type t = vocab_decode(v, hist[n_hist - 1 - d], &val);
        if (t == EVENT_NOTE_ON) {
            int slot = ((newest - d) % nk + nk) % nk;
            float w = 0;
            for (int h = 0; h < mc->n_heads; h++)
                w += s->scores[(size_t)h * C + (size_t)slot];
            add_source(a, now - back, val, w / (float)mc->n_heads);
        } else if (t == EVENT_TIME_SHIFT) {
            back += val * v->step_ms / 1000.0;
        }
    }
    return 1;
}

/* Source TAG of weight W into head H's sources of A, most attended first. */
static void add_head_source(note_attention *a, int h, uint32_t tag, float w)
{
    int k;
    if (a->n[h] < NOTE_ATTENTION_TOP)
        k = a->n[h]++;
    else if (w > a->weight[h][NOTE_ATTENTION_TOP - 1])
        k = NOTE_ATTENTION_TOP - 1;
    else
        return;
    for (; k > 0 && a->weight[h][k - 1] < w; k--) {
        a->src[h][k] = a->src[h][k - 1];
        a->weight[h][k] = a->weight[h][k - 1];
    }
    a->src[h][k] = tag;
    a->weight[h][k] = w;
}

void attention_heads_of(note_attention *a, const attention_scores *s, const model_config *mc, const uint32_t *tag,
                        int n_hist, uint32_t note, int pitch)
{
    int nk = s->n_keys, C = mc->context, H = mc->n_heads < NOTE_ATTENTION_HEADS ? mc->n_heads : NOTE_ATTENTION_HEADS;
    memset(a, 0, sizeof *a);
    a->note = note;
    a->pitch = (uint8_t)pitch;
    a->n_heads = (uint8_t)H;
    for (int d = 0; d < nk && d < n_hist; d++) {
        uint32_t t = tag[n_hist - 1 - d];
        if (!t)
            continue;
        int slot = ((s->newest - d) % nk + nk) % nk;
        for (int h = 0; h < H; h++)
            add_head_source(a, h, t, s->scores[(size_t)h * C + (size_t)slot]);
    }
}

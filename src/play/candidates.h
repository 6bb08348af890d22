/* candidates.h: several continuations of one context decoded side by side in a batch, scored, the best one played. */
#ifndef CONTINUO_PLAY_CANDIDATES_H
#define CONTINUO_PLAY_CANDIDATES_H

#include "model/batch.h"
#include "play/continuation.h"
#include "play/fork.h"
#include "util/log.h"

#define CANDIDATES_MAX 8

/* Candidates are judged on how their first CANDIDATES_HORIZON_S seconds
 * go: a listener judges an answer by its start, and past the model's
 * context every candidate's rows are its own, so a step of 8 costs 8-10
 * steps of one (the attention reads 8 caches; the weights' products are 8
 * times the work).  The one chosen then samples on alone, exactly as it
 * would have (tests/play/test_fork.c), at the cost of one. */
#define CANDIDATES_HORIZON_S 10.0

/* One candidate's measures (candidates_measure). */
typedef struct cand_measures {
    double likelihood;          /* mean ln p per id sampled, model's own odds */
    double nudged;              /* the same under the nudged odds */
    double motif;               /* 0..1: its patterns (3 intervals, notes in onset order)
                                   that occur among those heard */
    double pace;                /* -|ln(its note-ons per second / the aim)| */
    double texture;             /* -|ln(its notes sounding at once / the aim)| */
    double repeats;             /* its most repeated pitch's share less the one of
                                   the phrase heard (below 0: it repeats less) */
    double capped;              /* the share of its notes ended at the length cap */
    int    ids, notes;
} cand_measures;

/* Candidate I of a continuation seeded SEED is seeded SEED + I x
 * CANDIDATE_SEED_STRIDE: candidate 0 plays what the continuation alone
 * would, and the candidates of the answers that follow one another (seeds
 * S, S + 1, ...: a re-roll, the next phrase) share none. */
#define CANDIDATE_SEED_STRIDE 1000000u
static inline uint64_t candidates_seed(uint64_t seed, int i)
{
    return seed + (uint64_t)i * CANDIDATE_SEED_STRIDE;
}

/* B candidates of the continuation HOME: forks of it just after
 * continuation_begin, candidate i seeded candidates_seed(seed, i),
 * stepped together (candidates_step: one batched decode for all), each
 * keeping the events it would hand out.  The
 * chosen one becomes HOME again (candidates_choose), and HOME hands out
 * its events and goes on from its state.  Owned by HOME's thread. */
typedef struct candidates {
    continuation *home;         /* borrowed */
    model_batch   batch;
    int           cap, n;
    continuation  c[CANDIDATES_MAX];
    cont_event   *ev[CANDIDATES_MAX];   /* each one's events so far; owned */
    int           n_ev[CANDIDATES_MAX], cap_ev[CANDIDATES_MAX];
    int           ended[CANDIDATES_MAX];
    long          steps;        /* batched decodes since the start */
} candidates;

/* Room for CAP (1..CANDIDATES_MAX) candidates of HOME.  0, or -1 (logged). */
int  candidates_init(candidates *k, continuation *home, int cap);
void candidates_free(candidates *k);
/* N candidates (1..cap) of HOME, which has just begun (not a duet).
 * 0, or -1 (logged). */
int  candidates_start(candidates *k, int n);
/* Every candidate that has not ended moves to its next decode (keeping
 * the events it hands out on the way), then one batched decode steps them
 * all.  Returns how many have not ended, or -1 (logged). */
int  candidates_step(candidates *k);
/* 1 when every candidate has ended or handed out an event past
 * CANDIDATES_HORIZON_S: enough to judge them; stepping on changes nothing
 * of what is played. */
int  candidates_judged(const candidates *k);
/* 1 when every candidate has ended or handed out an event past SECONDS
 * into its answer: the one chosen then has its first SECONDS ready to
 * play (serve sends them with no head start). */
int  candidates_ahead(const candidates *k, double seconds);
/* Candidate I's measures against what HOME heard. */
void candidates_measure(const candidates *k, int i, cand_measures *m);
/* The index of the best candidate by SCORE (PLAY_SCORE_*; the first of
 * equals). */
int  candidates_best(const candidates *k, int score);
/* HOME goes on as candidate I (its events first).  0, or -1 (logged). */
int  candidates_choose(candidates *k, int i);
/* The candidates started: stepped until judged (candidates_judged; or for
 * BUDGET_S seconds: 0 chooses among them as they stand), each one's
 * measures logged at LEVEL, the best by HOME's candidate_score
 * chosen, and HOME's answer cut at SECONDS.  Returns the index of the one
 * played, or -1 (logged; HOME is still begun: the caller ends it). */
int  candidates_play(candidates *k, double budget_s, log_level level, double seconds);

#endif

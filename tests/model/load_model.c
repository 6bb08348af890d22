/* load_model.c: test helper: loads a model file, runs a few events through it, prints its hyperparameters. Exit 1 on a bad file. */
#include <stdio.h>

#include "model/model.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: load_model FILE.gguf\n");
        return 2;
    }
    model m;
    if (model_load(&m, argv[1]) != 0)
        return 1;
    model_state s;
    if (model_state_init(&s, &m, 2) != 0) {
        model_free(&m);
        return 1;
    }
    int toks[3] = { 2, 3, 4 };
    int rc = model_prefill(&s, toks, 3, NULL) == 0 && model_decode(&s, 5) ? 0 : 1;
    printf("ok n_layers %d d_model %d n_heads %d d_ff %d max_rel %d context %d vocab %s %d f16 %d i8 %d\n",
           m.cfg.n_layers, m.cfg.d_model, m.cfg.n_heads, m.cfg.d_ff, m.cfg.max_rel, m.cfg.context,
           m.vocab.name, m.cfg.vocab_size, m.f16, m.i8);
    model_state_free(&s);
    model_free(&m);
    return rc;
}

/* fuzz_quiet.h: LLVMFuzzerInitialize that sends stderr to /dev/null under -DCONTINUO_FUZZ_QUIET (readers log one line per bad input). */
#ifndef CONTINUO_FUZZ_QUIET_H
#define CONTINUO_FUZZ_QUIET_H

#include <stdio.h>
#include <stdlib.h>

#ifdef CONTINUO_FUZZ_QUIET
/* Crash reports do not go through stdio, so they still show. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    FILE *null = fopen("/dev/null", "w");
    if (null)
        stderr = null;
    return 0;
}
#endif

/* A broken invariant is a bug: stop loudly so the fuzzer keeps the input. */
#define REQUIRE(cond) do { if (!(cond)) { fprintf(stderr, "%s: invariant failed: %s\n", __FILE__, #cond); \
                                           abort(); } } while (0)

#endif

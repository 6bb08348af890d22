/* check.h: minimal assertions for C tests; each failure names file:line and values. */
#ifndef CONTINUO_CHECK_H
#define CONTINUO_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    check_failures++; } } while (0)

#define CHECK_INT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) { fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", \
        __FILE__, __LINE__, #a, #b, a_, b_); check_failures++; } } while (0)

#define CHECK_NEAR(a, b, tol) do { double a_ = (double)(a), b_ = (double)(b); \
    if (!(a_ - b_ <= (tol) && b_ - a_ <= (tol))) { fprintf(stderr, \
        "%s:%d: %s ~= %s failed: %.9g vs %.9g (tol %g)\n", __FILE__, __LINE__, \
        #a, #b, a_, b_, (double)(tol)); check_failures++; } } while (0)

#define CHECK_STR_CONTAINS(hay, needle) do { const char *h_ = (hay); \
    if (!h_ || !strstr(h_, (needle))) { fprintf(stderr, \
        "%s:%d: expected \"%s\" in \"%s\"\n", __FILE__, __LINE__, (needle), \
        h_ ? h_ : "(null)"); check_failures++; } } while (0)

/* End of main: prints a summary line and gives the exit status. */
#define CHECK_DONE() (check_failures ? (fprintf(stderr, "%d check(s) failed\n", \
    check_failures), 1) : 0)

#endif

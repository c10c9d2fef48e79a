/* tap.h — the TAP lines of the C unit tests (tests/unit_*.c): one
 * "ok N - what" or "not ok N - what" per check, then the plan. */
#ifndef TEXC_TESTS_TAP_H
#define TEXC_TESTS_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int tests_run, tests_failed;

/* One TAP line for COND, described by FMT; returns COND. */
static bool check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static bool check(bool cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", cond ? "ok" : "not ok", ++tests_run);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    if (!cond)
        tests_failed++;
    return cond;
}

/* The plan, last; main's exit status. */
static int tap_done(void) __attribute__((unused));
static int tap_done(void)
{
    printf("1..%d\n", tests_run);
    return tests_failed != 0;
}

#endif

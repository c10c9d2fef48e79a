/* tune.c — placeholder until the autotuner is written: --tune says so. */
#include "tuner/tuner.h"

int tune_run(Arena *a, Graph *g, const TuneOptions *o)
{
    (void)a;
    (void)g;
    (void)o;
    fputs("texc: --tune is not implemented yet\n", stderr);
    return 1;
}

const Schedule *tune_best(Arena *a, Graph *g, const Schedule *written, const TuneOptions *o)
{
    (void)a;
    (void)g;
    (void)o;
    return written;
}

int tune_log_summary(const char *path)
{
    (void)path;
    fputs("texc: --log-summary is not implemented yet\n", stderr);
    return 1;
}

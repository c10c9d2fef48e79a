/* process.c — the plumbing of the tuner's child processes: what the
 * processes that build, run, check and probe candidates share, whichever
 * file forks them (measure.c's builds and runs, cuda_measure.c's device
 * probe and CUDA run bodies, space.c's legality checks).
 *
 * Every child is tied to the tuner's life (tune_die_with_parent): a tuner
 * killed with SIGKILL leaves no build or run behind.  Time limits are
 * counted on CLOCK_MONOTONIC (tune_now), and SIGINT or SIGTERM only set
 * tune_interrupted, which the loops that wait on children poll.  The
 * TEXC_TUNE_PLANT test hook (see measure.c's top comment) is parsed here
 * once per Bench, and both kinds of run child ask tune_plant_of how their
 * trial should misbehave.
 *
 * This file calls no other file of tuner/: the files that fork call it,
 * so the arrows between them point one way.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tuner/tuner.h"

volatile int tune_interrupted;

void tune_die_with_parent(void)
{
    /* a tuner killed with SIGKILL takes its builds and runs with it */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

double tune_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tune_sleep_ms(int ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    nanosleep(&ts, NULL);
}

int tune_wait(int pid, double limit, int *wstatus)
{
    double start = tune_now();
    int ms = 1;
    for (;;) {
        pid_t r = waitpid(pid, wstatus, WNOHANG);
        if (r == pid)
            return 0;
        bool late = tune_now() - start > limit;
        if ((r < 0 && errno != EINTR) || late || tune_interrupted) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, wstatus, 0) < 0 && errno == EINTR)
                ;
            return tune_interrupted ? 2 : 1;
        }
        tune_sleep_ms(ms);
        if (ms < 20)
            ms++;
    }
}

void tune_remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char *child = NULL;
            if (asprintf(&child, "%s/%s", path, e->d_name) < 0)
                continue;
            struct stat sb;
            if (lstat(child, &sb) == 0 && S_ISDIR(sb.st_mode))
                tune_remove_tree(child);
            else
                unlink(child);
            free(child);
        }
        closedir(d);
    }
    rmdir(path);
}

void tune_plant_parse(Bench *b)
{
    const char *spec = getenv("TEXC_TUNE_PLANT");
    if (!spec || !*spec)
        return;
    char *copy = strdup(spec);
    for (char *w = strtok(copy, ","); w && b->nplants < TUNE_MAX_PLANTS; w = strtok(NULL, ",")) {
        char *colon = strchr(w, ':');
        int n = colon ? atoi(colon + 1) : 0;
        if (colon)
            *colon = '\0';
        static const char *const kinds[] = { "crash", "hang", "wrong", "slow", "best" };
        const char *kind = NULL;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            if (strcmp(w, kinds[k]) == 0)
                kind = kinds[k];
        if (!kind || n <= 0) {
            fprintf(stderr, "texc: warning: TEXC_TUNE_PLANT: ignoring '%s'\n", w);
            continue;
        }
        b->plant_kind[b->nplants] = kind;
        b->plant_trial[b->nplants++] = n;
    }
    free(copy);
}

const char *tune_plant_of(const Bench *b, int trial)
{
    for (int i = 0; i < b->nplants; i++) {
        const char *kind = b->plant_kind[i];
        if (strcmp(kind, "best") == 0) {
            if (trial != b->plant_trial[i])
                return "slow";
        } else if (trial == b->plant_trial[i]) {
            return kind;
        }
    }
    return NULL;
}

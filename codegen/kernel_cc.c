/* kernel_cc.c — the command line that compiles generated C.
 *
 * texc -c (driver/main.c) compiles NAME.c, and the tuner (tuner/measure.c)
 * compiles every candidate with its harness; both build the compiler's
 * argument vector here, so the tuner times code compiled exactly as the
 * build compiles it.  The compiler is the one texc was configured with
 * (TEXC_KERNEL_CC in config.h: CC without its flags, so never the
 * sanitizers of texc's own build), the flags always -std=gnu11 -O3
 * -march=native and the OpenMP flag configure found (TEXC_KERNEL_OPENMP;
 * none: the pragmas are ignored and the kernels run on one thread).
 *
 * What differs between the callers is only what follows the flags, their
 * own words: "-c NAME.c -o NAME.o" for texc -c; "-o run NAME.c harness.c
 * [plant.c] -lm", or "-c harness.c", for a candidate.
 */
#include "codegen/codegen.h"

char **cg_kernel_cc_argv(Arena *a, const char *const *words, int nwords)
{
    static const char *const flags[] = { TEXC_KERNEL_CC, "-std=gnu11", "-O3", "-march=native",
                                         TEXC_KERNEL_OPENMP };
    int nflags = (int)(sizeof flags / sizeof flags[0]);
    char **argv = arena_alloc(a, sizeof *argv * (size_t)(nflags + nwords + 1));
    int n = 0;
    for (int i = 0; i < nflags; i++)
        if (flags[i][0])
            argv[n++] = (char *)flags[i];
    for (int i = 0; i < nwords; i++)
        argv[n++] = (char *)words[i];
    argv[n] = NULL;
    return argv;
}

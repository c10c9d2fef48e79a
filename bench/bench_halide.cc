/* bench_halide.cc — the halide rows of make bench: calling the pipelines
 * halide_gen built.
 *
 * halide_gen (run by the Makefile) wrote one Halide pipeline for every
 * shape and thread count of the run, each scheduled by Adams2019 with that
 * thread count as its parallelism, and listed them in halide_kernels.h.
 * This file finds the one asked for, wraps the row's arrays in halide_buffer_t without copying
 * them (row-major x[m][k] is Halide's x(k, i): the first dimension is the
 * innermost), and sets the size of Halide's thread pool, which is its own
 * (pthreads), apart from OpenMP's: halide_shutdown_thread_pool, then
 * halide_set_num_threads, read back.  C++
 * for Halide::Runtime::Buffer; the rest of the bench sees the C interface
 * in bench.h.
 */
#include <cstdio>

#include "HalideBuffer.h"
#include "HalideRuntime.h"
#include "bench.h"
#include "halide_kernels.h"

#ifndef BENCH_HALIDE_VERSION
#define BENCH_HALIDE_VERSION "?"
#endif

using Pipeline = int(halide_buffer_t *x, halide_buffer_t *w, halide_buffer_t *b, halide_buffer_t *z);

namespace {

struct HalideKernel {
    int m, k, n;         // the shape it was built for
    int parallelism;     // what Adams2019 scheduled it for
    Pipeline *pipeline;
    const char *name;
    const char *note;    // halide_gen's: how long scheduling and compiling took
};

#define HALIDE_KERNEL_ENTRY(M, K, N, PARALLELISM, FN, NOTE) {M, K, N, PARALLELISM, FN, #FN, NOTE},
const HalideKernel kernels[] = {HALIDE_KERNELS(HALIDE_KERNEL_ENTRY)};

}  // namespace

struct HalideRun {
    const HalideKernel *kernel;
    Halide::Runtime::Buffer<const float> x, w, b;
    Halide::Runtime::Buffer<float> z;
};

extern "C" {

const char bench_halide_about[] =
    "Halide " BENCH_HALIDE_VERSION ", target " HALIDE_TARGET "; " HALIDE_AUTOSCHEDULER;

HalideRun *bench_halide_new(int m, int k, int n, int parallelism, const float *x, const float *w,
                            const float *b, float *z, char *why, size_t why_size)
{
    for (const HalideKernel &kernel : kernels)
        if (kernel.m == m && kernel.k == k && kernel.n == n && kernel.parallelism == parallelism) {
            HalideRun *run = new HalideRun;
            run->kernel = &kernel;
            run->x = Halide::Runtime::Buffer<const float>(x, k, m);
            run->w = Halide::Runtime::Buffer<const float>(w, n, k);
            run->b = Halide::Runtime::Buffer<const float>(b, n);
            run->z = Halide::Runtime::Buffer<float>(z, n, m);
            return run;
        }
    std::snprintf(why, why_size, "no Halide pipeline built for %dx%dx%d at parallelism %d "
                  "(halide_gen builds the Makefile's BENCH_SHAPES x BENCH_THREADS)", m, k, n,
                  parallelism);
    return nullptr;
}

const char *bench_halide_note(const HalideRun *run)
{
    return run->kernel->note;
}

void bench_halide_run(void *ctx)
{
    HalideRun *run = static_cast<HalideRun *>(ctx);
    int err = run->kernel->pipeline(run->x.raw_buffer(), run->w.raw_buffer(), run->b.raw_buffer(),
                                    run->z.raw_buffer());
    if (err != 0)
        bench_die("Halide pipeline %s failed: error %d", run->kernel->name, err);
}

void bench_halide_free(HalideRun *run)
{
    delete run;
}

/* The pool's workers, once started, stay and take work whatever the count
 * set later (Halide 14's runtime only starts threads up to it), so the pool
 * is shut down first and starts again at the new size. */
int bench_halide_set_threads(int threads)
{
    halide_shutdown_thread_pool();
    halide_set_num_threads(threads);
    return halide_set_num_threads(threads);  // the old count: what the first call set
}

}  // extern "C"

/* peak.c — the machine's FMA peak, measured rather than taken from a spec.
 *
 * Each thread runs a loop of fused multiply-adds on 16 independent vector
 * accumulators (more than latency × ports on any current x86 core, so the
 * FMA units never wait on a result), with the widest vectors the build
 * targets: AVX-512 under -march=native on this machine, else AVX2+FMA,
 * else scalar.  acc = acc * a + c with a just under 1 keeps the values
 * bounded and normal.  Each thread divides its flops by its own CPU time
 * (CLOCK_THREAD_CPUTIME_ID), not by wall time, so that other processes on
 * a shared machine do not lower the figure: it is what a core does while
 * this code runs on it.  The best of 20 runs of at least 20 ms is the
 * peak (for a peak, the maximum is the right statistic); with several
 * threads, the slowest thread of a run counts.
 */
#include <immintrin.h>
#include <omp.h>
#include <time.h>

#include "bench.h"

#define NACC 16

#if defined(__AVX512F__)
const char bench_fma_isa[] = "AVX-512 (zmm, 16 floats)";
typedef __m512 Vec;
enum { LANES = 16 };
#define VSET(v) _mm512_set1_ps(v)
#define VFMA(acc, a, c) _mm512_fmadd_ps(acc, a, c)
#define VSUM(v) _mm512_reduce_add_ps(v)
#elif defined(__FMA__)
const char bench_fma_isa[] = "AVX2 FMA (ymm, 8 floats)";
typedef __m256 Vec;
enum { LANES = 8 };
#define VSET(v) _mm256_set1_ps(v)
#define VFMA(acc, a, c) _mm256_fmadd_ps(acc, a, c)
static float vsum(__m256 v)
{
    float f[8];
    _mm256_storeu_ps(f, v);
    return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
#define VSUM(v) vsum(v)
#else
const char bench_fma_isa[] = "scalar (no FMA in the target)";
typedef float Vec;
enum { LANES = 1 };
#define VSET(v) (v)
#define VFMA(acc, a, c) ((acc) * (a) + (c))
#define VSUM(v) (v)
#endif

static volatile float sink;
static volatile float factor = 0.999999f, addend = 1e-6f;

/* ITERS rounds of NACC independent FMAs; returns nothing, writes sink. */
static void fma_loop(long iters)
{
    Vec a = VSET(factor), c = VSET(addend);
    Vec acc[NACC];
    for (int i = 0; i < NACC; i++)
        acc[i] = VSET((float)i);
    for (long it = 0; it < iters; it++) {
        /* written out so that every accumulator stays in a register */
        acc[0] = VFMA(acc[0], a, c);
        acc[1] = VFMA(acc[1], a, c);
        acc[2] = VFMA(acc[2], a, c);
        acc[3] = VFMA(acc[3], a, c);
        acc[4] = VFMA(acc[4], a, c);
        acc[5] = VFMA(acc[5], a, c);
        acc[6] = VFMA(acc[6], a, c);
        acc[7] = VFMA(acc[7], a, c);
        acc[8] = VFMA(acc[8], a, c);
        acc[9] = VFMA(acc[9], a, c);
        acc[10] = VFMA(acc[10], a, c);
        acc[11] = VFMA(acc[11], a, c);
        acc[12] = VFMA(acc[12], a, c);
        acc[13] = VFMA(acc[13], a, c);
        acc[14] = VFMA(acc[14], a, c);
        acc[15] = VFMA(acc[15], a, c);
    }
    float total = 0.0f;
    for (int i = 0; i < NACC; i++)
        total += VSUM(acc[i]);
    sink = total;
}

static double thread_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* GFLOP per CPU-second of one core, with THREADS threads running the loop
 * at once (more than one: do the cores slow each other down?). */
double bench_fma_peak(int threads)
{
    long iters = 1L << 16;
    double best = 0.0;
    for (int run = 0; run < 20;) {
        double slowest = 1e300; /* GFLOP per CPU-second */
        double shortest = 1e300;
        #pragma omp parallel num_threads(threads) reduction(min : slowest, shortest)
        {
            double start = thread_cpu_seconds();
            fma_loop(iters);
            double secs = thread_cpu_seconds() - start;
            shortest = secs;
            slowest = 2.0 * NACC * LANES * (double)iters / secs * 1e-9;
        }
        if (shortest < 0.02) { /* too short to trust: grow, do not count */
            iters *= shortest > 0.002 ? 2 : 8;
            continue;
        }
        if (slowest > best)
            best = slowest;
        run++;
    }
    return best;
}

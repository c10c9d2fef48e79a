/* peak.c — the machine's FMA peak and memory bandwidth, measured rather
 * than taken from a spec.
 *
 * The FMA peak.
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
 *
 * The bandwidth.  bench_bandwidth streams through a given buffer (the
 * benchmark passes one of exactly the size a kernel reads, so that the
 * figure is that of the cache level or memory the kernel's data lives in),
 * with the same vectors: a read-sum loop with 8 independent accumulators,
 * or, given a destination, a copy loop (read one buffer, write another:
 * the roofline of a kernel that reads and writes once).  Threads split the
 * buffer into equal contiguous parts.  Warm: one pass before the timed
 * ones.  As for the peak, each thread's time is its CPU time, the slowest
 * thread of a run counts and the best of 20 runs of at least 20 ms (as
 * many passes as that takes) is the bandwidth.
 */
#include <immintrin.h>
#include <stddef.h>
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
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VADD(a, b) _mm512_add_ps(a, b)
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
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VADD(a, b) _mm256_add_ps(a, b)
#else
const char bench_fma_isa[] = "scalar (no FMA in the target)";
typedef float Vec;
enum { LANES = 1 };
#define VSET(v) (v)
#define VFMA(acc, a, c) ((acc) * (a) + (c))
#define VSUM(v) (v)
#define VLOAD(p) (*(p))
#define VSTORE(p, v) (*(p) = (v))
#define VADD(a, b) ((a) + (b))
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

/* ---- Bandwidth ----------------------------------------------------------- */

enum { NSUM = 8 };

/* The sum of SRC[0..COUNT), read with NSUM independent vector sums. */
static float read_sum(const float *src, size_t count)
{
    Vec acc[NSUM];
    for (int i = 0; i < NSUM; i++)
        acc[i] = VSET(0.0f);
    size_t i = 0;
    for (; i + NSUM * LANES <= count; i += NSUM * LANES)
        for (int a = 0; a < NSUM; a++)
            acc[a] = VADD(acc[a], VLOAD(src + i + (size_t)a * LANES));
    float total = 0.0f;
    for (int a = 0; a < NSUM; a++)
        total += VSUM(acc[a]);
    for (; i < count; i++)
        total += src[i];
    return total;
}

static void copy(float *dst, const float *src, size_t count)
{
    size_t i = 0;
    for (; i + NSUM * LANES <= count; i += NSUM * LANES)
        for (int a = 0; a < NSUM; a++)
            VSTORE(dst + i + (size_t)a * LANES, VLOAD(src + i + (size_t)a * LANES));
    for (; i < count; i++)
        dst[i] = src[i];
}

/* GB per second that THREADS threads read SRC[0..COUNT) (DST == NULL) or
 * copy it to DST[0..COUNT) (then the bytes are read + written, 2 x 4 x COUNT). */
double bench_bandwidth(const float *src, float *dst, size_t count, int threads)
{
    long passes = 1;
    double best = 0.0;
    for (int run = -1; run < 20;) {
        double slowest = 0.0; /* seconds per pass of the slowest thread */
        float total = 0.0f;
        #pragma omp parallel num_threads(threads) reduction(max : slowest) reduction(+ : total)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            size_t lo = count * (size_t)t / (size_t)nt, hi = count * (size_t)(t + 1) / (size_t)nt;
            double start = thread_cpu_seconds();
            for (long p = 0; p < passes; p++) {
                if (dst)
                    copy(dst + lo, src + lo, hi - lo);
                else
                    total += read_sum(src + lo, hi - lo);
            }
            slowest = (thread_cpu_seconds() - start) / (double)passes;
        }
        sink = total;
        if (run >= 0 && slowest * (double)passes < 0.02) { /* too short: grow, do not count */
            passes *= slowest * (double)passes > 0.002 ? 2 : 8;
            continue;
        }
        double bytes = (double)count * sizeof(float) * (dst ? 2.0 : 1.0);
        if (run >= 0 && bytes / slowest * 1e-9 > best)
            best = bytes / slowest * 1e-9;
        run++; /* run -1 is the warm-up */
    }
    return best;
}

/* bench.h — what the pieces of make bench share.
 *
 * The benchmark is one program of several translation units, built with
 * different flags on purpose: bench_matmul.c (the driver, the report and
 * matmul_gelu's peers), bench_ops.c (the other operations' peers and
 * tables) and measure.c (timing and checks), all built like texc's
 * kernels: -O3 -march=native -fopenmp; naive.c (the references, -O2 as a
 * plain C program would be) and peak.c (the FMA loop and the bandwidth
 * loops that measure the machine).  The GELU is the one texc emits
 * (codegen/c.c, te_gelu_f32), so that every peer computes the same
 * function and the check compares like with like.  bench_halide.cc, the
 * Halide peer's glue, is C++ (built only when configure found Halide): it
 * includes this header too.
 */
#ifndef BENCH_H
#define BENCH_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

#ifdef BENCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* GELU with erf, as texc's generated te_gelu_f32. */
static inline float bench_gelu(float v)
{
    return 0.5f * v * (1.0f + erff(v * 0.707106781f));
}

/* naive.c */
void bench_naive(int m, int n, int k, const float *x, const float *w,
                 const float *b, float *z);
void bench_naive_batch_matmul(int batch, int m, int n, int k, const float *a,
                              const float *w, float *c);
void bench_naive_conv2d(int n, int c, int h, int w, int f, int r, int s, int stride,
                        int pad, const float *img, const float *flt, const float *bias,
                        float *out);
void bench_naive_softmax(int m, int n, const float *x, float *p);
void bench_naive_layernorm(int m, int d, float eps, const float *x, const float *gamma,
                           const float *beta, float *y);

/* peak.c */
extern const char bench_fma_isa[];
double bench_fma_peak(int threads); /* GFLOP per CPU-second of one core */
/* GB/s reading SRC[0..COUNT), or copying it to DST when DST != NULL */
double bench_bandwidth(const float *src, float *dst, size_t count, int threads);

/* measure.c */
/* A row's output must be within this of the reference's: max|z - ref| / max|ref|. */
#define BENCH_TOLERANCE 1e-4
/* Below this share of its threads' CPU time a row did not have the cores. */
#define BENCH_CONTENDED 0.9

typedef void RunFn(void *ctx);

typedef struct Timing {
    double median, p25, p75;   /* seconds per call */
    double best;               /* the fastest call */
    int reps;                  /* timed calls */
    double cpu_secs;           /* process CPU time (all threads) over them */
    double cpu_share;          /* cpu_secs / (their wall time x threads) */
} Timing;

void bench_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void *bench_xmalloc(size_t bytes);
double bench_now(void);
void bench_sleep(double secs);
void bench_fill_random(float *buf, size_t count, unsigned long long seed);
void bench_fill_nan(float *buf, size_t count);
double bench_rel_error(const float *z, const float *ref, size_t count);
int bench_cmp_double(const void *a, const void *b);
double bench_percentile(const double *sorted, int count, double q);
Timing bench_measure(RunFn *run, void *ctx, int threads, double min_time);
/* N rows timed in turns (measure.c): BENCH_TURNS rounds, the order rotated */
#define BENCH_TURNS 5
void bench_measure_turns(RunFn *const *run, void *const *ctx, int n, int threads, double min_time,
                         Timing *t);
/* The first three fields of /proc/loadavg into BUF ("unknown" if unreadable). */
void bench_read_load(char *buf, size_t size);
/* The share of the machine's CPU time others used over one second (this
 * process sleeps through it); < 0 when /proc/stat is unreadable. */
double bench_others_busy(void);
#ifdef BENCH_HAVE_DNNL
extern dnnl_engine_t bench_dnnl_engine;
extern dnnl_stream_t bench_dnnl_stream;
void bench_describe_layout(char *buf, size_t size, const dnnl_memory_desc_t *md);
/* matmul_gelu as one oneDNN matmul primitive, as every make bench row of
 * it builds it: M x K times K x N (M may be DNNL_RUNTIME_DIM_VAL: any),
 * bias, output scale 0.125, an eltwise_gelu_erf post-op, the weights in
 * the layout the primitive asks for (format any).  The plain row-major
 * descs into *MD, the primitive's desc into *PD, the implementation
 * oneDNN chose into IMPL.  1, or 0 and WHY. */
typedef struct BenchMatmulDescs {
    dnnl_memory_desc_t src, user_weights, bias, dst;
} BenchMatmulDescs;
int bench_dnnl_matmul_gelu(int64_t m, int64_t k, int64_t n, int plain_weights, BenchMatmulDescs *md,
                           dnnl_primitive_desc_t *pd, char *impl, size_t impl_size, char *why,
                           size_t why_size);
/* DESC's primitive with an output scale SCALE and an eltwise_gelu_erf
 * post-op into *PD, the implementation oneDNN chose into IMPL.  1, or 0
 * and WHY. */
int bench_dnnl_scaled_gelu(const dnnl_matmul_desc_t *desc, float scale, dnnl_primitive_desc_t *pd,
                           char *impl, size_t impl_size, char *why, size_t why_size);
/* The weights W (plain row-major, USER_MD) in the layout PD's primitive
 * reads, into *OUT: W itself where they agree, else reordered once, here,
 * outside any timed loop; LAYOUT says which ("as given (ab)", or the
 * packed layout's name).  1, or 0 and WHY. */
int bench_dnnl_weights(const dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *user_md, void *w,
                       dnnl_memory_t *out, char *layout, size_t layout_size, char *why,
                       size_t why_size);
/* USER (plain, USER_MD) reordered into TO, whose descriptor is TO_MD:
 * once, synchronously, outside any timed loop.  1, or 0 and WHY. */
int bench_dnnl_reorder(const dnnl_memory_desc_t *user_md, void *user, const dnnl_memory_desc_t *to_md,
                       dnnl_memory_t to, char *why, size_t why_size);
/* In a setup function with parameters WHY and WHY_SIZE returning int:
 * runs a oneDNN call; on failure says which and returns 0. */
#define DNNL_TRY(call)                                                                  \
    do {                                                                                \
        dnnl_status_t status_ = (call);                                                 \
        if (status_ != dnnl_success) {                                                  \
            snprintf(why, why_size, "%s failed: %s", #call, dnnl_status2str(status_));  \
            return 0;                                                                   \
        }                                                                               \
    } while (0)
#endif

/* bench_ops.c: batched matmul, conv2d, softmax and layer norm */
typedef struct OpsConfig {
    const int *thread_counts;  /* the thread counts to measure at */
    int nthread_counts;
    double min_time;           /* bench_measure's */
    double peak_core;          /* FMA peak of one core, GFLOP/s */
} OpsConfig;
void bench_ops_run(const OpsConfig *cfg, void (*set_threads)(int));
void bench_ops_print(FILE *out);  /* the four sections of the report */
/* the rows measured; *CONTENDED: how many ran below BENCH_CONTENDED, *MISMATCHES: how many failed the check */
int bench_ops_count(int *contended, int *mismatches);

#ifdef BENCH_HAVE_HALIDE
/* bench_halide.cc: matmul_gelu in Halide, scheduled by Adams2019 at build time (halide_gen.cc) */
typedef struct HalideRun HalideRun;
extern const char bench_halide_about[];  /* version, target, autoscheduler: for the report */
/* The pipeline Adams2019 scheduled for M x K x N at PARALLELISM, on the
 * arrays X W B and Z as they are; NULL and WHY when none was built. */
HalideRun *bench_halide_new(int m, int k, int n, int parallelism, const float *x, const float *w,
                            const float *b, float *z, char *why, size_t why_size);
const char *bench_halide_note(const HalideRun *run);  /* scheduling and compile times */
void bench_halide_run(void *ctx);                      /* a RunFn: one call of the pipeline */
void bench_halide_free(HalideRun *run);
/* Sets the size of Halide's thread pool; the size read back. */
int bench_halide_set_threads(int threads);
#endif

#ifdef __cplusplus
}
#endif

#endif

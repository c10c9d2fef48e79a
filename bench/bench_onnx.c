/* bench_onnx.c — make bench-onnx's timing of one imported model.
 *
 *     bench_onnx NAME.weights IN.f32 OUT.f32 THREADS MIN_TIME
 *
 * Built once per model with the model's generated code, as a user's
 * program is (bench/bench_onnx.sh):
 *     cc -O3 -march=native -fopenmp -include NAME.h -DBENCH_ONNX_MODEL=NAME \
 *        bench_onnx.c measure.c NAME.c
 * so that NAME_load_weights and NAME_run are the generated API of doc/onnx.md.
 * The model has one real input and one output, f32 (bench/onnx_models.py's);
 * their element counts are BENCH_ONNX_IN_ELEMS (IN.f32 must hold as many
 * floats, in C order) and BENCH_ONNX_OUT_ELEMS, which bench_onnx.sh takes
 * from NAME.h's comment.
 *
 * It loads the weights once (reading, checking and packing them is not
 * timed), sets FTZ and DAZ before any OpenMP thread exists (as
 * bench_block.c does, and the PyTorch peer flushes denormals too), runs the
 * model once on an output of NaNs and writes that output to OUT.f32 for
 * the report's check, then times NAME_run with bench_measure (measure.c:
 * >= 0.05 s of warm-up, then calls until >= MIN_TIME s and >= 10 calls)
 * and prints one line:
 *     MEDIAN P25 P75 BEST REPS CPU_SECS CPU_SHARE
 * Every call uses the same input and output buffers, as the PyTorch
 * peer's loop does.  Errors exit 2 with a message.
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

#include "bench.h"

#ifndef BENCH_ONNX_MODEL
#error "build with -include NAME.h -DBENCH_ONNX_MODEL=NAME -DBENCH_ONNX_IN_ELEMS=N -DBENCH_ONNX_OUT_ELEMS=N"
#endif
#define BENCH_CAT2(a, b) a##b
#define BENCH_CAT(a, b) BENCH_CAT2(a, b)
#define MODEL_FN(suffix) BENCH_CAT(BENCH_ONNX_MODEL, suffix)
#define MODEL_WEIGHTS BENCH_CAT(BENCH_ONNX_MODEL, _weights)

typedef struct Call {
    const MODEL_WEIGHTS *weights;
    const float *x;
    float *y;
} Call;

static void run_model(void *ctx)
{
    Call *c = ctx;
    MODEL_FN(_run)(c->weights, c->x, c->y);
}

/* The whole of PATH as floats; *COUNT their number. */
static float *read_floats(const char *path, size_t *count)
{
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0)
        bench_die("cannot read %s", path);
    long bytes = ftell(f);
    if (bytes <= 0 || bytes % 4 != 0 || fseek(f, 0, SEEK_SET) != 0)
        bench_die("%s: %ld bytes, not a whole number of floats", path, bytes);
    float *data = bench_xmalloc((size_t)bytes);
    if (fread(data, 1, (size_t)bytes, f) != (size_t)bytes)
        bench_die("cannot read %s", path);
    fclose(f);
    *count = (size_t)bytes / 4;
    return data;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s NAME.weights IN.f32 OUT.f32 THREADS MIN_TIME\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[4]);
    double min_time = atof(argv[5]);
    if (threads < 1 || !(min_time > 0.0))
        bench_die("bad THREADS '%s' or MIN_TIME '%s'", argv[4], argv[5]);

    /* FTZ and DAZ before the first parallel region: OpenMP's threads
     * inherit this thread's MXCSR when they are created */
    _mm_setcsr(_mm_getcsr() | 0x8040);
    omp_set_num_threads(threads);
    if (omp_get_max_threads() != threads)
        bench_die("omp_set_num_threads(%d) left %d threads", threads, omp_get_max_threads());

    char err[512];
    MODEL_WEIGHTS *weights = MODEL_FN(_load_weights)(argv[1], err, sizeof err);
    if (!weights)
        bench_die("%s", err);
    size_t in_count;
    float *x = read_floats(argv[2], &in_count);
    if (in_count != (size_t)BENCH_ONNX_IN_ELEMS)
        bench_die("%s: %zu floats, the model's input has %lld", argv[2], in_count,
                  (long long)BENCH_ONNX_IN_ELEMS);
    float *y = bench_xmalloc(sizeof *y * (size_t)BENCH_ONNX_OUT_ELEMS);
    bench_fill_nan(y, (size_t)BENCH_ONNX_OUT_ELEMS);

    Call call = {weights, x, y};
    run_model(&call);
    FILE *out = fopen(argv[3], "wb");
    if (!out || fwrite(y, sizeof *y, (size_t)BENCH_ONNX_OUT_ELEMS, out) != (size_t)BENCH_ONNX_OUT_ELEMS ||
        fclose(out) != 0)
        bench_die("cannot write %s", argv[3]);

    Timing t = bench_measure(run_model, &call, threads, min_time);
    printf("%.9g %.9g %.9g %.9g %d %.9g %.9g\n", t.median, t.p25, t.p75, t.best, t.reps,
           t.cpu_secs, t.cpu_share);
    MODEL_FN(_free_weights)(weights);
    free(x);
    free(y);
    return 0;
}

// cuda_bench_common.h — what the CUDA benchmarks (bench/cuda_bench.cu,
// FP32 matmul_gelu; bench/cuda_bench_bf16.cu, the bf16 matmul) share: the
// error checks, the start (the -r flag, skipping without a device), the
// timing, cuBLASLt's best algorithm, a texc contender and the table.
//
// Every contender is a Row: its name, its median time and its output
// fetched to the host, the output compared with a reference row's at the
// end.  A benchmark includes this after the texc header(s) it measures,
// which give CAT(MACRO, _M) and the rest; it is C++17 for nvcc.
#ifndef CUDA_BENCH_COMMON_H
#define CUDA_BENCH_COMMON_H

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "texrt.h"

#ifndef BENCH_NAME
#define BENCH_NAME "cuda_bench"
#endif

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, BENCH_NAME ": %s: %s\n", #call, cudaGetErrorString(err_));    \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
#define BLAS_CHECK(call)                                                                  \
    do {                                                                                  \
        int st_ = (int)(call);                                                            \
        if (st_ != 0) {                                                                   \
            fprintf(stderr, BENCH_NAME ": %s: status %d\n", #call, st_);                  \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
#define TEXRT_CHECK(call)                                                                 \
    do {                                                                                  \
        if ((call) != TEXRT_OK) {                                                         \
            fprintf(stderr, BENCH_NAME ": %s: %s\n", #call, texrt_last_error());          \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

// A contender: its name, its median milliseconds and its output.
struct Row {
    std::string name;
    float ms;
    std::vector<float> z;
};

// The repetitions from "-r REPS" (default 20), after checking that there is
// a device: without one, a "skip:" line and exit status TEXRT_EXIT_SKIP, before
// any call of the CUDA runtime (which would fail less clearly).
static int bench_start(int argc, char **argv)
{
    int reps = argc > 2 && !strcmp(argv[1], "-r") ? atoi(argv[2]) : 20;
    if (reps < 1) {
        fprintf(stderr, BENCH_NAME ": usage: %s [-r REPS], REPS >= 1\n", argv[0]);
        exit(2);
    }
    if (texrt_cuda_init(0) != TEXRT_OK) {
        printf("skip: no CUDA device: %s\n", texrt_last_error());
        exit(TEXRT_EXIT_SKIP);
    }
    return reps;
}

// The median time of REPS runs of F after 3 warm-up runs, in milliseconds.
//
// libtexrt launches texc's kernels in the primary context on the legacy
// default stream, the same context and stream the CUDA runtime's calls use,
// so one pair of events on stream 0 times either.
template <typename F>
static float time_ms(F f, int reps)
{
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < 3; i++)
        f();
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> times;
    for (int r = 0; r < reps; r++) {
        CUDA_CHECK(cudaEventRecord(start, 0));
        f();
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return times[times.size() / 2];
}

// N floats of device memory, copied to the host.
static std::vector<float> fetch(const float *dz, size_t n)
{
    std::vector<float> z(n);
    CUDA_CHECK(cudaMemcpy(z.data(), dz, n * sizeof(float), cudaMemcpyDeviceToHost));
    return z;
}

// A texc contender: the generated header's NAME_load and a call LAUNCH(module,
// workspace) of its launcher on the caller's tensors, timed; its output is
// the N floats at Z, poisoned (NaN) before.
template <typename LOAD, typename LAUNCH>
static Row run_texc(const char *name, LOAD load, LAUNCH launch, uint64_t ws_bytes, float *z, size_t n,
                    int reps)
{
    texrt_module *module;
    TEXRT_CHECK(load(&module));
    uint64_t ws = 0;
    if (ws_bytes)
        TEXRT_CHECK(texrt_dev_alloc(&ws, ws_bytes));
    CUDA_CHECK(cudaMemset(z, 0xff, n * sizeof(float)));
    float ms = time_ms([&] { TEXRT_CHECK(launch(module, ws)); }, reps);
    Row row = { name, ms, fetch(z, n) };
    if (ws)
        texrt_dev_free(ws);
    texrt_module_unload(module);
    return row;
}

// cuBLASLt's best configuration for a matmul: the heuristic's first (up to)
// 8 algorithms for the descriptors, with a 64 MiB workspace, each timed
// (MATMUL(algo, ws, ws_size) launches one; an algorithm whose launch
// fails is passed over); the fastest's time in *MS, its rank in the
// heuristic's list in *RANK and how many were timed in *TRIED.  Leaves
// the fastest's output in the matmul's D.  False when none runs.
template <typename MATMUL>
static bool lt_fastest(cublasLtHandle_t lt, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                       cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc, cublasLtMatrixLayout_t ld,
                       MATMUL matmul, int reps, float *ms, int *rank, int *tried)
{
    size_t ws_size = (size_t)64 << 20;
    void *ws;
    CUDA_CHECK(cudaMalloc(&ws, ws_size));
    cublasLtMatmulPreference_t pref;
    BLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    BLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws_size, sizeof ws_size));
    cublasLtMatmulHeuristicResult_t heur[8];
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, ld, pref, 8, heur, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    *rank = -1;
    *tried = 0;
    for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < found; i++) {
        const cublasLtMatmulAlgo_t *algo = &heur[i].algo;
        if (heur[i].state != CUBLAS_STATUS_SUCCESS || matmul(algo, ws, ws_size) != CUBLAS_STATUS_SUCCESS ||
            cudaDeviceSynchronize() != cudaSuccess)
            continue;
        ++*tried;
        float t = time_ms([&] { BLAS_CHECK(matmul(algo, ws, ws_size)); }, reps);
        if (*rank < 0 || t < *ms) {
            *ms = t;
            *rank = i;
        }
    }
    if (*rank >= 0) {
        BLAS_CHECK(matmul(&heur[*rank].algo, ws, ws_size));
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    cudaFree(ws);
    return *rank >= 0;
}

// The table: per row its milliseconds, TFLOP/s (FLOPS / time), the ratio of
// the first row's time to its own, its largest |difference| from REFERENCE
// and, with RELATIVE, that divided by REFERENCE's largest |value| (a NaN
// counts as the largest difference).  Returns the largest of those ratios.
static double print_table(const std::vector<Row> &rows, double flops, const std::vector<float> &reference,
                        bool relative)
{
    double scale = 0;
    for (float r : reference)
        scale = std::max(scale, (double)std::fabs(r));
    printf("%-48s %10s %10s %10s %12s%s\n", "", "ms", "TFLOP/s", "x texc", "max |diff|",
           relative ? "     max rel" : "");
    double worst_rel = 0;
    for (const Row &r : rows) {
        double worst = 0;
        for (size_t i = 0; i < r.z.size(); i++) {
            double d = std::fabs((double)r.z[i] - reference[i]);
            worst = d > worst || d != d ? d : worst;
        }
        printf("%-48s %10.3f %10.2f %9.2fx %12.3g", r.name.c_str(), r.ms, flops / (r.ms * 1e-3) / 1e12,
               rows[0].ms / r.ms, worst);
        double rel = scale > 0 ? worst / scale : worst;
        worst_rel = rel > worst_rel || rel != rel ? rel : worst_rel;
        if (relative)
            printf(" %11.3g", rel);
        printf("\n");
    }
    return worst_rel;
}

#endif

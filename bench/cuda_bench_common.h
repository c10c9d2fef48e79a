// cuda_bench_common.h — what the CUDA benchmarks (bench/cuda_bench.cu,
// FP32 matmul_gelu; bench/cuda_bench_bf16.cu, the bf16 matmul) share: the
// error checks, the start (the -r flag, skipping without a device), the
// timing, a texc contender, cuBLASLt at its best and the table.
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

// cuBLASLt's row, at its best configuration: row-major z[M, N] = x[M, K] @
// w[K, N] (to cuBLASLt, column-major z^T = w^T x^T: w is A, x is B), the
// operands of type AB, z of type F32, under the descriptor OP (compute type,
// epilogue) with ALPHA and BETA (floats), by the fastest of the (up to) 8
// algorithms the heuristic proposes with a 64 MiB workspace, each timed
// over REPS runs (an algorithm whose launch fails is passed over).  The row
// is named LABEL plus "(algo R/T)": rank R in the heuristic's list, of T
// that ran.  False, and no row, when none runs.
static bool lt_row(std::vector<Row> &rows, const char *label, cublasLtMatmulDesc_t op, cudaDataType ab,
                   int m, int n, int k, const void *x, const void *w, float *z, float alpha, float beta, int reps)
{
    cublasLtHandle_t lt;
    BLAS_CHECK(cublasLtCreate(&lt));
    cublasLtMatrixLayout_t la, lb, lc;
    BLAS_CHECK(cublasLtMatrixLayoutCreate(&la, ab, n, k, n));
    BLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, ab, k, m, k));
    BLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, n, m, n));
    size_t ws_size = (size_t)64 << 20;
    void *ws;
    CUDA_CHECK(cudaMalloc(&ws, ws_size));
    cublasLtMatmulPreference_t pref;
    BLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    BLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws_size, sizeof ws_size));
    cublasLtMatmulHeuristicResult_t heur[8];
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 8, heur, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    auto matmul = [&](const cublasLtMatmulAlgo_t *algo) {
        return cublasLtMatmul(lt, op, &alpha, w, la, x, lb, &beta, z, lc, z, lc, algo, ws, ws_size, 0);
    };
    size_t nz = (size_t)m * n;
    CUDA_CHECK(cudaMemset(z, 0xff, nz * sizeof *z));
    int rank = -1, tried = 0;
    float ms = 0;
    for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < found; i++) {
        const cublasLtMatmulAlgo_t *algo = &heur[i].algo;
        if (heur[i].state != CUBLAS_STATUS_SUCCESS || matmul(algo) != CUBLAS_STATUS_SUCCESS ||
            cudaDeviceSynchronize() != cudaSuccess)
            continue;
        tried++;
        float t = time_ms([&] { BLAS_CHECK(matmul(algo)); }, reps);
        if (rank < 0 || t < ms) {
            ms = t;
            rank = i;
        }
    }
    if (rank >= 0) {
        BLAS_CHECK(matmul(&heur[rank].algo)); // its output, for the table
        char name[128];
        snprintf(name, sizeof name, "%s (algo %d/%d)", label, rank, tried);
        rows.push_back({ name, ms, fetch(z, nz) });
    }
    cudaFree(ws);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtDestroy(lt);
    return rank >= 0;
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

// cuda_bench.cu — texc's matmul_gelu on the GPU against what a user would
// pick instead, on the same GPU in one run:
//
//   cuBLAS sgemm (alpha = 1/8) followed by a bias + GELU kernel (erf, as texc);
//   cuBLASLt matmul with the GELU_BIAS epilogue (one kernel; its GELU is the
//   tanh approximation, so its values differ from the others by ~1e-3).
//
// All in FP32 (CUBLAS_COMPUTE_32F: no TF32 tensor cores), since texc's
// kernels use FP32 FMAs.  Built by tests/gpu/run.sh for each shape with
// one or two texc variants (the default schedule, a hand schedule):
//
//   nvcc -O3 -std=c++17 -Iruntime -Idir -DVARIANT_A='"a.h"' -DNAME_A=a -DMACRO_A=A
//        [-DVARIANT_B='"b.h"' -DNAME_B=b -DMACRO_B=B] bench/cuda_bench.cu
//        -Lruntime/.libs -ltexrt -lcublasLt -lcublas -o cuda_bench
//   ./cuda_bench [-r REPS]
//
// libtexrt launches texc's kernels in the primary context on the legacy
// default stream, the same context and stream the CUDA runtime's calls
// here use, so one pair of events times either.  Prints one table row per
// contender: milliseconds (median of REPS), TFLOP/s (2 M N K / time) and
// the ratio to the first texc variant, then each result's largest
// difference from cuBLAS + GELU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "texrt.h"

#include VARIANT_A
#ifdef VARIANT_B
#include VARIANT_B
#endif

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

static const int M = CAT(MACRO_A, _M), N = CAT(MACRO_A, _N), K = CAT(MACRO_A, _K);

#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, "cuda_bench: %s: %s\n", #call, cudaGetErrorString(err_));     \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
#define BLAS_CHECK(call)                                                                  \
    do {                                                                                  \
        int st_ = (int)(call);                                                            \
        if (st_ != 0) {                                                                   \
            fprintf(stderr, "cuda_bench: %s: status %d\n", #call, st_);                   \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
#define TEXRT_CHECK(call)                                                                 \
    do {                                                                                  \
        if ((call) != TEXRT_OK) {                                                         \
            fprintf(stderr, "cuda_bench: %s: %s\n", #call, texrt_last_error());           \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

// z = gelu(z + b[j]) with erf, row-major M x N.
__global__ void bias_gelu(float *z, const float *b, int m, int n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)m * n) {
        float v = z[i] + b[i % n];
        z[i] = 0.5f * v * (1.0f + erff(v * 0.707106781f));
    }
}

struct Row {
    const char *name;
    float ms;
    std::vector<float> z;
};

// The median time of REPS runs of F after 3 warm-up runs, in milliseconds.
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

static std::vector<float> fetch(const float *dz)
{
    std::vector<float> z((size_t)M * N);
    CUDA_CHECK(cudaMemcpy(z.data(), dz, z.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return z;
}

template <typename LOAD, typename RUN>
static Row run_texc(const char *name, LOAD load, RUN run, uint64_t ws_bytes, float *x, float *w,
                    float *b, float *z, int reps)
{
    texrt_module *module;
    TEXRT_CHECK(load(&module));
    uint64_t ws = 0;
    if (ws_bytes)
        TEXRT_CHECK(texrt_dev_alloc(&ws, ws_bytes));
    CUDA_CHECK(cudaMemset(z, 0xff, (size_t)M * N * sizeof(float)));
    auto f = [&] {
        TEXRT_CHECK(run(module, ws, (uint64_t)(uintptr_t)x, (uint64_t)(uintptr_t)w,
                        (uint64_t)(uintptr_t)b, (uint64_t)(uintptr_t)z));
    };
    float ms = time_ms(f, reps);
    Row row = { name, ms, fetch(z) };
    if (ws)
        texrt_dev_free(ws);
    texrt_module_unload(module);
    return row;
}

int main(int argc, char **argv)
{
    int reps = argc > 2 && !strcmp(argv[1], "-r") ? atoi(argv[2]) : 20;
    if (texrt_cuda_init(0) != TEXRT_OK) {
        printf("skip: no CUDA device: %s\n", texrt_last_error());
        return TEXRT_EXIT_SKIP;
    }
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("matmul_gelu M=%d N=%d K=%d on %s (sm_%d%d), FP32, median of %d runs\n", M, N, K,
           prop.name, prop.major, prop.minor, reps);

    std::vector<float> hx((size_t)M * K), hw((size_t)K * N), hb(N);
    texrt_fill_random(hx.data(), hx.size(), 1);
    texrt_fill_random(hw.data(), hw.size(), 2);
    texrt_fill_random(hb.data(), hb.size(), 3);
    float *x, *w, *b, *z;
    CUDA_CHECK(cudaMalloc(&x, hx.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&w, hw.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&b, hb.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&z, (size_t)M * N * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(w, hw.data(), hw.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b, hb.data(), hb.size() * sizeof(float), cudaMemcpyHostToDevice));

    std::vector<Row> rows;
    rows.push_back(run_texc(
        "texc (" CAT(MACRO_A, _ARCH) ", " VARIANT_A ")",
        [](texrt_module **m) { return CAT(NAME_A, _load)(m, NULL, 0); }, CAT(NAME_A, _run_ws),
        CAT(MACRO_A, _WORKSPACE_BYTES), x, w, b, z, reps));
#ifdef VARIANT_B
    rows.push_back(run_texc(
        "texc (" CAT(MACRO_B, _ARCH) ", " VARIANT_B ")",
        [](texrt_module **m) { return CAT(NAME_B, _load)(m, NULL, 0); }, CAT(NAME_B, _run_ws),
        CAT(MACRO_B, _WORKSPACE_BYTES), x, w, b, z, reps));
#endif

    // cuBLAS: row-major z = x @ w is column-major z^T = w^T x^T
    cublasHandle_t blas;
    BLAS_CHECK(cublasCreate(&blas));
    BLAS_CHECK(cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH)); // FP32, no TF32
    const float alpha = 0.125f, beta = 0.0f;
    auto sgemm_gelu = [&] {
        BLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, w, N, x, K, &beta, z, N));
        long long n = (long long)M * N;
        bias_gelu<<<(unsigned)((n + 255) / 256), 256>>>(z, b, M, N);
    };
    CUDA_CHECK(cudaMemset(z, 0xff, (size_t)M * N * sizeof(float)));
    float ms = time_ms(sgemm_gelu, reps);
    rows.push_back({ "cuBLAS sgemm + bias/GELU kernel", ms, fetch(z) });
    std::vector<float> reference = rows.back().z;

    // cuBLASLt: one matmul with the GELU_BIAS epilogue (bias along N)
    cublasLtHandle_t lt;
    BLAS_CHECK(cublasLtCreate(&lt));
    cublasLtMatmulDesc_t op;
    BLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b));
    cublasLtMatrixLayout_t la, lb, lc;
    BLAS_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, N, K, N));
    BLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, M, K));
    BLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, N, M, N));
    size_t ws_size = 64 << 20;
    void *ws;
    CUDA_CHECK(cudaMalloc(&ws, ws_size));
    cublasLtMatmulPreference_t pref;
    BLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    BLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws_size, sizeof ws_size));
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    BLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found));
    if (found > 0) {
        auto lt_gelu = [&] {
            BLAS_CHECK(cublasLtMatmul(lt, op, &alpha, w, la, x, lb, &beta, z, lc, z, lc, &heur.algo, ws,
                                      ws_size, 0));
        };
        CUDA_CHECK(cudaMemset(z, 0xff, (size_t)M * N * sizeof(float)));
        ms = time_ms(lt_gelu, reps);
        rows.push_back({ "cuBLASLt matmul, GELU_BIAS epilogue", ms, fetch(z) });
    } else {
        printf("cuBLASLt has no algorithm for the GELU_BIAS epilogue here\n");
    }

    double flops = 2.0 * M * N * K;
    printf("%-48s %10s %10s %10s %12s\n", "", "ms", "TFLOP/s", "x texc", "max |diff|");
    for (const Row &r : rows) {
        double worst = 0;
        for (size_t i = 0; i < r.z.size(); i++) {
            double d = std::fabs((double)r.z[i] - reference[i]);
            worst = d > worst || d != d ? d : worst;
        }
        printf("%-48s %10.3f %10.2f %9.2fx %12.3g\n", r.name, r.ms, flops / (r.ms * 1e-3) / 1e12,
               rows[0].ms / r.ms, worst);
    }
    cudaFree(ws);
    cudaFree(x);
    cudaFree(w);
    cudaFree(b);
    cudaFree(z);
    cublasDestroy(blas);
    cublasLtDestroy(lt);
    return 0;
}

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
// Each contender at its best: cuBLASLt is the fastest of the (up to 8)
// algorithms its heuristic proposes for the shape, with a 64 MiB
// workspace; its row says which ("algo R/T": rank R in the heuristic's
// list, of T that ran).  Prints one table row per contender: milliseconds
// (median of REPS after 3 warm-up runs), TFLOP/s (2 M N K / time) and the
// ratio to the first texc variant, then each result's largest difference
// from cuBLAS + GELU.  The shared parts are in bench/cuda_bench_common.h.
#include <cublas_v2.h>

#include VARIANT_A
#ifdef VARIANT_B
#include VARIANT_B
#endif

#include "cuda_bench_common.h"

static const int M = CAT(MACRO_A, _M), N = CAT(MACRO_A, _N), K = CAT(MACRO_A, _K);

// z = gelu(z + b[j]) with erf, row-major M x N.
__global__ void bias_gelu(float *z, const float *b, int m, int n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)m * n) {
        float v = z[i] + b[i % n];
        z[i] = 0.5f * v * (1.0f + erff(v * 0.707106781f));
    }
}

// A texc variant's contender: NAME's loader and launcher on x, w, b, z.
#define TEXC_ROW(NAME, MACRO, VARIANT)                                                                   \
    run_texc(                                                                                            \
        "texc (" CAT(MACRO, _ARCH) ", " VARIANT ")",                                                     \
        [](texrt_module **m) { return CAT(NAME, _load)(m, NULL, 0); },                                   \
        [&](texrt_module *m, uint64_t ws) {                                                              \
            return CAT(NAME, _run_ws)(m, ws, (uint64_t)(uintptr_t)x, (uint64_t)(uintptr_t)w,             \
                                      (uint64_t)(uintptr_t)b, (uint64_t)(uintptr_t)z);                   \
        },                                                                                               \
        CAT(MACRO, _WORKSPACE_BYTES), z, (size_t)M * N, reps)

int main(int argc, char **argv)
{
    int reps = bench_start(argc, argv);
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
    rows.push_back(TEXC_ROW(NAME_A, MACRO_A, VARIANT_A));
#ifdef VARIANT_B
    rows.push_back(TEXC_ROW(NAME_B, MACRO_B, VARIANT_B));
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
    rows.push_back({ "cuBLAS sgemm + bias/GELU kernel", ms, fetch(z, (size_t)M * N) });
    std::vector<float> reference = rows.back().z;

    // cuBLASLt: one matmul with the GELU_BIAS epilogue (bias along N)
    cublasLtMatmulDesc_t op;
    BLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b));
    if (!lt_row(rows, "cuBLASLt matmul, GELU_BIAS epilogue", op, CUDA_R_32F, M, N, K, x, w, z, alpha, beta, reps))
        printf("cuBLASLt has no algorithm for the GELU_BIAS epilogue here\n");
    cublasLtMatmulDescDestroy(op);

    print_table(rows, 2.0 * M * N * K, reference, false);
    cudaFree(x);
    cudaFree(w);
    cudaFree(b);
    cudaFree(z);
    cublasDestroy(blas);
    return 0;
}

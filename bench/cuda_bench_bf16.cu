// cuda_bench_bf16.cu — texc's bf16 matmul (bench/matmul_bf16.te: y = x @ w,
// x and w bf16, the products summed in f32, y f32) on the GPU against
// cuBLAS doing the same, on the same GPU and the same inputs in one run.
// The contenders, each at its best configuration:
//
//   texc         the generated header of bench/matmul_bf16.te under texc's
//                default CUDA schedule (no schedule in the file: whatever
//                the backend's default is, SIMT or tensor cores), called
//                only through the header's NAME_load and NAME_launch;
//   cublasGemmEx A and B CUDA_R_16BF, C CUDA_R_32F, CUBLAS_COMPUTE_32F,
//                CUBLAS_GEMM_DEFAULT, default math mode: cuBLAS runs bf16
//                inputs on the tensor cores (it needs no TENSOR_OP flag
//                since CUDA 11), accumulating in f32;
//   cuBLASLt     the same matmul (CUBLAS_COMPUTE_32F, scale CUDA_R_32F,
//                bf16 A and B, f32 C = D), the fastest of the (up to 8)
//                algorithms its heuristic proposes with a 64 MiB workspace,
//                each timed; its row says which won ("algo R/T": rank R in
//                the heuristic's list, of T that ran).
//
// Row-major y = x @ w is, to cuBLAS (column-major), y^T = w^T x^T: w is
// passed as A (N x K, leading dimension N), x as B (K x M, leading
// dimension K), y as C (N x M, leading dimension N).  The inputs are
// texrt_fill_random's floats in [-1, 1) rounded to bf16 (seeds 1 and 2).
// Built by tests/gpu/run.sh for each shape:
//
//   texc bench/matmul_bf16.te -D M=.. -D N=.. -D K=.. --target cuda --arch sm_90 -o dir/bf16_M
//   nvcc -O3 -std=c++17 -Iruntime -Idir -DVARIANT_A='"bf16_M.h"' -DNAME_A=bf16_M
//        -DMACRO_A=BF16_M bench/cuda_bench_bf16.cu -Lruntime/.libs -ltexrt -lcublasLt
//        -lcublas -o cuda_bench_bf16
//   ./cuda_bench_bf16 [-r REPS]
//
// Prints one table row per contender: milliseconds (median of REPS after 3
// warm-up runs), TFLOP/s (2 M N K / time), the ratio to texc, and each
// result's largest |difference| from cublasGemmEx's, also relative to
// cublasGemmEx's largest |y|.  All sum the same exact products in f32, in
// different orders: they agree to ~1e-5 relative.  cublasGemmEx is itself
// checked at 4096 sampled elements against a host sum in double.  Exit
// status 1 when a result is off by more than 1e-3 relative (a wrong
// kernel, not a slow one), 77 without a device.
#define BENCH_NAME "cuda_bench_bf16"

#include <cuda_bf16.h>

#include <cublas_v2.h>

#include VARIANT_A

#include "cuda_bench_common.h"

static const int M = CAT(MACRO_A, _M), N = CAT(MACRO_A, _N), K = CAT(MACRO_A, _K);

static_assert(CAT(MACRO_A, _NTENSORS) == 3, "matmul_bf16.te has the tensors x, w and y");

// The tensors of the texc header are x bf16[M, K], w bf16[K, N], y f32[M, N],
// in that order: the program the benchmark was built with is matmul_bf16.te.
static void check_texc_tensors(const texc_cuda_tensor *t)
{
    const texc_cuda_tensor want[3] = {
        { "x", "bf16", 2, { M, K }, (uint64_t)M * K * 2, 0 },
        { "w", "bf16", 2, { K, N }, (uint64_t)K * N * 2, 0 },
        { "y", "f32", 2, { M, N }, (uint64_t)M * N * 4, 1 },
    };
    for (int i = 0; i < 3; i++) {
        if (strcmp(t[i].name, want[i].name) || strcmp(t[i].dtype, want[i].dtype) || t[i].rank != 2 ||
            t[i].shape[0] != want[i].shape[0] || t[i].shape[1] != want[i].shape[1] ||
            t[i].is_output != want[i].is_output) {
            fprintf(stderr, BENCH_NAME ": " VARIANT_A "'s tensor %d is %s %s[%lld, %lld], not %s %s[%lld, %lld]\n",
                    i, t[i].name, t[i].dtype, (long long)t[i].shape[0], (long long)t[i].shape[1],
                    want[i].name, want[i].dtype, (long long)want[i].shape[0], (long long)want[i].shape[1]);
            exit(1);
        }
    }
}

// N bf16 values: texrt_fill_random's floats of SEED, rounded to nearest even.
static std::vector<__nv_bfloat16> random_bf16(size_t n, uint64_t seed)
{
    std::vector<float> f(n);
    texrt_fill_random(f.data(), n, seed);
    std::vector<__nv_bfloat16> h(n);
    for (size_t i = 0; i < n; i++)
        h[i] = __float2bfloat16_rn(f[i]);
    return h;
}

// The largest |y[i, j] - sum(k) x[i, k] w[k, j]| at 4096 elements spread over y
// (the sum in double on the host), relative to the largest |sum|.
static double sampled_error(const std::vector<__nv_bfloat16> &x, const std::vector<__nv_bfloat16> &w,
                            const std::vector<float> &y)
{
    double worst = 0, scale = 0;
    uint64_t s = 12345;
    for (int t = 0; t < 4096; t++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        size_t i = (size_t)(s >> 33) % M, j = (size_t)(s >> 17) % N;
        double sum = 0;
        for (size_t k = 0; k < (size_t)K; k++)
            sum += (double)__bfloat162float(x[i * K + k]) * (double)__bfloat162float(w[k * N + j]);
        double d = std::fabs(y[i * N + j] - sum);
        worst = d > worst || d != d ? d : worst;
        scale = std::max(scale, std::fabs(sum));
    }
    return scale > 0 ? worst / scale : worst;
}

int main(int argc, char **argv)
{
    int reps = bench_start(argc, argv);
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("bf16 matmul M=%d N=%d K=%d on %s (sm_%d%d): bf16 x and w, f32 sums and y, median of %d runs;\n"
           "cuBLAS in its default math mode, which runs bf16 on the tensor cores\n",
           M, N, K, prop.name, prop.major, prop.minor, reps);
    check_texc_tensors(CAT(NAME_A, _tensors));

    std::vector<__nv_bfloat16> hx = random_bf16((size_t)M * K, 1), hw = random_bf16((size_t)K * N, 2);
    __nv_bfloat16 *x, *w;
    float *y;
    size_t ny = (size_t)M * N;
    CUDA_CHECK(cudaMalloc(&x, hx.size() * sizeof *x));
    CUDA_CHECK(cudaMalloc(&w, hw.size() * sizeof *w));
    CUDA_CHECK(cudaMalloc(&y, ny * sizeof *y));
    CUDA_CHECK(cudaMemcpy(x, hx.data(), hx.size() * sizeof *x, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(w, hw.data(), hw.size() * sizeof *w, cudaMemcpyHostToDevice));

    // texc, through the header's launcher: inputs, then outputs
    std::vector<Row> rows;
    const uint64_t tensors[3] = { (uint64_t)(uintptr_t)x, (uint64_t)(uintptr_t)w, (uint64_t)(uintptr_t)y };
    rows.push_back(run_texc(
        "texc (" CAT(MACRO_A, _ARCH) ", default schedule)",
        [](texrt_module **m) { return CAT(NAME_A, _load)(m, NULL, 0); },
        [&](texrt_module *m, uint64_t ws) { return CAT(NAME_A, _launch)(m, ws, tensors); },
        CAT(MACRO_A, _WORKSPACE_BYTES), y, ny, reps));

    // cublasGemmEx in bf16, f32 compute (tensor cores)
    cublasHandle_t blas;
    BLAS_CHECK(cublasCreate(&blas));
    const float alpha = 1.0f, beta = 0.0f;
    auto gemm_ex = [&] {
        BLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, w, CUDA_R_16BF, N, x,
                                CUDA_R_16BF, K, &beta, y, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    };
    CUDA_CHECK(cudaMemset(y, 0xff, ny * sizeof *y));
    float ms = time_ms(gemm_ex, reps);
    rows.push_back({ "cublasGemmEx bf16, f32 compute (tensor cores)", ms, fetch(y, ny) });
    std::vector<float> reference = rows.back().z;

    // cuBLASLt, the same matmul at its best
    cublasLtMatmulDesc_t op;
    BLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    if (!lt_row(rows, "cuBLASLt matmul bf16, f32 compute", op, CUDA_R_16BF, M, N, K, x, w, y, alpha, beta, reps))
        printf("cuBLASLt has no algorithm for this bf16 matmul here\n");
    cublasLtMatmulDescDestroy(op);

    double worst = print_table(rows, 2.0 * M * N * K, reference, true);
    double sampled = sampled_error(hx, hw, reference);
    printf("cublasGemmEx against a host sum in double at 4096 elements: max rel %.3g\n", sampled);
    int status = 0;
    if (worst > 1e-3 || sampled > 1e-3 || worst != worst || sampled != sampled) {
        printf("WRONG: a result is off by more than 1e-3 relative\n");
        status = 1;
    }
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    cublasDestroy(blas);
    return status;
}

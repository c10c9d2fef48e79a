/* app_cuda.c — a user's program: runs the generated matmul_gelu kernels on
 * the GPU through libtexrt.
 *
 *   texc samples/matmul_gelu.te --target cuda --embed -o cuda/matmul_gelu
 *   cc app_cuda.c $(pkg-config --cflags --libs texrt) -lm -o app_cuda && ./app_cuda
 *
 * It fills the inputs, copies them to the GPU, runs matmul_gelu (loading
 * the cubin embedded in the header), copies z back and checks every
 * element against a plain C loop computing gelu(x @ w / 8 + b) in double
 * precision.  Exit status 0 when all match, 1 otherwise, and 77 (the test
 * driver's "skipped") when there is no GPU to run on.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* make check generates it in samples/cuda/, beside the CPU backend's */
#include "cuda/matmul_gelu.h"

enum { M = MATMUL_GELU_M, N = MATMUL_GELU_N, K = MATMUL_GELU_K };

/* A deterministic value in [-1, 1) for element I of a buffer. */
static float value(unsigned seed, size_t i)
{
    unsigned long long h = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (float)((double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Allocates a device buffer for HOST (BYTES) and copies it there. */
static int upload(uint64_t *dev, const void *host, size_t bytes)
{
    int rc = texrt_dev_alloc(dev, bytes);
    return rc != TEXRT_OK ? rc : texrt_memcpy_htod(*dev, host, bytes);
}

int main(void)
{
    int rc = texrt_cuda_init(0);
    if (rc == TEXRT_E_NODRIVER || rc == TEXRT_E_NODEVICE) {
        printf("SKIP: no CUDA device: %s\n", texrt_last_error());
        return TEXRT_EXIT_SKIP;
    }
    texrt_module *module;
    if (rc != TEXRT_OK || matmul_gelu_load(&module, NULL, 0) != TEXRT_OK) {
        fprintf(stderr, "app_cuda: %s\n", texrt_last_error());
        return 1;
    }
    float *x = malloc(sizeof *x * M * K), *w = malloc(sizeof *w * K * N);
    float *b = malloc(sizeof *b * N), *z = malloc(sizeof *z * M * N);
    if (!x || !w || !b || !z) {
        fputs("app_cuda: out of memory\n", stderr);
        return 1;
    }
    for (size_t i = 0; i < (size_t)M * K; i++)
        x[i] = value(1, i);
    for (size_t i = 0; i < (size_t)K * N; i++)
        w[i] = value(2, i);
    for (size_t i = 0; i < (size_t)N; i++)
        b[i] = value(3, i);

    uint64_t dx, dw, db, dz;
    if (upload(&dx, x, sizeof *x * M * K) != TEXRT_OK || upload(&dw, w, sizeof *w * K * N) != TEXRT_OK ||
        upload(&db, b, sizeof *b * N) != TEXRT_OK || texrt_dev_alloc(&dz, sizeof *z * M * N) != TEXRT_OK ||
        matmul_gelu_run(module, dx, dw, db, dz) != TEXRT_OK ||
        texrt_memcpy_dtoh(z, dz, sizeof *z * M * N) != TEXRT_OK) {
        fprintf(stderr, "app_cuda: %s\n", texrt_last_error());
        return 1;
    }

    double worst = 0;
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++)
                acc += (double)x[i * K + k] * w[k * N + j];
            double v = acc / 8.0 + b[j];
            double want = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
            double err = fabs(z[i * N + j] - want);
            if (err > worst || err != err)
                worst = err;
            if (!(err <= 1e-4 + 1e-4 * fabs(want)))
                bad++;
        }
    char device[128] = "";
    texrt_device_name(0, device, sizeof device);
    printf("matmul_gelu %dx%dx%d on %s (%s cubin): max |error| %.3g, %d elements out of tolerance\n",
           M, N, K, device, MATMUL_GELU_ARCH, worst, bad);
    texrt_dev_free(dx);
    texrt_dev_free(dw);
    texrt_dev_free(db);
    texrt_dev_free(dz);
    texrt_module_unload(module);
    free(x);
    free(w);
    free(b);
    free(z);
    return bad ? 1 : 0;
}

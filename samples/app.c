/* app.c — a user's program: runs the generated matmul_gelu kernel.
 *
 *   texc samples/matmul_gelu.te -o matmul_gelu
 *   cc -O2 -fopenmp app.c matmul_gelu.c -lm -o app && ./app
 *
 * It fills the inputs, calls matmul_gelu(x, w, b, z), and checks every
 * element of z against a plain C loop computing gelu(x @ w / 8 + b) in
 * double precision.  Exit status 0 when all match, 1 otherwise.
 *
 * w is a `const` weight, so texc reads it in panels (matmul_gelu.h says
 * which): a program that calls the kernel many times with one w packs it
 * once with matmul_gelu_prepack and then calls matmul_gelu_packed, which
 * must give exactly what matmul_gelu (packing on every call) gives.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "matmul_gelu.h"

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

int main(void)
{
    float *x = malloc(sizeof *x * M * K), *w = malloc(sizeof *w * K * N);
    float *b = malloc(sizeof *b * N), *z = malloc(sizeof *z * M * N);
    if (!x || !w || !b || !z) {
        fputs("app: out of memory\n", stderr);
        return 1;
    }
    for (size_t i = 0; i < (size_t)M * K; i++)
        x[i] = value(1, i);
    for (size_t i = 0; i < (size_t)K * N; i++)
        w[i] = value(2, i);
    for (size_t i = 0; i < (size_t)N; i++)
        b[i] = value(3, i);

    matmul_gelu(x, w, b, z);

    int differ = 0;
#ifdef MATMUL_GELU_W_PACKED_ELEMS
    float *wp = malloc(sizeof *wp * MATMUL_GELU_W_PACKED_ELEMS);
    float *z2 = malloc(sizeof *z2 * M * N);
    if (!wp || !z2) {
        fputs("app: out of memory\n", stderr);
        return 1;
    }
    matmul_gelu_prepack(w, wp); /* once per weight */
    matmul_gelu_packed(x, wp, b, z2);
    for (size_t i = 0; i < (size_t)M * N; i++)
        differ += z2[i] != z[i];
    printf("matmul_gelu_prepack + matmul_gelu_packed: %d elements differ from matmul_gelu\n",
           differ);
    free(wp);
    free(z2);
#endif

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
            if (err > worst)
                worst = err;
            if (!(err <= 1e-4 + 1e-4 * fabs(want)))
                bad++;
        }
    printf("matmul_gelu %dx%dx%d: max |error| %.3g, %d elements out of tolerance\n", M, N, K,
           worst, bad);
    free(x);
    free(w);
    free(b);
    free(z);
    return bad || differ ? 1 : 0;
}

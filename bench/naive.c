/* naive.c — the references: plain loops, built -O2.
 *
 * matmul_gelu.
 * z[i][j] = gelu(sum_k x[i][k] * w[k][j] * 0.125 + b[j]), row-major, one
 * thread, float accumulation in k order.  Every other row's output is
 * checked against this one, and it is timed as the "what a plain C loop
 * gets" row.  The loops run i, k, j (the row of z is the accumulator), so
 * that the inner loop walks rows of w: the textbook i, j, k order strides
 * down w's columns and took 12 s a call at 1024x1024x1024 on the 2-core
 * machine (0.18 GFLOP/s), too slow to time more than once or twice.  No
 * restrict, no -march: what a plain C program gets from -O2.
 *
 * The other operations of make bench (bench_ops.c) follow their samples'
 * definitions (samples/batch_matmul.te, conv2d.te, softmax.te,
 * layernorm.te) as directly, in the same spirit: row-major, float
 * accumulation in the order the sum is written, one thread.
 */
#include "bench.h"

void bench_naive(int m, int n, int k, const float *x, const float *w,
                 const float *b, float *z)
{
    for (int i = 0; i < m; i++) {
        float *row = z + (long)i * n;
        for (int j = 0; j < n; j++)
            row[j] = 0.0f;
        for (int kk = 0; kk < k; kk++) {
            float xik = x[(long)i * k + kk];
            for (int j = 0; j < n; j++)
                row[j] += xik * w[(long)kk * n + j];
        }
        for (int j = 0; j < n; j++)
            row[j] = bench_gelu(row[j] * 0.125f + b[j]);
    }
}

/* c[bt] = a[bt] @ w[bt]: a is batch x m x k, w batch x k x n, c batch x m x n. */
void bench_naive_batch_matmul(int batch, int m, int n, int k, const float *a,
                              const float *w, float *c)
{
    for (int bt = 0; bt < batch; bt++) {
        const float *ab = a + (long)bt * m * k, *wb = w + (long)bt * k * n;
        float *cb = c + (long)bt * m * n;
        for (int i = 0; i < m; i++) {
            float *row = cb + (long)i * n;
            for (int j = 0; j < n; j++)
                row[j] = 0.0f;
            for (int kk = 0; kk < k; kk++) {
                float aik = ab[(long)i * k + kk];
                for (int j = 0; j < n; j++)
                    row[j] += aik * wb[(long)kk * n + j];
            }
        }
    }
}

/* out = relu(conv(img, flt) + bias), NCHW, square stride and zero padding. */
void bench_naive_conv2d(int n, int c, int h, int w, int f, int r, int s, int stride,
                        int pad, const float *img, const float *flt, const float *bias,
                        float *out)
{
    int oh_count = (h + 2 * pad - r) / stride + 1, ow_count = (w + 2 * pad - s) / stride + 1;
    for (int in = 0; in < n; in++)
        for (int fi = 0; fi < f; fi++)
            for (int oh = 0; oh < oh_count; oh++)
                for (int ow = 0; ow < ow_count; ow++) {
                    float acc = 0.0f;
                    for (int ci = 0; ci < c; ci++)
                        for (int ri = 0; ri < r; ri++)
                            for (int si = 0; si < s; si++) {
                                int y = oh * stride + ri - pad, x = ow * stride + si - pad;
                                if (y >= 0 && y < h && x >= 0 && x < w)
                                    acc += img[(((long)in * c + ci) * h + y) * w + x] *
                                           flt[(((long)fi * c + ci) * r + ri) * s + si];
                            }
                    float v = acc + bias[fi];
                    out[(((long)in * f + fi) * oh_count + oh) * ow_count + ow] = v > 0.0f ? v : 0.0f;
                }
}

/* p = softmax over the rows of x (m x n), the row maximum subtracted first. */
void bench_naive_softmax(int m, int n, const float *x, float *p)
{
    for (int i = 0; i < m; i++) {
        const float *row = x + (long)i * n;
        float *prow = p + (long)i * n;
        float mx = row[0];
        for (int j = 1; j < n; j++)
            mx = row[j] > mx ? row[j] : mx;
        float sum = 0.0f;
        for (int j = 0; j < n; j++) {
            prow[j] = expf(row[j] - mx);
            sum += prow[j];
        }
        for (int j = 0; j < n; j++)
            prow[j] /= sum;
    }
}

/* y = (x - mean) / sqrt(var + eps) * gamma + beta over the rows of x (m x d). */
void bench_naive_layernorm(int m, int d, float eps, const float *x, const float *gamma,
                           const float *beta, float *y)
{
    for (int i = 0; i < m; i++) {
        const float *row = x + (long)i * d;
        float *yrow = y + (long)i * d;
        float sum = 0.0f;
        for (int j = 0; j < d; j++)
            sum += row[j];
        float mean = sum / (float)d, sq = 0.0f;
        for (int j = 0; j < d; j++)
            sq += (row[j] - mean) * (row[j] - mean);
        float inv = 1.0f / sqrtf(sq / (float)d + eps);
        for (int j = 0; j < d; j++)
            yrow[j] = (row[j] - mean) * inv * gamma[j] + beta[j];
    }
}

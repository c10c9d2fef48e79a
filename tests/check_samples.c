/* check_samples.c — an independent oracle for the sample programs.
 *
 *     check_samples gen SAMPLE DIR [NAME=VALUE...]
 *     check_samples verify SAMPLE DIR [NAME=VALUE...]
 *
 * tests/samples.sh drives it: `gen` writes each input of samples/SAMPLE.te
 * to DIR/NAME.npy and prints one "NAME=DIR/NAME.npy" line per input, for
 * texc's --input; the script then runs `texc --eval -o DIR/out`, and
 * `verify` recomputes every output here, in plain C loops, and compares it
 * with DIR/out.OUTPUT.npy.  NAME=VALUE are the script's -D overrides; dims
 * not given keep the sample's default, and dims the sample computes (OH,
 * OW) are computed here from the others, as the program says.
 *
 * Nothing of texc is linked: the .npy reader and writer are the few lines
 * below, so a wrong header or layout in lang/npy.c is caught too.  Input
 * values are small binary fractions (k / 256, |k| <= 512), exact in f32 and
 * the same in `gen` and `verify`, since both draw them from one
 * deterministic generator seeded by the input's name.
 *
 * The evaluator works in double whatever the dtype; samples.sh runs each
 * sample as written (outputs written as f32) and with f32 replaced by f64.
 * An '<f8' output must match to 1e-9 relative; an '<f4' one must be the
 * double result rounded to float, i.e. within half an f32 ulp (2^-24
 * relative) on top of that.  An absolute floor of 1e-12 keeps results that
 * cancel to (nearly) zero from failing on noise.  Exit status: 0 all
 * match, 1 a mismatch or an unreadable output, 2 a usage error.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DIMS = 16, MAX_MISMATCHES = 10 };

/* One run of the checker: the mode, the sample's dims, where files are. */
typedef struct Check {
    bool verify;  /* false: gen */
    const char *dir;
    const char *names[MAX_DIMS];
    int64_t values[MAX_DIMS];
    int ndims;
    int failures; /* outputs that did not match */
} Check;

static _Noreturn void fatal(const char *fmt, const char *arg)
{
    fputs("check_samples: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(2);
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        fatal("out of memory%s", "");
    return p;
}

/* Dims. */

/* Declares the sample's dim NAME with its default; a NAME=VALUE argument
 * already recorded overrides it.  Returns the value. */
static int64_t dim(Check *c, const char *name, int64_t fallback)
{
    for (int i = 0; i < c->ndims; i++)
        if (strcmp(c->names[i], name) == 0)
            return c->values[i];
    return fallback;
}

static int64_t elems(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= shape[d];
    return n;
}

/* Input values: k / 256 for k in [-512, 512], from a 64-bit LCG seeded by
 * the input's name. */
static double *make_input(const char *name, int64_t n)
{
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (const char *s = name; *s; s++)
        state = (state ^ (unsigned char)*s) * 0x100000001b3ULL;
    double *v = xmalloc(sizeof *v * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        int k = (int)((state >> 33) % 1025) - 512;
        v[i] = k / 256.0;
    }
    return v;
}

/* .npy files, format 1.0. */

static void write_npy_f32(const char *path, int rank, const int64_t *shape,
                          const double *v)
{
    char shape_text[128] = "(";
    for (int d = 0; d < rank; d++)
        snprintf(shape_text + strlen(shape_text), sizeof shape_text - strlen(shape_text),
                 "%s%lld", d ? ", " : "", (long long)shape[d]);
    strcat(shape_text, rank == 1 ? ",)" : ")");
    char header[256];
    int len = snprintf(header, sizeof header,
                       "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }",
                       shape_text);
    int padded = (10 + len + 1 + 63) / 64 * 64 - 10; /* data 64-aligned */
    memset(header + len, ' ', (size_t)(padded - len - 1));
    header[padded - 1] = '\n';

    FILE *f = fopen(path, "wb");
    if (!f)
        fatal("cannot write %s", path);
    unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                              (unsigned char)(padded & 0xff),
                              (unsigned char)(padded >> 8) };
    fwrite(pre, 1, sizeof pre, f);
    fwrite(header, 1, (size_t)padded, f);
    for (int64_t i = 0; i < elems(rank, shape); i++) {
        float x = (float)v[i];
        uint32_t u;
        memcpy(&u, &x, 4);
        unsigned char b[4] = { (unsigned char)u, (unsigned char)(u >> 8),
                               (unsigned char)(u >> 16), (unsigned char)(u >> 24) };
        fwrite(b, 1, 4, f);
    }
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed)
        fatal("cannot write %s", path);
}

/* Reads an '<f4' or '<f8' file of exactly SHAPE; sets *is_f32.  NULL, with
 * a message on stderr, if the file is not that. */
static double *read_npy(const char *path, int rank, const int64_t *shape,
                        bool *is_f32)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return NULL;
    }
    double *v = NULL;
    unsigned char pre[10];
    char header[1024];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY\x01\x00", 8) != 0) {
        fprintf(stderr, "%s: not a version 1.0 .npy file\n", path);
        goto out;
    }
    size_t header_len = pre[8] | (size_t)pre[9] << 8;
    if (header_len >= sizeof header || fread(header, 1, header_len, f) != header_len ||
        (10 + header_len) % 64 != 0 || header[header_len - 1] != '\n') {
        fprintf(stderr, "%s: bad header length %zu\n", path, header_len);
        goto out;
    }
    header[header_len] = '\0';
    *is_f32 = strstr(header, "'descr': '<f4'") != NULL;
    if (!*is_f32 && !strstr(header, "'descr': '<f8'")) {
        fprintf(stderr, "%s: not '<f4' or '<f8': %s", path, header);
        goto out;
    }
    char want[160];
    snprintf(want, sizeof want, "'fortran_order': False, 'shape': (");
    for (int d = 0; d < rank; d++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld",
                 d ? ", " : "", (long long)shape[d]);
    strcat(want, rank == 1 ? ",), }" : "), }");
    if (!strstr(header, want)) {
        fprintf(stderr, "%s: header %swanted %s\n", path, header, want);
        goto out;
    }
    int64_t n = elems(rank, shape);
    int size = *is_f32 ? 4 : 8;
    v = xmalloc(sizeof *v * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        unsigned char b[8];
        if (fread(b, 1, (size_t)size, f) != (size_t)size) {
            fprintf(stderr, "%s: truncated data\n", path);
            free(v);
            v = NULL;
            goto out;
        }
        uint64_t u = 0;
        for (int k = size - 1; k >= 0; k--)
            u = u << 8 | b[k];
        if (size == 4) {
            uint32_t u32 = (uint32_t)u;
            float x;
            memcpy(&x, &u32, 4);
            v[i] = x;
        } else {
            memcpy(&v[i], &u, 8);
        }
    }
    if (fgetc(f) != EOF) {
        fprintf(stderr, "%s: data past the end of the tensor\n", path);
        free(v);
        v = NULL;
    }
out:
    fclose(f);
    return v;
}

/* The two things a sample does with the Check. */

/* Input NAME of SHAPE: its values, written to DIR/NAME.npy under gen. */
static double *input(Check *c, const char *name, int rank, const int64_t *shape)
{
    double *v = make_input(name, elems(rank, shape));
    if (!c->verify) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.npy", c->dir, name);
        write_npy_f32(path, rank, shape, v);
        printf("%s=%s\n", name, path);
    }
    return v;
}

/* Output NAME should be WANT: compared under verify, then freed. */
static void expect(Check *c, const char *name, int rank, const int64_t *shape,
                   double *want)
{
    if (c->verify) {
        char path[4096];
        snprintf(path, sizeof path, "%s/out.%s.npy", c->dir, name);
        bool is_f32 = false;
        double *got = read_npy(path, rank, shape, &is_f32);
        if (!got) {
            c->failures++;
        } else {
            int bad = 0;
            int64_t n = elems(rank, shape);
            for (int64_t i = 0; i < n; i++) {
                double w = want[i], err = fabs(got[i] - w);
                double tol = 1e-9 * fabs(w) + 1e-12;
                if (is_f32)
                    tol += 0x1p-24 * fabs(w);
                if (!(err <= tol) && bad++ < MAX_MISMATCHES)
                    fprintf(stderr, "%s: element %lld is %.17g, wanted %.17g\n",
                            path, (long long)i, got[i], w);
            }
            if (bad) {
                fprintf(stderr, "%s: %d of %lld elements differ\n", path, bad,
                        (long long)n);
                c->failures++;
            }
            free(got);
        }
    }
    free(want);
}

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

/* The samples, each as the .te file says, in the simplest loops. */

static double gelu(double x)
{
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

/* z = gelu(x @ w * (1 / sqrt(64)) + b) */
static void matmul_gelu(Check *c)
{
    int64_t M = dim(c, "M", 512), N = dim(c, "N", 3072), K = dim(c, "K", 768);
    double *x = input(c, "x", 2, SHAPE(M, K));
    double *w = input(c, "w", 2, SHAPE(K, N));
    double *b = input(c, "b", 1, SHAPE(N));
    double *z = xmalloc(sizeof *z * (size_t)(M * N));
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; k++)
                acc += x[i * K + k] * w[k * N + j];
            z[i * N + j] = gelu(acc * (1.0 / 8.0) + b[j]);
        }
    }
    expect(c, "z", 2, SHAPE(M, N), z);
    free(x), free(w), free(b);
}

/* c[b] = a[b] @ w[b] */
static void batch_matmul(Check *c)
{
    int64_t B = dim(c, "B", 8), M = dim(c, "M", 128), N = dim(c, "N", 256),
            K = dim(c, "K", 64);
    double *a = input(c, "a", 3, SHAPE(B, M, K));
    double *w = input(c, "w", 3, SHAPE(B, K, N));
    double *out = xmalloc(sizeof *out * (size_t)(B * M * N));
    for (int64_t bt = 0; bt < B; bt++) {
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) {
                double acc = 0.0;
                for (int64_t k = 0; k < K; k++)
                    acc += a[(bt * M + i) * K + k] * w[(bt * K + k) * N + j];
                out[(bt * M + i) * N + j] = acc;
            }
        }
    }
    expect(c, "c", 3, SHAPE(B, M, N), out);
    free(a), free(w);
}

/* out = relu(conv(img, flt, stride, zero padding) + bias), NCHW */
static void conv2d(Check *c)
{
    int64_t N = dim(c, "N", 2), C = dim(c, "C", 16), H = dim(c, "H", 32),
            W = dim(c, "W", 32), F = dim(c, "F", 32), R = dim(c, "R", 3),
            S = dim(c, "S", 3), STRIDE = dim(c, "STRIDE", 2), PAD = dim(c, "PAD", 1);
    int64_t OH = dim(c, "OH", (H + 2 * PAD - R) / STRIDE + 1);
    int64_t OW = dim(c, "OW", (W + 2 * PAD - S) / STRIDE + 1);
    double *img = input(c, "img", 4, SHAPE(N, C, H, W));
    double *flt = input(c, "flt", 4, SHAPE(F, C, R, S));
    double *bias = input(c, "bias", 1, SHAPE(F));
    double *out = xmalloc(sizeof *out * (size_t)(N * F * OH * OW));
    for (int64_t n = 0; n < N; n++)
        for (int64_t f = 0; f < F; f++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = 0.0;
                    for (int64_t ch = 0; ch < C; ch++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t s = 0; s < S; s++) {
                                int64_t h = oh * STRIDE + r - PAD;
                                int64_t v = ow * STRIDE + s - PAD;
                                double pixel = h >= 0 && h < H && v >= 0 && v < W
                                    ? img[((n * C + ch) * H + h) * W + v]
                                    : 0.0;
                                acc += pixel * flt[((f * C + ch) * R + r) * S + s];
                            }
                    double y = acc + bias[f];
                    out[((n * F + f) * OH + oh) * OW + ow] = y > 0.0 ? y : 0.0;
                }
    expect(c, "out", 4, SHAPE(N, F, OH, OW), out);
    free(img), free(flt), free(bias);
}

/* p = softmax over the rows of x */
static void softmax(Check *c)
{
    int64_t M = dim(c, "M", 256), N = dim(c, "N", 1000);
    double *x = input(c, "x", 2, SHAPE(M, N));
    double *p = xmalloc(sizeof *p * (size_t)(M * N));
    for (int64_t i = 0; i < M; i++) {
        const double *row = x + i * N;
        double mx = -INFINITY, s = 0.0;
        for (int64_t j = 0; j < N; j++)
            mx = row[j] > mx ? row[j] : mx;
        for (int64_t j = 0; j < N; j++)
            s += exp(row[j] - mx);
        for (int64_t j = 0; j < N; j++)
            p[i * N + j] = exp(row[j] - mx) / s;
    }
    expect(c, "p", 2, SHAPE(M, N), p);
    free(x);
}

/* Y = layer normalization of the S rows of X (width D), eps 1e-5, then
 * * G + B. */
static void layer_norm_rows(int64_t S, int64_t D, const double *x, const double *g,
                            const double *b, double *y)
{
    for (int64_t i = 0; i < S; i++) {
        const double *row = x + i * D;
        double mean = 0.0, var = 0.0;
        for (int64_t j = 0; j < D; j++)
            mean += row[j];
        mean /= (double)D;
        for (int64_t j = 0; j < D; j++)
            var += (row[j] - mean) * (row[j] - mean);
        var /= (double)D;
        for (int64_t j = 0; j < D; j++)
            y[i * D + j] = (row[j] - mean) / sqrt(var + 1e-5) * g[j] + b[j];
    }
}

/* y = layer normalization of the rows of x, eps 1e-5, then * gamma + beta */
static void layernorm(Check *c)
{
    int64_t M = dim(c, "M", 128), D = dim(c, "D", 768);
    double *x = input(c, "x", 2, SHAPE(M, D));
    double *gamma = input(c, "gamma", 1, SHAPE(D));
    double *beta = input(c, "beta", 1, SHAPE(D));
    double *y = xmalloc(sizeof *y * (size_t)(M * D));
    layer_norm_rows(M, D, x, gamma, beta, y);
    expect(c, "y", 2, SHAPE(M, D), y);
    free(x), free(gamma), free(beta);
}

/* c = a^T + b */
static void transpose_add(Check *c)
{
    int64_t M = dim(c, "M", 384), N = dim(c, "N", 512);
    double *a = input(c, "a", 2, SHAPE(N, M));
    double *b = input(c, "b", 2, SHAPE(M, N));
    double *out = xmalloc(sizeof *out * (size_t)(M * N));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            out[i * N + j] = a[j * M + i] + b[i * N + j];
    expect(c, "c", 2, SHAPE(M, N), out);
    free(a), free(b);
}

/* pool = 2x2 max pooling, stride 2, NCHW; odd rows and columns dropped */
static void maxpool(Check *c)
{
    int64_t N = dim(c, "N", 2), C = dim(c, "C", 32), H = dim(c, "H", 64),
            W = dim(c, "W", 64);
    int64_t OH = dim(c, "OH", H / 2), OW = dim(c, "OW", W / 2);
    double *x = input(c, "x", 4, SHAPE(N, C, H, W));
    double *pool = xmalloc(sizeof *pool * (size_t)(N * C * OH * OW));
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    const double *win = x + ((n * C + ch) * H + 2 * oh) * W + 2 * ow;
                    pool[((n * C + ch) * OH + oh) * OW + ow] =
                        fmax(fmax(win[0], win[1]), fmax(win[W], win[W + 1]));
                }
    expect(c, "pool", 4, SHAPE(N, C, OH, OW), pool);
    free(x);
}


/* Y (S x N) = X (S x K) @ W (K x N) */
static void matmul(int64_t S, int64_t K, int64_t N, const double *x, const double *w,
                   double *y)
{
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; k++)
                acc += x[i * K + k] * w[k * N + j];
            y[i * N + j] = acc;
        }
}

/* r = x + attention(layernorm(x)) @ wo + bo;
 * y = r + gelu(layernorm(r) @ w1 + b1) @ w2 + b2, with H heads of D / H
 * columns, each head a softmax(q k^T / sqrt(D / H)) v over the S rows */
static void transformer_block(Check *c)
{
    int64_t S = dim(c, "S", 32), D = dim(c, "D", 64), H = dim(c, "H", 4),
            F = dim(c, "F", 256);
    int64_t DH = dim(c, "DH", D / H);
    double *x = input(c, "x", 2, SHAPE(S, D));
    double *ln1_g = input(c, "ln1_g", 1, SHAPE(D));
    double *ln1_b = input(c, "ln1_b", 1, SHAPE(D));
    double *wq = input(c, "wq", 2, SHAPE(D, D));
    double *wk = input(c, "wk", 2, SHAPE(D, D));
    double *wv = input(c, "wv", 2, SHAPE(D, D));
    double *wo = input(c, "wo", 2, SHAPE(D, D));
    double *bo = input(c, "bo", 1, SHAPE(D));
    double *ln2_g = input(c, "ln2_g", 1, SHAPE(D));
    double *ln2_b = input(c, "ln2_b", 1, SHAPE(D));
    double *w1 = input(c, "w1", 2, SHAPE(D, F));
    double *b1 = input(c, "b1", 1, SHAPE(F));
    double *w2 = input(c, "w2", 2, SHAPE(F, D));
    double *b2 = input(c, "b2", 1, SHAPE(D));
    double *xn = xmalloc(sizeof *xn * (size_t)(S * D));
    double *q = xmalloc(sizeof *q * (size_t)(S * D)); /* head h: columns h*DH.. */
    double *k = xmalloc(sizeof *k * (size_t)(S * D));
    double *v = xmalloc(sizeof *v * (size_t)(S * D));
    double *ctx = xmalloc(sizeof *ctx * (size_t)(S * D));
    for (int64_t i = 0; i < S * D; i++)
        ctx[i] = 0.0; /* columns past H * DH, when H does not divide D */
    double *p = xmalloc(sizeof *p * (size_t)S);
    double *r = xmalloc(sizeof *r * (size_t)(S * D));
    double *hid = xmalloc(sizeof *hid * (size_t)(S * F));
    double *y = xmalloc(sizeof *y * (size_t)(S * D));
    layer_norm_rows(S, D, x, ln1_g, ln1_b, xn);
    matmul(S, D, D, xn, wq, q);
    matmul(S, D, D, xn, wk, k);
    matmul(S, D, D, xn, wv, v);
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < S; i++) {
            double mx = -INFINITY, sum = 0.0;
            for (int64_t t = 0; t < S; t++) {
                double dot = 0.0;
                for (int64_t d = 0; d < DH; d++)
                    dot += q[i * D + h * DH + d] * k[t * D + h * DH + d];
                p[t] = dot * (1.0 / sqrt((double)DH));
                mx = p[t] > mx ? p[t] : mx;
            }
            for (int64_t t = 0; t < S; t++) {
                p[t] = exp(p[t] - mx);
                sum += p[t];
            }
            for (int64_t d = 0; d < DH; d++) {
                double acc = 0.0;
                for (int64_t t = 0; t < S; t++)
                    acc += p[t] * v[t * D + h * DH + d];
                ctx[i * D + h * DH + d] = acc / sum;
            }
        }
    matmul(S, D, D, ctx, wo, r);
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < D; j++)
            r[i * D + j] += x[i * D + j] + bo[j];
    layer_norm_rows(S, D, r, ln2_g, ln2_b, xn);
    matmul(S, D, F, xn, w1, hid);
    for (int64_t i = 0; i < S; i++)
        for (int64_t n = 0; n < F; n++)
            hid[i * F + n] = gelu(hid[i * F + n] + b1[n]);
    matmul(S, F, D, hid, w2, y);
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < D; j++)
            y[i * D + j] += r[i * D + j] + b2[j];
    expect(c, "y", 2, SHAPE(S, D), y);
    free(x), free(ln1_g), free(ln1_b), free(wq), free(wk), free(wv), free(wo), free(bo);
    free(ln2_g), free(ln2_b), free(w1), free(b1), free(w2), free(b2);
    free(xn), free(q), free(k), free(v), free(ctx), free(p), free(r), free(hid);
}

static const struct {
    const char *name;
    void (*run)(Check *c);
} samples[] = {
    { "matmul_gelu", matmul_gelu }, { "batch_matmul", batch_matmul },
    { "conv2d", conv2d },           { "softmax", softmax },
    { "layernorm", layernorm },     { "transpose_add", transpose_add },
    { "maxpool", maxpool },         { "transformer_block", transformer_block },
};

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "gen") != 0 && strcmp(argv[1], "verify") != 0)) {
        fputs("usage: check_samples gen|verify SAMPLE DIR [NAME=VALUE...]\n", stderr);
        return 2;
    }
    Check c = { .verify = strcmp(argv[1], "verify") == 0, .dir = argv[3] };
    for (int i = 4; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        char *end;
        if (!eq || eq == argv[i] || c.ndims == MAX_DIMS)
            fatal("bad dim '%s': expected NAME=VALUE", argv[i]);
        *eq = '\0';
        c.names[c.ndims] = argv[i];
        c.values[c.ndims] = strtoll(eq + 1, &end, 10);
        if (*end || end == eq + 1 || c.values[c.ndims] <= 0)
            fatal("bad value in '%s'", argv[i]);
        c.ndims++;
    }
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        if (strcmp(samples[i].name, argv[2]) == 0) {
            samples[i].run(&c);
            return c.failures ? 1 : 0;
        }
    }
    fatal("unknown sample '%s'", argv[2]);
}

/* onnx_weights.c — a user's program of an imported model, as doc/onnx.md
 * shows one: it loads the weights texc wrote with one call and runs the
 * model on its real input.  tests/onnx.sh compiles it against the
 * NAME.h/NAME.c texc wrote for a model of one f32 input and one f32
 * output (mlp, encoder17), with the sanitizers:
 *
 *     cc -DMODEL=NAME -include NAME.h onnx_weights.c NAME.c
 *     onnx_weights run NAME.weights X.npy WANT.npy GOT.npy
 *         runs the model on X, writes GOT.npy (WANT.npy's header, the
 *         output's data) for npycmp to compare with WANT.npy
 *     onnx_weights hostile NAME.weights DIR
 *         the loader on damaged and crafted copies of NAME.weights
 *         (written in DIR): each refused with its message, none crashing;
 *         TAP lines
 *
 * Built with -DRTDIM_AXIS=A -DRTDIM_LO=L -DRTDIM_HI=H, for a model with a
 * run-time dim (-D NAME=L..H) that X has at axis A: NAME_run takes the
 * size from X's shape, and refuses L - 1 and H + 1 writing nothing
 * (-DRTDIM_AXIS2=B: a second run-time dim, X's dim B, its size taken
 * from X too).
 * Built with -DEMBEDDED (texc --embed-weights) it takes no weights file:
 * "onnx_weights run X.npy WANT.npy GOT.npy".
 *
 * Built with -DCUDA, against the header of texc --target cuda (and
 * libtexrt, or tests/cudaemu in its place): NAME_load_weights copies the
 * weights to device 0; "run" loads the cubin (NAME_load), copies X to the
 * device and runs NAME_run_weights there; "hostile" also checks that a
 * device the runtime refuses is a message, not a crash.
 *
 * The crafted files are made here with the format's own checksum (FNV-1a
 * 64, written again below, not the loader's), so each reaches the check
 * it means to hit: a shape, a dtype, a name, an offset.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define API(f) CAT(MODEL, f) /* API(_run): NAME_run */

typedef API(_weights) Weights;

#ifdef CUDA
#if defined RTDIM_AXIS || defined EMBEDDED
#error "onnx_weights: -DCUDA takes neither run-time dims nor embedded weights"
#endif
#define LOAD_WEIGHTS(path, err, errlen) API(_load_weights)(path, 0, err, errlen)
#else
#define LOAD_WEIGHTS(path, err, errlen) API(_load_weights)(path, err, errlen)
#endif

/* The whole of PATH, malloc'd, its size in *N; exits 2 if unreadable. */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    unsigned char *p = NULL;
    long end = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
        end = ftell(f);
    if (end >= 0 && fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)end + 1)) &&
        fread(p, 1, (size_t)end, f) == (size_t)end) {
        fclose(f);
        *n = (size_t)end;
        return p;
    }
    fprintf(stderr, "onnx_weights: cannot read %s\n", path);
    exit(2);
}

static void spill(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "onnx_weights: cannot write %s\n", path);
        exit(2);
    }
}

/* The data of a .npy file of format 1.0: where it starts. */
static size_t npy_data(const unsigned char *p, size_t n, const char *path)
{
    if (n < 10 || memcmp(p, "\x93NUMPY\x01", 7) != 0 || 10u + (p[8] | p[9] << 8) > n) {
        fprintf(stderr, "onnx_weights: %s: not a .npy file of version 1.0\n", path);
        exit(2);
    }
    return 10u + (p[8] | p[9] << 8);
}

static int run(const char *weights, const char *x_path, const char *want_path,
               const char *got_path)
{
    char err[512];
#ifdef EMBEDDED
    (void)weights;
    (void)err;
    Weights *w = API(_embedded_weights)();
#else
    Weights *w = LOAD_WEIGHTS(weights, err, sizeof err);
    if (!w) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
#endif
    size_t xn, wn;
    unsigned char *x = slurp(x_path, &xn), *want = slurp(want_path, &wn);
    size_t xd = npy_data(x, xn, x_path), wd = npy_data(want, wn, want_path);
    /* the input's data, aligned; the output as the file's header then data */
    float *in = aligned_alloc(64, (xn - xd + 63) / 64 * 64 + 64);
    unsigned char *got = malloc(wn);
    if (!w || !in || !got)
        return 2;
    memcpy(in, x + xd, xn - xd);
    memcpy(got, want, wd);
    float *out = aligned_alloc(64, (wn - wd + 63) / 64 * 64 + 64);
    if (!out)
        return 2;
    for (size_t i = 0; i < (wn - wd) / 4; i++)
        out[i] = -12345.0f; /* an element the model forgets does not pass */
#ifdef RTDIM_AXIS
    /* a run-time dim: its size is X's dim RTDIM_AXIS; the sizes just
       outside the range return the ERANGE code and write nothing */
    const char *shape = strstr((const char *)x + 10, "'shape': ("); /* (the header: text) */
    if (!shape)
        return 2;
    int64_t dim[16] = { 0 };
    char *end = (char *)shape + 10;
    for (int d = 0; d < 16 && *end != ')'; d++) {
        dim[d] = strtoll(end, &end, 10);
        end += *end == ',' ? 1 : 0;
        end += *end == ' ' ? 1 : 0;
    }
    int64_t size = dim[RTDIM_AXIS];
#ifdef RTDIM_AXIS2 /* a second run-time dim, always in its range here */
#define SIZES(s) (s), dim[RTDIM_AXIS2]
#define CHECK_SIZES(s) API(_check_sizes)((s), dim[RTDIM_AXIS2])
#else
#define SIZES(s) (s)
#define CHECK_SIZES(s) API(_check_sizes)(s)
#endif
    int64_t outside[2] = { RTDIM_LO - 1, RTDIM_HI + 1 };
    for (int k = 0; k < 2; k++) {
        int rc = API(_run)(w, SIZES(outside[k]), in, out);
        if (rc == 0 || rc != CHECK_SIZES(outside[k]) || out[0] != -12345.0f) {
            fprintf(stderr, "onnx_weights: size %lld: returned %d, wrote %g\n",
                    (long long)outside[k], rc, out[0]);
            return 1;
        }
    }
    if (API(_run)(w, SIZES(size), in, out) != 0) {
        fprintf(stderr, "onnx_weights: size %lld refused\n", (long long)size);
        return 1;
    }
#elif defined CUDA
    /* the input and the (poisoned) output on the device, the weights
       where NAME_load_weights put them */
    texrt_module *m;
    uint64_t dx = 0, dy = 0;
    if (API(_load)(&m, NULL, 0) != TEXRT_OK || texrt_dev_alloc(&dx, xn - xd) != TEXRT_OK ||
        texrt_dev_alloc(&dy, wn - wd) != TEXRT_OK || texrt_memcpy_htod(dx, in, xn - xd) != TEXRT_OK ||
        texrt_memcpy_htod(dy, out, wn - wd) != TEXRT_OK || API(_run_weights)(m, w, dx, dy) != TEXRT_OK ||
        texrt_memcpy_dtoh(out, dy, wn - wd) != TEXRT_OK) {
        fprintf(stderr, "onnx_weights: %s\n", texrt_last_error());
        return 1;
    }
    texrt_dev_free(dx);
    texrt_dev_free(dy);
    texrt_module_unload(m);
#else
    API(_run)(w, in, out);
#endif
    memcpy(got + wd, out, wn - wd);
    spill(got_path, got, wn);
    API(_free_weights)(w);
    API(_free_weights)(NULL);
    free(x);
    free(want);
    free(in);
    free(out);
    free(got);
    return 0;
}

#ifndef EMBEDDED
static int tests, failed;

static void check(int cond, const char *what, const char *detail)
{
    tests++;
    failed += !cond;
    printf("%s %d - %s\n", cond ? "ok" : "not ok", tests, what);
    if (!cond && detail)
        printf("# %s\n", detail);
}

static uint64_t get(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void put(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* The format's checksum, into bytes 32..39: FNV-1a 64 of the rest. */
static void seal(unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        if (i >= 32 && i < 40)
            continue;
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    put(p + 32, h, 8);
}

static char dir_path[4096];

/* Loads P[0..N) written as DIR/h.weights: refused with WANT in the
 * message?  (NULL WANT: refused with any message.) */
static int refused(const unsigned char *p, size_t n, const char *want, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/h.weights", dir_path);
    spill(path, p, n);
    err[0] = '\0';
    Weights *w = LOAD_WEIGHTS(path, err, errlen);
    if (w) {
        API(_free_weights)(w);
        snprintf(err, errlen, "loaded");
        return 0;
    }
    return strncmp(err, path, strlen(path)) == 0 && strlen(err) > strlen(path) + 2 &&
           (!want || strstr(err, want));
}

/* A copy of the file changed by EDIT then sealed, refused with WANT. */
static void crafted(const unsigned char *file, size_t n, const char *what, const char *want,
                    void (*edit)(unsigned char *))
{
    unsigned char *p = malloc(n);
    char err[512];
    memcpy(p, file, n);
    edit(p);
    seal(p, n);
    int ok = refused(p, n, want, err, sizeof err);
    char line[800];
    snprintf(line, sizeof line, "%s: %s", what, err);
    check(ok, line, want);
    free(p);
}

static void first_dim(unsigned char *p) { put(p + 64 + 16, get(p + 64 + 16, 8) + 1, 8); }
static void first_rank(unsigned char *p) { put(p + 64 + 12, get(p + 64 + 12, 4) + 1, 4); }
static void first_dtype(unsigned char *p) { put(p + 64 + 8, 10, 4); }
static void first_name(unsigned char *p) { p[get(p + 64, 4)] ^= 0x20; }
static void first_offset_out(unsigned char *p) { put(p + 64 + 144, (get(p + 24, 8) + 63) / 64 * 64, 8); }
static void first_offset_odd(unsigned char *p) { put(p + 64 + 144, get(p + 64 + 144, 8) + 4, 8); }
static void first_size(unsigned char *p) { put(p + 64 + 152, get(p + 64 + 152, 8) - 4, 8); }
static void count_less(unsigned char *p) { put(p + 12, get(p + 12, 4) - 1, 4); }
static void version_two(unsigned char *p) { put(p + 8, 2, 4); }
static void reserved(unsigned char *p) { p[50] = 1; }
static void data_offset(unsigned char *p) { put(p + 16, get(p + 24, 8) + 64, 8); }
static void name_outside(unsigned char *p) { put(p + 64, get(p + 16, 8), 4); }
/* the second entry names the first weight too */
static void twice(unsigned char *p)
{
    memcpy(p + 64 + 160, p + 64, 8);
    memcpy(p + 64 + 160 + 8, p + 64 + 8, 160 - 8);
}

static int hostile(const char *weights, const char *dir)
{
    snprintf(dir_path, sizeof dir_path, "%s", dir);
    size_t n;
    unsigned char *file = slurp(weights, &n);
    char err[512], line[1024];
    int ok;
    /* the file as texc wrote it loads, and names its weights */
    Weights *w = LOAD_WEIGHTS(weights, err, sizeof err);
    const char *first = (const char *)file + get(file + 64, 4);
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)get(file + 68, 4), first);
    check(w && API(_weight)(w, name) && !API(_weight)(w, "no such weight"),
          "the file texc wrote loads; NAME_weight finds its first weight by name", err);
    API(_free_weights)(w);
    check(!LOAD_WEIGHTS("/nonexistent/x.weights", err, sizeof err) &&
              strcmp(err, "/nonexistent/x.weights: cannot open it: No such file or directory") == 0,
          "a missing file", err);
    /* a short ERR is cut, not overrun; a NULL one is allowed */
    char tiny[8];
    check(!LOAD_WEIGHTS("/nonexistent/x.weights", tiny, sizeof tiny) &&
              strlen(tiny) == sizeof tiny - 1 && !LOAD_WEIGHTS("/nonexistent", NULL, 0),
          "a short or NULL ERR", NULL);
#ifdef CUDA
    /* a device the runtime refuses: the file is right, the copy is not */
    snprintf(line, sizeof line, "%s: cannot copy its weights to device 7: ", weights);
    check(!API(_load_weights)(weights, 7, err, sizeof err) && strncmp(err, line, strlen(line)) == 0 &&
              strlen(err) > strlen(line),
          "a device that does not exist: refused, saying which", err);
#endif

    /* every prefix up to 1 KiB, and 200 more, each truncated */
    int cut = 0, cuts = 0;
    char bad[1024] = "";
    size_t step = n > 1024 ? (n - 1024) / 200 + 1 : 1;
    for (size_t k = 0; k < n; k += k < 1024 ? 1 : step) {
        cuts++;
        if (refused(file, k, "truncated", err, sizeof err))
            cut++;
        else if (!bad[0])
            snprintf(bad, sizeof bad, "prefix of %zu bytes: %s", k, err);
    }
    snprintf(line, sizeof line, "%d of %d prefixes refused as truncated", cut, cuts);
    check(cut == cuts, line, bad);
    /* one byte more */
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, file, n);
    longer[n] = 0;
    check(refused(longer, n + 1, "longer than it should be", err, sizeof err), "a byte appended",
          err);
    free(longer);

    /* a bit flipped in the last weight's data: the checksum */
    unsigned char *p = malloc(n);
    memcpy(p, file, n);
    p[n - 1] ^= 0x10;
    ok = refused(p, n, "checksum mismatch", err, sizeof err) && strstr(err, "the file is damaged");
    snprintf(line, sizeof line, "a bit flipped in the data: %s", err);
    check(ok, line, NULL);
    /* every bit of the fixed header, a bit of each byte of the entries,
       and 500 more bits, one at a time: each refused (FNV-1a sees any one
       byte changed) */
    size_t table = 64 + 160 * get(file + 12, 4);
    int flips = 0;
    ok = 0;
    for (size_t bit = 0; bit < 8 * n;
         bit += bit < 8 * 64 ? 1 : bit < 8 * table ? 9 : 8 * n / 500 + 1) {
        memcpy(p, file, n);
        p[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        flips++;
        ok += refused(p, n, NULL, err, sizeof err);
    }
    snprintf(line, sizeof line, "%d of %d single bit flips refused", ok, flips);
    check(ok == flips, line, NULL);
    memcpy(p, file, n);
    p[1] = 'Q';
    check(refused(p, n, "not a texc weights file (wrong magic)", err, sizeof err),
          "a wrong magic", err);
    free(p);

    /* crafted, with the checksum made right */
    crafted(file, n, "version 2", "weights file version 2; this program reads version 1",
            version_two);
    crafted(file, n, "a reserved byte set", "reserved bytes are not zero", reserved);
    crafted(file, n, "a weight fewer", "weights, the program takes", count_less);
    crafted(file, n, "the data offset past the end", "data offset", data_offset);
    crafted(file, n, "a name outside the header", "its name lies outside the header", name_outside);
    crafted(file, n, "the first weight's dim 0 one more", "has shape [", first_dim);
    crafted(file, n, "the first weight's rank one more", "has shape [", first_rank);
    crafted(file, n, "the first weight as f16", "is f16 (dtype 10), the program takes f32",
            first_dtype);
    crafted(file, n, "the first weight's name changed", "the program takes no weight called",
            first_name);
    crafted(file, n, "the first weight's size 4 bytes less", "its shape makes", first_size);
    crafted(file, n, "the first weight past the end", "lies outside the file's data",
            first_offset_out);
    crafted(file, n, "the first weight misaligned", "is not at a multiple of 64 bytes", first_offset_odd);
    if (get(file + 12, 4) >= 2)
        crafted(file, n, "a weight named twice", "appears twice", twice);
    free(file);
    printf("1..%d\n", tests);
    return failed != 0;
}
#endif

int main(int argc, char **argv)
{
#ifdef EMBEDDED
    if (argc == 5 && strcmp(argv[1], "run") == 0)
        return run(NULL, argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: onnx_weights run X.npy WANT.npy GOT.npy\n");
#else
    if (argc == 6 && strcmp(argv[1], "run") == 0)
        return run(argv[2], argv[3], argv[4], argv[5]);
    if (argc == 4 && strcmp(argv[1], "hostile") == 0)
        return hostile(argv[2], argv[3]);
    fprintf(stderr, "usage: onnx_weights run NAME.weights X.npy WANT.npy GOT.npy\n"
                    "       onnx_weights hostile NAME.weights DIR\n");
#endif
    return 2;
}

/* harness.c — runs a texc CUDA program on .npy files: on the GPU through
 * libtexrt, or on the host through tests/cudaemu (same source, other
 * library).
 *
 *   texc k.te --target cuda -o dir/k
 *   cc -I dir -I runtime -DTEXC_HEADER='"k.h"' -DTEXC_NAME=k -DTEXC_MACRO=K \
 *      tests/gpu/harness.c -ltexrt
 *   ./a.out [-c dir/k.cubin] [-r REPEATS] [DIM=SIZE...] IN.npy... OUT.npy...
 *
 * With -DTEXC_DYNAMIC (a header with run-time dims, NAME_NDIMS), the
 * sizes come first, one DIM=SIZE for each run-time dim in the order the
 * program declares them: the tensors have their shapes at those sizes
 * (NAME_tensor_shape_dims) and the kernels are launched with them
 * (NAME_launch_dims).  Sizes outside their ranges are reported with the
 * header's NAME_strerror and exit status 3, nothing launched.
 *
 * The .npy files are those texc --eval --save-inputs writes (inputs in
 * the order of the program's declarations, then the outputs).  It reads
 * every input, checking its dtype and shape; fills every output and the
 * workspace with NaN (0x7f bytes for integers), so that an element the
 * kernels forget or read before writing cannot pass; launches the kernels
 * through the generated header's NAME_launch; writes the outputs.  With
 * -r it then times REPEATS more runs and prints the median in seconds.
 * Without a GPU it says so and exits 77 (TEXRT_EXIT_SKIP).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "texrt.h"

#include TEXC_HEADER

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define PROGRAM(suffix) CAT(TEXC_NAME, suffix) /* the header's functions and tables */
#define MACRO(suffix) CAT(TEXC_MACRO, suffix)    /* its macros */

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "harness: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "%s%s\n", *texrt_last_error() ? ": " : "", texrt_last_error());
    exit(2);
}

/* The .npy descr texc writes for a dtype (bf16 travels as f32). */
static const char *npy_descr(const char *dtype)
{
    return !strcmp(dtype, "f32") || !strcmp(dtype, "bf16") ? "<f4"
           : !strcmp(dtype, "f64") ? "<f8"
           : !strcmp(dtype, "f16") ? "<f2"
           : !strcmp(dtype, "i32") ? "<i4"
           : !strcmp(dtype, "u8") ? "|u1"
           : !strcmp(dtype, "i8") ? "|i1" : "|b1";
}

static size_t npy_elem(const char *dtype)
{
    return !strcmp(dtype, "bool") || !strcmp(dtype, "u8") || !strcmp(dtype, "i8") ? 1
           : !strcmp(dtype, "f16") ? 2
           : !strcmp(dtype, "f64") ? 8 : 4;
}

static uint64_t elems(const texc_cuda_tensor *t)
{
    uint64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= (uint64_t)t->shape[d];
    return n;
}

/* The "(2, 3)" of a shape, as NumPy writes it. */
static void shape_text(const texc_cuda_tensor *t, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int d = 0; d < t->rank && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%lld%s", (long long)t->shape[d],
                              t->rank == 1 ? "," : d + 1 < t->rank ? ", " : "");
    snprintf(buf + k, n > k ? n - k : 0, ")");
}

static unsigned short f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (unsigned short)((u >> 16) | 0x40);
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Reads PATH into T's device layout (malloc'ed, t->bytes). */
static void *read_npy(const char *path, const texc_cuda_tensor *t)
{
    FILE *f = fopen(path, "rb");
    unsigned char head[10];
    if (!f || fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0)
        die("%s: not a .npy file", path);
    size_t hlen = head[8] | (size_t)head[9] << 8;
    if (head[6] != 1) {
        unsigned char more[2];
        if (fread(more, 1, 2, f) != 2)
            die("%s: truncated", path);
        hlen |= (size_t)more[0] << 16 | (size_t)more[1] << 24;
    }
    char *dict = calloc(1, hlen + 1);
    if (!dict || fread(dict, 1, hlen, f) != hlen)
        die("%s: truncated header", path);
    char want[64], shape[256];
    snprintf(want, sizeof want, "'descr': '%s'", npy_descr(t->dtype));
    shape_text(t, shape, sizeof shape);
    if (!strstr(dict, want) || !strstr(dict, shape)) {
        fprintf(stderr, "harness: %s: expected %s %s for '%s', got %s\n", path, npy_descr(t->dtype),
                shape, t->name, dict);
        exit(2);
    }
    free(dict);
    uint64_t n = elems(t);
    size_t file_bytes = (size_t)n * npy_elem(t->dtype);
    unsigned char *data = malloc(file_bytes + 1);
    if (!data || fread(data, 1, file_bytes, f) != file_bytes)
        die("%s: short file", path);
    fclose(f);
    if (!strcmp(t->dtype, "bf16")) {
        unsigned short *bf = malloc((size_t)n * 2 + 1);
        for (uint64_t i = 0; i < n; i++) {
            float v;
            memcpy(&v, data + 4 * i, 4);
            bf[i] = f32_to_bf16(v);
        }
        free(data);
        return bf;
    }
    return data;
}

static void write_npy(const char *path, const texc_cuda_tensor *t, const void *data)
{
    uint64_t n = elems(t);
    const void *out = data;
    float *wide = NULL;
    if (!strcmp(t->dtype, "bf16")) {
        wide = malloc((size_t)n * 4 + 1);
        for (uint64_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)((const unsigned short *)data)[i] << 16;
            memcpy(&wide[i], &u, 4);
        }
        out = wide;
    }
    char shape[256], header[512];
    shape_text(t, shape, sizeof shape);
    int len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                       npy_descr(t->dtype), shape);
    int total = (10 + len + 1 + 63) / 64 * 64;
    while (10 + len + 1 < total)
        header[len++] = ' ';
    header[len++] = '\n';
    unsigned char head[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 0xff),
                               (unsigned char)(len >> 8) };
    size_t bytes = (size_t)n * npy_elem(t->dtype);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(head, 1, 10, f) != 10 || fwrite(header, 1, (size_t)len, f) != (size_t)len ||
        fwrite(out, 1, bytes, f) != bytes || fclose(f) != 0)
        die("cannot write %s", path);
    free(wide);
}

/* NaN in T's dtype, repeated over BYTES (0x7f bytes for integers). */
static void *poison(const texc_cuda_tensor *t)
{
    size_t bytes = (size_t)t->bytes;
    unsigned char *p = malloc(bytes + 8);
    if (!p)
        die("out of memory for '%s'", t->name);
    memset(p, 0x7f, bytes);
    if (!strcmp(t->dtype, "f32")) {
        for (size_t i = 0; i + 4 <= bytes; i += 4)
            memcpy(p + i, "\x00\x00\xc0\x7f", 4);
    } else if (!strcmp(t->dtype, "f64")) {
        for (size_t i = 0; i + 8 <= bytes; i += 8)
            memcpy(p + i, "\x00\x00\x00\x00\x00\x00\xf8\x7f", 8);
    } else if (!strcmp(t->dtype, "f16")) {
        for (size_t i = 0; i + 2 <= bytes; i += 2)
            memcpy(p + i, "\x00\x7e", 2);
    } else if (!strcmp(t->dtype, "bf16")) {
        for (size_t i = 0; i + 2 <= bytes; i += 2)
            memcpy(p + i, "\xc0\x7f", 2);
    }
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int ntensors = (int)(sizeof PROGRAM(_tensors) / sizeof PROGRAM(_tensors)[0]);
    texc_cuda_tensor *tensors = calloc((size_t)ntensors, sizeof *tensors);
    if (!tensors)
        die("%s", "out of memory");
    memcpy(tensors, PROGRAM(_tensors), sizeof PROGRAM(_tensors));
    const char *cubin = NULL;
    int repeats = 0, first = 1;
    while (first < argc && argv[first][0] == '-' && first + 1 < argc) {
        if (!strcmp(argv[first], "-c"))
            cubin = argv[first + 1];
        else if (!strcmp(argv[first], "-r"))
            repeats = atoi(argv[first + 1]);
        else
            break;
        first += 2;
    }
#ifdef TEXC_DYNAMIC
    /* the run-time sizes, then the tensors' shapes at them */
    int64_t dims[MACRO(_NDIMS)];
    for (int k = 0; k < MACRO(_NDIMS); k++, first++) {
        const char *name = PROGRAM(_dim_names)[k];
        size_t len = strlen(name);
        char *end;
        if (first >= argc || strncmp(argv[first], name, len) != 0 || argv[first][len] != '=') {
            fprintf(stderr, "harness: expected %s=SIZE (argument %d)\n", name, first);
            return 2;
        }
        dims[k] = strtoll(argv[first] + len + 1, &end, 10);
        if (*end || end == argv[first] + len + 1) {
            fprintf(stderr, "harness: %s: not a size\n", argv[first]);
            return 2;
        }
    }
    for (int i = 0; i < ntensors; i++) {
        tensors[i].bytes = PROGRAM(_tensor_shape_dims)(dims, i, tensors[i].shape);
        if (tensors[i].bytes == 0) { /* (a size outside its range) */
            fprintf(stderr, "harness: %s\n", PROGRAM(_strerror)(MACRO(_ERANGE)));
            return 3;
        }
    }
#define LAUNCH(module, workspace, dev) PROGRAM(_launch_dims)(module, dims, workspace, dev)
#else
#define LAUNCH(module, workspace, dev) PROGRAM(_launch)(module, workspace, dev)
#endif
    if (argc - first != ntensors) {
        fprintf(stderr, "usage: %s [-c CUBIN] [-r REPEATS]", argv[0]);
        for (int i = 0; i < ntensors; i++)
            fprintf(stderr, " %s.npy", tensors[i].name);
        fputc('\n', stderr);
        return 2;
    }
    int rc = texrt_cuda_init(0);
    if (rc == TEXRT_E_NODRIVER || rc == TEXRT_E_NODEVICE) {
        printf("skip: no CUDA device: %s\n", texrt_last_error());
        return TEXRT_EXIT_SKIP;
    }
    if (rc != TEXRT_OK)
        die("%s", "cannot initialise the GPU");
    texrt_module *module;
    if (PROGRAM(_load)(&module, cubin, 0) != TEXRT_OK)
        die("cannot load %s", cubin ? cubin : "the cubin");

    uint64_t *dev = calloc((size_t)ntensors + 1, sizeof *dev);
    void **host = calloc((size_t)ntensors + 1, sizeof *host);
    for (int i = 0; i < ntensors; i++) {
        const texc_cuda_tensor *t = &tensors[i];
        host[i] = t->is_output ? poison(t) : read_npy(argv[first + i], t);
        if (texrt_dev_alloc(&dev[i], (size_t)t->bytes) != TEXRT_OK ||
            texrt_memcpy_htod(dev[i], host[i], (size_t)t->bytes) != TEXRT_OK)
            die("cannot copy '%s' to the GPU", t->name);
    }
    uint64_t workspace = 0;
    uint64_t ws_bytes = MACRO(_WORKSPACE_BYTES);
    if (ws_bytes > 0) {
        unsigned char *junk = malloc((size_t)ws_bytes);
        if (!junk)
            die("%s", "out of memory for the workspace");
        memset(junk, 0xff, (size_t)ws_bytes); /* NaN in every float type */
        if (texrt_dev_alloc(&workspace, (size_t)ws_bytes) != TEXRT_OK ||
            texrt_memcpy_htod(workspace, junk, (size_t)ws_bytes) != TEXRT_OK)
            die("%s", "cannot set up the workspace");
        free(junk);
    }
    if (LAUNCH(module, workspace, dev) != TEXRT_OK || texrt_synchronize() != TEXRT_OK)
        die("%s", "the kernels failed");
    for (int i = 0; i < ntensors; i++) {
        const texc_cuda_tensor *t = &tensors[i];
        if (!t->is_output)
            continue;
        if (texrt_memcpy_dtoh(host[i], dev[i], (size_t)t->bytes) != TEXRT_OK)
            die("cannot copy '%s' back", t->name);
        write_npy(argv[first + i], t, host[i]);
    }
    if (repeats > 0) {
        double *times = malloc(sizeof *times * (size_t)repeats);
        for (int r = 0; r < repeats; r++) {
            double start = texrt_now();
            if (LAUNCH(module, workspace, dev) != TEXRT_OK || texrt_synchronize() != TEXRT_OK)
                die("%s", "the kernels failed");
            times[r] = texrt_now() - start;
        }
        qsort(times, (size_t)repeats, sizeof *times, cmp_double);
        printf("%.9f\n", times[repeats / 2]);
        free(times);
    }
    for (int i = 0; i < ntensors; i++) {
        texrt_dev_free(dev[i]);
        free(host[i]);
    }
    if (workspace)
        texrt_dev_free(workspace);
    texrt_module_unload(module);
    free(dev);
    free(host);
    free(tensors);
    return 0;
}

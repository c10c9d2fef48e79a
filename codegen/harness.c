/* harness.c — a main() that runs a generated CPU kernel on .npy files.
 *
 * The tests, the tuner and the benchmarks compile NAME.c with this
 * harness:  NAME_harness IN.npy... OUT.npy... [-r REPEATS [-c COPIES]]
 * It reads every input (the exact dtype and shape texc wrote with
 * --eval --save-inputs), fills every output with NaN (or 0x7f bytes for
 * integer types) so that an element the kernel forgets cannot pass, runs
 * the kernel and writes the outputs.
 *
 * With -r it times REPEATS runs after one warm-up and prints the median
 * in seconds and the number of copies it rotated through:  "MEDIAN COPIES".
 * Repeated calls on one set of buffers would find a small kernel's
 * inputs in cache every time after the first, and time it faster than any
 * real use (where the inputs arrive from elsewhere) runs it.  So the
 * harness keeps COPIES copies of the inputs and outputs (each output copy
 * poisoned) and run r uses copy r mod COPIES.  Unless -c says, COPIES is
 * the fewest whose total exceeds the last-level cache by a copy (the
 * largest cache of the highest level Linux lists for cpu0, else
 * sysconf's level-3 size, else 32 MiB), bounded by REPEATS + 1 (more
 * would never be used), by 1024 copies and by 256 MiB in all: a kernel
 * whose buffers are under 256 KiB, or a cache over 256 MiB, is rotated
 * through less than the cache.  The outputs written are those of the
 * last timed run.
 *
 * With -p (before -r), every run calls NAME, the plain entry point, on
 * the weights as given instead (it packs them at every call, or reads
 * them where they are: CodegenOptions.plain).
 *
 * Weights the kernel reads prepacked (sched/layout.c) are packed once per
 * copy, before the warm-up, with NAME_prepack_args; every run calls
 * NAME_packed_args.  So the time is the kernel's on packed weights, as a
 * program with fixed weights runs it, and the harness is the same text
 * whichever layout a schedule chose (the tuner compiles it once).
 */
#include <string.h>

#include "codegen/codegen.h"

static const char harness_body[] =
    "/* Reads the data of PATH: ELEMS elements of SIZE bytes, the file's descr\n"
    "   WANT.  A bf16 buffer (BF16) comes as '<f4' holding bf16 values (texc\n"
    "   --eval writes bf16 so, NumPy having no bf16) or as raw '<u2'. */\n"
    "static void *read_npy(const char *path, const char *want, int rank, const long long *dims,\n"
    "                      size_t size, int bf16)\n"
    "{\n"
    "    FILE *f = fopen(path, \"rb\");\n"
    "    unsigned char head[10];\n"
    "    if (!f || fread(head, 1, 10, f) != 10 || memcmp(head, \"\\x93NUMPY\", 6) != 0) {\n"
    "        fprintf(stderr, \"harness: %s: not a .npy file\\n\", path);\n"
    "        exit(2);\n"
    "    }\n"
    "    size_t hlen = head[8] | (size_t)head[9] << 8;\n"
    "    if (head[6] != 1) {\n"
    "        unsigned char more[2];\n"
    "        if (fread(more, 1, 2, f) != 2)\n"
    "            exit(2);\n"
    "        hlen |= (size_t)more[0] << 16 | (size_t)more[1] << 24;\n"
    "    }\n"
    "    char *text = malloc(hlen + 1);\n"
    "    if (!text || fread(text, 1, hlen, f) != hlen) {\n"
    "        fprintf(stderr, \"harness: %s: short header\\n\", path);\n"
    "        exit(2);\n"
    "    }\n"
    "    text[hlen] = 0;\n"
    "    const char *d = strstr(text, \"'descr': '\");\n"
    "    char descr[8] = \"?\";\n"
    "    if (d)\n"
    "        sscanf(d + 10, \"%7[^']\", descr);\n"
    "    /* the shape: a tuple of RANK sizes equal to DIMS */\n"
    "    const char *sh = strstr(text, \"'shape': (\");\n"
    "    int same = sh != NULL;\n"
    "    size_t elems = 1;\n"
    "    char *p = sh ? (char *)sh + 10 : NULL;\n"
    "    for (int k = 0; same && k < rank; k++) {\n"
    "        char *end;\n"
    "        long long v = strtoll(p, &end, 10);\n"
    "        same = end != p && v == dims[k];\n"
    "        p = end + strspn(end, \", \");\n"
    "        elems *= (size_t)dims[k];\n"
    "    }\n"
    "    same = same && *p == ')';\n"
    "    free(text);\n"
    "    if (!same) {\n"
    "        fprintf(stderr, \"harness: %s: not of the shape the kernel takes (\", path);\n"
    "        for (int k = 0; k < rank; k++)\n"
    "            fprintf(stderr, \"%s%lld\", k ? \", \" : \"\", dims[k]);\n"
    "        fputs(\")\\n\", stderr);\n"
    "        exit(2);\n"
    "    }\n"
    "    int wide = bf16 && strcmp(descr, \"<f4\") == 0;\n"
    "    if (!wide && strcmp(descr, want) != 0) {\n"
    "        fprintf(stderr, \"harness: %s: holds '%s' values, expected '%s'%s\\n\", path, descr, want,\n"
    "                bf16 ? \" or '<f4'\" : \"\");\n"
    "        exit(2);\n"
    "    }\n"
    "    size_t bytes = elems * (wide ? 4 : size);\n"
    "    void *data = aligned_alloc(64, (bytes + 63) / 64 * 64);\n"
    "    if (!data || fread(data, 1, bytes, f) != bytes) {\n"
    "        fprintf(stderr, \"harness: %s: short file\\n\", path);\n"
    "        exit(2);\n"
    "    }\n"
    "    fclose(f);\n"
    "    if (wide) { /* to bf16, rounding to nearest even; NaN stays NaN */\n"
    "        uint16_t *out = data;\n"
    "        for (size_t i = 0; i < elems; i++) {\n"
    "            uint32_t u;\n"
    "            memcpy(&u, (char *)data + 4 * i, 4);\n"
    "            out[i] = (u & 0x7fffffffu) > 0x7f800000u\n"
    "                         ? (uint16_t)((u >> 16) | 0x40)\n"
    "                         : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "        }\n"
    "    }\n"
    "    return data;\n"
    "}\n"
    "\n"
    "static void write_npy(const char *path, const void *data, size_t bytes, const char *descr,\n"
    "                      const char *shape)\n"
    "{\n"
    "    char header[256];\n"
    "    int n = snprintf(header, sizeof header,\n"
    "                     \"{'descr': '%s', 'fortran_order': False, 'shape': %s, }\", descr, shape);\n"
    "    int total = (10 + n + 1 + 63) / 64 * 64;\n"
    "    while (10 + n + 1 < total)\n"
    "        header[n++] = ' ';\n"
    "    header[n++] = '\\n';\n"
    "    unsigned char head[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,\n"
    "                               (unsigned char)(n & 0xff), (unsigned char)(n >> 8) };\n"
    "    FILE *f = fopen(path, \"wb\");\n"
    "    if (!f || fwrite(head, 1, 10, f) != 10 || fwrite(header, 1, (size_t)n, f) != (size_t)n ||\n"
    "        fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) {\n"
    "        fprintf(stderr, \"harness: cannot write %s\\n\", path);\n"
    "        exit(2);\n"
    "    }\n"
    "}\n"
    "\n"
    "static double now(void)\n"
    "{\n"
    "    struct timespec ts;\n"
    "    clock_gettime(CLOCK_MONOTONIC, &ts);\n"
    "    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;\n"
    "}\n"
    "\n"
    "static int cmp_double(const void *a, const void *b)\n"
    "{\n"
    "    double x = *(const double *)a, y = *(const double *)b;\n"
    "    return x < y ? -1 : x > y;\n"
    "}\n"
    "\n"
    "/* The last-level cache in bytes: the largest cache of the highest level\n"
    "   Linux lists for cpu0, else sysconf's level-3 size, else 32 MiB. */\n"
    "static long long cache_bytes(void)\n"
    "{\n"
    "    long long best = 0;\n"
    "    int best_level = 0;\n"
    "    for (int i = 0; i < 16; i++) {\n"
    "        char path[96];\n"
    "        int level = 0;\n"
    "        long long size = 0;\n"
    "        char unit = 0;\n"
    "        snprintf(path, sizeof path, \"/sys/devices/system/cpu/cpu0/cache/index%d/level\", i);\n"
    "        FILE *f = fopen(path, \"r\");\n"
    "        if (!f)\n"
    "            break;\n"
    "        int got = fscanf(f, \"%d\", &level);\n"
    "        fclose(f);\n"
    "        snprintf(path, sizeof path, \"/sys/devices/system/cpu/cpu0/cache/index%d/size\", i);\n"
    "        f = fopen(path, \"r\");\n"
    "        if (!f)\n"
    "            continue;\n"
    "        got += fscanf(f, \"%lld%c\", &size, &unit);\n"
    "        fclose(f);\n"
    "        if (got < 2)\n"
    "            continue;\n"
    "        size *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1;\n"
    "        if (level > best_level || (level == best_level && size > best)) {\n"
    "            best_level = level;\n"
    "            best = size;\n"
    "        }\n"
    "    }\n"
    "#ifdef _SC_LEVEL3_CACHE_SIZE\n"
    "    if (best <= 0)\n"
    "        best = sysconf(_SC_LEVEL3_CACHE_SIZE);\n"
    "#endif\n"
    "    return best > 0 ? best : 32LL << 20;\n"
    "}\n"
    "\n"
    "/* How many copies of the buffers (SET bytes) to rotate through. */\n"
    "static int choose_copies(long long set, int repeats)\n"
    "{\n"
    "    long long n = cache_bytes() / (set > 0 ? set : 1) + 2;\n"
    "    long long most = (256LL << 20) / (set > 0 ? set : 1);\n"
    "    if (n > most)\n"
    "        n = most;\n"
    "    if (n > 1024)\n"
    "        n = 1024;\n"
    "    if (n > repeats + 1LL)\n"
    "        n = repeats + 1LL;\n"
    "    return n < 1 ? 1 : (int)n;\n"
    "}\n";

/* The descr numpy reads T's stored values with (bf16: its bits, "<u2"). */
const char *cg_npy_descr(DType t)
{
    switch (t) {
    case DT_BOOL: return "|b1";
    case DT_I32: return "<i4";
    case DT_U8: return "|u1";
    case DT_I8: return "|i1";
    case DT_F16: return "<f2";
    case DT_BF16: return "<u2";
    case DT_F32: return "<f4";
    case DT_F64: return "<f8";
    default: TE_UNREACHABLE();
    }
}

/* Dimension D of T as C: its number, or its size over te_d[]. */
static const char *dim_c(Arena *a, const Tensor *t, int d, const char *const *rt)
{
    return t->shape_size[d] ? cg_size_c(a, t->shape_size[d], rt)
                            : arena_printf(a, "%lld", (long long)t->shape[d]);
}

/* T's element count as C: a number for a static shape. */
static const char *elems_c(Arena *a, const Tensor *t, const char *const *rt)
{
    bool runtime = false;
    for (int d = 0; d < t->rank; d++)
        runtime = runtime || t->shape_size[d];
    if (!runtime)
        return arena_printf(a, "%lld", (long long)tensor_elems(t));
    const char *s = "(1LL";
    for (int d = 0; d < t->rank; d++)
        s = arena_printf(a, "%s * %s", s, dim_c(a, t, d, rt));
    return arena_printf(a, "%s)", s);
}

static const char *shape_text(Arena *a, const Tensor *t)
{
    const char *s = "(";
    for (int d = 0; d < t->rank; d++)
        s = arena_printf(a, "%s%lld%s", s, (long long)t->shape[d],
                         t->rank == 1 ? "," : d + 1 < t->rank ? ", " : "");
    return arena_printf(a, "%s)", s);
}

bool cg_emit_harness(Arena *a, const Graph *g, const char *name, const char *header,
                     const CgWeights *weights, FILE *out)
{
    fprintf(out, "/* %s_harness.c — generated by texc %s: runs %s on .npy files. */\n",
            name, TE_VERSION, name);
    fputs("#define _POSIX_C_SOURCE 200809L\n", out);
    if (header)
        fprintf(out, "#include \"%s\"\n\n", header);
    else
        fprintf(out, "#include \"%s.h\"\n\n", name);
    fputs("#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
          "#include <time.h>\n#include <unistd.h>\n\n", out);
    fputs(harness_body, out);
    int nin = g->ninputs, nout = g->noutputs, nbuf = nin + nout;
    /* an imported model's weights come from NAME.weights (one argument
       where they were, after the real inputs) or from NAME.c */
    const char **weight_of = arena_alloc(a, sizeof *weight_of * (size_t)(nin + 1));
    for (int i = 0; weights && i < weights->n; i++)
        weight_of[weights->input[i]] = g->inputs[weights->input[i]]->name;
    bool weights_file = weights && !weights->embed;
    /* a program with run-time dims: their values first, NAME=VALUE each */
    int nrt = 0;
    const char **rt = arena_alloc(a, sizeof *rt * (size_t)(g->ndims + 1)); /* te_d[k] */
    for (int d = 0; d < g->ndims; d++)
        if (g->dims[d].runtime && g->dims[d].declared)
            rt[d] = arena_printf(a, "te_d[%d]", nrt++);
    /* -p's call of the plain entry point, NAME, out of main: main's
       locals (b, buf, times, ...) could shadow a kernel of that name */
    fprintf(out, "\n/* NAME on the buffers, for -p */\nstatic %s te_call_plain(%svoid **te_args)\n{\n"
                 "    %s%s(", nrt ? "int" : "void", nrt ? "const int64_t *te_dims, " : "",
            nrt ? "return " : "", name);
    for (int k = 0; k < nrt; k++)
        fprintf(out, "te_dims[%d], ", k);
    for (int i = 0; i < nbuf; i++)
        fprintf(out, "%ste_args[%d]", i ? ", " : "", i);
    fputs(");\n}\n", out);
    fputs("\nint main(int argc, char **argv)\n{\n", out);
    if (nrt) {
        fprintf(out, "    /* the run-time sizes: %d arguments NAME=VALUE, in this order */\n"
                     "    static const char *const te_names[] = {", nrt);
        for (int d = 0; d < g->ndims; d++)
            if (rt[d])
                fprintf(out, " \"%s\",", g->dims[d].name);
        fprintf(out, " };\n    int64_t te_d[%d];\n", nrt);
        fprintf(out, "    for (int i = 0; i < %d; i++) {\n"
                     "        size_t n = strlen(te_names[i]);\n"
                     "        char *end = NULL;\n"
                     "        if (i + 1 < argc && strncmp(argv[i + 1], te_names[i], n) == 0 && argv[i + 1][n] == '=')\n"
                     "            te_d[i] = strtoll(argv[i + 1] + n + 1, &end, 10);\n"
                     "        if (!end || end == argv[i + 1] + n + 1 || *end) {\n"
                     "            fprintf(stderr, \"harness: argument %%d must be %%s=SIZE\\n\", i + 1, te_names[i]);\n"
                     "            return 2;\n"
                     "        }\n"
                     "    }\n"
                     "    int te_status = %s_check_sizes(", nrt, name);
        for (int i = 0; i < nrt; i++)
            fprintf(out, "%ste_d[%d]", i ? ", " : "", i);
        fprintf(out, ");\n"
                     "    if (te_status != 0) {\n"
                     "        fprintf(stderr, \"harness: %%s\\n\", %s_strerror(te_status));\n"
                     "        return 3;\n"
                     "    }\n", name);
    }
    /* the arguments: the buffers' files (buffer i's at ARG[i]; the
       weights' file at WARG), then -r REPEATS [-c COPIES] */
    int *arg = arena_alloc(a, sizeof *arg * (size_t)(nbuf + 1));
    int nargs = 0, warg = 0;
    for (int i = 0; i < nbuf; i++) {
        if (i < nin && weight_of[i])
            continue;
        if (i == nin && weights_file)
            warg = 1 + nrt + nargs++;
        arg[i] = 1 + nrt + nargs++;
    }
    if (nout == 0 && weights_file)
        warg = 1 + nrt + nargs++;
    fprintf(out, "    int repeats = 0, copies = 0, plain = 0;\n"
                 "    int argn = %d;\n"
                 "    if (argc > argn && strcmp(argv[argn], \"-p\") == 0) {\n"
                 "        plain = 1;\n"
                 "        argn++;\n"
                 "    }\n"
                 "    if (argc >= argn + 2 && strcmp(argv[argn], \"-r\") == 0) {\n"
                 "        repeats = atoi(argv[argn + 1]);\n"
                 "        argn += 2;\n"
                 "        if (argc >= argn + 2 && strcmp(argv[argn], \"-c\") == 0) {\n"
                 "            copies = atoi(argv[argn + 1]);\n"
                 "            argn += 2;\n"
                 "        }\n"
                 "    }\n"
                 "    if (argc != argn || repeats < 0 || copies < 0) {\n"
                 "        fprintf(stderr, \"usage: %%s", nargs + 1 + nrt);
    for (int d = 0; d < g->ndims; d++)
        if (rt[d])
            fprintf(out, " %s=SIZE", g->dims[d].name);
    for (int i = 0; i < nin; i++)
        if (!weight_of[i])
            fprintf(out, " %s.npy", g->inputs[i]->name);
    if (weights_file)
        fprintf(out, " %s.weights", name);
    for (int i = 0; i < nout; i++)
        fprintf(out, " %s.npy", g->outputs[i]->name);
    fputs(" [-p] [-r REPEATS [-c COPIES]]\\n\", argv[0]);\n        return 2;\n    }\n", out);
    /* sizes as C: numbers (a static program's text), or expressions of
     * te_d[] (LIT: the number when every size is static) */
    const char *set;
    if (!nrt) {
        long long total = 0;
        for (int i = 0; i < nbuf; i++) {
            const Tensor *t = i < nin ? g->inputs[i] : g->outputs[i - nin];
            total += (tensor_elems(t) * dtype_bytes(t->dtype) + 63) / 64 * 64;
        }
        set = arena_printf(a, "%lldLL", total);
    } else {
        set = "0LL";
        for (int i = 0; i < nbuf; i++) {
            const Tensor *t = i < nin ? g->inputs[i] : g->outputs[i - nin];
            set = arena_printf(a, "%s + (%s * %d + 63) / 64 * 64", set, elems_c(a, t, rt),
                               dtype_bytes(t->dtype));
        }
    }
    const char **elems = arena_alloc(a, sizeof *elems * (size_t)(nbuf + 1));
    const char **bytes = arena_alloc(a, sizeof *bytes * (size_t)(nbuf + 1));
    const char **alloc = arena_alloc(a, sizeof *alloc * (size_t)(nbuf + 1));
    for (int i = 0; i < nbuf; i++) {
        const Tensor *t = i < nin ? g->inputs[i] : g->outputs[i - nin];
        elems[i] = elems_c(a, t, rt);
        int64_t b = tensor_elems(t) * dtype_bytes(t->dtype);
        bool lit = strspn(elems[i], "0123456789") == strlen(elems[i]);
        bytes[i] = lit ? arena_printf(a, "%lld", (long long)b)
                       : arena_printf(a, "%s * %d", elems[i], dtype_bytes(t->dtype));
        alloc[i] = lit ? arena_printf(a, "%lld", (long long)((b + 63) / 64 * 64))
                       : arena_printf(a, "(%s + 63) / 64 * 64", bytes[i]);
    }
    fprintf(out, "    if (copies == 0)\n        copies = choose_copies(%s, repeats);\n", set);
    fprintf(out, "    /* copy c's buffers: buf[c * %d + i], inputs then outputs */\n", nbuf);
    fprintf(out, "    void **buf = calloc((size_t)copies * %d, sizeof *buf);\n", nbuf);
    fputs("    if (!buf)\n        return 2;\n", out);
    if (weights_file)
        fprintf(out, "    char te_err[512];\n"
                     "    %s_weights *te_weights = %s_load_weights(argv[%d], te_err, sizeof te_err);\n"
                     "    if (!te_weights) {\n"
                     "        fprintf(stderr, \"harness: %%s\\n\", te_err);\n"
                     "        return 2;\n"
                     "    }\n",
                name, name, warg);
    else if (weights)
        fprintf(out, "    %s_weights *te_weights = %s_embedded_weights();\n"
                     "    if (!te_weights)\n        return 2;\n",
                name, name);
    for (int i = 0; i < nbuf; i++) {
        const Tensor *t = i < nin ? g->inputs[i] : g->outputs[i - nin];
        if (i < nin && weight_of[i]) { /* a copy, freed as the others are */
            fprintf(out, "    buf[%d] = aligned_alloc(64, %s);\n"
                         "    if (!buf[%d])\n        return 2;\n"
                         "    memcpy(buf[%d], %s_weight(te_weights, \"%s\"), %s);\n",
                    i, alloc[i], i, i, name, weight_of[i], bytes[i]);
            continue;
        }
        if (i < nin) {
            fprintf(out, "    %sconst long long dims%d[] = { ", nrt ? "" : "static ", i);
            for (int d = 0; d < t->rank; d++)
                fprintf(out, "%s%s", d ? ", " : "", dim_c(a, t, d, rt));
            fprintf(out, "%s };\n", t->rank ? "" : "0");
            fprintf(out, "    buf[%d] = read_npy(argv[%d], \"%s\", %d, dims%d, %d, %d);\n", i, arg[i],
                    cg_npy_descr(t->dtype), t->rank, i, dtype_bytes(t->dtype), t->dtype == DT_BF16);
            continue;
        }
        fprintf(out, "    for (int c = 0; c < copies; c++) {\n");
        fprintf(out, "        void *p = buf[c * %d + %d] = aligned_alloc(64, %s);\n", nbuf, i, alloc[i]);
        fprintf(out, "        if (!p)\n            return 2;\n");
        if (t->dtype == DT_F32 || t->dtype == DT_F64) {
            fprintf(out, "        for (long long k = 0; k < %s; k++)\n", elems[i]);
            fprintf(out, "            ((%s *)p)[k] = NAN;\n", dtype_ctype(t->dtype));
        } else {
            fprintf(out, "        memset(p, 0x7f, %s);\n", bytes[i]);
        }
        fputs("    }\n", out);
    }
    if (weights)
        fprintf(out, "    %s_free_weights(te_weights);\n", name);
    if (nin > 0) {
        fputs("    for (int c = 1; c < copies; c++) {\n", out);
        for (int i = 0; i < nin; i++) {
            fprintf(out, "        buf[c * %d + %d] = aligned_alloc(64, %s);\n", nbuf, i, alloc[i]);
            fprintf(out, "        if (!buf[c * %d + %d])\n            return 2;\n", nbuf, i);
            fprintf(out, "        memcpy(buf[c * %d + %d], buf[%d], %s);\n", nbuf, i, i, bytes[i]);
        }
        fputs("    }\n", out);
    }
    fprintf(out, "    size_t packed_bytes = (%s_prepacked_bytes() + 63) / 64 * 64 + 64;\n", name);
    fputs("    void **packed = calloc((size_t)copies, sizeof *packed);\n"
          "    if (!packed)\n        return 2;\n"
          "    for (int c = 0; c < copies; c++) {\n"
          "        if (!(packed[c] = aligned_alloc(64, packed_bytes)))\n            return 2;\n", out);
    fprintf(out, "        %s_prepack_args(buf + (size_t)c * %d, packed[c]);\n    }\n", name, nbuf);
    fputs("    double *times = malloc(sizeof *times * (size_t)(repeats + 1));\n", out);
    fputs("    if (!times)\n        return 2;\n", out);
    fputs("    for (int r = 0; r <= repeats; r++) {\n", out);
    fprintf(out, "        void **b = buf + (size_t)(r %% copies) * %d;\n", nbuf);
    fputs("        double start = now();\n", out);
    /* -p: the plain entry point, on the weights as given */
    fprintf(out, "        if (plain)\n            %ste_call_plain(%sb);\n        else\n    ",
            nrt ? "te_status = " : "", nrt ? "te_d, " : "");
    if (nrt)
        fprintf(out, "        te_status = %s_packed_args(te_d, b, packed[r %% copies]);\n", name);
    else
        fprintf(out, "        %s_packed_args(b, packed[r %% copies]);\n", name);
    fputs("        times[r] = now() - start;\n", out);
    /* built with --profile: the table covers the timed calls, not the
       first (warm-up) one */
    const char *profiled = cg_upper(a, arena_printf(a, "%s_PROFILED", name));
    fprintf(out, "#ifdef %s\n"
                 "        if (r == 0 && repeats > 0)\n"
                 "            %s_profile_reset();\n"
                 "#endif\n", profiled, name);
    if (nrt)
        fprintf(out, "        if (te_status != 0) {\n"
                     "            fprintf(stderr, \"harness: %%s\\n\", %s_strerror(te_status));\n"
                     "            return 3;\n"
                     "        }\n", name);
    fputs("    }\n", out);
    fputs("    if (repeats > 0) {\n"
          "        qsort(times + 1, (size_t)repeats, sizeof *times, cmp_double);\n"
          "        printf(\"%.9f %d\\n\", times[1 + repeats / 2], copies);\n"
          "    }\n", out);
    fprintf(out, "#ifdef %s\n    %s_profile_print(stderr);\n#endif\n", profiled, name);
    fprintf(out, "    void **last = buf + (size_t)(repeats %% copies) * %d;\n", nbuf);
    for (int i = 0; i < nout; i++) {
        const Tensor *t = g->outputs[i];
        int k = nin + i;
        if (strspn(elems[k], "0123456789") == strlen(elems[k])) {
            fprintf(out, "    write_npy(argv[%d], last[%d], %s, \"%s\", \"%s\");\n", arg[k], k,
                    bytes[k], cg_npy_descr(t->dtype), shape_text(a, t));
            continue;
        }
        /* the shape's text at these sizes */
        fprintf(out, "    {\n        char shape[%d];\n        snprintf(shape, sizeof shape, \"(", 24 * t->rank + 8);
        for (int d = 0; d < t->rank; d++)
            fprintf(out, "%%lld%s", t->rank == 1 ? "," : d + 1 < t->rank ? ", " : "");
        fputs(")\"", out);
        for (int d = 0; d < t->rank; d++)
            fprintf(out, ", (long long)%s", dim_c(a, t, d, rt));
        fprintf(out, ");\n        write_npy(argv[%d], last[%d], %s, \"%s\", shape);\n    }\n", arg[k], k,
                bytes[k], cg_npy_descr(t->dtype));
    }
    fprintf(out, "    for (size_t k = 0; k < (size_t)copies * %d; k++)\n        free(buf[k]);\n", nbuf);
    fputs("    for (int c = 0; c < copies; c++)\n        free(packed[c]);\n", out);
    fputs("    free(packed);\n    free(buf);\n    free(times);\n    return 0;\n}\n", out);
    return !ferror(out);
}

/* weights.c — an imported model's weights: the NAME.weights file texc
 * writes, and the API in NAME.h/NAME.c that loads it and runs the model.
 *
 * A model's weights are `const` inputs of its program (onnx/import.c).
 * Rather than hand each to NAME as an argument, a C program loads them
 * all with one call and runs the model on its real inputs:
 *
 *     char err[256];
 *     mlp_weights *w = mlp_load_weights("mlp.weights", err, sizeof err);
 *     if (!w) { fprintf(stderr, "%s\n", err); exit(1); }
 *     mlp_run(w, x, y);          (as often as it likes, from any thread)
 *     mlp_free_weights(w);
 *
 * The file, version 1 (all numbers little-endian):
 *
 *     offset  bytes  field
 *          0      8  magic 89 'T' 'X' 'W' 0d 0a 1a 0a (PNG's trick: a
 *                    transfer that changes line ends changes the magic)
 *          8      4  version, 1
 *         12      4  count, the number of weights
 *         16      8  the data's offset: where the first weight may start
 *         24      8  the file's size in bytes
 *         32      8  checksum: FNV-1a 64 of every byte of the file but
 *                    these eight
 *         40     24  zero
 *         64  160 * count  one entry per weight:
 *              0      4  its name's offset in the file (in the header)
 *              4      4  its name's length (bytes, no NUL)
 *              8      4  dtype, as ONNX's TensorProto codes: 1 float (f32),
 *                        2 uint8, 3 int8, 6 int32, 9 bool, 10 float16,
 *                        11 double, 16 bfloat16
 *             12      4  rank, 0 to 16
 *             16    128  dims, 16 of them, zero past the rank
 *            144      8  its data's offset, a multiple of 64
 *            152      8  its data's size in bytes
 *          the names, one after the other; zeros up to the data's offset
 *          the weights' data, each at its offset: the elements in C order
 *          as the generated code stores them (bf16 as its 16 bits, bool
 *          one byte), zeros between
 *
 * Every weight starts at a multiple of 64 bytes, so the file can be
 * mapped and its weights read where they lie; the loader the API has
 * reads the file whole into 64-byte aligned memory instead, as it must
 * read every byte for the checksum anyway.  It trusts nothing: the file's
 * size against its header, the checksum before anything the header
 * says, then each entry against what the program expects (the same name,
 * dtype, shape and size, each weight once, its data inside the file);
 * any failure is a message and NULL.
 *
 * With --embed-weights the weights are arrays in NAME.c instead and
 * NAME_embedded_weights() takes the place of the loader; C's literals
 * cost the compiler time and memory, so that is for models of at most
 * CG_EMBED_MAX_BYTES.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

enum {
    WF_VERSION = 1,
    WF_HEADER = 64,    /* the fixed header's bytes */
    WF_ENTRY = 160,    /* an entry's bytes */
    WF_MAX_RANK = 16,  /* dims in an entry */
    WF_ALIGN = 64,     /* each weight's offset is a multiple of this */
};

static const unsigned char wf_magic[8] = { 0x89, 'T', 'X', 'W', '\r', '\n', 0x1a, '\n' };

/* The file's dtype codes: ONNX's TensorProto.DataType. */
static uint32_t wf_dtype_code(DType t)
{
    switch (t) {
    case DT_F32: return 1;
    case DT_U8: return 2;
    case DT_I8: return 3;
    case DT_I32: return 6;
    case DT_BOOL: return 9;
    case DT_F16: return 10;
    case DT_F64: return 11;
    case DT_BF16: return 16;
    default: TE_UNREACHABLE();
    }
}

static int64_t align_up(int64_t n)
{
    return (n + WF_ALIGN - 1) / WF_ALIGN * WF_ALIGN;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
#define FNV1A_START 0xcbf29ce484222325ULL

static const Tensor *weight_tensor(const Graph *g, const CgWeights *w, int i)
{
    return g->inputs[w->input[i]];
}

static int64_t weight_bytes(const Tensor *t)
{
    return tensor_elems(t) * dtype_bytes(t->dtype);
}

int64_t cg_weights_bytes(const Graph *g, const CgWeights *w)
{
    int64_t total = 0;
    for (int i = 0; i < w->n; i++)
        total += weight_bytes(weight_tensor(g, w, i));
    return total;
}

/* Writes N bytes at P to OUT, adding them to the checksum H. */
static bool put(FILE *out, const void *p, size_t n, uint64_t *h)
{
    *h = fnv1a(*h, p, n);
    return fwrite(p, 1, n, out) == n;
}

bool cg_write_weights(const Graph *g, const CgWeights *w, FILE *out)
{
    /* the layout: the header, the entries, the names, then the data */
    int64_t names = WF_HEADER + (int64_t)WF_ENTRY * w->n, end = names;
    for (int i = 0; i < w->n; i++)
        end += (int64_t)strlen(weight_tensor(g, w, i)->name);
    int64_t data = align_up(end);
    int64_t *offset = malloc(sizeof *offset * (size_t)(w->n + 1));
    if (!offset)
        return false;
    end = data;
    for (int i = 0; i < w->n; i++) {
        offset[i] = align_up(end);
        end = offset[i] + weight_bytes(weight_tensor(g, w, i));
    }
    unsigned char head[WF_HEADER] = { 0 };
    memcpy(head, wf_magic, 8);
    put_le(head + 8, WF_VERSION, 4);
    put_le(head + 12, (uint64_t)w->n, 4);
    put_le(head + 16, (uint64_t)data, 8);
    put_le(head + 24, (uint64_t)end, 8);
    /* the checksum (bytes 32..39) is written last, when it is known */
    uint64_t h = fnv1a(FNV1A_START, head, 32);
    bool ok = fwrite(head, 1, 32, out) == 32 && fwrite(head + 32, 1, 8, out) == 8 &&
              put(out, head + 40, WF_HEADER - 40, &h);
    int64_t name_at = names;
    for (int i = 0; ok && i < w->n; i++) {
        const Tensor *t = weight_tensor(g, w, i);
        TE_ASSERT(t->rank <= WF_MAX_RANK);
        unsigned char e[WF_ENTRY] = { 0 };
        put_le(e, (uint64_t)name_at, 4);
        put_le(e + 4, strlen(t->name), 4);
        put_le(e + 8, wf_dtype_code(t->dtype), 4);
        put_le(e + 12, (uint64_t)t->rank, 4);
        for (int d = 0; d < t->rank; d++)
            put_le(e + 16 + 8 * d, (uint64_t)t->shape[d], 8);
        put_le(e + 144, (uint64_t)offset[i], 8);
        put_le(e + 152, (uint64_t)weight_bytes(t), 8);
        ok = put(out, e, sizeof e, &h);
        name_at += (int64_t)strlen(t->name);
    }
    for (int i = 0; ok && i < w->n; i++) {
        const char *name = weight_tensor(g, w, i)->name;
        ok = put(out, name, strlen(name), &h);
    }
    static const unsigned char zeros[WF_ALIGN];
    int64_t at = name_at;
    for (int i = 0; ok && i < w->n; i++) {
        const Tensor *t = weight_tensor(g, w, i);
        int64_t n = tensor_elems(t);
        int size = dtype_bytes(t->dtype);
        double *v = malloc(sizeof *v * (size_t)n);
        unsigned char *bytes = malloc((size_t)(n * size));
        ok = v && bytes && put(out, zeros, (size_t)(offset[i] - at), &h);
        if (ok) {
            w->values(w->ctx, i, v);
            for (int64_t k = 0; k < n; k++)
                npy_encode(t->dtype, v[k], bytes + k * size, true);
            ok = put(out, bytes, (size_t)(n * size), &h);
        }
        if (!v || !bytes)
            errno = ENOMEM;
        free(v);
        free(bytes);
        at = offset[i] + n * size;
    }
    free(offset);
    unsigned char sum[8];
    put_le(sum, h, 8);
    return ok && fseek(out, 32, SEEK_SET) == 0 && fwrite(sum, 1, 8, out) == 8 &&
           fseek(out, 0, SEEK_END) == 0;
}

/* ------------------------------------------------------------------ */
/* The generated API.                                                  */

/* The types every model's weights API uses (a header guard keeps two
 * models' generated code apart in one translation unit), and the
 * weights file's reader: the same text in every model's NAME.c (cpu) or
 * NAME.h (cuda), C and C++. */
static const char reader_types[] =
    "#ifndef TEXC_WEIGHT_INFO_\n"
    "#define TEXC_WEIGHT_INFO_\n"
    "/* What a program takes: each weight's name, dtype (ONNX's code), rank,\n"
    "   dims, bytes and place among its inputs */\n"
    "typedef struct te_weight_info {\n"
    "    const char *name;\n"
    "    uint64_t dtype, rank;\n"
    "    uint64_t dims[16];\n"
    "    uint64_t bytes;\n"
    "    int input;\n"
    "} te_weight_info;\n"
    "#endif\n";

static const char reader_body[] =
    "#ifndef TEXC_WEIGHTS_READER_\n"
    "#define TEXC_WEIGHTS_READER_\n"
    "/* The weights file's reader, the same in every texc program that loads\n"
    "   one (C and C++).  The file's layout: codegen/weights.c in texc's\n"
    "   sources, doc/onnx.md. */\n"
    "enum { TE_WF_HEADER = 64, TE_WF_ENTRY = 160, TE_WF_MAX_RANK = 16 };\n"
    "\n"
    "static inline uint64_t te_wf_le(const unsigned char *p, int bytes)\n"
    "{\n"
    "    uint64_t v = 0;\n"
    "    for (int i = 0; i < bytes; i++)\n"
    "        v |= (uint64_t)p[i] << (8 * i);\n"
    "    return v;\n"
    "}\n"
    "\n"
    "/* FNV-1a, 64 bits: H updated with P[0..N) */\n"
    "static inline uint64_t te_wf_fnv1a(uint64_t h, const unsigned char *p, size_t n)\n"
    "{\n"
    "    for (size_t i = 0; i < n; i++) {\n"
    "        h ^= p[i];\n"
    "        h *= 0x100000001b3ULL;\n"
    "    }\n"
    "    return h;\n"
    "}\n"
    "\n"
    "/* \"PATH: MESSAGE\" into ERR; NULL */\n"
    "static inline void *te_wf_fail(char *err, size_t errlen, const char *path, const char *fmt, ...)\n"
    "{\n"
    "    if (!err || !errlen)\n"
    "        return NULL;\n"
    "    int n = snprintf(err, errlen, \"%s: \", path);\n"
    "    if (n >= 0 && (size_t)n < errlen) {\n"
    "        va_list ap;\n"
    "        va_start(ap, fmt);\n"
    "        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);\n"
    "        va_end(ap);\n"
    "    }\n"
    "    return NULL;\n"
    "}\n"
    "\n"
    "static inline const char *te_wf_dtype(uint64_t code)\n"
    "{\n"
    "    switch (code) {\n"
    "    case 1: return \"f32\";\n"
    "    case 2: return \"u8\";\n"
    "    case 3: return \"i8\";\n"
    "    case 6: return \"i32\";\n"
    "    case 9: return \"bool\";\n"
    "    case 10: return \"f16\";\n"
    "    case 11: return \"f64\";\n"
    "    case 16: return \"bf16\";\n"
    "    default: return \"an unknown dtype\";\n"
    "    }\n"
    "}\n"
    "\n"
    "/* \"[48, 64]\": RANK dims, little-endian u64 bytes (FILE) or uint64_t */\n"
    "static inline const char *te_wf_shape(char *buf, size_t size, const void *dims, uint64_t rank, int file)\n"
    "{\n"
    "    size_t n = (size_t)snprintf(buf, size, \"[\");\n"
    "    for (uint64_t d = 0; d < rank && n < size; d++) {\n"
    "        uint64_t v = file ? te_wf_le((const unsigned char *)dims + 8 * d, 8) : ((const uint64_t *)dims)[d];\n"
    "        n += (size_t)snprintf(buf + n, size - n, \"%s%llu\", d ? \", \" : \"\", (unsigned long long)v);\n"
    "    }\n"
    "    if (n < size)\n"
    "        snprintf(buf + n, size - n, \"]\");\n"
    "    return buf;\n"
    "}\n"
    "\n"
    "/* Checks FILE, SIZE bytes read from PATH: its magic, version, size and\n"
    "   checksum, then each entry against INFOS[0..N) (the same name, dtype,\n"
    "   shape and size, each weight once, its data inside the file).  Each\n"
    "   weight's place into AT, in INFOS' order; 1, or 0 after a message in\n"
    "   ERR. */\n"
    "static inline int te_wf_check(const unsigned char *file, size_t size, const char *path,\n"
    "                              const te_weight_info *infos, int n, const void **at, char *err,\n"
    "                              size_t errlen)\n"
    "{\n"
    "    static const unsigned char magic[8] = { 0x89, 'T', 'X', 'W', '\\r', '\\n', 0x1a, '\\n' };\n"
    "    if (memcmp(file, magic, 8) != 0) {\n"
    "        te_wf_fail(err, errlen, path, \"not a texc weights file (wrong magic)\");\n"
    "        return 0;\n"
    "    }\n"
    "    if (te_wf_le(file + 8, 4) != 1) {\n"
    "        te_wf_fail(err, errlen, path, \"weights file version %llu; this program reads version 1\",\n"
    "                   (unsigned long long)te_wf_le(file + 8, 4));\n"
    "        return 0;\n"
    "    }\n"
    "    uint64_t said = te_wf_le(file + 24, 8);\n"
    "    if (said != size) {\n"
    "        te_wf_fail(err, errlen, path, \"%s: %zu bytes, its header says %llu\",\n"
    "                   said > size ? \"truncated\" : \"longer than it should be\", size, (unsigned long long)said);\n"
    "        return 0;\n"
    "    }\n"
    "    uint64_t sum = te_wf_fnv1a(te_wf_fnv1a(0xcbf29ce484222325ULL, file, 32), file + 40, size - 40);\n"
    "    if (sum != te_wf_le(file + 32, 8)) {\n"
    "        te_wf_fail(err, errlen, path, \"checksum mismatch (its header says %016llx, its bytes give %016llx): the file is damaged\",\n"
    "                   (unsigned long long)te_wf_le(file + 32, 8), (unsigned long long)sum);\n"
    "        return 0;\n"
    "    }\n"
    "    uint64_t count = te_wf_le(file + 12, 4), data = te_wf_le(file + 16, 8);\n"
    "    for (int i = 40; i < TE_WF_HEADER; i++)\n"
    "        if (file[i]) {\n"
    "            te_wf_fail(err, errlen, path, \"its header's reserved bytes are not zero\");\n"
    "            return 0;\n"
    "        }\n"
    "    if (count != (uint64_t)n) {\n"
    "        te_wf_fail(err, errlen, path, \"it holds %llu weights, the program takes %d\", (unsigned long long)count, n);\n"
    "        return 0;\n"
    "    }\n"
    "    uint64_t names = TE_WF_HEADER + TE_WF_ENTRY * count;\n"
    "    if (data < names || data > size || data % 64) {\n"
    "        te_wf_fail(err, errlen, path, \"its data offset %llu is not a multiple of 64 between the end of its \"\n"
    "                   \"entries (%llu) and the end of the file (%zu)\", (unsigned long long)data, (unsigned long long)names, size);\n"
    "        return 0;\n"
    "    }\n"
    "    for (int i = 0; i < n; i++)\n"
    "        at[i] = NULL;\n"
    "    for (uint64_t k = 0; k < count; k++) {\n"
    "        const unsigned char *e = file + TE_WF_HEADER + TE_WF_ENTRY * k;\n"
    "        uint64_t name_at = te_wf_le(e, 4), name_len = te_wf_le(e + 4, 4);\n"
    "        uint64_t dtype = te_wf_le(e + 8, 4), rank = te_wf_le(e + 12, 4);\n"
    "        uint64_t offset = te_wf_le(e + 144, 8), bytes = te_wf_le(e + 152, 8);\n"
    "        if (name_at < names || name_at > data || name_len > data - name_at) {\n"
    "            te_wf_fail(err, errlen, path, \"entry %llu: its name lies outside the header\", (unsigned long long)k);\n"
    "            return 0;\n"
    "        }\n"
    "        const char *name = (const char *)file + name_at;\n"
    "        int i = 0;\n"
    "        while (i < n && (strlen(infos[i].name) != name_len || memcmp(infos[i].name, name, name_len) != 0))\n"
    "            i++;\n"
    "        if (i == n) {\n"
    "            /* (the name as far as it is printable) */\n"
    "            size_t shown = 0;\n"
    "            while (shown < name_len && shown < 64 && name[shown] >= 0x20 && name[shown] < 0x7f)\n"
    "                shown++;\n"
    "            te_wf_fail(err, errlen, path, \"entry %llu: the program takes no weight called '%.*s%s'\",\n"
    "                       (unsigned long long)k, (int)shown, name, shown < name_len ? \"...\" : \"\");\n"
    "            return 0;\n"
    "        }\n"
    "        const te_weight_info *w = &infos[i];\n"
    "        int same = rank == w->rank;\n"
    "        for (uint64_t d = 0; same && d < TE_WF_MAX_RANK; d++)\n"
    "            same = te_wf_le(e + 16 + 8 * d, 8) == (d < rank ? w->dims[d] : 0);\n"
    "        char buf[2][160];\n"
    "        const char *why = NULL;\n"
    "        if (at[i])\n"
    "            why = \"appears twice\";\n"
    "        else if (dtype != w->dtype)\n"
    "            te_wf_fail(err, errlen, path, \"weight '%s' is %s (dtype %llu), the program takes %s\", w->name,\n"
    "                       te_wf_dtype(dtype), (unsigned long long)dtype, te_wf_dtype(w->dtype));\n"
    "        else if (rank > TE_WF_MAX_RANK)\n"
    "            te_wf_fail(err, errlen, path, \"weight '%s' has rank %llu, more than %d\", w->name,\n"
    "                       (unsigned long long)rank, TE_WF_MAX_RANK);\n"
    "        else if (!same)\n"
    "            te_wf_fail(err, errlen, path, \"weight '%s' has shape %s, the program takes %s\", w->name,\n"
    "                       te_wf_shape(buf[0], sizeof buf[0], e + 16, rank, 1),\n"
    "                       te_wf_shape(buf[1], sizeof buf[1], w->dims, w->rank, 0));\n"
    "        else if (bytes != w->bytes)\n"
    "            te_wf_fail(err, errlen, path, \"weight '%s' says it has %llu bytes; its shape makes %llu\", w->name,\n"
    "                       (unsigned long long)bytes, (unsigned long long)w->bytes);\n"
    "        else if (offset % 64)\n"
    "            why = \"is not at a multiple of 64 bytes\";\n"
    "        else if (offset < data || offset > size || bytes > size - offset)\n"
    "            why = \"lies outside the file's data\";\n"
    "        else {\n"
    "            at[i] = file + offset;\n"
    "            continue;\n"
    "        }\n"
    "        if (why)\n"
    "            te_wf_fail(err, errlen, path, \"weight '%s' %s\", w->name, why);\n"
    "        return 0;\n"
    "    }\n"
    "    return 1;\n"
    "}\n"
    "\n"
    "/* Reads PATH whole into 64-byte aligned memory (free()) and checks it\n"
    "   against INFOS[0..N) (te_wf_check): the memory, each weight's place in\n"
    "   it in AT; or NULL after a message in ERR. */\n"
    "static inline unsigned char *te_wf_read(const char *path, const te_weight_info *infos, int n,\n"
    "                                        const void **at, char *err, size_t errlen)\n"
    "{\n"
    "    const uint16_t one = 1;\n"
    "    if (*(const unsigned char *)&one != 1)\n"
    "        return (unsigned char *)te_wf_fail(err, errlen, path, \"its data is little-endian, and this machine is not\");\n"
    "    FILE *f = fopen(path, \"rb\");\n"
    "    if (!f)\n"
    "        return (unsigned char *)te_wf_fail(err, errlen, path, \"cannot open it: %s\", strerror(errno));\n"
    "    long end = -1;\n"
    "    if (fseek(f, 0, SEEK_END) == 0)\n"
    "        end = ftell(f);\n"
    "    if (end < 0 || fseek(f, 0, SEEK_SET) != 0) {\n"
    "        int e = errno;\n"
    "        fclose(f);\n"
    "        return (unsigned char *)te_wf_fail(err, errlen, path, \"cannot read it: %s\", strerror(e));\n"
    "    }\n"
    "    size_t size = (size_t)end;\n"
    "    if (size < TE_WF_HEADER) {\n"
    "        fclose(f);\n"
    "        return (unsigned char *)te_wf_fail(err, errlen, path, \"truncated: %zu bytes, less than a weights file's %d-byte header\",\n"
    "                                           size, TE_WF_HEADER);\n"
    "    }\n"
    "    unsigned char *file = (unsigned char *)aligned_alloc(64, (size + 63) / 64 * 64);\n"
    "    if (!file) {\n"
    "        fclose(f);\n"
    "        return (unsigned char *)te_wf_fail(err, errlen, path, \"out of memory for its %zu bytes\", size);\n"
    "    }\n"
    "    size_t got = fread(file, 1, size, f);\n"
    "    int e = ferror(f) ? errno : 0;\n"
    "    fclose(f);\n"
    "    if (got != size)\n"
    "        te_wf_fail(err, errlen, path, \"cannot read it: %s\", e ? strerror(e) : \"it shrank while being read\");\n"
    "    if (got != size || !te_wf_check(file, size, path, infos, n, at, err, errlen)) {\n"
    "        free(file);\n"
    "        return NULL;\n"
    "    }\n"
    "    return file;\n"
    "}\n"
    "#endif\n";

/* The C literal of V as T's element in the generated code's storage
 * (bf16: its bits). */
static const char *literal(Arena *a, DType t, double v)
{
    union {
        float f;
        uint32_t u;
    } f32;
    switch (t) {
    case DT_BOOL:
        return v != 0.0 ? "1" : "0";
    case DT_I32:
    case DT_U8:
    case DT_I8:
        return arena_printf(a, "%d", (int)dtype_round(t, v));
    case DT_BF16:
        f32.f = (float)dtype_round(t, v);
        return arena_printf(a, "0x%04x", (unsigned)(f32.u >> 16));
    case DT_F16:
    case DT_F32:
    case DT_F64: {
        double r = t == DT_F64 ? v : (double)(float)dtype_round(t, v);
        if (isnan(r))
            return "NAN";
        if (isinf(r))
            return r > 0 ? "INFINITY" : "-INFINITY";
        const char *s = arena_printf(a, t == DT_F64 ? "%.17g" : "%.9g", r);
        if (!strpbrk(s, ".e"))
            s = arena_printf(a, "%s.0", s);
        return t == DT_F64 ? s : arena_printf(a, "%sf", s);
    }
    default:
        TE_UNREACHABLE();
    }
}

/* --embed-weights: each weight as a static array, 64-byte aligned. */
static bool emit_embedded(Arena *a, const Graph *g, const CgWeights *w, const char *const *cnames,
                          FILE *c)
{
    fputs("\n/* The weights, embedded (texc --embed-weights) */\n", c);
    for (int i = 0; i < w->n; i++) {
        const Tensor *t = weight_tensor(g, w, i);
        int64_t n = tensor_elems(t);
        double *v = malloc(sizeof *v * (size_t)n);
        if (!v) {
            fprintf(stderr, "texc: out of memory for weight '%s'\n", t->name);
            return false;
        }
        w->values(w->ctx, i, v);
        fprintf(c, "static _Alignas(64) const %s te_embedded_%s[%lld] = {", cg_storage_type(t->dtype),
                cnames[w->input[i]], (long long)n);
        for (int64_t k = 0; k < n; k++) {
            if (k % 8 == 0)
                fputs("\n   ", c);
            fprintf(c, " %s,", literal(a, t->dtype, v[k]));
        }
        fputs("\n};\n", c);
        free(v);
    }
    return !ferror(c);
}

void cg_emit_weights_h(const Graph *g, const CgWeights *w, const char *name,
                       const char *const *cnames, const char *const *rt, int nrt, FILE *h)
{
    if (w->embed)
        fprintf(h, "\n/* The model's weights, in %s.c (texc --embed-weights).\n"
                   " * %s_embedded_weights() makes them ready to run: it packs what the\n"
                   " * kernel reads packed, once; NULL when out of memory.", name, name);
    else
        fprintf(h, "\n/* The model's weights, from the file texc wrote beside this header\n"
                   " * (%s.weights).  %s_load_weights reads PATH whole, checks it (its\n"
                   " * magic, version, size and checksum, then each weight's name, dtype\n"
                   " * and shape against this program's) and packs what the kernel reads\n"
                   " * packed, once.  NULL when the file is not right, with the reason in\n"
                   " * ERR (\"PATH: ...\", ERRLEN bytes at most with its NUL; ERR may be NULL).",
                name, name);
    fprintf(h, "\n * %s_run runs the model on them: %sits real inputs, then its outputs,\n"
               " * as %s takes them%s.  Any number of calls, from any threads at once, may\n"
               " * share one %s_weights.  %s_free_weights frees them (NULL is ignored).\n"
               " * %s_weight: a weight by its name in the program, NULL if there is\n"
               " * none. */\n",
            name, nrt ? "the run-time sizes, " : "", name,
            nrt ? " and returns 0, or the ERANGE code above with nothing written" : "", name, name, name);
    fprintf(h, "typedef struct %s_weights %s_weights;\n", name, name);
    if (w->embed)
        fprintf(h, "%s_weights *%s_embedded_weights(void);\n", name, name);
    else
        fprintf(h, "%s_weights *%s_load_weights(const char *path, char *err, size_t errlen);\n",
                name, name);
    fprintf(h, "void %s_free_weights(%s_weights *weights);\n", name, name);
    fprintf(h, "%s %s_run(const %s_weights *weights", nrt ? "int" : "void", name, name);
    for (int k = 0; k < nrt; k++)
        fprintf(h, ", int64_t %s", rt[k]);
    bool *is_weight = calloc((size_t)g->ninputs + 1, sizeof *is_weight);
    if (!is_weight)
        te_internal_error(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < w->n; i++)
        is_weight[w->input[i]] = true;
    for (int i = 0; i < g->ninputs + g->noutputs; i++) {
        bool in = i < g->ninputs;
        const Tensor *t = in ? g->inputs[i] : g->outputs[i - g->ninputs];
        if (!(in && is_weight[i]))
            fprintf(h, ", %s%s *%s", in ? "const " : "", cg_storage_type(t->dtype), cnames[i]);
    }
    free(is_weight);
    fputs(");\n", h);
    fprintf(h, "const void *%s_weight(const %s_weights *weights, const char *name);\n", name, name);
}

/* The table of what the program takes, TABLE[COUNT] (te_weight_info:
 * reader_types), in W's order. */
static void emit_infos(const Graph *g, const CgWeights *w, const char *table, const char *count,
                       FILE *out)
{
    fputc('\n', out);
    fputs(reader_types, out);
    fprintf(out, "\n#define %s %d\n", count, w->n);
    if (w->n == 0)
        fputs("/* (none: one unused entry, C having no empty arrays) */\n", out);
    fprintf(out, "static const te_weight_info %s[%d] = {\n", table, w->n ? w->n : 1);
    for (int i = 0; i < w->n; i++) {
        const Tensor *t = weight_tensor(g, w, i);
        fprintf(out, "    { \"%s\", %u, %d, { ", t->name, wf_dtype_code(t->dtype), t->rank);
        for (int d = 0; d < t->rank; d++)
            fprintf(out, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        fprintf(out, "%s }, %lld, %d },\n", t->rank ? "" : "0", (long long)weight_bytes(t),
                w->input[i]);
    }
    if (w->n == 0)
        fputs("    { \"\", 0, 0, { 0 }, 0, -1 },\n", out);
    fputs("};\n\n", out);
}

/* Each of G's inputs and outputs: its place among W's weights, or -1
 * (malloc'd, G->ninputs + G->noutputs of them). */
static int *weight_slots(const Graph *g, const CgWeights *w)
{
    int nbuf = g->ninputs + g->noutputs;
    int *slot = malloc(sizeof *slot * (size_t)(nbuf + 1));
    if (!slot)
        te_internal_error(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < nbuf; i++)
        slot[i] = -1;
    for (int i = 0; i < w->n; i++)
        slot[w->input[i]] = i;
    return slot;
}

/* NAME_weight: a weight (RET, at[i]) by its name in TABLE[COUNT], NONE
 * if there is none. */
static void emit_lookup(FILE *out, const char *linkage, const char *ret, const char *name,
                        const char *table, const char *count, const char *none)
{
    fprintf(out, "%s%s%s_weight(const %s_weights *weights, const char *name)\n{\n"
                 "    for (int i = 0; i < %s; i++)\n"
                 "        if (strcmp(%s[i].name, name) == 0)\n"
                 "            return weights->at[i];\n"
                 "    return %s;\n}\n",
            linkage, ret, name, name, count, table, none);
}

bool cg_emit_weights_c(Arena *a, const Graph *g, const CgWeights *w, const char *name,
                       const char *const *cnames, const char *const *rt, int nrt, FILE *c)
{
    int nbuf = g->ninputs + g->noutputs;
    fputs("\n/* ------------------------------------------------------------------ */\n", c);
    fprintf(c, "/* The model's weights: %s_%s, %s_run.  */\n", name,
            w->embed ? "embedded_weights" : "load_weights", name);
    emit_infos(g, w, "te_weight_infos", "TE_NWEIGHTS", c);
    fprintf(c, "struct %s_weights {\n"
               "    unsigned char *file; /* the file's bytes, which AT points into (NULL: embedded) */\n"
               "    const void *at[%d];   /* each weight, in te_weight_infos' order */\n"
               "    void *packed;        /* %s_prepacked_bytes() bytes: the weights packed once */\n"
               "};\n",
            name, w->n ? w->n : 1, name);
    if (w->embed) {
        if (!emit_embedded(a, g, w, cnames, c))
            return false;
    } else {
        fputc('\n', c);
        fputs(reader_body, c);
    }
    fprintf(c, "\nvoid %s_free_weights(%s_weights *weights)\n{\n"
               "    if (!weights)\n        return;\n"
               "    free(weights->packed);\n"
               "    free(weights->file);\n"
               "    free(weights);\n}\n",
            name, name);
    /* the packing, once: NAME_prepack_args reads the weights' places alone */
    fprintf(c, "\n/* W's weights packed as the kernel reads them; 0 when out of memory */\n"
               "static int te_weights_pack(%s_weights *w)\n{\n"
               "    size_t bytes = %s_prepacked_bytes();\n"
               "    if (bytes == 0)\n        return 1;\n"
               "    w->packed = aligned_alloc(64, (bytes + 63) / 64 * 64);\n"
               "    if (!w->packed)\n        return 0;\n"
               "    void *args[%d] = { 0 };\n"
               "    for (int i = 0; i < TE_NWEIGHTS; i++)\n"
               "        args[te_weight_infos[i].input] = (void *)w->at[i];\n"
               "    %s_prepack_args(args, w->packed);\n"
               "    return 1;\n}\n",
            name, name, nbuf, name);
    if (w->embed) {
        fprintf(c, "\n%s_weights *%s_embedded_weights(void)\n{\n"
                   "    %s_weights *w = calloc(1, sizeof *w);\n"
                   "    if (!w)\n        return NULL;\n",
                name, name, name);
        for (int i = 0; i < w->n; i++)
            fprintf(c, "    w->at[%d] = te_embedded_%s;\n", i, cnames[w->input[i]]);
    } else {
        fprintf(c, "\n%s_weights *%s_load_weights(const char *path, char *err, size_t errlen)\n{\n"
                   "    %s_weights *w = calloc(1, sizeof *w);\n"
                   "    if (!w)\n"
                   "        return te_wf_fail(err, errlen, path, \"out of memory\");\n"
                   "    w->file = te_wf_read(path, te_weight_infos, TE_NWEIGHTS, w->at, err, errlen);\n"
                   "    if (!w->file) {\n        free(w);\n        return NULL;\n    }\n",
                name, name, name);
    }
    fprintf(c, "    if (!te_weights_pack(w)) {\n        %s_free_weights(w);\n        return %s;\n    }\n"
               "    return w;\n}\n",
            name, w->embed ? "NULL" : "te_wf_fail(err, errlen, path, \"out of memory for the packed weights\")");
    fputc('\n', c);
    emit_lookup(c, "", "const void *", name, "te_weight_infos", "TE_NWEIGHTS", "NULL");
    /* NAME_run: the buffers in NAME's order, the weights' from W */
    fprintf(c, "\n%s %s_run(const %s_weights *te_weights", nrt ? "int" : "void", name, name);
    for (int k = 0; k < nrt; k++)
        fprintf(c, ", int64_t %s", rt[k]);
    int *slot = weight_slots(g, w);
    for (int i = 0; i < nbuf; i++) {
        bool in = i < g->ninputs;
        const Tensor *t = in ? g->inputs[i] : g->outputs[i - g->ninputs];
        if (slot[i] < 0)
            fprintf(c, ", %s%s *%s_", in ? "const " : "", cg_storage_type(t->dtype), cnames[i]);
    }
    fprintf(c, ")\n{\n    void *te_args[%d] = {", nbuf);
    for (int i = 0; i < nbuf; i++)
        fprintf(c, "%s\n        (void *)%s", i ? "," : "",
                slot[i] >= 0 ? arena_printf(a, "te_weights->at[%d]", slot[i])
                             : arena_printf(a, "%s_", cnames[i]));
    if (nrt) {
        fputs("\n    };\n    const int64_t te_dims[] = {", c);
        for (int k = 0; k < nrt; k++)
            fprintf(c, "%s %s", k ? "," : "", rt[k]);
        fprintf(c, " };\n    return %s_packed_args(te_dims, te_args, te_weights->packed);\n}\n", name);
    } else {
        fprintf(c, "\n    };\n    %s_packed_args(te_args, te_weights->packed);\n}\n", name);
    }
    free(slot);
    return !ferror(c);
}

void cg_emit_weights_cuda(Arena *a, const Graph *g, const CgWeights *w, const char *name,
                          const char *const *cnames, const char *const *rt, int nrt, FILE *h)
{
    const char *N = cg_upper(a, arena_printf(a, "%s_NWEIGHTS", name));
    const char *table = arena_printf(a, "%s_weight_infos", name);
    int nbuf = g->ninputs + g->noutputs, n = w->n ? w->n : 1;
    fprintf(h, "/* ------------------------------------------------------------------ */\n"
               "/* The model's weights, from the file texc wrote beside this header\n"
               " * (%s.weights).\n"
               " *\n"
               " * %s_load_weights reads PATH whole, checks it (its magic, version,\n"
               " * size and checksum, then each weight's name, dtype and shape against\n"
               " * this program's) and copies the weights into one allocation on DEVICE,\n"
               " * once.  NULL when the file is not right or the device refuses, with\n"
               " * the reason in ERR (\"PATH: ...\", ERRLEN bytes at most with its NUL;\n"
               " * ERR may be NULL).\n"
               " * %s_run_weights runs the model on them as %s_run does (and waits\n"
               " * for it): %sits real inputs, then its outputs, device pointers.  Any\n"
               " * number of calls may share one %s_weights.\n"
               " * %s_weight: a weight's device pointer by its name in the program, 0 if\n"
               " * there is none.  %s_free_weights frees them (NULL is ignored). */\n",
            name, name, name, name, nrt ? "the run-time sizes, " : "", name, name, name);
    emit_infos(g, w, table, N, h);
    fputs(reader_body, h);
    fprintf(h, "\ntypedef struct %s_weights {\n"
               "    uint64_t memory; /* the device memory that holds them all */\n"
               "    uint64_t at[%d];  /* each weight's device pointer, in %s' order */\n"
               "} %s_weights;\n\n",
            name, n, table, name);
    fprintf(h, "static inline void %s_free_weights(%s_weights *weights)\n{\n"
               "    if (!weights)\n        return;\n"
               "    texrt_dev_free(weights->memory);\n"
               "    free(weights);\n}\n\n",
            name, name);
    /* the file's data region, 64-byte aligned weights and all, in one
       copy: each weight's device pointer keeps its offset in it */
    fprintf(h, "static inline %s_weights *%s_load_weights(const char *path, int device, char *err, size_t errlen)\n{\n"
               "    const void *at[%d];\n"
               "    unsigned char *file = te_wf_read(path, %s, %s, at, err, errlen);\n"
               "    if (!file)\n        return NULL;\n"
               "    %s_weights *w = (%s_weights *)calloc(1, sizeof *w);\n"
               "    if (!w) {\n        free(file);\n"
               "        return (%s_weights *)te_wf_fail(err, errlen, path, \"out of memory\");\n    }\n"
               "    uint64_t data = te_wf_le(file + 16, 8), size = te_wf_le(file + 24, 8);\n"
               "    int rc = texrt_cuda_init(device);\n"
               "    if (rc == TEXRT_OK && size > data)\n"
               "        rc = texrt_dev_alloc(&w->memory, (size_t)(size - data));\n"
               "    if (rc == TEXRT_OK && size > data)\n"
               "        rc = texrt_memcpy_htod(w->memory, file + data, (size_t)(size - data));\n"
               "    for (int i = 0; rc == TEXRT_OK && i < %s; i++)\n"
               "        w->at[i] = w->memory + (uint64_t)((const unsigned char *)at[i] - (file + data));\n"
               "    free(file);\n"
               "    if (rc != TEXRT_OK) {\n"
               "        te_wf_fail(err, errlen, path, \"cannot copy its weights to device %%d: %%s\", device,\n"
               "                   texrt_last_error());\n"
               "        %s_free_weights(w);\n"
               "        return NULL;\n    }\n"
               "    return w;\n}\n\n",
            name, name, n, table, N, name, name, name, N, name);
    emit_lookup(h, "static inline ", "uint64_t ", name, table, N, "0");
    fputc('\n', h);
    /* NAME_run_weights: NAME_run's tensors, the weights' from W */
    int *slot = weight_slots(g, w);
    fprintf(h, "static inline int %s_run_weights(texrt_module *module, const %s_weights *weights", name,
            name);
    for (int k = 0; k < nrt; k++)
        fprintf(h, ", int64_t %s", rt[k]);
    for (int i = 0; i < nbuf; i++)
        if (slot[i] < 0)
            fprintf(h, ", uint64_t %s", cnames[i]);
    fputs(")\n{\n", h);
    if (w->n == 0)
        fputs("    (void)weights; /* the model has none */\n", h);
    fprintf(h, "    return %s_run(module", name);
    for (int k = 0; k < nrt; k++)
        fprintf(h, ", %s", rt[k]);
    for (int i = 0; i < nbuf; i++)
        if (slot[i] >= 0)
            fprintf(h, ", weights->at[%d]", slot[i]);
        else
            fprintf(h, ", %s", cnames[i]);
    fputs(");\n}\n\n", h);
    free(slot);
}

/* import.c — an ONNX graph to a .te program.
 *
 * The steps, in order, each ending the import with a diagnostic when it
 * fails (nothing is written then: the driver writes files only after the
 * program compiles):
 *   1. the values: initializers (constants), graph inputs (their symbolic
 *      dims bound by -D NAME=VALUE) and the names they take in the program;
 *   2. the op table: every node whose (op, opset) has no converter is
 *      listed, all of them in one error;
 *   3. the order: nodes sorted by their inputs (Kahn), so a graph whose
 *      file order is not topological still imports, and a cycle or an
 *      input no node, initializer or graph input gives is an error naming
 *      the node;
 *   4. patterns: PyTorch's erf chain for GELU, x * 0.5 * (1 + erf(x / √2)),
 *      becomes te's gelu(x) (the nodes in between are not converted);
 *   5. conversion, in that order: each converter (ops.c) folds its node
 *      when all its inputs are constants (so shape computations fold to
 *      constants one node after the other: a node can only see constants
 *      its producers folded), or writes the stages that compute it;
 *   6. the program's text: inputs, weights (the constants stages read,
 *      as `const` inputs), stages, outputs.
 *
 * Names: a stage is named after the tensor it computes, made C-safe
 * ("/fc1/Gemm_output_0" -> fc1_Gemm); a weight after its initializer
 * ("fc1.weight" -> fc1_weight) or, when PyTorch gave it only a number
 * ("onnx::MatMul_45"), after the node reading it and the input it is
 * (layer_MatMul_B).  The graph's inputs and outputs keep their names,
 * made C-safe; collisions take a suffix _2, _3, ...  Index variables
 * start with '_', which no other name does.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"

bool ox_error(OxImporter *im, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", im->path);
    if (im->node)
        fprintf(stderr, "node '%s' (%s): ", im->node->name, im->node->op);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return false;
}

/* ------------------------------------------------------------------ */
/* Values by ONNX name, and the names the program uses (lang/'s maps). */

static OxValue *find_value(OxImporter *im, const char *name)
{
    int i = strmap_get(&im->value_index, name);
    return i < 0 ? NULL : im->values.items[i];
}

static OxValue *add_value(OxImporter *im, const char *name)
{
    OxValue *v = arena_alloc(im->a, sizeof *v);
    v->onnx = name;
    strmap_set(im->a, &im->value_index, name, im->values.len);
    vec_push(im->a, &im->values, v);
    return v;
}

static bool name_used(const PtrMap *s, const char *name)
{
    return strmap_get(s, name) >= 0;
}

static void name_add(Arena *a, PtrMap *s, const char *name)
{
    strmap_set(a, s, name, 0);
}

/* NAME made C-safe: "/fc1/Gemm_output_0" -> "fc1_Gemm". */
char *ox_c_safe(Arena *a, const char *name)
{
    size_t n = strlen(name);
    if (n > 9 && strcmp(name + n - 9, "_output_0") == 0)
        n -= 9;
    if (n > 200)
        n = 200;
    char *out = arena_alloc(a, n + 2), *o = out;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!ok)
            c = '_';
        if (c == '_' && (o == out || o[-1] == '_'))
            continue;
        *o++ = c;
    }
    while (o > out && o[-1] == '_')
        o--;
    *o = '\0';
    if (o == out || (out[0] >= '0' && out[0] <= '9')) {
        memmove(out + 1, out, (size_t)(o - out) + 1);
        out[0] = 't';
    }
    return out;
}

/* NAME made C-safe and, if it is one of te's reserved words, with a "_"
 * after it: how the program names a graph output ("output" -> "output_"). */
static const char *te_safe(Arena *a, const char *name)
{
    static const char *reserved[] = { "at", "const", "dim", "in", "input", "let", "output",
                                      "schedule" };
    const char *base = ox_c_safe(a, name);
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcmp(base, reserved[i]) == 0)
            return arena_printf(a, "%s_", base);
    return base;
}

/* A fresh name in the program from ONNX's NAME. */
static const char *new_name(OxImporter *im, const char *name)
{
    const char *base = te_safe(im->a, name), *cand = base;
    for (int k = 2; name_used(&im->names, cand); k++)
        cand = arena_printf(im->a, "%s_%d", base, k);
    name_add(im->a, &im->names, cand);
    return cand;
}

void ox_name(OxImporter *im, OxValue *v)
{
    if (!v->te)
        v->te = new_name(im, v->onnx);
}

const char *ox_aux_name(OxImporter *im, const OxValue *out, const char *suffix)
{
    return new_name(im, arena_printf(im->a, "%s_%s", out->te ? out->te : out->onnx, suffix));
}

bool ox_is_probe(const OxImporter *im, int64_t size)
{
    for (int k = 0; k < im->nprobes; k++)
        if (im->probes[k] == size)
            return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* Dtypes. */

DType ox_te_dtype(int odtype)
{
    switch (odtype) {
    case OX_FLOAT: return DT_F32;
    case OX_DOUBLE: return DT_F64;
    case OX_FLOAT16: return DT_F16;
    case OX_BFLOAT16: return DT_BF16;
    /* te has no 16- or 64-bit integers: these are carried in i32, their
       values (at run time too) within i32's range; the converters wrap
       int16 and uint16 arithmetic modulo 2^16 as ONNX computes it */
    case OX_INT32: case OX_INT64: case OX_INT16: case OX_UINT16: case OX_UINT32:
    case OX_UINT64: return DT_I32;
    case OX_BOOL: return DT_BOOL;
    case OX_UINT8: return DT_U8;
    case OX_INT8: return DT_I8;
    default: return DT_NONE;
    }
}

int ox_onnx_dtype(DType t)
{
    switch (t) {
    case DT_F32: return OX_FLOAT;
    case DT_F64: return OX_DOUBLE;
    case DT_F16: return OX_FLOAT16;
    case DT_BF16: return OX_BFLOAT16;
    case DT_I32: return OX_INT32;
    case DT_BOOL: return OX_BOOL;
    case DT_U8: return OX_UINT8;
    case DT_I8: return OX_INT8;
    default: return 0;
    }
}

/* V as a value of ONNX dtype ODTYPE holds it (Cast's rounding; integers
 * saturate where C would be undefined). */
double ox_round(int odtype, double v)
{
    switch (odtype) {
    case OX_FLOAT: return (float)v;
    case OX_DOUBLE: return v;
    case OX_FLOAT16: return dtype_round(DT_F16, v);
    case OX_BFLOAT16: return dtype_round(DT_BF16, v);
    case OX_BOOL: return v != 0;
    default: {
        if (isnan(v))
            return 0;
        double t = trunc(v);
        double lo = odtype == OX_INT64 ? -9223372036854775808.0
                    : odtype == OX_INT32 ? -2147483648.0
                    : odtype == OX_INT16 ? -32768.0
                    : odtype == OX_INT8 ? -128.0 : 0.0;
        double hi = odtype == OX_INT64 ? 9223372036854775807.0
                    : odtype == OX_INT32 ? 2147483647.0
                    : odtype == OX_INT16 ? 32767.0
                    : odtype == OX_INT8 ? 127.0
                    : odtype == OX_UINT8 ? 255.0
                    : odtype == OX_UINT16 ? 65535.0
                    : odtype == OX_UINT32 ? 4294967295.0 : 18446744073709551615.0;
        return t < lo ? lo : t > hi ? hi : t;
    }
    }
}

/* ------------------------------------------------------------------ */
/* Attributes. */

const OxAttr *ox_attr(const OxNode *n, const char *name)
{
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t ox_attr_int(const OxNode *n, const char *name, int64_t def)
{
    const OxAttr *at = ox_attr(n, name);
    return at && at->type == OX_A_INT ? at->i : def;
}

double ox_attr_float(const OxNode *n, const char *name, double def)
{
    const OxAttr *at = ox_attr(n, name);
    return at && at->type == OX_A_FLOAT ? at->f : def;
}

const char *ox_attr_string(const OxNode *n, const char *name, const char *def)
{
    const OxAttr *at = ox_attr(n, name);
    return at && at->type == OX_A_STRING && at->s ? at->s : def;
}

/* ------------------------------------------------------------------ */
/* Values for the converters. */

int64_t ox_elems(const OxValue *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->rank; d++)
        n *= v->dims[d];
    return n;
}

double *ox_const_values(OxImporter *im, OxValue *v)
{
    if (!v->konst && v->init) {
        int64_t n = v->init->nelems;
        v->konst = arena_alloc(im->a, sizeof *v->konst * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++)
            v->konst[i] = ox_tensor_value(v->init, i);
    }
    return v->konst;
}

bool ox_need_const(OxImporter *im, OxValue *v, const char *what)
{
    if (v->kind == OXV_CONST)
        return true;
    return ox_error(im, "its %s '%s' depends on run-time data; texc needs it known when "
                        "compiling (fold it in the model, or give the inputs it depends on "
                        "fixed sizes with -D)",
                    what, v->onnx);
}

/* EMPTY_OK: a dim may be 0 (a graph input only a constant operand may
 * read: the program computes on no empty tensor). */
static bool check_dims(OxImporter *im, const OxValue *v, int rank, const int64_t *dims,
                       bool empty_ok)
{
    int64_t n = 1;
    if (rank > OX_MAX_RANK)
        return ox_error(im, "'%s' would have %d dims; texc takes at most %d", v->onnx, rank,
                        OX_MAX_RANK);
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 0 && empty_ok)
            continue;
        if (dims[d] <= 0)
            return ox_error(im, "'%s' would have dim %d of size %lld%s", v->onnx, d,
                            (long long)dims[d],
                            dims[d] == 0 ? " (texc takes no empty tensors)" : "");
        if (dims[d] > OX_MAX_ELEMS || n > OX_MAX_ELEMS / dims[d])
            return ox_error(im, "'%s' would have more than 2^40 elements (dim %d is %lld)",
                            v->onnx, d, (long long)dims[d]);
        n *= dims[d];
    }
    return true;
}

static bool set_shape(OxImporter *im, OxValue *out, int odtype, int rank, const int64_t *dims,
                      bool empty_ok)
{
    if (!check_dims(im, out, rank, dims, empty_ok))
        return false;
    out->odtype = odtype;
    out->dtype = ox_te_dtype(odtype);
    if (out->dtype == DT_NONE)
        return ox_error(im, "'%s' has type %s, which texc does not compute", out->onnx,
                        ox_dtype_name(odtype));
    out->rank = rank;
    if (rank > 0) /* a scalar's DIMS may be NULL */
        memcpy(out->dims, dims, sizeof *dims * (size_t)rank);
    return true;
}

bool ox_set_shape(OxImporter *im, OxValue *out, int odtype, int rank, const int64_t *dims)
{
    return set_shape(im, out, odtype, rank, dims, false);
}

/* The first dim of size 0 of V, or -1. */
static int empty_dim(const OxValue *v)
{
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] == 0)
            return d;
    return -1;
}

void ox_set_const(OxImporter *im, OxValue *out, int odtype, int rank, const int64_t *dims,
                  double *values)
{
    (void)im;
    out->kind = OXV_CONST;
    out->odtype = odtype;
    out->dtype = ox_te_dtype(odtype);
    out->rank = rank;
    if (rank > 0) /* a scalar's DIMS may be NULL */
        memcpy(out->dims, dims, sizeof *dims * (size_t)rank);
    out->konst = values;
}

const char *ox_literal(OxImporter *im, DType t, double v)
{
    if (t == DT_BOOL)
        return v != 0 ? "(0 == 0)" : "(0 != 0)";
    if (!dtype_is_float(t)) {
        if (v < -2147483648.0 || v > 2147483647.0)
            v = v < 0 ? -2147483648.0 : 2147483647.0; /* int64 extremes: i32 saturates */
        return arena_printf(im->a, v < 0 ? "(%lld)" : "%lld", (long long)v);
    }
    if (isnan(v))
        return "(0.0 * 1e39)"; /* inf * 0: te has no NaN literal */
    if (isinf(v))
        return v < 0 ? (t == DT_F64 ? "(-1e308 * 10.0)" : "(-1e39)")
                     : (t == DT_F64 ? "(1e308 * 10.0)" : "1e39");
    char buf[64];
    snprintf(buf, sizeof buf, t == DT_F64 ? "%.17g" : "%.9g", v);
    if (!strpbrk(buf, ".e"))
        strcat(buf, ".0");
    return arena_printf(im->a, v < 0 ? "(%s)" : "%s", buf);
}

/* TEXT for a comment of the program: the model's names are any bytes,
 * and a line break (or another control character) would end the
 * comment; each becomes '?'. */
static const char *comment_text(Arena *a, const char *text)
{
    char *out = arena_strdup(a, text);
    for (char *c = out; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    return out;
}

/* The constant V as a weight of the program: a const input. */
static const char *weight_name(OxImporter *im, OxValue *v)
{
    if (v->te)
        return v->te;
    const char *base = v->onnx;
    if (strncmp(base, "onnx::", 6) == 0 && v->reader) {
        static const char slots[] = "ABCDEFGH";
        const OxNode *r = v->reader;
        const char *node = *r->name ? r->name : r->op;
        base = v->reader_slot < 8 ? arena_printf(im->a, "%s_%c", node, slots[v->reader_slot])
                                  : arena_printf(im->a, "%s_in%d", node, v->reader_slot);
    }
    v->te = new_name(im, base);
    Tensor *t = arena_alloc(im->a, sizeof *t);
    t->name = v->te;
    t->kind = TK_INPUT;
    t->dtype = v->dtype;
    t->rank = v->rank;
    t->is_const = true;
    memcpy(t->shape, v->dims, sizeof *v->dims * (size_t)v->rank);
    OxWeight *w = arena_alloc(im->a, sizeof *w);
    w->tensor = t;
    w->init = v->init && !v->konst && v->init->nelems == ox_elems(v) ? v->init : NULL;
    w->values = w->init ? NULL : ox_const_values(im, v);
    vec_push(im->a, &im->weights, w);
    fprintf(im->decl, "input %s : const %s", v->te, dtype_name(v->dtype));
    for (int d = 0; d < v->rank; d++)
        fprintf(im->decl, "%s%lld", d ? ", " : "[", (long long)v->dims[d]);
    fprintf(im->decl, "%s;  # %s\n", v->rank ? "]" : "", comment_text(im->a, v->onnx));
    return v->te;
}

const char *ox_read(OxImporter *im, OxValue *v, const char *const *idx)
{
    if (v->kind == OXV_CONST && ox_elems(v) == 1)
        return ox_literal(im, v->dtype, ox_const_values(im, v)[0]);
    const char *name = v->kind == OXV_CONST ? weight_name(im, v) : v->te;
    if (v->rank == 0)
        return name;
    char *s = arena_printf(im->a, "%s[", name);
    for (int d = 0; d < v->rank; d++)
        s = arena_printf(im->a, "%s%s%s", s, d ? ", " : "", idx[d]);
    return arena_printf(im->a, "%s]", s);
}

const char *ox_bcast_read(OxImporter *im, OxValue *v, const OxValue *out, const char *const *idx)
{
    const char *mine[OX_MAX_RANK];
    int off = out->rank - v->rank;
    for (int d = 0; d < v->rank; d++)
        mine[d] = v->dims[d] == 1 && out->dims[off + d] != 1 ? "0" : idx[off + d];
    return ox_read(im, v, mine);
}

const char *const *ox_index_vars(OxImporter *im, int rank, const char *prefix)
{
    const char **v = arena_alloc(im->a, sizeof *v * (size_t)(rank + 1));
    for (int d = 0; d < rank; d++)
        v[d] = arena_printf(im->a, "_%s%d", prefix, d);
    return v;
}

static void comment_node(OxImporter *im)
{
    if (im->commented || !im->node)
        return;
    im->commented = true;
    fprintf(im->body, "\n# %s (%s)\n",
            *im->node->name ? comment_text(im->a, im->node->name) : "(unnamed)",
            comment_text(im->a, im->node->op));
}

void ox_aux_stage(OxImporter *im, const char *name, int rank, const int64_t *dims,
                  const char *expr)
{
    comment_node(im);
    fputs(name, im->body);
    for (int d = 0; d < rank; d++)
        fprintf(im->body, "%s_i%d in %lld", d ? ", " : "[", d, (long long)dims[d]);
    fprintf(im->body, "%s = %s;\n", rank ? "]" : "", expr);
}

void ox_stage(OxImporter *im, OxValue *out, const char *expr)
{
    if (!out->te)
        out->te = new_name(im, out->onnx);
    out->kind = OXV_STAGE;
    ox_aux_stage(im, out->te, out->rank, out->dims, expr);
}

/* ------------------------------------------------------------------ */
/* The import. */

static bool is_default_domain(const char *d)
{
    return !*d || strcmp(d, "ai.onnx") == 0;
}

/* Step 2: every node the op table lacks, in one error. */
static bool check_ops(OxImporter *im)
{
    const OxModel *m = im->m;
    int bad = 0;
    for (int i = 0; i < m->nnodes; i++) {
        const OxNode *n = &m->nodes[i];
        if (is_default_domain(n->domain) && ox_lookup_op(n->op, m->opset))
            continue;
        if (!bad++)
            fprintf(stderr, m->opset ? "%s: error: the model uses ops texc does not convert "
                                       "(opset %lld):\n"
                                     : "%s: error: the model uses ops texc does not convert "
                                       "(it imports no ai.onnx opset):\n",
                    im->path, (long long)m->opset);
        fprintf(stderr, "  node '%s': %s%s%s\n", n->name, n->domain, *n->domain ? "." : "",
                n->op);
    }
    return bad == 0;
}

/* Step 3: the nodes in an order where each comes after its inputs'
 * producers.  Into ORDER; false after an error. */
static bool sort_nodes(OxImporter *im, int *order)
{
    const OxModel *m = im->m;
    int n = m->nnodes;
    /* producer of each value: values are named once (SSA) */
    for (int i = 0; i < n; i++) {
        const OxNode *nd = &m->nodes[i];
        im->node = nd;
        for (int k = 0; k < nd->noutputs; k++) {
            const char *o = nd->outputs[k];
            if (!*o)
                continue;
            if (find_value(im, o))
                return ox_error(im, "output '%s' is named twice in the graph (an input, an "
                                    "initializer or another node's output)",
                                o);
            OxValue *v = add_value(im, o);
            v->reader_slot = -1 - i; /* the producer, until converted */
            v->kind = OXV_STAGE;
            v->rank = -1; /* not computed yet */
        }
    }
    int *missing = arena_alloc(im->a, sizeof *missing * (size_t)(n + 1));
    int **readers = arena_alloc(im->a, sizeof *readers * (size_t)(n + 1));
    int *nreaders = arena_alloc(im->a, sizeof *nreaders * (size_t)(n + 1));
    /* count, then fill, each producer's readers */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            const OxNode *nd = &m->nodes[i];
            im->node = nd;
            for (int k = 0; k < nd->ninputs; k++) {
                const char *in = nd->inputs[k];
                if (!*in)
                    continue;
                OxValue *v = find_value(im, in);
                if (!v)
                    return ox_error(im, "input '%s' is not an output of any node, an "
                                        "initializer or a graph input",
                                    in);
                if (pass == 0)
                    v->uses++;
                if (v->reader_slot >= 0 || v->kind != OXV_STAGE)
                    continue;
                int p = -1 - v->reader_slot;
                if (pass == 0) {
                    nreaders[p]++;
                    missing[i]++;
                } else {
                    readers[p][nreaders[p]++] = i;
                }
            }
        }
        if (pass == 0)
            for (int i = 0; i < n; i++) {
                readers[i] = arena_alloc(im->a, sizeof **readers * (size_t)(nreaders[i] + 1));
                nreaders[i] = 0;
            }
    }
    im->node = NULL;
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++)
        if (!missing[i])
            order[tail++] = i;
    while (head < tail) {
        int i = order[head++];
        for (int r = 0; r < nreaders[i]; r++)
            if (--missing[readers[i][r]] == 0)
                order[tail++] = readers[i][r];
    }
    if (tail < n) {
        for (int i = 0; i < n; i++)
            if (missing[i]) {
                im->node = &m->nodes[i];
                return ox_error(im, "is on a cycle: it depends on its own output");
            }
    }
    return true;
}

/* A scalar constant's value, from an initializer or a Constant node. */
static bool scalar_of(OxImporter *im, const char *name, double *out)
{
    OxValue *v = find_value(im, name);
    if (!v)
        return false;
    if (v->init && v->init->nelems == 1) {
        *out = ox_tensor_value(v->init, 0);
        return true;
    }
    if (v->reader_slot < 0 && v->kind == OXV_STAGE) {
        const OxNode *p = &im->m->nodes[-1 - v->reader_slot];
        const OxAttr *at = ox_attr(p, "value");
        if (strcmp(p->op, "Constant") == 0 && at && at->t && at->t->nelems == 1) {
            *out = ox_tensor_value(at->t, 0);
            return true;
        }
    }
    return false;
}

static const OxNode *producer_of(OxImporter *im, const char *name, const char *op)
{
    OxValue *v = find_value(im, name);
    if (!v || v->reader_slot >= 0 || v->kind != OXV_STAGE || v->uses != 1)
        return NULL;
    const OxNode *p = &im->m->nodes[-1 - v->reader_slot];
    return strcmp(p->op, op) == 0 && p->ninputs == 2 - (strcmp(op, "Erf") == 0) ? p : NULL;
}

/* Of the two inputs of N, the one that is the constant C (then *OTHER is
 * the other one). */
static bool has_scalar(OxImporter *im, const OxNode *n, double c, double tol, const char **other)
{
    double v;
    for (int k = 0; k < 2; k++)
        if (scalar_of(im, n->inputs[k], &v) && fabs(v - c) <= tol) {
            *other = n->inputs[1 - k];
            return true;
        }
    return false;
}

/* Step 4: Mul(Mul(x, Add(Erf(Div(x, √2)), 1)), 0.5), PyTorch's GELU (and
 * its orders of operands), ends at the outer Mul; the rest is skipped. */
static void find_gelu(OxImporter *im)
{
    const OxModel *m = im->m;
    for (int i = 0; i < m->nnodes; i++) {
        const OxNode *outer = &m->nodes[i], *inner, *add, *erf, *div;
        const char *prod, *x = NULL, *sum, *e, *d;
        if (strcmp(outer->op, "Mul") || outer->ninputs != 2 ||
            !has_scalar(im, outer, 0.5, 0, &prod) || !(inner = producer_of(im, prod, "Mul")))
            continue;
        for (int k = 0; k < 2 && !x; k++) {
            sum = inner->inputs[k];
            if (!(add = producer_of(im, sum, "Add")) || !has_scalar(im, add, 1.0, 0, &e) ||
                !(erf = producer_of(im, e, "Erf")))
                continue;
            d = erf->inputs[0];
            if ((div = producer_of(im, d, "Div")) &&
                scalar_of(im, div->inputs[1], &(double){ 0 })) {
                double c;
                scalar_of(im, div->inputs[1], &c);
                if (fabs(c - M_SQRT2) < 1e-6 && strcmp(div->inputs[0], inner->inputs[1 - k]) == 0)
                    x = div->inputs[0];
            } else if ((div = producer_of(im, d, "Mul"))) {
                const char *xx;
                if (has_scalar(im, div, M_SQRT1_2, 1e-6, &xx) &&
                    strcmp(xx, inner->inputs[1 - k]) == 0)
                    x = xx;
            }
        }
        if (!x)
            continue;
        im->gelu_of[i] = x;
        im->skip[inner - m->nodes] = im->skip[add - m->nodes] = true;
        im->skip[erf - m->nodes] = im->skip[div - m->nodes] = true;
    }
}

/* Step 1 for the graph's inputs: their shapes, symbolic dims bound. */
static bool bind_inputs(OxImporter *im, const OxDefine *defines, int ndefines)
{
    const OxModel *m = im->m;
    bool *used = arena_alloc(im->a, sizeof *used * (size_t)(ndefines + 1));
    for (int i = 0; i < m->ninputs; i++) {
        const OxValueInfo *vi = &m->inputs[i];
        if (find_value(im, vi->name) && find_value(im, vi->name)->init)
            continue; /* an initializer listed as an input (IR < 4): a weight */
        if (find_value(im, vi->name))
            return ox_error(im, "graph input '%s' is named twice", vi->name);
        OxValue *v = add_value(im, vi->name);
        v->kind = OXV_INPUT;
        if (vi->rank < 0)
            return ox_error(im, "graph input '%s' has no shape", vi->name);
        int64_t dims[OX_MAX_RANK];
        bool bound_empty = false; /* -D NAME=0 */
        for (int d = 0; d < vi->rank; d++) {
            dims[d] = vi->dims[d];
            if (dims[d] >= 0 && !vi->params[d])
                continue;
            const char *p = vi->params[d];
            if (!p)
                return ox_error(im, "graph input '%s': dim %d has neither a size nor a name",
                                vi->name, d);
            int k;
            for (k = 0; k < ndefines; k++)
                if (strcmp(defines[k].name, p) == 0 ||
                    strcmp(defines[k].name, ox_c_safe(im->a, p)) == 0)
                    break;
            if (k == ndefines)
                return ox_error(im, "graph input '%s': dim %d is '%s', a size the model leaves "
                                    "open; give it one with -D %s=VALUE, or keep it a run-time "
                                    "size in a range with -D %s=LO..HI",
                                vi->name, d, p, ox_c_safe(im->a, p), ox_c_safe(im->a, p));
            used[k] = true;
            dims[d] = defines[k].value;
            bound_empty = bound_empty || dims[d] == 0;
        }
        /* an empty input (of the model's own dims, not -D's) is not
           declared: an operand texc needs known when compiling (empty
           axes) says so, anything else is an error after the conversion */
        if (!set_shape(im, v, vi->dtype, vi->rank, dims, !bound_empty))
            return false;
        v->te = new_name(im, vi->name);
    }
    for (int k = 0; k < ndefines; k++)
        if (!used[k]) {
            char *list = "";
            for (int i = 0; i < m->ninputs; i++)
                for (int d = 0; d < m->inputs[i].rank; d++)
                    if (m->inputs[i].params[d] && !strstr(list, m->inputs[i].params[d]))
                        list = arena_printf(im->a, "%s%s%s", list, *list ? ", " : "",
                                            m->inputs[i].params[d]);
            return ox_error(im, "-D %s: the model's inputs have no dim called '%s' (%s%s)",
                            defines[k].name, defines[k].name, *list ? "they have " : "none",
                            *list ? list : " is symbolic");
        }
    return true;
}

static char *close_stream(FILE *f, char **text, size_t *len)
{
    fclose(f);
    return *text;
}

bool ox_import_bound(Arena *a, const OxModel *m, const OxDefine *defines, int ndefines,
                     const char *title, const char *dims_text, const char *const *reserved,
                     int nreserved, const int64_t *probes, int nprobes, OxImport *out)
{
    OxImporter im = { .a = a, .m = m, .path = m->path, .opset = m->opset, .probes = probes,
                      .nprobes = nprobes };
    memset(out, 0, sizeof *out);
    /* the run-time dims' names, then the graph outputs': they keep theirs */
    for (int i = 0; i < nreserved; i++)
        name_add(a, &im.names, reserved[i]);
    for (int i = 0; i < m->noutputs; i++)
        if (!name_used(&im.names, te_safe(a, m->outputs[i].name)))
            name_add(a, &im.names, te_safe(a, m->outputs[i].name));
    for (int i = 0; i < m->ninits; i++) {
        const OxTensor *t = &m->inits[i];
        if (find_value(&im, t->name))
            return ox_error(&im, "initializer '%s' is given twice", t->name);
        OxValue *v = add_value(&im, t->name);
        v->kind = OXV_CONST;
        v->init = t;
        v->odtype = t->dtype;
        v->dtype = ox_te_dtype(t->dtype);
        v->rank = t->rank;
        memcpy(v->dims, t->dims, sizeof *t->dims * (size_t)t->rank);
    }
    if (!check_ops(&im) || !bind_inputs(&im, defines, ndefines))
        return false;
    int *order = arena_alloc(a, sizeof *order * (size_t)(m->nnodes + 1));
    if (!sort_nodes(&im, order))
        return false;
    for (int o = 0; o < m->noutputs; o++)
        if (find_value(&im, m->outputs[o].name))
            find_value(&im, m->outputs[o].name)->uses++;
    im.gelu_of = arena_alloc(a, sizeof *im.gelu_of * (size_t)(m->nnodes + 1));
    im.skip = arena_alloc(a, sizeof *im.skip * (size_t)(m->nnodes + 1));
    find_gelu(&im);
    im.decl = open_memstream(&im.decl_text, &im.decl_len);
    im.body = open_memstream(&im.body_text, &im.body_len);
    if (!im.decl || !im.body) {
        fprintf(stderr, "texc: out of memory\n");
        return false;
    }
    /* the run-time dims, then the real inputs, in the graph's order */
    if (dims_text)
        fputs(dims_text, im.decl);
    for (int i = 0; i < m->ninputs; i++) {
        OxValue *v = find_value(&im, m->inputs[i].name);
        if (v->kind != OXV_INPUT || empty_dim(v) >= 0)
            continue;
        fprintf(im.decl, "input %s : %s", v->te, dtype_name(v->dtype));
        for (int d = 0; d < v->rank; d++)
            fprintf(im.decl, "%s%lld", d ? ", " : "[", (long long)v->dims[d]);
        fprintf(im.decl, "%s;%s%s\n", v->rank ? "]" : "", strcmp(v->te, v->onnx) ? "  # " : "",
                strcmp(v->te, v->onnx) ? comment_text(a, v->onnx) : "");
    }
    bool ok = true;
    for (int s = 0; ok && s < m->nnodes; s++) {
        const OxNode *n = &m->nodes[order[s]];
        OxValue **in = arena_alloc(a, sizeof *in * (size_t)(n->ninputs + 1));
        OxValue **outs = arena_alloc(a, sizeof *outs * (size_t)(n->noutputs + 1));
        im.node = n;
        im.commented = false;
        for (int k = 0; k < n->ninputs; k++) {
            in[k] = *n->inputs[k] ? find_value(&im, n->inputs[k]) : NULL;
            if (in[k] && !in[k]->reader) {
                in[k]->reader = n;
                in[k]->reader_slot = k;
            }
        }
        if (im.skip[order[s]])
            continue;
        for (int k = 0; k < n->noutputs; k++) {
            outs[k] = *n->outputs[k] ? find_value(&im, n->outputs[k]) : NULL;
            if (outs[k]) {
                outs[k]->reader_slot = 0;
                outs[k]->kind = OXV_INPUT; /* not yet computed: see below */
                outs[k]->rank = -1;
            }
        }
        for (int k = 0; k < n->ninputs && !im.gelu_of[order[s]]; k++)
            if (in[k] && in[k]->rank < 0)
                ok = ox_error(&im, "input '%s' is an output of a node texc did not convert",
                              in[k]->onnx);
        if (!ok)
            break;
        /* graph outputs keep their names */
        for (int k = 0; k < n->noutputs; k++)
            for (int o = 0; outs[k] && o < m->noutputs; o++)
                if (strcmp(m->outputs[o].name, outs[k]->onnx) == 0)
                    outs[k]->te = te_safe(a, outs[k]->onnx);
        if (im.gelu_of[order[s]]) {
            OxValue *x = find_value(&im, im.gelu_of[order[s]]), *y = outs[0];
            ok = y && ox_set_shape(&im, y, x->odtype, x->rank, x->dims);
            if (ok) {
                const char *const *idx = ox_index_vars(&im, y->rank, "i");
                ox_stage(&im, y, arena_printf(a, "gelu(%s)", ox_read(&im, x, idx)));
            }
            continue;
        }
        ok = ox_lookup_op(n->op, m->opset)(&im, n, in, outs);
        /* a graph output folded to a constant is a weight (or a literal)
         * with a name of its own: the output's name is its copy's */
        for (int k = 0; ok && k < n->noutputs; k++)
            if (outs[k] && outs[k]->kind == OXV_CONST && outs[k]->te &&
                strcmp(outs[k]->te, te_safe(a, outs[k]->onnx)) == 0)
                outs[k]->te = NULL;
        for (int k = 0; ok && k < n->noutputs; k++)
            if (outs[k] && outs[k]->rank < 0)
                ok = ox_error(&im, "output %d ('%s') is not computed by texc's converter", k,
                              outs[k]->onnx);
    }
    im.node = NULL;
    for (int i = 0; ok && i < m->ninputs; i++) {
        OxValue *v = find_value(&im, m->inputs[i].name);
        if (v->kind == OXV_INPUT && empty_dim(v) >= 0)
            ok = ox_error(&im, "graph input '%s' is empty (dim %d is 0); texc takes no empty "
                               "tensors",
                          v->onnx, empty_dim(v));
    }
    /* the graph's outputs: stages of the program */
    const char *outputs = "";
    for (int o = 0; ok && o < m->noutputs; o++) {
        OxValue *v = find_value(&im, m->outputs[o].name);
        if (!v || v->rank < 0) {
            ok = ox_error(&im, "graph output '%s' is not computed by any node",
                          m->outputs[o].name);
            break;
        }
        if (empty_dim(v) >= 0) {
            ok = ox_error(&im, "graph output '%s' is empty (dim %d is 0); texc takes no empty "
                               "tensors",
                          m->outputs[o].name, empty_dim(v));
            break;
        }
        if (v->kind != OXV_STAGE || strcmp(v->te, te_safe(a, v->onnx)) != 0) {
            /* an input, a constant, or another output's stage: a copy */
            const char *const *idx = ox_index_vars(&im, v->rank, "i");
            const char *src = ox_read(&im, v, idx);
            const char *name = te_safe(a, v->onnx);
            if (v->kind == OXV_CONST && ox_elems(v) == 1)
                src = arena_printf(a, "%s(%s)", dtype_name(v->dtype), src);
            fprintf(im.body, "\n# graph output %s\n", comment_text(a, v->onnx));
            ox_aux_stage(&im, name, v->rank, v->dims, src);
            outputs = arena_printf(a, "%s%s%s", outputs, *outputs ? ", " : "", name);
            continue;
        }
        if (strstr(arena_printf(a, ", %s,", outputs), arena_printf(a, ", %s,", v->te)))
            continue;
        outputs = arena_printf(a, "%s%s%s", outputs, *outputs ? ", " : "", v->te);
    }
    close_stream(im.decl, &im.decl_text, &im.decl_len);
    close_stream(im.body, &im.body_text, &im.body_len);
    if (ok && !*outputs)
        ok = ox_error(&im, "the graph has no outputs");
    if (ok) {
        out->text = arena_printf(a,
                                 "# %s — imported from %s by texc %s\n"
                                 "# (ONNX IR %lld, opset %lld%s%s); weights are const inputs\n\n"
                                 "%s%s\noutput %s;\n",
                                 comment_text(a, title), comment_text(a, m->path), TE_VERSION,
                                 (long long)m->ir_version, (long long)m->opset,
                                 *m->producer ? ", from " : "", comment_text(a, m->producer), im.decl_text ? im.decl_text : "",
                                 im.body_text ? im.body_text : "", outputs);
        out->len = strlen(out->text);
        out->nweights = im.weights.len;
        out->weights = arena_alloc(a, sizeof *out->weights * (size_t)(im.weights.len + 1));
        for (int i = 0; i < im.weights.len; i++)
            out->weights[i] = *(OxWeight *)im.weights.items[i];
        out->onnx_names = arena_alloc(a, sizeof *out->onnx_names * (size_t)(m->ninputs + 1));
        out->te_names = arena_alloc(a, sizeof *out->te_names * (size_t)(m->ninputs + 1));
        for (int i = 0; i < m->ninputs; i++) {
            OxValue *v = find_value(&im, m->inputs[i].name);
            if (v->kind == OXV_INPUT) {
                out->onnx_names[out->nnames] = v->onnx;
                out->te_names[out->nnames++] = v->te;
            }
        }
    }
    free(im.decl_text);
    free(im.body_text);
    return ok;
}

void ox_weight_values(const OxWeight *w, double *out)
{
    int64_t n = tensor_elems(w->tensor);
    for (int64_t i = 0; i < n; i++)
        out[i] = w->init ? ox_tensor_value(w->init, i) : w->values[i];
}

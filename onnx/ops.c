/* ops.c — one converter per ONNX op, in a table keyed by (op, opset).
 *
 * A converter receives its node's input values (NULL for an omitted
 * optional input) and fills in its outputs: as constants, when every
 * input it computes from is one (so shape computations fold, node after
 * node, to numbers), or as stages of the program.  It checks what the
 * op's definition requires of its operands and says which rule a node
 * breaks.  Operands that must be known when compiling (a Reshape's shape,
 * a Slice's starts) are checked by ox_need_const, whose error names the
 * node.
 *
 * The table lists, for each op, the first opset of each definition
 * texc converts; a model's node takes the latest entry at or before the
 * model's opset.  Where two definitions differ only in where an operand
 * comes from (an attribute up to opset 12, an input from 13: Squeeze,
 * Unsqueeze, Split, ReduceSum), one converter reads IM->opset.
 */
#include <math.h>
#include <string.h>

#include "onnx/onnx.h"

#define ARENA (im->a)

/* ------------------------------------------------------------------ */
/* Helpers. */

static bool need_inputs(OxImporter *im, const OxNode *n, OxValue **in, int lo, int hi)
{
    if (n->ninputs < lo || n->ninputs > hi)
        return ox_error(im, "has %d inputs; %s takes %d to %d", n->ninputs, n->op, lo, hi);
    for (int k = 0; k < lo; k++)
        if (!in[k])
            return ox_error(im, "input %d is required", k);
    return true;
}

static bool all_const(OxValue **in, int n)
{
    for (int k = 0; k < n; k++)
        if (in[k] && in[k]->kind != OXV_CONST)
            return false;
    return true;
}

/* The constant operand V (1-D integers: axes, shapes, starts) into OUT. */
static bool const_ints(OxImporter *im, OxValue *v, const char *what, int64_t *out, int *n,
                       int max)
{
    if (!ox_need_const(im, v, what))
        return false;
    if (v->rank > 1 || ox_elems(v) > max)
        return ox_error(im, "its %s '%s' has %lld values; texc takes at most %d, in one dim",
                        what, v->onnx, (long long)ox_elems(v), max);
    double *x = ox_const_values(im, v);
    *n = (int)ox_elems(v);
    for (int i = 0; i < *n; i++) {
        if (!(fabs(x[i]) <= 9.2e18))
            return ox_error(im, "its %s '%s' holds %g, not an integer", what, v->onnx, x[i]);
        out[i] = (int64_t)x[i];
    }
    return true;
}

/* An attribute list of ints into OUT. */
static bool attr_ints(OxImporter *im, const OxNode *n, const char *name, int64_t *out, int *count,
                      int max)
{
    const OxAttr *at = ox_attr(n, name);
    *count = 0;
    if (!at)
        return true;
    if (at->type != OX_A_INTS || at->nints > max)
        return ox_error(im, "attribute '%s' is not a list of at most %d ints", name, max);
    *count = at->nints;
    memcpy(out, at->ints, sizeof *out * (size_t)at->nints);
    return true;
}

/* AXIS of a tensor of rank RANK, negative counted from the end. */
static bool norm_axis(OxImporter *im, int64_t *axis, int rank, const char *what)
{
    if (*axis < -rank || *axis >= (rank ? rank : 1))
        return ox_error(im, "%s %lld is outside a tensor of rank %d", what, (long long)*axis,
                        rank);
    if (*axis < 0)
        *axis += rank;
    return true;
}

static bool bcast_shape(OxImporter *im, OxValue **in, int n, int *rank, int64_t *dims)
{
    *rank = 0;
    for (int k = 0; k < n; k++)
        if (in[k] && in[k]->rank > *rank)
            *rank = in[k]->rank;
    for (int d = 0; d < *rank; d++)
        dims[d] = 1;
    for (int k = 0; k < n; k++) {
        if (!in[k])
            continue;
        int off = *rank - in[k]->rank;
        for (int d = 0; d < in[k]->rank; d++) {
            int64_t a = dims[off + d], b = in[k]->dims[d];
            if (a != b && a != 1 && b != 1)
                return ox_error(im, "shapes do not broadcast: dim %d is %lld and %lld", off + d,
                                (long long)a, (long long)b);
            dims[off + d] = a == 1 ? b : a;
        }
    }
    return true;
}

/* The elements of a shape not yet checked: -1 if a dim is not positive,
 * OX_MAX_ELEMS + 1 if there are more than OX_MAX_ELEMS. */
static int64_t elems_of(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (dims[d] <= 0)
            return -1;
        if (dims[d] > OX_MAX_ELEMS || n > OX_MAX_ELEMS / dims[d])
            return OX_MAX_ELEMS + 1;
        n *= dims[d];
    }
    return n;
}

/* Has a shape no elements (no dim negative, one 0)?  Only constants
 * are empty: the shapes of models' shape computations. */
static bool empty(int rank, const int64_t *dims)
{
    bool zero = false;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0)
            return false;
        zero = zero || dims[d] == 0;
    }
    return zero;
}

/* False after an error if V is an empty tensor the program would read
 * (an empty graph input). */
static bool not_empty(OxImporter *im, const OxValue *v)
{
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] == 0 && v->kind != OXV_CONST)
            return ox_error(im, "'%s' is empty (dim %d is 0); texc takes no empty tensors",
                            v->onnx, d);
    return true;
}

/* Is a constant of this shape small enough to fold? */
static bool small(int rank, const int64_t *dims)
{
    int64_t n = elems_of(rank, dims);
    return n >= 1 && n <= OX_MAX_FOLD;
}

/* The flat index into a tensor of shape (RANK, DIMS) broadcast to OUT's
 * shape, of OUT's element at flat index I. */
static int64_t bcast_index(int rank, const int64_t *dims, int orank, const int64_t *odims, int64_t i)
{
    int64_t idx = 0, stride = 1;
    for (int d = orank - 1; d >= 0; d--) {
        int64_t c = i % odims[d];
        i /= odims[d];
        int e = d - (orank - rank);
        if (e >= 0) {
            if (dims[e] != 1)
                idx += c * stride;
            stride *= dims[e];
        }
    }
    return idx;
}

static double *fold_buffer(OxImporter *im, int64_t n)
{
    return arena_alloc(im->a, sizeof(double) * (size_t)(n ? n : 1));
}

/* Is folding OUT's elements worth it (and cheap)? */
static bool foldable(OxValue **in, int n, int rank, const int64_t *dims)
{
    for (int k = 0; k < n; k++)
        if (in[k] && in[k]->kind == OXV_CONST && ox_elems(in[k]) > OX_MAX_FOLD)
            return false; /* a weight: read by a stage, not copied as doubles */
    return all_const(in, n) && small(rank, dims);
}

/* ------------------------------------------------------------------ */
/* Elementwise. */

typedef struct ElemOp {
    const char *op;
    const char *fmt;  /* te text, %s the operands */
    int arity;
    int result;       /* 0: the inputs' dtype; else OX_BOOL */
    bool floats_only;
} ElemOp;

static const ElemOp elem_ops[] = {
    { "Add", "%s + %s", 2, 0, false },
    { "Sub", "%s - %s", 2, 0, false },
    { "Mul", "%s * %s", 2, 0, false },
    { "Div", "%s / %s", 2, 0, false },
    { "Pow", "pow(%s, %s)", 2, 0, true },
    { "Equal", "%s == %s", 2, OX_BOOL, false },
    { "Less", "%s < %s", 2, OX_BOOL, false },
    { "LessOrEqual", "%s <= %s", 2, OX_BOOL, false },
    { "Greater", "%s > %s", 2, OX_BOOL, false },
    { "GreaterOrEqual", "%s >= %s", 2, OX_BOOL, false },
    { "And", "%s && %s", 2, OX_BOOL, false },
    { "Or", "%s || %s", 2, OX_BOOL, false },
    { "Min", "min(%s, %s)", 2, 0, false },
    { "Max", "max(%s, %s)", 2, 0, false },
    { "Where", "select(%s, %s, %s)", 3, 0, false },
    { "Relu", "relu(%s)", 1, 0, false },
    { "Neg", "-%s", 1, 0, false },
    { "Abs", "abs(%s)", 1, 0, false },
    { "Exp", "exp(%s)", 1, 0, true },
    { "Log", "log(%s)", 1, 0, true },
    { "Sqrt", "sqrt(%s)", 1, 0, true },
    { "Tanh", "tanh(%s)", 1, 0, true },
    { "Erf", "erf(%s)", 1, 0, true },
    { "Sigmoid", "sigmoid(%s)", 1, 0, true },
    { "Reciprocal", "1.0 / %s", 1, 0, true },
    { "Not", "!%s", 1, OX_BOOL, false },
    { "Gelu", "gelu(%s)", 1, 0, true },
    { "Identity", "%s", 1, 0, false },
};

static double fold_elem(const char *op, const double *a)
{
    double x = a[0], y = a[1];
    switch (op[0]) {
    case 'A':
        return op[1] == 'd' ? x + y : op[1] == 'n' ? (x != 0 && y != 0) : fabs(x);
    case 'S':
        return op[1] == 'u' ? x - y : op[1] == 'q' ? sqrt(x) : 1 / (1 + exp(-x));
    case 'M':
        return op[1] == 'u' ? x * y : op[1] == 'i' ? fmin(x, y) : fmax(x, y);
    case 'D':
        return x / y;
    case 'P':
        return pow(x, y);
    case 'E':
        return op[1] == 'q' ? x == y : op[1] == 'x' ? exp(x) : erf(x);
    case 'L':
        return op[1] == 'o' ? log(x) : op[4] == 'O' ? x <= y : x < y;
    case 'G':
        return op[1] == 'e' ? 0.5 * x * (1 + erf(x / M_SQRT2)) : op[7] == 'O' ? x >= y : x > y;
    case 'O':
        return x != 0 || y != 0;
    case 'W':
        return x != 0 ? y : a[2];
    case 'R':
        return op[2] == 'l' ? (x > 0 ? x : 0) : 1 / x;
    case 'N':
        return op[1] == 'e' ? -x : x == 0;
    case 'T':
        return tanh(x);
    default: /* Identity */
        return x;
    }
}

/* The width of ODTYPE's integers where ONNX's arithmetic wraps within
 * te's i32 (8, 16, or 32 for int32 and uint32); 0 for the others. */
static int wrap_bits(int odtype)
{
    switch (odtype) {
    case OX_UINT8: case OX_INT8: return 8;
    case OX_UINT16: case OX_INT16: return 16;
    case OX_INT32: case OX_UINT32: return 32;
    default: return 0;
    }
}

/* Does OP's integer result wrap when it leaves its type? */
static bool wraps(const char *op)
{
    return strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 ||
           strcmp(op, "Neg") == 0 || strcmp(op, "Abs") == 0 || strcmp(op, "Div") == 0;
}

/* V (an integer) as ODTYPE holds it when arithmetic wraps: modulo 2^bits. */
static double wrap_int(int odtype, double v)
{
    int bits = wrap_bits(odtype);
    double m = ldexp(1, bits), r = fmod(v, m);
    bool unsig = odtype == OX_UINT8 || odtype == OX_UINT16 || odtype == OX_UINT32;
    r = r < 0 ? r + m : r;
    return unsig || r < m / 2 ? r : r - m;
}

static bool cv_elementwise(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    const ElemOp *e = NULL;
    for (size_t i = 0; i < sizeof elem_ops / sizeof elem_ops[0]; i++)
        if (strcmp(elem_ops[i].op, n->op) == 0)
            e = &elem_ops[i];
    int arity = e->arity;
    bool variadic = strcmp(n->op, "Min") == 0 || strcmp(n->op, "Max") == 0;
    if (!need_inputs(im, n, in, variadic ? 1 : arity, variadic ? 8 : arity))
        return false;
    if (variadic)
        arity = n->ninputs;
    if (!out[0])
        return true;
    int rank;
    int64_t dims[OX_MAX_RANK];
    if (!bcast_shape(im, in, arity, &rank, dims))
        return false;
    OxValue *data = strcmp(n->op, "Where") == 0 ? in[1] : in[0];
    /* Pow's exponent may have any numeric type; the result has the base's */
    bool is_pow = strcmp(n->op, "Pow") == 0;
    for (int k = strcmp(n->op, "Where") == 0; k < (is_pow ? 1 : arity); k++)
        if (in[k]->dtype != data->dtype)
            return ox_error(im, "its inputs have types %s and %s", ox_dtype_name(data->odtype),
                            ox_dtype_name(in[k]->odtype));
    int odtype = e->result ? e->result : data->odtype;
    bool int_pow = is_pow && (data->odtype == OX_INT32 || data->odtype == OX_INT64);
    if (e->floats_only && !dtype_is_float(data->dtype) && !int_pow && !all_const(in, arity))
        return ox_error(im, "computes on %s; texc's %s takes floats", ox_dtype_name(data->odtype),
                        n->op);
    /* uint32 and uint64 live in i32: a difference below 0, which ONNX
       wraps to a large unsigned value, would be a negative i32 */
    if ((data->odtype == OX_UINT32 || data->odtype == OX_UINT64) && strcmp(n->op, "Sub") == 0 &&
        !all_const(in, arity))
        return ox_error(im, "subtracts %s, which texc carries in i32 (a difference below 0 "
                            "would not wrap as ONNX's does)",
                        ox_dtype_name(data->odtype));
    if (foldable(in, arity, rank, dims)) {
        int64_t total = elems_of(rank, dims);
        double *v = fold_buffer(im, total);
        double *src[8];
        for (int k = 0; k < arity; k++)
            src[k] = ox_const_values(im, in[k]);
        for (int64_t i = 0; i < total; i++) {
            double args[8] = { 0 }, acc;
            for (int k = 0; k < arity; k++)
                args[k] = src[k][bcast_index(in[k]->rank, in[k]->dims, rank, dims, i)];
            acc = args[0];
            if (variadic) {
                for (int k = 1; k < arity; k++)
                    acc = n->op[1] == 'i' ? fmin(acc, args[k]) : fmax(acc, args[k]);
            } else {
                acc = fold_elem(n->op, args);
            }
            /* integer division truncates, as te's and C's */
            if (strcmp(n->op, "Div") == 0 && !dtype_is_float(data->dtype))
                acc = args[1] == 0 ? 0 : trunc(args[0] / args[1]);
            v[i] = wrap_bits(odtype) && wraps(n->op) ? wrap_int(odtype, acc)
                                                     : ox_round(odtype, acc);
        }
        ox_set_const(im, out[0], odtype, rank, dims, v);
        return true;
    }
    if (!ox_set_shape(im, out[0], odtype, rank, dims))
        return false;
    const char *const *idx = ox_index_vars(im, rank, "i");
    const char *r[8] = { 0 };
    for (int k = 0; k < arity; k++)
        r[k] = ox_bcast_read(im, in[k], out[0], idx);
    const char *text;
    if (variadic) {
        text = r[0];
        for (int k = 1; k < arity; k++)
            text = arena_printf(ARENA, "%s(%s, %s)", n->op[1] == 'i' ? "min" : "max", text, r[k]);
    } else if (int_pow) {
        /* an integer base: in f64, exact while the power fits in 2^53,
           truncated to the base's type as ONNX's reference casts it */
        text = arena_printf(ARENA, "i32(pow(f64(%s), f64(%s)))", r[0], r[1]);
    } else if (is_pow && in[1]->kind == OXV_CONST && ox_elems(in[1]) == 1 &&
               ox_const_values(im, in[1])[0] == 2) {
        text = arena_printf(ARENA, "%s * %s", r[0], r[0]);
    } else if (is_pow && in[1]->kind == OXV_CONST && ox_elems(in[1]) == 1 &&
               ox_const_values(im, in[1])[0] == 0.5) {
        text = arena_printf(ARENA, "sqrt(%s)", r[0]);
    } else if (is_pow && in[1]->dtype != data->dtype) {
        /* an exponent of another type, in the base's float type */
        text = arena_printf(ARENA, "pow(%s, %s(%s))", r[0], dtype_name(data->dtype), r[1]);
    } else {
        /* operands in parentheses where they are expressions: a literal
           or a read binds tighter than any operator */
        text = arena_printf(ARENA, e->fmt, r[0], arity > 1 ? r[1] : "", arity > 2 ? r[2] : "");
    }
    /* te computes no arithmetic in u8 and i8: in i32, then back; int16
       and uint16 are i32 already.  Each wraps modulo 2^8 or 2^16, as ONNX
       (numpy) does, where the result can leave the type */
    bool narrow8 = data->dtype == DT_U8 || data->dtype == DT_I8;
    int bits = wrap_bits(data->odtype);
    if ((bits == 8 || bits == 16) && odtype == data->odtype && !is_pow &&
        strcmp(n->op, "Identity") != 0 && strcmp(n->op, "Where") != 0) {
        if (narrow8) {
            for (int k = 0; k < arity; k++)
                r[k] = arena_printf(ARENA, "i32(%s)", r[k]);
            if (variadic) {
                text = r[0];
                for (int k = 1; k < arity; k++)
                    text = arena_printf(ARENA, "%s(%s, %s)", n->op[1] == 'i' ? "min" : "max",
                                        text, r[k]);
            } else {
                text = arena_printf(ARENA, e->fmt, r[0], arity > 1 ? r[1] : "",
                                    arity > 2 ? r[2] : "");
            }
        }
        long m = 1L << bits;
        bool unsig = data->odtype == OX_UINT8 || data->odtype == OX_UINT16;
        if (wraps(n->op) && unsig)
            text = arena_printf(ARENA, "((%s) %% %ld + %ld) %% %ld", text, m, m, m);
        else if (wraps(n->op))
            text = arena_printf(ARENA, "((%s + %ld) %% %ld + %ld) %% %ld - %ld", text, m / 2, m,
                                m, m, m / 2);
        if (narrow8)
            text = arena_printf(ARENA, "%s(%s)", data->dtype == DT_U8 ? "u8" : "i8", text);
    }
    ox_stage(im, out[0], text);
    return true;
}

static bool cv_clip(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 1, 3))
        return false;
    OxValue *x = in[0], *lo = n->ninputs > 1 ? in[1] : NULL, *hi = n->ninputs > 2 ? in[2] : NULL;
    if ((lo && lo->rank) || (hi && hi->rank))
        return ox_error(im, "its min and max must be scalars");
    if (foldable(in, n->ninputs, x->rank, x->dims)) {
        int64_t total = ox_elems(x);
        double *v = fold_buffer(im, total), *src = ox_const_values(im, x);
        for (int64_t i = 0; i < total; i++) {
            v[i] = src[i];
            if (lo)
                v[i] = fmax(v[i], ox_const_values(im, lo)[0]);
            if (hi)
                v[i] = fmin(v[i], ox_const_values(im, hi)[0]);
        }
        ox_set_const(im, out[0], x->odtype, x->rank, x->dims, v);
        return true;
    }
    if (!ox_set_shape(im, out[0], x->odtype, x->rank, x->dims))
        return false;
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    /* te's min and max take no u8 or i8: in i32, and back, which the
       bounds (of x's type) keep exact */
    bool narrow8 = x->dtype == DT_U8 || x->dtype == DT_I8;
    const char *fmt = narrow8 ? "i32(%s)" : "%s";
    const char *t = arena_printf(ARENA, fmt, ox_read(im, x, idx));
    if (lo)
        t = arena_printf(ARENA, "max(%s, %s)", t, arena_printf(ARENA, fmt, ox_read(im, lo, idx)));
    if (hi)
        t = arena_printf(ARENA, "min(%s, %s)", t, arena_printf(ARENA, fmt, ox_read(im, hi, idx)));
    if (narrow8)
        t = arena_printf(ARENA, "%s(%s)", dtype_name(x->dtype), t);
    ox_stage(im, out[0], t);
    return true;
}

static bool cv_cast(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 1, 1))
        return false;
    int to = (int)ox_attr_int(n, "to", 0);
    OxValue *x = in[0];
    if (x->kind == OXV_CONST && ox_elems(x) <= OX_MAX_FOLD) {
        int64_t total = ox_elems(x);
        double *v = fold_buffer(im, total), *src = ox_const_values(im, x);
        for (int64_t i = 0; i < total; i++)
            v[i] = ox_round(to, src[i]);
        ox_set_const(im, out[0], to, x->rank, x->dims, v);
        return true;
    }
    if (!ox_set_shape(im, out[0], to, x->rank, x->dims))
        return false;
    const char *r = ox_read(im, x, ox_index_vars(im, x->rank, "i"));
    ox_stage(im, out[0], out[0]->dtype == x->dtype
                             ? r
                             : arena_printf(ARENA, "%s(%s)", dtype_name(out[0]->dtype), r));
    return true;
}

/* ------------------------------------------------------------------ */
/* Constants and shapes. */

static bool cv_constant(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    (void)in;
    const OxAttr *at = n->nattrs == 1 ? &n->attrs[0] : NULL;
    if (!at)
        return ox_error(im, "needs exactly one attribute (value, value_float, ...)");
    int64_t dims[1] = { 0 };
    double *v;
    if (strcmp(at->name, "value") == 0 && at->t) {
        OxValue tmp = { .init = at->t };
        if (at->t->nelems > OX_MAX_FOLD * 64)
            return ox_error(im, "its value has %lld elements", (long long)at->t->nelems);
        v = ox_const_values(im, &tmp);
        ox_set_const(im, out[0], at->t->dtype, at->t->rank, at->t->dims, v);
        if (out[0]->dtype == DT_NONE && at->t->dtype != OX_UINT64 && at->t->dtype != OX_UINT32 &&
            at->t->dtype != OX_INT16 && at->t->dtype != OX_UINT16)
            return ox_error(im, "its value has type %s", ox_dtype_name(at->t->dtype));
        return true;
    }
    if (strcmp(at->name, "value_float") == 0 || strcmp(at->name, "value_int") == 0) {
        v = fold_buffer(im, 1);
        v[0] = at->type == OX_A_FLOAT ? at->f : (double)at->i;
        ox_set_const(im, out[0], at->type == OX_A_FLOAT ? OX_FLOAT : OX_INT64, 0, dims, v);
        return true;
    }
    if (strcmp(at->name, "value_floats") == 0 || strcmp(at->name, "value_ints") == 0) {
        bool f = at->type == OX_A_FLOATS;
        dims[0] = f ? at->nfloats : at->nints;
        if (!dims[0])
            return ox_error(im, "its value is empty");
        v = fold_buffer(im, dims[0]);
        for (int i = 0; i < dims[0]; i++)
            v[i] = f ? at->floats[i] : (double)at->ints[i];
        ox_set_const(im, out[0], f ? OX_FLOAT : OX_INT64, 1, dims, v);
        return true;
    }
    return ox_error(im, "attribute '%s' is not a value texc takes", at->name);
}

static bool cv_shape(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 1, 1))
        return false;
    int rank = in[0]->rank;
    int64_t start = ox_attr_int(n, "start", 0), end = ox_attr_int(n, "end", rank);
    start = start < 0 ? start + rank : start;
    end = end < 0 ? end + rank : end;
    start = start < 0 ? 0 : start > rank ? rank : start;
    end = end < start ? start : end > rank ? rank : end;
    int64_t dims[1] = { end - start };
    double *v = fold_buffer(im, dims[0]);
    for (int64_t d = start; d < end; d++)
        v[d - start] = (double)in[0]->dims[d];
    ox_set_const(im, out[0], OX_INT64, 1, dims, v);
    return true;
}

static bool cv_size(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 1, 1))
        return false;
    double *v = fold_buffer(im, 1);
    v[0] = (double)ox_elems(in[0]);
    ox_set_const(im, out[0], OX_INT64, 0, NULL, v);
    return true;
}

static bool cv_constant_of_shape(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    int64_t dims[OX_MAX_RANK];
    int rank;
    if (!need_inputs(im, n, in, 1, 1) || !const_ints(im, in[0], "shape", dims, &rank, OX_MAX_RANK))
        return false;
    const OxAttr *at = ox_attr(n, "value");
    int odtype = at && at->t ? at->t->dtype : OX_FLOAT;
    double value = at && at->t && at->t->nelems == 1 ? ox_tensor_value(at->t, 0) : 0;
    if (empty(rank, dims)) {
        ox_set_const(im, out[0], odtype, rank, dims, fold_buffer(im, 0));
        return true;
    }
    if (!ox_set_shape(im, out[0], odtype, rank, dims))
        return false;
    int64_t total = elems_of(rank, dims);
    if (total <= OX_MAX_FOLD) {
        double *v = fold_buffer(im, total);
        for (int64_t i = 0; i < total; i++)
            v[i] = value;
        ox_set_const(im, out[0], odtype, rank, dims, v);
        return true;
    }
    ox_stage(im, out[0], arena_printf(ARENA, "%s(%s)", dtype_name(out[0]->dtype),
                                      ox_literal(im, out[0]->dtype, value)));
    return true;
}

static bool cv_range(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 3, 3))
        return false;
    for (int k = 0; k < 3; k++)
        if (!ox_need_const(im, in[k], k == 0 ? "start" : k == 1 ? "limit" : "delta"))
            return false;
    double s = ox_const_values(im, in[0])[0], l = ox_const_values(im, in[1])[0],
           d = ox_const_values(im, in[2])[0];
    double count = d == 0 ? -1 : ceil((l - s) / d);
    if (!(count >= 1 && count <= OX_MAX_FOLD))
        return ox_error(im, "Range(%g, %g, %g) would have %g elements", s, l, d, count);
    int64_t dims[1] = { (int64_t)count };
    double *v = fold_buffer(im, dims[0]);
    for (int64_t i = 0; i < dims[0]; i++)
        v[i] = ox_round(in[0]->odtype, s + (double)i * d);
    ox_set_const(im, out[0], in[0]->odtype, 1, dims, v);
    return true;
}

/* ------------------------------------------------------------------ */
/* Views: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice, Split,
 * Concat, Expand, Gather.  Each is a stage that reads its input at index
 * arithmetic of its own indices (the optimizer inlines such copies into
 * their readers where it can), or a constant. */

/* X's elements in a new shape: a constant, or a stage reading X at the
 * flat index of each element. */
static bool reshape_to(OxImporter *im, OxValue *x, OxValue *out, int rank, const int64_t *dims)
{
    if (!not_empty(im, x))
        return false;
    if (elems_of(rank, dims) != ox_elems(x))
        return ox_error(im, "cannot reshape %lld elements to %lld", (long long)ox_elems(x),
                        (long long)elems_of(rank, dims));
    if (x->kind == OXV_CONST) {
        /* the same values (an initializer's stay where they lie) */
        ox_set_const(im, out, x->odtype, rank, dims, x->konst);
        out->init = x->init;
        return true;
    }
    if (!ox_set_shape(im, out, x->odtype, rank, dims))
        return false;
    const char *const *idx = ox_index_vars(im, rank, "i");
    const char *src[OX_MAX_RANK];
    /* dims of size 1 carry no index; the others go in groups whose
       products agree, each group one flat index */
    int i = 0, o = 0;
    while (i < x->rank || o < rank) {
        while (i < x->rank && x->dims[i] == 1)
            src[i++] = "0";
        while (o < rank && dims[o] == 1)
            o++;
        if (i >= x->rank || o >= rank)
            break;
        int i0 = i, o0 = o;
        int64_t pi = x->dims[i++], po = dims[o++];
        while (pi != po) {
            if (pi < po)
                pi *= x->dims[i++];
            else
                po *= dims[o++];
        }
        if (i - i0 == 1 && o - o0 == 1) {
            src[i0] = idx[o0];
            continue;
        }
        const char *flat = NULL;
        for (int k = o0; k < o; k++) {
            if (dims[k] == 1)
                continue;
            flat = flat ? arena_printf(ARENA, "%s * %lld + %s", flat, (long long)dims[k], idx[k])
                        : idx[k];
            if (k + 1 < o)
                flat = arena_printf(ARENA, "(%s)", flat);
        }
        int64_t stride = 1;
        for (int k = i - 1; k >= i0; k--) {
            if (x->dims[k] == 1) {
                src[k] = "0";
                continue;
            }
            const char *t = stride == 1 ? flat : arena_printf(ARENA, "(%s) / %lld", flat, (long long)stride);
            src[k] = k == i0 ? t : arena_printf(ARENA, "(%s) %% %lld", t, (long long)x->dims[k]);
            stride *= x->dims[k];
        }
    }
    ox_stage(im, out, ox_read(im, x, src));
    return true;
}

/* The one node that reads V other than Shape nodes (which read only its
 * ONNX shape), or NULL: none, more, or a graph output among them. */
static const OxNode *only_reader(OxImporter *im, const OxValue *v)
{
    const OxNode *r = NULL;
    int refs = 0;
    for (int i = 0; i < im->m->nnodes; i++)
        for (int k = 0; k < im->m->nodes[i].ninputs; k++)
            if (strcmp(im->m->nodes[i].inputs[k], v->onnx) == 0) {
                refs++;
                if (strcmp(im->m->nodes[i].op, "Shape") == 0)
                    continue;
                if (r)
                    return NULL;
                r = &im->m->nodes[i];
            }
    return refs == v->uses ? r : NULL;
}

/* The rows of X as [rows, K]: the leading dims ROWS (*M of them) whose
 * product is the rows, the last of them split from X's dim *M - 1 by
 * *SPLIT when that dim holds both rows and K's part (PyTorch's [seq,
 * batch * heads, d] viewed as [seq * batch, heads * d]; *SPLIT 1 when
 * not).  False when X's trailing dims do not make K so. */
static bool row_shape(const OxValue *x, int64_t K, int64_t *rows, int *m, int64_t *split)
{
    int64_t tail = 1;
    int p = x->rank;
    while (p > 0 && tail * x->dims[p - 1] <= K && tail < K)
        tail *= x->dims[--p];
    *split = 1;
    if (tail != K) {
        if (p == 0 || K % tail || x->dims[p - 1] % (K / tail))
            return false;
        *split = K / tail; /* dim p - 1 is rows' last times SPLIT */
    }
    *m = p;
    if (*m == 0)
        return false;
    memcpy(rows, x->dims, sizeof *rows * (size_t)*m);
    if (*split != 1)
        rows[*m - 1] = x->dims[*m - 1] / *split;
    return true;
}

/* Reshape(X, [rows, K]) -> Gemm -> Reshape back to the rows' dims,
 * PyTorch's linear layer on a [seq, batch, K] tensor (the output
 * projection of its multi-head attention), with a run-time dim among
 * the rows' dims after the first: the flat rows' index would divide by
 * it, which te's indices cannot.  Then the first Reshape writes nothing
 * (OUT holds X: rows_of), the Gemm is a product over X's rows in their
 * own dims (flat), and the second Reshape is a copy of it.  Static sizes
 * keep the 2-D product, the form of texc's matmul micro-kernel. */
static bool held_rows(OxImporter *im, OxValue *x, OxValue *out, int rank, const int64_t *dims)
{
    int64_t rows[OX_MAX_RANK], split;
    int m;
    if (rank != 2 || x->kind == OXV_CONST || !dtype_is_float(x->dtype) ||
        !row_shape(x, dims[1], rows, &m, &split) || m < 2)
        return false;
    bool inner_probe = false;
    int64_t n = 1;
    for (int d = 0; d < m; d++) {
        inner_probe = inner_probe || (d > 0 && ox_is_probe(im, rows[d]));
        n *= rows[d];
    }
    if (!inner_probe || n != dims[0])
        return false;
    const OxNode *g = only_reader(im, out);
    if (!g || strcmp(g->op, "Gemm") || g->ninputs < 2 || strcmp(g->inputs[0], out->onnx) ||
        ox_attr_int(g, "transA", 0) || g->noutputs < 1)
        return false;
    int i = strmap_get(&im->value_index, g->outputs[0]);
    const OxNode *r = i < 0 ? NULL : only_reader(im, im->values.items[i]);
    if (!r || strcmp(r->op, "Reshape"))
        return false;
    if (!ox_set_shape(im, out, x->odtype, rank, dims))
        return false;
    out->rows_of = x;
    out->kind = OXV_STAGE;
    return true;
}

static bool cv_reshape(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    int64_t dims[OX_MAX_RANK];
    int rank;
    if (!need_inputs(im, n, in, 2, 2) || !const_ints(im, in[1], "shape", dims, &rank, OX_MAX_RANK) ||
        !not_empty(im, in[0]))
        return false;
    int infer = -1;
    int64_t known = 1;
    bool allowzero = ox_attr_int(n, "allowzero", 0) != 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 0 && !allowzero) {
            if (d >= in[0]->rank)
                return ox_error(im, "shape entry %d is 0 (copy) past the input's rank", d);
            dims[d] = in[0]->dims[d];
        }
        if (dims[d] == -1) {
            if (infer >= 0)
                return ox_error(im, "its shape has two -1 entries");
            infer = d;
            continue;
        }
        if (dims[d] <= 0)
            return ox_error(im, "shape entry %d is %lld", d, (long long)dims[d]);
        known = known > OX_MAX_ELEMS / dims[d] ? OX_MAX_ELEMS + 1 : known * dims[d];
    }
    if (infer >= 0) {
        if (known > OX_MAX_ELEMS || ox_elems(in[0]) % known)
            return ox_error(im, "cannot infer the -1 of its shape: %lld elements", (long long)ox_elems(in[0]));
        dims[infer] = ox_elems(in[0]) / known;
    }
    if (in[0]->held_rank) { /* a held_rows Gemm, back in its rows' dims */
        bool same = rank == in[0]->held_rank;
        for (int d = 0; same && d < rank; d++)
            same = dims[d] == in[0]->held_dims[d];
        if (!same)
            return ox_error(im, "reshapes a linear layer's rows to other dims than its input's; "
                                "texc keeps the rows in their input's dims where a run-time dim "
                                "is among them");
        if (!ox_set_shape(im, out[0], in[0]->odtype, rank, dims))
            return false;
        const char *const *idx = ox_index_vars(im, rank, "i");
        const char *read = arena_printf(ARENA, "%s[", in[0]->te);
        for (int d = 0; d < rank; d++)
            read = arena_printf(ARENA, "%s%s%s", read, d ? ", " : "", idx[d]);
        ox_stage(im, out[0], arena_printf(ARENA, "%s]", read));
        return true;
    }
    if (held_rows(im, in[0], out[0], rank, dims))
        return true;
    return reshape_to(im, in[0], out[0], rank, dims);
}

static bool cv_flatten(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 1, 1))
        return false;
    int64_t axis = ox_attr_int(n, "axis", 1);
    if (axis < -in[0]->rank || axis > in[0]->rank)
        return ox_error(im, "axis %lld is outside rank %d", (long long)axis, in[0]->rank);
    if (axis < 0)
        axis += in[0]->rank;
    int64_t dims[2] = { elems_of((int)axis, in[0]->dims), 1 };
    dims[1] = ox_elems(in[0]) / dims[0];
    return reshape_to(im, in[0], out[0], 2, dims);
}

/* Squeeze and Unsqueeze: axes from an attribute (opset < 13) or input 1. */
static bool axes_operand(OxImporter *im, const OxNode *n, OxValue **in, int64_t *axes, int *naxes)
{
    *naxes = 0;
    if (im->opset < 13)
        return attr_ints(im, n, "axes", axes, naxes, OX_MAX_RANK);
    if (n->ninputs > 1 && in[1])
        return const_ints(im, in[1], "axes", axes, naxes, OX_MAX_RANK);
    return true;
}

static bool cv_squeeze(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    int64_t axes[OX_MAX_RANK], dims[OX_MAX_RANK];
    int naxes, rank = 0;
    if (!need_inputs(im, n, in, 1, 2) || !axes_operand(im, n, in, axes, &naxes))
        return false;
    bool drop[OX_MAX_RANK] = { false };
    for (int k = 0; k < naxes; k++) {
        if (!norm_axis(im, &axes[k], in[0]->rank, "axis"))
            return false;
        if (in[0]->dims[axes[k]] != 1)
            return ox_error(im, "cannot squeeze dim %lld of size %lld", (long long)axes[k],
                            (long long)in[0]->dims[axes[k]]);
        drop[axes[k]] = true;
    }
    for (int d = 0; d < in[0]->rank; d++)
        if (!(naxes ? drop[d] : in[0]->dims[d] == 1))
            dims[rank++] = in[0]->dims[d];
    return reshape_to(im, in[0], out[0], rank, dims);
}

static bool cv_unsqueeze(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    int64_t axes[OX_MAX_RANK], dims[OX_MAX_RANK];
    int naxes;
    if (!need_inputs(im, n, in, 1, 2) || !axes_operand(im, n, in, axes, &naxes))
        return false;
    int rank = in[0]->rank + naxes;
    if (rank > OX_MAX_RANK)
        return ox_error(im, "would have rank %d", rank);
    bool add[OX_MAX_RANK] = { false };
    for (int k = 0; k < naxes; k++) {
        if (!norm_axis(im, &axes[k], rank, "axis"))
            return false;
        if (add[axes[k]])
            return ox_error(im, "axis %lld is given twice", (long long)axes[k]);
        add[axes[k]] = true;
    }
    for (int d = 0, s = 0; d < rank; d++)
        dims[d] = add[d] ? 1 : in[0]->dims[s++];
    return reshape_to(im, in[0], out[0], rank, dims);
}

static bool cv_transpose(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    int64_t perm[OX_MAX_RANK], dims[OX_MAX_RANK];
    int np;
    if (!need_inputs(im, n, in, 1, 1) || !attr_ints(im, n, "perm", perm, &np, OX_MAX_RANK))
        return false;
    OxValue *x = in[0];
    int rank = x->rank;
    if (!ox_attr(n, "perm"))
        for (int d = 0; d < rank; d++)
            perm[d] = rank - 1 - d;
    else if (np != rank)
        return ox_error(im, "perm has %d entries for rank %d", np, rank);
    bool seen[OX_MAX_RANK] = { false };
    for (int d = 0; d < rank; d++) {
        if (perm[d] < 0 || perm[d] >= rank || seen[perm[d]])
            return ox_error(im, "perm is not a permutation of 0..%d", rank - 1);
        seen[perm[d]] = true;
        dims[d] = x->dims[perm[d]];
    }
    if (x->kind == OXV_CONST && ox_elems(x) <= OX_MAX_FOLD) {
        int64_t total = ox_elems(x);
        double *v = fold_buffer(im, total), *src = ox_const_values(im, x);
        int64_t stride[OX_MAX_RANK];
        for (int d = rank - 1, s = 1; d >= 0; d--) {
            stride[d] = s;
            s *= (int)x->dims[d];
        }
        for (int64_t i = 0; i < total; i++) {
            int64_t rest = i, at = 0;
            for (int d = rank - 1; d >= 0; d--) {
                at += (rest % dims[d]) * stride[perm[d]];
                rest /= dims[d];
            }
            v[i] = src[at];
        }
        ox_set_const(im, out[0], x->odtype, rank, dims, v);
        return true;
    }
    if (!ox_set_shape(im, out[0], x->odtype, rank, dims))
        return false;
    const char *const *idx = ox_index_vars(im, rank, "i");
    const char *src[OX_MAX_RANK];
    for (int d = 0; d < rank; d++)
        src[perm[d]] = idx[d];
    ox_stage(im, out[0], ox_read(im, x, src));
    return true;
}

/* Reads X at IDX, except along AXIS, where at START + idx * STEP; a
 * constant when X is one. */
static bool slice_of(OxImporter *im, OxValue *x, OxValue *out, const int64_t *start,
                     const int64_t *step, const int64_t *dims)
{
    int rank = x->rank;
    if (x->kind == OXV_CONST && empty(rank, dims)) {
        ox_set_const(im, out, x->odtype, rank, dims, fold_buffer(im, 0));
        return true;
    }
    if (x->kind == OXV_CONST && small(rank, dims) && ox_elems(x) <= OX_MAX_FOLD) {
        int64_t total = elems_of(rank, dims);
        double *v = fold_buffer(im, total), *src = ox_const_values(im, x);
        for (int64_t i = 0; i < total; i++) {
            int64_t rest = i, at = 0, stride = 1;
            for (int d = rank - 1; d >= 0; d--) {
                at += (start[d] + (rest % dims[d]) * step[d]) * stride;
                rest /= dims[d];
                stride *= x->dims[d];
            }
            v[i] = src[at];
        }
        ox_set_const(im, out, x->odtype, rank, dims, v);
        return true;
    }
    if (!ox_set_shape(im, out, x->odtype, rank, dims))
        return false;
    const char *const *idx = ox_index_vars(im, rank, "i");
    const char *src[OX_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        const char *t = step[d] == 1 ? idx[d] : arena_printf(ARENA, "%s * %lld", idx[d], (long long)step[d]);
        src[d] = start[d] == 0 ? t
                 : step[d] == 1 ? arena_printf(ARENA, "%s + %lld", t, (long long)start[d])
                                : arena_printf(ARENA, "%lld + %s", (long long)start[d], t);
        if (step[d] == -1)
            src[d] = arena_printf(ARENA, "%lld - %s", (long long)start[d], idx[d]);
        else if (step[d] < 0)
            src[d] = arena_printf(ARENA, "%lld - %s * %lld", (long long)start[d], idx[d],
                                  (long long)-step[d]);
        if (x->dims[d] == 1)
            src[d] = "0";
    }
    ox_stage(im, out, ox_read(im, x, src));
    return true;
}

static bool cv_slice(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 3, 5))
        return false;
    OxValue *x = in[0];
    int rank = x->rank, ns, ne, na = 0, nt = 0;
    int64_t starts[OX_MAX_RANK], ends[OX_MAX_RANK], axes[OX_MAX_RANK], steps[OX_MAX_RANK];
    int64_t start[OX_MAX_RANK], step[OX_MAX_RANK], dims[OX_MAX_RANK];
    if (!const_ints(im, in[1], "starts", starts, &ns, OX_MAX_RANK) ||
        !const_ints(im, in[2], "ends", ends, &ne, OX_MAX_RANK) ||
        (n->ninputs > 3 && in[3] && !const_ints(im, in[3], "axes", axes, &na, OX_MAX_RANK)) ||
        (n->ninputs > 4 && in[4] && !const_ints(im, in[4], "steps", steps, &nt, OX_MAX_RANK)))
        return false;
    if (ne != ns || (na && na != ns) || (nt && nt != ns))
        return ox_error(im, "starts, ends, axes and steps differ in length");
    for (int d = 0; d < rank; d++) {
        start[d] = 0;
        step[d] = 1;
        dims[d] = x->dims[d];
    }
    bool seen[OX_MAX_RANK] = { false };
    for (int k = 0; k < ns; k++) {
        int64_t axis = na ? axes[k] : k, s = nt ? steps[k] : 1, dim;
        if (!norm_axis(im, &axis, rank, "axis"))
            return false;
        if (seen[axis])
            return ox_error(im, "axis %lld is sliced twice", (long long)axis);
        seen[axis] = true;
        if (s == 0)
            return ox_error(im, "step 0");
        dim = x->dims[axis];
        int64_t b = starts[k], e = ends[k];
        b = b < 0 ? b + dim : b;
        e = e < 0 ? e + dim : e;
        if (s > 0) {
            b = b < 0 ? 0 : b > dim ? dim : b;
            e = e < 0 ? 0 : e > dim ? dim : e;
        } else {
            b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        }
        int64_t count = s > 0 ? (e - b + s - 1) / s : (b - e + (-s) - 1) / (-s);
        if (count <= 0 && x->kind == OXV_CONST)
            count = 0; /* an empty constant (a shape's empty prefix) */
        else if (count <= 0)
            return ox_error(im, "slice %lld..%lld step %lld of dim %lld is empty", (long long)starts[k],
                            (long long)ends[k], (long long)s, (long long)axis);
        start[axis] = b;
        step[axis] = s;
        dims[axis] = count;
    }
    return slice_of(im, x, out[0], start, step, dims);
}

static bool cv_split(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 1, 2))
        return false;
    OxValue *x = in[0];
    int64_t axis = ox_attr_int(n, "axis", 0), sizes[64];
    int ns = 0;
    if (!norm_axis(im, &axis, x->rank, "axis"))
        return false;
    if (n->noutputs > 64)
        return ox_error(im, "has %d outputs", n->noutputs);
    if (!not_empty(im, x))
        return false;
    if (im->opset >= 13 && n->ninputs > 1 && in[1]) {
        if (!const_ints(im, in[1], "split", sizes, &ns, 64))
            return false;
    } else if (im->opset < 13 && !attr_ints(im, n, "split", sizes, &ns, 64)) {
        return false;
    }
    if (!ns) {
        ns = n->noutputs;
        int64_t each = (x->dims[axis] + ns - 1) / ns;
        for (int k = 0; k < ns; k++)
            sizes[k] = k + 1 < ns ? each : x->dims[axis] - each * (ns - 1);
    }
    if (ns != n->noutputs)
        return ox_error(im, "splits into %d parts but has %d outputs", ns, n->noutputs);
    int64_t at = 0;
    for (int k = 0; k < ns; k++) {
        if (sizes[k] <= 0 || sizes[k] > x->dims[axis] - at)
            return ox_error(im, "its parts do not add up to dim %lld (%lld)", (long long)axis,
                            (long long)x->dims[axis]);
        at += sizes[k];
    }
    if (at != x->dims[axis])
        return ox_error(im, "its parts add up to %lld, not dim %lld's %lld", (long long)at,
                        (long long)axis, (long long)x->dims[axis]);
    at = 0;
    for (int k = 0; k < ns; k++) {
        int64_t start[OX_MAX_RANK] = { 0 }, step[OX_MAX_RANK], dims[OX_MAX_RANK];
        for (int d = 0; d < x->rank; d++) {
            step[d] = 1;
            dims[d] = x->dims[d];
        }
        start[axis] = at;
        dims[axis] = sizes[k];
        at += sizes[k];
        if (out[k] && !slice_of(im, x, out[k], start, step, dims))
            return false;
    }
    return true;
}

static bool cv_concat(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 1, 1 << 16))
        return false;
    int64_t axis = ox_attr_int(n, "axis", 0), dims[OX_MAX_RANK];
    OxValue *x = in[0];
    if (!norm_axis(im, &axis, x->rank, "axis"))
        return false;
    memcpy(dims, x->dims, sizeof *dims * (size_t)x->rank);
    dims[axis] = 0;
    for (int k = 0; k < n->ninputs; k++) {
        if (!in[k])
            return ox_error(im, "input %d is missing", k);
        if (in[k]->rank != x->rank || in[k]->dtype != x->dtype)
            return ox_error(im, "input %d has another rank or type than input 0", k);
        for (int d = 0; d < x->rank; d++)
            if (d != axis && in[k]->dims[d] != x->dims[d])
                return ox_error(im, "input %d differs from input 0 in dim %d", k, d);
        if (dims[axis] > OX_MAX_ELEMS - in[k]->dims[axis])
            return ox_error(im, "is too long");
        dims[axis] += in[k]->dims[axis];
    }
    if (all_const(in, n->ninputs) && empty(x->rank, dims)) {
        ox_set_const(im, out[0], x->odtype, x->rank, dims, fold_buffer(im, 0));
        return true;
    }
    if (foldable(in, n->ninputs, x->rank, dims)) {
        int64_t total = elems_of(x->rank, dims), outer = elems_of((int)axis, dims);
        int64_t inner = elems_of(x->rank - (int)axis - 1, dims + axis + 1);
        double *v = fold_buffer(im, total), *p = v;
        for (int64_t o = 0; o < outer; o++)
            for (int k = 0; k < n->ninputs; k++) {
                int64_t len = in[k]->dims[axis] * inner;
                memcpy(p, ox_const_values(im, in[k]) + o * len, sizeof *p * (size_t)len);
                p += len;
            }
        ox_set_const(im, out[0], x->odtype, x->rank, dims, v);
        return true;
    }
    if (!ox_set_shape(im, out[0], x->odtype, x->rank, dims))
        return false;
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    const char *text = ox_literal(im, x->dtype, 0);
    int64_t end = dims[axis];
    int parts = 0;
    for (int k = 0; k < n->ninputs; k++)
        parts += in[k]->dims[axis] > 0;
    for (int k = n->ninputs - 1; k >= 0; k--) {
        if (in[k]->dims[axis] == 0)
            continue; /* an empty constant adds nothing */
        int64_t begin = end - in[k]->dims[axis];
        const char *src[OX_MAX_RANK];
        memcpy(src, idx, sizeof *src * (size_t)x->rank);
        src[axis] = begin ? arena_printf(ARENA, "%s - %lld", idx[axis], (long long)begin) : idx[axis];
        if (in[k]->dims[axis] == 1)
            src[axis] = "0";
        const char *r = ox_read(im, in[k], src);
        if (parts == 1)
            text = r;
        else
            text = arena_printf(ARENA, "select(%s >= %lld && %s < %lld, %s, %s)", idx[axis],
                                (long long)begin, idx[axis], (long long)end, r, text);
        end = begin;
    }
    ox_stage(im, out[0], text);
    return true;
}

/* Are constant indices IX (Gather's, GatherElements') within dim AXIS of
 * size LEN, counting from its end where negative?  False after the
 * error naming the first that is not. */
static bool const_indices_in(OxImporter *im, OxValue *ix, int64_t axis, int64_t len)
{
    if (ix->kind != OXV_CONST)
        return true;
    double *iv = ox_const_values(im, ix);
    for (int64_t i = 0; i < ox_elems(ix); i++)
        if (iv[i] < -len || iv[i] >= len)
            return ox_error(im, "index %g is outside dim %lld of size %lld", iv[i], (long long)axis,
                            (long long)len);
    return true;
}

static bool cv_expand(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    int64_t shape[OX_MAX_RANK], dims[OX_MAX_RANK];
    int ns, rank;
    if (!need_inputs(im, n, in, 2, 2) || !const_ints(im, in[1], "shape", shape, &ns, OX_MAX_RANK))
        return false;
    OxValue tmp = { .onnx = in[1]->onnx, .rank = ns };
    memcpy(tmp.dims, shape, sizeof *shape * (size_t)ns);
    OxValue *both[2] = { in[0], &tmp };
    if (!bcast_shape(im, both, 2, &rank, dims))
        return false;
    OxValue *x = in[0];
    if (x->kind == OXV_CONST && small(rank, dims) && ox_elems(x) <= OX_MAX_FOLD) {
        int64_t total = elems_of(rank, dims);
        double *v = fold_buffer(im, total), *src = ox_const_values(im, x);
        for (int64_t i = 0; i < total; i++)
            v[i] = src[bcast_index(x->rank, x->dims, rank, dims, i)];
        ox_set_const(im, out[0], x->odtype, rank, dims, v);
        return true;
    }
    if (!ox_set_shape(im, out[0], x->odtype, rank, dims))
        return false;
    ox_stage(im, out[0], ox_bcast_read(im, x, out[0], ox_index_vars(im, rank, "i")));
    return true;
}

static bool cv_gather(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 2, 2))
        return false;
    OxValue *x = in[0], *ix = in[1];
    int64_t axis = ox_attr_int(n, "axis", 0), dims[OX_MAX_RANK];
    if (!norm_axis(im, &axis, x->rank, "axis"))
        return false;
    int rank = x->rank - 1 + ix->rank;
    if (rank > OX_MAX_RANK)
        return ox_error(im, "would have rank %d", rank);
    if (dtype_is_float(ix->dtype))
        return ox_error(im, "its indices are %s", ox_dtype_name(ix->odtype));
    for (int d = 0, o = 0; d < x->rank; d++) {
        if (d == axis)
            for (int e = 0; e < ix->rank; e++)
                dims[o++] = ix->dims[e];
        else
            dims[o++] = x->dims[d];
    }
    int64_t len = x->dims[axis];
    if (!const_indices_in(im, ix, axis, len))
        return false;
    if (foldable(in, 2, rank, dims)) {
        int64_t total = elems_of(rank, dims), inner = elems_of(x->rank - (int)axis - 1, x->dims + axis + 1);
        int64_t ni = ox_elems(ix);
        double *v = fold_buffer(im, total), *src = ox_const_values(im, x), *iv = ox_const_values(im, ix);
        for (int64_t i = 0; i < total; i++) {
            int64_t in_ = i % inner, rest = i / inner, j = rest % ni, outer = rest / ni;
            int64_t k = (int64_t)iv[j] < 0 ? (int64_t)iv[j] + len : (int64_t)iv[j];
            v[i] = src[(outer * len + k) * inner + in_];
        }
        ox_set_const(im, out[0], x->odtype, rank, dims, v);
        return true;
    }
    if (!ox_set_shape(im, out[0], x->odtype, rank, dims))
        return false;
    const char *const *idx = ox_index_vars(im, rank, "i");
    const char *src[OX_MAX_RANK], *ixs[OX_MAX_RANK];
    for (int d = 0; d < x->rank; d++)
        src[d] = idx[d < axis ? d : d + ix->rank - 1];
    for (int e = 0; e < ix->rank; e++)
        ixs[e] = idx[axis + e];
    if (ix->kind == OXV_CONST && ox_elems(ix) == 1) {
        int64_t k = (int64_t)ox_const_values(im, ix)[0];
        src[axis] = arena_printf(ARENA, "%lld", (long long)(k < 0 ? k + len : k));
        ox_stage(im, out[0], ox_read(im, x, src));
        return true;
    }
    /* indices known only at run time (an embedding): a true gather, a
       read at the index read from IX.  ONNX counts a negative index from
       the end; te clamps what is still out of range into the axis
       (doc/language.md, "Gathers"), where ONNX leaves it undefined. */
    const char *which = ox_read(im, ix, ixs);
    src[axis] = arena_printf(ARENA, "select(%s < 0, %s + %lld, %s)", which, which, (long long)len,
                             which);
    ox_stage(im, out[0], ox_read(im, x, src));
    return true;
}

/* GatherElements: out[i..] = x[i..] with the index along AXIS read from
 * ix[i..]; out has ix's shape.  Run-time indices are a gather, negative
 * ones counted from the end as in Gather. */
static bool cv_gather_elements(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 2, 2))
        return false;
    OxValue *x = in[0], *ix = in[1];
    int64_t axis = ox_attr_int(n, "axis", 0);
    if (!norm_axis(im, &axis, x->rank, "axis"))
        return false;
    if (ix->rank != x->rank)
        return ox_error(im, "its indices have rank %d, its data %d", ix->rank, x->rank);
    if (dtype_is_float(ix->dtype))
        return ox_error(im, "its indices are %s", ox_dtype_name(ix->odtype));
    for (int d = 0; d < x->rank; d++)
        if (d != axis && ix->dims[d] > x->dims[d])
            return ox_error(im, "its indices have %lld entries along dim %d, its data %lld",
                            (long long)ix->dims[d], d, (long long)x->dims[d]);
    int64_t len = x->dims[axis];
    if (!const_indices_in(im, ix, axis, len))
        return false;
    if (foldable(in, 2, ix->rank, ix->dims)) {
        int64_t total = ox_elems(ix);
        double *v = fold_buffer(im, total), *src = ox_const_values(im, x), *iv = ox_const_values(im, ix);
        for (int64_t i = 0; i < total; i++) {
            int64_t rest = i, at = 0, stride = 1;
            for (int d = ix->rank - 1; d >= 0; d--) {
                int64_t k = rest % ix->dims[d];
                rest /= ix->dims[d];
                if (d == axis)
                    k = (int64_t)iv[i] < 0 ? (int64_t)iv[i] + len : (int64_t)iv[i];
                at += k * stride;
                stride *= x->dims[d];
            }
            v[i] = src[at];
        }
        ox_set_const(im, out[0], x->odtype, ix->rank, ix->dims, v);
        return true;
    }
    if (!ox_set_shape(im, out[0], x->odtype, ix->rank, ix->dims))
        return false;
    const char *const *idx = ox_index_vars(im, ix->rank, "i");
    const char *src[OX_MAX_RANK];
    const char *which = ox_read(im, ix, idx);
    for (int d = 0; d < x->rank; d++)
        src[d] = idx[d];
    src[axis] = arena_printf(ARENA, "select(%s < 0, %s + %lld, %s)", which, which, (long long)len,
                             which);
    ox_stage(im, out[0], ox_read(im, x, src));
    return true;
}

/* ------------------------------------------------------------------ */
/* Matrix products. */

/* x[..., K] @ w[K, N], a linear layer on a batch of rows, as one 2-D
 * product over all the rows (the form of texc's matmul micro-kernel and
 * weight packing) between two views the optimizer inlines: a product
 * over [S, 1, K] rows kept 3-D ran ten times slower (BERT's q/k/v). */
static bool rows_matmul(OxImporter *im, OxValue *a, OxValue *b, OxValue *out)
{
    int64_t K = a->dims[a->rank - 1], N = b->dims[1], rows = elems_of(a->rank - 1, a->dims);
    int64_t ad[2] = { rows, K }, md[2] = { rows, N }, od[OX_MAX_RANK];
    memcpy(od, a->dims, sizeof *od * (size_t)(a->rank - 1));
    od[a->rank - 1] = N;
    ox_name(im, out);
    OxValue *a2 = arena_alloc(ARENA, sizeof *a2), *mm = arena_alloc(ARENA, sizeof *mm);
    a2->onnx = a2->te = ox_aux_name(im, out, "rows");
    mm->onnx = mm->te = ox_aux_name(im, out, "mm");
    if (!reshape_to(im, a, a2, 2, ad) || !ox_set_shape(im, mm, a->odtype, 2, md))
        return false;
    const char *const *idx = ox_index_vars(im, 2, "i");
    const char *sa[2] = { idx[0], "_k0" }, *sb[2] = { "_k0", idx[1] };
    ox_stage(im, mm, arena_printf(ARENA, "sum(_k0 in %lld) %s * %s", (long long)K,
                                  ox_read(im, a2, sa), ox_read(im, b, sb)));
    return reshape_to(im, mm, out, a->rank, od);
}

static bool cv_matmul(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 2, 2))
        return false;
    OxValue *a = in[0], *b = in[1];
    if (a->rank < 1 || b->rank < 1)
        return ox_error(im, "its operands must have rank 1 or more");
    if (!dtype_is_float(a->dtype) || a->dtype != b->dtype)
        return ox_error(im, "multiplies %s by %s; texc takes floats of one type",
                        ox_dtype_name(a->odtype), ox_dtype_name(b->odtype));
    int64_t K = a->dims[a->rank - 1], kb = b->dims[b->rank >= 2 ? b->rank - 2 : 0];
    if (K != kb)
        return ox_error(im, "inner dims differ: %lld and %lld", (long long)K, (long long)kb);
    /* the rows' flat index divides by every dim but the first: a run-time
       one there keeps the product batched (symdims.c) */
    bool inner_probe = false;
    for (int d = 1; d < a->rank - 1; d++)
        inner_probe = inner_probe || ox_is_probe(im, a->dims[d]);
    if (a->rank > 2 && b->rank == 2 && !inner_probe)
        return rows_matmul(im, a, b, out[0]);
    /* batch dims broadcast */
    OxValue ba = { .rank = a->rank > 2 ? a->rank - 2 : 0 }, bb = { .rank = b->rank > 2 ? b->rank - 2 : 0 };
    memcpy(ba.dims, a->dims, sizeof *a->dims * (size_t)ba.rank);
    memcpy(bb.dims, b->dims, sizeof *b->dims * (size_t)bb.rank);
    OxValue *both[2] = { &ba, &bb };
    int rank;
    int64_t dims[OX_MAX_RANK];
    if (!bcast_shape(im, both, 2, &rank, dims))
        return false;
    int nb = rank;
    if (a->rank >= 2)
        dims[rank++] = a->dims[a->rank - 2];
    if (b->rank >= 2)
        dims[rank++] = b->dims[b->rank - 1];
    if (!ox_set_shape(im, out[0], a->odtype, rank, dims))
        return false;
    const char *const *idx = ox_index_vars(im, rank, "i");
    const char *sa[OX_MAX_RANK], *sb[OX_MAX_RANK];
    for (int d = 0; d < ba.rank; d++)
        sa[d] = ba.dims[d] == 1 && dims[nb - ba.rank + d] != 1 ? "0" : idx[nb - ba.rank + d];
    for (int d = 0; d < bb.rank; d++)
        sb[d] = bb.dims[d] == 1 && dims[nb - bb.rank + d] != 1 ? "0" : idx[nb - bb.rank + d];
    if (a->rank >= 2)
        sa[a->rank - 2] = idx[nb];
    sa[a->rank - 1] = "_k0";
    if (b->rank >= 2) {
        sb[b->rank - 2] = "_k0";
        sb[b->rank - 1] = idx[rank - 1];
    } else {
        sb[0] = "_k0";
    }
    ox_stage(im, out[0], arena_printf(ARENA, "sum(_k0 in %lld) %s * %s", (long long)K,
                                      ox_read(im, a, sa), ox_read(im, b, sb)));
    return true;
}

/* Gemm(Reshape(X, [rows, K]), B, C) over X's rows in X's dims: OUT is
 * X's leading dims and N, held for the Reshape back (held_rows). */
static bool gemm_rows(OxImporter *im, OxValue *x, OxValue *b, OxValue *c, bool tb, double alpha,
                      double beta, OxValue *out)
{
    int64_t K = b->rank == 2 ? b->dims[tb] : 0, N = b->rank == 2 ? b->dims[!tb] : 0;
    int64_t rows[OX_MAX_RANK], split;
    int m;
    if (b->rank != 2 || !row_shape(x, K, rows, &m, &split))
        return ox_error(im, "its B must be a matrix of as many rows as its A's");
    int r = m + 1;
    if (!dtype_is_float(b->dtype) || b->dtype != x->dtype || (c && c->dtype != x->dtype))
        return ox_error(im, "its operands must be floats of one type");
    if (c && (c->rank > 2 || (c->rank == 2 && c->dims[0] != 1) ||
              (c->rank >= 1 && c->dims[c->rank - 1] != 1 && c->dims[c->rank - 1] != N)))
        return ox_error(im, "its C must be one row of %lld (its rows are held in their input's dims)",
                        (long long)N);
    int64_t dims[OX_MAX_RANK], flat[2] = { 1, N };
    memcpy(dims, rows, sizeof *dims * (size_t)m);
    dims[m] = N;
    for (int d = 0; d < m; d++)
        flat[0] *= rows[d];
    if (!ox_set_shape(im, out, x->odtype, 2, flat))
        return false;
    out->held_rank = r; /* ONNX's [rows, N], held in DIMS */
    memcpy(out->held_dims, dims, sizeof *dims * (size_t)r);
    /* X's index: the rows' own, then K's flat _k0 over X's trailing dims */
    const char *const *idx = ox_index_vars(im, r, "i");
    const char *sx[OX_MAX_RANK];
    int64_t stride = K;
    for (int d = 0; d < x->rank; d++) {
        if (d < m - (split != 1)) {
            sx[d] = idx[d];
            continue;
        }
        if (d == m - 1) { /* split: the rows' last and K's first part */
            stride /= split;
            sx[d] = arena_printf(ARENA, "%s * %lld + _k0 / %lld", idx[d], (long long)split,
                                 (long long)stride);
            continue;
        }
        bool first = stride == K;
        stride /= x->dims[d];
        const char *q = stride == 1 ? "_k0" : arena_printf(ARENA, "(_k0 / %lld)", (long long)stride);
        sx[d] = first ? q : arena_printf(ARENA, "%s %% %lld", q, (long long)x->dims[d]);
    }
    const char *sb[2] = { tb ? idx[r - 1] : "_k0", tb ? "_k0" : idx[r - 1] };
    const char *prod = arena_printf(ARENA, "sum(_k0 in %lld) %s * %s", (long long)K,
                                    ox_read(im, x, sx), ox_read(im, b, sb));
    if (alpha != 1)
        prod = arena_printf(ARENA, "%s * %s", prod, ox_literal(im, x->dtype, alpha));
    ox_name(im, out);
    out->kind = OXV_STAGE;
    if (!c || beta == 0) {
        ox_aux_stage(im, out->te, r, dims, prod);
        return true;
    }
    const char *mm = ox_aux_name(im, out, "mm");
    ox_aux_stage(im, mm, r, dims, prod);
    const char *t = arena_printf(ARENA, "%s[", mm);
    for (int d = 0; d < r; d++)
        t = arena_printf(ARENA, "%s%s%s", t, d ? ", " : "", idx[d]);
    const char *ci[2] = { "0", c->rank && c->dims[c->rank - 1] != 1 ? idx[r - 1] : "0" };
    const char *cr = ox_read(im, c, c->rank == 2 ? ci : ci + 1);
    t = beta == 1 ? arena_printf(ARENA, "%s] + %s", t, cr)
                  : arena_printf(ARENA, "%s] + %s * %s", t, ox_literal(im, x->dtype, beta), cr);
    ox_aux_stage(im, out->te, r, dims, t);
    return true;
}

static bool cv_gemm(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 2, 3))
        return false;
    OxValue *a = in[0], *b = in[1], *c = n->ninputs > 2 ? in[2] : NULL;
    bool ta = ox_attr_int(n, "transA", 0), tb = ox_attr_int(n, "transB", 0);
    double alpha = ox_attr_float(n, "alpha", 1), beta = ox_attr_float(n, "beta", 1);
    if (a->rows_of) /* held_rows: A's rows in their own dims */
        return gemm_rows(im, a->rows_of, b, c, tb, alpha, beta, out[0]);
    if (a->rank != 2 || b->rank != 2)
        return ox_error(im, "its A and B must be matrices");
    if (!dtype_is_float(a->dtype) || a->dtype != b->dtype || (c && c->dtype != a->dtype))
        return ox_error(im, "its operands must be floats of one type");
    int64_t M = a->dims[ta], K = a->dims[!ta], N = b->dims[!tb];
    if (b->dims[tb] != K)
        return ox_error(im, "inner dims differ: %lld and %lld", (long long)K, (long long)b->dims[tb]);
    int64_t dims[2] = { M, N };
    if (!ox_set_shape(im, out[0], a->odtype, 2, dims))
        return false;
    if (c && (c->rank > 2 || (c->rank == 2 && (c->dims[0] != 1 && c->dims[0] != M)) ||
              (c->rank >= 1 && c->dims[c->rank - 1] != 1 && c->dims[c->rank - 1] != N)))
        return ox_error(im, "C does not broadcast to %lld x %lld", (long long)M, (long long)N);
    const char *const *idx = ox_index_vars(im, 2, "i");
    const char *sa[2] = { ta ? "_k0" : idx[0], ta ? idx[0] : "_k0" };
    const char *sb[2] = { tb ? idx[1] : "_k0", tb ? "_k0" : idx[1] };
    const char *prod = arena_printf(ARENA, "sum(_k0 in %lld) %s * %s", (long long)K,
                                    ox_read(im, a, sa), ox_read(im, b, sb));
    if (!c || beta == 0) {
        if (alpha != 1)
            prod = arena_printf(ARENA, "%s * %s", prod, ox_literal(im, a->dtype, alpha));
        ox_stage(im, out[0], prod);
        return true;
    }
    /* the product, then alpha and the bias in a stage of their own: the
       form texc fuses into the product's epilogue */
    ox_name(im, out[0]);
    const char *mm = ox_aux_name(im, out[0], "mm");
    ox_aux_stage(im, mm, 2, dims, prod);
    const char *t = arena_printf(ARENA, "%s[%s, %s]", mm, idx[0], idx[1]);
    if (alpha != 1)
        t = arena_printf(ARENA, "%s * %s", t, ox_literal(im, a->dtype, alpha));
    const char *cr = ox_bcast_read(im, c, out[0], idx);
    t = beta == 1 ? arena_printf(ARENA, "%s + %s", t, cr)
                  : arena_printf(ARENA, "%s + %s * %s", t, ox_literal(im, a->dtype, beta), cr);
    ox_stage(im, out[0], t);
    return true;
}

/* ------------------------------------------------------------------ */
/* Reductions and normalizations. */

/* A reduction REDUCER ("sum", "max", ...) of X over the axes AXIS[d]
 * (d < RANK) into a stage NAME of X's rank (the axes kept as 1); the
 * body is FMT with %s X's element. */
static const char *reduce_stage(OxImporter *im, OxValue *x, const bool *axis, const char *reducer,
                                const char *body_fmt, const char *name, int64_t *dims)
{
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    const char *src[OX_MAX_RANK], *axes = "";
    int nk = 0;
    for (int d = 0; d < x->rank; d++) {
        dims[d] = axis[d] ? 1 : x->dims[d];
        if (axis[d]) {
            src[d] = arena_printf(ARENA, "_k%d", nk++);
            axes = arena_printf(ARENA, "%s%s%s in %lld", axes, *axes ? ", " : "", src[d],
                                (long long)x->dims[d]);
        } else {
            src[d] = idx[d];
        }
    }
    const char *body = arena_printf(ARENA, body_fmt, ox_read(im, x, src));
    ox_aux_stage(im, name, x->rank, dims, arena_printf(ARENA, "%s(%s) %s", reducer, axes, body));
    return name;
}

/* NAME (rank of OUT, reduced axes 1) read at OUT's IDX. */
static const char *read_reduced(OxImporter *im, const char *name, int rank, const int64_t *rdims,
                                const char *const *idx)
{
    if (!rank)
        return name;
    char *s = arena_printf(ARENA, "%s[", name);
    for (int d = 0; d < rank; d++)
        s = arena_printf(ARENA, "%s%s%s", s, d ? ", " : "", rdims[d] == 1 ? "0" : idx[d]);
    return arena_printf(ARENA, "%s]", s);
}

static bool cv_reduce(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 1, 2))
        return false;
    OxValue *x = in[0];
    int64_t axes[OX_MAX_RANK];
    int naxes = 0;
    bool from_input = im->opset >= 18 || (strcmp(n->op, "ReduceSum") == 0 && im->opset >= 13);
    if (from_input ? n->ninputs > 1 && in[1] && !const_ints(im, in[1], "axes", axes, &naxes, OX_MAX_RANK)
                   : !attr_ints(im, n, "axes", axes, &naxes, OX_MAX_RANK))
        return false;
    bool keep = ox_attr_int(n, "keepdims", 1) != 0, red[OX_MAX_RANK] = { false };
    if (!naxes && ox_attr_int(n, "noop_with_empty_axes", 0)) {
        const char *const *idx = ox_index_vars(im, x->rank, "i");
        if (!ox_set_shape(im, out[0], x->odtype, x->rank, x->dims))
            return false;
        ox_stage(im, out[0], ox_read(im, x, idx));
        return true;
    }
    for (int d = 0; d < x->rank; d++)
        red[d] = !naxes;
    for (int k = 0; k < naxes; k++) {
        if (!norm_axis(im, &axes[k], x->rank, "axis"))
            return false;
        red[axes[k]] = true;
    }
    if (!dtype_is_float(x->dtype) && x->dtype != DT_I32)
        return ox_error(im, "reduces %s", ox_dtype_name(x->odtype));
    int64_t count = 1, rdims[OX_MAX_RANK], odims[OX_MAX_RANK];
    int orank = 0;
    for (int d = 0; d < x->rank; d++) {
        if (red[d])
            count *= x->dims[d];
        if (!red[d] || keep)
            odims[orank++] = red[d] ? 1 : x->dims[d];
    }
    const char *op = n->op + 6, *reducer = "sum", *body = "%s";
    if (strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0)
        reducer = op[1] == 'a' ? "max" : "min";
    else if (strcmp(op, "Prod") == 0)
        reducer = "prod";
    else if (strcmp(op, "SumSquare") == 0)
        body = "%1$s * %1$s";
    else if (strcmp(op, "L1") == 0)
        body = "abs(%s)";
    if (!ox_set_shape(im, out[0], x->odtype, orank, odims))
        return false;
    ox_name(im, out[0]);
    bool mean = strcmp(op, "Mean") == 0, post = mean || !keep;
    /* with keepdims, the reduction is the stage itself */
    const char *name = post ? ox_aux_name(im, out[0], "sum") : out[0]->te;
    reduce_stage(im, x, red, reducer, body, name, rdims);
    if (!post && keep) {
        out[0]->kind = OXV_STAGE;
        return true;
    }
    /* the mean, or the reduced axes dropped: a stage reading the reduction */
    const char *const *idx = ox_index_vars(im, orank, "i");
    const char *src[OX_MAX_RANK];
    for (int d = 0, o = 0; d < x->rank; d++)
        src[d] = red[d] ? "0" : idx[o++];
    if (keep)
        for (int d = 0; d < x->rank; d++)
            src[d] = red[d] ? "0" : idx[d];
    char *r = arena_printf(ARENA, "%s", name);
    for (int d = 0; d < x->rank; d++)
        r = arena_printf(ARENA, "%s%s%s", r, d ? ", " : "[", src[d]);
    if (x->rank)
        r = arena_printf(ARENA, "%s]", r);
    ox_stage(im, out[0], mean ? arena_printf(ARENA, "%s / %s", r, ox_literal(im, x->dtype, (double)count)) : r);
    return true;
}

static bool cv_softmax(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 1, 1))
        return false;
    OxValue *x = in[0];
    if (!dtype_is_float(x->dtype))
        return ox_error(im, "computes on %s", ox_dtype_name(x->odtype));
    int64_t axis = ox_attr_int(n, "axis", im->opset >= 13 ? -1 : 1);
    if (!norm_axis(im, &axis, x->rank, "axis"))
        return false;
    bool red[OX_MAX_RANK] = { false };
    for (int d = 0; d < x->rank; d++)
        red[d] = im->opset >= 13 ? d == axis : d >= axis;
    if (!ox_set_shape(im, out[0], x->odtype, x->rank, x->dims))
        return false;
    ox_name(im, out[0]);
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    int64_t rdims[OX_MAX_RANK];
    const char *mx = reduce_stage(im, x, red, "max", "%s", ox_aux_name(im, out[0], "max"), rdims);
    const char *mr = read_reduced(im, mx, x->rank, rdims, idx);
    const char *e = ox_aux_name(im, out[0], "exp");
    ox_aux_stage(im, e, x->rank, x->dims,
                 arena_printf(ARENA, "exp(%s - %s)", ox_read(im, x, idx), mr));
    OxValue ev = { .onnx = e, .te = e, .kind = OXV_STAGE, .dtype = x->dtype, .rank = x->rank };
    memcpy(ev.dims, x->dims, sizeof *x->dims * (size_t)x->rank);
    const char *s = reduce_stage(im, &ev, red, "sum", "%s", ox_aux_name(im, out[0], "sum"), rdims);
    const char *sr = read_reduced(im, s, x->rank, rdims, idx);
    if (strcmp(n->op, "LogSoftmax") == 0)
        ox_stage(im, out[0], arena_printf(ARENA, "%s - %s - log(%s)", ox_read(im, x, idx), mr, sr));
    else
        ox_stage(im, out[0], arena_printf(ARENA, "%s / %s", ox_read(im, &ev, idx), sr));
    return true;
}

static bool cv_layernorm(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 2, 3))
        return false;
    OxValue *x = in[0], *scale = in[1], *bias = n->ninputs > 2 ? in[2] : NULL;
    if (!dtype_is_float(x->dtype))
        return ox_error(im, "computes on %s", ox_dtype_name(x->odtype));
    int64_t axis = ox_attr_int(n, "axis", -1);
    double eps = ox_attr_float(n, "epsilon", 1e-5);
    if (!norm_axis(im, &axis, x->rank, "axis"))
        return false;
    /* Mean and InvStdDev, when read, are in the stash type, here x's own */
    bool stats = false;
    for (int k = 1; k < n->noutputs && k < 3; k++)
        stats |= out[k] && out[k]->uses;
    if (stats && ox_attr_int(n, "stash_type", OX_FLOAT) != x->odtype)
        return ox_error(im, "its mean and inverse deviation outputs are converted only in the "
                            "input's type (stash_type %lld, input %s)",
                        (long long)ox_attr_int(n, "stash_type", OX_FLOAT),
                        ox_dtype_name(x->odtype));
    bool red[OX_MAX_RANK] = { false };
    int64_t count = 1, rdims[OX_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        red[d] = d >= axis;
        count *= red[d] ? x->dims[d] : 1;
    }
    if (!ox_set_shape(im, out[0], x->odtype, x->rank, x->dims))
        return false;
    OxValue *both[3] = { x, scale, bias };
    int r;
    int64_t bd[OX_MAX_RANK];
    if (!bcast_shape(im, both, 3, &r, bd) || r != x->rank)
        return ox_error(im, "its scale and bias do not broadcast to its input");
    ox_name(im, out[0]);
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    const char *cnt = ox_literal(im, x->dtype, (double)count);
    const char *sum = reduce_stage(im, x, red, "sum", "%s", ox_aux_name(im, out[0], "sum"), rdims);
    const char *mean = ox_aux_name(im, out[0], "mean");
    ox_aux_stage(im, mean, x->rank, rdims,
                 arena_printf(ARENA, "%s / %s", read_reduced(im, sum, x->rank, rdims, idx), cnt));
    const char *mr = read_reduced(im, mean, x->rank, rdims, idx);
    const char *dev = ox_aux_name(im, out[0], "dev");
    ox_aux_stage(im, dev, x->rank, x->dims, arena_printf(ARENA, "%s - %s", ox_read(im, x, idx), mr));
    OxValue dv = { .onnx = dev, .te = dev, .kind = OXV_STAGE, .dtype = x->dtype, .rank = x->rank };
    memcpy(dv.dims, x->dims, sizeof *x->dims * (size_t)x->rank);
    const char *sq = reduce_stage(im, &dv, red, "sum", "%1$s * %1$s", ox_aux_name(im, out[0], "sqsum"), rdims);
    const char *t = arena_printf(ARENA, "%s * rsqrt(%s / %s + %s) * %s", ox_read(im, &dv, idx),
                                 read_reduced(im, sq, x->rank, rdims, idx), cnt,
                                 ox_literal(im, x->dtype, eps), ox_bcast_read(im, scale, out[0], idx));
    if (bias)
        t = arena_printf(ARENA, "%s + %s", t, ox_bcast_read(im, bias, out[0], idx));
    ox_stage(im, out[0], t);
    /* the statistics, of x's rank with the normalized axes of size 1 */
    if (n->noutputs > 1 && out[1] && out[1]->uses) {
        if (!ox_set_shape(im, out[1], x->odtype, x->rank, rdims))
            return false;
        ox_stage(im, out[1], read_reduced(im, mean, x->rank, rdims, idx));
    }
    if (n->noutputs > 2 && out[2] && out[2]->uses) {
        if (!ox_set_shape(im, out[2], x->odtype, x->rank, rdims))
            return false;
        ox_stage(im, out[2], arena_printf(ARENA, "rsqrt(%s / %s + %s)",
                                          read_reduced(im, sq, x->rank, rdims, idx), cnt,
                                          ox_literal(im, x->dtype, eps)));
    }
    return true;
}

/* BatchNormalization in training mode (opset 14's training_mode=1): Y
 * normalized by the batch's own mean and (biased) variance per channel,
 * and the running mean and variance, input * momentum + batch's * (1 -
 * momentum), as outputs 1 and 2.  The operands may be run-time data. */
static bool batchnorm_training(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    OxValue *x = in[0];
    int64_t C = x->dims[1];
    double eps = ox_attr_float(n, "epsilon", 1e-5), mom = ox_attr_float(n, "momentum", 0.9);
    for (int k = 1; k < 5; k++)
        if (in[k]->rank != 1 || in[k]->dims[0] != C || in[k]->dtype != x->dtype)
            return ox_error(im, "input %d is not %lld values of the input's type", k, (long long)C);
    bool red[OX_MAX_RANK] = { false };
    int64_t count = 1, rdims[OX_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        red[d] = d != 1;
        count *= red[d] ? x->dims[d] : 1;
    }
    if (!ox_set_shape(im, out[0], x->odtype, x->rank, x->dims))
        return false;
    ox_name(im, out[0]);
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    const char *c1[1] = { idx[1] }, *cnt = ox_literal(im, x->dtype, (double)count);
    const char *sum = reduce_stage(im, x, red, "sum", "%s", ox_aux_name(im, out[0], "sum"), rdims);
    const char *mean = ox_aux_name(im, out[0], "mean");
    ox_aux_stage(im, mean, x->rank, rdims,
                 arena_printf(ARENA, "%s / %s", read_reduced(im, sum, x->rank, rdims, idx), cnt));
    const char *dev = ox_aux_name(im, out[0], "dev");
    ox_aux_stage(im, dev, x->rank, x->dims,
                 arena_printf(ARENA, "%s - %s", ox_read(im, x, idx),
                              read_reduced(im, mean, x->rank, rdims, idx)));
    OxValue dv = { .onnx = dev, .te = dev, .kind = OXV_STAGE, .dtype = x->dtype, .rank = x->rank };
    memcpy(dv.dims, x->dims, sizeof *x->dims * (size_t)x->rank);
    const char *sq = reduce_stage(im, &dv, red, "sum", "%1$s * %1$s", ox_aux_name(im, out[0], "sqsum"), rdims);
    const char *var = ox_aux_name(im, out[0], "var");
    ox_aux_stage(im, var, x->rank, rdims,
                 arena_printf(ARENA, "%s / %s", read_reduced(im, sq, x->rank, rdims, idx), cnt));
    ox_stage(im, out[0], arena_printf(ARENA, "%s * rsqrt(%s + %s) * %s + %s", ox_read(im, &dv, idx),
                                      read_reduced(im, var, x->rank, rdims, idx),
                                      ox_literal(im, x->dtype, eps), ox_read(im, in[1], c1),
                                      ox_read(im, in[2], c1)));
    /* the running statistics, of shape [C], read the batch's at channel c */
    const char *at[OX_MAX_RANK];
    for (int d = 0; d < x->rank; d++)
        at[d] = d == 1 ? idx[0] : "0";
    const char *batch[2] = { mean, var };
    for (int k = 1; k < 3 && k < n->noutputs; k++) {
        if (!out[k] || !out[k]->uses)
            continue;
        int64_t cd[1] = { C };
        if (!ox_set_shape(im, out[k], x->odtype, 1, cd))
            return false;
        char *b = arena_printf(ARENA, "%s[", batch[k - 1]);
        for (int d = 0; d < x->rank; d++)
            b = arena_printf(ARENA, "%s%s%s", b, d ? ", " : "", at[d]);
        ox_stage(im, out[k], arena_printf(ARENA, "%s * %s + %s] * %s", ox_read(im, in[k + 2], idx),
                                          ox_literal(im, x->dtype, mom), b,
                                          ox_literal(im, x->dtype, 1 - mom)));
    }
    return true;
}

static bool cv_batchnorm(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 5, 5))
        return false;
    OxValue *x = in[0];
    if (x->rank < 2 || !dtype_is_float(x->dtype))
        return ox_error(im, "takes a float tensor of rank 2 or more");
    int64_t C = x->dims[1];
    double eps = ox_attr_float(n, "epsilon", 1e-5);
    if (im->opset >= 14 && ox_attr_int(n, "training_mode", 0))
        return batchnorm_training(im, n, in, out);
    for (int k = 1; k < 5; k++) {
        if (!ox_need_const(im, in[k], k == 1 ? "scale" : k == 2 ? "bias" : k == 3 ? "mean" : "variance"))
            return false;
        if (ox_elems(in[k]) != C)
            return ox_error(im, "input %d has %lld values for %lld channels", k,
                            (long long)ox_elems(in[k]), (long long)C);
    }
    for (int k = 1; k < n->noutputs; k++)
        if (out[k] && out[k]->uses)
            return ox_error(im, "its training outputs are not converted");
    /* y = x * a + b, a = scale / sqrt(var + eps), b = bias - mean * a,
       folded in double and rounded once */
    double *a = fold_buffer(im, C), *b = fold_buffer(im, C);
    double *s = ox_const_values(im, in[1]), *bi = ox_const_values(im, in[2]),
           *m = ox_const_values(im, in[3]), *v = ox_const_values(im, in[4]);
    for (int64_t c = 0; c < C; c++) {
        double sc = s[c] / sqrt(v[c] + eps);
        a[c] = ox_round(x->odtype, sc);
        b[c] = ox_round(x->odtype, bi[c] - m[c] * sc);
    }
    OxValue *av = arena_alloc(ARENA, sizeof *av), *bv = arena_alloc(ARENA, sizeof *bv);
    int64_t cd[1] = { C };
    av->onnx = arena_printf(ARENA, "%s_scale", *n->name ? n->name : "bn");
    bv->onnx = arena_printf(ARENA, "%s_shift", *n->name ? n->name : "bn");
    ox_set_const(im, av, x->odtype, 1, cd, a);
    ox_set_const(im, bv, x->odtype, 1, cd, b);
    if (!ox_set_shape(im, out[0], x->odtype, x->rank, x->dims))
        return false;
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    const char *c1[1] = { idx[1] };
    ox_stage(im, out[0], arena_printf(ARENA, "%s * %s + %s", ox_read(im, x, idx), ox_read(im, av, c1),
                                      ox_read(im, bv, c1)));
    return true;
}

/* ------------------------------------------------------------------ */
/* Convolution and pooling (N, C, spatial...). */

typedef struct Window {
    int ns;                     /* spatial dims */
    int64_t k[OX_MAX_RANK], s[OX_MAX_RANK], d[OX_MAX_RANK];
    int64_t pb[OX_MAX_RANK], pe[OX_MAX_RANK], out[OX_MAX_RANK];
    int64_t pc[OX_MAX_RANK];    /* of PE, what ceil_mode adds (no average counts it) */
} Window;

static bool window(OxImporter *im, const OxNode *n, const OxValue *x, const int64_t *kernel, Window *w)
{
    int ns = x->rank - 2, c;
    int64_t v[2 * OX_MAX_RANK];
    w->ns = ns;
    if (ns < 1)
        return ox_error(im, "takes a tensor of rank 3 or more");
    for (int i = 0; i < ns; i++) {
        w->k[i] = kernel[i];
        w->s[i] = w->d[i] = 1;
        w->pb[i] = w->pe[i] = w->pc[i] = 0;
    }
    if (!attr_ints(im, n, "strides", v, &c, 2 * OX_MAX_RANK))
        return false;
    for (int i = 0; i < c && i < ns; i++)
        w->s[i] = v[i];
    if (!attr_ints(im, n, "dilations", v, &c, 2 * OX_MAX_RANK))
        return false;
    for (int i = 0; i < c && i < ns; i++)
        w->d[i] = v[i];
    if (!attr_ints(im, n, "pads", v, &c, 2 * OX_MAX_RANK))
        return false;
    if (c && c != 2 * ns)
        return ox_error(im, "pads has %d entries for %d spatial dims", c, ns);
    for (int i = 0; i < c / 2; i++) {
        w->pb[i] = v[i];
        w->pe[i] = v[i + ns];
    }
    const char *pad = ox_attr_string(n, "auto_pad", "NOTSET");
    bool ceil_mode = ox_attr_int(n, "ceil_mode", 0) != 0;
    for (int i = 0; i < ns; i++) {
        if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1 || w->pb[i] < 0 || w->pe[i] < 0 ||
            w->k[i] > OX_MAX_ELEMS || w->s[i] > OX_MAX_ELEMS || w->d[i] > OX_MAX_ELEMS ||
            w->pb[i] > OX_MAX_ELEMS || w->pe[i] > OX_MAX_ELEMS)
            return ox_error(im, "its kernel, strides, dilations or pads are out of range");
        if (w->k[i] - 1 > OX_MAX_ELEMS / w->d[i])
            return ox_error(im, "its dilated kernel is too large");
        int64_t in = x->dims[2 + i], span = w->d[i] * (w->k[i] - 1) + 1;
        if (strcmp(pad, "SAME_UPPER") == 0 || strcmp(pad, "SAME_LOWER") == 0) {
            int64_t o = (in + w->s[i] - 1) / w->s[i];
            int64_t total = (o - 1) * w->s[i] + span - in;
            total = total < 0 ? 0 : total;
            w->pb[i] = pad[5] == 'U' ? total / 2 : total - total / 2;
            w->pe[i] = total - w->pb[i];
        } else if (strcmp(pad, "VALID") == 0) {
            w->pb[i] = w->pe[i] = 0;
        } else if (strcmp(pad, "NOTSET") != 0) {
            return ox_error(im, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", pad);
        }
        int64_t padded = in + w->pb[i] + w->pe[i];
        if (padded < span)
            return ox_error(im, "its window (%lld) is larger than its padded input (%lld)",
                            (long long)span, (long long)padded);
        w->out[i] = (padded - span) / w->s[i] + 1;
        if (ceil_mode && (padded - span) % w->s[i]) {
            /* one more window, padded at the end, if it starts inside the
               input or its begin padding (PyTorch's rule, ONNX's since
               opset 19) */
            if (w->out[i] * w->s[i] < in + w->pb[i]) {
                w->pc[i] = w->out[i] * w->s[i] + span - padded;
                w->pe[i] += w->pc[i];
                w->out[i]++;
            }
        }
    }
    return true;
}

/* X padded by W with VALUE: X itself, or a stage. */
static OxValue *padded(OxImporter *im, OxValue *x, const Window *w, OxValue *out, const char *value)
{
    bool any = false;
    for (int i = 0; i < w->ns; i++)
        any = any || w->pb[i] || w->pe[i];
    if (!any)
        return x;
    OxValue *p = arena_alloc(ARENA, sizeof *p);
    *p = *x;
    p->kind = OXV_STAGE;
    p->te = ox_aux_name(im, out, "pad");
    p->onnx = p->te;
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    const char *src[OX_MAX_RANK], *cond = "";
    src[0] = idx[0];
    src[1] = idx[1];
    for (int i = 0; i < w->ns; i++) {
        p->dims[2 + i] = x->dims[2 + i] + w->pb[i] + w->pe[i];
        const char *v = idx[2 + i];
        src[2 + i] = w->pb[i] ? arena_printf(ARENA, "%s - %lld", v, (long long)w->pb[i]) : v;
        if (w->pb[i])
            cond = arena_printf(ARENA, "%s%s%s >= %lld", cond, *cond ? " && " : "", v, (long long)w->pb[i]);
        if (w->pe[i])
            cond = arena_printf(ARENA, "%s%s%s < %lld", cond, *cond ? " && " : "", v,
                                (long long)(x->dims[2 + i] + w->pb[i]));
    }
    ox_aux_stage(im, p->te, p->rank, p->dims,
                 arena_printf(ARENA, "select(%s, %s, %s)", cond, ox_read(im, x, src), value));
    return p;
}

/* Output rows narrower than this (a vector of f32) make a 2-D
 * convolution a matmul over the flattened output positions. */
#define IM2COL_BELOW 16

/* The product of a 2-D convolution of one group over Q output positions
 * q, each reading SRC at SX (over n = _i0, q = _i2 and the window's
 * _k0 in C, _k1, _k2), into conv[n, f, q]; OUT[n, f, oh, ow] reads it at
 * q = oh * PITCH + ow (+ B[f]). */
static bool conv_positions(OxImporter *im, OxValue *wt, OxValue *b, OxValue *src, const char *const *sx,
                           const Window *w, const int64_t *dims, int64_t Q, int64_t pitch, OxValue *out)
{
    OxValue mm = { .kind = OXV_STAGE, .dtype = src->dtype, .odtype = src->odtype, .rank = 3,
                   .dims = { dims[0], dims[1], Q } };
    mm.onnx = mm.te = ox_aux_name(im, out, "conv");
    const char *const *mi = ox_index_vars(im, 3, "i");
    const char *sw[4] = { mi[1], "_k0", "_k1", "_k2" };
    ox_aux_stage(im, mm.te, mm.rank, mm.dims,
                 arena_printf(ARENA, "sum(_k0 in %lld, _k1 in %lld, _k2 in %lld) %s * %s",
                              (long long)wt->dims[1], (long long)w->k[0], (long long)w->k[1],
                              ox_read(im, src, sx), ox_read(im, wt, sw)));
    const char *const *idx = ox_index_vars(im, 4, "i");
    const char *sm[3] = { idx[0], idx[1],
                          arena_printf(ARENA, "%s * %lld + %s", idx[2], (long long)pitch, idx[3]) };
    const char *value = ox_read(im, &mm, sm);
    if (b) {
        const char *c1[1] = { idx[1] };
        value = arena_printf(ARENA, "%s + %s", value, ox_read(im, b, c1));
    }
    ox_stage(im, out, value);
    return true;
}

/* OUT = conv(X, W) (+ B) over X padded to P, a 2-D convolution of one
 * group, as a matmul over OUT's flattened positions (im2col):
 *   col[n, c, kh, kw, q] = P[n, c, q / OW * SH + kh * DH, q % OW * SW + kw * DW]
 *   conv[n, f, q] = sum(c, kh, kw) col[n, c, kh, kw, q] * W[f, c, kh, kw]
 *   OUT[n, f, oh, ow] = conv[n, f, oh * OW + ow] (+ B[f])
 * The default vectorizes a convolution's micro-kernel along the output
 * row, which a row of 7 or 14 (ResNet's last stages) does not fill: it
 * ran those as scalar loops, at 2-3 GFLOP/s; along the OH*OW positions
 * the product is the matmul micro-kernel's, and col (C*KH*KW x OH*OW,
 * 0.9 MB at ResNet-18's 512 x 9 x 49) is written once a call. */
static bool conv_im2col(OxImporter *im, OxValue *wt, OxValue *b, OxValue *p, const Window *w,
                        const int64_t *dims, OxValue *out)
{
    int64_t C = wt->dims[1], OW = w->out[1], P = w->out[0] * w->out[1];
    const char *const *ci = ox_index_vars(im, 5, "i");
    const char *src[4] = {
        ci[0], ci[1],
        arena_printf(ARENA, "%s / %lld * %lld + %s * %lld", ci[4], (long long)OW, (long long)w->s[0], ci[2],
                     (long long)w->d[0]),
        arena_printf(ARENA, "%s %% %lld * %lld + %s * %lld", ci[4], (long long)OW, (long long)w->s[1], ci[3],
                     (long long)w->d[1]),
    };
    OxValue col = { .kind = OXV_STAGE, .dtype = p->dtype, .odtype = p->odtype, .rank = 5,
                    .dims = { dims[0], C, w->k[0], w->k[1], P } };
    col.onnx = col.te = ox_aux_name(im, out, "col");
    ox_aux_stage(im, col.te, col.rank, col.dims, ox_read(im, p, src));
    const char *const *mi = ox_index_vars(im, 3, "i");
    const char *sc[5] = { mi[0], "_k0", "_k1", "_k2", mi[2] };
    return conv_positions(im, wt, b, &col, sc, w, dims, P, OW, out);
}

/* OUT = conv(X, W) (+ B) of stride 1 over X padded to P (HP x WP), one
 * group, over P's rows laid end to end (the flattened row pitch):
 *   flat[n, c, p] = P[n, c, p / WP, p % WP]
 *   conv[n, f, q] = sum(c, kh, kw) flat[n, c, q + kh * DH * WP + kw * DW] * W[f, c, kh, kw]
 *   OUT[n, f, oh, ow] = conv[n, f, oh * WP + ow] (+ B[f])
 * for q in 0 .. (OH - 1) * WP + OW - 1: position q reads the window at
 * row q / WP, column q % WP, and the KW - 1 positions at the end of each
 * row (their windows wrap into the next row) are computed and never read.
 * The default vectorizes a convolution's micro-kernel along the output
 * row; a row that vectors do not divide (ResNet's 56 and 28) left an edge
 * of 24 or 12 columns per row, which ran through memory with scalar
 * lanes, slower than the row's whole vectors.  Along q the loads are
 * consecutive and the edge is one per image; (KW - 1) / WP of the work is
 * wasted (3% at 56).  Rows that vectors divide keep the direct form. */
static bool conv_flat_rows(OxImporter *im, OxValue *wt, OxValue *b, OxValue *p, const Window *w,
                           const int64_t *dims, OxValue *out)
{
    int64_t C = wt->dims[1], HP = p->dims[2], WP = p->dims[3], OW = w->out[1];
    int64_t Q = (w->out[0] - 1) * WP + OW;
    const char *const *fi = ox_index_vars(im, 3, "i");
    const char *src[4] = { fi[0], fi[1], arena_printf(ARENA, "%s / %lld", fi[2], (long long)WP),
                           arena_printf(ARENA, "%s %% %lld", fi[2], (long long)WP) };
    OxValue flat = { .kind = OXV_STAGE, .dtype = p->dtype, .odtype = p->odtype, .rank = 3,
                     .dims = { p->dims[0], C, HP * WP } };
    flat.onnx = flat.te = ox_aux_name(im, out, "rows");
    ox_aux_stage(im, flat.te, flat.rank, flat.dims, ox_read(im, p, src));
    const char *const *mi = ox_index_vars(im, 3, "i");
    const char *kw = w->d[1] == 1 ? "_k2" : arena_printf(ARENA, "_k2 * %lld", (long long)w->d[1]);
    const char *sf[3] = { mi[0], "_k0",
                          arena_printf(ARENA, "%s + _k1 * %lld + %s", mi[2], (long long)(w->d[0] * WP), kw) };
    return conv_positions(im, wt, b, &flat, sf, w, dims, Q, WP, out);
}

/* Is conv_flat_rows the form for a 2-D convolution of one group over P
 * (X padded) by W: stride 1, output rows at least a vector long that
 * vectors do not divide, and P exactly the windows' extent (no ceil_mode
 * rows)?  Not where the image's size is a run-time dim (a probe,
 * symdims.c): its width would be the flat index's stride, a size used as
 * a value. */
static bool flat_rows_fit(const OxImporter *im, const OxValue *x, const OxValue *p, const Window *w)
{
    return w->ns == 2 && !ox_is_probe(im, x->dims[2]) && !ox_is_probe(im, x->dims[3]) &&
           w->s[0] == 1 && w->s[1] == 1 && w->out[1] >= IM2COL_BELOW &&
           w->out[1] % IM2COL_BELOW && p->dims[2] == w->out[0] + (w->k[0] - 1) * w->d[0] &&
           p->dims[3] == w->out[1] + (w->k[1] - 1) * w->d[1];
}

/* P (rank R, a padded image) with its last axis split by the stride S,
 * every S-th column side by side: Q[.., r, u] = P[.., u*S + r] for r in
 * 0 .. S-1 (0 past P's end), so that a convolution of stride S reads
 * P[.., ow*S + kw] as Q[.., kw % S, ow + kw / S], consecutive along ow.
 * Read at stride S, each vector of ow took two loads and a permute per
 * multiply-add (ResNet's first layer ran at a quarter of the micro-
 * kernel's speed); Q costs one pass over P, which its padding (a kernel
 * of its own) already makes. */
static OxValue *deinterleaved(OxImporter *im, OxValue *p, int64_t s, OxValue *out)
{
    OxValue *q = arena_alloc(ARENA, sizeof *q);
    *q = *p;
    q->kind = OXV_STAGE;
    q->te = q->onnx = ox_aux_name(im, out, "cols");
    int r = p->rank;
    int64_t wp = p->dims[r - 1];
    q->rank = r + 1;
    q->dims[r - 1] = s;
    q->dims[r] = (wp + s - 1) / s;
    const char *const *idx = ox_index_vars(im, r + 1, "i");
    const char *src[OX_MAX_RANK];
    for (int d = 0; d < r - 1; d++)
        src[d] = idx[d];
    src[r - 1] = arena_printf(ARENA, "%s * %lld + %s", idx[r], (long long)s, idx[r - 1]);
    const char *value = ox_read(im, p, src);
    if (wp % s)
        value = arena_printf(ARENA, "select(%s < %lld, %s, %s)", src[r - 1], (long long)wp, value,
                             ox_literal(im, p->dtype, 0));
    ox_aux_stage(im, q->te, q->rank, q->dims, value);
    return q;
}

static bool cv_conv(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 2, 3))
        return false;
    OxValue *x = in[0], *wt = in[1], *b = n->ninputs > 2 ? in[2] : NULL;
    int64_t group = ox_attr_int(n, "group", 1);
    if (x->rank < 3 || wt->rank != x->rank)
        return ox_error(im, "takes X and W of one rank, 3 or more");
    if (!dtype_is_float(x->dtype) || wt->dtype != x->dtype || (b && b->dtype != x->dtype))
        return ox_error(im, "its operands must be floats of one type");
    int64_t C = x->dims[1], M = wt->dims[0];
    if (group < 1 || C % group || M % group || wt->dims[1] * group != C)
        return ox_error(im, "W's %lld input channels per group do not match X's %lld in %lld groups",
                        (long long)wt->dims[1], (long long)C, (long long)group);
    if (b && (b->rank != 1 || b->dims[0] != M))
        return ox_error(im, "B must have %lld values", (long long)M);
    Window w;
    if (!window(im, n, x, wt->dims + 2, &w))
        return false;
    int64_t dims[OX_MAX_RANK] = { x->dims[0], M };
    for (int i = 0; i < w.ns; i++)
        dims[2 + i] = w.out[i];
    if (!ox_set_shape(im, out[0], x->odtype, x->rank, dims))
        return false;
    ox_name(im, out[0]);
    OxValue *p = padded(im, x, &w, out[0], ox_literal(im, x->dtype, 0));
    if (x->rank == 4 && group == 1 && w.out[1] < IM2COL_BELOW && w.out[0] * w.out[1] >= IM2COL_BELOW)
        return conv_im2col(im, wt, b, p, &w, dims, out[0]);
    if (x->rank == 4 && group == 1 && flat_rows_fit(im, x, p, &w))
        return conv_flat_rows(im, wt, b, p, &w, dims, out[0]);
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    const char *sx[OX_MAX_RANK], *sw[OX_MAX_RANK];
    const char *axes = arena_printf(ARENA, "_k0 in %lld", (long long)wt->dims[1]);
    sx[0] = idx[0];
    sx[1] = group == 1 ? "_k0" : arena_printf(ARENA, "%s / %lld * %lld + _k0", idx[1], (long long)(M / group),
                                             (long long)wt->dims[1]);
    sw[0] = idx[1];
    sw[1] = "_k0";
    /* a strided row read through its columns side by side (deinterleaved):
       where the window is wider than the stride, so that each column is
       read more than once */
    int last = w.ns - 1;
    int64_t sl = w.s[last];
    bool split = sl > 1 && w.k[last] > sl;
    if (split)
        p = deinterleaved(im, p, sl, out[0]);
    for (int i = 0; i < w.ns; i++) {
        const char *k = arena_printf(ARENA, "_k%d", i + 1);
        axes = arena_printf(ARENA, "%s, %s in %lld", axes, k, (long long)w.k[i]);
        const char *o = w.s[i] == 1 ? idx[2 + i] : arena_printf(ARENA, "%s * %lld", idx[2 + i], (long long)w.s[i]);
        const char *kk = w.d[i] == 1 ? k : arena_printf(ARENA, "%s * %lld", k, (long long)w.d[i]);
        sx[2 + i] = arena_printf(ARENA, "%s + %s", o, kk);
        sw[2 + i] = k;
        if (split && i == last) {
            sx[2 + i] = arena_printf(ARENA, "%s %% %lld", kk, (long long)sl);
            sx[3 + i] = arena_printf(ARENA, "%s + %s / %lld", idx[2 + i], kk, (long long)sl);
        }
    }
    const char *sum = arena_printf(ARENA, "sum(%s) %s * %s", axes, ox_read(im, p, sx), ox_read(im, wt, sw));
    if (!b) {
        ox_stage(im, out[0], sum);
        return true;
    }
    const char *conv = ox_aux_name(im, out[0], "conv");
    ox_aux_stage(im, conv, x->rank, dims, sum);
    OxValue cv = { .onnx = conv, .te = conv, .kind = OXV_STAGE, .dtype = x->dtype, .rank = x->rank };
    memcpy(cv.dims, dims, sizeof *dims * (size_t)x->rank);
    const char *c1[1] = { idx[1] };
    ox_stage(im, out[0], arena_printf(ARENA, "%s + %s", ox_read(im, &cv, idx), ox_read(im, b, c1)));
    return true;
}

/* The positions of a pooling window along spatial dim I at output
 * position O (in padded coordinates) that lie in [LO, HI). */
static int64_t window_count(const Window *w, int i, int64_t o, int64_t lo, int64_t hi)
{
    int64_t count = 0;
    for (int64_t k = 0; k < w->k[i]; k++) {
        int64_t p = o * w->s[i] + k * w->d[i];
        count += p >= lo && p < hi;
    }
    return count;
}

/* AveragePool's divisor at OUT's IDX: the window's positions inside the
 * input (count_include_pad=0) or inside the input and its pads
 * (count_include_pad=1; ceil_mode's end padding never counts), a product
 * over the spatial dims: a literal where no dim's count varies, else
 * per dim a literal or a constant read at the output's index. */
static const char *pool_divisor(OxImporter *im, const OxValue *x, const Window *w,
                                bool include_pad, OxValue *out, const char *const *idx)
{
    const char *div = NULL;
    double same = 1;
    for (int i = 0; i < w->ns; i++) {
        int64_t in = x->dims[2 + i];
        int64_t lo = include_pad ? 0 : w->pb[i];
        int64_t hi = include_pad ? in + w->pb[i] + w->pe[i] - w->pc[i] : w->pb[i] + in;
        int64_t first = window_count(w, i, 0, lo, hi), dims[1] = { w->out[i] };
        bool varies = false;
        for (int64_t o = 1; o < w->out[i]; o++)
            varies = varies || window_count(w, i, o, lo, hi) != first;
        if (!varies) {
            same *= (double)first;
            continue;
        }
        double *counts = arena_alloc(ARENA, sizeof *counts * (size_t)w->out[i]);
        for (int64_t o = 0; o < w->out[i]; o++)
            counts[o] = (double)window_count(w, i, o, lo, hi);
        OxValue *cv = arena_alloc(ARENA, sizeof *cv);
        cv->onnx = arena_printf(ARENA, "%s_count%d", out->te, i);
        ox_set_const(im, cv, x->odtype, 1, dims, counts);
        const char *r = ox_read(im, cv, idx + 2 + i);
        div = div ? arena_printf(ARENA, "%s * %s", div, r) : r;
    }
    if (!div)
        return ox_literal(im, x->dtype, same);
    if (same != 1)
        div = arena_printf(ARENA, "%s * %s", div, ox_literal(im, x->dtype, same));
    return arena_printf(ARENA, "(%s)", div);
}

/* MaxPool's Indices: of each window's maximum Y, the flat index into X
 * (the first, in the window's order, of equal ones); with storage_order
 * 1, the spatial dims counted column-major. */
static bool pool_indices(OxImporter *im, const OxNode *n, OxValue *x, const Window *w,
                         OxValue *y, OxValue *z)
{
    bool colmajor = ox_attr_int(n, "storage_order", 0) != 0;
    if (!ox_set_shape(im, z, OX_INT64, y->rank, y->dims))
        return false;
    if (ox_elems(x) > 2147483647)
        return ox_error(im, "its Indices would not fit in i32 (%lld elements)",
                        (long long)ox_elems(x));
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    const char *sx[OX_MAX_RANK] = { idx[0], idx[1] }, *axes = "", *inside = "";
    const char *wide = x->dtype == DT_U8 || x->dtype == DT_I8 ? "i32(%s)" : "%s";
    for (int i = 0; i < w->ns; i++) {
        const char *k = arena_printf(ARENA, "_k%d", i);
        axes = arena_printf(ARENA, "%s%s%s in %lld", axes, i ? ", " : "", k, (long long)w->k[i]);
        const char *o = w->s[i] == 1 ? idx[2 + i] : arena_printf(ARENA, "%s * %lld", idx[2 + i], (long long)w->s[i]);
        const char *kk = w->d[i] == 1 ? k : arena_printf(ARENA, "%s * %lld", k, (long long)w->d[i]);
        sx[2 + i] = w->pb[i] ? arena_printf(ARENA, "%s + %s - %lld", o, kk, (long long)w->pb[i])
                             : arena_printf(ARENA, "%s + %s", o, kk);
        /* the window's padded positions are none of X's */
        if (w->pb[i])
            inside = arena_printf(ARENA, "%s%s >= 0 && ", inside, sx[2 + i]);
        if (w->pe[i])
            inside = arena_printf(ARENA, "%s%s < %lld && ", inside, sx[2 + i],
                                  (long long)x->dims[2 + i]);
    }
    /* the flat index: (n * C + c), then the spatial dims in their order */
    const char *flat = arena_printf(ARENA, "%s * %lld + %s", idx[0], (long long)x->dims[1], idx[1]);
    for (int j = 0; j < w->ns; j++) {
        int i = colmajor ? w->ns - 1 - j : j;
        flat = arena_printf(ARENA, "(%s) * %lld + %s", flat, (long long)x->dims[2 + i],
                            sx[2 + i]);
    }
    ox_stage(im, z, arena_printf(ARENA, "min(%s) select(%s%s == %s, %s, 2147483647)", axes,
                                 inside, arena_printf(ARENA, wide, ox_read(im, x, sx)),
                                 arena_printf(ARENA, wide, ox_read(im, y, idx)), flat));
    return true;
}

static bool cv_pool(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 1, 1))
        return false;
    OxValue *x = in[0];
    bool global = strncmp(n->op, "Global", 6) == 0, avg = strstr(n->op, "Average") != NULL;
    /* MaxPool takes uint8 and int8 too: its max in i32 */
    bool narrow8 = !avg && (x->dtype == DT_U8 || x->dtype == DT_I8);
    if (x->rank < 3 || !(dtype_is_float(x->dtype) || narrow8))
        return ox_error(im, "takes a float tensor of rank 3 or more");
    int64_t kernel[OX_MAX_RANK];
    int nk = 0;
    if (global) {
        nk = x->rank - 2;
        memcpy(kernel, x->dims + 2, sizeof *kernel * (size_t)nk);
    } else if (!attr_ints(im, n, "kernel_shape", kernel, &nk, OX_MAX_RANK)) {
        return false;
    }
    if (nk != x->rank - 2)
        return ox_error(im, "kernel_shape has %d entries for %d spatial dims", nk, x->rank - 2);
    Window w;
    if (!window(im, n, x, kernel, &w))
        return false;
    int64_t dims[OX_MAX_RANK] = { x->dims[0], x->dims[1] };
    for (int i = 0; i < w.ns; i++)
        dims[2 + i] = w.out[i];
    if (!ox_set_shape(im, out[0], x->odtype, x->rank, dims))
        return false;
    ox_name(im, out[0]);
    /* padding that no max takes (the type's least value), and that
       averages add 0 for */
    double least = x->dtype == DT_U8 ? 0 : x->dtype == DT_I8 ? -128 : -INFINITY;
    OxValue *p = padded(im, x, &w, out[0], ox_literal(im, x->dtype, avg ? 0 : least));
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    const char *sx[OX_MAX_RANK] = { idx[0], idx[1] }, *axes = "";
    for (int i = 0; i < w.ns; i++) {
        const char *k = arena_printf(ARENA, "_k%d", i);
        axes = arena_printf(ARENA, "%s%s%s in %lld", axes, i ? ", " : "", k, (long long)w.k[i]);
        const char *o = w.s[i] == 1 ? idx[2 + i] : arena_printf(ARENA, "%s * %lld", idx[2 + i], (long long)w.s[i]);
        const char *kk = w.d[i] == 1 ? k : arena_printf(ARENA, "%s * %lld", k, (long long)w.d[i]);
        sx[2 + i] = global ? k : arena_printf(ARENA, "%s + %s", o, kk);
    }
    const char *body = ox_read(im, p, sx);
    if (narrow8)
        body = arena_printf(ARENA, "i32(%s)", body);
    const char *r = arena_printf(ARENA, "%s(%s) %s", avg ? "sum" : "max", axes, body);
    if (!avg) {
        ox_stage(im, out[0], narrow8 ? arena_printf(ARENA, "%s(%s)", dtype_name(x->dtype), r) : r);
        if (n->noutputs > 1 && out[1] && out[1]->uses)
            return pool_indices(im, n, x, &w, out[0], out[1]);
        return true;
    }
    if (n->noutputs > 1 && out[1] && out[1]->uses)
        return ox_error(im, "has a second output");
    const char *s = ox_aux_name(im, out[0], "sum");
    ox_aux_stage(im, s, x->rank, dims, r);
    OxValue sv = { .onnx = s, .te = s, .kind = OXV_STAGE, .dtype = x->dtype, .rank = x->rank };
    memcpy(sv.dims, dims, sizeof *dims * (size_t)x->rank);
    bool include_pad = ox_attr_int(n, "count_include_pad", 0) != 0;
    ox_stage(im, out[0], arena_printf(ARENA, "%s / %s", ox_read(im, &sv, idx),
                                      pool_divisor(im, x, &w, include_pad, out[0], idx)));
    return true;
}

static bool cv_pad(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 2, 4))
        return false;
    OxValue *x = in[0], *cv = n->ninputs > 2 ? in[2] : NULL;
    int64_t pads[2 * OX_MAX_RANK], axes[OX_MAX_RANK], dims[OX_MAX_RANK];
    int np, na = x->rank;
    if (!const_ints(im, in[1], "pads", pads, &np, 2 * OX_MAX_RANK))
        return false;
    if (n->ninputs > 3 && in[3]) {
        if (!const_ints(im, in[3], "axes", axes, &na, OX_MAX_RANK))
            return false;
    } else {
        for (int d = 0; d < x->rank; d++)
            axes[d] = d;
    }
    if (np != 2 * na)
        return ox_error(im, "pads has %d entries for %d axes", np, na);
    const char *mode = ox_attr_string(n, "mode", "constant");
    bool edge = strcmp(mode, "edge") == 0, reflect = strcmp(mode, "reflect") == 0;
    if (strcmp(mode, "constant") != 0 && !edge && !reflect)
        return ox_error(im, "mode '%s' is not converted (constant, edge and reflect are)", mode);
    if (cv && (ox_elems(cv) != 1 || !ox_need_const(im, cv, "constant_value")))
        return cv && ox_elems(cv) != 1 ? ox_error(im, "constant_value must be a scalar") : false;
    int64_t lo[OX_MAX_RANK] = { 0 }, hi[OX_MAX_RANK] = { 0 };
    for (int k = 0; k < na; k++) {
        if (!norm_axis(im, &axes[k], x->rank, "axis"))
            return false;
        lo[axes[k]] = pads[k];
        hi[axes[k]] = pads[k + na];
    }
    const char *const *idx = ox_index_vars(im, x->rank, "i");
    const char *src[OX_MAX_RANK], *cond = "";
    for (int d = 0; d < x->rank; d++) {
        if (lo[d] < -x->dims[d] || hi[d] < -x->dims[d] || lo[d] > OX_MAX_ELEMS || hi[d] > OX_MAX_ELEMS)
            return ox_error(im, "pads of dim %d are out of range", d);
        dims[d] = x->dims[d] + lo[d] + hi[d];
        if (edge || reflect) {
            /* the padded index j = i - lo, clamped into the input (edge)
               or mirrored at its ends, the end not repeated (reflect:
               min(|j|, 2(D-1) - |j|), for pads within D - 1, as ONNX
               requires; clamped too, which changes no index but keeps
               it, to te's interval bounds check, within the dim) */
            int64_t last = x->dims[d] - 1;
            if (reflect && (lo[d] > last || hi[d] > last))
                return ox_error(im, "reflects dim %d of size %lld by %lld and %lld; pads must be "
                                    "less than the dim",
                                d, (long long)x->dims[d], (long long)lo[d], (long long)hi[d]);
            const char *j = lo[d] > 0 ? arena_printf(ARENA, "%s - %lld", idx[d], (long long)lo[d])
                            : lo[d] < 0 ? arena_printf(ARENA, "%s + %lld", idx[d], (long long)-lo[d])
                                        : idx[d];
            const char *a = lo[d] > 0 ? arena_printf(ARENA, "max(%s, %lld - %s)", j,
                                                     (long long)lo[d], idx[d])
                            : lo[d] < 0 ? arena_printf(ARENA, "(%s)", j)
                                        : j;
            src[d] = lo[d] <= 0 && hi[d] <= 0 ? j
                     : edge ? arena_printf(ARENA, "min(max(%s, 0), %lld)", j, (long long)last)
                            : arena_printf(ARENA, "min(max(min(%s, %lld - %s), 0), %lld)", a,
                                           2 * (long long)last, a, (long long)last);
            continue;
        }
        /* negative pads crop: read further in */
        src[d] = lo[d] > 0 ? arena_printf(ARENA, "%s - %lld", idx[d], (long long)lo[d])
                 : lo[d] < 0 ? arena_printf(ARENA, "%s + %lld", idx[d], (long long)-lo[d]) : idx[d];
        if (lo[d] > 0)
            cond = arena_printf(ARENA, "%s%s%s >= %lld", cond, *cond ? " && " : "", idx[d], (long long)lo[d]);
        if (hi[d] > 0)
            cond = arena_printf(ARENA, "%s%s%s < %lld", cond, *cond ? " && " : "", idx[d],
                                (long long)(x->dims[d] + lo[d]));
    }
    if (!ox_set_shape(im, out[0], x->odtype, x->rank, dims))
        return false;
    const char *r = ox_read(im, x, src);
    double value = cv ? ox_const_values(im, cv)[0] : 0;
    ox_stage(im, out[0], *cond ? arena_printf(ARENA, "select(%s, %s, %s)", cond, r,
                                              ox_literal(im, x->dtype, value))
                               : r);
    return true;
}

static bool cv_dropout(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out)
{
    if (!need_inputs(im, n, in, 1, 3))
        return false;
    OxValue *x = in[0];
    /* training_mode (an input since opset 12) drops at random unless the
     * ratio is 0; otherwise the output is x and the mask all true */
    if (n->ninputs > 2 && in[2]) {
        if (!ox_need_const(im, in[2], "training_mode"))
            return false;
        bool training = ox_const_values(im, in[2])[0] != 0;
        if (training && (n->ninputs < 2 || !in[1]))
            return ox_error(im, "drops at random in training mode; texc converts inference only");
        if (training && !ox_need_const(im, in[1], "ratio"))
            return false;
        if (training && ox_const_values(im, in[1])[0] != 0)
            return ox_error(im, "drops at random in training mode (ratio %g); texc converts "
                                "inference only",
                            ox_const_values(im, in[1])[0]);
    }
    if (n->noutputs > 1 && out[1] && out[1]->uses) {
        int64_t count = ox_elems(x);
        double *ones = arena_alloc(im->a, sizeof *ones * (size_t)(count ? count : 1));
        for (int64_t i = 0; i < count; i++)
            ones[i] = 1;
        ox_set_const(im, out[1], OX_BOOL, x->rank, x->dims, ones);
    }
    if (x->kind == OXV_CONST) {
        ox_set_const(im, out[0], x->odtype, x->rank, x->dims, x->konst);
        out[0]->init = x->init;
        return true;
    }
    if (!ox_set_shape(im, out[0], x->odtype, x->rank, x->dims))
        return false;
    ox_stage(im, out[0], ox_read(im, x, ox_index_vars(im, x->rank, "i")));
    return true;
}

/* ------------------------------------------------------------------ */
/* The table: (op, first opset of the definition converted). */

static const struct {
    const char *op;
    int since;
    OxConvert convert;
} op_table[] = {
    { "Abs", 6, cv_elementwise },       { "Add", 7, cv_elementwise },
    { "And", 7, cv_elementwise },       { "AveragePool", 11, cv_pool },
    { "BatchNormalization", 9, cv_batchnorm },
    { "Cast", 6, cv_cast },             { "Clip", 11, cv_clip },
    { "Concat", 4, cv_concat },         { "Constant", 9, cv_constant },
    { "ConstantOfShape", 9, cv_constant_of_shape },
    { "Conv", 1, cv_conv },             { "Div", 7, cv_elementwise },
    { "Dropout", 12, cv_dropout },      { "Equal", 11, cv_elementwise },
    { "Erf", 9, cv_elementwise },       { "Exp", 6, cv_elementwise },
    { "Expand", 8, cv_expand },         { "Flatten", 1, cv_flatten },
    { "Gather", 11, cv_gather },        { "GatherElements", 11, cv_gather_elements },
    { "Gelu", 20, cv_elementwise },
    { "Gemm", 7, cv_gemm },             { "GlobalAveragePool", 1, cv_pool },
    { "GlobalMaxPool", 1, cv_pool },    { "Greater", 7, cv_elementwise },
    { "GreaterOrEqual", 12, cv_elementwise },
    { "Identity", 1, cv_elementwise },  { "LayerNormalization", 17, cv_layernorm },
    { "Less", 7, cv_elementwise },      { "LessOrEqual", 12, cv_elementwise },
    { "Log", 6, cv_elementwise },       { "LogSoftmax", 1, cv_softmax },
    { "MatMul", 1, cv_matmul },         { "Max", 8, cv_elementwise },
    { "MaxPool", 8, cv_pool },          { "Min", 8, cv_elementwise },
    { "Mul", 7, cv_elementwise },       { "Neg", 6, cv_elementwise },
    { "Not", 1, cv_elementwise },       { "Or", 7, cv_elementwise },
    { "Pad", 11, cv_pad },              { "Pow", 7, cv_elementwise },       { "Range", 11, cv_range },
    { "Reciprocal", 6, cv_elementwise },
    { "ReduceL1", 1, cv_reduce },       { "ReduceMax", 1, cv_reduce },
    { "ReduceMean", 1, cv_reduce },     { "ReduceMin", 1, cv_reduce },
    { "ReduceProd", 1, cv_reduce },     { "ReduceSum", 1, cv_reduce },
    { "ReduceSumSquare", 1, cv_reduce },
    { "Relu", 6, cv_elementwise },      { "Reshape", 5, cv_reshape },
    { "Shape", 1, cv_shape },           { "Sigmoid", 6, cv_elementwise },
    { "Size", 1, cv_size },             { "Slice", 10, cv_slice },
    { "Softmax", 1, cv_softmax },       { "Split", 2, cv_split },
    { "Sqrt", 6, cv_elementwise },      { "Squeeze", 1, cv_squeeze },
    { "Sub", 7, cv_elementwise },       { "Tanh", 6, cv_elementwise },
    { "Transpose", 1, cv_transpose },   { "Unsqueeze", 1, cv_unsqueeze },
    { "Where", 9, cv_elementwise },
};

OxConvert ox_lookup_op(const char *op, int64_t opset)
{
    OxConvert best = NULL;
    int since = -1;
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++)
        if (strcmp(op_table[i].op, op) == 0 && op_table[i].since <= opset && op_table[i].since > since) {
            best = op_table[i].convert;
            since = op_table[i].since;
        }
    return best;
}

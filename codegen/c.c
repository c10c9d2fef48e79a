/* c.c — the OpenMP C backend.
 *
 * requires: a lowered function (sched/lower.c) and its SchedState.
 * guarantees: NAME.c, a translation unit that includes only standard
 * headers and NAME.h, defines the entry points NAME.h declares:
 *   NAME(inputs, outputs)            a workspace of its own, then NAME_ws
 *   NAME_ws(.., workspace)           the kernel steps, intermediates at
 *                                    the memory plan's offsets
 *   NAME_prepack(weights, packed)    when the layout pass packed const
 *   NAME_packed[_ws](.., packed ..)  inputs: packing once, and the kernel
 *                                    on packed weights (NAME and NAME_ws
 *                                    then pack on every call)
 *   NAME_prepacked_bytes, NAME_prepack_args, NAME_packed_args: the same
 *                                    over pointer arrays, for harnesses
 * and reads the way the schedule reads: one loop per schedule loop, named
 * after it; `#pragma omp simd` for vectorized ones, one block per value of
 * an unrolled loop.  A parallel loop becomes a function of a range of its
 * iterations, written ahead of the function it was in, which calls
 * te_parallel_for on it (codegen/parallel.c says why and how it runs).
 * Buffers are typed views of the caller's pointers (float (*x)[768]), so
 * indexing reads x[i][k].  Arithmetic follows the reference evaluator:
 * integer division by zero gives 0, float-to-int casts saturate and send
 * NaN to 0, min/max/relu propagate NaN.  f16 and bf16 values are computed
 * in float and rounded when stored.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#endif
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

/* A function's parameters: the tensors, and which it only reads. */
typedef struct Params {
    const Tensor **t;
    bool *ro;
    int n;
} Params;

typedef struct Emitter {
    Arena *a;
    FILE *out;
    SchedState *st;
    PtrVec names;      /* const char *: C names in use (for clashes) */
    PtrVec tensors;    /* Tensor * with a C name ... */
    PtrVec tnames;     /* ... and that name */
    const char **var_names; /* by IterVar id */
    PtrVec vector_bufs; /* Tensor *: local buffers declared as vectors */
    WorkspacePlan plan; /* where each of the function's temps lives */
    int indent;
    /* the C function being written, for emit_parallel */
    const char *base;  /* the entry point's name */
    const Params *fn_params;
    const LoweredFunc *fn_temps; /* its temps are in te_workspace, or NULL */
    PtrVec outer;      /* IterVar *: the loop variables declared around */
    int allocs;        /* S_ALLOC blocks open around */
    FILE *lifted;      /* parallel loops' functions, written ahead of it */
    bool in_lifted;    /* writing one: nested parallel loops run serially */
    char *text[2];     /* the function and e->lifted, in memory */
    size_t len[2];
} Emitter;

/* Identifiers a user's name must not become. */
static const char *const reserved[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
    "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
    "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
    "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "_Bool",
    "_Complex", "_Imaginary", "_Alignas", "_Alignof", "_Atomic", "_Generic",
    "_Noreturn", "_Static_assert", "_Thread_local", "_Float16", "bool", "true",
    "false", "NULL", "main", "errno", "assert", "abort", "free", "malloc", "calloc",
    "realloc", "aligned_alloc", "memcpy", "memset", "size_t", "int32_t", "int64_t",
    "uint16_t", "uint32_t", "uint64_t", "INFINITY", "NAN", "exp", "expf", "log",
    "logf", "sqrt", "sqrtf", "tanh", "tanhf", "erf", "erff", "fabs", "fabsf", "pow",
    "powf", "isnan", "stdin", "stdout", "stderr", "EOF", "omp_get_thread_num",
};

static bool name_taken(Emitter *e, const char *name)
{
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcmp(reserved[i], name) == 0)
            return true;
    if (strncmp(name, "te_", 3) == 0 || strncmp(name, "TE_", 3) == 0)
        return true;
    for (int i = 0; i < e->names.len; i++)
        if (strcmp(e->names.items[i], name) == 0)
            return true;
    return false;
}

/* NAME, or NAME_2, NAME_3, ... if taken; recorded as taken.  te_ names
 * are texc's own: a user's te_a becomes u_te_a. */
static const char *claim(Emitter *e, const char *name)
{
    if (strncmp(name, "te_", 3) == 0 || strncmp(name, "TE_", 3) == 0)
        name = arena_printf(e->a, "u_%s", name);
    const char *c = name;
    for (int k = 2; name_taken(e, c); k++)
        c = arena_printf(e->a, "%s_%d", name, k);
    vec_push(e->a, &e->names, (void *)c);
    return c;
}

char *cg_c_identifier(Arena *a, const char *name)
{
    size_t n = strlen(name);
    char *id = arena_alloc(a, n + 2);
    size_t k = 0;
    if (n == 0 || isdigit((unsigned char)name[0]))
        id[k++] = '_';
    for (size_t i = 0; i < n; i++)
        id[k++] = isalnum((unsigned char)name[i]) ? name[i] : '_';
    /* a file called auto.te must not define a function called auto */
    Emitter probe = { .a = a };
    if (name_taken(&probe, id))
        return arena_printf(a, "%s_kernel", id);
    return id;
}

static const char *tensor_name(Emitter *e, const Tensor *t)
{
    for (int i = 0; i < e->tensors.len; i++)
        if (e->tensors.items[i] == t)
            return e->tnames.items[i];
    const char *n = claim(e, t->name);
    vec_push(e->a, &e->tensors, (void *)t);
    vec_push(e->a, &e->tnames, (void *)n);
    return n;
}

static const char *var_name(Emitter *e, const IterVar *v)
{
    /* unique in the function: a stage computed inside another's loop must
     * not shadow the loop variables its bounds are computed from */
    if (!e->var_names[v->id])
        e->var_names[v->id] = claim(e, v->name);
    return e->var_names[v->id];
}

/* The C type a value of T is computed in, and the one it is stored in. */
static const char *compute_type(DType t)
{
    switch (t) {
    case DT_BOOL: return "bool";
    case DT_I32: return "int64_t";
    case DT_F64: return "double";
    default: return "float";
    }
}

static const char *storage_type(DType t)
{
    switch (t) {
    case DT_BF16: return "uint16_t";
    case DT_F16: return "_Float16";
    default: return dtype_ctype(t);
    }
}

/* ------------------------------------------------------------------ */
/* Expressions.                                                        */

static void emit_expr(Emitter *e, const Expr *x, int prec);

static int c_prec(Op op)
{
    switch (op) {
    case OP_OR: return 1;
    case OP_AND: return 2;
    case OP_EQ: case OP_NE: return 3;
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: return 4;
    case OP_ADD: case OP_SUB: return 5;
    case OP_MUL: case OP_DIV: case OP_MOD: return 6;
    default: return 7;
    }
}

static void emit_const(Emitter *e, DType t, double v)
{
    FILE *out = e->out;
    if (t == DT_I32 || t == DT_BOOL || t == DT_NONE) {
        if (v < 0)
            fprintf(out, "(%lld)", (long long)v);
        else
            fprintf(out, "%lld", (long long)v);
        return;
    }
    if (isnan(v)) {
        fputs("NAN", out);
        return;
    }
    if (isinf(v)) {
        fputs(v > 0 ? "INFINITY" : "(-INFINITY)", out);
        return;
    }
    char buf[64];
    bool dbl = t == DT_F64;
    snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", v);
    if (!strpbrk(buf, ".en"))
        strcat(buf, ".0");
    fprintf(out, v < 0 ? "(%s%s)" : "%s%s", buf, dbl ? "" : "f");
}

static void emit_index(Emitter *e, const Tensor *t, Expr *const *idx)
{
    fputs(tensor_name(e, t), e->out);
    if (t->rank == 0) {
        fputs("[0]", e->out);
        return;
    }
    if (t->rank == 1) {
        fputc('[', e->out);
        emit_expr(e, idx[0], 0);
        fputc(']', e->out);
        return;
    }
    for (int d = 0; d < t->rank; d++) {
        fputc('[', e->out);
        emit_expr(e, idx[d], 0);
        fputc(']', e->out);
    }
}

static void emit_call(Emitter *e, const char *fn, const Expr *x)
{
    fprintf(e->out, "%s(", fn);
    for (int i = 0; i < x->nargs; i++) {
        if (i)
            fputs(", ", e->out);
        emit_expr(e, x->args[i], 0);
    }
    fputc(')', e->out);
}

/* The name of a helper or libm function for OP computed in type T. */
static const char *func_name(Emitter *e, Op op, DType t)
{
    bool dbl = t == DT_F64;
    bool integer = t == DT_I32;
    switch (op) {
    case OP_EXP: return dbl ? "exp" : "expf";
    case OP_LOG: return dbl ? "log" : "logf";
    case OP_SQRT: return dbl ? "sqrt" : "sqrtf";
    case OP_RSQRT: return dbl ? "te_rsqrt_f64" : "te_rsqrt_f32";
    case OP_TANH: return dbl ? "tanh" : "tanhf";
    case OP_ERF: return dbl ? "erf" : "erff";
    case OP_ABS: return integer ? "te_abs_i64" : dbl ? "fabs" : "fabsf";
    case OP_GELU: return dbl ? "te_gelu_f64" : "te_gelu_f32";
    case OP_SIGMOID: return dbl ? "te_sigmoid_f64" : "te_sigmoid_f32";
    case OP_RELU: return integer ? "te_relu_i64" : dbl ? "te_relu_f64" : "te_relu_f32";
    case OP_POW: return dbl ? "pow" : "powf";
    case OP_MIN: return integer ? "te_min_i64" : dbl ? "te_min_f64" : "te_min_f32";
    case OP_MAX: return integer ? "te_max_i64" : dbl ? "te_max_f64" : "te_max_f32";
    default:
        (void)e;
        TE_UNREACHABLE();
    }
}

static void emit_cast(Emitter *e, const Expr *x)
{
    DType to = x->dtype, from = x->args[0]->dtype;
    const Expr *v = x->args[0];
    if (to == DT_BOOL) {
        fputs("(", e->out);
        emit_expr(e, v, 3);
        fputs(" != 0)", e->out);
    } else if (to == DT_I32 && dtype_is_float(from)) {
        emit_call(e, "te_f2i", x);
    } else if (to == DT_F16) {
        fputs("(float)(_Float16)(", e->out);
        emit_expr(e, v, 0);
        fputc(')', e->out);
    } else if (to == DT_BF16) {
        emit_call(e, "te_round_bf16", x);
    } else {
        fprintf(e->out, "(%s)", compute_type(to));
        emit_expr(e, v, 7);
    }
}

static void emit_expr(Emitter *e, const Expr *x, int prec)
{
    FILE *out = e->out;
    switch (x->kind) {
    case EX_CONST:
        emit_const(e, x->dtype, x->value);
        return;
    case EX_VAR:
        fputs(var_name(e, x->var), out);
        return;
    case EX_LOAD:
        if (x->tensor->dtype == DT_BF16) {
            fputs("te_bf16_to_f32(", out);
            emit_index(e, x->tensor, x->args);
            fputc(')', out);
        } else if (x->tensor->dtype == DT_F16) {
            fputs("(float)", out);
            emit_index(e, x->tensor, x->args);
        } else if (x->tensor->dtype == DT_I32) {
            /* i32 values are computed in int64_t, like the evaluator's
             * exact arithmetic, and saturate when stored */
            fputs("(int64_t)", out);
            emit_index(e, x->tensor, x->args);
        } else {
            emit_index(e, x->tensor, x->args);
        }
        return;
    case EX_REDUCE:
        TE_UNREACHABLE();
    case EX_OP:
        break;
    }
    DType t = x->nargs ? x->args[0]->dtype : x->dtype;
    switch (x->op) {
    case OP_NEG:
    case OP_NOT:
        fputs(x->op == OP_NEG ? "-" : "!", out);
        emit_expr(e, x->args[0], 7);
        return;
    case OP_CAST:
        emit_cast(e, x);
        return;
    case OP_SELECT:
        fputc('(', out);
        emit_expr(e, x->args[0], 1);
        fputs(" ? ", out);
        emit_expr(e, x->args[1], 1);
        fputs(" : ", out);
        emit_expr(e, x->args[2], 1);
        fputc(')', out);
        return;
    case OP_DIV:
    case OP_MOD:
        if (t == DT_I32) {
            int64_t c;
            if (!sch_const_int(x->args[1], &c) || c == 0 || c == -1) {
                emit_call(e, x->op == OP_DIV ? "te_div_i64" : "te_mod_i64", x);
                return;
            }
        }
        break;
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_LT: case OP_LE: case OP_GT:
    case OP_GE: case OP_EQ: case OP_NE: case OP_AND: case OP_OR:
        break;
    default:
        emit_call(e, func_name(e, x->op, t), x);
        return;
    }
    int p = c_prec(x->op);
    if (p < prec)
        fputc('(', out);
    emit_expr(e, x->args[0], p);
    fprintf(out, " %s ", op_text(x->op));
    emit_expr(e, x->args[1], p + 1);
    if (p < prec)
        fputc(')', out);
}

/* ------------------------------------------------------------------ */
/* Statements.                                                         */

static void line(Emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(Emitter *e, const char *fmt, ...)
{
    fprintf(e->out, "%*s", e->indent * 4, "");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(e->out, fmt, ap);
    va_end(ap);
}

static void emit_stmt(Emitter *e, const Stmt *s);

static void emit_store(Emitter *e, const Stmt *s)
{
    fprintf(e->out, "%*s", e->indent * 4, "");
    emit_index(e, s->buf, s->index);
    fputs(" = ", e->out);
    switch (s->buf->dtype) {
    case DT_BF16:
        fputs("te_f32_to_bf16(", e->out);
        emit_expr(e, s->value, 0);
        fputc(')', e->out);
        break;
    case DT_F16:
        fprintf(e->out, "(%s)(", storage_type(s->buf->dtype));
        emit_expr(e, s->value, 0);
        fputc(')', e->out);
        break;
    case DT_I32:
        fputs("te_sat_i32(", e->out);
        emit_expr(e, s->value, 0);
        fputc(')', e->out);
        break;
    default:
        emit_expr(e, s->value, 0);
    }
    fputs(";\n", e->out);
}


/* ------------------------------------------------------------------ */
/* Vector code.                                                        */
/*
 * A vectorized loop whose body is f32 stores of f32 arithmetic, where
 * every load either does not depend on the loop variable (a broadcast) or
 * reads consecutive elements along its last dimension (a vector load),
 * is written with GCC/Clang vector types of 16 floats: one statement per
 * group of 16 iterations, so a loop of 64 is four vector statements.
 * Local buffers whose last dimension is a multiple of 16 are declared as
 * arrays of vectors, so a tile of accumulators indexed by constants after
 * unrolling stays in vector registers.  When the trip count is not a
 * constant (a tile at the edge of a tensor), the vector code runs when it
 * is the full count and a scalar loop otherwise.  Anything else (other
 * dtypes, gathers, comparisons, casts) is a scalar loop under
 * `#pragma omp simd`.
 */

#define VLANES 16

/* Is E free of the variable V? */
static bool invariant(const Expr *e, const IterVar *v)
{
    return !cg_expr_uses_var(e, v);
}

/* The most elements apart that consecutive lanes of a vector load may be
 * (a strided load reads each lane's element alone: te_vloads) */
#define VMAX_STRIDE 4

/* For an index IX: the C in IX = REST + C*V, 1 <= C <= VMAX_STRIDE, with
 * REST free of V (*REST set), or 0. */
static int64_t stride_of(Emitter *e, Expr *ix, const IterVar *v, Expr **rest)
{
    Expr *var = ex_var(e->a, (Span){ 0, 0 }, (IterVar *)v);
    for (int64_t c = 1; c <= VMAX_STRIDE; c++) {
        *rest = sch_sub(e->a, ix, sch_mul(e->a, sch_int(e->a, c), var));
        if (invariant(*rest, v))
            return c;
    }
    return 0;
}

/* Is E computable as a vector of f32 over V? */
static bool vectorizable(Emitter *e, const Expr *x, const IterVar *v)
{
    if (invariant(x, v))
        return x->dtype == DT_F32;
    switch (x->kind) {
    case EX_LOAD: {
        if (x->tensor->dtype != DT_F32 || x->nargs == 0)
            return false;
        for (int d = 0; d + 1 < x->nargs; d++)
            if (!invariant(x->args[d], v))
                return false;
        Expr *rest;
        return stride_of(e, x->args[x->nargs - 1], v, &rest) > 0;
    }
    case EX_OP:
        if (x->dtype != DT_F32)
            return false;
        switch (x->op) {
        case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_NEG:
        case OP_EXP: case OP_LOG: case OP_SQRT: case OP_RSQRT: case OP_TANH: case OP_ERF:
        case OP_ABS: case OP_GELU: case OP_SIGMOID: case OP_RELU: case OP_MIN: case OP_MAX:
        case OP_POW:
            for (int i = 0; i < x->nargs; i++)
                if (!vectorizable(e, x->args[i], v))
                    return false;
            return true;
        default:
            return false;
        }
    default:
        return false;
    }
}

static bool vector_body(Emitter *e, const Stmt *s, const IterVar *v)
{
    if (!s)
        return true;
    switch (s->kind) {
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            if (!vector_body(e, s->stmts[i], v))
                return false;
        return true;
    case S_STORE: {
        if (s->buf->dtype != DT_F32 || s->buf->rank == 0)
            return false;
        for (int d = 0; d + 1 < s->buf->rank; d++)
            if (!invariant(s->index[d], v))
                return false;
        Expr *rest;
        return stride_of(e, s->index[s->buf->rank - 1], v, &rest) == 1 &&
               vectorizable(e, s->value, v);
    }
    default:
        return false;
    }
}

/* Can the local buffer BUF be declared as vectors? */
static bool vector_shape(const Tensor *buf)
{
    return buf->rank > 0 && buf->dtype == DT_F32 && buf->shape[buf->rank - 1] % VLANES == 0;
}

/* Is BUF a local buffer declared as vectors (see emit_stmt's S_ALLOC)? */
static bool vector_layout(Emitter *e, const Tensor *buf)
{
    for (int i = 0; i < e->vector_bufs.len; i++)
        if (e->vector_bufs.items[i] == buf)
            return true;
    return false;
}

/* The address of BUF[IDX] with the last index replaced by LAST. */
static void emit_address(Emitter *e, const Tensor *buf, Expr *const *idx, Expr *last)
{
    fprintf(e->out, "&%s", tensor_name(e, buf));
    for (int d = 0; d + 1 < buf->rank; d++) {
        fputc('[', e->out);
        emit_expr(e, idx[d], 0);
        fputc(']', e->out);
    }
    fputc('[', e->out);
    emit_expr(e, last, 0);
    fputc(']', e->out);
}

/* The vector at lanes V = MIN + G*16 + 0..15 of the access BUF[IDX]: an
 * element of a vector buffer when its position is a constant multiple of
 * 16, else an unaligned load (or store) through memcpy. */
static void emit_vaccess(Emitter *e, const Tensor *buf, Expr *const *idx, const IterVar *v,
                         Expr *vmin, int64_t g, Expr *store_value);

static void emit_vexpr(Emitter *e, const Expr *x, const IterVar *v, Expr *vmin, int64_t g)
{
    FILE *out = e->out;
    if (invariant(x, v)) {
        fputs("te_splat(", out);
        emit_expr(e, x, 0);
        fputc(')', out);
        return;
    }
    if (x->kind == EX_LOAD) {
        emit_vaccess(e, x->tensor, x->args, v, vmin, g, NULL);
        return;
    }
    switch (x->op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
        fputc('(', out);
        emit_vexpr(e, x->args[0], v, vmin, g);
        fprintf(out, " %s ", op_text(x->op));
        emit_vexpr(e, x->args[1], v, vmin, g);
        fputc(')', out);
        return;
    case OP_NEG:
        fputs("(-", out);
        emit_vexpr(e, x->args[0], v, vmin, g);
        fputc(')', out);
        return;
    default:
        fprintf(out, "te_v%s(", op_text(x->op));
        for (int i = 0; i < x->nargs; i++) {
            if (i)
                fputs(", ", out);
            emit_vexpr(e, x->args[i], v, vmin, g);
        }
        fputc(')', out);
        return;
    }
}

static void emit_vaccess(Emitter *e, const Tensor *buf, Expr *const *idx, const IterVar *v,
                         Expr *vmin, int64_t g, Expr *store_value)
{
    Arena *a = e->a;
    Expr *rest;
    int64_t c = stride_of(e, idx[buf->rank - 1], v, &rest); /* 1 for stores */
    /* the first lane's position along the last dimension */
    Expr *first = sch_add(a, rest, sch_mul(a, sch_int(a, c),
                                           sch_add(a, vmin, sch_int(a, g * VLANES))));
    int64_t pos;
    if (c > 1) {
        fputs("te_vloads(", e->out);
        emit_address(e, buf, idx, first);
        fprintf(e->out, ", %lld)", (long long)c);
        return;
    }
    if (vector_layout(e, buf) && sch_const_int(first, &pos) && pos % VLANES == 0) {
        fprintf(e->out, "%s_v", tensor_name(e, buf));
        for (int d = 0; d + 1 < buf->rank; d++) {
            fputc('[', e->out);
            emit_expr(e, idx[d], 0);
            fputc(']', e->out);
        }
        fprintf(e->out, "[%lld]", (long long)(pos / VLANES));
        if (store_value) {
            fputs(" = ", e->out);
            emit_vexpr(e, store_value, v, vmin, g);
        }
        return;
    }
    fputs(store_value ? "te_vstore(" : "te_vload(", e->out);
    emit_address(e, buf, idx, first);
    if (store_value) {
        fputs(", ", e->out);
        emit_vexpr(e, store_value, v, vmin, g);
    }
    fputc(')', e->out);
}

static void emit_vstmt(Emitter *e, const Stmt *s, const IterVar *v, Expr *vmin, int64_t g)
{
    if (!s)
        return;
    if (s->kind == S_SEQ) {
        for (int i = 0; i < s->n; i++)
            emit_vstmt(e, s->stmts[i], v, vmin, g);
        return;
    }
    fprintf(e->out, "%*s", e->indent * 4, "");
    emit_vaccess(e, s->buf, s->index, v, vmin, g, s->value);
    fputs(";\n", e->out);
}

/* The vector form of a vectorized loop; false if it does not apply. */
static bool emit_vector_loop(Emitter *e, const Stmt *s);
static bool emit_vector_reduction(Emitter *e, const Stmt *s);

static void emit_scalar_loop(Emitter *e, const Stmt *s);
static void emit_prefetch(Emitter *e, const Stmt *s);

static void emit_for(Emitter *e, const Stmt *s)
{
    Loop *l = s->loop;
    const char *v = var_name(e, l->var);
    int64_t min = -1, ext;
    bool zero_min = sch_const_int(s->min, &min) && min == 0;
    if (l->kind == LOOP_UNROLLED) {
        bool constant = sch_const_int(s->extent, &ext);
        int64_t n = constant ? ext : sch_trip_bound(l);
        line(e, "/* %s: unrolled %lld times */\n", l->name, (long long)n);
        for (int64_t k = 0; k < n; k++) {
            if (constant) {
                line(e, "{\n");
            } else {
                line(e, "if (%lld < ", (long long)k);
                emit_expr(e, s->extent, 4);
                fputs(") {\n", e->out);
            }
            e->indent++;
            line(e, "const int64_t %s = ", v);
            if (!zero_min) {
                emit_expr(e, s->min, 5);
                fprintf(e->out, " + %lld;\n", (long long)k);
            } else {
                fprintf(e->out, "%lld;\n", (long long)k);
            }
            vec_push(e->a, &e->outer, l->var);
            emit_stmt(e, s->body);
            e->outer.len--;
            e->indent--;
            line(e, "}\n");
        }
        return;
    }
    if (l->kind == LOOP_VECTORIZED &&
        (l->reduce ? emit_vector_reduction(e, s) : emit_vector_loop(e, s)))
        return;
    emit_scalar_loop(e, s);
}

/* The vector statements of BODY for lanes V = V's value + G*16 + 0..15,
 * G = 0..GROUPS-1. */
static void emit_vgroups(Emitter *e, const Stmt *body, const IterVar *v, int64_t groups)
{
    Expr *at = ex_var(e->a, (Span){ 0, 0 }, (IterVar *)v);
    for (int64_t g = 0; g < groups; g++)
        emit_vstmt(e, body, v, at, g);
}

/* "{ int64_t v = MIN; const int64_t te_end = MIN + EXTENT;": the start of
 * a vector loop written as a loop over steps of STEP lanes */
static void open_strided(Emitter *e, const Stmt *s)
{
    const char *v = var_name(e, s->loop->var);
    line(e, "{\n");
    e->indent++;
    line(e, "int64_t %s = ", v);
    emit_expr(e, s->min, 0);
    fputs(";\n", e->out);
    line(e, "const int64_t te_end = ");
    emit_expr(e, sch_add(e->a, s->min, s->extent), 0);
    fputs(";\n", e->out);
    vec_push(e->a, &e->outer, s->loop->var);
}

/* The lanes of a vector loop that no whole vector covers, one at a time:
 * "for (; v < te_end; v++) BODY }", closing open_strided's block. */
static void close_strided(Emitter *e, const Stmt *s)
{
    const char *v = var_name(e, s->loop->var);
    line(e, "for (; %s < te_end; %s++) {\n", v, v);
    e->indent++;
    emit_stmt(e, s->body);
    e->indent--;
    line(e, "}\n");
    e->outer.len--;
    e->indent--;
    line(e, "}\n");
}

/* How long loop S runs, or the most it runs when that is not a constant
 * (a tile at an edge); *CONSTANT (if not NULL) says which. */
static int64_t trip_count(const Stmt *s, bool *constant)
{
    int64_t ext = sch_trip_bound(s->loop);
    bool c = sch_const_int(s->extent, &ext);
    if (constant)
        *constant = c;
    return ext;
}

/* Vector groups a step of a strided vector loop makes: 4 (64 lanes), or
 * fewer when the loop is known to be shorter. */
static int64_t step_groups(const Stmt *s)
{
    int64_t ext = trip_count(s, NULL);
    return ext <= 0 || ext >= 4 * VLANES ? 4 : ext >= VLANES ? ext / VLANES : 1;
}

/* The vector part of a strided loop over S's variable: for STEP = GROUPS,
 * then 1 (once, if GROUPS is 1), "for (; v <= te_end - 16*STEP; v +=
 * 16*STEP) { BODY(STEP) }". */
static void emit_steps(Emitter *e, const Stmt *s, int64_t groups,
                       void (*body)(Emitter *e, const Stmt *s, int64_t step, const void *ctx),
                       const void *ctx)
{
    const char *v = var_name(e, s->loop->var);
    for (int64_t step = groups; ; step = 1) {
        line(e, "for (; %s <= te_end - %lld; %s += %lld) {\n", v, (long long)(step * VLANES), v,
             (long long)(step * VLANES));
        e->indent++;
        body(e, s, step, ctx);
        e->indent--;
        line(e, "}\n");
        if (step == 1)
            break;
    }
}

/* emit_steps' body for a loop of vector stores: STEP groups of them */
static void store_groups(Emitter *e, const Stmt *s, int64_t step, const void *ctx)
{
    (void)ctx;
    emit_vgroups(e, s->body, s->loop->var, step);
}

static bool emit_vector_loop(Emitter *e, const Stmt *s)
{
    const Loop *l = s->loop;
    bool constant;
    int64_t bound = trip_count(s, &constant);
    if (bound < VLANES || !vector_body(e, s->body, l->var))
        return false; /* (shorter than a vector: the scalar loop) */
    var_name(e, l->var); /* the scalar loop's name, claimed first */
    if (bound % VLANES != 0 || bound > 8 * VLANES) {
        /* a long loop (or one that vectors do not divide): a loop over
         * steps of up to 4 vectors, then single vectors, then the lanes
         * left one at a time */
        int64_t groups = step_groups(s);
        open_strided(e, s);
        line(e, "/* %s: %lld lanes, %lld vector%s of %d a step */\n", l->name, (long long)bound,
             (long long)groups, groups > 1 ? "s" : "", VLANES);
        emit_steps(e, s, groups, store_groups, NULL);
        close_strided(e, s);
        return true;
    }
    if (!constant) {
        line(e, "if (");
        emit_expr(e, s->extent, 3);
        fprintf(e->out, " == %lld) {\n", (long long)bound);
        e->indent++;
    }
    line(e, "/* %s: %lld lanes as %lld vectors of %d */\n", l->name, (long long)bound,
         (long long)(bound / VLANES), VLANES);
    for (int64_t g = 0; g < bound / VLANES; g++)
        emit_vstmt(e, s->body, l->var, s->min, g);
    if (!constant) {
        e->indent--;
        line(e, "} else {\n");
        e->indent++;
        emit_scalar_loop(e, s);
        e->indent--;
        line(e, "}\n");
    }
    return true;
}

/* A vectorized reduction loop over V: its body is one update
 * BUF[IDX] = OP(BUF[IDX], VALUE) (sched/lower.c's combine) with IDX free
 * of V and VALUE a vector expression over V.  Returns the update and sets
 * *OP, or NULL. */
static const Stmt *reduction_update(Emitter *e, const Stmt *s, const IterVar *v, Op *op)
{
    while (s && s->kind == S_SEQ && s->n == 1)
        s = s->stmts[0];
    if (!s || s->kind != S_STORE || s->buf->dtype != DT_F32 || s->value->kind != EX_OP)
        return NULL;
    const Expr *x = s->value, *acc = x->args[0];
    if ((x->op != OP_ADD && x->op != OP_MUL && x->op != OP_MAX && x->op != OP_MIN) ||
        acc->kind != EX_LOAD || acc->tensor != s->buf)
        return NULL;
    for (int d = 0; d < s->buf->rank; d++) {
        int64_t diff;
        if (!invariant(s->index[d], v) ||
            !sch_const_int(sch_sub(e->a, acc->args[d], s->index[d]), &diff) || diff != 0)
            return NULL;
    }
    if (!vectorizable(e, x->args[1], v) || invariant(x->args[1], v))
        return NULL;
    *op = x->op;
    return s;
}

/* A reduction's combine in the generated C, "A OP B" as "F(A, B)" for max
 * and min (te_vmax on vectors, te_max_f32 on floats: NaN propagates) and
 * "(A + B)" for sums and products: combine_open, A, combine_mid, B, ")". */
static void combine_open(Emitter *e, Op op, bool vector)
{
    fputs(op == OP_MAX ? (vector ? "te_vmax(" : "te_max_f32(")
          : op == OP_MIN ? (vector ? "te_vmin(" : "te_min_f32(") : "(", e->out);
}

static void combine_mid(Emitter *e, Op op)
{
    if (op == OP_MAX || op == OP_MIN)
        fputs(", ", e->out);
    else
        fprintf(e->out, " %s ", op_text(op));
}

/* emit_steps' body for a reduction (CTX its update, reduction_update):
 * each of STEP vectors of partial results combined with its lanes */
static void update_groups(Emitter *e, const Stmt *s, int64_t step, const void *ctx)
{
    const Stmt *u = ctx;
    Op op = u->value->op;
    Expr *at = ex_var(e->a, (Span){ 0, 0 }, s->loop->var);
    for (int64_t g = 0; g < step; g++) {
        line(e, "te_acc[%lld] = ", (long long)g);
        combine_open(e, op, true);
        fprintf(e->out, "te_acc[%lld]", (long long)g);
        combine_mid(e, op);
        emit_vexpr(e, u->value->args[1], s->loop->var, at, g);
        fputs(");\n", e->out);
    }
}

/* A vectorized reduction loop: 1 to 4 vectors of partial results (the
 * reduction reassociated: sched/apply.c allows it only without
 * -fstrict-fp), folded into the one result once, then the lanes no vector
 * covers.  False if the body is not a vector update (reduction_update). */
static bool emit_vector_reduction(Emitter *e, const Stmt *s)
{
    const Loop *l = s->loop;
    Op op;
    const Stmt *u = reduction_update(e, s->body, l->var, &op);
    if (!u)
        return false;
    const char *what = op == OP_ADD ? "a sum" : op == OP_MUL ? "a product"
                       : op == OP_MAX ? "a max" : "a min";
    const char *ident = op == OP_ADD ? "0.0f" : op == OP_MUL ? "1.0f"
                        : op == OP_MAX ? "-INFINITY" : "INFINITY";
    const char *fold = op == OP_ADD ? "te_hsum" : op == OP_MUL ? "te_hprod"
                       : op == OP_MAX ? "te_hmax" : "te_hmin";
    int64_t groups = step_groups(s);
    open_strided(e, s);
    line(e, "/* %s: %s over %lld lanes in %lld vector%s of %d, then folded */\n", l->name, what,
         (long long)trip_count(s, NULL), (long long)groups, groups > 1 ? "s" : "", VLANES);
    line(e, "te_v16f te_acc[%lld];\n", (long long)groups);
    line(e, "for (int te_g = 0; te_g < %lld; te_g++)\n", (long long)groups);
    line(e, "    te_acc[te_g] = te_splat(%s);\n", ident);
    emit_steps(e, s, groups, update_groups, u);
    /* the vectors folded into te_acc[0], halves first */
    for (int64_t w = groups; w > 1; w = (w + 1) / 2)
        for (int64_t g = 0; g + (w + 1) / 2 < w; g++) {
            line(e, "te_acc[%lld] = ", (long long)g);
            combine_open(e, op, true);
            fprintf(e->out, "te_acc[%lld]", (long long)g);
            combine_mid(e, op);
            fprintf(e->out, "te_acc[%lld]);\n", (long long)(g + (w + 1) / 2));
        }
    /* then its lanes into the result */
    fprintf(e->out, "%*s", e->indent * 4, "");
    emit_index(e, u->buf, u->index);
    fputs(" = ", e->out);
    combine_open(e, op, false);
    emit_index(e, u->buf, u->index);
    combine_mid(e, op);
    fprintf(e->out, "%s(te_acc[0]));\n", fold);
    close_strided(e, s);
    return true;
}

static bool emit_parallel(Emitter *e, const Stmt *s);

/* "for (int64_t v = MIN; v < END; v++) { BODY }", END "MIN + EXTENT"
 * unless given */
static void emit_loop_over(Emitter *e, const Stmt *s, const char *min, const char *end)
{
    const Loop *l = s->loop;
    const char *v = var_name(e, l->var);
    line(e, "for (int64_t %s = ", v);
    if (min)
        fputs(min, e->out);
    else
        emit_expr(e, s->min, 0);
    fprintf(e->out, "; %s < ", v);
    if (end)
        fputs(end, e->out);
    else
        emit_expr(e, sch_add(e->a, s->min, s->extent), 4);
    fprintf(e->out, "; %s++) {\n", v);
    e->indent++;
    vec_push(e->a, &e->outer, l->var);
    if (l->pipeline >= 2)
        emit_prefetch(e, s);
    emit_stmt(e, s->body);
    e->outer.len--;
    e->indent--;
    line(e, "}\n");
}

static void emit_scalar_loop(Emitter *e, const Stmt *s)
{
    const Loop *l = s->loop;
    if (l->kind == LOOP_PARALLEL && emit_parallel(e, s))
        return;
    if (l->kind == LOOP_PARALLEL && !e->in_lifted)
        line(e, "#pragma omp parallel for schedule(static)\n");
    else if (l->kind == LOOP_VECTORIZED && !l->reduce)
        line(e, "#pragma omp simd\n"); /* (a reduction's would race on its result) */
    emit_loop_over(e, s, NULL, NULL);
}

static void emit_view(Emitter *e, const Tensor *t, bool ro, const char *from);
static void emit_temp(Emitter *e, const Tensor *t, int i);

/* A parallel loop S as a function of a range of its iterations,
 *   static void F(void *te_arg, int64_t te_lo, int64_t te_hi)
 * written to e->lifted with a struct F_ctx of what it reads from around
 * (the function's pointer parameters, te_workspace, outer loop
 * variables), and in its place "te_parallel_for(F, &(struct F_ctx){..},
 * MIN, MIN + EXTENT);".  False, and nothing written, where S cannot be
 * lifted: inside a local buffer's block (the function would need the
 * buffer; the caller then writes an OpenMP loop, as before) or inside a
 * lifted loop (S then runs serially in its thread). */
static bool emit_parallel(Emitter *e, const Stmt *s)
{
    if (!e->lifted || e->in_lifted || e->allocs > 0)
        return false;
    TE_ASSERT(e->indent > 0);
    const Loop *l = s->loop;
    const char *stage = "";
    for (int i = 0; i < e->st->stages.len && !*stage; i++) {
        const SStage *g = e->st->stages.items[i];
        for (int k = 0; k < g->loops.len; k++)
            if (g->loops.items[k] == l)
                stage = g->name;
    }
    const char *f = claim(e, cg_c_identifier(e->a, arena_printf(e->a, "%s_%s_%s", e->base, stage, l->name)));
    /* what S uses, its bounds included (a pipelined loop's prefetch tests
     * them): the parameters, the temps (through te_workspace), the outer
     * loop variables; the struct, the function and the call list the same */
    const Params *p = e->fn_params;
    const PtrVec *temps = e->fn_temps ? &e->fn_temps->temps : &(PtrVec){0};
    bool *param = arena_alloc(e->a, sizeof *param * (size_t)(p->n + 1));
    bool *temp = arena_alloc(e->a, sizeof *temp * (size_t)(temps->len + 1));
    bool ws = false;
    int captured = 0;
    for (int i = 0; i < p->n; i++)
        captured += param[i] = cg_stmt_uses(s, p->t[i]);
    for (int i = 0; i < temps->len; i++)
        ws = (temp[i] = cg_stmt_uses(s, temps->items[i])) || ws;
    PtrVec vars = {0};
    for (int i = 0; i < e->outer.len; i++)
        if (cg_stmt_uses_var(s, e->outer.items[i]))
            vec_push(e->a, &vars, e->outer.items[i]);
    captured += vars.len + ws;
    TE_ASSERT(captured > 0); /* it stores to a parameter or a temp */

    FILE *out = e->out;
    int indent = e->indent;
    e->out = e->lifted;
    e->in_lifted = true;
    fprintf(e->out, "\n/* %s's parallel loop %s: what its iterations read from around it */\nstruct %s_ctx {\n",
            stage, l->name, f);
    for (int i = 0; i < p->n; i++)
        if (param[i])
            fprintf(e->out, "    %s%s *%s_;\n", p->ro[i] ? "const " : "", storage_type(p->t[i]->dtype),
                    tensor_name(e, p->t[i]));
    if (ws)
        fputs("    char *te_workspace;\n", e->out);
    for (int i = 0; i < vars.len; i++)
        fprintf(e->out, "    int64_t %s;\n", var_name(e, vars.items[i]));
    fprintf(e->out, "};\n\n/* iterations [te_lo, te_hi) of %s (te_parallel_for runs the parts) */\n"
            "static void %s(void *te_arg, int64_t te_lo, int64_t te_hi)\n{\n", l->name, f);
    e->indent = 1;
    line(e, "const struct %s_ctx *te_ctx = te_arg;\n", f);
    for (int i = 0; i < p->n; i++)
        if (param[i])
            emit_view(e, p->t[i], p->ro[i], "te_ctx->");
    if (ws)
        line(e, "char *te_workspace = te_ctx->te_workspace;\n");
    for (int i = 0; i < temps->len; i++)
        if (temp[i])
            emit_temp(e, temps->items[i], i);
    for (int i = 0; i < vars.len; i++) {
        const char *v = var_name(e, vars.items[i]);
        line(e, "const int64_t %s = te_ctx->%s;\n", v, v);
    }
    emit_loop_over(e, s, "te_lo", "te_hi");
    fputs("}\n", e->out);
    e->in_lifted = false;
    e->out = out;
    e->indent = indent;

    line(e, "te_parallel_for(%s, &(struct %s_ctx){ ", f, f);
    const char *sep = "";
    for (int i = 0; i < p->n; i++)
        if (param[i]) {
            fprintf(e->out, "%s%s_", sep, tensor_name(e, p->t[i]));
            sep = ", ";
        }
    if (ws) {
        fprintf(e->out, "%ste_workspace", sep);
        sep = ", ";
    }
    for (int i = 0; i < vars.len; i++) {
        fprintf(e->out, "%s%s", sep, var_name(e, vars.items[i]));
        sep = ", ";
    }
    fputs(" }, ", e->out);
    emit_expr(e, s->min, 0);
    fputs(", ", e->out);
    emit_expr(e, sch_add(e->a, s->min, s->extent), 0);
    fputs(");\n", e->out);
    return true;
}

/* ------------------------------------------------------------------ */
/* pipeline(loop, n) on a CPU: at the top of each iteration, prefetch the
 * source of every tile staged at this loop (cache_read ... at loop) for
 * iteration + n - 1, one prefetch per 64-byte line, so the copy finds it
 * in cache.  The prefetch nest is the staging nest with its stores
 * replaced by __builtin_prefetch of what they read and its innermost loop
 * stepping by 16 elements. */

/* "if (COND) {", S's body by EMIT_BODY, "}" */
static void emit_if(Emitter *e, const Stmt *s, void (*emit_body)(Emitter *, const Stmt *))
{
    line(e, "if (");
    emit_expr(e, s->cond, 0);
    fputs(") {\n", e->out);
    e->indent++;
    emit_body(e, s->body);
    e->indent--;
    line(e, "}\n");
}

static Stmt *subst_stmt(Emitter *e, const Stmt *s, Expr **map, int n)
{
    if (!s)
        return NULL;
    Stmt *c = arena_alloc(e->a, sizeof *c);
    *c = *s;
    switch (s->kind) {
    case S_FOR:
        c->min = sch_subst(e->a, s->min, map, n);
        c->extent = sch_subst(e->a, s->extent, map, n);
        c->body = subst_stmt(e, s->body, map, n);
        break;
    case S_SEQ:
        c->stmts = arena_alloc(e->a, sizeof *c->stmts * (size_t)s->n);
        for (int i = 0; i < s->n; i++)
            c->stmts[i] = subst_stmt(e, s->stmts[i], map, n);
        break;
    case S_STORE:
        c->index = arena_alloc(e->a, sizeof *c->index * (size_t)(s->buf->rank + 1));
        for (int d = 0; d < s->buf->rank; d++)
            c->index[d] = sch_subst(e->a, s->index[d], map, n);
        c->value = sch_subst(e->a, s->value, map, n);
        break;
    case S_IF:
        c->cond = sch_subst(e->a, s->cond, map, n);
        c->body = subst_stmt(e, s->body, map, n);
        break;
    case S_ALLOC:
        c->body = subst_stmt(e, s->body, map, n);
        break;
    }
    return c;
}

static void emit_prefetch_nest(Emitter *e, const Stmt *s)
{
    if (!s)
        return;
    switch (s->kind) {
    case S_FOR: {
        bool innermost = s->body && s->body->kind == S_STORE;
        const char *v = var_name(e, s->loop->var);
        line(e, "for (int64_t %s = ", v);
        emit_expr(e, s->min, 0);
        fprintf(e->out, "; %s < ", v);
        emit_expr(e, sch_add(e->a, s->min, s->extent), 4);
        fprintf(e->out, innermost ? "; %s += 16) {\n" : "; %s++) {\n", v);
        e->indent++;
        emit_prefetch_nest(e, s->body);
        e->indent--;
        line(e, "}\n");
        break;
    }
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            emit_prefetch_nest(e, s->stmts[i]);
        break;
    case S_STORE:
        if (s->value->kind == EX_LOAD && s->value->nargs > 0) {
            line(e, "__builtin_prefetch(&");
            emit_index(e, s->value->tensor, s->value->args);
            fputs(", 0, 3);\n", e->out);
        }
        break;
    case S_IF:
        emit_if(e, s, emit_prefetch_nest);
        break;
    case S_ALLOC:
        break;
    }
}

static void emit_prefetch(Emitter *e, const Stmt *s)
{
    Loop *l = s->loop;
    IterVar *next = sch_new_var(e->st, arena_printf(e->a, "%s_next", l->name), 0);
    int n = e->st->next_var;
    Expr **map = arena_alloc(e->a, sizeof *map * (size_t)n);
    map[l->var->id] = ex_var(e->a, (Span){ 0, 0 }, next);
    bool any = false;
    for (const Stmt *b = s->body; b && b->kind == S_ALLOC;) {
        const Stmt *inner = b->body;
        const Stmt *nest = inner && inner->kind == S_SEQ ? inner->stmts[0] : inner;
        if (!any) {
            line(e, "/* pipeline %s: prefetch the tiles of iteration %s + %d */\n", l->name,
                 var_name(e, l->var), l->pipeline - 1);
            line(e, "if (%s + %d < ", var_name(e, l->var), l->pipeline - 1);
            emit_expr(e, sch_add(e->a, s->min, s->extent), 4);
            fputs(") {\n", e->out);
            e->indent++;
            line(e, "const int64_t %s = %s + %d;\n", var_name(e, next), var_name(e, l->var),
                 l->pipeline - 1);
            any = true;
        }
        emit_prefetch_nest(e, subst_stmt(e, nest, map, n));
        b = inner && inner->kind == S_SEQ && inner->n > 1 ? inner->stmts[1] : NULL;
    }
    if (any) {
        e->indent--;
        line(e, "}\n");
    }
}

static void emit_dims(Emitter *e, const Tensor *t, int from)
{
    for (int d = from; d < t->rank; d++)
        fprintf(e->out, "[%lld]", (long long)t->shape[d]);
}

static void emit_stmt(Emitter *e, const Stmt *s)
{
    if (!s)
        return;
    switch (s->kind) {
    case S_FOR:
        emit_for(e, s);
        break;
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            emit_stmt(e, s->stmts[i]);
        break;
    case S_STORE:
        emit_store(e, s);
        break;
    case S_IF:
        emit_if(e, s, emit_stmt);
        break;
    case S_ALLOC:
        line(e, "{\n");
        e->indent++;
        if (vector_shape(s->buf)) {
            vec_push(e->a, &e->vector_bufs, s->buf);
            /* vectors of 16, so that constant-indexed tiles live in
             * registers; NAME is the same storage seen as floats */
            const Tensor *b = s->buf;
            const char *n = tensor_name(e, b);
            line(e, "te_v16f %s_v", n);
            for (int d = 0; d + 1 < b->rank; d++)
                fprintf(e->out, "[%lld]", (long long)b->shape[d]);
            fprintf(e->out, "[%lld];\n", (long long)(b->shape[b->rank - 1] / VLANES));
            line(e, "float (*%s)", n);
            emit_dims(e, b, 1);
            fprintf(e->out, " = (float (*)");
            emit_dims(e, b, 1);
            fprintf(e->out, ")%s_v;\n", n);
            line(e, "(void)%s; /* used by the scalar edge loops, if any */\n", n);
        } else {
            line(e, "%s %s", storage_type(s->buf->dtype), tensor_name(e, s->buf));
            if (s->buf->rank == 0)
                fputs("[1]", e->out);
            emit_dims(e, s->buf, 0);
            fputs(" __attribute__((aligned(64)));\n", e->out);
        }
        e->allocs++;
        emit_stmt(e, s->body);
        e->allocs--;
        e->indent--;
        line(e, "}\n");
        break;
    }
}

/* ------------------------------------------------------------------ */
/* The translation unit.                                               */

static const char helpers[] =
    "#if defined(__clang__)\n"
    "#pragma clang diagnostic ignored \"-Wpsabi\" /* vector arguments: all calls are inlined */\n"
    "#elif defined(__GNUC__)\n"
    "#pragma GCC diagnostic ignored \"-Wpsabi\" /* vector arguments: all calls are inlined */\n"
    "#endif\n"
    "/* vectors of 16 floats (GCC/Clang vector extensions; any ISA) */\n"
    "typedef float te_v16f __attribute__((vector_size(64)));\n"
    "static inline te_v16f te_splat(float x) { return (te_v16f){ x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x }; }\n"
    "static inline te_v16f te_vload(const float *p) { te_v16f v; memcpy(&v, p, sizeof v); return v; }\n"
    "static inline void te_vstore(float *p, te_v16f v) { memcpy(p, &v, sizeof v); }\n"
    "/* lanes C elements apart: p[0], p[C], .. p[15*C] (nothing past it is read) */\n"
    "#if defined(__AVX512F__)\n"
    "#include <immintrin.h>\n"
    "static inline te_v16f te_vloads(const float *p, int64_t c)\n"
    "{\n"
    "    if (c == 2) /* two loads, the second short by one, and a permute */\n"
    "        return (te_v16f)_mm512_permutex2var_ps(_mm512_loadu_ps(p),\n"
    "            _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30),\n"
    "            _mm512_maskz_loadu_ps(0x7fff, p + 16));\n"
    "    return (te_v16f)_mm512_i32gather_ps(_mm512_mullo_epi32(_mm512_set1_epi32((int)c),\n"
    "        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)), p, 4);\n"
    "}\n"
    "#else\n"
    "static inline te_v16f te_vloads(const float *p, int64_t c)\n"
    "{ te_v16f v; for (int l = 0; l < 16; l++) v[l] = p[l * c]; return v; }\n"
    "#endif\n"
    "#define TE_VMAP1(name, f) \\\n"
    "    static inline te_v16f name(te_v16f x) { te_v16f r; for (int l = 0; l < 16; l++) r[l] = f(x[l]); return r; }\n"
    "#define TE_VMAP2(name, f) \\\n"
    "    static inline te_v16f name(te_v16f x, te_v16f y) { te_v16f r; for (int l = 0; l < 16; l++) r[l] = f(x[l], y[l]); return r; }\n"
    "static inline float te_rsqrt_f32(float x) { return 1.0f / sqrtf(x); }\n"
    "static inline double te_rsqrt_f64(double x) { return 1.0 / sqrt(x); }\n"
    "static inline float te_gelu_f32(float x) { return 0.5f * x * (1.0f + erff(x * 0.707106781f)); }\n"
    "static inline double te_gelu_f64(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752)); }\n"
    "static inline float te_sigmoid_f32(float x) { return 1.0f / (1.0f + expf(-x)); }\n"
    "static inline double te_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }\n"
    "/* min, max and relu propagate NaN, like the reference evaluator */\n"
    "static inline float te_min_f32(float a, float b) { return a < b || a != a ? a : b; }\n"
    "static inline float te_max_f32(float a, float b) { return a > b || a != a ? a : b; }\n"
    "static inline double te_min_f64(double a, double b) { return a < b || a != a ? a : b; }\n"
    "static inline double te_max_f64(double a, double b) { return a > b || a != a ? a : b; }\n"
    "static inline float te_relu_f32(float x) { return x > 0.0f || x != x ? x : 0.0f; }\n"
    "static inline double te_relu_f64(double x) { return x > 0.0 || x != x ? x : 0.0; }\n"
    "static inline int64_t te_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "static inline int64_t te_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "static inline int64_t te_abs_i64(int64_t a) { return a < 0 ? -a : a; }\n"
    "static inline int64_t te_relu_i64(int64_t a) { return a > 0 ? a : 0; }\n"
    "static inline int32_t te_sat_i32(int64_t a) { return a > 2147483647 ? 2147483647 : a < -2147483647 - 1 ? -2147483647 - 1 : (int32_t)a; }\n"
    "/* integer division by zero is 0, as in the reference evaluator */\n"
    "static inline int64_t te_div_i64(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? -a : a / b; }\n"
    "static inline int64_t te_mod_i64(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }\n"
    "/* float to i32: NaN is 0, out of range saturates */\n"
    "static inline int64_t te_f2i(double x)\n"
    "{\n"
    "    return x != x ? 0 : x >= 2147483647.0 ? 2147483647 : x <= -2147483648.0 ? -2147483647 - 1 : (int64_t)x;\n"
    "}\n"
    "static inline float te_bf16_to_f32(uint16_t b)\n"
    "{\n"
    "    uint32_t u = (uint32_t)b << 16;\n"
    "    float f;\n"
    "    memcpy(&f, &u, sizeof f);\n"
    "    return f;\n"
    "}\n"
    "static inline uint16_t te_f32_to_bf16(float f)\n"
    "{\n"
    "    uint32_t u;\n"
    "    memcpy(&u, &f, sizeof u);\n"
    "    if ((u & 0x7fffffffu) > 0x7f800000u)\n"
    "        return (uint16_t)((u >> 16) | 0x40);\n"
    "    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "static inline float te_round_bf16(float f) { return te_bf16_to_f32(te_f32_to_bf16(f)); }\n"
    "TE_VMAP1(te_vlog, logf)\nTE_VMAP1(te_vsqrt, sqrtf)\n"
    "TE_VMAP1(te_vrsqrt, te_rsqrt_f32)\nTE_VMAP1(te_vabs, fabsf)\n"
    "/* exp, erf, tanh and sigmoid within 1 ulp, gelu within 2 (codegen/vmath.c) */\n"
    "#define te_vexp te_vexp_fast\n#define te_verf te_verf_fast\n#define te_vtanh te_vtanh_fast\n"
    "#define te_vgelu te_vgelu_fast\n#define te_vsigmoid te_vsigmoid_fast\n"
    "/* min, max and relu lane by lane as te_min_f32 (NaN propagates): a compare\n"
    "   and a blend, not a loop over lanes */\n"
    "typedef int te_v16m __attribute__((vector_size(64)));\n"
    "static inline te_v16f te_vsel(te_v16m m, te_v16f a, te_v16f b) { return (te_v16f)((m & (te_v16m)a) | (~m & (te_v16m)b)); }\n"
    "static inline te_v16f te_vmin(te_v16f a, te_v16f b) { return te_vsel((a < b) | (a != a), a, b); }\n"
    "static inline te_v16f te_vmax(te_v16f a, te_v16f b) { return te_vsel((a > b) | (a != a), a, b); }\n"
    "static inline te_v16f te_vrelu(te_v16f x) { return te_vsel((x > te_splat(0.0f)) | (x != x), x, te_splat(0.0f)); }\n"
    "TE_VMAP2(te_vpow, powf)\n"
    "/* a vector folded to one float, halves first (a vectorized reduction) */\n"
    "#define TE_VFOLD(name, f) \\\n"
    "    static inline float name(te_v16f v) { for (int w = 8; w > 0; w /= 2) for (int l = 0; l < w; l++) v[l] = f(v[l], v[l + w]); return v[0]; }\n"
    "static inline float te_add_f32(float a, float b) { return a + b; }\n"
    "static inline float te_mul_f32(float a, float b) { return a * b; }\n"
    "TE_VFOLD(te_hsum, te_add_f32)\nTE_VFOLD(te_hprod, te_mul_f32)\n"
    "TE_VFOLD(te_hmax, te_max_f32)\nTE_VFOLD(te_hmin, te_min_f32)\n"
    "static inline void *te_alloc(size_t bytes)\n"
    "{\n"
    "    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);\n"
    "    if (!p)\n"
    "        abort();\n"
    "    return p;\n"
    "}\n";

static Params params_new(Arena *a, int cap)
{
    return (Params){ arena_alloc(a, sizeof(Tensor *) * (size_t)cap),
                     arena_alloc(a, sizeof(bool) * (size_t)cap), 0 };
}

static void add_param(Params *p, const Tensor *t, bool ro)
{
    p->t[p->n] = t;
    p->ro[p->n++] = ro;
}

/* "void NAME(const float *restrict x_, ...)" in the .c, without restrict
 * and the underscores in the header. */
static void emit_signature(Emitter *e, FILE *out, const char *name, const Params *p, bool in_header,
                           bool ws)
{
    fprintf(out, "void %s(", name);
    for (int i = 0; i < p->n; i++)
        fprintf(out, "%s%s%s *%s%s", i ? ", " : "", p->ro[i] ? "const " : "",
                storage_type(p->t[i]->dtype), in_header ? "" : "restrict ",
                in_header ? tensor_name(e, p->t[i]) : arena_printf(e->a, "%s_", tensor_name(e, p->t[i])));
    if (ws)
        fputs(in_header ? ", void *workspace" : ", void *te_workspace_", out);
    fputc(')', out);
}

/* "NAME(x_, w_packed_, b_, z_" — a call passing P's parameters on. */
static void emit_call_open(Emitter *e, const char *name, const Params *p)
{
    line(e, "%s(", name);
    for (int i = 0; i < p->n; i++)
        fprintf(e->out, "%s%s_", i ? ", " : "", tensor_name(e, p->t[i]));
}

/* The view: "const float (*restrict x)[768] = (const float (*)[768])x_;",
 * the pointer x_ read from FROM ("" or "te_ctx->"). */
static void emit_view(Emitter *e, const Tensor *t, bool ro, const char *from)
{
    const char *c = ro ? "const " : "";
    const char *ty = storage_type(t->dtype);
    const char *n = tensor_name(e, t);
    if (t->rank <= 1) {
        line(e, "%s%s *restrict %s = %s%s_;\n", c, ty, n, from, n);
        return;
    }
    line(e, "%s%s (*restrict %s)", c, ty, n);
    emit_dims(e, t, 1);
    fprintf(e->out, " = (%s%s (*)", c, ty);
    emit_dims(e, t, 1);
    fprintf(e->out, ")%s%s_;\n", from, n);
}

/* the views of P's tensors that BODY uses outside its lifted loops */
static void emit_views(Emitter *e, const Params *p, const Stmt *body)
{
    for (int i = 0; i < p->n; i++)
        if (cg_stmt_uses_outside_parallel(body, p->t[i]))
            emit_view(e, p->t[i], p->ro[i], "");
}

/* Temp I's view of its bytes in the workspace (its memory plan's offset):
 * "float (*restrict e)[1000] = (float (*)[1000])(te_workspace + 4096);" */
static void emit_temp(Emitter *e, const Tensor *t, int i)
{
    const char *ty = storage_type(t->dtype);
    const char *n = tensor_name(e, t);
    long long offset = (long long)e->plan.bufs[i].offset;
    if (t->rank <= 1) {
        line(e, "%s *restrict %s = (%s *)(te_workspace + %lld);\n", ty, n, ty, offset);
        return;
    }
    line(e, "%s (*restrict %s)", ty, n);
    emit_dims(e, t, 1);
    fprintf(e->out, " = (%s (*)", ty);
    emit_dims(e, t, 1);
    fprintf(e->out, ")(te_workspace + %lld);\n", offset);
}

/* One kernel step of NAME_ws: its nest, in a block declaring the views of
 * the temps it uses.  Temps that share bytes are never used in one step,
 * so each view is restrict within its block. */
static void emit_step(Emitter *e, const LoweredFunc *fn, const Stmt *body)
{
    bool any = false;
    for (int i = 0; i < fn->temps.len; i++)
        any = any || cg_stmt_uses_outside_parallel(body, fn->temps.items[i]);
    if (!any) {
        emit_stmt(e, body);
        return;
    }
    line(e, "{\n");
    e->indent++;
    for (int i = 0; i < fn->temps.len; i++)
        if (cg_stmt_uses_outside_parallel(body, fn->temps.items[i]))
            emit_temp(e, fn->temps.items[i], i);
    emit_stmt(e, body);
    e->indent--;
    line(e, "}\n");
}

static char *upper(Arena *a, const char *s)
{
    char *u = arena_strdup(a, s);
    for (char *c = u; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    return u;
}

/* The functions of the C file and their parameters. */
typedef struct Funcs {
    Params entry;   /* NAME: the user's inputs and outputs */
    Params kernel;  /* NAME_packed: packed inputs in their sources' places */
    Params prepack; /* NAME_prepack: the sources, then the packed tensors */
    const PtrVec *packed;
    const char *ws_name, *packed_name, *packed_ws_name, *prepack_name;
    const char *ws_macro;      /* NAME_WORKSPACE_BYTES */
    const char **elems_macros; /* NAME_W_PACKED_ELEMS, one per packed tensor */
} Funcs;


static void emit_header(Emitter *e, const CodegenOptions *o, const Funcs *f, FILE *h)
{
    Graph *g = e->st->g;
    /* TEXC_ keeps the guard apart from the dim macros NAME_DIM */
    const char *guard = upper(e->a, arena_printf(e->a, "TEXC_%s_H", o->name));
    fprintf(h, "/* %s.h — generated by texc %s from %s (target %s).\n", o->name, TE_VERSION,
            o->source_path, o->target);
    fprintf(h, " * Do not edit: regenerate with texc.  Tensors are row-major arrays. */\n");
    fprintf(h, "#ifndef %s\n#define %s\n\n", guard, guard);
    fputs("#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n", h);
    fputs("#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", h);
    PtrVec macros = {0};
    vec_push(e->a, &macros, (void *)f->ws_macro);
    for (int i = 0; i < f->packed->len; i++)
        vec_push(e->a, &macros, (void *)f->elems_macros[i]);
    for (int d = 0; d < g->ndims; d++) {
        const char *m = upper(e->a, arena_printf(e->a, "%s_%s", o->name, g->dims[d].name));
        for (int k = 2;; k++) {
            bool clash = false;
            for (int i = 0; i < macros.len; i++)
                clash = clash || strcmp(macros.items[i], m) == 0;
            if (!clash)
                break;
            m = upper(e->a, arena_printf(e->a, "%s_%s_%d", o->name, g->dims[d].name, k));
        }
        vec_push(e->a, &macros, (void *)m);
        fprintf(h, "#define %s %lld\n", m, (long long)g->dims[d].value);
    }
    fputs("\n/*", h);
    for (int i = 0; i < g->ninputs; i++) {
        const Tensor *t = g->inputs[i];
        fprintf(h, "\n * input  %s : %s%s[", t->name, t->is_const ? "const " : "", dtype_name(t->dtype));
        for (int d = 0; d < t->rank; d++)
            fprintf(h, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        fputc(']', h);
    }
    for (int i = 0; i < g->noutputs; i++) {
        const Tensor *t = g->outputs[i];
        fprintf(h, "\n * output %s : %s[", t->name, dtype_name(t->dtype));
        for (int d = 0; d < t->rank; d++)
            fprintf(h, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        fputc(']', h);
    }
    fputs("\n */\n", h);
    emit_signature(e, h, o->name, &f->entry, true, false);
    fputs(";\n\n", h);
    /* the workspace API */
    fprintf(h, "/* The intermediates' bytes: one workspace, laid out by texc's memory\n"
               " * plan (texc --dump=memory); 0 when there are none. */\n");
    fprintf(h, "#define %s %lld\n", f->ws_macro, (long long)e->plan.bytes);
    fprintf(h, "size_t %s_workspace_size(void);\n\n", o->name);
    fprintf(h, "/* %s with its intermediates in WORKSPACE instead of memory of its own:\n"
               " * %s_workspace_size() bytes, aligned to 64 bytes (aligned_alloc(64, ...)),\n"
               " * used by one call at a time; it needs no initial contents and holds\n"
               " * none afterwards.  WORKSPACE may be NULL when the size is 0.  %s\n"
               " * allocates a workspace on each call and calls %s_ws. */\n",
            o->name, o->name, o->name, o->name);
    emit_signature(e, h, f->ws_name, &f->entry, true, true);
    fputs(";\n", h);
    if (f->prepack.n) {
        fputs("\n/* Prepacked weights (texc's layout assignment): the kernel reads", h);
        for (int i = 0; i < f->packed->len; i++) {
            const Tensor *t = f->packed->items[i];
            fprintf(h, "%s\n * %s in panels of %lld along its last dimension, %s[p][..][l] =\n"
                       " * %s[..][p*%lld + l], zero past the end",
                    i ? ";" : "", t->packs->name, (long long)t->pack_width, tensor_name(e, t),
                    t->packs->name, (long long)t->pack_width);
        }
        fprintf(h, ".\n * %s puts the weights in that layout; a program that calls the\n"
                   " * kernel many times with the same weights calls it once and then\n"
                   " * %s (or %s with a workspace).  %s and %s pack\n"
                   " * into buffers of their own on every call. */\n",
                f->prepack_name, f->packed_name, f->packed_ws_name, o->name, f->ws_name);
        for (int i = 0; i < f->packed->len; i++) {
            const Tensor *t = f->packed->items[i];
            fprintf(h, "#define %s %lld /* elements of %s */\n", f->elems_macros[i],
                    (long long)tensor_elems(t), tensor_name(e, t));
        }
        emit_signature(e, h, f->prepack_name, &f->prepack, true, false);
        fputs(";\n", h);
        emit_signature(e, h, f->packed_name, &f->kernel, true, false);
        fputs(";\n", h);
        emit_signature(e, h, f->packed_ws_name, &f->kernel, true, true);
        fputs(";\n", h);
    }
    fprintf(h, "\n/* For test harnesses and the tuner, the same calls with ARGS the inputs\n"
               " * then the outputs, in %s's order: %s_prepack_args packs into PACKED\n"
               " * (%s_prepacked_bytes() bytes, 64-byte aligned; nothing when the\n"
               " * kernel packs nothing) and %s_packed_args runs the kernel on it. */\n",
            o->name, o->name, o->name, o->name);
    fprintf(h, "size_t %s_prepacked_bytes(void);\n", o->name);
    fprintf(h, "void %s_prepack_args(void *const *args, void *packed);\n", o->name);
    fprintf(h, "void %s_packed_args(void *const *args, const void *packed);\n", o->name);
    fputs("\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n", h);
}

/* NAME_prepacked_bytes, NAME_prepack_args and NAME_packed_args: each
 * packed tensor at a 64-byte aligned offset of one buffer. */
static void emit_args_entries(Emitter *e, const Funcs *f, const char *name)
{
    FILE *c = e->out;
    Graph *g = e->st->g;
    int64_t *offset = arena_alloc(e->a, sizeof *offset * (size_t)(f->packed->len + 1));
    int64_t total = 0;
    for (int i = 0; i < f->packed->len; i++) {
        const Tensor *t = f->packed->items[i];
        offset[i] = total;
        total += (tensor_elems(t) * dtype_bytes(t->dtype) + 63) / 64 * 64;
    }
    fprintf(c, "\nsize_t %s_prepacked_bytes(void)\n{\n    return %lld;\n}\n", name,
            (long long)total);
    fprintf(c, "\nvoid %s_prepack_args(void *const *args, void *packed)\n{\n", name);
    if (f->prepack.n) {
        fprintf(c, "    %s(", f->prepack_name);
        int k = 0;
        for (int i = 0; i < g->ninputs; i++)
            for (int p = 0; p < f->packed->len; p++)
                if (((const Tensor *)f->packed->items[p])->packs == g->inputs[i])
                    fprintf(c, "%s(const %s *)args[%d]", k++ ? ", " : "",
                            storage_type(g->inputs[i]->dtype), i);
        for (int p = 0; p < f->packed->len; p++) {
            const Tensor *t = f->packed->items[p];
            fprintf(c, ", (%s *)((char *)packed + %lld)", storage_type(t->dtype),
                    (long long)offset[p]);
        }
        fputs(");\n}\n", c);
    } else {
        fputs("    (void)args;\n    (void)packed;\n}\n", c);
    }
    fprintf(c, "\nvoid %s_packed_args(void *const *args, const void *packed)\n{\n", name);
    if (!f->prepack.n)
        fputs("    (void)packed;\n", c);
    fprintf(c, "    %s(", f->prepack.n ? f->packed_name : name);
    for (int i = 0; i < f->kernel.n; i++) {
        const Tensor *t = f->kernel.t[i];
        const char *cst = f->kernel.ro[i] ? "const " : "";
        int p = 0;
        while (p < f->packed->len && f->packed->items[p] != t)
            p++;
        if (p < f->packed->len)
            fprintf(c, "%s(%s%s *)((const char *)packed + %lld)", i ? ", " : "", cst,
                    storage_type(t->dtype), (long long)offset[p]);
        else
            fprintf(c, "%s(%s%s *)args[%d]", i ? ", " : "", cst, storage_type(t->dtype), i);
    }
    fputs(");\n}\n", c);
}

static const Tensor *packed_form(const LoweredFunc *fn, const Tensor *in)
{
    for (int i = 0; i < fn->packed.len; i++)
        if (((const Tensor *)fn->packed.items[i])->packs == in)
            return fn->packed.items[i];
    return NULL;
}

/* Starts the function NAME(P[, workspace]): its body, and the functions
 * of its parallel loops, go to memory until end_function.  TEMPS: the
 * lowered function whose temps its body may use. */
static bool begin_function(Emitter *e, const char *name, const Params *p, bool ws,
                           const LoweredFunc *temps)
{
    FILE *body = open_memstream(&e->text[0], &e->len[0]);
    e->lifted = body ? open_memstream(&e->text[1], &e->len[1]) : NULL;
    if (!e->lifted) {
        if (body)
            fclose(body);
        free(e->text[0]);
        return false;
    }
    e->out = body;
    e->fn_params = p;
    e->fn_temps = temps;
    fputc('\n', e->out);
    emit_signature(e, e->out, name, p, false, ws);
    fputs("\n{\n", e->out);
    e->indent = 1;
    return true;
}

/* Writes to C the functions of the parallel loops, then the function. */
static void end_function(Emitter *e, FILE *c)
{
    fputs("}\n", e->out);
    fclose(e->out);
    fclose(e->lifted);
    fwrite(e->text[1], 1, e->len[1], c);
    fwrite(e->text[0], 1, e->len[0], c);
    free(e->text[0]);
    free(e->text[1]);
    e->out = c;
    e->lifted = NULL;
}

/* "void NAME(PARAMS) { workspace of its own; NAME_ws(PARAMS, workspace); }" */
static void emit_with_workspace(Emitter *e, const char *name, const char *ws_name, const Params *p,
                                const char *ws_macro)
{
    FILE *c = e->out;
    fputc('\n', c);
    emit_signature(e, c, name, p, false, false);
    fputs("\n{\n", c);
    if (e->plan.bytes > 0)
        fprintf(c, "    void *te_workspace = te_alloc(%s);\n", ws_macro);
    emit_call_open(e, ws_name, p);
    fputs(e->plan.bytes > 0 ? ", te_workspace);\n    free(te_workspace);\n}\n" : ", NULL);\n}\n", c);
}

bool cg_emit_c(SchedState *st, const LoweredFunc *fn, const CodegenOptions *o,
               FILE *out_c, FILE *out_h)
{
    Arena *a = st->arena;
    Emitter e = { .a = a, .out = out_c, .st = st, .base = o->name };
    e.var_names = arena_alloc(a, sizeof *e.var_names * (size_t)(st->next_var + 1));
    Graph *g = st->g;
    claim(&e, o->name);
    Funcs f = { .packed = &fn->packed };
    int cap = g->ninputs + g->noutputs + fn->packed.len;
    f.entry = params_new(a, cap);
    f.kernel = params_new(a, cap);
    f.prepack = params_new(a, cap);
    for (int i = 0; i < g->ninputs; i++) {
        const Tensor *p = packed_form(fn, g->inputs[i]);
        add_param(&f.entry, g->inputs[i], true);
        add_param(&f.kernel, p ? p : g->inputs[i], true);
        if (p)
            add_param(&f.prepack, g->inputs[i], true);
    }
    for (int i = 0; i < g->noutputs; i++) {
        add_param(&f.entry, g->outputs[i], false);
        add_param(&f.kernel, g->outputs[i], false);
    }
    for (int i = 0; i < fn->packed.len; i++)
        add_param(&f.prepack, fn->packed.items[i], false);
    f.ws_name = claim(&e, arena_printf(a, "%s_ws", o->name));
    claim(&e, arena_printf(a, "%s_workspace_size", o->name));
    claim(&e, arena_printf(a, "%s_prepacked_bytes", o->name));
    claim(&e, arena_printf(a, "%s_prepack_args", o->name));
    claim(&e, arena_printf(a, "%s_packed_args", o->name));
    if (f.prepack.n) {
        f.packed_name = claim(&e, arena_printf(a, "%s_packed", o->name));
        f.packed_ws_name = claim(&e, arena_printf(a, "%s_packed_ws", o->name));
        f.prepack_name = claim(&e, arena_printf(a, "%s_prepack", o->name));
    }
    /* parameters first, so that they keep their names */
    for (int i = 0; i < cap; i++)
        tensor_name(&e, i < f.entry.n ? f.entry.t[i] : fn->packed.items[i - f.entry.n]);
    for (int i = 0; i < cap; i++) {
        const Tensor *t = i < f.entry.n ? f.entry.t[i] : fn->packed.items[i - f.entry.n];
        claim(&e, arena_printf(a, "%s_", tensor_name(&e, t)));
    }
    for (int i = 0; i < fn->temps.len; i++)
        tensor_name(&e, fn->temps.items[i]);
    f.ws_macro = upper(a, arena_printf(a, "%s_WORKSPACE_BYTES", o->name));
    f.elems_macros = arena_alloc(a, sizeof *f.elems_macros * (size_t)(fn->packed.len + 1));
    for (int i = 0; i < fn->packed.len; i++)
        f.elems_macros[i] = upper(a, arena_printf(a, "%s_%s_ELEMS", o->name,
                                                  tensor_name(&e, fn->packed.items[i])));

    if (!cg_plan_workspace(a, st, fn, &e.plan))
        return false;
    emit_header(&e, o, &f, out_h);

    FILE *c = out_c;
    fprintf(c, "/* %s.c — generated by texc %s from %s.\n", o->name, TE_VERSION, o->source_path);
    fprintf(c, " * target: %s (C11 + OpenMP)\n * schedule:\n", o->target);
    for (int i = 0; i < st->trace.len; i++) {
        fputs(" *   ", c);
        sch_print_trace_stmt(c, st->trace.items[i]);
    }
    fputs(" * Do not edit: regenerate with texc.\n */\n", c);
    fputs("#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)\n"
          "#define _POSIX_C_SOURCE 200809L /* threads, signal masks, sysconf (parallel loops) */\n"
          "#endif\n", c);
    fprintf(c, "#include \"%s.h\"\n\n", o->name);
    fputs("#include <math.h>\n#include <stdbool.h>\n#include <stdint.h>\n#include <stdlib.h>\n"
          "#include <string.h>\n\n", c);
    fputs(helpers, c);
    fputs(cg_vmath_source, c);
    fputs(cg_parallel_source, c);
    fprintf(c, "\nsize_t %s_workspace_size(void)\n{\n    return %s;\n}\n", o->name, f.ws_macro);
    if (f.prepack.n) {
        if (!begin_function(&e, f.prepack_name, &f.prepack, false, NULL))
            return false;
        emit_views(&e, &f.prepack, fn->prepack);
        emit_stmt(&e, fn->prepack);
        end_function(&e, c);
    }

    /* the kernel steps in order, each temp at its planned offset */
    const char *core = f.prepack.n ? f.packed_ws_name : f.ws_name;
    if (!begin_function(&e, core, &f.kernel, true, fn))
        return false;
    emit_views(&e, &f.kernel, fn->body);
    if (fn->temps.len)
        line(&e, "char *te_workspace = te_workspace_;\n");
    else
        line(&e, "(void)te_workspace_;\n");
    const SStage **roots;
    const Stmt **bodies;
    int nsteps = cg_kernel_steps(a, st, fn, &roots, &bodies);
    for (int k = 0; k < nsteps; k++)
        emit_step(&e, fn, bodies[k]);
    end_function(&e, c);

    if (!f.prepack.n) {
        emit_with_workspace(&e, o->name, f.ws_name, &f.entry, f.ws_macro);
        emit_args_entries(&e, &f, o->name);
        return !ferror(out_c) && !ferror(out_h);
    }
    emit_with_workspace(&e, f.packed_name, f.packed_ws_name, &f.kernel, f.ws_macro);
    /* NAME_ws: packs into buffers of its own, then runs NAME_packed_ws */
    fputc('\n', c);
    emit_signature(&e, c, f.ws_name, &f.entry, false, true);
    fputs("\n{\n", c);
    for (int i = 0; i < fn->packed.len; i++) {
        const Tensor *t = fn->packed.items[i];
        const char *ty = storage_type(t->dtype);
        line(&e, "%s *%s_ = te_alloc(%s * sizeof(%s));\n", ty, tensor_name(&e, t),
             f.elems_macros[i], ty);
    }
    emit_call_open(&e, f.prepack_name, &f.prepack);
    fputs(");\n", c);
    emit_call_open(&e, f.packed_ws_name, &f.kernel);
    fputs(", te_workspace_);\n", c);
    for (int i = 0; i < fn->packed.len; i++)
        line(&e, "free(%s_);\n", tensor_name(&e, fn->packed.items[i]));
    fputs("}\n", c);
    emit_with_workspace(&e, o->name, f.ws_name, &f.entry, f.ws_macro);
    emit_args_entries(&e, &f, o->name);
    return !ferror(out_c) && !ferror(out_h);
}

/* c.c — the OpenMP C backend.
 *
 * requires: a lowered function (sched/lower.c) and its SchedState.
 * guarantees: NAME.c, a translation unit that includes only standard
 * headers and NAME.h, defines the entry points NAME.h declares:
 *   NAME(inputs, outputs)            a workspace of its own, then NAME_ws
 *   NAME_ws(.., workspace)           the kernel steps, intermediates at
 *                                    the memory plan's offsets
 *   NAME_prepack(weights, packed)    when layout assignment packed const
 *   NAME_packed[_ws](.., packed ..)  inputs: packing once, and the kernel
 *                                    on packed weights (NAME and NAME_ws
 *                                    then pack on every call, or, with
 *                                    CodegenOptions.plain, run a build of
 *                                    their own on the weights as given)
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
 * in float and rounded when stored.  bf16 and u8 x i8 matmuls whose
 * weights are packed in groups of k run their k loop on the dot-product
 * instructions where the target has them (emit_pair_loop), the same
 * numbers in portable code where not.  Expressions and names are cfamily.c's,
 * in its C dialect; this file writes the statements around them.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#endif
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

/* A function's parameters: the tensors, and which it only reads. */
typedef struct Params {
    const Tensor **t;
    bool *ro;
    int n;
    bool dims; /* the run-time dims come first (Emitter.rt), and the
                  function returns 0 or NAME_ERANGE */
} Params;

typedef struct Emitter {
    CgPrinter p;       /* first: cfamily.c's hooks get the Emitter from it */
    SchedState *st;
    PtrVec vector_bufs; /* Tensor *: local buffers declared as vectors */
    WorkspacePlan plan; /* where each of the function's temps lives */
    /* the C function being written, for emit_parallel */
    const char *base;  /* the entry point's name */
    const Params *fn_params;
    const LoweredFunc *fn_temps; /* its temps are in te_workspace, or NULL */
    PtrMap hoisted;    /* a vectorized loop's invariant scalars computed
                          before it (hoist_invariants): Expr * -> i */
    PtrVec hoisted_names; /* char *: their variables */
    PtrVec simd_loads; /* Expr *: an omp simd loop's invariant loads under
                          a select, read before it (hoist_guarded_loads) */
    PtrVec simd_names; /* char *: their variables */
    PtrMap param_at;   /* fn_params->t[i] -> i */
    PtrMap temp_at;    /* fn_temps->temps.items[i] -> i */
    PtrVec outer;      /* IterVar *: the loop variables declared around */
    int allocs;        /* S_ALLOC blocks open around */
    FILE *lifted;      /* parallel loops' functions, written ahead of it */
    bool in_lifted;    /* writing one: nested parallel loops run serially */
    char *text[2];     /* the function and e->lifted, in memory */
    size_t len[2];
    /* a program with run-time dims: the declared ones' variables, in
     * declaration order (the functions' first parameters) */
    IterVar **rt;
    int nrt;
    const char *sizes_ok; /* NAME_check_sizes */
    const char *erange;   /* NAME_ERANGE */
    const char **rt_names; /* their names in every variant */
    /* the variants of a program with run-time dims (one otherwise) */
    const CgVariant *variants;
    int nvariants;
    WorkspacePlan *plans; /* by variant */
    bool in_variant;      /* writing a variant's function: static, and its
                             caller checked the sizes */
    int64_t ws_bytes;     /* the workspace: the most any variant's plan needs */
    WorkspacePlan plain_plan; /* CodegenOptions.plain's */
    CgSizes sizes;        /* the run-time sizes' API (cfamily.c) */
    bool profile;         /* --profile: a timer around each kernel step */
    int variant;          /* the variant being written (profile names) */
    PtrVec prof_names;    /* char *: the timed steps, by their index */
    /* writing a loop over pairs of k (emit_pair_loop): the index of x's
     * first element of each pair (k = 2*k2 in the loop, K-1 in an odd
     * K's last step), or NULL */
    Expr *pair_at;
    IterVar *pair_var; /* k2 there (NULL in the last step) */
    int group;         /* k's in a group: 2 (bf16 pairs) or 4 (u8 quads) */
    int pair_left;     /* in the last step, the k's left (1 .. group-1) */
} Emitter;

/* The C type values of T are stored in (cg_compute_type: computed in). */
static const char *storage_type(DType t)
{
    switch (t) {
    case DT_BF16: return "uint16_t";
    case DT_F16: return "_Float16";
    default: return dtype_ctype(t);
    }
}

const char *cg_storage_type(DType t)
{
    return storage_type(t);
}

/* ------------------------------------------------------------------ */
/* Expressions: cfamily.c prints them; a load reads through a view.    */

static void emit_index(Emitter *e, const Tensor *t, Expr *const *idx)
{
    fputs(cg_tensor_name(&e->p, t), e->p.out);
    if (t->rank == 0) {
        fputs("[0]", e->p.out);
        return;
    }
    if (t->rank == 1) {
        fputc('[', e->p.out);
        cg_emit_expr(&e->p, idx[0], 0);
        fputc(']', e->p.out);
        return;
    }
    for (int d = 0; d < t->rank; d++) {
        fputc('[', e->p.out);
        cg_emit_expr(&e->p, idx[d], 0);
        fputc(']', e->p.out);
    }
}

/* cfamily.c's element hook: a load reads the element through the view */
static void load_element(CgPrinter *p, const Tensor *t, Expr *const *idx)
{
    Emitter *e = (Emitter *)p;
    for (int i = 0; i < e->simd_loads.len; i++) {
        const Expr *x = e->simd_loads.items[i];
        if (x->tensor == t && x->args == idx) {
            fputs(e->simd_names.items[i], p->out);
            return;
        }
    }
    emit_index(e, t, idx);
}

/* ------------------------------------------------------------------ */
/* Statements.                                                         */

static void emit_stmt(Emitter *e, const Stmt *s);

static bool pair_store(Emitter *e, const Stmt *s);
static void emit_pair_dot(Emitter *e, const Expr *x, const IterVar *v, Expr *vmin, int64_t g);

static void emit_store(Emitter *e, const Stmt *s)
{
    if (e->pair_at && pair_store(e, s)) {
        /* a scalar edge lane of a loop over pairs of k */
        fprintf(e->p.out, "%*s", e->p.indent * 4, "");
        emit_index(e, s->buf, s->index);
        fputs(" = ", e->p.out);
        emit_pair_dot(e, s->value, NULL, NULL, 0);
        fputs(";\n", e->p.out);
        return;
    }
    fprintf(e->p.out, "%*s", e->p.indent * 4, "");
    emit_index(e, s->buf, s->index);
    fputs(" = ", e->p.out);
    switch (s->buf->dtype) {
    case DT_BF16:
        fputs("te_f32_to_bf16(", e->p.out);
        cg_emit_expr(&e->p, s->value, 0);
        fputc(')', e->p.out);
        break;
    case DT_F16:
    case DT_U8: /* in range already: only a load or a cast makes a u8 or i8 */
    case DT_I8:
        fprintf(e->p.out, "(%s)(", storage_type(s->buf->dtype));
        cg_emit_expr(&e->p, s->value, 0);
        fputc(')', e->p.out);
        break;
    case DT_I32:
        fputs("te_sat_i32(", e->p.out);
        cg_emit_expr(&e->p, s->value, 0);
        fputc(')', e->p.out);
        break;
    default:
        cg_emit_expr(&e->p, s->value, 0);
    }
    fputs(";\n", e->p.out);
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
 * unrolling stays in vector registers.  A bf16 or f16 load widened to
 * f32, f32(w[k, j]), is a vector load too, converted as it is loaded
 * (te_vload_bf16, te_vload_f16: exact, so the numbers are the scalar
 * loop's).  When the trip count is not a constant (a tile at the edge of
 * a tensor), the vector code runs when it is the full count and a scalar
 * loop otherwise.  An integer constant stored into an i32 buffer (a
 * u8 x i8 tile's accumulators set to 0) is 16 lanes of it.  Anything else
 * (other dtypes, gathers, comparisons, other casts) is a scalar loop under
 * `#pragma omp simd`.
 */

#define VLANES 16

/* Is E free of the variable V? */
static bool invariant(const Expr *e, const IterVar *v)
{
    return !sch_uses_var(e, v);
}

/* The most elements apart that consecutive lanes of a vector load may be
 * (a strided load reads each lane's element alone: te_vloads) */
#define VMAX_STRIDE 4

/* For an index IX: the C in IX = REST + C*V, 1 <= C <= VMAX_STRIDE, with
 * REST free of V (*REST set, from SCRATCH), or 0.
 *
 * Its expressions, and those emit_vaccess builds from them, are only
 * printed: they live in an arena of their own, freed once printed, not
 * in the compilation's, which they would otherwise fill at a few hundred
 * bytes for every vector load written (a gigabyte for the 30 MB of C of
 * a long read-twice chain). */
static int64_t stride_of(Arena *scratch, Expr *ix, const IterVar *v, Expr **rest)
{
    Expr *var = ex_var(scratch, (Span){ 0, 0 }, (IterVar *)v);
    for (int64_t c = 1; c <= VMAX_STRIDE; c++) {
        *rest = sch_sub(scratch, ix, sch_mul(scratch, sch_int(scratch, c), var));
        if (invariant(*rest, v))
            return c;
    }
    return 0;
}

/* The elements apart that the lanes over V of the load X are (0: not a
 * vector load: X gathers, or it is of rank 0). */
static int64_t load_stride(const Expr *x, const IterVar *v)
{
    if (x->nargs == 0)
        return 0;
    for (int d = 0; d + 1 < x->nargs; d++)
        if (!invariant(x->args[d], v))
            return 0;
    Expr *rest;
    Arena scratch = {0};
    int64_t c = stride_of(&scratch, x->args[x->nargs - 1], v, &rest);
    arena_free(&scratch);
    return c;
}

/* Is X f32(LOAD), LOAD a bf16 or f16 load whose lanes over V are
 * consecutive (a vector load, widened as it is loaded)? */
static bool widened_load(const Expr *x, const IterVar *v)
{
    if (x->kind != EX_OP || x->op != OP_CAST || x->dtype != DT_F32)
        return false;
    const Expr *l = x->args[0];
    return l->kind == EX_LOAD &&
           (l->tensor->dtype == DT_BF16 || l->tensor->dtype == DT_F16 || l->tensor->dtype == DT_I32) &&
           load_stride(l, v) == 1;
}

/* Is E computable as a vector of f32 over V? */
static bool vectorizable(Emitter *e, const Expr *x, const IterVar *v)
{
    if (invariant(x, v))
        return x->dtype == DT_F32;
    switch (x->kind) {
    case EX_LOAD:
        return x->tensor->dtype == DT_F32 && load_stride(x, v) > 0;
    case EX_OP:
        if (x->dtype != DT_F32)
            return false;
        if (widened_load(x, v))
            return true;
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

static bool pair_vector(Emitter *e, const Expr *x, const IterVar *v);

/* Is S a store of an integer constant into an i32 buffer?  Its vector
 * form sets 16 lanes at once (emit_vexpr's invariant case). */
static bool i32_constant(const Stmt *s)
{
    int64_t v;
    return s->buf->dtype == DT_I32 && sch_const_int(s->value, &v);
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
        /* an update of a loop over groups of k (f32 or i32), an f32 store,
           or an i32 constant (a u8 x i8 tile's accumulators set to 0) */
        bool update = e->pair_at && pair_store(e, s);
        if ((!update && s->buf->dtype != DT_F32 && !i32_constant(s)) || s->buf->rank == 0)
            return false;
        for (int d = 0; d + 1 < s->buf->rank; d++)
            if (!invariant(s->index[d], v))
                return false;
        Expr *rest;
        Arena scratch = {0};
        bool unit = stride_of(&scratch, s->index[s->buf->rank - 1], v, &rest) == 1;
        arena_free(&scratch);
        return unit && (update ? pair_vector(e, s->value, v)
                               : i32_constant(s) || vectorizable(e, s->value, v));
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

/* ... or an i32 one that a loop over quads of k accumulates into
 * (emit_pair_loop: u8 x i8 sums, vectors of 16 i32) */
static bool updated_by_quads(const Stmt *s, const Tensor *buf)
{
    if (!s)
        return false;
    switch (s->kind) {
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            if (updated_by_quads(s->stmts[i], buf))
                return true;
        return false;
    case S_STORE:
        return s->buf == buf && sch_packed_group(s->value) == 4;
    default:
        return updated_by_quads(s->body, buf);
    }
}

static bool vector_shape_i32(const Stmt *alloc)
{
    const Tensor *buf = alloc->buf;
    return buf->rank > 0 && buf->dtype == DT_I32 && buf->shape[buf->rank - 1] % VLANES == 0 &&
           updated_by_quads(alloc->body, buf);
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
    fprintf(e->p.out, "&%s", cg_tensor_name(&e->p, buf));
    for (int d = 0; d + 1 < buf->rank; d++) {
        fputc('[', e->p.out);
        cg_emit_expr(&e->p, idx[d], 0);
        fputc(']', e->p.out);
    }
    fputc('[', e->p.out);
    cg_emit_expr(&e->p, last, 0);
    fputc(']', e->p.out);
}

/* The vector at lanes V = MIN + G*16 + 0..15 of the access BUF[IDX]: an
 * element of a vector buffer when its position is a constant multiple of
 * 16, else an unaligned load (or store) through memcpy. */
static void emit_vaccess(Emitter *e, const Tensor *buf, Expr *const *idx, const IterVar *v,
                         Expr *vmin, int64_t g, Expr *store_value);

static bool pair_parts(Emitter *e, const Expr *x, const Expr **xl, const Expr **wl);

/* ... X at those lanes, in C's precedence (PREC as cg_emit_expr's): GCC and
 * Clang give vector operators the scalar ones' */
static void emit_vexpr(Emitter *e, const Expr *x, const IterVar *v, Expr *vmin, int64_t g,
                       int prec)
{
    FILE *out = e->p.out;
    if (e->pair_at && x->kind == EX_OP && x->op == OP_ADD && pair_parts(e, x, NULL, NULL)) {
        emit_pair_dot(e, x, v, vmin, g);
        return;
    }
    if (invariant(x, v) && x->dtype != DT_F32) {
        /* an i32 store's constant (vector_body): 16 lanes of it, saturated
           as the scalar store does */
        fputs("((te_v16i32){ 0 } + te_sat_i32(", out);
        cg_emit_expr(&e->p, x, 0);
        fputs("))", out);
        return;
    }
    if (invariant(x, v)) {
        int h = map_get(&e->hoisted, x);
        fputs("te_splat(", out);
        if (h >= 0)
            fputs(e->hoisted_names.items[h], out);
        else
            cg_emit_expr(&e->p, x, 0);
        fputc(')', out);
        return;
    }
    if (x->kind == EX_LOAD || widened_load(x, v)) {
        const Expr *l = x->kind == EX_LOAD ? x : x->args[0];
        /* f32(an i32 load): converted, rounded as (float) would */
        bool i32 = x->kind != EX_LOAD && l->tensor->dtype == DT_I32;
        if (i32)
            fputs("__builtin_convertvector(", out);
        emit_vaccess(e, l->tensor, l->args, v, vmin, g, NULL);
        if (i32)
            fputs(", te_v16f)", out);
        return;
    }
    int q = cg_prec(x->op);
    switch (x->op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
        if (q < prec)
            fputc('(', out);
        emit_vexpr(e, x->args[0], v, vmin, g, q);
        fprintf(out, " %s ", op_text(x->op));
        emit_vexpr(e, x->args[1], v, vmin, g, q + 1);
        if (q < prec)
            fputc(')', out);
        return;
    case OP_NEG:
        /* (its operand above a unary operator's 7: - -x is not --x) */
        if (q < prec)
            fputc('(', out);
        fputc('-', out);
        emit_vexpr(e, x->args[0], v, vmin, g, q + 1);
        if (q < prec)
            fputc(')', out);
        return;
    default:
        fprintf(out, "te_v%s(", op_text(x->op));
        for (int i = 0; i < x->nargs; i++) {
            if (i)
                fputs(", ", out);
            emit_vexpr(e, x->args[i], v, vmin, g, 0);
        }
        fputc(')', out);
        return;
    }
}

static void emit_vaccess(Emitter *e, const Tensor *buf, Expr *const *idx, const IterVar *v,
                         Expr *vmin, int64_t g, Expr *store_value)
{
    Arena scratch = {0}, *a = &scratch; /* (see stride_of) */
    Expr *rest;
    int64_t c = stride_of(a, idx[buf->rank - 1], v, &rest); /* 1 for stores */
    /* the first lane's position along the last dimension */
    Expr *first = sch_add(a, rest, sch_mul(a, sch_int(a, c),
                                           sch_add(a, vmin, sch_int(a, g * VLANES))));
    int64_t pos;
    if (c > 1) {
        fputs("te_vloads(", e->p.out);
        emit_address(e, buf, idx, first);
        fprintf(e->p.out, ", %lld)", (long long)c);
    } else if (vector_layout(e, buf) && sch_const_int(first, &pos) && pos % VLANES == 0) {
        fprintf(e->p.out, "%s_v", cg_tensor_name(&e->p, buf));
        for (int d = 0; d + 1 < buf->rank; d++) {
            fputc('[', e->p.out);
            cg_emit_expr(&e->p, idx[d], 0);
            fputc(']', e->p.out);
        }
        fprintf(e->p.out, "[%lld]", (long long)(pos / VLANES));
        if (store_value) {
            fputs(" = ", e->p.out);
            emit_vexpr(e, store_value, v, vmin, g, 0);
        }
    } else {
        fputs(store_value               ? (buf->dtype == DT_I32 ? "te_vstore_i32(" : "te_vstore(")
              : buf->dtype == DT_BF16   ? "te_vload_bf16("
              : buf->dtype == DT_F16    ? "te_vload_f16("
              : buf->dtype == DT_I32    ? "te_vload_i32("
                                        : "te_vload(",
              e->p.out);
        emit_address(e, buf, idx, first);
        if (store_value) {
            fputs(", ", e->p.out);
            emit_vexpr(e, store_value, v, vmin, g, 0);
        }
        fputc(')', e->p.out);
    }
    arena_free(&scratch);
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
    fprintf(e->p.out, "%*s", e->p.indent * 4, "");
    emit_vaccess(e, s->buf, s->index, v, vmin, g, s->value);
    fputs(";\n", e->p.out);
}

/* The vector form of a vectorized loop; false if it does not apply. */
static bool emit_vector_loop(Emitter *e, const Stmt *s);
static bool emit_vector_loop_body(Emitter *e, const Stmt *s, int64_t bound, bool constant);
static bool emit_vector_reduction(Emitter *e, const Stmt *s);

static void emit_scalar_loop(Emitter *e, const Stmt *s);
static void emit_prefetch(Emitter *e, const Stmt *s);
static void emit_stream_prefetch(Emitter *e, const Stmt *s);

static Stmt *subst_stmt(Emitter *e, const Stmt *s, Subst map, bool fold);
static bool emit_pair_loop(Emitter *e, const Stmt *s);

static void emit_for(Emitter *e, const Stmt *s)
{
    Loop *l = s->loop;
    int64_t ext;
    if (l->kind == LOOP_UNROLLED) {
        /* its name is claimed though no line declares it, so that the
         * names after it are those of the loop it was */
        cg_var_name(&e->p, l->var);
        bool constant = sch_const_int(s->extent, &ext);
        int64_t n = constant ? ext : sch_trip_bound(l);
        cg_line(&e->p, "/* %s: unrolled %lld times */\n", l->name, (long long)n);
        Expr *value = NULL;
        Subst map = { &l->var, &value, 1 };
        for (int64_t k = 0; k < n; k++) {
            if (constant) {
                cg_line(&e->p, "{\n");
            } else {
                cg_line(&e->p, "if (%lld < ", (long long)k);
                cg_emit_expr(&e->p, s->extent, 4);
                fputs(") {\n", e->p.out);
            }
            e->p.indent++;
            /* the iteration's value in place of the variable, so that
             * its accesses fold to constants where they can */
            value = sch_add(e->p.a, s->min, sch_int(e->p.a, k));
            emit_stmt(e, subst_stmt(e, s->body, map, true));
            e->p.indent--;
            cg_line(&e->p, "}\n");
        }
        return;
    }
    if (l->kind == LOOP_VECTORIZED &&
        (l->reduce ? emit_vector_reduction(e, s) : emit_vector_loop(e, s)))
        return;
    if (l->kind == LOOP_SERIAL && !e->pair_at && emit_pair_loop(e, s))
        return;
    emit_scalar_loop(e, s);
}

/* The vector statements of BODY for lanes V = V's value + G*16 + 0..15,
 * G = 0..GROUPS-1. */
static void emit_vgroups(Emitter *e, const Stmt *body, const IterVar *v, int64_t groups)
{
    Expr *at = ex_var(e->p.a, (Span){ 0, 0 }, (IterVar *)v);
    for (int64_t g = 0; g < groups; g++)
        emit_vstmt(e, body, v, at, g);
}

/* "{ int64_t v = MIN; const int64_t te_end = MIN + EXTENT;": the start of
 * a vector loop written as a loop over steps of STEP lanes */
static void open_strided(Emitter *e, const Stmt *s)
{
    const char *v = cg_var_name(&e->p, s->loop->var);
    cg_line(&e->p, "{\n");
    e->p.indent++;
    cg_line(&e->p, "int64_t %s = ", v);
    cg_emit_expr(&e->p, s->min, 0);
    fputs(";\n", e->p.out);
    cg_line(&e->p, "const int64_t te_end = ");
    cg_emit_expr(&e->p, sch_add(e->p.a, s->min, s->extent), 0);
    fputs(";\n", e->p.out);
    vec_push(e->p.a, &e->outer, s->loop->var);
}

/* The lanes of a vector loop that no whole vector covers, one at a time:
 * "for (; v < te_end; v++) BODY }", closing open_strided's block. */
static void close_strided(Emitter *e, const Stmt *s)
{
    const char *v = cg_var_name(&e->p, s->loop->var);
    cg_line(&e->p, "for (; %s < te_end; %s++) {\n", v, v);
    e->p.indent++;
    emit_stmt(e, s->body);
    e->p.indent--;
    cg_line(&e->p, "}\n");
    e->outer.len--;
    e->p.indent--;
    cg_line(&e->p, "}\n");
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
    const char *v = cg_var_name(&e->p, s->loop->var);
    for (int64_t step = groups; ; step = 1) {
        cg_line(&e->p, "for (; %s <= te_end - %lld; %s += %lld) {\n", v, (long long)(step * VLANES), v,
                (long long)(step * VLANES));
        e->p.indent++;
        body(e, s, step, ctx);
        e->p.indent--;
        cg_line(&e->p, "}\n");
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

/* Does X cost more than a few cycles (a division, a square root, a call)
 * where a vector statement would compute it again for every vector? */
static bool costly(const Expr *x)
{
    if (x->kind != EX_OP)
        return false;
    switch (x->op) {
    case OP_EXP: case OP_LOG: case OP_SQRT: case OP_RSQRT: case OP_TANH: case OP_ERF:
    case OP_GELU: case OP_SIGMOID: case OP_DIV: case OP_MOD: case OP_POW:
        return true;
    default:
        break;
    }
    for (int i = 0; i < x->nargs; i++)
        if (costly(x->args[i]))
            return true;
    return false;
}

/* Whether X loads a tensor that a store of S writes. */
static bool loads_stored(const Expr *x, const Stmt *s)
{
    if (s->kind == S_SEQ) {
        for (int i = 0; i < s->n; i++)
            if (loads_stored(x, s->stmts[i]))
                return true;
        return false;
    }
    if (s->kind != S_STORE)
        return true; /* (not a vector body: nothing hoisted) */
    if (x->kind == EX_LOAD && x->tensor == s->buf)
        return true;
    for (int i = 0; i < x->nargs; i++)
        if (loads_stored(x->args[i], s))
            return true;
    return false;
}

/* The costly f32 subexpressions of BODY's values that do not depend on V
 * (a layer norm's rsqrt(var[i] + eps), a softmax's 1 / s[i]), each
 * computed once into a variable before the loop, where the vector
 * statements broadcast it (emit_vexpr): a C compiler keeps recomputing
 * them, since sqrtf may set errno.  Opens a block for them; the number
 * hoisted. */
static void hoist_in(Emitter *e, const Expr *x, const IterVar *v, const Stmt *body)
{
    if (x->dtype == DT_F32 && costly(x) && invariant(x, v) && !loads_stored(x, body)) {
        if (map_get(&e->hoisted, x) >= 0)
            return;
        const char *name = cg_claim(&e->p, "inv");
        if (!e->hoisted_names.len)
            cg_line(&e->p, "{\n");
        if (!e->hoisted_names.len)
            e->p.indent++;
        map_put(e->p.a, &e->hoisted, x, e->hoisted_names.len);
        vec_push(e->p.a, &e->hoisted_names, (void *)name);
        cg_line(&e->p, "const float %s = ", name);
        cg_emit_expr(&e->p, x, 0);
        fputs("; /* the same for every lane */\n", e->p.out);
        return;
    }
    if (x->kind == EX_OP && x->op != OP_SELECT)
        for (int i = 0; i < x->nargs; i++)
            hoist_in(e, x->args[i], v, body);
}

static void hoist_invariants(Emitter *e, const Stmt *s, const IterVar *v, const Stmt *body)
{
    if (s->kind == S_SEQ)
        for (int i = 0; i < s->n; i++)
            hoist_invariants(e, s->stmts[i], v, body);
    else if (s->kind == S_STORE && s->buf->dtype == DT_F32)
        hoist_in(e, s->value, v, body);
}

static bool emit_vector_loop(Emitter *e, const Stmt *s)
{
    e->hoisted = (PtrMap){0};
    e->hoisted_names = (PtrVec){0};
    const Loop *l = s->loop;
    bool constant;
    int64_t bound = trip_count(s, &constant);
    if (bound < VLANES || !vector_body(e, s->body, l->var))
        return false; /* (shorter than a vector: the scalar loop) */
    bool ok = emit_vector_loop_body(e, s, bound, constant);
    if (e->hoisted_names.len) {
        e->p.indent--;
        cg_line(&e->p, "}\n");
    }
    e->hoisted = (PtrMap){0};
    e->hoisted_names = (PtrVec){0};
    return ok;
}

static bool emit_vector_loop_body(Emitter *e, const Stmt *s, int64_t bound, bool constant)
{
    const Loop *l = s->loop;
    if (!e->pair_at)
        hoist_invariants(e, s->body, l->var, s->body);
    cg_var_name(&e->p, l->var); /* the scalar loop's name, claimed first */
    if (bound % VLANES != 0 || bound > 8 * VLANES) {
        /* a long loop (or one that vectors do not divide): a loop over
         * steps of up to 4 vectors, then single vectors, then the lanes
         * left one at a time */
        int64_t groups = step_groups(s);
        open_strided(e, s);
        cg_line(&e->p, "/* %s: %lld lanes, %lld vector%s of %d a step */\n", l->name, (long long)bound,
                (long long)groups, groups > 1 ? "s" : "", VLANES);
        emit_steps(e, s, groups, store_groups, NULL);
        close_strided(e, s);
        return true;
    }
    if (!constant) {
        cg_line(&e->p, "if (");
        cg_emit_expr(&e->p, s->extent, 3);
        fprintf(e->p.out, " == %lld) {\n", (long long)bound);
        e->p.indent++;
    }
    cg_line(&e->p, "/* %s: %lld lanes as %lld vectors of %d */\n", l->name, (long long)bound,
            (long long)(bound / VLANES), VLANES);
    for (int64_t g = 0; g < bound / VLANES; g++)
        emit_vstmt(e, s->body, l->var, s->min, g);
    if (!constant) {
        e->p.indent--;
        cg_line(&e->p, "} else {\n");
        e->p.indent++;
        emit_scalar_loop(e, s);
        e->p.indent--;
        cg_line(&e->p, "}\n");
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
            !sch_const_int(sch_sub(e->p.a, acc->args[d], s->index[d]), &diff) || diff != 0)
            return NULL;
    }
    if (!vectorizable(e, x->args[1], v) || invariant(x->args[1], v))
        return NULL;
    *op = x->op;
    return s;
}

/* A reduction's combine in the generated C, "A OP B" as "F(A, B)" for max
 * and min (te_vmax on vectors, te_max_f32 on floats: NaN propagates) and
 * "A + B" for sums and products: combine_open, A, combine_mid, B (at
 * combine_prec), combine_close. */
static bool combine_call(Op op)
{
    return op == OP_MAX || op == OP_MIN;
}

static void combine_open(Emitter *e, Op op, bool vector)
{
    if (combine_call(op))
        fputs(op == OP_MAX ? (vector ? "te_vmax(" : "te_max_f32(")
                           : (vector ? "te_vmin(" : "te_min_f32("), e->p.out);
}

static void combine_mid(Emitter *e, Op op)
{
    if (combine_call(op))
        fputs(", ", e->p.out);
    else
        fprintf(e->p.out, " %s ", op_text(op));
}

static int combine_prec(Op op)
{
    return combine_call(op) ? 0 : cg_prec(op) + 1;
}

static void combine_close(Emitter *e, Op op)
{
    if (combine_call(op))
        fputc(')', e->p.out);
}

/* emit_steps' body for a reduction (CTX its update, reduction_update):
 * each of STEP vectors of partial results combined with its lanes */
static void update_groups(Emitter *e, const Stmt *s, int64_t step, const void *ctx)
{
    const Stmt *u = ctx;
    Op op = u->value->op;
    Expr *at = ex_var(e->p.a, (Span){ 0, 0 }, s->loop->var);
    for (int64_t g = 0; g < step; g++) {
        cg_line(&e->p, "te_acc[%lld] = ", (long long)g);
        combine_open(e, op, true);
        fprintf(e->p.out, "te_acc[%lld]", (long long)g);
        combine_mid(e, op);
        emit_vexpr(e, u->value->args[1], s->loop->var, at, g, combine_prec(op));
        combine_close(e, op);
        fputs(";\n", e->p.out);
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
    cg_line(&e->p, "/* %s: %s over %lld lanes in %lld vector%s of %d, then folded */\n", l->name, what,
            (long long)trip_count(s, NULL), (long long)groups, groups > 1 ? "s" : "", VLANES);
    cg_line(&e->p, "te_v16f te_acc[%lld];\n", (long long)groups);
    cg_line(&e->p, "for (int te_g = 0; te_g < %lld; te_g++)\n", (long long)groups);
    cg_line(&e->p, "    te_acc[te_g] = te_splat(%s);\n", ident);
    emit_steps(e, s, groups, update_groups, u);
    /* the vectors folded into te_acc[0], halves first */
    for (int64_t w = groups; w > 1; w = (w + 1) / 2)
        for (int64_t g = 0; g + (w + 1) / 2 < w; g++) {
            cg_line(&e->p, "te_acc[%lld] = ", (long long)g);
            combine_open(e, op, true);
            fprintf(e->p.out, "te_acc[%lld]", (long long)g);
            combine_mid(e, op);
            fprintf(e->p.out, "te_acc[%lld]", (long long)(g + (w + 1) / 2));
            combine_close(e, op);
            fputs(";\n", e->p.out);
        }
    /* then its lanes into the result */
    fprintf(e->p.out, "%*s", e->p.indent * 4, "");
    emit_index(e, u->buf, u->index);
    fputs(" = ", e->p.out);
    combine_open(e, op, false);
    emit_index(e, u->buf, u->index);
    combine_mid(e, op);
    fprintf(e->p.out, "%s(te_acc[0])", fold);
    combine_close(e, op);
    fputs(";\n", e->p.out);
    close_strided(e, s);
    return true;
}

static bool emit_parallel(Emitter *e, const Stmt *s);

/* "for (int64_t v = MIN; v < END; v++) { BODY }", END "MIN + EXTENT"
 * unless given */
static void emit_loop_over(Emitter *e, const Stmt *s, const char *min, const char *end)
{
    const Loop *l = s->loop;
    const char *v = cg_var_name(&e->p, l->var);
    cg_line(&e->p, "for (int64_t %s = ", v);
    if (min)
        fputs(min, e->p.out);
    else
        cg_emit_expr(&e->p, s->min, 0);
    fprintf(e->p.out, "; %s < ", v);
    if (end)
        fputs(end, e->p.out);
    else
        cg_emit_expr(&e->p, sch_add(e->p.a, s->min, s->extent), 4);
    fprintf(e->p.out, "; %s++) {\n", v);
    e->p.indent++;
    vec_push(e->p.a, &e->outer, l->var);
    if (l->pipeline >= 2)
        emit_prefetch(e, s);
    if (l->prefetch > 0)
        emit_stream_prefetch(e, s);
    emit_stmt(e, s->body);
    e->outer.len--;
    e->p.indent--;
    cg_line(&e->p, "}\n");
}

/* Is every index of the load X inside its tensor over the loops' ranges?
 * Not where a dim's size is a run-time dim's (its shape entry is the
 * largest it takes, not the size a call has), nor where an index's i32
 * arithmetic could wrap (the ranges are those of the true values:
 * min(i * 2^30, 5) is 0 .. 5, wrapped it is not). */
static bool load_in_bounds(Emitter *e, const Expr *x)
{
    const Tensor *t = x->tensor;
    for (int d = 0; d < t->rank; d++)
        if (t->shape_size[d] || t->shape[d] <= 0 || !sch_folds_fit_i32(x->args[d]) ||
            !sch_provably_le(sch_int(e->p.a, 0), x->args[d]) ||
            !sch_provably_le(x->args[d], sch_int(e->p.a, t->shape[d] - 1)))
            return false;
    return true;
}

/* In X, under a select's branch (GUARDED), the f32 loads free of V and
 * inside their tensors (a padding's bias, b[c] in select(.., relu(conv[..]
 * + b[c]), 0) along the row), each read into a variable before the loop.
 * GCC 12 if-converts a guarded load into a masked load, and does not
 * vectorize one whose address is invariant ("no vectype for stmt:
 * .MASK_LOAD"): the padding of ResNet's layers ran as scalar code. */
static void hoist_guarded(Emitter *e, const Expr *x, const IterVar *v, const Stmt *body,
                          bool guarded, int start)
{
    if (x->kind == EX_LOAD && guarded && x->tensor->dtype == DT_F32 && x->tensor->rank > 0 &&
        invariant(x, v) && !loads_stored(x, body) && load_in_bounds(e, x)) {
        for (int i = 0; i < e->simd_loads.len; i++)
            if (e->simd_loads.items[i] == x)
                return;
        const char *name = cg_claim(&e->p, "ld");
        if (e->simd_loads.len == start) { /* the first: a block for them */
            cg_line(&e->p, "{\n");
            e->p.indent++;
        }
        cg_line(&e->p, "const float %s = ", name);
        cg_emit_expr(&e->p, x, 0);
        fputs("; /* read before the loop: a guarded load of it would not vectorize */\n",
              e->p.out);
        vec_push(e->p.a, &e->simd_loads, (void *)x);
        vec_push(e->p.a, &e->simd_names, (void *)name);
        return;
    }
    bool select = x->kind == EX_OP && x->op == OP_SELECT;
    for (int i = 0; i < x->nargs; i++) /* a select's branches, not its condition */
        hoist_guarded(e, x->args[i], v, body, (guarded || select) && !(select && i == 0), start);
}

static void hoist_guarded_loads(Emitter *e, const Stmt *s, const IterVar *v, const Stmt *body,
                                int start)
{
    if (s->kind == S_SEQ)
        for (int i = 0; i < s->n; i++)
            hoist_guarded_loads(e, s->stmts[i], v, body, start);
    else if (s->kind == S_STORE)
        hoist_guarded(e, s->value, v, body, false, start);
}

static void emit_scalar_loop(Emitter *e, const Stmt *s)
{
    const Loop *l = s->loop;
    if (l->kind == LOOP_PARALLEL && emit_parallel(e, s))
        return;
    bool simd = l->kind == LOOP_VECTORIZED && !l->reduce;
    int start = e->simd_loads.len;
    if (simd)
        hoist_guarded_loads(e, s->body, l->var, s->body, start);
    int hoisted = e->simd_loads.len - start;
    if (l->kind == LOOP_PARALLEL && !e->in_lifted)
        cg_line(&e->p, "#pragma omp parallel for schedule(static)\n");
    else if (simd)
        cg_line(&e->p, "#pragma omp simd\n"); /* (a reduction's would race on its result) */
    emit_loop_over(e, s, NULL, NULL);
    if (hoisted) {
        e->p.indent--;
        cg_line(&e->p, "}\n");
    }
    e->simd_loads.len = e->simd_names.len = start;
}

static void emit_view(Emitter *e, const Tensor *t, bool ro, const char *from);
static void emit_temp(Emitter *e, const Tensor *t, int i);

static int by_value(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* The positions AT gives U's tensors (those it lists), ascending: the
 * order of the function's parameters or temps.  Their number in *N. */
static int *used_positions(Emitter *e, const CgUses *u, const PtrMap *at, int *n)
{
    int *pos = arena_alloc(e->p.a, sizeof *pos * (size_t)(u->tensors.len + 1));
    *n = 0;
    for (int j = 0; j < u->tensors.len; j++) {
        int i = map_get(at, u->tensors.items[j]);
        if (i >= 0)
            pos[(*n)++] = i;
    }
    qsort(pos, (size_t)*n, sizeof *pos, by_value);
    return pos;
}

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
    TE_ASSERT(e->p.indent > 0);
    const Loop *l = s->loop;
    const char *stage = "";
    for (int i = 0; i < e->st->stages.len && !*stage; i++) {
        const SStage *g = e->st->stages.items[i];
        for (int k = 0; k < g->loops.len; k++)
            if (g->loops.items[k] == l)
                stage = g->name;
    }
    const char *f = cg_claim(&e->p, cg_c_identifier(e->p.a, arena_printf(e->p.a, "%s_%s_%s", e->base, stage, l->name)));
    /* what S uses, its bounds included (a pipelined loop's prefetch tests
     * them): the parameters, the temps (through te_workspace), the outer
     * loop variables; the struct, the function and the call list the same */
    const Params *p = e->fn_params;
    const PtrVec *temps = e->fn_temps ? &e->fn_temps->temps : &(PtrVec){0};
    CgUses uses = cg_uses(e->p.a, s, false);
    int nparams, ntemps;
    int *param = used_positions(e, &uses, &e->param_at, &nparams);
    int *temp = used_positions(e, &uses, &e->temp_at, &ntemps);
    bool ws = ntemps > 0;
    PtrVec vars = {0};
    for (int i = 0; i < e->outer.len; i++)
        if (map_get(&uses.seen, e->outer.items[i]) >= 0)
            vec_push(e->p.a, &vars, e->outer.items[i]);
    /* the run-time dims its bounds, indices or views use */
    PtrVec dims = {0};
    for (int i = 0; e->fn_params->dims && i < e->nrt; i++) {
        int d = e->rt[i]->size_dim - 1;
        bool used = map_get(&uses.seen, e->rt[i]) >= 0;
        for (int j = 0; j < nparams + ntemps && !used; j++) {
            const Tensor *t = j < nparams ? p->t[param[j]] : temps->items[temp[j - nparams]];
            for (int k = 1; k < t->rank && !used; k++)
                used = t->shape_size[k] && te_size_uses(t->shape_size[k], d);
        }
        if (used)
            vec_push(e->p.a, &dims, e->rt[i]);
    }
    int captured = nparams + vars.len + ws + dims.len;
    TE_ASSERT(captured > 0); /* it stores to a parameter or a temp */

    FILE *out = e->p.out;
    int indent = e->p.indent;
    e->p.out = e->lifted;
    e->in_lifted = true;
    fprintf(e->p.out, "\n/* %s's parallel loop %s: what its iterations read from around it */\nstruct %s_ctx {\n",
            stage, l->name, f);
    for (int j = 0; j < nparams; j++) {
        int i = param[j];
        fprintf(e->p.out, "    %s%s *%s_;\n", p->ro[i] ? "const " : "", storage_type(p->t[i]->dtype),
                cg_tensor_name(&e->p, p->t[i]));
    }
    if (ws)
        fputs("    char *te_workspace;\n", e->p.out);
    for (int i = 0; i < dims.len; i++)
        fprintf(e->p.out, "    int64_t %s;\n", cg_var_name(&e->p, dims.items[i]));
    for (int i = 0; i < vars.len; i++)
        fprintf(e->p.out, "    int64_t %s;\n", cg_var_name(&e->p, vars.items[i]));
    fprintf(e->p.out, "};\n\n/* iterations [te_lo, te_hi) of %s (te_parallel_for runs the parts) */\n"
            "static void %s(void *te_arg, int64_t te_lo, int64_t te_hi)\n{\n", l->name, f);
    e->p.indent = 1;
    cg_line(&e->p, "const struct %s_ctx *te_ctx = te_arg;\n", f);
    for (int i = 0; i < dims.len; i++) {
        const char *v = cg_var_name(&e->p, dims.items[i]);
        cg_line(&e->p, "const int64_t %s = te_ctx->%s;\n", v, v);
    }
    for (int j = 0; j < nparams; j++)
        emit_view(e, p->t[param[j]], p->ro[param[j]], "te_ctx->");
    if (ws)
        cg_line(&e->p, "char *te_workspace = te_ctx->te_workspace;\n");
    for (int j = 0; j < ntemps; j++)
        emit_temp(e, temps->items[temp[j]], temp[j]);
    for (int i = 0; i < vars.len; i++) {
        const char *v = cg_var_name(&e->p, vars.items[i]);
        cg_line(&e->p, "const int64_t %s = te_ctx->%s;\n", v, v);
    }
    emit_loop_over(e, s, "te_lo", "te_hi");
    fputs("}\n", e->p.out);
    e->in_lifted = false;
    e->p.out = out;
    e->p.indent = indent;

    cg_line(&e->p, "te_parallel_for(%s, &(struct %s_ctx){ ", f, f);
    const char *sep = "";
    for (int j = 0; j < nparams; j++) {
        fprintf(e->p.out, "%s%s_", sep, cg_tensor_name(&e->p, p->t[param[j]]));
        sep = ", ";
    }
    if (ws) {
        fprintf(e->p.out, "%ste_workspace", sep);
        sep = ", ";
    }
    for (int i = 0; i < dims.len; i++) {
        fprintf(e->p.out, "%s%s", sep, cg_var_name(&e->p, dims.items[i]));
        sep = ", ";
    }
    for (int i = 0; i < vars.len; i++) {
        fprintf(e->p.out, "%s%s", sep, cg_var_name(&e->p, vars.items[i]));
        sep = ", ";
    }
    fputs(" }, ", e->p.out);
    cg_emit_expr(&e->p, s->min, 0);
    fputs(", ", e->p.out);
    cg_emit_expr(&e->p, sch_add(e->p.a, s->min, s->extent), 0);
    fputs(");\n", e->p.out);
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
    cg_line(&e->p, "if (");
    cg_emit_expr(&e->p, s->cond, 0);
    fputs(") {\n", e->p.out);
    e->p.indent++;
    emit_body(e, s->body);
    e->p.indent--;
    cg_line(&e->p, "}\n");
}

/* X with the indices of its loads simplified (after a substitution: an
 * unrolled iteration's z_acc_v[i - io * 8] is z_acc_v[3]).  Only indices:
 * sch_simplify's rewrites are exact in integers, not in floats. */
static Expr *fold_loads(Arena *a, Expr *x)
{
    if (x->nargs == 0)
        return x;
    Expr *c = arena_alloc(a, sizeof *c);
    *c = *x;
    c->args = arena_alloc(a, sizeof *c->args * (size_t)x->nargs);
    for (int i = 0; i < x->nargs; i++) {
        c->args[i] = fold_loads(a, x->args[i]);
        if (x->kind == EX_LOAD)
            c->args[i] = sch_simplify(a, c->args[i]);
    }
    return c;
}

/* S with MAP's values for its variables (sch_subst); with FOLD, the
 * indices of its stores and loads simplified (fold_loads). */
static Stmt *subst_stmt(Emitter *e, const Stmt *s, Subst map, bool fold)
{
    if (!s)
        return NULL;
    Stmt *c = arena_alloc(e->p.a, sizeof *c);
    *c = *s;
    switch (s->kind) {
    case S_FOR:
        c->min = sch_subst(e->p.a, s->min, map);
        c->extent = sch_subst(e->p.a, s->extent, map);
        c->body = subst_stmt(e, s->body, map, fold);
        break;
    case S_SEQ:
        c->stmts = arena_alloc(e->p.a, sizeof *c->stmts * (size_t)s->n);
        for (int i = 0; i < s->n; i++)
            c->stmts[i] = subst_stmt(e, s->stmts[i], map, fold);
        break;
    case S_STORE:
        c->index = arena_alloc(e->p.a, sizeof *c->index * (size_t)(s->buf->rank + 1));
        for (int d = 0; d < s->buf->rank; d++) {
            c->index[d] = sch_subst(e->p.a, s->index[d], map);
            if (fold)
                c->index[d] = sch_simplify(e->p.a, c->index[d]);
        }
        c->value = sch_subst(e->p.a, s->value, map);
        if (fold)
            c->value = fold_loads(e->p.a, c->value);
        break;
    case S_IF:
        c->cond = sch_subst(e->p.a, s->cond, map);
        c->body = subst_stmt(e, s->body, map, fold);
        break;
    case S_ALLOC:
        c->body = subst_stmt(e, s->body, map, fold);
        break;
    case S_FLASH: {
        SchFlash *f = arena_alloc(e->p.a, sizeof *f);
        *f = *s->flash;
        f->batch_at = arena_alloc(e->p.a, sizeof *f->batch_at * (size_t)(f->nbatch + 1));
        for (int d = 0; d < f->nbatch; d++)
            f->batch_at[d] = sch_subst(e->p.a, s->flash->batch_at[d], map);
        f->q = sch_subst(e->p.a, s->flash->q, map);
        f->k = sch_subst(e->p.a, s->flash->k, map);
        f->v = sch_subst(e->p.a, s->flash->v, map);
        c->flash = f;
        break;
    }
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
        const char *v = cg_var_name(&e->p, s->loop->var);
        cg_line(&e->p, "for (int64_t %s = ", v);
        cg_emit_expr(&e->p, s->min, 0);
        fprintf(e->p.out, "; %s < ", v);
        cg_emit_expr(&e->p, sch_add(e->p.a, s->min, s->extent), 4);
        fprintf(e->p.out, innermost ? "; %s += 16) {\n" : "; %s++) {\n", v);
        e->p.indent++;
        emit_prefetch_nest(e, s->body);
        e->p.indent--;
        cg_line(&e->p, "}\n");
        break;
    }
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            emit_prefetch_nest(e, s->stmts[i]);
        break;
    case S_STORE:
        if (s->value->kind == EX_LOAD && s->value->nargs > 0) {
            cg_line(&e->p, "__builtin_prefetch(&");
            emit_index(e, s->value->tensor, s->value->args);
            fputs(", 0, 3);\n", e->p.out);
        }
        break;
    case S_IF:
        emit_if(e, s, emit_prefetch_nest);
        break;
    case S_ALLOC:
    case S_FLASH:
        break;
    }
}

static void emit_prefetch(Emitter *e, const Stmt *s)
{
    Loop *l = s->loop;
    IterVar *next = sch_new_var(e->st, arena_printf(e->p.a, "%s_next", l->name), 0);
    Subst map = sch_subst1(e->p.a, l->var, ex_var(e->p.a, (Span){ 0, 0 }, next));
    bool any = false;
    for (const Stmt *b = s->body; b && b->kind == S_ALLOC;) {
        const Stmt *inner = b->body;
        const Stmt *nest = inner && inner->kind == S_SEQ ? inner->stmts[0] : inner;
        if (!any) {
            cg_line(&e->p, "/* pipeline %s: prefetch the tiles of iteration %s + %d */\n", l->name,
                    cg_var_name(&e->p, l->var), l->pipeline - 1);
            cg_line(&e->p, "if (%s + %d < ", cg_var_name(&e->p, l->var), l->pipeline - 1);
            cg_emit_expr(&e->p, sch_add(e->p.a, s->min, s->extent), 4);
            fputs(") {\n", e->p.out);
            e->p.indent++;
            cg_line(&e->p, "const int64_t %s = %s + %d;\n", cg_var_name(&e->p, next), cg_var_name(&e->p, l->var),
                    l->pipeline - 1);
            any = true;
        }
        emit_prefetch_nest(e, subst_stmt(e, nest, map, false));
        b = inner && inner->kind == S_SEQ && inner->n > 1 ? inner->stmts[1] : NULL;
    }
    if (any) {
        e->p.indent--;
        cg_line(&e->p, "}\n");
    }
}

/* ------------------------------------------------------------------ */
/* prefetch(loop, n) on a CPU: at the top of each iteration, the vector
 * loads of the loop's body that move with its variable (a micro-kernel's
 * packed panel, w_packed[jo][k][0..47]: the lanes along a vectorized
 * loop, the address along this one) are prefetched for iteration + n, one
 * __builtin_prefetch per 64-byte line, inside a test that keeps the
 * address within the loop's range.  The hardware prefetchers follow one
 * stream well; a micro-kernel reads a panel from L2 next to its
 * accumulators' broadcasts, and the prefetch keeps the panel's lines a
 * few iterations ahead in L1. */

static bool expr_mentions(const Expr *x, const IterVar *v)
{
    if (x->kind == EX_VAR)
        return x->var == v;
    for (int i = 0; i < x->nargs; i++)
        if (expr_mentions(x->args[i], v))
            return true;
    return false;
}

typedef struct StreamLoad {
    const Expr *load;
    const Stmt *vec; /* the vectorized loop its last index moves along */
} StreamLoad;

/* The loads in X that mention V and whose last index moves along the
 * vectorized loop VEC, appended to OUT. */
static void stream_loads_in(Emitter *e, const Expr *x, const IterVar *v, const Stmt *vec, PtrVec *out)
{
    if (x->kind == EX_LOAD && x->nargs > 0 && vec &&
        expr_mentions(x->args[x->nargs - 1], vec->loop->var)) {
        bool moves = false;
        for (int d = 0; d < x->nargs; d++)
            moves = moves || expr_mentions(x->args[d], v);
        if (moves) {
            StreamLoad *sl = arena_alloc(e->p.a, sizeof *sl);
            *sl = (StreamLoad){ x, vec };
            vec_push(e->p.a, out, sl);
        }
        return;
    }
    for (int i = 0; i < x->nargs; i++)
        stream_loads_in(e, x->args[i], v, vec, out);
}

static void stream_loads(Emitter *e, const Stmt *s, const IterVar *v, const Stmt *vec, PtrVec *out)
{
    if (!s)
        return;
    switch (s->kind) {
    case S_FOR:
        stream_loads(e, s->body, v, s->loop->kind == LOOP_VECTORIZED ? s : vec, out);
        break;
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            stream_loads(e, s->stmts[i], v, vec, out);
        break;
    case S_STORE:
        stream_loads_in(e, s->value, v, vec, out);
        break;
    case S_FLASH: /* its kernel streams its own tiles */
        break;
    case S_IF:
    case S_ALLOC:
        stream_loads(e, s->body, v, vec, out);
        break;
    }
}

/* Every variable of the loops of S down to its vectorized loops set to
 * the loop's first value, in MAP (VARS, VALUES, *N): one address per
 * panel line, whatever unrolled copy reads it. */
static void first_values(const Stmt *s, IterVar **vars, Expr **values, int *n, int cap)
{
    if (!s)
        return;
    switch (s->kind) {
    case S_FOR:
        if (*n < cap) {
            vars[*n] = s->loop->var;
            values[(*n)++] = s->min;
        }
        first_values(s->body, vars, values, n, cap);
        break;
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            first_values(s->stmts[i], vars, values, n, cap);
        break;
    case S_IF:
    case S_ALLOC:
        first_values(s->body, vars, values, n, cap);
        break;
    case S_STORE:
    case S_FLASH:
        break;
    }
}

/* For sch_any_store: does STORE write the tensor T? */
static bool stores_into(const Stmt *store, const void *t)
{
    return store->kind == S_STORE && store->buf == t;
}

static void emit_stream_prefetch(Emitter *e, const Stmt *s)
{
    Loop *l = s->loop;
    PtrVec loads = {0};
    stream_loads(e, s->body, l->var, NULL, &loads);
    /* not what the body stores before it reads it (a panel copied in
       the loop, sched/fold.c): its lines are written, not fetched */
    int kept = 0;
    for (int i = 0; i < loads.len; i++) {
        const StreamLoad *sl = loads.items[i];
        if (!sch_any_store(s->body, stores_into, sl->load->tensor))
            loads.items[kept++] = loads.items[i];
    }
    loads.len = kept;
    if (!loads.len)
        return;
    enum { CAP = 64 };
    IterVar *vars[CAP + 1];
    Expr *values[CAP + 1];
    int n = 0;
    first_values(s->body, vars, values, &n, CAP);
    IterVar *next = sch_new_var(e->st, arena_printf(e->p.a, "%s_ahead", l->name), 0);
    vars[n] = l->var;
    values[n++] = ex_var(e->p.a, (Span){ 0, 0 }, next);
    PtrVec seen = {0}; /* char *: the addresses written */
    bool any = false;
    for (int i = 0; i < loads.len; i++) {
        const StreamLoad *sl = loads.items[i];
        const Tensor *t = sl->load->tensor;
        int per_line = 64 / dtype_bytes(t->dtype);
        int64_t lanes = sl->vec->extent->kind == EX_CONST ? (int64_t)sl->vec->extent->value : per_line;
        /* lanes 2 elements apart (pairs of k) cover a line in half as many */
        Arena scratch = {0};
        Expr *rest;
        int64_t stride = stride_of(&scratch, sl->load->args[sl->load->nargs - 1], sl->vec->loop->var, &rest);
        arena_free(&scratch);
        int64_t step = stride > 1 && per_line % stride == 0 ? per_line / stride : per_line;
        for (int64_t c = 0; c < lanes; c += step) {
            IterVar *vv[CAP + 2];
            Expr *vx[CAP + 2];
            for (int k = 0; k < n; k++) {
                vv[k] = vars[k];
                vx[k] = values[k];
                if (vars[k] == sl->vec->loop->var)
                    vx[k] = sch_add(e->p.a, sl->vec->min, ex_const(e->p.a, (Span){ 0, 0 }, DT_I32, (double)c));
            }
            Subst map = { vv, vx, n };
            Expr *idx[TE_MAX_RANK + 1];
            for (int d = 0; d < sl->load->nargs; d++)
                idx[d] = sch_simplify(e->p.a, sch_subst(e->p.a, sl->load->args[d], map));
            char *text = NULL;
            size_t len = 0;
            FILE *saved = e->p.out;
            e->p.out = open_memstream(&text, &len);
            emit_index(e, t, idx);
            fclose(e->p.out);
            e->p.out = saved;
            bool dup = false;
            for (int k = 0; k < seen.len && !dup; k++)
                dup = strcmp(seen.items[k], text) == 0;
            if (dup) {
                free(text);
                continue;
            }
            vec_push(e->p.a, &seen, arena_strdup(e->p.a, text));
            if (!any) {
                cg_line(&e->p, "/* prefetch %s: what iteration %s + %d reads */\n", l->name,
                        cg_var_name(&e->p, l->var), l->prefetch);
                cg_line(&e->p, "if (%s + %d < ", cg_var_name(&e->p, l->var), l->prefetch);
                cg_emit_expr(&e->p, sch_add(e->p.a, s->min, s->extent), 4);
                fputs(") {\n", e->p.out);
                e->p.indent++;
                cg_line(&e->p, "const int64_t %s = %s + %d;\n", cg_var_name(&e->p, next),
                        cg_var_name(&e->p, l->var), l->prefetch);
                any = true;
            }
            cg_line(&e->p, "__builtin_prefetch(&%s, 0, 3);\n", text);
            free(text);
        }
    }
    if (any) {
        e->p.indent--;
        cg_line(&e->p, "}\n");
    }
}

/* ------------------------------------------------------------------ */
/* Dot products in groups of k: vdpbf16ps and vpdpbusd.               */
/*
 * A serial loop over a reduction's k whose every statement that moves
 * with k is an update
 *
 *     acc[..] = acc[..] + f32(x[.., k]) * f32(w_packed[.., k / 2, 2*l + k % 2])
 *
 * of a weight whose panels interleave pairs of k (sched/layout.c; x
 * bf16, contiguous along k) is written over the pairs instead, k = 2*k2:
 * each update one te_vdot_bf16 (sixteen lanes) or te_dot_bf16 (an edge
 * lane), given the pair (x[.., 2*k2], x[.., 2*k2 + 1]) as 32 bits and the
 * address of w_packed's pairs.  Where the target has AVX512_BF16,
 * te_vdot_bf16 is vdpbf16ps, which adds the odd product and then the
 * even one to each lane, rounding each sum to nearest even (the products
 * of two bf16 values are exact in f32).  Elsewhere it does the same
 * arithmetic in the same order, so both give the same numbers; they
 * differ only where a value is subnormal, which the instruction flushes
 * to zero (doc/testing.md).  An odd K's last k is one more step, its x
 * pair (x[.., K-1], 0) against the panel's (w[K-1, j], 0).
 *
 * u8 x i8 sums, acc + i32(x[.., k]) * i32(w_packed[.., k / 4, 4*l + k % 4])
 * with x u8 and w i8, go the same way in quads, k = 4*k4: te_vdot_u8i8 is
 * vpdpbusd where the target has AVX512_VNNI (four products added to each
 * of sixteen i32 sums, modulo 2^32), te_dot_u8i8 an edge lane; integer
 * sums are exact, so any order gives the same bits.  The accumulators are
 * then vectors of 16 i32 (te_v16i32), and the last 1 to 3 k of a K that
 * 4 does not divide one more step with the quad zero-extended.
 */

/* Is X TO(L), L a load of dtype FROM?  L, or NULL. */
static const Expr *cast_load(const Expr *x, DType to, DType from)
{
    if (x->kind != EX_OP || x->op != OP_CAST || x->dtype != to || x->args[0]->kind != EX_LOAD ||
        x->args[0]->tensor->dtype != from || x->args[0]->nargs == 0)
        return NULL;
    return x->args[0];
}

/* Is the expression X - Y the constant 0? */
static bool same_index(Emitter *e, Expr *x, Expr *y)
{
    int64_t d;
    return sch_const_int(sch_simplify(e->p.a, sch_sub(e->p.a, x, y)), &d) && d == 0;
}

/* Is X, in a loop over groups of k (e->pair_at, G = e->group), ACC +
 * f32(XL) * f32(WL) with XL and WL bf16 (G = 2) or ACC + i32(XL) *
 * i32(WL) with XL u8 and WL i8 (G = 4), WL a load of panels of such
 * groups, XL's last index the group's first k, e->pair_at, G times WL's
 * group index (the groups align), and nothing else of XL or WL moving
 * with the group (WL's last index then the group's first element: its
 * k % G folded to 0)?  Sets *XL and *WL. */
static bool pair_parts(Emitter *e, const Expr *x, const Expr **xl, const Expr **wl)
{
    int g = e->group;
    DType acc = g == 2 ? DT_F32 : DT_I32, xt = g == 2 ? DT_BF16 : DT_U8, wt = g == 2 ? DT_BF16 : DT_I8;
    if (x->kind != EX_OP || x->op != OP_ADD || x->dtype != acc)
        return false;
    const Expr *m = x->args[1];
    if (m->kind != EX_OP || m->op != OP_MUL)
        return false;
    for (int s = 0; s < 2; s++) {
        const Expr *a = cast_load(m->args[s], acc, xt), *w = cast_load(m->args[1 - s], acc, wt);
        if (!a || !w || w->tensor->pack_group != g || w->nargs != 3 || a->tensor->pack_group)
            continue;
        Expr *at = a->args[a->nargs - 1];
        bool moves = sch_uses_var(w->args[0], e->pair_var) || sch_uses_var(w->args[2], e->pair_var);
        for (int d = 0; d + 1 < a->nargs; d++)
            moves = moves || sch_uses_var(a->args[d], e->pair_var);
        if (moves || !same_index(e, at, e->pair_at) ||
            !same_index(e, at, sch_mul(e->p.a, sch_int(e->p.a, g), w->args[1])))
            continue;
        if (xl)
            *xl = a;
        if (wl)
            *wl = w;
        return true;
    }
    return false;
}

/* Is S an update pair_parts takes, of its own element (ACC is S's buffer
 * at S's index, which does not move with the pair)? */
static bool pair_store(Emitter *e, const Stmt *s)
{
    if (s->kind != S_STORE || !pair_parts(e, s->value, NULL, NULL))
        return false;
    const Expr *acc = s->value->args[0];
    if (acc->kind != EX_LOAD || acc->tensor != s->buf)
        return false;
    for (int d = 0; d < s->buf->rank; d++)
        if (sch_uses_var(s->index[d], e->pair_var) || !same_index(e, acc->args[d], s->index[d]))
            return false;
    return true;
}

/* Can the update X (pair_parts) be sixteen lanes over V: its
 * accumulator a vector load, x's group the same for every lane, the
 * panel's groups G apart? */
static bool pair_vector(Emitter *e, const Expr *x, const IterVar *v)
{
    const Expr *a, *w;
    pair_parts(e, x, &a, &w);
    return load_stride(x->args[0], v) == 1 && invariant(a, v) && load_stride(w, v) == e->group;
}

/* The update X (pair_parts) at lanes VMIN + G*16 + 0..15 of V:
 * te_vdot_bf16(ACC, pair, &w_packed[..]) or te_vdot_u8i8(ACC, quad,
 * &w_packed[..]); te_dot_bf16 or te_dot_u8i8 when V is NULL (one lane). */
static void emit_pair_dot(Emitter *e, const Expr *x, const IterVar *v, Expr *vmin, int64_t g)
{
    const Expr *xl, *wl;
    pair_parts(e, x, &xl, &wl);
    FILE *out = e->p.out;
    fprintf(out, "te_%sdot_%s(", v ? "v" : "", e->group == 2 ? "bf16" : "u8i8");
    if (v)
        emit_vexpr(e, x->args[0], v, vmin, g, 0);
    else
        cg_emit_expr(&e->p, x->args[0], 0);
    /* x's group as 32 bits, or the last k left, zero-extended */
    Expr *at = xl->args[xl->nargs - 1];
    if (e->pair_var) {
        fputs(e->group == 2 ? ", te_bf16_pair(" : ", te_u8_quad(", out);
        emit_address(e, xl->tensor, xl->args, at);
        fputs("), ", out);
    } else if (e->group == 2) {
        fputs(", ", out);
        emit_index(e, xl->tensor, xl->args);
        fputs(", ", out);
    } else {
        fputs(", te_u8_quad_n(", out);
        emit_address(e, xl->tensor, xl->args, at);
        fprintf(out, ", %d), ", e->pair_left);
    }
    Expr *last = wl->args[2];
    if (v) {
        Arena scratch = {0}, *a = &scratch; /* (see stride_of) */
        Expr *rest;
        int64_t c = stride_of(a, last, v, &rest);
        last = sch_add(a, rest, sch_mul(a, sch_int(a, c), sch_add(a, vmin, sch_int(a, g * VLANES))));
        emit_address(e, wl->tensor, wl->args, last);
        arena_free(&scratch);
    } else {
        emit_address(e, wl->tensor, wl->args, last);
    }
    fputc(')', out);
}

/* The k interleave of a weight S reads packed in groups of k (2 or 4),
 * or 0. */
static int reads_groups(const Stmt *s)
{
    if (!s)
        return 0;
    switch (s->kind) {
    case S_SEQ:
        for (int i = 0; i < s->n; i++) {
            int g = reads_groups(s->stmts[i]);
            if (g)
                return g;
        }
        return 0;
    case S_STORE:
        return sch_packed_group(s->value);
    default:
        return reads_groups(s->body);
    }
}

/* Is every statement of S that moves with the pair variable V an update
 * pair_store takes (at least one), and no loop bound or test moves? */
static bool pairs_only_in(Emitter *e, const Stmt *s, const IterVar *v, int *n)
{
    if (!s)
        return true;
    switch (s->kind) {
    case S_FOR:
        if (s->loop->kind == LOOP_PARALLEL || sch_uses_var(s->min, v) || sch_uses_var(s->extent, v))
            return false;
        return pairs_only_in(e, s->body, v, n);
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            if (!pairs_only_in(e, s->stmts[i], v, n))
                return false;
        return true;
    case S_IF:
        return !sch_uses_var(s->cond, v) && pairs_only_in(e, s->body, v, n);
    case S_ALLOC:
        return pairs_only_in(e, s->body, v, n);
    case S_FLASH:
        return false;
    case S_STORE: {
        bool moves = sch_uses_var(s->value, v);
        for (int d = 0; d < s->buf->rank; d++)
            moves = moves || sch_uses_var(s->index[d], v);
        if (!moves)
            return true;
        (*n)++;
        return pair_store(e, s);
    }
    }
    return false;
}

static bool pairs_only(Emitter *e, const Stmt *s, const IterVar *v)
{
    int n = 0;
    return pairs_only_in(e, s, v, &n) && n > 0;
}

/* A serial loop S over k as a loop over its groups of k (see above), if
 * its body is made of the updates pair_store takes; false, writing
 * nothing, if not. */
static bool emit_pair_loop(Emitter *e, const Stmt *s)
{
    const Loop *l = s->loop;
    int64_t min, n;
    int g = reads_groups(s->body);
    if (!g || !l->reduce || !sch_const_int(s->min, &min) || min != 0 ||
        !sch_const_int(s->extent, &n) || n < g)
        return false;
    /* k = G*kG */
    IterVar *kg = sch_new_var(e->st, arena_printf(e->p.a, "%s%d", l->name, g), n / g);
    Expr *first = sch_mul(e->p.a, sch_int(e->p.a, g), ex_var(e->p.a, (Span){ 0, 0 }, kg));
    Stmt *body = subst_stmt(e, s->body, sch_subst1(e->p.a, l->var, first), true);
    e->group = g;
    e->pair_var = kg;
    e->pair_at = first;
    bool all = pairs_only(e, body, kg);
    e->pair_var = NULL;
    e->pair_at = NULL;
    if (!all)
        return false;
    Loop *pl = arena_alloc(e->p.a, sizeof *pl);
    *pl = *l;
    pl->var = kg;
    pl->name = kg->name;
    Stmt *loop = arena_alloc(e->p.a, sizeof *loop);
    *loop = *s;
    loop->loop = pl;
    loop->extent = sch_int(e->p.a, n / g);
    loop->body = body;
    cg_var_name(&e->p, l->var); /* claimed, as k's own loop would */
    cg_line(&e->p, "/* %s: %lld values in %s, %s = %d * %s: %s dot products (%s) */\n", l->name,
            (long long)n, g == 2 ? "pairs" : "quads", cg_var_name(&e->p, l->var), g,
            cg_var_name(&e->p, kg), g == 2 ? "bf16" : "u8 x i8", g == 2 ? "vdpbf16ps" : "vpdpbusd");
    e->pair_var = kg;
    e->pair_at = first;
    emit_loop_over(e, loop, NULL, NULL);
    if (n % g) {
        /* the last k, fewer than G, padded with 0 (the panel's rows are) */
        e->pair_var = NULL;
        e->pair_left = (int)(n % g);
        e->pair_at = sch_int(e->p.a, n - n % g);
        if (n % g == 1)
            cg_line(&e->p, "/* %s = %lld: the last, with 0 */\n", l->name, (long long)(n - 1));
        else
            cg_line(&e->p, "/* %s = %lld .. %lld: the last, with 0 */\n", l->name, (long long)(n - n % g),
                    (long long)(n - 1));
        cg_line(&e->p, "{\n");
        e->p.indent++;
        emit_stmt(e, subst_stmt(e, s->body, sch_subst1(e->p.a, l->var, e->pair_at), true));
        e->p.indent--;
        cg_line(&e->p, "}\n");
    }
    e->pair_var = NULL;
    e->pair_at = NULL;
    e->group = 0;
    return true;
}

static void emit_dims(Emitter *e, const Tensor *t, int from)
{
    for (int d = from; d < t->rank; d++) {
        if (!t->shape_size[d]) {
            fprintf(e->p.out, "[%lld]", (long long)t->shape[d]);
            continue;
        }
        /* a run-time size: a variably modified type */
        fputc('[', e->p.out);
        cg_emit_expr(&e->p, sch_size_expr(e->st, t->shape_size[d]), 0);
        fputc(']', e->p.out);
    }
}

/* ------------------------------------------------------------------ */
/* flash (sched/flash.c): attention's online softmax, one batch point.  */

static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* " * te_splat(C)" or " / te_splat(C)": F's constant factor on the scores,
 * nothing when there is none */
static void emit_flash_scale(CgPrinter *p, const SchFlash *f)
{
    if (f->scale == 1 && !f->scale_div)
        return;
    fputs(f->scale_div ? " / te_splat(" : " * te_splat(", p->out);
    cg_emit_expr(p, ex_const(p->a, (Span){ 0, 0 }, DT_F32, f->scale), 0);
    fputc(')', p->out);
}

/* The stored scores of ROWS rows at the keys past the last of SK (a
 * tile of BK keys from te_t0): -inf, so that their exponentials are 0. */
static void emit_flash_past_end(CgPrinter *p, long long sk, long long bk, int rows)
{
    cg_line(p, "for (int64_t te_t = %lld - te_t0; te_t < %lld; te_t++) { /* past the last key */\n", sk, bk);
    for (int r = 0; r < rows; r++)
        cg_line(p, "    te_fs[%lld + te_t] = -INFINITY;\n", r * bk);
    cg_line(p, "}\n");
}

/* S_FLASH: the output's rows at one batch point (SchFlash's chain).  The
 * queries first, then for each tile of BK keys: the tile of K transposed
 * and of V copied (zeros past the last key), and for each block of 6
 * query rows the scores in 6 x 4 vector registers, each row's new
 * maximum, the exponentials (both from those registers when the tile is
 * one chunk of 64 keys or fewer; from the stored scores above that), the
 * rescale of its running sum and of its weighted sums, and the tile's
 * weighted sums added in 6 x 4 registers.
 * The output is the weighted sums over the sum, once every key is in.
 * The copies read Q, K and V through their own expressions (plain or
 * prepacked tensors), once a tile: a small part of the work. */
static void emit_flash(Emitter *e, const Stmt *s)
{
    const SchFlash *f = s->flash;
    CgPrinter *p = &e->p;
    enum { BQ = 6 };
    long long sq = f->sq, sk = f->sk, dk = f->dk, dv = f->dv, bk = f->bk;
    long long sqp = round_up(sq, BQ), dvp = round_up(dv, 16);
    int nvk = (int)((bk < 64 ? bk : 64) / 16), nvv = dvp % 64 == 0 ? 4 : dvp % 32 == 0 ? 2 : 1;
    /* the buffers, each from a multiple of 16 floats */
    long long oo = round_up(sqp * dk, 16), om = oo + sqp * dvp, ol = om + round_up(sqp, 16),
              ok = ol + 16 * sqp, ov = ok + round_up(dk * bk, 16), os = ov + bk * dvp,
              total = os + BQ * bk;
    const char *qi = cg_var_name(p, f->qi), *kt = cg_var_name(p, f->kt), *dd = cg_var_name(p, f->dd);
    cg_line(p, "{\n");
    p->indent++;
    cg_line(p, "/* flash: %s = softmax(%s) v over %lld keys in tiles of %lld, online: %s, %s, %s "
            "and %s are never stored */\n",
            s->buf->name, f->stages[0]->name, sk, bk, f->stages[0]->name, f->stages[1]->name,
            f->stages[2]->name, f->stages[3]->name);
    cg_line(p, "float *te_fq = te_alloc(sizeof(float) * %lld); /* the queries [%lld][%lld] */\n",
            total, sqp, dk);
    cg_line(p, "float *te_fo = te_fq + %lld; /* the weighted sums [%lld][%lld] */\n", oo, sqp, dvp);
    cg_line(p, "float *te_fm = te_fq + %lld; /* each row's running maximum */\n", om);
    cg_line(p, "float *te_fl = te_fq + %lld; /* each row's running sum, in 16 lanes */\n", ol);
    cg_line(p, "float *te_fk = te_fq + %lld; /* the key tile, transposed [%lld][%lld] */\n", ok, dk, bk);
    cg_line(p, "float *te_fv = te_fq + %lld; /* the value tile [%lld][%lld] */\n", ov, bk, dvp);
    cg_line(p, "float *te_fs = te_fq + %lld; /* a block's scores [%d][%lld] */\n", os, BQ, bk);
    cg_line(p, "for (int64_t %s = 0; %s < %lld; %s++) {\n", qi, qi, sqp, qi);
    p->indent++;
    cg_line(p, "for (int64_t %s = 0; %s < %lld; %s++)\n", dd, dd, dk, dd);
    cg_line(p, "    te_fq[%s * %lld + %s] = %s < %lld ? ", qi, dk, dd, qi, sq);
    cg_emit_expr(p, f->q, 13);
    fputs(" : 0.0f;\n", p->out);
    cg_line(p, "te_fm[%s] = -INFINITY;\n", qi);
    cg_line(p, "te_vstore(&te_fl[%s * 16], te_splat(0.0f));\n", qi);
    cg_line(p, "for (int64_t %s = 0; %s < %lld; %s++)\n", dd, dd, dvp, dd);
    cg_line(p, "    te_fo[%s * %lld + %s] = 0.0f;\n", qi, dvp, dd);
    p->indent--;
    cg_line(p, "}\n");
    cg_line(p, "for (int64_t te_t0 = 0; te_t0 < %lld; te_t0 += %lld) {\n", sk, bk);
    p->indent++;
    cg_line(p, "/* the tiles of K and V: zeros past the last key */\n");
    cg_line(p, "for (int64_t %s = te_t0; %s < te_t0 + %lld; %s++) {\n", kt, kt, bk, kt);
    p->indent++;
    cg_line(p, "const bool te_in = %s < %lld;\n", kt, sk);
    cg_line(p, "for (int64_t %s = 0; %s < %lld; %s++)\n", dd, dd, dk, dd);
    cg_line(p, "    te_fk[%s * %lld + (%s - te_t0)] = te_in ? ", dd, bk, kt);
    cg_emit_expr(p, f->k, 13);
    fputs(" : 0.0f;\n", p->out);
    cg_line(p, "for (int64_t %s = 0; %s < %lld; %s++)\n", dd, dd, dvp, dd);
    cg_line(p, "    te_fv[(%s - te_t0) * %lld + %s] = te_in && %s < %lld ? ", kt, dvp, dd, dd, dv);
    cg_emit_expr(p, f->v, 13);
    fputs(" : 0.0f;\n", p->out);
    p->indent--;
    cg_line(p, "}\n");
    cg_line(p, "for (int64_t te_i0 = 0; te_i0 < %lld; te_i0 += %d) {\n", sq, BQ);
    p->indent++;
    cg_line(p, "float te_al[%d];\n", BQ);
    cg_line(p, "te_v16f te_dm = te_splat(0.0f), te_ps[%d];\n", BQ);
    /* the scores */
    cg_line(p, "/* the scores: %d rows by %d keys at a time, in registers */\n", BQ, 16 * nvk);
    cg_line(p, "for (int64_t te_c = 0; te_c < %lld; te_c += %d) {\n", bk, 16 * nvk);
    p->indent++;
    for (int r = 0; r < BQ; r++)
        for (int v = 0; v < nvk; v++)
            cg_line(p, "te_v16f te_s%d_%d = te_splat(0.0f);\n", r, v);
    cg_line(p, "for (int64_t te_d = 0; te_d < %lld; te_d++) {\n", dk);
    p->indent++;
    for (int v = 0; v < nvk; v++)
        cg_line(p, "const te_v16f te_k%d = te_vload(&te_fk[te_d * %lld + te_c + %d]);\n", v, bk, 16 * v);
    for (int r = 0; r < BQ; r++) {
        cg_line(p, "const te_v16f te_q%d = te_splat(te_fq[(te_i0 + %d) * %lld + te_d]);\n", r, r, dk);
        for (int v = 0; v < nvk; v++)
            cg_line(p, "te_s%d_%d += te_q%d * te_k%d;\n", r, v, r, v);
    }
    p->indent--;
    cg_line(p, "}\n");
    if (16 * nvk == bk) {
        /* a tile of one chunk: each row's maximum and exponentials from
           the registers, and only the exponentials stored */
        for (int r = 0; r < BQ; r++)
            for (int v = 0; v < nvk && (f->scale != 1 || f->scale_div); v++) {
                cg_line(p, "te_s%d_%d = te_s%d_%d", r, v, r, v);
                emit_flash_scale(p, f);
                fputs(";\n", p->out);
            }
        if (sk % bk) {
            cg_line(p, "if (te_t0 + %lld > %lld) { /* past the last key: -inf */\n", bk, sk);
            p->indent++;
            for (int r = 0; r < BQ; r++)
                for (int v = 0; v < nvk; v++)
                    cg_line(p, "te_vstore(&te_fs[%lld], te_s%d_%d);\n", r * bk + 16 * v, r, v);
            emit_flash_past_end(p, sk, bk, BQ);
            for (int r = 0; r < BQ; r++)
                for (int v = 0; v < nvk; v++)
                    cg_line(p, "te_s%d_%d = te_vload(&te_fs[%lld]);\n", r, v, r * bk + 16 * v);
            p->indent--;
            cg_line(p, "}\n");
        }
        cg_line(p, "/* each row's new maximum, its exponentials, its sums rescaled */\n");
        for (int r = 0; r < BQ; r++) {
            cg_line(p, "const float te_mn%d = te_max_f32(te_fm[te_i0 + %d], te_hmaxa(", r, r);
            for (int v = 1; v < nvk; v++)
                fputs("te_vmaxa(", p->out);
            fprintf(p->out, "te_s%d_0", r);
            for (int v = 1; v < nvk; v++)
                fprintf(p->out, ", te_s%d_%d)", r, v);
            fputs("));\n", p->out);
        }
        for (int r = 0; r < BQ; r++) {
            cg_line(p, "te_ps[%d] = te_splat(0.0f);\n", r);
            for (int v = 0; v < nvk; v++) {
                cg_line(p, "te_s%d_%d = te_vexp(te_s%d_%d - te_splat(te_mn%d));\n", r, v, r, v, r);
                cg_line(p, "te_vstore(&te_fs[%lld], te_s%d_%d);\n", r * bk + 16 * v, r, v);
                cg_line(p, "te_ps[%d] += te_s%d_%d;\n", r, r, v);
            }
        }
        for (int r = 0; r < BQ; r++) {
            cg_line(p, "te_dm[%d] = te_fm[te_i0 + %d] - te_mn%d;\n", r, r, r);
            cg_line(p, "te_fm[te_i0 + %d] = te_mn%d;\n", r, r);
        }
        p->indent--;
        cg_line(p, "}\n");
    } else {
        for (int r = 0; r < BQ; r++)
            for (int v = 0; v < nvk; v++) {
                cg_line(p, "te_vstore(&te_fs[%lld + te_c + %d], te_s%d_%d", r * bk, 16 * v, r, v);
                emit_flash_scale(p, f);
                fputs(");\n", p->out);
            }
        p->indent--;
        cg_line(p, "}\n");
        if (sk % bk)
            emit_flash_past_end(p, sk, bk, BQ);
        /* the online softmax */
        cg_line(p, "/* each row's new maximum, its exponentials, its sums rescaled */\n");
        cg_line(p, "for (int te_r = 0; te_r < %d; te_r++) {\n", BQ);
        p->indent++;
        cg_line(p, "float *te_row = &te_fs[te_r * %lld];\n", bk);
        cg_line(p, "te_v16f te_mx = te_vload(te_row);\n");
        cg_line(p, "for (int64_t te_c = 16; te_c < %lld; te_c += 16)\n", bk);
        cg_line(p, "    te_mx = te_vmaxa(te_mx, te_vload(te_row + te_c));\n");
        cg_line(p, "const float te_mo = te_fm[te_i0 + te_r];\n");
        cg_line(p, "const float te_mn = te_max_f32(te_mo, te_hmaxa(te_mx));\n");
        cg_line(p, "te_ps[te_r] = te_splat(0.0f);\n");
        cg_line(p, "for (int64_t te_c = 0; te_c < %lld; te_c += 16) {\n", bk);
        cg_line(p, "    const te_v16f te_p = te_vexp(te_vload(te_row + te_c) - te_splat(te_mn));\n");
        cg_line(p, "    te_vstore(te_row + te_c, te_p);\n");
        cg_line(p, "    te_ps[te_r] += te_p;\n");
        cg_line(p, "}\n");
        cg_line(p, "te_dm[te_r] = te_mo - te_mn;\n");
        cg_line(p, "te_fm[te_i0 + te_r] = te_mn;\n");
        p->indent--;
        cg_line(p, "}\n");
    }
    cg_line(p, "/* the rescale, exp(m_old - m_new), of the %d rows in one vector */\n", BQ);
    cg_line(p, "const te_v16f te_alv = te_vexp(te_dm);\n");
    cg_line(p, "for (int te_r = 0; te_r < %d; te_r++) {\n", BQ);
    cg_line(p, "    te_al[te_r] = te_alv[te_r];\n");
    cg_line(p, "    float *te_l = &te_fl[(te_i0 + te_r) * 16];\n");
    cg_line(p, "    te_vstore(te_l, te_vload(te_l) * te_splat(te_al[te_r]) + te_ps[te_r]);\n");
    cg_line(p, "}\n");
    /* the weighted sums */
    cg_line(p, "/* the weighted sums: %d rows by %d columns at a time, in registers */\n", BQ, 16 * nvv);
    cg_line(p, "for (int64_t te_c = 0; te_c < %lld; te_c += %d) {\n", dvp, 16 * nvv);
    p->indent++;
    for (int r = 0; r < BQ; r++)
        for (int v = 0; v < nvv; v++)
            cg_line(p, "te_v16f te_o%d_%d = te_vload(&te_fo[(te_i0 + %d) * %lld + te_c + %d]) * te_splat(te_al[%d]);\n",
                    r, v, r, dvp, 16 * v, r);
    cg_line(p, "for (int64_t te_t = 0; te_t < %lld; te_t++) {\n", bk);
    p->indent++;
    for (int v = 0; v < nvv; v++)
        cg_line(p, "const te_v16f te_v%d = te_vload(&te_fv[te_t * %lld + te_c + %d]);\n", v, dvp, 16 * v);
    for (int r = 0; r < BQ; r++) {
        cg_line(p, "const te_v16f te_p%d = te_splat(te_fs[%lld + te_t]);\n", r, r * bk);
        for (int v = 0; v < nvv; v++)
            cg_line(p, "te_o%d_%d += te_p%d * te_v%d;\n", r, v, r, v);
    }
    p->indent--;
    cg_line(p, "}\n");
    for (int r = 0; r < BQ; r++)
        for (int v = 0; v < nvv; v++)
            cg_line(p, "te_vstore(&te_fo[(te_i0 + %d) * %lld + te_c + %d], te_o%d_%d);\n", r, dvp, 16 * v,
                    r, v);
    p->indent--;
    cg_line(p, "}\n");
    p->indent--;
    cg_line(p, "}\n"); /* te_i0 */
    p->indent--;
    cg_line(p, "}\n"); /* te_t0 */
    /* the output */
    Expr **idx = arena_alloc(p->a, sizeof *idx * (size_t)(f->nbatch + 3));
    for (int d = 0; d < f->nbatch; d++)
        idx[d] = f->batch_at[d];
    idx[f->nbatch] = ex_var(p->a, (Span){ 0, 0 }, f->qi);
    idx[f->nbatch + 1] = ex_var(p->a, (Span){ 0, 0 }, f->dd);
    cg_line(p, "for (int64_t %s = 0; %s < %lld; %s++) {\n", qi, qi, sq, qi);
    cg_line(p, "    const float te_sum = te_hsum(te_vload(&te_fl[%s * 16]));\n", qi);
    cg_line(p, "    for (int64_t %s = 0; %s < %lld; %s++)\n", dd, dd, dv, dd);
    cg_line(p, "        ");
    emit_index(e, s->buf, idx);
    fprintf(p->out, f->recip ? " = te_fo[%s * %lld + %s] * (1.0f / te_sum);\n"
                             : " = te_fo[%s * %lld + %s] / te_sum;\n",
            qi, dvp, dd);
    cg_line(p, "}\n");
    cg_line(p, "te_free(te_fq);\n");
    p->indent--;
    cg_line(p, "}\n");
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
    case S_FLASH:
        emit_flash(e, s);
        break;
    case S_IF:
        emit_if(e, s, emit_stmt);
        break;
    case S_ALLOC:
        cg_line(&e->p, "{\n");
        e->p.indent++;
        if (s->heap) {
            /* too big for the stack (SCH_HEAP_TILE_MAX) */
            const char *n = cg_tensor_name(&e->p, s->buf);
            cg_line(&e->p, "%s (*restrict %s)", storage_type(s->buf->dtype), n);
            emit_dims(e, s->buf, 1);
            fprintf(e->p.out, " = te_alloc(sizeof(%s)", storage_type(s->buf->dtype));
            for (int d = 0; d < s->buf->rank; d++)
                fprintf(e->p.out, " * %lld", (long long)s->buf->shape[d]);
            fputs("); /* on the heap: too big for a thread's stack */\n", e->p.out);
        } else if (vector_shape(s->buf) || vector_shape_i32(s)) {
            vec_push(e->p.a, &e->vector_bufs, s->buf);
            /* vectors of 16, so that constant-indexed tiles live in
             * registers; NAME is the same storage seen as floats (or
             * int32_t) */
            const Tensor *b = s->buf;
            const char *n = cg_tensor_name(&e->p, b);
            bool f = b->dtype == DT_F32;
            cg_line(&e->p, "%s %s_v", f ? "te_v16f" : "te_v16i32", n);
            for (int d = 0; d + 1 < b->rank; d++)
                fprintf(e->p.out, "[%lld]", (long long)b->shape[d]);
            fprintf(e->p.out, "[%lld];\n", (long long)(b->shape[b->rank - 1] / VLANES));
            cg_line(&e->p, "%s (*%s)", f ? "float" : "int32_t", n);
            emit_dims(e, b, 1);
            fprintf(e->p.out, " = (%s (*)", f ? "float" : "int32_t");
            emit_dims(e, b, 1);
            fprintf(e->p.out, ")%s_v;\n", n);
            cg_line(&e->p, "(void)%s; /* used by the scalar edge loops, if any */\n", n);
        } else {
            cg_line(&e->p, "%s %s", storage_type(s->buf->dtype), cg_tensor_name(&e->p, s->buf));
            if (s->buf->rank == 0)
                fputs("[1]", e->p.out);
            emit_dims(e, s->buf, 0);
            fputs(" __attribute__((aligned(64)));\n", e->p.out);
        }
        e->allocs++;
        emit_stmt(e, s->body);
        e->allocs--;
        if (s->heap)
            cg_line(&e->p, "te_free(%s);\n", cg_tensor_name(&e->p, s->buf));
        e->p.indent--;
        cg_line(&e->p, "}\n");
        break;
    }
}

/* ------------------------------------------------------------------ */
/* The translation unit.                                               */

/* The C prelude around cfamily.c's math helpers: vectors before (the
 * math's own helpers use none), then bf16, the vector math and folds,
 * allocation and parallel loops after.  Each piece is printed only where
 * the code uses what it defines (cg_print_helpers). */
static const CgHelper c_before[] = {
    { "te_v16f",
      "#if defined(__clang__)\n"
      "#pragma clang diagnostic ignored \"-Wpsabi\" /* vector arguments: all calls are inlined */\n"
      "#elif defined(__GNUC__)\n"
      "#pragma GCC diagnostic ignored \"-Wpsabi\" /* vector arguments: all calls are inlined */\n"
      "#endif\n"
      "/* vectors of 16 floats (GCC/Clang vector extensions; any ISA) */\n"
      "typedef float te_v16f __attribute__((vector_size(64)));\n" },
    { "te_splat", "static inline te_v16f te_splat(float x) { return (te_v16f){ x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x }; }\n" },
    { "te_vload", "static inline te_v16f te_vload(const float *p) { te_v16f v; memcpy(&v, p, sizeof v); return v; }\n" },
    { "te_vstore", "static inline void te_vstore(float *p, te_v16f v) { memcpy(p, &v, sizeof v); }\n" },
    { "te_v16i32", "typedef int32_t te_v16i32 __attribute__((vector_size(64))); /* sums of 8-bit products */\n" },
    { "te_vload_i32", "static inline te_v16i32 te_vload_i32(const int32_t *p) { te_v16i32 v; memcpy(&v, p, sizeof v); return v; }\n" },
    { "te_vstore_i32", "static inline void te_vstore_i32(int32_t *p, te_v16i32 v) { memcpy(p, &v, sizeof v); }\n" },
    { "te_vload_bf16 te_vload_f16", "/* 16 bf16 or f16 values widened to f32 as they are loaded: exact */\n" },
    { "te_vload_bf16", "static inline te_v16f te_vload_bf16(const uint16_t *p)\n"
                       "{\n"
                       "    typedef uint16_t v16h __attribute__((vector_size(32)));\n"
                       "    typedef uint32_t v16w __attribute__((vector_size(64)));\n"
                       "    v16h h;\n"
                       "    memcpy(&h, p, sizeof h);\n"
                       "    return (te_v16f)(__builtin_convertvector(h, v16w) << 16);\n"
                       "}\n" },
    { "te_vload_f16", "static inline te_v16f te_vload_f16(const _Float16 *p)\n"
                      "{\n"
                      "    typedef _Float16 v16h __attribute__((vector_size(32)));\n"
                      "    v16h h;\n"
                      "    memcpy(&h, p, sizeof h);\n"
                      "    return __builtin_convertvector(h, te_v16f);\n"
                      "}\n" },
    { "te_vloads",
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
      "#endif\n" },
    { "TE_VMAP1", "#define TE_VMAP1(name, f) \\\n"
      "    static inline te_v16f name(te_v16f x) { te_v16f r; for (int l = 0; l < 16; l++) r[l] = f(x[l]); return r; }\n" },
    { "TE_VMAP2", "#define TE_VMAP2(name, f) \\\n"
      "    static inline te_v16f name(te_v16f x, te_v16f y) { te_v16f r; for (int l = 0; l < 16; l++) r[l] = f(x[l], y[l]); return r; }\n" },
};

static const CgHelper c_after[] = {
    { "te_bf16_to_f32",
      "static inline float te_bf16_to_f32(uint16_t b)\n"
      "{\n"
      "    uint32_t u = (uint32_t)b << 16;\n"
      "    float f;\n"
      "    memcpy(&f, &u, sizeof f);\n"
      "    return f;\n"
      "}\n" },
    { "te_f32_to_bf16",
      "static inline uint16_t te_f32_to_bf16(float f)\n"
      "{\n"
      "    uint32_t u;\n"
      "    memcpy(&u, &f, sizeof u);\n"
      "    if ((u & 0x7fffffffu) > 0x7f800000u)\n"
      "        return (uint16_t)((u >> 16) | 0x40);\n"
      "    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
      "}\n" },
    { "te_round_bf16", "static inline float te_round_bf16(float f) { return te_bf16_to_f32(te_f32_to_bf16(f)); }\n" },
    { "te_vdot_bf16 te_dot_bf16",
      "/* bf16 dot products in pairs (codegen/c.c): ACC plus x_odd*w_odd, rounded,\n"
      "   then plus x_even*w_even, rounded, as vdpbf16ps adds them; X a pair of\n"
      "   bf16 as 32 bits (the even one low), W the pairs of a packed panel */\n"
      "static inline uint32_t te_bf16_pair(const uint16_t *p) { uint32_t u; memcpy(&u, p, sizeof u); return u; }\n"
      "static inline float te_dot_bf16(float acc, uint32_t x, const uint16_t *w)\n"
      "{\n"
      "    acc += te_bf16_to_f32((uint16_t)(x >> 16)) * te_bf16_to_f32(w[1]);\n"
      "    return acc + te_bf16_to_f32((uint16_t)x) * te_bf16_to_f32(w[0]);\n"
      "}\n" },
    { "te_vdot_u8i8 te_dot_u8i8",
      "/* u8 x i8 dot products in quads (codegen/c.c): ACC plus the four products\n"
      "   of X's bytes (u8, the first k lowest) and W's (i8), in i32 modulo 2^32\n"
      "   as vpdpbusd adds them (exact: the order does not matter) */\n"
      "static inline uint32_t te_u8_quad(const uint8_t *p) { uint32_t u; memcpy(&u, p, sizeof u); return u; }\n"
      "static inline uint32_t te_u8_quad_n(const uint8_t *p, int n) { uint32_t u = 0; memcpy(&u, p, (size_t)n); return u; }\n"
      "static inline int32_t te_dot_u8i8(int32_t acc, uint32_t x, const int8_t *w)\n"
      "{\n"
      "    uint32_t s = (uint32_t)acc;\n"
      "    for (int e = 0; e < 4; e++)\n"
      "        s += (uint32_t)((int32_t)((x >> (8 * e)) & 0xffu) * w[e]);\n"
      "    return (int32_t)s;\n"
      "}\n" },
    { "te_vdot_u8i8",
      "#if defined(__AVX512VNNI__)\n"
      "#include <immintrin.h>\n"
      "static inline te_v16i32 te_vdot_u8i8(te_v16i32 acc, uint32_t x, const int8_t *w)\n"
      "{\n"
      "    __m512i quads;\n"
      "    memcpy(&quads, w, sizeof quads);\n"
      "    return (te_v16i32)_mm512_dpbusd_epi32((__m512i)acc, _mm512_set1_epi32((int)x), quads);\n"
      "}\n"
      "#else\n"
      "static inline __attribute__((always_inline)) te_v16i32 te_vdot_u8i8(te_v16i32 acc, uint32_t x, const int8_t *w)\n"
      "{\n"
      "    typedef uint32_t v16u __attribute__((vector_size(64)));\n"
      "    v16u quads, s = (v16u)acc;\n"
      "    memcpy(&quads, w, sizeof quads);\n"
      "    for (int e = 0; e < 4; e++) /* byte e of each lane, sign-extended */\n"
      "        s += (v16u)(((te_v16i32)(quads << (24 - 8 * e)) >> 24) * (int32_t)((x >> (8 * e)) & 0xffu));\n"
      "    return (te_v16i32)s;\n"
      "}\n"
      "#endif\n" },
    { "te_vdot_bf16",
      "#if defined(__AVX512BF16__)\n"
      "#include <immintrin.h>\n"
      "static inline __attribute__((always_inline)) te_v16f te_vdot_bf16(te_v16f acc, uint32_t x, const uint16_t *w)\n"
      "{\n"
      "    __m512i pairs;\n"
      "    memcpy(&pairs, w, sizeof pairs);\n"
      "    return (te_v16f)_mm512_dpbf16_ps((__m512)acc, (__m512bh)_mm512_set1_epi32((int)x), (__m512bh)pairs);\n"
      "}\n"
      "#else\n"
      "static inline __attribute__((always_inline)) te_v16f te_vdot_bf16(te_v16f acc, uint32_t x, const uint16_t *w)\n"
      "{\n"
      "    typedef uint32_t v16w __attribute__((vector_size(64)));\n"
      "    v16w pairs;\n"
      "    memcpy(&pairs, w, sizeof pairs);\n"
      "    acc = acc + te_splat(te_bf16_to_f32((uint16_t)(x >> 16))) * (te_v16f)(pairs & 0xffff0000u);\n"
      "    return acc + te_splat(te_bf16_to_f32((uint16_t)x)) * (te_v16f)(pairs << 16);\n"
      "}\n"
      "#endif\n" },
    { "te_vlog", "TE_VMAP1(te_vlog, logf)\n" },
    { "te_vsqrt", "TE_VMAP1(te_vsqrt, sqrtf)\n" },
    { "te_vrsqrt", "TE_VMAP1(te_vrsqrt, te_rsqrt_f32)\n" },
    { "te_vabs", "TE_VMAP1(te_vabs, fabsf)\n" },
    { "te_vexp te_verf te_vtanh te_vgelu te_vsigmoid",
      "/* exp, erf, tanh and sigmoid within 1 ulp, gelu within 2 (codegen/vmath.c) */\n" },
    { "te_vexp", "#define te_vexp te_vexp_fast\n" },
    { "te_verf", "#define te_verf te_verf_fast\n" },
    { "te_vtanh", "#define te_vtanh te_vtanh_fast\n" },
    { "te_vgelu", "#define te_vgelu te_vgelu_fast\n" },
    { "te_vsigmoid", "#define te_vsigmoid te_vsigmoid_fast\n" },
    { "te_v16m",
      "/* min, max and relu lane by lane as the scalar ones (NaN propagates): a\n"
      "   compare and a blend, not a loop over lanes */\n"
      "typedef int te_v16m __attribute__((vector_size(64)));\n" },
    { "te_vsel", "static inline te_v16f te_vsel(te_v16m m, te_v16f a, te_v16f b) { return (te_v16f)((m & (te_v16m)a) | (~m & (te_v16m)b)); }\n" },
    { "te_vmin", "static inline te_v16f te_vmin(te_v16f a, te_v16f b) { return te_vsel((a < b) | (a != a), a, b); }\n" },
    { "te_vmax", "static inline te_v16f te_vmax(te_v16f a, te_v16f b) { return te_vsel((a > b) | (a != a), a, b); }\n" },
    { "te_vrelu", "static inline te_v16f te_vrelu(te_v16f x) { return te_vsel((x > te_splat(0.0f)) | (x != x), x, te_splat(0.0f)); }\n" },
    { "te_vpow", "TE_VMAP2(te_vpow, powf)\n" },
    { "TE_VFOLD",
      "/* a vector folded to one float, halves first: lanes l and l + w\n"
      "   combined for w = 8, 4, 2 and 1, each step one vector operation on\n"
      "   the vector and a rotation of it (a vectorized reduction) */\n"
      "#if defined(__clang__)\n"
      "#define TE_VROT(v, w) __builtin_shufflevector(v, v, (w) & 15, ((w) + 1) & 15, ((w) + 2) & 15, ((w) + 3) & 15, ((w) + 4) & 15, ((w) + 5) & 15, ((w) + 6) & 15, ((w) + 7) & 15, ((w) + 8) & 15, ((w) + 9) & 15, ((w) + 10) & 15, ((w) + 11) & 15, ((w) + 12) & 15, ((w) + 13) & 15, ((w) + 14) & 15, ((w) + 15) & 15)\n"
      "#else\n"
      "#define TE_VROT(v, w) __builtin_shuffle(v, ((te_v16m){ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 } + (w)) & 15)\n"
      "#endif\n"
      "#define TE_VFOLD(name, f) \\\n"
      "    static inline float name(te_v16f v) { v = f(v, TE_VROT(v, 8)); v = f(v, TE_VROT(v, 4)); v = f(v, TE_VROT(v, 2)); v = f(v, TE_VROT(v, 1)); return v[0]; }\n" },
    { "te_vadd", "static inline te_v16f te_vadd(te_v16f a, te_v16f b) { return a + b; }\n" },
    { "te_vmul", "static inline te_v16f te_vmul(te_v16f a, te_v16f b) { return a * b; }\n" },
    { "te_hsum", "TE_VFOLD(te_hsum, te_vadd)\n" },
    { "te_hprod", "TE_VFOLD(te_hprod, te_vmul)\n" },
    { "te_hmax", "TE_VFOLD(te_hmax, te_vmax)\n" },
    { "te_hmin", "TE_VFOLD(te_hmin, te_vmin)\n" },
    { "te_vmaxa",
      "/* flash's row maximum: a compare and a blend (vmaxps), which may drop a\n"
      "   NaN: the row's exponentials and sums carry it to the output */\n"
      "static inline te_v16f te_vmaxa(te_v16f a, te_v16f b) { return te_vsel(a > b, a, b); }\n" },
    { "te_hmaxa", "TE_VFOLD(te_hmaxa, te_vmaxa)\n" },
    { "te_alloc te_free",
      "/* 64-byte aligned memory for a call: a malloc block 64 bytes larger,\n"
      "   its address kept just before the aligned one (te_free).  Not\n"
      "   aligned_alloc: glibc places a large aligned_alloc at a new address\n"
      "   call after call (a 9 MiB one walks through some 80 MiB of heap),\n"
      "   and each page first touched costs a fault, microseconds each */\n"
      "static inline void *te_alloc(size_t bytes)\n"
      "{\n"
      "    char *block = malloc(bytes + 64);\n"
      "    if (!block)\n"
      "        abort();\n"
      "    char *p = block + (64 - (uintptr_t)block % 64);\n"
      "    memcpy(p - sizeof block, &block, sizeof block);\n"
      "    return p;\n"
      "}\n"
      "static inline void te_free(void *p)\n"
      "{\n"
      "    char *block;\n"
      "    memcpy(&block, (char *)p - sizeof block, sizeof block);\n"
      "    free(block);\n"
      "}\n" },
};

/* After c_after, the vector math's pieces (vmath.c), then this one. */
static const CgHelper c_last[] = {
    { "te_parallel_for", cg_parallel_source },
};

/* c_after, cg_vmath_helpers and c_last in one table, their number in *N. */
static const CgHelper *c_after_all(Arena *a, int *n)
{
    int nafter = (int)(sizeof c_after / sizeof c_after[0]);
    *n = nafter + cg_vmath_nhelpers + (int)(sizeof c_last / sizeof c_last[0]);
    CgHelper *all = arena_alloc(a, sizeof *all * (size_t)*n);
    memcpy(all, c_after, sizeof c_after);
    memcpy(all + nafter, cg_vmath_helpers, sizeof *all * (size_t)cg_vmath_nhelpers);
    memcpy(all + nafter + cg_vmath_nhelpers, c_last, sizeof c_last);
    return all;
}

static Params params_new(Arena *a, int cap)
{
    return (Params){ arena_alloc(a, sizeof(Tensor *) * (size_t)cap),
                     arena_alloc(a, sizeof(bool) * (size_t)cap), 0, false };
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
    fprintf(out, "%s%s %s(", e->in_variant && !in_header ? "static " : "", p->dims ? "int" : "void", name);
    for (int i = 0; p->dims && i < e->nrt; i++)
        fprintf(out, "int64_t %s, ", cg_var_name(&e->p, e->rt[i]));
    for (int i = 0; i < p->n; i++)
        fprintf(out, "%s%s%s *%s%s", i ? ", " : "", p->ro[i] ? "const " : "",
                storage_type(p->t[i]->dtype), in_header ? "" : "restrict ",
                in_header ? cg_tensor_name(&e->p, p->t[i]) : arena_printf(e->p.a, "%s_", cg_tensor_name(&e->p, p->t[i])));
    if (ws)
        fputs(in_header ? ", void *workspace" : ", void *te_workspace_", out);
    fputc(')', out);
}

/* "NAME(x_, w_packed_, b_, z_" — a call passing P's parameters on;
 * "int te_status = NAME(M, x_, ..." when P takes the run-time dims. */
static void emit_call_open(Emitter *e, const char *name, const Params *p)
{
    cg_line(&e->p, "%s%s(", p->dims ? "int te_status = " : "", name);
    for (int i = 0; p->dims && i < e->nrt; i++)
        fprintf(e->p.out, "%s, ", cg_var_name(&e->p, e->rt[i]));
    for (int i = 0; i < p->n; i++)
        fprintf(e->p.out, "%s%s_", i ? ", " : "", cg_tensor_name(&e->p, p->t[i]));
}

/* The view: "const float (*restrict x)[768] = (const float (*)[768])x_;",
 * the pointer x_ read from FROM ("" or "te_ctx->"). */
static void emit_view(Emitter *e, const Tensor *t, bool ro, const char *from)
{
    const char *c = ro ? "const " : "";
    const char *ty = storage_type(t->dtype);
    const char *n = cg_tensor_name(&e->p, t);
    if (t->rank <= 1) {
        cg_line(&e->p, "%s%s *restrict %s = %s%s_;\n", c, ty, n, from, n);
        return;
    }
    cg_line(&e->p, "%s%s (*restrict %s)", c, ty, n);
    emit_dims(e, t, 1);
    fprintf(e->p.out, " = (%s%s (*)", c, ty);
    emit_dims(e, t, 1);
    fprintf(e->p.out, ")%s%s_;\n", from, n);
}

/* the views of P's tensors (the function's) that BODY uses outside its
 * lifted loops */
static void emit_views(Emitter *e, const Params *p, const Stmt *body)
{
    TE_ASSERT(p == e->fn_params);
    CgUses uses = cg_uses(e->p.a, body, true);
    int n;
    int *param = used_positions(e, &uses, &e->param_at, &n);
    for (int j = 0; j < n; j++)
        emit_view(e, p->t[param[j]], p->ro[param[j]], "");
}

/* Temp I's view of its bytes in the workspace (its memory plan's offset):
 * "float (*restrict e)[1000] = (float (*)[1000])(te_workspace + 4096);" */
static void emit_temp(Emitter *e, const Tensor *t, int i)
{
    const char *ty = storage_type(t->dtype);
    const char *n = cg_tensor_name(&e->p, t);
    long long offset = (long long)e->plan.bufs[i].offset;
    if (t->rank <= 1) {
        cg_line(&e->p, "%s *restrict %s = (%s *)(te_workspace + %lld);\n", ty, n, ty, offset);
        return;
    }
    cg_line(&e->p, "%s (*restrict %s)", ty, n);
    emit_dims(e, t, 1);
    fprintf(e->p.out, " = (%s (*)", ty);
    emit_dims(e, t, 1);
    fprintf(e->p.out, ")(te_workspace + %lld);\n", offset);
}

/* One kernel step of NAME_ws: its nest, in a block declaring the views of
 * the temps it uses.  Temps that share bytes are never used in one step,
 * so each view is restrict within its block. */
static void emit_step(Emitter *e, const LoweredFunc *fn, const Stmt *body)
{
    TE_ASSERT(fn == e->fn_temps);
    CgUses uses = cg_uses(e->p.a, body, true);
    int n;
    int *temp = used_positions(e, &uses, &e->temp_at, &n);
    if (!n) {
        emit_stmt(e, body);
        return;
    }
    cg_line(&e->p, "{\n");
    e->p.indent++;
    for (int j = 0; j < n; j++)
        emit_temp(e, fn->temps.items[temp[j]], temp[j]);
    emit_stmt(e, body);
    e->p.indent--;
    cg_line(&e->p, "}\n");
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


static const char *dims_decl(Emitter *e);

/* "512, 3072", or "M, 3072" with run-time sizes */
static void print_shape(Arena *a, FILE *h, const Tensor *t)
{
    for (int d = 0; d < t->rank; d++) {
        if (t->shape_size[d])
            fprintf(h, "%s%s", d ? ", " : "", te_size_str(a, t->shape_size[d]));
        else
            fprintf(h, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    }
}

/* The run-time sizes' part of the header: what the functions return. */
static void emit_sizes_header(Emitter *e, const CodegenOptions *o, FILE *h)
{
    Graph *g = e->st->g;
    fputs("\n/* Run-time sizes.  The functions below take", h);
    for (int i = 0; i < e->nrt; i++)
        fprintf(h, "%s %s", i == 0 ? "" : i + 1 < e->nrt ? "," : " and", e->rt_names[i]);
    fprintf(h, " first (in the order the\n * program declares %s) and return 0, or %s with nothing\n"
               " * written when a size is outside its range (the _MIN and _MAX macros above)",
            e->nrt > 1 ? "them" : "it", e->erange);
    if (g->nchecks) {
        fputs(" or\n * one of these checks fails:", h);
        for (int i = 0; i < g->nchecks; i++)
            fprintf(h, "\n *   %s >= 0 (%s)", te_size_str(e->p.a, g->checks[i].value),
                    g->checks[i].message);
    }
    fprintf(h, ".\n * %s tells without running anything; %s_strerror(code)\n"
               " * says what a code means. */\n", e->sizes_ok, o->name);
    fprintf(h, "#define %s (-1)\n", e->erange);
    fprintf(h, "int %s(%s);\n", e->sizes_ok, dims_decl(e));
    fprintf(h, "const char *%s_strerror(int code);\n", o->name);
}

/* The C names of the inputs, then the outputs (in the header). */
static const char *const *buffer_names(Emitter *e)
{
    const Graph *g = e->st->g;
    const char **names = arena_alloc(e->p.a, sizeof *names * (size_t)(g->ninputs + g->noutputs + 1));
    for (int i = 0; i < g->ninputs + g->noutputs; i++)
        names[i] = cg_tensor_name(&e->p, i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs]);
    return names;
}

static void emit_header(Emitter *e, const CodegenOptions *o, const Funcs *f, FILE *h)
{
    Graph *g = e->st->g;
    /* TEXC_ keeps the guard apart from the dim macros NAME_DIM */
    const char *guard = cg_upper(e->p.a, arena_printf(e->p.a, "TEXC_%s_H", o->name));
    fprintf(h, "/* %s.h — generated by texc %s from %s (target %s).\n", o->name, TE_VERSION,
            o->source_path, target_name(o->target));
    if (o->schedule_from)
        fprintf(h, " * Schedule: %s.\n", o->schedule_from);
    fprintf(h, " * Do not edit: regenerate with texc.  Tensors are row-major arrays. */\n");
    fprintf(h, "#ifndef %s\n#define %s\n\n", guard, guard);
    fputs("#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n", h);
    fputs(e->profile ? "#include <stdio.h>\n\n" : "\n", h);
    fputs("#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", h);
    PtrVec macros = {0};
    vec_push(e->p.a, &macros, (void *)f->ws_macro);
    if (e->nrt) { /* the run-time sizes' macros: a dim called ERANGE is renamed */
        vec_push(e->p.a, &macros, (void *)e->erange);
        vec_push(e->p.a, &macros, cg_upper(e->p.a, arena_printf(e->p.a, "%s_NVARIANTS", o->name)));
    }
    for (int i = 0; i < f->packed->len; i++)
        vec_push(e->p.a, &macros, (void *)f->elems_macros[i]);
    cg_print_dim_macros(e->p.a, h, o->name, g, &macros);
    fputs("\n/*", h);
    for (int i = 0; i < g->ninputs; i++) {
        const Tensor *t = g->inputs[i];
        fprintf(h, "\n * input  %s : %s%s[", t->name, t->is_const ? "const " : "", dtype_name(t->dtype));
        print_shape(e->p.a, h, t);
        fputc(']', h);
    }
    for (int i = 0; i < g->noutputs; i++) {
        const Tensor *t = g->outputs[i];
        fprintf(h, "\n * output %s : %s[", t->name, dtype_name(t->dtype));
        print_shape(e->p.a, h, t);
        fputc(']', h);
    }
    fputs("\n */\n", h);
    if (e->nrt) {
        emit_sizes_header(e, o, h);
        cg_print_variant_table(e->p.a, h, &e->sizes, e->variants, e->nvariants, false);
    }
    emit_signature(e, h, o->name, &f->entry, true, false);
    fputs(";\n\n", h);
    /* the workspace API */
    fprintf(h, "/* The intermediates' bytes: one workspace, laid out by texc's memory\n"
               " * plan (texc --dump=memory); 0 when there are none. */\n");
    fprintf(h, "#define %s %lld%s\n", f->ws_macro, (long long)e->ws_bytes,
            e->nrt ? " /* enough for every size in the ranges */" : "");
    fprintf(h, "size_t %s_workspace_size(%s);\n\n", o->name, dims_decl(e));
    fprintf(h, "/* %s with its intermediates in WORKSPACE instead of memory of its own:\n"
               " * %s_workspace_size() bytes, aligned to 64 bytes, used by one call at a\n"
               " * time; it needs no initial contents and holds none afterwards, so one\n"
               " * workspace serves call after call (pages touched again, not faulted in\n"
               " * anew).  WORKSPACE may be NULL when the size is 0.  %s allocates a\n"
               " * workspace on each call (malloc, reused by glibc up to 32 MiB) and\n"
               " * calls %s_ws. */\n",
            o->name, o->name, o->name, o->name);
    emit_signature(e, h, f->ws_name, &f->entry, true, true);
    fputs(";\n", h);
    if (f->prepack.n) {
        fputs("\n/* Prepacked weights (texc's layout assignment): the kernel reads", h);
        for (int i = 0; i < f->packed->len; i++) {
            const Tensor *t = f->packed->items[i];
            fprintf(h, "%s\n * %s in panels of %lld along its last dimension, %s[p][..][l] =\n"
                       " * %s[..][p*%lld + l], zero past the end",
                    i ? ";" : "", t->packs->name, (long long)t->pack_width, cg_tensor_name(&e->p, t),
                    t->packs->name, (long long)t->pack_width);
        }
        fprintf(h, ".\n * %s puts the weights in that layout; a program that calls the\n"
                   " * kernel many times with the same weights calls it once and then\n"
                   " * %s (or %s with a workspace).  %s and %s %s */\n",
                f->prepack_name, f->packed_name, f->packed_ws_name, o->name, f->ws_name,
                o->plain ? "read\n * the weights as given, not packed (packing all of them at every call\n"
                           " * would cost more than it saves at these sizes: a build of their own,\n"
                           " * under the default schedule, which may copy the column panel a thread\n"
                           " * works on into a buffer of its own)."
                         : "pack\n * into buffers of their own on every call.");
        for (int i = 0; i < f->packed->len; i++) {
            const Tensor *t = f->packed->items[i];
            fprintf(h, "#define %s %lld /* elements of %s */\n", f->elems_macros[i],
                    (long long)tensor_elems(t), cg_tensor_name(&e->p, t));
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
    if (e->nrt)
        fprintf(h, "int %s_packed_args(const int64_t *dims, void *const *args, const void *packed); /* DIMS: the run-time sizes, in order */\n", o->name);
    else
        fprintf(h, "void %s_packed_args(void *const *args, const void *packed);\n", o->name);
    if (e->profile)
        fprintf(h, "\n/* Built with texc --profile: every kernel step of %s is timed (its\n"
                   " * calls and nanoseconds, added atomically).  %s_profile_print(out)\n"
                   " * prints the table: kernel, calls, total ms, mean us and share of the\n"
                   " * whole; %s_profile_reset() starts it again.  Without --profile the\n"
                   " * code has no timers. */\n"
                   "#define %s 1\n"
                   "void %s_profile_print(FILE *out);\n"
                   "void %s_profile_reset(void);\n",
                o->name, o->name, o->name, cg_upper(e->p.a, arena_printf(e->p.a, "%s_PROFILED", o->name)),
                o->name, o->name);
    if (o->weights)
        cg_emit_weights_h(g, o->weights, o->name, buffer_names(e), e->rt_names, e->nrt, h);
    fputs("\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n", h);
}

/* "int64_t M, int64_t S" (the run-time dims as parameters), or "void" */
static const char *dims_decl(Emitter *e)
{
    return cg_sizes_decl(e->p.a, &e->sizes);
}

/* NAME_prepacked_bytes, NAME_prepack_args and NAME_packed_args: each
 * packed tensor at a 64-byte aligned offset of one buffer. */
static void emit_args_entries(Emitter *e, const Funcs *f, const char *name)
{
    FILE *c = e->p.out;
    Graph *g = e->st->g;
    int64_t *offset = arena_alloc(e->p.a, sizeof *offset * (size_t)(f->packed->len + 1));
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
    if (e->nrt)
        fprintf(c, "\nint %s_packed_args(const int64_t *dims, void *const *args, const void *packed)\n{\n", name);
    else
        fprintf(c, "\nvoid %s_packed_args(void *const *args, const void *packed)\n{\n", name);
    if (!f->prepack.n)
        fputs("    (void)packed;\n", c);
    fprintf(c, "    %s%s(", e->nrt ? "return " : "", f->prepack.n ? f->packed_name : name);
    for (int i = 0; i < e->nrt; i++)
        fprintf(c, "dims[%d], ", i);
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

/* "if (!te_sizes_ok(M)) return NAME_ERANGE;": the first statement of a
 * function that takes the run-time dims */
static void emit_sizes_check(Emitter *e, const Params *p)
{
    (void)p;
    cg_line(&e->p, "if (%s(", e->sizes_ok);
    for (int i = 0; i < e->nrt; i++)
        fprintf(e->p.out, "%s%s", i ? ", " : "", cg_var_name(&e->p, e->rt[i]));
    fprintf(e->p.out, ") != 0)\n");
    cg_line(&e->p, "    return %s;\n", e->erange);
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
    e->p.out = body;
    e->fn_params = p;
    e->fn_temps = temps;
    e->param_at = (PtrMap){0};
    for (int i = 0; i < p->n; i++)
        map_put(e->p.a, &e->param_at, p->t[i], i);
    e->temp_at = (PtrMap){0};
    for (int i = 0; temps && i < temps->temps.len; i++)
        map_put(e->p.a, &e->temp_at, temps->temps.items[i], i);
    fputc('\n', e->p.out);
    emit_signature(e, e->p.out, name, p, false, ws);
    fputs("\n{\n", e->p.out);
    e->p.indent = 1;
    if (p->dims && !e->in_variant)
        emit_sizes_check(e, p);
    return true;
}

/* Writes to C the functions of the parallel loops, then the function. */
static void end_function(Emitter *e, FILE *c)
{
    fputs(e->fn_params->dims ? "    return 0;\n}\n" : "}\n", e->p.out);
    fclose(e->p.out);
    fclose(e->lifted);
    fwrite(e->text[1], 1, e->len[1], c);
    fwrite(e->text[0], 1, e->len[0], c);
    free(e->text[0]);
    free(e->text[1]);
    e->p.out = c;
    e->lifted = NULL;
}

/* "void NAME(PARAMS) { workspace of its own; NAME_ws(PARAMS, workspace); }" */
static void emit_with_workspace(Emitter *e, const char *name, const char *ws_name, const Params *p,
                                const char *ws_macro)
{
    FILE *c = e->p.out;
    fputc('\n', c);
    emit_signature(e, c, name, p, false, false);
    fputs("\n{\n", c);
    e->p.indent = 1;
    if (p->dims)
        emit_sizes_check(e, p);
    if (e->ws_bytes > 0)
        fprintf(c, "    void *te_workspace = te_alloc(%s);\n", ws_macro);
    emit_call_open(e, ws_name, p);
    if (p->dims)
        fputs(e->ws_bytes > 0 ? ", te_workspace);\n    te_free(te_workspace);\n    return te_status;\n}\n"
                                : ", NULL);\n    return te_status;\n}\n", c);
    else
        fputs(e->ws_bytes > 0 ? ", te_workspace);\n    te_free(te_workspace);\n}\n" : ", NULL);\n}\n", c);
}

/* The function NAME running FN's kernel steps, each temp at its planned
 * offset (e->plan). */
static bool emit_core(Emitter *e, const char *name, const Funcs *f, const LoweredFunc *fn, FILE *c)
{
    if (!begin_function(e, name, &f->kernel, true, fn))
        return false;
    for (int i = 0; e->in_variant && i < e->nrt; i++) {
        int d = e->rt[i]->size_dim - 1;
        if (e->st->dims[d].lo == e->st->dims[d].hi)
            cg_line(&e->p, "(void)%s; /* %lld in this variant */\n", cg_var_name(&e->p, e->rt[i]),
                    (long long)e->st->dims[d].lo);
    }
    emit_views(e, &f->kernel, fn->body);
    if (fn->temps.len)
        cg_line(&e->p, "char *te_workspace = te_workspace_;\n");
    else
        cg_line(&e->p, "(void)te_workspace_;\n");
    const SStage **roots;
    const Stmt **bodies;
    int nsteps = cg_kernel_steps(e->p.a, e->st, fn, &roots, &bodies);
    for (int k = 0; k < nsteps; k++) {
        if (!e->profile) {
            emit_step(e, fn, bodies[k]);
            continue;
        }
        int id = e->prof_names.len;
        vec_push(e->p.a, &e->prof_names,
                 e->nvariants > 1 ? arena_printf(e->p.a, "%s (variant %d)", roots[k]->name, e->variant)
                                  : (char *)roots[k]->name);
        cg_line(&e->p, "/* --profile: %s */\n", roots[k]->name);
        cg_line(&e->p, "const uint64_t te_t%d = te_prof_now();\n", id);
        emit_step(e, fn, bodies[k]);
        cg_line(&e->p, "te_prof_add(%d, te_t%d);\n", id, id);
    }
    end_function(e, c);
    return true;
}

/* Makes variant I's state the one names and sizes come from: its
 * variables get fresh names, but for its run-time dims' (every variant
 * calls them the same), and its workspace plan. */
static void use_variant(Emitter *e, int i)
{
    SchedState *st = e->variants[i].st;
    e->st = st;
    for (int k = 0; k < e->nrt; k++)
        e->rt[k] = sch_dim_var(st, e->rt[k]->size_dim - 1);
    e->p.var_names = arena_alloc(e->p.a, sizeof *e->p.var_names * (size_t)(st->next_var + 1));
    e->p.nvars = st->next_var + 1;
    for (int k = 0; k < e->nrt; k++)
        e->p.var_names[e->rt[k]->id] = e->rt_names[k];
    e->plan = e->plans[i];
}

/* The static function NAME running PLAIN, the build of the program that
 * reads its weights where they are: its inputs and outputs named as the
 * entry point's, its variables and workspace plan its own while it is
 * written. */
static bool emit_plain(Emitter *e, const char *name, const CgVariant *plain, FILE *c)
{
    SchedState *st = plain->st, *was = e->st;
    const Graph *g = st->g, *main = was->g;
    Params params = params_new(e->p.a, g->ninputs + g->noutputs);
    for (int i = 0; i < g->ninputs; i++) {
        cg_same_name(&e->p, g->inputs[i], main->inputs[i]);
        add_param(&params, g->inputs[i], true);
    }
    for (int i = 0; i < g->noutputs; i++) {
        cg_same_name(&e->p, g->outputs[i], main->outputs[i]);
        add_param(&params, g->outputs[i], false);
    }
    const char **names = e->p.var_names;
    int nvars = e->p.nvars;
    WorkspacePlan plan = e->plan;
    e->st = st;
    e->p.var_names = arena_alloc(e->p.a, sizeof *e->p.var_names * (size_t)(st->next_var + 1));
    e->p.nvars = st->next_var + 1;
    e->plan = e->plain_plan;
    e->in_variant = true; /* static */
    Funcs f = { .kernel = params };
    bool ok = emit_core(e, name, &f, plain->fn, c);
    e->in_variant = false;
    e->st = was;
    e->p.var_names = names;
    e->p.nvars = nvars;
    e->plan = plan;
    return ok;
}

/* NAME, the dispatcher: NAME_variant's choice called. */
static void emit_dispatch(Emitter *e, const char *name, const char **variants, const Funcs *f,
                          const CodegenOptions *o, FILE *c)
{
    fputc('\n', c);
    emit_signature(e, c, name, &f->kernel, false, true);
    fputs("\n{\n", c);
    e->p.indent = 1;
    cg_line(&e->p, "switch (%s_variant(", o->name);
    for (int k = 0; k < e->nrt; k++)
        fprintf(c, "%s%s", k ? ", " : "", e->rt_names[k]);
    fputs(")) {\n", c);
    for (int i = 0; i < e->nvariants; i++) {
        cg_line(&e->p, "case %d:\n", i);
        cg_line(&e->p, "    return %s(", variants[i]);
        for (int k = 0; k < e->nrt; k++)
            fprintf(c, "%s, ", e->rt_names[k]);
        for (int k = 0; k < f->kernel.n; k++)
            fprintf(c, "%s_, ", cg_tensor_name(&e->p, f->kernel.t[k]));
        fputs("te_workspace_);\n", c);
    }
    cg_line(&e->p, "default:\n");
    cg_line(&e->p, "    return %s;\n", e->erange);
    cg_line(&e->p, "}\n");
    fputs("}\n", c);
}

/* --profile: the clock and the timer's prototype, before the functions
 * that time their kernel steps ... */
static void emit_profile_head(FILE *c)
{
    fputs("/* --profile: the timers' clock (CLOCK_MONOTONIC, in nanoseconds) */\n"
          "#include <time.h>\n"
          "static inline uint64_t te_prof_now(void)\n{\n"
          "    struct timespec t;\n"
          "    clock_gettime(CLOCK_MONOTONIC, &t);\n"
          "    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;\n}\n"
          "static void te_prof_add(int step, uint64_t since);\n\n", c);
}

/* ... and after them, the table and NAME_profile_print/_reset. */
static void emit_profile_tail(Emitter *e, const CodegenOptions *o, FILE *c)
{
    int n = e->prof_names.len;
    fprintf(c, "\n/* --profile: each timed kernel step's name, calls and nanoseconds */\n"
               "static const char *const te_prof_name[%d] = {", n > 0 ? n : 1);
    for (int i = 0; i < n; i++)
        fprintf(c, "%s\n    \"%s\"", i ? "," : "", (const char *)e->prof_names.items[i]);
    fprintf(c, "%s\n};\n", n ? "" : "\n    \"\"");
    fprintf(c, "static uint64_t te_prof_calls[%d], te_prof_ns[%d];\n\n", n > 0 ? n : 1, n > 0 ? n : 1);
    fputs("static void te_prof_add(int step, uint64_t since)\n{\n"
          "    __atomic_fetch_add(&te_prof_ns[step], te_prof_now() - since, __ATOMIC_RELAXED);\n"
          "    __atomic_fetch_add(&te_prof_calls[step], 1, __ATOMIC_RELAXED);\n}\n", c);
    fprintf(c, "\nvoid %s_profile_reset(void)\n{\n"
               "    for (int i = 0; i < %d; i++) {\n"
               "        __atomic_store_n(&te_prof_ns[i], 0, __ATOMIC_RELAXED);\n"
               "        __atomic_store_n(&te_prof_calls[i], 0, __ATOMIC_RELAXED);\n"
               "    }\n}\n", o->name, n);
    fprintf(c, "\nvoid %s_profile_print(FILE *out)\n{\n"
               "    uint64_t all = 0;\n"
               "    for (int i = 0; i < %d; i++)\n"
               "        all += __atomic_load_n(&te_prof_ns[i], __ATOMIC_RELAXED);\n"
               "    fprintf(out, \"%%-32s %%10s %%12s %%12s %%7s\\n\", \"kernel\", \"calls\", \"total ms\", \"mean us\", \"share\");\n"
               "    for (int i = 0; i < %d; i++) {\n"
               "        uint64_t ns = __atomic_load_n(&te_prof_ns[i], __ATOMIC_RELAXED);\n"
               "        uint64_t calls = __atomic_load_n(&te_prof_calls[i], __ATOMIC_RELAXED);\n"
               "        if (!calls)\n"
               "            continue;\n"
               "        fprintf(out, \"%%-32s %%10llu %%12.3f %%12.3f %%6.1f%%%%\\n\", te_prof_name[i],\n"
               "                (unsigned long long)calls, ns * 1e-6, ns * 1e-3 / (double)calls,\n"
               "                all ? 100.0 * (double)ns / (double)all : 0.0);\n"
               "    }\n"
               "    fprintf(out, \"%%-32s %%10s %%12.3f\\n\", \"all\", \"\", all * 1e-6);\n}\n", o->name, n, n);
}

/* The functions of NAME.c (the entry points the top of this file lists),
 * to e->p.out. */
static bool emit_functions(Emitter *e, const LoweredFunc *fn, const CodegenOptions *o,
                           const Funcs *f)
{
    FILE *c = e->p.out;
    if (e->nrt) {
        cg_print_variant_table(e->p.a, c, &e->sizes, e->variants, e->nvariants, true);
        cg_print_sizes_functions(e->p.a, c, &e->sizes);
        cg_print_variant_of(e->p.a, c, &e->sizes, e->variants, e->nvariants);
        fprintf(c, "\nsize_t %s_workspace_size(%s)\n{\n", o->name, dims_decl(e));
        for (int i = 0; i < e->nrt; i++)
            fprintf(c, "    (void)%s;\n", cg_var_name(&e->p, e->rt[i]));
        fprintf(c, "    return %s;\n}\n", f->ws_macro);
    } else {
        fprintf(c, "\nsize_t %s_workspace_size(void)\n{\n    return %s;\n}\n", o->name, f->ws_macro);
    }
    if (f->prepack.n) {
        if (!begin_function(e, f->prepack_name, &f->prepack, false, NULL))
            return false;
        emit_views(e, &f->prepack, fn->prepack);
        emit_stmt(e, fn->prepack);
        end_function(e, c);
    }

    /* the kernel steps in order, each temp at its planned offset: one
       function, or one per variant and the dispatcher */
    const char *core = f->prepack.n ? f->packed_ws_name : f->ws_name;
    if (e->nvariants == 1) {
        if (!emit_core(e, core, f, fn, c))
            return false;
    } else {
        const char **names = arena_alloc(e->p.a, sizeof *names * (size_t)e->nvariants);
        for (int i = 0; i < e->nvariants; i++) {
            names[i] = cg_claim(&e->p, arena_printf(e->p.a, "%s_v%d", core, i));
            use_variant(e, i);
            e->in_variant = true;
            e->variant = i;
            bool ok = emit_core(e, names[i], f, e->variants[i].fn, c);
            e->in_variant = false;
            if (!ok)
                return false;
        }
        use_variant(e, 0);
        emit_dispatch(e, core, names, f, o, c);
    }

    if (!f->prepack.n) {
        emit_with_workspace(e, o->name, f->ws_name, &f->entry, f->ws_macro);
        emit_args_entries(e, f, o->name);
        return true;
    }
    emit_with_workspace(e, f->packed_name, f->packed_ws_name, &f->kernel, f->ws_macro);
    if (o->plain) {
        /* NAME_ws: the build that reads the weights where they are */
        const char *plain = cg_claim(&e->p, arena_printf(e->p.a, "%s_plain_ws", o->name));
        if (!emit_plain(e, plain, o->plain, c))
            return false;
        fputc('\n', c);
        emit_signature(e, c, f->ws_name, &f->entry, false, true);
        fputs("\n{\n", c);
        e->p.indent = 1;
        emit_call_open(e, plain, &f->entry);
        fputs(", te_workspace_);\n}\n", c);
        emit_with_workspace(e, o->name, f->ws_name, &f->entry, f->ws_macro);
        emit_args_entries(e, f, o->name);
        return true;
    }
    /* NAME_ws: packs into buffers of its own, then runs NAME_packed_ws */
    fputc('\n', c);
    emit_signature(e, c, f->ws_name, &f->entry, false, true);
    fputs("\n{\n", c);
    e->p.indent = 1;
    if (f->entry.dims)
        emit_sizes_check(e, &f->entry);
    for (int i = 0; i < fn->packed.len; i++) {
        const Tensor *t = fn->packed.items[i];
        const char *ty = storage_type(t->dtype);
        cg_line(&e->p, "%s *%s_ = te_alloc(%s * sizeof(%s));\n", ty, cg_tensor_name(&e->p, t),
                f->elems_macros[i], ty);
    }
    emit_call_open(e, f->prepack_name, &f->prepack);
    fputs(");\n", c);
    emit_call_open(e, f->packed_ws_name, &f->kernel);
    fputs(", te_workspace_);\n", c);
    for (int i = 0; i < fn->packed.len; i++)
        cg_line(&e->p, "te_free(%s_);\n", cg_tensor_name(&e->p, fn->packed.items[i]));
    fputs(f->kernel.dims ? "    return te_status;\n}\n" : "}\n", c);
    emit_with_workspace(e, o->name, f->ws_name, &f->entry, f->ws_macro);
    emit_args_entries(e, f, o->name);
    return true;
}

bool cg_emit_c(SchedState *st, const LoweredFunc *fn, const CodegenOptions *o,
               FILE *out_c, FILE *out_h)
{
    CgVariant v = { st, fn, NULL, NULL, NULL };
    return cg_emit_c_variants(&v, 1, o, out_c, out_h);
}

bool cg_emit_c_variants(const CgVariant *variants, int nvariants, const CodegenOptions *o,
                        FILE *out_c, FILE *out_h)
{
    SchedState *st = variants[0].st;
    const LoweredFunc *fn = variants[0].fn;
    Arena *a = st->arena;
    Emitter e = { .p = { .a = a, .out = out_c, .d = &cg_dialect_c, .int_type = "int64_t",
                         .element = load_element },
                  .st = st, .base = o->name, .variants = variants, .nvariants = nvariants, .profile = o->profile };
    Graph *g = st->g;
    for (int d = 0; d < g->ndims; d++) /* every dim's variable, before the names' table */
        if (g->dims[d].runtime && g->dims[d].declared)
            sch_dim_var(st, d);
    e.p.var_names = arena_alloc(a, sizeof *e.p.var_names * (size_t)(st->next_var + 1));
    e.p.nvars = st->next_var + 1;
    cg_claim(&e.p, o->name);
    Funcs f = { .packed = &fn->packed };
    int cap = g->ninputs + g->noutputs + fn->packed.len;
    f.entry = params_new(a, cap);
    f.kernel = params_new(a, cap);
    f.prepack = params_new(a, cap);
    /* the run-time dims, named first so that they keep their names */
    e.rt = arena_alloc(a, sizeof *e.rt * (size_t)(g->ndims + 1));
    for (int d = 0; d < g->ndims; d++)
        if (g->dims[d].runtime && g->dims[d].declared)
            e.rt[e.nrt++] = sch_dim_var(st, d);
    e.rt_names = arena_alloc(a, sizeof *e.rt_names * (size_t)(e.nrt + 1));
    for (int i = 0; i < e.nrt; i++)
        e.rt_names[i] = cg_var_name(&e.p, e.rt[i]);
    if (e.nrt) {
        f.entry.dims = f.kernel.dims = true;
        e.sizes_ok = cg_claim(&e.p, arena_printf(a, "%s_check_sizes", o->name));
        e.erange = cg_upper(a, arena_printf(a, "%s_ERANGE", o->name));
        cg_claim(&e.p, arena_printf(a, "%s_strerror", o->name));
        cg_claim(&e.p, arena_printf(a, "%s_variant", o->name));
        cg_claim(&e.p, arena_printf(a, "%s_variants", o->name));
        int *dims = arena_alloc(a, sizeof *dims * (size_t)e.nrt);
        for (int i = 0; i < e.nrt; i++)
            dims[i] = e.rt[i]->size_dim - 1;
        e.sizes = (CgSizes){ g, o->name, e.nrt, dims, e.rt_names, e.sizes_ok, e.erange, "" };
    }
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
    f.ws_name = cg_claim(&e.p, arena_printf(a, "%s_ws", o->name));
    cg_claim(&e.p, arena_printf(a, "%s_workspace_size", o->name));
    cg_claim(&e.p, arena_printf(a, "%s_prepacked_bytes", o->name));
    cg_claim(&e.p, arena_printf(a, "%s_prepack_args", o->name));
    cg_claim(&e.p, arena_printf(a, "%s_packed_args", o->name));
    if (o->weights) { /* the weights' API (weights.c); NAME_run's parameter */
        static const char *const api[] = { "weights", "load_weights", "embedded_weights",
                                            "free_weights", "weight", "run" };
        for (size_t i = 0; i < sizeof api / sizeof api[0]; i++)
            cg_claim(&e.p, arena_printf(a, "%s_%s", o->name, api[i]));
        cg_claim(&e.p, "weights");
    }
    if (f.prepack.n) {
        f.packed_name = cg_claim(&e.p, arena_printf(a, "%s_packed", o->name));
        f.packed_ws_name = cg_claim(&e.p, arena_printf(a, "%s_packed_ws", o->name));
        f.prepack_name = cg_claim(&e.p, arena_printf(a, "%s_prepack", o->name));
    }
    /* parameters first, so that they keep their names */
    for (int i = 0; i < cap; i++)
        cg_tensor_name(&e.p, i < f.entry.n ? f.entry.t[i] : fn->packed.items[i - f.entry.n]);
    for (int i = 0; i < cap; i++) {
        const Tensor *t = i < f.entry.n ? f.entry.t[i] : fn->packed.items[i - f.entry.n];
        cg_claim(&e.p, arena_printf(a, "%s_", cg_tensor_name(&e.p, t)));
    }
    for (int i = 0; i < fn->temps.len; i++)
        cg_tensor_name(&e.p, fn->temps.items[i]);
    f.ws_macro = cg_upper(a, arena_printf(a, "%s_WORKSPACE_BYTES", o->name));
    f.elems_macros = arena_alloc(a, sizeof *f.elems_macros * (size_t)(fn->packed.len + 1));
    for (int i = 0; i < fn->packed.len; i++)
        f.elems_macros[i] = cg_upper(a, arena_printf(a, "%s_%s_ELEMS", o->name,
                                                  cg_tensor_name(&e.p, fn->packed.items[i])));

    e.plans = arena_alloc(a, sizeof *e.plans * (size_t)nvariants);
    for (int i = 0; i < nvariants; i++) {
        if (!cg_plan_workspace(a, variants[i].st, variants[i].fn, &e.plans[i]))
            return false;
        if (e.plans[i].bytes > e.ws_bytes)
            e.ws_bytes = e.plans[i].bytes;
    }
    if (o->plain) {
        if (!cg_plan_workspace(a, o->plain->st, o->plain->fn, &e.plain_plan))
            return false;
        if (e.plain_plan.bytes > e.ws_bytes)
            e.ws_bytes = e.plain_plan.bytes;
    }
    e.plan = e.plans[0];
    emit_header(&e, o, &f, out_h);

    FILE *c = out_c;
    fprintf(c, "/* %s.c — generated by texc %s from %s.\n", o->name, TE_VERSION, o->source_path);
    fprintf(c, " * target: %s (C11 + OpenMP)\n", target_name(o->target));
    if (nvariants == 1) {
        cg_print_schedule_comment(c, st, o);
        if (o->plain) {
            fprintf(c, " * %s and %s_ws, which read the weights as given (not packed):\n", o->name, o->name);
            CodegenOptions po = *o;
            po.schedule_from = o->plain->from;
            cg_print_schedule_comment(c, o->plain->st, &po);
        }
    } else {
        for (int i = 0; i < nvariants; i++) {
            fprintf(c, " * variant %d, %s:\n", i, sch_bucket_str(a, g, variants[i].bucket));
            CodegenOptions vo = *o;
            vo.schedule_from = variants[i].from;
            cg_print_schedule_comment(c, variants[i].st, &vo);
        }
    }
    fputs(" * Do not edit: regenerate with texc.\n */\n", c);
    fputs("#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)\n"
          "#define _POSIX_C_SOURCE 200809L /* threads, signal masks, sysconf (parallel loops) */\n"
          "#endif\n", c);
    if (o->header)
        fprintf(c, "#include \"%s\"\n\n", o->header);
    else
        fprintf(c, "#include \"%s.h\"\n\n", o->name);
    if (o->weights && !o->weights->embed) /* the weights' loader */
        fputs("#include <errno.h>\n#include <stdarg.h>\n#include <stdio.h>\n", c);
    fputs("#include <math.h>\n#include <stdbool.h>\n#include <stdint.h>\n#include <stdlib.h>\n"
          "#include <string.h>\n\n", c);
    /* the functions first, to print only the helpers they use */
    char *body = NULL;
    size_t len = 0;
    FILE *functions = open_memstream(&body, &len);
    if (!functions)
        te_internal_error(__FILE__, __LINE__, "out of memory");
    e.p.out = functions;
    bool ok = emit_functions(&e, fn, o, &f);
    fclose(functions);
    if (ok) {
        int nafter;
        const CgHelper *after = c_after_all(e.p.a, &nafter);
        cg_print_helpers(&e.p, c, c_before, (int)(sizeof c_before / sizeof c_before[0]), after,
                         nafter, body);
        if (e.profile)
            emit_profile_head(c);
        fwrite(body, 1, len, c);
        if (e.profile)
            emit_profile_tail(&e, o, c);
        if (o->weights)
            ok = cg_emit_weights_c(a, g, o->weights, o->name, buffer_names(&e), e.rt_names, e.nrt, c);
    }
    free(body);
    return ok && !ferror(out_c) && !ferror(out_h);
}

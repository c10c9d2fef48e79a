/* sema.c — semantic analysis: from the AST to a checked Graph.
 *
 * requires: a Program from fe_parse.
 * guarantees: the invariants listed at the top of lang/texc.h, or exactly
 * one error diagnostic (the first found) and NULL.
 *
 * The work, in order:
 *   1. one namespace for dims, lets, inputs and stages: redefinitions;
 *   2. dims, evaluated in order as int64 expressions (with -D overrides);
 *   3. inputs: dtypes and shapes; element and byte counts must fit int64;
 *   4. stages, resolved on demand in a depth-first walk from each stage in
 *      declaration order, which gives the dependency order and finds
 *      cycles; each body's names are resolved, dtypes inferred, extents of
 *      index variables inferred from the dimensions they index directly,
 *      and constant index offsets checked against the bounds (over the
 *      ranges of run-time dims with size expressions: an error where they
 *      fail at some size, a Graph.checks entry where that is undecided);
 *   5. outputs; unused inputs (a warning); the schedules are collected
 *      (sched/check.c checks them after the optimizer: a schedule may name
 *      a fused kernel's loops by any stage merged into it).
 *
 * Constants without a type of their own ("untyped": literals, dims, lets
 * made of them) take the type their context needs, like Go's untyped
 * constants: in x[i] * (1/2) with x f32, the division is an f32 division.
 * An untyped float cannot become i32 or bool.  With no context at all an
 * untyped constant is f32 if it involves a float, else i32.
 */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "frontend/frontend.h"

typedef enum SymKind { SYM_DIM, SYM_LET, SYM_INPUT, SYM_STAGE } SymKind;
static const char *const sym_kind_names[] = { "dim", "let", "input", "stage" };

typedef enum StageState { ST_TODO, ST_ACTIVE, ST_DONE } StageState;

typedef struct Symbol {
    const char *name;
    SymKind kind;
    const Node *node; /* its definition */
    Dim *dim;         /* SYM_DIM */
    Tensor *tensor;   /* SYM_INPUT, SYM_STAGE */
    StageState state; /* SYM_STAGE */
    /* SYM_LET: the resolved value, cloned at every use */
    Expr *let_value;
    int let_size;  /* nodes in let_value */
    int let_depth; /* levels of let_value below its root */
    bool let_float;
    bool let_done;
} Symbol;

/* Whether an expression still lacks a dtype, and if so of which kind. */
typedef enum Untyped { TYPED, UNTYPED_INT, UNTYPED_FLOAT } Untyped;

typedef struct Value {
    Expr *e;
    Untyped u;
} Value;

/* Index variables in scope: the stage's spatial ones, then the axes of
 * every enclosing reduction. */
typedef struct Scope {
    IterVar **vars;
    int nvars;
    const Node **defs; /* where each was introduced */
    struct Scope *outer;
} Scope;

typedef struct Sema {
    Arena *arena;
    const Source *src;
    Graph *g;
    Symbol *syms;
    int nsyms;
    int *by_name;      /* open-addressed: 1 + index into syms, or 0 */
    size_t by_name_cap; /* a power of two, more than twice nsyms */
    PtrVec order;      /* tensors in dependency order */
    PtrVec active;     /* stages being resolved, for cycle messages */
    int nvars;
    int depth;        /* levels of convert() active: the depth of the node */
    int64_t expanded; /* nodes added by expanding lets, FE_MAX_EXPANDED at most */
    PtrVec checks;    /* RtCheck *: what the ranges could not decide */
    bool failed;
} Sema;

#define FAIL(s, sp, ...)                            \
    do {                                            \
        diag_error((s)->src, (sp), __VA_ARGS__);    \
        (s)->failed = true;                         \
    } while (0)

static Value convert(Sema *s, const Node *n, Scope *scope);
static bool resolve_stage(Sema *s, Symbol *sym, Span use);

/* NAME's slot in s->by_name: where its symbol is, or the empty slot
 * where it would go.  Hashed, so that a program of many stages resolves
 * its names in linear time. */
static size_t name_slot(const Sema *s, const char *name)
{
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3u;
    size_t i = (size_t)h & (s->by_name_cap - 1);
    while (s->by_name[i] && strcmp(s->syms[s->by_name[i] - 1].name, name) != 0)
        i = (i + 1) & (s->by_name_cap - 1);
    return i;
}

static Symbol *lookup(Sema *s, const char *name)
{
    int k = s->by_name_cap ? s->by_name[name_slot(s, name)] : 0;
    return k ? &s->syms[k - 1] : NULL;
}

/* ------------------------------------------------------------------ */
/* Integer constant expressions: dims, shapes, ranges.                 */

/* The value of an integer constant expression of numbers and dims.  Over
 * run-time dims it is a set: every value it may take as they range over
 * theirs lies in LO..HI (interval arithmetic: sound but not always tight,
 * M - M is -4095..4095 for M in 1..4096).  MAX is its value when every
 * declared range is at its maximum, the instance the graph is built at
 * (lang/texc.h, Dim), and HINT its value at the hints.  A static value
 * has all four equal and RUNTIME false.  A run-time value also has its
 * SIZE, an expression over the declared run-time dims (lang/size.c);
 * size_normalize simplifies it and narrows LO..HI by it. */
typedef struct IntRange {
    int64_t lo, hi, max, hint;
    bool runtime;
    const SizeExpr *size; /* RUNTIME: the value over the declared dims */
} IntRange;

static IntRange int_const(int64_t v)
{
    return (IntRange){ v, v, v, v, false, NULL };
}

/* R's size expression: a number when R is static. */
static const SizeExpr *range_size(Sema *s, IntRange r)
{
    return r.runtime ? r.size : te_size_num(s->arena, r.max);
}

/* Puts R's size expression in normal form.  Where it is a number (M - M
 * + 1), R is static; else the interval of the normal form, which knows
 * that M - M is 0, narrows R's (both are sound, so their intersection
 * is). */
static void size_normalize(Sema *s, IntRange *r)
{
    if (!r->runtime)
        return;
    r->size = te_size_simplify(s->arena, r->size);
    int64_t v, lo, hi;
    if (te_size_is_num(r->size, &v)) {
        *r = int_const(v);
        return;
    }
    if (te_size_range(r->size, s->g->dims, &lo, &hi)) {
        if (lo > r->lo)
            r->lo = lo;
        if (hi < r->hi)
            r->hi = hi;
    }
}

/* The size kind of the arithmetic operator OP (+ - * / %). */
static SizeKind size_kind_of(Op op)
{
    static const SizeKind kinds[] = { [OP_ADD] = SZ_ADD, [OP_SUB] = SZ_SUB, [OP_MUL] = SZ_MUL,
                                      [OP_DIV] = SZ_DIV, [OP_MOD] = SZ_MOD };
    TE_ASSERT(op < (int)(sizeof kinds / sizeof kinds[0]) && kinds[op] != SZ_NUM);
    return kinds[op];
}

/* A op B for + - * / % (B != 0 for / and %); false if it overflows int64. */
static bool int_arith(Op op, int64_t a, int64_t b, int64_t *out)
{
    return te_size_arith(size_kind_of(op), a, b, out);
}

/* A op B over ranges.  + and - are monotonic in each operand, and so are
 * * and / (truncating, B of one sign) once the other is fixed: the
 * extremes lie at the corners.  % is bounded by the divisor's magnitude
 * and keeps the dividend's sign.  False if a value may overflow. */
static bool range_arith(Op op, IntRange a, IntRange b, IntRange *out)
{
    if (!int_arith(op, a.max, b.max, &out->max) || !int_arith(op, a.hint, b.hint, &out->hint))
        return false;
    out->runtime = a.runtime || b.runtime;
    if (!out->runtime) {
        out->lo = out->hi = out->max;
        return true;
    }
    if (op == OP_MOD) {
        /* |a % b| < |b| <= m; a % b has a's sign (or is 0) */
        int64_t m = b.lo == INT64_MIN ? INT64_MAX : b.lo < 0 ? -b.lo : b.lo;
        int64_t mh = b.hi < 0 ? -b.hi : b.hi;
        m = (mh > m ? mh : m) - 1;
        out->lo = a.lo >= 0 ? 0 : a.lo > -m ? a.lo : -m;
        out->hi = a.hi <= 0 ? 0 : a.hi < m ? a.hi : m;
        return true;
    }
    int64_t c[4];
    if (!int_arith(op, a.lo, b.lo, &c[0]) || !int_arith(op, a.lo, b.hi, &c[1]) ||
        !int_arith(op, a.hi, b.lo, &c[2]) || !int_arith(op, a.hi, b.hi, &c[3]))
        return false;
    out->lo = out->hi = c[0];
    for (int i = 1; i < 4; i++) {
        if (c[i] < out->lo)
            out->lo = c[i];
        if (c[i] > out->hi)
            out->hi = c[i];
    }
    return true;
}

static bool eval_range(Sema *s, const Node *n, IntRange *out)
{
    IntRange a, b;
    switch (n->kind) {
    case N_NUM:
        if (!n->is_int) {
            FAIL(s, n->span, "expected an integer, got %g", n->num);
            return false;
        }
        *out = int_const((int64_t)n->num);
        return true;
    case N_NAME: {
        Symbol *sym = lookup(s, n->name);
        if (!sym) {
            FAIL(s, n->span, "unknown name '%s'", n->name);
            return false;
        }
        if (sym->kind != SYM_DIM) {
            FAIL(s, n->span, "'%s' is %s %s, not a dim", n->name,
                 sym->kind == SYM_INPUT ? "an" : "a", sym_kind_names[sym->kind]);
            return false;
        }
        if (!sym->dim) {
            FAIL(s, n->span, "dim '%s' is used before it is defined: a dim may use only the dims before it",
                 n->name);
            diag_note(s->src, sym->node->name_span, "'%s' is defined here", n->name);
            return false;
        }
        const Dim *d = sym->dim;
        *out = (IntRange){ d->lo, d->hi, d->value, d->hint, d->runtime, d->size };
        return true;
    }
    case N_UNARY:
        if (n->op != OP_NEG || !eval_range(s, n->kids[0], &a))
            break;
        if (a.lo == INT64_MIN) {
            FAIL(s, n->span, "integer overflow: the value does not fit in int64");
            return false;
        }
        *out = (IntRange){ -a.hi, -a.lo, -a.max, -a.hint, a.runtime,
                           a.runtime ? te_size_op(s->arena, SZ_SUB, te_size_num(s->arena, 0), a.size)
                                     : NULL };
        return true;
    case N_BINARY: {
        if (!eval_range(s, n->kids[0], &a) || !eval_range(s, n->kids[1], &b))
            return false;
        switch (n->op) {
        case OP_ADD:
        case OP_SUB:
        case OP_MUL:
            break;
        case OP_DIV:
        case OP_MOD:
            if (!b.runtime && b.max == 0) {
                FAIL(s, n->kids[1]->span, "division by zero: this divisor is 0");
                return false;
            }
            if (b.lo <= 0 && b.hi >= 0) {
                FAIL(s, n->kids[1]->span,
                     "division by zero: this divisor may be 0 (over the ranges of its run-time dims it lies in %lld..%lld)",
                     (long long)b.lo, (long long)b.hi);
                return false;
            }
            break;
        default:
            FAIL(s, n->span, "'%s' is not allowed in an integer constant expression",
                 op_text(n->op));
            return false;
        }
        if (!range_arith(n->op, a, b, out)) {
            FAIL(s, n->span, "integer overflow: the value does not fit in int64");
            return false;
        }
        out->size = out->runtime
                        ? te_size_op(s->arena, size_kind_of(n->op), range_size(s, a), range_size(s, b))
                        : NULL;
        return true;
    }
    case N_CALL:
        if ((strcmp(n->name, "min") == 0 || strcmp(n->name, "max") == 0) &&
            n->nkids == 2) {
            if (!eval_range(s, n->kids[0], &a) || !eval_range(s, n->kids[1], &b))
                return false;
            bool is_min = strcmp(n->name, "min") == 0;
#define PICK(x, y) ((is_min == ((x) < (y))) ? (x) : (y))
            *out = (IntRange){ PICK(a.lo, b.lo), PICK(a.hi, b.hi), PICK(a.max, b.max),
                               PICK(a.hint, b.hint), a.runtime || b.runtime, NULL };
#undef PICK
            if (out->runtime)
                out->size = te_size_op(s->arena, is_min ? SZ_MIN : SZ_MAX, range_size(s, a),
                                       range_size(s, b));
            return true;
        }
        FAIL(s, n->span, "%s(...) is not allowed in an integer constant expression: only min(a, b) and max(a, b) are",
             n->name);
        return false;
    default:
        break;
    }
    if (!s->failed)
        FAIL(s, n->span, "expected an integer constant expression of numbers and dims");
    return false;
}

/* An integer constant expression's value in the graph: at every declared
 * range's maximum when it depends on run-time dims. */
static bool eval_int(Sema *s, const Node *n, int64_t *out)
{
    IntRange r;
    if (!eval_range(s, n, &r))
        return false;
    *out = r.max;
    return true;
}

/* The first name in N that is a run-time dim, or NULL. */
static const Node *runtime_name(Sema *s, const Node *n)
{
    if (n->kind == N_NAME) {
        Symbol *sym = lookup(s, n->name);
        return sym && sym->dim && sym->dim->runtime ? n : NULL;
    }
    for (int i = 0; i < n->nkids; i++) {
        const Node *r = runtime_name(s, n->kids[i]);
        if (r)
            return r;
    }
    return NULL;
}

/* A compile-time constant (the bounds of a run-time dim's range): an
 * integer constant expression of numbers and static dims. */
static bool eval_static(Sema *s, const Node *n, const char *what, int64_t *out)
{
    IntRange r;
    if (!eval_range(s, n, &r))
        return false;
    if (r.runtime) {
        const Node *name = runtime_name(s, n);
        FAIL(s, name ? name->span : n->span, "'%s' is a run-time dim: %s must be a compile-time constant",
             name ? name->name : "?", what);
        return false;
    }
    *out = r.max;
    return true;
}

/* ------------------------------------------------------------------ */
/* Checks over the ranges of run-time dims.                            */

/* What the ranges say of a condition V >= 0. */
typedef enum Verdict {
    V_HOLDS,     /* at every size */
    V_FAILS,     /* at some size, for certain (the interval is exact) */
    V_UNDECIDED, /* intervals cannot tell: a run-time check */
} Verdict;

/* Decides V >= 0 (V in normal form) over the dims' ranges: the symbolic
 * simplification has already cancelled what it can, then intervals. */
static Verdict decide_nonneg(Sema *s, const SizeExpr *v)
{
    int64_t lo, hi;
    if (!te_size_range(v, s->g->dims, &lo, &hi))
        return V_UNDECIDED;
    if (lo >= 0)
        return V_HOLDS;
    return hi < 0 || te_size_exact(v) ? V_FAILS : V_UNDECIDED;
}

/* The sizes where V >= 0 fails, V exact and failing somewhere: "for
 * every M in 1..4096" (everywhere), "for M in 1..99" (one dim: V is
 * linear in it, so the failures are one end of its range), else the
 * corner where V is least, "at M = 1, N = 4096".  When V is a number (the
 * dims cancelled), "for every" names the dims of CONTEXT (may be NULL). */
static const char *where_fails(Sema *s, const SizeExpr *v, const SizeExpr *context)
{
    const Dim *dims = s->g->dims;
    int used[16], nused = 0;
    for (int i = 0; i < s->g->ndims && nused < 16; i++)
        if (te_size_uses(v, i) || (te_size_is_num(v, NULL) && context && te_size_uses(context, i)))
            used[nused++] = i;
    if (nused == 0)
        return "at every size";
    int64_t lo, hi;
    TE_ASSERT(te_size_range(v, dims, &lo, &hi));
    const char *text = "";
    if (hi < 0 || te_size_is_num(v, NULL)) {
        for (int k = 0; k < nused; k++)
            text = arena_printf(s->arena, "%s%s%s in %lld..%lld", text, k ? " and " : "for every ",
                                dims[used[k]].name, (long long)dims[used[k]].lo,
                                (long long)dims[used[k]].hi);
        return text;
    }
    int64_t *values = arena_alloc(s->arena, sizeof *values * (size_t)(s->g->ndims + 1));
    int64_t at;
    if (nused == 1) {
        const Dim *d = &dims[used[0]];
        values[used[0]] = d->lo;
        TE_ASSERT(te_size_eval(v, values, &at));
        bool prefix = at < 0;
        int64_t pass = prefix ? d->hi : d->lo, fail = prefix ? d->lo : d->hi;
        while (pass - fail > 1 || fail - pass > 1) { /* fail < 0 <= pass, V monotone */
            values[used[0]] = fail + (pass - fail) / 2;
            TE_ASSERT(te_size_eval(v, values, &at));
            *(at < 0 ? &fail : &pass) = values[used[0]];
        }
        return arena_printf(s->arena, "for %s in %lld..%lld", d->name,
                            (long long)(prefix ? d->lo : fail), (long long)(prefix ? fail : d->hi));
    }
    int64_t best = 0;
    unsigned best_corner = 0;
    unsigned ncorners = nused < 12 ? 1u << nused : 1u << 12;
    for (unsigned c = 0; c < ncorners; c++) {
        for (int k = 0; k < nused; k++)
            values[used[k]] = c >> k & 1 ? dims[used[k]].hi : dims[used[k]].lo;
        if (te_size_eval(v, values, &at) && (c == 0 || at < best)) {
            best = at;
            best_corner = c;
        }
    }
    for (int k = 0; k < nused; k++)
        text = arena_printf(s->arena, "%s%s%s = %lld", text, k ? ", " : "at ", dims[used[k]].name,
                            (long long)(best_corner >> k & 1 ? dims[used[k]].hi : dims[used[k]].lo));
    return text;
}

/* Records that V >= 0 must hold at run time, checked at SP. */
static void add_check(Sema *s, const SizeExpr *v, Span sp, const char *message)
{
    RtCheck *c = arena_alloc(s->arena, sizeof *c);
    *c = (RtCheck){ v, sp, message };
    vec_push(s->arena, &s->checks, c);
}

/* A size: positive, over the whole range when it depends on run-time
 * dims (a run-time check where the ranges cannot tell). */
static bool eval_size(Sema *s, const Node *n, const char *what, IntRange *out)
{
    if (!eval_range(s, n, out))
        return false;
    size_normalize(s, out);
    if (!out->runtime && out->max <= 0) {
        FAIL(s, n->span, "%s must be positive, got %lld", what, (long long)out->max);
        return false;
    }
    if (out->runtime && out->lo <= 0) {
        const SizeExpr *v = te_size_simplify(
            s->arena, te_size_op(s->arena, SZ_SUB, out->size, te_size_num(s->arena, 1)));
        Verdict verdict = decide_nonneg(s, v);
        if (verdict == V_UNDECIDED) {
            add_check(s, v, n->span, arena_printf(s->arena, "%s must be positive", what));
            return true;
        }
        FAIL(s, n->span, "%s must be positive, but over the ranges of its run-time dims it may be as small as %lld",
             what, (long long)out->lo);
        return false;
    }
    return true;
}

/* An extent: a positive integer constant expression.  Over run-time dims
 * *OUT is its static bound (the hi of its range) and *SIZE its
 * expression; else *SIZE is NULL. */
static bool eval_extent(Sema *s, const Node *n, const char *what, int64_t *out,
                        const SizeExpr **size)
{
    IntRange r;
    if (!eval_size(s, n, what, &r))
        return false;
    *out = r.runtime ? r.hi : r.max;
    *size = r.runtime ? r.size : NULL;
    return true;
}

/* "512" or "M + 2": an extent as messages print it. */
static const char *extent_text(Sema *s, int64_t bound, const SizeExpr *size)
{
    return size ? te_size_str(s->arena, size) : arena_printf(s->arena, "%lld", (long long)bound);
}

/* Checks that a tensor's element count and byte size fit in int64. */
static bool check_size(Sema *s, Tensor *t, Span sp)
{
    int64_t elems = 1, bytes;
    for (int d = 0; d < t->rank; d++) {
        if (__builtin_mul_overflow(elems, t->shape[d], &elems)) {
            FAIL(s, sp, "'%s' has more elements than fit in 64 bits", t->name);
            return false;
        }
    }
    if (__builtin_mul_overflow(elems, (int64_t)dtype_bytes(t->dtype), &bytes)) {
        FAIL(s, sp, "'%s' is larger than 2^63 bytes", t->name);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Dtypes.                                                             */

static Expr *clone(Sema *s, const Expr *e, Span sp)
{
    Expr *c = arena_alloc(s->arena, sizeof *c);
    *c = *e;
    c->span = sp;
    c->args = arena_alloc(s->arena, sizeof *c->args * (e->nargs + 1));
    for (int i = 0; i < e->nargs; i++)
        c->args[i] = clone(s, e->args[i], sp);
    return c;
}

/* Gives an untyped expression the dtype T, all the way down. */
static void set_dtype(Expr *e, DType t)
{
    if (e->dtype != DT_NONE)
        return;
    /* Comparisons and logical operators are always typed (bool), so an
     * untyped node's operands are untyped numbers of the same type. */
    e->dtype = t;
    for (int i = 0; i < e->nargs; i++)
        set_dtype(e->args[i], t);
}

static DType default_dtype(Untyped u)
{
    return u == UNTYPED_FLOAT ? DT_F32 : DT_I32;
}

/* Gives V the dtype T if it is untyped; checks that it can take it. */
static bool coerce(Sema *s, Value *v, DType t, Span sp)
{
    if (v->u == TYPED)
        return true;
    if (v->u == UNTYPED_FLOAT && !dtype_is_float(t)) {
        FAIL(s, sp, "cannot use a floating-point constant as %s", dtype_name(t));
        return false;
    }
    if (t == DT_BOOL) {
        FAIL(s, sp, "cannot use a number as bool: compare it, e.g. x != 0");
        return false;
    }
    if (dtype_is_narrow_int(t)) {
        /* u8 and i8 compute nothing, so only a number can become one */
        if (v->e->kind != EX_CONST) {
            FAIL(s, sp, "cannot compute in %s: write one number, or widen the %s operand, e.g. i32(...)",
                 dtype_name(t), dtype_name(t));
            return false;
        }
        if (dtype_round(t, v->e->value) != v->e->value) {
            FAIL(s, sp, "%s cannot hold %g", dtype_name(t), v->e->value);
            return false;
        }
    }
    set_dtype(v->e, t);
    v->u = TYPED;
    return true;
}

/* Makes A and B the same dtype; returns it, or DT_NONE with both untyped. */
static bool unify(Sema *s, Value *a, Value *b, Span sp, DType *out)
{
    if (a->u != TYPED && b->u != TYPED) {
        *out = DT_NONE;
        return true;
    }
    if (a->u != TYPED && !coerce(s, a, b->e->dtype, a->e->span))
        return false;
    if (b->u != TYPED && !coerce(s, b, a->e->dtype, b->e->span))
        return false;
    if (a->e->dtype != b->e->dtype) {
        FAIL(s, sp, "mismatched dtypes %s and %s: convert one with a cast such as %s(...)",
             dtype_name(a->e->dtype), dtype_name(b->e->dtype),
             dtype_name(a->e->dtype));
        return false;
    }
    *out = a->e->dtype;
    return true;
}

static Untyped join_untyped(Untyped a, Untyped b)
{
    return a == UNTYPED_FLOAT || b == UNTYPED_FLOAT ? UNTYPED_FLOAT : UNTYPED_INT;
}

/* ------------------------------------------------------------------ */
/* Expressions.                                                        */

static IterVar *find_var(Scope *scope, const char *name)
{
    for (; scope; scope = scope->outer)
        for (int i = 0; i < scope->nvars; i++)
            if (strcmp(scope->vars[i]->name, name) == 0)
                return scope->vars[i];
    return NULL;
}

static IterVar *new_var(Sema *s, const Node *def, bool reduce)
{
    IterVar *v = arena_alloc(s->arena, sizeof *v);
    v->name = def->name;
    v->span = def->name_span;
    v->reduce = reduce;
    v->id = s->nvars++;
    return v;
}

/* An index variable must not hide another name: it would make the program
 * ambiguous to a reader. */
static bool check_var_name(Sema *s, const Node *def, Scope *scope)
{
    IterVar *other = find_var(scope, def->name);
    if (other) {
        FAIL(s, def->name_span, "index variable '%s' is already defined", def->name);
        diag_note(s->src, other->span, "'%s' was defined here", def->name);
        return false;
    }
    Symbol *sym = lookup(s, def->name);
    if (sym) {
        FAIL(s, def->name_span, "index variable '%s' hides the %s of the same name",
             def->name, sym_kind_names[sym->kind]);
        return false;
    }
    return true;
}

static Value fail_value(void)
{
    return (Value){ NULL, TYPED };
}

static Value convert_name(Sema *s, const Node *n, Scope *scope)
{
    IterVar *v = find_var(scope, n->name);
    if (v)
        return (Value){ ex_var(s->arena, n->span, v), TYPED };
    Symbol *sym = lookup(s, n->name);
    if (!sym) {
        FAIL(s, n->span, "unknown name '%s'", n->name);
        return fail_value();
    }
    switch (sym->kind) {
    case SYM_DIM:
        if (!sym->dim) {
            FAIL(s, n->span, "dim '%s' is used before it is defined", n->name);
            return fail_value();
        }
        if (sym->dim->runtime) {
            /* Its value differs from size to size, and an Expr holds one
             * number: until the IR has dims in expressions, -D it. */
            FAIL(s, n->span,
                 "run-time dim '%s' is used as a value: this texc takes run-time dims only in "
                 "shapes and ranges; %s",
                 n->name, sym->dim->declared
                              ? arena_printf(s->arena, "give it a size with -D %s=VALUE", n->name)
                              : "give the dims it is computed from sizes with -D");
            return fail_value();
        }
        return (Value){ ex_const(s->arena, n->span, DT_NONE, (double)sym->dim->value),
                        UNTYPED_INT };
    case SYM_LET:
        if (!sym->let_done) {
            FAIL(s, n->span, "let '%s' is used before it is defined", n->name);
            return fail_value();
        }
        /* Every use is a copy: bound what copies can build. */
        if (s->depth + sym->let_depth > FE_MAX_DEPTH) {
            FAIL(s, n->span, "expression nested too deeply: more than %d levels with let '%s' expanded",
                 FE_MAX_DEPTH, n->name);
            return fail_value();
        }
        s->expanded += sym->let_size;
        if (s->expanded > FE_MAX_EXPANDED) {
            FAIL(s, n->span, "the uses of lets expand to more than %d operations: compute '%s' in a rank-0 stage instead",
                 FE_MAX_EXPANDED, n->name);
            return fail_value();
        }
        return (Value){ clone(s, sym->let_value, n->span),
                        sym->let_value->dtype != DT_NONE ? TYPED
                        : sym->let_float ? UNTYPED_FLOAT : UNTYPED_INT };
    case SYM_INPUT:
    case SYM_STAGE:
        if (sym->kind == SYM_STAGE && !resolve_stage(s, sym, n->span))
            return fail_value();
        if (sym->tensor->rank != 0) {
            FAIL(s, n->span, "'%s' has rank %d: index it, as in %s[...]", n->name,
                 sym->tensor->rank, n->name);
            return fail_value();
        }
        sym->tensor->uses++;
        return (Value){ ex_load(s->arena, n->span, sym->tensor, NULL, 0), TYPED };
    }
    TE_UNREACHABLE();
}

/* Does E read a tensor?  An index that does is a gather (below). */
static const Expr *find_load(const Expr *e)
{
    if (e->kind == EX_LOAD)
        return e;
    for (int i = 0; i < e->nargs; i++) {
        const Expr *l = find_load(e->args[i]);
        if (l)
            return l;
    }
    return NULL;
}

/* A gather: index IX of dimension D of T reads a tensor (LOAD, one of
 * its reads), so its value is data, known only at run time.  It is
 * clamped into the dimension, min(max(IX, 0), size - 1) (TVM's take,
 * mode "clip"), so that no data makes a kernel read outside T; the clamp
 * is plain IR, so the evaluator, the passes and the backends compute it
 * as they compute any index, and bounds analysis finds it in range.  A
 * dimension whose size is known only at run time has no constant to
 * clamp to: this texc refuses it. */
static Expr *clamp_gather(Sema *s, const Tensor *t, int d, Expr *ix, const Expr *load)
{
    if (t->shape_size[d]) {
        FAIL(s, ix->span,
             "index %d of '%s' reads a tensor ('%s'), but that dimension's size is known only at run "
             "time: this texc clamps a gathered index only into a dimension of constant size",
             d, t->name, load->tensor->name);
        return NULL;
    }
    Expr *lo[2] = { ix, ex_const(s->arena, ix->span, DT_I32, 0) };
    Expr *hi[2] = { ex_op(s->arena, ix->span, OP_MAX, DT_I32, lo, 2),
                    ex_const(s->arena, ix->span, DT_I32, (double)(t->shape[d] - 1)) };
    return ex_op(s->arena, ix->span, OP_MIN, DT_I32, hi, 2);
}

/* access = NAME "[" index ("," index)* "]"
 * An index is an i32 expression; one that reads a tensor is a gather,
 * whose tensor holds integers: i32, or u8 and i8, widened to i32 when
 * they are the whole index. */
static Value convert_access(Sema *s, const Node *n, Scope *scope)
{
    Symbol *sym = lookup(s, n->name);
    if (!sym && find_var(scope, n->name)) {
        FAIL(s, n->name_span, "'%s' is an index variable, not a tensor", n->name);
        return fail_value();
    }
    if (!sym) {
        FAIL(s, n->name_span, "unknown tensor '%s'", n->name);
        return fail_value();
    }
    if (sym->kind == SYM_DIM || sym->kind == SYM_LET) {
        FAIL(s, n->name_span, "'%s' is a %s, not a tensor", n->name,
             sym_kind_names[sym->kind]);
        return fail_value();
    }
    if (sym->kind == SYM_STAGE && !resolve_stage(s, sym, n->span))
        return fail_value();
    Tensor *t = sym->tensor;
    if (n->nkids != t->rank) {
        FAIL(s, n->span, "'%s' has rank %d but is indexed with %d %s", n->name,
             t->rank, n->nkids, n->nkids == 1 ? "index" : "indices");
        return fail_value();
    }
    Expr **idx = arena_alloc(s->arena, sizeof *idx * (n->nkids + 1));
    for (int d = 0; d < n->nkids; d++) {
        Value v = convert(s, n->kids[d], scope);
        if (!v.e || !coerce(s, &v, DT_I32, n->kids[d]->span))
            return fail_value();
        const Expr *l = find_load(v.e);
        if (l && dtype_is_narrow_int(v.e->dtype))
            v.e = ex_op(s->arena, v.e->span, OP_CAST, DT_I32, &v.e, 1);
        if (v.e->dtype != DT_I32) {
            FAIL(s, n->kids[d]->span, "index %d of '%s' must be i32, got %s%s",
                 d, n->name, dtype_name(v.e->dtype),
                 l ? ": a gathered index is an integer (i32, u8 or i8); convert it with i32(...)" : "");
            return fail_value();
        }
        idx[d] = l ? clamp_gather(s, t, d, v.e, l) : v.e;
        if (!idx[d])
            return fail_value();
    }
    t->uses++;
    return (Value){ ex_load(s->arena, n->span, t, idx, n->nkids), TYPED };
}

/* Operand rules per operator. */
typedef enum OperandRule {
    RULE_NUMERIC, /* i32 or float (u8 and i8 compute nothing) */
    RULE_FLOAT,   /* float only: untyped ints become floats */
    RULE_INT,     /* i32 only */
    RULE_BOOL,    /* bool only */
    RULE_ANY,     /* comparisons: any, same on both sides */
} OperandRule;

static OperandRule op_rule(Op op)
{
    switch (op) {
    case OP_NOT: case OP_AND: case OP_OR:
        return RULE_BOOL;
    case OP_MOD:
        return RULE_INT;
    case OP_EXP: case OP_LOG: case OP_SQRT: case OP_RSQRT: case OP_TANH:
    case OP_ERF: case OP_GELU: case OP_SIGMOID: case OP_POW:
        return RULE_FLOAT;
    case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE:
        return RULE_ANY;
    default:
        return RULE_NUMERIC;
    }
}

/* Checks operand V of OP against RULE; an error points at the operand. */
static bool check_rule(Sema *s, Op op, OperandRule rule, Value *v)
{
    if (v->u != TYPED) {
        if (rule == RULE_BOOL) {
            FAIL(s, v->e->span, "'%s' needs a bool operand, got a number", op_text(op));
            return false;
        }
        if (rule == RULE_INT && v->u == UNTYPED_FLOAT) {
            FAIL(s, v->e->span, "'%s' needs integer operands, got a floating-point constant",
                 op_text(op));
            return false;
        }
        if (rule == RULE_FLOAT)
            v->u = UNTYPED_FLOAT;
        return true;
    }
    DType t = v->e->dtype;
    const char *need = NULL;
    switch (rule) {
    case RULE_NUMERIC: if (t == DT_BOOL) need = "numeric"; break;
    case RULE_FLOAT: if (!dtype_is_float(t)) need = "floating-point"; break;
    case RULE_INT: if (t != DT_I32) need = "i32"; break;
    case RULE_BOOL: if (t != DT_BOOL) need = "bool"; break;
    case RULE_ANY: break;
    }
    if (!need && rule != RULE_ANY && dtype_is_narrow_int(t)) {
        FAIL(s, v->e->span, "'%s' does not compute in %s: widen the operand first, e.g. i32(...) or f32(...)",
             op_text(op), dtype_name(t));
        return false;
    }
    if (need) {
        FAIL(s, v->e->span, "'%s' needs %s %s, got %s%s", op_text(op), need,
             op_is_call(op) ? "arguments" : "operands", dtype_name(t),
             (rule == RULE_FLOAT && (t == DT_I32 || dtype_is_narrow_int(t))) ||
                     (rule == RULE_NUMERIC && t == DT_BOOL)
                 ? ": cast it, e.g. f32(...)"
             : rule == RULE_BOOL ? ": compare it, e.g. x != 0" : "");
        return false;
    }
    return true;
}

/* Builds OP(ARGS), spanning SP, with dtype inference per op_rule.  A
 * mismatch between the operands is reported AT: a binary operator. */
static Value make_op(Sema *s, Span sp, Span at, Op op, Value *args, int n)
{
    OperandRule rule = op_rule(op);
    for (int i = 0; i < n; i++)
        if (!check_rule(s, op, rule, &args[i]))
            return fail_value();
    Untyped u = TYPED;
    DType t = args[0].e->dtype;
    if (n == 1) {
        u = args[0].u;
    } else {
        if (!unify(s, &args[0], &args[1], at, &t))
            return fail_value();
        if (t == DT_NONE)
            u = join_untyped(args[0].u, args[1].u);
    }
    if (rule == RULE_FLOAT && u != TYPED)
        u = UNTYPED_FLOAT;
    Expr *ops[2] = { args[0].e, n > 1 ? args[1].e : NULL };
    DType result = t;
    if (rule == RULE_ANY || rule == RULE_BOOL) {
        if (u != TYPED) {
            /* 1 < 2: a comparison of untyped constants compares them in
             * their default type. */
            for (int i = 0; i < n; i++)
                set_dtype(ops[i], default_dtype(u));
        }
        result = DT_BOOL;
        u = TYPED;
    }
    return (Value){ ex_op(s->arena, sp, op, u == TYPED ? result : DT_NONE, ops, n), u };
}

static bool check_arity(Sema *s, const Node *n, int want)
{
    if (n->nkids == want)
        return true;
    FAIL(s, n->span, "%s takes %d argument%s, got %d", n->name, want,
         want == 1 ? "" : "s", n->nkids);
    return false;
}

static bool is_reducer(const char *name, Reducer *out)
{
    *out = reducer_lookup(name);
    return *out != RED_COUNT;
}

static Value convert_call(Sema *s, const Node *n, Scope *scope)
{
    for (int i = 0; i < n->nkids; i++)
        if (n->kids[i]->kind == N_AXIS) {
            FAIL(s, n->kids[i]->span,
                 "'in' declares a reduction axis, but %s(...) has no body after it",
                 n->name);
            return fail_value();
        }
    Reducer red;
    if (is_reducer(n->name, &red) && red != RED_MAX && red != RED_MIN) {
        FAIL(s, n->span, "%s(...) is a reduction: write %s(AXIS) BODY, as in %s(k) x[i, k]",
             n->name, n->name, n->name);
        return fail_value();
    }
    DType cast = dtype_lookup(n->name, strlen(n->name));
    if (cast != DT_NONE) {
        if (!check_arity(s, n, 1))
            return fail_value();
        Value v = convert(s, n->kids[0], scope);
        if (!v.e)
            return fail_value();
        /* an untyped integer computes in i32 before a cast to u8 or i8,
           which compute nothing: u8(2 + 3) is 5, u8(300) saturates */
        if (v.u != TYPED && !coerce(s, &v, v.u == UNTYPED_FLOAT && !dtype_is_float(cast) ? DT_F64
                                           : dtype_is_narrow_int(cast)                     ? DT_I32
                                                                                           : cast,
                                    n->span))
            return fail_value();
        return (Value){ ex_op(s->arena, n->span, OP_CAST, cast, &v.e, 1), TYPED };
    }
    Op op = OP_COUNT;
    for (int o = 0; o < OP_COUNT; o++)
        if (op_is_call((Op)o) && o != OP_CAST && strcmp(op_text((Op)o), n->name) == 0)
            op = (Op)o;
    if (op == OP_COUNT) {
        Symbol *sym = lookup(s, n->name);
        if (sym && (sym->kind == SYM_INPUT || sym->kind == SYM_STAGE))
            FAIL(s, n->span, "'%s' is a tensor: index it with [...], not (...)", n->name);
        else
            FAIL(s, n->name_span, "unknown function '%s'", n->name);
        return fail_value();
    }
    if (!check_arity(s, n, op_arity(op)))
        return fail_value();
    Value args[3];
    if (op == OP_SELECT) {
        Value c = convert(s, n->kids[0], scope);
        if (!c.e)
            return fail_value();
        if (c.u != TYPED || c.e->dtype != DT_BOOL) {
            FAIL(s, n->kids[0]->span, "select's condition must be bool, got %s: compare it, e.g. x != 0",
                 c.u != TYPED ? "a number" : dtype_name(c.e->dtype));
            return fail_value();
        }
        args[0] = convert(s, n->kids[1], scope);
        args[1] = args[0].e ? convert(s, n->kids[2], scope) : fail_value();
        DType t;
        if (!args[1].e || !unify(s, &args[0], &args[1], n->span, &t))
            return fail_value();
        Expr *ops[3] = { c.e, args[0].e, args[1].e };
        Untyped u = t == DT_NONE ? join_untyped(args[0].u, args[1].u) : TYPED;
        return (Value){ ex_op(s->arena, n->span, OP_SELECT, t, ops, 3), u };
    }
    for (int i = 0; i < n->nkids; i++) {
        args[i] = convert(s, n->kids[i], scope);
        if (!args[i].e)
            return fail_value();
    }
    return make_op(s, n->span, n->span, op, args, n->nkids);
}

/* Records in EXTENT/SEEN the extent of V implied by every load in E that
 * indexes a dimension with exactly V; reports a disagreement. */
static bool infer_extent(Sema *s, const Expr *e, IterVar *v, int64_t *extent,
                         const Expr **seen, int *seen_dim)
{
    if (e->kind == EX_LOAD) {
        for (int d = 0; d < e->nargs; d++) {
            const Expr *ix = e->args[d];
            if (ix->kind != EX_VAR || ix->var != v)
                continue;
            int64_t ext = e->tensor->shape[d];
            const SizeExpr *size = e->tensor->shape_size[d];
            if (*seen && (ext != *extent || !te_size_same(size, v->extent_size))) {
                FAIL(s, ix->span,
                     "'%s' indexes dimension %d of '%s' (size %s) here but dimension %d of '%s' (size %s) elsewhere; give its range explicitly",
                     v->name, d, e->tensor->name, extent_text(s, ext, size), *seen_dim,
                     (*seen)->tensor->name, extent_text(s, *extent, v->extent_size));
                diag_note(s->src, (*seen)->args[*seen_dim]->span, "the other use");
                return false;
            }
            *extent = ext;
            v->extent_size = size;
            *seen = e;
            *seen_dim = d;
        }
    }
    for (int i = 0; i < e->nargs; i++)
        if (!infer_extent(s, e->args[i], v, extent, seen, seen_dim))
            return false;
    return true;
}

/* Gives V its range: explicit (DEF has "in"), or inferred from BODY. */
static bool var_range(Sema *s, IterVar *v, const Node *def, const Expr *body,
                      bool spatial)
{
    if (def->kind == N_AXIS && def->nkids > 0) {
        int64_t lo = 0, hi;
        const SizeExpr *hi_size = NULL;
        if (def->nkids == 2) {
            if (spatial) {
                FAIL(s, def->span, "a stage's index variable starts at 0: write %s in EXTENT",
                     v->name);
                return false;
            }
            IntRange r;
            if (!eval_static(s, def->kids[0],
                             arena_printf(s->arena, "the start of the range of '%s'", v->name), &lo) ||
                !eval_range(s, def->kids[1], &r))
                return false;
            size_normalize(s, &r);
            hi = r.runtime ? r.hi : r.max;
            hi_size = r.runtime ? r.size : NULL;
            if (!r.runtime && hi <= lo) {
                FAIL(s, def->span, "the range %lld..%lld of '%s' is empty: LO..HI stops before HI",
                     (long long)lo, (long long)hi, v->name);
                return false;
            }
        } else if (!eval_extent(s, def->kids[0],
                                arena_printf(s->arena, "the extent of '%s'", v->name),
                                &hi, &hi_size)) {
            return false;
        }
        v->lo = lo;
        if (hi_size) {
            /* over run-time dims: the extent HI - LO, positive at every size */
            Arena *a = s->arena;
            v->extent_size = te_size_simplify(a, te_size_op(a, SZ_SUB, hi_size, te_size_num(a, lo)));
            int64_t elo, ehi;
            if (!te_size_range(v->extent_size, s->g->dims, &elo, &ehi)) {
                FAIL(s, def->span, "the range of '%s' is too large", v->name);
                return false;
            }
            v->extent = ehi;
            const SizeExpr *pos = te_size_simplify(a, te_size_op(a, SZ_SUB, v->extent_size, te_size_num(a, 1)));
            switch (decide_nonneg(s, pos)) {
            case V_HOLDS:
                break;
            case V_FAILS:
                FAIL(s, def->span, "the range %lld..%s of '%s' is empty %s: LO..HI stops before HI",
                     (long long)lo, te_size_str(a, hi_size), v->name, where_fails(s, pos, hi_size));
                return false;
            case V_UNDECIDED:
                add_check(s, pos, def->span,
                          arena_printf(a, "the range of '%s' is empty", v->name));
                break;
            }
            return true;
        }
        if (__builtin_sub_overflow(hi, lo, &v->extent)) {
            FAIL(s, def->span, "the range of '%s' is too large", v->name);
            return false;
        }
        return true;
    }
    const Expr *seen = NULL;
    int seen_dim = 0;
    if (!infer_extent(s, body, v, &v->extent, &seen, &seen_dim))
        return false;
    if (!seen) {
        FAIL(s, def->name_span,
             "cannot infer the range of '%s': it never indexes a tensor dimension by itself; write %s in EXTENT",
             v->name, v->name);
        return false;
    }
    v->lo = 0;
    return true;
}

/* sum(k, r in 0..3) BODY */
static Value convert_reduce(Sema *s, const Node *n, Scope *scope)
{
    Reducer red;
    if (!is_reducer(n->name, &red)) {
        FAIL(s, n->name_span, "'%s' is not a reduction: expected sum, prod, max or min",
             n->name);
        return fail_value();
    }
    int naxes = n->nkids - 1;
    if (naxes == 0) {
        FAIL(s, n->span, "%s() needs at least one axis, as in %s(k)", n->name, n->name);
        return fail_value();
    }
    Scope inner = { arena_alloc(s->arena, sizeof(IterVar *) * naxes), 0,
                    arena_alloc(s->arena, sizeof(Node *) * naxes), scope };
    for (int i = 0; i < naxes; i++) {
        const Node *a = n->kids[i];
        if (a->kind != N_NAME && a->kind != N_AXIS) {
            FAIL(s, a->span, "a reduction axis is a name, optionally with a range: k, k in K or k in 0..K");
            return fail_value();
        }
        if (!check_var_name(s, a, &inner))
            return fail_value();
        inner.vars[inner.nvars] = new_var(s, a, true);
        inner.defs[inner.nvars++] = a;
    }
    Value body = convert(s, n->kids[naxes], &inner);
    if (!body.e)
        return fail_value();
    for (int i = 0; i < naxes; i++)
        if (!var_range(s, inner.vars[i], inner.defs[i], body.e, false))
            return fail_value();
    if (body.u == TYPED && body.e->dtype == DT_BOOL) {
        FAIL(s, n->span, "cannot %s bool values: cast them, e.g. i32(...)", n->name);
        return fail_value();
    }
    if (body.u == TYPED && dtype_is_narrow_int(body.e->dtype)) {
        /* the accumulator is the body's dtype (language.md 4.2) */
        FAIL(s, n->span, "cannot %s %s values: widen them to the accumulator's dtype, e.g. %s(k) i32(x[i, k]) * i32(w[k, j])",
             n->name, dtype_name(body.e->dtype), n->name);
        return fail_value();
    }
    Expr *e = ex_reduce(s->arena, n->span, red, inner.vars, naxes, body.e);
    e->dtype = body.u == TYPED ? body.e->dtype : DT_NONE;
    return (Value){ e, body.u };
}

static Value convert_node(Sema *s, const Node *n, Scope *scope)
{
    switch (n->kind) {
    case N_NUM:
        return (Value){ ex_const(s->arena, n->span, DT_NONE, n->num),
                        n->is_int ? UNTYPED_INT : UNTYPED_FLOAT };
    case N_NAME:
        return convert_name(s, n, scope);
    case N_ACCESS:
        return convert_access(s, n, scope);
    case N_UNARY: {
        Value v = convert(s, n->kids[0], scope);
        if (!v.e)
            return v;
        return make_op(s, n->span, n->span, n->op, &v, 1);
    }
    case N_BINARY: {
        Value v[2];
        v[0] = convert(s, n->kids[0], scope);
        if (!v[0].e)
            return v[0];
        v[1] = convert(s, n->kids[1], scope);
        if (!v[1].e)
            return v[1];
        return make_op(s, n->span, n->name_span, n->op, v, 2);
    }
    case N_CALL:
        return convert_call(s, n, scope);
    case N_REDUCE:
        return convert_reduce(s, n, scope);
    case N_AXIS:
        FAIL(s, n->span, "'in' is only allowed in reduction axes and stage indices");
        return fail_value();
    default:
        TE_UNREACHABLE();
    }
}

static Value convert(Sema *s, const Node *n, Scope *scope)
{
    s->depth++;
    Value v = convert_node(s, n, scope);
    s->depth--;
    return v;
}

/* ------------------------------------------------------------------ */
/* Bounds of constant index offsets.                                   */

typedef struct Interval {
    double lo, hi;
    bool known;
} Interval;

/* A value read from a tensor (a gather's index, or a cast of one): every
 * value of its integer dtype, whatever the data; so the clamp around a
 * gather bounds it. */
static Interval data_range(const Expr *e)
{
    switch (e->dtype) {
    case DT_I32: return (Interval){ -2147483648.0, 2147483647.0, true };
    case DT_U8: return (Interval){ 0, 255, true };
    case DT_I8: return (Interval){ -128, 127, true };
    case DT_BOOL: return (Interval){ 0, 1, true };
    default: return (Interval){ 0, 0, false };
    }
}

static Interval interval(const Expr *e)
{
    Interval r = { 0, 0, false };
    if (e->kind == EX_CONST)
        return (Interval){ e->value, e->value, true };
    if (e->kind == EX_VAR)
        return (Interval){ (double)e->var->lo,
                           (double)(e->var->lo + e->var->extent - 1), true };
    if (e->kind == EX_LOAD || (e->kind == EX_OP && e->op == OP_CAST && find_load(e)))
        return data_range(e);
    if (e->kind != EX_OP || e->nargs == 0)
        return r;
    Interval a = interval(e->args[0]);
    Interval b = e->nargs > 1 ? interval(e->args[1]) : a;
    if (!a.known || !b.known)
        return r;
    switch (e->op) {
    case OP_NEG: return (Interval){ -a.hi, -a.lo, true };
    case OP_ADD: return (Interval){ a.lo + b.lo, a.hi + b.hi, true };
    case OP_SUB: return (Interval){ a.lo - b.hi, a.hi - b.lo, true };
    case OP_MUL: {
        double p[4] = { a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi };
        r = (Interval){ p[0], p[0], true };
        for (int i = 1; i < 4; i++) {
            r.lo = fmin(r.lo, p[i]);
            r.hi = fmax(r.hi, p[i]);
        }
        return r;
    }
    case OP_DIV:
        if (b.lo > 0 && a.lo >= 0)
            return (Interval){ trunc(a.lo / b.hi), trunc(a.hi / b.lo), true };
        return r;
    case OP_MOD:
        if (b.lo > 0 && a.lo >= 0)
            return (Interval){ 0, fmin(a.hi, b.hi - 1), true };
        return r;
    case OP_MIN: return (Interval){ fmin(a.lo, b.lo), fmin(a.hi, b.hi), true };
    case OP_MAX: return (Interval){ fmax(a.lo, b.lo), fmax(a.hi, b.hi), true };
    default:
        return r;
    }
}

/* Does E use an index variable whose extent depends on run-time dims? */
static bool has_runtime_var(const Expr *e)
{
    if (e->kind == EX_VAR)
        return e->var->extent_size != NULL;
    for (int i = 0; i < e->nargs; i++)
        if (has_runtime_var(e->args[i]))
            return true;
    return false;
}

/* interval() over run-time dims: the least and greatest value of an index
 * as size expressions, so that i + 2 with i in 0..M reaches M + 1, which
 * the simplifier can then compare with an extent exactly. */
typedef struct SymInterval {
    const SizeExpr *lo, *hi; /* in normal form */
    bool known;
} SymInterval;

static bool known_at_least(Sema *s, const SizeExpr *e, int64_t least)
{
    int64_t lo, hi;
    return te_size_range(e, s->g->dims, &lo, &hi) && lo >= least;
}

static SymInterval sym_interval(Sema *s, const Expr *e)
{
    Arena *a = s->arena;
    SymInterval r = { NULL, NULL, false };
#define NUM(v) te_size_num(a, (v))
#define OP(k, x, y) te_size_op(a, (k), (x), (y))
    if (e->kind == EX_CONST) {
        if (e->value != (double)(int64_t)e->value)
            return r;
        return (SymInterval){ NUM((int64_t)e->value), NUM((int64_t)e->value), true };
    }
    if (e->kind == EX_VAR) {
        const IterVar *v = e->var;
        const SizeExpr *hi = v->extent_size ? OP(SZ_ADD, v->extent_size, NUM(v->lo - 1))
                                            : NUM(v->lo + v->extent - 1);
        return (SymInterval){ NUM(v->lo), te_size_simplify(a, hi), true };
    }
    if (e->kind == EX_LOAD || (e->kind == EX_OP && e->op == OP_CAST && find_load(e))) {
        Interval d = data_range(e);
        if (!d.known)
            return r;
        return (SymInterval){ NUM((int64_t)d.lo), NUM((int64_t)d.hi), true };
    }
    if (e->kind != EX_OP || e->nargs == 0 || e->nargs > 2)
        return r;
    SymInterval x = sym_interval(s, e->args[0]);
    SymInterval y = e->nargs > 1 ? sym_interval(s, e->args[1]) : x;
    if (!x.known || !y.known)
        return r;
    int64_t c;
    switch (e->op) {
    case OP_NEG: r = (SymInterval){ OP(SZ_SUB, NUM(0), x.hi), OP(SZ_SUB, NUM(0), x.lo), true }; break;
    case OP_ADD: r = (SymInterval){ OP(SZ_ADD, x.lo, y.lo), OP(SZ_ADD, x.hi, y.hi), true }; break;
    case OP_SUB: r = (SymInterval){ OP(SZ_SUB, x.lo, y.hi), OP(SZ_SUB, x.hi, y.lo), true }; break;
    case OP_MUL:
        if (te_size_same(y.lo, y.hi) && te_size_is_num(y.lo, &c)) {
            r = c >= 0 ? (SymInterval){ OP(SZ_MUL, x.lo, y.lo), OP(SZ_MUL, x.hi, y.lo), true }
                       : (SymInterval){ OP(SZ_MUL, x.hi, y.lo), OP(SZ_MUL, x.lo, y.lo), true };
        } else if (te_size_same(x.lo, x.hi) && te_size_is_num(x.lo, &c)) {
            r = c >= 0 ? (SymInterval){ OP(SZ_MUL, x.lo, y.lo), OP(SZ_MUL, x.lo, y.hi), true }
                       : (SymInterval){ OP(SZ_MUL, x.lo, y.hi), OP(SZ_MUL, x.lo, y.lo), true };
        } else {
            const SizeExpr *p[4] = { OP(SZ_MUL, x.lo, y.lo), OP(SZ_MUL, x.lo, y.hi),
                                     OP(SZ_MUL, x.hi, y.lo), OP(SZ_MUL, x.hi, y.hi) };
            r = (SymInterval){ OP(SZ_MIN, OP(SZ_MIN, p[0], p[1]), OP(SZ_MIN, p[2], p[3])),
                               OP(SZ_MAX, OP(SZ_MAX, p[0], p[1]), OP(SZ_MAX, p[2], p[3])), true };
        }
        break;
    case OP_DIV:
        if (!known_at_least(s, y.lo, 1) || !known_at_least(s, x.lo, 0))
            return r;
        r = (SymInterval){ OP(SZ_DIV, x.lo, y.hi), OP(SZ_DIV, x.hi, y.lo), true };
        break;
    case OP_MOD:
        if (!known_at_least(s, y.lo, 1) || !known_at_least(s, x.lo, 0))
            return r;
        r = (SymInterval){ NUM(0), OP(SZ_MIN, x.hi, OP(SZ_SUB, y.hi, NUM(1))), true };
        break;
    case OP_MIN: r = (SymInterval){ OP(SZ_MIN, x.lo, y.lo), OP(SZ_MIN, x.hi, y.hi), true }; break;
    case OP_MAX: r = (SymInterval){ OP(SZ_MAX, x.lo, y.lo), OP(SZ_MAX, x.hi, y.hi), true }; break;
    default: return r;
    }
#undef NUM
#undef OP
    r.lo = te_size_simplify(a, r.lo);
    r.hi = te_size_simplify(a, r.hi);
    return r;
}

/* Index D of the load E against its extent, where either depends on
 * run-time dims: in bounds at every size, out of bounds at some (an
 * error that says where), or a run-time check. */
static bool check_bound_runtime(Sema *s, const Expr *e, int d)
{
    Arena *a = s->arena;
    const Expr *ix = e->args[d];
    SymInterval iv = sym_interval(s, ix);
    if (!iv.known)
        return true; /* as interval(): what it cannot bound, it does not check */
    const Tensor *t = e->tensor;
    const SizeExpr *size = t->shape_size[d] ? t->shape_size[d] : te_size_num(a, t->shape[d]);
    const char *text = arena_strndup(a, s->src->text + ix->span.begin, ix->span.end - ix->span.begin);
    const char *size_text = te_size_str(a, size);

    switch (decide_nonneg(s, iv.lo)) {
    case V_HOLDS:
        break;
    case V_FAILS:
        FAIL(s, ix->span, "index %s of '%s' can be %s, below 0 (%s); guard the read with select(...) to pad",
             text, t->name, te_size_str(a, iv.lo), where_fails(s, iv.lo, iv.hi));
        return false;
    case V_UNDECIDED:
        add_check(s, iv.lo, ix->span,
                  arena_printf(a, "index %s of '%s' is below 0", text, t->name));
        break;
    }

    /* in bounds: SIZE - 1 - HI >= 0 */
    const SizeExpr *slack = te_size_simplify(
        a, te_size_op(a, SZ_SUB, te_size_op(a, SZ_SUB, size, te_size_num(a, 1)), iv.hi));
    switch (decide_nonneg(s, slack)) {
    case V_HOLDS:
        break;
    case V_FAILS: {
        /* i, i + C, i - C: say where the index peaks */
        const Expr *var = ix->kind == EX_VAR ? ix
                          : ix->kind == EX_OP && (ix->op == OP_ADD || ix->op == OP_SUB) &&
                                    ix->args[0]->kind == EX_VAR && ix->args[1]->kind == EX_CONST
                              ? ix->args[0] : NULL;
        const char *when = "";
        if (var)
            when = arena_printf(a, " when %s = %s", var->var->name,
                                te_size_str(a, sym_interval(s, var).hi));
        FAIL(s, ix->span,
             "index %s of '%s' reaches %s%s, past its extent %s (%s); guard the read with select(...) to pad",
             text, t->name, te_size_str(a, iv.hi), when, size_text,
             where_fails(s, slack, te_size_op(a, SZ_ADD, size, iv.hi)));
        return false;
    }
    case V_UNDECIDED:
        add_check(s, slack, ix->span,
                  arena_printf(a, "index %s of '%s' reaches past its extent %s", text, t->name,
                               size_text));
        break;
    }
    return true;
}

/* Checks every load of E outside a select branch against its bounds. */
static bool check_bounds(Sema *s, const Expr *e, bool guarded)
{
    if (e->kind == EX_LOAD && !guarded) {
        for (int d = 0; d < e->nargs; d++) {
            if (e->tensor->shape_size[d] || has_runtime_var(e->args[d])) {
                if (!check_bound_runtime(s, e, d))
                    return false;
                continue;
            }
            Interval iv = interval(e->args[d]);
            int64_t size = e->tensor->shape[d];
            if (!iv.known)
                continue;
            if (iv.lo < 0) {
                FAIL(s, e->args[d]->span,
                     "index %d of '%s' can be %.0f, below 0; guard the read with select(...) to pad",
                     d, e->tensor->name, iv.lo);
                return false;
            }
            if (iv.hi >= (double)size) {
                FAIL(s, e->args[d]->span,
                     "index %d of '%s' can reach %.0f, past its size %lld; guard the read with select(...) to pad",
                     d, e->tensor->name, iv.hi, (long long)size);
                return false;
            }
        }
    }
    for (int i = 0; i < e->nargs; i++) {
        bool g = guarded ||
                 (e->kind == EX_OP && e->op == OP_SELECT && i > 0) ||
                 (e->kind == EX_OP && (e->op == OP_AND || e->op == OP_OR) && i > 0);
        if (!check_bounds(s, e->args[i], g))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Stages.                                                             */

/* Resolves the stage SYM, read at USE (its own name when it is resolved in
 * declaration order): a read of a stage being resolved closes a cycle. */
static bool resolve_stage(Sema *s, Symbol *sym, Span use)
{
    if (sym->state == ST_DONE)
        return !s->failed;
    const Node *n = sym->node;
    if (sym->state == ST_ACTIVE) {
        /* The cycle is the tail of the active list from SYM on. */
        char path[512] = "";
        size_t len = 0;
        bool on = false;
        for (int i = 0; i < s->active.len && len < sizeof path; i++) {
            Symbol *a = s->active.items[i];
            on = on || a == sym;
            if (on)
                len += snprintf(path + len, sizeof path - len, "%s -> ", a->name);
        }
        if (len < sizeof path)
            snprintf(path + len, sizeof path - len, "%s", sym->name);
        FAIL(s, use, "stage '%s' depends on itself: %s", sym->name, path);
        return false;
    }
    sym->state = ST_ACTIVE;
    vec_push(s->arena, &s->active, sym);

    Tensor *t = sym->tensor;
    int rank = n->nkids - 1;
    if (rank > TE_MAX_RANK) {
        FAIL(s, n->kids[TE_MAX_RANK]->span, "'%s' has rank %d; the limit is %d", sym->name,
             rank, TE_MAX_RANK);
        return false;
    }
    Scope scope = { arena_alloc(s->arena, sizeof(IterVar *) * (rank + 1)), 0,
                    arena_alloc(s->arena, sizeof(Node *) * (rank + 1)), NULL };
    for (int d = 0; d < rank; d++) {
        if (!check_var_name(s, n->kids[d], &scope))
            return false;
        scope.vars[d] = new_var(s, n->kids[d], false);
        scope.defs[scope.nvars++] = n->kids[d];
    }
    Value body = convert(s, n->kids[rank], &scope);
    if (!body.e)
        return false;
    if (body.u != TYPED)
        set_dtype(body.e, default_dtype(body.u));
    for (int d = 0; d < rank; d++) {
        if (!var_range(s, scope.vars[d], n->kids[d], body.e, true))
            return false;
        t->shape[d] = scope.vars[d]->extent;
        t->shape_size[d] = scope.vars[d]->extent_size;
    }
    t->rank = rank;
    t->vars = scope.vars;
    t->body = body.e;
    t->dtype = body.e->dtype;
    if (!check_size(s, t, n->name_span) || !check_bounds(s, body.e, false))
        return false;

    s->active.len--;
    sym->state = ST_DONE;
    vec_push(s->arena, &s->order, t);
    return true;
}

static bool define_symbols(Sema *s, const Program *prog)
{
    s->syms = arena_alloc(s->arena, sizeof *s->syms * (prog->nitems + 1));
    for (s->by_name_cap = 16; s->by_name_cap < 2 * (size_t)prog->nitems + 2;)
        s->by_name_cap *= 2;
    s->by_name = arena_alloc(s->arena, sizeof *s->by_name * s->by_name_cap);
    for (int i = 0; i < prog->nitems; i++) {
        const Node *n = prog->items[i];
        SymKind kind;
        switch (n->kind) {
        case N_DIM: kind = SYM_DIM; break;
        case N_LET: kind = SYM_LET; break;
        case N_INPUT: kind = SYM_INPUT; break;
        case N_STAGE: kind = SYM_STAGE; break;
        default: continue;
        }
        Symbol *old = lookup(s, n->name);
        if (old) {
            FAIL(s, n->name_span, "'%s' is already defined", n->name);
            diag_note(s->src, old->node->name_span, "the %s '%s' is defined here",
                      sym_kind_names[old->kind], n->name);
            return false;
        }
        s->by_name[name_slot(s, n->name)] = s->nsyms + 1;
        s->syms[s->nsyms++] = (Symbol){ .name = n->name, .kind = kind, .node = n };
    }
    return true;
}

/* Does N name a dim (or anything else)? */
static bool names_something(const Node *n)
{
    if (n->kind == N_NAME)
        return true;
    for (int i = 0; i < n->nkids; i++)
        if (names_something(n->kids[i]))
            return true;
    return false;
}

/* dim NAME in LO..HI [= HINT]: a run-time dim, or a static one under -D. */
static bool define_range_dim(Sema *s, Dim *d, const Node *n, const DimOverride *ov)
{
    const Node *lo_node = n->kids[0], *hi_node = n->kids[1];
    const Node *hint_node = n->nkids > 2 ? n->kids[2] : NULL;
    d->range_span = span_join(lo_node->span, hi_node->span);
    if (hint_node && names_something(hint_node)) {
        FAIL(s, d->range_span,
             "dim '%s' is given by an expression of dims, which decides its range: drop 'in %.*s' "
             "(after a range, '=' gives a hint: a number)",
             d->name, (int)(d->range_span.end - d->range_span.begin),
             s->src->text + d->range_span.begin);
        return false;
    }
    int64_t lo, hi, hint;
    const char *what = arena_printf(s->arena, "the range of '%s'", d->name);
    if (!eval_static(s, lo_node, what, &lo) || !eval_static(s, hi_node, what, &hi))
        return false;
    if (lo > hi) {
        FAIL(s, d->range_span,
             "the range %lld..%lld of '%s' is empty: a dim's LO..HI includes both ends, so LO may not exceed HI",
             (long long)lo, (long long)hi, d->name);
        return false;
    }
    if (lo < 1) {
        FAIL(s, lo_node->span, "the range of '%s' starts at %lld: a size is at least 1", d->name,
             (long long)lo);
        return false;
    }
    hint = hi; /* the rule: without a hint, the range's maximum */
    if (hint_node) {
        if (!eval_int(s, hint_node, &hint))
            return false;
        if (hint < lo || hint > hi) {
            FAIL(s, hint_node->span, "the hint %lld of '%s' is outside its range %lld..%lld",
                 (long long)hint, d->name, (long long)lo, (long long)hi);
            return false;
        }
    }
    if (ov) {
        /* -D specializes it: a static dim like any other */
        if (ov->value < lo || ov->value > hi) {
            FAIL(s, d->range_span, "-D %s=%lld: outside the range %lld..%lld of '%s'", d->name,
                 (long long)ov->value, (long long)lo, (long long)hi, d->name);
            return false;
        }
        d->value = d->lo = d->hi = d->hint = ov->value;
        d->overridden = true;
        return true;
    }
    d->runtime = d->declared = true;
    d->lo = lo;
    d->hi = hi;
    d->hint = hint;
    d->value = hi;
    d->size = te_size_dim(s->arena, (int)(d - s->g->dims), d->name);
    return true;
}

/* The dims are defined in place in g->dims, which the checks over ranges
 * read as they are defined (a size expression names a dim by its index
 * there). */
static bool define_dims(Sema *s, DimOverride *ov, int nov)
{
    int ndims = 0;
    for (int i = 0; i < s->nsyms; i++)
        ndims += s->syms[i].kind == SYM_DIM;
    s->g->dims = arena_alloc(s->arena, sizeof(Dim) * (size_t)(ndims + 1));
    for (int i = 0; i < s->nsyms; i++) {
        Symbol *sym = &s->syms[i];
        if (sym->kind != SYM_DIM)
            continue;
        Dim *d = &s->g->dims[s->g->ndims];
        d->name = sym->name;
        d->span = sym->node->name_span;
        const Node *val = sym->node->kids[0];
        DimOverride *given = NULL;
        for (int k = 0; k < nov; k++)
            if (strcmp(ov[k].name, sym->name) == 0) {
                given = &ov[k];
                ov[k].used = true;
            }
        if (sym->node->is_range) {
            if (!define_range_dim(s, d, sym->node, given))
                return false;
        } else if (given) {
            d->value = given->value;
            d->overridden = true;
            if (d->value <= 0) {
                FAIL(s, sym->node->name_span, "-D %s=%lld: a dim must be positive",
                     sym->name, (long long)d->value);
                return false;
            }
            d->lo = d->hi = d->hint = d->value;
        } else {
            /* computed from run-time dims: a run-time dim whose range is
               its expression's over theirs */
            IntRange r;
            if (!eval_size(s, val, arena_printf(s->arena, "dim '%s'", sym->name), &r))
                return false;
            *d = (Dim){ .name = d->name, .span = d->span, .value = r.max, .runtime = r.runtime,
                        .lo = r.lo, .hi = r.hi, .hint = r.hint, .size = r.size };
        }
        sym->dim = d;
        s->g->ndims++;
    }
    for (int k = 0; k < nov; k++)
        if (!ov[k].used) {
            /* The command line has no place in the file: no line, no caret. */
            Symbol *sym = lookup(s, ov[k].name);
            const char *why;
            if (sym) {
                why = arena_printf(s->arena, "'%s' is %s %s, not a dim", ov[k].name,
                                   sym->kind == SYM_INPUT ? "an" : "a",
                                   sym_kind_names[sym->kind]);
            } else {
                why = arena_printf(s->arena, "the program has no dim called '%s'",
                                   ov[k].name);
                for (int i = 0; i < s->g->ndims; i++)
                    why = arena_printf(s->arena, "%s%s%s", why, i ? ", " : "; its dims are ",
                                       s->g->dims[i].name);
            }
            fprintf(diag_stream ? diag_stream : stderr, "%s: error: -D %s: %s\n",
                    s->src->path, ov[k].name, why);
            diag_errors++;
            s->failed = true;
            return false;
        }
    return true;
}

/* Adds E's nodes to *SIZE and raises *DEPTH to its deepest level below
 * the root, E being LEVEL levels down. */
static void expr_measure(const Expr *e, int level, int *size, int *depth)
{
    ++*size;
    if (level > *depth)
        *depth = level;
    for (int i = 0; i < e->nargs; i++)
        expr_measure(e->args[i], level + 1, size, depth);
}

static bool define_lets(Sema *s)
{
    for (int i = 0; i < s->nsyms; i++) {
        Symbol *sym = &s->syms[i];
        if (sym->kind != SYM_LET)
            continue;
        Value v = convert(s, sym->node->kids[0], NULL);
        if (!v.e)
            return false;
        const Expr *l = find_load(v.e);
        if (l) {
            FAIL(s, l->span, "a let is a constant: it cannot read the tensor '%s'",
                 l->tensor->name);
            return false;
        }
        sym->let_value = v.e;
        expr_measure(v.e, 0, &sym->let_size, &sym->let_depth);
        sym->let_float = v.u == UNTYPED_FLOAT;
        sym->let_done = true;
    }
    return true;
}

static bool define_inputs(Sema *s)
{
    PtrVec inputs = {0};
    for (int i = 0; i < s->nsyms; i++) {
        Symbol *sym = &s->syms[i];
        const Node *n = sym->node;
        Tensor *t = arena_alloc(s->arena, sizeof *t);
        t->name = sym->name;
        t->span = n->name_span;
        sym->tensor = t;
        if (sym->kind == SYM_STAGE) {
            t->kind = TK_STAGE;
            continue;
        }
        if (sym->kind != SYM_INPUT) {
            sym->tensor = NULL;
            continue;
        }
        t->kind = TK_INPUT;
        t->is_const = n->is_const;
        t->dtype = dtype_lookup(n->dtype_name, strlen(n->dtype_name));
        if (t->dtype == DT_NONE) {
            FAIL(s, n->dtype_span, "unknown dtype '%s': expected f32, f64, f16, bf16, i32, u8, i8 or bool",
                 n->dtype_name);
            return false;
        }
        if (n->nkids > TE_MAX_RANK) {
            FAIL(s, n->kids[TE_MAX_RANK]->span, "'%s' has rank %d; the limit is %d", t->name,
                 n->nkids, TE_MAX_RANK);
            return false;
        }
        t->rank = n->nkids;
        for (int d = 0; d < n->nkids; d++)
            if (!eval_extent(s, n->kids[d],
                             arena_printf(s->arena, "dimension %d of '%s'", d, t->name),
                             &t->shape[d], &t->shape_size[d]))
                return false;
        if (!check_size(s, t, n->name_span))
            return false;
        vec_push(s->arena, &inputs, t);
        vec_push(s->arena, &s->order, t);
    }
    s->g->inputs = (Tensor **)inputs.items;
    s->g->ninputs = inputs.len;
    return true;
}

static bool define_outputs(Sema *s, const Program *prog)
{
    PtrVec outs = {0};
    Span last = { (uint32_t)s->src->len, (uint32_t)s->src->len };
    for (int i = 0; i < prog->nitems; i++) {
        const Node *n = prog->items[i];
        if (n->kind != N_OUTPUT)
            continue;
        for (int k = 0; k < n->nkids; k++) {
            const Node *o = n->kids[k];
            Symbol *sym = lookup(s, o->name);
            if (!sym) {
                FAIL(s, o->span, "unknown output '%s'", o->name);
                return false;
            }
            if (sym->kind != SYM_STAGE) {
                FAIL(s, o->span, "'%s' is %s %s; only stages can be outputs", o->name,
                     sym->kind == SYM_INPUT ? "an" : "a", sym_kind_names[sym->kind]);
                return false;
            }
            if (sym->tensor->is_output) {
                FAIL(s, o->span, "'%s' is already an output", o->name);
                return false;
            }
            sym->tensor->is_output = true;
            vec_push(s->arena, &outs, sym->tensor);
        }
    }
    if (outs.len == 0) {
        FAIL(s, last, "the program has no output: add a statement such as 'output NAME;'");
        return false;
    }
    s->g->outputs = (Tensor **)outs.items;
    s->g->noutputs = outs.len;
    return true;
}

static void collect_schedules(Sema *s, const Program *prog)
{
    PtrVec v = {0};
    for (int i = 0; i < prog->nitems; i++)
        if (prog->items[i]->kind == N_SCHEDULE && prog->items[i]->sched)
            vec_push(s->arena, &v, prog->items[i]->sched);
    s->g->schedules = (struct Schedule **)v.items;
    s->g->nschedules = v.len;
}

Graph *fe_sema(Arena *a, const Source *src, const Program *prog,
               DimOverride *overrides, int noverrides)
{
    Sema s = { .arena = a, .src = src };
    s.g = arena_alloc(a, sizeof *s.g);
    s.g->src = src;
    if (!define_symbols(&s, prog) || !define_dims(&s, overrides, noverrides) ||
        !define_inputs(&s) || !define_lets(&s))
        return NULL;
    for (int i = 0; i < s.nsyms; i++)
        if (s.syms[i].kind == SYM_STAGE && !resolve_stage(&s, &s.syms[i], s.syms[i].node->name_span))
            return NULL;
    if (!define_outputs(&s, prog))
        return NULL;
    s.g->tensors = (Tensor **)s.order.items;
    s.g->ntensors = s.order.len;
    for (int i = 0; i < s.order.len; i++)
        s.g->tensors[i]->id = i;
    s.g->nvars = s.nvars;
    for (int i = 0; i < s.g->ninputs; i++) {
        Tensor *t = s.g->inputs[i];
        if (t->uses == 0)
            diag_warning(src, t->span, "input '%s' is never used", t->name);
    }
    collect_schedules(&s, prog);
    s.g->nchecks = s.checks.len;
    s.g->checks = arena_alloc(a, sizeof *s.g->checks * (size_t)(s.checks.len + 1));
    for (int i = 0; i < s.checks.len; i++)
        s.g->checks[i] = *(RtCheck *)s.checks.items[i];
    return s.failed ? NULL : s.g;
}

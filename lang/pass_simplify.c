/* pass_simplify.c — algebraic simplification.
 *
 * requires: a checked Graph (best after constfold, so that scalar factors
 * are single constants).
 * guarantees: the same outputs, exactly, except for the rules marked
 * "rounding" below, which apply only where opt_fast_math allows it for
 * the operator's dtype (f16, bf16 and f32 without -fstrict-fp: never f64,
 * never integers).  The rules (x any operand, c constants):
 *
 *   within an expression, bottom-up:
 *   1. x * 1, 1 * x, x / 1 -> x             exact (NaN and -0.0 included)
 *   2. x + (-0.0), (-0.0) + x, x - 0.0 -> x exact (IEEE: x + -0 and x - +0
 *                                           are x for every x)
 *      x + 0, 0 + x, x - 0 -> x (i32)       exact
 *      x + 0.0, 0.0 + x -> x (floats)       rounding: -0.0 + 0.0 is +0.0,
 *                                           so only under fast-math
 *   3. x - x -> 0                           exact for i32; floats only
 *                                           under fast-math (inf - inf and
 *                                           NaN - NaN are NaN, not 0)
 *   4. -(-x) -> x                           exact
 *   5. (x * c1) * c2 -> x * (c1 * c2)       rounding (reassociation; c1*c2
 *      (x * c1) / c2 -> x * (c1 / c2)      and c1/c2 are rounded to the
 *                                           dtype's arithmetic: f32 for
 *                                           f16 and bf16)
 *   6. sum(k) (... * c * ...) -> (sum(k) ...) * c
 *                                           rounding (distributivity): a
 *                                           constant factor of a sum's
 *                                           body is applied once to the
 *                                           result instead of per term
 *   across stages:
 *   7. (A^T)^T -> A: a pure copy stage that reads another pure copy stage
 *      through index permutations (t2[i, j] = t1[j, i] with
 *      t1[i, j] = a[j, i]) reads the source directly, the permutations
 *      composed (t2[i, j] = a[i, j]); t1, if nothing else reads it, goes.
 *      Exact: copies do not change values.
 *   8. the scale on a reduction's result: a stage ys[i, j] = y[i, j] * c
 *      (or c * y[i, j], or y[i, j] / c) whose operand y is a reduction
 *      stage (a reduction in its body, possibly under an epilogue already)
 *      that only ys reads, at ys's own index variables, shape and dtype,
 *      and that is no output, is merged with y: ys[i, j] = (sum(k) ...) * c, one stage in which the
 *      reduction's result is scaled once (the "alpha" of a GEMM).  ys
 *      keeps its name (it may be an output) and takes y's index variables;
 *      y becomes its anchor (Tensor.anchor: schedules written for y apply)
 *      and goes to Tensor.aliases.  Exact: the same operations on the same
 *      values; the note "scale folded into y" says it happened.  Rules 5
 *      and 6 then combine it with factors already there.
 *
 * Concatenation/split cancellation (concat(split(x)) -> x) does not apply:
 * the language has no concat or split operator, and a stage that copies
 * slices of several tensors into one is a select over index ranges, which
 * this pass does not try to see through.
 */
#include <math.h>
#include <string.h>

#include "texc.h"

typedef struct Simp {
    OptCtx *c;
    Graph *g;
    const Tensor *stage; /* the stage being simplified, for notes */
} Simp;

static bool const_is(const Expr *e, double v)
{
    return e->kind == EX_CONST && e->value == v;
}

static bool is_zero(const Expr *e, bool negative)
{
    return e->kind == EX_CONST && e->value == 0.0 && (bool)signbit(e->value) == negative;
}

static bool is_mul_by_const(const Expr *e, Expr **x, Expr **k)
{
    if (e->kind != EX_OP || e->op != OP_MUL)
        return false;
    if (e->args[1]->kind == EX_CONST) {
        *x = e->args[0];
        *k = e->args[1];
        return true;
    }
    if (e->args[0]->kind == EX_CONST) {
        *x = e->args[1];
        *k = e->args[0];
        return true;
    }
    return false;
}

static Expr *mul(Arena *a, Span sp, DType t, Expr *x, Expr *y)
{
    Expr *args[2] = { x, y };
    return ex_op(a, sp, OP_MUL, t, args, 2);
}

/* Removes constant factors from the product tree at the top of E (through
 * OP_MUL nodes only), multiplying them into *FACTOR.  Returns E without
 * them, or NULL if E is itself a constant (nothing would be left). */
static Expr *strip_factors(Arena *a, Expr *e, double *factor, int *found)
{
    if (e->kind == EX_CONST) {
        *factor = te_arith_round(e->dtype, *factor * e->value);
        ++*found;
        return NULL;
    }
    if (e->kind != EX_OP || e->op != OP_MUL)
        return e;
    Expr *l = strip_factors(a, e->args[0], factor, found);
    Expr *r = strip_factors(a, e->args[1], factor, found);
    if (!l)
        return r;
    if (!r)
        return l;
    if (l == e->args[0] && r == e->args[1])
        return e;
    return mul(a, e->span, e->dtype, l, r);
}

/* One rule at the root of E, whose operands are simplified already; E
 * itself when none applies. */
static Expr *rewrite(Simp *s, Expr *e)
{
    Arena *a = s->c->arena;
    DType t = e->dtype;
    bool fast = opt_fast_math(s->c, t);
    if (e->kind == EX_REDUCE && e->reducer == RED_SUM && fast) {
        /* rule 6 */
        double factor = 1.0;
        int found = 0;
        Expr *body = strip_factors(a, e->args[0], &factor, &found);
        if (!found || !body)
            return e;
        Expr *sum = ex_reduce(a, e->span, e->reducer, e->axes, e->naxes, body);
        vec_push(a, &s->c->stats->notes,
                 arena_printf(a, "constant factor moved out of the sum in %s", s->stage->name));
        return mul(a, e->span, t, sum, ex_const(a, e->span, t, factor));
    }
    if (e->kind != EX_OP)
        return e;
    bool is_int = t == DT_I32;
    Expr *x = e->args[0], *y = e->nargs > 1 ? e->args[1] : NULL;
    Expr *inner, *k1, *k2;
    switch (e->op) {
    case OP_MUL:
        if (const_is(y, 1.0))
            return x; /* rule 1 */
        if (const_is(x, 1.0))
            return y;
        if (fast && is_mul_by_const(e, &inner, &k2) && is_mul_by_const(inner, &inner, &k1)) {
            /* rule 5 */
            double k = te_arith_round(t, k1->value * k2->value);
            return mul(a, e->span, t, inner, ex_const(a, k2->span, t, k));
        }
        return e;
    case OP_DIV:
        if (const_is(y, 1.0))
            return x; /* rule 1 */
        if (fast && y->kind == EX_CONST && is_mul_by_const(x, &inner, &k1)) {
            /* rule 5 */
            double k = te_arith_round(t, k1->value / y->value);
            return mul(a, e->span, t, inner, ex_const(a, y->span, t, k));
        }
        return e;
    case OP_ADD:
        /* rule 2 */
        if (is_zero(y, true) || (is_zero(y, false) && (is_int || fast)))
            return x;
        if (is_zero(x, true) || (is_zero(x, false) && (is_int || fast)))
            return y;
        return e;
    case OP_SUB:
        if (is_zero(y, false))
            return x; /* rule 2 */
        if ((is_int || fast) && te_expr_equiv(x, y, NULL, NULL, 0))
            return ex_const(a, e->span, t, 0.0); /* rule 3 */
        return e;
    case OP_NEG:
        return x->kind == EX_OP && x->op == OP_NEG ? x->args[0] : e; /* rule 4 */
    default:
        return e;
    }
}

/* Simplifies E bottom-up, to a fixed point at each node. */
static Expr *simp(Simp *s, Expr *e)
{
    Expr *node = e;
    if (e->nargs) {
        Expr **args = arena_alloc(s->c->arena, sizeof *args * (size_t)e->nargs);
        bool changed = false;
        for (int i = 0; i < e->nargs; i++) {
            args[i] = simp(s, e->args[i]);
            changed |= args[i] != e->args[i];
        }
        if (changed)
            node = te_rebuild(s->c->arena, e, args);
    }
    /* A rewrite returns simplified operands or a node over them, so only
     * the root can match again. */
    for (Expr *r; (r = rewrite(s, node)) != node; node = r)
        s->c->stats->simplified++;
    return node;
}

/* ------------------------------------------------------------------ */
/* Stage rules.                                                        */

/* Is E a load at exactly VARS[0..n) in order? */
static bool load_at_point(const Expr *e, IterVar *const *vars, int n)
{
    if (e->kind != EX_LOAD || e->nargs != n)
        return false;
    for (int d = 0; d < n; d++)
        if (e->args[d]->kind != EX_VAR || e->args[d]->var != vars[d])
            return false;
    return true;
}

/* If T is a pure copy stage, T[v] = Q[v permuted] with Q of T's rank and
 * every one of T's variables used once, its body (the load of Q) and in
 * PERM[q] the dimension of T that Q's dimension q reads. */
static const Expr *permuting_copy(const Tensor *t, int *perm)
{
    if (t->kind != TK_STAGE)
        return NULL;
    const Expr *e = t->body;
    if (e->kind != EX_LOAD || e->nargs != t->rank || e->tensor->rank != t->rank)
        return NULL;
    bool used[TE_MAX_RANK] = { false };
    for (int q = 0; q < e->nargs; q++) {
        int m = -1;
        for (int d = 0; d < t->rank; d++)
            if (e->args[q]->kind == EX_VAR && e->args[q]->var == t->vars[d])
                m = d;
        if (m < 0 || used[m])
            return NULL;
        used[m] = true;
        perm[q] = m;
    }
    return e;
}

static int count_reads(const Expr *e, const Tensor *t)
{
    int n = e->kind == EX_LOAD && e->tensor == t;
    for (int i = 0; i < e->nargs; i++)
        n += count_reads(e->args[i], t);
    return n;
}

static int readers(const Graph *g, const Tensor *t)
{
    int n = 0;
    for (int i = 0; i < g->ntensors; i++)
        if (g->tensors[i]->kind == TK_STAGE)
            n += count_reads(g->tensors[i]->body, t);
    return n;
}

static bool has_reduce(const Expr *e)
{
    if (e->kind == EX_REDUCE)
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (has_reduce(e->args[i]))
            return true;
    return false;
}

/* Rule 7 on stage T. */
static bool compose_copies(Simp *s, Tensor *t)
{
    int outer[TE_MAX_RANK], inner[TE_MAX_RANK];
    const Expr *load = permuting_copy(t, outer);
    if (!load)
        return false;
    const Tensor *p = load->tensor;
    const Expr *src = permuting_copy(p, inner);
    if (!src)
        return false;
    /* t reads p at dimension q from t's variable outer[q]; p reads its
     * source at dimension r from p's variable inner[r], which is p's
     * dimension inner[r], which t fills from its variable outer[inner[r]]. */
    Expr *idx[TE_MAX_RANK];
    for (int r = 0; r < src->nargs; r++)
        idx[r] = load->args[inner[r]];
    t->body = ex_load(s->c->arena, load->span, src->tensor, idx, src->nargs);
    s->c->stats->simplified++;
    vec_push(s->c->arena, &s->c->stats->notes,
             arena_printf(s->c->arena, "%s reads %s directly: copies through %s composed", t->name,
                          src->tensor->name, p->name));
    return true;
}

/* Rule 8 on stage T. */
static bool fold_scale(Simp *s, Tensor *t)
{
    Arena *a = s->c->arena;
    Expr *e = t->body, *l, *k;
    if (e->kind != EX_OP)
        return false;
    if (e->op == OP_DIV && e->args[1]->kind == EX_CONST) {
        l = e->args[0];
        k = e->args[1];
    } else if (!is_mul_by_const(e, &l, &k)) {
        return false;
    }
    if (!load_at_point(l, t->vars, t->rank))
        return false;
    Tensor *y = l->tensor;
    if (y->kind != TK_STAGE || y->is_output || y->dtype != t->dtype || !te_same_shape(y, t) ||
        !has_reduce(y->body) || readers(s->g, y) != 1)
        return false;
    Expr *args[2] = { y->body, k };
    if (e->args[0] != l) { /* c * y keeps its operand order */
        args[0] = k;
        args[1] = y->body;
    }
    t->body = simp(s, ex_op(a, e->span, e->op, e->dtype, args, 2));
    t->vars = y->vars;
    t->anchor = y->anchor ? y->anchor : y->name;
    te_add_aliases(a, t, y->name, y);
    s->c->stats->simplified++;
    vec_push(a, &s->c->stats->notes, arena_printf(a, "scale folded into %s", y->name));
    return true;
}

bool te_pass_simplify(OptCtx *c, Graph *g)
{
    Simp s = { c, g, NULL };
    int stages = 0, folded = 0;
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (t->kind != TK_STAGE)
            continue;
        stages++;
        s.stage = t;
        t->body = simp(&s, t->body);
        compose_copies(&s, t);
        folded += fold_scale(&s, t);
    }
    te_graph_compact(c->arena, g);
    for (int i = 0; i < g->ntensors; i++)
        stages -= g->tensors[i]->kind == TK_STAGE;
    c->stats->removed += stages - folded; /* a folded reduction is not dead */
    return true;
}

/* pass_substitute.c — operator substitution: cheaper equivalents.
 *
 * requires: a checked Graph (best after constfold).
 * guarantees: the same outputs, exactly, except for the rules marked
 * "rounding", which apply only where opt_fast_math allows it for the
 * operator's dtype.  The rules (x any operand, c a constant):
 *
 *   1. x / c -> x * (1/c), floats, c finite and nonzero:
 *      exact when 1/c is exactly representable in the dtype's arithmetic
 *      (f32 for f16 and bf16), i.e. c is a power of two (x / c and
 *      x * (1/c) then have the same real value, hence the same rounding,
 *      subnormals included); otherwise rounding (1/c is rounded, then the
 *      product is rounded again).
 *      Integer division truncates and is never rewritten.
 *   2. pow(x, 1) -> x                      exact (pow(x, 1) is x, NaN too)
 *   3. pow(x, 2) -> x * x                  exact: x * x is the correctly
 *      rounded square and agrees with IEEE pow on every special value
 *      (pow(-0, 2) = +0, pow(-inf, 2) = +inf, NaN); a libm pow that is not
 *      correctly rounded can differ by an ulp, the product cannot be
 *      worse.  Only when x is cheap to evaluate twice (at most 8 nodes, no
 *      reduction, no call but a cast): the product shares x's node, and a
 *      code generator without CSE computes it twice.
 *   4. pow(x, 0.5) -> sqrt(x)              rounding in the wide sense: the
 *      two differ at x = -0 (pow gives +0, sqrt -0) and x = -inf (+inf
 *      against NaN), so only under fast-math.
 *   5. x * -1, -1 * x -> -x                exact (negation is exact;
 *      -0 * -1 = +0 = -(-0))
 *   6. x / y -> x * (1 / y), floats, y not a constant and not varying
 *      along the stage's innermost axis (softmax's e[i, j] / s[i], the
 *      attention's sum / psum[h, i]): rounding (twice rounded, within 1.5
 *      ulp of x / y), so only under fast-math.  The code generator's C
 *      compiler then divides once per row instead of once per element (a
 *      vector division costs as much as a dozen multiplications).
 *
 * Kept on purpose: exp(x - m) is never split into exp(x) / exp(m), so
 * softmax's max-subtraction (exp(x[i, j] - mx[i]) / sum) stays
 * numerically safe;
 * sigmoid, gelu, tanh, erf and rsqrt stay intrinsics (their expansions
 * into exp are less accurate, and the code generator picks their
 * implementation).
 */
#include <math.h>

#include "texc.h"

typedef struct Subst {
    OptCtx *c;
    const IterVar *inner; /* the stage's innermost variable, or NULL */
} Subst;

static bool mentions_var(const Expr *e, const IterVar *v)
{
    if (e->kind == EX_VAR)
        return e->var == v;
    for (int i = 0; i < e->nargs; i++)
        if (mentions_var(e->args[i], v))
            return true;
    return false;
}

/* Is E at most *BUDGET nodes of loads, variables, constants, casts and
 * arithmetic operators? */
static bool cheap(const Expr *e, int *budget)
{
    if (--*budget < 0 || e->kind == EX_REDUCE)
        return false;
    if (e->kind == EX_OP && op_is_call(e->op) && e->op != OP_CAST)
        return false;
    for (int i = 0; i < e->nargs; i++)
        if (!cheap(e->args[i], budget))
            return false;
    return true;
}

/* Is V a power of two (of either sign)? */
static bool power_of_two(double v)
{
    int exp;
    return isfinite(v) && v != 0.0 && fabs(frexp(v, &exp)) == 0.5;
}

static const Expr *const_operand(const Expr *e, int i)
{
    return e->nargs > i && e->args[i]->kind == EX_CONST ? e->args[i] : NULL;
}

/* One rule at the root of E; E itself when none applies. */
static Expr *rewrite(Subst *s, Expr *e)
{
    if (e->kind != EX_OP)
        return e;
    Arena *a = s->c->arena;
    DType t = e->dtype;
    bool fast = opt_fast_math(s->c, t);
    const Expr *k = const_operand(e, 1);
    Expr *x = e->args[0];
    switch (e->op) {
    case OP_DIV: {
        Expr *y = e->args[1];
        if (!k && fast && dtype_is_float(t) && s->inner && !mentions_var(y, s->inner) &&
            !(x->kind == EX_CONST && x->value == 1.0)) {
            /* rule 6 */
            Expr *one[2] = { ex_const(a, e->span, t, 1.0), y };
            Expr *args[2] = { x, ex_op(a, e->span, OP_DIV, t, one, 2) };
            return ex_op(a, e->span, OP_MUL, t, args, 2);
        }
        /* rule 1 */
        if (!k || !dtype_is_float(t) || !isfinite(k->value) || k->value == 0.0)
            return e;
        double r = 1.0 / k->value;
        bool exact = power_of_two(k->value) && te_arith_round(t, r) == r;
        if (!exact && !fast)
            return e;
        Expr *args[2] = { x, ex_const(a, k->span, t, te_arith_round(t, r)) };
        return ex_op(a, e->span, OP_MUL, t, args, 2);
    }
    case OP_POW:
        if (!k)
            return e;
        if (k->value == 1.0)
            return x; /* rule 2 */
        if (k->value == 2.0) {
            /* rule 3 */
            int budget = 8;
            if (!cheap(x, &budget))
                return e;
            Expr *args[2] = { x, x };
            return ex_op(a, e->span, OP_MUL, t, args, 2);
        }
        if (k->value == 0.5 && fast)
            return ex_op(a, e->span, OP_SQRT, t, &x, 1); /* rule 4 */
        return e;
    case OP_MUL: {
        /* rule 5 */
        Expr *other = NULL;
        if (k && k->value == -1.0)
            other = x;
        else if (const_operand(e, 0) && x->value == -1.0)
            other = e->args[1];
        return other ? ex_op(a, e->span, OP_NEG, t, &other, 1) : e;
    }
    default:
        return e;
    }
}

static Expr *subst(Subst *s, Expr *e)
{
    Expr *node = e;
    if (e->nargs) {
        Expr **args = arena_alloc(s->c->arena, sizeof *args * (size_t)e->nargs);
        bool changed = false;
        for (int i = 0; i < e->nargs; i++) {
            args[i] = subst(s, e->args[i]);
            changed |= args[i] != e->args[i];
        }
        if (changed)
            node = te_rebuild(s->c->arena, e, args);
    }
    for (Expr *r; (r = rewrite(s, node)) != node; node = r)
        s->c->stats->substituted++;
    return node;
}

bool te_pass_substitute(OptCtx *c, Graph *g)
{
    Subst s = { c, NULL };
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (t->kind != TK_STAGE)
            continue;
        s.inner = t->rank ? t->vars[t->rank - 1] : NULL;
        t->body = subst(&s, t->body);
    }
    te_graph_compact(c->arena, g);
    return true;
}

/* pass_constfold.c — constant folding.
 *
 * requires: a checked Graph.
 * guarantees: every operator whose operands are all constants is replaced
 * by its value (1.0 / sqrt(64.0) becomes 0.125); a select, && or || whose
 * deciding operand is constant is replaced by the operand it picks; a
 * load of a stage whose whole body folded to a constant (and which is no
 * output) is replaced by that constant, and the stage, now dead, goes.
 * Reductions are never folded, even over a constant body (the evaluator
 * sums in order, and n additions of a constant are not n * c).
 *
 * What a folded value is.  The value is computed exactly as eval.c
 * computes the operator (integer division by zero gives 0, float-to-int
 * casts saturate, gelu and sigmoid by the same formulas), in double, and
 * then rounded once per folded operator to the precision the operator is
 * computed in (arith_round):
 *   - f32 and f64: the dtype itself (dtype_round).  For +, -, *, / and
 *     sqrt this is exactly the IEEE operation in the dtype, i.e. what the
 *     generated code computes, so folding is exact there
 *     (1.0 / sqrt(64.0) is 0.125, 1.0 / 3.0 in f32 is 0.333333343); for
 *     libm functions (exp, tanh, pow, ...) the folded value is the double
 *     result correctly rounded, which can differ from the target's libm by
 *     an ulp.
 *   - f16 and bf16: f32, not the narrow type.  The code generators compute
 *     narrow floats in float and round only when a value is stored, so an
 *     f32-rounded fold is what the unfolded expression computes; rounding
 *     to bf16 would put an error of up to 2^-9 into every use of the
 *     constant that the program as written does not have.  (A constant's
 *     value need not be representable in its dtype: sema keeps the
 *     literal 0.1 in an f16 expression as written, too.)
 *   - i32: + - * / %, unary - and abs wrap modulo 2^32 (te_i32_arith, the
 *     evaluator's and the generated code's arithmetic), so
 *     1000000000 * 1000000000 folds to -1486618624; the other operators'
 *     results are exact integers in range already.
 *   - bool: 0 or 1.
 * The evaluator, which works in double without rounding, therefore sees a
 * folded f32 constant as rounded (1.0 / 3.0), a difference of at most
 * half an f32 ulp.  Folding is done even under -fstrict-fp, whose promise
 * ("only rewrites exact in the dtype") it keeps for the basic operators.
 *
 * Results that are NaN or infinite are folded too: IEEE arithmetic gives
 * the same NaN or infinity at run time, and the printer and the code
 * generator both spell them (nan, inf / NAN, INFINITY).
 */
#include <math.h>
#include <stdint.h>

#include "texc.h"

typedef struct Fold {
    OptCtx *c;
    Expr **const_stage; /* by Tensor.id: the constant a stage's body folded
                           to, or NULL */
} Fold;

/* OP applied to the constants V[0..n), as eval.c computes it.  False for
 * operators the folder leaves alone. */
static bool apply(Op op, DType t, const double *v, double *out)
{
    double a = v[0], b = v[1];
    if (t == DT_I32 && te_i32_wraps(op)) {
        *out = te_i32_arith(op, a, b);
        return true;
    }
    switch (op) {
    case OP_NEG: *out = -a; return true;
    case OP_NOT: *out = a == 0.0; return true;
    case OP_EXP: *out = exp(a); return true;
    case OP_LOG: *out = log(a); return true;
    case OP_SQRT: *out = sqrt(a); return true;
    case OP_RSQRT: *out = 1.0 / sqrt(a); return true;
    case OP_TANH: *out = tanh(a); return true;
    case OP_ERF: *out = erf(a); return true;
    case OP_ABS: *out = fabs(a); return true;
    case OP_GELU: *out = 0.5 * a * (1.0 + erf(a * 0.70710678118654752440)); return true;
    case OP_SIGMOID: *out = 1.0 / (1.0 + exp(-a)); return true;
    case OP_RELU: *out = a > 0.0 || isnan(a) ? a : 0.0; return true;
    case OP_CAST: *out = a; return true; /* the rounding below is the cast */
    case OP_ADD: *out = a + b; return true;
    case OP_SUB: *out = a - b; return true;
    case OP_MUL: *out = a * b; return true;
    case OP_DIV: *out = a / b; return true;
    case OP_MOD: *out = fmod(a, b); return true;
    case OP_LT: *out = a < b; return true;
    case OP_LE: *out = a <= b; return true;
    case OP_GT: *out = a > b; return true;
    case OP_GE: *out = a >= b; return true;
    case OP_EQ: *out = a == b; return true;
    case OP_NE: *out = a != b; return true;
    case OP_AND: *out = a != 0.0 && b != 0.0; return true;
    case OP_OR: *out = a != 0.0 || b != 0.0; return true;
    case OP_MIN: *out = isnan(a) || isnan(b) ? a + b : a < b ? a : b; return true;
    case OP_MAX: *out = isnan(a) || isnan(b) ? a + b : a > b ? a : b; return true;
    case OP_POW: *out = pow(a, b); return true;
    case OP_SELECT: *out = a != 0.0 ? b : v[2]; return true;
    case OP_COUNT: break;
    }
    TE_UNREACHABLE();
}

/* The folded value of E (an EX_OP over constants ARGS) in *OUT, or false
 * when it must stay. */
static bool fold_value(const Expr *e, Expr **args, double *out)
{
    double v[3] = { 0, 0, 0 };
    for (int i = 0; i < e->nargs; i++)
        v[i] = args[i]->value;
    double r;
    if (!apply(e->op, e->dtype, v, &r))
        return false;
    /* a cast rounds to its dtype: that is what it is for */
    *out = e->op == OP_CAST ? dtype_round(e->dtype, r) : te_arith_round(e->dtype, r);
    return true;
}

static bool is_const(const Expr *e, double *v)
{
    if (e->kind != EX_CONST)
        return false;
    if (v)
        *v = e->value;
    return true;
}

/* Folds E bottom-up; returns E itself when nothing changed.  Counts each
 * maximal folded subtree once: a folded operator whose operands were
 * themselves folded takes their place in the count.  A constant stage's
 * value replacing a load is not counted again. */
static Expr *fold(Fold *f, Expr *e)
{
    Arena *a = f->c->arena;
    if (e->kind == EX_LOAD && f->const_stage[e->tensor->id])
        return f->const_stage[e->tensor->id]; /* counted where it folded */
    if (e->nargs == 0)
        return e;
    Expr *args[3], **argv = args;
    if (e->nargs > 3)
        argv = arena_alloc(a, sizeof *argv * (size_t)e->nargs);
    bool changed = false, all_const = true;
    int counted = 0; /* operators among the operands that folded, each counted */
    for (int i = 0; i < e->nargs; i++) {
        argv[i] = fold(f, e->args[i]);
        changed |= argv[i] != e->args[i];
        all_const &= is_const(argv[i], NULL);
        counted += e->args[i]->kind == EX_OP && is_const(argv[i], NULL);
    }
    if (e->kind == EX_OP) {
        double v;
        /* select, && and || with a constant deciding operand: the lazy
         * evaluation picks an operand without looking at the other. */
        if (e->op == OP_SELECT && is_const(argv[0], &v))
            return v != 0.0 ? argv[1] : argv[2];
        if ((e->op == OP_AND || e->op == OP_OR) && is_const(argv[0], &v) && !all_const) {
            bool decided = e->op == OP_AND ? v == 0.0 : v != 0.0;
            return decided ? ex_const(a, e->span, DT_BOOL, e->op == OP_OR) : argv[1];
        }
        if (all_const && fold_value(e, argv, &v)) {
            f->c->stats->folded += 1 - counted;
            return ex_const(a, e->span, e->dtype, v);
        }
    }
    return changed ? te_rebuild(a, e, argv) : e;
}

bool te_pass_constfold(OptCtx *c, Graph *g)
{
    Fold f = { c, arena_alloc(c->arena, sizeof(Expr *) * (size_t)(g->ntensors + 1)) };
    int stages = 0;
    /* Dependency order: a stage's producers are folded before it, so a
     * constant stage is known before anything loads it. */
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (t->kind != TK_STAGE)
            continue;
        stages++;
        t->body = fold(&f, t->body);
        if (t->body->kind == EX_CONST && !t->is_output)
            f.const_stage[t->id] = t->body;
    }
    te_graph_compact(c->arena, g);
    for (int i = 0; i < g->ntensors; i++)
        stages -= g->tensors[i]->kind == TK_STAGE;
    c->stats->removed += stages;
    return true;
}

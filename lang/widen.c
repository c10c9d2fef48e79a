/* widen.c — the evaluator's arithmetic as a graph: every float in double.
 *
 * te_eval computes every float value in double, whatever its dtype, and
 * rounds only where the program casts (eval.c's top comment).  The tuner's
 * compiled reference (tuner/reference.c) is that same computation compiled
 * by the C backend, and this pass is what makes the backend's code compute
 * it: the graph is retyped so that C's own typing gives te_eval's numbers.
 *
 * requires: a checked Graph (optimized or not); no other pass runs after
 * it, and nothing but a reference build reads it: it changes the
 * program's numbers on purpose.
 * guarantees, in place:
 *   - every stage of dtype f32, f16 or bf16 is f64, and so is every
 *     constant, operator and reduction of those dtypes: computed, stored
 *     and written out in double, unrounded, as te_eval keeps them;
 *   - a load of an f32, f16 or bf16 input (inputs keep their dtype: they
 *     are read from the files candidates read) is widened by a cast to
 *     f64, exact, so that C computes in double where both operands were
 *     floats;
 *   - a cast to f32 or f16 keeps its rounding (dtype_round's: C's
 *     conversions round to nearest even from double, directly) and is
 *     widened to f64 after it, exactly;
 *   - i32 and bool values are untouched: the backend already computes them
 *     as te_eval does (wrapping, saturating, truncating: cfamily.c).
 * Returns NULL, or why the backend cannot reproduce te_eval for G (then
 * G is left half-widened, for the caller to discard): a cast to bf16 of a
 * double, which the C backend rounds through float (te_round_bf16),
 * twice, where dtype_round rounds once.
 *
 * Expressions may be shared between stages (a DAG after CSE): each node
 * is widened once, and its readers point at what replaced it.
 */
#include "texc.h"

typedef struct Widen {
    Arena *a;
    PtrMap done;     /* an Expr already widened -> its index in repl */
    PtrVec repl;     /* Expr *: what replaces it */
    const char *why; /* why G cannot be reproduced, or NULL */
} Widen;

static bool narrow_float(DType t)
{
    return t == DT_F32 || t == DT_F16 || t == DT_BF16;
}

/* E's value as f64: a cast around it. */
static Expr *to_f64(Widen *w, Expr *e)
{
    return ex_op(w->a, e->span, OP_CAST, DT_F64, &e, 1);
}

static Expr *widen(Widen *w, Expr *e)
{
    int at = map_get(&w->done, e);
    if (at >= 0)
        return w->repl.items[at];
    for (int i = 0; i < e->nargs; i++)
        e->args[i] = widen(w, e->args[i]);
    Expr *r = e;
    if (e->kind == EX_LOAD && e->tensor->kind == TK_INPUT) {
        if (narrow_float(e->dtype))
            r = to_f64(w, e);
    } else if (e->kind == EX_OP && e->op == OP_CAST && narrow_float(e->dtype)) {
        if (e->dtype == DT_BF16 && !w->why)
            w->why = "a cast to bf16, which the C backend rounds through f32 where the "
                     "evaluator rounds once";
        r = to_f64(w, e);
    } else if (narrow_float(e->dtype)) {
        e->dtype = DT_F64; /* a constant, an operator, a reduction, a stage's load */
    }
    map_set(w->a, &w->done, e, w->repl.len);
    vec_push(w->a, &w->repl, r);
    return r;
}

const char *te_widen_floats(Arena *a, Graph *g)
{
    Widen w = { .a = a };
    /* the stages first: loads of them read f64 */
    for (int i = 0; i < g->ntensors; i++)
        if (g->tensors[i]->kind == TK_STAGE && narrow_float(g->tensors[i]->dtype))
            g->tensors[i]->dtype = DT_F64;
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (t->kind == TK_STAGE)
            t->body = widen(&w, t->body);
    }
    return w.why;
}

/* pass_dce.c — dead code elimination.
 *
 * requires: a checked Graph.
 * guarantees: every stage is needed by an output, and no stage is an
 * identity of another.  An identity stage (z = g + 0.0, z = g * 1,
 * z = g[i, j] read at its own index variables in order, at the same shape
 * and dtype) becomes an alias: its readers read the source instead and,
 * when it is an output, the source takes its name and its place in
 * g->outputs (the generated function's parameters keep their names and
 * order); the name it loses goes to Tensor.aliases so that a schedule
 * naming either stage still finds it.  g->outputs keeps its length and
 * order.  Unreachable stages are dropped by te_graph_compact.
 *
 * The identities, each exact unless marked (x any operand, dtype T):
 *   x * 1, 1 * x, x / 1       exact for every dtype (x * 1 is x, NaN and
 *                             -0.0 included)
 *   x + (-0.0), (-0.0) + x    exact: IEEE x + (-0) is x for every x
 *   x - 0.0                   exact: x - (+0) is x, and -0 - 0 is -0
 *   x + 0, 0 + x, x - 0       exact for i32 (no signed zero)
 *   x + 0.0, 0.0 + x          NOT exact for floats: -0.0 + 0.0 is +0.0.
 *                             Only where opt_fast_math(T) allows (the
 *                             seed's compilers ignore the sign of zero
 *                             there), never under -fstrict-fp or for f64
 *   -(-x)                     exact
 *   T(x) with x already T     exact: the cast does nothing
 * A stage is not aliased when that would merge two outputs (each output
 * is a parameter of its own), or when an output would become an input
 * (the caller's input buffer cannot be the output parameter).  A
 * non-output identity of an input is still removed: its readers read the
 * input.
 */
#include <math.h>

#include "texc.h"

typedef struct Dce {
    OptCtx *c;
    Tensor **repl; /* by Tensor.id: the tensor that replaces it, or NULL */
} Dce;

static bool const_is(const Expr *e, double v)
{
    return e->kind == EX_CONST && e->value == v;
}

static bool is_neg_zero(const Expr *e)
{
    return e->kind == EX_CONST && e->value == 0.0 && signbit(e->value);
}

static bool is_pos_zero(const Expr *e)
{
    return e->kind == EX_CONST && e->value == 0.0 && !signbit(e->value);
}

/* If E is an identity wrapper around one operand, that operand. */
static Expr *identity_operand(Dce *d, const Expr *e)
{
    if (e->kind != EX_OP)
        return NULL;
    DType t = e->dtype;
    bool is_int = t == DT_I32;
    bool fast = opt_fast_math(d->c, t);
    Expr *x = e->args[0], *y = e->nargs > 1 ? e->args[1] : NULL;
    switch (e->op) {
    case OP_MUL:
        if (const_is(y, 1.0))
            return x;
        if (const_is(x, 1.0))
            return y;
        return NULL;
    case OP_DIV:
        return const_is(y, 1.0) ? x : NULL;
    case OP_ADD:
        if (is_neg_zero(y) || (is_pos_zero(y) && (is_int || fast)))
            return x;
        if (is_neg_zero(x) || (is_pos_zero(x) && (is_int || fast)))
            return y;
        return NULL;
    case OP_SUB:
        return is_pos_zero(y) ? x : NULL; /* an i32 0 is +0 */
    case OP_NEG:
        return x->kind == EX_OP && x->op == OP_NEG ? x->args[0] : NULL;
    case OP_CAST:
        return x->dtype == t ? x : NULL;
    default:
        return NULL;
    }
}

static Tensor *resolve(Dce *d, Tensor *t)
{
    while (d->repl[t->id])
        t = d->repl[t->id];
    return t;
}

/* The tensor stage Z is an identity of, or NULL. */
static Tensor *identity_source(Dce *d, const Tensor *z)
{
    const Expr *e = z->body;
    for (const Expr *x; (x = identity_operand(d, e));)
        e = x;
    if (e->kind != EX_LOAD)
        return NULL;
    const Tensor *s = e->tensor;
    if (s->dtype != z->dtype || s->rank != z->rank)
        return NULL;
    for (int k = 0; k < z->rank; k++)
        if (s->shape[k] != z->shape[k] ||
            !te_size_same(s->shape_size[k], z->shape_size[k]) || e->args[k]->kind != EX_VAR ||
            e->args[k]->var != z->vars[k])
            return NULL;
    return resolve(d, e->tensor);
}

/* Copies E with every load of a replaced tensor redirected. */
static Expr *redirect(Dce *d, Expr *e)
{
    if (e->nargs == 0)
        return e;
    Expr **args = arena_alloc(d->c->arena, sizeof *args * (size_t)e->nargs);
    bool changed = false;
    for (int i = 0; i < e->nargs; i++) {
        args[i] = redirect(d, e->args[i]);
        changed |= args[i] != e->args[i];
    }
    Arena *a = d->c->arena;
    switch (e->kind) {
    case EX_LOAD: {
        Tensor *t = resolve(d, e->tensor);
        if (!changed && t == e->tensor)
            return e;
        return ex_load(a, e->span, t, args, e->nargs);
    }
    case EX_OP:
        return changed ? ex_op(a, e->span, e->op, e->dtype, args, e->nargs) : e;
    case EX_REDUCE:
        return changed ? ex_reduce(a, e->span, e->reducer, e->axes, e->naxes, args[0]) : e;
    default:
        TE_UNREACHABLE();
    }
}

/* Makes Z an alias of S, if outputs allow it; returns whether it did. */
static bool alias(Dce *d, Graph *g, Tensor *z, Tensor *s)
{
    Arena *a = d->c->arena;
    if (z->is_output) {
        if (s->is_output || s->kind != TK_STAGE)
            return false;
        /* S takes Z's name and place among the outputs. */
        const char *old = s->name;
        te_add_aliases(a, s, old, z);
        s->name = z->name;
        s->is_output = true;
        for (int k = 0; k < g->noutputs; k++)
            if (g->outputs[k] == z)
                g->outputs[k] = s;
        vec_push(a, &d->c->stats->notes,
                 arena_printf(a, "%s is an identity of %s: %s renamed %s", z->name, old, old,
                              z->name));
    } else {
        if (s->kind == TK_STAGE)
            te_add_aliases(a, s, z->name, z);
        vec_push(a, &d->c->stats->notes,
                 arena_printf(a, "%s is an identity of %s: its readers read %s", z->name,
                              s->name, s->name));
    }
    d->repl[z->id] = s;
    return true;
}

bool te_pass_dce(OptCtx *c, Graph *g)
{
    Dce d = { c, arena_alloc(c->arena, sizeof(Tensor *) * (size_t)(g->ntensors + 1)) };
    int stages = 0;
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *z = g->tensors[i];
        if (z->kind != TK_STAGE)
            continue;
        stages++;
        /* a dead identity needs no alias: compaction drops it */
        Tensor *s = z->is_output || z->uses ? identity_source(&d, z) : NULL;
        if (s)
            alias(&d, g, z, s);
    }
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (t->kind == TK_STAGE && !d.repl[t->id])
            t->body = redirect(&d, t->body);
    }
    te_graph_compact(c->arena, g);
    for (int i = 0; i < g->ntensors; i++)
        stages -= g->tensors[i]->kind == TK_STAGE;
    c->stats->removed += stages;
    return true;
}

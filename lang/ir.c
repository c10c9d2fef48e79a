/* ir.c — constructors for the expression IR.
 *
 * Every Expr is built here, from an arena, with the span of the text it
 * stands for.  Argument arrays are copied into the arena, so callers may
 * pass a stack array or a PtrVec that they go on growing.  A constructor
 * fills in what follows from its arguments (a variable is i32, a load has
 * its tensor's dtype, a reduction its body's); everything else, such as an
 * operator's result type, is the caller's (sema's) decision.
 */
#include <string.h>

#include "texc.h"

static Expr *expr_new(Arena *a, ExprKind kind, Span sp, DType t)
{
    Expr *e = arena_alloc(a, sizeof *e);
    e->kind = kind;
    e->span = sp;
    e->dtype = t;
    return e;
}

static Expr **copy_args(Arena *a, Expr **args, int n)
{
    TE_ASSERT(n >= 0);
    if (n == 0)
        return NULL;
    Expr **copy = arena_alloc(a, (size_t)n * sizeof *copy);
    memcpy(copy, args, (size_t)n * sizeof *copy);
    return copy;
}

Expr *ex_const(Arena *a, Span sp, DType t, double v)
{
    Expr *e = expr_new(a, EX_CONST, sp, t);
    e->value = v;
    return e;
}

Expr *ex_var(Arena *a, Span sp, IterVar *v)
{
    Expr *e = expr_new(a, EX_VAR, sp, DT_I32);
    e->var = v;
    return e;
}

/* The tensor may still be untyped while the parser resolves names; sema
 * sets the load's dtype again once it knows. */
Expr *ex_load(Arena *a, Span sp, Tensor *t, Expr **idx, int n)
{
    Expr *e = expr_new(a, EX_LOAD, sp, t ? t->dtype : DT_NONE);
    e->tensor = t;
    e->args = copy_args(a, idx, n);
    e->nargs = n;
    return e;
}

Expr *ex_op(Arena *a, Span sp, Op op, DType t, Expr **args, int n)
{
    TE_ASSERT(n == op_arity(op));
    Expr *e = expr_new(a, EX_OP, sp, t);
    e->op = op;
    e->args = copy_args(a, args, n);
    e->nargs = n;
    return e;
}

Expr *ex_reduce(Arena *a, Span sp, Reducer r, IterVar **axes, int naxes,
                Expr *body)
{
    TE_ASSERT(naxes > 0 && body != NULL);
    Expr *e = expr_new(a, EX_REDUCE, sp, body->dtype);
    e->reducer = r;
    e->axes = arena_alloc(a, (size_t)naxes * sizeof *e->axes);
    memcpy(e->axes, axes, (size_t)naxes * sizeof *e->axes);
    e->naxes = naxes;
    e->args = copy_args(a, &body, 1);
    e->nargs = 1;
    return e;
}

/* Rank 0 is a scalar: one element. */
int64_t tensor_elems(const Tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= t->shape[d];
    return n;
}

/* Sema stores size expressions in normal form, so structural equality is
 * equality at every size; the static bounds must agree as well. */
bool te_same_shape(const Tensor *a, const Tensor *b)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d] || !te_size_same(a->shape_size[d], b->shape_size[d]))
            return false;
    return true;
}

bool te_same_range(const IterVar *a, const IterVar *b)
{
    return a->lo == b->lo && a->extent == b->extent &&
           te_size_same(a->extent_size, b->extent_size);
}

bool te_expr_any(const Expr *e, bool (*pred)(const Expr *x, const void *ctx), const void *ctx)
{
    if (pred(e, ctx))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (te_expr_any(e->args[i], pred, ctx))
            return true;
    return false;
}

Expr *te_subst_vars(Arena *a, Expr *e, IterVar **vars, Expr **values, int n)
{
    if (e->kind == EX_VAR) {
        for (int i = 0; i < n; i++)
            if (e->var == vars[i])
                return values[i];
        return e;
    }
    if (e->nargs == 0)
        return e;
    Expr *c = arena_alloc(a, sizeof *c);
    *c = *e;
    c->args = arena_alloc(a, sizeof *c->args * (size_t)e->nargs);
    for (int i = 0; i < e->nargs; i++)
        c->args[i] = te_subst_vars(a, e->args[i], vars, values, n);
    return c;
}

/* Copies E with new operands ARGS (same count), through the constructors. */
Expr *te_rebuild(Arena *a, const Expr *e, Expr **args)
{
    switch (e->kind) {
    case EX_LOAD:
        return ex_load(a, e->span, e->tensor, args, e->nargs);
    case EX_OP:
        return ex_op(a, e->span, e->op, e->dtype, args, e->nargs);
    case EX_REDUCE:
        return ex_reduce(a, e->span, e->reducer, e->axes, e->naxes, args[0]);
    case EX_CONST:
    case EX_VAR:
        break;
    }
    TE_UNREACHABLE();
}


void te_add_aliases(Arena *a, Tensor *into, const char *name, const Tensor *from)
{
    int n = into->naliases + 1 + (from ? from->naliases : 0);
    const char **names = arena_alloc(a, sizeof *names * (size_t)n);
    unsigned char *by = arena_alloc(a, (size_t)n);
    int k = 0;
    for (int i = 0; i < into->naliases; i++, k++) {
        names[k] = into->aliases[i];
        by[k] = into->alias_pass[i];
    }
    /* NAME's pass is the one running: te_optimize records it afterwards;
     * FROM's aliases keep the passes that merged them */
    names[k] = name;
    by[k++] = PASS_COUNT;
    for (int i = 0; from && i < from->naliases; i++, k++) {
        names[k] = from->aliases[i];
        by[k] = from->alias_pass[i];
    }
    into->aliases = names;
    into->alias_pass = by;
    into->naliases = n;
}

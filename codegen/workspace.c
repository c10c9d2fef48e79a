/* workspace.c — where each intermediate lives in the one workspace.
 *
 * requires: a lowered function (sched/lower.c) and its SchedState.
 * guarantees: a memory plan (lang/memplan.c) of FN's temps, both
 * backends' only source of workspace offsets.
 *
 * A kernel step is one root stage's nest: lowering chains the nests as
 * seq(seq(seq(first, second), third), ...), one per stage that is neither
 * inlined nor computed at another, in execution order.  The C backend
 * runs them one after another (each parallel loop ends in a barrier); the
 * CUDA backend launches one kernel per step on one stream.  So a temp is
 * live from the first step that reads or writes it to the last, and two
 * temps whose step ranges do not overlap can share bytes.  Reads count
 * wherever a load appears: values, indices, bounds and conditions.
 */
#include "codegen/codegen.h"

int cg_kernel_steps(Arena *a, const SchedState *st, const LoweredFunc *fn,
                    const SStage ***roots, const Stmt ***bodies)
{
    PtrVec r = {0};
    for (int i = 0; i < st->stages.len; i++) {
        const SStage *s = st->stages.items[i];
        if (!s->inlined && !s->attach && !s->tensor->packs) /* prepack: fn->prepack */
            vec_push(a, &r, (void *)s);
    }
    int n = r.len;
    const Stmt **b = arena_alloc(a, sizeof *b * (size_t)(n + 1));
    const Stmt *rest = fn->body;
    for (int i = n - 1; i > 0; i--) {
        TE_ASSERT(rest && rest->kind == S_SEQ && rest->n == 2);
        b[i] = rest->stmts[1];
        rest = rest->stmts[0];
    }
    if (n > 0)
        b[0] = rest;
    *roots = (const SStage **)r.items;
    *bodies = b;
    return n;
}

/* Does E load T (T != NULL) or read the loop variable V (V != NULL)? */
static bool expr_uses(const Expr *e, const Tensor *t, const IterVar *v)
{
    if (!e)
        return false;
    if ((t && e->kind == EX_LOAD && e->tensor == t) || (v && e->kind == EX_VAR && e->var == v))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (expr_uses(e->args[i], t, v))
            return true;
    return false;
}

/* ... in S; with OUTSIDE, not counting the bodies of the parallel loops
 * the C backend lifts into functions (those outside local buffers' blocks) */
static bool stmt_uses(const Stmt *s, const Tensor *t, const IterVar *v, bool outside)
{
    if (!s)
        return false;
    switch (s->kind) {
    case S_FOR:
        return expr_uses(s->min, t, v) || expr_uses(s->extent, t, v) ||
               (!(outside && s->loop->kind == LOOP_PARALLEL) && stmt_uses(s->body, t, v, outside));
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            if (stmt_uses(s->stmts[i], t, v, outside))
                return true;
        return false;
    case S_STORE:
        if ((t && s->buf == t) || expr_uses(s->value, t, v))
            return true;
        for (int d = 0; d < s->buf->rank; d++)
            if (expr_uses(s->index[d], t, v))
                return true;
        return false;
    case S_IF:
        return expr_uses(s->cond, t, v) || stmt_uses(s->body, t, v, outside);
    case S_ALLOC: /* parallel loops inside stay where they are */
        return stmt_uses(s->body, t, v, false);
    }
    TE_UNREACHABLE();
}

bool cg_expr_uses_var(const Expr *e, const IterVar *v)
{
    return expr_uses(e, NULL, v);
}

bool cg_stmt_uses(const Stmt *s, const Tensor *t)
{
    return stmt_uses(s, t, NULL, false);
}

bool cg_stmt_uses_var(const Stmt *s, const IterVar *v)
{
    return stmt_uses(s, NULL, v, false);
}

bool cg_stmt_uses_outside_parallel(const Stmt *s, const Tensor *t)
{
    return stmt_uses(s, t, NULL, true);
}

bool cg_plan_workspace(Arena *a, const SchedState *st, const LoweredFunc *fn,
                       WorkspacePlan *out)
{
    int n = fn->temps.len;
    PlanBuf *bufs = arena_alloc(a, sizeof *bufs * (size_t)(n + 1));
    const SStage **roots;
    const Stmt **bodies;
    int nsteps = cg_kernel_steps(a, st, fn, &roots, &bodies);
    for (int i = 0; i < n; i++) {
        const Tensor *t = fn->temps.items[i];
        bufs[i] = (PlanBuf){ t->name, tensor_elems(t) * dtype_bytes(t->dtype), -1, -1, 0 };
        for (int k = 0; k < nsteps; k++) {
            if (!cg_stmt_uses(bodies[k], t))
                continue;
            if (bufs[i].first < 0)
                bufs[i].first = k;
            bufs[i].last = k;
        }
        /* lowering lists only temps some nest stores to */
        TE_ASSERT(bufs[i].first >= 0);
    }
    out->bufs = bufs;
    out->nbufs = n;
    out->bytes = te_memplan(bufs, n, &out->naive);
    if (out->bytes < 0) {
        const Tensor *t = fn->temps.items[0];
        diag_error(st->g->src, t->span,
                   "the intermediates need a workspace larger than 2^63 bytes");
        return false;
    }
    return true;
}

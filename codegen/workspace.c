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
        if (!s->inlined && !s->attach && !s->flashed && !te_prepacked(s->tensor)) /* prepack: fn->prepack */
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

/* Does E read the loop variable V? */
static void note_use(Arena *a, CgUses *u, PtrVec *list, const void *p)
{
    if (map_put(a, &u->seen, p, list->len))
        vec_push(a, list, (void *)p);
}

static void expr_uses(Arena *a, CgUses *u, const Expr *e)
{
    if (!e)
        return;
    if (e->kind == EX_LOAD)
        note_use(a, u, &u->tensors, e->tensor);
    else if (e->kind == EX_VAR)
        note_use(a, u, &u->vars, e->var);
    for (int i = 0; i < e->nargs; i++)
        expr_uses(a, u, e->args[i]);
}

/* ... in S; with OUTSIDE, not counting the bodies of the parallel loops
 * the C backend lifts into functions (those outside local buffers' blocks) */
static void stmt_uses(Arena *a, CgUses *u, const Stmt *s, bool outside)
{
    if (!s)
        return;
    switch (s->kind) {
    case S_FOR:
        expr_uses(a, u, s->min);
        expr_uses(a, u, s->extent);
        if (!(outside && s->loop->kind == LOOP_PARALLEL))
            stmt_uses(a, u, s->body, outside);
        return;
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            stmt_uses(a, u, s->stmts[i], outside);
        return;
    case S_STORE:
        note_use(a, u, &u->tensors, s->buf);
        map_put(a, &u->stored, s->buf, 0);
        expr_uses(a, u, s->value);
        for (int d = 0; d < s->buf->rank; d++)
            expr_uses(a, u, s->index[d]);
        return;
    case S_IF:
        expr_uses(a, u, s->cond);
        stmt_uses(a, u, s->body, outside);
        return;
    case S_ALLOC: /* parallel loops inside stay where they are */
        stmt_uses(a, u, s->body, false);
        return;
    case S_FLASH: /* the kernel reads Q, K and V, stores the output */
        note_use(a, u, &u->tensors, s->buf);
        map_put(a, &u->stored, s->buf, 0);
        expr_uses(a, u, s->flash->q);
        expr_uses(a, u, s->flash->k);
        expr_uses(a, u, s->flash->v);
        for (int d = 0; d < s->flash->nbatch; d++)
            expr_uses(a, u, s->flash->batch_at[d]);
        return;
    }
    TE_UNREACHABLE();
}

CgUses cg_uses(Arena *a, const Stmt *s, bool outside)
{
    CgUses u = {0};
    stmt_uses(a, &u, s, outside);
    return u;
}

/* A temp is live from the first step that uses it to the last: one walk
 * of each step, each use's temp found by a hashed index, so the plan
 * costs the size of the function, not that times the number of temps. */
bool cg_plan_workspace(Arena *a, const SchedState *st, const LoweredFunc *fn,
                       WorkspacePlan *out)
{
    int n = fn->temps.len;
    PlanBuf *bufs = arena_alloc(a, sizeof *bufs * (size_t)(n + 1));
    const SStage **roots;
    const Stmt **bodies;
    int nsteps = cg_kernel_steps(a, st, fn, &roots, &bodies);
    PtrMap index = {0}; /* temp -> its position in fn->temps */
    for (int i = 0; i < n; i++) {
        const Tensor *t = fn->temps.items[i];
        bufs[i] = (PlanBuf){ t->name, tensor_elems(t) * dtype_bytes(t->dtype), -1, -1, 0 };
        map_put(a, &index, t, i);
    }
    for (int k = 0; k < nsteps; k++) {
        CgUses u = cg_uses(a, bodies[k], false);
        for (int j = 0; j < u.tensors.len; j++) {
            int i = map_get(&index, u.tensors.items[j]);
            if (i < 0)
                continue;
            if (bufs[i].first < 0)
                bufs[i].first = k;
            bufs[i].last = k;
        }
    }
    for (int i = 0; i < n; i++) /* lowering lists only temps some nest stores to */
        TE_ASSERT(bufs[i].first >= 0);
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

/* pass_fuse.c — fusion: stages merge into kernels.
 *
 * requires: a checked Graph.
 * guarantees: the same values at every output, exactly (fusion moves
 * computation, it never reassociates it); fewer stages, each of which the
 * scheduler lowers as one kernel:
 *   1. an elementwise stage (no reduction in its body, not an output) that
 *      exactly one other stage reads is substituted into that reader
 *      (its reads are cheap to recompute; several readers would each pay,
 *      so those keep the stage), unless it selects and the reader reduces:
 *      a padded image read by a convolution would run its bounds checks
 *      once per multiply-add, and keep the reduction from vectorizing;
 *   2. a reduction stage (its body a reduction, possibly under an
 *      epilogue already) that is no output and whose single reader is
 *      elementwise and reads it exactly at the reader's own index
 *      variables, in order, at the same shape, becomes that reader's
 *      epilogue: z[i, j] = gelu(y[i, j] * 0.125 + b[j]) with y a sum
 *      becomes z[i, j] = gelu((sum(k) ...) * 0.125 + b[j]).
 * The merged stage keeps the reader's name (an output keeps its name and
 * place in the function's parameters); its anchor is the reduction, whose
 * index-variable names it takes, so a schedule written for the reduction
 * ("y.tile(i, j, ...)") applies to the kernel.  Tensor.aliases lists every
 * stage merged into it.
 */
#include <string.h>

#include "texc.h"

static bool is_reduce(const Expr *e, const void *ctx)
{
    (void)ctx;
    return e->kind == EX_REDUCE;
}

static bool is_select(const Expr *e, const void *ctx)
{
    (void)ctx;
    return e->kind == EX_OP && e->op == OP_SELECT;
}

static bool has_reduce(const Expr *e) { return te_expr_any(e, is_reduce, NULL); }
static bool has_select(const Expr *e) { return te_expr_any(e, is_select, NULL); }

/* The number of loads of T in E, and whether each reads T exactly at
 * VARS[0..rank) (the reader's own point). */
static int count_loads(const Expr *e, const Tensor *t, IterVar **vars, bool *at_point)
{
    int n = 0;
    if (e->kind == EX_LOAD && e->tensor == t) {
        n = 1;
        for (int d = 0; d < e->nargs; d++)
            if (e->args[d]->kind != EX_VAR || e->args[d]->var != vars[d])
                *at_point = false;
    }
    for (int i = 0; i < e->nargs; i++)
        n += count_loads(e->args[i], t, vars, at_point);
    return n;
}

/* The only stage that reads T, or NULL if none or several do. */
static Tensor *single_reader(Graph *g, const Tensor *t)
{
    Tensor *reader = NULL;
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *s = g->tensors[i];
        bool at = true;
        if (s->kind != TK_STAGE || s == t || count_loads(s->body, t, s->vars, &at) == 0)
            continue;
        if (reader)
            return NULL;
        reader = s;
    }
    return reader;
}

/* Copies E with loads of P replaced by P's body at the load's indices. */
static Expr *substitute(Arena *a, Expr *e, const Tensor *p)
{
    if (e->kind == EX_LOAD && e->tensor == p) {
        Expr **idx = arena_alloc(a, sizeof *idx * (size_t)(e->nargs + 1));
        for (int d = 0; d < e->nargs; d++)
            idx[d] = substitute(a, e->args[d], p);
        return te_subst_vars(a, p->body, p->vars, idx, p->rank);
    }
    if (e->nargs == 0)
        return e;
    Expr *c = arena_alloc(a, sizeof *c);
    *c = *e;
    c->args = arena_alloc(a, sizeof *c->args * (size_t)e->nargs);
    for (int i = 0; i < e->nargs; i++)
        c->args[i] = substitute(a, e->args[i], p);
    return c;
}

bool te_pass_fuse(OptCtx *c, Graph *g)
{
    Arena *a = c->arena;
    bool changed = true;
    while (changed) {
        changed = false;
        for (int i = 0; i < g->ntensors && !changed; i++) {
            Tensor *p = g->tensors[i];
            if (p->kind != TK_STAGE || p->is_output)
                continue;
            Tensor *r = single_reader(g, p);
            if (!r)
                continue;
            bool at_point = true;
            int loads = count_loads(r->body, p, r->vars, &at_point);
            if (!has_reduce(p->body)) {
                /* rule 1: an elementwise producer */
                if (has_select(p->body) && has_reduce(r->body))
                    continue;
                r->body = substitute(a, r->body, p);
            } else if (loads == 1 && at_point && !has_reduce(r->body) && te_same_shape(r, p)) {
                /* rule 2: a reduction into its reader's epilogue; the
                 * reader's variables take the anchor's names */
                r->body = substitute(a, r->body, p);
                for (int d = 0; d < r->rank; d++)
                    r->vars[d]->name = p->vars[d]->name;
                r->anchor = p->anchor ? p->anchor : p->name;
            } else {
                continue;
            }
            te_add_aliases(a, r, p->name, p);
            c->stats->fused++;
            te_graph_compact(a, g);
            changed = true;
        }
    }
    return true;
}

/* graph.c — keeping a graph's tensor list in order after a rewrite, and
 * the guard that keeps graphs with run-time dims from the backends.
 *
 * A pass that removes or adds stages calls te_graph_compact, which puts
 * g->tensors back in dependency order (inputs first, then every stage
 * after the ones it reads), renumbers them and recounts their uses.  It
 * lives apart from the pass list (passes.c) that calls the passes, so
 * that the calls go one way: passes.c -> pass_NAME.c -> graph.c.
 */
#include "texc.h"

/* Depth-first from the outputs: reachable stages in dependency order.
 * Graphs hold hundreds of stages at most, so a linear "seen" list will do. */
static bool seen_before(PtrVec *seen, Tensor *t)
{
    for (int i = 0; i < seen->len; i++)
        if (seen->items[i] == t)
            return true;
    return false;
}

static void visit(Arena *a, Tensor *t, PtrVec *order, PtrVec *seen)
{
    if (seen_before(seen, t))
        return;
    vec_push(a, seen, t);
    if (t->kind != TK_STAGE)
        return;
    PtrVec stack = {0};
    vec_push(a, &stack, t->body);
    while (stack.len) {
        Expr *e = stack.items[--stack.len];
        if (e->kind == EX_LOAD)
            visit(a, e->tensor, order, seen);
        for (int i = 0; i < e->nargs; i++)
            vec_push(a, &stack, e->args[i]);
    }
    vec_push(a, order, t);
}

static void count_uses(Expr *e)
{
    if (e->kind == EX_LOAD)
        e->tensor->uses++;
    for (int i = 0; i < e->nargs; i++)
        count_uses(e->args[i]);
}

void te_graph_compact(Arena *a, Graph *g)
{
    PtrVec order = {0}, seen = {0};
    for (int i = 0; i < g->ninputs; i++) {
        vec_push(a, &seen, g->inputs[i]);
        vec_push(a, &order, g->inputs[i]);
    }
    for (int i = 0; i < g->noutputs; i++)
        visit(a, g->outputs[i], &order, &seen);
    g->tensors = (Tensor **)order.items;
    g->ntensors = order.len;
    for (int i = 0; i < g->ntensors; i++) {
        g->tensors[i]->id = i;
        g->tensors[i]->uses = 0;
    }
    for (int i = 0; i < g->ntensors; i++)
        if (g->tensors[i]->kind == TK_STAGE)
            count_uses(g->tensors[i]->body);
}

/* Run-time dims (lang/texc.h, Dim) are parsed and checked, but nothing
 * below sema takes a size at run time yet (doc/runtime-dims.md, the
 * phases): until it does, this one message says so at the declaration of
 * the first run-time dim, which is always one declared with a range (a
 * computed one comes after the dims it uses), and names the -D for every
 * declared one, so that one run of texc tells the whole fix. */
bool te_require_static_dims(const Graph *g)
{
    const Dim *first = NULL;
    int ndeclared = 0;
    for (int i = 0; i < g->ndims; i++)
        if (g->dims[i].runtime && g->dims[i].declared) {
            if (!first)
                first = &g->dims[i];
            ndeclared++;
        }
    if (!first)
        return true;
    char fix[512] = "";
    size_t len = 0;
    for (int i = 0; i < g->ndims && len < sizeof fix; i++)
        if (g->dims[i].runtime && g->dims[i].declared)
            len += (size_t)snprintf(fix + len, sizeof fix - len, "%s-D %s=VALUE", len ? " " : "",
                                    g->dims[i].name);
    diag_error(g->src, first->span,
               "run-time dim '%s' (%lld..%lld): this texc cannot compile run-time sizes yet; "
               "give %s a size with %s",
               first->name, (long long)first->lo, (long long)first->hi,
               ndeclared > 1 ? "each run-time dim" : "it", fix);
    return false;
}

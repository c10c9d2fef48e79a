/* graph.c — keeping a graph's tensor list in order after a rewrite.
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

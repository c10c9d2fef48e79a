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

/* Depth-first from T: the stages it needs, then T, appended to ORDER in
 * dependency order.  Iterative, with one stack of expressions still to
 * walk per stage being visited, so that a chain of stages as long as the
 * program allows does not exhaust the C stack.  Each load's tensor is
 * visited as soon as the load is reached, before its indices. */
typedef struct Visit {
    Tensor *t;
    PtrVec todo; /* Expr *: parts of t's body still to walk */
} Visit;

static void visit(Arena *a, Tensor *t, PtrVec *order, PtrMap *seen)
{
    if (!map_put(a, seen, t, 0))
        return;
    if (t->kind != TK_STAGE)
        return;
    PtrVec visits = {0};
    Visit *v = arena_alloc(a, sizeof *v);
    v->t = t;
    vec_push(a, &v->todo, t->body);
    vec_push(a, &visits, v);
    while (visits.len) {
        Visit *top = visits.items[visits.len - 1];
        if (!top->todo.len) {
            vec_push(a, order, top->t);
            visits.len--;
            continue;
        }
        Expr *e = top->todo.items[--top->todo.len];
        for (int i = 0; i < e->nargs; i++)
            vec_push(a, &top->todo, e->args[i]);
        if (e->kind == EX_LOAD && map_put(a, seen, e->tensor, 0) &&
            e->tensor->kind == TK_STAGE) {
            Visit *next = arena_alloc(a, sizeof *next);
            next->t = e->tensor;
            vec_push(a, &next->todo, e->tensor->body);
            vec_push(a, &visits, next);
        }
    }
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
    PtrVec order = {0};
    PtrMap seen = {0}; /* the tensors visited: a hashed set, so linear time */
    for (int i = 0; i < g->ninputs; i++) {
        map_put(a, &seen, g->inputs[i], 0);
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

/* Run-time dims (lang/texc.h, Dim) are compiled for the CPU; the rest
 * (doc/runtime-dims.md, the phases) takes static sizes only: this one
 * message says so at the declaration of the first run-time dim, which is
 * always one declared with a range (a computed one comes after the dims
 * it uses), and names the -D for every declared one, so that one run of
 * texc tells the whole fix. */
bool te_require_static_dims(const Graph *g, const char *what)
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
               "run-time dim '%s' (%lld..%lld): %s takes static sizes only, for now; "
               "give %s a size with %s",
               first->name, (long long)first->lo, (long long)first->hi, what,
               ndeclared > 1 ? "each run-time dim" : "it", fix);
    return false;
}

void te_unpacked_index(const Expr *load, Expr **src)
{
    const Tensor *wp = load->tensor;
    int rank = wp->rank - 1, at = wp->pack_dim;
    for (int d = 0, k = 1; d < rank; d++) {
        src[d] = d != at            ? load->args[k++]
                 : wp->pack_width ? load->args[0]->args[0] /* j of j / P */
                                  : load->args[rank];   /* one panel: j */
        if (wp->pack_group && d == wp->pack_kdim)
            src[d] = src[d]->args[0]; /* k of k / G */
    }
}

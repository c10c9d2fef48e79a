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
 *
 * Fusion recomputes: a producer read twice by its reader is computed
 * twice, and a chain whose every stage reads the one before it twice
 * would double with every link.  So a kernel grows only while it holds at
 * most TE_MAX_KERNEL_NODES expression nodes; a producer that would take
 * its reader past that stays a stage of its own (an optimization
 * decision, not an error: the program means the same either way).
 *
 * The pass decides first and builds once.  Deciding works on a summary of
 * each kernel (its size, whether it reduces or selects, how many copies
 * of each member it holds, who reads what) and visits the producers in
 * dependency order, earliest fusible first, as merging one stage at a
 * time and rescanning the graph would; only then is each kernel's body
 * expanded, once.  Time and memory are linear in the program and the
 * kernels' sizes, not in the length of the chains they merge.
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

/* A stage READER's direct loads of tensor T: how many, and whether each
 * reads T exactly at READER's own index variables, in order. */
typedef struct Edge {
    Tensor *reader, *t;
    int64_t loads;
    bool at_point;
} Edge;

/* The decision's state, every array by Tensor.id. */
typedef struct Fuse {
    OptCtx *c;
    Graph *g;
    Tensor **into;     /* the kernel a stage was merged into, or NULL */
    int64_t *copies;   /* a member: how many copies of it its kernel holds */
    int64_t *size;     /* a kernel: expression nodes, once expanded (a bound) */
    bool *reduces;     /* a kernel: some member's body reduces */
    bool *selects;     /* a kernel: some member's body selects */
    Edge **inst;       /* a member held once: the load that holds it */
    PtrVec *members;   /* a kernel: the stages merged into it (Tensor *) */
    PtrVec *readers;   /* Edge *: the stages that load the tensor */
    PtrVec *reads;     /* Edge *: the tensors the stage loads */
    int *heap, nheap;  /* stage ids still to look at, a min-heap */
    bool *queued;
} Fuse;

/* Expression nodes in E, counted as a tree (shared nodes once per use). */
static int64_t tree_size(const Expr *e)
{
    int64_t n = 1;
    for (int i = 0; i < e->nargs; i++)
        n += tree_size(e->args[i]);
    return n;
}

/* Records E's loads as edges of stage S (LAST[t->id]: S's edge for t). */
static void collect_loads(Fuse *f, Tensor *s, const Expr *e, Edge **last)
{
    if (e->kind == EX_LOAD) {
        Edge *edge = last[e->tensor->id];
        if (!edge || edge->reader != s) {
            edge = arena_alloc(f->c->arena, sizeof *edge);
            *edge = (Edge){ s, e->tensor, 0, true };
            last[e->tensor->id] = edge;
            vec_push(f->c->arena, &f->readers[e->tensor->id], edge);
            vec_push(f->c->arena, &f->reads[s->id], edge);
        }
        edge->loads++;
        for (int d = 0; d < e->nargs; d++)
            if (e->args[d]->kind != EX_VAR || e->args[d]->var != s->vars[d])
                edge->at_point = false;
    }
    for (int i = 0; i < e->nargs; i++)
        collect_loads(f, s, e->args[i], last);
}

static Tensor *kernel_of(Fuse *f, Tensor *t)
{
    while (f->into[t->id])
        t = f->into[t->id];
    return t;
}

static void heap_push(Fuse *f, int id)
{
    if (f->queued[id])
        return;
    f->queued[id] = true;
    int i = f->nheap++;
    for (; i > 0 && f->heap[(i - 1) / 2] > id; i = (i - 1) / 2)
        f->heap[i] = f->heap[(i - 1) / 2];
    f->heap[i] = id;
}

static int heap_pop(Fuse *f)
{
    int top = f->heap[0], last = f->heap[--f->nheap], i = 0;
    for (;;) {
        int k = 2 * i + 1;
        if (k >= f->nheap)
            break;
        if (k + 1 < f->nheap && f->heap[k + 1] < f->heap[k])
            k++;
        if (f->heap[k] >= last)
            break;
        f->heap[i] = f->heap[k];
        i = k;
    }
    f->heap[i] = last;
    f->queued[top] = false;
    return top;
}

/* The one kernel that reads P, or NULL if none or several do; *LOADS
 * receives how many loads of P it holds once expanded, *ONLY the edge
 * that holds the only one. */
static Tensor *single_reader(Fuse *f, const Tensor *p, int64_t *loads, Edge **only)
{
    Tensor *reader = NULL;
    *loads = 0;
    *only = NULL;
    PtrVec *rs = &f->readers[p->id];
    for (int i = 0; i < rs->len; i++) {
        Edge *e = rs->items[i];
        Tensor *k = kernel_of(f, e->reader);
        if (reader && k != reader)
            return NULL;
        reader = k;
        *loads += e->loads * f->copies[e->reader->id];
        *only = e;
    }
    return reader;
}

/* Does the only load of P (through edge E) read P at kernel R's point?
 * Each load on the way from E's reader up to R must read at its reader's
 * point. */
static bool at_kernel_point(Fuse *f, const Edge *e, const Tensor *r)
{
    for (;;) {
        if (!e->at_point)
            return false;
        if (e->reader == r)
            return true;
        e = f->inst[e->reader->id];
    }
}

/* Merges the kernel P into R, which holds LOADS copies of it. */
static void merge(Fuse *f, Tensor *p, Tensor *r, int64_t loads, Edge *only)
{
    Arena *a = f->c->arena;
    f->into[p->id] = r;
    f->copies[p->id] = loads;
    f->inst[p->id] = loads == 1 ? only : NULL;
    f->size[r->id] += loads * f->size[p->id];
    f->reduces[r->id] |= f->reduces[p->id];
    f->selects[r->id] |= f->selects[p->id];
    PtrVec *pm = &f->members[p->id];
    vec_push(a, pm, p);
    for (int i = 0; i < pm->len; i++) {
        Tensor *m = pm->items[i];
        if (m != p)
            f->copies[m->id] *= loads;
        vec_push(a, &f->members[r->id], m);
        /* what M reads now has R, not P, as its reader */
        for (int k = 0; k < f->reads[m->id].len; k++) {
            Edge *e = f->reads[m->id].items[k];
            if (e->t->kind == TK_STAGE)
                heap_push(f, e->t->id);
        }
    }
    te_add_aliases(a, r, p->name, p);
    f->c->stats->fused++;
}

/* Looks at stage P: merges it into its reader if a rule allows. */
static void consider(Fuse *f, Tensor *p)
{
    if (p->kind != TK_STAGE || p->is_output || f->into[p->id])
        return;
    int64_t loads;
    Edge *only;
    Tensor *r = single_reader(f, p, &loads, &only);
    if (!r || f->size[r->id] + loads * f->size[p->id] > TE_MAX_KERNEL_NODES)
        return;
    if (!f->reduces[p->id]) {
        /* rule 1: an elementwise producer */
        if (f->selects[p->id] && f->reduces[r->id])
            return;
    } else if (loads == 1 && at_kernel_point(f, only, r) && !f->reduces[r->id] &&
               te_same_shape(r, p)) {
        /* rule 2: a reduction into its reader's epilogue; the reader's
         * variables take the anchor's names */
        for (int d = 0; d < r->rank; d++)
            r->vars[d]->name = p->vars[d]->name;
        r->anchor = p->anchor ? p->anchor : p->name;
    } else {
        return;
    }
    merge(f, p, r, loads, only);
}

/* Copies E, in which VARS[i] stands for VALUES[i], with every load of a
 * merged stage replaced by that stage's body at the load's indices. */
static Expr *expand(Fuse *f, Expr *e, IterVar **vars, Expr **values, int n)
{
    if (e->kind == EX_VAR) {
        for (int i = 0; i < n; i++)
            if (e->var == vars[i])
                return values[i];
        return e;
    }
    Arena *a = f->c->arena;
    if (e->kind == EX_LOAD && f->into[e->tensor->id]) {
        Tensor *p = e->tensor;
        Expr **idx = arena_alloc(a, sizeof *idx * (size_t)(e->nargs + 1));
        for (int d = 0; d < e->nargs; d++)
            idx[d] = expand(f, e->args[d], vars, values, n);
        return expand(f, p->body, p->vars, idx, p->rank);
    }
    if (e->nargs == 0)
        return e;
    Expr *c = arena_alloc(a, sizeof *c);
    *c = *e;
    c->args = arena_alloc(a, sizeof *c->args * (size_t)e->nargs);
    for (int i = 0; i < e->nargs; i++)
        c->args[i] = expand(f, e->args[i], vars, values, n);
    return c;
}

bool te_pass_fuse(OptCtx *c, Graph *g)
{
    Arena *a = c->arena;
    size_t n = (size_t)g->ntensors + 1;
    Fuse f = { .c = c, .g = g };
    f.into = arena_alloc(a, sizeof *f.into * n);
    f.copies = arena_alloc(a, sizeof *f.copies * n);
    f.size = arena_alloc(a, sizeof *f.size * n);
    f.reduces = arena_alloc(a, sizeof *f.reduces * n);
    f.selects = arena_alloc(a, sizeof *f.selects * n);
    f.inst = arena_alloc(a, sizeof *f.inst * n);
    f.members = arena_alloc(a, sizeof *f.members * n);
    f.readers = arena_alloc(a, sizeof *f.readers * n);
    f.reads = arena_alloc(a, sizeof *f.reads * n);
    f.heap = arena_alloc(a, sizeof *f.heap * n);
    f.queued = arena_alloc(a, sizeof *f.queued * n);
    Edge **last = arena_alloc(a, sizeof *last * n);
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        TE_ASSERT(t->id == i);
        f.copies[i] = 1;
        if (t->kind != TK_STAGE)
            continue;
        f.size[i] = tree_size(t->body);
        f.reduces[i] = te_expr_any(t->body, is_reduce, NULL);
        f.selects[i] = te_expr_any(t->body, is_select, NULL);
        collect_loads(&f, t, t->body, last);
        heap_push(&f, i);
    }
    while (f.nheap)
        consider(&f, g->tensors[heap_pop(&f)]);
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *r = g->tensors[i];
        if (r->kind == TK_STAGE && !f.into[i] && f.members[i].len)
            r->body = expand(&f, r->body, NULL, NULL, 0);
    }
    te_graph_compact(a, g);
    return true;
}

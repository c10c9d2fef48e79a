/* pass_fuse.c — fusion: stages merge into kernels.
 *
 * requires: a checked Graph.
 * guarantees: the same values at every output, exactly (fusion moves
 * computation, it never reassociates it); fewer stages, each of which the
 * scheduler lowers as one kernel:
 *   1. an elementwise stage (no reduction in its body, not an output) that
 *      exactly one other stage reads is substituted into that reader
 *      (its reads are cheap to recompute; several readers would each pay,
 *      so those keep the stage), unless
 *      - it selects and the reader reduces: a padded image read by a
 *        convolution would run its bounds checks once per multiply-add,
 *        and keep the reduction from vectorizing; or
 *      - it selects and the reader has more elements than it: im2col's
 *        columns (col[.., kh, kw, q] = pad[.., q / OW + kh, q % OW + kw])
 *        would run the padding's bounds checks, and what the padding
 *        reads through them (the layer before's bias and ReLU), once per
 *        window position, KH x KW times an element, as conditional loads
 *        that GCC does not vectorize; kept, the padding runs them once an
 *        element and the columns are plain copies; or
 *      - it divides an index and the reader reduces over it along the
 *        reader's innermost axis: im2col's columns (col[.., q] =
 *        x[.., q / OW, q % OW], read by conv[n, f, q]) would run the
 *        divisions once per multiply-add, and read x where it is not
 *        contiguous (a matmul's row operand x[i, k], read once a row and
 *        k, is still fused); or
 *      - the reader would recompute it several times per element: it
 *        reads the stage inside a reduction, at an index that leaves out
 *        some of the reader's own axes, so each element is needed once
 *        per point of those axes (the REUSE: rn[i, c] in
 *        up[i, n] = sum(c) rn[i, c] * w1[c, n] is needed once per n).
 *        The cost model: recomputing costs (REUSE - 1) x the stage's
 *        operations per element (te_fuse_op_cost: 1 for an add, more for a
 *        division or a transcendental), keeping the stage costs a store
 *        and a load per element (TE_FUSE_MEMORY_COST); the cheaper wins.
 *        A stage that only moves data (a transpose, a slice: no
 *        operations) is always fused: its index arithmetic is free, and
 *        the layout pass can still prepack what it reads;
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
 * Every decision is recorded with its reason (Tensor.fuse_notes, shown by
 * --dump=kernels): what each kernel fused and why, and why a stage that
 * stayed a kernel of its own was not fused.
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
    bool in_reduce;    /* some load sits inside a reduction of READER */
    const Expr *load;  /* the first load (the only one when LOADS is 1) */
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
    bool *divides;     /* ... or divides an index (te_is_index_division) */
    Edge **inst;       /* a member held once: the load that holds it */
    double *cost;      /* a kernel: operations per element (te_fuse_op_cost) */
    const char **why;  /* a stage: why it was last left unfused */
    PtrVec *notes;     /* a kernel: its decisions (char *), in order */
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

double te_fuse_op_cost(const Expr *e, const double *inlined, int ntensors)
{
    double c = 0;
    if (e->kind == EX_OP) {
        switch (e->op) {
        case OP_DIV: case OP_MOD: case OP_SQRT: case OP_RSQRT: c = 4; break;
        case OP_EXP: case OP_LOG: case OP_TANH: case OP_SIGMOID: case OP_POW: c = 10; break;
        case OP_ERF: case OP_GELU: c = 20; break;
        default: c = 1; break;
        }
    }
    if (e->kind == EX_LOAD)
        /* its indices are address arithmetic */
        return inlined && e->tensor->id < ntensors ? inlined[e->tensor->id] : 0;
    for (int i = 0; i < e->nargs; i++)
        c += te_fuse_op_cost(e->args[i], inlined, ntensors);
    return c;
}

/* Does E mention variable V? */
static bool mentions(const Expr *e, const IterVar *v)
{
    if (e->kind == EX_VAR)
        return e->var == v;
    for (int i = 0; i < e->nargs; i++)
        if (mentions(e->args[i], v))
            return true;
    return false;
}

/* USED[d]: does some index of LOAD mention VARS[d]? */
static void load_uses(const Expr *load, IterVar *const *vars, int rank, bool *used)
{
    for (int d = 0; d < rank; d++) {
        used[d] = false;
        for (int k = 0; k < load->nargs && !used[d]; k++)
            used[d] = mentions(load->args[k], vars[d]);
    }
}

/* The product of SHAPE's extents along the axes not USED; *AXIS the
 * first of them (NULL if none). */
static double unused_extent(const bool *used, IterVar *const *vars, const int64_t *shape, int rank,
                            const IterVar **axis)
{
    double times = 1;
    *axis = NULL;
    for (int d = 0; d < rank; d++)
        if (!used[d]) {
            times *= (double)shape[d];
            if (!*axis)
                *axis = vars[d];
        }
    return times;
}

double te_fuse_reuse(const Expr *e, bool in_reduce, const Tensor *p, IterVar *const *vars,
                     const int64_t *shape, int rank, const IterVar **axis)
{
    in_reduce |= e->kind == EX_REDUCE;
    double most = 1;
    if (e->kind == EX_LOAD && e->tensor == p && in_reduce) {
        bool used[TE_MAX_RANK];
        load_uses(e, vars, rank, used);
        most = unused_extent(used, vars, shape, rank, axis);
    }
    for (int i = 0; i < e->nargs; i++) {
        const IterVar *a = NULL;
        double t = te_fuse_reuse(e->args[i], in_reduce, p, vars, shape, rank, &a);
        if (t > most) {
            most = t;
            *axis = a;
        }
    }
    return most;
}

bool te_fuse_recompute_pays(double reuse, double cost)
{
    return (reuse - 1) * cost <= TE_FUSE_MEMORY_COST;
}

bool te_fuse_keeps_select(const Tensor *p, const Tensor *r)
{
    return tensor_elems(r) > tensor_elems(p);
}

/* Records E's loads as edges of stage S (LAST[t->id]: S's edge for t);
 * IN_REDUCE: E lies inside a reduction of S's body. */
static void collect_loads(Fuse *f, Tensor *s, const Expr *e, Edge **last, bool in_reduce)
{
    in_reduce |= e->kind == EX_REDUCE;
    if (e->kind == EX_LOAD) {
        Edge *edge = last[e->tensor->id];
        if (!edge || edge->reader != s) {
            edge = arena_alloc(f->c->arena, sizeof *edge);
            *edge = (Edge){ s, e->tensor, 0, true, false, e };
            last[e->tensor->id] = edge;
            vec_push(f->c->arena, &f->readers[e->tensor->id], edge);
            vec_push(f->c->arena, &f->reads[s->id], edge);
        }
        edge->loads++;
        edge->in_reduce |= in_reduce;
        for (int d = 0; d < e->nargs; d++)
            if (e->args[d]->kind != EX_VAR || e->args[d]->var != s->vars[d])
                edge->at_point = false;
    }
    for (int i = 0; i < e->nargs; i++)
        collect_loads(f, s, e->args[i], last, in_reduce);
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
    f->cost[r->id] += (double)loads * f->cost[p->id];
    f->reduces[r->id] |= f->reduces[p->id];
    f->selects[r->id] |= f->selects[p->id];
    f->divides[r->id] |= f->divides[p->id];
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

static bool uses_up_to(Fuse *f, const Edge *e, const Tensor *r, bool *used, bool *inside);

/* How many times kernel R would compute each element of a stage that it
 * loads through edge E, once fused: 1 unless some load on the way from
 * E's reader up to R lies inside a reduction; then the product of R's
 * extents along those of its own axes that the loads' indices leave out.
 * *AXIS receives the first such axis.  A chain through a member held in
 * several copies is not followed (1: as if the load were R's own). */
static double reuse_along(Fuse *f, const Edge *e, const Tensor *r, const IterVar **axis)
{
    bool used[TE_MAX_RANK], inside;
    *axis = NULL;
    if (!uses_up_to(f, e, r, used, &inside))
        return 1;
    return inside ? unused_extent(used, r->vars, r->shape, r->rank, axis) : 1;
}

/* Which of kernel R's axes the loads from edge E up to R use (USED, by
 * R's dims), and whether one of them lies inside a reduction (*INSIDE);
 * false for a chain through a member held in several copies (not
 * followed). */
static bool uses_up_to(Fuse *f, const Edge *e, const Tensor *r, bool *used, bool *inside)
{
    *inside = e->in_reduce;
    const Tensor *s = e->reader;
    load_uses(e->load, s->vars, s->rank, used);
    while (s != r) {
        const Edge *up = f->inst[s->id];
        if (!up)
            return false;
        bool next[TE_MAX_RANK] = {false};
        for (int d = 0; d < up->reader->rank; d++)
            for (int k = 0; k < s->rank && !next[d]; k++)
                next[d] = used[k] && mentions(up->load->args[k], up->reader->vars[d]);
        memcpy(used, next, sizeof next);
        *inside |= up->in_reduce;
        s = up->reader;
    }
    return true;
}

/* Does kernel R read stage P along its innermost axis, the one its
 * reduction's micro-kernel vectorizes (im2col's columns, read at [.., q]
 * by conv[n, f, q]; not a matmul's row operand x[i, k], read once a row
 * and k)?  A chain not followed counts as yes. */
static bool read_along_inner(Fuse *f, const Tensor *p, const Tensor *r)
{
    PtrVec *rs = &f->readers[p->id];
    for (int i = 0; i < rs->len; i++) {
        bool used[TE_MAX_RANK], inside;
        if (!uses_up_to(f, rs->items[i], r, used, &inside) || (r->rank > 0 && used[r->rank - 1]))
            return true;
    }
    return false;
}

/* The largest reuse_along over P's loads by its one reader kernel R. */
static double reuse_of(Fuse *f, const Tensor *p, const Tensor *r, const IterVar **axis)
{
    double most = 1;
    *axis = NULL;
    PtrVec *rs = &f->readers[p->id];
    for (int i = 0; i < rs->len; i++) {
        const IterVar *a;
        double t = reuse_along(f, rs->items[i], r, &a);
        if (t > most) {
            most = t;
            *axis = a;
        }
    }
    return most;
}

/* Why stage P, read by several kernels, stays one of its own. */
static const char *several_readers(Fuse *f, const Tensor *p)
{
    Arena *a = f->c->arena;
    PtrVec names = {0};
    PtrVec *rs = &f->readers[p->id];
    for (int i = 0; i < rs->len; i++) {
        const Tensor *k = kernel_of(f, ((Edge *)rs->items[i])->reader);
        bool seen = false;
        for (int j = 0; j < names.len && !seen; j++)
            seen = names.items[j] == k;
        if (!seen)
            vec_push(a, &names, (void *)k);
    }
    char *s = arena_printf(a, "read by %d kernels (", names.len);
    for (int j = 0; j < names.len; j++)
        s = arena_printf(a, "%s%s%s", s, j ? ", " : "", ((const Tensor *)names.items[j])->name);
    return arena_printf(a, "%s): each would recompute it", s);
}

/* Looks at stage P: merges it into its reader if a rule allows, and
 * records why or why not. */
static void consider(Fuse *f, Tensor *p)
{
    if (p->kind != TK_STAGE || p->is_output || f->into[p->id])
        return;
    Arena *a = f->c->arena;
    int64_t loads;
    Edge *only;
    Tensor *r = single_reader(f, p, &loads, &only);
    if (!r) {
        if (f->readers[p->id].len)
            f->why[p->id] = several_readers(f, p);
        return;
    }
    if (f->size[r->id] + loads * f->size[p->id] > TE_MAX_KERNEL_NODES) {
        f->why[p->id] = arena_printf(a, "fused into %s, it would take that kernel past %d expression nodes",
                                     r->name, TE_MAX_KERNEL_NODES);
        return;
    }
    const char *note;
    if (!f->reduces[p->id]) {
        /* rule 1: an elementwise producer */
        if (f->selects[p->id] && f->reduces[r->id]) {
            f->why[p->id] = arena_printf(a, "it selects and %s reduces over it: the bounds checks "
                                         "would run once per multiply-add", r->name);
            return;
        }
        if (f->selects[p->id] && te_fuse_keeps_select(p, r)) {
            f->why[p->id] = arena_printf(a, "it selects and %s has %.0f times its elements: the "
                                         "bounds checks would run in each of them, as conditional "
                                         "loads", r->name, (double)tensor_elems(r) / (double)tensor_elems(p));
            return;
        }
        if (f->divides[p->id] && f->reduces[r->id] && read_along_inner(f, p, r)) {
            f->why[p->id] = arena_printf(a, "its indices divide and %s reduces over it along its "
                                         "innermost axis: the divisions would run once per "
                                         "multiply-add, and its reads would not be contiguous",
                                         r->name);
            return;
        }
        const IterVar *axis;
        double times = reuse_of(f, p, r, &axis);
        if (!te_fuse_recompute_pays(times, f->cost[p->id])) {
            f->why[p->id] = arena_printf(a, "%s reads it inside a reduction, once per %s (%.0f times "
                                         "an element): recomputing its %g operations there costs "
                                         "more than a store and a load", r->name, axis->name, times,
                                         f->cost[p->id]);
            return;
        }
        note = times > 1 ? arena_printf(a, "%s: elementwise, inlined into its only reader "
                                        "(recomputed %.0f times an element, %g operations: "
                                        "cheaper than a store and a load)", p->name, times,
                                        f->cost[p->id])
                         : arena_printf(a, "%s: elementwise, inlined into its only reader", p->name);
    } else if (loads == 1 && at_kernel_point(f, only, r) && !f->reduces[r->id] &&
               te_same_shape(r, p)) {
        /* rule 2: a reduction into its reader's epilogue; the reader's
         * variables take the anchor's names */
        for (int d = 0; d < r->rank; d++)
            r->vars[d]->name = p->vars[d]->name;
        r->anchor = p->anchor ? p->anchor : p->name;
        note = arena_printf(a, "%s: a reduction read at its reader's own point: the reader "
                            "is its epilogue", p->name);
    } else {
        f->why[p->id] = f->reduces[r->id] ? arena_printf(a, "a reduction, and %s reduces too", r->name)
                        : loads != 1      ? arena_printf(a, "a reduction that %s reads %lld times",
                                                         r->name, (long long)loads)
                        : !te_same_shape(r, p)
                            ? arena_printf(a, "a reduction of another shape than %s", r->name)
                            : arena_printf(a, "a reduction that %s reads away from its own point",
                                           r->name);
        return;
    }
    f->why[p->id] = NULL;
    vec_push(a, &f->notes[r->id], (void *)note);
    for (int i = 0; i < f->notes[p->id].len; i++)
        vec_push(a, &f->notes[r->id], f->notes[p->id].items[i]);
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
    f.divides = arena_alloc(a, sizeof *f.divides * n);
    f.inst = arena_alloc(a, sizeof *f.inst * n);
    f.cost = arena_alloc(a, sizeof *f.cost * n);
    f.why = arena_alloc(a, sizeof *f.why * n);
    f.notes = arena_alloc(a, sizeof *f.notes * n);
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
        f.divides[i] = te_expr_any(t->body, te_is_index_division, NULL);
        f.cost[i] = te_fuse_op_cost(t->body, NULL, 0);
        collect_loads(&f, t, t->body, last, false);
        heap_push(&f, i);
    }
    while (f.nheap)
        consider(&f, g->tensors[heap_pop(&f)]);
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *r = g->tensors[i];
        if (r->kind != TK_STAGE || f.into[i])
            continue;
        if (f.members[i].len)
            r->body = expand(&f, r->body, NULL, NULL, 0);
        if (f.why[i])
            vec_push(a, &r->fuse_notes, arena_printf(a, "not fused: %s", f.why[i]));
        for (int k = 0; k < f.notes[i].len; k++)
            vec_push(a, &r->fuse_notes, f.notes[i].items[k]);
    }
    te_graph_compact(a, g);
    return true;
}

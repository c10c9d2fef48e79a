/* default_cuda.c — the schedule texc uses for a cuda build when the file
 * has none for a stage.
 *
 * requires: a SchedState for target cuda; SCHED, the default schedule
 * being built by sch_default (it already holds the compute_inline of every
 * stage that is neither an output nor a reduction); WRITTEN, the file's
 * schedule already applied, or NULL.  Stages WRITTEN names are left alone.
 * guarantees: statements appended to SCHED, ordinary ones (they print,
 * replay and mutate like written ones), that sch_apply accepts and that
 * compute every stage correctly for every size: a split that does not
 * divide leaves a guard, never an out-of-bounds access.  For each root
 * stage (an output or a reduction, not computed at another):
 *
 *   a reduction with two or more spatial axes (matmul, batched matmul,
 *   convolution, pooling) gets a 2-D tile of its two innermost spatial
 *   axes i and j: a block computes BM x BN outputs with 16 x 16 threads,
 *   each thread a TM x TN register tile (BM = BN = 128, TM = TN = 8 when
 *   the output is large enough to fill the GPU with such blocks, else 64
 *   and 4; smaller axes get smaller tiles), the outer spatial axes fused
 *   into block.z.  A thread's outputs are 16 apart (j = jo*BN + jr*16 +
 *   jt), so that a warp's reads of a shared tile and its stores of the
 *   results are consecutive: no bank conflicts, coalesced stores.  With a single reduction axis k, the k loop is split by
 *   16 and the operands the stage reads at plain (i, k), (k, j) ... indices
 *   are staged in shared memory tiles at ko, fetched one step ahead
 *   (pipeline 2):
 *       io, jo (blocks)  ko  it, jt (threads)  ki  ir, jr (unrolled)
 *   The accumulators stay in registers: codegen/cuda.c keeps a root
 *   reduction's sums in a per-thread array when its thread loops cover
 *   the block, as they do here.
 *
 *   any other stage: its spatial loops fused into one, split by 256 (64
 *   for a reduction, whose threads each run a whole serial reduction),
 *   the outer part bound to block.x and the inner to thread.x.
 */
#include <string.h>

#include "sched/sched.h"

typedef struct Builder {
    SchedState *st;
    Schedule *sched;
    Span span;      /* the stage's definition: where errors would point */
    SStage *s;      /* the stage being scheduled */
    PtrVec names;   /* const char *: loop names the stage has or will have */
} Builder;

static SchedStmt *emit(Builder *b, const char *prim, int nargs)
{
    Arena *a = b->st->arena;
    SchedStmt *s = arena_alloc(a, sizeof *s);
    s->span = s->stage_span = s->prim_span = b->span;
    s->stage = b->s->name;
    s->prim = prim;
    s->args = arena_alloc(a, sizeof *s->args * (size_t)(nargs + 1));
    s->nargs = nargs;
    s->outs = arena_alloc(a, sizeof *s->outs * 4);
    s->out_spans = arena_alloc(a, sizeof *s->out_spans * 4);
    PtrVec v = { (void **)b->sched->stmts, b->sched->nstmts, b->sched->nstmts };
    vec_push(a, &v, s);
    b->sched->stmts = (SchedStmt **)v.items;
    b->sched->nstmts = v.len;
    return s;
}

static SchedArg name_arg(const char *name)
{
    return (SchedArg){ .kind = SA_NAME, .name = name };
}

static SchedArg int_arg(int64_t v)
{
    return (SchedArg){ .kind = SA_INT, .ival = v };
}

static bool taken(const PtrVec *names, const char *name)
{
    for (int i = 0; i < names->len; i++)
        if (strcmp(names->items[i], name) == 0)
            return true;
    return false;
}

/* A loop name the stage does not use yet: BASE, or BASE2, BASE3, ... */
static const char *fresh(Builder *b, const char *base)
{
    const char *name = base;
    for (int k = 2; taken(&b->names, name); k++)
        name = arena_printf(b->st->arena, "%s%d", base, k);
    vec_push(b->st->arena, &b->names, (void *)name);
    return name;
}

static void annotate(Builder *b, const char *prim, const char *loop)
{
    emit(b, prim, 1)->args[0] = name_arg(loop);
}

static void bind(Builder *b, const char *loop, const char *axis)
{
    SchedStmt *s = emit(b, "bind", 2);
    s->args[0] = name_arg(loop);
    s->args[1] = name_arg(axis);
}

static void split(Builder *b, const char *loop, int64_t f, const char *outer, const char *inner)
{
    SchedStmt *s = emit(b, "split", 2);
    s->args[0] = name_arg(loop);
    s->args[1] = int_arg(f);
    s->outs[0] = outer;
    s->outs[1] = inner;
    s->nouts = 2;
}

static const char *fuse(Builder *b, const char *x, const char *y)
{
    const char *f = fresh(b, arena_printf(b->st->arena, "%s_%s", x, y));
    SchedStmt *s = emit(b, "fuse", 2);
    s->args[0] = name_arg(x);
    s->args[1] = name_arg(y);
    s->outs[0] = f;
    s->nouts = 1;
    return f;
}

/* The loops of S's spatial axes FROM..TO-1 fused into one; its name. */
static const char *fuse_axes(Builder *b, int from, int to)
{
    const char *f = b->s->svars[from]->name;
    for (int d = from + 1; d < to; d++)
        f = fuse(b, f, b->s->svars[d]->name);
    return f;
}

static int64_t extent_product(const SStage *s, int from, int to)
{
    int64_t n = 1;
    for (int d = from; d < to; d++)
        n *= s->svars[d]->extent; /* fits: the tensor's element count does */
    return n;
}

/* Elementwise stages and reductions over one spatial axis: a flat grid. */
static void schedule_flat(Builder *b)
{
    SStage *s = b->s;
    const char *f = fuse_axes(b, 0, s->nsvars);
    int64_t threads = s->is_reduce ? 64 : 256;
    const char *bx = fresh(b, "bx"), *tx = fresh(b, "tx");
    split(b, f, threads, bx, tx);
    bind(b, bx, "block.x");
    bind(b, tx, "thread.x");
}

static int64_t pow2_at_least(int64_t n)
{
    int64_t p = 1;
    while (p < n)
        p *= 2;
    return p;
}

/* The block tile of an axis of EXTENT and the register tile inside it:
 * 16 threads along the axis unless the axis is shorter. */
static void axis_tile(int64_t extent, int64_t big, int64_t *block, int64_t *reg)
{
    *block = extent >= big ? big : pow2_at_least(extent);
    *reg = *block >= 16 ? *block / 16 : 1;
}

/* Does every load of T in E index it with plain variables only? */
static bool plain_loads(const Expr *e, const Tensor *t, bool *seen, const IterVar *k, bool *uses_k)
{
    if (e->kind == EX_LOAD && e->tensor == t) {
        *seen = true;
        for (int d = 0; d < e->nargs; d++) {
            if (e->args[d]->kind != EX_VAR)
                return false;
            *uses_k = *uses_k || e->args[d]->var == k;
        }
    }
    for (int i = 0; i < e->nargs; i++)
        if (!plain_loads(e->args[i], t, seen, k, uses_k))
            return false;
    return true;
}

/* Is T stored in memory when S reads it (not substituted into S)? */
static bool materialized(SchedState *st, const Tensor *t)
{
    if (t->kind == TK_INPUT)
        return true;
    SStage *p = NULL;
    for (int i = 0; i < st->stages.len && !p; i++)
        if (((SStage *)st->stages.items[i])->tensor == t)
            p = st->stages.items[i];
    return p && !p->inlined && !p->attach && (p->tensor->is_output || p->is_reduce);
}

/* A stage or input name no one uses yet, for a cache stage. */
static const char *fresh_stage(Builder *b, const char *base)
{
    SchedState *st = b->st;
    const char *name = base;
    for (int k = 2;; k++) {
        bool used = sch_find_stage(st, name) != NULL;
        for (int i = 0; i < st->g->ninputs && !used; i++)
            used = strcmp(st->g->inputs[i]->name, name) == 0;
        for (int i = 0; i < b->sched->nstmts && !used; i++)
            used = b->sched->stmts[i]->result && strcmp(b->sched->stmts[i]->result, name) == 0;
        if (!used)
            return name;
        name = arena_printf(st->arena, "%s%d", base, k);
    }
}

int sch_cuda_staged_operands(SchedState *st, const SStage *s, const Tensor **out)
{
    int n = 0;
    for (int i = 0; i < st->g->ntensors && n < TE_MAX_RANK; i++) {
        const Tensor *t = st->g->tensors[i];
        bool seen = false, uses_k = false;
        if (t != s->tensor && materialized(st, t) &&
            plain_loads(s->value, t, &seen, s->rvars[0], &uses_k) && seen && uses_k)
            out[n++] = t;
    }
    return n;
}

static void schedule_tiled(Builder *b)
{
    SchedState *st = b->st;
    SStage *s = b->s;
    int n = s->nsvars;
    int64_t iext = s->svars[n - 2]->extent, jext = s->svars[n - 1]->extent;
    int64_t batch = extent_product(s, 0, n - 2);
    /* 128 x 128 tiles when at least 256 such blocks fill the GPU */
    int64_t big = iext >= 128 && jext >= 128 &&
                  batch * ((iext + 127) / 128) * ((jext + 127) / 128) >= 256 ? 128 : 64;
    int64_t bm, tm, bn, tn;
    axis_tile(iext, big, &bm, &tm);
    axis_tile(jext, big, &bn, &tn);
    const Tensor *staged[TE_MAX_RANK];
    int nstaged = s->nrvars == 1 ? sch_cuda_staged_operands(st, s, staged) : 0;

    PtrVec order = {0};
    Arena *a = st->arena;
    const char *bz = NULL;
    if (n > 2) {
        bz = fuse_axes(b, 0, n - 2);
        vec_push(a, &order, (void *)bz);
    }
    const char *i = s->svars[n - 2]->name, *j = s->svars[n - 1]->name;
    const char *io = fresh(b, arena_printf(a, "%so", i)), *it = fresh(b, arena_printf(a, "%st", i));
    const char *jo = fresh(b, arena_printf(a, "%so", j)), *jt = fresh(b, arena_printf(a, "%st", j));
    const char *ir = NULL, *jr = NULL;
    if (tm > 1) {
        const char *ib = fresh(b, arena_printf(a, "%sb", i));
        ir = fresh(b, arena_printf(a, "%sr", i));
        split(b, i, bm, io, ib);
        split(b, ib, bm / tm, ir, it);
    } else {
        split(b, i, bm, io, it);
    }
    if (tn > 1) {
        const char *jb = fresh(b, arena_printf(a, "%sb", j));
        jr = fresh(b, arena_printf(a, "%sr", j));
        split(b, j, bn, jo, jb);
        split(b, jb, bn / tn, jr, jt);
    } else {
        split(b, j, bn, jo, jt);
    }
    const char *ko = NULL, *ki = NULL;
    if (nstaged > 0) {
        const char *k = s->rvars[0]->name;
        ko = fresh(b, arena_printf(a, "%so", k));
        ki = fresh(b, arena_printf(a, "%si", k));
        split(b, k, 16, ko, ki);
    }
    vec_push(a, &order, (void *)io);
    vec_push(a, &order, (void *)jo);
    if (ko)
        vec_push(a, &order, (void *)ko);
    vec_push(a, &order, (void *)it);
    vec_push(a, &order, (void *)jt);
    if (ki)
        vec_push(a, &order, (void *)ki);
    else
        for (int r = 0; r < s->nrvars; r++)
            vec_push(a, &order, (void *)s->rvars[r]->name);
    if (ir)
        vec_push(a, &order, (void *)ir);
    if (jr)
        vec_push(a, &order, (void *)jr);
    SchedStmt *r = emit(b, "reorder", order.len);
    for (int k = 0; k < order.len; k++)
        r->args[k] = name_arg(order.items[k]);

    /* gridDim.y and .z are at most 65535: a loop too long stays a loop */
    if (bz && batch <= 65535)
        bind(b, bz, "block.z");
    if ((iext + bm - 1) / bm <= 65535)
        bind(b, io, "block.y");
    bind(b, jo, "block.x");
    bind(b, it, "thread.y");
    bind(b, jt, "thread.x");
    if (ki)
        annotate(b, "unroll", ki);
    if (ir)
        annotate(b, "unroll", ir);
    if (jr)
        annotate(b, "unroll", jr);
    for (int k = 0; k < nstaged; k++) {
        SchedStmt *c = emit(b, "cache_read", 2);
        c->stage = staged[k]->name;
        c->result = fresh_stage(b, arena_printf(a, "%s_shared", staged[k]->name));
        c->args[0] = name_arg("shared");
        c->args[1] = name_arg(s->name);
        c->at = ko;
        c->at_span = b->span;
    }
    if (nstaged > 0) {
        SchedStmt *p = emit(b, "pipeline", 2);
        p->args[0] = name_arg(ko);
        p->args[1] = int_arg(2);
    }
}

/* Does the written schedule W name stage S (or an alias)? As default.c asks. */
static bool mentioned(const Schedule *w, const SStage *stage)
{
    for (int i = 0; w && i < w->nstmts; i++) {
        const SchedStmt *s = w->stmts[i];
        if (sch_stage_named(stage, s->stage) || (s->result && sch_stage_named(stage, s->result)))
            return true;
        if (s->nargs > 0 && s->args[0].kind == SA_NAME && sch_stage_named(stage, s->args[0].name) &&
            strcmp(s->prim, "compute_at") == 0)
            return true;
    }
    return false;
}

void sch_default_cuda(SchedState *st, Schedule *sched, const Schedule *written)
{
    int nstages = st->stages.len; /* cache stages added below need nothing */
    for (int i = 0; i < nstages; i++) {
        SStage *s = st->stages.items[i];
        if ((!s->tensor->is_output && !s->is_reduce) || s->nsvars == 0 || s->inlined ||
            s->attach || mentioned(written, s))
            continue;
        Builder b = { st, sched, s->tensor->span, s, {0} };
        for (int k = 0; k < s->loops.len; k++)
            vec_push(st->arena, &b.names, (void *)((Loop *)s->loops.items[k])->name);
        if (s->is_reduce && s->nsvars >= 2)
            schedule_tiled(&b);
        else
            schedule_flat(&b);
    }
}

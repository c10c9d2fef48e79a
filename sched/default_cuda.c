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
 *   results are consecutive: no bank conflicts, coalesced stores.  With a
 *   single reduction axis k, the k loop is split by
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
 *
 *   a reduction the tensor cores can compute (sched/mma.c) when building
 *   for sm_80 or later: tensorize, with sch_mma_default's tiles; -v says
 *   why another matmul-like reduction is not (its SStage.mma_why).
 *
 * Both are sched/template.c's forms (sch_template_cuda_tile, _flat), the
 * ones the tuner's automatic CUDA space varies: this file picks their
 * numbers and its own loop names (BASE, BASE2, ...), nothing else.
 */
#include <string.h>

#include "sched/sched.h"

typedef struct Builder {
    SchedState *st;
    SchEmit e;      /* the statements go to sch_default's schedule */
    SStage *s;      /* the stage being scheduled */
    PtrVec names;   /* const char *: loop names the stage has or will have */
    SchLoops loops; /* the names sched/template.c's forms use */
} Builder;

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

/* The names of the loops that fusing S's spatial axes FROM..TO-1 one
 * after another creates (x_y, then x_y_z, ...). */
static const char **fused_names(Builder *b, int from, int to)
{
    Arena *a = b->st->arena;
    const char **out = arena_alloc(a, sizeof *out * (size_t)(to - from + 1));
    const char *f = b->s->svars[from]->name;
    for (int d = from + 1; d < to; d++)
        f = out[d - from - 1] = fresh(b, arena_printf(a, "%s_%s", f, b->s->svars[d]->name));
    return out;
}

/* The axes' extents multiplied, each at its hint where it is a run-time
 * size (sch_extent_hint). */
static int64_t extent_product(const SchedState *st, const SStage *s, int from, int to)
{
    int64_t n = 1;
    for (int d = from; d < to; d++)
        n *= sch_extent_hint(st, s->svars[d]); /* fits: the tensor's element count does */
    return n;
}

/* Elementwise stages and reductions over one spatial axis: a flat grid
 * (sch_template_cuda_flat). */
static void schedule_flat(Builder *b)
{
    SStage *s = b->s;
    b->loops.bz = fused_names(b, 0, s->nsvars);
    b->loops.bx = fresh(b, "bx"), b->loops.tx = fresh(b, "tx");
    sch_template_cuda_flat(&b->e, &b->loops, &(SchCudaFlat){ .threads = s->is_reduce ? 64 : 256 });
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

/* A stage or input name no one uses yet, for a cache stage. */
static const char *fresh_stage(Builder *b, const char *base)
{
    SchedState *st = b->st;
    const char *name = base;
    for (int k = 2;; k++) {
        bool used = sch_find_stage(st, name) != NULL;
        for (int i = 0; i < st->g->ninputs && !used; i++)
            used = strcmp(st->g->inputs[i]->name, name) == 0;
        const Schedule *sched = b->e.sched;
        for (int i = 0; i < sched->nstmts && !used; i++)
            used = sched->stmts[i]->result && strcmp(sched->stmts[i]->result, name) == 0;
        for (int i = 0; i < b->loops.nstaged && !used; i++)
            used = strcmp(b->loops.staged_as[i], name) == 0;
        if (!used)
            return name;
        name = arena_printf(st->arena, "%s%d", base, k);
    }
}

/* A reduction over two or more spatial axes: the tile of the top comment
 * (sch_template_cuda_tile). */
static void schedule_tiled(Builder *b)
{
    SchedState *st = b->st;
    SStage *s = b->s;
    SchLoops *l = &b->loops;
    Arena *a = st->arena;
    int n = s->nsvars;
    /* run-time sizes at their hints: the tiles are right at every size */
    int64_t iext = sch_extent_hint(st, s->svars[n - 2]), jext = sch_extent_hint(st, s->svars[n - 1]);
    int64_t batch = extent_product(st, s, 0, n - 2);
    /* 128 x 128 tiles when at least 256 such blocks fill the GPU */
    int64_t big = iext >= 128 && jext >= 128 &&
                  batch * ((iext + 127) / 128) * ((jext + 127) / 128) >= 256 ? 128 : 64;
    SchCudaTile m = { .iext = iext, .batch = batch, .unroll = true, .pipe = 2 };
    axis_tile(iext, big, &m.bm, &m.tm);
    axis_tile(jext, big, &m.bn, &m.tn);
    const Tensor *staged[TE_MAX_RANK];
    int nstaged = s->nrvars == 1 ? sch_cuda_staged_operands(st, s, staged) : 0;

    /* the names, in the order the loops were always named */
    if (n > 2)
        l->bz = fused_names(b, 0, n - 2);
    const char *i = s->svars[n - 2]->name, *j = s->svars[n - 1]->name;
    l->io = fresh(b, arena_printf(a, "%so", i)), l->it = fresh(b, arena_printf(a, "%st", i));
    l->jo = fresh(b, arena_printf(a, "%so", j)), l->jt = fresh(b, arena_printf(a, "%st", j));
    if (m.tm > 1) {
        l->ib = fresh(b, arena_printf(a, "%sb", i));
        l->ir = fresh(b, arena_printf(a, "%sr", i));
    }
    if (m.tn > 1) {
        l->jb = fresh(b, arena_printf(a, "%sb", j));
        l->jr = fresh(b, arena_printf(a, "%sr", j));
    }
    if (nstaged > 0) {
        const char *k = s->rvars[0]->name;
        l->ko = fresh(b, arena_printf(a, "%so", k));
        l->ki = fresh(b, arena_printf(a, "%si", k));
        m.bk = 16;
        m.stage = true;
    }
    for (int k = 0; k < nstaged; k++) {
        l->staged[k] = staged[k]->name;
        l->staged_as[k] = fresh_stage(b, arena_printf(a, "%s_shared", staged[k]->name));
        l->nstaged = k + 1;
    }
    sch_template_cuda_tile(&b->e, l, &m);
}

/* A matmul-like reduction the tensor cores can compute on the architecture
 * built for (sch_mma_usable): tensorize with sch_mma_default's tiles.
 * Else false, and the reason kept for -v. */
static bool tensor_cores(Builder *b)
{
    SchMma m = { 0 };
    if (!sch_mma_usable(b->st, b->s, &m, &b->s->mma_why))
        return false;
    sch_mma_default(&m, b->st->sm);
    sch_template_cuda_mma(&b->e, &m);
    return true;
}

void sch_default_cuda(SchedState *st, Schedule *sched, const Schedule *written)
{
    int nstages = st->stages.len; /* cache stages added below need nothing */
    for (int i = 0; i < nstages; i++) {
        SStage *s = st->stages.items[i];
        if ((!s->tensor->is_output && !s->is_reduce) || s->nsvars == 0 || s->inlined ||
            s->attach || sch_mentioned(written, s))
            continue;
        Builder b = { st, { st->arena, sched, s->name, s->tensor->span }, s, { 0 }, { 0 } };
        sch_stage_loops(st->arena, s, &b.loops);
        for (int k = 0; k < s->loops.len; k++)
            vec_push(st->arena, &b.names, (void *)((Loop *)s->loops.items[k])->name);
        if (sch_form_of(st, s, 0) != SCH_FORM_CUDA_TILE)
            schedule_flat(&b);
        else if (!tensor_cores(&b))
            schedule_tiled(&b);
    }
}

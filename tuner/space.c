/* space.c — the search space of a workload: what the tuner may vary.
 *
 * Two kinds of space:
 *
 *   knobs  the file's schedule for the target has knobs (?TI in [...]):
 *          the space is the cartesian product of their values, one Param
 *          per knob.  A point becomes a copy of the file's schedule with
 *          every knob replaced by its value.
 *
 *   auto   no knobs (or no schedule for the target): one StagePlan per
 *          stage that the file's schedule leaves out and that the default
 *          schedule would give loops of its own (outputs and reductions
 *          that are not computed inside another stage).  A plan's
 *          parameters depend on the stage's structure:
 *
 *          matmul-like (a reduction with >= 2 spatial axes, the innermost
 *          at least one vector wide; the default schedule's rule), two
 *          families told apart by form:
 *            form    0: a loop nest, the parameters below;
 *                    1: the register-blocked micro-kernel of the default
 *                    schedule (sched/default.c) and of samples/
 *                    matmul_gelu.te: the reduction accumulates a ti x tj
 *                    tile in a local buffer (cache_write(local)) computed
 *                    at the tile loop, its rows unrolled and its columns
 *                    vectorized, and the stage applies its epilogue to
 *                    the tile (ji vectorized).  Its parameters: ti in
 *                    4, 6, 8 and tj in 1 to 4 vectors (the tile need
 *                    not divide: tile handles the edges), order 0 (row
 *                    tiles outside) or 2 (column panels outside, so a
 *                    thread's panel of the right-hand side stays in its
 *                    cache), par 0 (the outer tile loop parallel) or 1
 *                    (the two tile loops fused, then parallel); tk, ui,
 *                    uk and vec stay 0, since the form fixes them;
 *            ti, tj  the register tile: the two innermost spatial axes
 *                    split by ti rows and tj columns (tj whole vectors)
 *            tk      a split of the longest reduction axis (0: none)
 *            order   0: io jo k.. ki ii ji   (outer products into the tile)
 *                    1: io jo k.. ii ki ji   (a dot product per row)
 *                    2: jo io k.. ki ii ji   (column panels outside)
 *                    3: io k.. jo ki ii ji   (k blocked around the columns)
 *            ui, uk  unroll the tile's rows, the inner reduction loop
 *                    (a stage whose weight is packed in groups of k for
 *                    a dot-product instruction, sched/layout.c: uk 0
 *                    and tk a multiple of the group, so that its k loop
 *                    runs over whole groups; the micro-kernel form
 *                    always does)
 *            vec     vectorize the tile's columns
 *            par     0: the outermost loop parallel, 1: the two outermost
 *                    fused and parallel
 *          elementwise:
 *            vs      0: no vectorization, 1: the innermost loop
 *                    vectorized, N: split by N, the inner part vectorized
 *            par     0: outermost parallel, 1: the two outermost fused
 *                    and parallel, 2: serial
 *          other reductions:
 *            tk      a split of the longest reduction axis, its inner
 *                    part unrolled (0: none)
 *            par     as for elementwise stages
 *            vec     1: the innermost reduction loop vectorized (offered
 *                    where the default schedule does it:
 *                    sch_vectorizes_reduction)
 *
 *          For --target cuda the stages are those sched/default_cuda.c
 *          schedules (roots: outputs and reductions), in two kinds:
 *          tiled (a reduction over >= 2 spatial axes, as the default
 *          tiles a matmul):
 *            bm, bn  the block's tile of outputs along i and j (16 to
 *                    128, at most the power of two covering the axis)
 *            tm, tn  each thread's tile (1 to 8): (bm/tm) x (bn/tn)
 *                    threads, a thread's outputs bm/tm apart
 *            bk      a split of the reduction axis (0: none)
 *            stage   the operands the default would stage (read at plain
 *                    indices, one of them k) cached in shared memory at
 *                    ko
 *            pipe    those tiles fetched pipe - 1 steps ahead (1: none)
 *            unroll  ki and the thread's tile unrolled
 *          flat (any other root stage): its spatial loops fused and
 *          split by threads (32 to 1024) into block.x and thread.x; a
 *          reduction splits its longest axis by tk (0, 4, 8) and unrolls
 *          the inner part.
 *
 *          A point becomes the file's statements (if any) followed by the
 *          generated ones; sch_default then schedules the rest (inlining
 *          the intermediates), exactly as a build of the tuned schedule
 *          will.  The statements of every form are sched/template.c's
 *          (sch_template_*, the templates the default schedule also
 *          uses at its own point), and so are the rule that gives a
 *          stage its form (sch_form_of, the default's) and the fresh
 *          names a point gives new loops and stages
 *          (sch_template_names): this file holds the parameters, their
 *          legality, the configurations and the search, and fills a
 *          template's numbers from a point (emit_plan).
 *
 * Legality: the rules of each plan prune what cannot apply or cannot pay
 * before anything is built (a variant that needs a split it does not
 * have, a plan that emits no statement and so leaves the stage to the
 * default schedule, an unroll longer than 16, a register tile of more accumulators
 * than the vector registers, a fuse that would swallow the vectorized
 * loop, duplicates such as unrolling a tile of one row).
 * A cuda tile must have 32 to 1024 threads (fewer only when the whole
 * tile has fewer outputs), at most 64 sums a thread, an estimate of its
 * registers (sums, a row and a column of operands, 32 more) within 255 a
 * thread and 65536 a block, and its staged tiles (times the pipeline's
 * slots) within the shared memory of the device, asked at tune time
 * (48 KiB without one); staging needs the k split, a pipeline needs
 * staging and as many steps of k as slots.
 * tune_space_check then applies and lowers candidate points in a child
 * process (and, for cuda, asks the backend's own limits: cg_cuda_fits):
 * whatever the rules miss is pruned there, and a point that crashes texc
 * itself cannot take the tuner down with it.
 *
 * The space's id hashes its definition (the file's schedule as written,
 * or every plan with its values and this generator's version), so that a
 * record is only applied to the space that produced it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xxhash.h>

#include "codegen/codegen.h"
#include "tuner/tuner.h"

#define AUTO_SPACE_VERSION "auto-v3"


/* Param offsets within a plan, by kind. */
enum { M_TI, M_TJ, M_TK, M_ORDER, M_UI, M_UK, M_VEC, M_PAR, M_FORM, M_COUNT };

/* A matmul plan's forms (its M_FORM values). */
enum { FORM_LOOPS, FORM_MICRO };

enum { SIZES_MAX = 8 };
enum { E_VS, E_PAR, E_COUNT };
enum { R_TK, R_PAR, R_VEC, R_COUNT };
enum { C_BM, C_BN, C_TM, C_TN, C_BK, C_STAGE, C_PIPE, C_UNROLL, C_COUNT };
enum { F_THREADS, F_TK, F_COUNT };
enum { T_BM, T_BN, T_WM, T_WN, T_BK, T_STAGES, T_COUNT };
enum { FL_BK, FL_COUNT };
/* The most parameters a plan has: enumerate_plan's arrays. */
enum { PLAN_PARAMS_MAX = M_COUNT };
_Static_assert((int)C_COUNT <= (int)PLAN_PARAMS_MAX, "a cuda plan has too many parameters");

struct StagePlan {
    SchForm kind;          /* which of sched/template.c's forms */
    const char *stage;
    int first;             /* its first Param in Space.params */
    int nparams;
    SchLoops loops;        /* the stage's loops and the names its statements
                              give new loops and stages */
    int64_t rsplit_extent; /* the length of the reduction axis tk splits */
    int group;             /* matmul: the k interleave of its weight's
                              panels (sch_dot_group: 2 or 4), or 0 */
    int lanes;             /* vector lanes of the stage's dtype */
    int regs;              /* vector registers */
    /* matmul: the tile sizes each form allows (the ti and tj Params hold
       their union) */
    int64_t loop_ti[SIZES_MAX], loop_tj[SIZES_MAX], micro_ti[SIZES_MAX], micro_tj[SIZES_MAX];
    int nloop_ti, nloop_tj, nmicro_ti, nmicro_tj;
    int64_t iext, jext, batch, total;
    /* cuda: the operands staged in shared memory at ko (loops.staged),
       each tile's extents given by the role of each of its dimensions */
    char staged_role[TE_MAX_RANK][TE_MAX_RANK]; /* 'i', 'j', 'k' or 1 */
    int staged_rank[TE_MAX_RANK], staged_bytes[TE_MAX_RANK];
    int64_t smem_limit;    /* the device's, or CUDA_DEFAULT_SMEM */
    int min_threads;       /* a warp, or all the tile allows */
    /* flash: the chain's stages, the last one first (StagePlan.stage),
       that a point with a key tile computes in one kernel, so that their
       own plans emit nothing there; and the batch loop it runs in
       parallel (NULL: none) */
    const char *chain[5];
    const char *batch0;
    /* the legal local points: nlegal tuples of nparams value indices */
    int *legal;
    int nlegal;
};

/* Shared memory a block may use when no device says more: what every
 * architecture allows without opting in. */
enum { CUDA_DEFAULT_SMEM = 48 * 1024 };

uint64_t tune_rand(uint64_t *state)
{
    /* splitmix64: small, seedable, good enough for sampling */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------------ */
/* Building the space.                                                 */

typedef struct SpaceBuilder {
    Arena *a;
    SchedState *st; /* the stages as the file's schedule leaves them */
    Space *sp;
    PtrVec params; /* Param * */
    PtrVec plans;  /* StagePlan * */
} SpaceBuilder;

static Param *add_param(SpaceBuilder *b, const char *name, const int64_t *values, int n,
                        bool categorical, int plan)
{
    Param *p = arena_alloc(b->a, sizeof *p);
    p->name = name;
    p->values = arena_alloc(b->a, sizeof *p->values * (size_t)(n + 1));
    memcpy(p->values, values, sizeof *values * (size_t)n);
    p->nvalues = n;
    p->categorical = categorical;
    p->plan = plan;
    vec_push(b->a, &b->params, p);
    return p;
}

/* The candidates of CAND (N of them) that are <= LIMIT, keeping only
 * divisors of EXTENT when at least two of them divide (non-dividing
 * splits add guards inside the inner loops).  KEEP0 keeps a leading 0
 * ("no split"). */
static int sizes(int64_t *out, const int64_t *cand, int n, int64_t extent, int64_t limit)
{
    int k = 0, ndiv = 0;
    for (int i = 0; i < n; i++)
        if (cand[i] > 0 && cand[i] <= limit && extent % cand[i] == 0)
            ndiv++;
    for (int i = 0; i < n; i++) {
        if (cand[i] == 0) {
            out[k++] = 0;
            continue;
        }
        if (cand[i] > limit)
            continue;
        if (ndiv >= 2 && extent % cand[i] != 0)
            continue;
        out[k++] = cand[i];
    }
    return k;
}

static bool plan_legal(const StagePlan *p, const int64_t *v);

/* Enumerates the plan's local points that pass its rules. */
static void enumerate_plan(Arena *a, StagePlan *p, Param **params)
{
    int n = p->nparams;
    int idx[PLAN_PARAMS_MAX] = {0};
    int64_t v[PLAN_PARAMS_MAX];
    PtrVec legal = {0};
    int count = 0;
    for (;;) {
        for (int i = 0; i < n; i++)
            v[i] = params[p->first + i]->values[idx[i]];
        if (plan_legal(p, v)) {
            int *t = arena_alloc(a, sizeof *t * (size_t)n);
            memcpy(t, idx, sizeof *t * (size_t)n);
            vec_push(a, &legal, t);
            count++;
        }
        int d = n - 1;
        while (d >= 0 && ++idx[d] == params[p->first + d]->nvalues)
            idx[d--] = 0;
        if (d < 0)
            break;
    }
    p->legal = arena_alloc(a, sizeof *p->legal * (size_t)(count * n + 1));
    for (int i = 0; i < count; i++)
        memcpy(p->legal + i * n, legal.items[i], sizeof *p->legal * (size_t)n);
    p->nlegal = count;
}

static StagePlan *new_plan(SpaceBuilder *b, SStage *s, SchForm kind)
{
    Arena *a = b->a;
    StagePlan *p = arena_alloc(a, sizeof *p);
    p->kind = kind;
    p->stage = s->name;
    sch_template_names(a, b->st, s, kind, &p->loops);
    if (s->nrvars > 0)
        p->rsplit_extent = s->rvars[p->loops.rsplit]->extent;
    int bytes;
    sch_host_vector_unit(&bytes, &p->regs);
    p->lanes = sch_host_lanes(s->tensor->dtype);
    p->first = b->params.len;
    return p;
}

static bool in_set(const int64_t *set, int n, int64_t v)
{
    for (int i = 0; i < n; i++)
        if (set[i] == v)
            return true;
    return false;
}

/* OUT (N so far) with SET's values added, ascending, without repeats. */
static int merge_sizes(int64_t *out, int n, const int64_t *set, int nset)
{
    for (int i = 0; i < nset; i++) {
        if (in_set(out, n, set[i]))
            continue;
        int k = n++;
        while (k > 0 && out[k - 1] > set[i]) {
            out[k] = out[k - 1];
            k--;
        }
        out[k] = set[i];
    }
    return n;
}

static void plan_matmul(SpaceBuilder *b, SStage *s, int plan)
{
    StagePlan *p = new_plan(b, s, SCH_FORM_MATMUL);
    p->group = sch_dot_group(b->st->g, s->tensor);
    int64_t iext = s->svars[sch_micro_row(s)]->extent, jext = s->svars[s->nsvars - 1]->extent;
    int64_t v[2 * SIZES_MAX];
    int n;
    const char *st = s->name;
    Arena *a = b->a;
    /* the loop nest's tiles: divisors where enough of them divide */
    static const int64_t ti[] = { 1, 2, 4, 8, 16 };
    p->nloop_ti = sizes(p->loop_ti, ti, 5, iext, iext);
    int64_t tj[4];
    for (int i = 0; i < 4; i++)
        tj[i] = (int64_t)p->lanes << i;
    p->nloop_tj = sizes(p->loop_tj, tj, 4, jext, jext);
    /* the micro-kernel's: rows of 4 to 8 accumulators, 1 to 4 vectors */
    static const int64_t mti[] = { 4, 6, 8 };
    for (int i = 0; i < 3; i++)
        if (mti[i] <= iext)
            p->micro_ti[p->nmicro_ti++] = mti[i];
    for (int i = 1; i <= 4; i++)
        if (i * p->lanes <= jext)
            p->micro_tj[p->nmicro_tj++] = i * p->lanes;
    bool micro = p->nmicro_ti > 0 && p->nmicro_tj > 0;
    n = merge_sizes(v, 0, p->loop_ti, p->nloop_ti);
    n = micro ? merge_sizes(v, n, p->micro_ti, p->nmicro_ti) : n;
    add_param(b, arena_printf(a, "%s.ti", st), v, n, false, plan);
    n = merge_sizes(v, 0, p->loop_tj, p->nloop_tj);
    n = micro ? merge_sizes(v, n, p->micro_tj, p->nmicro_tj) : n;
    add_param(b, arena_printf(a, "%s.tj", st), v, n, false, plan);
    static const int64_t tk[] = { 0, 4, 8, 16, 64, 256 };
    n = sizes(v, tk, 6, p->rsplit_extent, p->rsplit_extent - 1);
    add_param(b, arena_printf(a, "%s.tk", st), v, n, false, plan);
    static const int64_t order[] = { 0, 1, 2, 3 }, flag[] = { 0, 1 };
    add_param(b, arena_printf(a, "%s.order", st), order, 4, true, plan);
    add_param(b, arena_printf(a, "%s.ui", st), flag, 2, false, plan);
    add_param(b, arena_printf(a, "%s.uk", st), flag, 2, false, plan);
    add_param(b, arena_printf(a, "%s.vec", st), flag, 2, false, plan);
    add_param(b, arena_printf(a, "%s.par", st), flag, 2, true, plan);
    add_param(b, arena_printf(a, "%s.form", st), flag, micro ? 2 : 1, true, plan);
    p->nparams = M_COUNT;
    vec_push(a, &b->plans, p);
}

static void plan_elementwise(SpaceBuilder *b, SStage *s, int plan)
{
    StagePlan *p = new_plan(b, s, SCH_FORM_ELEMWISE);
    int64_t inner = s->svars[s->nsvars - 1]->extent;
    int64_t v[8];
    int n = 0;
    v[n++] = 0;
    v[n++] = 1;
    for (int k = 0; k < 3; k++) {
        int64_t f = (int64_t)p->lanes << (2 * k);
        if (f > 1 && f < inner)
            v[n++] = f;
    }
    add_param(b, arena_printf(b->a, "%s.vs", s->name), v, n, false, plan);
    static const int64_t par[] = { 0, 1, 2 };
    add_param(b, arena_printf(b->a, "%s.par", s->name), par, 3, true, plan);
    p->nparams = E_COUNT;
    vec_push(b->a, &b->plans, p);
}

static void plan_reduce(SpaceBuilder *b, SStage *s, int plan)
{
    StagePlan *p = new_plan(b, s, SCH_FORM_REDUCE);
    static const int64_t tk[] = { 0, 4, 8 }, par[] = { 0, 1, 2 };
    int64_t v[4];
    int n = sizes(v, tk, 3, p->rsplit_extent, p->rsplit_extent - 1);
    add_param(b, arena_printf(b->a, "%s.tk", s->name), v, n, false, plan);
    add_param(b, arena_printf(b->a, "%s.par", s->name), par, 3, true, plan);
    /* the innermost reduction loop vectorized (lanes of partial results)
     * where the default schedule would */
    static const int64_t flag[] = { 0, 1 };
    add_param(b, arena_printf(b->a, "%s.vec", s->name), flag,
              sch_vectorizes_reduction(b->st, s) ? 2 : 1, false, plan);
    p->nparams = R_COUNT;
    vec_push(b->a, &b->plans, p);
}

/* ------------------------------------------------------------------ */
/* The automatic CUDA space.                                           */

static int64_t pow2_at_least(int64_t n)
{
    int64_t p = 1;
    while (p < n)
        p *= 2;
    return p;
}

/* The values of CAND (ascending powers of two) up to the power of two that
 * covers EXTENT, or that power alone when it is below them all: a block
 * tile need not divide its axis (the backend guards the edge), but one
 * much longer than the axis only idles threads. */
static int pow2_sizes(int64_t *out, const int64_t *cand, int n, int64_t extent)
{
    int64_t cover = pow2_at_least(extent);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (cand[i] <= cover)
            out[k++] = cand[i];
    if (k == 0)
        out[k++] = cover;
    return k;
}

/* S's block tile, Params S.bm and S.bn: the 4 values of BLOCKS up to the
 * one covering P's i and j extents (pow2_sizes). */
static void add_block_params(SpaceBuilder *b, const SStage *s, const StagePlan *p,
                             const int64_t *blocks, int plan)
{
    int64_t v[8];
    int nv = pow2_sizes(v, blocks, 4, p->iext);
    add_param(b, arena_printf(b->a, "%s.bm", s->name), v, nv, false, plan);
    nv = pow2_sizes(v, blocks, 4, p->jext);
    add_param(b, arena_printf(b->a, "%s.bn", s->name), v, nv, false, plan);
}

/* The role of each index of T's loads in S's value: 'i' or 'j' (the two
 * innermost spatial axes), 'k' (the reduction axis) or 1 (a batch axis,
 * one value per block).  T is one of sch_cuda_staged_operands', read at
 * plain indices only. */
static int load_roles(const Expr *e, const Tensor *t, const SStage *s, char *role)
{
    if (e->kind == EX_LOAD && e->tensor == t) {
        for (int d = 0; d < e->nargs; d++) {
            const IterVar *v = e->args[d]->var;
            role[d] = v == s->svars[s->nsvars - 2] ? 'i'
                      : v == s->svars[s->nsvars - 1] ? 'j'
                      : s->nrvars > 0 && v == s->rvars[0] ? 'k' : 1;
        }
        return e->nargs;
    }
    for (int i = 0; i < e->nargs; i++) {
        int n = load_roles(e->args[i], t, s, role);
        if (n >= 0)
            return n;
    }
    return -1;
}

/* A reduction over >= 2 spatial axes, as sched/default_cuda.c tiles it:
 *   bm x bn   the block's tile of outputs (i, j)
 *   tm x tn   each thread's tile: (bm/tm) x (bn/tn) threads, a thread's
 *             outputs bm/tm and bn/tn apart
 *   bk        the reduction axis split (0: not split)
 *   stage     the operands read at plain indices staged in shared memory
 *             at ko (needs bk)
 *   pipe      their tiles fetched pipe - 1 steps ahead (1: no pipeline)
 *   unroll    ki and the thread's tile unrolled */
static void plan_cuda_tiled(SpaceBuilder *b, SStage *s, int plan, int64_t smem_limit)
{
    StagePlan *p = new_plan(b, s, SCH_FORM_CUDA_TILE);
    Arena *a = b->a;
    int n = s->nsvars;
    p->iext = s->svars[n - 2]->extent;
    p->jext = s->svars[n - 1]->extent;
    p->batch = 1;
    for (int d = 0; d < n - 2; d++)
        p->batch *= s->svars[d]->extent;
    p->smem_limit = smem_limit;
    /* a warp at least, unless the whole tile has fewer outputs */
    int64_t most = pow2_at_least(p->iext) * pow2_at_least(p->jext);
    p->min_threads = most < 32 ? (int)most : 32;
    /* the shape of each tile the form stages (loops.staged, the same
       operands in the same order), for staged_smem */
    const Tensor *staged[TE_MAX_RANK];
    sch_cuda_staged_operands(b->st, s, staged);
    for (int t = 0; t < p->loops.nstaged; t++) {
        p->staged_rank[t] = load_roles(s->value, staged[t], s, p->staged_role[t]);
        p->staged_bytes[t] = dtype_bytes(staged[t]->dtype);
    }

    static const int64_t blocks[] = { 16, 32, 64, 128 }, threads[] = { 1, 2, 4, 8 };
    static const int64_t bk[] = { 0, 8, 16, 32 }, flag[] = { 0, 1 }, pipe[] = { 1, 2, 3 };
    int64_t v[8];
    add_block_params(b, s, p, blocks, plan);
    add_param(b, arena_printf(a, "%s.tm", s->name), threads, 4, false, plan);
    add_param(b, arena_printf(a, "%s.tn", s->name), threads, 4, false, plan);
    int nv = sizes(v, bk, 4, p->rsplit_extent, p->rsplit_extent);
    add_param(b, arena_printf(a, "%s.bk", s->name), v, nv, false, plan);
    add_param(b, arena_printf(a, "%s.stage", s->name), flag, p->loops.nstaged ? 2 : 1, true, plan);
    add_param(b, arena_printf(a, "%s.pipe", s->name), pipe, p->loops.nstaged ? 3 : 1, false, plan);
    add_param(b, arena_printf(a, "%s.unroll", s->name), flag, 2, false, plan);
    p->nparams = C_COUNT;
    vec_push(a, &b->plans, p);
}

/* A stage the tensor cores can compute (sched/mma.c), on sm_80 and later:
 * tensorize's tiles,
 *   bm x bn   the block's tile of outputs
 *   wm x wn   each warp's: (bm/wm) x (bn/wn) warps
 *   bk        the k step staged in shared memory
 *   stages    the cp.async pipeline's depth */
static void plan_cuda_mma(SpaceBuilder *b, SStage *s, int plan, int64_t smem_limit)
{
    StagePlan *p = new_plan(b, s, SCH_FORM_CUDA_MMA);
    Arena *a = b->a;
    p->iext = s->svars[0]->extent;
    p->jext = s->svars[1]->extent;
    p->smem_limit = smem_limit;
    static const int64_t blocks[] = { 32, 64, 128, 256 }, warps[] = { 16, 32, 64 };
    static const int64_t bk[] = { 16, 32, 64 }, stages[] = { 2, 3, 4 };
    add_block_params(b, s, p, blocks, plan);
    add_param(b, arena_printf(a, "%s.wm", s->name), warps, 3, false, plan);
    add_param(b, arena_printf(a, "%s.wn", s->name), warps, 3, false, plan);
    add_param(b, arena_printf(a, "%s.bk", s->name), bk, 3, false, plan);
    add_param(b, arena_printf(a, "%s.stages", s->name), stages, 3, false, plan);
    p->nparams = T_COUNT;
    vec_push(a, &b->plans, p);
}

/* The last stage S of an attention chain (sched/flash.c, match F): its
 * key tile, 0 for no flash kernel (the chain's stages then take their
 * own plans), else 32 to 256 keys, a batch loop parallel
 * (sch_flash_parallel_loop). */
static void plan_flash(SpaceBuilder *b, SStage *s, int plan, const SchFlash *f)
{
    StagePlan *p = new_plan(b, s, SCH_FORM_FLASH);
    Arena *a = b->a;
    static const int64_t bk[] = { 0, 32, 64, 128, 256 };
    add_param(b, arena_printf(a, "%s.flash", s->name), bk, 5, false, plan);
    p->chain[0] = s->name;
    for (int k = 0; k < 4; k++)
        p->chain[k + 1] = f->stages[k]->name;
    p->batch0 = sch_flash_parallel_loop(s, f);
    p->nparams = FL_COUNT;
    vec_push(a, &b->plans, p);
}

/* Is STAGE one that flash plan P computes in its kernel (P's own stage
 * included)? */
static bool in_chain(const StagePlan *p, const char *stage)
{
    for (int k = 0; k < 5; k++)
        if (strcmp(p->chain[k], stage) == 0)
            return true;
    return false;
}

/* Any other root stage, as sched/default_cuda.c schedules it: its spatial
 * loops fused and split by THREADS into block.x and thread.x; a reduction
 * may split its longest axis by TK and unroll the inner part. */
static void plan_cuda_flat(SpaceBuilder *b, SStage *s, int plan)
{
    StagePlan *p = new_plan(b, s, SCH_FORM_CUDA_FLAT);
    Arena *a = b->a;
    p->total = 1;
    for (int d = 0; d < s->nsvars; d++)
        p->total *= s->svars[d]->extent;
    static const int64_t threads[] = { 32, 64, 128, 256, 512, 1024 }, tk[] = { 0, 4, 8 };
    int64_t v[8];
    int nv = pow2_sizes(v, threads, 6, p->total);
    add_param(b, arena_printf(a, "%s.threads", s->name), v, nv, false, plan);
    nv = s->nrvars > 0 ? sizes(v, tk, 3, p->rsplit_extent, p->rsplit_extent - 1) : 1;
    if (s->nrvars == 0)
        v[0] = 0;
    add_param(b, arena_printf(a, "%s.tk", s->name), v, nv, false, plan);
    p->nparams = F_COUNT;
    vec_push(a, &b->plans, p);
}

/* Bytes of shared memory a tiled point stages: every operand's tile,
 * 16-byte aligned as codegen/cuda.c lays them out, once per pipeline
 * slot. */
static int64_t staged_smem(const StagePlan *p, const int64_t *v)
{
    if (!v[C_STAGE])
        return 0;
    int64_t total = 0;
    for (int t = 0; t < p->loops.nstaged; t++) {
        int64_t elems = 1;
        for (int d = 0; d < p->staged_rank[t]; d++) {
            char r = p->staged_role[t][d];
            elems *= r == 'i' ? v[C_BM] : r == 'j' ? v[C_BN] : r == 'k' ? v[C_BK] : 1;
        }
        total += (elems * p->staged_bytes[t] * v[C_PIPE] + 15) / 16 * 16;
    }
    return total;
}

/* Registers a thread of a tiled point needs, roughly: its tm x tn sums,
 * a column of the left operand and a row of the right one when the tile
 * is unrolled, and some 32 for indices, addresses and the epilogue. */
static int64_t tiled_registers(const int64_t *v)
{
    return v[C_TM] * v[C_TN] + (v[C_UNROLL] ? v[C_TM] + v[C_TN] : 2) + 32;
}

/* Appends the definition of the space to the hash state. */
static void hash_text(XXH3_state_t *h, const char *text)
{
    XXH3_128bits_update(h, text, strlen(text) + 1);
}

static void print_schedule_as_written(FILE *out, const Schedule *w)
{
    /* knobs with their first value, so that -K does not change the id */
    int *saved = malloc(sizeof *saved * (size_t)(w->nknobs + 1));
    for (int k = 0; k < w->nknobs; k++) {
        saved[k] = w->knobs[k]->chosen;
        w->knobs[k]->chosen = 0;
    }
    sch_print(out, w);
    for (int k = 0; k < w->nknobs; k++)
        w->knobs[k]->chosen = saved[k];
    free(saved);
}

static void compute_id(Space *sp)
{
    XXH3_state_t *h = XXH3_createState();
    XXH3_128bits_reset(h);
    hash_text(h, target_name(sp->target));
    hash_text(h, sp->is_auto ? AUTO_SPACE_VERSION : "knobs");
    if (sp->written) {
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        if (m) {
            print_schedule_as_written(m, sp->written);
            fclose(m);
            hash_text(h, text ? text : "");
            free(text);
        }
    }
    for (int i = 0; i < sp->nparams; i++) {
        const Param *p = &sp->params[i];
        hash_text(h, p->name);
        for (int k = 0; k < p->nvalues; k++) {
            char num[32];
            snprintf(num, sizeof num, "%lld", (long long)p->values[k]);
            hash_text(h, num);
        }
    }
    XXH128_hash_t d = XXH3_128bits_digest(h);
    XXH3_freeState(h);
    snprintf(sp->id, sizeof sp->id, "%016llx%016llx", (unsigned long long)d.high64,
             (unsigned long long)d.low64);
}

/* The shared memory a block of the automatic CUDA space may stage: the
 * opt-in limit of the device when there is one (asked only when the space
 * stages anything), else what every architecture allows. */
static void cuda_smem_limit(Space *sp, bool ask)
{
    sp->smem_limit = CUDA_DEFAULT_SMEM;
    sp->smem_from = "the default; no CUDA device here";
    if (!ask)
        return;
    const CudaDevices *d = tune_cuda_devices();
    if (d->count > 0 && d->smem_optin > 0) {
        sp->smem_limit = d->smem_optin;
        sp->smem_from = "device 0";
    }
}

/* Does S get a plan?  The root stages the default schedule gives loops of
 * their own (outputs and reductions, neither inlined nor computed at
 * another), unless the file's schedule WRITTEN names them, with one loop
 * a variable (a plan's names are those of an unscheduled stage). */
static bool planned(const SStage *s, const Schedule *written)
{
    return !s->inlined && !s->attach && s->nsvars > 0 && !sch_mentioned(written, s) &&
           (s->tensor->is_output || s->is_reduce) && s->loops.len == s->nsvars + s->nrvars;
}

Space *tune_space_new(Arena *a, Graph *g, const Schedule *written, Target target)
{
    Space *sp = arena_alloc(a, sizeof *sp);
    sp->target = target;
    sp->written = written;
    SpaceBuilder b = { a, NULL, sp, { 0 }, { 0 } };
    if (written && written->nknobs > 0) {
        sp->knobs = written->knobs;
        for (int k = 0; k < written->nknobs; k++) {
            Knob *kn = written->knobs[k];
            add_param(&b, kn->name, kn->values, kn->nvalues, false, -1);
        }
        sp->size = 1;
        for (int k = 0; k < written->nknobs; k++)
            sp->size *= written->knobs[k]->nvalues;
    } else {
        sp->is_auto = true;
        /* the stages as the file's schedule leaves them */
        Arena scratch = { 0 };
        SchedState *st = sch_state_new(&scratch, g, target);
        if (target == TARGET_CUDA && tune_cuda_devices()->count > 0)
            st->sm = tune_cuda_devices()->sm; /* tensor cores where it has them */
        if (written && !sch_apply_schedule(st, written, NULL)) {
            arena_free(&scratch);
            return NULL;
        }
        /* the plans live in A; names copied out of the scratch arena */
        Arena *keep = a;
        b.a = keep;
        b.st = st;
        if (target == TARGET_CPU) {
            /* attention chains first: flash or not (their stages' own
               plans below serve the points without) */
            for (int i = 0; i < st->stages.len; i++) {
                SStage *s = st->stages.items[i];
                SchFlash f = { .bk = 64 };
                const char *why;
                if (planned(s, written) && s->is_reduce && sch_flash_match(st, s, &f, &why) &&
                    sch_flash_untouched(written, s, &f))
                    plan_flash(&b, s, b.plans.len, &f);
            }
            for (int i = 0; i < st->stages.len; i++) {
                SStage *s = st->stages.items[i];
                if (!planned(s, written))
                    continue;
                int plan = b.plans.len;
                SchForm form = sch_form_of(st, s, sch_host_lanes(s->tensor->dtype));
                if (form == SCH_FORM_MATMUL)
                    plan_matmul(&b, s, plan);
                else if (form == SCH_FORM_ELEMWISE)
                    plan_elementwise(&b, s, plan);
                else
                    plan_reduce(&b, s, plan);
            }
        } else if (target == TARGET_CUDA) {
            /* the stages sched/default_cuda.c would schedule */
            bool tiled = false;
            for (int pass = 0; pass < 2; pass++) {
                for (int i = 0; i < st->stages.len; i++) {
                    SStage *s = st->stages.items[i];
                    if (!planned(s, written))
                        continue;
                    bool is_tiled = sch_form_of(st, s, 0) == SCH_FORM_CUDA_TILE;
                    if (pass == 0) {
                        tiled = tiled || is_tiled;
                        continue;
                    }
                    int plan = b.plans.len;
                    SchMma m = { 0 };
                    if (is_tiled && sch_mma_usable(st, s, &m, NULL))
                        plan_cuda_mma(&b, s, plan, sp->smem_limit);
                    else if (is_tiled)
                        plan_cuda_tiled(&b, s, plan, sp->smem_limit);
                    else
                        plan_cuda_flat(&b, s, plan);
                }
                /* only tiles stage operands: the device's limit matters then */
                if (pass == 0)
                    cuda_smem_limit(sp, tiled);
            }
        }
        sp->plans = (StagePlan **)b.plans.items;
        sp->nplans = b.plans.len;
        /* copy what the plans hold from the scratch state */
        for (int i = 0; i < sp->nplans; i++) {
            StagePlan *p = sp->plans[i];
            p->stage = arena_strdup(keep, p->stage);
            for (int k = 0; k < p->loops.nsvars; k++)
                p->loops.svar[k] = arena_strdup(keep, p->loops.svar[k]);
            for (int k = 0; k < p->loops.nrvars; k++)
                p->loops.rvar[k] = arena_strdup(keep, p->loops.rvar[k]);
            for (int k = 0; k < 5 && p->kind == SCH_FORM_FLASH; k++)
                p->chain[k] = arena_strdup(keep, p->chain[k]);
            if (p->batch0)
                p->batch0 = arena_strdup(keep, p->batch0);
        }
        arena_free(&scratch);
    }
    sp->nparams = b.params.len;
    sp->params = arena_alloc(a, sizeof *sp->params * (size_t)(sp->nparams + 1));
    for (int i = 0; i < sp->nparams; i++)
        sp->params[i] = *(Param *)b.params.items[i];
    if (sp->is_auto) {
        Param **pp = (Param **)b.params.items;
        sp->size = 1;
        for (int i = 0; i < sp->nplans; i++) {
            enumerate_plan(a, sp->plans[i], pp);
            sp->size *= sp->plans[i]->nlegal;
        }
        if (sp->nplans == 0)
            sp->size = 0; /* nothing to vary: only the default is measured */
    }
    int nf = 0;
    for (int i = 0; i < sp->nparams; i++)
        nf += sp->params[i].categorical ? sp->params[i].nvalues : 1;
    sp->nfeatures = nf;
    compute_id(sp);
    return sp;
}

/* ------------------------------------------------------------------ */
/* Legality, and the statements of a point.                            */

static bool plan_legal(const StagePlan *p, const int64_t *v)
{
    switch (p->kind) {
    case SCH_FORM_MATMUL: {
        int64_t ti = v[M_TI], tj = v[M_TJ], tk = v[M_TK], order = v[M_ORDER];
        if (ti * ((tj + p->lanes - 1) / p->lanes) > p->regs)
            return false; /* more accumulators than vector registers */
        if (v[M_FORM] == FORM_MICRO)
            /* its own sizes; the other parameters at 0 (but order 2:
               column panels outside) */
            return in_set(p->micro_ti, p->nmicro_ti, ti) &&
                   in_set(p->micro_tj, p->nmicro_tj, tj) && tk == 0 &&
                   (order == 0 || order == 2) && !v[M_UI] && !v[M_UK] && !v[M_VEC];
        if (!in_set(p->loop_ti, p->nloop_ti, ti) || !in_set(p->loop_tj, p->nloop_tj, tj))
            return false;
        if ((order == 1 || order == 3) && tk == 0)
            return false; /* the variant places ki: it needs the split */
        if (v[M_UK] && (tk == 0 || tk > 16))
            return false;
        if (p->group && (v[M_UK] || tk % p->group))
            return false; /* its k loop would read the weight's groups of k
                             an element at a time (codegen/c.c runs a
                             serial loop over whole groups only) */
        if (v[M_UI] && ti == 1)
            return false; /* the same point as ui = 0 */
        if (v[M_PAR] == 1 && p->loops.nsvars == 2 && order == 3)
            return false; /* would fuse io with the reduction */
        return true;
    }
    case SCH_FORM_ELEMWISE: {
        if (v[E_VS] == 0 && v[E_PAR] == 2)
            return false; /* no statement: the default schedule's point */
        int loops = p->loops.nsvars + (v[E_VS] > 1);
        int outer = v[E_VS] >= 1 ? loops - 1 : loops; /* loops outside the vector */
        if (v[E_PAR] == 0 && outer < 1)
            return false;
        if (v[E_PAR] == 1 && outer < 2)
            return false;
        return true;
    }
    case SCH_FORM_REDUCE:
        if (v[R_TK] == 0 && v[R_PAR] == 2 && v[R_VEC] == 0)
            return false; /* no statement: the default schedule's point
                             (which tk 0, par 0 and, where offered, vec 1
                             also writes: the tuner measures it again) */
        if (v[R_VEC] && v[R_TK] > 0 && p->loops.rsplit == p->loops.nrvars - 1)
            return false; /* the split's inner part is unrolled */
        if (v[R_PAR] == 1 && p->loops.nsvars < 2)
            return false;
        return true;
    case SCH_FORM_CUDA_TILE: {
        int64_t bm = v[C_BM], bn = v[C_BN], tm = v[C_TM], tn = v[C_TN], bk = v[C_BK];
        if (tm > bm || tn > bn)
            return false;
        int64_t threads = (bm / tm) * (bn / tn);
        if (threads > 1024 || threads < p->min_threads)
            return false; /* CUDA's limit; fewer than a warp idles lanes */
        if (tm * tn > 64)
            return false; /* more sums than registers can hold */
        int64_t regs = tiled_registers(v);
        if (regs > 255 || regs * threads > 65536)
            return false; /* a thread's registers, a block's */
        if (v[C_STAGE] && bk == 0)
            return false; /* the tiles are staged at ko */
        if (!v[C_STAGE] && v[C_PIPE] > 1)
            return false; /* nothing to fetch ahead */
        if (v[C_PIPE] > 1 && (p->rsplit_extent + bk - 1) / bk < v[C_PIPE])
            return false; /* fewer steps than slots */
        if (v[C_UNROLL] && bk == 0 && tm == 1 && tn == 1)
            return false; /* nothing to unroll: the same point as 0 */
        if (staged_smem(p, v) > p->smem_limit)
            return false;
        return true;
    }
    case SCH_FORM_CUDA_FLAT:
    case SCH_FORM_FLASH:
        return true;
    case SCH_FORM_CUDA_MMA: {
        int64_t bm = v[T_BM], bn = v[T_BN], wm = v[T_WM], wn = v[T_WN];
        if (wm > bm || wn > bn)
            return false;
        int64_t threads = 32 * (bm / wm) * (bn / wn);
        if (threads > 512)
            return false; /* CUDA allows 1024; more than 16 warps a block
                             leaves the registers of fewer sums each */
        if (wm * wn / 32 > 128)
            return false; /* a thread's sums: at most 128 registers */
        if (v[T_STAGES] * (bm + bn) * v[T_BK] * 2 > p->smem_limit)
            return false; /* the pipeline's tiles, 2 bytes an element */
        return true;
    }
    }
    return false;
}

/* The flash plan of SP whose kernel computes plan Q's stage at POINT
 * (a key tile chosen), or NULL. */
static const StagePlan *flashed_by(const Space *sp, const StagePlan *q, const int *point)
{
    for (int i = 0; i < sp->nplans; i++) {
        const StagePlan *p = sp->plans[i];
        if (p != q && p->kind == SCH_FORM_FLASH && sp->params[p->first].values[point[p->first]] > 0 &&
            in_chain(p, q->stage))
            return p;
    }
    return NULL;
}

bool tune_space_legal(const Space *sp, const int *point)
{
    for (int i = 0; i < sp->nplans; i++) {
        const StagePlan *p = sp->plans[i];
        int64_t v[PLAN_PARAMS_MAX];
        for (int k = 0; k < p->nparams; k++)
            v[k] = sp->params[p->first + k].values[point[p->first + k]];
        if (!plan_legal(p, v))
            return false;
        /* a stage a flash kernel computes emits nothing: its plan keeps
           its first legal point, so that the space holds each schedule
           once */
        if (p->nlegal > 0 && flashed_by(sp, p, point) &&
            memcmp(point + p->first, p->legal, sizeof *point * (size_t)p->nparams) != 0)
            return false;
    }
    return true;
}

static Schedule *copy_written(Arena *a, const Space *sp, const int *point, PtrVec *stmts)
{
    Schedule *s = arena_alloc(a, sizeof *s);
    s->target = sp->target;
    const Schedule *w = sp->written;
    for (int i = 0; w && i < w->nstmts; i++) {
        SchedStmt *c = arena_alloc(a, sizeof *c);
        *c = *w->stmts[i];
        c->args = arena_alloc(a, sizeof *c->args * (size_t)(c->nargs + 1));
        for (int k = 0; k < c->nargs; k++) {
            c->args[k] = w->stmts[i]->args[k];
            if (c->args[k].kind != SA_KNOB)
                continue;
            /* the knob's value at this point, as a plain integer */
            int64_t value = c->args[k].knob->values[c->args[k].knob->chosen];
            for (int p = 0; p < sp->nparams && !sp->is_auto; p++)
                if (sp->knobs[p] == c->args[k].knob)
                    value = sp->params[p].values[point[p]];
            c->args[k].kind = SA_INT;
            c->args[k].ival = value;
            c->args[k].knob = NULL;
        }
        vec_push(a, stmts, c);
    }
    return s;
}

/* Plan P's statements at its values V, from its form's template in
 * sched/template.c. */
static void emit_plan(SchEmit *e, const StagePlan *p, const int64_t *v)
{
    const SchLoops *l = &p->loops;
    switch (p->kind) {
    case SCH_FORM_MATMUL:
        if (v[M_FORM] == FORM_MICRO)
            sch_template_micro(e, l, &(SchMicro){ .ti = v[M_TI], .tj = v[M_TJ],
                                                  .order = (int)v[M_ORDER], .par = (int)v[M_PAR],
                                                  .reorder_all = true });
        else
            sch_template_loop_nest(e, l, &(SchLoopNest){ .ti = v[M_TI], .tj = v[M_TJ],
                                                         .tk = v[M_TK], .order = (int)v[M_ORDER],
                                                         .unroll_i = v[M_UI], .unroll_k = v[M_UK],
                                                         .vec = v[M_VEC], .par = (int)v[M_PAR] });
        break;
    case SCH_FORM_ELEMWISE:
        sch_template_elementwise(e, l, &(SchElementwise){ .vs = v[E_VS], .par = (int)v[E_PAR] });
        break;
    case SCH_FORM_REDUCE:
        sch_template_reduce(e, l, &(SchReduce){ .tk = v[R_TK], .par = (int)v[R_PAR],
                                                .vec = v[R_VEC] });
        break;
    case SCH_FORM_CUDA_TILE:
        sch_template_cuda_tile(e, l, &(SchCudaTile){ .bm = v[C_BM], .bn = v[C_BN], .tm = v[C_TM],
                                                     .tn = v[C_TN], .bk = v[C_BK],
                                                     .stage = v[C_STAGE], .pipe = v[C_PIPE],
                                                     .unroll = v[C_UNROLL], .iext = p->iext,
                                                     .batch = p->batch });
        break;
    case SCH_FORM_CUDA_FLAT:
        sch_template_cuda_flat(e, l, &(SchCudaFlat){ .threads = v[F_THREADS], .tk = v[F_TK] });
        break;
    case SCH_FORM_FLASH: /* tune_space_schedule writes it */
        break;
    case SCH_FORM_CUDA_MMA:
        sch_template_cuda_mma(e, &(SchMma){ .bm = v[T_BM], .bn = v[T_BN], .wm = v[T_WM],
                                            .wn = v[T_WN], .bk = v[T_BK], .stages = v[T_STAGES] });
        break;
    }
}

Schedule *tune_space_schedule(Arena *a, const Space *sp, const int *point)
{
    PtrVec stmts = { 0 };
    Schedule *s = copy_written(a, sp, point, &stmts);
    s->stmts = (SchedStmt **)stmts.items;
    s->nstmts = stmts.len;
    s->stmts_cap = stmts.cap;
    /* flash kernels first: the stages they compute take no statement */
    for (int i = 0; i < sp->nplans; i++) {
        const StagePlan *p = sp->plans[i];
        int64_t bk = sp->params[p->first].values[point[p->first]];
        if (p->kind != SCH_FORM_FLASH || bk == 0)
            continue;
        SchEmit e = { a, s, p->stage, { 0, 0 } };
        SchedStmt *f = sch_emit(&e, "flash", 2);
        f->args[0] = sch_name_arg(p->loops.rvar[0]);
        f->args[1] = (SchedArg){ .kind = SA_INT, .ival = bk };
        if (p->batch0)
            sch_emit(&e, "parallel", 1)->args[0] = sch_name_arg(p->batch0);
    }
    for (int i = 0; i < sp->nplans; i++) {
        const StagePlan *p = sp->plans[i];
        if (p->kind == SCH_FORM_FLASH || flashed_by(sp, p, point))
            continue;
        int64_t v[PLAN_PARAMS_MAX];
        for (int k = 0; k < p->nparams; k++)
            v[k] = sp->params[p->first + k].values[point[p->first + k]];
        /* no span: the user wrote none of these */
        SchEmit e = { a, s, p->stage, { 0, 0 } };
        emit_plan(&e, p, v);
    }
    return s;
}

/* ------------------------------------------------------------------ */
/* Checking points by applying them, in a child process.               */

/* Builds one point as a candidate's build would (sched/build.c: its
 * layouts, its schedule, the default, lowering); true if no diagnostic.
 * The layouts it gives G outlive the point's scratch arena, so they come
 * from one that lives as long as the process (G keeps them until the
 * next build assigns its own). */
static bool point_applies(Graph *g, const Space *sp, const int *point)
{
    static Arena layouts;
    Arena a = { 0 };
    Schedule *s = tune_space_schedule(&a, sp, point);
    LoweredFunc fn = { 0 };
    SchedState *st = sch_build(&(SchedBuild){ .arena = &a, .graph_arena = &layouts, .g = g,
                                              .target = sp->target, .sched = s,
                                              .bucket = sp->bucket, .sm = sp->sm },
                               &fn);
    bool ok = st != NULL;
    if (ok && sp->sm > 0)
        ok = cg_cuda_fits(st, &fn, sp->sm); /* the backend's own limits */
    arena_free(&a);
    return ok;
}

void tune_space_check(Arena *a, Graph *g, const Space *sp, int *const *points, int n, bool *ok)
{
    (void)a;
    int next = 0;
    while (next < n) {
        int fds[2];
        if (pipe(fds) != 0) {
            for (int i = next; i < n; i++)
                ok[i] = point_applies(g, sp, points[i]);
            return;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            tune_die_with_parent();
            close(fds[0]);
            FILE *null = fopen("/dev/null", "w");
            diag_stream = null ? null : stderr;
            if (null)
                dup2(fileno(null), 2);
            for (int i = next; i < n; i++) {
                char c = point_applies(g, sp, points[i]) ? '1' : '0';
                if (write(fds[1], &c, 1) != 1)
                    _exit(1);
            }
            _exit(0);
        }
        close(fds[1]);
        if (pid < 0) {
            close(fds[0]);
            for (int i = next; i < n; i++)
                ok[i] = point_applies(g, sp, points[i]);
            return;
        }
        char c;
        ssize_t got;
        while (next < n && ((got = read(fds[0], &c, 1)) == 1 || (got < 0 && errno == EINTR)))
            if (got == 1)
                ok[next++] = c == '1';
        close(fds[0]);
        int wstatus;
        while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
            ;
        if (next < n) {
            /* the child died on point NEXT: a bug in texc, not the point's */
            fprintf(stderr, "texc: warning: checking a candidate schedule crashed texc (%s); "
                            "skipping it\n",
                    WIFSIGNALED(wstatus) ? strsignal(WTERMSIG(wstatus)) : "exited");
            ok[next++] = false;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Configurations, features, printing, sampling.                       */

json_t *tune_space_config(const Space *sp, const int *point)
{
    json_t *c = json_object();
    for (int i = 0; i < sp->nparams; i++)
        json_object_set_new(c, sp->params[i].name,
                            json_integer((json_int_t)sp->params[i].values[point[i]]));
    return c;
}

bool tune_space_point_of(const Space *sp, const json_t *config, int *point)
{
    if (!json_is_object(config) || (int)json_object_size(config) != sp->nparams)
        return false;
    for (int i = 0; i < sp->nparams; i++) {
        json_t *v = json_object_get(config, sp->params[i].name);
        if (!json_is_integer(v))
            return false;
        point[i] = -1;
        for (int k = 0; k < sp->params[i].nvalues; k++)
            if (sp->params[i].values[k] == (int64_t)json_integer_value(v))
                point[i] = k;
        if (point[i] < 0)
            return false;
    }
    return true;
}

void tune_space_features(const Space *sp, const int *point, double *out)
{
    int f = 0;
    for (int i = 0; i < sp->nparams; i++) {
        const Param *p = &sp->params[i];
        if (p->categorical) {
            for (int k = 0; k < p->nvalues; k++)
                out[f++] = point[i] == k;
        } else {
            double v = (double)p->values[point[i]];
            out[f++] = v >= 0 ? log2(1 + v) : -log2(1 - v);
        }
    }
}

void tune_space_print(FILE *out, const Space *sp)
{
    if (sp->is_auto)
        fprintf(out, "texc: search space: automatic, %d stage%s", sp->nplans,
                sp->nplans == 1 ? "" : "s");
    else
        fprintf(out, "texc: search space: the knobs of the %s schedule", target_name(sp->target));
    fprintf(out, ", %.0f point%s\n", sp->size, sp->size == 1 ? "" : "s");
    bool tiled = false;
    for (int i = 0; i < sp->nplans; i++)
        tiled = tiled || sp->plans[i]->kind == SCH_FORM_CUDA_TILE;
    if (tiled)
        fprintf(out, "texc:   legal: 32 to 1024 threads a block (fewer only for tiles of fewer "
                     "outputs), at most 64 sums and ~255 registers a thread and 65536 a block, "
                     "at most %lld bytes of shared memory (%s)\n",
                (long long)sp->smem_limit, sp->smem_from);
    for (int i = 0; i < sp->nparams; i++) {
        const Param *p = &sp->params[i];
        fprintf(out, "texc:   %-12s in [", p->name);
        for (int k = 0; k < p->nvalues; k++)
            fprintf(out, "%s%lld", k ? ", " : "", (long long)p->values[k]);
        fputs("]\n", out);
    }
    /* what each stage's points are */
    static const char *const kinds[] = { "matmul-like", "elementwise", "a reduction",
                                         "tiled", "flat", "tensor cores", "attention" };
    for (int i = 0; i < sp->nplans; i++) {
        const StagePlan *p = sp->plans[i];
        fprintf(out, "texc:   %s: %s, %d point%s", p->stage, kinds[p->kind], p->nlegal,
                p->nlegal == 1 ? "" : "s");
        if (p->kind == SCH_FORM_CUDA_TILE) {
            fprintf(out, ": blocks of bm x bn outputs (%s, %s to block.y, block.x), threads "
                         "of tm x tn (%s, %s to thread.y, thread.x), %s split by bk (0: not), ",
                    p->loops.io, p->loops.jo, p->loops.it, p->loops.jt, p->loops.rvar[p->loops.rsplit]);
            if (p->loops.nstaged == 0)
                fputs("no operand to stage in shared memory", out);
            for (int t = 0; t < p->loops.nstaged; t++)
                fprintf(out, "%s%s", t ? " and " : "stage 1: ", p->loops.staged[t]);
            if (p->loops.nstaged)
                fprintf(out, " staged in shared memory at %s, fetched pipe - 1 steps ahead",
                        p->loops.ko);
            fputs("; unroll 1: ki and the thread's tile unrolled\n", out);
            continue;
        }
        if (p->kind == SCH_FORM_CUDA_MMA) {
            fputs(": tensorize(bm, bn, wm, wn, bk, stages): blocks of bm x bn outputs, warps "
                  "of wm x wn, k steps of bk fetched stages - 1 ahead\n", out);
            continue;
        }
        if (p->kind == SCH_FORM_FLASH) {
            fprintf(out, ": flash(%s, keys) for keys > 0, computing %s, %s, %s and %s in its "
                         "kernel (their plans then at their first point); 0: no flash\n",
                    p->loops.rvar[0], p->chain[1], p->chain[2], p->chain[3], p->chain[4]);
            continue;
        }
        if (p->kind == SCH_FORM_CUDA_FLAT) {
            fprintf(out, ": the spatial loops fused, split by threads into %s (block.x) and %s "
                         "(thread.x)%s\n",
                    p->loops.bx, p->loops.tx, p->loops.nrvars ? "; the reduction split by tk, unrolled (0: not)" : "");
            continue;
        }
        if (p->kind != SCH_FORM_MATMUL) {
            fputc('\n', out);
            continue;
        }
        int micro = 0;
        for (int k = 0; k < p->nlegal; k++)
            micro += p->legal[k * p->nparams + M_FORM] == FORM_MICRO;
        fprintf(out, ": %d loop nests (form 0), %d register-blocked micro-kernels (form 1)\n",
                p->nlegal - micro, micro);
        if (!micro)
            continue;
        fprintf(out, "texc:     form 1: %s = %s.cache_write(local), a ti x tj tile: ti in [", p->loops.acc,
                p->stage);
        for (int k = 0; k < p->nmicro_ti; k++)
            fprintf(out, "%s%lld", k ? ", " : "", (long long)p->micro_ti[k]);
        fputs("], tj in [", out);
        for (int k = 0; k < p->nmicro_tj; k++)
            fprintf(out, "%s%lld", k ? ", " : "", (long long)p->micro_tj[k]);
        fprintf(out, "]; order 0 (%s outside) or 2 (%s outside); par 0 (outer tile loop) or 1 "
                     "(both, fused)\n",
                p->loops.io, p->loops.jo);
    }
}

bool tune_space_random(const Space *sp, uint64_t *rng, int *point)
{
    if (sp->is_auto) {
        for (int i = 0; i < sp->nplans; i++) {
            const StagePlan *p = sp->plans[i];
            if (p->nlegal == 0)
                return false;
            /* a matmul's forms are drawn equally often: the micro-kernels
               are few beside the loop nests, yet often the fastest */
            int pick = (int)(tune_rand(rng) % (uint64_t)p->nlegal);
            if (p->kind == SCH_FORM_MATMUL && tune_rand(rng) % 2) {
                int micro = 0;
                for (int k = 0; k < p->nlegal; k++)
                    micro += p->legal[k * p->nparams + M_FORM] == FORM_MICRO;
                int want = micro ? (int)(tune_rand(rng) % (uint64_t)micro) : -1;
                for (int k = 0; k < p->nlegal && want >= 0; k++)
                    if (p->legal[k * p->nparams + M_FORM] == FORM_MICRO && want-- == 0)
                        pick = k;
            }
            const int *t = p->legal + (size_t)pick * p->nparams;
            memcpy(point + p->first, t, sizeof *point * (size_t)p->nparams);
        }
        /* the stages a flash kernel computes at their first point
           (tune_space_legal) */
        for (int i = 0; i < sp->nplans; i++) {
            const StagePlan *p = sp->plans[i];
            if (flashed_by(sp, p, point))
                memcpy(point + p->first, p->legal, sizeof *point * (size_t)p->nparams);
        }
        return true;
    }
    for (int i = 0; i < sp->nparams; i++)
        point[i] = (int)(tune_rand(rng) % (uint64_t)sp->params[i].nvalues);
    return true;
}

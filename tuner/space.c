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
 *          will.
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
 * process (and, for cuda, emits their CUDA C: the backend's own limits):
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

typedef enum PlanKind {
    PLAN_MATMUL,   /* a register-tiled reduction over >= 2 spatial axes */
    PLAN_ELEMWISE, /* an elementwise stage */
    PLAN_REDUCE,   /* any other reduction */
    PLAN_CUDA_TILED, /* cuda: a reduction over >= 2 spatial axes */
    PLAN_CUDA_FLAT,  /* cuda: any other root stage */
} PlanKind;

/* Param offsets within a plan, by kind. */
enum { M_TI, M_TJ, M_TK, M_ORDER, M_UI, M_UK, M_VEC, M_PAR, M_FORM, M_COUNT };

/* A matmul plan's forms (its M_FORM values). */
enum { FORM_LOOPS, FORM_MICRO };

enum { SIZES_MAX = 8 };
enum { E_VS, E_PAR, E_COUNT };
enum { R_TK, R_PAR, R_VEC, R_COUNT };
enum { C_BM, C_BN, C_TM, C_TN, C_BK, C_STAGE, C_PIPE, C_UNROLL, C_COUNT };
enum { F_THREADS, F_TK, F_COUNT };
/* The most parameters a plan has: enumerate_plan's arrays. */
enum { PLAN_PARAMS_MAX = M_COUNT };
_Static_assert((int)C_COUNT <= (int)PLAN_PARAMS_MAX, "a cuda plan has too many parameters");

struct StagePlan {
    PlanKind kind;
    const char *stage;
    int first;             /* its first Param in Space.params */
    int nparams;
    const char **svar;     /* the spatial loops' names, outermost first */
    int nsvars;
    const char **rvar;     /* the reduction loops' names */
    int nrvars;
    int rsplit;            /* the reduction axis tk splits */
    int64_t rsplit_extent;
    int lanes;             /* vector lanes of the stage's dtype */
    int regs;              /* vector registers */
    /* names of the loops the statements create */
    const char *io, *ii, *jo, *ji, *ko, *ki, *fused;
    /* matmul: the tile sizes each form allows (the ti and tj Params hold
       their union), and the micro-kernel's accumulator stage */
    int64_t loop_ti[SIZES_MAX], loop_tj[SIZES_MAX], micro_ti[SIZES_MAX], micro_tj[SIZES_MAX];
    int nloop_ti, nloop_tj, nmicro_ti, nmicro_tj;
    const char *acc;
    /* cuda: the loops the statements create (io, jo, ko, ki above too) */
    const char *it, *ib, *ir, *jt, *jb, *jr, *bx, *tx;
    const char **bz;       /* the batch axes fused: bz[0] = svar0 x svar1, ... */
    int64_t iext, jext, batch, total;
    /* cuda: the operands staged in shared memory at ko, each tile's
       extents given by the role of each of its dimensions */
    const char *staged[TE_MAX_RANK], *staged_as[TE_MAX_RANK];
    char staged_role[TE_MAX_RANK][TE_MAX_RANK]; /* 'i', 'j', 'k' or 1 */
    int staged_rank[TE_MAX_RANK], staged_bytes[TE_MAX_RANK];
    int nstaged;
    int64_t smem_limit;    /* the device's, or CUDA_DEFAULT_SMEM */
    int min_threads;       /* a warp, or all the tile allows */
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
/* The machine's vectors.                                              */

static bool cpu_has(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    while (!found && getline(&line, &cap, f) > 0) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        for (char *w = strtok(line + 5, " \t\n:"); w && !found; w = strtok(NULL, " \t\n:"))
            found = strcmp(w, flag) == 0;
        break;
    }
    free(line);
    fclose(f);
    return found;
}

/* Vector bytes and registers: AVX-512, AVX, else 16-byte vectors. */
static void vector_unit(int *bytes, int *regs)
{
    static int cached_bytes, cached_regs;
    if (!cached_bytes) {
        if (cpu_has("avx512f")) {
            cached_bytes = 64;
            cached_regs = 32;
        } else if (cpu_has("avx")) {
            cached_bytes = 32;
            cached_regs = 16;
        } else {
            cached_bytes = 16;
            cached_regs = cpu_has("asimd") ? 32 : 16;
        }
    }
    *bytes = cached_bytes;
    *regs = cached_regs;
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

/* Does the written schedule W name stage S (as default.c decides)? */
static bool mentioned(const Schedule *w, const SStage *s)
{
    for (int i = 0; w && i < w->nstmts; i++) {
        const SchedStmt *st = w->stmts[i];
        if (sch_stage_named(s, st->stage) || (st->result && sch_stage_named(s, st->result)))
            return true;
        if (st->nargs > 0 && st->args[0].kind == SA_NAME && strcmp(st->prim, "compute_at") == 0 &&
            sch_stage_named(s, st->args[0].name))
            return true;
    }
    return false;
}

/* A loop name for STAGE made from BASE and SUFFIX that no loop of S has
 * and none of the names already taken (TAKEN, N). */
static const char *fresh_name(Arena *a, SStage *s, const char *base, const char *suffix,
                              const char **taken, int n)
{
    for (int attempt = 0;; attempt++) {
        const char *name = attempt == 0 ? arena_printf(a, "%s%s", base, suffix)
                                        : arena_printf(a, "%s_%s%d", base, suffix, attempt);
        bool clash = sch_find_loop(s, name) != NULL;
        for (int i = 0; i < n && !clash; i++)
            clash = strcmp(taken[i], name) == 0;
        if (!clash)
            return name;
    }
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

static StagePlan *new_plan(SpaceBuilder *b, SStage *s, PlanKind kind)
{
    Arena *a = b->a;
    StagePlan *p = arena_alloc(a, sizeof *p);
    p->kind = kind;
    p->stage = s->name;
    p->nsvars = s->nsvars;
    p->nrvars = s->nrvars;
    p->svar = arena_alloc(a, sizeof *p->svar * (size_t)(s->nsvars + 1));
    p->rvar = arena_alloc(a, sizeof *p->rvar * (size_t)(s->nrvars + 1));
    /* the loops of an unscheduled stage: one per variable, in order */
    for (int i = 0; i < s->nsvars; i++)
        p->svar[i] = ((Loop *)s->loops.items[i])->name;
    for (int i = 0; i < s->nrvars; i++) {
        p->rvar[i] = ((Loop *)s->loops.items[s->nsvars + i])->name;
        if (s->rvars[i]->extent > p->rsplit_extent) {
            p->rsplit = i;
            p->rsplit_extent = s->rvars[i]->extent;
        }
    }
    int bytes;
    vector_unit(&bytes, &p->regs);
    p->lanes = bytes / dtype_bytes(s->tensor->dtype);
    if (p->lanes > 16)
        p->lanes = 16;
    if (p->lanes < 1)
        p->lanes = 1;
    const char *taken[8];
    int nt = 0;
    if (s->nsvars >= 1) {
        const char *j = p->svar[s->nsvars - 1];
        p->jo = fresh_name(a, s, j, "o", taken, nt);
        taken[nt++] = p->jo;
        p->ji = fresh_name(a, s, j, "i", taken, nt);
        taken[nt++] = p->ji;
    }
    if (s->nsvars >= 2) {
        const char *i = p->svar[s->nsvars - 2];
        p->io = fresh_name(a, s, i, "o", taken, nt);
        taken[nt++] = p->io;
        p->ii = fresh_name(a, s, i, "i", taken, nt);
        taken[nt++] = p->ii;
    }
    if (s->nrvars >= 1) {
        const char *k = p->rvar[p->rsplit];
        p->ko = fresh_name(a, s, k, "o", taken, nt);
        taken[nt++] = p->ko;
        p->ki = fresh_name(a, s, k, "i", taken, nt);
        taken[nt++] = p->ki;
    }
    p->fused = fresh_name(a, s, "f", "", taken, nt);
        taken[nt++] = p->fused;
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

/* A stage name made from BASE and SUFFIX that no stage has. */
static const char *fresh_stage(Arena *a, SchedState *st, const char *base, const char *suffix)
{
    for (int attempt = 0;; attempt++) {
        const char *name = attempt == 0 ? arena_printf(a, "%s%s", base, suffix)
                                        : arena_printf(a, "%s%s%d", base, suffix, attempt);
        if (!sch_find_stage(st, name))
            return name;
    }
}

static void plan_matmul(SpaceBuilder *b, SStage *s, int plan)
{
    StagePlan *p = new_plan(b, s, PLAN_MATMUL);
    int64_t iext = s->svars[s->nsvars - 2]->extent, jext = s->svars[s->nsvars - 1]->extent;
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
    if (micro)
        p->acc = fresh_stage(a, b->st, st, "_acc");
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
    StagePlan *p = new_plan(b, s, PLAN_ELEMWISE);
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
    StagePlan *p = new_plan(b, s, PLAN_REDUCE);
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

/* The CUDA loop names of a plan: BASE + SUFFIX, fresh among S's loops and
 * the ones named before. */
typedef struct Names {
    Arena *a;
    SStage *s;
    const char *taken[TE_MAX_RANK + 24];
    int n;
} Names;

static const char *take(Names *nm, const char *base, const char *suffix)
{
    const char *name = fresh_name(nm->a, nm->s, base, suffix, nm->taken, nm->n);
    nm->taken[nm->n++] = name;
    return name;
}

/* The names of COUNT loops fused one after another (the first fuses the
 * two outermost axes, each next one adds an axis); the last, the whole,
 * is called LAST. */
static const char **fused_names(Names *nm, int count, const char *last)
{
    const char **out = arena_alloc(nm->a, sizeof *out * (size_t)(count + 1));
    for (int i = 0; i < count; i++)
        out[i] = take(nm, i + 1 == count ? last : "f", "");
    return out;
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

/* A stage or input name nobody uses, for a cache stage. */
static const char *fresh_cache_stage(Arena *a, SchedState *st, const char *base, const char **taken,
                                     int ntaken)
{
    for (int attempt = 0;; attempt++) {
        const char *name = attempt == 0 ? arena_printf(a, "%s_shared", base)
                                        : arena_printf(a, "%s_shared%d", base, attempt + 1);
        bool used = sch_find_stage(st, name) != NULL;
        for (int i = 0; i < st->g->ninputs && !used; i++)
            used = strcmp(st->g->inputs[i]->name, name) == 0;
        for (int i = 0; i < ntaken && !used; i++)
            used = strcmp(taken[i], name) == 0;
        if (!used)
            return name;
    }
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
    StagePlan *p = new_plan(b, s, PLAN_CUDA_TILED);
    Arena *a = b->a;
    int n = s->nsvars;
    const char *i = p->svar[n - 2], *j = p->svar[n - 1], *k = p->rvar[p->rsplit];
    Names nm = { a, s, { 0 }, 0 };
    /* two or more batch axes are fused into one loop for block.z; a
       single one is that loop itself */
    p->bz = n > 3 ? fused_names(&nm, n - 3, "bz") : NULL;
    p->io = take(&nm, i, "o"), p->ib = take(&nm, i, "b"), p->ir = take(&nm, i, "r");
    p->it = take(&nm, i, "t");
    p->jo = take(&nm, j, "o"), p->jb = take(&nm, j, "b"), p->jr = take(&nm, j, "r");
    p->jt = take(&nm, j, "t");
    p->ko = take(&nm, k, "o"), p->ki = take(&nm, k, "i");
    p->iext = s->svars[n - 2]->extent;
    p->jext = s->svars[n - 1]->extent;
    p->batch = 1;
    for (int d = 0; d < n - 2; d++)
        p->batch *= s->svars[d]->extent;
    p->smem_limit = smem_limit;
    /* a warp at least, unless the whole tile has fewer outputs */
    int64_t most = pow2_at_least(p->iext) * pow2_at_least(p->jext);
    p->min_threads = most < 32 ? (int)most : 32;
    const Tensor *staged[TE_MAX_RANK];
    p->nstaged = s->nrvars == 1 ? sch_cuda_staged_operands(b->st, s, staged) : 0;
    for (int t = 0; t < p->nstaged; t++) {
        p->staged[t] = staged[t]->name;
        p->staged_as[t] = fresh_cache_stage(a, b->st, staged[t]->name, p->staged_as, t);
        p->staged_rank[t] = load_roles(s->value, staged[t], s, p->staged_role[t]);
        p->staged_bytes[t] = dtype_bytes(staged[t]->dtype);
    }

    static const int64_t blocks[] = { 16, 32, 64, 128 }, threads[] = { 1, 2, 4, 8 };
    static const int64_t bk[] = { 0, 8, 16, 32 }, flag[] = { 0, 1 }, pipe[] = { 1, 2, 3 };
    int64_t v[8];
    int nv = pow2_sizes(v, blocks, 4, p->iext);
    add_param(b, arena_printf(a, "%s.bm", s->name), v, nv, false, plan);
    nv = pow2_sizes(v, blocks, 4, p->jext);
    add_param(b, arena_printf(a, "%s.bn", s->name), v, nv, false, plan);
    add_param(b, arena_printf(a, "%s.tm", s->name), threads, 4, false, plan);
    add_param(b, arena_printf(a, "%s.tn", s->name), threads, 4, false, plan);
    nv = sizes(v, bk, 4, p->rsplit_extent, p->rsplit_extent);
    add_param(b, arena_printf(a, "%s.bk", s->name), v, nv, false, plan);
    add_param(b, arena_printf(a, "%s.stage", s->name), flag, p->nstaged ? 2 : 1, true, plan);
    add_param(b, arena_printf(a, "%s.pipe", s->name), pipe, p->nstaged ? 3 : 1, false, plan);
    add_param(b, arena_printf(a, "%s.unroll", s->name), flag, 2, false, plan);
    p->nparams = C_COUNT;
    vec_push(a, &b->plans, p);
}

/* Any other root stage, as sched/default_cuda.c schedules it: its spatial
 * loops fused and split by THREADS into block.x and thread.x; a reduction
 * may split its longest axis by TK and unroll the inner part. */
static void plan_cuda_flat(SpaceBuilder *b, SStage *s, int plan)
{
    StagePlan *p = new_plan(b, s, PLAN_CUDA_FLAT);
    Arena *a = b->a;
    Names nm = { a, s, { 0 }, 0 };
    p->bz = s->nsvars > 1 ? fused_names(&nm, s->nsvars - 1, "f") : NULL;
    p->bx = take(&nm, "b", "x");
    p->tx = take(&nm, "t", "x");
    if (s->nrvars > 0) {
        p->ko = take(&nm, p->rvar[p->rsplit], "o");
        p->ki = take(&nm, p->rvar[p->rsplit], "i");
    }
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
    for (int t = 0; t < p->nstaged; t++) {
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
    hash_text(h, sp->target);
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

Space *tune_space_new(Arena *a, Graph *g, const Schedule *written, const char *target)
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
        if (written && !sch_apply_schedule(st, written, NULL)) {
            arena_free(&scratch);
            return NULL;
        }
        /* the plans live in A; names copied out of the scratch arena */
        Arena *keep = a;
        b.a = keep;
        b.st = st;
        if (strcmp(target, "cpu") == 0) {
            for (int i = 0; i < st->stages.len; i++) {
                SStage *s = st->stages.items[i];
                if (s->inlined || s->attach || s->nsvars == 0 || mentioned(written, s) ||
                    (!s->tensor->is_output && !s->is_reduce) || s->loops.len != s->nsvars + s->nrvars)
                    continue;
                int bytes, regs;
                vector_unit(&bytes, &regs);
                int lanes = bytes / dtype_bytes(s->tensor->dtype);
                if (lanes > 16)
                    lanes = 16;
                int plan = b.plans.len;
                if (s->is_reduce && s->nsvars >= 2 && s->svars[s->nsvars - 1]->extent >= lanes)
                    plan_matmul(&b, s, plan);
                else if (!s->is_reduce)
                    plan_elementwise(&b, s, plan);
                else
                    plan_reduce(&b, s, plan);
            }
        } else if (strcmp(target, "cuda") == 0) {
            /* the stages sched/default_cuda.c would schedule */
            bool tiled = false;
            for (int pass = 0; pass < 2; pass++) {
                for (int i = 0; i < st->stages.len; i++) {
                    SStage *s = st->stages.items[i];
                    if (s->inlined || s->attach || s->nsvars == 0 || mentioned(written, s) ||
                        (!s->tensor->is_output && !s->is_reduce) ||
                        s->loops.len != s->nsvars + s->nrvars)
                        continue;
                    bool is_tiled = s->is_reduce && s->nsvars >= 2;
                    if (pass == 0) {
                        tiled = tiled || is_tiled;
                        continue;
                    }
                    int plan = b.plans.len;
                    if (is_tiled)
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
            for (int k = 0; k < p->nsvars; k++)
                p->svar[k] = arena_strdup(keep, p->svar[k]);
            for (int k = 0; k < p->nrvars; k++)
                p->rvar[k] = arena_strdup(keep, p->rvar[k]);
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
/* Legality and statements.                                            */

static bool plan_legal(const StagePlan *p, const int64_t *v)
{
    switch (p->kind) {
    case PLAN_MATMUL: {
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
        if (v[M_UI] && ti == 1)
            return false; /* the same point as ui = 0 */
        if (v[M_PAR] == 1 && p->nsvars == 2 && order == 3)
            return false; /* would fuse io with the reduction */
        return true;
    }
    case PLAN_ELEMWISE: {
        if (v[E_VS] == 0 && v[E_PAR] == 2)
            return false; /* no statement: the default schedule's point */
        int loops = p->nsvars + (v[E_VS] > 1);
        int outer = v[E_VS] >= 1 ? loops - 1 : loops; /* loops outside the vector */
        if (v[E_PAR] == 0 && outer < 1)
            return false;
        if (v[E_PAR] == 1 && outer < 2)
            return false;
        return true;
    }
    case PLAN_REDUCE:
        if (v[R_TK] == 0 && v[R_PAR] == 2 && v[R_VEC] == 0)
            return false; /* no statement: the default schedule's point
                             (which tk 0, par 0 and, where offered, vec 1
                             also writes: the tuner measures it again) */
        if (v[R_VEC] && v[R_TK] > 0 && p->rsplit == p->nrvars - 1)
            return false; /* the split's inner part is unrolled */
        if (v[R_PAR] == 1 && p->nsvars < 2)
            return false;
        return true;
    case PLAN_CUDA_TILED: {
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
    case PLAN_CUDA_FLAT:
        return true;
    }
    return false;
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
    }
    return true;
}

typedef struct Emitter {
    Arena *a;
    const char *stage;
    PtrVec stmts;
} Emitter;

static SchedStmt *emit(Emitter *e, const char *prim, int nargs)
{
    SchedStmt *s = arena_alloc(e->a, sizeof *s);
    s->stage = e->stage;
    s->prim = prim;
    s->args = arena_alloc(e->a, sizeof *s->args * (size_t)(nargs + 1));
    s->nargs = nargs;
    s->outs = arena_alloc(e->a, sizeof *s->outs * 4);
    s->out_spans = arena_alloc(e->a, sizeof *s->out_spans * 4);
    vec_push(e->a, &e->stmts, s);
    return s;
}

static void emit_loop(Emitter *e, const char *prim, const char *loop)
{
    SchedStmt *s = emit(e, prim, 1);
    s->args[0] = (SchedArg){ .kind = SA_NAME, .name = loop };
}

static void emit_split(Emitter *e, const char *loop, int64_t f, const char *o, const char *i)
{
    SchedStmt *s = emit(e, "split", 2);
    s->args[0] = (SchedArg){ .kind = SA_NAME, .name = loop };
    s->args[1] = (SchedArg){ .kind = SA_INT, .ival = f };
    s->outs[0] = o;
    s->outs[1] = i;
    s->nouts = 2;
}

static void emit_fuse(Emitter *e, const char *x, const char *y, const char *f)
{
    SchedStmt *s = emit(e, "fuse", 2);
    s->args[0] = (SchedArg){ .kind = SA_NAME, .name = x };
    s->args[1] = (SchedArg){ .kind = SA_NAME, .name = y };
    s->outs[0] = f;
    s->nouts = 1;
}

static void emit_parallel(Emitter *e, const StagePlan *p, const char *first, const char *second,
                          int64_t par)
{
    if (par == 0) {
        emit_loop(e, "parallel", first);
    } else if (par == 1) {
        emit_fuse(e, first, second, p->fused);
        emit_loop(e, "parallel", p->fused);
    }
}

/* The micro-kernel (form 1), as sched/default.c writes it:
 *   acc = S.cache_write(local);
 *   S.tile(i, j, ti, tj) -> io, jo, ii, ji;
 *   S.reorder(batch.., io, jo, ii, ji);     order 2: jo before io
 *   S.fuse(io, jo) -> f;                    par 1 (before compute_at,
 *                                           which pins the loop it names)
 *   acc.compute_at(S, jo);                  (the inner tile loop, or f)
 *   acc.reorder(k.., i, j); acc.unroll(i); acc.vectorize(j);
 *   S.vectorize(ji); S.parallel(the outermost loop, or f); */
static void emit_micro(Emitter *e, const StagePlan *p, const int64_t *v)
{
    const char *i = p->svar[p->nsvars - 2], *j = p->svar[p->nsvars - 1];
    SchedStmt *cw = emit(e, "cache_write", 1);
    cw->args[0] = (SchedArg){ .kind = SA_NAME, .name = "local" };
    cw->result = p->acc;
    SchedStmt *t = emit(e, "tile", 4);
    t->args[0] = (SchedArg){ .kind = SA_NAME, .name = i };
    t->args[1] = (SchedArg){ .kind = SA_NAME, .name = j };
    t->args[2] = (SchedArg){ .kind = SA_INT, .ival = v[M_TI] };
    t->args[3] = (SchedArg){ .kind = SA_INT, .ival = v[M_TJ] };
    t->outs[0] = p->io;
    t->outs[1] = p->jo;
    t->outs[2] = p->ii;
    t->outs[3] = p->ji;
    t->nouts = 4;
    const char *outer = v[M_ORDER] == 2 ? p->jo : p->io;
    const char *inner = v[M_ORDER] == 2 ? p->io : p->jo;
    SchedStmt *r = emit(e, "reorder", p->nsvars + 2);
    int n = 0;
    for (int b = 0; b < p->nsvars - 2; b++)
        r->args[n++] = (SchedArg){ .kind = SA_NAME, .name = p->svar[b] };
    const char *order[] = { outer, inner, p->ii, p->ji };
    for (int k = 0; k < 4; k++)
        r->args[n++] = (SchedArg){ .kind = SA_NAME, .name = order[k] };
    const char *at = inner, *par = p->nsvars > 2 ? p->svar[0] : outer;
    if (v[M_PAR] == 1) {
        emit_fuse(e, outer, inner, p->fused);
        at = par = p->fused;
    }
    const char *stage = e->stage;
    e->stage = p->acc;
    SchedStmt *ca = emit(e, "compute_at", 2);
    ca->args[0] = (SchedArg){ .kind = SA_NAME, .name = stage };
    ca->args[1] = (SchedArg){ .kind = SA_NAME, .name = at };
    SchedStmt *ar = emit(e, "reorder", p->nrvars + 2);
    for (int k = 0; k < p->nrvars; k++)
        ar->args[k] = (SchedArg){ .kind = SA_NAME, .name = p->rvar[k] };
    ar->args[p->nrvars] = (SchedArg){ .kind = SA_NAME, .name = i };
    ar->args[p->nrvars + 1] = (SchedArg){ .kind = SA_NAME, .name = j };
    emit_loop(e, "unroll", i);
    emit_loop(e, "vectorize", j);
    e->stage = stage;
    emit_loop(e, "vectorize", p->ji);
    emit_loop(e, "parallel", par);
}

static void emit_matmul(Emitter *e, const StagePlan *p, const int64_t *v)
{
    if (v[M_FORM] == FORM_MICRO) {
        emit_micro(e, p, v);
        return;
    }
    const char *i = p->svar[p->nsvars - 2], *j = p->svar[p->nsvars - 1];
    const char *k = p->rvar[p->rsplit];
    int64_t ti = v[M_TI], tj = v[M_TJ], tk = v[M_TK], order = v[M_ORDER];
    emit_split(e, j, tj, p->jo, p->ji);
    const char *io = i, *ii = NULL, *ko = k, *ki = NULL;
    if (ti > 1) {
        emit_split(e, i, ti, p->io, p->ii);
        io = p->io;
        ii = p->ii;
    }
    if (tk > 0) {
        emit_split(e, k, tk, p->ko, p->ki);
        ko = p->ko;
        ki = p->ki;
    }
    /* the new order: batch axes, then the variant's */
    const char *loops[TE_MAX_RANK * 2 + 8];
    int n = 0;
    for (int b = 0; b < p->nsvars - 2; b++)
        loops[n++] = p->svar[b];
    int nbatch = n;
    const char *red[TE_MAX_RANK + 1];
    for (int r = 0; r < p->nrvars; r++)
        red[r] = r == p->rsplit ? ko : p->rvar[r];
#define PUT(x)                \
    do {                      \
        if (x)                \
            loops[n++] = (x); \
    } while (0)
#define PUT_RED()                           \
    for (int r = 0; r < p->nrvars; r++)     \
    loops[n++] = red[r]
    switch (order) {
    case 0: PUT(io); PUT(p->jo); PUT_RED(); PUT(ki); PUT(ii); PUT(p->ji); break;
    case 1: PUT(io); PUT(p->jo); PUT_RED(); PUT(ii); PUT(ki); PUT(p->ji); break;
    case 2: PUT(p->jo); PUT(io); PUT_RED(); PUT(ki); PUT(ii); PUT(p->ji); break;
    default: PUT(io); PUT_RED(); PUT(p->jo); PUT(ki); PUT(ii); PUT(p->ji); break;
    }
#undef PUT
#undef PUT_RED
    SchedStmt *r = emit(e, "reorder", n);
    for (int x = 0; x < n; x++)
        r->args[x] = (SchedArg){ .kind = SA_NAME, .name = loops[x] };
    if (v[M_UI] && ii)
        emit_loop(e, "unroll", ii);
    if (v[M_UK] && ki)
        emit_loop(e, "unroll", ki);
    if (v[M_VEC])
        emit_loop(e, "vectorize", p->ji);
    (void)nbatch;
    emit_parallel(e, p, loops[0], loops[1], v[M_PAR]);
}

static void emit_elementwise(Emitter *e, const StagePlan *p, const int64_t *v)
{
    const char *loops[TE_MAX_RANK + 2];
    int n = 0;
    for (int d = 0; d < p->nsvars; d++)
        loops[n++] = p->svar[d];
    const char *vec = NULL;
    if (v[E_VS] > 1) {
        emit_split(e, p->svar[p->nsvars - 1], v[E_VS], p->jo, p->ji);
        loops[n - 1] = p->jo;
        loops[n++] = p->ji;
        vec = p->ji;
    } else if (v[E_VS] == 1) {
        vec = p->svar[p->nsvars - 1];
    }
    emit_parallel(e, p, loops[0], n > 1 ? loops[1] : NULL, v[E_PAR]);
    if (vec)
        emit_loop(e, "vectorize", vec);
}

static void emit_reduce(Emitter *e, const StagePlan *p, const int64_t *v)
{
    if (v[R_TK] > 0) {
        emit_split(e, p->rvar[p->rsplit], v[R_TK], p->ko, p->ki);
        emit_loop(e, "unroll", p->ki);
    }
    emit_parallel(e, p, p->svar[0], p->nsvars > 1 ? p->svar[1] : NULL, v[R_PAR]);
    if (v[R_VEC])
        emit_loop(e, "vectorize", p->rvar[p->nrvars - 1]);
}

static void emit_bind(Emitter *e, const char *loop, const char *axis)
{
    SchedStmt *s = emit(e, "bind", 2);
    s->args[0] = (SchedArg){ .kind = SA_NAME, .name = loop };
    s->args[1] = (SchedArg){ .kind = SA_NAME, .name = axis };
}

/* The loops AXES (N, adjacent, outermost first) fused into one, the
 * fused loops called NAMES[0..n-2]; the name of the whole. */
static const char *emit_fuse_axes(Emitter *e, const char *const *axes, int n, const char **names)
{
    const char *f = axes[0];
    for (int d = 1; d < n; d++) {
        emit_fuse(e, f, axes[d], names[d - 1]);
        f = names[d - 1];
    }
    return f;
}

/* A tiled CUDA point, the statements sched/default_cuda.c writes for its
 * own tile (with bk 16, stage 1, pipe 2, unroll 1):
 *   S.fuse(batch axes) -> bz;                      (two or more)
 *   S.split(i, bm) -> io, ib; S.split(ib, bm/tm) -> ir, it;   (tm > 1;
 *                                      else S.split(i, bm) -> io, it)
 *   the same for j;  S.split(k, bk) -> ko, ki;     (bk > 0)
 *   S.reorder(bz, io, jo, ko, it, jt, ki or the reduction axes, ir, jr);
 *   S.bind(bz, block.z); S.bind(io, block.y); S.bind(jo, block.x);
 *   S.bind(it, thread.y); S.bind(jt, thread.x);
 *   S.unroll(ki); S.unroll(ir); S.unroll(jr);      (unroll)
 *   X_shared = X.cache_read(shared, S) at ko;      (stage, each operand)
 *   S.pipeline(ko, pipe);                          (pipe > 1) */
static void emit_cuda_tiled(Emitter *e, const StagePlan *p, const int64_t *v)
{
    int n = p->nsvars;
    const char *i = p->svar[n - 2], *j = p->svar[n - 1];
    int64_t bm = v[C_BM], bn = v[C_BN], tm = v[C_TM], tn = v[C_TN], bk = v[C_BK];
    const char *loops[TE_MAX_RANK * 2 + 8];
    int nl = 0;
    const char *bz = NULL;
    if (n > 2) {
        bz = emit_fuse_axes(e, p->svar, n - 2, p->bz);
        loops[nl++] = bz;
    }
    const char *ir = NULL, *jr = NULL, *ko = NULL, *ki = NULL;
    if (tm > 1) {
        emit_split(e, i, bm, p->io, p->ib);
        emit_split(e, p->ib, bm / tm, p->ir, p->it);
        ir = p->ir;
    } else {
        emit_split(e, i, bm, p->io, p->it);
    }
    if (tn > 1) {
        emit_split(e, j, bn, p->jo, p->jb);
        emit_split(e, p->jb, bn / tn, p->jr, p->jt);
        jr = p->jr;
    } else {
        emit_split(e, j, bn, p->jo, p->jt);
    }
    if (bk > 0) {
        emit_split(e, p->rvar[p->rsplit], bk, p->ko, p->ki);
        ko = p->ko;
        ki = p->ki;
    }
    loops[nl++] = p->io;
    loops[nl++] = p->jo;
    if (ko)
        loops[nl++] = ko;
    loops[nl++] = p->it;
    loops[nl++] = p->jt;
    for (int r = 0; r < p->nrvars; r++)
        loops[nl++] = r == p->rsplit && ki ? ki : p->rvar[r];
    if (ir)
        loops[nl++] = ir;
    if (jr)
        loops[nl++] = jr;
    SchedStmt *r = emit(e, "reorder", nl);
    for (int x = 0; x < nl; x++)
        r->args[x] = (SchedArg){ .kind = SA_NAME, .name = loops[x] };
    /* gridDim.y and .z are at most 65535: a loop too long stays a loop */
    if (bz && p->batch <= 65535)
        emit_bind(e, bz, "block.z");
    if ((p->iext + bm - 1) / bm <= 65535)
        emit_bind(e, p->io, "block.y");
    emit_bind(e, p->jo, "block.x");
    emit_bind(e, p->it, "thread.y");
    emit_bind(e, p->jt, "thread.x");
    if (v[C_UNROLL]) {
        if (ki)
            emit_loop(e, "unroll", ki);
        if (ir)
            emit_loop(e, "unroll", ir);
        if (jr)
            emit_loop(e, "unroll", jr);
    }
    for (int t = 0; v[C_STAGE] && t < p->nstaged; t++) {
        SchedStmt *c = emit(e, "cache_read", 2);
        c->stage = p->staged[t];
        c->result = p->staged_as[t];
        c->args[0] = (SchedArg){ .kind = SA_NAME, .name = "shared" };
        c->args[1] = (SchedArg){ .kind = SA_NAME, .name = e->stage };
        c->at = ko;
    }
    if (v[C_STAGE] && v[C_PIPE] > 1) {
        SchedStmt *pl = emit(e, "pipeline", 2);
        pl->args[0] = (SchedArg){ .kind = SA_NAME, .name = ko };
        pl->args[1] = (SchedArg){ .kind = SA_INT, .ival = v[C_PIPE] };
    }
}

/* A flat CUDA point:
 *   S.fuse(spatial axes) -> f;  S.split(f, threads) -> bx, tx;
 *   S.bind(bx, block.x); S.bind(tx, thread.x);
 *   S.split(k, tk) -> ko, ki; S.unroll(ki);        (tk > 0) */
static void emit_cuda_flat(Emitter *e, const StagePlan *p, const int64_t *v)
{
    const char *f = emit_fuse_axes(e, p->svar, p->nsvars, p->bz);
    emit_split(e, f, v[F_THREADS], p->bx, p->tx);
    emit_bind(e, p->bx, "block.x");
    emit_bind(e, p->tx, "thread.x");
    if (v[F_TK] > 0) {
        emit_split(e, p->rvar[p->rsplit], v[F_TK], p->ko, p->ki);
        emit_loop(e, "unroll", p->ki);
    }
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

Schedule *tune_space_schedule(Arena *a, const Space *sp, const int *point)
{
    PtrVec stmts = { 0 };
    Schedule *s = copy_written(a, sp, point, &stmts);
    for (int i = 0; i < sp->nplans; i++) {
        const StagePlan *p = sp->plans[i];
        int64_t v[PLAN_PARAMS_MAX];
        for (int k = 0; k < p->nparams; k++)
            v[k] = sp->params[p->first + k].values[point[p->first + k]];
        Emitter e = { a, p->stage, stmts };
        switch (p->kind) {
        case PLAN_MATMUL: emit_matmul(&e, p, v); break;
        case PLAN_ELEMWISE: emit_elementwise(&e, p, v); break;
        case PLAN_REDUCE: emit_reduce(&e, p, v); break;
        case PLAN_CUDA_TILED: emit_cuda_tiled(&e, p, v); break;
        case PLAN_CUDA_FLAT: emit_cuda_flat(&e, p, v); break;
        }
        stmts = e.stmts;
    }
    s->stmts = (SchedStmt **)stmts.items;
    s->nstmts = stmts.len;
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
                                              .target = sp->target, .sched = s },
                               &fn);
    bool ok = st != NULL;
    if (ok && sp->sm > 0) {
        /* the backend's own limits: threads, shared memory, grid */
        CudaProgram prog;
        CodegenOptions co = { "texc_kernel", "", "cuda" };
        ok = cg_cuda_emit(st, &fn, &co, arena_printf(&a, "sm_%d", sp->sm), sp->sm, &prog);
    }
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
        fprintf(out, "texc: search space: the knobs of the %s schedule", sp->target);
    fprintf(out, ", %.0f point%s\n", sp->size, sp->size == 1 ? "" : "s");
    bool tiled = false;
    for (int i = 0; i < sp->nplans; i++)
        tiled = tiled || sp->plans[i]->kind == PLAN_CUDA_TILED;
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
                                         "tiled", "flat" };
    for (int i = 0; i < sp->nplans; i++) {
        const StagePlan *p = sp->plans[i];
        fprintf(out, "texc:   %s: %s, %d point%s", p->stage, kinds[p->kind], p->nlegal,
                p->nlegal == 1 ? "" : "s");
        if (p->kind == PLAN_CUDA_TILED) {
            fprintf(out, ": blocks of bm x bn outputs (%s, %s to block.y, block.x), threads "
                         "of tm x tn (%s, %s to thread.y, thread.x), %s split by bk (0: not), ",
                    p->io, p->jo, p->it, p->jt, p->rvar[p->rsplit]);
            if (p->nstaged == 0)
                fputs("no operand to stage in shared memory", out);
            for (int t = 0; t < p->nstaged; t++)
                fprintf(out, "%s%s", t ? " and " : "stage 1: ", p->staged[t]);
            if (p->nstaged)
                fprintf(out, " staged in shared memory at %s, fetched pipe - 1 steps ahead",
                        p->ko);
            fputs("; unroll 1: ki and the thread's tile unrolled\n", out);
            continue;
        }
        if (p->kind == PLAN_CUDA_FLAT) {
            fprintf(out, ": the spatial loops fused, split by threads into %s (block.x) and %s "
                         "(thread.x)%s\n",
                    p->bx, p->tx, p->nrvars ? "; the reduction split by tk, unrolled (0: not)" : "");
            continue;
        }
        if (p->kind != PLAN_MATMUL) {
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
        fprintf(out, "texc:     form 1: %s = %s.cache_write(local), a ti x tj tile: ti in [", p->acc,
                p->stage);
        for (int k = 0; k < p->nmicro_ti; k++)
            fprintf(out, "%s%lld", k ? ", " : "", (long long)p->micro_ti[k]);
        fputs("], tj in [", out);
        for (int k = 0; k < p->nmicro_tj; k++)
            fprintf(out, "%s%lld", k ? ", " : "", (long long)p->micro_tj[k]);
        fprintf(out, "]; order 0 (%s outside) or 2 (%s outside); par 0 (outer tile loop) or 1 "
                     "(both, fused)\n",
                p->io, p->jo);
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
            if (p->kind == PLAN_MATMUL && tune_rand(rng) % 2) {
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
        return true;
    }
    for (int i = 0; i < sp->nparams; i++)
        point[i] = (int)(tune_rand(rng) % (uint64_t)sp->params[i].nvalues);
    return true;
}

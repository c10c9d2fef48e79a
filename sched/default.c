/* default.c — the schedule texc uses when a file has none for the target.
 *
 * requires: a SchedState; WRITTEN, the file's schedule already applied to
 * it, or NULL.  Stages WRITTEN names are left as they are.
 * guarantees: a Schedule of ordinary statements (so it prints, replays and
 * mutates like a written one) that sch_apply accepts:
 *   - every stage that is neither an output nor a reduction nor a
 *     prepack stage (layout.c) is inlined into its readers
 *     (Halide's default, and the graph optimizer's fusion in miniature),
 *     except a select that a reduction reads (a padded image), computed
 *     once (selects_for_reduction), a stage whose value, with the
 *     stages inlined into it, holds more than TE_MAX_KERNEL_NODES
 *     expression nodes (inlined_size): each reader would copy all of it,
 *     and a chain of stages that each read the one before twice would
 *     double with every link; and a stage that its readers would
 *     recompute more often than pays (recomputed_by_reader: the fusion
 *     pass's cost model, te_fuse_reuse): a layer norm inlined into the
 *     operand of the matmul after it would run once per output column,
 *     softmax's exponentials twice;
 *   - a reduction with two or more spatial axes and a wide innermost one
 *     (a matmul) gets a register-blocked micro-kernel: 8 rows by 3 or 4
 *     vectors accumulated in a local tile (schedule_matmul_like, tile_j);
 *   - any other stage vectorizes its innermost loop when that loop is
 *     spatial, or a reduction axis of at least one vector (partial results
 *     in lanes, folded at the end: not under -fstrict-fp); a spatial one
 *     that the value unflattens (q / C, q % C: im2col's columns) is split
 *     by C first, and the inner part vectorized (unflatten_factor);
 *   - the outermost spatial loop runs in parallel;
 *   - a row operation runs in one pass over each row (plan_rows): a
 *     stage read only at its readers' rows (a softmax's maximum, sum and
 *     exponentials, a layer norm's mean and variance) is computed at the
 *     row loop of the stage that ends the row, into a row-sized buffer.
 * The micro-kernel is sched/template.c's (sch_template_micro, the form
 * the tuner varies); this file picks its tile and names.  The one-line
 * annotations of the other stages are the default's own: the tuner's
 * elementwise and reduction forms write theirs in another order.
 */

#include <string.h>

#include "sched/sched.h"

/* A statement for STAGE, appended to the default schedule B builds. */
static SchedStmt *emit(SchEmit *b, const char *stage, const char *prim, int nargs)
{
    b->stage = stage;
    return sch_emit(b, prim, nargs);
}

static void annotate(SchEmit *b, const char *stage, const char *prim, const char *loop)
{
    emit(b, stage, prim, 1)->args[0] = sch_name_arg(loop);
}

static const char *suffixed(SchEmit *b, const char *name, const char *suffix)
{
    return arena_printf(b->arena, "%s%s", name, suffix);
}

/* A register-blocked micro-kernel: the reduction accumulates a TI x TJ
 * tile in a local buffer (vector registers: TJ/lanes vectors per row, TI
 * rows unrolled), computed at the tile loop of the stage, which then
 * applies its epilogue once per element.  Column blocks are the outer,
 * parallel loop, so each thread's block of w (K x TJ) stays in its cache
 * while the row tiles stream past it. */
/* The column tile: 3 vectors when they divide the axis (8 rows x 3 = 24
 * accumulators leave registers for w and x; 8 x 4 = 32 spill some), else
 * 4 or 2 vectors that divide it, else the widest that fits (the last
 * tile is then an edge tile, with guards). */
static int64_t tile_j(int64_t jext, int lanes)
{
    static const int pref[] = { 3, 4, 2 };
    for (int i = 0; i < 3; i++)
        if (jext % (pref[i] * lanes) == 0)
            return pref[i] * lanes;
    return jext >= 4 * lanes ? 4 * lanes : jext >= 2 * lanes ? 2 * lanes : lanes;
}

/* The micro-kernel's tile for an IEXT x JEXT output: 8 rows (or all) by
 * tile_j columns.  With fewer than 3 rows (a matrix-vector product, M = 1)
 * the columns widen until the tile holds about 8 vectors: with 3, each
 * sum waits on the previous FMA and the k loop reads w at a third of the
 * speed the cache delivers it. */
static void default_tile(int64_t iext, int64_t jext, int lanes, int64_t *ti, int64_t *tj)
{
    *tj = tile_j(jext, lanes);
    /* 8 rows of 3 vectors, or 6 of 4: 24 accumulators either way */
    int64_t rows = *tj / lanes >= 4 ? 6 : 8;
    *ti = iext >= rows ? rows : iext;
    if (*ti * (*tj / lanes) < 8) {
        int64_t want = (8 + *ti - 1) / *ti * lanes;
        while (want > *tj && want > jext)
            want -= lanes;
        if (want > *tj)
            *tj = want;
    }
}

/* The column tile of a matrix-vector product (fewer than 3 rows) whose
 * B operand is read where it is, not in panels: wide, so that each
 * reduction step reads a long run of one row of B and the rows follow
 * each other in memory (the accumulators stay in L1, not in registers):
 * half the columns, to give two threads a tile each, at most 1536 (6
 * KiB of floats a row), at least 8 vectors.  matmul_gelu at M = 1 on w
 * as given, one thread: 13.6 GFLOP/s with 8 vectors, 42 with 1536. */
static int64_t stream_tile(int64_t jext, int lanes)
{
    int64_t half = ((jext + 1) / 2 + lanes - 1) / lanes * lanes;
    int64_t tj = half < 1536 ? half : 1536;
    return tj > 8 * lanes ? tj : 8 * lanes;
}

static int lanes_of(DType t)
{
    int lanes = 64 / dtype_bytes(t);
    return lanes > 16 ? 16 : lanes;
}

/* The panel width of a prepacked weight E loads (layout.c), the widest
 * if several; 0 if none.  For te_expr_any: records it in *CTX. */
static bool note_panel(const Expr *e, const void *ctx)
{
    int64_t *width = (int64_t *)ctx;
    if (e->kind == EX_LOAD && e->tensor->packs && e->tensor->pack_width > *width)
        *width = e->tensor->pack_width;
    return false;
}

/* The weight a matmul-like stage reads in place, W[k, j] (an f32 input of
 * constant shape, k a reduction variable, j the innermost spatial one),
 * if there is exactly one such; for te_expr_any. */
typedef struct InPlace {
    const SStage *s;
    const Tensor *w;
    int n;
} InPlace;

static bool note_in_place(const Expr *e, const void *ctx)
{
    InPlace *p = (InPlace *)ctx;
    const Tensor *t = e->kind == EX_LOAD ? e->tensor : NULL;
    if (!t || t->kind != TK_INPUT || t->rank != 2 || t->dtype != DT_F32 ||
        t->shape_size[0] || t->shape_size[1] || e->args[0]->kind != EX_VAR ||
        e->args[1]->kind != EX_VAR || e->args[1]->var != p->s->svars[p->s->nsvars - 1])
        return false;
    for (int r = 0; r < p->s->nrvars; r++)
        if (e->args[0]->var == p->s->rvars[r] && t != p->w) {
            p->w = t;
            p->n++;
        }
    return false;
}

/* Does copying the weight panel each thread's column block reads (K x TJ)
 * into a buffer of its own pay, where the weight is read in place (not
 * prepacked: an input, or the plain entry point)?  Where its rows are
 * longer than the tile, the block's K rows are each on their own lines
 * and pages, TJ floats apart; the copy makes them one run that the row
 * tiles inside (IEXT / TI of them, at least 2) read from L2.  Below 32
 * KiB the block stays in L1 anyway.  matmul_gelu at 64x768x3072, w as
 * given, one thread: 2.7 ms in place, 2.0 copied, 1.7 prepacked. */
static const Tensor *panel_to_copy(const SStage *s, int64_t iext, int64_t ti, int64_t tj)
{
    InPlace p = { s, NULL, 0 };
    te_expr_any(s->value, note_in_place, &p);
    if (p.n != 1 || ti < 3 || iext < 2 * ti || p.w->shape[1] <= tj ||
        p.w->shape[0] * tj * (int64_t)sizeof(float) < (32 << 10))
        return NULL;
    return p.w;
}

/* The micro-kernel (sch_template_micro) with column panels outside and
 * the tile default_tile picks.  A tile that reads a weight packed in
 * panels of P is P wide: packed weights are shared by every variant of a
 * program with run-time dims (layouts are assigned once, for the hints'
 * bucket), and a tile of several panels or a part of one reads them
 * element by element (w_packed[j / P][k][j % P]); so M = 1's widened
 * tile of 8 vectors is 3 there.  (A static build packs for its own
 * tile: P is its tile already.) */
static void schedule_matmul_like(const SchedState *st, SchEmit *b, SStage *s, int lanes)
{
    int row = sch_micro_row(s);
    const char *j = s->svars[s->nsvars - 1]->name;
    const char *i = s->svars[row]->name;
    int64_t ti, tj;
    /* (at the bucket's hint where a size is run-time) */
    default_tile(sch_extent_hint(st, s->svars[row]), sch_extent_hint(st, s->svars[s->nsvars - 1]),
                 lanes, &ti, &tj);
    int64_t panel = 0;
    te_expr_any(s->value, note_panel, &panel);
    if (panel > 0)
        tj = panel;
    else if (ti < 3)
        tj = stream_tile(sch_extent_hint(st, s->svars[s->nsvars - 1]), lanes);
    SchLoops l = { 0 };
    sch_stage_loops(b->arena, s, &l);
    l.acc = suffixed(b, s->name, "_acc");
    l.jo = suffixed(b, j, "o"), l.ji = suffixed(b, j, "i");
    l.io = suffixed(b, i, "o"), l.ii = suffixed(b, i, "i");
    b->stage = s->name;
    /* another row axis: the template's reorder of every loop puts it */
    sch_loops_row_inner(&l, row);
    SchMicro m = { .ti = ti, .tj = tj, .order = 2, .par = 0,
                   .reorder_all = row != s->nsvars - 2 };
    const Tensor *w = panel > 0 ? NULL : panel_to_copy(s, sch_extent_hint(st, s->svars[row]), ti, tj);
    if (w) {
        m.panel_of = w->name;
        m.panel = suffixed(b, s->name, "_panel");
        m.panel_j = sch_copy_loop_name(b->arena, w, 1);
    }
    sch_template_micro(b, &l, &m);
}

bool sch_can_vectorize_reduction(const SchedState *st, const SStage *s)
{
    return st->target == TARGET_CPU && s->is_reduce && !st->g->strict_fp;
}

bool sch_vectorizes_reduction(const SchedState *st, const SStage *s)
{
    return s->nrvars > 0 && s->tensor->dtype == DT_F32 &&
           sch_extent_hint(st, s->rvars[s->nrvars - 1]) >= lanes_of(s->tensor->dtype) &&
           sch_can_vectorize_reduction(st, s);
}

/* Is E a select, or a load of T (T NULL: a select)?  For te_expr_any. */
static bool select_or_load(const Expr *e, const void *t)
{
    return t ? e->kind == EX_LOAD && e->tensor == t : e->kind == EX_OP && e->op == OP_SELECT;
}

static bool expr_has(const Expr *e, const Tensor *t)
{
    return te_expr_any(e, select_or_load, t);
}

/* For te_expr_any: a load of L->t whose index uses L->v. */
typedef struct LoadAlong {
    const Tensor *t;
    const IterVar *v;
} LoadAlong;

static bool load_along(const Expr *e, const void *ctx)
{
    const LoadAlong *l = ctx;
    if (e->kind != EX_LOAD || e->tensor != l->t)
        return false;
    for (int i = 0; i < e->nargs; i++)
        if (sch_uses_var(e->args[i], l->v))
            return true;
    return false;
}

/* A stage whose value selects (a padded image: zero outside the picture)
 * and that a reduction reads, or whose value divides an index (im2col's
 * columns) and that a reduction reads along its innermost axis, is
 * computed once, not inlined (lang/pass_fuse.c's rules): inlined, its
 * select and bounds checks, or its divisions, would run in the
 * reduction's innermost loop, once per multiply-add, and keep that loop
 * from vectorizing.  So is one that selects and that a stage with more
 * elements reads (te_fuse_keeps_select: im2col's columns of a padding,
 * which would run its bounds checks once per window position, as
 * conditional loads). */
static bool selects_for_reduction(const SchedState *st, const SStage *s)
{
    bool selects = expr_has(s->value, NULL);
    bool divides = te_expr_any(s->value, te_is_index_division, NULL);
    if (st->target != TARGET_CPU || (!selects && !divides))
        return false; /* (cuda kernels keep their inlining) */
    for (int i = 0; i < st->stages.len; i++) {
        const SStage *r = st->stages.items[i];
        if (selects && !r->inlined && expr_has(r->value, s->tensor) &&
            te_fuse_keeps_select(s->tensor, r->tensor))
            return true; /* im2col's columns of a padding */
        if (!r->is_reduce)
            continue;
        if (selects && expr_has(r->value, s->tensor))
            return true;
        LoadAlong l = { s->tensor, r->nsvars ? r->svars[r->nsvars - 1] : NULL };
        if (divides && l.v && te_expr_any(r->value, load_along, &l))
            return true;
    }
    return false;
}

/* For te_expr_any, CTX an Unflatten (written through: te_expr_any passes
 * it as const): records a division or remainder of the loop V by a
 * constant C > 1 in FACTOR, C, or -1 once a second C is seen; never
 * stops the walk. */
typedef struct Unflatten {
    const IterVar *v;
    int64_t factor;
} Unflatten;

static bool divides_loop(const Expr *x, const void *ctx)
{
    Unflatten *u = (Unflatten *)ctx;
    if (!te_is_index_division(x, NULL) || x->args[0]->kind != EX_VAR || x->args[0]->var != u->v)
        return false;
    int64_t c = (int64_t)x->args[1]->value;
    u->factor = u->factor == 0 || u->factor == c ? c : -1;
    return false; /* (every one seen) */
}

/* The least row an unflattening split makes (unflatten_factor): a
 * narrower one (y[i] = x[i / 2]) would leave most of a vector's lanes
 * idle, and keeps its division. */
#define UNFLATTEN_MIN 4

/* The C of an index that unflattens S's loop V (an im2col's output
 * positions q / OW and q % OW), where every division of V in S's value
 * is by that one C, C is UNFLATTEN_MIN or more and divides V's extent
 * into two or more: splitting V by C makes them loops of their own.  0
 * when there is none. */
static int64_t unflatten_factor(const SStage *s, const IterVar *v)
{
    Unflatten u = { v, 0 };
    te_expr_any(s->value, divides_loop, &u);
    if (u.factor < UNFLATTEN_MIN || v->extent <= u.factor || v->extent % u.factor)
        return 0;
    /* the split's loops, V's name and "o" or "i", must be fresh */
    size_t n = strlen(v->name);
    for (int i = 0; i < s->nsvars + s->nrvars; i++) {
        const char *name = i < s->nsvars ? s->svars[i]->name : s->rvars[i - s->nsvars]->name;
        if (strncmp(name, v->name, n) == 0 && (name[n] == 'o' || name[n] == 'i') && !name[n + 1])
            return 0;
    }
    return u.factor;
}

/* Expression nodes in E once the stages INLINED (by Tensor.id) are
 * substituted into it, SIZE[id] being each one's own count; saturates
 * past the bound, which is all the caller asks about. */
static int64_t inlined_size(const Expr *e, const bool *inlined, const int64_t *size, int ntensors)
{
    int64_t n = 1;
    if (e->kind == EX_LOAD && e->tensor->id < ntensors && inlined[e->tensor->id])
        n = size[e->tensor->id];
    for (int i = 0; i < e->nargs && n <= TE_MAX_KERNEL_NODES; i++)
        n += inlined_size(e->args[i], inlined, size, ntensors);
    return n;
}

/* Is S's value small enough to copy into its readers?  Stages come in
 * dependency order, so the ones S reads are decided already. */
static bool small_enough(const SchedState *st, const SStage *s, bool *inlined, int64_t *size)
{
    int n = st->g->ntensors, id = s->tensor->id;
    if (id >= n || st->g->tensors[id] != s->tensor)
        return true; /* not one of the graph's own stages */
    size[id] = inlined_size(s->value, inlined, size, n);
    inlined[id] = size[id] <= TE_MAX_KERNEL_NODES;
    return inlined[id];
}

/* Would S's readers, inlining it, recompute it (COST operations an
 * element) more often than pays (pass_fuse.c's cost model)?  Each reader
 * computes each element once, or once per point of the axes its
 * reduction's indices leave out (te_fuse_reuse): softmax's exponentials,
 * read by the sum and by the division, are computed once and stored, a
 * layer norm read by a matmul too.  The CPU's default only: cuda kernels
 * keep their inlining. */
static bool recomputed_by_reader(const SchedState *st, const SStage *s, double cost)
{
    if (st->target != TARGET_CPU || cost == 0)
        return false;
    double times = 0;
    for (int i = 0; i < st->stages.len; i++) {
        const SStage *r = st->stages.items[i];
        const IterVar *axis;
        if (r == s)
            continue;
        if (expr_has(r->value, s->tensor))
            times += r->is_reduce ? te_fuse_reuse(r->value, true, s->tensor, r->svars,
                                                  r->tensor->shape, r->nsvars, &axis)
                                  : 1;
        if (r->epilogue && expr_has(r->epilogue, s->tensor))
            times += 1;
    }
    return !te_fuse_recompute_pays(times, cost);
}

/* ------------------------------------------------------------------ */
/* Rows in one pass.                                                   */

/* E with the stages INL marks (by place in st->stages; AT: a stage's
 * place) substituted. */
static Expr *expand_inlined(const SchedState *st, Expr *e, const bool *inl, const PtrMap *at)
{
    Expr **args = NULL;
    for (int i = 0; i < e->nargs; i++) {
        Expr *x = expand_inlined(st, e->args[i], inl, at);
        if (x != e->args[i] && !args) {
            args = arena_alloc(st->arena, sizeof *args * (size_t)e->nargs);
            memcpy(args, e->args, sizeof *args * (size_t)e->nargs);
        }
        if (args)
            args[i] = x;
    }
    Expr *const *a = args ? args : e->args;
    if (e->kind == EX_LOAD) {
        SStage *p = sch_stage_of(st, e->tensor);
        int k = p ? map_get(at, p) : -1;
        if (k >= 0 && inl[k])
            return expand_inlined(st, sch_subst(st->arena, p->value, (Subst){ p->svars, a, p->nsvars }),
                                  inl, at);
    }
    return args ? te_rebuild(st->arena, e, args) : e;
}

/* How E loads T: 0 not at all, 1 always with ROW (a loop variable) as
 * its first index, -1 some other way. */
static int loads_row(const Expr *e, const Tensor *t, const IterVar *row)
{
    int how = 0;
    if (e->kind == EX_LOAD && e->tensor == t)
        how = e->nargs > 0 && e->args[0]->kind == EX_VAR && e->args[0]->var == row ? 1 : -1;
    for (int i = 0; i < e->nargs && how >= 0; i++) {
        int h = loads_row(e->args[i], t, row);
        how = h < 0 ? -1 : how | h;
    }
    return how;
}

/* The most bytes of a stage's row computed at its reader's row loop: the
 * row stays in L1 (48 KiB on these machines) beside its input's.  A row
 * of a run-time extent counts at its range's maximum. */
#define ROW_BYTES (16 << 10)

/* Row operations in one pass (softmax, layer norm, RMS norm): a stage R
 * read only with its first index at its readers' first loop (a row's
 * maximum, sum, mean, variance, exponentials) is computed at that loop of
 * the stage C that ends the row, once a row, into a buffer of the row's
 * size, instead of in a pass of its own over all rows.  Every reader of R
 * must be C or computed at C's row too (lowering requires it: R is
 * computed before them in the same iteration); R is computed at C when C
 * reads it, else at the row loop of its one reader.  AT[i] is the stage
 * index stage i is computed at, -1 if none.  Stages come in dependency
 * order, so readers are decided before what they read. */
static void plan_rows(const SchedState *st, const Schedule *written, const bool *inl,
                      const bool *kept, int *at)
{
    int n = st->stages.len;
    bool any = false; /* (most programs have no row: nothing to expand) */
    for (int i = 0; i < n; i++) {
        SStage *r = st->stages.items[i];
        at[i] = -1;
        any = any || (!inl[i] && r->nsvars > 0 && (r->is_reduce || (kept[i] && r->nsvars >= 2)));
    }
    if (!any)
        return;
    Expr **value = arena_alloc(st->arena, sizeof *value * (size_t)(n + 1));
    int *root = arena_alloc(st->arena, sizeof *root * (size_t)(n + 1)); /* C of a member */
    PtrMap place = {0};
    for (int i = 0; i < n; i++)
        map_put(st->arena, &place, st->stages.items[i], i);
    for (int i = 0; i < n; i++) {
        SStage *s = st->stages.items[i];
        root[i] = -1;
        if (!inl[i]) {
            value[i] = expand_inlined(st, s->value, inl, &place);
            if (s->epilogue)
                value[i] = ex_op(st->arena, s->value->span, OP_ADD, s->tensor->dtype,
                                 (Expr *[]){ value[i], expand_inlined(st, s->epilogue, inl, &place) }, 2);
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        SStage *r = st->stages.items[i];
        /* (a row of one element, kept elementwise, gains nothing) */
        if (inl[i] || r->nsvars == 0 || r->tensor->is_output || r->tensor->packs ||
            (!r->is_reduce && (!kept[i] || r->nsvars < 2)) || sch_mentioned(written, r) ||
            sch_form_of(st, r, lanes_of(r->tensor->dtype)) == SCH_FORM_MATMUL)
            continue;
        int64_t bytes = dtype_bytes(r->tensor->dtype);
        for (int d = 1; d < r->tensor->rank; d++)
            bytes = bytes > ROW_BYTES ? ROW_BYTES + 1 : bytes * r->tensor->shape[d];
        if (bytes > ROW_BYTES)
            continue;
        /* its readers: one C and members of C's row */
        int c = -1, only = -1, readers = 0;
        bool ok = true;
        for (int k = i + 1; k < n && ok; k++) {
            SStage *o = st->stages.items[k];
            if (inl[k])
                continue;
            int how = loads_row(value[k], r->tensor, o->nsvars ? o->svars[0] : NULL);
            if (how == 0)
                continue;
            int end = root[k] >= 0 ? root[k] : k;
            ok = how > 0 && (c < 0 || c == end) && !sch_mentioned(written, o) &&
                 (root[k] >= 0 || sch_form_of(st, o, lanes_of(o->tensor->dtype)) != SCH_FORM_MATMUL);
            c = end;
            only = k;
            readers++;
        }
        if (!ok || c < 0)
            continue;
        /* at a row loop that is not the vectorized innermost one */
        SStage *cs = st->stages.items[c], *os = st->stages.items[only];
        if (cs->nsvars >= 2 && loads_row(value[c], r->tensor, cs->svars[0]) > 0)
            at[i] = c;
        else if (readers == 1 && os->nsvars >= 2)
            at[i] = only;
        else
            continue;
        root[i] = c;
    }
}

/* Attention chains whose scores outgrow the caches (sch_flash_pays),
 * none of their stages named by WRITTEN: flash, 64 keys a tile, a batch
 * loop in parallel (sch_flash_parallel_loop).  Also a stage that WRITTEN's flash
 * put in a kernel.  The stages the kernels compute, by place in
 * st->stages: the default leaves them alone. */
static bool *default_flash(SchedState *st, SchEmit *b, const Schedule *written)
{
    int n = st->stages.len;
    bool *flashed = arena_alloc(st->arena, sizeof *flashed * (size_t)(n + 1));
    PtrMap place = { 0 };
    for (int i = 0; i < n; i++) {
        SStage *s = st->stages.items[i];
        map_put(st->arena, &place, s, i);
        flashed[i] = s->flash || s->flashed;
    }
    for (int i = 0; i < n && st->target == TARGET_CPU && !st->g->no_flash; i++) {
        SStage *s = st->stages.items[i];
        SchFlash f = { .bk = 64 };
        const char *why;
        if (!s->is_reduce || !sch_flash_match(st, s, &f, &why) || !sch_flash_pays(&f) ||
            !sch_flash_untouched(written, s, &f))
            continue;
        bool taken = false; /* by a flash the file wrote */
        for (int k = 0; k < 4; k++)
            taken = taken || flashed[map_get(&place, f.stages[k])];
        if (taken)
            continue;
        b->span = s->tensor->span;
        SchedStmt *fl = emit(b, s->name, "flash", 2);
        fl->args[0] = sch_name_arg(s->rvars[0]->name);
        fl->args[1] = (SchedArg){ .kind = SA_INT, .span = b->span, .ival = f.bk };
        if (f.nbatch > 0)
            annotate(b, s->name, "parallel", sch_flash_parallel_loop(s, &f));
        flashed[i] = true;
        for (int k = 0; k < 4; k++)
            flashed[map_get(&place, f.stages[k])] = true;
    }
    return flashed;
}

/* The loop a stage's threads share: the outermost of more than one
 * iteration (an image's channels, not its batch of one), the innermost
 * (vectorized) last; else the outermost. */
static IterVar *parallel_loop(const SStage *s)
{
    for (int d = 0; d + 1 < s->nsvars; d++)
        if (s->svars[d]->extent > 1)
            return s->svars[d];
    return s->svars[0];
}

Schedule *sch_default(SchedState *st, const Schedule *written)
{
    Schedule *sched = arena_alloc(st->arena, sizeof *sched);
    sched->target = st->target;
    SchEmit b = { st->arena, sched, NULL, { 0, 0 } };
    bool *inlined = arena_alloc(st->arena, sizeof *inlined * (size_t)(st->g->ntensors + 1));
    int64_t *size = arena_alloc(st->arena, sizeof *size * (size_t)(st->g->ntensors + 1));
    /* by Tensor.id: an inlined stage's operations an element, the stages
     * inlined into it included */
    double *cost = arena_alloc(st->arena, sizeof *cost * (size_t)(st->g->ntensors + 1));
    bool *kept = arena_alloc(st->arena, sizeof *kept * (size_t)(st->stages.len + 1));
    bool *inl = arena_alloc(st->arena, sizeof *inl * (size_t)(st->stages.len + 1));
    bool *flashed = default_flash(st, &b, written);
    for (int i = 0; i < st->stages.len; i++) {
        SStage *s = st->stages.items[i];
        b.span = s->tensor->span;
        inl[i] = s->inlined;
        if (flashed[i])
            continue;
        if (!s->tensor->is_output && !s->is_reduce && !s->tensor->packs &&
            !sch_mentioned(written, s) && !selects_for_reduction(st, s)) {
            int id = s->tensor->id, n = st->g->ntensors;
            double c = te_fuse_op_cost(s->value, cost, n);
            if (small_enough(st, s, inlined, size) && !recomputed_by_reader(st, s, c)) {
                emit(&b, s->name, "compute_inline", 0);
                inl[i] = true;
                if (id < n && st->g->tensors[id] == s->tensor)
                    cost[id] = c;
            } else {
                if (id < n && st->g->tensors[id] == s->tensor)
                    inlined[id] = false;
                kept[i] = true;
            }
        }
    }
    if (st->target != TARGET_CPU) {
        sch_default_cuda(st, sched, written);
        return sched;
    }
    int *at = arena_alloc(st->arena, sizeof *at * (size_t)(st->stages.len + 1));
    plan_rows(st, written, inl, kept, at);
    for (int i = 0; i < st->stages.len; i++)
        if (flashed[i] || (at[i] >= 0 && flashed[at[i]]))
            at[i] = -1;
    for (int i = 0; i < st->stages.len; i++) {
        SStage *s = st->stages.items[i];
        b.span = s->tensor->span;
        if (flashed[i])
            continue;
        if ((!s->tensor->is_output && !s->is_reduce && !s->tensor->packs &&
             !selects_for_reduction(st, s) && !kept[i]) ||
            s->nsvars == 0 || sch_mentioned(written, s) || s->attach)
            continue;
        int lanes = lanes_of(s->tensor->dtype);
        IterVar *inner = s->svars[s->nsvars - 1];
        if (sch_form_of(st, s, lanes) == SCH_FORM_MATMUL) {
            schedule_matmul_like(st, &b, s, lanes);
            continue;
        }
        if (s->tensor->packs && s->nsvars >= 3) {
            /* W_packed[p, a.., l] = W[a.., p*P + l]: W's rows in order */
            SchedStmt *r = emit(&b, s->name, "reorder", 2);
            r->args[0] = sch_name_arg(s->svars[1]->name);
            r->args[1] = sch_name_arg(s->svars[0]->name);
            annotate(&b, s->name, "vectorize", inner->name);
            annotate(&b, s->name, "parallel", s->svars[1]->name);
            continue;
        }
        int64_t unflat = s->is_reduce ? 0 : unflatten_factor(s, inner);
        if (unflat) {
            /* q / OW and q % OW over q = qo*OW + qi: qo and qi (lower.c's
               simplify_divisions), and the vector runs along a row */
            SchedStmt *sp = emit(&b, s->name, "split", 2);
            sp->args[0] = sch_name_arg(inner->name);
            sp->args[1] = (SchedArg){ .kind = SA_INT, .ival = unflat };
            sp->outs[0] = suffixed(&b, inner->name, "o");
            sp->outs[1] = suffixed(&b, inner->name, "i");
            sp->nouts = 2;
            annotate(&b, s->name, "vectorize", sp->outs[1]);
        } else if (!s->is_reduce)
            annotate(&b, s->name, "vectorize", inner->name);
        else if (sch_vectorizes_reduction(st, s))
            annotate(&b, s->name, "vectorize", s->rvars[s->nrvars - 1]->name);
        if ((s->nsvars >= 2 || s->is_reduce) && at[i] < 0) {
            /* a row's reader keeps its first loop, the one its row
               statistics are computed at (below) */
            bool row_reader = false;
            for (int j = 0; j < st->stages.len && !row_reader; j++)
                row_reader = at[j] == i;
            annotate(&b, s->name, "parallel", (row_reader ? s->svars[0] : parallel_loop(s))->name);
        }
    }
    /* the rows last: each at a loop its reader's annotations keep */
    for (int i = 0; i < st->stages.len; i++) {
        if (at[i] < 0)
            continue;
        SStage *s = st->stages.items[i], *c = st->stages.items[at[i]];
        b.span = s->tensor->span;
        SchedStmt *ca = emit(&b, s->name, "compute_at", 2);
        ca->args[0] = sch_name_arg(c->name);
        ca->args[1] = sch_name_arg(c->svars[0]->name);
    }
    return sched;
}

Schedule *sch_naive(SchedState *st)
{
    Schedule *sched = arena_alloc(st->arena, sizeof *sched);
    sched->target = st->target;
    SchEmit b = { st->arena, sched, NULL, { 0, 0 } };
    for (int i = 0; i < st->stages.len; i++) {
        SStage *s = st->stages.items[i];
        b.span = s->tensor->span;
        if (s->nsvars == 0 || s->attach)
            continue;
        /* a reduction's axes go outside its innermost spatial loop, which
           then reads and writes rows in order (the compiler vectorizes
           it): each element still starts from the identity and combines
           its terms in the same order */
        if (s->is_reduce && s->nsvars >= 2) {
            SchedStmt *r = emit(&b, s->name, "reorder", s->nsvars + s->nrvars);
            int n = 0;
            for (int k = 0; k < s->nsvars - 1; k++)
                r->args[n++] = sch_name_arg(s->svars[k]->name);
            for (int k = 0; k < s->nrvars; k++)
                r->args[n++] = sch_name_arg(s->rvars[k]->name);
            r->args[n++] = sch_name_arg(s->svars[s->nsvars - 1]->name);
        }
        annotate(&b, s->name, "parallel", s->svars[0]->name);
    }
    return sched;
}

static bool is_reduce_expr(const Expr *e, const void *ctx)
{
    (void)ctx;
    return e->kind == EX_REDUCE;
}

int64_t sch_default_panel_width(const Tensor *stage, int dim)
{
    /* the default schedule's micro-kernel tiles the innermost axis (of a
     * reduction, or of a stage whose epilogue applies to one: a scaled
     * product, q k^T / sqrt(d)) */
    bool reduces = te_expr_any(stage->body, is_reduce_expr, NULL) || stage->anchor;
    int lanes = lanes_of(stage->dtype);
    if (!reduces || stage->rank < 2 || dim != stage->rank - 1 || stage->shape[dim] < lanes)
        return 0;
    int64_t ti, tj;
    default_tile(stage->shape[dim - 1], stage->shape[dim], lanes, &ti, &tj);
    return tj;
}

/* layout.c — layout assignment and weight prepacking, for the schedule a
 * build uses.
 *
 * Which panels a weight wants depends on the tiles of the schedule that
 * reads it, so this is the scheduler's business and runs once per build:
 * sch_build's first step (build.c, calling sch_relayout) assigns the
 * layouts for the schedule being built (the file's, the tuning log's
 * winner, a tuner candidate), after the graph optimizer (lang/) and
 * before the SchedState is made.  -fno-layout (g->layouts false) turns
 * it off; --dump=after-layout shows the graph after it.
 *
 * requires: a fused Graph (lang/pass_fuse.c ran); the schedule to be
 * built, whose tiles (panel_width below, or the default's:
 * sch_default_panel_width) say which panels a kernel wants.
 * guarantees: the same values at every output, exactly (a layout moves
 * data, it computes nothing).  A `const` input W that one kernel reads
 * as the B operand of a matmul — its last index a spatial variable j of
 * the kernel, tiled by P, and some other index a reduction variable —
 * is read in panels instead:
 *
 *     W_packed[p, k, l] = W[k, p*P + l]       (zero past the last column)
 *     ... W[k, j] ...   becomes   ... W_packed[j / P, k, j % P] ...
 *
 * so that the P columns a tile of the kernel needs lie contiguous for
 * every k.  Row-major W puts them N floats apart: a power-of-two multiple
 * N (3072 floats = 12 KiB) maps every row of a tile to the same few cache
 * sets, and the panel falls out of L1 and L2 however small it is; packed,
 * the panel streams.  With j = jo*P + ji the scheduler's index
 * simplification turns j / P into jo and j % P into ji, so the kernel
 * reads W_packed[jo, k, ji] with unit stride.  W_packed is a stage with
 * `packs` set: it depends on a const input only, so the generated code
 * computes it in NAME_prepack, once, and the kernel takes it as a
 * parameter (codegen/c.c).
 *
 * W may also hold j at another index, W[j, k] (PyTorch's Linear layout:
 * j's elements K apart, so a vector of them is a gather) when j is the
 * kernel's innermost axis and W's last index a reduction's: the panels
 * are then W_packed[p, k, l] = W[p*P + l, k], the other indices in their
 * order (pack_dim says which index was j).  And an intermediate read that
 * way (the keys of attention, kh[h, t, d] in score[h, i, t] = sum(d)
 * q[h, i, d] * kh[h, t, d]) is packed too, at every call: a stage like
 * any other, after its producer (the generated code's main function, not
 * NAME_prepack: te_prepacked tells them apart), when its reader reads each
 * element more than once (te_fuse_reuse), so that the copy pays.
 *
 * A non-const input read that way (keys given as an input) is packed at
 * every call too.  Where j's extent is a run-time size, in one panel as
 * wide as it (assign says why).
 *
 * Pairs of k for vdpbf16ps.  A const bf16 W[k, j] whose reader sums
 * f32(X[.., k]) * f32(W[k, j]) over k alone, X bf16 with k its last index
 * (a bf16 matmul), has its panels' rows hold two k each, interleaved:
 *
 *     W_packed[p, k2, 2*l + e] = W[2*k2 + e, p*P + l]   (zero past K)
 *     ... W[k, j] ...   becomes   ... W_packed[j / P, k / 2, 2*(j % P) + k % 2] ...
 *
 * so that a 32-bit lane holds the pair (W[2*k2, j], W[2*k2 + 1, j]) that
 * AVX512_BF16's vdpbf16ps multiplies with a broadcast pair of X along k
 * (codegen/c.c's te_vdot_bf16; its portable form does the same
 * arithmetic).  An odd K's last pair is (W[K-1, j], 0).  Any other loop
 * nest reads the same layout with a stride of 2 along j.
 *
 * Quads of k for vpdpbusd, the same way: a const i8 W[k, j] whose reader
 * sums i32(X[.., k]) * i32(W[k, j]), X u8, has four k in each 32-bit lane,
 * W_packed[p, k4, 4*l + e] = W[4*k4 + e, p*P + l], zero past K, which
 * AVX512_VNNI's vpdpbusd multiplies with a broadcast quad of X and adds
 * to sixteen i32 sums (te_vdot_u8i8).
 *
 * Not packed: a const input whose shape is a run-time size (NAME_prepack
 * runs once, for every size), non-const inputs read along their rows (they change every
 * call: packing them is a copy per call), tensors read by several kernels
 * or at different points (one layout could not serve them all), an axis
 * the schedule does not tile, a panel as wide as a weight whose j is last
 * already, and intermediates whose j is last (their producer writes them
 * in the consumer's kernel, fused, or the consumer's tile loops read them
 * with unit stride already), and the keys of scores that a flash kernel
 * computes (sched/flash.c: it copies each key tile transposed itself).  The CUDA target stages W through shared
 * memory instead and asks for no panels.
 */
#include <string.h>

#include "sched/sched.h"

static const Span no_span = { 0, 0 };

static Expr *int_const(Arena *a, int64_t v)
{
    return ex_const(a, no_span, DT_I32, (double)v);
}

static Expr *op2(Arena *a, Op op, DType t, Expr *x, Expr *y)
{
    Expr *args[2] = { x, y };
    return ex_op(a, no_span, op, t, args, 2);
}

static bool mentions_reduce_var(const Expr *e)
{
    if (e->kind == EX_VAR)
        return e->var->reduce;
    for (int i = 0; i < e->nargs; i++)
        if (mentions_reduce_var(e->args[i]))
            return true;
    return false;
}

/* X, W's last index, as J + (other terms), J the stage's innermost
 * variable STAGE_J with coefficient 1 and the other terms spatial
 * variables times constants and constants (a head-split projection's
 * w[c, h * DH + d]): *J set, and *STEP the gcd of the other terms'
 * coefficients and constants (panels of P map such an index to one panel
 * per value of them when P divides it).  False for any other form. */
static bool affine_column(const Expr *x, int64_t coef, const IterVar *stage_j, IterVar **j,
                          int64_t *step)
{
    int64_t c;
    switch (x->kind) {
    case EX_VAR:
        if (x->var == stage_j && coef == 1 && !*j) {
            *j = x->var;
            return true;
        }
        if (x->var->reduce || x->var == stage_j)
            return false;
        c = coef < 0 ? -coef : coef;
        break;
    case EX_CONST:
        if (x->dtype != DT_I32)
            return false;
        c = (int64_t)x->value * coef;
        c = c < 0 ? -c : c;
        break;
    case EX_OP:
        if (x->op == OP_ADD && x->nargs == 2)
            return affine_column(x->args[0], coef, stage_j, j, step) &&
                   affine_column(x->args[1], coef, stage_j, j, step);
        for (int i = 0; x->op == OP_MUL && x->nargs == 2 && i < 2; i++)
            if (x->args[i]->kind == EX_CONST && x->args[i]->dtype == DT_I32)
                return affine_column(x->args[1 - i], coef * (int64_t)x->args[i]->value, stage_j,
                                     j, step);
        return false;
    default:
        return false;
    }
    while (c) { /* *step = gcd(*step, c) */
        int64_t r = *step % c;
        *step = c;
        c = r;
    }
    return true;
}

/* Checks every load of W in E for panels along one index: that index is
 * the variable *J, one of STAGE's spatial variables, at position *JD
 * (both set by the first load), and
 *   - *JD is W's last index, and some other index mentions a reduction
 *     variable (W[k, j]: j's columns lie N apart), or
 *   - *JD is another index, *J is STAGE's innermost variable (the one its
 *     micro-kernel vectorizes), and W's last index mentions a reduction
 *     variable (W[j, k]: j's elements lie K apart, a gather per vector).
 * Counts the loads in *N. */
static bool loads_fit(const Expr *e, const Tensor *w, const Tensor *stage, IterVar **j, int *jd,
                      int *n, int64_t *step)
{
    if (e->kind == EX_LOAD && e->tensor == w) {
        int last = w->rank - 1, at = -1;
        IterVar *column = NULL;
        for (int d = last; d >= 0 && at < 0; d--) {
            const Expr *x = e->args[d];
            int64_t g = *step;
            if (x->kind != EX_VAR && d == last && x->kind == EX_OP &&
                affine_column(x, 1, stage->vars[stage->rank - 1], &column, &g) && column &&
                (!*j || (column == *j && d == *jd))) {
                *step = g;
                at = d;
                break;
            }
            column = NULL;
            if (x->kind != EX_VAR || (*j && (x->var != *j || d != *jd)))
                continue;
            for (int v = 0; v < stage->rank; v++)
                if (stage->vars[v] == x->var && (d == last || v == stage->rank - 1))
                    at = d;
        }
        if (at < 0)
            return false;
        bool reduces = false;
        for (int d = 0; d < w->rank; d++)
            if (d != at && (at == last || d == last))
                reduces = reduces || mentions_reduce_var(e->args[d]);
        if (!reduces)
            return false;
        *j = column ? column : e->args[at]->var;
        *jd = at;
        (*n)++;
    }
    for (int i = 0; i < e->nargs; i++)
        if (!loads_fit(e->args[i], w, stage, j, jd, n, step))
            return false;
    return true;
}

static int loads_of(const Expr *e, const Tensor *t)
{
    int n = e->kind == EX_LOAD && e->tensor == t;
    for (int i = 0; i < e->nargs; i++)
        n += loads_of(e->args[i], t);
    return n;
}

/* E with every load of W turned into a load of WP (panels of P along
 * W's index JD; P 0: WP's one panel of run-time width). */
static Expr *pack_loads(Arena *a, Expr *e, Tensor *w, Tensor *wp, int64_t p, int jd)
{
    Expr *args[TE_MAX_RANK + 1];
    if (e->kind == EX_LOAD && e->tensor == w) {
        Expr *j = e->args[jd];
        args[0] = p ? op2(a, OP_DIV, DT_I32, j, int_const(a, p)) : int_const(a, 0);
        for (int d = 0, k = 1; d < w->rank; d++)
            if (d != jd)
                args[k++] = e->args[d];
        args[w->rank] = p ? op2(a, OP_MOD, DT_I32, j, int_const(a, p)) : j;
        int g = wp->pack_group;
        if (g) {
            /* W_packed[j / P, k / G, G*(j % P) + k % G] */
            Expr *k = e->args[wp->pack_kdim];
            args[1] = op2(a, OP_DIV, DT_I32, k, int_const(a, g));
            args[2] = op2(a, OP_ADD, DT_I32, op2(a, OP_MUL, DT_I32, int_const(a, g), args[2]),
                          op2(a, OP_MOD, DT_I32, k, int_const(a, g)));
        }
        return ex_load(a, e->span, wp, args, w->rank + 1);
    }
    if (e->nargs == 0)
        return e;
    Expr **sub = arena_alloc(a, sizeof *sub * (size_t)e->nargs);
    bool changed = false;
    for (int i = 0; i < e->nargs; i++) {
        sub[i] = pack_loads(a, e->args[i], w, wp, p, jd);
        changed = changed || sub[i] != e->args[i];
    }
    return changed ? te_rebuild(a, e, sub) : e;
}

/* E with every load of a packing stage turned back into a load of the
 * tensor it packs: W_packed[j / P, k, j % P] -> W[k, j]. */
static Expr *unpack_loads(Arena *a, Expr *e)
{
    if (e->kind == EX_LOAD && e->tensor->packs) {
        Expr *args[TE_MAX_RANK];
        te_unpacked_index(e, args);
        return ex_load(a, e->span, e->tensor->packs, args, e->tensor->rank - 1);
    }
    if (e->nargs == 0)
        return e;
    Expr **sub = arena_alloc(a, sizeof *sub * (size_t)e->nargs);
    bool changed = false;
    for (int i = 0; i < e->nargs; i++) {
        sub[i] = unpack_loads(a, e->args[i]);
        changed = changed || sub[i] != e->args[i];
    }
    return changed ? te_rebuild(a, e, sub) : e;
}

static bool name_used(const Graph *g, const char *name)
{
    for (int i = 0; i < g->ntensors; i++)
        if (strcmp(g->tensors[i]->name, name) == 0)
            return true;
    return false;
}

static IterVar *new_var(Arena *a, Graph *g, const char *name, int64_t extent,
                        const SizeExpr *extent_size)
{
    IterVar *v = arena_alloc(a, sizeof *v);
    v->name = name;
    v->extent = extent;
    v->extent_size = extent_size;
    v->id = g->nvars++;
    return v;
}

/* WP's rows interleaved in groups of G along its index KD (W's index
 * KD - 1, as KD > 0 here; W of rank 2, panels along its last index):
 *   WP[p, k2, G*l + e] = select(G*k2 + e < K, W[min(G*k2 + e, K-1), ..], 0)
 * with the column's select of packed_stage around the load as before. */
static void group_rows(Arena *a, Tensor *wp, int g, int kd)
{
    int64_t k = wp->shape[kd], p = wp->shape[2];
    IterVar *k2 = wp->vars[kd], *q = wp->vars[2];
    k2->extent = wp->shape[kd] = (k + g - 1) / g;
    q->extent = wp->shape[2] = g * p;
    Expr *e = op2(a, OP_MOD, DT_I32, ex_var(a, no_span, q), int_const(a, g));
    Expr *krow = op2(a, OP_ADD, DT_I32, op2(a, OP_MUL, DT_I32, ex_var(a, no_span, k2), int_const(a, g)), e);
    Expr *l = op2(a, OP_DIV, DT_I32, ex_var(a, no_span, q), int_const(a, g));
    Expr *krow_in = k % g == 0 ? krow : op2(a, OP_MIN, DT_I32, krow, int_const(a, k - 1));
    IterVar *vars[2] = { k2, q };
    Expr *vals[2] = { krow_in, l };
    /* the body packed_stage made over (k2, q) read as (k, l) */
    wp->body = te_subst_vars(a, wp->body, vars, vals, 2);
    if (k % g != 0) {
        Expr *args[3] = { op2(a, OP_LT, DT_BOOL, krow, int_const(a, k)), wp->body,
                          ex_const(a, no_span, wp->dtype, 0.0) };
        wp->body = ex_op(a, no_span, OP_SELECT, wp->dtype, args, 3);
    }
    wp->pack_group = g;
    wp->pack_kdim = kd - 1;
}

/* The packing stage of W in panels of P along its index JD (the last,
 * shown here):
 *   W_packed[p, a0, .., l] = select(p*P + l < N, W[a0, .., min(p*P + l, N-1)], 0)
 * (just W[a0, .., p*P + l] when P divides N); the other indices a.. keep
 * their order, and their run-time extents.  P 0: one panel as wide as
 * W's run-time extent N along JD, W_packed[0, a0, .., l] = W[a0, .., l]
 * for l < N (see assign). */
static Tensor *packed_stage(Arena *a, Graph *g, Tensor *w, int64_t p, int jd, int group, int kd)
{
    int r = w->rank;
    int64_t n = w->shape[jd];
    bool one = p == 0;
    if (one)
        p = n;
    Tensor *wp = arena_alloc(a, sizeof *wp);
    const char *name = arena_printf(a, "%s_packed", w->name);
    for (int k = 2; name_used(g, name); k++)
        name = arena_printf(a, "%s_packed%d", w->name, k);
    wp->name = name;
    wp->span = w->span;
    wp->kind = TK_STAGE;
    wp->dtype = w->dtype;
    wp->rank = r + 1;
    wp->shape[0] = (n + p - 1) / p;
    wp->vars = arena_alloc(a, sizeof *wp->vars * (size_t)(r + 1));
    wp->vars[0] = new_var(a, g, "p", wp->shape[0], NULL);
    for (int d = 0, k = 1; d < r; d++)
        if (d != jd) {
            wp->shape[k] = w->shape[d];
            wp->shape_size[k] = w->shape_size[d];
            wp->vars[k] = new_var(a, g, arena_printf(a, "a%d", k - 1), w->shape[d], w->shape_size[d]);
            k++;
        }
    wp->shape[r] = p;
    wp->shape_size[r] = one ? w->shape_size[jd] : NULL;
    wp->vars[r] = new_var(a, g, "l", p, wp->shape_size[r]);
    Expr *col = op2(a, OP_ADD, DT_I32,
                    op2(a, OP_MUL, DT_I32, ex_var(a, no_span, wp->vars[0]), int_const(a, p)),
                    ex_var(a, no_span, wp->vars[r]));
    Expr *idx[TE_MAX_RANK];
    bool divides = n % p == 0;
    for (int d = 0, k = 1; d < r; d++)
        idx[d] = d == jd ? (divides ? col : op2(a, OP_MIN, DT_I32, col, int_const(a, n - 1)))
                         : ex_var(a, no_span, wp->vars[k++]);
    wp->body = ex_load(a, no_span, w, idx, r);
    if (!divides) {
        Expr *args[3] = { op2(a, OP_LT, DT_BOOL, col, int_const(a, n)), wp->body,
                          ex_const(a, no_span, w->dtype, 0.0) };
        wp->body = ex_op(a, no_span, OP_SELECT, w->dtype, args, 3);
    }
    wp->packs = w;
    wp->pack_width = one ? 0 : p;
    wp->pack_dim = jd;
    if (group)
        group_rows(a, wp, group, kd);
    return wp;
}

/* Is X TO(L), L a load of a tensor of dtype FROM, L's index D (its last
 * if D < 0) the variable K? */
static bool widened(const Expr *x, DType to, DType from, int d, const IterVar *k)
{
    if (x->kind != EX_OP || x->op != OP_CAST || x->dtype != to)
        return false;
    const Expr *l = x->args[0];
    if (l->kind != EX_LOAD || l->tensor->dtype != from || l->nargs == 0)
        return false;
    const Expr *ix = l->args[d < 0 ? l->nargs - 1 : d];
    return ix->kind == EX_VAR && ix->var == k;
}

/* The k interleave of W's panels for a dot-product instruction (see the
 * top), if E holds W's one load in a dot product over k alone:
 *   2  sum(k) f32(X[.., k]) * f32(W[k, j]), X and W bf16 (vdpbf16ps);
 *   4  sum(k) i32(X[.., k]) * i32(W[k, j]), X u8 and W i8 (vpdpbusd);
 * either operand first, W of rank 2; else 0. */
static int dot_group(const Expr *e, const Tensor *w)
{
    if (e->kind == EX_REDUCE && e->reducer == RED_SUM && e->naxes == 1 &&
        e->args[0]->kind == EX_OP && e->args[0]->op == OP_MUL) {
        const Expr *m = e->args[0];
        const IterVar *k = e->axes[0];
        for (int s = 0; s < 2; s++) {
            const Expr *wl = m->args[s], *xl = m->args[1 - s];
            if (e->dtype == DT_F32 && widened(wl, DT_F32, DT_BF16, 0, k) && widened(xl, DT_F32, DT_BF16, -1, k) &&
                wl->args[0]->tensor == w && xl->args[0]->tensor != w)
                return 2;
            if (e->dtype == DT_I32 && widened(wl, DT_I32, DT_I8, 0, k) && widened(xl, DT_I32, DT_U8, -1, k) &&
                wl->args[0]->tensor == w)
                return 4;
        }
    }
    for (int i = 0; i < e->nargs; i++) {
        int g = dot_group(e->args[i], w);
        if (g)
            return g;
    }
    return 0;
}

static bool is_arg(const SchedStmt *s, int i, const char *name)
{
    return i < s->nargs && s->args[i].kind == SA_NAME && strcmp(s->args[i].name, name) == 0;
}


/* The tile size along STAGE's dimension DIM in the kernel SCHED (NULL:
 * the default schedule) gives it on TARGET: SCHED's tile or split of the
 * axis when it schedules STAGE, else the default's (its micro-kernel's
 * column tile).  0 when the axis is not tiled, the kernel stages its
 * reads with cache_read, or TARGET is not cpu. */
static int64_t panel_width(Target target, const Schedule *sched, const Tensor *stage, int dim)
{
    if (target != TARGET_CPU)
        return 0; /* CUDA kernels stage their operands in shared memory */
    const char *axis = stage->vars[dim]->name;
    bool mentioned = false;
    int64_t width = 0;
    for (int i = 0; sched && i < sched->nstmts; i++) {
        const SchedStmt *s = sched->stmts[i];
        if (strcmp(s->prim, "cache_read") == 0 && is_arg(s, 1, stage->name))
            return 0; /* staged reads keep the layout the copy has */
        if (!sch_tensor_named(stage, s->stage))
            continue;
        mentioned = true;
        if (width)
            continue;
        if (strcmp(s->prim, "tile") == 0 && s->nargs == 4 && is_arg(s, 1, axis))
            width = sch_arg_int(&s->args[3]);
        else if (strcmp(s->prim, "split") == 0 && s->nargs == 2 && is_arg(s, 0, axis))
            width = sch_arg_int(&s->args[1]);
    }
    return mentioned ? width : sch_default_panel_width(stage, dim);
}


/* Packs W for its one reader, if the reader's kernel wants panels: a
 * const input ahead of time (a prepack stage); any other tensor that the
 * reader's micro-kernel would gather from (W[j, k], j vectorized) at
 * every call, if the reader reads each element more than once.  Returns
 * the note for -v, or NULL. */
static const char *assign(Arena *a, Graph *g, Tensor *w, Target target, const Schedule *sched)
{
    bool ahead = w->kind == TK_INPUT && w->is_const;
    if (w->kind == TK_STAGE && (w->is_output || w->packs))
        return NULL;
    if (w->rank < 2)
        return NULL;
    /* a shape known only at run time: NAME_prepack runs once, for every
     * size, so a weight's panels would be laid out for one of them */
    bool runtime = false;
    for (int d = 0; d < w->rank; d++)
        runtime = runtime || w->shape_size[d];
    if (runtime && ahead)
        return NULL;
    Tensor *reader = NULL;
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (t->kind != TK_STAGE || loads_of(t->body, w) == 0)
            continue;
        if (reader)
            return NULL; /* read by two kernels */
        reader = t;
    }
    IterVar *j = NULL;
    int n = 0, jd = 0;
    int64_t step = 0;
    if (!reader || !loads_fit(reader->body, w, reader, &j, &jd, &n, &step) || n == 0)
        return NULL;
    bool last = jd == w->rank - 1;
    const IterVar *axis;
    if (!ahead && (last || te_fuse_reuse(reader->body, false, w, reader->vars, reader->shape,
                                         reader->rank, &axis) < 2))
        return NULL; /* a copy at every call only where it saves gathers */
    if (!ahead && sch_flash_scores(g, target, sched, reader))
        return NULL; /* the flash kernel copies its key tiles itself */
    int dim = 0;
    while (reader->vars[dim] != j)
        dim++;
    int64_t p = panel_width(target, sched, reader, dim);
    if (!last && p > w->shape[jd])
        p = w->shape[jd]; /* one panel: a transposed copy */
    /* bf16 pairs of k (see the top): W[k, j], k its first index; then
     * even one panel as wide as W is a layout of its own */
    int group = ahead && w->rank == 2 && last && n == 1 ? dot_group(reader->body, w) : 0;
    if (p < 2 || (last && p >= w->shape[jd] && !group) || step % p != 0)
        return NULL; /* (a tile that does not divide the column index's
                        other terms would read two panels) */
    if (w->shape_size[jd])
        /* j's extent N known at run time (the keys kh[h, t, d] of
         * attention, t < S; here W is no weight and j not its last
         * index, both refused above otherwise): ceil(N / P) panels would
         * need N in the packing stage's guard, p*P + l < N, and a graph
         * expression holds no run-time size; one panel as wide as N, a
         * transposed copy W_packed[0, a.., j] (P 0), needs none, and puts
         * j's elements next to each other as panels do (a tile's rows lie
         * N elements apart instead of P) */
        p = 0;
    Tensor *wp = packed_stage(a, g, w, p, jd, group, 1);
    reader->body = pack_loads(a, reader->body, w, wp, p, jd);
    if (ahead)
        return arena_printf(a, "%s prepacked in panels of %lld%s for %s (%s)", w->name, (long long)p,
                            group == 2 ? ", pairs of k interleaved" : group == 4 ? ", quads of k interleaved" : "",
                            reader->name, wp->name);
    return arena_printf(a, "%s packed in %s along %s for %s at every call (%s)", w->name,
                        p ? arena_printf(a, "panels of %lld", (long long)p) : "one panel of run-time width",
                        j->name, reader->name, wp->name);
}

void sch_relayout(Arena *a, Graph *g, Target target, const Schedule *sched, PtrVec *notes)
{
    if (!g->layouts)
        return;
    if (notes)
        notes->len = 0;
    /* undo an earlier assignment: each build assigns for its own schedule */
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (t->kind == TK_STAGE && !t->packs)
            t->body = unpack_loads(a, t->body);
    }
    te_graph_compact(a, g);
    /* the inputs, then the intermediates (g->tensors grows only when
     * compacted, below) */
    PtrVec cands = {0};
    for (int i = 0; i < g->ninputs; i++)
        vec_push(a, &cands, g->inputs[i]);
    for (int i = 0; i < g->ntensors; i++)
        if (g->tensors[i]->kind == TK_STAGE)
            vec_push(a, &cands, g->tensors[i]);
    bool changed = false;
    for (int i = 0; i < cands.len; i++) {
        const char *note = assign(a, g, cands.items[i], target, sched);
        if (note && notes)
            vec_push(a, notes, (void *)note);
        changed = changed || note;
    }
    if (changed)
        te_graph_compact(a, g);
}

bool sch_prepack_named(const Graph *g, const char *name)
{
    for (int i = 0; i < g->ntensors; i++)
        if (strcmp(g->tensors[i]->name, name) == 0)
            return g->tensors[i]->packs != NULL;
    /* packed_stage's names: W_packed, else W_packed2, W_packed3, ... */
    for (int i = 0; i < g->ninputs; i++) {
        const Tensor *w = g->inputs[i];
        size_t n = strlen(w->name);
        if (!w->is_const || strncmp(name, w->name, n) != 0 || strncmp(name + n, "_packed", 7) != 0)
            continue;
        const char *k = name + n + 7;
        if (!*k)
            return true;
        /* a number packed_stage counts to: 2 or more, no leading zero */
        const char *d = k;
        while (*d >= '0' && *d <= '9')
            d++;
        if (!*d && d > k && *k != '0' && (d - k > 1 || *k >= '2'))
            return true;
    }
    return false;
}

int sch_packed_group(const Expr *e)
{
    if (e->kind == EX_LOAD && e->tensor->pack_group)
        return e->tensor->pack_group;
    for (int i = 0; i < e->nargs; i++) {
        int g = sch_packed_group(e->args[i]);
        if (g)
            return g;
    }
    return 0;
}

int sch_dot_group(const Graph *g, const Tensor *stage)
{
    if (stage->kind != TK_STAGE)
        return 0;
    int group = sch_packed_group(stage->body);
    for (int i = 0; i < g->ninputs && !group; i++) {
        const Tensor *w = g->inputs[i];
        if (w->is_const && w->rank == 2 && loads_of(stage->body, w) == 1)
            group = dot_group(stage->body, w);
    }
    return group;
}

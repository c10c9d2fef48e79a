/* lower.c — from scheduled stages to one loop nest per root stage.
 *
 * requires: a SchedState whose schedule was applied.
 * guarantees: a Stmt tree that computes every output exactly as the
 * reference evaluator does (up to floating-point reassociation where a
 * schedule reorders a reduction), touching no element outside any tensor:
 *   - inlined stages are substituted into their readers;
 *   - a reduction is an init nest and an update nest; the init sits just
 *     outside the first reduction loop and repeats the spatial loops that
 *     the schedule placed inside it;
 *   - a stage computed at a loop of another (compute_at, cache_read ... at)
 *     is computed at the top of that loop's body for exactly the region the
 *     iterations inside the loop read (bounds inference by interval
 *     arithmetic on the index expressions; where that fails, the whole
 *     tensor), into a buffer of the region's size when that size is a
 *     constant and the stage is no output;
 *   - guards from splits that do not divide their extent either shorten
 *     the innermost loop they involve or become an if around the body.
 *   - a shared stage is always a buffer of its region's size (the backend
 *     checks it against the block's shared memory), never a whole tensor.
 * Errors: a vectorized loop that is not innermost; a pipeline with nothing
 * staged at its loop; a shared stage computed at no loop, or whose region
 * has no constant size.  Warning: a cpu pipeline whose loop stages a whole
 * tensor, which it cannot prefetch.
 */
#include <math.h>
#include <string.h>

#include "sched/sched.h"

static const Span no_span = { 0, 0 };

typedef struct Lower {
    SchedState *st;
    Arena *a;
    Expr **loop_min; /* by loop variable id, while its stage is lowered */
    Expr **loop_ext;
    int64_t *loop_trip; /* by loop variable id: the most iterations */
    bool trip_mode;     /* bounds() lets varying loops run their most
                           iterations: an upper bound on a region's size */
    LoweredFunc *out;
    bool failed;
    /* the stages computed at each stage (attach), in st->stages order:
     * children[child_at(S)]; found once, not by a scan per loop */
    PtrMap child_at;
    PtrVec *children;
} Lower;

static const PtrVec *children_of(const Lower *L, const SStage *s)
{
    static const PtrVec none;
    int i = map_get(&L->child_at, s);
    return i >= 0 ? &L->children[i] : &none;
}

static SStage *stage_of(Lower *L, const Tensor *t)
{
    return sch_stage_of(L->st, t);
}

/* ------------------------------------------------------------------ */
/* Inlining.                                                           */

static bool has_divmod(const Expr *e)
{
    if (e->kind == EX_OP && (e->op == OP_DIV || e->op == OP_MOD))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (has_divmod(e->args[i]))
            return true;
    return false;
}

static bool is_comparison(const Expr *e)
{
    return e->kind == EX_OP && (e->op == OP_LT || e->op == OP_LE || e->op == OP_GT ||
                                e->op == OP_GE || e->op == OP_EQ || e->op == OP_NE);
}

/* E with the indices of its loads that divide, and the integer operands
 * of its comparisons that do, simplified against the loops' ranges, now
 * that they are known: a packed W_packed[j / 64, k, j % 64] inside a loop
 * over j in [jo*64, jo*64 + 64) reads W_packed[jo, k, j - jo*64]; an
 * im2col's bounds test q / 14 + kh >= 1, its positions q split into
 * qo*14 + qi (qi < 14), is qo + kh >= 1.  A comparison's operand only
 * where what the fold assumes exact stays inside i32 (sch_folds_fit_i32):
 * an index out of i32's range is out of its tensor, but a compared value
 * wraps. */
static Expr *simplify_divisions(Lower *L, Expr *e)
{
    if (!has_divmod(e))
        return e;
    Expr **args = arena_alloc(L->a, sizeof *args * (size_t)e->nargs);
    for (int i = 0; i < e->nargs; i++)
        args[i] = e->kind == EX_LOAD || (is_comparison(e) && e->args[i]->dtype == DT_I32 &&
                                         sch_folds_fit_i32(e->args[i]))
                      ? sch_simplify(L->a, e->args[i])
                      : simplify_divisions(L, e->args[i]);
    return te_rebuild(L->a, e, args);
}

static Expr *inline_expr(Lower *L, Expr *e)
{
    Expr **args = NULL;
    for (int i = 0; i < e->nargs; i++) {
        Expr *x = inline_expr(L, e->args[i]);
        if (x != e->args[i] && !args) {
            args = arena_alloc(L->a, sizeof *args * (size_t)e->nargs);
            memcpy(args, e->args, sizeof *args * (size_t)e->nargs);
        }
        if (args)
            args[i] = x;
    }
    if (e->kind == EX_LOAD) {
        SStage *p = stage_of(L, e->tensor);
        if (p && p->inlined) {
            /* p->value is already expanded: p comes earlier. */
            return sch_subst(L->a, p->value, (Subst){ p->svars, args ? args : e->args, p->nsvars });
        }
    }
    if (!args)
        return e;
    Expr *c = arena_alloc(L->a, sizeof *c);
    *c = *e;
    c->args = args;
    return c;
}

/* Loads of stages stored in region buffers index the region. */
static Expr *localize(Lower *L, Expr *e)
{
    Expr **args = NULL;
    for (int i = 0; i < e->nargs; i++) {
        Expr *x = localize(L, e->args[i]);
        if (x != e->args[i] && !args) {
            args = arena_alloc(L->a, sizeof *args * (size_t)e->nargs);
            memcpy(args, e->args, sizeof *args * (size_t)e->nargs);
        }
        if (args)
            args[i] = x;
    }
    SStage *p = e->kind == EX_LOAD ? stage_of(L, e->tensor) : NULL;
    if (p && p->storage && p->storage != p->tensor) {
        Expr **idx = arena_alloc(L->a, sizeof *idx * (size_t)(e->nargs + 1));
        for (int d = 0; d < e->nargs; d++)
            idx[d] = sch_sub(L->a, args ? args[d] : e->args[d], p->region_lo[d]);
        return ex_load(L->a, e->span, p->storage, idx, e->nargs);
    }
    if (!args)
        return e;
    Expr *c = arena_alloc(L->a, sizeof *c);
    *c = *e;
    c->args = args;
    return c;
}

/* ------------------------------------------------------------------ */
/* Bounds inference.                                                   */

typedef struct Bounds {
    Expr *lo, *hi;
} Bounds;

static bool depends_on(const Expr *e, const bool *varying, int n)
{
    if (e->kind == EX_VAR)
        return e->var->id < n && varying[e->var->id];
    for (int i = 0; i < e->nargs; i++)
        if (depends_on(e->args[i], varying, n))
            return true;
    return false;
}

static bool is_load(const Expr *x, const void *ctx)
{
    (void)ctx;
    return x->kind == EX_LOAD;
}

/* The range of E when the variables of VARYING loops take every value of
 * their range and all others are fixed.  False if E is beyond interval
 * arithmetic. */
static bool bounds(Lower *L, Expr *e, bool *varying, Bounds *out)
{
    Arena *a = L->a;
    int64_t c;
    Bounds x, y;
    /* A gathered index (one that reads a tensor) is data: not a bound,
     * even where no loop of the region moves it, since a region's bounds
     * are computed where the region is, where the tensor read may be a
     * buffer of another region or not yet computed.  Its reader takes the
     * whole dimension, which the index's clamp stays inside. */
    if (te_expr_any(e, is_load, NULL))
        return false;
    if (!depends_on(e, varying, L->st->next_var)) {
        /* fixed while the region's loops run: a single point */
        *out = (Bounds){ e, e };
        return true;
    }
    switch (e->kind) {
    case EX_CONST:
        *out = (Bounds){ e, e };
        return true;
    case EX_VAR:
        if (e->var->id < L->st->next_var && varying[e->var->id]) {
            Expr *min = L->loop_min[e->var->id];
            Expr *ext = L->trip_mode && L->loop_trip[e->var->id] > 0
                            ? sch_int(a, L->loop_trip[e->var->id]) : L->loop_ext[e->var->id];
            *out = (Bounds){ min, sch_sub(a, sch_add(a, min, ext), sch_int(a, 1)) };
        } else {
            *out = (Bounds){ e, e };
        }
        return true;
    case EX_OP:
        if (e->dtype != DT_I32)
            return false;
        if (!bounds(L, e->args[0], varying, &x))
            return false;
        if (e->nargs > 1 && !bounds(L, e->args[1], varying, &y))
            return false;
        switch (e->op) {
        case OP_NEG:
            *out = (Bounds){ sch_sub(a, sch_int(a, 0), x.hi), sch_sub(a, sch_int(a, 0), x.lo) };
            return true;
        case OP_ADD:
            *out = (Bounds){ sch_add(a, x.lo, y.lo), sch_add(a, x.hi, y.hi) };
            return true;
        case OP_SUB:
            *out = (Bounds){ sch_sub(a, x.lo, y.hi), sch_sub(a, x.hi, y.lo) };
            return true;
        case OP_MUL:
            if (sch_const_int(e->args[1], &c) || sch_const_int(e->args[0], &c)) {
                Bounds v = e->args[1]->kind == EX_CONST ? x : y;
                Expr *k = sch_int(a, c);
                *out = c >= 0 ? (Bounds){ sch_mul(a, v.lo, k), sch_mul(a, v.hi, k) }
                              : (Bounds){ sch_mul(a, v.hi, k), sch_mul(a, v.lo, k) };
                return true;
            }
            return false;
        case OP_DIV:
            /* truncating division by a positive constant is monotone */
            if (sch_const_int(e->args[1], &c) && c > 0) {
                Expr *args_lo[2] = { x.lo, e->args[1] }, *args_hi[2] = { x.hi, e->args[1] };
                *out = (Bounds){ sch_simplify(a, ex_op(a, no_span, OP_DIV, DT_I32, args_lo, 2)),
                                 sch_simplify(a, ex_op(a, no_span, OP_DIV, DT_I32, args_hi, 2)) };
                return true;
            }
            return false;
        case OP_MOD: {
            int64_t lo;
            if (sch_const_int(e->args[1], &c) && c > 0 && sch_const_int(x.lo, &lo) && lo >= 0) {
                *out = (Bounds){ sch_int(a, 0), sch_int(a, c - 1) };
                return true;
            }
            return false;
        }
        case OP_MIN:
            *out = (Bounds){ sch_min(a, x.lo, y.lo), sch_min(a, x.hi, y.hi) };
            return true;
        case OP_MAX:
            *out = (Bounds){ sch_max(a, x.lo, y.lo), sch_max(a, x.hi, y.hi) };
            return true;
        default:
            return false;
        }
    default:
        return false;
    }
}

/* Unions into R (one Bounds per dimension of T) the region of T that the
 * loads in E read. */
static void region_of_loads(Lower *L, Expr *e, const Tensor *t, bool *varying, Bounds *r,
                            bool *seen)
{
    if (e->kind == EX_LOAD && e->tensor == t) {
        for (int d = 0; d < t->rank; d++) {
            Bounds b;
            if (!bounds(L, e->args[d], varying, &b))
                b = (Bounds){ sch_int(L->a, 0),
                              sch_sub(L->a, sch_shape_expr(L->st, t, d), sch_int(L->a, 1)) };
            if (!seen[d]) {
                r[d] = b;
                seen[d] = true;
            } else {
                r[d].lo = sch_min(L->a, r[d].lo, b.lo);
                r[d].hi = sch_max(L->a, r[d].hi, b.hi);
            }
        }
    }
    for (int i = 0; i < e->nargs; i++)
        region_of_loads(L, e->args[i], t, varying, r, seen);
}

/* Adds to R (SEEN: the dimensions some load set) the region of T that
 * VALUE and EPILOGUE (or NULL) read over the VARYING loops.  A region
 * that contains the other, as far as the loops' ranges prove, is kept as
 * it is: a min or max of two equal bounds would not simplify, and the
 * region's size would not be a constant. */
static void region_read(Lower *L, Expr *value, Expr *epilogue, const Tensor *t, bool *varying,
                        Bounds *r, bool *seen)
{
    Bounds q[TE_MAX_RANK];
    bool sq[TE_MAX_RANK] = { false };
    region_of_loads(L, value, t, varying, q, sq);
    if (epilogue)
        region_of_loads(L, epilogue, t, varying, q, sq);
    for (int d = 0; d < t->rank; d++) {
        if (!sq[d])
            continue;
        if (!seen[d] || (sch_provably_le(q[d].lo, r[d].lo) && sch_provably_le(r[d].hi, q[d].hi))) {
            r[d] = q[d];
        } else if (!sch_provably_le(r[d].lo, q[d].lo) || !sch_provably_le(q[d].hi, r[d].hi)) {
            r[d].lo = sch_min(L->a, r[d].lo, q[d].lo);
            r[d].hi = sch_max(L->a, r[d].hi, q[d].hi);
        }
        seen[d] = true;
    }
}

static bool stage_loads(const SStage *s, const Tensor *t)
{
    /* (inlined stages are expanded already) */
    return te_expr_any(s->value, te_is_load_of, t) ||
           (s->epilogue && te_expr_any(s->epilogue, te_is_load_of, t));
}

/* S's value in its loops' variables. */
static Expr *stage_value(Lower *L, SStage *s)
{
    return simplify_divisions(L, sch_subst(L->a, s->value, sch_stage_subst(L->a, s)));
}

/* ------------------------------------------------------------------ */
/* Nests.                                                              */

static Stmt *stmt_new(Lower *L, StmtKind k)
{
    Stmt *s = arena_alloc(L->a, sizeof *s);
    s->kind = k;
    return s;
}

static Stmt *seq2(Lower *L, Stmt *x, Stmt *y)
{
    if (!x)
        return y;
    if (!y)
        return x;
    Stmt *s = stmt_new(L, S_SEQ);
    s->stmts = arena_alloc(L->a, sizeof *s->stmts * 2);
    s->stmts[0] = x;
    s->stmts[1] = y;
    s->n = 2;
    return s;
}

/* The position of the innermost loop of S (within [0, n)) that guard G
 * uses, or -1 if it uses a loop outside the nest being built. */
static int guard_depth(SStage *s, Expr *g, bool *in_nest)
{
    int deepest = -1;
    for (int i = 0; i < s->loops.len; i++) {
        Loop *l = s->loops.items[i];
        if (sch_uses_var(g, l->var)) {
            if (!in_nest[i])
                return -2;
            deepest = i;
        }
    }
    return deepest;
}

static Stmt *lower_stage(Lower *L, SStage *s);

/* L of stage S over its whole extent, unless it is one of the region loops
 * plan_child set (a spatial loop of an attached stage): the range
 * lower_stage gives it. */
static void whole_range(Lower *L, const SStage *s, const Loop *l)
{
    if (!s->attach || l->reduce || !L->loop_min[l->var->id]) {
        L->loop_min[l->var->id] = sch_int(L->a, 0);
        L->loop_ext[l->var->id] = sch_extent_expr(L->st, l->var);
        L->loop_trip[l->var->id] = l->var->extent;
    }
}

/* E with sums and differences moved inside min(): lo + min(T, S - lo) - 1
 * becomes min(lo + T - 1, S - 1), whose bounds do not count lo twice. */
static Expr *sum_into_min(Arena *a, Expr *e)
{
    if (e->kind != EX_OP || (e->op != OP_ADD && e->op != OP_SUB) || e->nargs != 2)
        return e;
    Expr *x = sum_into_min(a, e->args[0]), *y = sum_into_min(a, e->args[1]);
    bool add = e->op == OP_ADD;
    if (x->kind == EX_OP && x->op == OP_MIN)
        return sch_min(a, sum_into_min(a, add ? sch_add(a, x->args[0], y) : sch_sub(a, x->args[0], y)),
                       sum_into_min(a, add ? sch_add(a, x->args[1], y) : sch_sub(a, x->args[1], y)));
    if (add && y->kind == EX_OP && y->op == OP_MIN)
        return sch_min(a, sum_into_min(a, sch_add(a, x, y->args[0])),
                       sum_into_min(a, sch_add(a, x, y->args[1])));
    return add ? sch_add(a, x, y) : sch_sub(a, x, y);
}

/* The constant range of index E over every value of the loops it uses:
 * first over INNER's loops, whose ranges start at expressions of the outer
 * loops (so that j - jo*48 with j in [jo*48, jo*48 + 47] is 0..47), then
 * again over ALL loops until only constants are left.  False if E is
 * beyond interval arithmetic. */
static bool const_bounds(Lower *L, Expr *e, bool *inner, bool *all, int64_t *lo, int64_t *hi)
{
    Bounds b = { e, e };
    for (int depth = 0; depth < 8; depth++) {
        if (sch_const_int(b.lo, lo) && sch_const_int(b.hi, hi))
            return true;
        Bounds x, y;
        bool *varying = depth == 0 ? inner : all;
        if (!bounds(L, b.lo, varying, &x) || !bounds(L, b.hi, varying, &y))
            return false;
        b = (Bounds){ sch_simplify(L->a, sum_into_min(L->a, x.lo)),
                      sch_simplify(L->a, sum_into_min(L->a, y.hi)) };
    }
    return false;
}

/* The least size dimension D of T has in this variant: its size, or
 * where that depends on run-time dims, the least it takes over their
 * ranges (the bucket's). */
static int64_t least_extent(Lower *L, const Tensor *t, int d)
{
    int64_t lo, hi;
    if (!t->shape_size[d])
        return t->shape[d];
    return te_size_range(t->shape_size[d], L->st->dims, &lo, &hi) ? lo : 0;
}

/* Whether every load in E stays inside its tensor over the loops' ranges. */
static bool loads_in_bounds(Lower *L, Expr *e, bool *inner, bool *all)
{
    if (e->kind == EX_LOAD)
        for (int d = 0; d < e->tensor->rank; d++) {
            int64_t lo, hi;
            if (!const_bounds(L, e->args[d], inner, all, &lo, &hi) || lo < 0 ||
                hi >= e->tensor->shape[d] || hi >= least_extent(L, e->tensor, d))
                return false;
        }
    for (int i = 0; i < e->nargs; i++)
        if (!loads_in_bounds(L, e->args[i], inner, all))
            return false;
    return true;
}

/* Edge tiles of a local region: where the tensor's end cuts the region
 * along dimension D (EXT[D] = min(size, S - lo)), C may compute the whole
 * constant-sized region instead, into its own buffer, when every load it
 * makes stays inside its tensor over the whole region: a weight packed in
 * panels is zero-padded to whole panels, so a matmul's accumulator tile
 * reading it can run full vectors with no per-row test of the edge.  Only
 * what the consumer reads of the buffer (the real region) is stored. */
static void overcompute_edges(Lower *L, SStage *c, Expr **ext, const int64_t *shape)
{
    Arena *a = L->a;
    int n = L->st->next_var;
    bool *all = arena_alloc(a, sizeof *all * (size_t)n);
    bool *inner = arena_alloc(a, sizeof *inner * (size_t)n);
    for (int v = 0; v < n; v++)
        all[v] = L->loop_min[v] != NULL;
    /* C's loops as lower_stage will set them: reduction and untouched
     * loops over their whole extent */
    for (int i = 0; i < c->loops.len; i++) {
        Loop *l = c->loops.items[i];
        whole_range(L, c, l);
        all[l->var->id] = inner[l->var->id] = true;
    }
    for (int d = 0; d < c->tensor->rank; d++) {
        int64_t k;
        if (sch_const_int(ext[d], &k))
            continue;
        Loop *region = NULL;
        Expr *v = c->value_of[d];
        for (int i = 0; i < c->loops.len && !region; i++) {
            Loop *l = c->loops.items[i];
            if (v->kind == EX_VAR && v->var == l->var)
                region = l;
        }
        if (!region)
            continue;
        L->loop_ext[region->var->id] = sch_int(a, shape[d]);
        Expr *value = simplify_divisions(L, sch_subst(a, c->value, sch_stage_subst(a, c)));
        bool safe = loads_in_bounds(L, value, inner, all);
        if (safe && c->epilogue)
            safe = loads_in_bounds(L, sch_subst(a, c->epilogue, sch_stage_subst(a, c)), inner, all);
        if (safe)
            ext[d] = L->loop_ext[region->var->id];
        else
            L->loop_ext[region->var->id] = ext[d];
    }
}

/* Plans child C, computed at loop number POS of stage S: the region of C
 * that S reads inside that loop (VALUE is S's value in loop variables),
 * the ranges of C's loops over it, and C's storage. */
static void plan_child(Lower *L, SStage *s, int pos, SStage *c, Expr *value)
{
    Arena *a = L->a;
    bool *varying = arena_alloc(a, sizeof *varying * (size_t)L->st->next_var);
    for (int i = pos + 1; i < s->loops.len; i++)
        varying[((Loop *)s->loops.items[i])->var->id] = true;
    /* the stages computed at S's loops that read C too (sch_lower checks
     * that they are at loop POS or inside it, later in the body than C),
     * planned before C: C's region covers what they read over theirs */
    PtrVec readers = {0};
    const PtrVec *siblings = children_of(L, s);
    for (int i = 0; i < siblings->len; i++) {
        SStage *o = siblings->items[i];
        if (o == c || o->inlined || !stage_loads(o, c->tensor))
            continue;
        vec_push(a, &readers, o);
        for (int k = 0; k < o->loops.len; k++) {
            Loop *l = o->loops.items[k];
            whole_range(L, o, l);
            varying[l->var->id] = true;
        }
    }
    Bounds r[TE_MAX_RANK];
    bool seen[TE_MAX_RANK] = { false };
    region_read(L, value, NULL, c->tensor, varying, r, seen);
    /* the same with every varying loop at its most iterations: where the
     * exact size is not a constant (edge tiles), this bounds it */
    Bounds rb[TE_MAX_RANK];
    bool seen_b[TE_MAX_RANK] = { false };
    L->trip_mode = true;
    region_read(L, value, NULL, c->tensor, varying, rb, seen_b);
    L->trip_mode = false;
    for (int i = 0; i < readers.len; i++) {
        SStage *o = readers.items[i];
        Expr *v = stage_value(L, o);
        Expr *epi = o->epilogue ? sch_subst(a, o->epilogue, sch_stage_subst(a, o)) : NULL;
        region_read(L, v, epi, c->tensor, varying, r, seen);
        L->trip_mode = true;
        region_read(L, v, epi, c->tensor, varying, rb, seen_b);
        L->trip_mode = false;
    }
    const Tensor *t = c->tensor;
    bool constant = true;
    int64_t shape[TE_MAX_RANK];
    Expr *ext[TE_MAX_RANK];
    for (int d = 0; d < t->rank; d++) {
        if (!seen[d])
            r[d] = (Bounds){ sch_int(a, 0), sch_sub(a, sch_shape_expr(L->st, t, d), sch_int(a, 1)) };
        Expr *size = sch_add(a, sch_sub(a, r[d].hi, r[d].lo), sch_int(a, 1));
        if (!sch_const_int(size, &shape[d]) && seen_b[d])
            size = sch_add(a, sch_sub(a, rb[d].hi, rb[d].lo), sch_int(a, 1));
        constant = constant && sch_const_int(size, &shape[d]) && shape[d] > 0;
        if (constant && shape[d] > t->shape[d])
            shape[d] = t->shape[d];
        /* clamp to the tensor: lo' = max(lo, 0), and the extent
         * min(hi, S-1) - lo' + 1 written as min(hi - lo' + 1, S - lo') so
         * that it simplifies */
        r[d].lo = sch_max(a, r[d].lo, sch_int(a, 0));
        ext[d] = sch_min(a, sch_add(a, sch_sub(a, r[d].hi, r[d].lo), sch_int(a, 1)),
                         sch_sub(a, sch_shape_expr(L->st, t, d), r[d].lo));
        c->region_lo[d] = r[d].lo;
    }
    /* the region's loops: c's spatial loops iterate it */
    for (int i = 0; i < c->loops.len; i++) {
        Loop *l = c->loops.items[i];
        for (int d = 0; d < c->nsvars; d++) {
            Expr *v = c->value_of[d];
            if (v->kind == EX_VAR && v->var == l->var) {
                L->loop_min[l->var->id] = r[d].lo;
                L->loop_ext[l->var->id] = ext[d];
                L->loop_trip[l->var->id] = constant ? shape[d] : t->shape[d];
                /* the loop now runs over the region: at most its constant
                 * size (unrolling counts on it), from a symbolic start */
                l->trip_bound = constant ? shape[d] : t->shape[d];
                l->var->extent = 0;
                l->var->region_lo = r[d].lo;
                l->var->region_trip = l->trip_bound;
            }
        }
    }
    /* a constant-sized region of a stage nobody else reads gets a buffer of
     * its own size, whatever scope was asked for; on the stack up to 64
     * KiB, else a whole tensor.  A shared one cannot be a whole tensor:
     * it is a buffer of the region's size, which the backend checks
     * against the block's shared memory */
    bool local = constant && !t->is_output;
    int64_t bytes = dtype_bytes(t->dtype);
    bool huge = false;
    for (int d = 0; constant && d < t->rank; d++)
        huge = huge || __builtin_mul_overflow(bytes, shape[d], &bytes);
    local = local && !huge && (c->scope == SCOPE_SHARED || bytes <= (64 << 10)); /* stays on the stack */
    if (c->scope == SCOPE_SHARED && !local) {
        Loop *at = s->loops.items[pos];
        diag_error(L->st->g->src, c->tensor->span,
                   "cannot stage '%s' in shared memory at '%s' of '%s': the region of it read "
                   "there has no constant size, so it would be a whole tensor in global memory; "
                   "split '%s' so that a tile of fixed size is read at '%s'",
                   c->name, at->name, s->name, s->name, at->name);
        L->failed = true;
    }
    /* a whole-tensor buffer inside a parallel loop would be written by
     * several threads at once; inside a GPU-bound loop, by every thread,
     * and a `local` copy would quietly be global memory */
    const Loop *par = NULL, *bound = NULL;
    for (const SStage *o = s, *in = NULL; o && !par; in = o, o = o->attach) {
        int limit = in ? sch_loop_index(in->attach, in->attach_loop) : pos;
        for (int i = 0; i <= limit && i < o->loops.len; i++) {
            const Loop *l = o->loops.items[i];
            if (l->kind == LOOP_PARALLEL)
                par = l;
            if (l->kind == LOOP_BOUND && !bound)
                bound = l;
        }
    }
    /* inside a parallel loop (on the CPU), a constant region too big for
     * the stack is a buffer of its own on the heap, one an iteration: a
     * weight panel packed once per column block, say */
    bool heap = !local && par && !bound && constant && !t->is_output && !huge &&
                c->scope == SCOPE_LOCAL && bytes <= SCH_HEAP_TILE_MAX;
    if (local || heap) {
        overcompute_edges(L, c, ext, shape);
        Tensor *buf = arena_alloc(a, sizeof *buf);
        *buf = *t;
        memcpy(buf->shape, shape, sizeof buf->shape);
        memset(buf->shape_size, 0, sizeof buf->shape_size); /* a constant tile */
        buf->kind = TK_STAGE;
        buf->is_output = false;
        c->storage = buf;
        c->heap = heap;
    } else {
        /* why the region cannot have a buffer of its own */
        const char *most = par ? arena_printf(a, "the %d MiB texc allocates for a thread's tile",
                                              (int)(SCH_HEAP_TILE_MAX >> 20))
                               : "the 64 KiB texc keeps on a thread's stack";
        const char *why =
            !constant ? "has no constant size"
            : t->is_output ? "is part of an output"
            : huge ? arena_printf(a, "is more than %s", most)
                   : arena_printf(a, "is %lld bytes, more than %s", (long long)bytes, most);
        Loop *at = s->loops.items[pos];
        if (par) {
            diag_error(L->st->g->src, c->tensor->span,
                       "cannot compute '%s' at '%s' of '%s': the region it needs there %s, so it would be a whole tensor that the parallel loop '%s' shares between threads; tile '%s' so that the region is a fixed tile of at most %d MiB",
                       c->name, at->name, s->name, why, par->name, s->name,
                       (int)(SCH_HEAP_TILE_MAX >> 20));
            L->failed = true;
        } else if (bound && c->scope == SCOPE_LOCAL) {
            diag_error(L->st->g->src, c->tensor->span,
                       "cannot keep '%s' in local memory at '%s' of '%s': the region it needs there %s, so it would be a whole tensor in global memory that every thread writes (the loop '%s' is bound to the GPU); split '%s' so that a smaller tile is read at '%s', or stage it in shared memory",
                       c->name, at->name, s->name, why, bound->name, s->name, at->name);
            L->failed = true;
        }
        c->storage = c->tensor;
        for (int d = 0; d < t->rank; d++)
            c->region_lo[d] = sch_int(a, 0);
        if (!t->is_output)
            vec_push(a, &L->out->temps, c->tensor);
    }
}

/* C's nest followed by REST, inside C's allocation if it has one. */
static Stmt *emit_child(Lower *L, SStage *c, Stmt *rest)
{
    Stmt *body = seq2(L, lower_stage(L, c), rest);
    if (c->storage == c->tensor)
        return body;
    Stmt *alloc = stmt_new(L, S_ALLOC);
    alloc->buf = c->storage;
    alloc->scope = c->scope == SCOPE_SHARED ? SCOPE_SHARED : SCOPE_LOCAL;
    alloc->heap = c->heap;
    alloc->body = body;
    return alloc;
}

typedef struct Nest {
    SStage *s;
    bool *in_nest;   /* which of s's loops this nest iterates */
    int first_guard; /* place only guards at positions >= this */
    bool children;   /* place the stages computed at these loops */
} Nest;

/* Wraps BODY in the loops of N at positions >= POS, innermost first. */
static Stmt *build(Lower *L, Nest *n, int pos, Stmt *body)
{
    SStage *s = n->s;
    if (pos == s->loops.len)
        return body;
    if (!n->in_nest[pos])
        return build(L, n, pos + 1, body);
    Loop *l = s->loops.items[pos];
    Arena *a = L->a;
    Stmt *inner = build(L, n, pos + 1, body);
    Expr *extent = L->loop_ext[l->var->id];
    /* guards whose innermost loop is this one */
    for (int g = 0; g < s->guards.len; g++) {
        Expr *guard = s->guards.items[g];
        if (guard_depth(s, guard, n->in_nest) != pos || pos < n->first_guard)
            continue;
        /* lhs < E with lhs = rest + var: shorten the loop instead */
        Expr *lhs = guard->args[0], *bound = guard->args[1];
        Expr *rest = sch_sub(a, lhs, ex_var(a, no_span, l->var));
        int64_t m;
        if (!sch_uses_var(rest, l->var) && sch_const_int(L->loop_min[l->var->id], &m) && m == 0) {
            extent = sch_min(a, extent, sch_sub(a, bound, rest));
        } else {
            Stmt *i = stmt_new(L, S_IF);
            i->cond = guard;
            i->body = inner;
            inner = i;
        }
    }
    /* stages computed at this loop, in dependency order */
    const PtrVec *children = children_of(L, s);
    for (int i = children->len - 1; i >= 0 && n->children; i--) {
        SStage *c = children->items[i];
        if (c->attach_loop == l && !c->inlined)
            inner = emit_child(L, c, inner);
    }
    Stmt *f = stmt_new(L, S_FOR);
    f->loop = l;
    f->min = L->loop_min[l->var->id];
    f->extent = extent;
    f->body = inner;
    return f;
}

/* E with loads of T at the stage's own point replaced by SELF. */
static Expr *redirect_self(Lower *L, Expr *e, const Tensor *t, Expr *self)
{
    if (e->kind == EX_LOAD && e->tensor == t)
        return self;
    if (e->nargs == 0)
        return e;
    Expr *c = arena_alloc(L->a, sizeof *c);
    *c = *e;
    c->args = arena_alloc(L->a, sizeof *c->args * (size_t)e->nargs);
    for (int i = 0; i < e->nargs; i++)
        c->args[i] = redirect_self(L, e->args[i], t, self);
    return c;
}

static Expr *identity(Lower *L, SStage *s)
{
    double v = reducer_identity(s->reducer);
    /* integers have no infinities: the extreme values are the identities */
    if (s->tensor->dtype == DT_I32 && v == -INFINITY)
        v = -2147483648.0;
    else if (s->tensor->dtype == DT_I32 && v == INFINITY)
        v = 2147483647.0;
    return ex_const(L->a, no_span, s->tensor->dtype, v);
}

static Expr *combine(Lower *L, SStage *s, Expr *acc, Expr *v)
{
    Op op = s->reducer == RED_SUM ? OP_ADD
            : s->reducer == RED_PROD ? OP_MUL
            : s->reducer == RED_MAX ? OP_MAX : OP_MIN;
    Expr *args[2] = { acc, v };
    return ex_op(L->a, no_span, op, s->tensor->dtype, args, 2);
}

static Stmt *lower_stage(Lower *L, SStage *s)
{
    Arena *a = L->a;
    int n = s->loops.len;
    for (int i = 0; i < n; i++) {
        Loop *l = s->loops.items[i];
        whole_range(L, s, l);
        /* the stage the statement named, which may be merged into S */
        const char *written = l->kind_stage ? l->kind_stage : s->name;
        const char *stage = sch_stage_label(a, s->tensor, written);
        if (l->kind == LOOP_UNROLLED && sch_trip_bound(l) > 64) {
            sch_unroll_refused(L->st, l->kind_span, l, stage, sch_trip_bound(l));
            L->failed = true;
            return NULL;
        }
        if (l->kind == LOOP_VECTORIZED && i != n - 1) {
            Loop *inner = s->loops.items[i + 1];
            const char *anchor = s->tensor->anchor;
            if (inner->reduce && !l->reduce && anchor && strcmp(anchor, written) != 0) {
                /* the reduction's loops came with fusion */
                diag_error(L->st->g->src, l->kind_span,
                           "cannot vectorize '%s' of %s: it is not the innermost loop (inside it: '%s'); '%s' is fused with the reduction '%s' (its loop '%s' is inside '%s''s loops now): reorder first, or use -fno-%s",
                           l->name, stage, inner->name, s->name, anchor, inner->name, s->name,
                           te_pass_name(sch_merged_by(s->tensor, anchor)));
            } else {
                diag_error(L->st->g->src, l->kind_span,
                           "cannot vectorize '%s' of %s: it is not the innermost loop (inside it: '%s'); reorder first",
                           l->name, stage, inner->name);
            }
            L->failed = true;
            return NULL;
        }
    }
    if (!s->storage)
        s->storage = s->tensor;
    Expr **idx = arena_alloc(a, sizeof *idx * (size_t)(s->nsvars + 1));
    for (int d = 0; d < s->nsvars; d++) {
        idx[d] = s->value_of[d];
        if (s->storage != s->tensor)
            idx[d] = sch_sub(a, idx[d], s->region_lo[d]);
    }
    Expr *value = stage_value(L, s);
    /* last first: a child read by a later one covers what that one reads
     * over its region, planned already */
    const PtrVec *children = children_of(L, s);
    for (int i = children->len - 1; i >= 0; i--) {
        SStage *c = children->items[i];
        if (!c->inlined)
            plan_child(L, s, sch_loop_index(s, c->attach_loop), c, value);
    }
    Expr *local_value = localize(L, value);
    Nest nest = { s, arena_alloc(a, sizeof(bool) * (size_t)(n + 1)), 0, true };
    Stmt *store = stmt_new(L, S_STORE);
    store->buf = s->storage;
    store->index = idx;
    if (!s->is_reduce) {
        store->value = local_value;
        for (int i = 0; i < n; i++)
            nest.in_nest[i] = true;
        return build(L, &nest, 0, store);
    }
    int p = 0;
    while (p < n && !((Loop *)s->loops.items[p])->reduce)
        p++;
    store->value = combine(L, s, ex_load(a, no_span, s->storage, idx, s->nsvars), local_value);
    Stmt *init = stmt_new(L, S_STORE);
    init->buf = s->storage;
    init->index = idx;
    init->value = identity(L, s);
    /* init: the spatial loops inside the first reduction loop */
    for (int i = 0; i < n; i++)
        nest.in_nest[i] = i < p || !((Loop *)s->loops.items[i])->reduce;
    nest.first_guard = p;
    nest.children = false; /* they are read by the update alone */
    Stmt *init_nest = build(L, &nest, p, init);
    nest.children = true;
    for (int i = 0; i < n; i++)
        nest.in_nest[i] = true;
    Stmt *update_nest = build(L, &nest, p, store);
    Stmt *both = seq2(L, init_nest, update_nest);
    if (s->epilogue) {
        /* the epilogue runs over the spatial loops the init runs over,
         * once the reduction is complete: storage = f(storage) */
        Expr *self = ex_load(a, no_span, s->storage, idx, s->nsvars);
        Expr *epi = sch_subst(a, s->epilogue, sch_stage_subst(a, s));
        epi = redirect_self(L, localize(L, epi), s->tensor, self);
        Stmt *store_epi = stmt_new(L, S_STORE);
        store_epi->buf = s->storage;
        store_epi->index = idx;
        store_epi->value = epi;
        for (int i = 0; i < n; i++)
            nest.in_nest[i] = i < p || !((Loop *)s->loops.items[i])->reduce;
        nest.children = false;
        both = seq2(L, both, build(L, &nest, p, store_epi));
        nest.children = true;
    }
    /* the loops outside the first reduction loop hold both */
    for (int i = p; i < n; i++)
        nest.in_nest[i] = false;
    nest.first_guard = 0;
    return build(L, &nest, 0, both);
}

/* Stage S computed by its flash kernel (sched/flash.c): S's batch loops
 * (the first ones: flash leaves S's loops as they are, but for parallel)
 * around one S_FLASH, its operands in those loops' variables. */
static Stmt *lower_flash(Lower *L, SStage *s)
{
    Arena *a = L->a;
    SchFlash *f = arena_alloc(a, sizeof *f);
    *f = *s->flash;
    int nb = f->nbatch;
    f->batch_at = arena_alloc(a, sizeof *f->batch_at * (size_t)(nb + 1));
    for (int d = 0; d < nb; d++)
        f->batch_at[d] = s->value_of[d];
    f->q = te_subst_vars(a, f->q, f->batch, f->batch_at, nb);
    f->k = te_subst_vars(a, f->k, f->batch, f->batch_at, nb);
    f->v = te_subst_vars(a, f->v, f->batch, f->batch_at, nb);
    Nest nest = { s, arena_alloc(a, sizeof(bool) * (size_t)(s->loops.len + 1)), 0, false };
    for (int i = 0; i < s->loops.len; i++) {
        whole_range(L, s, s->loops.items[i]);
        nest.in_nest[i] = i < nb;
    }
    Stmt *leaf = stmt_new(L, S_FLASH);
    leaf->buf = s->storage;
    leaf->flash = f;
    return build(L, &nest, 0, leaf);
}

bool sch_lower(SchedState *st, LoweredFunc *out)
{
    Lower L = { .st = st, .a = st->arena, .out = out };
    L.loop_min = arena_alloc(st->arena, sizeof *L.loop_min * (size_t)(st->next_var + 1));
    L.loop_ext = arena_alloc(st->arena, sizeof *L.loop_ext * (size_t)(st->next_var + 1));
    L.loop_trip = arena_alloc(st->arena, sizeof *L.loop_trip * (size_t)(st->next_var + 1));
    for (int i = 0; i < st->stages.len; i++) {
        SStage *s = st->stages.items[i];
        s->value = inline_expr(&L, s->value);
        s->storage = NULL;
    }
    L.children = arena_alloc(st->arena, sizeof *L.children * (size_t)(st->stages.len + 1));
    PtrMap staged_at = {0}; /* the loops some stage is computed at */
    for (int i = 0, n = 0; i < st->stages.len; i++) {
        SStage *c = st->stages.items[i];
        if (c->attach_loop && !c->inlined)
            map_put(st->arena, &staged_at, c->attach_loop, 0);
        if (!c->attach)
            continue;
        if (map_put(st->arena, &L.child_at, c->attach, n))
            n++;
        vec_push(st->arena, &L.children[map_get(&L.child_at, c->attach)], c);
    }
    /* a stage computed at C's loop L is computed once an iteration of L,
     * before C's body: every other stage that reads it must be computed
     * there too, at L or inside it, or it would read the values of
     * another iteration */
    for (int i = 0; i < st->stages.len && !L.failed; i++) {
        SStage *c = st->stages.items[i];
        if (!c->attach || c->inlined)
            continue;
        int at = sch_loop_index(c->attach, c->attach_loop);
        for (int k = 0; k < st->stages.len && !L.failed; k++) {
            SStage *o = st->stages.items[k];
            if (o == c || o == c->attach || o->inlined || !stage_loads(o, c->tensor))
                continue;
            if (o->attach == c->attach && k > i &&
                sch_loop_index(o->attach, o->attach_loop) >= at)
                continue;
            /* the way out, where there is one: o computed there too */
            const char *hint =
                stage_loads(c->attach, o->tensor)
                    ? arena_printf(st->arena, "; compute '%s' at '%s' of '%s' (or at a loop inside it) as well",
                                   o->name, c->attach_loop->name, c->attach->name)
                    : "";
            diag_error(st->g->src, c->attach_span,
                       "cannot compute '%s' at '%s' of '%s': '%s' reads it%s, and is not computed there%s",
                       c->name, c->attach_loop->name, c->attach->name, o->name,
                       stage_loads(c->attach, c->tensor) ? " too" : "", hint);
            L.failed = true;
        }
    }
    /* a pipeline fetches ahead what is staged or computed at its loop:
     * with nothing there it would do nothing, silently */
    for (int i = 0; i < st->stages.len && !L.failed; i++) {
        SStage *s = st->stages.items[i];
        for (int k = 0; k < s->loops.len && !L.failed; k++) {
            Loop *l = s->loops.items[k];
            bool staged = map_get(&staged_at, l) >= 0;
            if (l->pipeline >= 2 && !staged) {
                diag_error(st->g->src, l->pipeline_span,
                           "pipeline '%s' of '%s' has nothing to fetch ahead: stage a tile at it "
                           "first (R = T.cache_read(scope, %s) at %s)",
                           l->name, s->name, s->name, l->name);
                L.failed = true;
            }
        }
    }
    /* shared memory lives while one block runs: a stage computed at no
     * loop would be a whole tensor in global memory, in a kernel of its
     * own */
    for (int i = 0; i < st->stages.len && !L.failed; i++) {
        SStage *s = st->stages.items[i];
        if (s->scope == SCOPE_SHARED && !s->attach && !s->inlined) {
            diag_error(st->g->src, s->tensor->span,
                       "cannot keep '%s' in shared memory: it is computed at no loop, so it would "
                       "be a whole tensor in global memory; stage it at a loop of the stage that "
                       "reads it, outside the thread loops (cache_read(...) at LOOP)",
                       s->name);
            L.failed = true;
        }
    }
    Stmt *body = NULL;
    for (int i = 0; i < st->stages.len && !L.failed; i++) {
        SStage *s = st->stages.items[i];
        if (s->inlined || s->attach || s->flashed)
            continue;
        s->storage = s->tensor;
        if (te_prepacked(s->tensor)) { /* computed ahead of time: NAME_prepack */
            vec_push(st->arena, &out->packed, s->tensor);
            out->prepack = seq2(&L, out->prepack, lower_stage(&L, s));
            continue;
        }
        if (!s->tensor->is_output)
            vec_push(st->arena, &out->temps, s->tensor);
        body = seq2(&L, body, s->flash ? lower_flash(&L, s) : lower_stage(&L, s));
    }
    /* the edge tiles out of the full tiles' loops: last, on the whole
     * nest, since a min comes from a guard of one stage or from the
     * region of a stage computed at another's loop */
    out->body = L.failed ? body : sch_fold_copies(st, sch_peel(st, body));
    /* a cpu pipeline prefetches the tiles staged at the start of its
     * loop's body, buffers of their own (codegen/c.c); a stage there that
     * is a whole tensor ends them.  A hint: the code is right without it */
    for (int i = 0; i < st->stages.len && !L.failed && st->target == TARGET_CPU; i++) {
        SStage *s = st->stages.items[i];
        for (int k = 0; k < s->loops.len; k++) {
            Loop *l = s->loops.items[k];
            for (int c = 0; c < st->stages.len && l->pipeline >= 2; c++) {
                SStage *t = st->stages.items[c];
                if (t->attach_loop == l && !t->inlined && t->storage == t->tensor) {
                    diag_warning(st->g->src, l->pipeline_span,
                                 "pipeline '%s' of '%s' does not prefetch '%s' (nor what is "
                                 "staged after it): the region of '%s' computed at '%s' is a whole "
                                 "tensor, not a tile (it has no constant size, or more than 64 "
                                 "KiB); split the loops of '%s' so that a smaller tile is read there",
                                 l->name, s->name, t->name, t->name, l->name, s->name);
                    break;
                }
            }
        }
    }
    return !L.failed;
}

/* apply.c — the schedule primitives, applied one statement at a time.
 *
 * requires: a SchedState from sch_state_new; statements that passed
 * sch_check (names exist when the statement was written), though each
 * primitive checks again since the default schedule and the tuner build
 * statements of their own.
 * guarantees: each primitive either changes the state as documented below
 * and appends itself to the trace, or reports the precondition that failed
 * (naming the stage, the loop and the reason) at the statement and
 * returns false with the state unchanged.
 *
 *   split(L, f) -> o, i      L = o*f + i; a guard L < extent(L) when f
 *                             does not divide it
 *   tile(a, b, fa, fb) -> ao, bo, ai, bi   two splits and a reorder
 *   fuse(a, b) -> f          a and b adjacent, a outside: a = f / ext(b),
 *                             b = f % ext(b)
 *   reorder(L, ...)          the named loops take each other's places
 *   vectorize / unroll / parallel / bind(L, axis)   set L's kind
 *   compute_inline()         the stage is substituted into its readers
 *   compute_at(C, L)         computed inside C's loop L, for the region
 *                             the iterations inside L read
 *   R = T.cache_read(scope, C) [at L]   C reads T through a copy R
 *   W = S.cache_write(scope)            S's computation moves to W; S
 *                                       copies W
 *   pipeline(L, n)           L's staged tiles are fetched n-1 ahead
 *   prefetch(L, n)           (cpu) the vector loads of L's body that move
 *                             with L are prefetched n iterations ahead
 */
#include <string.h>

#include "sched/sched.h"

static const Span no_span = { 0, 0 };

static const Source *src_of(SchedState *st)
{
    return st->g->src;
}

int64_t sch_arg_int(const SchedArg *a)
{
    return a->kind == SA_KNOB ? a->knob->values[a->knob->chosen]
           : a->kind == SA_INT ? a->ival : 0;
}

/* Stage S, which the statement called WRITTEN, for messages: the name the
 * user wrote, and the kernel it is part of when the optimizer merged it. */
static const char *named(SchedState *st, const SStage *s, const char *written)
{
    return sch_stage_label(st->arena, s->tensor, written);
}

static Loop *need_loop(SchedState *st, SStage *s, const char *written, const SchedArg *a)
{
    Loop *l = a->kind == SA_NAME ? sch_find_loop(s, a->name) : NULL;
    if (!l)
        diag_error(src_of(st), a->span, "stage %s has no loop '%s'", named(st, s, written),
                   a->kind == SA_NAME ? a->name : "?");
    return l;
}

/* Is some other stage computed at loop L? */
static SStage *attached_at(SchedState *st, const Loop *l)
{
    for (int i = 0; i < st->stages.len; i++) {
        SStage *s = st->stages.items[i];
        if (s->attach_loop == l)
            return s;
    }
    return NULL;
}

/* Loops must stay plain while their structure changes. */
static bool check_plain(SchedState *st, SStage *s, Loop *l, const SchedStmt *stmt,
                        const char *prim)
{
    if (l->kind != LOOP_SERIAL) {
        diag_error(src_of(st), stmt->span,
                   "cannot %s '%s' of %s: it is already %s; %s before annotating it",
                   prim, l->name, named(st, s, stmt->stage),
                   l->kind == LOOP_PARALLEL ? "parallel"
                   : l->kind == LOOP_VECTORIZED ? "vectorized"
                   : l->kind == LOOP_UNROLLED ? "unrolled" : "bound to a GPU axis",
                   prim);
        return false;
    }
    SStage *at = attached_at(st, l);
    if (at) {
        diag_error(src_of(st), stmt->span,
                   "cannot %s '%s' of %s: stage '%s' is computed at it; %s first, then compute_at",
                   prim, l->name, named(st, s, stmt->stage), at->name, prim);
        return false;
    }
    if (s->attach) {
        diag_error(src_of(st), stmt->span,
                   "cannot %s '%s': stage %s is computed at '%s' and iterates the region it needs",
                   prim, l->name, named(st, s, stmt->stage), s->attach->name);
        return false;
    }
    return true;
}

static Loop *new_loop(SchedState *st, const char *name, int64_t extent, const SizeExpr *size,
                      bool reduce)
{
    Loop *l = arena_alloc(st->arena, sizeof *l);
    l->name = name;
    l->var = sch_new_var_size(st, name, extent, size);
    l->reduce = reduce;
    return l;
}

/* Replaces loop OLD's variable by VALUE in every value_of and guard. */
static void substitute_loop(SchedState *st, SStage *s, Loop *old, Expr *value)
{
    Subst map = sch_subst1(st->arena, old->var, value);
    int nvars = s->nsvars + s->nrvars;
    for (int i = 0; i < nvars; i++)
        s->value_of[i] = sch_simplify(st->arena, sch_subst(st->arena, s->value_of[i], map));
    for (int i = 0; i < s->guards.len; i++)
        s->guards.items[i] = sch_subst(st->arena, s->guards.items[i], map);
}

static void replace_loops(SchedState *st, SStage *s, int at, Loop **with, int n, int remove)
{
    PtrVec v = {0};
    for (int i = 0; i < s->loops.len; i++) {
        if (i == at)
            for (int k = 0; k < n; k++)
                vec_push(st->arena, &v, with[k]);
        if (i < at || i >= at + remove)
            vec_push(st->arena, &v, s->loops.items[i]);
    }
    s->loops = v;
}

static bool do_split(SchedState *st, SStage *s, const SchedStmt *stmt, Loop *l,
                     int64_t factor, const char *outer, const char *inner)
{
    if (!check_plain(st, s, l, stmt, "split"))
        return false;
    int64_t extent = l->var->extent;
    if (factor > extent)
        factor = extent;
    int64_t nouter = (extent + factor - 1) / factor;
    Arena *a = st->arena;
    /* a run-time extent E: ceil(E / factor) outer iterations, and a guard
     * unless FACTOR divides E at every size */
    const SizeExpr *size = l->var->extent_size, *outer_size = NULL;
    bool divides = extent % factor == 0;
    if (size) {
        const SizeExpr *f = te_size_num(a, factor);
        outer_size = te_size_simplify(
            a, te_size_op(a, SZ_DIV, te_size_op(a, SZ_ADD, size, te_size_num(a, factor - 1)), f));
        int64_t rem;
        divides = te_size_is_num(te_size_simplify(a, te_size_op(a, SZ_MOD, size, f)), &rem) && rem == 0;
    }
    Loop *lo = new_loop(st, outer, nouter, outer_size, l->reduce);
    Loop *li = new_loop(st, inner, factor, NULL, l->reduce);
    Expr *value = sch_add(a, sch_mul(a, ex_var(a, no_span, lo->var), sch_int(a, factor)),
                          ex_var(a, no_span, li->var));
    if (!divides) {
        Expr *args[2] = { ex_var(a, no_span, l->var), sch_extent_expr(st, l->var) };
        vec_push(a, &s->guards, ex_op(a, no_span, OP_LT, DT_BOOL, args, 2));
    }
    substitute_loop(st, s, l, value);
    Loop *both[2] = { lo, li };
    replace_loops(st, s, sch_loop_index(s, l), both, 2, 1);
    return true;
}

static bool do_reorder(SchedState *st, SStage *s, const SchedStmt *stmt, Loop **order, int n)
{
    int *pos = arena_alloc(st->arena, sizeof *pos * (size_t)n);
    for (int i = 0; i < n; i++) {
        pos[i] = sch_loop_index(s, order[i]);
        for (int k = 0; k < i; k++)
            if (order[k] == order[i]) {
                diag_error(src_of(st), stmt->span, "reorder names '%s' twice", order[i]->name);
                return false;
            }
    }
    /* the named loops' positions, in increasing order, get them in the
     * order given */
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && pos[k - 1] > pos[k]; k--) {
            int t = pos[k];
            pos[k] = pos[k - 1];
            pos[k - 1] = t;
        }
    for (int i = 0; i < n; i++)
        s->loops.items[pos[i]] = order[i];
    return true;
}

static bool do_fuse(SchedState *st, SStage *s, const SchedStmt *stmt, Loop *a, Loop *b,
                    const char *name)
{
    int ia = sch_loop_index(s, a), ib = sch_loop_index(s, b);
    if (ib != ia + 1) {
        diag_error(src_of(st), stmt->span,
                   "cannot fuse '%s' and '%s' of %s: '%s' must be the loop just inside '%s'",
                   a->name, b->name, named(st, s, stmt->stage), b->name, a->name);
        return false;
    }
    if (a->reduce != b->reduce) {
        diag_error(src_of(st), stmt->span,
                   "cannot fuse '%s' and '%s' of %s: one is a reduction axis, the other is not",
                   a->name, b->name, named(st, s, stmt->stage));
        return false;
    }
    if (!check_plain(st, s, a, stmt, "fuse") || !check_plain(st, s, b, stmt, "fuse"))
        return false;
    int64_t extent;
    if (__builtin_mul_overflow(a->var->extent, b->var->extent, &extent)) {
        diag_error(src_of(st), stmt->span, "cannot fuse '%s' and '%s': too many iterations",
                   a->name, b->name);
        return false;
    }
    Arena *ar = st->arena;
    const SizeExpr *size = NULL;
    if (a->var->extent_size || b->var->extent_size) {
        const SizeExpr *ea = a->var->extent_size ? a->var->extent_size : te_size_num(ar, a->var->extent);
        const SizeExpr *eb = b->var->extent_size ? b->var->extent_size : te_size_num(ar, b->var->extent);
        size = te_size_simplify(ar, te_size_op(ar, SZ_MUL, ea, eb));
    }
    Loop *f = new_loop(st, name, extent, size, a->reduce);
    Expr *fv = ex_var(ar, no_span, f->var);
    Expr *eb = sch_extent_expr(st, b->var);
    Expr *args[2] = { fv, eb };
    substitute_loop(st, s, a, ex_op(ar, no_span, OP_DIV, DT_I32, args, 2));
    substitute_loop(st, s, b, ex_op(ar, no_span, OP_MOD, DT_I32, args, 2));
    replace_loops(st, s, ia, &f, 1, 2);
    return true;
}

static bool do_annotate(SchedState *st, SStage *s, const SchedStmt *stmt, Prim prim, Loop *l)
{
    const Source *src = src_of(st);
    const char *verb = prim == PR_VECTORIZE ? "vectorize"
                       : prim == PR_UNROLL ? "unroll"
                       : prim == PR_PARALLEL ? "parallelize" : "bind";
    const char *stage = named(st, s, stmt->stage);
    if (l->kind != LOOP_SERIAL) {
        diag_error(src, stmt->span, "cannot %s '%s' of %s: it is already %s", verb,
                   l->name, stage,
                   l->kind == LOOP_PARALLEL ? "parallel"
                   : l->kind == LOOP_VECTORIZED ? "vectorized"
                   : l->kind == LOOP_UNROLLED ? "unrolled" : "bound to a GPU axis");
        return false;
    }
    if (l->reduce && prim == PR_VECTORIZE && sch_can_vectorize_reduction(st, s)) {
        /* lanes of partial results, folded at the end (codegen/c.c) */
    } else if (l->reduce && prim != PR_UNROLL) {
        diag_error(src, stmt->span, "cannot %s '%s' of %s: it is a reduction axis%s", verb,
                   l->name, stage,
                   prim == PR_PARALLEL ? " (the threads would race on the sum)"
                   : prim != PR_VECTORIZE ? ""
                   : st->target != TARGET_CPU ? " (vectorized reductions are for cpu schedules)"
                   : " (its lanes would combine in another order, which -fstrict-fp forbids)");
        return false;
    }
    switch (prim) {
    case PR_UNROLL:
        /* a stage computed at another iterates a region: lowering checks */
        if (l->var->extent > 64 && !s->attach) {
            sch_unroll_refused(st, stmt->span, l, stage, l->var->extent);
            return false;
        }
        l->kind = LOOP_UNROLLED;
        break;
    case PR_VECTORIZE:
        if (st->target != TARGET_CPU) {
            /* a cuda kernel's loops run one element a step: it would be a plain loop */
            diag_error(src, stmt->span,
                       "vectorize is for cpu schedules; a cuda kernel has no vector loops: bind "
                       "'%s' to a thread axis instead, or unroll it",
                       l->name);
            return false;
        }
        l->kind = LOOP_VECTORIZED;
        break;
    case PR_PARALLEL:
        if (st->target != TARGET_CPU) {
            diag_error(src, stmt->span, "parallel is for cpu schedules; bind '%s' to a GPU axis instead",
                       l->name);
            return false;
        }
        for (int i = 0; i < s->loops.len; i++) {
            Loop *o = s->loops.items[i];
            if (o->kind == LOOP_PARALLEL) {
                diag_error(src, stmt->span,
                           "cannot parallelize '%s' of %s: '%s' is already parallel; fuse them instead",
                           l->name, stage, o->name);
                return false;
            }
        }
        l->kind = LOOP_PARALLEL;
        break;
    case PR_BIND: {
        GpuAxis axis = sch_gpu_axis_lookup(stmt->args[1].name); /* checked */
        for (int i = 0; i < s->loops.len; i++) {
            Loop *o = s->loops.items[i];
            if (o->kind == LOOP_BOUND && o->gpu_axis == axis) {
                diag_error(src, stmt->span, "cannot bind '%s' of %s to %s: '%s' is bound to it",
                           l->name, stage, sch_gpu_axis_name(axis), o->name);
                return false;
            }
        }
        l->kind = LOOP_BOUND;
        l->gpu_axis = axis;
        break;
    }
    default:
        TE_UNREACHABLE();
    }
    l->kind_span = stmt->span;
    l->kind_stage = stmt->stage;
    return true;
}

/* Does stage S's computation read tensor T? */
/* Does E read T, directly or through stages inlined into it? */
static bool expr_reads(SchedState *st, const Expr *e, const Tensor *t)
{
    if (e->kind == EX_LOAD) {
        if (e->tensor == t)
            return true;
        SStage *p = sch_stage_of(st, e->tensor);
        if (p && p->inlined && expr_reads(st, p->value, t))
            return true;
    }
    for (int i = 0; i < e->nargs; i++)
        if (expr_reads(st, e->args[i], t))
            return true;
    return false;
}

static bool stage_reads(SchedState *st, const SStage *s, const Tensor *t)
{
    return !s->inlined && (expr_reads(st, s->value, t) ||
                           (s->epilogue && expr_reads(st, s->epilogue, t)));
}

/* The size bound on inlining.  An inlined stage's value is copied into
 * each of its readers, so a chain of stages that each read the one before
 * twice, all inlined, doubles with every link.  As in the default
 * schedule (sched/default.c), no inlined stage may hold more than
 * TE_MAX_KERNEL_NODES expression nodes, counting the inlined stages it
 * loads as their own nodes; so a reader holds at most its own nodes times
 * the bound.  Each stage keeps its count and its readers; inlining S adds
 * S's nodes, less the load's one, to each reader, and through the
 * readers that are inlined to theirs.  A grown reader is visited once
 * per path from S, and every path adds at least one node to a stage that
 * stays within the bound, so the walk is bounded too. */

static int64_t expanded_nodes(SchedState *st, SStage *reader, const Expr *e)
{
    int64_t n = 1;
    if (e->kind == EX_LOAD) {
        SStage *p = sch_stage_of(st, e->tensor);
        if (p) {
            vec_push(st->arena, &p->readers, reader);
            if (p->inlined)
                n = p->nodes;
        }
    }
    for (int i = 0; i < e->nargs; i++)
        n += expanded_nodes(st, reader, e->args[i]);
    return n < INT64_MAX / 4 ? n : INT64_MAX / 4;
}

static void count_nodes(SchedState *st)
{
    for (int i = 0; i < st->stages.len; i++)
        ((SStage *)st->stages.items[i])->readers = (PtrVec){0};
    for (int i = 0; i < st->stages.len; i++) { /* in dependency order */
        SStage *s = st->stages.items[i];
        s->nodes = expanded_nodes(st, s, s->value);
        if (s->epilogue)
            s->nodes += expanded_nodes(st, s, s->epilogue);
    }
    st->sizes_known = true;
}

/* The nodes inlining would add to each stage: AT maps a stage to its
 * place in WHO and ADD. */
typedef struct Growth {
    Arena *a;
    PtrMap at;
    SStage **who;
    int64_t *add;
    int n, cap;
    SStage *over;   /* an inlined stage it takes past the bound, or NULL */
    int64_t nodes;  /* ... and its nodes then */
} Growth;

static bool grow(Growth *g, SStage *r, int64_t d)
{
    int i = map_get(&g->at, r);
    if (i < 0) {
        if (g->n == g->cap) {
            g->cap = g->cap ? 2 * g->cap : 16;
            SStage **who = arena_alloc(g->a, sizeof *who * (size_t)g->cap);
            int64_t *add = arena_alloc(g->a, sizeof *add * (size_t)g->cap);
            if (g->n) {
                memcpy(who, g->who, sizeof *who * (size_t)g->n);
                memcpy(add, g->add, sizeof *add * (size_t)g->n);
            }
            g->who = who;
            g->add = add;
        }
        i = g->n++;
        map_put(g->a, &g->at, r, i);
        g->who[i] = r;
        g->add[i] = 0;
    }
    g->add[i] += d;
    if (!r->inlined)
        return true;
    if (r->nodes + g->add[i] > TE_MAX_KERNEL_NODES) {
        g->over = r;
        g->nodes = r->nodes + g->add[i];
        return false;
    }
    for (int k = 0; k < r->readers.len; k++)
        if (!grow(g, r->readers.items[k], d))
            return false;
    return true;
}

/* Inlines S if that keeps every inlined stage within the bound. */
static bool inline_within_bound(SchedState *st, SStage *s, const SchedStmt *stmt)
{
    const Source *src = src_of(st);
    if (!st->sizes_known)
        count_nodes(st);
    if (s->nodes > TE_MAX_KERNEL_NODES) {
        diag_error(src, stmt->span,
                   "cannot inline '%s': with the stages inlined into it, it is %lld expression nodes, more than the %d texc allows; compute it as a stage of its own",
                   s->name, (long long)s->nodes, TE_MAX_KERNEL_NODES);
        return false;
    }
    Growth g = { .a = st->arena };
    bool ok = true;
    for (int k = 0; ok && s->nodes > 1 && k < s->readers.len; k++)
        ok = grow(&g, s->readers.items[k], s->nodes - 1);
    if (!ok) {
        diag_error(src, stmt->span,
                   "cannot inline '%s': that makes '%s' %lld expression nodes, more than the %d texc allows; compute it as a stage of its own",
                   s->name, g.over->name, (long long)g.nodes, TE_MAX_KERNEL_NODES);
        return false;
    }
    for (int i = 0; i < g.n; i++)
        g.who[i]->nodes += g.add[i];
    s->inlined = true;
    return true;
}

static bool do_compute_inline(SchedState *st, SStage *s, const SchedStmt *stmt)
{
    const Source *src = src_of(st);
    if (sch_inline_refused(st->arena, src, stmt, s->tensor))
        return false;
    const char *stage = named(st, s, stmt->stage);
    if (s->is_reduce) {
        diag_error(src, stmt->span, "cannot inline %s: it is a reduction; use compute_at", stage);
        return false;
    }
    if (s->scheduled) {
        diag_error(src, stmt->span,
                   "cannot inline %s: it has a loop schedule of its own, which inlining would drop",
                   stage);
        return false;
    }
    for (int i = 0; i < st->stages.len; i++) {
        SStage *o = st->stages.items[i];
        if (o->attach == s) {
            diag_error(src, stmt->span, "cannot inline %s: stage '%s' is computed at it",
                       stage, o->name);
            return false;
        }
    }
    return inline_within_bound(st, s, stmt);
}

/* Does a stage computed at C (so far) read S?  S may then be computed at
 * a loop of C that holds it: a weight panel packed once per column block
 * for the accumulator computed at each row block inside it. */
static bool read_inside(SchedState *st, const SStage *c, const SStage *s)
{
    for (int i = 0; i < st->stages.len; i++) {
        const SStage *o = st->stages.items[i];
        if (o != s && o->attach == c && stage_reads(st, o, s->tensor))
            return true;
    }
    return false;
}

/* Why compute_at of the stage the program calls WA at the one it calls
 * WC, both now T, cannot be: what the optimizer merged, and the way out. */
static void merged_at_itself(SchedState *st, const SchedStmt *stmt, const Tensor *t,
                             const char *wa, const char *wc)
{
    Arena *a = st->arena;
    PassId pa = sch_merged_by(t, wa), pc = sch_merged_by(t, wc);
    const char *what;
    if (pa == PASS_fuse && pc == PASS_fuse)
        what = arena_printf(a, "'%s' and '%s' are fused into one kernel ('%s')", wa, wc, t->name);
    else if (pa != PASS_COUNT && pc != PASS_COUNT)
        what = arena_printf(a, "%s, and %s", sch_merge_clause(a, t, wa),
                            sch_merge_clause(a, t, wc));
    else
        what = sch_merge_clause(a, t, pa != PASS_COUNT ? wa : wc);
    if (pa == PASS_cse || pc == PASS_cse) {
        /* stages equal up to renaming never read each other */
        diag_error(src_of(st), stmt->span, "cannot compute '%s' at '%s': '%s' does not read it (%s)",
                   wa, wc, wc, what);
        return;
    }
    const char *off = "";
    if (pa != PASS_COUNT)
        off = arena_printf(a, " -fno-%s", te_pass_name(pa));
    if (pc != PASS_COUNT && pc != pa)
        off = arena_printf(a, "%s -fno-%s", off, te_pass_name(pc));
    diag_error(src_of(st), stmt->span, "cannot compute '%s' at '%s': %s; schedule '%s', or use%s",
               wa, wc, what, t->name, off);
}

static bool do_compute_at(SchedState *st, SStage *s, const SchedStmt *stmt, SStage *c, Loop *l)
{
    const Source *src = src_of(st);
    const char *wa = stmt->stage, *wc = stmt->args[0].name;
    if (c == s) {
        if (strcmp(wa, wc) == 0)
            diag_error(src, stmt->span, "cannot compute '%s' at itself", wa);
        else
            merged_at_itself(st, stmt, s->tensor, wa, wc);
        return false;
    }
    const char *sn = named(st, s, wa), *cn = named(st, c, wc);
    if (s->inlined || c->inlined) {
        diag_error(src, stmt->span, "cannot compute %s at %s: %s is inlined", sn, cn,
                   s->inlined ? sn : cn);
        return false;
    }
    if (!stage_reads(st, c, s->tensor) && !read_inside(st, c, s)) {
        diag_error(src, stmt->args[0].span, "cannot compute %s at %s: '%s' does not read it",
                   sn, cn, c->name);
        return false;
    }
    /* other readers of S are allowed when they too are computed at C's
     * loop L or inside it (a row's statistics read by several stages of
     * the row): lowering checks that once the whole schedule is applied
     * (sch_lower), since the schedule may attach them after this */
    for (SStage *p = c; p; p = p->attach)
        if (p == s) {
            diag_error(src, stmt->span, "cannot compute %s at %s: '%s' is computed inside '%s'",
                       sn, cn, c->name, s->name);
            return false;
        }
    if (l->kind == LOOP_VECTORIZED) {
        diag_error(src, stmt->span, "cannot compute %s at '%s' of %s: it is vectorized", sn,
                   l->name, cn);
        return false;
    }
    for (int i = 0; i < s->loops.len; i++) {
        Loop *own = s->loops.items[i];
        bool plain = false;
        int nvars = s->nsvars + s->nrvars;
        for (int v = 0; v < nvars; v++) {
            Expr *e = s->value_of[v];
            plain = plain || (e->kind == EX_VAR && e->var == own->var);
        }
        if (!plain && !own->reduce) {
            diag_error(src, stmt->span,
                       "cannot compute %s at %s: its loop '%s' was split or fused, but a stage computed at another iterates the region it needs; split '%s' instead",
                       sn, cn, own->name, wc);
            return false;
        }
    }
    s->attach = c;
    s->attach_loop = l;
    s->attach_span = stmt->span;
    return true;
}

const char *sch_copy_loop_name(Arena *a, const Tensor *t, int d)
{
    return t->vars ? t->vars[d]->name : arena_printf(a, "ax%d", d);
}

/* A new stage computing T (or S's computation) with fresh variables,
 * defined by the statement at SPAN (later errors about its buffer point
 * there). */
static SStage *new_copy_stage(SchedState *st, const char *name, Tensor *src_tensor,
                              BufScope scope, Span span)
{
    Tensor *t = arena_alloc(st->arena, sizeof *t);
    t->name = name;
    t->span = span;
    t->kind = TK_STAGE;
    t->dtype = src_tensor->dtype;
    t->rank = src_tensor->rank;
    memcpy(t->shape, src_tensor->shape, sizeof t->shape);
    memcpy(t->shape_size, src_tensor->shape_size, sizeof t->shape_size);
    t->vars = arena_alloc(st->arena, sizeof *t->vars * (size_t)(t->rank + 1));
    Expr **idx = arena_alloc(st->arena, sizeof *idx * (size_t)(t->rank + 1));
    for (int d = 0; d < t->rank; d++) {
        const char *vn = sch_copy_loop_name(st->arena, src_tensor, d);
        t->vars[d] = sch_new_var_size(st, vn, t->shape[d], t->shape_size[d]);
        idx[d] = ex_var(st->arena, no_span, t->vars[d]);
    }
    SStage *s = arena_alloc(st->arena, sizeof *s);
    s->name = name;
    s->tensor = t;
    s->svars = t->vars;
    s->nsvars = t->rank;
    s->value = ex_load(st->arena, no_span, src_tensor, idx, t->rank);
    s->scope = scope;
    return s;
}

static void init_loops_of(SchedState *st, SStage *s)
{
    s->loops = (PtrVec){0};
    s->guards = (PtrVec){0};
    s->value_of = arena_alloc(st->arena, sizeof *s->value_of * (size_t)(s->nsvars + s->nrvars + 1));
    for (int pass = 0; pass < 2; pass++) {
        IterVar **vars = pass == 0 ? s->svars : s->rvars;
        int n = pass == 0 ? s->nsvars : s->nrvars;
        for (int i = 0; i < n; i++) {
            Loop *l = new_loop(st, vars[i]->name, vars[i]->extent, vars[i]->extent_size, pass == 1);
            vec_push(st->arena, &s->loops, l);
            Expr *v = ex_var(st->arena, no_span, l->var);
            s->value_of[pass * s->nsvars + i] =
                vars[i]->lo ? sch_add(st->arena, v, sch_int(st->arena, vars[i]->lo)) : v;
        }
    }
}

static void insert_before(SchedState *st, SStage *before, SStage *s)
{
    PtrVec v = {0};
    for (int i = 0; i < st->stages.len; i++) {
        if (st->stages.items[i] == before)
            vec_push(st->arena, &v, s);
        vec_push(st->arena, &v, st->stages.items[i]);
    }
    st->stages = v;
    sch_index_stage(st, s);
    st->sizes_known = false; /* a new stage, and a value changed */
}

/* Replaces loads of FROM by loads of TO (same indices) in E. */
static Expr *redirect(Arena *a, Expr *e, const Tensor *from, Tensor *to)
{
    Expr **args = NULL;
    for (int i = 0; i < e->nargs; i++) {
        Expr *x = redirect(a, e->args[i], from, to);
        if (x != e->args[i] && !args) {
            args = arena_alloc(a, sizeof *args * (size_t)e->nargs);
            memcpy(args, e->args, sizeof *args * (size_t)e->nargs);
        }
        if (args)
            args[i] = x;
    }
    if (!args && !(e->kind == EX_LOAD && e->tensor == from))
        return e;
    Expr *c = arena_alloc(a, sizeof *c);
    *c = *e;
    if (args)
        c->args = args;
    if (e->kind == EX_LOAD && e->tensor == from)
        c->tensor = to;
    return c;
}

static BufScope scope_of(const char *name)
{
    return strcmp(name, "local") == 0 ? SCOPE_LOCAL
           : strcmp(name, "shared") == 0 ? SCOPE_SHARED : SCOPE_GLOBAL;
}

static bool do_cache_read(SchedState *st, const SchedStmt *stmt, Tensor *t, SStage *c)
{
    const Source *src = src_of(st);
    if (!stage_reads(st, c, t)) {
        diag_error(src, stmt->args[1].span, "stage %s does not read '%s'",
                   named(st, c, stmt->args[1].name), stmt->stage);
        return false;
    }
    if (stmt->nargs > 2) {
        diag_error(src, stmt->args[2].span,
                   "cache_read layouts are not supported yet: the copy keeps '%s''s layout; remove \"%s\"",
                   stmt->stage, stmt->args[2].name);
        return false;
    }
    Loop *at = NULL;
    if (stmt->at) {
        at = sch_find_loop(c, stmt->at);
        if (!at) {
            diag_error(src, stmt->at_span, "stage %s has no loop '%s'",
                       named(st, c, stmt->args[1].name), stmt->at);
            return false;
        }
        if (at->kind == LOOP_VECTORIZED) {
            diag_error(src, stmt->at_span, "cannot stage '%s' at '%s': it is vectorized",
                       stmt->stage, at->name);
            return false;
        }
    }
    SStage *r = new_copy_stage(st, stmt->result, t, scope_of(stmt->args[0].name), stmt->span);
    init_loops_of(st, r);
    c->value = redirect(st->arena, c->value, t, r->tensor);
    insert_before(st, c, r);
    r->attach = at ? c : NULL;
    r->attach_loop = at;
    return true;
}

static bool do_cache_write(SchedState *st, SStage *s, const SchedStmt *stmt)
{
    const Source *src = src_of(st);
    const char *stage = named(st, s, stmt->stage);
    if (s->scheduled || s->attach) {
        diag_error(src, stmt->span,
                   "cache_write of %s must come before any other primitive on it", stage);
        return false;
    }
    for (int i = 0; i < st->stages.len; i++) {
        SStage *o = st->stages.items[i];
        if (o->attach == s) {
            diag_error(src, stmt->span,
                       "cache_write of %s must come before '%s' is computed at it", stage,
                       o->name);
            return false;
        }
    }
    /* W takes S's computation, with S's variables renamed. */
    SStage *w = new_copy_stage(st, stmt->result, s->tensor, scope_of(stmt->args[0].name),
                               stmt->span);
    if (s->epilogue)
        w->tensor->dtype = s->value->dtype; /* the accumulator's type */
    Expr **map = arena_alloc(st->arena, sizeof *map * (size_t)(s->nsvars + 1));
    for (int d = 0; d < s->nsvars; d++)
        map[d] = ex_var(st->arena, no_span, w->svars[d]);
    w->value = sch_subst(st->arena, s->value, (Subst){ s->svars, map, s->nsvars });
    w->is_reduce = s->is_reduce;
    w->reducer = s->reducer;
    w->rvars = s->rvars;
    w->nrvars = s->nrvars;
    init_loops_of(st, w);
    /* S copies W, through its epilogue if it has one. */
    Expr **idx = arena_alloc(st->arena, sizeof *idx * (size_t)(s->nsvars + 1));
    for (int d = 0; d < s->nsvars; d++)
        idx[d] = ex_var(st->arena, no_span, s->svars[d]);
    s->value = ex_load(st->arena, no_span, w->tensor, idx, s->nsvars);
    if (s->epilogue) {
        s->value = redirect(st->arena, s->epilogue, s->tensor, w->tensor);
        s->epilogue = NULL;
    }
    s->is_reduce = false;
    s->rvars = NULL;
    s->nrvars = 0;
    s->cache_written = true;
    init_loops_of(st, s);
    insert_before(st, s, w);
    return true;
}

/* Copies STMT with every knob replaced by its value, for the trace. */
static SchedStmt *resolved(SchedState *st, const SchedStmt *stmt)
{
    SchedStmt *c = arena_alloc(st->arena, sizeof *c);
    *c = *stmt;
    c->args = arena_alloc(st->arena, sizeof *c->args * (size_t)(stmt->nargs + 1));
    for (int i = 0; i < stmt->nargs; i++) {
        c->args[i] = stmt->args[i];
        if (c->args[i].kind == SA_KNOB) {
            c->args[i].kind = SA_INT;
            c->args[i].ival = sch_arg_int(&stmt->args[i]);
        }
    }
    return c;
}

bool sch_apply(SchedState *st, const SchedStmt *stmt)
{
    const Source *src = src_of(st);
    Prim prim = prim_lookup(stmt->prim);
    SStage *s = sch_find_stage(st, stmt->stage);
    bool ok = false;
    if (prim == PR_CACHE_READ) {
        Tensor *t = s ? s->tensor : NULL;
        for (int i = 0; !t && i < st->g->ninputs; i++)
            if (strcmp(st->g->inputs[i]->name, stmt->stage) == 0)
                t = st->g->inputs[i];
        SStage *c = sch_find_stage(st, stmt->args[1].name);
        if (!t || !c) {
            diag_error(src, t ? stmt->args[1].span : stmt->stage_span, "unknown stage '%s'",
                       t ? stmt->args[1].name : stmt->stage);
            return false;
        }
        if (c->mma || c->flash || c->flashed) {
            diag_error(src, stmt->args[1].span,
                       "stage '%s' is %s: its kernel stages its operands itself", c->name,
                       c->mma ? "tensorized" : "computed by a flash kernel");
            return false;
        }
        ok = do_cache_read(st, stmt, t, c);
        if (ok)
            vec_push(st->arena, &st->trace, resolved(st, stmt));
        return ok;
    }
    if (!s) {
        diag_error(src, stmt->stage_span, "unknown stage '%s'", stmt->stage);
        return false;
    }
    if (s->inlined) {
        diag_error(src, stmt->stage_span, "stage %s is inlined: it has no loops to schedule",
                   named(st, s, stmt->stage));
        return false;
    }
    if (s->mma) {
        diag_error(src, stmt->stage_span,
                   "stage '%s' is tensorized: the tensor-core kernel takes its loops as they are "
                   "(its tiles are tensorize's arguments)",
                   s->name);
        return false;
    }
    if (s->flashed) {
        diag_error(src, stmt->stage_span,
                   "stage '%s' is computed inside the flash kernel of '%s': it has no loops of its "
                   "own to schedule",
                   s->name, s->flashed->name);
        return false;
    }
    Loop *l = NULL, *l2 = NULL;
    if (s->flash) {
        /* the kernel takes every loop but the batch loops as it is */
        if (prim != PR_PARALLEL) {
            diag_error(src, stmt->prim_span,
                       "stage '%s' is computed by its flash kernel: only its batch loops can be "
                       "scheduled (parallel)",
                       s->name);
            return false;
        }
        if (!(l = need_loop(st, s, stmt->stage, &stmt->args[0])))
            return false;
        bool batch = false;
        for (int k = 0; k < s->flash->nbatch; k++)
            batch |= s->loops.items[k] == l;
        if (!batch) {
            diag_error(src, stmt->args[0].span,
                       "stage '%s' is computed by its flash kernel: '%s' is not one of its batch "
                       "loops, the only ones that run in parallel",
                       s->name, l->name);
            return false;
        }
        ok = do_annotate(st, s, stmt, prim, l);
        if (ok)
            vec_push(st->arena, &st->trace, resolved(st, stmt));
        return ok;
    }
    switch (prim) {
    case PR_FLASH:
        ok = sch_flash(st, s, stmt);
        break;
    case PR_TENSORIZE:
        ok = sch_tensorize(st, s, stmt);
        break;
    case PR_SPLIT:
        if ((l = need_loop(st, s, stmt->stage, &stmt->args[0])))
            ok = do_split(st, s, stmt, l, sch_arg_int(&stmt->args[1]), stmt->outs[0], stmt->outs[1]);
        break;
    case PR_TILE: {
        if (!(l = need_loop(st, s, stmt->stage, &stmt->args[0])) || !(l2 = need_loop(st, s, stmt->stage, &stmt->args[1])))
            break;
        if (!do_split(st, s, stmt, l, sch_arg_int(&stmt->args[2]), stmt->outs[0], stmt->outs[2]) ||
            !do_split(st, s, stmt, l2, sch_arg_int(&stmt->args[3]), stmt->outs[1], stmt->outs[3]))
            break;
        Loop *order[4];
        for (int i = 0; i < 4; i++)
            order[i] = sch_find_loop(s, stmt->outs[i]);
        ok = do_reorder(st, s, stmt, order, 4);
        break;
    }
    case PR_REORDER: {
        Loop **order = arena_alloc(st->arena, sizeof *order * (size_t)stmt->nargs);
        ok = true;
        for (int i = 0; i < stmt->nargs && ok; i++)
            ok = (order[i] = need_loop(st, s, stmt->stage, &stmt->args[i])) != NULL;
        ok = ok && do_reorder(st, s, stmt, order, stmt->nargs);
        break;
    }
    case PR_FUSE:
        if ((l = need_loop(st, s, stmt->stage, &stmt->args[0])) && (l2 = need_loop(st, s, stmt->stage, &stmt->args[1])))
            ok = do_fuse(st, s, stmt, l, l2, stmt->outs[0]);
        break;
    case PR_VECTORIZE:
    case PR_UNROLL:
    case PR_PARALLEL:
    case PR_BIND:
        if ((l = need_loop(st, s, stmt->stage, &stmt->args[0])))
            ok = do_annotate(st, s, stmt, prim, l);
        break;
    case PR_COMPUTE_INLINE:
        ok = do_compute_inline(st, s, stmt);
        break;
    case PR_COMPUTE_AT: {
        SStage *c = sch_find_stage(st, stmt->args[0].name);
        if (!c) {
            diag_error(src, stmt->args[0].span, "unknown stage '%s'", stmt->args[0].name);
            break;
        }
        if (c->mma)
            diag_error(src, stmt->args[0].span,
                       "stage '%s' is tensorized: nothing is computed inside its kernel",
                       c->name);
        else if (c->flash || c->flashed)
            diag_error(src, stmt->args[0].span,
                       "stage '%s' is computed %s flash kernel: nothing else is computed inside it",
                       c->name, c->flash ? "by its" : "inside another stage's");
        else if ((l = need_loop(st, c, stmt->args[0].name, &stmt->args[1])))
            ok = do_compute_at(st, s, stmt, c, l);
        break;
    }
    case PR_CACHE_WRITE:
        ok = do_cache_write(st, s, stmt);
        break;
    case PR_PIPELINE:
        if ((l = need_loop(st, s, stmt->stage, &stmt->args[0]))) {
            int64_t n = sch_arg_int(&stmt->args[1]);
            if (n < 2 || n > 8) {
                diag_error(src, stmt->args[1].span,
                           "pipeline '%s' of %s needs 2 to 8 stages, got %lld", l->name,
                           named(st, s, stmt->stage), (long long)n);
                break;
            }
            l->pipeline = (int)n;
            l->pipeline_span = stmt->span;
            ok = true;
        }
        break;
    case PR_PREFETCH:
        if ((l = need_loop(st, s, stmt->stage, &stmt->args[0]))) {
            int64_t n = sch_arg_int(&stmt->args[1]);
            if (st->target != TARGET_CPU) {
                diag_error(src, stmt->prim_span,
                           "prefetch is a cpu primitive: cuda kernels stage their reads with "
                           "cache_read and pipeline");
                break;
            }
            if (n < 1 || n > 64) {
                diag_error(src, stmt->args[1].span,
                           "prefetch '%s' of %s needs a distance of 1 to 64 iterations, got %lld",
                           l->name, named(st, s, stmt->stage), (long long)n);
                break;
            }
            if (l->kind == LOOP_VECTORIZED || l->kind == LOOP_UNROLLED || l->kind == LOOP_PARALLEL) {
                diag_error(src, stmt->args[0].span,
                           "cannot prefetch along '%s' of %s: it is %s; prefetch along a plain loop",
                           l->name, named(st, s, stmt->stage),
                           l->kind == LOOP_VECTORIZED ? "vectorized"
                           : l->kind == LOOP_UNROLLED ? "unrolled" : "parallel");
                break;
            }
            l->prefetch = (int)n;
            ok = true;
        }
        break;
    default:
        diag_error(src, stmt->prim_span, "unknown schedule primitive '%s'", stmt->prim);
        break;
    }
    if (ok) {
        if (prim != PR_COMPUTE_AT && prim != PR_COMPUTE_INLINE && prim != PR_CACHE_WRITE)
            s->scheduled = true;
        vec_push(st->arena, &st->trace, resolved(st, stmt));
    }
    return ok;
}

bool sch_apply_schedule(SchedState *st, const Schedule *s, FILE *dump_loops)
{
    for (int i = 0; i < s->nstmts; i++) {
        if (!sch_apply(st, s->stmts[i]))
            return false;
        if (dump_loops) {
            fputs("# after ", dump_loops);
            sch_print_trace_stmt(dump_loops, st->trace.items[st->trace.len - 1]);
            sch_print_stages(dump_loops, st);
        }
    }
    return true;
}

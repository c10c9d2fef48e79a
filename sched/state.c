/* state.c — the stages of a graph, ready to be scheduled.
 *
 * requires: a checked Graph.
 * guarantees: one SStage per stage tensor, in dependency order, each with
 * one serial loop per index variable (spatial first, then reduction axes)
 * and value_of mapping each variable to its loop's.  A reduction that is
 * not the whole body of its stage (mean[i] = (sum(j) x[i, j]) / D) is
 * hoisted into a stage of its own, named after its stage (mean_r0), so
 * that every stage is either elementwise or one reduction: the two forms
 * lowering knows.
 */
#include <string.h>

#include "sched/sched.h"

static const Span no_span = { 0, 0 };

IterVar *sch_new_var(SchedState *st, const char *name, int64_t extent)
{
    IterVar *v = arena_alloc(st->arena, sizeof *v);
    v->name = name;
    v->extent = extent;
    v->id = st->next_var++;
    return v;
}

/* SIZE with the dims this variant fixes (one value in its bucket) by
 * their values, simplified. */
static const SizeExpr *size_in_bucket(SchedState *st, const SizeExpr *e)
{
    if (!st->bucket)
        return e;
    switch (e->kind) {
    case SZ_NUM:
        return e;
    case SZ_DIM: {
        const Dim *d = &st->dims[e->dim];
        return d->lo == d->hi ? te_size_num(st->arena, d->lo) : e;
    }
    default: {
        const SizeExpr *x = size_in_bucket(st, e->a), *y = size_in_bucket(st, e->b);
        if (x == e->a && y == e->b)
            return e;
        return te_size_simplify(st->arena, te_size_op(st->arena, e->kind, x, y));
    }
    }
}

IterVar *sch_new_var_size(SchedState *st, const char *name, int64_t extent, const SizeExpr *size)
{
    IterVar *v = sch_new_var(st, name, extent);
    int64_t n, lo, hi;
    if (size)
        size = size_in_bucket(st, size);
    if (size && te_size_is_num(size, &n)) {
        v->extent = n;
        size = NULL;
    } else if (size && st->bucket && te_size_range(size, st->dims, &lo, &hi) && hi < extent) {
        v->extent = hi; /* the bucket's bound */
    }
    v->extent_size = size;
    return v;
}

void sch_unroll_refused(const SchedState *st, Span at, const Loop *l, const char *stage, int64_t trip)
{
    if (!l->var->extent_size) {
        diag_error(st->g->src, at, "cannot unroll '%s' of %s: its extent %lld is more than 64; split it first",
                   l->name, stage, (long long)trip);
        return;
    }
    /* a run-time extent: the sizes where it fails */
    diag_error(st->g->src, at,
               "cannot unroll '%s' of %s: its extent %s reaches %lld%s%s, more than 64; split it first",
               l->name, stage, te_size_str(st->arena, l->var->extent_size), (long long)trip,
               st->bucket ? " in the variant for " : "",
               st->bucket ? sch_bucket_str(st->arena, st->g, st->bucket) : "");
}

int64_t sch_extent_hint(const SchedState *st, const IterVar *v)
{
    if (!v->extent_size)
        return v->extent;
    int64_t *at = arena_alloc(st->arena, sizeof *at * (size_t)(st->g->ndims + 1));
    for (int d = 0; d < st->g->ndims; d++)
        at[d] = st->dims[d].hint;
    int64_t n;
    return te_size_eval(v->extent_size, at, &n) && n > 0 ? n : v->extent;
}

IterVar *sch_dim_var(SchedState *st, int d)
{
    TE_ASSERT(d >= 0 && d < st->g->ndims && st->g->dims[d].runtime);
    if (!st->dim_vars)
        st->dim_vars = arena_alloc(st->arena, sizeof *st->dim_vars * (size_t)(st->g->ndims + 1));
    if (!st->dim_vars[d]) {
        const Dim *dim = &st->dims[d];
        IterVar *v = sch_new_var(st, dim->name, dim->hi - dim->lo + 1);
        v->lo = dim->lo;
        v->size_dim = d + 1;
        st->dim_vars[d] = v;
    }
    return st->dim_vars[d];
}

Expr *sch_size_expr(SchedState *st, const SizeExpr *e)
{
    Arena *a = st->arena;
    if (e->kind == SZ_NUM)
        return sch_int(a, e->value);
    if (e->kind == SZ_DIM && st->dims[e->dim].lo == st->dims[e->dim].hi)
        return sch_int(a, st->dims[e->dim].lo); /* fixed in this variant */
    if (e->kind == SZ_DIM)
        return ex_var(a, no_span, sch_dim_var(st, e->dim));
    Expr *x = sch_size_expr(st, e->a), *y = sch_size_expr(st, e->b);
    Expr *args[2] = { x, y };
    switch (e->kind) {
    case SZ_ADD: return sch_add(a, x, y);
    case SZ_SUB: return sch_sub(a, x, y);
    case SZ_MUL: return sch_mul(a, x, y);
    case SZ_MIN: return sch_min(a, x, y);
    case SZ_MAX: return sch_max(a, x, y);
    case SZ_DIV: return sch_simplify(a, ex_op(a, no_span, OP_DIV, DT_I32, args, 2));
    case SZ_MOD: return sch_simplify(a, ex_op(a, no_span, OP_MOD, DT_I32, args, 2));
    default: TE_UNREACHABLE();
    }
}

Expr *sch_extent_expr(SchedState *st, const IterVar *v)
{
    return v->extent_size ? sch_size_expr(st, v->extent_size) : sch_int(st->arena, v->extent);
}

Expr *sch_shape_expr(SchedState *st, const Tensor *t, int d)
{
    return t->shape_size[d] ? sch_size_expr(st, t->shape_size[d]) : sch_int(st->arena, t->shape[d]);
}

bool sch_has_runtime_dims(const Graph *g)
{
    for (int i = 0; i < g->ndims; i++)
        if (g->dims[i].runtime)
            return true;
    return false;
}

Subst sch_subst1(Arena *a, IterVar *var, Expr *value)
{
    IterVar **vars = arena_alloc(a, sizeof *vars);
    Expr **values = arena_alloc(a, sizeof *values);
    vars[0] = var;
    values[0] = value;
    return (Subst){ vars, values, 1 };
}

Subst sch_stage_subst(Arena *a, const SStage *s)
{
    int n = s->nsvars + s->nrvars;
    IterVar **vars = arena_alloc(a, sizeof *vars * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        vars[i] = i < s->nsvars ? s->svars[i] : s->rvars[i - s->nsvars];
    return (Subst){ vars, s->value_of, n };
}

Expr *sch_subst(Arena *a, Expr *e, Subst sub)
{
    if (e->kind == EX_VAR)
        for (int i = 0; i < sub.n; i++)
            if (sub.vars[i] == e->var && sub.values[i])
                return sub.values[i];
    if (e->nargs == 0)
        return e;
    Expr **args = NULL;
    for (int i = 0; i < e->nargs; i++) {
        Expr *s = sch_subst(a, e->args[i], sub);
        if (s != e->args[i] && !args) {
            args = arena_alloc(a, sizeof *args * (size_t)e->nargs);
            memcpy(args, e->args, sizeof *args * (size_t)i);
        }
        if (args)
            args[i] = s;
    }
    if (!args)
        return e;
    Expr *c = arena_alloc(a, sizeof *c);
    *c = *e;
    c->args = args;
    return c;
}

bool sch_tensor_named(const Tensor *t, const char *name)
{
    if (strcmp(t->name, name) == 0)
        return true;
    for (int i = 0; i < t->naliases; i++)
        if (strcmp(t->aliases[i], name) == 0)
            return true;
    return false;
}

bool sch_stage_named(const SStage *s, const char *name)
{
    return sch_tensor_named(s->tensor, name); /* a stage is named as its tensor */
}

PassId sch_merged_by(const Tensor *t, const char *name)
{
    if (strcmp(t->name, name) == 0)
        return PASS_COUNT;
    for (int i = 0; i < t->naliases; i++)
        if (strcmp(t->aliases[i], name) == 0)
            return (PassId)t->alias_pass[i];
    return PASS_COUNT;
}

const char *sch_stage_label(Arena *a, const Tensor *t, const char *name)
{
    if (strcmp(t->name, name) == 0)
        return arena_printf(a, "'%s'", name);
    switch (sch_merged_by(t, name)) {
    case PASS_fuse:
        return arena_printf(a, "'%s' (fused into '%s')", name, t->name);
    case PASS_simplify:
        return arena_printf(a, "'%s' (fused with its scale into '%s')", name, t->name);
    case PASS_cse:
        return arena_printf(a, "'%s' (merged into '%s', which computes the same)", name, t->name);
    case PASS_dce:
        return arena_printf(a, "'%s' (merged into '%s': one is an identity of the other)", name,
                            t->name);
    default:
        return arena_printf(a, "'%s' (merged into '%s')", name, t->name);
    }
}

const char *sch_merge_clause(Arena *a, const Tensor *t, const char *name)
{
    switch (sch_merged_by(t, name)) {
    case PASS_fuse:
        return arena_printf(a, "'%s' is fused into '%s'", name, t->name);
    case PASS_simplify:
        return arena_printf(a, "'%s' is fused with its scale into '%s'", name, t->name);
    case PASS_cse:
        return arena_printf(a, "'%s' computes the same as '%s' and is merged into it", name,
                            t->name);
    case PASS_dce:
        return arena_printf(a, "'%s' is merged into '%s' (one is an identity of the other)",
                            name, t->name);
    case PASS_COUNT:
        return arena_printf(a, "'%s' is '%s'", name, t->name);
    default:
        return arena_printf(a, "'%s' is merged into '%s' by %s", name, t->name,
                            te_pass_description(sch_merged_by(t, name)));
    }
}

bool sch_inline_refused(Arena *a, const Source *src, const SchedStmt *stmt, const Tensor *t)
{
    const char *w = stmt->stage;
    bool is_anchor = t->anchor && strcmp(t->anchor, w) == 0;
    PassId by = sch_merged_by(t, w);
    if (by == PASS_fuse && !is_anchor) {
        /* fusion's rule 1 is inlining */
        diag_error(src, stmt->stage_span,
                   "cannot inline '%s': fusion has substituted it into '%s' already; remove this statement, or use -fno-fuse",
                   w, t->name);
    } else if (is_anchor) {
        diag_error(src, stmt->stage_span, "cannot inline %s: it is a reduction; use compute_at",
                   sch_stage_label(a, t, w));
    } else if (t->is_output && by != PASS_COUNT) {
        diag_error(src, stmt->stage_span, "cannot inline '%s': %s, an output; use -fno-%s", w,
                   sch_merge_clause(a, t, w), te_pass_name(by));
    } else if (t->is_output) {
        diag_error(src, stmt->stage_span, "cannot inline '%s': it is an output", w);
    } else if (t->anchor) {
        diag_error(src, stmt->stage_span,
                   "cannot inline %s: %s, and a reduction cannot be inlined; use -fno-%s",
                   sch_stage_label(a, t, w), sch_merge_clause(a, t, t->anchor),
                   te_pass_name(sch_merged_by(t, t->anchor)));
    } else {
        return false;
    }
    return true;
}

/* Each key once; a second stage under a key already taken (a hoisted
 * y_r0 beside a stage the user called y_r0) makes the lookups scan, so
 * that they find the first in st->stages as they always have. */
static void index_key(SchedState *st, PtrMap *m, const void *key, bool string, int at)
{
    if ((string ? strmap_get(m, key) : map_get(m, key)) >= 0)
        st->index_clash = true;
    else if (string)
        strmap_set(st->arena, m, key, at);
    else
        map_put(st->arena, m, key, at);
}

void sch_index_stage(SchedState *st, SStage *s)
{
    int at = st->indexed.len;
    vec_push(st->arena, &st->indexed, s);
    index_key(st, &st->by_name, s->name, true, at);
    if (strcmp(s->tensor->name, s->name) != 0)
        index_key(st, &st->by_alias, s->tensor->name, true, at);
    for (int i = 0; i < s->tensor->naliases; i++)
        index_key(st, &st->by_alias, s->tensor->aliases[i], true, at);
    index_key(st, &st->by_tensor, s->tensor, false, at);
}

SStage *sch_stage_of(const SchedState *st, const Tensor *t)
{
    if (!st->index_clash) {
        int at = map_get(&st->by_tensor, t);
        return at >= 0 ? st->indexed.items[at] : NULL;
    }
    for (int i = 0; i < st->stages.len; i++) {
        SStage *s = st->stages.items[i];
        if (s->tensor == t)
            return s;
    }
    return NULL;
}

SStage *sch_find_stage(SchedState *st, const char *name)
{
    if (!st->index_clash) {
        int at = strmap_get(&st->by_name, name);
        if (at < 0)
            at = strmap_get(&st->by_alias, name);
        return at >= 0 ? st->indexed.items[at] : NULL;
    }
    for (int i = 0; i < st->stages.len; i++) {
        SStage *s = st->stages.items[i];
        if (strcmp(s->name, name) == 0)
            return s;
    }
    for (int i = 0; i < st->stages.len; i++) {
        SStage *s = st->stages.items[i];
        if (sch_stage_named(s, name))
            return s;
    }
    return NULL;
}

Loop *sch_find_loop(SStage *s, const char *name)
{
    for (int i = 0; i < s->loops.len; i++) {
        Loop *l = s->loops.items[i];
        if (strcmp(l->name, name) == 0)
            return l;
    }
    return NULL;
}

int sch_loop_index(SStage *s, const Loop *l)
{
    for (int i = 0; i < s->loops.len; i++)
        if (s->loops.items[i] == l)
            return i;
    return -1;
}

/* Gives S one loop per variable and value_of for each. */
static void init_loops(SchedState *st, SStage *s)
{
    s->value_of = arena_alloc(st->arena, sizeof *s->value_of * (size_t)(s->nsvars + s->nrvars + 1));
    for (int pass = 0; pass < 2; pass++) {
        IterVar **vars = pass == 0 ? s->svars : s->rvars;
        int n = pass == 0 ? s->nsvars : s->nrvars;
        for (int i = 0; i < n; i++) {
            Loop *l = arena_alloc(st->arena, sizeof *l);
            l->name = vars[i]->name;
            l->var = sch_new_var_size(st, vars[i]->name, vars[i]->extent, vars[i]->extent_size);
            l->reduce = pass == 1;
            vec_push(st->arena, &s->loops, l);
            Expr *v = ex_var(st->arena, no_span, l->var);
            s->value_of[pass * s->nsvars + i] =
                vars[i]->lo ? sch_add(st->arena, v, sch_int(st->arena, vars[i]->lo)) : v;
        }
    }
}

/* The one reduction in E outside lazy branches (select's, && and ||'s
 * right side) and other reductions, if E has exactly one and no other. */
static int count_reductions(Expr *e, Expr **found, bool lazy)
{
    if (e->kind == EX_REDUCE) {
        *found = lazy ? NULL : e;
        return lazy ? 2 : 1 + count_reductions(e->args[0], found, true) * 2;
    }
    int n = 0;
    for (int i = 0; i < e->nargs; i++) {
        bool l = lazy || (e->kind == EX_OP && (e->op == OP_SELECT || e->op == OP_AND ||
                                               e->op == OP_OR) && i > 0);
        n += count_reductions(e->args[i], found, l);
    }
    return n;
}

/* E with the reduction R replaced by SELF (the reduced value). */
static Expr *replace_reduction(Arena *a, Expr *e, const Expr *r, Expr *self)
{
    if (e == r)
        return self;
    if (e->nargs == 0)
        return e;
    Expr *c = arena_alloc(a, sizeof *c);
    *c = *e;
    c->args = arena_alloc(a, sizeof *c->args * (size_t)e->nargs);
    for (int i = 0; i < e->nargs; i++)
        c->args[i] = replace_reduction(a, e->args[i], r, self);
    return c;
}

static SStage *add_stage(SchedState *st, Tensor *t, Expr *body)
{
    SStage *s = arena_alloc(st->arena, sizeof *s);
    s->name = t->name;
    s->tensor = t;
    s->svars = t->vars;
    s->nsvars = t->rank;
    Expr *r = NULL;
    if (body->kind != EX_REDUCE && count_reductions(body, &r, false) == 1 && r) {
        /* a fused kernel: a reduction under an epilogue */
        Expr **idx = arena_alloc(st->arena, sizeof *idx * (size_t)(t->rank + 1));
        for (int d = 0; d < t->rank; d++)
            idx[d] = ex_var(st->arena, no_span, t->vars[d]);
        Expr *self = ex_load(st->arena, no_span, t, idx, t->rank);
        self->dtype = r->dtype;
        s->epilogue = replace_reduction(st->arena, body, r, self);
        body = r;
    }
    if (body->kind == EX_REDUCE) {
        s->is_reduce = true;
        s->reducer = body->reducer;
        s->rvars = body->axes;
        s->nrvars = body->naxes;
        s->value = body->args[0];
    } else {
        s->value = body;
    }
    return s;
}

typedef struct Hoist {
    SchedState *st;
    const char *owner; /* the stage the reductions are hoisted from */
    int count;
    IterVar *scope[TE_MAX_RANK * 4]; /* variables in scope, outermost first */
    int nscope;
} Hoist;

static void add_state_stage(SchedState *st, SStage *s);

/* Replaces every reduction in E (except a top-level one, when TOP) by a
 * load of a new stage computing it. */
static Expr *hoist(Hoist *h, Expr *e, bool top)
{
    SchedState *st = h->st;
    if (e->kind == EX_REDUCE && !top) {
        /* The new stage is indexed by every variable in scope. */
        Tensor *t = arena_alloc(st->arena, sizeof *t);
        t->name = arena_printf(st->arena, "%s_r%d", h->owner, h->count++);
        t->kind = TK_STAGE;
        t->dtype = e->dtype;
        t->rank = h->nscope;
        t->vars = arena_alloc(st->arena, sizeof *t->vars * (size_t)(h->nscope + 1));
        Expr **map = arena_alloc(st->arena, sizeof *map * (size_t)(h->nscope + 1));
        Expr **idx = arena_alloc(st->arena, sizeof *idx * (size_t)(h->nscope + 1));
        for (int i = 0; i < h->nscope; i++) {
            IterVar *old = h->scope[i];
            IterVar *nv = sch_new_var(st, old->name, old->extent);
            t->shape[i] = old->lo + old->extent;
            nv->extent = old->lo + old->extent;
            if (old->extent_size) {
                Arena *a = st->arena;
                t->shape_size[i] = te_size_simplify(
                    a, te_size_op(a, SZ_ADD, old->extent_size, te_size_num(a, old->lo)));
                nv->extent_size = t->shape_size[i];
            }
            t->vars[i] = nv;
            map[i] = ex_var(st->arena, no_span, nv);
            idx[i] = ex_var(st->arena, e->span, old);
        }
        Expr *body = sch_subst(st->arena, e, (Subst){ h->scope, map, h->nscope });
        Hoist inner = { st, t->name, 0, {0}, 0 };
        for (int i = 0; i < h->nscope; i++)
            inner.scope[inner.nscope++] = t->vars[i];
        body = hoist(&inner, body, true);
        t->body = body;
        add_state_stage(st, add_stage(st, t, body));
        return ex_load(st->arena, e->span, t, idx, h->nscope);
    }
    int saved = h->nscope;
    if (e->kind == EX_REDUCE)
        for (int i = 0; i < e->naxes && h->nscope < (int)(sizeof h->scope / sizeof h->scope[0]); i++)
            h->scope[h->nscope++] = e->axes[i];
    Expr **args = NULL;
    for (int i = 0; i < e->nargs; i++) {
        Expr *a = hoist(h, e->args[i], false);
        if (a != e->args[i] && !args) {
            args = arena_alloc(st->arena, sizeof *args * (size_t)e->nargs);
            memcpy(args, e->args, sizeof *args * (size_t)e->nargs);
        }
        if (args)
            args[i] = a;
    }
    h->nscope = saved;
    if (!args)
        return e;
    Expr *c = arena_alloc(st->arena, sizeof *c);
    *c = *e;
    c->args = args;
    return c;
}

static void add_state_stage(SchedState *st, SStage *s)
{
    init_loops(st, s);
    vec_push(st->arena, &st->stages, s);
    sch_index_stage(st, s);
}

SchedState *sch_state_new(Arena *a, Graph *g, Target target)
{
    return sch_state_new_bucket(a, g, target, NULL);
}

SchedState *sch_state_new_bucket(Arena *a, Graph *g, Target target, const Bucket *bucket)
{
    SchedState *st = arena_alloc(a, sizeof *st);
    st->arena = a;
    st->g = g;
    st->target = target;
    st->next_var = g->nvars;
    st->bucket = bucket;
    st->dims = g->dims;
    if (bucket) {
        st->dims = arena_alloc(a, sizeof *st->dims * (size_t)(g->ndims + 1));
        for (int d = 0; d < g->ndims; d++) {
            st->dims[d] = g->dims[d];
            if (g->dims[d].runtime && g->dims[d].declared) {
                st->dims[d].lo = bucket->lo[d];
                st->dims[d].hi = bucket->hi[d];
                st->dims[d].hint = bucket->hint[d];
            }
        }
        /* a computed dim's range and hint follow from the narrowed ones */
        for (int d = 0; d < g->ndims; d++) {
            Dim *dim = &st->dims[d];
            if (dim->runtime && !dim->declared && dim->size) {
                int64_t lo, hi;
                if (te_size_range(dim->size, st->dims, &lo, &hi)) {
                    dim->lo = lo > dim->lo ? lo : dim->lo;
                    dim->hi = hi < dim->hi ? hi : dim->hi;
                }
            }
        }
    }
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (t->kind != TK_STAGE)
            continue;
        Hoist h = { st, t->name, 0, {0}, 0 };
        for (int d = 0; d < t->rank; d++)
            h.scope[h.nscope++] = t->vars[d];
        Expr *r = NULL;
        /* a reduction under an epilogue stays (add_stage splits it);
         * reductions inside it and any others are hoisted */
        Expr *body = t->body;
        if (body->kind != EX_REDUCE && count_reductions(body, &r, false) == 1 && r) {
            Expr *inner = hoist(&h, r, true);
            body = replace_reduction(st->arena, body, r, inner);
        } else {
            body = hoist(&h, body, true);
        }
        add_state_stage(st, add_stage(st, t, body));
    }
    return st;
}

/* peel.c — index-set splitting: the edge tile out of the hot loop.
 *
 * requires: a CPU loop nest as sched/lower.c lowers it.
 * guarantees: the same stores, each loop's iterations in the same order;
 * where a serial loop L from 0 holds in its body extents (or any other
 * integer expression) of the form min(C, A - C*L), C a positive constant
 * and A an expression of what is defined around L, L's range is split in
 * two:
 *     for L in [0, A / C):            body, each such min replaced by C
 *     for L in [A / C, end):          body as it was
 * In the first loop A - C*L >= C (L <= A/C - 1, A >= 0), so the min is C:
 * the inner loops have constant extents and codegen/c.c writes their
 * unrolled and vectorized forms with no test of the edge.  The second is
 * the edge tile, at most one iteration; where its bounds are constants
 * its body has L's value in place of L, so that its mins fold too.  Where
 * they are not (a run-time size), the edge's extent A - C*L is one of
 * 1 .. C-1, and the edge tile is a copy of the body for each:
 *     if (A - C*L == v)   body, each such min replaced by v
 * so that an edge of 7 rows runs a 7-row micro-kernel with no test of the
 * edge in its reduction loop, as a static size's edge tile does (C - 1
 * copies: only for tiles of at most PEEL_EDGE_MAX_TILE and bodies small
 * enough, PEEL_EDGE_MAX_STMTS in all; otherwise the body as it was).  Where
 * the full tiles' range is a constant, any other min(K, X) with X linear
 * in L that is K at both of its ends is K in all of it, and is replaced
 * too (a stage computed at L over its tile and a halo: min(5, 11 - io*4)).
 *
 * lower.c makes such mins where a split does not divide its extent (a
 * static size no tile divides, or a run-time size): it shortens the
 * innermost loop a guard involves to min(8, M - io*8), and the loops of a
 * stage computed at io over the region io's iteration reads get the same
 * extent (plan_child).  Without this step every full tile pays for the
 * edge tile's tests, inside the reduction loop.
 *
 * A min is recognised by its values at L = 0 and L = 1 (sch_simplify's
 * normal forms, not one tree shape): one operand is a constant C > 0, the
 * other X is A at L = 0, A - C at L = 1, and X - (A - C*L) is 0.
 *
 * Which loops: serial and parallel ones with no pipeline.
 *   - A parallel loop is lifted into a function of a range of its
 *     iterations (codegen/c.c's emit_parallel).  Split in two it would be
 *     two functions and two te_parallel_for calls, the second running the
 *     edge tile on one thread while the others wait; so it stays one loop,
 *     its iterations shared out as before, and its body is split instead:
 *         parallel L in [0, end):
 *             if L < A / C:   body, the mins replaced by C
 *             if L >= A / C:  body as it was
 *   - An unrolled loop is written once per value already, each with its
 *     mins folded to constants; a vectorized loop is innermost (no loops
 *     inside to shorten); a bound one is a GPU index.
 *   - A pipelined loop prefetches the tiles of iteration L + n - 1 up to
 *     its end: split, the main loop would stop prefetching short of the
 *     edge tile.
 * The CUDA target is left alone: codegen/cuda.c builds its kernels, their
 * tiles staged in shared memory and their pipelines for one nest per
 * loop, and its edges are another change's to split.
 *
 * When: the remainder must be provably at most one iteration (its end
 * minus A / C a constant 0 or 1, or the end (A + r) / C with 0 <= r < C,
 * as a split of a run-time size makes it), A provably >= 0 (C's division
 * truncates toward zero), and the main loop nonempty where that is known.
 * Each split copies the body, so nested splits multiply it: at most
 * PEEL_MAX_DEPTH of them inside one another (io inside jo: four copies of
 * the micro-kernel, full tile, two edges and the corner), and none of a
 * body of more than PEEL_MAX_STMTS statements, so that the C stays the
 * size of a few copies of a tile's code.
 */
#include "sched/sched.h"

static const Span no_span = { 0, 0 };

enum {
    PEEL_MAX_DEPTH = 2,   /* splits inside one another */
    PEEL_MAX_STMTS = 256, /* the largest body copied */
    PEEL_EDGE_MAX_TILE = 16,    /* the largest C whose edges get a copy each */
    PEEL_EDGE_MAX_STMTS = 2048, /* the statements of those copies, in all */
};

/* One loop being split. */
typedef struct Peel {
    Arena *a;
    IterVar *var;  /* L */
    int64_t tile;  /* C */
    Expr *rest;    /* A: NULL until an edge is found */
    Expr *last;    /* the full tiles' last L, A / C - 1, when it is a
                      constant (full_at_ends); else NULL */
    Expr *value;   /* the remainder's L, when it is one constant: L's
                      uses are replaced by it instead of the mins */
    int64_t to;    /* what the mins become: C, or an edge's extent */
    int replaced;  /* mins replaced (by TO) */
    IterVar **outer; /* the variables defined around L (A may use them) */
    int nouter;
} Peel;

/* Does E use only variables defined around L: run-time dims and the
 * loops outside it?  (Not L, nor a loop inside its body.) */
static bool defined_around(const Peel *p, const Expr *e)
{
    if (e->kind == EX_VAR) {
        if (e->var->size_dim)
            return true;
        for (int i = 0; i < p->nouter; i++)
            if (p->outer[i] == e->var)
                return true;
        return false;
    }
    for (int i = 0; i < e->nargs; i++)
        if (!defined_around(p, e->args[i]))
            return false;
    return true;
}

static bool is_const(const Expr *e, int64_t want)
{
    int64_t v;
    return sch_const_int(e, &v) && v == want;
}

/* Is E min(C, A - C*L) (either order)?  Sets *TILE to C and *REST to A. */
static bool edge_min(const Peel *p, Expr *e, int64_t *tile, Expr **rest)
{
    if (e->kind != EX_OP || e->op != OP_MIN || e->dtype != DT_I32 || e->nargs != 2)
        return false;
    for (int k = 0; k < 2; k++) {
        int64_t c;
        Expr *x = e->args[1 - k];
        if (!sch_const_int(e->args[k], &c) || c <= 0 || !sch_uses_var(x, p->var))
            continue;
        Expr *at0 = sch_simplify(p->a, sch_subst(p->a, x, sch_subst1(p->a, p->var, sch_int(p->a, 0))));
        Expr *at1 = sch_simplify(p->a, sch_subst(p->a, x, sch_subst1(p->a, p->var, sch_int(p->a, 1))));
        if (!is_const(sch_sub(p->a, at0, at1), c) || !defined_around(p, at0))
            continue;
        /* linear in L: X is A - C*L at every L, not at 0 and 1 alone */
        Expr *line = sch_sub(p->a, at0, sch_mul(p->a, ex_var(p->a, no_span, p->var), sch_int(p->a, c)));
        if (!is_const(sch_sub(p->a, x, line), 0))
            continue;
        *tile = c;
        *rest = at0;
        return true;
    }
    return false;
}

/* Is E the edge P splits on: min(C, A - C*L) with P's C and A? */
static bool same_edge(const Peel *p, Expr *e)
{
    int64_t c;
    Expr *rest;
    return edge_min(p, e, &c, &rest) && c == p->tile && is_const(sch_sub(p->a, rest, p->rest), 0);
}

/* The first edge min in E into P (its tile and rest), if P has none. */
static void find_in_expr(Peel *p, Expr *e)
{
    if (p->rest)
        return;
    if (edge_min(p, e, &p->tile, &p->rest))
        return;
    for (int i = 0; i < e->nargs; i++)
        find_in_expr(p, e->args[i]);
}

static void find_edge(Peel *p, const Stmt *s)
{
    if (!s || p->rest)
        return;
    switch (s->kind) {
    case S_FOR:
        find_in_expr(p, s->min);
        find_in_expr(p, s->extent);
        find_edge(p, s->body);
        break;
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            find_edge(p, s->stmts[i]);
        break;
    case S_STORE:
        for (int d = 0; d < s->buf->rank; d++)
            find_in_expr(p, s->index[d]);
        find_in_expr(p, s->value);
        break;
    case S_IF:
        find_in_expr(p, s->cond);
        find_edge(p, s->body);
        break;
    case S_ALLOC:
        find_edge(p, s->body);
        break;
    case S_FLASH: /* its batch loops are whole: no edges */
        break;
    }
}

/* Is E min(K, X) with K a constant, X linear in L, and X >= K at both
 * ends of the full tiles' range (L = 0 and L = P->last, a constant)?  Then
 * X >= K at every L between, and E is K there: a stage computed at L over
 * its tile and a halo, min(5, 11 - io*4), as well as the edge itself.
 * Sets *K. */
static bool full_at_ends(const Peel *p, Expr *e, int64_t *k)
{
    if (!p->last || e->kind != EX_OP || e->op != OP_MIN || e->dtype != DT_I32 || e->nargs != 2)
        return false;
    for (int i = 0; i < 2; i++) {
        Expr *x = e->args[1 - i];
        if (!sch_const_int(e->args[i], k) || !sch_uses_var(x, p->var))
            continue;
        Expr *at0 = sch_simplify(p->a, sch_subst(p->a, x, sch_subst1(p->a, p->var, sch_int(p->a, 0))));
        Expr *at1 = sch_simplify(p->a, sch_subst(p->a, x, sch_subst1(p->a, p->var, sch_int(p->a, 1))));
        Expr *atn = sch_simplify(p->a, sch_subst(p->a, x, sch_subst1(p->a, p->var, p->last)));
        int64_t slope;
        if (!sch_const_int(sch_sub(p->a, at1, at0), &slope))
            continue;
        Expr *line = sch_add(p->a, at0, sch_mul(p->a, ex_var(p->a, no_span, p->var), sch_int(p->a, slope)));
        if (is_const(sch_sub(p->a, x, line), 0) && is_const(sch_min(p->a, e->args[i], at0), *k) &&
            is_const(sch_min(p->a, e->args[i], atn), *k))
            return true;
    }
    return false;
}

/* E with P's edge mins replaced by C (or, with P->value, L replaced by
 * it).  An integer expression that changed is simplified again where it
 * is an index (INDEX: a bound, a condition, a store's or a load's index);
 * a value's arithmetic is kept as written, since sch_simplify's rewrites
 * are exact in integers but not in the evaluator's saturating i32 or in
 * floats. */
static Expr *rewrite(Peel *p, Expr *e, bool index)
{
    if (p->value && e->kind == EX_VAR && e->var == p->var)
        return p->value;
    int64_t k;
    if (!p->value && same_edge(p, e)) {
        p->replaced++;
        return sch_int(p->a, p->to);
    }
    if (!p->value && full_at_ends(p, e, &k)) {
        p->replaced++;
        return sch_int(p->a, k);
    }
    if (e->nargs == 0)
        return e;
    Expr **args = arena_alloc(p->a, sizeof *args * (size_t)e->nargs);
    bool changed = false;
    for (int i = 0; i < e->nargs; i++) {
        args[i] = rewrite(p, e->args[i], index || e->kind == EX_LOAD);
        changed = changed || args[i] != e->args[i];
    }
    if (!changed)
        return e;
    Expr *c = te_rebuild(p->a, e, args);
    c = index && c->kind == EX_OP && c->dtype == DT_I32 ? sch_simplify(p->a, c) : c;
    /* an edge again, its operand replaced: a region clipped to the
       tensor's end, min(min(C, A - C*L), A - C*L) */
    if (!p->value && same_edge(p, c)) {
        p->replaced++;
        return sch_int(p->a, p->to);
    }
    return c;
}

/* A copy of S rewritten by P (rewrite). */
static Stmt *rewrite_stmt(Peel *p, const Stmt *s)
{
    if (!s)
        return NULL;
    Stmt *c = arena_alloc(p->a, sizeof *c);
    *c = *s;
    switch (s->kind) {
    case S_FOR:
        c->min = rewrite(p, s->min, true);
        c->extent = rewrite(p, s->extent, true);
        c->body = rewrite_stmt(p, s->body);
        break;
    case S_SEQ:
        c->stmts = arena_alloc(p->a, sizeof *c->stmts * (size_t)s->n);
        for (int i = 0; i < s->n; i++)
            c->stmts[i] = rewrite_stmt(p, s->stmts[i]);
        break;
    case S_STORE:
        c->index = arena_alloc(p->a, sizeof *c->index * (size_t)(s->buf->rank + 1));
        for (int d = 0; d < s->buf->rank; d++)
            c->index[d] = rewrite(p, s->index[d], true);
        c->value = rewrite(p, s->value, false);
        break;
    case S_IF:
        c->cond = rewrite(p, s->cond, true);
        c->body = rewrite_stmt(p, s->body);
        break;
    case S_ALLOC:
        c->body = rewrite_stmt(p, s->body);
        break;
    case S_FLASH: {
        SchFlash *f = arena_alloc(p->a, sizeof *f);
        *f = *s->flash;
        f->batch_at = arena_alloc(p->a, sizeof *f->batch_at * (size_t)(f->nbatch + 1));
        for (int d = 0; d < f->nbatch; d++)
            f->batch_at[d] = rewrite(p, s->flash->batch_at[d], true);
        f->q = rewrite(p, s->flash->q, false);
        f->k = rewrite(p, s->flash->k, false);
        f->v = rewrite(p, s->flash->v, false);
        c->flash = f;
        break;
    }
    }
    return c;
}

Stmt *sch_stmt_subst(Arena *a, const Stmt *s, IterVar *var, Expr *value)
{
    Peel p = { .a = a, .var = var, .value = value };
    return rewrite_stmt(&p, s);
}

/* The statements in S, counting up to LIMIT + 1 at most. */
static int stmt_count(const Stmt *s, int limit)
{
    if (!s)
        return 0;
    int n = 1;
    switch (s->kind) {
    case S_SEQ:
        for (int i = 0; i < s->n && n <= limit; i++)
            n += stmt_count(s->stmts[i], limit - n);
        break;
    case S_FOR:
    case S_IF:
    case S_ALLOC:
        n += stmt_count(s->body, limit - 1);
        break;
    case S_STORE:
    case S_FLASH:
        break;
    }
    return n;
}

/* Is E provably >= 0 over its variables' ranges? */
static bool non_negative(Arena *a, Expr *e)
{
    return is_const(sch_sub(a, sch_max(a, e, sch_int(a, 0)), e), 0);
}

/* The iterations of a loop of extent END left after SPLIT = A / C, when
 * they are provably 0 or 1: *TRIP the constant, or -1 for "0 or 1" (END
 * is (A + r) / C, 0 <= r < C: a split of a run-time size).  False where
 * they are not known to be. */
static bool remainder_trip(Arena *a, Expr *end, Expr *split, Expr *rest, int64_t tile, int64_t *trip)
{
    if (sch_const_int(sch_sub(a, end, split), trip))
        return *trip >= 0 && *trip <= 1;
    int64_t r;
    *trip = -1;
    return end->kind == EX_OP && end->op == OP_DIV && is_const(end->args[1], tile) &&
           sch_const_int(sch_sub(a, end->args[0], rest), &r) && r >= 0 && r < tile;
}

typedef struct Walk {
    Arena *a;
    PtrVec outer; /* IterVar *: the loops around the statement walked */
} Walk;

static Stmt *peel_stmt(Walk *w, Stmt *s, int depth);

/* S's body, walked inside S. */
static Stmt *peel_body(Walk *w, Stmt *s, int depth)
{
    vec_push(w->a, &w->outer, s->loop->var);
    s->body = peel_stmt(w, s->body, depth);
    w->outer.len--;
    return s;
}

static Stmt *seq2(Arena *a, Stmt *x, Stmt *y)
{
    Stmt *s = arena_alloc(a, sizeof *s);
    s->kind = S_SEQ;
    s->stmts = arena_alloc(a, sizeof *s->stmts * 2);
    s->stmts[0] = x;
    s->stmts[1] = y;
    s->n = 2;
    return s;
}

/* "if (X OP Y) BODY" */
static Stmt *if_cmp(Arena *a, Op op, Expr *x, Expr *y, Stmt *body)
{
    Expr *args[2] = { x, y };
    Stmt *s = arena_alloc(a, sizeof *s);
    s->kind = S_IF;
    s->cond = ex_op(a, no_span, op, DT_BOOL, args, 2);
    s->body = body;
    return s;
}

/* The edge tile of a run-time size: for each extent v in 1 .. C-1 the
 * edge can have, "if (A - C*L == v) BODY, P's mins replaced by v", or
 * NULL where the copies would be too many or too large. */
static Stmt *edge_cases(Peel *p, const Stmt *body)
{
    Arena *a = p->a;
    if (p->tile > PEEL_EDGE_MAX_TILE ||
        (p->tile - 1) * stmt_count(body, PEEL_EDGE_MAX_STMTS) > PEEL_EDGE_MAX_STMTS)
        return NULL;
    Expr *extent = sch_simplify(
        a, sch_sub(a, p->rest, sch_mul(a, ex_var(a, no_span, p->var), sch_int(a, p->tile))));
    Peel q = *p;
    q.last = NULL; /* full_at_ends is the full tiles' (and P->value is NULL here) */
    Stmt *out = NULL;
    for (int64_t v = p->tile - 1; v >= 1; v--) {
        q.to = v;
        Stmt *c = if_cmp(a, OP_EQ, extent, sch_int(a, v), rewrite_stmt(&q, body));
        out = out ? seq2(a, c, out) : c;
    }
    return out;
}

/* Loop S split at its edge (see the top of the file), or NULL where it
 * has none to split at. */
static Stmt *split_loop(Walk *w, Stmt *s, int depth)
{
    Arena *a = w->a;
    Loop *l = s->loop;
    if ((l->kind != LOOP_SERIAL && l->kind != LOOP_PARALLEL) || l->pipeline >= 2 ||
        depth >= PEEL_MAX_DEPTH || !is_const(s->min, 0) ||
        stmt_count(s->body, PEEL_MAX_STMTS) > PEEL_MAX_STMTS)
        return NULL;
    Peel p = { .a = a, .var = l->var, .outer = (IterVar **)w->outer.items, .nouter = w->outer.len };
    find_edge(&p, s->body);
    if (!p.rest || !non_negative(a, p.rest))
        return NULL;
    Expr *div_args[2] = { p.rest, sch_int(a, p.tile) };
    Expr *split = sch_simplify(a, ex_op(a, no_span, OP_DIV, DT_I32, div_args, 2));
    int64_t trip, at;
    bool constant = sch_const_int(split, &at);
    if (!remainder_trip(a, s->extent, split, p.rest, p.tile, &trip) || (constant && at <= 0))
        return NULL;
    /* the full tiles' body */
    if (constant)
        p.last = sch_int(a, at - 1);
    p.to = p.tile;
    Stmt *full = rewrite_stmt(&p, s->body);
    TE_ASSERT(p.replaced > 0); /* rewrite visits what find_edge did */
    /* the edge tile's: L's one value in place of L where it is a constant */
    Stmt *edge = s->body;
    if (trip == 1 && constant) {
        p.value = split;
        edge = rewrite_stmt(&p, s->body);
    } else if (trip == -1) {
        Stmt *cases = edge_cases(&p, s->body);
        if (cases)
            edge = cases;
    }
    Stmt *out = arena_alloc(a, sizeof *out);
    *out = *s;
    if (trip == 0) {
        /* no edge after all: the loop is its full tiles */
        out->body = full;
        return peel_body(w, out, depth + 1);
    }
    if (l->kind == LOOP_PARALLEL) {
        /* one loop, so one function of its iterations (emit_parallel) and
         * the threads' shares as they were; its body chooses */
        Expr *v = ex_var(a, no_span, l->var);
        out->body = seq2(a, if_cmp(a, OP_LT, v, split, full), if_cmp(a, OP_GE, v, split, edge));
        return peel_body(w, out, depth + 1);
    }
    out->extent = split;
    out->body = full;
    Stmt *rest = arena_alloc(a, sizeof *rest);
    *rest = *s;
    rest->min = split;
    rest->extent = sch_sub(a, s->extent, split);
    rest->body = edge;
    return seq2(a, peel_body(w, out, depth + 1), peel_body(w, rest, depth + 1));
}

void sch_each_in_seq(Arena *a, Stmt *s, Stmt *(*fn)(Stmt *item, void *ctx), void *ctx)
{
    PtrVec stack = { 0 }; /* Stmt **: the slots still to visit, the next on top */
    for (int i = s->n - 1; i >= 0; i--)
        vec_push(a, &stack, &s->stmts[i]);
    while (stack.len) {
        Stmt **slot = stack.items[--stack.len];
        Stmt *q = *slot;
        if (q && q->kind == S_SEQ) {
            for (int i = q->n - 1; i >= 0; i--)
                vec_push(a, &stack, &q->stmts[i]);
        } else {
            *slot = fn(q, ctx);
        }
    }
}

/* peel_stmt at a walk's point, for sch_each_in_seq */
typedef struct PeelAt {
    Walk *w;
    int depth;
} PeelAt;

static Stmt *peel_item(Stmt *s, void *ctx)
{
    PeelAt *at = ctx;
    return peel_stmt(at->w, s, at->depth);
}

/* S with its loops split at their edges, DEPTH splits around it. */
static Stmt *peel_stmt(Walk *w, Stmt *s, int depth)
{
    if (!s)
        return NULL;
    switch (s->kind) {
    case S_FOR: {
        Stmt *split = split_loop(w, s, depth);
        return split ? split : peel_body(w, s, depth);
    }
    case S_SEQ: {
        PeelAt at = { w, depth };
        sch_each_in_seq(w->a, s, peel_item, &at);
        return s;
    }
    case S_IF:
    case S_ALLOC:
        s->body = peel_stmt(w, s->body, depth);
        return s;
    case S_STORE:
    case S_FLASH:
        return s;
    }
    TE_UNREACHABLE();
}

Stmt *sch_peel(SchedState *st, Stmt *body)
{
    if (st->target != TARGET_CPU)
        return body;
    Walk w = { .a = st->arena };
    return peel_stmt(&w, body, 0);
}

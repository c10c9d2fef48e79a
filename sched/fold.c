/* fold.c — a panel's copy folded into the first pass that reads it.
 *
 * requires: a CPU loop nest as sched/lower.c lowers it and sched/peel.c
 * splits it.
 * guarantees: the same stores of every tensor but the copy P, and P's
 * element [k, ..] stored before anything reads it, with the same value.
 *
 * The default micro-kernel on weights read where they are copies each
 * column panel of W (K x TJ) once per column block (default.c,
 * panel_to_copy), then runs its row tiles over the copy:
 *     for ax0 in [0, K):    P[ax0][..] = W[ax0][jo * TJ + ..]       (C)
 *     for io in [0, n):                                             (L)
 *         ... for k in [0, K): acc += x[io * TI + i][k] * P[k][..]  (R)
 * The copy alone is a pass over K rows of W a whole row apart (12 KiB at
 * N = 3072): each row a page of its own, which the hardware prefetchers
 * do not cross, and no arithmetic to hide the loads behind.  Measured on
 * matmul_gelu's plain entry at 64x768x3072 (1 thread, bench/results.md's
 * machine), the copies took about a fifth of the call.  Folded, the first
 * row tile copies row k of the panel as it reads it:
 *     io = 0:               ... for k in [0, K): { P[k][..] = W[k][..] (C's body at k);
 *                                                  acc += x[i][k] * P[k][..] }
 *     for io in [1, n):     L's body, as before
 * so the copy's loads overlap the tile's multiply-adds, and R's
 * prefetch(k, n) (codegen/c.c: the vector loads of its body that move
 * with k) now fetches W's rows n steps ahead too.  The first row tile's
 * loads of P[k] read what the same iteration has just stored.
 *
 * When (anything else is left as it was):
 *   - C is a serial loop from a constant, of constant extent, whose body
 *     stores only one tensor P, each store at [ax0, ..] (ax0 C's variable
 *     itself), and reads nothing of P;
 *   - the statement after C is a serial loop L with constant bounds and at
 *     least one iteration (so that the copy still happens: a run-time
 *     extent might be 0, and an edge loop after L would read P);
 *   - in L's body, reached through sequences and allocations only (so run
 *     once an iteration), the first loop R that reads P is serial, over
 *     C's range, and reads P only at [k, ..] (k R's variable itself);
 *     nothing else in L's body reads P, and nothing in it stores P.
 * Then every element C stores at ax0 = k is stored by R's iteration k
 * before R's body reads it, and R's iterations cover C's range: P ends as
 * C left it, for L's later iterations.
 */
#include "sched/sched.h"

/* Do all the loads of P in E read it at [AT, ..]?  (AT NULL: are there
 * none?) */
static bool loads_at(const Expr *e, const Tensor *p, const IterVar *at)
{
    if (e->kind == EX_LOAD && e->tensor == p &&
        (!at || e->nargs == 0 || e->args[0]->kind != EX_VAR || e->args[0]->var != at))
        return false;
    for (int i = 0; i < e->nargs; i++)
        if (!loads_at(e->args[i], p, at))
            return false;
    return true;
}

/* loads_at for every expression of S; and, unless STORES, S stores
 * nothing of P.  (A fused attention, S_FLASH, is not looked into:
 * false.) */
static bool stmt_reads_at(const Stmt *s, const Tensor *p, const IterVar *at, bool stores)
{
    if (!s)
        return true;
    switch (s->kind) {
    case S_FOR:
        return loads_at(s->min, p, at) && loads_at(s->extent, p, at) && stmt_reads_at(s->body, p, at, stores);
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            if (!stmt_reads_at(s->stmts[i], p, at, stores))
                return false;
        return true;
    case S_STORE:
        if ((s->buf == p && !stores) || !loads_at(s->value, p, at))
            return false;
        for (int d = 0; d < s->buf->rank; d++)
            if (!loads_at(s->index[d], p, at))
                return false;
        return true;
    case S_IF:
        return loads_at(s->cond, p, at) && stmt_reads_at(s->body, p, at, stores);
    case S_ALLOC:
        return stmt_reads_at(s->body, p, at, stores);
    case S_FLASH:
        return false;
    }
    TE_UNREACHABLE();
}

/* Does S store nothing of P and read it only at [AT, ..] (AT NULL: not
 * at all)? */
static bool reads_only_at(const Stmt *s, const Tensor *p, const IterVar *at)
{
    return stmt_reads_at(s, p, at, false);
}

bool sch_any_store(const Stmt *s, bool (*pred)(const Stmt *store, const void *ctx), const void *ctx)
{
    if (!s)
        return false;
    switch (s->kind) {
    case S_FOR:
    case S_IF:
    case S_ALLOC:
        return sch_any_store(s->body, pred, ctx);
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            if (sch_any_store(s->stmts[i], pred, ctx))
                return true;
        return false;
    case S_STORE:
    case S_FLASH:
        return pred(s, ctx);
    }
    TE_UNREACHABLE();
}

/* For sch_any_store: does STORE write a tensor that the copy loop C reads
 * (or, a fused attention, anything)?  The copy's loads, done later once
 * folded, must see what they saw before. */
static bool read_by_copy(const Stmt *store, const void *c)
{
    return store->kind == S_FLASH || !reads_only_at(c, store->buf, NULL);
}

/* Does S store one tensor only, each store at [V, ..] (V itself)?  *P
 * is that tensor (NULL on the first call, and while S stores nothing). */
static bool stores_at(const Stmt *s, const IterVar *v, Tensor **p)
{
    if (!s)
        return true;
    switch (s->kind) {
    case S_FOR:
        return stores_at(s->body, v, p);
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            if (!stores_at(s->stmts[i], v, p))
                return false;
        return true;
    case S_STORE:
        if ((*p && s->buf != *p) || s->buf->rank < 1 || s->index[0]->kind != EX_VAR ||
            s->index[0]->var != v)
            return false;
        *p = s->buf;
        return true;
    case S_IF:
        return stores_at(s->body, v, p);
    case S_ALLOC:
    case S_FLASH:
        return false;
    }
    TE_UNREACHABLE();
}

static bool const_bounds(const Stmt *s, int64_t *min, int64_t *extent)
{
    return sch_const_int(s->min, min) && sch_const_int(s->extent, extent);
}

/* The copy loop C's tensor, when C is one (the top of the file; its
 * bounds are fold_pair's to check). */
static Tensor *copy_of(const Stmt *c)
{
    Tensor *p = NULL;
    if (c->kind != S_FOR || c->loop->kind != LOOP_SERIAL || !stores_at(c->body, c->loop->var, &p) ||
        !p || !stmt_reads_at(c->body, p, NULL, true))
        return NULL;
    return p;
}

/* The slot of the loop R in S (L's body) that reads P, reached through
 * sequences and allocations; NULL where there is none, or where something
 * else in S reads P (*BAD). */
static Stmt **reader_slot(Stmt **slot, const Tensor *p, bool *bad)
{
    Stmt *s = *slot;
    if (!s || *bad)
        return NULL;
    switch (s->kind) {
    case S_SEQ:
        for (int i = 0; i < s->n; i++) {
            Stmt **r = reader_slot(&s->stmts[i], p, bad);
            if (r || *bad) {
                /* the statements after R must not read P either */
                for (int j = i + 1; j < s->n && r && !*bad; j++)
                    *bad = !reads_only_at(s->stmts[j], p, NULL);
                return *bad ? NULL : r;
            }
        }
        return NULL;
    case S_ALLOC:
        return reader_slot(&s->body, p, bad);
    case S_FOR:
        if (reads_only_at(s, p, NULL))
            return NULL;
        /* (its bounds: constants, fold_pair checks) */
        if (s->loop->kind == LOOP_SERIAL && reads_only_at(s->body, p, s->loop->var))
            return slot;
        *bad = true;
        return NULL;
    case S_STORE:
    case S_IF:
    case S_FLASH:
        *bad = !reads_only_at(s, p, NULL);
        return NULL;
    }
    TE_UNREACHABLE();
}

/* A copy of S in which the statement at ORIG is REPL instead. */
static Stmt *replaced(Arena *a, const Stmt *s, const Stmt *orig, Stmt *repl)
{
    if (s == orig)
        return repl;
    Stmt *c = arena_alloc(a, sizeof *c);
    *c = *s;
    if (s->kind == S_SEQ) {
        c->stmts = arena_alloc(a, sizeof *c->stmts * (size_t)s->n);
        for (int i = 0; i < s->n; i++)
            c->stmts[i] = replaced(a, s->stmts[i], orig, repl);
    } else if (s->kind == S_ALLOC) {
        c->body = replaced(a, s->body, orig, repl);
    }
    return c;
}

/* C followed by L folded (the top of the file): the statements that
 * replace both, or NULL where they do not fold. */
static Stmt *fold_pair(Arena *a, Stmt *c, Stmt *l)
{
    Tensor *p = copy_of(c);
    int64_t cmin, cext, lmin, lext, rmin, rext;
    /* (constant bounds read nothing of P) */
    if (!p || !const_bounds(c, &cmin, &cext) || l->kind != S_FOR || l->loop->kind != LOOP_SERIAL ||
        !const_bounds(l, &lmin, &lext) || lext < 1)
        return NULL;
    bool bad = false;
    Stmt *body = l->body;
    Stmt **slot = reader_slot(&body, p, &bad);
    if (!slot || bad)
        return NULL;
    Stmt *r = *slot;
    if (!const_bounds(r, &rmin, &rext) || rmin != cmin || rext != cext || sch_any_store(l->body, read_by_copy, c))
        return NULL;
    /* R's iteration k: C's body at ax0 = k, then R's own */
    Stmt *seq = arena_alloc(a, sizeof *seq);
    seq->kind = S_SEQ;
    seq->n = 2;
    seq->stmts = arena_alloc(a, sizeof *seq->stmts * 2);
    seq->stmts[0] = sch_stmt_subst(a, c->body, c->loop->var, ex_var(a, (Span){ 0, 0 }, r->loop->var));
    seq->stmts[1] = r->body;
    Stmt *fused = arena_alloc(a, sizeof *fused);
    *fused = *r;
    fused->body = seq;
    /* L's first iteration, its variable a constant */
    Stmt *first = sch_stmt_subst(a, replaced(a, l->body, r, fused), l->loop->var, sch_int(a, lmin));
    if (lext == 1)
        return first;
    Stmt *rest = arena_alloc(a, sizeof *rest);
    *rest = *l;
    rest->min = sch_int(a, lmin + 1);
    rest->extent = sch_int(a, lext - 1);
    Stmt *out = arena_alloc(a, sizeof *out);
    out->kind = S_SEQ;
    out->n = 2;
    out->stmts = arena_alloc(a, sizeof *out->stmts * 2);
    out->stmts[0] = first;
    out->stmts[1] = rest;
    return out;
}

/* For sch_each_in_seq: each statement appended to the list, in order (a
 * nested sequence flattened) */
typedef struct Flat {
    Arena *a;
    PtrVec v;
} Flat;

static Stmt *flatten_item(Stmt *s, void *ctx)
{
    Flat *f = ctx;
    if (s)
        vec_push(f->a, &f->v, s);
    return s;
}

static Stmt *fold_stmt(Arena *a, Stmt *s)
{
    if (!s)
        return NULL;
    switch (s->kind) {
    case S_SEQ: {
        Flat flat = { a, { 0 } };
        sch_each_in_seq(a, s, flatten_item, &flat);
        PtrVec v = flat.v;
        for (int i = 0; i < v.len; i++)
            v.items[i] = fold_stmt(a, v.items[i]);
        /* the pairs, after their insides: R is then as it will be emitted */
        PtrVec out = { 0 };
        for (int i = 0; i < v.len; i++) {
            Stmt *f = i + 1 < v.len ? fold_pair(a, v.items[i], v.items[i + 1]) : NULL;
            vec_push(a, &out, f ? f : v.items[i]);
            i += f != NULL;
        }
        s->n = out.len;
        s->stmts = (Stmt **)out.items;
        return s;
    }
    case S_FOR:
    case S_IF:
    case S_ALLOC:
        s->body = fold_stmt(a, s->body);
        return s;
    case S_STORE:
    case S_FLASH:
        return s;
    }
    TE_UNREACHABLE();
}

static Stmt *fold_item(Stmt *s, void *arena)
{
    return fold_stmt(arena, s);
}

Stmt *sch_fold_copies(SchedState *st, Stmt *body)
{
    if (st->target != TARGET_CPU || !body)
        return body;
    /* the kernel steps' chain, seq(seq(first, second), third) ..., stays as
       it is (codegen/workspace.c reads the steps off it): each step is
       folded inside */
    if (body->kind != S_SEQ)
        return fold_stmt(st->arena, body);
    sch_each_in_seq(st->arena, body, fold_item, st->arena);
    return body;
}

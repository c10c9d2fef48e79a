/* pass_cse.c — common subexpression elimination.
 *
 * requires: a checked Graph.
 * guarantees, exactly (nothing is recomputed differently, only shared):
 *   1. across stages: of two stages that compute the same thing — same
 *      dtype and shape, bodies equal up to renaming their own index
 *      variables and their reductions' axes (te_expr_equiv) — the later
 *      one goes; its readers read the earlier one.  When the later one is
 *      an output and the earlier one is not, the earlier one takes the
 *      output's name and place in g->outputs (its old name goes to
 *      Tensor.aliases, as the later one's does when it merely goes).  Two
 *      outputs are never merged: each is a parameter of its own.
 *   2. within a stage: identical operator and reduction subtrees of one
 *      body become one node, so the body is a DAG.  The IR has no
 *      let-binding inside an expression, so sharing a pointer is how the
 *      graph records "computed once"; a code generator that memoizes
 *      emitted nodes (or the C compiler's own CSE) computes it once.
 *      Plain loads, variables and constants are not counted (sharing them
 *      saves nothing), though equal operators over them are.  Later passes
 *      rewrite trees: where they change something under a shared node,
 *      each use gets its own rewritten copy (correct, merely unshared).
 * Stages are visited in dependency order with loads already redirected,
 * so chains of duplicates (b2 = f(a2) with a2 a copy of a1) merge in one
 * visit.  OptStats.cse counts merged stages plus maximal shared subtrees.
 *
 * te_expr_equiv is exported: simplify uses it for x - x.
 */
#include <math.h>
#include <string.h>

#include "texc.h"

/* ------------------------------------------------------------------ */
/* Equality up to renaming.                                            */

/* Variables taken as equal: A[i] in one expression is B[i] in the other.
 * Reductions push their axes; the innermost binding wins. */
typedef struct Pairs {
    IterVar *const *a, *const *b;
    int n;
    const struct Pairs *outer;
} Pairs;

static bool var_equiv(const Pairs *p, const IterVar *x, const IterVar *y)
{
    for (; p; p = p->outer)
        for (int i = 0; i < p->n; i++)
            if (p->a[i] == x || p->b[i] == y)
                return p->a[i] == x && p->b[i] == y;
    return x == y;
}

static bool same_value(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

static bool equiv(const Expr *a, const Expr *b, const Pairs *p)
{
    if (a == b && !p)
        return true;
    if (a->kind != b->kind || a->dtype != b->dtype || a->nargs != b->nargs)
        return false;
    switch (a->kind) {
    case EX_CONST:
        return same_value(a->value, b->value);
    case EX_VAR:
        return var_equiv(p, a->var, b->var);
    case EX_LOAD:
        if (a->tensor != b->tensor)
            return false;
        break;
    case EX_OP:
        if (a->op != b->op)
            return false;
        break;
    case EX_REDUCE: {
        if (a->reducer != b->reducer || a->naxes != b->naxes)
            return false;
        for (int i = 0; i < a->naxes; i++)
            if (!te_same_range(a->axes[i], b->axes[i]))
                return false;
        Pairs inner = { a->axes, b->axes, a->naxes, p };
        return equiv(a->args[0], b->args[0], &inner);
    }
    }
    for (int i = 0; i < a->nargs; i++)
        if (!equiv(a->args[i], b->args[i], p))
            return false;
    return true;
}

bool te_expr_equiv(const Expr *a, const Expr *b, IterVar *const *avars, IterVar *const *bvars,
                   int n)
{
    Pairs p = { avars, bvars, n, NULL };
    return equiv(a, b, n ? &p : NULL);
}

/* A hash that equivalent expressions share: a reduction axis hashes by its
 * range only, a spatial variable by its position in VARS (or, not there,
 * by identity). */
static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

static uint64_t hash_node(const Expr *e, IterVar *const *vars, int n, const uint64_t *kids)
{
    uint64_t h = mix((uint64_t)e->kind, (uint64_t)e->dtype);
    switch (e->kind) {
    case EX_CONST: {
        double v = isnan(e->value) ? NAN : e->value;
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        return mix(h, bits);
    }
    case EX_VAR:
        if (e->var->reduce)
            return mix(mix(h, (uint64_t)e->var->lo), (uint64_t)e->var->extent);
        for (int d = 0; d < n; d++)
            if (vars[d] == e->var)
                return mix(h, (uint64_t)d + 1);
        return mix(h, (uint64_t)(uintptr_t)e->var);
    case EX_LOAD:
        h = mix(h, (uint64_t)(uintptr_t)e->tensor);
        break;
    case EX_OP:
        h = mix(h, (uint64_t)e->op);
        break;
    case EX_REDUCE:
        h = mix(h, (uint64_t)e->reducer);
        for (int i = 0; i < e->naxes; i++)
            h = mix(mix(h, (uint64_t)e->axes[i]->lo), (uint64_t)e->axes[i]->extent);
        break;
    }
    for (int i = 0; i < e->nargs; i++)
        h = mix(h, kids[i]);
    return h;
}

static uint64_t hash_expr(const Expr *e, IterVar *const *vars, int n)
{
    uint64_t kids[3] = { 0, 0, 0 }, *k = kids;
    uint64_t big[e->nargs > 3 ? e->nargs : 1];
    if (e->nargs > 3)
        k = big;
    for (int i = 0; i < e->nargs; i++)
        k[i] = hash_expr(e->args[i], vars, n);
    return hash_node(e, vars, n, k);
}

/* ------------------------------------------------------------------ */
/* Within a stage: hash-consing.                                       */

typedef struct Table {
    Expr **slot;
    uint64_t *hash;
    size_t mask;
} Table;

typedef struct Cse {
    OptCtx *c;
    Tensor **repl; /* by Tensor.id: the stage that replaces it, or NULL */
    Table table;
} Cse;

static size_t count_nodes(const Expr *e)
{
    size_t n = 1;
    for (int i = 0; i < e->nargs; i++)
        n += count_nodes(e->args[i]);
    return n;
}

/* E with equal subtrees shared; *H its hash, *MATCHED whether E itself
 * was replaced by an earlier equal node. */
static Expr *share(Cse *s, Expr *e, uint64_t *h, bool *matched)
{
    *matched = false;
    if (e->nargs == 0) {
        *h = hash_node(e, NULL, 0, NULL);
        return e;
    }
    Arena *a = s->c->arena;
    Expr **args = arena_alloc(a, sizeof *args * (size_t)e->nargs);
    uint64_t *kids = arena_alloc(a, sizeof *kids * (size_t)e->nargs);
    bool changed = false;
    int shared_kids = 0;
    for (int i = 0; i < e->nargs; i++) {
        bool m;
        args[i] = share(s, e->args[i], &kids[i], &m);
        changed |= args[i] != e->args[i];
        shared_kids += m;
    }
    Expr *node = changed ? te_rebuild(a, e, args) : e;
    *h = hash_node(node, NULL, 0, kids);
    if (node->kind == EX_LOAD)
        return node;
    Table *t = &s->table;
    size_t i = (size_t)*h & t->mask;
    for (; t->slot[i]; i = (i + 1) & t->mask) {
        if (t->hash[i] == *h && te_expr_equiv(t->slot[i], node, NULL, NULL, 0)) {
            /* this node's shared operands are inside the shared node now */
            s->c->stats->cse += 1 - shared_kids;
            *matched = true;
            return t->slot[i];
        }
    }
    t->slot[i] = node;
    t->hash[i] = *h;
    return node;
}

/* ------------------------------------------------------------------ */
/* Across stages.                                                      */

static Tensor *resolve(Cse *s, Tensor *t)
{
    while (s->repl[t->id])
        t = s->repl[t->id];
    return t;
}

static Expr *redirect(Cse *s, Expr *e)
{
    if (e->nargs == 0)
        return e;
    Arena *a = s->c->arena;
    Expr **args = arena_alloc(a, sizeof *args * (size_t)e->nargs);
    bool changed = false;
    for (int i = 0; i < e->nargs; i++) {
        args[i] = redirect(s, e->args[i]);
        changed |= args[i] != e->args[i];
    }
    if (e->kind == EX_LOAD) {
        Tensor *t = resolve(s, e->tensor);
        return changed || t != e->tensor ? ex_load(a, e->span, t, args, e->nargs) : e;
    }
    return changed ? te_rebuild(a, e, args) : e;
}

static bool same_type(const Tensor *a, const Tensor *b)
{
    return a->dtype == b->dtype && te_same_shape(a, b);
}

/* Merges stage LATER into the equal, earlier KEPT; false if both are
 * outputs. */
static bool merge(Cse *s, Graph *g, Tensor *kept, Tensor *later)
{
    Arena *a = s->c->arena;
    if (later->is_output && kept->is_output)
        return false;
    char *note;
    if (later->is_output) {
        const char *old = kept->name;
        te_add_aliases(a, kept, old, later);
        kept->name = later->name;
        kept->is_output = true;
        for (int k = 0; k < g->noutputs; k++)
            if (g->outputs[k] == later)
                g->outputs[k] = kept;
        note = arena_printf(a, "%s computes the same as %s: %s renamed %s", later->name, old,
                            old, later->name);
    } else {
        te_add_aliases(a, kept, later->name, later);
        note = arena_printf(a, "%s computes the same as %s: merged", later->name, kept->name);
    }
    vec_push(a, &s->c->stats->notes, note);
    s->repl[later->id] = kept;
    s->c->stats->cse++;
    return true;
}

bool te_pass_cse(OptCtx *c, Graph *g)
{
    Arena *a = c->arena;
    Cse s = { c, arena_alloc(a, sizeof(Tensor *) * (size_t)(g->ntensors + 1)), { 0 } };
    uint64_t *stage_hash = arena_alloc(a, sizeof *stage_hash * (size_t)(g->ntensors + 1));
    /* the stages seen so far with each hash, in order: an open-addressed
     * table of the first (BUCKET_HEAD: 1 + index, 0 free) and the last,
     * and a chain through SAME_NEXT, so that each stage is compared only
     * with those of its hash, in the order a scan of them all would take */
    size_t buckets = 16;
    while (buckets < 2 * (size_t)g->ntensors + 2)
        buckets *= 2;
    int *bucket_head = arena_alloc(a, sizeof *bucket_head * buckets);
    int *bucket_tail = arena_alloc(a, sizeof *bucket_tail * buckets);
    int *same_next = arena_alloc(a, sizeof *same_next * (size_t)(g->ntensors + 1));
    int stages = 0, merged = 0;
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (t->kind != TK_STAGE)
            continue;
        stages++;
        t->body = redirect(&s, t->body);
        stage_hash[i] = hash_expr(t->body, t->vars, t->rank);
        uint64_t mixed = (stage_hash[i] ^ (stage_hash[i] >> 31)) * 0x9E3779B97F4A7C15u;
        size_t b = (size_t)(mixed ^ (mixed >> 29)) & (buckets - 1); /* all bits count */
        while (bucket_head[b] && stage_hash[bucket_head[b] - 1] != stage_hash[i])
            b = (b + 1) & (buckets - 1);
        for (int j = bucket_head[b] - 1; j >= 0; j = same_next[j] - 1) {
            Tensor *k = g->tensors[j];
            if (!s.repl[j] && same_type(k, t) &&
                te_expr_equiv(k->body, t->body, k->vars, t->vars, t->rank) && merge(&s, g, k, t)) {
                merged++;
                break;
            }
        }
        if (bucket_head[b])
            same_next[bucket_tail[b] - 1] = i + 1;
        else
            bucket_head[b] = i + 1;
        bucket_tail[b] = i + 1;
    }
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (t->kind != TK_STAGE || s.repl[i])
            continue;
        size_t cap = 16, nodes = count_nodes(t->body);
        while (cap < 2 * nodes)
            cap *= 2;
        s.table.slot = arena_alloc(a, sizeof *s.table.slot * cap);
        s.table.hash = arena_alloc(a, sizeof *s.table.hash * cap);
        s.table.mask = cap - 1;
        uint64_t h;
        bool m;
        t->body = share(&s, t->body, &h, &m);
    }
    te_graph_compact(a, g);
    for (int i = 0; i < g->ntensors; i++)
        stages -= g->tensors[i]->kind == TK_STAGE;
    c->stats->removed += stages - merged; /* merged stages count as shared */
    return true;
}

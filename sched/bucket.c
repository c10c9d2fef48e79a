/* bucket.c — the buckets a program with run-time dims is compiled in.
 *
 * requires: a checked Graph (sch_check resolved the schedules' 'when'
 * clauses).
 * guarantees: a list of buckets (sched.h, Bucket) that covers every size
 * of the declared run-time dims exactly once: a box, one interval per
 * dim, each with a hint.  Each bucket is compiled as one variant of the
 * program (driver/main.c), and the generated code dispatches to it
 * (codegen/c.c).  Along each dim the intervals come from, in order:
 *   1. --buckets DIM=A,B..C,... (SPECS): those, in increasing order, and
 *      one more interval for each part of the range they leave out;
 *   2. the file's 'when' clauses on the dim: each one's range, and the
 *      default intervals in the gaps between them;
 *   3. the default: 1, 2, ..., 8 alone (a matrix-vector product at 1,
 *      register tiles of exactly M rows up to 8), then 9..16 and the
 *      powers of two (17..32, 33..64, ...), clipped to the range.
 * The boxes are the product of the dims' intervals, the first dim
 * varying slowest.  A bucket's hint is the dim's hint where the bucket
 * holds it, else the geometric middle of the bucket.  Errors
 * (diagnostics at the dim's range): a --buckets interval outside the
 * range, empty, or overlapping another; a 'when' range a bucket
 * straddles (the bucket would need two schedules).
 *
 * The default intervals above 8 usually give the same schedule (a tile
 * of 8 rows whatever the size); the driver builds each, then merges
 * neighbours whose schedules are the same into one variant
 * (sch_merge_buckets), so the code holds one copy of each schedule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"

typedef struct Interval {
    int64_t lo, hi;
} Interval;

typedef struct Intervals {
    Interval *v;
    int n, cap;
} Intervals;

static void add(Arena *a, Intervals *s, int64_t lo, int64_t hi)
{
    if (lo > hi)
        return;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        Interval *v = arena_alloc(a, sizeof *v * (size_t)cap);
        if (s->n)
            memcpy(v, s->v, sizeof *v * (size_t)s->n);
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (Interval){ lo, hi };
}

/* The default intervals of LO..HI. */
static void add_default(Arena *a, Intervals *s, int64_t lo, int64_t hi)
{
    for (int64_t k = 1; k <= 8; k++)
        if (k >= lo && k <= hi)
            add(a, s, k, k);
    for (int64_t b = 9, e = 16; b <= hi; b = e + 1, e = e > INT64_MAX / 2 ? INT64_MAX : 2 * e)
        add(a, s, b > lo ? b : lo, e < hi ? e : hi);
}

static int by_lo(const void *x, const void *y)
{
    const Interval *a = x, *b = y;
    return (a->lo > b->lo) - (a->lo < b->lo);
}

/* "--buckets M=...: why", at the dim's range */
static bool spec_error(const Graph *g, const Dim *d, const BucketSpec *sp, const char *why)
{
    diag_error(g->src, d->range_span, "--buckets %s=%s: %s", sp->dim, sp->text, why);
    return false;
}

/* The intervals of dim D from SP (--buckets), gaps filled. */
static bool spec_intervals(Arena *a, const Graph *g, const Dim *d, const BucketSpec *sp, Intervals *out)
{
    Interval *v = arena_alloc(a, sizeof *v * (size_t)(sp->n + 1));
    for (int i = 0; i < sp->n; i++) {
        v[i] = (Interval){ sp->lo[i], sp->hi[i] };
        if (v[i].lo > v[i].hi)
            return spec_error(g, d, sp,
                              arena_printf(a, "the bucket %lld..%lld is empty: a bucket is LO..HI with LO <= HI, inclusive",
                                           (long long)v[i].lo, (long long)v[i].hi));
        if (v[i].lo < d->lo || v[i].hi > d->hi)
            return spec_error(g, d, sp,
                              arena_printf(a, "the bucket %lld..%lld is outside the range %lld..%lld of '%s'",
                                           (long long)v[i].lo, (long long)v[i].hi, (long long)d->lo,
                                           (long long)d->hi, d->name));
    }
    qsort(v, (size_t)sp->n, sizeof *v, by_lo);
    int64_t next = d->lo;
    for (int i = 0; i < sp->n; i++) {
        if (i > 0 && v[i].lo <= v[i - 1].hi)
            return spec_error(g, d, sp,
                              arena_printf(a, "the buckets %lld..%lld and %lld..%lld overlap",
                                           (long long)v[i - 1].lo, (long long)v[i - 1].hi,
                                           (long long)v[i].lo, (long long)v[i].hi));
        add(a, out, next, v[i].lo - 1); /* a gap: one more bucket */
        add(a, out, v[i].lo, v[i].hi);
        next = v[i].hi + 1;
    }
    add(a, out, next, d->hi);
    return true;
}

static int by_value(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* The intervals of dim D from the 'when' ranges of TARGET's schedules
 * on it, the default ones in the gaps; none if no when names D.  Every
 * place a range starts or ends cuts D's range; a piece some range covers
 * is one interval (two schedules may differ along another dim), a piece
 * none covers gets the default intervals. */
static void when_intervals(Arena *a, const Graph *g, Target target, int d, Intervals *out)
{
    Intervals w = { 0 };
    for (int i = 0; i < g->nschedules; i++) {
        const Schedule *s = g->schedules[i];
        for (int k = 0; s->target == target && k < s->nwhen; k++)
            if (s->when[k].index == d)
                add(a, &w, s->when[k].lo, s->when[k].hi);
    }
    if (!w.n)
        return;
    int64_t *cut = arena_alloc(a, sizeof *cut * (size_t)(2 * w.n + 2));
    int n = 0;
    cut[n++] = g->dims[d].lo;
    cut[n++] = g->dims[d].hi + 1;
    for (int i = 0; i < w.n; i++) {
        cut[n++] = w.v[i].lo;
        cut[n++] = w.v[i].hi + 1;
    }
    qsort(cut, (size_t)n, sizeof *cut, by_value);
    for (int i = 0; i + 1 < n; i++) {
        int64_t lo = cut[i], hi = cut[i + 1] - 1;
        if (lo > hi || lo < g->dims[d].lo || hi > g->dims[d].hi)
            continue;
        bool covered = false;
        for (int k = 0; k < w.n && !covered; k++)
            covered = w.v[k].lo <= lo && hi <= w.v[k].hi;
        if (covered)
            add(a, out, lo, hi);
        else
            add_default(a, out, lo, hi);
    }
}

static int64_t bucket_hint(const Dim *d, int64_t lo, int64_t hi)
{
    if (d->hint >= lo && d->hint <= hi)
        return d->hint;
    int64_t m = (int64_t)llround(sqrt((double)lo * (double)hi));
    return m < lo ? lo : m > hi ? hi : m;
}

bool sch_buckets(Arena *a, const Graph *g, Target target, const BucketSpec *specs, int nspecs,
                 PtrVec *out)
{
    out->len = 0;
    for (int k = 0; k < nspecs; k++) {
        int d = 0;
        while (d < g->ndims && strcmp(g->dims[d].name, specs[k].dim) != 0)
            d++;
        if (d == g->ndims) {
            /* the command line has no place in the file: no line, no caret */
            fprintf(diag_stream ? diag_stream : stderr,
                    "%s: error: --buckets %s=%s: the program has no dim called '%s'\n", g->src->path,
                    specs[k].dim, specs[k].text, specs[k].dim);
            diag_errors++;
            return false;
        }
        if (!g->dims[d].runtime || !g->dims[d].declared) {
            diag_error(g->src, g->dims[d].span, "--buckets %s=%s: '%s' is %s", specs[k].dim, specs[k].text,
                       specs[k].dim,
                       g->dims[d].runtime ? "computed from other dims: give the buckets of those"
                                          : "a static dim (a number, or set with -D): it has no buckets");
            return false;
        }
        for (int i = 0; i < k; i++)
            if (strcmp(specs[i].dim, specs[k].dim) == 0) {
                fprintf(diag_stream ? diag_stream : stderr,
                        "%s: error: --buckets names '%s' twice\n", g->src->path, specs[k].dim);
                diag_errors++;
                return false;
            }
    }
    Intervals *per = arena_alloc(a, sizeof *per * (size_t)(g->ndims + 1));
    int64_t boxes = 1;
    for (int d = 0; d < g->ndims; d++) {
        const Dim *dim = &g->dims[d];
        if (!dim->runtime || !dim->declared)
            continue;
        const BucketSpec *sp = NULL;
        for (int k = 0; k < nspecs; k++)
            if (strcmp(specs[k].dim, dim->name) == 0)
                sp = &specs[k];
        if (sp) {
            if (!spec_intervals(a, g, dim, sp, &per[d]))
                return false;
        } else {
            when_intervals(a, g, target, d, &per[d]);
            if (!per[d].n) {
                /* the default, along the first dims only: a product of
                   every dim's default buckets would be hundreds */
                if (boxes <= 1)
                    add_default(a, &per[d], dim->lo, dim->hi);
                else
                    add(a, &per[d], dim->lo, dim->hi);
            }
        }
        boxes *= per[d].n;
        if (boxes > 4096) {
            diag_error(g->src, dim->range_span,
                       "the run-time dims' buckets make more than 4096 variants: give fewer with --buckets");
            return false;
        }
    }
    /* the product, the first dim slowest */
    int *at = arena_alloc(a, sizeof *at * (size_t)(g->ndims + 1));
    for (;;) {
        Bucket *b = arena_alloc(a, sizeof *b);
        b->lo = arena_alloc(a, sizeof *b->lo * (size_t)(g->ndims + 1));
        b->hi = arena_alloc(a, sizeof *b->hi * (size_t)(g->ndims + 1));
        b->hint = arena_alloc(a, sizeof *b->hint * (size_t)(g->ndims + 1));
        for (int d = 0; d < g->ndims; d++) {
            const Dim *dim = &g->dims[d];
            b->lo[d] = b->hi[d] = b->hint[d] = dim->value;
            if (dim->runtime && dim->declared) {
                b->lo[d] = per[d].v[at[d]].lo;
                b->hi[d] = per[d].v[at[d]].hi;
                b->hint[d] = bucket_hint(dim, b->lo[d], b->hi[d]);
            }
        }
        vec_push(a, out, b);
        int d = g->ndims - 1;
        for (; d >= 0; d--) {
            if (!g->dims[d].runtime || !g->dims[d].declared)
                continue;
            if (++at[d] < per[d].n)
                break;
            at[d] = 0;
        }
        if (d < 0)
            break;
    }
    /* a when range that a bucket straddles (--buckets cut across it) */
    for (int i = 0; i < out->len; i++) {
        const Bucket *b = out->items[i];
        for (int k = 0; k < g->nschedules; k++) {
            const Schedule *s = g->schedules[k];
            bool inside = true, meets = true;
            for (int w = 0; s->target == target && w < s->nwhen; w++) {
                const SchedWhen *c = &s->when[w];
                inside = inside && b->lo[c->index] >= c->lo && b->hi[c->index] <= c->hi;
                meets = meets && b->hi[c->index] >= c->lo && b->lo[c->index] <= c->hi;
            }
            if (s->target == target && s->nwhen && meets && !inside) {
                diag_error(g->src, s->when[0].range_span,
                           "the bucket %s straddles the sizes of this schedule: give --buckets that this range contains whole, or none",
                           sch_bucket_str(a, g, b));
                return false;
            }
        }
    }
    return true;
}

char *sch_bucket_str(Arena *a, const Graph *g, const Bucket *b)
{
    char *s = "";
    for (int d = 0; d < g->ndims; d++) {
        const Dim *dim = &g->dims[d];
        if (!dim->runtime || !dim->declared)
            continue;
        s = b->lo[d] == b->hi[d]
                ? arena_printf(a, "%s%s%s = %lld", s, *s ? ", " : "", dim->name, (long long)b->lo[d])
                : arena_printf(a, "%s%s%s in %lld..%lld", s, *s ? ", " : "", dim->name,
                               (long long)b->lo[d], (long long)b->hi[d]);
    }
    return s;
}

/* Are A and B neighbours along exactly one dim, equal along the others,
 * and neither a single size along it (a single size is a static variant
 * of its own)? */
static bool mergeable(const Graph *g, const Bucket *x, const Bucket *y)
{
    int along = -1;
    for (int d = 0; d < g->ndims; d++) {
        if (!g->dims[d].runtime || !g->dims[d].declared)
            continue;
        if (x->lo[d] == y->lo[d] && x->hi[d] == y->hi[d])
            continue;
        if (along >= 0 || x->hi[d] + 1 != y->lo[d])
            return false;
        along = d;
    }
    return along >= 0 && x->lo[along] != x->hi[along] && y->lo[along] != y->hi[along];
}

int sch_merge_buckets(Arena *a, const Graph *g, PtrVec *buckets, const char *const *texts, int **first)
{
    int merged = 0;
    PtrVec v = { 0 };
    const char **t = arena_alloc(a, sizeof *t * (size_t)(buckets->len + 1));
    *first = arena_alloc(a, sizeof **first * (size_t)(buckets->len + 1));
    for (int i = 0; i < buckets->len; i++) {
        Bucket *b = buckets->items[i];
        if (v.len && texts[i] && t[v.len - 1] && strcmp(texts[i], t[v.len - 1]) == 0 &&
            mergeable(g, v.items[v.len - 1], b)) {
            Bucket *last = v.items[v.len - 1], *m = arena_alloc(a, sizeof *m);
            size_t n = sizeof *m->lo * (size_t)(g->ndims + 1);
            m->lo = arena_alloc(a, n);
            m->hi = arena_alloc(a, n);
            m->hint = arena_alloc(a, n);
            memcpy(m->lo, last->lo, n);
            memcpy(m->hi, b->hi, n);
            for (int d = 0; d < g->ndims; d++) {
                const Dim *dim = &g->dims[d];
                m->hint[d] = dim->runtime && dim->declared ? bucket_hint(dim, m->lo[d], m->hi[d])
                                                           : last->hint[d];
            }
            v.items[v.len - 1] = m;
            merged++;
            continue;
        }
        t[v.len] = texts[i];
        (*first)[v.len] = i;
        vec_push(a, &v, b);
    }
    *buckets = v;
    return merged;
}

int sch_hint_bucket(const Graph *g, const PtrVec *buckets)
{
    int at = 0;
    for (int i = 0; i < buckets->len; i++) {
        const Bucket *b = buckets->items[i];
        bool holds = true;
        for (int d = 0; d < g->ndims; d++)
            holds = holds && (!g->dims[d].runtime || !g->dims[d].declared ||
                              (b->lo[d] <= g->dims[d].hint && g->dims[d].hint <= b->hi[d]));
        if (holds)
            at = i;
    }
    return at;
}

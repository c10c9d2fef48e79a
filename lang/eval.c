/* eval.c — the reference evaluator and the random inputs it is fed.
 *
 * te_eval says what a graph means: every stage is computed naively, point
 * by point in row-major order, entirely in double.  It is the oracle every
 * generated kernel is checked against, so it is ideal rather than faithful
 * to a dtype: float stages are not rounded to their dtype (only an explicit
 * cast rounds), while i32 and bool stages are, since integer results must
 * match exactly.  i32 arithmetic wraps modulo 2^32 at every operation
 * (te_i32_arith: + - * / %, unary -, abs, and the steps of sum and prod),
 * as the generated code's does; its division and remainder truncate toward
 * zero like C, and dividing by zero gives 0 instead of a trap.  &&, || and
 * select evaluate lazily, so a select can guard a load that would be out
 * of bounds.
 *
 * Speed matters (stages of 10^9 operations): the interpreter is a
 * recursive switch over the Expr tree with no allocation and no strings on
 * the per-point path.  Index variables live in a slot array indexed by
 * IterVar.id; each tensor's values in an array indexed by Tensor.id.  An
 * out-of-bounds load reports one diagnostic, sets a flag and yields 0; the
 * loops check the flag once per point and stop.
 *
 * A graph with run-time dims is evaluated at given sizes (te_eval_at):
 * every extent and shape is computed once, before the stages, from its
 * size expression at those sizes, into arrays the loops read instead of
 * the IR's static bounds.  A static graph fills them from the bounds.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "texc.h"

/* Random inputs: xoshiro256** seeded through splitmix64. */

typedef struct Rng {
    uint64_t s[4];
} Rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(Rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* A value rounded up to 1.0 by a narrow dtype is drawn again, so every
 * value stays in [-1, 1). */
void te_random_input(const Tensor *t, uint64_t seed, double *out)
{
    Rng rng;
    uint64_t x = seed ^ fnv1a(t->name ? t->name : "");
    for (int i = 0; i < 4; i++)
        rng.s[i] = splitmix64(&x);
    int64_t n = tensor_elems(t);
    for (int64_t i = 0; i < n; i++) {
        double v;
        switch (t->dtype) {
        case DT_BOOL:
            v = (double)(rng_next(&rng) >> 63);
            break;
        case DT_I32:
            /* Lemire's multiply-shift: uniform in [0, 200). */
            v = (double)(((rng_next(&rng) >> 32) * 200) >> 32) - 100.0;
            break;
        case DT_U8: /* the whole range: the extremes are where sums overflow */
            v = (double)(rng_next(&rng) >> 56);
            break;
        case DT_I8:
            v = (double)(rng_next(&rng) >> 56) - 128.0;
            break;
        default:
            do {
                double u = (double)(rng_next(&rng) >> 11) * 0x1p-53;
                v = dtype_round(t->dtype, 2.0 * u - 1.0);
            } while (v >= 1.0);
            break;
        }
        out[i] = v;
    }
}

/* The evaluator. */

typedef struct Evaluator {
    const Graph *g;
    double **values; /* by Tensor.id; NULL until computed */
    int64_t *slots;  /* by IterVar.id: the current value of each variable */
    int64_t *extent; /* by IterVar.id: its extent at the sizes */
    int64_t *shape;  /* by Tensor.id * TE_MAX_RANK + d: its shape at the sizes */
    int64_t *elems;  /* by Tensor.id: its element count at the sizes */
    bool failed;     /* an out-of-bounds load was reported */
} Evaluator;

static double eval(Evaluator *ev, const Expr *e);

static double eval_load(Evaluator *ev, const Expr *e)
{
    const Tensor *t = e->tensor;
    int64_t offset = 0;
    for (int d = 0; d < e->nargs; d++) {
        const Expr *arg = e->args[d];
        int64_t extent = ev->shape[t->id * TE_MAX_RANK + d];
        int64_t idx;
        double v = 0.0;
        if (arg->kind == EX_VAR) {
            idx = ev->slots[arg->var->id]; /* the common case, kept cheap */
        } else {
            v = eval(ev, arg);
            /* Round half away from zero; the range test also keeps NaN
             * and huge values away from the conversion. */
            idx = v > -0x1p62 && v < 0x1p62 ? (int64_t)(v < 0 ? v - 0.5 : v + 0.5)
                                            : INT64_MIN;
        }
        if (idx < 0 || idx >= extent) {
            if (!ev->failed) {
                ev->failed = true;
                diag_error(ev->g->src, e->span,
                           "index %lld of '%s' is out of bounds [0, %lld) at "
                           "dimension %d",
                           idx != INT64_MIN ? (long long)idx
                           : v > 0          ? (long long)INT64_MAX
                                            : (long long)INT64_MIN,
                           t->name, (long long)extent, d);
            }
            return 0.0;
        }
        offset = offset * extent + idx;
    }
    return ev->values[t->id][offset];
}

/* One switch: each case evaluates exactly the operands it needs, so &&, ||
 * and select are lazy for free. */
static double eval_op(Evaluator *ev, const Expr *e)
{
    Expr *const *args = e->args;
#define A eval(ev, args[0])
#define B eval(ev, args[1])
    double a, b;
    if (e->dtype == DT_I32 && te_i32_wraps(e->op)) {
        a = A;
        b = e->nargs > 1 ? B : 0.0;
        return te_i32_arith(e->op, a, b);
    }
    switch (e->op) {
    case OP_NEG:
        return -A;
    case OP_NOT:
        return A == 0.0;
    case OP_EXP:
        return exp(A);
    case OP_LOG:
        return log(A);
    case OP_SQRT:
        return sqrt(A);
    case OP_RSQRT:
        return 1.0 / sqrt(A);
    case OP_TANH:
        return tanh(A);
    case OP_ERF:
        return erf(A);
    case OP_ABS:
        return fabs(A);
    case OP_GELU:
        a = A;
        return 0.5 * a * (1.0 + erf(a * 0.70710678118654752440));
    case OP_SIGMOID:
        return 1.0 / (1.0 + exp(-A));
    case OP_RELU:
        a = A;
        return a > 0.0 || isnan(a) ? a : 0.0;
    case OP_CAST:
        return dtype_round(e->dtype, A);
    case OP_ADD:
        a = A;
        return a + B;
    case OP_SUB:
        a = A;
        return a - B;
    case OP_MUL:
        a = A;
        return a * B;
    case OP_DIV:
        a = A;
        return a / B;
    case OP_MOD:
        /* i32 % is te_i32_arith's (above); a float % (sema allows none) is
         * fmod, exact, with the dividend's sign like C's % */
        a = A;
        return fmod(a, B);
    case OP_LT:
        a = A;
        return a < B;
    case OP_LE:
        a = A;
        return a <= B;
    case OP_GT:
        a = A;
        return a > B;
    case OP_GE:
        a = A;
        return a >= B;
    case OP_EQ:
        a = A;
        return a == B;
    case OP_NE:
        a = A;
        return a != B;
    case OP_AND:
        return A != 0.0 && B != 0.0;
    case OP_OR:
        return A != 0.0 || B != 0.0;
    case OP_MIN:
        a = A;
        b = B;
        return isnan(a) || isnan(b) ? a + b : a < b ? a : b;
    case OP_MAX:
        a = A;
        b = B;
        return isnan(a) || isnan(b) ? a + b : a > b ? a : b;
    case OP_POW:
        a = A;
        return pow(a, B);
    case OP_SELECT:
        return A != 0.0 ? B : eval(ev, args[2]);
    case OP_COUNT:
        break;
    }
#undef A
#undef B
    TE_UNREACHABLE();
}

/* ACC combined with V by R, in dtype T. */
static double combine(Reducer r, DType t, double acc, double v)
{
    switch (r) {
    case RED_SUM:
        return t == DT_I32 ? te_i32_arith(OP_ADD, acc, v) : acc + v;
    case RED_PROD:
        return t == DT_I32 ? te_i32_arith(OP_MUL, acc, v) : acc * v;
    case RED_MAX:
        /* A NaN, once in, stays: NaN > x and x > NaN are both false. */
        return v > acc || isnan(v) ? v : acc;
    case RED_MIN:
        return v < acc || isnan(v) ? v : acc;
    case RED_COUNT:
        break;
    }
    TE_UNREACHABLE();
}

/* Combines every point of the axes' box in row-major order (the last axis
 * fastest), starting from the reducer's identity. */
static double eval_reduce(Evaluator *ev, const Expr *e)
{
    int64_t *slots = ev->slots;
    IterVar *const *axes = e->axes;
    int n = e->naxes;
    const Expr *body = e->args[0];
    Reducer r = e->reducer;
    double acc = reducer_identity(r);
    if (n == 1) {
        /* The common case, without the odometer. */
        int64_t *slot = &slots[axes[0]->id];
        int64_t end = axes[0]->lo + ev->extent[axes[0]->id];
        if (r == RED_SUM && e->dtype != DT_I32) {
            for (*slot = axes[0]->lo; *slot < end; ++*slot)
                acc += eval(ev, body);
        } else {
            for (*slot = axes[0]->lo; *slot < end; ++*slot)
                acc = combine(r, e->dtype, acc, eval(ev, body));
        }
        return ev->failed ? 0.0 : acc;
    }
    for (int i = 0; i < n; i++) {
        if (ev->extent[axes[i]->id] <= 0)
            return acc;
        slots[axes[i]->id] = axes[i]->lo;
    }
    for (;;) {
        acc = combine(r, e->dtype, acc, eval(ev, body));
        if (ev->failed)
            return 0.0;
        int i = n - 1;
        for (; i >= 0; i--) {
            const IterVar *axis = axes[i];
            if (++slots[axis->id] < axis->lo + ev->extent[axis->id])
                break;
            slots[axis->id] = axis->lo;
        }
        if (i < 0)
            return acc;
    }
}

static double eval(Evaluator *ev, const Expr *e)
{
    switch (e->kind) {
    case EX_CONST:
        return e->value;
    case EX_VAR:
        return (double)ev->slots[e->var->id];
    case EX_LOAD:
        return eval_load(ev, e);
    case EX_OP:
        return eval_op(ev, e);
    case EX_REDUCE:
        return eval_reduce(ev, e);
    }
    TE_UNREACHABLE();
}

/* The slots the graph's variables need: nvars, or more if an id is past
 * it (a hand-built graph). */
static int max_var_id(const Expr *e)
{
    int m = -1;
    if (e->kind == EX_VAR)
        m = e->var->id;
    for (int i = 0; i < e->naxes; i++)
        if (e->axes[i]->id > m)
            m = e->axes[i]->id;
    for (int i = 0; i < e->nargs; i++) {
        int k = max_var_id(e->args[i]);
        if (k > m)
            m = k;
    }
    return m;
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) {
        fprintf(stderr, "texc: out of memory (allocating %zu bytes)\n", size);
        exit(1);
    }
    return p;
}

/* Computes stage T into OUT: every point of its iteration space, row-major. */
static void eval_stage(Evaluator *ev, const Tensor *t, double *out)
{
    int64_t *slots = ev->slots;
    int rank = t->rank;
    bool round = !dtype_is_float(t->dtype);
    int64_t n = ev->elems[t->id];
    const int64_t *shape = &ev->shape[t->id * TE_MAX_RANK];
    for (int d = 0; d < rank; d++)
        slots[t->vars[d]->id] = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = eval(ev, t->body);
        if (ev->failed)
            return;
        out[i] = round ? dtype_round(t->dtype, v) : v;
        for (int d = rank - 1; d >= 0; d--) {
            int id = t->vars[d]->id;
            if (++slots[id] < shape[d])
                break;
            slots[id] = 0;
        }
    }
}

/* Sets the extent of every reduction axis in E at the sizes DIMS. */
static void note_extents(const Expr *e, const int64_t *dims, int64_t *extent)
{
    for (int i = 0; i < e->naxes; i++)
        extent[e->axes[i]->id] = e->axes[i]->extent_size && dims
                                     ? te_size_at(e->axes[i]->extent_size, dims)
                                     : e->axes[i]->extent;
    for (int i = 0; i < e->nargs; i++)
        note_extents(e->args[i], dims, extent);
}

int64_t te_shape_at(const Tensor *t, int d, const int64_t *dims)
{
    return t->shape_size[d] && dims ? te_size_at(t->shape_size[d], dims) : t->shape[d];
}

Tensor te_tensor_at(const Tensor *t, const int64_t *dims)
{
    Tensor s = *t;
    for (int d = 0; d < t->rank; d++) {
        s.shape[d] = te_shape_at(t, d, dims);
        s.shape_size[d] = NULL;
    }
    return s;
}

int64_t te_elems_at(const Tensor *t, const int64_t *dims)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= te_shape_at(t, d, dims);
    return n;
}

/* Are DIMS in their ranges, and do G's run-time checks hold there?  Each
 * failure is a diagnostic. */
static bool sizes_ok(const Graph *g, const int64_t *dims)
{
    for (int i = 0; i < g->ndims; i++) {
        const Dim *d = &g->dims[i];
        if (d->runtime && d->declared && (dims[i] < d->lo || dims[i] > d->hi)) {
            diag_error(g->src, d->span, "%s = %lld is outside its range %lld..%lld", d->name,
                       (long long)dims[i], (long long)d->lo, (long long)d->hi);
            return false;
        }
    }
    for (int i = 0; i < g->nchecks; i++) {
        int64_t v;
        if (!te_size_eval(g->checks[i].value, dims, &v) || v < 0) {
            diag_error(g->src, g->checks[i].span, "%s at these sizes", g->checks[i].message);
            return false;
        }
    }
    return true;
}

/* Sets LAST[t->id] to STAGE for every tensor E loads. */
static void note_loads(const Expr *e, int stage, int *last)
{
    if (e->kind == EX_LOAD && last[e->tensor->id] < stage)
        last[e->tensor->id] = stage;
    for (int i = 0; i < e->nargs; i++)
        note_loads(e->args[i], stage, last);
}

/* Stages are computed in graph order.  A stage that is not an output is
 * freed as soon as the last stage that loads it is done, and an output
 * stage's array is handed over rather than copied, so the peak memory is
 * what the graph needs at once, not the sum of every stage. */
int te_eval(const Graph *g, double *const *inputs, double **outputs)
{
    if (!te_require_static_dims(g, "--eval"))
        return -1;
    return te_eval_at(g, NULL, inputs, outputs);
}

int te_eval_at(const Graph *g, const int64_t *dims, double *const *inputs, double **outputs)
{
    if (dims && !sizes_ok(g, dims))
        return -1;
    Evaluator ev = { .g = g };
    int nt = g->ntensors;
    int nslots = g->nvars;
    int *last_use = xmalloc((size_t)nt * sizeof *last_use);
    bool *is_output = xmalloc((size_t)nt * sizeof *is_output);
    for (int i = 0; i < nt; i++) {
        const Tensor *t = g->tensors[i];
        TE_ASSERT(t->id == i);
        last_use[i] = -1;
        is_output[i] = false;
        if (t->kind != TK_STAGE)
            continue;
        for (int d = 0; d < t->rank; d++)
            if (t->vars[d]->id >= nslots)
                nslots = t->vars[d]->id + 1;
        int m = max_var_id(t->body);
        if (m >= nslots)
            nslots = m + 1;
        note_loads(t->body, i, last_use);
    }
    for (int i = 0; i < g->noutputs; i++)
        is_output[g->outputs[i]->id] = true;
    ev.slots = xmalloc((size_t)nslots * sizeof *ev.slots);
    ev.extent = xmalloc((size_t)nslots * sizeof *ev.extent);
    ev.shape = xmalloc((size_t)nt * TE_MAX_RANK * sizeof *ev.shape);
    ev.elems = xmalloc((size_t)nt * sizeof *ev.elems);
    for (int i = 0; i < nt; i++) {
        const Tensor *t = g->tensors[i];
        for (int d = 0; d < t->rank; d++)
            ev.shape[i * TE_MAX_RANK + d] = te_shape_at(t, d, dims);
        ev.elems[i] = te_elems_at(t, dims);
        if (t->kind == TK_STAGE)
            note_extents(t->body, dims, ev.extent);
    }
    ev.values = xmalloc((size_t)nt * sizeof *ev.values);
    memset(ev.values, 0, (size_t)nt * sizeof *ev.values);
    for (int i = 0; i < g->ninputs; i++)
        ev.values[g->inputs[i]->id] = inputs[i];
    for (int i = 0; i < nt; i++)
        TE_ASSERT(g->tensors[i]->kind == TK_STAGE || ev.values[i] != NULL);

    for (int i = 0; i < nt && !ev.failed; i++) {
        const Tensor *t = g->tensors[i];
        if (t->kind != TK_STAGE)
            continue;
        double *out = xmalloc((size_t)ev.elems[i] * sizeof *out);
        ev.values[i] = out;
        eval_stage(&ev, t, out);
        for (int j = 0; j < i; j++) {
            if (last_use[j] == i && !is_output[j] &&
                g->tensors[j]->kind == TK_STAGE) {
                free(ev.values[j]);
                ev.values[j] = NULL;
            }
        }
    }

    if (!ev.failed) {
        for (int i = 0; i < g->noutputs; i++) {
            const Tensor *t = g->outputs[i];
            size_t bytes = (size_t)ev.elems[t->id] * sizeof(double);
            int taken = -1; /* an earlier output slot naming the same tensor */
            for (int k = 0; k < i; k++)
                if (g->outputs[k] == t)
                    taken = k;
            if (taken >= 0) {
                outputs[i] = xmalloc(bytes);
                memcpy(outputs[i], outputs[taken], bytes);
            } else if (t->kind == TK_STAGE) {
                outputs[i] = ev.values[t->id];
                ev.values[t->id] = NULL;
            } else {
                outputs[i] = xmalloc(bytes);
                memcpy(outputs[i], ev.values[t->id], bytes);
            }
        }
    }
    for (int i = 0; i < nt; i++)
        if (g->tensors[i]->kind == TK_STAGE)
            free(ev.values[i]);
    free(ev.values);
    free(ev.slots);
    free(ev.extent);
    free(ev.shape);
    free(ev.elems);
    free(is_output);
    free(last_use);
    return ev.failed ? -1 : 0;
}

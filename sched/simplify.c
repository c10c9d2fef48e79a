/* simplify.c — simplification of integer index expressions.
 *
 * requires: expressions of dtype i32 built from constants, variables and
 * + - * / % min max (anything else is kept as an opaque atom).
 * guarantees: an equal expression; sums of multiples of the same atom are
 * collected (io*32 + 31 - io*32 + 1 becomes 32), constants folded, and
 * min/max decided where the difference of their operands has one sign
 * over the ranges of the variables (IterVar lo and extent) it involves.
 *
 * The core is a linear form: a constant plus coefficient * atom terms,
 * where an atom is a variable or any expression the form cannot look into.
 * Division and modulo by a positive constant are folded only when exact
 * for every value (all coefficients divisible), since C truncates toward
 * zero and the values are not known to be non-negative.
 */
#include <string.h>

#include "sched/sched.h"

#define MAX_TERMS 32

typedef struct Linear {
    int64_t constant;
    int n;
    Expr *atom[MAX_TERMS];
    int64_t coef[MAX_TERMS];
    bool overflow; /* too many terms or an overflow: keep the original */
} Linear;

static const Span no_span = { 0, 0 };

Expr *sch_int(Arena *a, int64_t v)
{
    return ex_const(a, no_span, DT_I32, (double)v);
}

bool sch_uses_var(const Expr *e, const IterVar *v)
{
    if (!e)
        return false;
    if (e->kind == EX_VAR && e->var == v)
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (sch_uses_var(e->args[i], v))
            return true;
    return false;
}

bool sch_const_int(const Expr *e, int64_t *out)
{
    if (e->kind != EX_CONST)
        return false;
    *out = (int64_t)e->value;
    return true;
}

/* Structural equality of two expressions. */
static bool expr_equal(const Expr *x, const Expr *y)
{
    if (x == y)
        return true;
    if (x->kind != y->kind || x->nargs != y->nargs || x->dtype != y->dtype)
        return false;
    switch (x->kind) {
    case EX_CONST:
        return x->value == y->value;
    case EX_VAR:
        return x->var == y->var;
    case EX_LOAD:
        if (x->tensor != y->tensor)
            return false;
        break;
    case EX_OP:
        if (x->op != y->op)
            return false;
        break;
    case EX_REDUCE:
        return false;
    }
    for (int i = 0; i < x->nargs; i++)
        if (!expr_equal(x->args[i], y->args[i]))
            return false;
    return true;
}

static void add_term(Linear *l, Expr *atom, int64_t coef)
{
    for (int i = 0; i < l->n; i++)
        if (expr_equal(l->atom[i], atom)) {
            if (__builtin_add_overflow(l->coef[i], coef, &l->coef[i]))
                l->overflow = true;
            return;
        }
    if (l->n == MAX_TERMS) {
        l->overflow = true;
        return;
    }
    l->atom[l->n] = atom;
    l->coef[l->n++] = coef;
}

static void to_linear(Expr *e, int64_t scale, Linear *l)
{
    int64_t c;
    if (l->overflow)
        return;
    if (e->kind == EX_CONST) {
        int64_t v;
        if (__builtin_mul_overflow((int64_t)e->value, scale, &v) ||
            __builtin_add_overflow(l->constant, v, &l->constant))
            l->overflow = true;
        return;
    }
    if (e->kind == EX_OP && e->dtype == DT_I32) {
        switch (e->op) {
        case OP_ADD:
            to_linear(e->args[0], scale, l);
            to_linear(e->args[1], scale, l);
            return;
        case OP_SUB:
            to_linear(e->args[0], scale, l);
            to_linear(e->args[1], -scale, l);
            return;
        case OP_NEG:
            to_linear(e->args[0], -scale, l);
            return;
        case OP_MUL:
            if (sch_const_int(e->args[1], &c) || sch_const_int(e->args[0], &c)) {
                Expr *other = e->args[1]->kind == EX_CONST ? e->args[0] : e->args[1];
                int64_t s;
                if (__builtin_mul_overflow(scale, c, &s)) {
                    l->overflow = true;
                    return;
                }
                to_linear(other, s, l);
                return;
            }
            break;
        default:
            break;
        }
    }
    add_term(l, e, scale);
}

static Expr *mk2(Arena *a, Op op, Expr *x, Expr *y)
{
    Expr *args[2] = { x, y };
    return ex_op(a, no_span, op, DT_I32, args, 2);
}

static Expr *from_linear(Arena *a, const Linear *l)
{
    Expr *e = NULL;
    for (int i = 0; i < l->n; i++) {
        int64_t c = l->coef[i];
        if (c == 0)
            continue;
        int64_t mag = c < 0 ? -c : c;
        Expr *t = mag == 1 ? l->atom[i] : mk2(a, OP_MUL, l->atom[i], sch_int(a, mag));
        if (!e)
            e = c < 0 ? ex_op(a, no_span, OP_NEG, DT_I32, &t, 1) : t;
        else
            e = mk2(a, c < 0 ? OP_SUB : OP_ADD, e, t);
    }
    if (!e)
        return sch_int(a, l->constant);
    if (l->constant > 0)
        e = mk2(a, OP_ADD, e, sch_int(a, l->constant));
    else if (l->constant < 0)
        e = mk2(a, OP_SUB, e, sch_int(a, -l->constant));
    return e;
}

/* The difference X - Y if it is a constant. */
static bool const_difference(Expr *x, Expr *y, int64_t *out)
{
    Linear l = {0};
    to_linear(x, 1, &l);
    to_linear(y, -1, &l);
    if (l.overflow)
        return false;
    for (int i = 0; i < l.n; i++)
        if (l.coef[i] != 0)
            return false;
    *out = l.constant;
    return true;
}

/* A range lo .. hi, either end possibly infinite. */
typedef struct Range {
    int64_t lo, hi;
    bool lo_inf, hi_inf;
} Range;

static bool expr_range(const Expr *e, Range *r, int depth);

/* The range of L's value over every value its atoms can take.  A variable
 * with an extent ranges over lo .. lo+extent-1; one without (a loop over a
 * region, from a symbolic start) over 0 .. infinity, since every loop
 * variable indexes a tensor and is never negative.  Any other atom (a
 * division, remainder, min or max the linear form cannot look into)
 * ranges as expr_range finds, each atom on its own: f / 16 and f % 16 are
 * bounded apart, which is wider than their sum's range, never narrower.
 * False if an atom's range is unknown or a product overflows. */
static bool linear_bounds(const Linear *l, Range *out, int depth)
{
    Range s = { l->constant, l->constant, false, false };
    for (int i = 0; i < l->n; i++) {
        int64_t k = l->coef[i];
        if (k == 0)
            continue;
        Range a;
        if (!expr_range(l->atom[i], &a, depth + 1))
            return false;
        int64_t p = 0, q = 0;
        bool p_inf = a.lo_inf, q_inf = a.hi_inf; /* k * lo, k * hi */
        if ((!p_inf && __builtin_mul_overflow(k, a.lo, &p)) ||
            (!q_inf && __builtin_mul_overflow(k, a.hi, &q)))
            return false;
        if (k < 0) { /* k * lo is the top */
            int64_t t = p;
            bool t_inf = p_inf;
            p = q, p_inf = q_inf;
            q = t, q_inf = t_inf;
        }
        s.lo_inf = s.lo_inf || p_inf;
        s.hi_inf = s.hi_inf || q_inf;
        if ((!p_inf && __builtin_add_overflow(s.lo, p, &s.lo)) ||
            (!q_inf && __builtin_add_overflow(s.hi, q, &s.hi)))
            return false;
    }
    *out = s;
    return true;
}

/* The range of the i32 expression E over its variables' ranges.  A
 * quotient by a positive constant C is monotonic in its dividend (C's
 * truncating division too); a remainder of a dividend never negative lies
 * in 0 .. C-1, or between the ends' remainders where both ends share a
 * quotient. */
static bool expr_range(const Expr *e, Range *r, int depth)
{
    if (depth > 16)
        return false;
    if (e->kind == EX_CONST) {
        *r = (Range){ (int64_t)e->value, (int64_t)e->value, false, false };
        return true;
    }
    if (e->kind == EX_VAR) {
        const IterVar *v = e->var;
        if (v->extent <= 0)
            *r = (Range){ 0, 0, false, true };
        else
            *r = (Range){ v->lo, v->lo + v->extent - 1, false, false };
        return true;
    }
    if (e->kind != EX_OP || e->dtype != DT_I32)
        return false;
    int64_t c;
    Range x, y;
    switch (e->op) {
    case OP_ADD:
    case OP_SUB:
    case OP_NEG:
    case OP_MUL: {
        Linear l = {0};
        to_linear((Expr *)e, 1, &l);
        if (l.overflow || (l.n == 1 && l.coef[0] == 1 && l.constant == 0 && l.atom[0] == e))
            return false; /* a product of two non-constants: an atom of its own */
        return linear_bounds(&l, r, depth);
    }
    case OP_DIV:
    case OP_MOD:
        if (!sch_const_int(e->args[1], &c) || c <= 0 || !expr_range(e->args[0], &x, depth + 1) ||
            x.lo_inf)
            return false;
        if (e->op == OP_DIV) {
            *r = (Range){ x.lo / c, x.hi_inf ? 0 : x.hi / c, false, x.hi_inf };
            return true;
        }
        if (x.lo < 0)
            return false;
        if (!x.hi_inf && x.lo / c == x.hi / c)
            *r = (Range){ x.lo % c, x.hi % c, false, false };
        else
            *r = (Range){ 0, c - 1, false, false };
        return true;
    case OP_MIN:
    case OP_MAX:
        if (!expr_range(e->args[0], &x, depth + 1) || !expr_range(e->args[1], &y, depth + 1))
            return false;
        if (e->op == OP_MIN) {
            r->lo_inf = x.lo_inf || y.lo_inf;
            r->lo = x.lo_inf ? y.lo : y.lo_inf ? x.lo : x.lo < y.lo ? x.lo : y.lo;
            r->hi_inf = x.hi_inf && y.hi_inf;
            r->hi = x.hi_inf ? y.hi : y.hi_inf ? x.hi : x.hi < y.hi ? x.hi : y.hi;
        } else {
            r->lo_inf = x.lo_inf && y.lo_inf;
            r->lo = x.lo_inf ? y.lo : y.lo_inf ? x.lo : x.lo > y.lo ? x.lo : y.lo;
            r->hi_inf = x.hi_inf || y.hi_inf;
            r->hi = x.hi_inf ? y.hi : y.hi_inf ? x.hi : x.hi > y.hi ? x.hi : y.hi;
        }
        return true;
    default:
        return false;
    }
}

/* The range of X - Y over every value its variables can take
 * (linear_bounds).  *LO_INF / *HI_INF say a bound is infinite. */
static bool difference_range(Expr *x, Expr *y, int64_t *lo, int64_t *hi, bool *lo_inf,
                             bool *hi_inf)
{
    Linear l = {0};
    to_linear(x, 1, &l);
    to_linear(y, -1, &l);
    Range r;
    if (l.overflow || !linear_bounds(&l, &r, 0))
        return false;
    *lo = r.lo, *hi = r.hi, *lo_inf = r.lo_inf, *hi_inf = r.hi_inf;
    return true;
}

/* The range of L's value (as in linear_bounds); false if it is unknown or
 * its bottom infinite (*HI_INF says the top is). */
static bool linear_range(const Linear *l, int64_t *lo, int64_t *hi, bool *hi_inf)
{
    Range r;
    if (!linear_bounds(l, &r, 0) || r.lo_inf)
        return false;
    *lo = r.lo, *hi = r.hi, *hi_inf = r.hi_inf;
    return true;
}

/* X / C and X % C for a constant C > 1 (E is one of them): X = C*Q + R
 * where Q collects the terms whose coefficients C divides and R the rest,
 * each region variable (a loop over a region: lo .. lo + trip - 1) written
 * as its start plus an offset 0 .. trip-1 so that its start can divide.
 * When R always lies in 0 .. C-1 and Q is never negative, X >= 0, C's
 * truncating division is floor division, and X / C = Q, X % C = X - C*Q:
 * with j in [jo*64, jo*64 + 64), j / 64 is jo and j % 64 is j - jo*64. */
static Expr *divide(Arena *a, Expr *e, int64_t c)
{
    Linear x = {0}, q = {0}, r = {0};
    to_linear(e->args[0], 1, &x);
    if (x.overflow)
        return e;
    for (int i = 0; i < x.n; i++) {
        int64_t k = x.coef[i];
        Expr *atom = x.atom[i];
        if (k == 0)
            continue;
        if (k % c == 0) {
            add_term(&q, atom, k / c);
            continue;
        }
        const IterVar *v = atom->kind == EX_VAR ? atom->var : NULL;
        if (!v || !v->region_lo || v->region_trip <= 0) {
            add_term(&r, atom, k);
            continue;
        }
        /* k * v = k * lo + k * t, t in 0 .. trip-1 */
        Linear lo = {0};
        to_linear(v->region_lo, k, &lo);
        if (lo.overflow)
            return e;
        for (int t = 0; t < lo.n; t++) {
            if (lo.coef[t] % c == 0)
                add_term(&q, lo.atom[t], lo.coef[t] / c);
            else
                add_term(&r, lo.atom[t], lo.coef[t]);
        }
        x.constant += lo.constant; /* split below with the rest */
        IterVar *off = arena_alloc(a, sizeof *off);
        off->name = v->name;
        off->extent = v->region_trip;
        add_term(&r, ex_var(a, no_span, off), k);
    }
    int64_t rc = x.constant % c;
    if (rc < 0)
        rc += c;
    q.constant = (x.constant - rc) / c;
    r.constant = rc;
    int64_t rlo, rhi, qlo, qhi;
    bool rinf, qinf;
    if (q.overflow || r.overflow || !linear_range(&r, &rlo, &rhi, &rinf) || rinf || rlo < 0 ||
        rhi >= c || !linear_range(&q, &qlo, &qhi, &qinf) || qlo < 0)
        return e;
    Expr *quot = from_linear(a, &q);
    if (e->op == OP_DIV)
        return quot;
    return sch_simplify(a, mk2(a, OP_SUB, e->args[0], mk2(a, OP_MUL, quot, sch_int(a, c))));
}

Expr *sch_simplify(Arena *a, Expr *e)
{
    if (e->kind != EX_OP || e->dtype != DT_I32)
        return e;
    Expr *args[3];
    bool changed = false;
    for (int i = 0; i < e->nargs; i++) {
        args[i] = sch_simplify(a, e->args[i]);
        changed = changed || args[i] != e->args[i];
    }
    if (changed)
        e = ex_op(a, e->span, e->op, e->dtype, args, e->nargs);
    int64_t x, y, d;
    switch (e->op) {
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_NEG: {
        Linear l = {0};
        to_linear(e, 1, &l);
        return l.overflow ? e : from_linear(a, &l);
    }
    case OP_DIV:
    case OP_MOD:
        if (sch_const_int(e->args[0], &x) && sch_const_int(e->args[1], &y) && y != 0 &&
            !(x == INT64_MIN && y == -1))
            return sch_int(a, e->op == OP_DIV ? x / y : x % y);
        if (sch_const_int(e->args[1], &y) && y == 1)
            return e->op == OP_DIV ? e->args[0] : sch_int(a, 0);
        if (sch_const_int(e->args[1], &y) && y > 1)
            return divide(a, e, y);
        return e;
    case OP_MIN:
    case OP_MAX: {
        int64_t lo, hi;
        bool lo_inf, hi_inf;
        if (const_difference(e->args[0], e->args[1], &d)) {
            bool first = e->op == OP_MIN ? d <= 0 : d >= 0;
            return first ? e->args[0] : e->args[1];
        }
        /* decided by the variables' ranges: min(io*4 + 3, 511) with io < 128 */
        if (difference_range(e->args[0], e->args[1], &lo, &hi, &lo_inf, &hi_inf)) {
            if (!hi_inf && hi <= 0)
                return e->op == OP_MIN ? e->args[0] : e->args[1];
            if (!lo_inf && lo >= 0)
                return e->op == OP_MIN ? e->args[1] : e->args[0];
        }
        return e;
    }
    default:
        return e;
    }
}

/* Is E, a sum of loop variables and constants, inside i32 over their ranges? */
static bool linear_fits_i32(Expr *e)
{
    Linear l = {0};
    int64_t lo, hi;
    bool hi_inf;
    to_linear(e, 1, &l);
    return !l.overflow && linear_range(&l, &lo, &hi, &hi_inf) && !hi_inf && lo >= INT32_MIN &&
           hi <= INT32_MAX;
}

bool sch_folds_fit_i32(Expr *e)
{
    if (e->kind == EX_OP && (e->op == OP_DIV || e->op == OP_MOD) && !linear_fits_i32(e->args[0]))
        return false;
    if (e->kind == EX_OP && (e->op == OP_MIN || e->op == OP_MAX) &&
        (!linear_fits_i32(e->args[0]) || !linear_fits_i32(e->args[1])))
        return false;
    for (int i = 0; i < e->nargs; i++)
        if (!sch_folds_fit_i32(e->args[i]))
            return false;
    return true;
}

bool sch_provably_le(Expr *x, Expr *y)
{
    int64_t d, lo, hi;
    bool lo_inf, hi_inf;
    if (const_difference(x, y, &d))
        return d <= 0;
    return difference_range(x, y, &lo, &hi, &lo_inf, &hi_inf) && !hi_inf && hi <= 0;
}

Expr *sch_add(Arena *a, Expr *x, Expr *y) { return sch_simplify(a, mk2(a, OP_ADD, x, y)); }
Expr *sch_sub(Arena *a, Expr *x, Expr *y) { return sch_simplify(a, mk2(a, OP_SUB, x, y)); }
Expr *sch_mul(Arena *a, Expr *x, Expr *y) { return sch_simplify(a, mk2(a, OP_MUL, x, y)); }
Expr *sch_min(Arena *a, Expr *x, Expr *y) { return sch_simplify(a, mk2(a, OP_MIN, x, y)); }
Expr *sch_max(Arena *a, Expr *x, Expr *y) { return sch_simplify(a, mk2(a, OP_MAX, x, y)); }

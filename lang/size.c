/* size.c — size expressions: sizes that depend on run-time dims.
 *
 * A SizeExpr is what an extent or a shape entry is when it depends on
 * run-time dims (doc/runtime-dims.md): numbers and declared dims under
 * + - * / % min max.  Sema builds one beside each int64 bound it stores,
 * the passes compare them (te_same_shape, te_same_range in ir.c), the
 * evaluator computes them at given sizes, and the printer writes them.
 *
 * The simplifier is the reason the type exists: interval arithmetic alone
 * loses the correlation between two uses of one dim (M - M over 1..4096
 * is -4095..4095), which would refuse x[i + 2] with i in 0..M and x of
 * M + 2 elements.  So every expression is first put in a normal form, a
 * polynomial: a constant plus terms COEF * ATOM * ATOM ..., where an atom
 * is a dim or an "opaque" node (/ % min max whose operands are already
 * normal and which did not fold), like terms collected and terms sorted
 * by their atoms' keys.  Two normal forms are the same polynomial exactly
 * when they are the same tree, which is what te_size_same compares.  The
 * interval of a normal form is then exact when every dim appears once and
 * nothing is opaque (te_size_exact): a multilinear function of
 * independent intervals takes its extremes at the corners.
 *
 * Scratch polynomials come from the caller's arena, like the trees.
 */
#include <string.h>

#include "texc.h"

/* ------------------------------------------------------------------ */
/* Constructors.                                                       */

static SizeExpr *new_size(Arena *a, SizeKind k)
{
    SizeExpr *e = arena_alloc(a, sizeof *e);
    e->kind = k;
    return e;
}

const SizeExpr *te_size_num(Arena *a, int64_t v)
{
    SizeExpr *e = new_size(a, SZ_NUM);
    e->value = v;
    return e;
}

const SizeExpr *te_size_dim(Arena *a, int dim, const char *name)
{
    SizeExpr *e = new_size(a, SZ_DIM);
    e->dim = dim;
    e->name = name;
    return e;
}

const SizeExpr *te_size_op(Arena *a, SizeKind k, const SizeExpr *x, const SizeExpr *y)
{
    TE_ASSERT(k != SZ_NUM && k != SZ_DIM && x && y);
    SizeExpr *e = new_size(a, k);
    e->a = x;
    e->b = y;
    return e;
}

bool te_size_is_num(const SizeExpr *e, int64_t *v)
{
    if (!e || e->kind != SZ_NUM)
        return false;
    if (v)
        *v = e->value;
    return true;
}

bool te_size_same(const SizeExpr *a, const SizeExpr *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->kind != b->kind)
        return false;
    switch (a->kind) {
    case SZ_NUM: return a->value == b->value;
    case SZ_DIM: return a->dim == b->dim;
    default: return te_size_same(a->a, b->a) && te_size_same(a->b, b->b);
    }
}

bool te_size_uses(const SizeExpr *e, int dim)
{
    if (e->kind == SZ_NUM)
        return false;
    if (e->kind == SZ_DIM)
        return e->dim == dim;
    return te_size_uses(e->a, dim) || te_size_uses(e->b, dim);
}

/* ------------------------------------------------------------------ */
/* Text.  + - at one level, * / % above it; a right operand at its
 * operator's level is parenthesised, as the graph printer does. */

static int size_prec(const SizeExpr *e)
{
    switch (e->kind) {
    case SZ_ADD: case SZ_SUB: return 1;
    case SZ_MUL: case SZ_DIV: case SZ_MOD: return 2;
    case SZ_NUM: return e->value < 0 ? 3 : 4;
    default: return 4;
    }
}

static const char *const size_texts[] = { TE_SIZE_KINDS(TE_ENUM_NAME) };

static char *size_text(Arena *a, const SizeExpr *e, bool canonical, int min_prec)
{
    char *s;
    switch (e->kind) {
    case SZ_NUM:
        s = arena_printf(a, "%lld", (long long)e->value);
        break;
    case SZ_DIM:
        s = canonical ? arena_printf(a, "d%d", e->dim) : arena_strdup(a, e->name);
        break;
    case SZ_MIN:
    case SZ_MAX:
        s = arena_printf(a, "%s(%s, %s)", size_texts[e->kind], size_text(a, e->a, canonical, 0),
                         size_text(a, e->b, canonical, 0));
        break;
    default:
        if (e->kind == SZ_MUL && te_size_is_num(e->a, NULL) && e->a->value == -1) {
            /* the normal form's -x */
            s = arena_printf(a, "-%s", size_text(a, e->b, canonical, 3));
            if (min_prec > 2)
                s = arena_printf(a, "(%s)", s);
            return s;
        }
        s = arena_printf(a, "%s %s %s", size_text(a, e->a, canonical, size_prec(e)),
                         size_texts[e->kind], size_text(a, e->b, canonical, size_prec(e) + 1));
        break;
    }
    return size_prec(e) < min_prec ? arena_printf(a, "(%s)", s) : s;
}

char *te_size_str(Arena *a, const SizeExpr *e)
{
    return size_text(a, e, false, 0);
}

char *te_size_canonical(Arena *a, const SizeExpr *e)
{
    return size_text(a, e, true, 0);
}

/* ------------------------------------------------------------------ */
/* Evaluation and intervals.                                           */

bool te_size_arith(SizeKind k, int64_t x, int64_t y, int64_t *out)
{
    switch (k) {
    case SZ_ADD: return !__builtin_add_overflow(x, y, out);
    case SZ_SUB: return !__builtin_sub_overflow(x, y, out);
    case SZ_MUL: return !__builtin_mul_overflow(x, y, out);
    case SZ_DIV:
        if (y == 0 || (x == INT64_MIN && y == -1))
            return false;
        *out = x / y;
        return true;
    case SZ_MOD:
        if (y == 0)
            return false;
        *out = y == -1 ? 0 : x % y;
        return true;
    case SZ_MIN: *out = x < y ? x : y; return true;
    case SZ_MAX: *out = x > y ? x : y; return true;
    default: TE_UNREACHABLE();
    }
}

int64_t te_size_at(const SizeExpr *e, const int64_t *values)
{
    int64_t v;
    if (!te_size_eval(e, values, &v))
        te_internal_error(__FILE__, __LINE__, "a size overflows or divides by 0 in its dims' ranges");
    return v;
}

bool te_size_eval(const SizeExpr *e, const int64_t *values, int64_t *out)
{
    int64_t x, y;
    switch (e->kind) {
    case SZ_NUM: *out = e->value; return true;
    case SZ_DIM: *out = values[e->dim]; return true;
    default:
        return te_size_eval(e->a, values, &x) && te_size_eval(e->b, values, &y) &&
               te_size_arith(e->kind, x, y, out);
    }
}

/* The same rules as sema's IntRange (frontend/sema.c): + - * / at the
 * corners (/ with a divisor of one sign), % bounded by the divisor's
 * magnitude with the dividend's sign, min and max componentwise. */
bool te_size_range(const SizeExpr *e, const Dim *dims, int64_t *lo, int64_t *hi)
{
    int64_t alo, ahi, blo, bhi;
    switch (e->kind) {
    case SZ_NUM: *lo = *hi = e->value; return true;
    case SZ_DIM: *lo = dims[e->dim].lo; *hi = dims[e->dim].hi; return true;
    default: break;
    }
    if (!te_size_range(e->a, dims, &alo, &ahi) || !te_size_range(e->b, dims, &blo, &bhi))
        return false;
    switch (e->kind) {
    case SZ_MIN:
        *lo = alo < blo ? alo : blo;
        *hi = ahi < bhi ? ahi : bhi;
        return true;
    case SZ_MAX:
        *lo = alo > blo ? alo : blo;
        *hi = ahi > bhi ? ahi : bhi;
        return true;
    case SZ_MOD: {
        if (blo <= 0 && bhi >= 0)
            return false;
        int64_t m = blo == INT64_MIN ? INT64_MAX : blo < 0 ? -blo : blo;
        int64_t mh = bhi < 0 ? -bhi : bhi;
        m = (mh > m ? mh : m) - 1;
        *lo = alo >= 0 ? 0 : alo > -m ? alo : -m;
        *hi = ahi <= 0 ? 0 : ahi < m ? ahi : m;
        return true;
    }
    case SZ_DIV:
        if (blo <= 0 && bhi >= 0)
            return false;
        break;
    default:
        break;
    }
    int64_t c[4];
    if (!te_size_arith(e->kind, alo, blo, &c[0]) || !te_size_arith(e->kind, alo, bhi, &c[1]) ||
        !te_size_arith(e->kind, ahi, blo, &c[2]) || !te_size_arith(e->kind, ahi, bhi, &c[3]))
        return false;
    *lo = *hi = c[0];
    for (int i = 1; i < 4; i++) {
        if (c[i] < *lo)
            *lo = c[i];
        if (c[i] > *hi)
            *hi = c[i];
    }
    return true;
}

/* Marks in SEEN (64 dims at most are tracked) each dim of E; false if one
 * is seen twice or E has an opaque node. */
static bool exact_walk(const SizeExpr *e, uint64_t *seen)
{
    switch (e->kind) {
    case SZ_NUM:
        return true;
    case SZ_DIM: {
        if (e->dim >= 64)
            return false;
        uint64_t bit = (uint64_t)1 << e->dim;
        if (*seen & bit)
            return false;
        *seen |= bit;
        return true;
    }
    case SZ_ADD: case SZ_SUB: case SZ_MUL:
        return exact_walk(e->a, seen) && exact_walk(e->b, seen);
    default:
        return false;
    }
}

bool te_size_exact(const SizeExpr *e)
{
    uint64_t seen = 0;
    return exact_walk(e, &seen);
}

/* ------------------------------------------------------------------ */
/* The normal form.                                                    */

#define MAX_TERMS 16 /* a polynomial with more is left as it is */
#define MAX_ATOMS 6  /* atoms in one term */

typedef struct Term {
    int64_t coef; /* never 0 */
    int natoms;   /* at least 1 */
    const SizeExpr *atoms[MAX_ATOMS]; /* sorted by key */
    const char *keys[MAX_ATOMS];
} Term;

typedef struct Poly {
    int64_t constant;
    int nterms;
    Term terms[MAX_TERMS]; /* sorted by term_cmp, none alike */
} Poly;

typedef struct Norm {
    Arena *arena;
    bool failed; /* a coefficient overflowed or a polynomial grew too big */
} Norm;

/* Terms order by their atoms' keys, then by how many: M < M * N < N. */
static int term_cmp(const Term *x, const Term *y)
{
    for (int i = 0; i < x->natoms && i < y->natoms; i++) {
        int c = strcmp(x->keys[i], y->keys[i]);
        if (c)
            return c;
    }
    return x->natoms - y->natoms;
}

static Poly *poly_new(Norm *n, int64_t c)
{
    Poly *p = arena_alloc(n->arena, sizeof *p);
    p->constant = c;
    return p;
}

/* A dim's key sorts by its position, before every opaque atom ("~..."). */
static Poly *poly_atom(Norm *n, const SizeExpr *atom)
{
    Poly *p = poly_new(n, 0);
    p->nterms = 1;
    p->terms[0].coef = 1;
    p->terms[0].natoms = 1;
    p->terms[0].atoms[0] = atom;
    p->terms[0].keys[0] = atom->kind == SZ_DIM ? arena_printf(n->arena, "d%06d", atom->dim)
                                               : arena_printf(n->arena, "~%s", te_size_canonical(n->arena, atom));
    return p;
}

/* Adds COEF * T to P, keeping the terms sorted and collected. */
static void poly_add_term(Norm *n, Poly *p, const Term *t, int64_t coef)
{
    int i = 0;
    while (i < p->nterms && term_cmp(&p->terms[i], t) < 0)
        i++;
    if (i < p->nterms && term_cmp(&p->terms[i], t) == 0) {
        if (__builtin_add_overflow(p->terms[i].coef, coef, &p->terms[i].coef))
            n->failed = true;
        if (p->terms[i].coef == 0) {
            memmove(&p->terms[i], &p->terms[i + 1], sizeof *t * (size_t)(p->nterms - i - 1));
            p->nterms--;
        }
        return;
    }
    if (coef == 0)
        return;
    if (p->nterms == MAX_TERMS) {
        n->failed = true;
        return;
    }
    memmove(&p->terms[i + 1], &p->terms[i], sizeof *t * (size_t)(p->nterms - i));
    p->terms[i] = *t;
    p->terms[i].coef = coef;
    p->nterms++;
}

/* X + SIGN * Y */
static Poly *poly_add(Norm *n, const Poly *x, const Poly *y, int sign)
{
    Poly *p = poly_new(n, 0);
    *p = *x;
    int64_t c;
    if (__builtin_mul_overflow(y->constant, (int64_t)sign, &c) ||
        __builtin_add_overflow(p->constant, c, &p->constant))
        n->failed = true;
    for (int i = 0; i < y->nterms; i++) {
        if (__builtin_mul_overflow(y->terms[i].coef, (int64_t)sign, &c))
            n->failed = true;
        poly_add_term(n, p, &y->terms[i], c);
    }
    return p;
}

/* The product of terms X and Y (atoms merged in key order), coefficient
 * aside; false if it has too many atoms. */
static bool term_mul(const Term *x, const Term *y, Term *out)
{
    if (x->natoms + y->natoms > MAX_ATOMS)
        return false;
    int i = 0, j = 0;
    out->natoms = 0;
    while (i < x->natoms || j < y->natoms) {
        bool take_x = j == y->natoms || (i < x->natoms && strcmp(x->keys[i], y->keys[j]) <= 0);
        const Term *from = take_x ? x : y;
        int k = take_x ? i++ : j++;
        out->atoms[out->natoms] = from->atoms[k];
        out->keys[out->natoms++] = from->keys[k];
    }
    return true;
}

static Poly *poly_mul(Norm *n, const Poly *x, const Poly *y)
{
    Poly *p = poly_new(n, 0);
    int64_t c;
    if (__builtin_mul_overflow(x->constant, y->constant, &p->constant))
        n->failed = true;
    for (int side = 0; side < 2; side++) {
        const Poly *terms = side ? y : x, *other = side ? x : y;
        for (int i = 0; i < terms->nterms; i++) {
            if (__builtin_mul_overflow(terms->terms[i].coef, other->constant, &c))
                n->failed = true;
            poly_add_term(n, p, &terms->terms[i], c);
        }
    }
    for (int i = 0; i < x->nterms; i++)
        for (int j = 0; j < y->nterms; j++) {
            Term t;
            if (!term_mul(&x->terms[i], &y->terms[j], &t) ||
                __builtin_mul_overflow(x->terms[i].coef, y->terms[j].coef, &c)) {
                n->failed = true;
                continue;
            }
            poly_add_term(n, p, &t, c);
        }
    return p;
}

/* Does K divide every coefficient of P and its constant? */
static bool poly_divisible(const Poly *p, int64_t k)
{
    if (k == 0 || (k == -1 && p->constant == INT64_MIN) || p->constant % k)
        return false;
    for (int i = 0; i < p->nterms; i++)
        if ((k == -1 && p->terms[i].coef == INT64_MIN) || p->terms[i].coef % k)
            return false;
    return true;
}

static const SizeExpr *poly_expr(Norm *n, const Poly *p);

static Poly *poly_of(Norm *n, const SizeExpr *e);

/* / % min max of normal operands X and Y, folded where it can be. */
static Poly *poly_opaque(Norm *n, SizeKind k, Poly *x, Poly *y)
{
    bool xnum = x->nterms == 0, ynum = y->nterms == 0;
    int64_t v;
    if (xnum && ynum && te_size_arith(k, x->constant, y->constant, &v))
        return poly_new(n, v);
    /* (C * P + R) / C with P's terms divisible by C and no less than
       their coefficients' sum (every atom a dim, so at least 1, every
       coefficient positive): at the least C * P + R is that sum plus R,
       and where that is not negative, / truncates as floor does, so the
       quotient is P + floor(R / C) and the remainder R's floor modulus:
       the flat views of a run-time dim, (8 * M - 1) / 8, are M - 1 */
    if ((k == SZ_DIV || k == SZ_MOD) && ynum && y->constant > 0 && !xnum) {
        Poly terms = *x;
        terms.constant = 0;
        int64_t least = x->constant;
        bool floor_ok = poly_divisible(&terms, y->constant);
        for (int i = 0; floor_ok && i < x->nterms; i++) {
            floor_ok = x->terms[i].coef > 0 && least <= INT64_MAX - x->terms[i].coef;
            least += floor_ok ? x->terms[i].coef : 0;
            for (int j = 0; floor_ok && j < x->terms[i].natoms; j++)
                floor_ok = x->terms[i].atoms[j]->kind == SZ_DIM;
        }
        if (floor_ok && least >= 0 && x->constant % y->constant != 0) {
            int64_t c = y->constant, r = x->constant;
            int64_t fq = r / c - (r % c < 0), fr = r - fq * c;
            if (k == SZ_MOD)
                return poly_new(n, fr);
            Poly *q = poly_new(n, fq);
            *q = terms;
            q->constant = fq;
            for (int i = 0; i < q->nterms; i++)
                q->terms[i].coef /= c;
            return q;
        }
    }
    switch (k) {
    case SZ_DIV:
        if (ynum && poly_divisible(x, y->constant)) {
            Poly *q = poly_new(n, x->constant / y->constant);
            *q = *x;
            q->constant = x->constant / y->constant;
            for (int i = 0; i < q->nterms; i++)
                q->terms[i].coef /= y->constant;
            return q;
        }
        break;
    case SZ_MOD:
        if (ynum && poly_divisible(x, y->constant))
            return poly_new(n, 0);
        break;
    case SZ_MIN:
    case SZ_MAX: {
        Poly *d = poly_add(n, x, y, -1);
        if (d->nterms == 0) /* x - y is a number: one of them is smaller everywhere */
            return (k == SZ_MIN) == (d->constant < 0) ? x : y;
        break;
    }
    default:
        TE_UNREACHABLE();
    }
    const SizeExpr *a = poly_expr(n, x), *b = poly_expr(n, y);
    if ((k == SZ_MIN || k == SZ_MAX) &&
        strcmp(te_size_canonical(n->arena, a), te_size_canonical(n->arena, b)) > 0) {
        const SizeExpr *t = a; /* commutative: one order for both */
        a = b;
        b = t;
    }
    return poly_atom(n, te_size_op(n->arena, k, a, b));
}

static Poly *poly_of(Norm *n, const SizeExpr *e)
{
    switch (e->kind) {
    case SZ_NUM: return poly_new(n, e->value);
    case SZ_DIM: return poly_atom(n, e);
    default: break;
    }
    Poly *x = poly_of(n, e->a), *y = poly_of(n, e->b);
    switch (e->kind) {
    case SZ_ADD: return poly_add(n, x, y, 1);
    case SZ_SUB: return poly_add(n, x, y, -1);
    case SZ_MUL: return poly_mul(n, x, y);
    default: return poly_opaque(n, e->kind, x, y);
    }
}

/* COEF * ATOMS... with |COEF|: the caller adds or subtracts it. */
static const SizeExpr *term_expr(Norm *n, const Term *t, int64_t coef)
{
    const SizeExpr *e = t->atoms[0];
    for (int i = 1; i < t->natoms; i++)
        e = te_size_op(n->arena, SZ_MUL, e, t->atoms[i]);
    return coef == 1 ? e : te_size_op(n->arena, SZ_MUL, te_size_num(n->arena, coef), e);
}

/* Terms with a positive coefficient first (in order), then the others
 * subtracted, then the constant: 2 * M + N - K + 3.  With no positive
 * term, a positive constant leads: 3 - M. */
static const SizeExpr *poly_expr(Norm *n, const Poly *p)
{
    const SizeExpr *e = NULL;
    for (int i = 0; i < p->nterms; i++)
        if (p->terms[i].coef > 0) {
            const SizeExpr *t = term_expr(n, &p->terms[i], p->terms[i].coef);
            e = e ? te_size_op(n->arena, SZ_ADD, e, t) : t;
        }
    if (!e && p->constant > 0)
        e = te_size_num(n->arena, p->constant);
    for (int i = 0; i < p->nterms; i++)
        if (p->terms[i].coef < 0) {
            int64_t c = p->terms[i].coef;
            if (!e) {
                e = term_expr(n, &p->terms[i], c); /* -M, -2 * M */
                continue;
            }
            e = c == INT64_MIN ? te_size_op(n->arena, SZ_ADD, e, term_expr(n, &p->terms[i], c))
                               : te_size_op(n->arena, SZ_SUB, e, term_expr(n, &p->terms[i], -c));
        }
    bool led = false; /* a positive term leads: the constant is not in yet */
    for (int i = 0; i < p->nterms; i++)
        led = led || p->terms[i].coef > 0;
    if (!e)
        return te_size_num(n->arena, p->constant);
    if (led && p->constant > 0)
        e = te_size_op(n->arena, SZ_ADD, e, te_size_num(n->arena, p->constant));
    else if (p->constant < 0 && p->constant != INT64_MIN)
        e = te_size_op(n->arena, SZ_SUB, e, te_size_num(n->arena, -p->constant));
    else if (p->constant < 0)
        e = te_size_op(n->arena, SZ_ADD, e, te_size_num(n->arena, p->constant));
    return e;
}

const SizeExpr *te_size_simplify(Arena *a, const SizeExpr *e)
{
    if (!e)
        return NULL;
    Norm n = { a, false };
    Poly *p = poly_of(&n, e);
    if (n.failed)
        return e;
    return poly_expr(&n, p);
}

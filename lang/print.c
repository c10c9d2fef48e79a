/* print.c — the graph printer (--dump=graph, golden files) and the
 * canonical form that names a workload in the tuning log.
 *
 * The printer writes one line per dim, input, stage and output:
 *
 *     dim K = 768
 *     input w : const f32[768, 3072]
 *     stage y : f32[512, 3072]  y[i, j] = sum(k in 0..768) x[i, k] * w[k, j]
 *     output y
 *
 * Expressions get the fewest parentheses C's precedence allows
 * (|| < && < == != < < <= > >= < + - < * / % < unary), except that a
 * right operand of the same level is always parenthesised (the tree is
 * printed as built: a - (b - c), a + (b + c)), comparisons never chain, and
 * a reduction, which extends as far right as it can, is parenthesised
 * whenever it is an operator's operand.  Integral constants of type i32,
 * bool or none print as integers; other constants print in the shortest
 * "%.Ng" (N >= 9) that reads back to the same double, always with a '.'
 * or an exponent, so that an f32 1.0 is never mistaken for an integer.
 *
 * The canonical form is the same text with every name replaced by its
 * position: tensors by t<id>, index variables by v<k> numbered in the
 * order they first appear in their stage; dims are left out (shapes are
 * numbers already) and typed constants carry their dtype ("0.5:f32").
 * Operator result types are not printed: sema derives them from the
 * operands, whose types the canonical text determines.  Renaming anything
 * keeps the canonical text, hence te_hash; changing any number, dtype,
 * flag or the structure changes it.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "texc.h"

/* Binding strength, loosest first. */
enum {
    PREC_REDUCE,  /* sum(k in ..) body: extends to the right */
    PREC_OR,      /* || */
    PREC_AND,     /* && */
    PREC_EQ,      /* == != */
    PREC_CMP,     /* < <= > >= */
    PREC_ADD,     /* + - */
    PREC_MUL,     /* * / % */
    PREC_UNARY,   /* -a !a, negative constants */
    PREC_PRIMARY, /* names, loads, calls, non-negative constants */
};

typedef struct Printer {
    FILE *out;
    bool canonical;        /* names by position, constants with dtypes */
    const IterVar **vars;  /* canonical: v<k> is vars[k] */
    int nvars, cap;
    const Graph *g;        /* the graph being printed, or NULL */
    Arena scratch;         /* size expressions' text; freed at the end */
} Printer;

/* A size expression as this printer writes it: dims by name, or by
 * position in the canonical form. */
static const char *size_text(Printer *p, const SizeExpr *e)
{
    return p->canonical ? te_size_canonical(&p->scratch, e) : te_size_str(&p->scratch, e);
}

/* FMT with a number LO and the size expression E, as in " in %lld..%s". */
static void print_size(Printer *p, const char *fmt, int64_t lo, const SizeExpr *e)
{
    fprintf(p->out, fmt, (long long)lo, size_text(p, te_size_simplify(&p->scratch, e)));
}

static int binary_prec(Op op)
{
    switch (op) {
    case OP_OR:
        return PREC_OR;
    case OP_AND:
        return PREC_AND;
    case OP_EQ:
    case OP_NE:
        return PREC_EQ;
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
        return PREC_CMP;
    case OP_ADD:
    case OP_SUB:
        return PREC_ADD;
    case OP_MUL:
    case OP_DIV:
    case OP_MOD:
        return PREC_MUL;
    default:
        TE_UNREACHABLE();
    }
}

static bool const_is_negative(const Expr *e)
{
    return e->kind == EX_CONST && signbit(e->value) && !isnan(e->value);
}

static int expr_prec(const Expr *e)
{
    switch (e->kind) {
    case EX_CONST:
        return const_is_negative(e) ? PREC_UNARY : PREC_PRIMARY;
    case EX_VAR:
    case EX_LOAD:
        return PREC_PRIMARY;
    case EX_REDUCE:
        return PREC_REDUCE;
    case EX_OP:
        if (op_is_call(e->op))
            return PREC_PRIMARY;
        return op_arity(e->op) == 1 ? PREC_UNARY : binary_prec(e->op);
    }
    TE_UNREACHABLE();
}

/* Writes V as the printer shows a constant of type T into BUF. */
static void format_const(char *buf, size_t size, double v, DType t)
{
    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v < 0 ? "-inf" : "inf");
        return;
    }
    bool integer_type = !dtype_is_float(t);
    bool negative_zero = v == 0.0 && signbit(v);
    if (integer_type && v == trunc(v) && fabs(v) < 1e15 && !negative_zero) {
        snprintf(buf, size, "%lld", (long long)v);
        return;
    }
    /* An f32 (or narrower) value needs only to read back as the same
     * float, which "%.9g" always achieves; other values as the same
     * double. */
    bool single = (t == DT_F32 || t == DT_F16 || t == DT_BF16) && (double)(float)v == v;
    for (int digits = 9; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, v);
        double back = strtod(buf, NULL);
        if (single ? (float)back == (float)v : back == v)
            break;
    }
    if (!strpbrk(buf, ".e"))
        strncat(buf, ".0", size - strlen(buf) - 1);
}

/* The canonical number of variable V within the current stage. */
static int var_number(Printer *p, const IterVar *v)
{
    for (int k = 0; k < p->nvars; k++)
        if (p->vars[k] == v)
            return k;
    if (p->nvars == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 16;
        p->vars = realloc(p->vars, (size_t)p->cap * sizeof *p->vars);
        if (!p->vars) {
            fprintf(stderr, "texc: out of memory\n");
            exit(1);
        }
    }
    p->vars[p->nvars] = v;
    return p->nvars++;
}

static void print_var(Printer *p, const IterVar *v)
{
    if (p->canonical)
        fprintf(p->out, "v%d", var_number(p, v));
    else
        fputs(v->name ? v->name : "?", p->out);
}

/* The canonical form leaves prepack stages out (sched/layout.c: a layout
 * is the schedule's business, and the tuner assigns it per candidate), so
 * positions count the other tensors only. */
static int canonical_id(const Printer *p, const Tensor *t)
{
    int id = t->id;
    for (int i = 0; p->g && i < t->id && i < p->g->ntensors; i++)
        id -= p->g->tensors[i]->packs != NULL;
    return id;
}

static void print_tensor_name(Printer *p, const Tensor *t)
{
    if (p->canonical)
        fprintf(p->out, "t%d", canonical_id(p, t));
    else
        fputs(t->name ? t->name : "?", p->out);
}

static void print_expr(Printer *p, const Expr *e, int min_prec);

/* "a, b, c": arguments and indices, each a full expression. */
static void print_list(Printer *p, Expr *const *args, int n)
{
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", p->out);
        print_expr(p, args[i], PREC_REDUCE);
    }
}

static void print_op(Printer *p, const Expr *e)
{
    FILE *out = p->out;
    if (e->op == OP_CAST) {
        fprintf(out, "%s(", dtype_name(e->dtype));
        print_list(p, e->args, e->nargs);
        fputc(')', out);
    } else if (op_is_call(e->op)) {
        fprintf(out, "%s(", op_text(e->op));
        print_list(p, e->args, e->nargs);
        fputc(')', out);
    } else if (e->nargs == 1) {
        const Expr *a = e->args[0];
        /* "--x" would read as a decrement: write -(-x). */
        bool clash = e->op == OP_NEG &&
                     ((a->kind == EX_OP && a->op == OP_NEG) || const_is_negative(a));
        fputs(op_text(e->op), out);
        print_expr(p, a, clash ? PREC_PRIMARY : PREC_UNARY);
    } else {
        int prec = binary_prec(e->op);
        bool chains = prec != PREC_EQ && prec != PREC_CMP;
        print_expr(p, e->args[0], chains ? prec : prec + 1);
        fprintf(out, " %s ", op_text(e->op));
        print_expr(p, e->args[1], prec + 1);
    }
}

/* sum(k in 0..768, l in 0..3) body */
static void print_reduce(Printer *p, const Expr *e)
{
    fprintf(p->out, "%s(", reducer_name(e->reducer));
    for (int i = 0; i < e->naxes; i++) {
        const IterVar *v = e->axes[i];
        if (i)
            fputs(", ", p->out);
        print_var(p, v);
        if (v->extent_size)
            print_size(p, " in %lld..%s", v->lo,
                       v->lo ? te_size_op(&p->scratch, SZ_ADD, v->extent_size,
                                          te_size_num(&p->scratch, v->lo))
                             : v->extent_size);
        else
            fprintf(p->out, " in %lld..%lld", (long long)v->lo,
                    (long long)(v->lo + v->extent));
    }
    fputs(") ", p->out);
    print_expr(p, e->args[0], PREC_REDUCE);
}

static void print_expr(Printer *p, const Expr *e, int min_prec)
{
    bool parens = expr_prec(e) < min_prec;
    if (parens)
        fputc('(', p->out);
    switch (e->kind) {
    case EX_CONST: {
        char buf[64];
        format_const(buf, sizeof buf, e->value, e->dtype);
        fputs(buf, p->out);
        if (p->canonical && e->dtype != DT_NONE)
            fprintf(p->out, ":%s", dtype_name(e->dtype));
        break;
    }
    case EX_VAR:
        print_var(p, e->var);
        break;
    case EX_LOAD:
        if (p->canonical && e->tensor->packs) {
            /* W_packed[j / P, a.., j % P] is W[a.., j, ..], j at pack_dim */
            Expr *src[TE_MAX_RANK];
            te_unpacked_index(e, src);
            print_tensor_name(p, e->tensor->packs);
            fputc('[', p->out);
            print_list(p, src, e->nargs - 1);
            fputc(']', p->out);
            break;
        }
        print_tensor_name(p, e->tensor);
        if (e->nargs) {
            fputc('[', p->out);
            print_list(p, e->args, e->nargs);
            fputc(']', p->out);
        }
        break;
    case EX_OP:
        print_op(p, e);
        break;
    case EX_REDUCE:
        print_reduce(p, e);
        break;
    }
    if (parens)
        fputc(')', p->out);
}

void te_print_expr(FILE *out, const Expr *e)
{
    Printer p = { .out = out };
    print_expr(&p, e, PREC_REDUCE);
    arena_free(&p.scratch);
}

/* f32[512, 768]; over run-time dims f32[M + 2, 768] */
static void print_type(Printer *p, const Tensor *t)
{
    fprintf(p->out, "%s[", dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++) {
        fputs(d ? ", " : "", p->out);
        if (t->shape_size[d])
            fputs(size_text(p, t->shape_size[d]), p->out);
        else
            fprintf(p->out, "%lld", (long long)t->shape[d]);
    }
    fputc(']', p->out);
}

static void print_tensor(Printer *p, const Tensor *t)
{
    FILE *out = p->out;
    if (t->kind == TK_INPUT) {
        fputs("input ", out);
        print_tensor_name(p, t);
        fprintf(out, " : %s", t->is_const ? "const " : "");
        print_type(p, t);
        fputc('\n', out);
        return;
    }
    p->nvars = 0; /* variables are numbered per stage */
    fputs("stage ", out);
    print_tensor_name(p, t);
    fputs(" : ", out);
    print_type(p, t);
    fputs("  ", out);
    print_tensor_name(p, t);
    if (t->rank) {
        fputc('[', out);
        for (int d = 0; d < t->rank; d++) {
            if (d)
                fputs(", ", out);
            print_var(p, t->vars[d]);
        }
        fputc(']', out);
    }
    fputs(" = ", out);
    print_expr(p, t->body, PREC_REDUCE);
    fputc('\n', out);
}

static void print_graph(Printer *p, const Graph *g)
{
    for (int i = 0; i < g->ndims; i++) {
        const Dim *d = &g->dims[i];
        if (p->canonical) {
            /* the ranges are part of the workload; static dims are in
               the shapes already */
            if (d->runtime && d->declared)
                fprintf(p->out, "dim d%d in %lld..%lld\n", i, (long long)d->lo, (long long)d->hi);
        } else if (!d->runtime) {
            fprintf(p->out, "dim %s = %lld\n", d->name, (long long)d->value);
        } else if (d->declared) {
            fprintf(p->out, "dim %s in %lld..%lld = %lld  # run-time\n", d->name, (long long)d->lo,
                    (long long)d->hi, (long long)d->hint);
        } else {
            fprintf(p->out, "dim %s = %s  # run-time, %lld..%lld, hint %lld\n", d->name,
                    size_text(p, d->size), (long long)d->lo, (long long)d->hi, (long long)d->hint);
        }
    }
    p->g = g;
    for (int i = 0; i < g->ntensors; i++)
        if (!p->canonical || !g->tensors[i]->packs)
            print_tensor(p, g->tensors[i]);
    for (int i = 0; i < g->noutputs; i++) {
        fputs("output ", p->out);
        print_tensor_name(p, g->outputs[i]);
        fputc('\n', p->out);
    }
    for (int i = 0; i < g->nchecks; i++) {
        const RtCheck *c = &g->checks[i];
        fprintf(p->out, "check %s >= 0", size_text(p, c->value));
        if (!p->canonical)
            fprintf(p->out, "  # else: %s", c->message);
        fputc('\n', p->out);
    }
}

void te_print_graph(FILE *out, const Graph *g)
{
    Printer p = { .out = out };
    print_graph(&p, g);
    arena_free(&p.scratch);
}

char *te_canonical(Arena *a, const Graph *g)
{
    char *text = NULL;
    size_t len = 0;
    Printer p = { .canonical = true };
    p.out = open_memstream(&text, &len);
    if (!p.out) {
        fprintf(stderr, "texc: out of memory\n");
        exit(1);
    }
    print_graph(&p, g);
    if (fclose(p.out) != 0 || !text) {
        fprintf(stderr, "texc: out of memory\n");
        exit(1);
    }
    free(p.vars);
    arena_free(&p.scratch);
    char *copy = arena_strndup(a, text, len);
    free(text);
    return copy;
}

void te_hash(const Graph *g, char out[33])
{
    Arena scratch = { 0 };
    const char *text = te_canonical(&scratch, g);
    XXH128_hash_t h = XXH3_128bits(text, strlen(text));
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
    arena_free(&scratch);
}

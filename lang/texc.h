/* texc.h — the tensor-expression IR and everything that works on it.
 *
 * This is the one internal header of lang/: arenas, source text and
 * diagnostics, dtypes, the expression and tensor-graph IR, the printer and
 * canonical hash, the reference evaluator and .npy I/O.  Other directories
 * include it and add their own header beside it (frontend/frontend.h,
 * sched/sched.h, ...).
 *
 * Invariants of a checked Graph (what frontend/sema.c guarantees):
 *   - every tensor has a dtype, a rank <= TE_MAX_RANK and positive extents
 *     whose element count fits in int64 and whose byte size fits in int64;
 *   - graph->tensors is in dependency order: inputs first (declaration
 *     order), then stages, each after every tensor its body loads;
 *   - every Expr has a dtype; every IterVar an extent; loads have exactly
 *     rank(tensor) indices, all of dtype i32;
 *   - no cycles, no unresolved names.
 */
#ifndef TEXC_LANG_H
#define TEXC_LANG_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TE_VERSION PACKAGE_VERSION
#define TE_MAX_RANK 16 /* deeper tensors are rejected with a diagnostic */
/* Fusion merges stages into a kernel while its body, expanded, holds at
 * most this many expression nodes (pass_fuse.c); the default schedule
 * inlines under the same bound (sched/default.c). */
#define TE_MAX_KERNEL_NODES 1024
/* pass_fuse.c's cost model: what keeping a stage costs per element (its
 * store, and its reader's load), in te_fuse_op_cost's units (one vector
 * add) */
#define TE_FUSE_MEMORY_COST 2.0

/* ------------------------------------------------------------------ */
/* arena.c — bump allocation; a compilation frees everything at once.  */

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
    ArenaBlock *head; /* newest block first */
} Arena;

void *arena_alloc(Arena *a, size_t size); /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void arena_free(Arena *a);

/* A growable array of pointers, allocated from an arena. */
typedef struct PtrVec {
    void **items;
    int len, cap;
} PtrVec;
void vec_push(Arena *a, PtrVec *v, void *item);

/* A map from pointers, or from strings by their contents, to
 * non-negative ints, allocated from an arena: open addressing, kept at
 * most half full, so that a lookup costs the same in a program of any
 * size.  All zeroes is an empty map; a map is used with the map_ or the
 * strmap_ functions, never both. */
typedef struct PtrMap {
    const void **keys; /* NULL: a free slot */
    int *vals;
    size_t cap; /* 0 or a power of two */
    size_t len;
} PtrMap;
/* Maps KEY (not NULL) to VAL >= 0; false, and the old value kept, if KEY
 * was there already. */
bool map_put(Arena *a, PtrMap *m, const void *key, int val);
void map_set(Arena *a, PtrMap *m, const void *key, int val); /* replaces */
int map_get(const PtrMap *m, const void *key); /* -1 where KEY is absent */
/* The same with string keys (not copied: they must outlive the map). */
void strmap_set(Arena *a, PtrMap *m, const char *key, int val);
int strmap_get(const PtrMap *m, const char *key);

/* ------------------------------------------------------------------ */
/* diag.c — source text, spans and diagnostics.                        */

/* A byte range [begin, end) in Source.text; line and column are computed
 * only when a diagnostic is printed. */
typedef struct Span {
    uint32_t begin, end;
} Span;

typedef struct Source {
    const char *path; /* as the user named it */
    char *text;       /* NUL-terminated copy; may contain earlier NULs */
    size_t len;       /* bytes, not counting the final NUL */
} Source;

/* Reads PATH into a Source; on failure prints "texc: cannot read PATH: why"
 * and returns false. */
/* The longest program src_load reads (/dev/zero is refused, not read
 * until memory runs out). */
#define TE_MAX_SOURCE_BYTES (64 << 20)
bool src_load(Arena *a, Source *src, const char *path);
void src_from_string(Source *src, const char *path, char *text, size_t len);

/* User diagnostics: "file:line:col: error: msg", the source line, a caret
 * under the span.  Errors are counted in diag_errors. */
extern int diag_errors;
extern int diag_warnings;
extern bool diag_quiet;          /* -q: warnings are not printed */
extern FILE *diag_stream;        /* stderr unless a test redirects it */
void diag_error(const Source *src, Span sp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_warning(const Source *src, Span sp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_note(const Source *src, Span sp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_verror(const Source *src, Span sp, const char *fmt, va_list ap);

/* Internal errors are never the user's fault and never share a path with
 * user diagnostics. */
_Noreturn void te_internal_error(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define TE_ASSERT(cond)                                                  \
    do {                                                                 \
        if (!(cond))                                                     \
            te_internal_error(__FILE__, __LINE__, "assertion '%s' failed", \
                              #cond);                                    \
    } while (0)
#define TE_UNREACHABLE() te_internal_error(__FILE__, __LINE__, "unreachable")

/* ------------------------------------------------------------------ */
/* X-macro tables.  Each list of kinds in texc is one table, NAME(X), a row
 * X(ENUM, "name", more columns ...) per kind (a table of kinds without a
 * name has only ENUM).  Every file reads the column it needs out of the
 * one table; these are the columns all of them need:
 *     typedef enum Kind { KINDS(TE_ENUM_ITEM) K_COUNT } Kind;
 *     static const char *const kind_names[] = { KINDS(TE_ENUM_NAME) };
 * (Each takes a row of any length; the "" they add meets C11's rule that
 * a variadic macro is given at least one argument for its "...".) */
#define TE_ENUM_ITEM(...) TE_ENUM_ITEM_(__VA_ARGS__, "")
#define TE_ENUM_ITEM_(e, ...) e,
#define TE_ENUM_NAME(...) TE_ENUM_NAME_(__VA_ARGS__, "")
#define TE_ENUM_NAME_(e, name, ...) name,

/* dtype.c: the index of NAME in a table's names NAMES[0..N), or N when it
 * is none of them: each table's lookup by name. */
int te_name_index(const char *const *names, int n, const char *name);

/* ------------------------------------------------------------------ */
/* dtype.c — element types.                                            */

/*      enum     name    C type      bytes float npy  */
#define TE_DTYPES(X)                                   \
    X(DT_BOOL, "bool", "bool", 1, 0, "|b1")            \
    X(DT_I32, "i32", "int32_t", 4, 0, "<i4")           \
    X(DT_U8, "u8", "uint8_t", 1, 0, "|u1")             \
    X(DT_I8, "i8", "int8_t", 1, 0, "|i1")              \
    X(DT_F16, "f16", "_Float16", 2, 1, "<f2")          \
    X(DT_BF16, "bf16", "uint16_t", 2, 1, "<f4")        \
    X(DT_F32, "f32", "float", 4, 1, "<f4")             \
    X(DT_F64, "f64", "double", 8, 1, "<f8")

typedef enum DType {
    DT_NONE = 0, /* not yet inferred; an untyped literal */
    TE_DTYPES(TE_ENUM_ITEM)
    DT_COUNT
} DType;

const char *dtype_name(DType t);  /* "f32" */
const char *dtype_ctype(DType t); /* "float" */
int dtype_bytes(DType t);
bool dtype_is_float(DType t);
const char *dtype_npy(DType t); /* bf16 is written to .npy as f32 */
DType dtype_lookup(const char *name, size_t len); /* DT_NONE if unknown */
/* u8 and i8 hold values but compute nothing: an operator or reduction
 * takes them only through a cast (language.md 4.2). */
bool dtype_is_narrow_int(DType t);
/* Rounds V to the nearest value of T (ties to even for floats; truncation
 * toward zero, saturating, for i32, u8 and i8; != 0 for bool). */
double dtype_round(DType t, double v);
/* V rounded to the precision the optimizer computes dtype T's constants in:
 * f32 for f16 and bf16 (the code generators compute those in f32). */
double te_arith_round(DType t, double v);
/* IEEE binary16 bits of V rounded to f16, and back (.npy '<f2' data). */
uint16_t dtype_f16_bits(double v);
double dtype_f16_value(uint16_t bits);

/* ------------------------------------------------------------------ */
/* Operators.  One table: the name the printer uses, arity, and whether it
 * is an intrinsic call (printed as name(args)) or an infix operator. */

/*     enum          text        arity call */
#define TE_OPS(X)                          \
    X(OP_NEG, "-", 1, 0)                   \
    X(OP_NOT, "!", 1, 0)                   \
    X(OP_EXP, "exp", 1, 1)                 \
    X(OP_LOG, "log", 1, 1)                 \
    X(OP_SQRT, "sqrt", 1, 1)               \
    X(OP_RSQRT, "rsqrt", 1, 1)             \
    X(OP_TANH, "tanh", 1, 1)               \
    X(OP_ERF, "erf", 1, 1)                 \
    X(OP_ABS, "abs", 1, 1)                 \
    X(OP_GELU, "gelu", 1, 1)               \
    X(OP_SIGMOID, "sigmoid", 1, 1)         \
    X(OP_RELU, "relu", 1, 1)               \
    X(OP_CAST, "cast", 1, 1)               \
    X(OP_ADD, "+", 2, 0)                   \
    X(OP_SUB, "-", 2, 0)                   \
    X(OP_MUL, "*", 2, 0)                   \
    X(OP_DIV, "/", 2, 0)                   \
    X(OP_MOD, "%", 2, 0)                   \
    X(OP_LT, "<", 2, 0)                    \
    X(OP_LE, "<=", 2, 0)                   \
    X(OP_GT, ">", 2, 0)                    \
    X(OP_GE, ">=", 2, 0)                   \
    X(OP_EQ, "==", 2, 0)                   \
    X(OP_NE, "!=", 2, 0)                   \
    X(OP_AND, "&&", 2, 0)                  \
    X(OP_OR, "||", 2, 0)                   \
    X(OP_MIN, "min", 2, 1)                 \
    X(OP_MAX, "max", 2, 1)                 \
    X(OP_POW, "pow", 2, 1)                 \
    X(OP_SELECT, "select", 3, 1)

typedef enum Op { TE_OPS(TE_ENUM_ITEM) OP_COUNT } Op;

const char *op_text(Op op);
int op_arity(Op op);
bool op_is_call(Op op);

/* i32 arithmetic, which wraps modulo 2^32 at every operation: V (an
 * integer, as a double) taken modulo 2^32 into i32's range (NaN and the
 * infinities are 0, a fraction is truncated), and OP (+ - * / % of two
 * operands, unary - and abs) applied to A and B (B unused by the unary
 * ones) so taken.  x / 0 and x % 0 are 0; INT32_MIN / -1 wraps to
 * INT32_MIN and INT32_MIN % -1 is 0; abs(INT32_MIN) is INT32_MIN. */
int32_t te_i32_wrap(double v);
bool te_i32_wraps(Op op); /* is OP one te_i32_arith computes? */
int32_t te_i32_arith(Op op, double a, double b);

/* Reductions. */
#define TE_REDUCERS(X)  \
    X(RED_SUM, "sum")   \
    X(RED_PROD, "prod") \
    X(RED_MAX, "max")   \
    X(RED_MIN, "min")

typedef enum Reducer { TE_REDUCERS(TE_ENUM_ITEM) RED_COUNT } Reducer;
const char *reducer_name(Reducer r);
Reducer reducer_lookup(const char *name); /* RED_COUNT if unknown */
double reducer_identity(Reducer r);

/* Targets: what a schedule is written for and what a build compiles to.
 * The name is how .te files (schedule cpu { ... }), --target and the
 * tuning log's records spell it; everything else holds the enum. */
/*     enum          name      what a build writes */
#define TE_TARGETS(X)                                              \
    X(TARGET_CPU, "cpu")   /* C11 with OpenMP (codegen/c.c)      */ \
    X(TARGET_CUDA, "cuda") /* a cubin via NVRTC (codegen/cuda.c) */

typedef enum Target { TE_TARGETS(TE_ENUM_ITEM) TARGET_COUNT } Target;
const char *target_name(Target t);
Target target_lookup(const char *name); /* TARGET_COUNT if unknown */

/* ------------------------------------------------------------------ */
/* size.c — size expressions: a size that depends on run-time dims.     */

/* A size expression is a small tree over the program's declared run-time
 * dims (doc/runtime-dims.md).  A dim computed from them (dim MP = M + 2)
 * never appears as a leaf: it is replaced by its expression, so the
 * leaves are independent and interval arithmetic over their ranges is
 * sound.  Trees are immutable and shared; te_size_simplify gives the
 * normal form that te_size_same compares structurally.
 *      enum      text   what it uses */
#define TE_SIZE_KINDS(X)                                  \
    X(SZ_NUM, "")      /* value                      */  \
    X(SZ_DIM, "")      /* dim (index), name          */  \
    X(SZ_ADD, "+")     /* a + b                      */  \
    X(SZ_SUB, "-")     /* a - b                      */  \
    X(SZ_MUL, "*")     /* a * b                      */  \
    X(SZ_DIV, "/")     /* a / b, truncating as in C  */  \
    X(SZ_MOD, "%")     /* a % b, the dividend's sign */  \
    X(SZ_MIN, "min")   /* min(a, b)                  */  \
    X(SZ_MAX, "max")   /* max(a, b)                  */

typedef enum SizeKind { TE_SIZE_KINDS(TE_ENUM_ITEM) SZ_COUNT } SizeKind;

typedef struct SizeExpr SizeExpr;
struct SizeExpr {
    SizeKind kind;
    int64_t value;       /* SZ_NUM */
    int dim;             /* SZ_DIM: its index in Graph.dims */
    const char *name;    /* SZ_DIM: the dim's name, for messages */
    const SizeExpr *a, *b; /* the operands of the others */
};

struct Dim;
const SizeExpr *te_size_num(Arena *a, int64_t v);
const SizeExpr *te_size_dim(Arena *a, int dim, const char *name);
const SizeExpr *te_size_op(Arena *a, SizeKind k, const SizeExpr *x, const SizeExpr *y);
/* The normal form of E: a polynomial over dims and opaque atoms (/ % min
 * max whose operands are normal), constants folded, like terms collected,
 * terms in a fixed order; so (M + 2) - (M + 2) is 0 and (M + 2) - M is 2.
 * Division and remainder by a number that divides every coefficient
 * are exact; min and max of operands whose difference is a number pick
 * one.  Where a coefficient would overflow, E is returned as it is. */
const SizeExpr *te_size_simplify(Arena *a, const SizeExpr *e);
/* Is E the number *V?  (Simplify first to find out whether it is one.) */
bool te_size_is_num(const SizeExpr *e, int64_t *v);
/* Are A and B the same tree?  For normal forms: the same size for every
 * value of the dims. */
bool te_size_same(const SizeExpr *a, const SizeExpr *b);
/* Every value E takes as each dim in it ranges over DIMS[dim].lo..hi lies
 * in *LO..*HI (interval arithmetic: sound; tight when te_size_exact).
 * False if a value may overflow int64 or a divisor's range holds 0. */
bool te_size_range(const SizeExpr *e, const struct Dim *dims, int64_t *lo, int64_t *hi);
/* Is te_size_range of E exact, every value in LO..HI taken at some sizes?
 * True when E uses only + - * of numbers and dims, each dim at most once. */
bool te_size_exact(const SizeExpr *e);
/* E at the dims' values VALUES[dim]; false on overflow or division by 0. */
bool te_size_eval(const SizeExpr *e, const int64_t *values, int64_t *out);
/* X op Y for the arithmetic kinds, in int64 (/ truncates, % keeps the
 * dividend's sign, x % -1 is 0); false on overflow or a zero divisor. */
bool te_size_arith(SizeKind k, int64_t x, int64_t y, int64_t *out);
/* The same where sema has proved it defined (a size in its dims' ranges):
 * failure is an internal error. */
int64_t te_size_at(const SizeExpr *e, const int64_t *values);
/* Does E use dim number DIM? */
bool te_size_uses(const SizeExpr *e, int dim);
/* "M + 2", fewest parentheses, as --dump=graph and messages print it; the
 * canonical text names dims by position ("d0 + 2") for the workload hash. */
char *te_size_str(Arena *a, const SizeExpr *e);
char *te_size_canonical(Arena *a, const SizeExpr *e);

/* ------------------------------------------------------------------ */
/* ir.c — expressions, tensors, the graph.                             */

/* An index variable: a stage's spatial axis or a reduction axis. */
typedef struct IterVar {
    const char *name;
    Span span;
    int64_t lo;     /* first value (0 for spatial axes); a compile-time
                       constant even where the extent is not */
    int64_t extent; /* number of values: lo .. lo+extent-1; where it
                       depends on run-time dims, its static bound (the
                       hi of its range) */
    const SizeExpr *extent_size; /* the extent over run-time dims, in
                       normal form; NULL when it is static */
    bool reduce;    /* a reduction axis */
    int id;         /* unique within the graph: the evaluator's slot */
    /* lowering: a loop over a region runs from a symbolic start; there
     * extent is 0 and the variable ranges over region_lo ..
     * region_lo + region_trip - 1 at most (index simplification uses it) */
    struct Expr *region_lo;
    int64_t region_trip;
    /* lowering: the variable of a run-time dim, 1 + its index in
     * Graph.dims (a parameter of the generated functions, ranging over
     * the dim's lo .. lo + extent - 1); 0 for every other variable */
    int size_dim;
} IterVar;

typedef struct Tensor Tensor;
typedef struct Expr Expr;

#define TE_EXPR_KINDS(X)                                        \
    X(EX_CONST)  /* value, dtype                            */  \
    X(EX_VAR)    /* var: an index variable, dtype i32       */  \
    X(EX_LOAD)   /* tensor[args[0..nargs)]                  */  \
    X(EX_OP)     /* op(args[0..arity)); OP_CAST casts to dtype */ \
    X(EX_REDUCE) /* reducer over axes[0..naxes) of args[0]  */

typedef enum ExprKind { TE_EXPR_KINDS(TE_ENUM_ITEM) } ExprKind;

struct Expr {
    ExprKind kind;
    Span span;
    DType dtype;     /* the result's type */
    double value;    /* EX_CONST */
    IterVar *var;    /* EX_VAR */
    Tensor *tensor;  /* EX_LOAD */
    Op op;           /* EX_OP */
    Reducer reducer; /* EX_REDUCE */
    IterVar **axes;  /* EX_REDUCE */
    int naxes;       /* EX_REDUCE */
    Expr **args;     /* EX_LOAD indices, EX_OP operands, EX_REDUCE body */
    int nargs;
};

typedef enum TensorKind {
    TK_INPUT, /* data the caller passes in */
    TK_STAGE, /* defined by an expression over index variables */
} TensorKind;

struct Tensor {
    const char *name;
    Span span; /* the definition's name */
    TensorKind kind;
    DType dtype;
    int rank;
    int64_t shape[TE_MAX_RANK]; /* where an entry depends on run-time
                                   dims, its static bound (range's hi) */
    const SizeExpr *shape_size[TE_MAX_RANK]; /* that entry over run-time
                                   dims, in normal form; NULL: static */
    bool is_const;  /* TK_INPUT marked const: a weight, may be prepacked */
    bool is_output; /* named in an output statement */
    IterVar **vars; /* TK_STAGE: one spatial variable per dimension */
    Expr *body;     /* TK_STAGE */
    int id;         /* position in Graph.tensors */
    int uses;       /* loads of this tensor in other stages' bodies */
    const char **aliases; /* names of stages the optimizer merged into this
                             one: schedules may name any of them */
    unsigned char *alias_pass; /* by alias: the PassId of the pass that
                                  merged it (te_optimize records it after
                                  each pass; PASS_COUNT until then) */
    int naliases;
    const char *anchor;   /* the reduction a fused kernel is built around,
                             or NULL: the stage itself */
    PtrVec fuse_notes;    /* char *: the fusion pass's decisions about this
                             kernel, why each member was fused and why the
                             stage was not (--dump=kernels) */
    /* a packing stage (sched/layout.c): tensor PACKS in panels of
     * PACK_WIDTH along its dimension PACK_DIM.  A const input's is a
     * prepack stage (te_prepacked), computed once, ahead of time, by the
     * generated NAME_prepack; an intermediate's is computed at every call,
     * after its producer, for its one reader.  PACK_WIDTH 0: one panel as
     * wide as PACKS's run-time extent along PACK_DIM, read as
     * W_packed[0, a.., j] (a transposed copy; layout.c) */
    Tensor *packs;
    int64_t pack_width;
    int pack_dim;
    /* k interleaved in the panels' rows, PACK_GROUP consecutive values of
     * W's reduction index K_DIM in each (0: not): 2 for bf16 pairs, what
     * vdpbf16ps multiplies in one 32-bit lane (layout.c) */
    int pack_group;
    int pack_kdim;
};

/* Is T a prepack stage: a const input in panels, computed ahead of time
 * by NAME_prepack (not at every call)? */
static inline bool te_prepacked(const Tensor *t)
{
    return t->packs && t->packs->kind == TK_INPUT && t->packs->is_const;
}

/* A load LOAD of a packing stage, W_packed[j / P, a.., j % P] (or, k
 * interleaved in groups of G, W_packed[j / P, k / G, G*(j % P) + k % G];
 * or, one panel of run-time width, W_packed[0, a.., j]),
 * as the indices of W it reads: SRC[0 .. W's rank) receives a.. with j
 * at pack_dim (graph.c). */
void te_unpacked_index(const Expr *load, Expr **src);

/* A size.  A static dim is a compile-time constant: VALUE, and LO = HI =
 * HINT = VALUE.  A run-time dim (RUNTIME) is one the caller will give at
 * run time: declared with a range (dim M in 1..4096 [= 512]), or computed
 * from such dims (dim MP = M + 2), whose range sema derives by interval
 * arithmetic and its SIZE expression.  Extents and shapes over run-time
 * dims carry size expressions beside their static bounds (IterVar,
 * Tensor); until the backends take run-time sizes (doc/runtime-dims.md)
 * te_require_static_dims keeps such a graph from being built, tuned or
 * evaluated but by te_eval_at.  -D NAME=V makes a run-time dim static (V
 * in its range). */
typedef struct Dim {
    const char *name;
    Span span;
    int64_t value;   /* static: the size; run-time: its value when every
                        declared range is at its maximum */
    bool overridden; /* set with -D */
    bool runtime;    /* a size known only at run time */
    bool declared;   /* run-time with a range written in the program
                        (not computed from other dims) */
    int64_t lo, hi;  /* the values it may take, inclusive (1 <= lo) */
    int64_t hint;    /* the size estimates and default schedules use: the
                        written hint, else hi; a computed dim's is its
                        value at its operands' hints */
    Span range_span; /* declared: where LO..HI is written */
    const SizeExpr *size; /* run-time: its size over the declared dims
                             (itself when declared), in normal form */
} Dim;

/* A check sema could not decide over the dims' ranges (an index bound, a
 * positive extent): the generated entry function must test it before it
 * writes anything (phase 3), and te_eval_at tests it at its sizes. */
typedef struct RtCheck {
    const SizeExpr *value; /* the check holds when VALUE >= 0 */
    Span span;             /* what it checks */
    const char *message;   /* what fails when it does not hold */
} RtCheck;

/* A stage as the program wrote it, kept by te_optimize so that messages
 * about schedules can speak of what the user wrote after the passes have
 * merged, renamed or removed it. */
typedef struct StageOrigin {
    const char *name;       /* its name in the program */
    Tensor *tensor;         /* its tensor: merged stages keep theirs, though
                               it is no longer in Graph.tensors */
    const char **var_names; /* its index variables' names as written (fusion
                               gives a kernel its anchor's) */
} StageOrigin;

struct Schedule; /* sched/sched.h */

typedef struct Graph {
    const Source *src;
    Tensor **tensors; /* dependency order, see the invariants above */
    int ntensors;
    Tensor **outputs; /* declaration order */
    int noutputs;
    Tensor **inputs;  /* declaration order */
    int ninputs;
    Dim *dims;
    int ndims;
    int nvars; /* IterVar ids are 0 .. nvars-1 */
    struct Schedule **schedules;
    int nschedules;
    bool layouts; /* builds assign layouts for their schedule's tiles
                     (sched/layout.c); false under -fno-layout */
    bool no_flash; /* -fno-flash: the default schedule computes no
                      attention in a flash kernel (sched/default.c) */
    bool strict_fp; /* optimized under -fstrict-fp: schedules may not
                       reassociate float reductions either */
    StageOrigin *origins; /* the stages before te_optimize, in dependency
                             order; none if it did not run */
    int norigins;
    RtCheck *checks; /* run-time checks (RtCheck), in source order */
    int nchecks;
} Graph;

Expr *ex_const(Arena *a, Span sp, DType t, double v);
Expr *ex_var(Arena *a, Span sp, IterVar *v);
Expr *ex_load(Arena *a, Span sp, Tensor *t, Expr **idx, int n);
Expr *ex_op(Arena *a, Span sp, Op op, DType t, Expr **args, int n);
Expr *ex_reduce(Arena *a, Span sp, Reducer r, IterVar **axes, int naxes,
                Expr *body);
int64_t tensor_elems(const Tensor *t);
/* Do A and B have the same shape, and the same size expressions, at
 * every value of the run-time dims?  Do IterVars A and B range over the
 * same values at every size? */
bool te_same_shape(const Tensor *a, const Tensor *b);
bool te_same_range(const IterVar *a, const IterVar *b);
/* Records NAME, and the names merged into FROM (may be NULL), as merged
 * into INTO, so that schedules naming them find INTO. */
void te_add_aliases(Arena *a, Tensor *into, const char *name, const Tensor *from);
/* A copy of E with new operands ARGS (as many as E has). */
Expr *te_rebuild(Arena *a, const Expr *e, Expr **args);
/* A copy of E with VARS[i] replaced by VALUES[i]. */
Expr *te_subst_vars(Arena *a, Expr *e, IterVar **vars, Expr **values, int n);
/* Does PRED(x, CTX) hold for E or any expression inside it? */
bool te_expr_any(const Expr *e, bool (*pred)(const Expr *x, const void *ctx), const void *ctx);
/* For te_expr_any: is X a load of the tensor T? */
static inline bool te_is_load_of(const Expr *x, const void *t)
{
    return x->kind == EX_LOAD && x->tensor == t;
}

/* For te_expr_any: is X an integer division or remainder by a constant
 * other than 1 (an index that unflattens: im2col's q / OW, q % OW)? */
static inline bool te_is_index_division(const Expr *x, const void *ctx)
{
    (void)ctx;
    return x->kind == EX_OP && (x->op == OP_DIV || x->op == OP_MOD) && x->dtype == DT_I32 &&
           x->nargs == 2 && x->args[1]->kind == EX_CONST && x->args[1]->value != 1;
}

/* graph.c: does every dim of G have a compile-time size?  If one is a
 * run-time dim, prints the one diagnostic that says WHAT ("--tune", "the
 * cuda target") takes static sizes only (at the first such dim, naming
 * the -D that fixes it) and returns false.  Every consumer that needs
 * static sizes (--eval, --tune, CUDA builds; te_eval, tune_run and
 * sch_build for CUDA as a backstop) asks it first. */
bool te_require_static_dims(const Graph *g, const char *what);

/* print.c — the graph printer (--dump=graph) and the canonical form. */
void te_print_expr(FILE *out, const Expr *e);
void te_print_graph(FILE *out, const Graph *g);
/* The canonical text of a graph: names replaced by their positions, so that
 * renaming a tensor or a variable does not change it.  From the arena. */
char *te_canonical(Arena *a, const Graph *g);
/* 128-bit XXH3 of the canonical text, as 32 hex digits plus NUL. */
void te_hash(const Graph *g, char out[33]);

/* ------------------------------------------------------------------ */
/* eval.c — the reference evaluator: every stage, naively, in double.  */

/* A tensor's values in row-major order, as doubles. */
typedef struct Buffer {
    const Tensor *tensor;
    double *data; /* tensor_elems(tensor) values */
} Buffer;

/* Fills every input with seeded random values: floats uniform in [-1, 1)
 * rounded to the input's dtype, i32 uniform in [-100, 100), bool 0 or 1.
 * Each input's stream depends only on SEED and its name. */
void te_random_input(const Tensor *t, uint64_t seed, double *out);

/* Evaluates G.  INPUTS[i] holds G->inputs[i]'s values; on success OUTPUTS[i]
 * receives a malloc'ed array for G->outputs[i] and 0 is returned.  A load
 * out of bounds (only possible where a select guards it wrongly) is a
 * diagnostic at the load, and -1 is returned; so is a graph with a
 * run-time dim (te_require_static_dims). */
int te_eval(const Graph *g, double *const *inputs, double **outputs);
/* The same for a graph with run-time dims, at the sizes DIMS (one per
 * g->dims, read for the declared run-time ones): every buffer, inputs and
 * outputs, has its shape at those sizes (te_shape_at).  A size outside
 * its dim's range or a failed run-time check (Graph.checks) is a
 * diagnostic, and -1.  DIMS may be NULL for a static graph. */
int te_eval_at(const Graph *g, const int64_t *dims, double *const *inputs, double **outputs);

/* widen.c: G retyped in place so that the C backend computes what te_eval
 * computes: every f32, f16 and bf16 stage, constant and operator in f64,
 * narrow float inputs widened on load, casts to narrow floats rounded and
 * then widened.  For the tuner's compiled reference only (it changes the
 * program's numbers to the evaluator's).  Returns NULL, or why the C
 * backend cannot compute G as te_eval does. */
const char *te_widen_floats(Arena *a, Graph *g);
/* Dimension D of T, and T's element count, at the sizes DIMS (NULL: the
 * static shape). */
int64_t te_shape_at(const Tensor *t, int d, const int64_t *dims);
int64_t te_elems_at(const Tensor *t, const int64_t *dims);
/* A copy of T with its shape at the sizes DIMS, static (no size
 * expressions): for npy_read and npy_write at one size. */
Tensor te_tensor_at(const Tensor *t, const int64_t *dims);

/* npy.c — NumPy .npy files (format 1.0). */
/* Writes DATA (tensor_elems(t) doubles) converted to T's dtype.  Returns 0,
 * or -1 with errno set. */
int npy_write(const char *path, const Tensor *t, const double *data);
/* V as one little-endian element of dtype T at P, as a .npy file holds
 * it (BF16_BITS false: bf16 as f32) or as the generated code stores it
 * (true: bf16 as its 16 bits); returns its bytes. */
int npy_encode(DType t, double v, unsigned char *p, bool bf16_bits);
/* The same into the open stream F (errors: the stream's, for the caller's
 * fclose or ferror to find). */
int npy_write_file(FILE *f, const Tensor *t, const double *data);
/* Reads PATH, which must hold exactly T's shape; any numeric dtype is
 * converted.  On error prints "texc: PATH: why" and returns -1. */
int npy_read(const char *path, const Tensor *t, double *data);
/* PATH's shape alone (SHAPE: TE_MAX_RANK entries); -1 after the message. */
int npy_read_shape(const char *path, int *rank, int64_t *shape);
/* The same from the open stream F, called PATH in the messages. */
int npy_read_file(FILE *f, const char *path, const Tensor *t, double *data);

/* ------------------------------------------------------------------ */
/* passes.c — the graph optimizer: a straight list of passes, each one
 * file with one entry function (lang/pass_NAME.c) and a contract comment.
 * Each pass may be turned off (-fno-NAME) and dumped after
 * (--dump=after-NAME).  A pass keeps the invariants of a checked Graph
 * (top of this file) and the program's numbers: exactly, or within
 * floating-point reassociation where OptOptions.fast_math allows it. */

/*     name         what it does (for --help and -v) */
#define TE_PASSES(X)                                                       \
    X(constfold, "constant folding")                                      \
    X(dce, "dead code elimination")                                       \
    X(cse, "common subexpression elimination")                            \
    X(simplify, "algebraic simplification")                               \
    X(substitute, "operator substitution")                                \
    X(fuse, "fusion into kernels")
/* (Layout assignment depends on the schedule's tiles: it is the first step
 * of every build, sched/build.c, no longer a graph pass.) */

typedef enum PassId {
#define X(n, d) PASS_##n,
    TE_PASSES(X)
#undef X
    PASS_COUNT
} PassId;

typedef struct OptOptions {
    unsigned disabled;   /* bit PassId: -fno-NAME */
    unsigned dump_after; /* bit PassId: --dump=after-NAME */
    bool strict_fp;      /* -fstrict-fp: only rewrites exact in the dtype */
    FILE *dump;          /* where dumps go */
} OptOptions;

/* What the passes did, for -v's summary. */
typedef struct OptStats {
    int stages_before, kernels_after;
    int folded;       /* constants folded */
    int removed;      /* stages removed (dead or identity) */
    int cse;          /* subexpressions or stages shared */
    int simplified;   /* algebraic rewrites */
    int substituted;  /* operator substitutions */
    int fused;        /* stages merged into another */
    PtrVec notes;     /* char *: one-line notes ("scale folded into y") */
    /* the build's layout step (sched/build.c), after the passes, for the
     * same summary: */
    int packed;       /* const inputs given a packed layout */
    PtrVec layout_notes; /* char *: what it packed */
} OptStats;

typedef struct OptCtx {
    Arena *arena;
    const OptOptions *opts;
    OptStats *stats;
} OptCtx;

/* May a rewrite that changes rounding apply to values of dtype T?  Only for
 * f16, bf16 and f32, and not under -fstrict-fp (the seed's compilers
 * reassociate these by default). */
static inline bool opt_fast_math(const OptCtx *c, DType t)
{
    return !c->opts->strict_fp && (t == DT_F16 || t == DT_BF16 || t == DT_F32);
}

#define X(n, d) bool te_pass_##n(OptCtx *c, Graph *g);
TE_PASSES(X)
#undef X

/* pass_fuse.c: the fusion cost model, the optimizer's and the default
 * schedule's inlining (sched/default.c).  What recomputing one element of
 * E costs, in units of one vector add (a division or square root 4, exp
 * and its kin 10, erf and gelu 20; loads and index arithmetic nothing),
 * a load of a tensor T with T->id < NTENSORS adding INLINED[T->id] when
 * INLINED is given (the cost of a stage substituted there). */
double te_fuse_op_cost(const Expr *e, const double *inlined, int ntensors);
/* How many times a reader whose body is E (its spatial variables VARS,
 * over SHAPE) needs each element of P, were P substituted into it: 1,
 * unless it loads P inside a reduction (IN_REDUCE: E is inside one) at
 * indices that leave out some of VARS; then the product of those axes'
 * extents (the largest over its loads), *AXIS the first of them. */
double te_fuse_reuse(const Expr *e, bool in_reduce, const Tensor *p, IterVar *const *vars,
                     const int64_t *shape, int rank, const IterVar **axis);
/* Does recomputing a stage of COST operations REUSE times an element cost
 * no more than keeping it (TE_FUSE_MEMORY_COST)? */
bool te_fuse_recompute_pays(double reuse, double cost);
/* A stage that selects (a padding) and reader R, which has more elements
 * than it (im2col's columns, each element read once per window
 * position): is the stage kept, so that its bounds checks run once an
 * element and not as R's conditional loads?  (pass_fuse.c rule 1) */
bool te_fuse_keeps_select(const Tensor *p, const Tensor *r);

const char *te_pass_name(PassId p);
const char *te_pass_description(PassId p);
PassId te_pass_lookup(const char *name); /* PASS_COUNT if unknown */

/* Runs every pass not disabled, in order, dumping where asked. */
bool te_optimize(Arena *a, Graph *g, const OptOptions *o, OptStats *stats);
/* The stage the program called NAME, as it wrote it; NULL if none (or
 * te_optimize did not run). */
const StageOrigin *te_stage_origin(const Graph *g, const char *name);
/* --dump=kernels: each kernel, its anchor and the stages fused into it. */
void te_print_kernels(FILE *out, const Graph *g);
/* "6 stages -> 1 kernel; folded 1 constant; ..." */
void te_print_opt_summary(FILE *out, const OptStats *s);

/* graph.c: recomputes ids and uses after a pass removed or added tensors: keeps
 * g->tensors in dependency order and drops tensors no longer reachable
 * from an output (inputs always stay). */
void te_graph_compact(Arena *a, Graph *g);

/* pass_cse.c: are A and B the same computation, up to renaming AVARS[i]
 * to BVARS[i] (i < N) and their reductions' axes (same ranges, same
 * order)?  Other variables must be the same IterVar. */
bool te_expr_equiv(const Expr *a, const Expr *b, IterVar *const *avars,
                   IterVar *const *bvars, int n);

/* ------------------------------------------------------------------ */
/* memplan.c — memory planning: buffers whose live ranges (in kernel
 * steps) do not overlap share bytes of one workspace.                 */

typedef struct PlanBuf {
    const char *name;
    int64_t bytes;   /* size; rounded up to 64 when placed */
    int first, last; /* live range in kernel steps, inclusive */
    int64_t offset;  /* out: 64-byte aligned offset in the workspace */
} PlanBuf;

/* Assigns every offset so that buffers with overlapping live ranges never
 * share a byte; returns the planned peak (the workspace size).  *NAIVE
 * receives the sum of the aligned sizes (every buffer its own bytes). */
int64_t te_memplan(PlanBuf *bufs, int n, int64_t *naive);
/* --dump=memory: one line per buffer (name, bytes, [first, last],
 * offset), then the naive and the planned peak. */
void te_print_memplan(FILE *out, const PlanBuf *bufs, int n, int64_t naive,
                      int64_t peak);

#endif

/* sched.h — schedules: their AST (as parsed), the table of primitives, and
 * the checks that every stage and loop a schedule names exists.
 *
 * A schedule is a list of statements, each applying one primitive to one
 * stage:  [RESULT =] STAGE.PRIM(ARGS) [-> OUT, ...] [at LOOP];
 * Any integer argument may be a tuning knob: ?NAME in [v1, v2, ...] or
 * ?NAME in LO..HI [step S] (inclusive), or a later ?NAME that reuses one.
 */
#ifndef TEXC_SCHED_H
#define TEXC_SCHED_H

#include "lang/texc.h"

typedef struct Knob {
    const char *name; /* without the '?' */
    Span span;        /* its definition */
    int64_t *values;
    int nvalues;
    int chosen; /* index into values: 0 until the tuner or -K sets it */
    bool set;   /* -K set it (to any value, the first one too) */
} Knob;

#define SCHED_ARG_KINDS(X)                                     \
    X(SA_NAME)   /* name: a loop, stage, scope or gpu axis    */ \
    X(SA_INT)    /* ival                                      */ \
    X(SA_KNOB)   /* knob: an integer chosen by the tuner      */ \
    X(SA_STRING) /* name: a quoted string (a layout)          */

typedef enum SchedArgKind { SCHED_ARG_KINDS(TE_ENUM_ITEM) } SchedArgKind;

typedef struct SchedArg {
    SchedArgKind kind;
    Span span;
    const char *name;
    int64_t ival;
    Knob *knob;
} SchedArg;

typedef struct SchedStmt {
    Span span;           /* the whole statement */
    const char *result;  /* RESULT = ..., or NULL */
    Span result_span;
    const char *stage;
    Span stage_span;
    const char *prim;
    Span prim_span;
    SchedArg *args;
    int nargs;
    const char **outs; /* -> names */
    Span *out_spans;
    int nouts;
    const char *at; /* at LOOP, or NULL */
    Span at_span;
} SchedStmt;

/* "when M in 1..16": the sizes a schedule is for (a bucket's range of a
 * run-time dim, inclusive). */
typedef struct SchedWhen {
    const char *dim;  /* as written */
    Span dim_span;
    int64_t lo, hi;
    Span range_span;  /* LO..HI */
    int index;        /* sch_check: the dim's index in Graph.dims */
} SchedWhen;

typedef struct Schedule {
    Target target;
    const char *unknown_target; /* target is TARGET_COUNT: the word the file
                                   wrote instead of a target's name (for
                                   sch_check's error and --dump=ast) */
    Span target_span;
    SchedStmt **stmts;
    int nstmts;
    int stmts_cap; /* the room STMTS has (0: none known), for sch_add_stmt */
    SchedWhen *when; /* schedule TARGET when DIM in LO..HI, ... { }: the
                        sizes it is for, one clause per dim named; none:
                        every size the file's other schedules leave */
    int nwhen;
    Knob **knobs; /* every knob defined in this schedule */
    int nknobs;
    int knobs_cap; /* ... and KNOBS */
} Schedule;

/* The primitives.  SIG spells the arguments: L a loop of the stage, N an
 * integer (or knob), S a stage, C a memory scope, A a GPU axis, Y a layout
 * string; '*' repeats the previous letter, '?' makes it optional.  OUTS is
 * the number of names after '->' (-1: none allowed), RES whether
 * "RESULT =" is required, AT whether "at LOOP" is allowed. */
/*     enum              name             sig     outs res at */
#define SCHED_PRIMS(X)                                                \
    X(PR_SPLIT, "split", "LN", 2, 0, 0)                               \
    X(PR_TILE, "tile", "LLNN", 4, 0, 0)                               \
    X(PR_REORDER, "reorder", "LL*", -1, 0, 0)                         \
    X(PR_FUSE, "fuse", "LL", 1, 0, 0)                                 \
    X(PR_VECTORIZE, "vectorize", "L", -1, 0, 0)                       \
    X(PR_UNROLL, "unroll", "L", -1, 0, 0)                             \
    X(PR_PARALLEL, "parallel", "L", -1, 0, 0)                         \
    X(PR_BIND, "bind", "LA", -1, 0, 0)                                \
    X(PR_COMPUTE_AT, "compute_at", "SL", -1, 0, 0)                    \
    X(PR_COMPUTE_INLINE, "compute_inline", "", -1, 0, 0)              \
    X(PR_CACHE_READ, "cache_read", "CSY?", -1, 1, 1)                  \
    X(PR_CACHE_WRITE, "cache_write", "C", -1, 1, 1)                   \
    X(PR_PIPELINE, "pipeline", "LN", -1, 0, 0)                         \
    X(PR_PREFETCH, "prefetch", "LN", -1, 0, 0)                         \
    X(PR_TENSORIZE, "tensorize", "NNNNN?N?", -1, 0, 0)                \
    X(PR_FLASH, "flash", "LN", -1, 0, 0)

typedef enum Prim { SCHED_PRIMS(TE_ENUM_ITEM) PR_COUNT } Prim;

/* prims.c */
const char *prim_name(Prim p);
Prim prim_lookup(const char *name); /* PR_COUNT if unknown */

/* check.c: checks every schedule of G against its stages: known targets,
 * primitives, argument counts and kinds, stage and loop names (simulating
 * the loop names each primitive creates and removes), knob values.
 * Reports the first error and returns false. */
bool sch_check(Graph *g);

/* prims.c: appends STMT to S (KNOB to its knobs) in amortised constant
 * time: a schedule of 16,000 statements is read in linear time. */
void sch_add_stmt(Arena *a, Schedule *s, SchedStmt *stmt);
void sch_add_knob(Arena *a, Schedule *s, Knob *knob);
/* The file's schedule for TARGET, or NULL: the one without 'when' (sch_check
 * allows one), or the one whose 'when' holds for the sizes -D gave. */
const Schedule *sch_file_schedule(const Graph *g, Target target);
struct Bucket;
/* The file's schedule for the variant of bucket B: the one whose 'when'
 * holds for all of B's sizes, else the one without 'when', or NULL. */
const Schedule *sch_bucket_schedule(const Graph *g, Target target, const struct Bucket *b);
/* Prints the schedules as parsed, knobs with their chosen values. */
void sch_print(FILE *out, const Schedule *s);
/* One statement as schedule text, ending the line: a knob as ?NAME=VALUE
 * (KNOB_NAMES: the schedule as written) or as its value (as applied). */
void sch_print_stmt_text(FILE *out, const SchedStmt *st, bool knob_names);

/* Sets knob NAME to VALUE in every schedule of G (-K NAME=VALUE).  Returns
 * false, with a message, if no knob is called NAME or VALUE is not one of
 * its values. */
bool sch_set_knob(Graph *g, const char *name, int64_t value);

/* ------------------------------------------------------------------ */
/* The loop IR.                                                        */

#define SCH_LOOP_KINDS(X)                                             \
    X(LOOP_SERIAL, "for")           /* a plain loop                  */ \
    X(LOOP_PARALLEL, "parallel")    /* iterations spread over threads */ \
    X(LOOP_VECTORIZED, "vectorized") /* SIMD lanes; innermost only    */ \
    X(LOOP_UNROLLED, "unrolled")    /* the body written once per value */ \
    X(LOOP_BOUND, "bound")          /* a GPU block or thread index   */

typedef enum LoopKind { SCH_LOOP_KINDS(TE_ENUM_ITEM) } LoopKind;

/* The GPU axes a loop may be bound to: the name schedules write (bind's
 * argument), the CUDA C that reads a thread's index along the axis, and
 * the most blocks or threads CUDA launches along it.  The grid's axes
 * come first, then a block's threads'. */
/*     enum           schedule    CUDA C         limit */
#define SCH_GPU_AXES(X)                                   \
    X(GPU_BLOCK_X, "block.x", "blockIdx.x", 2147483647)   \
    X(GPU_BLOCK_Y, "block.y", "blockIdx.y", 65535)        \
    X(GPU_BLOCK_Z, "block.z", "blockIdx.z", 65535)        \
    X(GPU_THREAD_X, "thread.x", "threadIdx.x", 1024)      \
    X(GPU_THREAD_Y, "thread.y", "threadIdx.y", 1024)      \
    X(GPU_THREAD_Z, "thread.z", "threadIdx.z", 64)

typedef enum GpuAxis { SCH_GPU_AXES(TE_ENUM_ITEM) GPU_AXIS_COUNT } GpuAxis;
/* prims.c */
const char *sch_gpu_axis_name(GpuAxis a);      /* "block.x" */
GpuAxis sch_gpu_axis_lookup(const char *name); /* GPU_AXIS_COUNT if unknown */
/* Does A tell a block's threads apart (rather than the grid's blocks)? */
static inline bool sch_is_thread_axis(GpuAxis a)
{
    return a >= GPU_THREAD_X;
}

/* A loop of a scheduled stage. */
typedef struct Loop {
    const char *name;
    IterVar *var;     /* its variable; var->extent is the trip count */
    LoopKind kind;
    GpuAxis gpu_axis; /* LOOP_BOUND: the axis it is bound to */
    bool reduce;      /* iterates (part of) a reduction axis */
    int pipeline;     /* pipeline(loop, n): n stages; 0 if none */
    Span pipeline_span; /* that statement, for errors */
    int prefetch;     /* prefetch(loop, n): the vector loads that move with
                         the loop are prefetched n iterations ahead; 0 if
                         none (cpu) */
    Span kind_span;   /* the statement that set kind, for later errors */
    const char *kind_stage; /* ... and the stage it named (an alias of the
                               loop's stage, maybe) */
    int64_t trip_bound; /* lowering: the most iterations a loop over a
                           region makes (its variable's range is then not
                           0..extent-1, so var->extent is 0: unknown) */
} Loop;

/* The most iterations loop L can make. */
static inline int64_t sch_trip_bound(const Loop *l)
{
    return l->trip_bound ? l->trip_bound : l->var->extent;
}

typedef enum BufScope {
    SCOPE_GLOBAL, /* a caller's buffer or a whole intermediate */
    SCOPE_LOCAL,  /* a region, in registers or the thread's stack */
    SCOPE_SHARED, /* a region in GPU shared memory */
} BufScope;

/* tensorize: a matmul-like reduction computed by the tensor cores
 * (mma.sync.m16n8k16, sm_80 and later; sched/mma.c, codegen/cuda.c).
 *
 *     C[i, j] = sum(k) f32(A[..]) * f32(B[..]),  epilogue(C)
 *
 * A and B are f16 or bf16 (the same type), each indexed by plain variables:
 * A by i and k, B by k and j, in either order; its unit-stride (last)
 * index says how it is staged and read (k last: as ldmatrix reads it for
 * A's "row" and B's "col" layouts; i or j last: with ldmatrix.trans). */
typedef struct SchMmaOperand {
    const Tensor *t;  /* a global tensor: an input or a root stage */
    bool k_last;      /* its last index is the reduction's */
    int64_t len;      /* its rows' length: the stride of its first index */
} SchMmaOperand;
typedef struct SchMma {
    int64_t bm, bn;   /* a block's tile of C */
    int64_t wm, wn;   /* a warp's: (bm / wm) x (bn / wn) warps */
    int64_t bk;       /* the k step staged in shared memory */
    int64_t stages;   /* the cp.async pipeline's depth */
    Span span;        /* the statement */
    bool bf16;        /* the operands' type: bf16, else f16 */
    SchMmaOperand a, b;
    IterVar *i, *j, *k; /* C's row, column and reduction variables */
    int64_t m, n, kext;  /* their extents */
} SchMma;

typedef struct SStage SStage;

/* flash: attention without the scores written out (sched/flash.c,
 * codegen/c.c's emit_flash).  The chain, over any leading batch axes b
 * that all five stages share:
 *
 *     score[b, i, t] = (sum(d) Q(b, i, d) * K(b, t, d)) [* c | / c]
 *     smax[b, i]     = max(t) score[b, i, t]
 *     prob[b, i, t]  = exp(score[b, i, t] - smax[b, i])
 *     psum[b, i]     = sum(t) prob[b, i, t]
 *     ctx[b, i, e]   = (sum(t) prob[b, i, t] * V(b, t, e)) / psum[b, i]
 *                      (or * (1 / psum[b, i]))
 *
 * is computed by ctx's kernel as an online softmax over tiles of BK keys:
 * a running maximum m and sum l per query row, the partial products
 * rescaled by exp(m_old - m_new) as the maximum grows.  Q, K and V are any
 * expressions (loads of plain or prepacked tensors); the kernel copies
 * each key tile of K (transposed) and of V, and the queries, into buffers
 * of its own, so it needs only their values. */
typedef struct SchFlash {
    int64_t bk;           /* keys a tile: 16, 32, 64, 128 or 256 */
    Span span;            /* the statement */
    int nbatch;           /* the leading batch axes */
    int64_t sq, sk;       /* query rows (i), keys (t) */
    int64_t dk, dv;       /* Q.K's length (d), V's width (e) */
    IterVar *qi, *kt, *dd; /* the kernel's own variables: a query row, a
                              key, an element along d or e */
    IterVar **batch;      /* ctx's batch variables (its first svars) */
    Expr **batch_at;      /* lowered: each batch variable's value in
                             ctx's loops (NULL before lowering) */
    Expr *q, *k, *v;      /* Q at (batch, qi, dd), K at (batch, kt, dd),
                             V at (batch, kt, dd) */
    double scale;         /* score's factor (1 if none) ... */
    bool scale_div;       /* ... divided by rather than multiplied */
    bool recip;           /* ctx's epilogue multiplies by 1 / psum */
    SStage *stages[4];    /* score, smax, prob, psum: ctx's kernel
                             computes them; never stored */
} SchFlash;

/* A stage being scheduled: its computation and its loop nest. */
struct SStage {
    const char *name;
    Tensor *tensor;      /* what it computes (a cache stage has its own) */
    Expr *value;         /* the value at a point (a reduction: its body) */
    Expr *epilogue;      /* a reduction's epilogue: applied to the reduced
                            value, which it reads as a load of tensor at
                            svars; NULL if none */
    bool is_reduce;      /* value is combined over rvars with reducer */
    Reducer reducer;
    IterVar **svars;     /* spatial variables: tensor->vars */
    int nsvars;
    IterVar **rvars;     /* reduction axes */
    int nrvars;
    PtrVec loops;        /* Loop *, outermost first */
    Expr **value_of;     /* one per svars, then one per rvars: each as
                            an expression of the loops' variables (a
                            stage's own, not one per variable of the
                            graph: see sch_stage_subst) */
    PtrVec guards;       /* Expr *: conditions on the loops' variables
                            (from splits that do not divide) */
    BufScope scope;
    bool inlined;        /* compute_inline: no loops, substituted */
    SStage *attach;      /* compute_at: computed inside this stage ... */
    Loop *attach_loop;   /* ... at the body of this loop; NULL at root */
    Span attach_span;    /* the compute_at statement, for lowering's errors */
    bool scheduled;      /* some primitive other than compute_* touched it */
    bool cache_written;  /* cache_write made it a copy of another stage */
    /* kept by compute_inline (apply.c) once a schedule inlines: */
    int64_t nodes;       /* value's and epilogue's expression nodes, each
                            load of an inlined stage counted as its nodes */
    PtrVec readers;      /* SStage *: a stage whose value or epilogue loads
                            this one, once per load */
    /* set by lowering */
    Tensor *storage;     /* where its values are stored: tensor, or a
                            region-sized local buffer */
    bool heap;           /* that buffer is on the heap (SCH_HEAP_TILE_MAX) */
    Expr *region_lo[TE_MAX_RANK]; /* storage index d = index d - region_lo[d] */
    const char *mma_why; /* the default schedule's reason for not
                            tensorizing a matmul-like reduction, for -v */
    SchFlash *flash;     /* flash: this stage's kernel computes the chain
                            (its loops other than the batch loops are
                            not lowered: codegen/c.c writes the kernel) */
    SStage *flashed;     /* computed inside that stage's flash kernel:
                            no loops, no storage */
    SchMma *mma;         /* tensorize: computed by the tensor cores; its
                            loops are then not scheduled (nor lowered for
                            the kernel: codegen/cuda.c writes it) */
};

/* A bucket: a sub-range of every declared run-time dim, compiled as one
 * variant of a program with run-time dims (doc/runtime-dims.md).  Its
 * arrays are by Graph.dims index (entries of other dims unused). */
typedef struct Bucket {
    int64_t *lo, *hi; /* inclusive */
    int64_t *hint;    /* the size default schedules use in it */
} Bucket;

/* bucket.c: --buckets DIM=A,B..C,... (one dim's intervals, inclusive) */
typedef struct BucketSpec {
    const char *dim;
    int64_t *lo, *hi;
    int n;
    const char *text; /* as given, for messages */
} BucketSpec;
/* The buckets (Bucket *) of G's declared run-time dims for TARGET into
 * OUT: see bucket.c.  False after a diagnostic. */
bool sch_buckets(Arena *a, const Graph *g, Target target, const BucketSpec *specs, int nspecs,
                 PtrVec *out);
/* "M in 17..32, S = 1" */
char *sch_bucket_str(Arena *a, const Graph *g, const Bucket *b);
/* The index in BUCKETS of the one that holds every declared run-time
 * dim's hint: its schedule decides the layouts every variant reads. */
int sch_hint_bucket(const Graph *g, const PtrVec *buckets);
/* Merges neighbouring buckets whose variants' schedules TEXTS[i] are the
 * same (neither of them a single size) into one, hints recomputed;
 * *FIRST[j] is the first of the buckets merged into bucket j.  Returns
 * how many merges. */
int sch_merge_buckets(Arena *a, const Graph *g, PtrVec *buckets, const char *const *texts, int **first);

/* A schedule being applied: the stages of one graph and the trace of the
 * primitives applied so far. */
typedef struct SchedState {
    Arena *arena;
    Graph *g;
    Target target;
    PtrVec stages;      /* SStage *, in dependency order */
    /* the stages by name, alias and tensor, so that a program of many
     * stages finds each in constant time (sch_index_stage) */
    PtrVec indexed;     /* SStage *: every stage, in the order indexed */
    PtrMap by_name;     /* strings: a stage's name -> its place in indexed */
    PtrMap by_alias;    /* strings: an alias of its tensor -> the same */
    PtrMap by_tensor;   /* its tensor -> the same */
    bool index_clash;   /* two stages share a name, alias or tensor:
                           then the first in stages is found by a scan */
    bool sizes_known;   /* the stages' nodes and readers are up to date */
    PtrVec trace;       /* SchedStmt *: what was applied, knobs resolved */
    int next_var;       /* the next free IterVar id */
    IterVar **dim_vars; /* by Graph.dims index: a declared run-time dim's
                           variable (sch_dim_var), made when first used */
    Dim *dims;          /* the graph's dims with the bucket's ranges and
                           hints (a dim whose range is one value is a
                           constant in this variant); g->dims if none */
    const Bucket *bucket; /* the variant being built, or NULL: the whole
                             ranges */
    int sm;             /* cuda: the architecture built for (90: sm_90), 0
                           when not known yet: the default schedule then
                           uses no tensor cores */
} SchedState;

/* lower.c: the largest constant region of a stage computed inside a
 * parallel loop (cpu) that gets a buffer of its own: up to 64 KiB on the
 * thread's stack, above that on the heap, allocated where it is computed
 * (a weight panel packed once per column block). */
#define SCH_HEAP_TILE_MAX ((int64_t)16 << 20)

#define SCH_STMT_KINDS(X)                                                 \
    X(S_FOR)   /* for loop->var in [min, min + extent): body            */ \
    X(S_SEQ)   /* stmts[0..n) in order                                  */ \
    X(S_STORE) /* buf[index] = value  (buf: a Tensor; index: one per dim) */ \
    X(S_IF)    /* if (cond) body                                        */ \
    X(S_ALLOC) /* buf lives in scope while body runs                    */ \
    X(S_FLASH) /* flash's kernel for one batch point (buf: the output)  */

typedef enum StmtKind { SCH_STMT_KINDS(TE_ENUM_ITEM) } StmtKind;

typedef struct Stmt Stmt;
struct Stmt {
    StmtKind kind;
    Loop *loop;     /* S_FOR */
    Expr *min;      /* S_FOR: first value */
    Expr *extent;   /* S_FOR: trip count */
    Stmt *body;     /* S_FOR, S_IF, S_ALLOC */
    Stmt **stmts;   /* S_SEQ */
    int n;          /* S_SEQ */
    Tensor *buf;    /* S_STORE, S_ALLOC */
    BufScope scope; /* S_ALLOC */
    bool heap;      /* S_ALLOC: buf on the heap, not the stack */
    Expr **index;   /* S_STORE */
    Expr *value;    /* S_STORE */
    Expr *cond;     /* S_IF */
    SchFlash *flash; /* S_FLASH: the chain, batch_at set */
};

/* The lowered program: one function's body and the buffers it needs. */
typedef struct LoweredFunc {
    Stmt *body;
    PtrVec temps;  /* Tensor *: intermediates held in global scope */
    Stmt *prepack; /* the prepack stages' nests (layout.c), or NULL */
    PtrVec packed; /* Tensor *: what they compute; BODY reads them */
} LoweredFunc;

/* state.c */
SchedState *sch_state_new(Arena *a, Graph *g, Target target);
/* The same for the variant of BUCKET (NULL: the whole ranges). */
SchedState *sch_state_new_bucket(Arena *a, Graph *g, Target target, const Bucket *bucket);
/* V's extent at the state's hints: where it depends on run-time dims,
 * its size at the bucket's hint sizes (the size default schedules and
 * the tuner's estimates choose tiles for), else its extent. */
int64_t sch_extent_hint(const SchedState *st, const IterVar *v);
/* The error that loop L of STAGE (its label), TRIP iterations at most,
 * is too long to unroll, at AT: where its extent is run-time, the size
 * expression and the variant it reaches TRIP in. */
void sch_unroll_refused(const SchedState *st, Span at, const Loop *l, const char *stage, int64_t trip);
SStage *sch_find_stage(SchedState *st, const char *name); /* or an alias */
SStage *sch_stage_of(const SchedState *st, const Tensor *t); /* or NULL */
/* Makes S, a stage just added to st->stages, one that the two find. */
void sch_index_stage(SchedState *st, SStage *s);
bool sch_stage_named(const SStage *s, const char *name);
/* Is NAME tensor T's name or one of its aliases (the stages fused into it)? */
bool sch_tensor_named(const Tensor *t, const char *name);
/* How the optimizer merged the stage the program calls NAME into T (NAME
 * one of T's aliases): the pass that did it; PASS_COUNT when NAME is T's
 * own name. */
PassId sch_merged_by(const Tensor *t, const char *name);
/* A stage a statement called NAME, which resolved to T, for messages:
 * 'NAME', or 'NAME' (fused into 'T') and the like when the optimizer
 * merged it into T. */
const char *sch_stage_label(Arena *a, const Tensor *t, const char *name);
/* What the optimizer did to NAME, as a clause: "'a' is fused into 'y'". */
const char *sch_merge_clause(Arena *a, const Tensor *t, const char *name);
/* Reports, and returns true, when the stage STMT names (resolved to T)
 * cannot be inlined for what the graph says of it: an output, a reduction
 * fused into T, or a stage fusion has already substituted into T. */
bool sch_inline_refused(Arena *a, const Source *src, const SchedStmt *stmt, const Tensor *t);
Loop *sch_find_loop(SStage *s, const char *name);
int sch_loop_index(SStage *s, const Loop *l);
IterVar *sch_new_var(SchedState *st, const char *name, int64_t extent);
/* A variable whose extent is SIZE over the run-time dims (NULL: EXTENT, a
 * static one); EXTENT is then SIZE's static bound. */
IterVar *sch_new_var_size(SchedState *st, const char *name, int64_t extent, const SizeExpr *size);
/* Sizes over run-time dims as index expressions of the generated code:
 * a declared run-time dim D is the variable sch_dim_var (a parameter of
 * the generated functions, of D's range), SIZE the expression over such
 * variables, V's extent and T's dimension D that expression or their
 * number where they are static. */
IterVar *sch_dim_var(SchedState *st, int d);
Expr *sch_size_expr(SchedState *st, const SizeExpr *size);
Expr *sch_extent_expr(SchedState *st, const IterVar *v);
Expr *sch_shape_expr(SchedState *st, const Tensor *t, int d);
/* Does any stage or input of the graph have a run-time size? */
bool sch_has_runtime_dims(const Graph *g);
/* A substitution: the variables VARS[0..N) by VALUES[0..N).  A few at
 * most (a stage's variables, one loop's), so looked up by a scan: a map
 * by IterVar id would be as long as all the program's variables, for
 * every stage, loop and inlined load. */
typedef struct Subst {
    IterVar *const *vars;
    Expr *const *values;
    int n;
} Subst;
Expr *sch_subst(Arena *a, Expr *e, Subst s);
/* VAR by VALUE alone */
Subst sch_subst1(Arena *a, IterVar *var, Expr *value);
/* S's svars and rvars by their value_of */
Subst sch_stage_subst(Arena *a, const SStage *s);

/* apply.c: an integer argument's value (a knob's chosen one), 0 for a
 * name. */
int64_t sch_arg_int(const SchedArg *a);
/* apply.c: applies one statement; a failed precondition is a diagnostic
 * at the statement and false. */
bool sch_apply(SchedState *st, const SchedStmt *stmt);
/* Applies the file's schedule for the target, or the default one. */
bool sch_apply_schedule(SchedState *st, const Schedule *s, FILE *dump_loops);

/* template.c: the schedule templates, each form a stage's loops take
 * written once; sched/default.c and sched/default_cuda.c call them at
 * the default's point, tuner/space.c at the points of its search space.
 * Each appends one stage's statements to E->sched; nothing is checked. */
typedef struct SchEmit {
    Arena *arena;
    Schedule *sched;    /* the statements are appended to it */
    const char *stage;  /* the stage they schedule */
    Span span;          /* where their errors point: the stage's definition,
                           or {0, 0} (the tuner's, which the user never wrote) */
} SchEmit;
/* The names a template uses: the stage's loops, and the loops and stages
 * its statements create (each caller has its rules for fresh names).  A
 * template reads only the fields its form creates. */
typedef struct SchLoops {
    const char **svar;      /* the spatial loops, outermost first */
    int64_t *sext;          /* ... their extents (a run-time one's bound) */
    int nsvars;
    const char **rvar;      /* the reduction loops */
    int nrvars;
    int rsplit;             /* the reduction loop a k split splits */
    const char *io, *ii;    /* i (the second innermost spatial loop) split */
    const char *jo, *ji;    /* j (the innermost) split */
    const char *ko, *ki;    /* rvar[rsplit] split */
    const char *fused;      /* cpu: the two outermost loops fused */
    const char *acc;        /* the micro-kernel's accumulator stage */
    const char *it, *ib, *ir; /* cuda tile: i's thread, block and register loops */
    const char *jt, *jb, *jr; /* ... and j's */
    const char **bz;        /* cuda: the loops of the fuses, one after another,
                               of the batch axes (tile) or of every spatial
                               axis (flat); the last is the whole */
    const char *bx, *tx;    /* cuda flat: the block and thread loops */
    const char *staged[TE_MAX_RANK];    /* cuda tile: the operands staged in
                                           shared memory */
    const char *staged_as[TE_MAX_RANK]; /* ... and their cache stages */
    int nstaged;
} SchLoops;
/* The CPU register-blocked micro-kernel: a TI x TJ tile accumulated in a
 * local stage computed at the tile loop, its reduction loop prefetching
 * the panel SCH_MICRO_PREFETCH iterations ahead (measured on the BERT
 * layer's 128x768x3072 matmul: 4, 8 and 16 within 3% of each other, all
 * 12-15% faster than none). */
#define SCH_MICRO_PREFETCH 8
typedef struct SchMicro {
    int64_t ti, tj;
    int order;          /* 0: row tiles outside; 2: column panels outside */
    int par;            /* 0: the outermost loop parallel (of the batch
                           loops, the first of more than one iteration,
                           else the outer tile loop); 1: the two tile
                           loops fused, then parallel */
    bool reorder_all;   /* the reorder names every spatial loop (as the
                           tuner's points always have, so that their logged
                           schedules stay the same); false: only the two
                           tile loops, and only when they swap */
    /* order 2: the weight read in place, copied once a column panel into
       a buffer of its own that the row tiles inside read (NULL: none):
       PANEL = PANEL_OF.cache_read(local, acc), computed at jo, its
       innermost loop PANEL_J vectorized */
    const char *panel_of, *panel, *panel_j;
} SchMicro;
/* The CPU loop nest of a matmul-like stage: a ti x tj register tile. */
typedef struct SchLoopNest {
    int64_t ti, tj, tk; /* tk: the reduction split, 0 none */
    int order;          /* 0 io jo k.. ki ii ji; 1 io jo k.. ii ki ji;
                           2 jo io k.. ki ii ji; 3 io k.. jo ki ii ji */
    bool unroll_i, unroll_k, vec;
    int par;            /* 0: outermost parallel; 1: the two fused; 2: none */
} SchLoopNest;
typedef struct SchElementwise {
    int64_t vs;         /* 0: not vectorized; 1: the innermost loop; N: split
                           by N, the inner part */
    int par;            /* as SchLoopNest's */
} SchElementwise;
typedef struct SchReduce {
    int64_t tk;         /* the reduction split, its inner part unrolled; 0 */
    int par;            /* as SchLoopNest's */
    bool vec;           /* the innermost reduction loop vectorized */
} SchReduce;
/* The CUDA tile: a block of bm x bn outputs, a thread's tm x tn. */
typedef struct SchCudaTile {
    int64_t bm, bn, tm, tn;
    int64_t bk;         /* the reduction split, 0 none */
    bool stage;         /* the operands staged in shared memory at ko */
    int64_t pipe;       /* their tiles fetched pipe - 1 steps ahead */
    bool unroll;        /* ki and the thread's tile unrolled */
    int64_t iext, batch; /* the stage's i extent and batch size: a grid
                            axis of over 65535 blocks stays a loop */
} SchCudaTile;
/* The flat CUDA form: the spatial loops fused, split into blocks. */
typedef struct SchCudaFlat {
    int64_t threads;    /* a block's */
    int64_t tk;         /* the reduction split, its inner part unrolled; 0 */
} SchCudaFlat;
/* A statement of E's stage, PRIM with NARGS arguments for the caller to
 * fill, appended to E->sched: the templates' (and sch_default's own)
 * statements are made with it. */
SchedArg sch_name_arg(const char *name);
SchedStmt *sch_emit(SchEmit *e, const char *prim, int nargs);
/* L's svar and rvar: S's variables, the loops of a stage no statement has
 * changed yet. */
void sch_stage_loops(Arena *a, const SStage *s, SchLoops *l);
void sch_template_micro(SchEmit *e, const SchLoops *l, const SchMicro *m);
/* apply.c: the name of loop D of a copy of T (cache_read, cache_write):
 * T's variable's, or axD where T has none (an input). */
const char *sch_copy_loop_name(Arena *a, const Tensor *t, int d);
/* The micro-kernel's row axis for a matmul-like stage S: the index in
 * S's spatial variables of the one whose rows share the vectors loaded
 * along j (template.c); the second innermost for a matmul. */
int sch_micro_row(const SStage *s);
/* L's spatial loops with the one at ROW moved second innermost, the
 * others outside it in their order (template.c). */
void sch_loops_row_inner(SchLoops *l, int row);
void sch_template_loop_nest(SchEmit *e, const SchLoops *l, const SchLoopNest *m);
void sch_template_elementwise(SchEmit *e, const SchLoops *l, const SchElementwise *m);
void sch_template_reduce(SchEmit *e, const SchLoops *l, const SchReduce *m);
void sch_template_cuda_tile(SchEmit *e, const SchLoops *l, const SchCudaTile *m);
void sch_template_cuda_flat(SchEmit *e, const SchLoops *l, const SchCudaFlat *m);
/* tensorize(bm, bn, wm, wn, bk, stages) of E's stage */
void sch_template_cuda_mma(SchEmit *e, const SchMma *m);

/* mma.c: can stage S be tensorized (SchMma's form, sizes the tiles can
 * stage: the unit-stride extents multiples of 8, static sizes)?  Fills
 * M's operands and variables; else *WHY says why not (for -v and the
 * error of a tensorize the file wrote). */
bool sch_mma_match(SchedState *st, const SStage *s, SchMma *m, const char **why);
/* mma.c: does a build for st->sm put S on the tensor cores when no
 * statement says how (the default schedule, the tuner's automatic space):
 * sch_mma_match, on sm_80 or later?  Else *WHY (may be NULL) says why not. */
bool sch_mma_usable(SchedState *st, const SStage *s, SchMma *m, const char **why);
/* mma.c: the default tiles for a match M on sm_SM (sm >= 80): 128 x 128
 * blocks of four 64 x 64 warps, k steps of 32 in 3 stages, smaller where
 * such blocks would leave the GPU idle */
void sch_mma_default(SchMma *m, int sm);
/* mma.c: what a tensorized stage S stores at C[i, j]: its epilogue (or the
 * sum) with the sum read as a load of its tensor at IDX (both of rank 2),
 * the one load the kernel replaces by the sum in registers */
Expr *sch_mma_epilogue(Arena *a, const SStage *s, Expr **idx);
/* mma.c: tensorize's checks and effect (apply.c's PR_TENSORIZE) */
bool sch_tensorize(SchedState *st, SStage *s, const SchedStmt *stmt);
/* flash.c: can ctx-like stage S head flash's chain (SchFlash)?  Fills F
 * (bk left as is); else *WHY says why not. */
bool sch_flash_match(SchedState *st, SStage *s, SchFlash *f, const char **why);
/* flash.c: flash's checks and effect (apply.c's PR_FLASH) */
bool sch_flash(SchedState *st, SStage *s, const SchedStmt *stmt);
/* flash.c: the batch loop a flash kernel of S (match F) runs in parallel:
 * the outermost with more than one iteration; NULL if S has none. */
const char *sch_flash_parallel_loop(const SStage *s, const SchFlash *f);
/* flash.c: does no statement of W (or NULL) name S or the stages of its
 * chain F, so that the default (or the tuner) may flash it? */
bool sch_flash_untouched(const Schedule *w, const SStage *s, const SchFlash *f);
/* flash.c: does a flash kernel pay for chain F (the default's rule): do
 * the scores of one batch point take SCH_FLASH_MIN_BYTES or more? */
#define SCH_FLASH_MIN_BYTES ((int64_t)256 << 10)
bool sch_flash_pays(const SchFlash *f);
/* flash.c: is STAGE the scores of a chain that a build of G with SCHED
 * (NULL: none) computes in a flash kernel, SCHED's flash or the
 * default's?  The layouts (layout.c) pack no keys for such scores: the
 * kernel copies its key tiles itself. */
bool sch_flash_scores(Graph *g, Target target, const Schedule *sched, const Tensor *stage);
/* mma.c: the tensor-core instructions' first architecture */
#define SCH_MMA_MIN_SM 80
/* The form a root stage takes (the default's rule; the tuner's plans
 * follow it), LANES the vector's on cpu. */
typedef enum SchForm {
    SCH_FORM_MATMUL,    /* cpu: a reduction over >= 2 spatial axes, the
                           innermost a vector or more, and some operand
                           loaded along it (its last index mentions it):
                           the micro-kernel (the default's) or a loop nest */
    SCH_FORM_ELEMWISE,  /* cpu: a stage with no reduction */
    SCH_FORM_REDUCE,    /* cpu: any other reduction */
    SCH_FORM_CUDA_TILE, /* cuda: a reduction over >= 2 spatial axes */
    SCH_FORM_CUDA_FLAT, /* cuda: any other root stage */
    SCH_FORM_CUDA_MMA,  /* cuda: a stage the tensor cores compute
                           (sch_mma_match, sm_80 and later): tensorize;
                           the tuner's, sch_form_of never says it */
    SCH_FORM_FLASH,     /* cpu: the last stage of an attention chain
                           (sch_flash_match): flash or not, and its key
                           tile; the tuner's, sch_form_of never says it */
} SchForm;
SchForm sch_form_of(const SchedState *st, const SStage *s, int lanes);
/* L's names for the tuner's points of FORM on S (a stage no statement has
 * changed): svar and rvar S's loops, rsplit its longest reduction axis,
 * and the loops and stages FORM's statements may create, each fresh
 * among S's loops and stages (a loop BASE SUFFIX, else BASE_SUFFIX1, ...;
 * a stage BASE_SUFFIX, else BASE_SUFFIX1, as y_acc1; a cache stage
 * X_shared, else X_shared2, ...); for a cuda tile also the operands it may stage (sch_cuda_staged_operands).
 * Allocated in A.  (The default names its loops by rules of its own.) */
void sch_template_names(Arena *a, SchedState *st, SStage *s, SchForm form, SchLoops *l);
/* template.c: does the written schedule W (or NULL) name stage S, as a
 * statement's stage or result or as compute_at's target?  Such a stage is
 * the file's to schedule: the default and the tuner's space leave it
 * alone. */
bool sch_mentioned(const Schedule *w, const SStage *s);
/* template.c: the tensors a matmul-like stage S (one reduction axis)
 * stages in shared memory at its reduction loop: each stored in memory
 * and read by S only at plain indices, one of them the reduction axis.  Up
 * to TE_MAX_RANK of them into OUT, in the graph's order; their number.
 * The default and the tuner's automatic CUDA space stage these. */
int sch_cuda_staged_operands(SchedState *st, const SStage *s, const Tensor **out);

/* host.c: the CPU the kernels will run on, from /proc/cpuinfo (read once).
 * The model name, "" when it has none. */
const char *sch_host_cpu_model(void);
/* Is FLAG one of the CPU's feature flags (the "flags" or "Features" line)? */
bool sch_host_cpu_has(const char *flag);
/* The vector unit: BYTES a vector and REGS vector registers.  AVX-512, AVX,
 * else 16-byte vectors (32 registers with ARM's asimd, else 16). */
void sch_host_vector_unit(int *bytes, int *regs);
/* The lanes of a host vector of dtype T's values, 1 to 16 (the tuner's
 * vector widths). */
int sch_host_lanes(DType t);

/* default.c: the column tile of the default schedule's micro-kernel for
 * STAGE along its dimension DIM (a matmul-like stage's innermost axis;
 * layout.c packs a weight it reads in panels of it), or 0 where the
 * default does not tile that axis. */
int64_t sch_default_panel_width(const Tensor *stage, int dim);
/* default.c: the default schedule of the stages that WRITTEN (a schedule
 * from the file, or NULL) does not mention, as statements. */
Schedule *sch_default(SchedState *st, const Schedule *written);
/* default.c: the compiled reference's schedule (tuner/reference.c): every
 * stage a loop nest of its own, nothing inlined, tiled or vectorized, so
 * that each value is computed as te_eval computes it.  Two changes of
 * order change no value: a reduction's axes go just outside its
 * innermost spatial loop (each element still combines its terms in
 * order, from the identity), and the outermost loop runs in parallel (an
 * element and its reduction are one thread's). */
Schedule *sch_naive(SchedState *st);
/* May a reduction loop of S be vectorized?  On cpu, where the lanes hold
 * partial results folded at the end, unless -fstrict-fp: another order
 * rounds float sums and products differently, may turn max(+0, -0) into
 * -0, and saturates i32 sums at other points. */
bool sch_can_vectorize_reduction(const SchedState *st, const SStage *s);
/* Does the default schedule vectorize S's innermost reduction axis?  Where
 * it may, for f32, when the axis is at least a vector long.  (The tuner
 * offers the same.) */
bool sch_vectorizes_reduction(const SchedState *st, const SStage *s);

/* default_cuda.c: appends to SCHED (sch_default's, holding its inlining)
 * the default CUDA schedule of the stages WRITTEN does not mention. */
void sch_default_cuda(SchedState *st, Schedule *sched, const Schedule *written);

/* simplify.c */
Expr *sch_simplify(Arena *a, Expr *e);
bool sch_const_int(const Expr *e, int64_t *out);
/* Does E (NULL: no) read the variable V? */
bool sch_uses_var(const Expr *e, const IterVar *v);
Expr *sch_int(Arena *a, int64_t v);
Expr *sch_add(Arena *a, Expr *x, Expr *y);
Expr *sch_sub(Arena *a, Expr *x, Expr *y);
Expr *sch_mul(Arena *a, Expr *x, Expr *y);
Expr *sch_min(Arena *a, Expr *x, Expr *y);
Expr *sch_max(Arena *a, Expr *x, Expr *y);
/* whether X <= Y for every value of their loop variables (their ranges) */
bool sch_provably_le(Expr *x, Expr *y);
/* whether every operand that sch_simplify folds by more than the ring's
 * arithmetic (a division's or remainder's dividend, a min's or max's
 * operands) in E is a sum of loop variables (and constants) whose range,
 * over the variables' own, lies inside i32: there the wrapping i32 value
 * is the exact one, and the fold keeps E's value (a load's index never
 * leaves its tensor; a comparison's operand may) */
bool sch_folds_fit_i32(Expr *e);

/* lower.c: the loop nest of every stage, with bounds and guards. */
bool sch_lower(SchedState *st, LoweredFunc *out);

/* peel.c: BODY (lowered for ST's target) with each serial or parallel
 * loop L whose body holds edge extents min(C, A - C*L) split into its
 * full tiles, the mins replaced by C, and the edge tile (see peel.c).
 * sch_lower calls it last; the CUDA target's BODY is returned as it is. */
Stmt *sch_peel(SchedState *st, Stmt *body);
/* peel.c: each statement of the nested sequence S (seq(seq(a, b), c) ...)
 * that is not a sequence itself replaced by FN(it, CTX), in execution
 * order (a, b, c), the sequences kept as they are.  A
 * program of thousands of stages nests as many sequences (lowering's
 * seq2): walked with a stack of its own, since a recursion as deep
 * overflows the thread's stack (under ASan). */
void sch_each_in_seq(Arena *a, Stmt *s, Stmt *(*fn)(Stmt *item, void *ctx), void *ctx);
/* peel.c: a copy of S with VAR replaced by VALUE, the indices simplified. */
Stmt *sch_stmt_subst(Arena *a, const Stmt *s, IterVar *var, Expr *value);

/* fold.c: BODY (lowered for ST's target, after sch_peel) with each copy
 * of a panel that the next loop's first iteration reads row by row done
 * in that iteration's reduction loop (see fold.c).  sch_lower calls it
 * after sch_peel; the CUDA target's BODY is returned as it is. */
Stmt *sch_fold_copies(SchedState *st, Stmt *body);
/* fold.c: does PRED(x, CTX) hold for a store x in S (an S_STORE, or an
 * S_FLASH: a fused attention stores its output)? */
bool sch_any_store(const Stmt *s, bool (*pred)(const Stmt *store, const void *ctx), const void *ctx);

/* layout.c — layout assignment and weight prepacking, for the tiles of
 * the schedule a build uses: assigns layouts for SCHED (NULL: the default
 * schedule) on TARGET, unless -fno-layout cleared g->layouts.  Earlier
 * prepack stages are undone first, so each build (sch_build) gets the
 * panels its own schedule's tiles want, the tuner's candidates theirs.
 * NOTES (may be NULL) is emptied and gets the new notes for -v. */
void sch_relayout(Arena *a, Graph *g, Target target, const Schedule *sched, PtrVec *notes);
/* Is NAME a prepack stage of G: one in G now, or the name layout
 * assignment gives the panels of one of G's const inputs (W_packed,
 * W_packed2, ...) while G holds no tensor of that name?  (Schedules
 * applied to a laid-out graph name such stages; the graph they are
 * shown for may have none.) */
bool sch_prepack_named(const Graph *g, const char *name);
/* The k interleave of the weight STAGE reads in a dot product (2: bf16
 * pairs, 4: u8 x i8 quads; layout.c's top), packed already or to be when
 * its tiles make panels; 0 if none. */
int sch_dot_group(const Graph *g, const Tensor *stage);
/* The k interleave of the first load in E of a weight packed in groups of
 * k (Tensor.pack_group), or 0. */
int sch_packed_group(const Expr *e);

/* build.c — the build sequence (layouts, SchedState, the schedule, the
 * default for the rest, lowering), the one every build runs: texc's, the
 * tuner's candidates', the tuner's legality checks'. */
/* The step's name and what it does, for -fno-layout, --dump=after-layout
 * and --help (it reads as one of the optimizer's passes there). */
#define SCH_LAYOUT_STEP "layout"
#define SCH_LAYOUT_DESCRIPTION "layout assignment and weight prepacking"
typedef struct SchedBuild {
    Arena *arena;          /* the SchedState, its loops, the lowered function */
    Arena *graph_arena;    /* what layouts add to G, which must live as long
                              as G does; NULL: ARENA */
    Graph *g;              /* changed in place by the layouts */
    Target target;
    const Schedule *sched; /* applied before the default; NULL: none */
    PtrVec *layout_notes;  /* char *: what was prepacked, for -v; may be NULL */
    FILE *dump_layout;     /* --dump=after-layout: the graph after layouts */
    FILE *dump_kernels;    /* --dump=kernels: the kernels as laid out */
    FILE *dump_loops;      /* --dump=loops: before, after each step, lowered */
    const struct Bucket *bucket; /* a variant of a program with run-time
                              dims: its sizes; NULL: the whole ranges */
    bool keep_layout;      /* skip step 1: the graph is laid out already
                              (the variants of one artifact share it) */
    bool naive;            /* step 3 applies sch_naive, not the default
                              (the tuner's compiled reference); SCHED unused */
    int sm;                /* cuda: SchedState.sm */
} SchedBuild;
/* Builds B->g for B->target under B->sched into *FN: see build.c.
 * Returns the SchedState, or NULL after a diagnostic (among them: a graph
 * with a run-time dim, te_require_static_dims). */
SchedState *sch_build(const SchedBuild *b, LoweredFunc *fn);
/* Its first step alone (the layouts and their dumps): for --eval=optimized,
 * which evaluates the graph a build of the file's schedule compiles. */
void sch_build_layout(const SchedBuild *b);

/* print_loops.c */
void sch_print_stmt(FILE *out, const Stmt *s, int indent);
void sch_print_stages(FILE *out, const SchedState *st);
void sch_print_trace(FILE *out, const SchedState *st);
void sch_print_trace_stmt(FILE *out, const SchedStmt *stmt);

#endif

/* codegen.h — from the loop IR to files other programs use.
 *
 * The CPU backend writes NAME.h (the sizes, the entry point) and NAME.c
 * (portable C11 with OpenMP pragmas, standard headers only).  The CUDA
 * backend writes NAME.cubin (NVRTC's compilation of the CUDA C that
 * cuda.c emits) and NAME.h (launch data and launchers built on libtexrt).
 * Names from the user's program are mangled where they would clash with C
 * keywords, the C library, or texc's own generated names.
 */
#ifndef TEXC_CODEGEN_H
#define TEXC_CODEGEN_H

#include "sched/sched.h"

typedef struct CodegenOptions {
    const char *name;        /* the entry point (a C identifier) */
    const char *header;      /* the header's file name, as the .c includes
                                it ("my-kernel.h"); NULL: NAME.h */
    const char *source_path; /* the .te file, for the header comment */
    Target target;           /* TARGET_CPU */
    const char *schedule_from; /* where the schedule came from, for the
                                  header comments ("the file's `schedule
                                  cpu`, the default for the stages it
                                  leaves out", "the default (...)", "a
                                  tuning-log record (workload H, DATE):
                                  ..."), or NULL (a tuner's candidate) */
    bool profile;            /* --profile: a timer around each kernel step,
                                NAME_profile_print and NAME_profile_reset */
    const struct CgVariant *plain; /* a program that prepacks weights: a
                                build of the same program that reads them
                                where they are, which NAME and NAME_ws run
                                instead of packing at every call (NULL:
                                they pack); static programs only */
    const struct CgWeights *weights; /* an imported model: the API that loads
                                its weights and runs it (weights.c); NULL:
                                none.  Static programs, cpu only */
} CodegenOptions;

/* workspace.c: the kernel steps of FN, in execution order: the root
 * stages (neither inlined nor computed at another) and their nests.
 * Returns their number. */
int cg_kernel_steps(Arena *a, const SchedState *st, const LoweredFunc *fn,
                    const SStage ***roots, const Stmt ***bodies);

/* workspace.c: what a statement uses, each thing listed once, in the
 * order a walk first meets it: loads and stores in a value, an index, a
 * bound or a condition, and loop variables read. */
typedef struct CgUses {
    PtrVec tensors; /* const Tensor *: loaded or stored */
    PtrVec vars;    /* const IterVar *: read */
    PtrMap seen;    /* the items of both lists: their positions in them */
    PtrMap stored;  /* the tensors S stores to */
} CgUses;
/* S's uses, in one walk; with OUTSIDE, only those outside the parallel
 * loops the C backend lifts into functions (their bounds count: they are
 * computed where the loop was). */
CgUses cg_uses(Arena *a, const Stmt *s, bool outside);

/* The memory plan of a lowered function's intermediates (fn->temps). */
typedef struct WorkspacePlan {
    PlanBuf *bufs;  /* one per temp, in fn->temps order: its live range
                       in kernel steps and its offset in the workspace */
    int nbufs;
    int64_t naive;  /* every temp its own 64-byte aligned bytes */
    int64_t bytes;  /* the planned peak: the workspace size, 0 if none */
} WorkspacePlan;

/* workspace.c: the live range of each temp (the first and last kernel
 * step that reads or writes it) and te_memplan's offsets.  A workspace
 * beyond int64 is a diagnostic and false. */
bool cg_plan_workspace(Arena *a, const SchedState *st, const LoweredFunc *fn,
                       WorkspacePlan *out);

/* c.c: writes the C translation unit and the header to OUT_C and OUT_H. */
/* One compiled variant of a program with run-time dims (a bucket of its
 * sizes, sched.h), for cg_emit_c_variants. */
typedef struct CgVariant {
    SchedState *st;
    const LoweredFunc *fn;
    const Bucket *bucket;  /* its sizes; NULL: all of them (one variant) */
    const char *schedule;  /* its schedule, one statement a line */
    const char *from;      /* where that came from */
} CgVariant;
/* The same as cg_emit_c for VARIANTS[0..N) of one program, which share
 * its layouts (the same prepack): one function per variant and a
 * dispatcher (N > 1), and the table of the variants. */
bool cg_emit_c_variants(const CgVariant *variants, int n, const CodegenOptions *o, FILE *out_c,
                        FILE *out_h);
bool cg_emit_c(SchedState *st, const LoweredFunc *fn, const CodegenOptions *o,
               FILE *out_c, FILE *out_h);

/* c.c: the C type the generated code stores an element of T in
 * ("float"; bf16: "uint16_t"). */
const char *cg_storage_type(DType t);

/* weights.c: an imported model's weights, the NAME.weights file and the
 * API over it (the file's layout and the API: see there). */
#define CG_EMBED_MAX_BYTES ((int64_t)4 << 20) /* the most --embed-weights puts in C */
typedef struct CgWeights {
    int n;
    const int *input; /* each weight's place among the program's inputs */
    /* weight I's elements (its tensor's count of them) into OUT */
    void (*values)(const void *ctx, int i, double *out);
    const void *ctx;
    bool embed;       /* --embed-weights: arrays in NAME.c, no file */
} CgWeights;
/* The bytes W's weights take (as the generated code stores them). */
int64_t cg_weights_bytes(const Graph *g, const CgWeights *w);
/* Writes the NAME.weights file of G's weights W to OUT (seekable); false
 * when a write fails (the stream's error, or errno). */
bool cg_write_weights(const Graph *g, const CgWeights *w, FILE *out);
/* The API's declarations in NAME.h, and its definitions at the end of
 * NAME.c; CNAMES: the C names of G's inputs, then its outputs; RT: the
 * C names of its NRT run-time dims (NAME_run takes them first and
 * returns NAME_packed_args' status). */
void cg_emit_weights_h(const Graph *g, const CgWeights *w, const char *name,
                       const char *const *cnames, const char *const *rt, int nrt, FILE *h);
bool cg_emit_weights_c(Arena *a, const Graph *g, const CgWeights *w, const char *name,
                       const char *const *cnames, const char *const *rt, int nrt, FILE *c);
/* The same API in a cuda header (nvrtc.c), all of it there as static
 * inline functions on libtexrt: the weights copied to the device once,
 * NAME_run_weights calling NAME_run. */
void cg_emit_weights_cuda(Arena *a, const Graph *g, const CgWeights *w, const char *name,
                          const char *const *cnames, const char *const *rt, int nrt, FILE *h);

/* parallel.c: te_parallel_for, which runs a parallel loop's function (C text). */
extern const char cg_parallel_source[];

/* harness.c: a main() running the kernel NAME on .npy files: see there.
 * WEIGHTS (or NULL): an imported model's, from NAME.weights (or
 * embedded) through the API of weights.c. */
bool cg_emit_harness(Arena *a, const Graph *g, const char *name, const char *header,
                     const CgWeights *weights, FILE *out);
/* The descr numpy reads a tensor of dtype T with ("<f4"; bf16: its bits, "<u2"). */
const char *cg_npy_descr(DType t);

/* The cuda target (codegen/cuda*.c). */
typedef struct CudaOptions {
    const char *arch;   /* --arch sm_XX, or NULL: the local device's */
    const char *prefix; /* output files PREFIX.cubin, PREFIX.h */
    bool embed;         /* --embed: the cubin's bytes in the header */
    bool keep;          /* --keep: also write PREFIX.cu */
    bool dump;          /* --dump=cuda: print the CUDA C */
    bool check_only;    /* --check: compile, write nothing */
    bool verbose;       /* -v: registers, shared memory, spills */
} CudaOptions;

/* nvrtc.c: emits CUDA C for FN, compiles it with NVRTC and writes
 * PREFIX.cubin and PREFIX.h (or only checks).  Returns an exit status
 * after a message. */
int cg_cuda_build(const CgVariant *variants, int nvariants, const CodegenOptions *co,
                  const CudaOptions *o);

/* nvrtc.c: compiles SOURCE (named FILE in messages) for ARCH ("sm_90")
 * with NVRTC into a malloc'ed cubin; a failure prints NVRTC's log.  With
 * VERBOSE, ptxas's report of each kernel's registers and spills too.
 * Without NVRTC (configure disabled the cuda target) says so, false. */
bool cg_nvrtc_compile(const char *file, const char *source, const char *arch, bool verbose,
                      char **cubin, size_t *cubin_size);
/* nvrtc.c: the SM number a build with --arch ARCH_OPT (NULL: none given)
 * is for, as cg_cuda_build will pick it (90 for sm_90a), quietly: 0 when
 * it cannot tell (no device, a malformed --arch: cg_cuda_build says so). */
int cg_cuda_sm(const char *arch_opt);
/* nvrtc.c: NVRTC's version, 0.0 without it. */
void cg_nvrtc_version(int *major, int *minor);

/* One kernel of a CUDA program: what its launcher needs. */
typedef struct CudaKernel {
    const char *name;        /* its extern "C" name, NAME_STAGE */
    const char *stage;       /* the root stage it computes */
    unsigned grid[3];        /* blocks: extents of the loops bound to block.x/y/z */
    unsigned block[3];       /* threads: extents of the loops bound to thread.x/y/z */
    unsigned static_smem;    /* bytes of __shared__ arrays */
    unsigned dyn_smem;       /* bytes of dynamic shared memory (0 unless the
                                arrays need more than the static 48 KiB) */
    const Tensor **params;   /* the global tensors it takes, in this order
                                (after the run-time dims, when there are) */
    int nparams;
    int variant;             /* its variant's index (CudaProgram.variants) */
    const SizeExpr *grid_size[3]; /* with run-time dims: a grid extent over
                                them (grid[] is its bound), else NULL */
    const char *how;         /* for -v: "tensor cores (...)", or why a
                                matmul-like stage is not on them; or NULL */
} CudaKernel;

/* The kernels of one variant (a bucket of the run-time sizes) and its
 * intermediates' places in the workspace. */
typedef struct CudaVariant {
    int first, nkernels;     /* CudaProgram.kernels[first .. first + n) */
    const Tensor **temps;    /* intermediates in global memory ... */
    int64_t *temp_offsets;   /* ... at these offsets of one workspace
                                (workspace.c's plan, 64-byte aligned) */
    int ntemps;
} CudaVariant;

/* The CUDA C of a lowered function. */
typedef struct CudaProgram {
    char *source;            /* the .cu text, NUL-terminated, from the arena */
    CudaKernel *kernels;     /* in launch order: one per root stage */
    int nkernels;
    const Tensor **temps;    /* intermediates in global memory ... */
    int64_t *temp_offsets;   /* ... at these offsets of one workspace
                                (workspace.c's plan, 64-byte aligned) */
    int ntemps;
    int64_t workspace_bytes; /* 0 when there are none; with run-time
                                dims, the most any variant needs */
    CudaVariant *variants;   /* one for a program without run-time dims */
    int nvariants;
    const char *int_type;    /* indices and the run-time dims' parameters */
    int nrt;                 /* the declared run-time dims, which every */
    const int *rt_dims;      /* kernel takes first: their Graph.dims indices */
    const char **rt_names;   /* ... and their names in the kernels */
} CudaProgram;

/* cuda.c: the CUDA C of FN for architecture SM (e.g. 90; ARCH its name,
 * "sm_90a", for the comments).  A schedule CUDA cannot run (too many
 * threads, too much shared memory, two loops bound to one axis) is a
 * diagnostic and false. */
bool cg_cuda_emit(SchedState *st, const LoweredFunc *fn, const CodegenOptions *co,
                  const char *arch, int sm, CudaProgram *out);
/* cuda.c: the same for the VARIANTS[0..N) of a program with run-time
 * dims, in one translation unit: variant I's kernels are NAME_STAGE_vI
 * (NAME_STAGE when N is 1), and every kernel takes the declared run-time
 * dims first. */
bool cg_cuda_emit_variants(const CgVariant *variants, int n, const CodegenOptions *co,
                           const char *arch, int sm, CudaProgram *out);
/* cuda.c: can the CUDA backend run FN on sm_SM?  Its limits (threads a
 * block, a grid axis's blocks, shared memory with the pipeline's slots,
 * one loop an axis) are found where the code is laid out, so this lays
 * it out and keeps nothing; a limit passed is a diagnostic and false, as
 * for cg_cuda_emit.  The tuner prunes its points with it. */
bool cg_cuda_fits(SchedState *st, const LoweredFunc *fn, int sm);

/* The C family: what the C and the CUDA backends print alike (cfamily.c).
 * A dialect is the table of what differs in the text of an expression;
 * a printer, the state one translation unit's expressions are printed
 * with.  Each backend's Emitter begins with its CgPrinter, so that the
 * hooks can reach the Emitter from it. */
typedef struct CgDialect {
    const char *const *reserved;  /* identifiers a user's name must not become */
    int nreserved;                /* ... besides cfamily.c's common ones */
    const char *const *prefixes;  /* NULL-ended: a name that begins with one is
                                     texc's (or the compiler's): "u_" goes before */
    bool c_identifiers;           /* user names go through cg_c_identifier
                                     first (a C keyword: NAME_kernel, not
                                     NAME_2), as the CUDA backend always did */
    const char *int_suffix;       /* of integer helpers: te_min_i64 */
    bool bool_words;              /* bool constants as true/false, not 1/0 */
    const char *nan[2], *inf[2];  /* NaN, +inf; [0] in f32, [1] in f64 */
    const char *neg_inf[2];       /* -inf, parenthesised as it needs */
    const char *load_f16[2];      /* around an f16 element: its value as float */
    const char *load_bf16[2];     /* ... a bf16 element */
    const char *round_f16[2];     /* around a float: rounded to f16, as float */
    const char *round_bf16[2];    /* ... to bf16 */
    const char *helper;           /* what a prelude helper is declared with */
    const char *i32_type;         /* the type an i32 is stored in */
    const char *u32_type;         /* 32-bit unsigned, where i32 wraps */
} CgDialect;

extern const CgDialect cg_dialect_c;    /* C11 with GCC/Clang extensions */
extern const CgDialect cg_dialect_cuda; /* CUDA C++ for NVRTC */

/* The claim of BASE_K, at position POS of a printer's names: when it
 * was made, BASE and BASE_2 .. BASE_(K-1) were taken (cg_claim). */
typedef struct CgNumbered {
    const char *name; /* BASE_K */
    int k, pos;
} CgNumbered;

typedef struct CgPrinter {
    Arena *a;
    FILE *out;                /* where expressions go */
    const CgDialect *d;
    const char *int_type;     /* the C type i32 values are computed in */
    int indent;               /* of statements, in steps of four spaces */
    PtrVec names;             /* const char *: names in use (for clashes);
                                 a backend may drop the newest (len = mark) */
    PtrMap name_at;           /* strings: a name -> its position in names
                                 when claimed (stale once dropped) */
    PtrMap numbered;          /* strings: a base name -> its newest claim
                                 with a number, in numbered_claims */
    PtrVec numbered_claims;   /* CgNumbered * */
    PtrVec tensors, tnames;   /* Tensor * with a name, and that name */
    PtrMap tensor_at;         /* a Tensor * -> its position in tensors
                                 (stale once dropped, as name_at) */
    const char **var_names;   /* by IterVar id, NVARS of them (cg_var_name
                                 grows both arrays for a variable made
                                 while emitting: a prefetch's) */
    const char **var_text;    /* by IterVar id: text that replaces the
                                 variable, or NULL (the array or an entry) */
    int nvars;
    /* writes the element T[IDX] a load reads, as an lvalue */
    void (*element)(struct CgPrinter *p, const Tensor *t, Expr *const *idx);
    /* optional: does T[IDX] hold a value already in its compute type (no
     * conversion on load)? */
    bool (*computed)(struct CgPrinter *p, const Tensor *t, Expr *const *idx);
} CgPrinter;

/* A piece of a prelude: a helper function, macro or type (or a comment
 * on the ones after it), printed where the code uses what it defines. */
typedef struct CgHelper {
    const char *names; /* the identifiers it defines (or comments on),
                          separated by spaces */
    const char *text;  /* its text, in which $Q is the dialect's helper
                          qualifier, $I the int_type, $W the i32 storage
                          type, $U the 32-bit unsigned type and $S the
                          integer helpers' suffix */
} CgHelper;

/* vmath.c: branch-free vector exp, erf, tanh, gelu, sigmoid: the C
 * prelude's pieces of them, each after the pieces it uses. */
extern const CgHelper cg_vmath_helpers[];
extern const int cg_vmath_nhelpers;

/* cfamily.c: the prelude BODY needs: of the helpers BEFORE, cfamily.c's
 * own (the scalar math cg_emit_expr calls), then AFTER, in that order,
 * those whose names BODY or another printed helper uses. */
void cg_print_helpers(CgPrinter *p, FILE *out, const CgHelper *before, int nbefore,
                      const CgHelper *after, int nafter, const char *body);

/* cfamily.c: NAME, or NAME_2, NAME_3, ... where taken; recorded as taken.
 * A name with one of the dialect's prefixes (te_: texc's own) becomes
 * u_NAME first. */
const char *cg_claim(CgPrinter *p, const char *name);
/* cfamily.c: the name of T (of V), claimed the first time it is asked. */
const char *cg_tensor_name(CgPrinter *p, const Tensor *t);
/* T named as AS is (the same input of another build of the program) */
void cg_same_name(CgPrinter *p, const Tensor *t, const Tensor *as);
const char *cg_var_name(CgPrinter *p, const IterVar *v);
/* cfamily.c: the C type values of T are computed in. */
const char *cg_compute_type(const CgPrinter *p, DType t);
/* cfamily.c: C's precedence of a binary operator OP, 1 (||) to 6 (*);
 * 7: a unary operator, a call, a primary expression. */
int cg_prec(Op op);
/* cfamily.c: X as a C expression, parenthesised where an operator of
 * precedence PREC (cg_prec's scale; 0: none) surrounds it. */
void cg_emit_expr(CgPrinter *p, const Expr *x, int prec);
/* cfamily.c: is X an i32 +, -, * or unary - that may leave i32's range,
 * so that cg_emit_expr writes it wrapping (te_add_i32)?  Not where the
 * ranges of its operands keep it inside (index arithmetic, mostly). */
bool cg_i32_wraps(const Expr *x);
/* cfamily.c: a statement's text at the indentation (FMT ends the line). */
void cg_line(CgPrinter *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* cfamily.c: S in upper case (a macro's name), allocated in A. */
char *cg_upper(Arena *a, const char *s);
/* cfamily.c: a generated header's "#define NAME_DIM value" for each dim
 * of G, NAME_DIM in upper case; one that clashes with a macro of TAKEN
 * (the header's own) or another dim's gets a suffix, _2, _3, ...; each
 * is added to TAKEN. */
void cg_print_dim_macros(Arena *a, FILE *h, const char *name, const Graph *g, PtrVec *taken);
/* Size expression E as C in int64 arithmetic (numbers as LL literals),
 * a declared run-time dim D printed as LEAF[D] (by Graph.dims index). */
const char *cg_size_c(Arena *a, const SizeExpr *e, const char *const *leaf);
/* cfamily.c: the run-time sizes' part of a generated API, which the C
 * and the CUDA backends print alike: QUAL before each function ("" in
 * NAME.c; "static inline " in the CUDA header, which has no .c). */
typedef struct CgSizes {
    const Graph *g;
    const char *name;          /* NAME */
    int n;                     /* the declared run-time dims, in order: */
    const int *dims;           /* ... their indices in Graph.dims */
    const char *const *names;  /* ... their C names (the parameters) */
    const char *check;         /* NAME_check_sizes */
    const char *erange;        /* NAME_ERANGE */
    const char *qual;
} CgSizes;
/* "int64_t M, int64_t S" */
const char *cg_sizes_decl(Arena *a, const CgSizes *s);
/* NAME_check_sizes (each size in its whole range, then the checks sema
 * left to run time) and NAME_strerror. */
void cg_print_sizes_functions(Arena *a, FILE *c, const CgSizes *s);
/* NAME_variant: the index of the variant whose bucket holds the sizes
 * (checked first), an if-chain in the variants' order. */
void cg_print_variant_of(Arena *a, FILE *c, const CgSizes *s, const CgVariant *v, int n);
/* The variants' table: its type, NAME_NVARIANTS and (DEFINE false) its
 * declaration, or (DEFINE) its definition, QUAL "static " making it the
 * header's own. */
void cg_print_variant_table(Arena *a, FILE *out, const CgSizes *s, const CgVariant *v, int n,
                            bool define);
/* cfamily.c: the header comment's lines on the schedule: where it came
 * from (O->schedule_from), then the trace of ST, a statement a line. */
void cg_print_schedule_comment(FILE *out, const SchedState *st, const CodegenOptions *o);

/* output.c: a run's output files, written as one set.  Each member is
 * written to a temporary file of its own beside PATH (PATH.tmpXXXXXX,
 * made with mkstemp: never an existing file or a planted symlink); commit
 * renames them all into place or, after any failure, removes them all
 * (and any already renamed): never a partial set. */
typedef struct OutputFile {
    const char *path, *tmp; /* PATH and its temporary file */
    FILE *f;                /* open on TMP until the commit */
} OutputFile;
typedef struct OutputSet {
    Arena *arena;           /* for the names; set by the caller */
    PtrVec files;           /* OutputFile * */
    bool failed;            /* an open failed (its message is printed) */
} OutputSet;
/* Opens a temporary file for PATH as the next file of SET (BINARY: no
 * difference on POSIX, kept for the reader).  NULL after a message, and
 * for every later open once one failed. */
FILE *cg_output_open(OutputSet *set, const char *path, bool binary);
/* Closes every file of SET; if OK (what the caller wrote went well) and
 * every open and close did, renames each PATH.tmp to PATH in order.
 * Otherwise removes them all.  Returns whether the set is in place. */
bool cg_output_commit(OutputSet *set, bool ok);

/* kernel_cc.c: the argument vector that compiles generated C, for texc
 * -c and for the tuner's candidates alike: the configured compiler, its
 * flags (-std=gnu11 -O3 -march=native, the OpenMP flag), then WORDS[0..N)
 * (the files, -c or -o ...).  NULL-terminated, from A. */
char **cg_kernel_cc_argv(Arena *a, const char *const *words, int nwords);

/* A C identifier made from NAME (the base name of a path): letters,
 * digits and '_' kept, anything else '_', a leading digit prefixed. */
char *cg_c_identifier(Arena *a, const char *name);
/* cfamily.c: the C name of the entry point for the output file name BASE:
 * cg_c_identifier's, with _kernel appended where it would redefine what
 * the headers the generated code includes declare (fmaf, read,
 * sigaction, pthread_join, omp_get_max_threads, ...). */
const char *cg_entry_name(Arena *a, const char *base);

#endif

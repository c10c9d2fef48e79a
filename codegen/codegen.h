/* codegen.h — from the loop IR to files other programs use.
 *
 * The CPU backend writes NAME.h (the sizes, the entry point) and NAME.c
 * (portable C11 with OpenMP pragmas, standard headers only).  Names from
 * the user's program are mangled where they would clash with C keywords,
 * the C library, or texc's own generated names.
 */
#ifndef TEXC_CODEGEN_H
#define TEXC_CODEGEN_H

#include "sched/sched.h"

typedef struct CodegenOptions {
    const char *name;        /* the entry point and the files' base name */
    const char *source_path; /* the .te file, for the header comment */
    const char *target;      /* "cpu" */
} CodegenOptions;

/* c.c: writes the C translation unit and the header to OUT_C and OUT_H. */
bool cg_emit_c(SchedState *st, const LoweredFunc *fn, const CodegenOptions *o,
               FILE *out_c, FILE *out_h);

/* harness.c: a main() running the kernel NAME on .npy files: see there. */
bool cg_emit_harness(Arena *a, const Graph *g, const char *name, FILE *out);

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

/* Emits CUDA C for FN, compiles it with NVRTC and writes PREFIX.cubin and
 * PREFIX.h (or only checks).  Returns an exit status after a message. */
int cg_cuda_build(SchedState *st, const LoweredFunc *fn, const CodegenOptions *co,
                  const CudaOptions *o);

/* A C identifier made from NAME (the base name of a path): letters,
 * digits and '_' kept, anything else '_', a leading digit prefixed. */
char *cg_c_identifier(Arena *a, const char *name);

#endif

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
} Knob;

#define SCHED_ARG_KINDS(X)                                     \
    X(SA_NAME)   /* name: a loop, stage, scope or gpu axis    */ \
    X(SA_INT)    /* ival                                      */ \
    X(SA_KNOB)   /* knob: an integer chosen by the tuner      */ \
    X(SA_STRING) /* name: a quoted string (a layout)          */

typedef enum SchedArgKind {
#define X(e) e,
    SCHED_ARG_KINDS(X)
#undef X
} SchedArgKind;

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

typedef struct Schedule {
    const char *target; /* "cpu" or "cuda" */
    Span target_span;
    SchedStmt **stmts;
    int nstmts;
    Knob **knobs; /* every knob defined in this schedule */
    int nknobs;
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
    X(PR_PIPELINE, "pipeline", "LN", -1, 0, 0)

typedef enum Prim {
#define X(e, n, s, o, r, a) e,
    SCHED_PRIMS(X)
#undef X
    PR_COUNT
} Prim;

/* prims.c */
const char *prim_name(Prim p);
Prim prim_lookup(const char *name); /* PR_COUNT if unknown */

/* check.c: checks every schedule of G against its stages: known targets,
 * primitives, argument counts and kinds, stage and loop names (simulating
 * the loop names each primitive creates and removes), knob values.
 * Reports the first error and returns false. */
bool sch_check(Graph *g);

/* Prints the schedules as parsed, knobs with their chosen values. */
void sch_print(FILE *out, const Schedule *s);

/* Sets knob NAME to VALUE in every schedule of G (-K NAME=VALUE).  Returns
 * false, with a message, if no knob is called NAME or VALUE is not one of
 * its values. */
bool sch_set_knob(Graph *g, const char *name, int64_t value);

#endif

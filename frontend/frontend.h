/* frontend.h — text to checked IR: the lexer, the parser, the AST and the
 * semantic analysis that turns the AST into a lang/ Graph.
 *
 * The AST keeps the program as written (names unresolved, dtypes unknown);
 * sema.c resolves it.  Every node records the span of the text it came
 * from, so every later diagnostic can point at the user's source.
 */
#ifndef TEXC_FRONTEND_H
#define TEXC_FRONTEND_H

#include "lang/texc.h"
#include "sched/sched.h"

/* Limits that turn hostile input into diagnostics instead of crashes. */
#define FE_MAX_IDENT 255   /* bytes in an identifier */
#define FE_MAX_NESTING 256 /* open brackets and parentheses */
#define FE_MAX_DEPTH 1000  /* levels of an expression tree, lets expanded */
#define FE_MAX_EXPANDED (1 << 20) /* nodes that expanding lets may add */

/*      kind         fields used                                          */
#define FE_NODE_KINDS(X)                                                    \
    X(N_NUM)      /* num; is_int: an integer literal                     */ \
    X(N_NAME)     /* name: a dim, let, index variable or tensor          */ \
    X(N_ACCESS)   /* name[kids]: a tensor element                        */ \
    X(N_UNARY)    /* op kids[0]: OP_NEG or OP_NOT                        */ \
    X(N_BINARY)   /* kids[0] op kids[1]; name_span: the operator         */ \
    X(N_CALL)     /* name(kids): intrinsic, select or cast               */ \
    X(N_REDUCE)   /* name(kids[0..n-1]) kids[n-1 is body]; axes N_AXIS   */ \
    X(N_AXIS)     /* name [in kids[0] [.. kids[1]]]: an index variable   */ \
    X(N_DIM)      /* dim name = kids[0], or is_range: dim name in        */ \
                  /* kids[0]..kids[1] [= kids[2], the hint]              */ \
    X(N_INPUT)    /* input name : [const] dtype_name[kids]               */ \
    X(N_LET)      /* let name = kids[0]                                  */ \
    X(N_STAGE)    /* name[kids[0..n-1] are N_AXIS] = kids[n-1]           */ \
    X(N_OUTPUT)   /* output kids (N_NAME)                                */ \
    X(N_SCHEDULE) /* schedule name { sched->stmts }                      */

typedef enum NodeKind { FE_NODE_KINDS(TE_ENUM_ITEM) } NodeKind;

typedef struct Node Node;
struct Node {
    NodeKind kind;
    Span span;           /* the whole construct */
    Span name_span;      /* where name is written */
    const char *name;    /* identifier, or NULL */
    double num;          /* N_NUM */
    bool is_int;         /* N_NUM: written without '.' or exponent */
    bool is_const;       /* N_INPUT: marked const */
    bool is_range;       /* N_DIM: a run-time dim, declared with a range */
    Op op;               /* N_UNARY, N_BINARY */
    const char *dtype_name; /* N_INPUT */
    Span dtype_span;
    Node **kids;
    int nkids;
    int kids_cap; /* the room KIDS has, for node_add */
    int depth;           /* levels of kids below this node: 0 for a leaf */
    struct Schedule *sched; /* N_SCHEDULE */
};

typedef struct Program {
    Node **items; /* top-level N_DIM/N_INPUT/N_LET/N_STAGE/N_OUTPUT/N_SCHEDULE */
    int nitems;
} Program;

/* A -D NAME=VALUE from the command line. */
typedef struct DimOverride {
    const char *name;
    int64_t value;
    bool used;
} DimOverride;

/* Everything the parser and lexer share. */
typedef struct Parser {
    Arena *arena;
    const Source *src;
    const char *cursor;  /* the lexer's position in src->text */
    const char *limit;   /* src->text + src->len */
    int nesting;         /* open ( [ { */
    uint32_t open[FE_MAX_NESTING]; /* where each open bracket is */
    int prev_nesting;    /* nesting before the last token read */
    uint32_t prev_end;   /* where the token before the last one read ends */
    bool lex_failed;     /* a lexer error was reported: suppress the parser's */
    const Node *too_deep; /* the first node deeper than FE_MAX_DEPTH */
    FILE *dump_tokens;   /* --dump=tokens, or NULL */
    PtrVec items;        /* the Program being built */
    struct Schedule *sched; /* the schedule block being parsed */
} Parser;

/* ast.c */
Node *node_new(Parser *p, NodeKind kind, Span sp);
void node_add(Parser *p, Node *parent, Node *kid);
Span span_join(Span a, Span b);
void fe_print_ast(FILE *out, const Program *prog);
const char *fe_node_kind_name(NodeKind k);

/* lexer.re: fe_lex, declared in parser.h with the token kinds. */

/* parser.y: parses P->src into PROG.  Returns false after a diagnostic. */
bool fe_parse(Parser *p, Program *prog);

/* sema.c: checks PROG and builds the graph.  Returns NULL after the first
 * error's diagnostic.  Overrides are applied to dims of the same name; an
 * override naming no dim is an error. */
Graph *fe_sema(Arena *a, const Source *src, const Program *prog,
               DimOverride *overrides, int noverrides);

#endif

/* onnx.h — importing ONNX models: the protobuf reader (wire.c) and the
 * converter from an ONNX graph to .te text (import.c, ops.c).
 *
 * The importer does not build a Graph itself: it writes a .te program and
 * the driver hands that text to the frontend, so a model compiles, dumps,
 * evaluates and tunes exactly as the same program written by hand (and
 * `--emit-te` shows the user that program).  Weights are `const` inputs of
 * the program; their values travel beside it (OxImport.weights).
 *
 * Everything is allocated from the caller's arena.  The model file is
 * mapped, not read: initializers' bytes are used where they lie.  User
 * errors are printed as "FILE: error: MSG" and make the entry points
 * return false; nothing in a hostile file can make them crash.
 */
#ifndef TEXC_ONNX_H
#define TEXC_ONNX_H

#include "lang/texc.h"

/* Limits that turn hostile models into diagnostics. */
#define OX_MAX_RANK TE_MAX_RANK        /* dims of a tensor (te's limit) */
#define OX_MAX_ELEMS ((int64_t)1 << 40) /* elements of any tensor */
#define OX_MAX_FOLD ((int64_t)1 << 20)  /* elements a folded constant may have */

/* ONNX TensorProto.DataType codes. */
enum {
    OX_FLOAT = 1, OX_UINT8 = 2, OX_INT8 = 3, OX_UINT16 = 4, OX_INT16 = 5, OX_INT32 = 6,
    OX_INT64 = 7, OX_STRING = 8, OX_BOOL = 9, OX_FLOAT16 = 10, OX_DOUBLE = 11,
    OX_UINT32 = 12, OX_UINT64 = 13, OX_BFLOAT16 = 16,
};

/* A TensorProto: an initializer, a Constant's value or an attribute's. */
typedef struct OxTensor {
    const char *name;
    int dtype;              /* OX_* */
    int rank;
    int64_t dims[OX_MAX_RANK];
    int64_t nelems;
    /* the elements: little-endian, ELEM bytes each (8 for int64 and
       double, 4 for float and the int32_data field's varints widened...):
       see ox_tensor_value.  FIELD says where they came from. */
    const uint8_t *data;
    size_t len;             /* bytes at DATA */
    int field;              /* 9 raw_data (or external), 4 float_data, 5 int32_data,
                               7 int64_data, 10 double_data; 0 none */
    int64_t *ints;          /* int32_data/int64_data decoded (varints) */
} OxTensor;

/* AttributeProto.AttributeType codes used here. */
enum { OX_A_FLOAT = 1, OX_A_INT = 2, OX_A_STRING = 3, OX_A_TENSOR = 4, OX_A_GRAPH = 5,
       OX_A_FLOATS = 6, OX_A_INTS = 7 };

typedef struct OxAttr {
    const char *name;
    int type;          /* OX_A_*; 0 when the file leaves it out */
    double f;
    int64_t i;
    const char *s;
    OxTensor *t;
    int64_t *ints;     /* OX_A_INTS */
    double *floats;    /* OX_A_FLOATS */
    int nints, nfloats;
} OxAttr;

typedef struct OxNode {
    const char *name;     /* may be "" */
    const char *op;       /* op_type */
    const char *domain;   /* "" for the default domain */
    const char **inputs;  /* "" for an omitted optional input */
    const char **outputs;
    OxAttr *attrs;
    int ninputs, noutputs, nattrs;
} OxNode;

/* A graph input or output: its name, dtype and shape, a dim given by
 * name (dim_param) having DIMS[d] = -1 and PARAMS[d] its name. */
typedef struct OxValueInfo {
    const char *name;
    int dtype;
    int rank;            /* -1: no shape given */
    int64_t dims[OX_MAX_RANK];
    const char *params[OX_MAX_RANK];
} OxValueInfo;

typedef struct OxModel {
    const char *path;
    int64_t ir_version;
    int64_t opset;        /* of the default domain; 0 if the model imports none */
    const char *producer; /* "pytorch 1.13.0" */
    OxNode *nodes;
    OxTensor *inits;
    OxValueInfo *inputs, *outputs;
    int nnodes, ninits, ninputs, noutputs;
} OxModel;

/* wire.c: reads the model at PATH (mapped; BYTES/LEN instead when BYTES
 * is not NULL: the fuzzer's way in).  External data is resolved against
 * PATH's folder.  False after "PATH: error: ..." on stderr. */
bool ox_read_model(Arena *a, const char *path, const uint8_t *bytes, size_t len, OxModel *m);
/* The I-th element of T as a double (int64 beyond 2^53 rounds). */
double ox_tensor_value(const OxTensor *t, int64_t i);
const char *ox_dtype_name(int dtype);

/* A weight of the imported program: a const input and its values. */
typedef struct OxWeight {
    const Tensor *tensor; /* name (C-safe), dtype, shape */
    const OxTensor *init; /* the initializer, or NULL: VALUES */
    const double *values;
} OxWeight;

/* A -D NAME=VALUE that binds a symbolic dim of the model's inputs, or a
 * -D NAME=LO..HI[=HINT] that keeps it a run-time dim of the program. */
typedef struct OxDefine {
    const char *name;
    int64_t value;       /* the size (RANGE false) */
    bool range;          /* a run-time dim: LO..HI inclusive, HINT in it */
    int64_t lo, hi, hint;
} OxDefine;

/* A symbolic dim kept at run time: the program's `dim TE in LO..HI =
 * HINT;`, and where the graph's inputs carry it (for --eval, which reads
 * its size from the input files). */
typedef struct OxRtDim {
    const char *onnx;      /* the dim_param, as the model writes it */
    const char *te;        /* the dim in the program */
    int64_t lo, hi, hint;
    const char *input;     /* the first graph input (its program name) that has it ... */
    int axis;              /* ... at this axis */
} OxRtDim;

typedef struct OxImport {
    char *text;          /* the .te program (arena) */
    size_t len;
    OxWeight *weights;
    int nweights;
    const char **onnx_names; /* graph inputs' names as the model writes them ... */
    const char **te_names;   /* ... and as the program does */
    int nnames;
    OxRtDim *rtdims;         /* the run-time dims (-D NAME=LO..HI), in declaration order */
    int nrtdims;
} OxImport;

/* symdims.c: converts M into a .te program named after TITLE (for its
 * comments).  A define with a range keeps its dim symbolic: the program
 * declares it a run-time dim.  False after the errors (every unsupported
 * op in one). */
bool ox_import(Arena *a, const OxModel *m, const OxDefine *defines, int ndefines,
               const char *title, OxImport *out);
/* import.c: one import with every symbolic dim bound to a number (the
 * defines' VALUE, ranges included); DIMS_TEXT (or NULL) opens the
 * declarations, RESERVED names (NRESERVED) the program must not take
 * for anything else, PROBES (NPROBES) the sizes standing for run-time
 * dims in this import (ops.c keeps their products out of flat views). */
bool ox_import_bound(Arena *a, const OxModel *m, const OxDefine *defines, int ndefines,
                     const char *title, const char *dims_text, const char *const *reserved,
                     int nreserved, const int64_t *probes, int nprobes, OxImport *out);
/* NAME made C-safe, as the program names things from the model's names. */
char *ox_c_safe(Arena *a, const char *name);
/* W's values as doubles (NELEMS of them, malloc'd by the caller). */
void ox_weight_values(const OxWeight *w, double *out);

#endif

/* ------------------------------------------------------------------ */
/* Internal to onnx/: the importer's state, shared by import.c (values,
 * names, the program's text) and ops.c (one converter per op).        */

typedef enum OxValueKind {
    OXV_INPUT, /* a graph input: an input of the program */
    OXV_CONST, /* known at compile time: folded, a Constant or an initializer */
    OXV_STAGE, /* computed by a stage of the program */
} OxValueKind;

/* A tensor of the ONNX graph, by the name the graph gives it. */
typedef struct OxValue {
    const char *onnx;  /* the ONNX name */
    OxValueKind kind;
    DType dtype;       /* in the program (int64, int16, uint16, uint32 and uint64 are i32) */
    int odtype;        /* the ONNX dtype (OX_*) */
    int rank;
    int64_t dims[OX_MAX_RANK];
    double *konst;          /* OXV_CONST: the values, or NULL until loaded from INIT */
    const OxTensor *init;   /* OXV_CONST from an initializer */
    const char *te;         /* its name in the program (a weight's once it is read) */
    const OxNode *reader;   /* the first node that reads it, and at which input */
    int reader_slot;
    int uses;               /* inputs of nodes (and graph outputs) that read it */
    /* A linear layer on rows whose run-time dim is not the first (ops.c,
       held_rows): ROWS_OF set, a Reshape of it to [rows, K] the program
       does not write, which its one reader, a Gemm, reads in ROWS_OF's
       dims; HELD_RANK set, the Gemm's [rows, N] (RANK and DIMS, for
       Shape) that the program holds as HELD_DIMS (the rows' dims, N)
       for its one reader, a Reshape back to those dims. */
    struct OxValue *rows_of;
    int held_rank;
    int64_t held_dims[OX_MAX_RANK];
} OxValue;

typedef struct OxImporter {
    Arena *a;
    const OxModel *m;
    const char *path;
    int64_t opset;
    PtrVec values;        /* OxValue * */
    PtrMap value_index;   /* ONNX name -> index in VALUES */
    PtrMap names;         /* the names used in the program */
    FILE *decl, *body;       /* the program's declarations and stages */
    char *decl_text, *body_text;
    size_t decl_len, body_len;
    PtrVec weights;          /* OxWeight * */
    const OxNode *node;      /* the node being converted */
    bool commented;          /* its comment is written */
    const char **gelu_of;    /* per node: x of the erf-GELU chain it ends, or NULL */
    bool *skip;              /* per node: inside a chain another node converts */
    const int64_t *probes;   /* the sizes standing for run-time dims (symdims.c) */
    int nprobes;
} OxImporter;

typedef bool (*OxConvert)(OxImporter *im, const OxNode *n, OxValue **in, OxValue **out);

/* ops.c: the converter of OP at the model's opset, or NULL. */
OxConvert ox_lookup_op(const char *op, int64_t opset);
/* The number of inputs OP needs (for the reader's checks). */

/* import.c: helpers for ops.c */
bool ox_error(OxImporter *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t ox_elems(const OxValue *v);
double *ox_const_values(OxImporter *im, OxValue *v);
bool ox_need_const(OxImporter *im, OxValue *v, const char *what);
void ox_set_const(OxImporter *im, OxValue *out, int odtype, int rank, const int64_t *dims,
                  double *values);
bool ox_set_shape(OxImporter *im, OxValue *out, int odtype, int rank, const int64_t *dims);
const char *ox_read(OxImporter *im, OxValue *v, const char *const *idx);
const char *ox_bcast_read(OxImporter *im, OxValue *v, const OxValue *out, const char *const *idx);
const char *const *ox_index_vars(OxImporter *im, int rank, const char *prefix);
const char *ox_literal(OxImporter *im, DType t, double v);
void ox_name(OxImporter *im, OxValue *v); /* V's name in the program, from ONNX's */
const char *ox_aux_name(OxImporter *im, const OxValue *out, const char *suffix);
bool ox_is_probe(const OxImporter *im, int64_t size);
void ox_stage(OxImporter *im, OxValue *out, const char *expr);
void ox_aux_stage(OxImporter *im, const char *name, int rank, const int64_t *dims,
                  const char *expr);
DType ox_te_dtype(int odtype);
int ox_onnx_dtype(DType t);
double ox_round(int odtype, double v);
/* attributes */
const OxAttr *ox_attr(const OxNode *n, const char *name);
int64_t ox_attr_int(const OxNode *n, const char *name, int64_t def);
double ox_attr_float(const OxNode *n, const char *name, double def);
const char *ox_attr_string(const OxNode *n, const char *name, const char *def);

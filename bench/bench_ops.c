/* bench_ops.c — make bench beyond matmul_gelu: four more operations.
 *
 * Each operation is one of texc's samples at the sizes the sample declares
 * (read from the generated headers, so that the file is the one source):
 *
 *   batch_matmul  samples/batch_matmul.te, c[b] = a[b] @ w[b]
 *                 peer: oneDNN's matmul primitive with a batch dimension;
 *                 w is an input, not a const weight, so oneDNN takes it as
 *                 given (a per-call reorder would be texc's work too)
 *   conv2d        samples/conv2d.te, relu(conv3x3/s2/p1(img, flt) + bias),
 *                 NCHW; peer: oneDNN's convolution primitive (algorithm
 *                 auto, ReLU post-op), source and destination NCHW as the
 *                 sample's are, the const filter pre-packed once to the
 *                 layout the primitive asks for, outside the timed loop
 *   softmax       samples/softmax.te, rows of M x N
 *   layernorm     samples/layernorm.te, rows of M x D with gain and bias
 *                 peers for both: oneDNN's softmax (accurate) and layer
 *                 normalization (scale and shift) primitives
 *
 * The rows: naive (naive.c, -O2, one thread, also the reference every row
 * is checked against), onednn, texc-default (the file's schedule, or
 * texc's default where the file has none; built without the tuning log)
 * and texc-tuned (the tuning log's winner, or "no tuning record").
 *
 * The compute-bound two (batch_matmul, conv2d) report GFLOP/s and % of the
 * FMA peak.  softmax and layernorm read and write each element once in the
 * best case, so their roofline is the memory's: the table reports GB/s
 * (the bytes that must move — inputs read once, the output written once —
 * over the median time) and % of the bandwidth that a vectorized copy loop
 * gets on buffers of the same sizes at the same thread count
 * (bench_bandwidth in peak.c).
 */
#define _GNU_SOURCE
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kernels.h"

/* samples/layernorm.te's `let eps` (a mismatch in the table if it changes) */
#define LAYERNORM_EPS 1e-5f

enum { MAX_OP_ROWS = 128, MAX_THREADS_COUNTS = 8 };

typedef enum OpKind {
    OP_BATCH_MATMUL,
    OP_CONV2D,
    OP_SOFTMAX,
    OP_LAYERNORM,
    NOPS
} OpKind;

/* One operation's data: up to three inputs and the output. */
typedef struct OpData {
    OpKind kind;
    float *in[3];
    size_t in_count[3];
    int nin;
    float *out, *ref;
    size_t out_count;
} OpData;

typedef struct OpInfo {
    const char *name;          /* the sample's base name */
    const char *title;         /* the section's heading */
    double flops;              /* per call; 0: judged against the bandwidth */
    double bytes;              /* per call, the least that must be read + written */
    double bandwidth[MAX_THREADS_COUNTS]; /* copy GB/s at each thread count (memory ops) */
    char sizes[128];
    const char *tuned_note;
} OpInfo;

static OpInfo infos[NOPS];
static const OpsConfig *config;

typedef enum OpRowState { OPROW_OK, OPROW_MISMATCH, OPROW_ABSENT, OPROW_FAILED } OpRowState;

typedef struct OpRow {
    OpKind op;
    int threads;
    const char *impl;          /* naive, onednn, texc-default, texc-tuned */
    OpRowState state;
    Timing timing;
    double error;
    char note[320];
} OpRow;

static OpRow rows[MAX_OP_ROWS];
static int nrows;

/* ---- The kernels ---------------------------------------------------------- */

typedef void BatchMatmulFn(const float *a, const float *w, float *c);
typedef void Conv2dFn(const float *img, const float *flt, const float *bias, float *out);
typedef void SoftmaxFn(const float *x, float *p);
typedef void LayernormFn(const float *x, const float *gamma, const float *beta, float *y);

/* Any kernel: called through its operation's type above. */
typedef void AnyFn(void);

/* texc's kernel of each operation: the default build and the tuned one (or NULL) */
static AnyFn *const texc_default[NOPS] = {
    (AnyFn *)op_batch_matmul_default, (AnyFn *)op_conv2d_default,
    (AnyFn *)op_softmax_default, (AnyFn *)op_layernorm_default,
};
static AnyFn *const texc_tuned[NOPS] = {
    (AnyFn *)BENCH_OP_TUNED_BATCH_MATMUL, (AnyFn *)BENCH_OP_TUNED_CONV2D,
    (AnyFn *)BENCH_OP_TUNED_SOFTMAX, (AnyFn *)BENCH_OP_TUNED_LAYERNORM,
};
static const char *const tuned_notes[NOPS] = {
    BENCH_OP_TUNED_NOTE_BATCH_MATMUL, BENCH_OP_TUNED_NOTE_CONV2D,
    BENCH_OP_TUNED_NOTE_SOFTMAX, BENCH_OP_TUNED_NOTE_LAYERNORM,
};

enum {
    BM_B = OP_BATCH_MATMUL_DEFAULT_B, BM_M = OP_BATCH_MATMUL_DEFAULT_M,
    BM_N = OP_BATCH_MATMUL_DEFAULT_N, BM_K = OP_BATCH_MATMUL_DEFAULT_K,
    CV_N = OP_CONV2D_DEFAULT_N, CV_C = OP_CONV2D_DEFAULT_C, CV_H = OP_CONV2D_DEFAULT_H,
    CV_W = OP_CONV2D_DEFAULT_W, CV_F = OP_CONV2D_DEFAULT_F, CV_R = OP_CONV2D_DEFAULT_R,
    CV_S = OP_CONV2D_DEFAULT_S, CV_STRIDE = OP_CONV2D_DEFAULT_STRIDE,
    CV_PAD = OP_CONV2D_DEFAULT_PAD, CV_OH = OP_CONV2D_DEFAULT_OH, CV_OW = OP_CONV2D_DEFAULT_OW,
    SM_M = OP_SOFTMAX_DEFAULT_M, SM_N = OP_SOFTMAX_DEFAULT_N,
    LN_M = OP_LAYERNORM_DEFAULT_M, LN_D = OP_LAYERNORM_DEFAULT_D,
};

typedef struct TexcOpRun {
    AnyFn *fn;
    OpData *data;
} TexcOpRun;

static void run_texc_op(void *ctx)
{
    TexcOpRun *t = ctx;
    float **in = t->data->in;
    switch (t->data->kind) {
    case OP_BATCH_MATMUL: ((BatchMatmulFn *)t->fn)(in[0], in[1], t->data->out); break;
    case OP_CONV2D: ((Conv2dFn *)t->fn)(in[0], in[1], in[2], t->data->out); break;
    case OP_SOFTMAX: ((SoftmaxFn *)t->fn)(in[0], t->data->out); break;
    case OP_LAYERNORM: ((LayernormFn *)t->fn)(in[0], in[1], in[2], t->data->out); break;
    case NOPS: break;
    }
}

/* The naive reference into OUT. */
static void naive_op(const OpData *d, float *out)
{
    float *const *in = d->in;
    switch (d->kind) {
    case OP_BATCH_MATMUL: bench_naive_batch_matmul(BM_B, BM_M, BM_N, BM_K, in[0], in[1], out); break;
    case OP_CONV2D:
        bench_naive_conv2d(CV_N, CV_C, CV_H, CV_W, CV_F, CV_R, CV_S, CV_STRIDE, CV_PAD,
                           in[0], in[1], in[2], out);
        break;
    case OP_SOFTMAX: bench_naive_softmax(SM_M, SM_N, in[0], out); break;
    case OP_LAYERNORM: bench_naive_layernorm(LN_M, LN_D, LAYERNORM_EPS, in[0], in[1], in[2], out); break;
    case NOPS: break;
    }
}

static void run_naive_op(void *ctx)
{
    OpData *d = ctx;
    naive_op(d, d->out);
}

/* ---- oneDNN ---------------------------------------------------------------- */

#ifdef BENCH_HAVE_DNNL
typedef struct DnnlOp {
    dnnl_primitive_t prim;
    dnnl_exec_arg_t args[8];
    int nargs;
    dnnl_memory_t mems[8];     /* every memory object, destroyed at the end */
    int nmems;
    char impl[64];
    char layout_note[128];
} DnnlOp;

static void run_dnnl_op(void *ctx)
{
    DnnlOp *d = ctx;
    dnnl_primitive_execute(d->prim, bench_dnnl_stream, d->nargs, d->args);
    dnnl_stream_wait(bench_dnnl_stream);
}

/* A memory object for ARG over BUF (NULL: oneDNN allocates), kept in D. */
static int dnnl_arg(DnnlOp *d, int arg, const dnnl_memory_desc_t *md, void *buf, char *why,
                    size_t why_size)
{
    dnnl_memory_t mem;
    DNNL_TRY(dnnl_memory_create(&mem, md, bench_dnnl_engine, buf ? buf : DNNL_MEMORY_ALLOCATE));
    d->mems[d->nmems++] = mem;
    d->args[d->nargs++] = (dnnl_exec_arg_t){arg, mem};
    return 1;
}

/* The primitive of PD into D, with the implementation's name. */
static int dnnl_finish(DnnlOp *d, dnnl_primitive_desc_t pd, char *why, size_t why_size)
{
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    snprintf(d->impl, sizeof d->impl, "%s", impl);
    DNNL_TRY(dnnl_primitive_create(&d->prim, pd));
    return 1;
}

/* The const weights of PD: pre-packed once from USER (plain layout) when
 * the primitive asks for another layout, else used as given. */
static int dnnl_weights(DnnlOp *d, dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *user_md,
                        float *user, char *why, size_t why_size)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (dnnl_memory_desc_equal(md, user_md)) {
        snprintf(d->layout_note, sizeof d->layout_note, "weights as given");
        return dnnl_arg(d, DNNL_ARG_WEIGHTS, user_md, user, why, why_size);
    }
    char layout[48];
    bench_describe_layout(layout, sizeof layout, md);
    snprintf(d->layout_note, sizeof d->layout_note, "weights pre-packed to %s", layout);
    if (!dnnl_arg(d, DNNL_ARG_WEIGHTS, md, NULL, why, why_size))
        return 0;
    return bench_dnnl_reorder(user_md, user, md, d->mems[d->nmems - 1], why, why_size);
}

/* Any memory the primitive wants for ARG beyond the ones given (oneDNN
 * writes mean and variance for layer normalization). */
static int dnnl_extra(DnnlOp *d, dnnl_primitive_desc_t pd, int arg, char *why, size_t why_size)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    if (!md || dnnl_memory_desc_get_size(md) == 0)
        return 1;
    return dnnl_arg(d, arg, md, NULL, why, why_size);
}

static int dnnl_setup_op(DnnlOp *d, OpData *data, char *why, size_t why_size)
{
    memset(d, 0, sizeof *d);
    dnnl_primitive_desc_t pd = NULL;
    float **in = data->in;
    switch (data->kind) {
    case OP_BATCH_MATMUL: {
        dnnl_memory_desc_t a_md, w_md, c_md;
        dnnl_dims_t a_dims = {BM_B, BM_M, BM_K}, w_dims = {BM_B, BM_K, BM_N};
        dnnl_dims_t c_dims = {BM_B, BM_M, BM_N};
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&a_md, 3, a_dims, dnnl_f32, dnnl_abc));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&w_md, 3, w_dims, dnnl_f32, dnnl_abc));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&c_md, 3, c_dims, dnnl_f32, dnnl_abc));
        dnnl_matmul_desc_t desc;
        DNNL_TRY(dnnl_matmul_desc_init(&desc, &a_md, &w_md, NULL, &c_md));
        DNNL_TRY(dnnl_primitive_desc_create(&pd, &desc, NULL, bench_dnnl_engine, NULL));
        snprintf(d->layout_note, sizeof d->layout_note, "w as given (an input, not const)");
        if (!dnnl_arg(d, DNNL_ARG_SRC, &a_md, in[0], why, why_size) ||
            !dnnl_arg(d, DNNL_ARG_WEIGHTS, &w_md, in[1], why, why_size) ||
            !dnnl_arg(d, DNNL_ARG_DST, &c_md, data->out, why, why_size))
            return 0;
        break;
    }
    case OP_CONV2D: {
        dnnl_memory_desc_t src_md, user_w_md, any_w_md, bias_md, dst_md;
        dnnl_dims_t src_dims = {CV_N, CV_C, CV_H, CV_W}, w_dims = {CV_F, CV_C, CV_R, CV_S};
        dnnl_dims_t bias_dims = {CV_F}, dst_dims = {CV_N, CV_F, CV_OH, CV_OW};
        dnnl_dims_t strides = {CV_STRIDE, CV_STRIDE}, pad = {CV_PAD, CV_PAD};
        /* the right padding that makes the output OH x OW */
        dnnl_dims_t pad_r = {(CV_OH - 1) * CV_STRIDE + CV_R - CV_H - CV_PAD,
                             (CV_OW - 1) * CV_STRIDE + CV_S - CV_W - CV_PAD};
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_md, 4, src_dims, dnnl_f32, dnnl_nchw));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&user_w_md, 4, w_dims, dnnl_f32, dnnl_oihw));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&any_w_md, 4, w_dims, dnnl_f32, dnnl_format_tag_any));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&bias_md, 1, bias_dims, dnnl_f32, dnnl_a));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_md, 4, dst_dims, dnnl_f32, dnnl_nchw));
        dnnl_convolution_desc_t desc;
        DNNL_TRY(dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference,
                                                    dnnl_convolution_auto, &src_md, &any_w_md,
                                                    &bias_md, &dst_md, strides, pad, pad_r));
        dnnl_primitive_attr_t attr;
        dnnl_post_ops_t post_ops;
        DNNL_TRY(dnnl_primitive_attr_create(&attr));
        DNNL_TRY(dnnl_post_ops_create(&post_ops));
        DNNL_TRY(dnnl_post_ops_append_eltwise(post_ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
        DNNL_TRY(dnnl_primitive_attr_set_post_ops(attr, post_ops));
        DNNL_TRY(dnnl_primitive_desc_create(&pd, &desc, attr, bench_dnnl_engine, NULL));
        dnnl_post_ops_destroy(post_ops);
        dnnl_primitive_attr_destroy(attr);
        if (!dnnl_arg(d, DNNL_ARG_SRC, &src_md, in[0], why, why_size) ||
            !dnnl_weights(d, pd, &user_w_md, in[1], why, why_size) ||
            !dnnl_arg(d, DNNL_ARG_BIAS, &bias_md, in[2], why, why_size) ||
            !dnnl_arg(d, DNNL_ARG_DST, &dst_md, data->out, why, why_size))
            return 0;
        break;
    }
    case OP_SOFTMAX: {
        dnnl_memory_desc_t md;
        dnnl_dims_t dims = {SM_M, SM_N};
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_f32, dnnl_ab));
        dnnl_softmax_v2_desc_t desc;
        DNNL_TRY(dnnl_softmax_v2_forward_desc_init(&desc, dnnl_forward_inference,
                                                   dnnl_softmax_accurate, &md, &md, 1));
        DNNL_TRY(dnnl_primitive_desc_create(&pd, &desc, NULL, bench_dnnl_engine, NULL));
        snprintf(d->layout_note, sizeof d->layout_note, "softmax_v2 accurate, axis 1");
        if (!dnnl_arg(d, DNNL_ARG_SRC, &md, in[0], why, why_size) ||
            !dnnl_arg(d, DNNL_ARG_DST, &md, data->out, why, why_size))
            return 0;
        break;
    }
    case OP_LAYERNORM: {
        dnnl_memory_desc_t md, vec_md;
        dnnl_dims_t dims = {LN_M, LN_D}, vec_dims = {LN_D};
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_f32, dnnl_ab));
        DNNL_TRY(dnnl_memory_desc_init_by_tag(&vec_md, 1, vec_dims, dnnl_f32, dnnl_a));
        dnnl_layer_normalization_desc_t desc;
        DNNL_TRY(dnnl_layer_normalization_forward_desc_init(&desc, dnnl_forward_inference, &md,
                                                            NULL, LAYERNORM_EPS,
                                                            dnnl_use_scale | dnnl_use_shift));
        DNNL_TRY(dnnl_primitive_desc_create(&pd, &desc, NULL, bench_dnnl_engine, NULL));
        snprintf(d->layout_note, sizeof d->layout_note, "scale and shift");
        if (!dnnl_arg(d, DNNL_ARG_SRC, &md, in[0], why, why_size) ||
            !dnnl_arg(d, DNNL_ARG_SCALE, &vec_md, in[1], why, why_size) ||
            !dnnl_arg(d, DNNL_ARG_SHIFT, &vec_md, in[2], why, why_size) ||
            !dnnl_arg(d, DNNL_ARG_DST, &md, data->out, why, why_size) ||
            !dnnl_extra(d, pd, DNNL_ARG_MEAN, why, why_size) ||
            !dnnl_extra(d, pd, DNNL_ARG_VARIANCE, why, why_size))
            return 0;
        break;
    }
    case NOPS:
        break;
    }
    int ok = dnnl_finish(d, pd, why, why_size);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

static void dnnl_teardown_op(DnnlOp *d)
{
    if (d->prim)
        dnnl_primitive_destroy(d->prim);
    for (int i = 0; i < d->nmems; i++)
        dnnl_memory_destroy(d->mems[i]);
}
#endif

/* ---- Measuring --------------------------------------------------------------- */

static OpRow *new_row(OpKind op, int threads, const char *impl)
{
    if (nrows == MAX_OP_ROWS)
        bench_die("too many rows");
    OpRow *r = &rows[nrows++];
    memset(r, 0, sizeof *r);
    r->op = op;
    r->threads = threads;
    r->impl = impl;
    return r;
}

static void measure_row(OpRow *r, RunFn *run, void *ctx, OpData *d)
{
    bench_fill_nan(d->out, d->out_count);
    r->timing = bench_measure(run, ctx, r->threads, config->min_time);
    r->error = bench_rel_error(d->out, d->ref, d->out_count);
    r->state = r->error <= BENCH_TOLERANCE ? OPROW_OK : OPROW_MISMATCH;
    fprintf(stderr, "  %-13s %2d thr %10.3f ms  err %.2e  cpu %3.0f%%%s\n", r->impl, r->threads,
            r->timing.median * 1e3, r->error, 100.0 * r->timing.cpu_share,
            r->state == OPROW_MISMATCH ? "  *** MISMATCH ***" : "");
}

static OpData make_data(OpKind kind)
{
    OpData d = {kind, {0}, {0}, 0, NULL, NULL, 0};
    switch (kind) {
    case OP_BATCH_MATMUL:
        d.nin = 2;
        d.in_count[0] = (size_t)BM_B * BM_M * BM_K;
        d.in_count[1] = (size_t)BM_B * BM_K * BM_N;
        d.out_count = (size_t)BM_B * BM_M * BM_N;
        break;
    case OP_CONV2D:
        d.nin = 3;
        d.in_count[0] = (size_t)CV_N * CV_C * CV_H * CV_W;
        d.in_count[1] = (size_t)CV_F * CV_C * CV_R * CV_S;
        d.in_count[2] = CV_F;
        d.out_count = (size_t)CV_N * CV_F * CV_OH * CV_OW;
        break;
    case OP_SOFTMAX:
        d.nin = 1;
        d.in_count[0] = (size_t)SM_M * SM_N;
        d.out_count = (size_t)SM_M * SM_N;
        break;
    case OP_LAYERNORM:
        d.nin = 3;
        d.in_count[0] = (size_t)LN_M * LN_D;
        d.in_count[1] = d.in_count[2] = LN_D;
        d.out_count = (size_t)LN_M * LN_D;
        break;
    case NOPS:
        break;
    }
    for (int i = 0; i < d.nin; i++) {
        d.in[i] = bench_xmalloc(sizeof(float) * d.in_count[i]);
        bench_fill_random(d.in[i], d.in_count[i], 11 + (unsigned)i);
    }
    if (kind == OP_SOFTMAX) /* logits of a few units, as a softmax sees them */
        for (size_t i = 0; i < d.in_count[0]; i++)
            d.in[0][i] *= 8.0f;
    d.out = bench_xmalloc(sizeof(float) * d.out_count);
    d.ref = bench_xmalloc(sizeof(float) * d.out_count);
    naive_op(&d, d.ref);
    return d;
}

static void free_data(OpData *d)
{
    for (int i = 0; i < d->nin; i++)
        free(d->in[i]);
    free(d->out);
    free(d->ref);
}

static void describe(OpKind kind, OpInfo *info)
{
    switch (kind) {
    case OP_BATCH_MATMUL:
        info->name = "batch_matmul";
        info->title = "batched matmul: c[b] = a[b] @ w[b]";
        info->flops = 2.0 * BM_B * BM_M * BM_N * BM_K;
        snprintf(info->sizes, sizeof info->sizes, "B×M×K×N = %d×%d×%d×%d", BM_B, BM_M, BM_K, BM_N);
        break;
    case OP_CONV2D:
        info->name = "conv2d";
        info->title = "conv2d: relu(conv(img, flt) + bias), NCHW";
        info->flops = 2.0 * CV_N * CV_F * CV_OH * CV_OW * CV_C * CV_R * CV_S;
        snprintf(info->sizes, sizeof info->sizes,
                 "N×C×H×W = %d×%d×%d×%d, %d filters %d×%d, stride %d, padding %d -> %d×%d",
                 CV_N, CV_C, CV_H, CV_W, CV_F, CV_R, CV_S, CV_STRIDE, CV_PAD, CV_OH, CV_OW);
        break;
    case OP_SOFTMAX:
        info->name = "softmax";
        info->title = "softmax over rows";
        info->bytes = 2.0 * sizeof(float) * SM_M * SM_N;
        snprintf(info->sizes, sizeof info->sizes, "M×N = %d×%d", SM_M, SM_N);
        break;
    case OP_LAYERNORM:
        info->name = "layernorm";
        info->title = "layer norm over rows, with gain and bias";
        info->bytes = sizeof(float) * (2.0 * LN_M * LN_D + 2.0 * LN_D);
        snprintf(info->sizes, sizeof info->sizes, "M×D = %d×%d", LN_M, LN_D);
        break;
    case NOPS:
        break;
    }
    info->tuned_note = tuned_notes[kind];
}

void bench_ops_run(const OpsConfig *cfg, void (*set_threads)(int))
{
    config = cfg;
    for (int op = 0; op < NOPS; op++) {
        OpInfo *info = &infos[op];
        describe((OpKind)op, info);
        OpData data = make_data((OpKind)op);
        fprintf(stderr, "%s (%s)\n", info->name, info->sizes);
        for (int ti = 0; ti < cfg->nthread_counts; ti++) {
            int threads = cfg->thread_counts[ti];
            set_threads(threads);
            if (info->flops == 0.0) {
                /* the roofline: a copy of buffers the sizes of the input and the output */
                float *dst = bench_xmalloc(sizeof(float) * data.out_count);
                info->bandwidth[ti] = bench_bandwidth(data.in[0], dst, data.out_count, threads);
                free(dst);
                fprintf(stderr, "  copy bandwidth %2d thr %.1f GB/s\n", threads, info->bandwidth[ti]);
            }
            if (ti == 0) {
                OpRow *r = new_row((OpKind)op, 1, "naive");
                snprintf(r->note, sizeof r->note, "1 thread, -O2");
                measure_row(r, run_naive_op, &data, &data);
            }

            OpRow *r = new_row((OpKind)op, threads, "onednn");
#ifdef BENCH_HAVE_DNNL
            DnnlOp d;
            char why[256];
            if (dnnl_setup_op(&d, &data, why, sizeof why)) {
                snprintf(r->note, sizeof r->note, "%s, %s", d.impl, d.layout_note);
                measure_row(r, run_dnnl_op, &d, &data);
            } else {
                r->state = OPROW_FAILED;
                snprintf(r->note, sizeof r->note, "%s", why);
                fprintf(stderr, "  onednn: %s\n", why);
            }
            dnnl_teardown_op(&d);
#else
            r->state = OPROW_ABSENT;
#endif

            TexcOpRun dflt = {texc_default[op], &data}, tuned = {texc_tuned[op], &data};
            measure_row(new_row((OpKind)op, threads, "texc-default"), run_texc_op, &dflt, &data);
            r = new_row((OpKind)op, threads, "texc-tuned");
            if (tuned.fn) {
                snprintf(r->note, sizeof r->note, "%s", info->tuned_note);
                measure_row(r, run_texc_op, &tuned, &data);
            } else {
                r->state = OPROW_ABSENT;
                snprintf(r->note, sizeof r->note, "%s", info->tuned_note);
            }
        }
        free_data(&data);
    }
}

/* ---- The report ------------------------------------------------------------- */

static const OpRow *find_row(OpKind op, int threads, const char *impl)
{
    for (int i = 0; i < nrows; i++)
        if (rows[i].op == op && rows[i].threads == threads && !strcmp(rows[i].impl, impl))
            return &rows[i];
    return NULL;
}

static void print_ratio(FILE *out, const OpRow *texc, const OpRow *r)
{
    if (texc && texc->state == OPROW_OK && r->state == OPROW_OK)
        fprintf(out, " %.3g |", r->timing.median / texc->timing.median);
    else
        fputs(" — |", out);
}

/* The bandwidth measured at THREADS threads; 0 when it was not measured. */
static double bandwidth_at(const OpInfo *info, int threads)
{
    for (int i = 0; i < config->nthread_counts; i++)
        if (config->thread_counts[i] == threads)
            return info->bandwidth[i];
    return 0.0;
}

int bench_ops_count(int *contended, int *mismatches)
{
    int measured = 0;
    *contended = *mismatches = 0;
    for (int i = 0; i < nrows; i++)
        if (rows[i].state == OPROW_OK || rows[i].state == OPROW_MISMATCH) {
            measured++;
            *contended += rows[i].timing.cpu_share < BENCH_CONTENDED;
            *mismatches += rows[i].state == OPROW_MISMATCH;
        }
    return measured;
}

void bench_ops_print(FILE *out)
{
    for (int op = 0; op < NOPS; op++) {
        const OpInfo *info = &infos[op];
        int memory = info->flops == 0.0;
        fprintf(out, "\n## %s (samples/%s.te)\n\n%s; ", info->title, info->name, info->sizes);
        if (memory) {
            fprintf(out, "%.2f MB must move (inputs read once, the output written once): "
                         "GB/s = those bytes / the median call; %% roofline = GB/s over the "
                         "copy bandwidth (a vectorized copy loop, bench_bandwidth, on buffers of "
                         "the input's and the output's sizes, best of 20 runs, per thread CPU "
                         "time):", info->bytes * 1e-6);
            for (int ti = 0; ti < config->nthread_counts; ti++)
                fprintf(out, " %d thr %.1f GB/s%s", config->thread_counts[ti], info->bandwidth[ti],
                        ti + 1 < config->nthread_counts ? "," : ".");
            fputs("\n\n", out);
        } else {
            fprintf(out, "%.1f MFLOP a call; %% peak is of the per-core FMA peak times the "
                         "row's threads.\n\n", info->flops * 1e-6);
        }
        fprintf(out, "| thr | impl | median ms | IQR ms | %s | best %s | %s | default ÷ this | "
                     "tuned ÷ this | max rel err | check | cpu | notes |\n"
                     "|--:|---|--:|---|--:|--:|--:|--:|--:|--:|---|--:|---|\n",
                memory ? "GB/s" : "GFLOP/s", memory ? "GB/s" : "GFLOP/s",
                memory ? "% roofline" : "% peak");
        for (int i = 0; i < nrows; i++) {
            const OpRow *r = &rows[i];
            if (r->op != (OpKind)op)
                continue;
            fprintf(out, "| %d | %s |", r->threads, r->impl);
            if (r->state == OPROW_ABSENT || r->state == OPROW_FAILED) {
                fprintf(out, " — | — | — | — | — | — | — | — | %s | — | %s |\n",
                        r->state == OPROW_FAILED ? "FAILED"
                        : !strcmp(r->impl, "texc-tuned") ? "no tuning record" : "not found",
                        r->note);
                continue;
            }
            double work = memory ? info->bytes : info->flops;
            double rate = work / r->timing.median * 1e-9, best = work / r->timing.best * 1e-9;
            double limit = memory ? bandwidth_at(info, r->threads) : config->peak_core * r->threads;
            fprintf(out, " %.4f | %.4f–%.4f | %.1f | %.1f |", r->timing.median * 1e3,
                    r->timing.p25 * 1e3, r->timing.p75 * 1e3, rate, best);
            if (limit > 0.0)
                fprintf(out, " %.1f |", 100.0 * rate / limit);
            else
                fputs(" — |", out);
            print_ratio(out, find_row((OpKind)op, r->threads, "texc-default"), r);
            print_ratio(out, find_row((OpKind)op, r->threads, "texc-tuned"), r);
            fprintf(out, " %.1e | %s | %.0f%%%s | %s%s%d reps |\n", r->error,
                    r->state == OPROW_OK ? "ok" : "**MISMATCH**", 100.0 * r->timing.cpu_share,
                    r->timing.cpu_share < BENCH_CONTENDED ? " ⚠" : "", r->note,
                    r->note[0] ? ", " : "", r->timing.reps);
        }
    }
    int contended, mismatches;
    bench_ops_count(&contended, &mismatches);
    if (mismatches) {
        fprintf(out, "\n**%d row%s above MISMATCH the naive reference:**\n", mismatches,
                mismatches > 1 ? "s" : "");
        for (int i = 0; i < nrows; i++)
            if (rows[i].state == OPROW_MISMATCH)
                fprintf(out, "- %s, %s, %d threads: max rel err %.3e\n", infos[rows[i].op].name,
                        rows[i].impl, rows[i].threads, rows[i].error);
    }
}

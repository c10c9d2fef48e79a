/* cuda.c — the CUDA C emitter.
 *
 * requires: a lowered function (sched/lower.c), its SchedState, and the
 * target's SM number.
 * guarantees: the text of a CUDA C++ translation unit that NVRTC compiles
 * as it is (no host code; no includes but cuda_fp16.h and cuda_bf16.h
 * when the program has f16 or bf16 values), with one extern "C"
 * __global__ kernel per root stage in the order lowering computes them,
 * each computing its stage as the CPU backend's loop nest does:
 *
 *   - a loop bound to block.x .. thread.z is no loop: its variable is its
 *     first value plus blockIdx or threadIdx; the grid and the block take
 *     the largest extent bound to each axis, and a guard skips the indices
 *     beyond a loop's own extent (a shorter loop, a split that does not
 *     divide);
 *   - a position is *block-uniform* when no thread loop encloses it: all
 *     the threads of a block run it with the same values.  A statement
 *     there that contains no thread loop but writes shared or global
 *     memory (a stage computed at a loop outside the thread loops, such as
 *     x.cache_read(shared, y) at ko) is *distributed*: its outer loops are
 *     flattened into one index strided over the block's threads, and a
 *     __syncthreads() comes before anything reads what it wrote; another
 *     ends the body of each block-uniform loop that wrote such a buffer,
 *     before its next iteration overwrites it;
 *   - pipeline(L, n) on a block-uniform loop whose body begins with shared
 *     buffers gives each buffer n slots: the tiles of iteration L + n - 1
 *     are fetched while iteration L computes, with cp.async on sm_80 and
 *     later (elements of 4 or 8 bytes; others are plain loads), plain
 *     loads before; one barrier per iteration;
 *   - a root reduction whose own thread loops cover the block keeps its
 *     sums in a per-thread array (registers, when the loops indexing it
 *     are unrolled) and stores them once, after the last reduction step;
 *   - local buffers are per-thread arrays; unrolled loops get #pragma
 *     unroll (sched/apply.c refuses vectorize on cuda);
 *   - values are computed as the CPU backend computes them: f16 and bf16
 *     in float, rounded when stored; min, max and relu propagate NaN;
 *     integer division by zero is 0; float-to-i32 casts saturate;
 *   - indices are int when every tensor has fewer than 2^31 elements and
 *     the program has no i32 values, else long long.
 *
 * A schedule it cannot honour is a user error at the statement that asked
 * for it, never other code: a shared buffer inside a thread loop (it would
 * need one copy per thread), a block's shared buffers beyond the device's
 * shared memory (smem_limit, dynamic shared memory opted into above 48
 * KiB), a pipeline on a loop that is bound, inside a thread loop, or whose
 * body does not begin with shared tiles.
 *
 * Expressions and names are cfamily.c's, in its CUDA dialect; this file
 * writes the statements, barriers, shared memory and kernels around them.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

/* What the CUDA C needs of each GPU axis (sched.h's SCH_GPU_AXES): the
 * index a thread reads along it, and the most blocks or threads CUDA
 * launches along it. */
static const char *const axis_vars[GPU_AXIS_COUNT] = {
#define X(e, name, cuda, limit) cuda,
    SCH_GPU_AXES(X)
#undef X
};
static const int64_t axis_limits[GPU_AXIS_COUNT] = {
#define X(e, name, cuda, limit) limit,
    SCH_GPU_AXES(X)
#undef X
};

/* A shared buffer of the kernel being emitted. */
typedef struct ShBuf {
    const Tensor *buf;
    int slots;         /* pipeline stages: 1, or n of pipeline(L, n) */
    int64_t bytes;     /* all slots */
    int64_t offset;    /* in the dynamic shared memory, when it is used */
    const char *slot;  /* while emitting: the slot index to use, or NULL */
} ShBuf;

/* A pipelined loop: its shared buffers' nests, fetched ahead, and the rest
 * of its body. */
typedef struct Pipe {
    const Stmt *loop;
    int stages;
    PtrVec fetches; /* Stmt *: the nest filling each buffer */
    PtrVec bufs;    /* ShBuf * */
    const Stmt *rest;
} Pipe;

/* A root reduction's sums kept in a per-thread array. */
typedef struct Acc {
    const Stmt *seq;    /* the S_SEQ of its init nest and update nest */
    const Stmt *outer;  /* the S_SEQ of seq and the epilogue nest, or NULL */
    const Stmt *epilogue; /* storage = f(storage) once the sums are done */
    const Tensor *buf;  /* the stage's storage ... */
    Expr **idx;         /* ... at this index (the same array in both nests) */
    Loop **loops;       /* the array's dimensions: the spatial loops inside
                           the first reduction loop not bound to an axis */
    int nloops;
    const char *name;
    DType dtype;
} Acc;

/* How the accumulator's accesses are written: not at all (ACC_OFF);
 * in the init and update nests, as the per-thread array (ACC_ON); in the
 * init nest again, as the store of the array (ACC_STORE); in the epilogue,
 * loads as the array and stores as stores (ACC_EPILOGUE). */
enum { ACC_OFF, ACC_ON, ACC_STORE, ACC_EPILOGUE };

typedef struct Emitter {
    CgPrinter p;            /* first: cfamily.c's hooks get the Emitter from it;
                               its int_type is "int" or "long long" */
    SchedState *st;
    const Source *src;
    int sm;
    bool fp16, bf16;        /* the program has f16 or bf16 values */
    bool failed;
    /* the kernel being emitted */
    CudaKernel *k;
    const SStage *stage;
    int64_t dims[GPU_AXIS_COUNT];         /* grid and block extents */
    const Loop *dim_loop[GPU_AXIS_COUNT]; /* the loop giving each */
    const SizeExpr *dim_size[GPU_AXIS_COUNT]; /* each extent over the run-time
                                                 dims (NULL: dims[] is it) */
    bool dynamic_dims;      /* some dim_size has a run-time dim */
    /* a program with run-time dims: the declared ones, which every kernel
       takes first (their Graph.dims indices and names) */
    int nrt;
    const int *rt_dims;
    const char **rt_names;
    int64_t threads;
    PtrVec shared;          /* ShBuf * */
    PtrVec locals;          /* Tensor *: per-thread buffers */
    PtrVec pipes;           /* Pipe * */
    PtrVec params;          /* Tensor *: global tensors used */
    PtrVec written;         /* Tensor *: the global tensors it writes */
    Acc *acc;
    int acc_mode;
    bool async_copy;        /* fetching a pipelined tile with cp.async */
    bool dynamic_smem;
    bool pending;           /* a distributed write awaits its barrier */
    PtrVec pending_bufs;    /* Tensor *: what those writes wrote */
    int distributed;        /* distributed statements emitted so far */
    int counter;            /* for texc's own names, te_f0, te_f1, ... */
    int names_mark, tensors_mark;
    const PtrVec *order;    /* Tensor *: inputs, outputs, intermediates */
    PtrMap order_at;        /* order->items[i] -> i */
} Emitter;

/* ------------------------------------------------------------------ */
/* Names.                                                              */

/* A name of texc's own, unique in the kernel. */
static const char *own_name(Emitter *e, const char *base)
{
    return arena_printf(e->p.a, "te_%s%d", base, e->counter++);
}

/* ------------------------------------------------------------------ */
/* Types.                                                              */

static const char *storage_type(DType t)
{
    switch (t) {
    case DT_BOOL: return "bool";
    case DT_I32: return "int";
    case DT_U8: return "unsigned char";
    case DT_I8: return "signed char";
    case DT_F16: return "__half";
    case DT_BF16: return "__nv_bfloat16";
    case DT_F32: return "float";
    case DT_F64: return "double";
    default: TE_UNREACHABLE();
    }
}

/* ------------------------------------------------------------------ */
/* Errors.                                                             */

/* A user error about the kernel being emitted, at SP when there is one;
 * only the first is reported. */
static void kernel_error(Emitter *e, Span sp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void kernel_error(Emitter *e, Span sp, const char *fmt, ...)
{
    if (e->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (sp.end > sp.begin) {
        diag_verror(e->src, sp, fmt, ap);
    } else {
        fprintf(diag_stream ? diag_stream : stderr, "texc: error: ");
        vfprintf(diag_stream ? diag_stream : stderr, fmt, ap);
        fputc('\n', diag_stream ? diag_stream : stderr);
        diag_errors++;
    }
    va_end(ap);
    e->failed = true;
}

/* ------------------------------------------------------------------ */
/* Buffers.                                                            */

static ShBuf *shared_of(Emitter *e, const Tensor *t)
{
    for (int i = 0; i < e->shared.len; i++) {
        ShBuf *b = e->shared.items[i];
        if (b->buf == t)
            return b;
    }
    return NULL;
}

static bool in_vec(const PtrVec *v, const void *p)
{
    for (int i = 0; i < v->len; i++)
        if (v->items[i] == p)
            return true;
    return false;
}

/* Is T[IDX] the accumulated element?  (Loads copy their index array,
 * so the indices are compared one by one; they are the same Exprs.) */
static bool is_acc_access(Emitter *e, const Tensor *t, Expr *const *idx)
{
    if (!e->acc || e->acc_mode == ACC_OFF || t != e->acc->buf)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (idx[d] != e->acc->idx[d])
            return false;
    return true;
}

/* ------------------------------------------------------------------ */
/* Expressions.                                                        */

/* The row-major offset of IDX in T: i * 768 + k. */
static void emit_flat_index(Emitter *e, const Tensor *t, Expr *const *idx)
{
    if (t->rank == 0) {
        fputc('0', e->p.out);
        return;
    }
    /* the strides: numbers, or expressions of the run-time dims */
    Expr *stride = sch_int(e->p.a, 1);
    Expr *strides[TE_MAX_RANK];
    for (int d = t->rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride = sch_simplify(e->p.a, sch_mul(e->p.a, stride, sch_shape_expr(e->st, t, d)));
    }
    bool first = true;
    for (int d = 0; d < t->rank; d++) {
        int64_t c;
        if (sch_const_int(idx[d], &c) && c == 0)
            continue;
        if (!first)
            fputs(" + ", e->p.out);
        first = false;
        bool unit = sch_const_int(strides[d], &c) && c == 1;
        cg_emit_expr(&e->p, idx[d], unit ? 5 : 6);
        if (sch_const_int(strides[d], &c) && c != 1) {
            fprintf(e->p.out, " * %lld", (long long)c);
        } else if (!unit) {
            fputs(" * ", e->p.out);
            cg_emit_expr(&e->p, strides[d], 7);
        }
    }
    if (first)
        fputc('0', e->p.out);
}

/* The element T[IDX] as an lvalue: a global tensor is flat, a local or
 * shared buffer an array of arrays (with its pipeline slot first). */
static void emit_element(Emitter *e, const Tensor *t, Expr *const *idx, bool load)
{
    if (is_acc_access(e, t, idx) && (e->acc_mode == ACC_ON || (load && e->acc_mode == ACC_EPILOGUE))) {
        fputs(e->acc->name, e->p.out);
        for (int i = 0; i < e->acc->nloops; i++)
            fprintf(e->p.out, "[%s]", cg_var_name(&e->p, e->acc->loops[i]->var));
        return;
    }
    fputs(cg_tensor_name(&e->p, t), e->p.out);
    ShBuf *sb = shared_of(e, t);
    if (sb || in_vec(&e->locals, t)) {
        if (sb && sb->slots > 1)
            fprintf(e->p.out, "[%s]", sb->slot ? sb->slot : "0");
        if (t->rank == 0)
            fputs("[0]", e->p.out);
        for (int d = 0; d < t->rank; d++) {
            fputc('[', e->p.out);
            cg_emit_expr(&e->p, idx[d], 0);
            fputc(']', e->p.out);
        }
        return;
    }
    fputc('[', e->p.out);
    emit_flat_index(e, t, idx);
    fputc(']', e->p.out);
}

/* cfamily.c's hooks: a load reads the element (above); the accumulator
 * holds its values in their compute type, except in the store of it. */
static void load_element(CgPrinter *p, const Tensor *t, Expr *const *idx)
{
    emit_element((Emitter *)p, t, idx, true);
}

static bool computed(CgPrinter *p, const Tensor *t, Expr *const *idx)
{
    Emitter *e = (Emitter *)p;
    return is_acc_access(e, t, idx) && e->acc_mode != ACC_STORE;
}

/* ------------------------------------------------------------------ */
/* Walking statements.                                                 */

static bool expr_reads_any(const Expr *x, const PtrVec *bufs)
{
    if (x->kind == EX_LOAD && in_vec(bufs, x->tensor))
        return true;
    for (int i = 0; i < x->nargs; i++)
        if (expr_reads_any(x->args[i], bufs))
            return true;
    return false;
}

/* Does S read any of BUFS (in values, indices, bounds or conditions)? */
static bool reads_any(const Stmt *s, const PtrVec *bufs)
{
    if (!s)
        return false;
    switch (s->kind) {
    case S_FLASH: /* a cpu kernel: sched/flash.c refuses cuda */
        TE_UNREACHABLE();
    case S_FOR:
        return expr_reads_any(s->min, bufs) || expr_reads_any(s->extent, bufs) ||
               reads_any(s->body, bufs);
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            if (reads_any(s->stmts[i], bufs))
                return true;
        return false;
    case S_STORE:
        if (expr_reads_any(s->value, bufs))
            return true;
        for (int d = 0; d < s->buf->rank; d++)
            if (expr_reads_any(s->index[d], bufs))
                return true;
        return false;
    case S_IF:
        return expr_reads_any(s->cond, bufs) || reads_any(s->body, bufs);
    case S_ALLOC:
        return reads_any(s->body, bufs);
    }
    return false;
}

static bool is_thread_loop(const Stmt *s)
{
    return s->kind == S_FOR && s->loop->kind == LOOP_BOUND && sch_is_thread_axis(s->loop->gpu_axis);
}

/* Marks in BOUND the axes the loops of S are bound to. */
static void axes_bound(const Stmt *s, bool bound[GPU_AXIS_COUNT])
{
    if (!s)
        return;
    switch (s->kind) {
    case S_FLASH: /* a cpu kernel: sched/flash.c refuses cuda */
        TE_UNREACHABLE();
    case S_FOR:
        if (s->loop->kind == LOOP_BOUND)
            bound[s->loop->gpu_axis] = true;
        axes_bound(s->body, bound);
        return;
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            axes_bound(s->stmts[i], bound);
        return;
    case S_IF:
    case S_ALLOC:
        axes_bound(s->body, bound);
        return;
    case S_STORE:
        return;
    }
}

static bool has_thread_loop(const Stmt *s)
{
    if (!s)
        return false;
    switch (s->kind) {
    case S_FLASH: /* a cpu kernel: sched/flash.c refuses cuda */
        TE_UNREACHABLE();
    case S_FOR:
        return is_thread_loop(s) || has_thread_loop(s->body);
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            if (has_thread_loop(s->stmts[i]))
                return true;
        return false;
    case S_IF:
    case S_ALLOC:
        return has_thread_loop(s->body);
    case S_STORE:
        return false;
    }
    return false;
}

/* Collects into OUT the buffers S writes that are neither per-thread
 * buffers of the kernel nor allocated inside S. */
static void shared_writes(Emitter *e, const Stmt *s, PtrVec *inner, PtrVec *out)
{
    if (!s)
        return;
    switch (s->kind) {
    case S_FLASH: /* a cpu kernel: sched/flash.c refuses cuda */
        TE_UNREACHABLE();
    case S_FOR:
    case S_IF:
        shared_writes(e, s->body, inner, out);
        return;
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            shared_writes(e, s->stmts[i], inner, out);
        return;
    case S_ALLOC:
        vec_push(e->p.a, inner, (void *)s->buf);
        shared_writes(e, s->body, inner, out);
        return;
    case S_STORE:
        if (in_vec(inner, s->buf) || in_vec(&e->locals, s->buf) ||
            (e->acc_mode == ACC_ON && is_acc_access(e, s->buf, s->index)))
            return;
        if (!in_vec(out, s->buf))
            vec_push(e->p.a, out, (void *)s->buf);
        return;
    }
}

/* ------------------------------------------------------------------ */
/* Analysis of a kernel, before its text.                              */

/* The grid and block extents; two loops nested on one axis are an error. */
static void find_dims(Emitter *e, const Stmt *s, const Loop **enclosing)
{
    if (!s)
        return;
    switch (s->kind) {
    case S_FLASH: /* a cpu kernel: sched/flash.c refuses cuda */
        TE_UNREACHABLE();
    case S_FOR: {
        const Loop *l = s->loop;
        if (l->kind != LOOP_BOUND) {
            find_dims(e, s->body, enclosing);
            return;
        }
        GpuAxis ax = l->gpu_axis;
        if (enclosing[ax] && enclosing[ax] != l) {
            kernel_error(e, l->kind_span,
                         "cannot bind '%s' to %s: it runs inside '%s', bound to %s too", l->name,
                         sch_gpu_axis_name(ax), enclosing[ax]->name, sch_gpu_axis_name(ax));
            return;
        }
        if (sch_trip_bound(l) > e->dims[ax]) {
            e->dims[ax] = sch_trip_bound(l);
            e->dim_loop[ax] = l;
        }
        /* the grid's extent at the sizes of a launch: the loops' largest */
        const SizeExpr *size = l->var->extent_size && !l->trip_bound
                                   ? l->var->extent_size
                                   : te_size_num(e->p.a, sch_trip_bound(l));
        e->dynamic_dims = e->dynamic_dims || size->kind != SZ_NUM;
        e->dim_size[ax] = !e->dim_size[ax] ? size
                          : te_size_simplify(e->p.a, te_size_op(e->p.a, SZ_MAX, e->dim_size[ax], size));
        const Loop *saved = enclosing[ax];
        enclosing[ax] = l;
        find_dims(e, s->body, enclosing);
        enclosing[ax] = saved;
        return;
    }
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            find_dims(e, s->stmts[i], enclosing);
        return;
    case S_IF:
    case S_ALLOC:
        find_dims(e, s->body, enclosing);
        return;
    case S_STORE:
        return;
    }
}

static bool distributed_here(Emitter *e, const Stmt *s, bool uniform);

static int64_t elems_of(const Tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= t->shape[d];
    return n;
}

static ShBuf *add_shared(Emitter *e, const Tensor *t)
{
    ShBuf *b = arena_alloc(e->p.a, sizeof *b);
    b->buf = t;
    b->slots = 1;
    vec_push(e->p.a, &e->shared, b);
    return b;
}

/* " at 'L' of 'S'": where the stage stored in BUF is computed, for
 * messages ("" if it is not found). */
static const char *staged_where(Emitter *e, const Tensor *buf)
{
    for (int i = 0; i < e->st->stages.len; i++) {
        const SStage *s = e->st->stages.items[i];
        if (s->storage == buf && s->attach_loop)
            return arena_printf(e->p.a, " at '%s' of '%s'", s->attach_loop->name, s->attach->name);
    }
    return "";
}

/* The stage whose loop L is, for messages. */
static const char *stage_of_loop(Emitter *e, const Loop *l)
{
    for (int i = 0; i < e->st->stages.len; i++) {
        SStage *s = e->st->stages.items[i];
        if (sch_loop_index(s, l) >= 0)
            return s->name;
    }
    return e->stage->name;
}

/* Is the pipelined loop S (block-uniform) a chain of shared buffers, each
 * filled by a nest with no thread loop that reads none of the others,
 * followed by the rest of the body?  Then its Pipe. */
static Pipe *plan_pipe(Emitter *e, const Stmt *s)
{
    Pipe *p = arena_alloc(e->p.a, sizeof *p);
    p->loop = s;
    p->stages = s->loop->pipeline;
    const Stmt *b = s->body;
    PtrVec tensors = {0};
    while (b && b->kind == S_ALLOC && b->scope == SCOPE_SHARED && b->body &&
           b->body->kind == S_SEQ && b->body->n == 2 && !has_thread_loop(b->body->stmts[0])) {
        vec_push(e->p.a, &tensors, (void *)b->buf);
        vec_push(e->p.a, &p->fetches, b->body->stmts[0]);
        b = b->body->stmts[1];
    }
    for (int i = 0; i < p->fetches.len; i++)
        if (reads_any(p->fetches.items[i], &tensors))
            return NULL;
    if (p->fetches.len == 0)
        return NULL;
    p->rest = b;
    for (int i = 0; i < tensors.len; i++) {
        ShBuf *sb = add_shared(e, tensors.items[i]);
        sb->slots = p->stages;
        vec_push(e->p.a, &p->bufs, sb);
    }
    return p;
}

static Pipe *pipe_of(Emitter *e, const Stmt *s)
{
    for (int i = 0; i < e->pipes.len; i++) {
        Pipe *p = e->pipes.items[i];
        if (p->loop == s)
            return p;
    }
    return NULL;
}

/* Decides where each buffer lives and which loops are pipelined. */
static void plan_buffers(Emitter *e, const Stmt *s, bool uniform)
{
    if (!s)
        return;
    if (uniform && distributed_here(e, s, uniform)) {
        plan_buffers(e, s, false); /* per thread inside */
        return;
    }
    switch (s->kind) {
    case S_FLASH: /* a cpu kernel: sched/flash.c refuses cuda */
        TE_UNREACHABLE();
    case S_FOR: {
        const Loop *l = s->loop;
        if (uniform && l->pipeline >= 2 && l->kind != LOOP_BOUND) {
            Pipe *p = plan_pipe(e, s);
            if (p) {
                vec_push(e->p.a, &e->pipes, p);
                for (int i = 0; i < p->fetches.len; i++)
                    plan_buffers(e, p->fetches.items[i], false);
                plan_buffers(e, p->rest, true);
                return;
            }
        }
        /* sched/lower.c saw that something is staged at it */
        if (l->pipeline >= 2) {
            const SStage *local = NULL;
            for (int i = 0; i < e->st->stages.len && !local; i++) {
                const SStage *c = e->st->stages.items[i];
                if (c->attach_loop == l && !c->inlined && c->scope != SCOPE_SHARED)
                    local = c;
            }
            const char *why =
                l->kind == LOOP_BOUND
                    ? "it is bound to a GPU axis, so it is no loop that could fetch ahead"
                : !uniform ? "it runs inside a thread loop; a pipeline fetches shared tiles, "
                             "staged at a loop outside the thread loops"
                : local ? arena_printf(e->p.a,
                                       "'%s' is computed at it, not in shared memory; a pipeline "
                                       "fetches shared tiles only",
                                       local->name)
                        : "what is staged at it is not a chain of shared tiles, each copied from "
                          "memory by the block's threads without reading another";
            kernel_error(e, l->pipeline_span, "cannot pipeline '%s' of '%s': %s", l->name,
                         stage_of_loop(e, l), why);
        }
        plan_buffers(e, s->body, uniform && !is_thread_loop(s));
        return;
    }
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            plan_buffers(e, s->stmts[i], uniform);
        return;
    case S_IF:
        plan_buffers(e, s->body, uniform);
        return;
    case S_ALLOC:
        if (s->scope == SCOPE_SHARED && uniform)
            add_shared(e, s->buf);
        else if (s->scope == SCOPE_SHARED)
            kernel_error(e, s->buf->span,
                         "cannot stage '%s' in shared memory%s: it is computed inside a thread "
                         "loop (or inside another staged tile's copy), so each thread would need "
                         "its own copy; stage it at a loop outside the thread loops, or in local "
                         "memory",
                         s->buf->name, staged_where(e, s->buf));
        if (s->scope != SCOPE_SHARED || !uniform)
            vec_push(e->p.a, &e->locals, (void *)s->buf); /* per thread */
        plan_buffers(e, s->body, uniform);
        return;
    case S_STORE:
        return;
    }
}

/* The first statement of S, in preorder, that MATCH accepts, or NULL. */
typedef bool StmtMatch(const Stmt *s, const void *arg);

static const Stmt *find_stmt(const Stmt *s, StmtMatch *match, const void *arg)
{
    if (!s)
        return NULL;
    if (match(s, arg))
        return s;
    switch (s->kind) {
    case S_FLASH: /* a cpu kernel: sched/flash.c refuses cuda */
        TE_UNREACHABLE();
    case S_FOR:
    case S_IF:
    case S_ALLOC:
        return find_stmt(s->body, match, arg);
    case S_SEQ:
        for (int i = 0; i < s->n; i++) {
            const Stmt *f = find_stmt(s->stmts[i], match, arg);
            if (f)
                return f;
        }
        return NULL;
    case S_STORE:
        return NULL;
    }
    return NULL;
}

/* An S_SEQ node whose second statement is the S_FOR of LOOP. */
static bool is_update(const Stmt *s, const void *loop)
{
    return s->kind == S_SEQ && s->n == 2 && s->stmts[1]->kind == S_FOR &&
           s->stmts[1]->loop == loop;
}

/* The S_SEQ whose statement CHILD is. */
static bool is_parent(const Stmt *s, const void *child)
{
    for (int i = 0; s->kind == S_SEQ && i < s->n; i++)
        if (s->stmts[i] == child)
            return true;
    return false;
}

/* A store to BUF. */
static bool is_store(const Stmt *s, const void *buf)
{
    return s->kind == S_STORE && s->buf == buf;
}

/* The per-thread accumulator of the kernel's root reduction, when its
 * thread loops cover every thread axis of the block and its other
 * spatial loops inside the reduction span at most 128 values. */
static Acc *plan_acc(Emitter *e, const Stmt *body)
{
    const SStage *s = e->stage;
    if (!s->is_reduce)
        return NULL;
    int p = 0;
    while (p < s->loops.len && !((Loop *)s->loops.items[p])->reduce)
        p++;
    if (p == s->loops.len)
        return NULL;
    bool covered[GPU_AXIS_COUNT] = { false };
    for (int i = 0; i < s->loops.len; i++) {
        Loop *l = s->loops.items[i];
        if (l->kind == LOOP_BOUND)
            covered[l->gpu_axis] = true;
    }
    for (int ax = GPU_THREAD_X; ax < GPU_AXIS_COUNT; ax++)
        if (e->dims[ax] > 1 && !covered[ax])
            return NULL;
    const Stmt *seq = find_stmt(body, is_update, s->loops.items[p]);
    const Stmt *init = seq ? find_stmt(seq->stmts[0], is_store, s->storage) : NULL;
    if (!init)
        return NULL;
    Acc *acc = arena_alloc(e->p.a, sizeof *acc);
    acc->seq = seq;
    acc->outer = find_stmt(body, is_parent, seq);
    if (acc->outer && acc->outer->n == 2 && acc->outer->stmts[0] == seq)
        acc->epilogue = acc->outer->stmts[1];
    else
        acc->outer = NULL;
    acc->buf = s->storage;
    acc->idx = init->index;
    acc->dtype = s->tensor->dtype;
    acc->loops = arena_alloc(e->p.a, sizeof *acc->loops * (size_t)(s->loops.len + 1));
    int64_t size = 1;
    for (int i = p + 1; i < s->loops.len; i++) {
        Loop *l = s->loops.items[i];
        if (l->reduce || l->kind == LOOP_BOUND)
            continue;
        size *= sch_trip_bound(l);
        if (size > 128)
            return NULL;
        acc->loops[acc->nloops++] = l;
    }
    return acc;
}

/* The global tensors BODY reads or writes (e->params), in the program's
 * order (inputs, outputs, intermediates), and those it writes (e->written):
 * all it uses but the shared and the per-thread buffers. */
static int by_value(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

static void collect_params(Emitter *e, const Stmt *body)
{
    /* one walk of BODY, its tensors put in order by their positions */
    CgUses uses = cg_uses(e->p.a, body, false);
    int *pos = arena_alloc(e->p.a, sizeof *pos * (size_t)(uses.tensors.len + 1));
    int n = 0;
    for (int j = 0; j < uses.tensors.len; j++) {
        int i = map_get(&e->order_at, uses.tensors.items[j]);
        if (i >= 0)
            pos[n++] = i;
    }
    qsort(pos, (size_t)n, sizeof *pos, by_value);
    for (int j = 0; j < n; j++) {
        const Tensor *t = e->order->items[pos[j]];
        if (shared_of(e, t) || in_vec(&e->locals, t))
            continue;
        vec_push(e->p.a, &e->params, (void *)t);
        if (map_get(&uses.stored, t) >= 0)
            vec_push(e->p.a, &e->written, (void *)t);
    }
}

/* ------------------------------------------------------------------ */
/* Statements.                                                         */

static void emit_stmt(Emitter *e, const Stmt *s, bool uniform);

static void barrier(Emitter *e)
{
    if (e->threads > 1)
        cg_line(&e->p, "__syncthreads();\n");
    e->pending = false;
    e->pending_bufs.len = 0;
}

/* A barrier, if a distributed write is waiting for one: before anything
 * at a block-uniform position that may read it. */
static void flush(Emitter *e)
{
    if (e->pending)
        barrier(e);
}

/* Is S, at a block-uniform position, a statement the block's threads
 * share out (see the top of the file)? */
static bool distributed_here(Emitter *e, const Stmt *s, bool uniform)
{
    if (!uniform || e->threads <= 1 || has_thread_loop(s))
        return false;
    if (s->kind == S_FOR && s->loop->kind == LOOP_BOUND)
        return false; /* a block loop: look inside */
    if (s->kind == S_SEQ || s->kind == S_ALLOC)
        return false; /* look at each part */
    PtrVec inner = {0}, writes = {0};
    shared_writes(e, s, &inner, &writes);
    return writes.len > 0;
}

/* Does the loads of X index T exactly as IDX? */
static bool same_element(const Expr *x, const Tensor *t, Expr *const *idx)
{
    if (x->kind != EX_LOAD || x->tensor != t)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (x->args[d] != idx[d])
            return false;
    return true;
}

static void emit_store(Emitter *e, const Stmt *s)
{
    FILE *out = e->p.out;
    bool acc = is_acc_access(e, s->buf, s->index);
    if (acc && e->acc_mode == ACC_STORE) {
        /* the sums, stored once */
        cg_line(&e->p, "%s", "");
        emit_element(e, s->buf, s->index, false);
        const char *conv = s->buf->dtype == DT_F16 ? "__float2half_rn("
                           : s->buf->dtype == DT_BF16 ? "__float2bfloat16_rn("
                           : s->buf->dtype == DT_I32 ? "te_sat_i32(" : "";
        fprintf(out, " = %s%s", conv, e->acc->name);
        for (int i = 0; i < e->acc->nloops; i++)
            fprintf(out, "[%s]", cg_var_name(&e->p, e->acc->loops[i]->var));
        fputs(*conv ? ");\n" : ";\n", out);
        return;
    }
    bool to_acc = acc && e->acc_mode == ACC_ON;
    ShBuf *sb = shared_of(e, s->buf);
    const Expr *v = s->value;
    if (e->async_copy && sb && v->kind == EX_LOAD && v->tensor->dtype == s->buf->dtype &&
        !shared_of(e, v->tensor) && !in_vec(&e->locals, v->tensor) &&
        (dtype_bytes(v->tensor->dtype) == 4 || dtype_bytes(v->tensor->dtype) == 8)) {
        cg_line(&e->p, "te_cp_async%d(&", dtype_bytes(v->tensor->dtype));
        emit_element(e, s->buf, s->index, false);
        fputs(", &", out);
        emit_element(e, v->tensor, v->args, true);
        fputs(");\n", out);
        return;
    }
    cg_line(&e->p, "%s", "");
    emit_element(e, s->buf, s->index, false);
    DType dt = to_acc ? (s->buf->dtype == DT_F64 ? DT_F64 : dtype_is_float(s->buf->dtype) ? DT_F32
                                                                                           : s->buf->dtype)
                      : s->buf->dtype;
    /* y = y + v is written y += v where no conversion is needed (and
     * where y is one place: an epilogue reads the sums, stores memory),
     * nor wrapping (an i32 sum) */
    bool plain = (to_acc || dt == DT_F32 || dt == DT_F64) && !(acc && e->acc_mode == ACC_EPILOGUE);
    if (plain && v->kind == EX_OP && (v->op == OP_ADD || v->op == OP_MUL) && !cg_i32_wraps(v) &&
        same_element(v->args[0], s->buf, s->index)) {
        fprintf(out, " %s= ", v->op == OP_ADD ? "+" : "*");
        cg_emit_expr(&e->p, v->args[1], 0);
        fputs(";\n", out);
        return;
    }
    fputs(" = ", out);
    if (to_acc) {
        cg_emit_expr(&e->p, v, 0);
    } else if (dt == DT_BF16 || dt == DT_F16) {
        fputs(dt == DT_BF16 ? "__float2bfloat16_rn(" : "__float2half_rn(", out);
        cg_emit_expr(&e->p, v, 0);
        fputc(')', out);
    } else if (dt == DT_I32) {
        fputs("te_sat_i32(", out);
        cg_emit_expr(&e->p, v, 0);
        fputc(')', out);
    } else {
        cg_emit_expr(&e->p, v, 0);
    }
    fputs(";\n", out);
}

/* The text of X, for a name that stands for it (a pipeline slot). */
static const char *expr_text(Emitter *e, const Expr *x, int prec)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        te_internal_error(__FILE__, __LINE__, "out of memory");
    FILE *saved = e->p.out;
    e->p.out = mem;
    cg_emit_expr(&e->p, x, prec);
    e->p.out = saved;
    fclose(mem);
    char *text = arena_strdup(e->p.a, buf);
    free(buf);
    return text;
}

/* After S, a statement at a block-uniform position whose threads wrote
 * memory other threads may read next (anything but the root stage's own
 * elements, which each thread alone writes and reads): a barrier is due
 * before the next reader, and at the end of an enclosing loop's body. */
static void shared_out(Emitter *e, const Stmt *s)
{
    PtrVec inner = {0}, writes = {0};
    shared_writes(e, s, &inner, &writes);
    bool any = false;
    for (int i = 0; i < writes.len; i++) {
        if (writes.items[i] == e->stage->storage)
            continue;
        any = true;
        if (!in_vec(&e->pending_bufs, writes.items[i]))
            vec_push(e->p.a, &e->pending_bufs, writes.items[i]);
    }
    if (any) {
        e->pending = true;
        e->distributed++;
    }
}

/* A loop bound to a GPU axis: its variable, and a guard where the axis is
 * longer than the loop. */
static void emit_bound(Emitter *e, const Stmt *s, bool uniform)
{
    const Loop *l = s->loop;
    GpuAxis ax = l->gpu_axis;
    if (uniform && sch_is_thread_axis(ax))
        flush(e);
    /* the threads a statement's thread loops do not tell apart would all
     * do its writes: only those of index 0 along the other axes do */
    bool covered[GPU_AXIS_COUNT] = { false };
    axes_bound(s, covered);
    const char *sep = "";
    bool narrowed = false;
    PtrVec inner = {0}, writes = {0};
    if (uniform && sch_is_thread_axis(ax))
        shared_writes(e, s, &inner, &writes);
    for (int a = GPU_THREAD_X; a < GPU_AXIS_COUNT && writes.len > 0; a++) {
        if (covered[a] || e->dims[a] == 1)
            continue;
        if (!narrowed)
            cg_line(&e->p, "if (");
        fprintf(e->p.out, "%s%s == 0", sep, axis_vars[a]);
        sep = " && ";
        narrowed = true;
    }
    if (narrowed) {
        fputs(") {\n", e->p.out);
        e->p.indent++;
    }
    const char *v = cg_var_name(&e->p, l->var);
    int64_t min = -1, ext = -1;
    bool zero_min = sch_const_int(s->min, &min) && min == 0;
    bool full = sch_const_int(s->extent, &ext) && ext == e->dims[ax];
    cg_line(&e->p, "{\n");
    e->p.indent++;
    cg_line(&e->p, "const %s %s = ", e->p.int_type, v);
    if (!zero_min) {
        cg_emit_expr(&e->p, s->min, 5);
        fputs(" + ", e->p.out);
    }
    fprintf(e->p.out, "(%s)%s; /* %s */\n", e->p.int_type, axis_vars[ax], sch_gpu_axis_name(ax));
    if (!full) {
        cg_line(&e->p, "if (%s < ", v);
        cg_emit_expr(&e->p, sch_simplify(e->p.a, sch_add(e->p.a, s->min, s->extent)), 5);
        fputs(") {\n", e->p.out);
        e->p.indent++;
    }
    emit_stmt(e, s->body, uniform && ax < 3);
    if (!full) {
        e->p.indent--;
        cg_line(&e->p, "}\n");
    }
    e->p.indent--;
    cg_line(&e->p, "}\n");
    if (narrowed) {
        e->p.indent--;
        cg_line(&e->p, "}\n");
    }
    if (uniform && sch_is_thread_axis(ax))
        shared_out(e, s);
}

static void emit_for_header(Emitter *e, const Stmt *s, const Expr *end, const char *comment)
{
    const char *v = cg_var_name(&e->p, s->loop->var);
    cg_line(&e->p, "for (%s %s = ", e->p.int_type, v);
    cg_emit_expr(&e->p, s->min, 0);
    fprintf(e->p.out, "; %s < ", v);
    cg_emit_expr(&e->p, end, 4);
    fprintf(e->p.out, "; %s++) {%s\n", v, comment);
}

static void emit_loop(Emitter *e, const Stmt *s, bool uniform)
{
    const Loop *l = s->loop;
    int64_t ext;
    bool constant = sch_const_int(s->extent, &ext);
    if (uniform)
        flush(e);
    int before = e->distributed;
    Expr *end = sch_simplify(e->p.a, sch_add(e->p.a, s->min, s->extent));
    bool guarded = false;
    if (l->kind == LOOP_UNROLLED) {
        cg_line(&e->p, "#pragma unroll\n");
        if (!constant) {
            /* a constant trip count, so that it does unroll */
            emit_for_header(e, s, sch_simplify(e->p.a, sch_add(e->p.a, s->min,
                                                               sch_int(e->p.a, sch_trip_bound(l)))), "");
            e->p.indent++;
            cg_line(&e->p, "if (%s < ", cg_var_name(&e->p, l->var));
            cg_emit_expr(&e->p, end, 5);
            fputs(") {\n", e->p.out);
            guarded = true;
        } else {
            emit_for_header(e, s, end, "");
        }
    } else {
        emit_for_header(e, s, end, "");
    }
    e->p.indent++;
    emit_stmt(e, s->body, uniform);
    /* the next iteration must not overwrite what slower threads still read */
    if (uniform && e->distributed > before)
        barrier(e);
    e->p.indent--;
    cg_line(&e->p, "}\n");
    if (guarded) {
        e->p.indent--;
        cg_line(&e->p, "}\n");
    }
}

/* The loops and conditions a distributed statement flattens. */
typedef struct Flat {
    const Stmt *loops[TE_MAX_RANK * 4];
    int nloops;
    const Expr *conds[TE_MAX_RANK * 4];
    int nconds;
    const Stmt *body;
} Flat;

/* The spatial loops nested at the top of S, and the conditions between
 * them (they depend on no thread, so every element may test them). */
static void flatten(const Stmt *s, Flat *f)
{
    while (s && f->nloops < TE_MAX_RANK * 4 && f->nconds < TE_MAX_RANK * 4) {
        if (s->kind == S_FOR && s->loop->kind != LOOP_BOUND && !s->loop->reduce)
            f->loops[f->nloops++] = s;
        else if (s->kind == S_IF)
            f->conds[f->nconds++] = s->cond;
        else
            break;
        s = s->body;
    }
    f->body = s;
}

static bool full_extent(const Stmt *loop)
{
    int64_t ext;
    return sch_const_int(loop->extent, &ext) && ext == sch_trip_bound(loop->loop);
}

/* Is X a multiple of V for all values of its variables? */
static bool multiple_of(const Expr *x, int64_t v)
{
    int64_t c;
    if (sch_const_int(x, &c))
        return c % v == 0;
    if (x->kind != EX_OP)
        return false;
    switch (x->op) {
    case OP_NEG:
        return multiple_of(x->args[0], v);
    case OP_ADD:
    case OP_SUB:
    case OP_MIN:
    case OP_MAX:
        return multiple_of(x->args[0], v) && multiple_of(x->args[1], v);
    case OP_MUL:
        return multiple_of(x->args[0], v) || multiple_of(x->args[1], v);
    default:
        return false;
    }
}

/* How X changes when VAR grows by one (a constant), or false. */
static bool step_of(Emitter *e, const Expr *x, const IterVar *var, int64_t *step)
{
    Expr *next = sch_add(e->p.a, ex_var(e->p.a, (Span){ 0, 0 }, (IterVar *)var), sch_int(e->p.a, 1));
    Expr *moved = sch_subst(e->p.a, (Expr *)x, sch_subst1(e->p.a, (IterVar *)var, next));
    return sch_const_int(sch_simplify(e->p.a, sch_sub(e->p.a, moved, (Expr *)x)), step);
}

/* The elements a distributed copy F may move at once: 16 bytes' worth when
 * it copies a global tensor's rows into a shared buffer's, both contiguous
 * along the innermost flattened loop and aligned to 16 bytes wherever a
 * vector starts (global buffers are, as cudaMalloc's are), else 1. */
static int64_t copy_width(Emitter *e, const Flat *f)
{
    const Stmt *st = f->body;
    if (f->nloops == 0 || !st || st->kind != S_STORE || !shared_of(e, st->buf) ||
        st->value->kind != EX_LOAD)
        return 1;
    const Tensor *dst = st->buf, *src = st->value->tensor;
    if (src->dtype != dst->dtype || shared_of(e, src) || in_vec(&e->locals, src) || dst->rank == 0)
        return 1;
    int64_t v = 16 / dtype_bytes(dst->dtype);
    const Stmt *inner = f->loops[f->nloops - 1];
    const IterVar *var = inner->loop->var;
    int64_t step;
    for (int d = 0; d < dst->rank; d++)
        if (!step_of(e, st->index[d], var, &step) || step != (d == dst->rank - 1))
            return 1;
    for (int d = 0; d < src->rank; d++)
        if (!step_of(e, st->value->args[d], var, &step) || step != (d == src->rank - 1))
            return 1;
    for (int i = 0; i < f->nconds; i++)
        if (!step_of(e, f->conds[i], var, &step) || step != 0)
            return 1;
    /* vectors start at multiples of V, in both buffers, and do not cross
     * the loop's (clamped) end */
    Expr *src_off = sch_simplify(e->p.a, sch_sub(e->p.a, st->value->args[src->rank - 1],
                                                 ex_var(e->p.a, (Span){ 0, 0 }, (IterVar *)var)));
    Expr *dst_off = sch_simplify(e->p.a, sch_sub(e->p.a, st->index[dst->rank - 1],
                                                 ex_var(e->p.a, (Span){ 0, 0 }, (IterVar *)var)));
    if (v < 2 || sch_trip_bound(inner->loop) % v != 0 || dst->shape[dst->rank - 1] % v != 0 ||
        src->shape[src->rank - 1] % v != 0 || !multiple_of(inner->min, v) ||
        !multiple_of(sch_simplify(e->p.a, sch_add(e->p.a, inner->min, inner->extent)), v) ||
        !multiple_of(src_off, v) || !multiple_of(dst_off, v))
        return 1;
    return v;
}

/* S's outer loops flattened into one index strided over the block's
 * threads; a statement with none runs on thread 0. */
static void emit_distributed(Emitter *e, const Stmt *s)
{
    PtrVec inner = {0}, writes = {0};
    shared_writes(e, s, &inner, &writes);
    if (e->pending && reads_any(s, &e->pending_bufs))
        barrier(e);
    Flat f = {0};
    flatten(s, &f);
    int64_t width = copy_width(e, &f);
    int64_t total = 1;
    for (int i = 0; i < f.nloops; i++)
        total *= sch_trip_bound(f.loops[i]->loop);
    total /= width;
    if (f.nloops == 0 || total >= ((int64_t)1 << 31)) {
        cg_line(&e->p, "if (te_tid == 0) {\n");
        e->p.indent++;
        emit_stmt(e, s, false);
        e->p.indent--;
        cg_line(&e->p, "}\n");
    } else {
        const char *rep = own_name(e, "r"), *flat = own_name(e, "f");
        int64_t reps = (total + e->threads - 1) / e->threads;
        cg_line(&e->p, "/* ");
        for (int i = 0; i < f.nloops; i++)
            fprintf(e->p.out, "%s%lld", i ? " x " : "", (long long)sch_trip_bound(f.loops[i]->loop));
        if (width > 1)
            fprintf(e->p.out, " elements, %lld at a time,", (long long)width);
        else
            fprintf(e->p.out, " element%s", total == 1 ? "" : "s");
        fprintf(e->p.out, " over %lld threads */\n", (long long)e->threads);
        if (reps <= 16)
            cg_line(&e->p, "#pragma unroll\n");
        cg_line(&e->p, "for (int %s = 0; %s < %lld; %s++) {\n", rep, rep, (long long)reps, rep);
        e->p.indent++;
        cg_line(&e->p, "const int %s = te_tid + %s * %lld;\n", flat, rep, (long long)e->threads);
        int64_t stride = total;
        for (int i = 0; i < f.nloops; i++) {
            const Stmt *fl = f.loops[i];
            bool last = i == f.nloops - 1;
            int64_t n = sch_trip_bound(fl->loop) / (last ? width : 1), m;
            stride /= n;
            cg_line(&e->p, "const %s %s = ", e->p.int_type, cg_var_name(&e->p, fl->loop->var));
            bool zero_min = sch_const_int(fl->min, &m) && m == 0;
            if (n == 1) { /* the loop has one value */
                cg_emit_expr(&e->p, fl->min, 0);
                fputs(";\n", e->p.out);
                continue;
            }
            if (!zero_min) {
                cg_emit_expr(&e->p, fl->min, 5);
                fputs(" + ", e->p.out);
            }
            const char *scale = last && width > 1 ? arena_printf(e->p.a, " * %lld", (long long)width) : "";
            bool paren = *scale && !(i == 0 && stride == 1);
            fputs(paren ? "(" : "", e->p.out);
            if (i == 0 && stride == 1)
                fprintf(e->p.out, "%s", flat);
            else if (i == 0)
                fprintf(e->p.out, "%s / %lld", flat, (long long)stride);
            else if (stride == 1)
                fprintf(e->p.out, "%s %% %lld", flat, (long long)n);
            else
                fprintf(e->p.out, "%s / %lld %% %lld", flat, (long long)stride, (long long)n);
            fprintf(e->p.out, "%s%s;\n", paren ? ")" : "", scale);
        }
        /* the elements past the last, past each loop's own extent, and
         * the conditions */
        bool any = total % e->threads != 0 || f.nconds > 0;
        for (int i = 0; i < f.nloops; i++)
            any = any || !full_extent(f.loops[i]);
        if (any) {
            cg_line(&e->p, "if (");
            const char *sep = "";
            if (total % e->threads != 0) {
                fprintf(e->p.out, "%s < %lld", flat, (long long)total);
                sep = " && ";
            }
            for (int i = 0; i < f.nloops; i++) {
                const Stmt *fl = f.loops[i];
                if (full_extent(fl))
                    continue;
                fprintf(e->p.out, "%s%s < ", sep, cg_var_name(&e->p, fl->loop->var));
                cg_emit_expr(&e->p, sch_simplify(e->p.a, sch_add(e->p.a, fl->min, fl->extent)), 5);
                sep = " && ";
            }
            for (int i = 0; i < f.nconds; i++) {
                fputs(sep, e->p.out);
                cg_emit_expr(&e->p, f.conds[i], 3);
                sep = " && ";
            }
            fputs(") {\n", e->p.out);
            e->p.indent++;
        }
        if (width > 1) {
            const Stmt *st = f.body;
            if (e->async_copy) {
                cg_line(&e->p, "te_cp_async16(&");
            } else {
                cg_line(&e->p, "*(uint4 *)&");
            }
            emit_element(e, st->buf, st->index, false);
            fputs(e->async_copy ? ", &" : " = *(const uint4 *)&", e->p.out);
            emit_element(e, st->value->tensor, st->value->args, true);
            fputs(e->async_copy ? ");\n" : ";\n", e->p.out);
        } else {
            emit_stmt(e, f.body, false);
        }
        if (any) {
            e->p.indent--;
            cg_line(&e->p, "}\n");
        }
        e->p.indent--;
        cg_line(&e->p, "}\n");
    }
    e->distributed++;
    e->pending = true;
    for (int i = 0; i < writes.len; i++)
        if (!in_vec(&e->pending_bufs, writes.items[i]))
            vec_push(e->p.a, &e->pending_bufs, writes.items[i]);
}

/* The tiles of a pipelined loop for iteration NEXT (a variable's name)
 * into slot SLOT (an expression's text). */
static void emit_fetch(Emitter *e, Pipe *p, const char *next, const char *slot)
{
    const IterVar *v = p->loop->loop->var;
    e->p.var_text[v->id] = next;
    for (int i = 0; i < p->bufs.len; i++)
        ((ShBuf *)p->bufs.items[i])->slot = slot;
    e->async_copy = e->sm >= 80;
    for (int i = 0; i < p->fetches.len; i++) {
        const Stmt *f = p->fetches.items[i];
        if (e->threads > 1)
            emit_distributed(e, f);
        else
            emit_stmt(e, f, false);
    }
    e->async_copy = false;
    e->p.var_text[v->id] = NULL;
    for (int i = 0; i < p->bufs.len; i++)
        ((ShBuf *)p->bufs.items[i])->slot = NULL;
    /* the barrier at the top of the loop's next iteration covers these */
    e->pending = false;
    e->pending_bufs.len = 0;
}

/* pipeline(L, n): n slots per tile; the tiles fetched n - 1 iterations
 * ahead; one barrier per iteration. */
static void emit_pipelined(Emitter *e, const Stmt *s, Pipe *p)
{
    const Loop *l = s->loop;
    const char *v = cg_var_name(&e->p, l->var);
    int n = p->stages;
    bool async = e->sm >= 80;
    flush(e);
    cg_line(&e->p, "/* %s: pipelined in %d stages: the tiles of ", l->name, n);
    for (int i = 0; i < p->bufs.len; i++)
        fprintf(e->p.out, "%s%s", i ? " and " : "", cg_tensor_name(&e->p, ((ShBuf *)p->bufs.items[i])->buf));
    fprintf(e->p.out, " for %s + %d are fetched%s while %s computes */\n", l->name, n - 1,
            async ? " with cp.async" : "", l->name);
    Expr *end = sch_simplify(e->p.a, sch_add(e->p.a, s->min, s->extent));
    const char *next = cg_claim(&e->p, arena_printf(e->p.a, "%s_next", v));
    const char *first = own_name(e, "s");
    int64_t m;
    bool zero_min = sch_const_int(s->min, &m) && m == 0;
    /* the prologue: the tiles of the first n - 1 iterations */
    cg_line(&e->p, "#pragma unroll\n");
    cg_line(&e->p, "for (int %s = 0; %s < %d; %s++) {\n", first, first, n - 1, first);
    e->p.indent++;
    cg_line(&e->p, "const %s %s = ", e->p.int_type, next);
    if (!zero_min) {
        cg_emit_expr(&e->p, s->min, 5);
        fputs(" + ", e->p.out);
    }
    fprintf(e->p.out, "%s;\n", first);
    cg_line(&e->p, "if (%s < ", next);
    cg_emit_expr(&e->p, end, 5);
    fputs(") {\n", e->p.out);
    e->p.indent++;
    emit_fetch(e, p, next, first);
    e->p.indent--;
    cg_line(&e->p, "}\n");
    if (async)
        cg_line(&e->p, "te_cp_async_commit();\n");
    e->p.indent--;
    cg_line(&e->p, "}\n");
    /* the loop: wait for this iteration's tiles, fetch ahead, compute */
    emit_for_header(e, s, end, "");
    e->p.indent++;
    if (async)
        cg_line(&e->p, "te_cp_async_wait<%d>(); /* the tiles of %s have landed */\n", n - 2, v);
    if (e->threads > 1)
        cg_line(&e->p, "__syncthreads();\n");
    cg_line(&e->p, "{\n");
    e->p.indent++;
    cg_line(&e->p, "const %s %s = %s + %d;\n", e->p.int_type, next, v, n - 1);
    cg_line(&e->p, "if (%s < ", next);
    cg_emit_expr(&e->p, end, 5);
    fputs(") {\n", e->p.out);
    e->p.indent++;
    const char *next_slot = zero_min ? arena_printf(e->p.a, "%s %% %d", next, n)
                                     : arena_printf(e->p.a, "(%s - %s) %% %d", next,
                                                    expr_text(e, s->min, 5), n);
    emit_fetch(e, p, next, next_slot);
    e->p.indent--;
    cg_line(&e->p, "}\n");
    if (async)
        cg_line(&e->p, "te_cp_async_commit();\n");
    e->p.indent--;
    cg_line(&e->p, "}\n");
    const char *slot = zero_min ? arena_printf(e->p.a, "%s %% %d", v, n)
                                : arena_printf(e->p.a, "(%s - %s) %% %d", v, expr_text(e, s->min, 5), n);
    for (int i = 0; i < p->bufs.len; i++)
        ((ShBuf *)p->bufs.items[i])->slot = slot;
    int before = e->distributed;
    emit_stmt(e, p->rest, true);
    if (e->distributed > before)
        barrier(e);
    for (int i = 0; i < p->bufs.len; i++)
        ((ShBuf *)p->bufs.items[i])->slot = NULL;
    e->p.indent--;
    cg_line(&e->p, "}\n");
    /* the buffers are free again once every thread is past the loop */
    if (async)
        cg_line(&e->p, "te_cp_async_wait<0>();\n");
    if (e->threads > 1)
        cg_line(&e->p, "__syncthreads();\n");
}

/* The root reduction's init and update nests on the per-thread sums, then
 * its epilogue on them, or their store. */
static void emit_acc(Emitter *e, bool uniform)
{
    Acc *acc = e->acc;
    if (uniform)
        flush(e);
    cg_line(&e->p, "%s %s", cg_compute_type(&e->p, acc->dtype), acc->name);
    for (int i = 0; i < acc->nloops; i++)
        fprintf(e->p.out, "[%lld]", (long long)sch_trip_bound(acc->loops[i]));
    fprintf(e->p.out, "; /* the sums of '%s', per thread */\n", e->stage->name);
    e->acc_mode = ACC_ON;
    emit_stmt(e, acc->seq->stmts[0], uniform);
    emit_stmt(e, acc->seq->stmts[1], uniform);
    if (acc->epilogue) {
        e->acc_mode = ACC_EPILOGUE;
        emit_stmt(e, acc->epilogue, uniform);
    } else {
        e->acc_mode = ACC_STORE;
        emit_stmt(e, acc->seq->stmts[0], uniform);
    }
    e->acc_mode = ACC_OFF;
}

static void emit_stmt(Emitter *e, const Stmt *s, bool uniform)
{
    if (!s)
        return;
    if (e->acc && e->acc_mode == ACC_OFF && s == (e->acc->outer ? e->acc->outer : e->acc->seq)) {
        emit_acc(e, uniform);
        return;
    }
    if (distributed_here(e, s, uniform)) {
        emit_distributed(e, s);
        return;
    }
    switch (s->kind) {
    case S_FLASH: /* a cpu kernel: sched/flash.c refuses cuda */
        TE_UNREACHABLE();
    case S_FOR: {
        Pipe *p = uniform ? pipe_of(e, s) : NULL;
        if (p)
            emit_pipelined(e, s, p);
        else if (s->loop->kind == LOOP_BOUND)
            emit_bound(e, s, uniform);
        else
            emit_loop(e, s, uniform);
        break;
    }
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            emit_stmt(e, s->stmts[i], uniform);
        break;
    case S_STORE:
        if (uniform)
            flush(e);
        emit_store(e, s);
        break;
    case S_IF:
        if (uniform)
            flush(e);
        cg_line(&e->p, "if (");
        cg_emit_expr(&e->p, s->cond, 0);
        fputs(") {\n", e->p.out);
        e->p.indent++;
        emit_stmt(e, s->body, uniform);
        e->p.indent--;
        cg_line(&e->p, "}\n");
        break;
    case S_ALLOC:
        if (shared_of(e, s->buf)) {
            /* declared at the top of the kernel */
            emit_stmt(e, s->body, uniform);
            break;
        }
        cg_line(&e->p, "{\n");
        e->p.indent++;
        cg_line(&e->p, "%s %s", storage_type(s->buf->dtype), cg_tensor_name(&e->p, s->buf));
        if (s->buf->rank == 0)
            fputs("[1]", e->p.out);
        for (int d = 0; d < s->buf->rank; d++)
            fprintf(e->p.out, "[%lld]", (long long)s->buf->shape[d]);
        fputs(";\n", e->p.out);
        emit_stmt(e, s->body, uniform);
        e->p.indent--;
        cg_line(&e->p, "}\n");
        break;
    }
}

/* ------------------------------------------------------------------ */
/* Kernels.                                                            */

/* The largest dynamic shared memory a block may opt into on SM. */
static int64_t smem_limit(int sm)
{
    switch (sm) {
    case 70: case 72: return 98304;
    case 75: return 65536;
    case 80: case 87: return 166912;
    case 86: case 88: case 89: case 120: case 121: return 101376;
    case 90: case 100: case 103: case 110: return 232448;
    default: return 49152;
    }
}

static void emit_param_list(Emitter *e)
{
    for (int i = 0; i < e->nrt; i++)
        fprintf(e->p.out, "%sconst %s %s", i ? ",\n    " : "\n    ", e->p.int_type, e->rt_names[i]);
    for (int i = 0; i < e->params.len; i++) {
        const Tensor *t = e->params.items[i];
        fprintf(e->p.out, "%s%s%s *__restrict__ %s", i + e->nrt ? ",\n    " : "\n    ",
                in_vec(&e->written, t) ? "" : "const ", storage_type(t->dtype), cg_tensor_name(&e->p, t));
    }
}

/* The kernel's TOTAL bytes of shared memory: static up to 48 KiB, above
 * that dynamic (the launch asks for them; te_smem is declared here). */
static void use_smem(Emitter *e, int64_t total)
{
    e->dynamic_smem = total > 48 * 1024;
    if (e->dynamic_smem) {
        e->k->dyn_smem = (unsigned)total;
        cg_line(&e->p, "extern __shared__ __align__(16) unsigned char te_smem[]; /* %lld bytes */\n",
                (long long)total);
    } else {
        e->k->static_smem = (unsigned)total;
    }
}

static void emit_shared_decls(Emitter *e)
{
    int64_t total = 0;
    for (int i = 0; i < e->shared.len; i++) {
        ShBuf *b = e->shared.items[i];
        b->bytes = elems_of(b->buf) * dtype_bytes(b->buf->dtype) * b->slots;
        b->offset = total;
        total += (b->bytes + 15) / 16 * 16;
    }
    if (total > smem_limit(e->sm)) {
        /* at the tile that does not fit beside those before it, naming all */
        const ShBuf *over = NULL;
        bool slots = false;
        char *list = NULL;
        size_t list_len = 0;
        FILE *f = open_memstream(&list, &list_len);
        if (!f)
            te_internal_error(__FILE__, __LINE__, "out of memory");
        for (int i = 0; i < e->shared.len; i++) {
            const ShBuf *b = e->shared.items[i];
            if (!over && b->offset + b->bytes > smem_limit(e->sm))
                over = b;
            fprintf(f, "%s'%s' %lld", i ? ", " : "", b->buf->name, (long long)b->bytes);
            if (b->slots > 1)
                fprintf(f, " (%d pipeline slots)", b->slots);
            slots = slots || b->slots > 1;
        }
        fclose(f);
        kernel_error(e, over->buf->span,
                     "kernel '%s' needs %lld bytes of shared memory (%s); sm_%d allows a block "
                     "%lld, dynamic shared memory included: stage smaller tiles (split the loop "
                     "they are staged at smaller%s)",
                     e->k->name, (long long)total, list, e->sm, (long long)smem_limit(e->sm),
                     slots ? ", or pipeline fewer stages" : "");
        free(list);
        return;
    }
    use_smem(e, total);
    for (int i = 0; i < e->shared.len; i++) {
        ShBuf *b = e->shared.items[i];
        const Tensor *t = b->buf;
        const char *ty = storage_type(t->dtype), *n = cg_tensor_name(&e->p, t);
        char dims[TE_MAX_RANK * 24 + 32] = "";
        size_t len = 0;
        if (t->rank == 0)
            len += (size_t)snprintf(dims + len, sizeof dims - len, "[1]");
        for (int d = 0; d < t->rank; d++)
            len += (size_t)snprintf(dims + len, sizeof dims - len, "[%lld]", (long long)t->shape[d]);
        const char *slots = b->slots > 1 ? arena_printf(e->p.a, "[%d]", b->slots) : "";
        if (e->dynamic_smem) {
            /* a pointer to the array's first element: indexing reads the same */
            const char *inner = strchr(b->slots > 1 ? dims : dims + 1, '[');
            if (b->slots > 1)
                inner = dims;
            cg_line(&e->p, "%s (*%s)%s = (%s (*)%s)(te_smem + %lld);\n", ty, n, inner ? inner : "", ty,
                    inner ? inner : "", (long long)b->offset);
        } else {
            cg_line(&e->p, "__shared__ __align__(16) %s %s%s%s;\n", ty, n, slots, dims);
        }
    }
}

/* "24, 1, 1", or "(M + 127) / 128, 24, 1" with run-time dims */
static const char *grid_text(Arena *a, const CudaKernel *k)
{
    const char *t = "";
    for (int ax = 0; ax < 3; ax++)
        t = k->grid_size[ax] ? arena_printf(a, "%s%s%s", t, ax ? ", " : "", te_size_str(a, k->grid_size[ax]))
                             : arena_printf(a, "%s%s%u", t, ax ? ", " : "", k->grid[ax]);
    return t;
}

/* K's parameters: the global tensors BODY uses, in the program's order. */
static void take_params(Emitter *e, CudaKernel *k, const Stmt *body)
{
    collect_params(e, body);
    k->nparams = e->params.len;
    k->params = arena_alloc(e->p.a, sizeof *k->params * (size_t)(e->params.len + 1));
    for (int i = 0; i < e->params.len; i++)
        k->params[i] = e->params.items[i];
}

/* K's signature, up to its body's opening brace. */
static void emit_kernel_head(Emitter *e, const CudaKernel *k)
{
    fprintf(e->p.out, "extern \"C\" __global__ void __launch_bounds__(%lld) %s(",
            (long long)e->threads, k->name);
    emit_param_list(e);
    fputs(")\n{\n", e->p.out);
}

/* After a kernel: the names of its variables and buffers are free again. */
static void end_kernel(Emitter *e)
{
    e->p.names.len = e->names_mark;
    e->p.tensors.len = e->p.tnames.len = e->tensors_mark;
}

/* ------------------------------------------------------------------ */
/* Tensor cores (tensorize, sched/mma.c).                              */

/* A tile of one operand in shared memory, as the kernel stages it: ROWS
 * rows of LEN elements, each a row's piece of the operand's global rows
 * (which are STRIDE long); its row r is global row ROW0 + r (of ROWS_IN),
 * its element c global column COL0 + c (of COLS_IN). */
typedef struct MmaTile {
    const Tensor *t;
    const char *name;           /* the shared array */
    int64_t rows, len, stride;
    const char *row0, *col0;    /* C text */
    int64_t rows_in, cols_in;
} MmaTile;

/* The piece (16 bytes, 8 elements) a tile's row R keeps logical piece C
 * in: rows are XOR-swizzled so that the 8 rows an ldmatrix phase reads
 * at one logical piece fall in 8 different 16-byte bank groups. */
static const char *mma_swizzle(Arena *a, const char *r, const char *c, int64_t pieces)
{
    if (pieces % 8 == 0)
        return arena_printf(a, "((%s) ^ ((%s) & 7))", c, r);
    if (pieces % 4 == 0)
        return arena_printf(a, "((%s) ^ (((%s) >> 1) & 3))", c, r);
    if (pieces % 2 == 0)
        return arena_printf(a, "((%s) ^ (((%s) >> 2) & 1))", c, r);
    return c;
}

/* The fetch of tile T for k step KT (C text) into pipeline slot SLOT:
 * each thread's 16-byte pieces with cp.async, zeros beyond the edges. */
static void emit_mma_fetch(Emitter *e, const MmaTile *t, int64_t threads, const char *slot)
{
    Arena *a = e->p.a;
    int64_t per_row = t->len / 8, pieces = t->rows * per_row;
    int64_t rounds = (pieces + threads - 1) / threads;
    const char *it = e->p.int_type;
    cg_line(&e->p, "/* %s: %lld x %lld elements of '%s', 8 at a time */\n", t->name,
            (long long)t->rows, (long long)t->len, t->t->name);
    cg_line(&e->p, "#pragma unroll\n");
    cg_line(&e->p, "for (int te_q = 0; te_q < %lld; te_q++) {\n", (long long)rounds);
    e->p.indent++;
    cg_line(&e->p, "const int te_p = te_tid + te_q * %lld;\n", (long long)threads);
    if (pieces % threads != 0)
        cg_line(&e->p, "if (te_p < %lld) {\n", (long long)pieces), e->p.indent++;
    cg_line(&e->p, "const int te_r = te_p / %lld, te_c = te_p %% %lld;\n", (long long)per_row,
            (long long)per_row);
    cg_line(&e->p, "const %s te_gr = %s + te_r, te_gc = %s + te_c * 8;\n", it, t->row0, t->col0);
    cg_line(&e->p, "const bool te_in = te_gr < %lld && te_gc < %lld;\n", (long long)t->rows_in,
            (long long)t->cols_in);
    cg_line(&e->p, "te_cp_zfill16(&%s[%s][te_r * %lld + %s * 8], te_in ? &%s[te_gr * %lld + te_gc] : %s, te_in);\n",
            t->name, slot, (long long)t->len, mma_swizzle(a, "te_r", "te_c", per_row),
            cg_tensor_name(&e->p, t->t), (long long)t->stride, cg_tensor_name(&e->p, t->t));
    if (pieces % threads != 0)
        e->p.indent--, cg_line(&e->p, "}\n");
    e->p.indent--;
    cg_line(&e->p, "}\n");
}

/* The tiles of k step te_kt, if there is one, into pipeline slot SLOT,
 * and the commit of their cp.async group (an empty one past the end: the
 * waits count groups). */
static void emit_mma_step_fetch(Emitter *e, const MmaTile *ta, const MmaTile *tb, int64_t threads,
                                int64_t nk, const char *slot)
{
    cg_line(&e->p, "if (te_kt < %lld) {\n", (long long)nk);
    e->p.indent++;
    emit_mma_fetch(e, ta, threads, slot);
    emit_mma_fetch(e, tb, threads, slot);
    e->p.indent--;
    cg_line(&e->p, "}\n");
    cg_line(&e->p, "te_cp_async_commit();\n");
}

/* The address ldmatrix reads for this lane: row R, logical column C (a
 * multiple of 8) of tile T in slot te_s. */
static const char *mma_row(Emitter *e, const MmaTile *t, const char *r, const char *c)
{
    Arena *a = e->p.a;
    return arena_printf(a, "&%s[te_s][(%s) * %lld + %s * 8]", t->name, r, (long long)t->len,
                        mma_swizzle(a, r, arena_printf(a, "(%s) / 8", c), t->len / 8));
}

/* An ldmatrix.x4 of tile T into DEST: four 8 x 8 matrices at OUTER (a
 * warp's rows of A, or columns of B) and te_kk, the lane's bit OUTER_BIT
 * (C text, 0 or 1) adding 8 along OUTER and K_BIT 8 along k.  Each lane
 * gives one of its matrix's 8 rows (lane & 7): rows along OUTER when k is
 * the tile's unit-stride axis, else along k, read transposed. */
static void emit_mma_ldsm(Emitter *e, const MmaTile *t, bool k_last, const char *dest,
                          const char *outer, const char *outer_bit, const char *k_bit)
{
    Arena *a = e->p.a;
    if (k_last)
        cg_line(&e->p, "te_ldsm_x4(%s, %s);\n", dest,
                mma_row(e, t, arena_printf(a, "%s + (te_lane & 7) + %s * 8", outer, outer_bit),
                        arena_printf(a, "te_kk + %s * 8", k_bit)));
    else
        cg_line(&e->p, "te_ldsm_t4(%s, %s);\n", dest,
                mma_row(e, t, arena_printf(a, "te_kk + (te_lane & 7) + %s * 8", k_bit),
                        arena_printf(a, "%s + %s * 8", outer, outer_bit)));
}

/* A tensorized stage's kernel, as planned. */
typedef struct MmaKernel {
    SchMma m;                /* matched again, with tensorize's tiles */
    MmaTile ta, tb;          /* the tiles of A and B in shared memory */
    int64_t threads, warps_n; /* a block's threads; its warps along n */
    int64_t mi, ni;          /* a warp's mma tiles along m and n */
    int64_t nk;              /* k steps */
    int64_t gx, gy;          /* the grid */
    int64_t a_elems, b_elems, smem; /* a slot's elements; all slots' bytes */
    const char *ty;          /* "bf16" or "f16" */
} MmaKernel;

/* Q for tensorized stage S, or false after an error at its tensorize. */
static bool mma_plan(Emitter *e, const SStage *s, MmaKernel *q)
{
    SchMma m = *s->mma;
    const char *why;
    /* the default's compute_inline came after tensorize: match again */
    if (!sch_mma_match(e->st, s, &m, &why)) {
        kernel_error(e, s->mma->span, "cannot tensorize '%s': %s", s->name, why);
        return false;
    }
    if (e->sm < SCH_MMA_MIN_SM) {
        kernel_error(e, s->mma->span,
                     "tensorize needs sm_%d or later (mma.sync.m16n8k16, ldmatrix, cp.async); this "
                     "build is for sm_%d: pass --arch sm_%d or later, or remove it",
                     SCH_MMA_MIN_SM, e->sm, SCH_MMA_MIN_SM);
        return false;
    }
    q->warps_n = m.bn / m.wn, q->threads = 32 * (m.bm / m.wm) * q->warps_n;
    q->mi = m.wm / 16, q->ni = m.wn / 8, q->gx = (m.n + m.bn - 1) / m.bn, q->gy = (m.m + m.bm - 1) / m.bm;
    q->nk = (m.kext + m.bk - 1) / m.bk;
    q->ty = m.bf16 ? "bf16" : "f16";
    if (q->gy > axis_limits[GPU_BLOCK_Y]) {
        kernel_error(e, s->mma->span,
                     "'%s' would need %lld rows of blocks; CUDA allows %lld: take larger block rows",
                     s->name, (long long)q->gy, (long long)axis_limits[GPU_BLOCK_Y]);
        return false;
    }
    /* A's tile: [BM][BK] when k is its last index, else [BK][BM]; B's
       [BN][BK] or [BK][BN] */
    MmaTile *ta = &q->ta, *tb = &q->tb;
    *ta = (MmaTile){ m.a.t, "te_a", 0, 0, m.a.len, NULL, NULL, 0, 0 };
    *tb = (MmaTile){ m.b.t, "te_b", 0, 0, m.b.len, NULL, NULL, 0, 0 };
    const char *kt0 = arena_printf(e->p.a, "te_kt * %lld", (long long)m.bk);
    ta->rows = m.a.k_last ? m.bm : m.bk, ta->len = m.a.k_last ? m.bk : m.bm;
    ta->row0 = m.a.k_last ? "te_m0" : kt0, ta->col0 = m.a.k_last ? kt0 : "te_m0";
    ta->rows_in = m.a.k_last ? m.m : m.kext, ta->cols_in = m.a.k_last ? m.kext : m.m;
    tb->rows = m.b.k_last ? m.bn : m.bk, tb->len = m.b.k_last ? m.bk : m.bn;
    tb->row0 = m.b.k_last ? "te_n0" : kt0, tb->col0 = m.b.k_last ? kt0 : "te_n0";
    tb->rows_in = m.b.k_last ? m.n : m.kext, tb->cols_in = m.b.k_last ? m.kext : m.n;
    q->a_elems = ta->rows * ta->len, q->b_elems = tb->rows * tb->len;
    q->smem = m.stages * (q->a_elems + q->b_elems) * 2;
    if (q->smem > smem_limit(e->sm)) {
        kernel_error(e, s->mma->span,
                     "tensorize's tiles need %lld bytes of shared memory (%lld stages of %lld x "
                     "%lld and %lld x %lld); sm_%d allows a block %lld: take smaller tiles or fewer "
                     "stages",
                     (long long)q->smem, (long long)m.stages, (long long)ta->rows, (long long)ta->len,
                     (long long)tb->rows, (long long)tb->len, e->sm, (long long)smem_limit(e->sm));
        return false;
    }
    q->m = m;
    return true;
}

/* The loops over a lane's sums, te_acc[te_i][te_j][te_e], the last
 * header ending in END (its body's opening, or a line break). */
static void emit_mma_each_sum(Emitter *e, const MmaKernel *q, const char *end)
{
    cg_line(&e->p, "#pragma unroll\n");
    cg_line(&e->p, "for (int te_i = 0; te_i < %lld; te_i++)\n", (long long)q->mi);
    cg_line(&e->p, "    #pragma unroll\n");
    cg_line(&e->p, "    for (int te_j = 0; te_j < %lld; te_j++)\n", (long long)q->ni);
    cg_line(&e->p, "        #pragma unroll\n");
    cg_line(&e->p, "        for (int te_e = 0; te_e < 4; te_e++)%s", end);
}

/* The shared tiles, the thread's place in the block, its zeroed sums. */
static void emit_mma_decls(Emitter *e, const MmaKernel *q)
{
    use_smem(e, q->smem);
    if (e->dynamic_smem) {
        cg_line(&e->p, "unsigned short (*%s)[%lld] = (unsigned short (*)[%lld])te_smem;\n", q->ta.name,
                (long long)q->a_elems, (long long)q->a_elems);
        cg_line(&e->p, "unsigned short (*%s)[%lld] = (unsigned short (*)[%lld])(te_smem + %lld);\n",
                q->tb.name, (long long)q->b_elems, (long long)q->b_elems, (long long)(q->m.stages * q->a_elems * 2));
    } else {
        cg_line(&e->p, "__shared__ __align__(128) unsigned short %s[%lld][%lld];\n", q->ta.name,
                (long long)q->m.stages, (long long)q->a_elems);
        cg_line(&e->p, "__shared__ __align__(128) unsigned short %s[%lld][%lld];\n", q->tb.name,
                (long long)q->m.stages, (long long)q->b_elems);
    }
    cg_line(&e->p, "const int te_tid = (int)threadIdx.x, te_lane = te_tid %% 32, te_warp = te_tid / 32;\n");
    cg_line(&e->p, "/* the warp's tile of the block's, and the block's of C */\n");
    cg_line(&e->p, "const int te_wm = te_warp / %lld * %lld, te_wn = te_warp %% %lld * %lld;\n",
            (long long)q->warps_n, (long long)q->m.wm, (long long)q->warps_n, (long long)q->m.wn);
    cg_line(&e->p, "const int te_m0 = (int)blockIdx.y * %lld, te_n0 = (int)blockIdx.x * %lld;\n",
            (long long)q->m.bm, (long long)q->m.bn);
    cg_line(&e->p, "float te_acc[%lld][%lld][4]; /* the sums: mma tile (mi, ni), the lane's 4 */\n",
            (long long)q->mi, (long long)q->ni);
    emit_mma_each_sum(e, q, "\n");
    cg_line(&e->p, "            te_acc[te_i][te_j][te_e] = 0.0f;\n");

}

/* The k loop: the cp.async pipeline, and per 16 of k the fragments of A
 * and B read with ldmatrix into the warp's mma tiles. */
static void emit_mma_loop(Emitter *e, const MmaKernel *q)
{
    Arena *a = e->p.a;
    /* the pipeline: k steps 0 .. STAGES - 2 first */
    cg_line(&e->p, "/* k steps of %lld, %lld in all: the tiles of step te_kt + %lld are fetched "
                   "while step te_kt computes */\n",
            (long long)q->m.bk, (long long)q->nk, (long long)(q->m.stages - 1));
    cg_line(&e->p, "#pragma unroll\n");
    cg_line(&e->p, "for (int te_kt = 0; te_kt < %lld; te_kt++) {\n", (long long)(q->m.stages - 1));
    e->p.indent++;
    emit_mma_step_fetch(e, &q->ta, &q->tb, q->threads, q->nk, "te_kt");
    e->p.indent--;
    cg_line(&e->p, "}\n");
    cg_line(&e->p, "for (int te_k = 0; te_k < %lld; te_k++) {\n", (long long)q->nk);
    e->p.indent++;
    cg_line(&e->p, "te_cp_async_wait<%lld>(); /* step te_k's tiles have landed ... */\n",
            (long long)(q->m.stages - 2));
    cg_line(&e->p, "__syncthreads(); /* ... and every warp is done with step te_k - 1's slot */\n");
    cg_line(&e->p, "{\n");
    e->p.indent++;
    cg_line(&e->p, "const int te_kt = te_k + %lld;\n", (long long)(q->m.stages - 1));
    emit_mma_step_fetch(e, &q->ta, &q->tb, q->threads, q->nk,
                        arena_printf(a, "te_kt %% %lld", (long long)q->m.stages));
    e->p.indent--;
    cg_line(&e->p, "}\n");
    cg_line(&e->p, "const int te_s = te_k %% %lld;\n", (long long)q->m.stages);
    cg_line(&e->p, "#pragma unroll\n");
    cg_line(&e->p, "for (int te_kk = 0; te_kk < %lld; te_kk += 16) {\n", (long long)q->m.bk);
    e->p.indent++;
    cg_line(&e->p, "unsigned te_fa[%lld][4], te_fb[%lld][2];\n", (long long)q->mi, (long long)q->ni);
    /* A: matrix q = lane / 8 of a0..a3 is (rows + 8 (q & 1), k + 8 (q >> 1)) */
    cg_line(&e->p, "#pragma unroll\n");
    cg_line(&e->p, "for (int te_i = 0; te_i < %lld; te_i++)\n", (long long)q->mi);
    e->p.indent++;
    emit_mma_ldsm(e, &q->ta, q->m.a.k_last, "te_fa[te_i]", "te_wm + te_i * 16", "(te_lane >> 3 & 1)",
                  "(te_lane >> 4)");
    e->p.indent--;
    /* B, two n tiles at a time: matrix q is (k + 8 (q & 1), n + 8 (q >> 1)):
       b0, b1 of tile 2j, then of 2j + 1 */
    cg_line(&e->p, "#pragma unroll\n");
    cg_line(&e->p, "for (int te_j = 0; te_j < %lld; te_j += 2) {\n", (long long)q->ni);
    e->p.indent++;
    cg_line(&e->p, "unsigned te_r[4];\n");
    emit_mma_ldsm(e, &q->tb, q->m.b.k_last, "te_r", "te_wn + te_j * 8", "(te_lane >> 4)",
                  "(te_lane >> 3 & 1)");
    cg_line(&e->p, "te_fb[te_j][0] = te_r[0], te_fb[te_j][1] = te_r[1];\n");
    cg_line(&e->p, "te_fb[te_j + 1][0] = te_r[2], te_fb[te_j + 1][1] = te_r[3];\n");
    e->p.indent--;
    cg_line(&e->p, "}\n");
    cg_line(&e->p, "#pragma unroll\n");
    cg_line(&e->p, "for (int te_i = 0; te_i < %lld; te_i++)\n", (long long)q->mi);
    cg_line(&e->p, "    #pragma unroll\n");
    cg_line(&e->p, "    for (int te_j = 0; te_j < %lld; te_j++)\n", (long long)q->ni);
    cg_line(&e->p, "        te_mma_%s(te_acc[te_i][te_j], te_fa[te_i], te_fb[te_j]);\n", q->ty);
    e->p.indent--;
    cg_line(&e->p, "}\n");
    e->p.indent--;
    cg_line(&e->p, "}\n");
    cg_line(&e->p, "te_cp_async_wait<0>();\n");

}

/* Each lane's sums through S's epilogue to C, at the rows and columns the
 * mma's C fragment gives them. */
static void emit_mma_epilogue(Emitter *e, const SStage *s, const MmaKernel *q)
{
    Arena *a = e->p.a;
    /* the epilogue: the lane's sums c0, c1 are at (row g, columns 2t, 2t + 1)
       of its mma tile, c2, c3 at row g + 8 (g = lane / 4, t = lane % 4) */
    const char *vi = cg_var_name(&e->p, q->m.i), *vj = cg_var_name(&e->p, q->m.j);
    Acc acc = { .buf = s->tensor, .name = "te_v", .dtype = DT_F32 };
    Expr *idx[2];
    for (int d = 0; d < 2; d++) {
        idx[d] = arena_alloc(a, sizeof *idx[d]);
        *idx[d] = (Expr){ .kind = EX_VAR, .dtype = DT_I32, .var = d ? q->m.j : q->m.i };
    }
    acc.idx = idx;
    Expr *value = sch_mma_epilogue(a, s, idx);
    Stmt store = { .kind = S_STORE, .buf = s->tensor };
    Expr *at[2];
    for (int d = 0; d < 2; d++) {
        at[d] = arena_alloc(a, sizeof *at[d]);
        *at[d] = *idx[d];
    }
    store.index = at;
    store.value = value;
    emit_mma_each_sum(e, q, " {\n");
    e->p.indent += 3;
    cg_line(&e->p, "const %s %s = te_m0 + te_wm + te_i * 16 + (te_lane >> 2) + (te_e >> 1) * 8;\n",
            e->p.int_type, vi);
    cg_line(&e->p, "const %s %s = te_n0 + te_wn + te_j * 8 + (te_lane & 3) * 2 + (te_e & 1);\n",
            e->p.int_type, vj);
    cg_line(&e->p, "if (%s < %lld && %s < %lld) {\n", vi, (long long)q->m.m, vj, (long long)q->m.n);
    e->p.indent++;
    cg_line(&e->p, "const float %s = te_acc[te_i][te_j][te_e];\n", acc.name);
    e->acc = &acc;
    e->acc_mode = ACC_EPILOGUE;
    emit_store(e, &store);
    e->acc = NULL;
    e->acc_mode = ACC_OFF;
    e->p.indent--;
    cg_line(&e->p, "}\n");
    e->p.indent -= 3;
    cg_line(&e->p, "        }\n");
}

/* The kernel of a tensorized stage S: a block computes BM x BN of C, each
 * warp WM x WN of it as (WM / 16) x (WN / 8) mma.m16n8k16 tiles whose sums
 * stay in registers; the k steps' tiles of A and B are fetched STAGES - 1
 * steps ahead with cp.async into swizzled shared memory and read with
 * ldmatrix; then each sum goes through the stage's epilogue to C.  The
 * lowered nest BODY gives the kernel's parameters only. */
static void emit_mma_kernel(Emitter *e, CudaKernel *k, const SStage *s, const Stmt *body)
{
    MmaKernel q;
    if (!mma_plan(e, s, &q))
        return;
    const SchMma *m = &q.m;
    e->threads = q.threads;
    k->grid[0] = (unsigned)q.gx, k->grid[1] = (unsigned)q.gy, k->grid[2] = 1;
    k->block[0] = (unsigned)q.threads, k->block[1] = k->block[2] = 1;
    take_params(e, k, body);
    k->how = arena_printf(e->p.a, "tensor cores (mma.sync m16n8k16 %s, f32 sums): blocks of %lld x %lld, "
                                  "warps of %lld x %lld, k steps of %lld in %lld stages",
                          q.ty, (long long)m->bm, (long long)m->bn, (long long)m->wm, (long long)m->wn,
                          (long long)m->bk, (long long)m->stages);
    FILE *out = e->p.out;
    fprintf(out, "/* %s: stage '%s' on the tensor cores (mma.sync m16n8k16 %s, f32 sums): "
                 "blocks of %lld x %lld, warps of %lld x %lld, k steps of %lld in %lld stages; "
                 "grid (%lld, %lld, 1), block (%lld, 1, 1) */\n",
            k->name, s->name, q.ty, (long long)m->bm, (long long)m->bn, (long long)m->wm,
            (long long)m->wn, (long long)m->bk, (long long)m->stages, (long long)q.gx, (long long)q.gy,
            (long long)q.threads);
    emit_kernel_head(e, k);
    e->p.indent = 1;
    emit_mma_decls(e, &q);
    emit_mma_loop(e, &q);
    emit_mma_epilogue(e, s, &q);
    fputs("}\n\n", out);
    end_kernel(e);
}

/* The kernel of root stage S, whose nest is BODY. */
static void emit_kernel(Emitter *e, CudaKernel *k, const SStage *s, const Stmt *body)
{
    e->k = k;
    e->stage = s;
    memset(e->dims, 0, sizeof e->dims);
    memset(e->dim_loop, 0, sizeof e->dim_loop);
    memset(e->dim_size, 0, sizeof e->dim_size);
    e->dynamic_dims = false;
    e->shared = (PtrVec){0};
    e->locals = (PtrVec){0};
    e->pipes = (PtrVec){0};
    e->params = (PtrVec){0};
    e->written = (PtrVec){0};
    e->pending_bufs = (PtrVec){0};
    e->acc = NULL;
    e->pending = false;
    e->distributed = 0;
    e->counter = 0;
    e->names_mark = e->p.names.len;
    e->tensors_mark = e->p.tensors.len;
    if (s->mma) {
        emit_mma_kernel(e, k, s, body);
        return;
    }
    if (s->mma_why)
        k->how = arena_printf(e->p.a, "SIMT, not the tensor cores: %s", s->mma_why);

    const Loop *enclosing[GPU_AXIS_COUNT] = { NULL };
    find_dims(e, body, enclosing);
    for (int ax = 0; ax < GPU_AXIS_COUNT; ax++)
        if (e->dims[ax] == 0)
            e->dims[ax] = 1;
    for (int ax = 0; ax < GPU_AXIS_COUNT && !e->failed; ax++)
        if (e->dims[ax] > axis_limits[ax])
            kernel_error(e, e->dim_loop[ax]->kind_span,
                         "cannot bind '%s' of '%s' to %s: its extent %lld is more than the %lld CUDA allows; split it first",
                         e->dim_loop[ax]->name, s->name, sch_gpu_axis_name((GpuAxis)ax),
                         (long long)e->dims[ax], (long long)axis_limits[ax]);
    const int64_t *threads = &e->dims[GPU_THREAD_X]; /* x, y, z */
    const Loop *const *thread_loop = &e->dim_loop[GPU_THREAD_X];
    e->threads = threads[0] * threads[1] * threads[2];
    if (!e->failed && e->threads > 1024) {
        const Loop *l = thread_loop[0] ? thread_loop[0] : thread_loop[1] ? thread_loop[1] : thread_loop[2];
        kernel_error(e, l->kind_span,
                     "the blocks of '%s' would have %lld x %lld x %lld = %lld threads; CUDA allows 1024: bind shorter loops to the thread axes",
                     s->name, (long long)threads[0], (long long)threads[1], (long long)threads[2],
                     (long long)e->threads);
    }
    if (e->failed)
        return;
    for (int ax = 0; ax < 3; ax++) {
        k->grid[ax] = (unsigned)e->dims[GPU_BLOCK_X + ax];
        k->block[ax] = (unsigned)threads[ax];
        /* a block's threads are its loops' most; the grid's blocks, with
           run-time dims, what the launch's sizes make them */
        const SizeExpr *size = e->dim_size[GPU_BLOCK_X + ax];
        k->grid_size[ax] = size && size->kind != SZ_NUM ? size : NULL;
    }
    plan_buffers(e, body, true);
    e->acc = plan_acc(e, body);
    if (e->acc)
        e->acc->name = cg_claim(&e->p, arena_printf(e->p.a, "%s_acc", cg_c_identifier(e->p.a, s->name)));
    take_params(e, k, body);

    /* the body first, to know what its prologue needs */
    char *text = NULL;
    size_t len = 0;
    FILE *saved = e->p.out;
    e->p.out = open_memstream(&text, &len);
    if (!e->p.out)
        te_internal_error(__FILE__, __LINE__, "out of memory");
    e->p.indent = 1;
    emit_stmt(e, body, true);
    fclose(e->p.out);
    e->p.out = saved;

    FILE *out = e->p.out;
    fprintf(out, "/* %s: stage '%s'; grid (%s), block (%u, %u, %u) */\n", k->name, s->name,
            grid_text(e->p.a, k), k->block[0], k->block[1], k->block[2]);
    emit_kernel_head(e, k);
    emit_shared_decls(e);
    if (e->failed) {
        free(text);
        return;
    }
    if (strstr(text, "te_tid") && e->dims[GPU_THREAD_Y] == 1 && e->dims[GPU_THREAD_Z] == 1)
        cg_line(&e->p, "const int te_tid = (int)threadIdx.x; /* the thread's number in the block */\n");
    else if (strstr(text, "te_tid"))
        cg_line(&e->p, "const int te_tid = (int)(threadIdx.x + %lld * (threadIdx.y + %lld * threadIdx.z));\n",
                (long long)e->dims[GPU_THREAD_X], (long long)e->dims[GPU_THREAD_Y]);
    fputs(text, out);
    fputs("}\n\n", out);
    free(text);
    end_kernel(e);
}

/* ------------------------------------------------------------------ */
/* The translation unit.                                               */

/* The CUDA prelude around cfamily.c's math helpers (TE_DEVICE, their
 * qualifier, before; cp.async after), each piece printed where the
 * kernels use what it defines. */
static const CgHelper cuda_before[] = {
    { "TE_DEVICE", "#define TE_DEVICE static __device__ __forceinline__\n" },
};

/* cp.async (sm_80 and later): global to shared memory without a register.
 * Compiled for the host (tests/cudaemu.h) they are plain copies. */
static const CgHelper cuda_after[] = {
    { "TE_CP_ASYNC",
      "#if defined(__CUDA_ARCH__)\n"
      "#define TE_CP_ASYNC(kind, bytes)                                                 \\\n"
      "    asm volatile(\"cp.async.\" kind \".shared.global [%0], [%1], \" #bytes \";\\n\" \\\n"
      "                 :: \"r\"((unsigned)__cvta_generic_to_shared(shared)), \"l\"(global) : \"memory\")\n"
      "#else\n"
      "#define TE_CP_ASYNC(kind, bytes) memcpy(shared, global, bytes)\n"
      "#endif\n" },
    { "te_cp_async4", "TE_DEVICE void te_cp_async4(void *shared, const void *global) { TE_CP_ASYNC(\"ca\", 4); }\n" },
    { "te_cp_async8", "TE_DEVICE void te_cp_async8(void *shared, const void *global) { TE_CP_ASYNC(\"ca\", 8); }\n" },
    { "te_cp_async16", "TE_DEVICE void te_cp_async16(void *shared, const void *global) { TE_CP_ASYNC(\"cg\", 16); }\n" },
    { "te_cp_zfill16",
      "TE_DEVICE void te_cp_zfill16(void *shared, const void *global, bool valid)\n"
      "{\n"
      "#if defined(__CUDA_ARCH__)\n"
      "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\"\n"
      "                 :: \"r\"((unsigned)__cvta_generic_to_shared(shared)), \"l\"(global),\n"
      "                    \"r\"(valid ? 16 : 0) : \"memory\");\n"
      "#else\n"
      "    if (valid)\n"
      "        memcpy(shared, global, 16);\n"
      "    else\n"
      "        memset(shared, 0, 16);\n"
      "#endif\n"
      "}\n" },
    { "TE_LDSM",
      "#if defined(__CUDA_ARCH__)\n"
      "#define TE_LDSM(trans_suffix, trans)                                             \\\n"
      "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4\" trans_suffix \".shared.b16 \"  \\\n"
      "                 \"{%0, %1, %2, %3}, [%4];\\n\"                                \\\n"
      "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3])          \\\n"
      "                 : \"r\"((unsigned)__cvta_generic_to_shared(row)))\n"
      "#else\n"
      "#define TE_LDSM(trans_suffix, trans) te_emu_ldmatrix(r, 4, trans, row)\n"
      "#endif\n" },
    { "te_ldsm_x4", "TE_DEVICE void te_ldsm_x4(unsigned *r, const void *row) { TE_LDSM(\"\", false); }\n" },
    { "te_ldsm_t4", "TE_DEVICE void te_ldsm_t4(unsigned *r, const void *row) { TE_LDSM(\".trans\", true); }\n" },
    { "TE_MMA",
      "#if defined(__CUDA_ARCH__)\n"
      "#define TE_MMA(type, bf16)                                                       \\\n"
      "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.\" type \".\" type \".f32 \"   \\\n"
      "                 \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\" \\\n"
      "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])          \\\n"
      "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]))\n"
      "#else\n"
      "#define TE_MMA(type, bf16) te_emu_mma_m16n8k16(d, a, b, bf16)\n"
      "#endif\n" },
    { "te_mma_bf16",
      "TE_DEVICE void te_mma_bf16(float *d, const unsigned *a, const unsigned *b) { TE_MMA(\"bf16\", true); }\n" },
    { "te_mma_f16",
      "TE_DEVICE void te_mma_f16(float *d, const unsigned *a, const unsigned *b) { TE_MMA(\"f16\", false); }\n" },
    { "te_cp_async_commit",
      "TE_DEVICE void te_cp_async_commit()\n"
      "{\n"
      "#if defined(__CUDA_ARCH__)\n"
      "    asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n"
      "#endif\n"
      "}\n" },
    { "te_cp_async_wait",
      "template <int N> TE_DEVICE void te_cp_async_wait()\n"
      "{\n"
      "#if defined(__CUDA_ARCH__)\n"
      "    asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(N) : \"memory\");\n"
      "#endif\n"
      "}\n" },
};

/* What the program's values need: wide indices, f16, bf16. */
static void scan_expr(Emitter *e, const Expr *x, bool *wide)
{
    if (x->dtype == DT_F16)
        e->fp16 = true;
    if (x->dtype == DT_BF16)
        e->bf16 = true;
    if (x->kind == EX_LOAD && x->tensor->dtype == DT_I32)
        *wide = true;
    if (x->kind == EX_OP && x->op == OP_CAST && x->dtype == DT_I32)
        *wide = true;
    if (x->kind == EX_LOAD && tensor_elems(x->tensor) >= ((int64_t)1 << 31))
        *wide = true;
    for (int i = 0; i < x->nargs; i++)
        scan_expr(e, x->args[i], wide);
}

static void scan_stmt(Emitter *e, const Stmt *s, bool *wide)
{
    if (!s)
        return;
    switch (s->kind) {
    case S_FLASH: /* a cpu kernel: sched/flash.c refuses cuda */
        TE_UNREACHABLE();
    case S_FOR:
        scan_expr(e, s->min, wide);
        scan_expr(e, s->extent, wide);
        scan_stmt(e, s->body, wide);
        return;
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            scan_stmt(e, s->stmts[i], wide);
        return;
    case S_IF:
        scan_expr(e, s->cond, wide);
        scan_stmt(e, s->body, wide);
        return;
    case S_ALLOC:
        scan_stmt(e, s->body, wide);
        return;
    case S_STORE:
        scan_expr(e, s->value, wide);
        for (int d = 0; d < s->buf->rank; d++)
            scan_expr(e, s->index[d], wide);
        if (s->buf->dtype == DT_F16)
            e->fp16 = true;
        if (s->buf->dtype == DT_BF16)
            e->bf16 = true;
        if (s->buf->dtype == DT_I32 || tensor_elems(s->buf) >= ((int64_t)1 << 31))
            *wide = true;
        return;
    }
}

bool cg_cuda_emit(SchedState *st, const LoweredFunc *fn, const CodegenOptions *co,
                  const char *arch, int sm, CudaProgram *out)
{
    CgVariant v = { st, fn, NULL, NULL, NULL };
    return cg_cuda_emit_variants(&v, 1, co, arch, sm, out);
}

/* Makes variant V's state the one names come from: its variables get
 * fresh names, but for the run-time dims' (every variant calls them the
 * same). */
static void use_variant(Emitter *e, const CgVariant *v)
{
    SchedState *st = v->st;
    e->st = st;
    e->p.var_names = arena_alloc(e->p.a, sizeof *e->p.var_names * (size_t)(st->next_var + 1));
    e->p.nvars = st->next_var + 1;
    e->p.var_text = arena_alloc(e->p.a, sizeof *e->p.var_text * (size_t)(st->next_var + 1));
    for (int k = 0; k < e->nrt; k++)
        e->p.var_names[sch_dim_var(st, e->rt_dims[k])->id] = e->rt_names[k];
}

bool cg_cuda_emit_variants(const CgVariant *variants, int nvariants, const CodegenOptions *co,
                           const char *arch, int sm, CudaProgram *out)
{
    SchedState *st = variants[0].st;
    Arena *a = st->arena;
    const Graph *g = st->g;
    Emitter e = { .p = { .a = a, .d = &cg_dialect_cuda, .element = load_element, .computed = computed },
                  .st = st, .src = g->src, .sm = sm };
    /* the declared run-time dims: every variant's variable of each, made
       before the names' tables are sized */
    int *rt_dims = arena_alloc(a, sizeof *rt_dims * (size_t)(g->ndims + 1));
    for (int d = 0; d < g->ndims; d++)
        if (g->dims[d].runtime && g->dims[d].declared) {
            rt_dims[e.nrt++] = d;
            for (int i = 0; i < nvariants; i++)
                sch_dim_var(variants[i].st, d);
        }
    e.rt_dims = rt_dims;
    e.rt_names = arena_alloc(a, sizeof *e.rt_names * (size_t)(e.nrt + 1));
    bool wide = false;
    for (int i = 0; i < nvariants; i++)
        scan_stmt(&e, variants[i].fn->body, &wide);
    for (int i = 0; i < g->ninputs; i++) {
        e.fp16 = e.fp16 || g->inputs[i]->dtype == DT_F16;
        e.bf16 = e.bf16 || g->inputs[i]->dtype == DT_BF16;
    }
    e.p.int_type = wide ? "long long" : "int";

    /* names used by every kernel: the entry's, the run-time dims', the
       tensors' */
    cg_claim(&e.p, co->name);
    for (int k = 0; k < e.nrt; k++)
        e.rt_names[k] = cg_claim(&e.p, cg_c_identifier(a, g->dims[rt_dims[k]].name));
    for (int i = 0; i < g->ninputs; i++)
        cg_tensor_name(&e.p, g->inputs[i]);
    for (int i = 0; i < g->noutputs; i++)
        cg_tensor_name(&e.p, g->outputs[i]);

    /* each variant's root stages, one kernel each, and their nests */
    const SStage ***roots = arena_alloc(a, sizeof *roots * (size_t)nvariants);
    const Stmt ***bodies = arena_alloc(a, sizeof *bodies * (size_t)nvariants);
    CudaVariant *cv = arena_alloc(a, sizeof *cv * (size_t)nvariants);
    int n = 0;
    for (int i = 0; i < nvariants; i++) {
        const LoweredFunc *fn = variants[i].fn;
        cv[i].first = n;
        cv[i].nkernels = cg_kernel_steps(a, variants[i].st, fn, &roots[i], &bodies[i]);
        n += cv[i].nkernels;
        WorkspacePlan plan;
        if (!cg_plan_workspace(a, variants[i].st, fn, &plan))
            return false;
        /* temps that are never live at once share bytes (workspace.c) */
        cv[i].ntemps = fn->temps.len;
        cv[i].temps = arena_alloc(a, sizeof *cv[i].temps * (size_t)(fn->temps.len + 1));
        cv[i].temp_offsets = arena_alloc(a, sizeof *cv[i].temp_offsets * (size_t)(fn->temps.len + 1));
        for (int t = 0; t < fn->temps.len; t++) {
            cv[i].temps[t] = fn->temps.items[t];
            cv[i].temp_offsets[t] = plan.bufs[t].offset;
            cg_tensor_name(&e.p, fn->temps.items[t]);
        }
        if (i == 0 || plan.bytes > out->workspace_bytes)
            out->workspace_bytes = plan.bytes;
    }
    CudaKernel *kernels = arena_alloc(a, sizeof *kernels * (size_t)(n + 1));
    for (int i = 0; i < nvariants; i++)
        for (int k = 0; k < cv[i].nkernels; k++) {
            CudaKernel *kk = &kernels[cv[i].first + k];
            const char *stage = cg_c_identifier(a, roots[i][k]->name);
            kk->name = cg_claim(&e.p, nvariants > 1 ? arena_printf(a, "%s_%s_v%d", co->name, stage, i)
                                                    : arena_printf(a, "%s_%s", co->name, stage));
            kk->stage = roots[i][k]->name;
            kk->variant = i;
        }

    char *text = NULL;
    size_t len = 0;
    e.p.out = open_memstream(&text, &len);
    if (!e.p.out)
        te_internal_error(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < nvariants && !e.failed; i++) {
        use_variant(&e, &variants[i]);
        const LoweredFunc *fn = variants[i].fn;
        PtrVec order = {0};
        for (int t = 0; t < g->ninputs; t++)
            vec_push(a, &order, g->inputs[t]);
        for (int t = 0; t < g->noutputs; t++)
            vec_push(a, &order, g->outputs[t]);
        for (int t = 0; t < fn->temps.len; t++)
            vec_push(a, &order, fn->temps.items[t]);
        e.order = &order;
        e.order_at = (PtrMap){0};
        for (int t = 0; t < order.len; t++)
            map_put(a, &e.order_at, order.items[t], t);
        if (nvariants > 1)
            fprintf(e.p.out, "/* variant %d: %s */\n\n", i, sch_bucket_str(a, g, variants[i].bucket));
        for (int k = 0; k < cv[i].nkernels && !e.failed; k++)
            emit_kernel(&e, &kernels[cv[i].first + k], roots[i][k], bodies[i][k]);
    }
    fclose(e.p.out);
    if (e.failed) {
        free(text);
        return false;
    }

    /* the translation unit: a header comment, includes, helpers, kernels */
    char *unit = NULL;
    size_t unit_len = 0;
    FILE *u = open_memstream(&unit, &unit_len);
    if (!u)
        te_internal_error(__FILE__, __LINE__, "out of memory");
    fprintf(u, "/* %s.cu — generated by texc %s from %s.\n", co->name, TE_VERSION, co->source_path);
    fprintf(u, " * target: cuda, %s (CUDA C++ for NVRTC); indices are %s\n", arch, e.p.int_type);
    if (e.nrt) {
        fputs(" * run-time sizes, every kernel's first parameters:", u);
        for (int k = 0; k < e.nrt; k++) {
            const Dim *d = &g->dims[rt_dims[k]];
            fprintf(u, "%s %s in %lld..%lld", k ? "," : "", e.rt_names[k], (long long)d->lo, (long long)d->hi);
        }
        fputc('\n', u);
    }
    for (int i = 0; i < nvariants; i++) {
        if (nvariants > 1)
            fprintf(u, " * variant %d, %s:\n", i, sch_bucket_str(a, g, variants[i].bucket));
        CodegenOptions vo = *co;
        if (nvariants > 1)
            vo.schedule_from = variants[i].from;
        cg_print_schedule_comment(u, variants[i].st, &vo);
    }
    fputs(" * kernels, in launch order:\n", u);
    for (int i = 0; i < n; i++) {
        CudaKernel *k = &kernels[i];
        fprintf(u, " *   %s: grid (%s), block (%u, %u, %u)", k->name, grid_text(a, k), k->block[0],
                k->block[1], k->block[2]);
        if (k->static_smem || k->dyn_smem)
            fprintf(u, ", %u bytes of %s shared memory", k->static_smem + k->dyn_smem,
                    k->dyn_smem ? "dynamic" : "static");
        fputc('\n', u);
    }
    fputs(" * Do not edit: regenerate with texc.\n */\n", u);
    if (e.fp16)
        fputs("#include <cuda_fp16.h>\n", u);
    if (e.bf16)
        fputs("#include <cuda_bf16.h>\n", u);
    if (e.fp16 || e.bf16)
        fputc('\n', u);
    cg_print_helpers(&e.p, u, cuda_before, (int)(sizeof cuda_before / sizeof cuda_before[0]),
                     cuda_after, (int)(sizeof cuda_after / sizeof cuda_after[0]), text);
    fputc('\n', u);
    fwrite(text, 1, len, u);
    fclose(u);
    free(text);
    out->source = arena_strdup(a, unit);
    free(unit);

    out->kernels = kernels;
    out->nkernels = n;
    out->variants = cv;
    out->nvariants = nvariants;
    out->ntemps = cv[0].ntemps;
    out->temps = cv[0].temps;
    out->temp_offsets = cv[0].temp_offsets;
    out->int_type = e.p.int_type;
    out->nrt = e.nrt;
    out->rt_dims = rt_dims;
    out->rt_names = e.rt_names;
    return true;
}

bool cg_cuda_fits(SchedState *st, const LoweredFunc *fn, int sm)
{
    CodegenOptions co = { .name = "texc_kernel", .source_path = "", .target = TARGET_CUDA };
    CudaProgram prog;
    return cg_cuda_emit(st, fn, &co, arena_printf(st->arena, "sm_%d", sm), sm, &prog);
}

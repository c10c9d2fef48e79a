/* mma.c — tensorize: which stages the tensor cores can compute, with
 * which tiles, and the primitive's checks.
 *
 * requires: a SchedState for target cuda.
 * guarantees: sch_mma_match accepts exactly the stages codegen/cuda.c's
 * tensor-core kernel computes right at every size: a root sum over one
 * axis k of f32(A) * f32(B) into a rank-2 stage C[i, j], A and B global f16
 * or bf16 tensors of rank 2 read at plain [i, k] / [k, i] and [k, j] /
 * [j, k], the unit-stride extent of each a multiple of 8 (a 16-byte
 * cp.async moves whole rows' pieces: a piece is all in bounds or all out,
 * and out of bounds it is zeros, which add nothing), every size static.
 * Any epilogue on C is the kernel's, element by element.  sch_tensorize
 * refuses tiles the kernel cannot run (warps that do not divide the
 * block, a warp tile not made of 16 x 16 pieces, more than 1024 threads)
 * at the statement, and any other statement on a tensorized stage.
 *
 * Where a stage does not match, the reason is one sentence, which -v
 * prints for the default schedule (it then falls back to the SIMT tile)
 * and the error of a tensorize the file wrote quotes.
 */
#include <string.h>

#include "sched/sched.h"

/* X is f32(LOAD) of an f16 or bf16 tensor: that load. */
static const Expr *widened_load(const Expr *x)
{
    if (x->kind != EX_OP || x->op != OP_CAST || x->dtype != DT_F32)
        return NULL;
    const Expr *l = x->args[0];
    if (l->kind != EX_LOAD || (l->dtype != DT_F16 && l->dtype != DT_BF16))
        return NULL;
    return l;
}

/* Is tensor T in global memory for the whole kernel: an input, or a stage
 * the default schedule leaves a kernel of its own (an output or a
 * reduction: it inlines every other stage, changing the reader's value). */
static bool global_operand(SchedState *st, const Tensor *t)
{
    if (t->kind == TK_INPUT)
        return true;
    const SStage *p = sch_stage_of(st, t);
    return p && !p->inlined && !p->attach && p->scope == SCOPE_GLOBAL &&
           (p->is_reduce || t->is_output);
}

/* LOAD's index d is the plain variable V. */
static bool index_is(const Expr *load, int d, const IterVar *v)
{
    return load->args[d]->kind == EX_VAR && load->args[d]->var == v;
}

/* Fills OP from LOAD, which must read [OTHER, k] or [k, OTHER]. */
static bool operand(SchedState *st, const Expr *load, IterVar *other, IterVar *k, SchMmaOperand *op,
                    const char **why)
{
    const Tensor *t = load->tensor;
    if (t->rank != 2 || load->nargs != 2)
        return false;
    bool k_last = index_is(load, 1, k) && index_is(load, 0, other);
    bool k_first = index_is(load, 0, k) && index_is(load, 1, other);
    if (!k_last && !k_first)
        return false;
    if (!global_operand(st, t)) {
        *why = arena_printf(st->arena, "'%s' is not in global memory when the kernel runs", t->name);
        return false;
    }
    if (t->shape_size[0] || t->shape_size[1]) {
        *why = arena_printf(st->arena, "'%s' has a run-time size", t->name);
        return false;
    }
    op->t = t;
    op->k_last = k_last;
    op->len = t->shape[1];
    if (k_last && k->extent % 8 != 0) {
        *why = arena_printf(st->arena,
                            "its reduction runs over %lld values of '%s''s rows, not a multiple of 8 "
                            "(cp.async stages 16 bytes at a time)",
                            (long long)k->extent, t->name);
        return false;
    }
    if (op->len % 8 != 0) {
        *why = arena_printf(st->arena,
                            "the rows of '%s' are %lld elements, not a multiple of 8 (cp.async "
                            "stages 16 bytes at a time)",
                            t->name, (long long)op->len);
        return false;
    }
    return true;
}

bool sch_mma_match(SchedState *st, const SStage *s, SchMma *m, const char **why)
{
    const char *no = NULL;
    if (!why)
        why = &no;
    *why = "it is not a sum over one axis of f32(a[i, k]) * f32(b[k, j]) with f16 or bf16 "
           "operands into a 2-D stage";
    if (st->target != TARGET_CUDA) {
        *why = "tensor cores are a cuda target's";
        return false;
    }
    if (!s->is_reduce || s->reducer != RED_SUM || s->nrvars != 1 || s->nsvars != 2 ||
        s->tensor->rank != 2 || !s->value || s->value->kind != EX_OP || s->value->op != OP_MUL ||
        s->value->dtype != DT_F32)
        return false;
    if (s->attach || s->inlined || s->cache_written) {
        *why = "it is not a kernel of its own";
        return false;
    }
    IterVar *i = s->svars[0], *j = s->svars[1], *k = s->rvars[0];
    if (i->extent_size || j->extent_size || k->extent_size || s->tensor->shape_size[0] ||
        s->tensor->shape_size[1]) {
        *why = "its sizes are run-time sizes";
        return false;
    }
    const Expr *x = widened_load(s->value->args[0]), *y = widened_load(s->value->args[1]);
    if (!x || !y) {
        const Expr *p = s->value->args[0], *q = s->value->args[1];
        if (p->kind == EX_LOAD && q->kind == EX_LOAD && p->dtype == DT_F32 && q->dtype == DT_F32)
            *why = "its operands are f32: the tensor cores take f16 or bf16 (tf32 would round "
                   "the operands: it is not used)";
        return false;
    }
    if (x->dtype != y->dtype) {
        *why = "its operands are f16 and bf16: an mma multiplies one type";
        return false;
    }
    const char *bad = NULL;
    SchMma r = { 0 };
    /* A reads i and k, B reads k and j, in the product's either order */
    if (!(operand(st, x, i, k, &r.a, &bad) && operand(st, y, j, k, &r.b, &bad)) &&
        !(operand(st, y, i, k, &r.a, &bad) && operand(st, x, j, k, &r.b, &bad))) {
        if (bad)
            *why = bad;
        return false;
    }
    if (k->lo != 0 || i->lo != 0 || j->lo != 0)
        return false;
    r.bf16 = x->dtype == DT_BF16;
    r.i = i, r.j = j, r.k = k;
    r.m = i->extent, r.n = j->extent, r.kext = k->extent;
    /* the tiles keep their sizes: only the match is new */
    r.bm = m->bm, r.bn = m->bn, r.wm = m->wm, r.wn = m->wn, r.bk = m->bk, r.stages = m->stages;
    r.span = m->span;
    *m = r;
    *why = NULL;
    return true;
}

bool sch_mma_usable(SchedState *st, const SStage *s, SchMma *m, const char **why)
{
    const char *no = NULL;
    if (!why)
        why = &no;
    if (!sch_mma_match(st, s, m, why))
        return false;
    if (st->sm >= SCH_MMA_MIN_SM)
        return true;
    *why = st->sm ? arena_printf(st->arena, "sm_%d has no mma.sync.m16n8k16 (sm_%d and later)", st->sm,
                                 SCH_MMA_MIN_SM)
                  : "the architecture is not known when the schedule is made";
    return false;
}

void sch_mma_default(SchMma *m, int sm)
{
    (void)sm;
    /* 128 x 128 blocks of four 64 x 64 warps keep 8 x 8 sums of 16 x 8 in
       each warp's registers (128 floats a thread); where fewer such blocks
       than an H100 or A100 has multiprocessors (108 to 132) would run,
       64 x 64 blocks of four 32 x 32 warps fill more of them */
    int64_t blocks = ((m->m + 127) / 128) * ((m->n + 127) / 128);
    bool small = blocks < 108;
    m->bm = m->bn = small ? 64 : 128;
    m->wm = m->wn = small ? 32 : 64;
    m->bk = 32;
    m->stages = small ? 4 : 3;
}

void sch_template_cuda_mma(SchEmit *e, const SchMma *m)
{
    SchedStmt *st = sch_emit(e, "tensorize", 6);
    int64_t v[6] = { m->bm, m->bn, m->wm, m->wn, m->bk, m->stages };
    for (int i = 0; i < 6; i++)
        st->args[i] = (SchedArg){ .kind = SA_INT, .span = e->span, .ival = v[i] };
}

bool sch_tensorize(SchedState *st, SStage *s, const SchedStmt *stmt)
{
    const Source *src = st->g->src;
    SchMma *m = arena_alloc(st->arena, sizeof *m);
    int64_t v[6] = { 0, 0, 0, 0, 32, 3 };
    for (int i = 0; i < stmt->nargs && i < 6; i++)
        v[i] = sch_arg_int(&stmt->args[i]);
    m->bm = v[0], m->bn = v[1], m->wm = v[2], m->wn = v[3], m->bk = v[4], m->stages = v[5];
    m->span = stmt->span;
    /* (on cpu, sch_check refused it; sch_mma_match would too) */
    if (s->scheduled || s->mma) {
        diag_error(src, stmt->prim_span,
                   "tensorize takes the whole of stage '%s': an earlier statement scheduled its "
                   "loops; remove them, or this",
                   s->name);
        return false;
    }
    const char *why;
    if (!sch_mma_match(st, s, m, &why)) {
        diag_error(src, stmt->stage_span, "cannot tensorize '%s': %s", s->name, why);
        return false;
    }
    const SchedArg *a = stmt->args;
    for (int i = 0; i < 4; i++)
        if (v[i] < 16 || v[i] % 16 != 0 || v[i] > 256) {
            diag_error(src, a[i].span,
                       "tensorize's tiles are multiples of 16 from 16 to 256 (an mma is 16 x 8 "
                       "x 16, and B's fragments are read two at a time), got %lld",
                       (long long)v[i]);
            return false;
        }
    if (m->bm % m->wm != 0 || m->bn % m->wn != 0) {
        diag_error(src, a[m->bm % m->wm ? 2 : 3].span,
                   "the warps' tile %lld x %lld does not divide the block's %lld x %lld",
                   (long long)m->wm, (long long)m->wn, (long long)m->bm, (long long)m->bn);
        return false;
    }
    int64_t threads = 32 * (m->bm / m->wm) * (m->bn / m->wn);
    if (threads > 1024) {
        diag_error(src, a[2].span,
                   "a block of %lld x %lld in warps of %lld x %lld is %lld threads; CUDA allows "
                   "1024: take larger warp tiles",
                   (long long)m->bm, (long long)m->bn, (long long)m->wm, (long long)m->wn,
                   (long long)threads);
        return false;
    }
    if (stmt->nargs > 4 && (m->bk < 16 || m->bk % 16 != 0 || m->bk > 128)) {
        diag_error(src, a[4].span, "tensorize's k step is a multiple of 16 from 16 to 128, got %lld",
                   (long long)m->bk);
        return false;
    }
    if (stmt->nargs > 5 && (m->stages < 2 || m->stages > 8)) {
        diag_error(src, a[5].span, "tensorize's pipeline needs 2 to 8 stages, got %lld",
                   (long long)m->stages);
        return false;
    }
    s->mma = m;
    return true;
}

/* X with every load of T replaced by one at IDX. */
static Expr *reindexed(Arena *a, const Expr *x, const Tensor *t, Expr **idx)
{
    Expr *c = arena_alloc(a, sizeof *c);
    *c = *x;
    if (x->kind == EX_LOAD && x->tensor == t) {
        c->args = idx;
        return c;
    }
    if (x->nargs > 0) {
        c->args = arena_alloc(a, sizeof *c->args * (size_t)x->nargs);
        for (int i = 0; i < x->nargs; i++)
            c->args[i] = reindexed(a, x->args[i], t, idx);
    }
    return c;
}

Expr *sch_mma_epilogue(Arena *a, const SStage *s, Expr **idx)
{
    if (s->epilogue)
        return reindexed(a, s->epilogue, s->tensor, idx);
    Expr *l = arena_alloc(a, sizeof *l);
    *l = (Expr){ .kind = EX_LOAD, .dtype = s->tensor->dtype, .tensor = s->tensor, .args = idx,
                 .nargs = 2 };
    return l;
}

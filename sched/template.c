/* template.c — the schedule templates: every form texc gives a stage's
 * loops, each written once as a function of a few numbers.
 *
 * A template appends ordinary statements for one stage to a Schedule (so
 * they print, replay and mutate like written ones).  Its numbers (an
 * SchMicro, an SchCudaTile, ...) pick the point of the form; its names (an
 * SchLoops) are the stage's loops and the loops and stages the statements
 * create, chosen by the caller, since the two callers name them by their
 * own rules:
 *   - sched/default.c and sched/default_cuda.c, the default schedule: the
 *     micro-kernel and the two CUDA forms at the default's point;
 *   - tuner/space.c, the automatic search space: every form at every
 *     point its legality rules let through.
 * A template checks nothing: the callers keep its numbers to what
 * sch_apply accepts (a split's factor at least 1, a ko for staging, ...).
 * The CPU forms are documented in tuner/space.c's top comment (their
 * parameters are the tuner's), the CUDA ones in sched/default_cuda.c's.
 *
 * Also here, since both callers need them and only the forms give them
 * meaning: which form a root stage takes (sch_form_of), and the names
 * the tuner's points give the loops and stages a form creates
 * (sch_template_names: fresh among the stage's, so that any point of the
 * space applies; the default's are shorter and its own, printed as they
 * always were into every generated file).
 */
#include <string.h>

#include "sched/sched.h"

SchedArg sch_name_arg(const char *name)
{
    return (SchedArg){ .kind = SA_NAME, .name = name };
}

static SchedArg int_arg(int64_t v)
{
    return (SchedArg){ .kind = SA_INT, .ival = v };
}

SchedStmt *sch_emit(SchEmit *e, const char *prim, int nargs)
{
    Arena *a = e->arena;
    SchedStmt *s = arena_alloc(a, sizeof *s);
    s->span = s->stage_span = s->prim_span = e->span;
    s->stage = e->stage;
    s->prim = prim;
    s->args = arena_alloc(a, sizeof *s->args * (size_t)(nargs + 1));
    s->nargs = nargs;
    s->outs = arena_alloc(a, sizeof *s->outs * 4);
    s->out_spans = arena_alloc(a, sizeof *s->out_spans * 4);
    sch_add_stmt(a, e->sched, s);
    return s;
}

/* S.PRIM(LOOP) */
static void emit_loop(SchEmit *e, const char *prim, const char *loop)
{
    sch_emit(e, prim, 1)->args[0] = sch_name_arg(loop);
}

static void emit_split(SchEmit *e, const char *loop, int64_t factor, const char *outer,
                       const char *inner)
{
    SchedStmt *s = sch_emit(e, "split", 2);
    s->args[0] = sch_name_arg(loop);
    s->args[1] = int_arg(factor);
    s->outs[0] = outer;
    s->outs[1] = inner;
    s->nouts = 2;
}

static void emit_fuse(SchEmit *e, const char *x, const char *y, const char *fused)
{
    SchedStmt *s = sch_emit(e, "fuse", 2);
    s->args[0] = sch_name_arg(x);
    s->args[1] = sch_name_arg(y);
    s->outs[0] = fused;
    s->nouts = 1;
}

static void emit_bind(SchEmit *e, const char *loop, GpuAxis axis)
{
    SchedStmt *s = sch_emit(e, "bind", 2);
    s->args[0] = sch_name_arg(loop);
    s->args[1] = sch_name_arg(sch_gpu_axis_name(axis));
}

void sch_stage_loops(Arena *a, const SStage *s, SchLoops *l)
{
    l->svar = arena_alloc(a, sizeof *l->svar * (size_t)(s->nsvars + 1));
    l->sext = arena_alloc(a, sizeof *l->sext * (size_t)(s->nsvars + 1));
    l->rvar = arena_alloc(a, sizeof *l->rvar * (size_t)(s->nrvars + 1));
    for (int d = 0; d < s->nsvars; d++) {
        l->svar[d] = s->svars[d]->name;
        l->sext[d] = s->svars[d]->extent;
    }
    for (int d = 0; d < s->nrvars; d++)
        l->rvar[d] = s->rvars[d]->name;
    l->nsvars = s->nsvars;
    l->nrvars = s->nrvars;
}

/* S.reorder(LOOPS...), N of them. */
static void emit_reorder(SchEmit *e, const char *const *loops, int n)
{
    SchedStmt *r = sch_emit(e, "reorder", n);
    for (int x = 0; x < n; x++)
        r->args[x] = sch_name_arg(loops[x]);
}

/* PAR 0: FIRST parallel; 1: FIRST and SECOND fused into L->fused, that
 * parallel; 2: nothing (serial). */
static void emit_parallel(SchEmit *e, const SchLoops *l, const char *first, const char *second,
                          int par)
{
    if (par == 0) {
        emit_loop(e, "parallel", first);
    } else if (par == 1) {
        emit_fuse(e, first, second, l->fused);
        emit_loop(e, "parallel", l->fused);
    }
}

/* The loops AXES (N, adjacent, outermost first) fused into one, the
 * fused loops called NAMES[0..n-2]; the name of the whole. */
static const char *emit_fuse_axes(SchEmit *e, const char *const *axes, int n,
                                  const char *const *names)
{
    const char *f = axes[0];
    for (int d = 1; d < n; d++) {
        emit_fuse(e, f, axes[d], names[d - 1]);
        f = names[d - 1];
    }
    return f;
}

/* The micro-kernel:
 *   acc = S.cache_write(local);
 *   S.tile(i, j, ti, tj) -> io, jo, ii, ji;
 *   S.reorder(batch.., io, jo, ii, ji);     order 2: jo before io
 *   S.fuse(io, jo) -> f;                    par 1 (before compute_at,
 *                                           which pins the loop it names)
 *   acc.compute_at(S, jo);                  (the inner tile loop, or f)
 *   acc.reorder(k.., i, j); acc.unroll(i); acc.vectorize(j);
 *   pl = W.cache_read(local, acc); pl.compute_at(S, jo);   (panel_of W)
 *   pl.vectorize(its innermost loop);
 *   S.vectorize(ji); S.parallel(the outermost loop, or f); */
void sch_template_micro(SchEmit *e, const SchLoops *l, const SchMicro *m)
{
    const char *i = l->svar[l->nsvars - 2], *j = l->svar[l->nsvars - 1];
    SchedStmt *cw = sch_emit(e, "cache_write", 1);
    cw->args[0] = sch_name_arg("local");
    cw->result = l->acc;
    SchedStmt *t = sch_emit(e, "tile", 4);
    t->args[0] = sch_name_arg(i);
    t->args[1] = sch_name_arg(j);
    t->args[2] = int_arg(m->ti);
    t->args[3] = int_arg(m->tj);
    t->outs[0] = l->io;
    t->outs[1] = l->jo;
    t->outs[2] = l->ii;
    t->outs[3] = l->ji;
    t->nouts = 4;
    const char *outer = m->order == 2 ? l->jo : l->io;
    const char *inner = m->order == 2 ? l->io : l->jo;
    if (m->reorder_all) {
        const char *loops[TE_MAX_RANK + 4];
        int n = 0;
        for (int b = 0; b < l->nsvars - 2; b++)
            loops[n++] = l->svar[b];
        loops[n++] = outer;
        loops[n++] = inner;
        loops[n++] = l->ii;
        loops[n++] = l->ji;
        emit_reorder(e, loops, n);
    } else if (m->order == 2) {
        emit_reorder(e, (const char *[]){ outer, inner }, 2);
    }
    /* a batch loop of one iteration (an image, a batch of one) has no
       work to share: the first with more, else the outer tile loop */
    const char *at = inner, *par = outer;
    for (int b = 0; b < l->nsvars - 2; b++)
        if (!l->sext || l->sext[b] > 1) {
            par = l->svar[b];
            break;
        }
    if (m->par == 1) {
        emit_fuse(e, outer, inner, l->fused);
        at = par = l->fused;
    }
    const char *stage = e->stage;
    e->stage = l->acc;
    SchedStmt *ca = sch_emit(e, "compute_at", 2);
    ca->args[0] = sch_name_arg(stage);
    ca->args[1] = sch_name_arg(at);
    const char *acc_order[TE_MAX_RANK + 2];
    int n = 0;
    for (int k = 0; k < l->nrvars; k++)
        acc_order[n++] = l->rvar[k];
    acc_order[n++] = i;
    acc_order[n++] = j;
    emit_reorder(e, acc_order, n);
    emit_loop(e, "unroll", i);
    emit_loop(e, "vectorize", j);
    if (l->nrvars > 0) {
        /* the panel's lines SCH_MICRO_PREFETCH k-steps ahead (codegen/c.c) */
        SchedStmt *p = sch_emit(e, "prefetch", 2);
        p->args[0] = sch_name_arg(l->rvar[l->nrvars - 1]);
        p->args[1] = int_arg(SCH_MICRO_PREFETCH);
    }
    if (m->panel_of) {
        e->stage = m->panel_of;
        SchedStmt *cr = sch_emit(e, "cache_read", 2);
        cr->args[0] = sch_name_arg("local");
        cr->args[1] = sch_name_arg(l->acc);
        cr->result = m->panel;
        e->stage = m->panel;
        SchedStmt *pa = sch_emit(e, "compute_at", 2);
        pa->args[0] = sch_name_arg(stage);
        pa->args[1] = sch_name_arg(outer);
        emit_loop(e, "vectorize", m->panel_j);
    }
    e->stage = stage;
    emit_loop(e, "vectorize", l->ji);
    emit_loop(e, "parallel", par);
}

/* The loop nest:
 *   S.split(j, tj) -> jo, ji; S.split(i, ti) -> io, ii;   (ti > 1)
 *   S.split(k, tk) -> ko, ki;                            (tk > 0)
 *   S.reorder(batch.., the order's loops);
 *   S.unroll(ii); S.unroll(ki); S.vectorize(ji);          (as asked)
 *   the outermost loop (or the two outermost, fused) parallel */
void sch_template_loop_nest(SchEmit *e, const SchLoops *l, const SchLoopNest *m)
{
    const char *i = l->svar[l->nsvars - 2], *j = l->svar[l->nsvars - 1];
    const char *k = l->rvar[l->rsplit];
    emit_split(e, j, m->tj, l->jo, l->ji);
    const char *io = i, *ii = NULL, *ko = k, *ki = NULL;
    if (m->ti > 1) {
        emit_split(e, i, m->ti, l->io, l->ii);
        io = l->io;
        ii = l->ii;
    }
    if (m->tk > 0) {
        emit_split(e, k, m->tk, l->ko, l->ki);
        ko = l->ko;
        ki = l->ki;
    }
    /* the new order: batch axes, then the variant's */
    const char *loops[TE_MAX_RANK * 2 + 8];
    int n = 0;
    for (int b = 0; b < l->nsvars - 2; b++)
        loops[n++] = l->svar[b];
    const char *red[TE_MAX_RANK + 1];
    for (int r = 0; r < l->nrvars; r++)
        red[r] = r == l->rsplit ? ko : l->rvar[r];
#define PUT(x)                \
    do {                      \
        if (x)                \
            loops[n++] = (x); \
    } while (0)
#define PUT_RED()                           \
    for (int r = 0; r < l->nrvars; r++)     \
    loops[n++] = red[r]
    switch (m->order) {
    case 0: PUT(io); PUT(l->jo); PUT_RED(); PUT(ki); PUT(ii); PUT(l->ji); break;
    case 1: PUT(io); PUT(l->jo); PUT_RED(); PUT(ii); PUT(ki); PUT(l->ji); break;
    case 2: PUT(l->jo); PUT(io); PUT_RED(); PUT(ki); PUT(ii); PUT(l->ji); break;
    default: PUT(io); PUT_RED(); PUT(l->jo); PUT(ki); PUT(ii); PUT(l->ji); break;
    }
#undef PUT
#undef PUT_RED
    emit_reorder(e, loops, n);
    if (m->unroll_i && ii)
        emit_loop(e, "unroll", ii);
    if (m->unroll_k && ki)
        emit_loop(e, "unroll", ki);
    if (m->vec)
        emit_loop(e, "vectorize", l->ji);
    emit_parallel(e, l, loops[0], loops[1], m->par);
}

/* An elementwise stage:
 *   S.split(j, vs) -> jo, ji;                 (vs > 1)
 *   the outermost loop (or two, fused) parallel;
 *   S.vectorize(ji, or j when vs is 1) */
void sch_template_elementwise(SchEmit *e, const SchLoops *l, const SchElementwise *m)
{
    const char *loops[TE_MAX_RANK + 2] = { NULL }; /* (nsvars >= 1, as callers keep it) */
    int n = 0;
    for (int d = 0; d < l->nsvars; d++)
        loops[n++] = l->svar[d];
    const char *vec = NULL;
    if (m->vs > 1) {
        emit_split(e, l->svar[l->nsvars - 1], m->vs, l->jo, l->ji);
        loops[n - 1] = l->jo;
        loops[n++] = l->ji;
        vec = l->ji;
    } else if (m->vs == 1) {
        vec = l->svar[l->nsvars - 1];
    }
    emit_parallel(e, l, loops[0], n > 1 ? loops[1] : NULL, m->par);
    if (vec)
        emit_loop(e, "vectorize", vec);
}

/* Any other reduction:
 *   S.split(k, tk) -> ko, ki; S.unroll(ki);   (tk > 0)
 *   the outermost loop (or two, fused) parallel;
 *   S.vectorize(the innermost reduction loop) (vec) */
void sch_template_reduce(SchEmit *e, const SchLoops *l, const SchReduce *m)
{
    if (m->tk > 0) {
        emit_split(e, l->rvar[l->rsplit], m->tk, l->ko, l->ki);
        emit_loop(e, "unroll", l->ki);
    }
    emit_parallel(e, l, l->svar[0], l->nsvars > 1 ? l->svar[1] : NULL, m->par);
    if (m->vec)
        emit_loop(e, "vectorize", l->rvar[l->nrvars - 1]);
}

/* One axis of the CUDA tile: AXIS split by BLOCK into OUTER (the block)
 * and, with a register tile of REG > 1, its rest split into REGS x
 * THREAD, so that a thread's REG outputs lie BLOCK/REG apart (else the
 * rest is THREAD).  The register loop, or NULL. */
static const char *split_axis(SchEmit *e, const char *axis, int64_t block, int64_t reg,
                              const char *outer, const char *rest, const char *regs,
                              const char *thread)
{
    if (reg <= 1) {
        emit_split(e, axis, block, outer, thread);
        return NULL;
    }
    emit_split(e, axis, block, outer, rest);
    emit_split(e, rest, block / reg, regs, thread);
    return regs;
}

/* The CUDA tile:
 *   S.fuse(batch axes) -> bz;                      (two or more)
 *   S.split(i, bm) -> io, ib; S.split(ib, bm/tm) -> ir, it;   (tm > 1;
 *                                      else S.split(i, bm) -> io, it)
 *   the same for j;  S.split(k, bk) -> ko, ki;     (bk > 0)
 *   S.reorder(bz, io, jo, ko, it, jt, ki or the reduction axes, ir, jr);
 *   S.bind(bz, block.z); S.bind(io, block.y); S.bind(jo, block.x);
 *   S.bind(it, thread.y); S.bind(jt, thread.x);
 *   S.unroll(ki); S.unroll(ir); S.unroll(jr);      (unroll)
 *   X_shared = X.cache_read(shared, S) at ko;      (stage, each operand)
 *   S.pipeline(ko, pipe);                          (pipe > 1) */
void sch_template_cuda_tile(SchEmit *e, const SchLoops *l, const SchCudaTile *m)
{
    int n = l->nsvars;
    const char *i = l->svar[n - 2], *j = l->svar[n - 1];
    const char *loops[TE_MAX_RANK * 2 + 8];
    int nl = 0;
    const char *bz = NULL;
    if (n > 2) {
        bz = emit_fuse_axes(e, l->svar, n - 2, l->bz);
        loops[nl++] = bz;
    }
    const char *ir = split_axis(e, i, m->bm, m->tm, l->io, l->ib, l->ir, l->it);
    const char *jr = split_axis(e, j, m->bn, m->tn, l->jo, l->jb, l->jr, l->jt);
    const char *ko = NULL, *ki = NULL;
    if (m->bk > 0) {
        emit_split(e, l->rvar[l->rsplit], m->bk, l->ko, l->ki);
        ko = l->ko;
        ki = l->ki;
    }
    loops[nl++] = l->io;
    loops[nl++] = l->jo;
    if (ko)
        loops[nl++] = ko;
    loops[nl++] = l->it;
    loops[nl++] = l->jt;
    for (int r = 0; r < l->nrvars; r++)
        loops[nl++] = r == l->rsplit && ki ? ki : l->rvar[r];
    if (ir)
        loops[nl++] = ir;
    if (jr)
        loops[nl++] = jr;
    emit_reorder(e, loops, nl);
    /* gridDim.y and .z are at most 65535: a loop too long stays a loop */
    if (bz && m->batch <= 65535)
        emit_bind(e, bz, GPU_BLOCK_Z);
    if ((m->iext + m->bm - 1) / m->bm <= 65535)
        emit_bind(e, l->io, GPU_BLOCK_Y);
    emit_bind(e, l->jo, GPU_BLOCK_X);
    emit_bind(e, l->it, GPU_THREAD_Y);
    emit_bind(e, l->jt, GPU_THREAD_X);
    if (m->unroll) {
        if (ki)
            emit_loop(e, "unroll", ki);
        if (ir)
            emit_loop(e, "unroll", ir);
        if (jr)
            emit_loop(e, "unroll", jr);
    }
    for (int t = 0; m->stage && t < l->nstaged; t++) {
        SchedStmt *c = sch_emit(e, "cache_read", 2);
        c->stage = l->staged[t];
        c->result = l->staged_as[t];
        c->args[0] = sch_name_arg("shared");
        c->args[1] = sch_name_arg(e->stage);
        c->at = ko;
        c->at_span = e->span;
    }
    if (m->stage && m->pipe > 1) {
        SchedStmt *p = sch_emit(e, "pipeline", 2);
        p->args[0] = sch_name_arg(ko);
        p->args[1] = int_arg(m->pipe);
    }
}

/* The flat CUDA form:
 *   S.fuse(spatial axes) -> f;  S.split(f, threads) -> bx, tx;
 *   S.bind(bx, block.x); S.bind(tx, thread.x);
 *   S.split(k, tk) -> ko, ki; S.unroll(ki);        (tk > 0) */
void sch_template_cuda_flat(SchEmit *e, const SchLoops *l, const SchCudaFlat *m)
{
    const char *f = emit_fuse_axes(e, l->svar, l->nsvars, l->bz);
    emit_split(e, f, m->threads, l->bx, l->tx);
    emit_bind(e, l->bx, GPU_BLOCK_X);
    emit_bind(e, l->tx, GPU_THREAD_X);
    if (m->tk > 0) {
        emit_split(e, l->rvar[l->rsplit], m->tk, l->ko, l->ki);
        emit_loop(e, "unroll", l->ki);
    }
}

/* ------------------------------------------------------------------ */
/* Which form a stage takes, and the names the tuner's points give.    */

static bool mentions(const Expr *e, const IterVar *j)
{
    if (e->kind == EX_VAR)
        return e->var == j;
    for (int i = 0; i < e->nargs; i++)
        if (mentions(e->args[i], j))
            return true;
    return false;
}

/* Does E load some tensor along J: its last index mentions J (w[k, j],
 * w_packed[j / P, k, j % P], an image's pad[.., ow * 2 + s])?  A
 * micro-kernel that vectorizes J then loads vectors (strided ones at
 * worst); without such a load (a row maximum, mx[h, i] = max(t)
 * s[h, i, t]) it would gather, and the reduction's own axis is the one to
 * vectorize. */
static bool loads_along(const Expr *e, const IterVar *j)
{
    if (e->kind == EX_LOAD && e->nargs > 0 && mentions(e->args[e->nargs - 1], j))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (loads_along(e->args[i], j))
            return true;
    return false;
}

SchForm sch_form_of(const SchedState *st, const SStage *s, int lanes)
{
    bool tiles = s->is_reduce && s->nsvars >= 2;
    if (st->target != TARGET_CPU)
        return tiles ? SCH_FORM_CUDA_TILE : SCH_FORM_CUDA_FLAT;
    if (tiles && sch_extent_hint(st, s->svars[s->nsvars - 1]) >= lanes &&
        loads_along(s->value, s->svars[s->nsvars - 1]))
        return SCH_FORM_MATMUL;
    return s->is_reduce ? SCH_FORM_REDUCE : SCH_FORM_ELEMWISE;
}

/* A loop name for S made from BASE and SUFFIX that no loop of S has and
 * none of the names already taken (TAKEN, N): BASE SUFFIX, else
 * BASE_SUFFIX1, BASE_SUFFIX2, ... */
static const char *fresh_loop(Arena *a, SStage *s, const char *base, const char *suffix,
                              const char **taken, int n)
{
    for (int attempt = 0;; attempt++) {
        const char *name = attempt == 0 ? arena_printf(a, "%s%s", base, suffix)
                                        : arena_printf(a, "%s_%s%d", base, suffix, attempt);
        bool clash = sch_find_loop(s, name) != NULL;
        for (int i = 0; i < n && !clash; i++)
            clash = strcmp(taken[i], name) == 0;
        if (!clash)
            return name;
    }
}

/* The loop names a form creates, each fresh among S's loops and the ones
 * named before it. */
typedef struct Names {
    Arena *a;
    SStage *s;
    const char *taken[TE_MAX_RANK + 24];
    int n;
} Names;

static const char *take(Names *nm, const char *base, const char *suffix)
{
    const char *name = fresh_loop(nm->a, nm->s, base, suffix, nm->taken, nm->n);
    nm->taken[nm->n++] = name;
    return name;
}

/* The names of COUNT loops fused one after another (the first fuses the
 * two outermost axes, each next one adds an axis); the last, the whole,
 * is called LAST. */
static const char **fused_names(Names *nm, int count, const char *last)
{
    const char **out = arena_alloc(nm->a, sizeof *out * (size_t)(count + 1));
    for (int i = 0; i < count; i++)
        out[i] = take(nm, i + 1 == count ? last : "f", "");
    return out;
}

/* A stage name made from BASE and SUFFIX that no stage has. */
static const char *fresh_stage(Arena *a, SchedState *st, const char *base, const char *suffix)
{
    for (int attempt = 0;; attempt++) {
        const char *name = attempt == 0 ? arena_printf(a, "%s%s", base, suffix)
                                        : arena_printf(a, "%s%s%d", base, suffix, attempt);
        if (!sch_find_stage(st, name))
            return name;
    }
}

/* Does a load in E mention both V and J in its indices? */
static bool loads_both(const Expr *e, const IterVar *v, const IterVar *j)
{
    if (e->kind == EX_LOAD && sch_uses_var(e, v) && sch_uses_var(e, j))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (loads_both(e->args[i], v, j))
            return true;
    return false;
}

/* The micro-kernel's row axis (the default's and the tuner's): the spatial variable whose rows share the
 * vectors the tile loads along j.  A matmul's i does, z[i, j] = sum(k)
 * x[i, k] * w[k, j] (w's vector along j serves every row, x's element is
 * a broadcast), and it is the second innermost.  A convolution's oh does
 * not: in conv[n, f, oh, ow] = sum(c, r, s) pad[n, c, oh*2 + r, ow*2 + s]
 * * flt[f, c, r, s] each row of oh loads a (strided) vector of its own,
 * one multiply-add each, where the rows of f share it and broadcast
 * flt[f, ..].  So: the second innermost when no load mentions it with j,
 * else the innermost other one that no load does (and some load
 * mentions: rows that differ), else the second innermost still.  Its
 * index in S's spatial variables. */
int sch_micro_row(const SStage *s)
{
    const IterVar *j = s->svars[s->nsvars - 1];
    for (int d = s->nsvars - 2; d >= 0; d--)
        if (!loads_both(s->value, s->svars[d], j) && sch_uses_var(s->value, s->svars[d]))
            return d;
    return s->nsvars - 2;
}

void sch_loops_row_inner(SchLoops *l, int row)
{
    const char *i = l->svar[row];
    int64_t ext = l->sext ? l->sext[row] : 0;
    for (int d = row; d < l->nsvars - 2; d++) {
        l->svar[d] = l->svar[d + 1];
        if (l->sext)
            l->sext[d] = l->sext[d + 1];
    }
    l->svar[l->nsvars - 2] = i;
    if (l->sext)
        l->sext[l->nsvars - 2] = ext;
}

/* A stage or input name nobody uses (nor TAKEN, NTAKEN), for a cache
 * stage: BASE_shared, else BASE_shared2, ... */
static const char *fresh_cache_stage(Arena *a, SchedState *st, const char *base,
                                     const char **taken, int ntaken)
{
    for (int attempt = 0;; attempt++) {
        const char *name = attempt == 0 ? arena_printf(a, "%s_shared", base)
                                        : arena_printf(a, "%s_shared%d", base, attempt + 1);
        bool used = sch_find_stage(st, name) != NULL;
        for (int i = 0; i < st->g->ninputs && !used; i++)
            used = strcmp(st->g->inputs[i]->name, name) == 0;
        for (int i = 0; i < ntaken && !used; i++)
            used = strcmp(taken[i], name) == 0;
        if (!used)
            return name;
    }
}

void sch_template_names(Arena *a, SchedState *st, SStage *s, SchForm form, SchLoops *l)
{
    l->nsvars = s->nsvars;
    l->nrvars = s->nrvars;
    l->svar = arena_alloc(a, sizeof *l->svar * (size_t)(s->nsvars + 1));
    l->rvar = arena_alloc(a, sizeof *l->rvar * (size_t)(s->nrvars + 1));
    l->sext = arena_alloc(a, sizeof *l->sext * (size_t)(s->nsvars + 1));
    /* the loops of an unscheduled stage: one per variable, in order */
    for (int i = 0; i < s->nsvars; i++) {
        l->svar[i] = ((Loop *)s->loops.items[i])->name;
        l->sext[i] = s->svars[i]->extent;
    }
    int64_t longest = 0;
    for (int i = 0; i < s->nrvars; i++) {
        l->rvar[i] = ((Loop *)s->loops.items[s->nsvars + i])->name;
        if (s->rvars[i]->extent > longest) {
            l->rsplit = i;
            longest = s->rvars[i]->extent;
        }
    }
    Names nm = { a, s, { 0 }, 0 };
    int n = s->nsvars;
    const char *k = s->nrvars > 0 ? l->rvar[l->rsplit] : NULL;
    if (form == SCH_FORM_CUDA_TILE) {
        const char *i = l->svar[n - 2], *j = l->svar[n - 1];
        /* two or more batch axes are fused into one loop for block.z; a
           single one is that loop itself */
        l->bz = n > 3 ? fused_names(&nm, n - 3, "bz") : NULL;
        l->io = take(&nm, i, "o"), l->ib = take(&nm, i, "b"), l->ir = take(&nm, i, "r");
        l->it = take(&nm, i, "t");
        l->jo = take(&nm, j, "o"), l->jb = take(&nm, j, "b"), l->jr = take(&nm, j, "r");
        l->jt = take(&nm, j, "t");
        l->ko = take(&nm, k, "o"), l->ki = take(&nm, k, "i");
        const Tensor *staged[TE_MAX_RANK];
        l->nstaged = s->nrvars == 1 ? sch_cuda_staged_operands(st, s, staged) : 0;
        for (int t = 0; t < l->nstaged; t++) {
            l->staged[t] = staged[t]->name;
            l->staged_as[t] = fresh_cache_stage(a, st, staged[t]->name, l->staged_as, t);
        }
        return;
    }
    if (form == SCH_FORM_CUDA_FLAT) {
        l->bz = n > 1 ? fused_names(&nm, n - 1, "f") : NULL;
        l->bx = take(&nm, "b", "x");
        l->tx = take(&nm, "t", "x");
        if (k) {
            l->ko = take(&nm, k, "o");
            l->ki = take(&nm, k, "i");
        }
        return;
    }
    if (form == SCH_FORM_MATMUL && n >= 2)
        sch_loops_row_inner(l, sch_micro_row(s)); /* (the templates reorder every loop) */
    if (n >= 1) {
        l->jo = take(&nm, l->svar[n - 1], "o");
        l->ji = take(&nm, l->svar[n - 1], "i");
    }
    if (n >= 2) {
        l->io = take(&nm, l->svar[n - 2], "o");
        l->ii = take(&nm, l->svar[n - 2], "i");
    }
    if (k) {
        l->ko = take(&nm, k, "o");
        l->ki = take(&nm, k, "i");
    }
    l->fused = take(&nm, "f", "");
    if (form == SCH_FORM_MATMUL)
        l->acc = fresh_stage(a, st, s->name, "_acc");
}

/* ------------------------------------------------------------------ */
/* What the default and the tuner both ask of a stage.                 */

bool sch_mentioned(const Schedule *w, const SStage *stage)
{
    for (int i = 0; w && i < w->nstmts; i++) {
        const SchedStmt *s = w->stmts[i];
        if (sch_stage_named(stage, s->stage) || (s->result && sch_stage_named(stage, s->result)))
            return true;
        if (s->nargs > 0 && s->args[0].kind == SA_NAME && sch_stage_named(stage, s->args[0].name) &&
            strcmp(s->prim, "compute_at") == 0)
            return true;
    }
    return false;
}

/* Does every load of T in E index it with plain variables only? */
static bool plain_loads(const Expr *e, const Tensor *t, bool *seen, const IterVar *k, bool *uses_k)
{
    if (e->kind == EX_LOAD && e->tensor == t) {
        *seen = true;
        for (int d = 0; d < e->nargs; d++) {
            if (e->args[d]->kind != EX_VAR)
                return false;
            *uses_k = *uses_k || e->args[d]->var == k;
        }
    }
    for (int i = 0; i < e->nargs; i++)
        if (!plain_loads(e->args[i], t, seen, k, uses_k))
            return false;
    return true;
}

/* Is T stored in memory when S reads it (not substituted into S)? */
static bool materialized(SchedState *st, const Tensor *t)
{
    if (t->kind == TK_INPUT)
        return true;
    SStage *p = NULL;
    for (int i = 0; i < st->stages.len && !p; i++)
        if (((SStage *)st->stages.items[i])->tensor == t)
            p = st->stages.items[i];
    return p && !p->inlined && !p->attach && (p->tensor->is_output || p->is_reduce);
}

int sch_cuda_staged_operands(SchedState *st, const SStage *s, const Tensor **out)
{
    int n = 0;
    for (int i = 0; i < st->g->ntensors && n < TE_MAX_RANK; i++) {
        const Tensor *t = st->g->tensors[i];
        bool seen = false, uses_k = false;
        if (t != s->tensor && materialized(st, t) &&
            plain_loads(s->value, t, &seen, s->rvars[0], &uses_k) && seen && uses_k)
            out[n++] = t;
    }
    return n;
}

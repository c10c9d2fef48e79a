/* default.c — the schedule texc uses when a file has none for the target.
 *
 * requires: a SchedState; WRITTEN, the file's schedule already applied to
 * it, or NULL.  Stages WRITTEN names are left as they are.
 * guarantees: a Schedule of ordinary statements (so it prints, replays and
 * mutates like a written one) that sch_apply accepts:
 *   - every stage that is neither an output nor a reduction is inlined
 *     into its readers (Halide's default, and the graph optimizer's fusion
 *     in miniature);
 *   - a reduction with two or more spatial axes and a wide innermost one
 *     (a matmul) gets a register-sized tile: the innermost spatial axis
 *     split by 4 vectors, the next by 4, the reduction loops between the
 *     tile's outer and inner loops, the inner rows unrolled and the inner
 *     columns vectorized;
 *   - any other stage vectorizes its innermost loop when that loop is
 *     spatial;
 *   - the outermost spatial loop runs in parallel.
 */
#include <string.h>

#include "sched/sched.h"

typedef struct Builder {
    SchedState *st;
    Schedule *sched;
    Span span; /* the stage's definition: where errors would point */
} Builder;

static SchedStmt *emit(Builder *b, const char *stage, const char *prim, int nargs)
{
    Arena *a = b->st->arena;
    SchedStmt *s = arena_alloc(a, sizeof *s);
    s->span = s->stage_span = s->prim_span = b->span;
    s->stage = stage;
    s->prim = prim;
    s->args = arena_alloc(a, sizeof *s->args * (size_t)(nargs + 1));
    s->nargs = nargs;
    s->outs = arena_alloc(a, sizeof *s->outs * 4);
    s->out_spans = arena_alloc(a, sizeof *s->out_spans * 4);
    PtrVec v = { (void **)b->sched->stmts, b->sched->nstmts, b->sched->nstmts };
    vec_push(a, &v, s);
    b->sched->stmts = (SchedStmt **)v.items;
    b->sched->nstmts = v.len;
    return s;
}

static SchedArg name_arg(const char *name)
{
    return (SchedArg){ .kind = SA_NAME, .name = name };
}

static SchedArg int_arg(int64_t v)
{
    return (SchedArg){ .kind = SA_INT, .ival = v };
}

static void annotate(Builder *b, const char *stage, const char *prim, const char *loop)
{
    SchedStmt *s = emit(b, stage, prim, 1);
    s->args[0] = name_arg(loop);
}

static void split(Builder *b, const char *stage, const char *loop, int64_t f,
                  const char *outer, const char *inner)
{
    SchedStmt *s = emit(b, stage, "split", 2);
    s->args[0] = name_arg(loop);
    s->args[1] = int_arg(f);
    s->outs[0] = outer;
    s->outs[1] = inner;
    s->nouts = 2;
}

static const char *suffixed(Builder *b, const char *name, const char *suffix)
{
    return arena_printf(b->st->arena, "%s%s", name, suffix);
}

static void schedule_matmul_like(Builder *b, SStage *s, int lanes)
{
    const char *stage = s->name;
    const char *j = s->svars[s->nsvars - 1]->name;
    const char *i = s->svars[s->nsvars - 2]->name;
    int64_t jext = s->svars[s->nsvars - 1]->extent;
    int64_t iext = s->svars[s->nsvars - 2]->extent;
    int64_t tj = jext >= 4 * lanes ? 4 * lanes : lanes;
    int64_t ti = iext >= 4 ? 4 : iext;
    const char *jo = suffixed(b, j, "o"), *ji = suffixed(b, j, "i");
    const char *io = suffixed(b, i, "o"), *ii = suffixed(b, i, "i");
    split(b, stage, j, tj, jo, ji);
    split(b, stage, i, ti, io, ii);
    SchedStmt *r = emit(b, stage, "reorder", 4 + s->nrvars);
    int k = 0;
    r->args[k++] = name_arg(io);
    r->args[k++] = name_arg(jo);
    for (int a = 0; a < s->nrvars; a++)
        r->args[k++] = name_arg(s->rvars[a]->name);
    r->args[k++] = name_arg(ii);
    r->args[k++] = name_arg(ji);
    annotate(b, stage, "unroll", ii);
    annotate(b, stage, "vectorize", ji);
    annotate(b, stage, "parallel", s->nsvars > 2 ? s->svars[0]->name : io);
}

/* Does the written schedule W name stage NAME? */
static bool mentioned(const Schedule *w, const SStage *stage)
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

Schedule *sch_default(SchedState *st, const Schedule *written)
{
    Schedule *sched = arena_alloc(st->arena, sizeof *sched);
    sched->target = st->target;
    Builder b = { st, sched, { 0, 0 } };
    for (int i = 0; i < st->stages.len; i++) {
        SStage *s = st->stages.items[i];
        b.span = s->tensor->span;
        if (!s->tensor->is_output && !s->is_reduce && !mentioned(written, s))
            emit(&b, s->name, "compute_inline", 0);
    }
    if (strcmp(st->target, "cpu") != 0) {
        sch_default_cuda(st, sched, written);
        return sched;
    }
    for (int i = 0; i < st->stages.len; i++) {
        SStage *s = st->stages.items[i];
        b.span = s->tensor->span;
        if ((!s->tensor->is_output && !s->is_reduce) || s->nsvars == 0 ||
            mentioned(written, s) || s->attach)
            continue;
        int lanes = 64 / dtype_bytes(s->tensor->dtype);
        if (lanes > 16)
            lanes = 16;
        IterVar *inner = s->svars[s->nsvars - 1];
        if (s->is_reduce && s->nsvars >= 2 && inner->extent >= lanes) {
            schedule_matmul_like(&b, s, lanes);
            continue;
        }
        if (!s->is_reduce)
            annotate(&b, s->name, "vectorize", inner->name);
        if (s->nsvars >= 2 || s->is_reduce)
            annotate(&b, s->name, "parallel", s->svars[0]->name);
    }
    return sched;
}

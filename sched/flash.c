/* flash.c — flash: attention's softmax and weighted sum computed without
 * writing the scores out (issue 17, ask 4).
 *
 * requires: a SchedState for target cpu.
 * guarantees: sch_flash_match accepts exactly the chains codegen/c.c's
 * flash kernel (emit_flash) computes right at every size (SchFlash's
 * comment in sched.h): five stages over the same leading batch axes, all
 * f32, every size static, every axis from 0, the four inner stages read
 * by nothing but the chain and none of them an output or scheduled yet.
 * sch_flash then marks the four inner stages as computed in the kernel of
 * the chain's last stage (SStage.flashed: no loops, no storage) and
 * refuses a key tile the kernel does not take.  After it, the last stage
 * takes only parallel on a batch loop (apply.c).
 *
 * The kernel (emit_flash) is the online softmax of flash attention
 * (Dao et al. 2022; Milakov and Gimelshein 2018): for each key tile, the
 * scores of a few query rows in registers, their running maximum m and
 * sum l, the exponentials, and the weighted sum rescaled by
 * exp(m_old - m_new).  So memory holds a tile of keys and values and the
 * rows' running state, never the S x S scores: that pays where the scores
 * of one batch point outgrow the caches (the default's rule,
 * sch_flash_pays).  The sums are reassociated (per tile, then rescaled),
 * as any vectorized or tiled reduction is: the result matches the
 * evaluator within f32 tolerance, not bit for bit.
 *
 * Where a chain does not match, the reason is one sentence, which a flash
 * the file wrote quotes in its error.
 */
#include <string.h>

#include "sched/sched.h"

/* Is E the plain variable V? */
static bool is_var(const Expr *e, const IterVar *v)
{
    return e->kind == EX_VAR && e->var == v;
}

/* Is E a load of T at exactly VARS[0..n) (plain variables)? */
static bool load_at(const Expr *e, const Tensor *t, IterVar *const *vars, int n)
{
    if (e->kind != EX_LOAD || e->tensor != t || e->nargs != n)
        return false;
    for (int d = 0; d < n; d++)
        if (!is_var(e->args[d], vars[d]))
            return false;
    return true;
}

static bool mentions_var(const Expr *x, const void *v)
{
    return x->kind == EX_VAR && x->var == v;
}

static bool mentions(const Expr *e, const IterVar *v)
{
    return e && te_expr_any(e, mentions_var, v);
}

static bool loads_tensor(const Expr *x, const void *t)
{
    return x->kind == EX_LOAD && x->tensor == t;
}

/* Does stage S read tensor T? */
static bool reads(const SStage *s, const Tensor *t)
{
    return (s->value && te_expr_any(s->value, loads_tensor, t)) ||
           (s->epilogue && te_expr_any(s->epilogue, loads_tensor, t));
}

/* A reduction's epilogue E of stage S that is its sum times (or divided
 * by) a constant: the constant.  No epilogue: 1. */
static bool const_scale(const SStage *s, double *scale, bool *div)
{
    *scale = 1, *div = false;
    const Expr *e = s->epilogue;
    if (!e)
        return true;
    if (e->kind != EX_OP || (e->op != OP_MUL && e->op != OP_DIV) || e->dtype != DT_F32)
        return false;
    const Expr *x = e->args[0], *y = e->args[1];
    if (e->op == OP_MUL && y->kind == EX_LOAD && x->kind == EX_CONST) {
        const Expr *t = x;
        x = y, y = t;
    }
    if (!load_at(x, s->tensor, s->svars, s->nsvars) || y->kind != EX_CONST)
        return false;
    *scale = y->value, *div = e->op == OP_DIV;
    return true;
}

/* One stage of the chain: the stage computing T, checked to be a plain
 * kernel of its own; else NULL and *WHY.  (Who else reads it is checked
 * once the chain is known: only_read_by.) */
static SStage *inner_stage(SchedState *st, const Tensor *t, const char *role, const char **why)
{
    SStage *p = sch_stage_of(st, t);
    Arena *a = st->arena;
    if (!p || t->kind != TK_STAGE) {
        *why = arena_printf(a, "'%s' (its %s) is not a stage of the program", t->name, role);
        return NULL;
    }
    if (t->is_output) {
        *why = arena_printf(a, "'%s' (its %s) is an output: flash never stores it", t->name, role);
        return NULL;
    }
    if (p->scheduled || p->inlined || p->attach || p->flashed || p->flash || p->cache_written) {
        *why = arena_printf(a, "'%s' (its %s) is scheduled already: flash computes it itself",
                            p->name, role);
        return NULL;
    }
    if (t->dtype != DT_F32) {
        *why = arena_printf(a, "'%s' (its %s) is not f32", t->name, role);
        return NULL;
    }
    return p;
}

/* Is each of the chain's inner stages read by the chain alone (LAST and
 * CHAIN)?  Else *WHY names a reader. */
static bool only_read_by(SchedState *st, const SStage *last, SStage *const *chain, const char **why)
{
    static const char *const role[4] = { "scores", "maximum", "weights", "sum" };
    for (int i = 0; i < st->stages.len; i++) {
        const SStage *o = st->stages.items[i];
        bool ours = o == last;
        for (int k = 0; k < 4 && !ours; k++)
            ours = chain[k] == o;
        for (int k = 0; k < 4 && !ours && !o->inlined; k++)
            if (reads(o, chain[k]->tensor)) {
                *why = arena_printf(st->arena, "'%s' reads '%s' (its %s) too, which flash never stores",
                                    o->name, chain[k]->name, role[k]);
                return false;
            }
    }
    return true;
}

/* Is S a row reduction of T by REDUCER, T[b.., i, t] reduced over its
 * last index into S[b.., i] (NB batch axes), no epilogue? */
static bool row_reduction(Arena *a, const SStage *s, Reducer reducer, const Tensor *t, int nb)
{
    if (!s->is_reduce || s->reducer != reducer || s->epilogue || s->nrvars != 1 ||
        s->nsvars != nb + 1)
        return false;
    IterVar **vars = arena_alloc(a, sizeof *vars * (size_t)(nb + 2));
    memcpy(vars, s->svars, sizeof *vars * (size_t)(nb + 1));
    vars[nb + 1] = s->rvars[0];
    return load_at(s->value, t, vars, nb + 2);
}

/* Are V's extent and start those of W's (both static, from 0)? */
static bool same_axis(const IterVar *v, const IterVar *w)
{
    return v->lo == 0 && w->lo == 0 && !v->extent_size && !w->extent_size &&
           v->extent == w->extent;
}

bool sch_flash_match(SchedState *st, SStage *s, SchFlash *f, const char **why)
{
    Arena *a = st->arena;
    *why = "it is not the weighted sum of an attention: ctx[b.., i, e] = (sum(t) prob[b.., i, t] * "
           "v[..]) / psum[b.., i], prob = exp(score - smax), smax its maximum over t and psum "
           "its sum";
    if (st->target != TARGET_CPU) {
        *why = "flash is a cpu kernel";
        return false;
    }
    if (!s->is_reduce || s->reducer != RED_SUM || s->nrvars != 1 || s->nsvars < 2 || !s->value ||
        !s->epilogue || s->tensor->dtype != DT_F32)
        return false;
    if (s->scheduled || s->inlined || s->attach || s->cache_written || s->flash || s->flashed) {
        *why = arena_printf(a, "'%s' is scheduled already: flash takes its loops as they are",
                            s->name);
        return false;
    }
    int nb = s->nsvars - 2;
    IterVar *i = s->svars[nb], *e = s->svars[nb + 1], *t = s->rvars[0];
    for (int k = 0; k < s->nsvars; k++)
        if (s->svars[k]->lo != 0 || s->svars[k]->extent_size) {
            *why = "its sizes are run-time sizes (flash needs them when compiling)";
            return false;
        }
    if (t->lo != 0 || t->extent_size) {
        *why = "its sizes are run-time sizes (flash needs them when compiling)";
        return false;
    }
    /* the body: prob[b.., i, t] * V, V free of i */
    const Expr *body = s->value;
    if (body->kind != EX_OP || body->op != OP_MUL)
        return false;
    const Expr *pl = body->args[0], *v = body->args[1];
    if (pl->kind != EX_LOAD || pl->nargs != nb + 2) {
        const Expr *x = pl;
        pl = v, v = x;
    }
    if (pl->kind != EX_LOAD || pl->nargs != nb + 2)
        return false;
    IterVar **pvars = arena_alloc(a, sizeof *pvars * (size_t)(nb + 2));
    memcpy(pvars, s->svars, sizeof *pvars * (size_t)(nb + 1));
    pvars[nb + 1] = t;
    if (!load_at(pl, pl->tensor, pvars, nb + 2) || mentions(v, i) || v->dtype != DT_F32)
        return false;
    /* the epilogue: / psum[b.., i] or * (1 / psum[b.., i]) */
    const Expr *ep = s->epilogue, *sl = NULL;
    bool recip = false;
    if (ep->kind == EX_OP && ep->op == OP_DIV && ep->args[1]->kind == EX_LOAD) {
        sl = ep->args[1];
    } else if (ep->kind == EX_OP && ep->op == OP_MUL) {
        const Expr *r = ep->args[1];
        if (!load_at(ep->args[0], s->tensor, s->svars, s->nsvars)) {
            r = ep->args[0];
            if (!load_at(ep->args[1], s->tensor, s->svars, s->nsvars))
                return false;
        }
        if (r->kind == EX_OP && r->op == OP_DIV && r->args[0]->kind == EX_CONST &&
            r->args[0]->value == 1 && r->args[1]->kind == EX_LOAD) {
            sl = r->args[1];
            recip = true;
        }
    }
    if (!sl || !load_at(sl, sl->tensor, s->svars, nb + 1) ||
        (!recip && !load_at(ep->args[0], s->tensor, s->svars, s->nsvars)))
        return false;
    SStage *chain[4] = { NULL, NULL, NULL, NULL }; /* score, smax, prob, psum */
    SStage *prob = inner_stage(st, pl->tensor, "weights", why);
    if (!prob)
        return false;
    chain[2] = prob;
    /* prob[b.., i, t] = exp(score[b.., i, t] - smax[b.., i]) */
    *why = arena_printf(a, "its weights '%s' are not exp(score - smax), smax the maximum of score "
                        "over the keys", prob->name);
    const Expr *pv = prob->value;
    if (prob->is_reduce || prob->epilogue || prob->nsvars != nb + 2 || pv->kind != EX_OP ||
        pv->op != OP_EXP || pv->args[0]->kind != EX_OP || pv->args[0]->op != OP_SUB)
        return false;
    const Expr *scl = pv->args[0]->args[0], *mxl = pv->args[0]->args[1];
    if (!load_at(scl, scl->tensor, prob->svars, nb + 2) ||
        !load_at(mxl, mxl->tensor, prob->svars, nb + 1))
        return false;
    SStage *psum = inner_stage(st, sl->tensor, "sum", why);
    if (!psum)
        return false;
    chain[3] = psum;
    *why = arena_printf(a, "its divisor '%s' is not the sum of '%s' over the keys", psum->name,
                        prob->name);
    if (!row_reduction(a, psum, RED_SUM, prob->tensor, nb))
        return false;
    SStage *smax = inner_stage(st, mxl->tensor, "maximum", why);
    if (!smax)
        return false;
    chain[1] = smax;
    SStage *score = inner_stage(st, scl->tensor, "scores", why);
    if (!score)
        return false;
    chain[0] = score;
    *why = arena_printf(a, "its maximum '%s' is not the maximum of '%s' over the keys", smax->name,
                        score->name);
    if (!row_reduction(a, smax, RED_MAX, score->tensor, nb))
        return false;
    /* score[b.., i, t] = (sum(d) Q * K) [* c | / c] */
    *why = arena_printf(a, "its scores '%s' are not a sum over one axis of a query operand (of i) "
                        "times a key operand (of t), times or divided by a constant",
                        score->name);
    const Expr *sv = score->value;
    if (!score->is_reduce || score->reducer != RED_SUM || score->nrvars != 1 ||
        score->nsvars != nb + 2 || sv->kind != EX_OP || sv->op != OP_MUL || sv->dtype != DT_F32)
        return false;
    double scale;
    bool scale_div;
    if (!const_scale(score, &scale, &scale_div))
        return false;
    IterVar *si = score->svars[nb], *st_ = score->svars[nb + 1], *sd = score->rvars[0];
    const Expr *q = sv->args[0], *k = sv->args[1];
    if (mentions(q, st_)) {
        const Expr *x = q;
        q = k, k = x;
    }
    if (mentions(q, st_) || mentions(k, si))
        return false;
    /* the axes agree: batch, rows, keys */
    *why = "the stages' axes differ in extent (or start elsewhere than 0, or have run-time sizes)";
    for (int d = 0; d < nb + 1; d++) {
        const IterVar *x = s->svars[d];
        if (!same_axis(x, score->svars[d]) || !same_axis(x, smax->svars[d]) ||
            !same_axis(x, prob->svars[d]) || !same_axis(x, psum->svars[d]))
            return false;
    }
    if (!same_axis(t, score->svars[nb + 1]) || !same_axis(t, smax->rvars[0]) ||
        !same_axis(t, prob->svars[nb + 1]) || !same_axis(t, psum->rvars[0]) ||
        sd->lo != 0 || sd->extent_size || e->lo != 0 || e->extent_size)
        return false;
    if (!only_read_by(st, s, chain, why))
        return false;
    /* Q, K and V in the kernel's variables */
    SchFlash r = { .bk = f->bk, .span = f->span, .nbatch = nb };
    r.sq = i->extent, r.sk = t->extent, r.dk = sd->extent, r.dv = e->extent;
    r.qi = sch_new_var(st, "te_fi", r.sq);
    r.kt = sch_new_var(st, "te_ft", r.sk);
    r.dd = sch_new_var(st, "te_fd", r.dk > r.dv ? r.dk : r.dv);
    r.batch = s->svars;
    Expr **to = arena_alloc(a, sizeof *to * (size_t)(nb + 3));
    IterVar **from = arena_alloc(a, sizeof *from * (size_t)(nb + 3));
    for (int d = 0; d < nb; d++) {
        from[d] = score->svars[d];
        to[d] = ex_var(a, s->tensor->span, s->svars[d]);
    }
    from[nb] = si, from[nb + 1] = sd;
    to[nb] = ex_var(a, s->tensor->span, r.qi), to[nb + 1] = ex_var(a, s->tensor->span, r.dd);
    r.q = te_subst_vars(a, (Expr *)q, from, to, nb + 2);
    from[nb] = st_;
    to[nb] = ex_var(a, s->tensor->span, r.kt);
    r.k = te_subst_vars(a, (Expr *)k, from, to, nb + 2);
    r.v = te_subst_vars(a, (Expr *)v, (IterVar *[]){ t, e },
                        (Expr *[]){ ex_var(a, s->tensor->span, r.kt), ex_var(a, s->tensor->span, r.dd) },
                        2);
    r.scale = scale, r.scale_div = scale_div, r.recip = recip;
    memcpy(r.stages, chain, sizeof chain);
    *f = r;
    *why = NULL;
    return true;
}

bool sch_flash(SchedState *st, SStage *s, const SchedStmt *stmt)
{
    const Source *src = st->g->src;
    SchFlash *f = arena_alloc(st->arena, sizeof *f);
    f->span = stmt->span;
    f->bk = sch_arg_int(&stmt->args[1]);
    if (s->scheduled || s->flash) {
        diag_error(src, stmt->prim_span,
                   "flash takes the whole of stage '%s': an earlier statement scheduled its loops; "
                   "remove them, or this",
                   s->name);
        return false;
    }
    if (s->is_reduce && s->nrvars == 1 &&
        strcmp(stmt->args[0].name, s->rvars[0]->name) != 0) {
        diag_error(src, stmt->args[0].span,
                   "flash tiles the keys, the reduction loop '%s' of '%s', not '%s'",
                   s->rvars[0]->name, s->name, stmt->args[0].name);
        return false;
    }
    const char *why;
    if (!sch_flash_match(st, s, f, &why)) {
        diag_error(src, stmt->stage_span, "cannot flash '%s': %s", s->name, why);
        return false;
    }
    if (f->bk != 16 && f->bk != 32 && f->bk != 64 && f->bk != 128 && f->bk != 256) {
        diag_error(src, stmt->args[1].span,
                   "flash's key tile is 16, 32, 64, 128 or 256 keys (whole vectors of 16), got %lld",
                   (long long)f->bk);
        return false;
    }
    s->flash = f;
    s->scheduled = true;
    for (int k = 0; k < 4; k++)
        f->stages[k]->flashed = s;
    return true;
}

bool sch_flash_pays(const SchFlash *f)
{
    /* one batch point's scores of 256 KiB or more (a quarter of a core's
       1 MiB L2 here): written out and read back three times, they leave
       the fastest caches.  Measured on the BERT layer (D=768, 12 heads)
       on one and two threads: the attention 0.56 vs 0.52 ms at S=128
       (64 KiB: no gain), 2.5 vs 1.8 ms at S=256, 11.0 vs 5.9 ms at S=512
       (-fno-flash vs flash) */
    return f->sq * f->sk * 4 >= SCH_FLASH_MIN_BYTES;
}

bool sch_flash_untouched(const Schedule *w, const SStage *s, const SchFlash *f)
{
    bool untouched = !sch_mentioned(w, s);
    for (int k = 0; k < 4 && untouched; k++)
        untouched = !sch_mentioned(w, f->stages[k]);
    return untouched;
}

bool sch_flash_scores(Graph *g, Target target, const Schedule *sched, const Tensor *stage)
{
    if (target != TARGET_CPU)
        return false;
    Arena scratch = { 0 };
    SchedState *st = sch_state_new(&scratch, g, target);
    bool flashed = false;
    for (int i = 0; i < st->stages.len && !flashed; i++) {
        SStage *s = st->stages.items[i];
        SchFlash f = { .bk = 64 };
        const char *why;
        if (!s->is_reduce || !sch_flash_match(st, s, &f, &why) ||
            strcmp(f.stages[0]->tensor->name, stage->name) != 0)
            continue;
        bool written = false;
        for (int k = 0; sched && k < sched->nstmts; k++)
            written = written || (strcmp(sched->stmts[k]->prim, "flash") == 0 &&
                                  sch_tensor_named(s->tensor, sched->stmts[k]->stage));
        flashed = written ||
                  (sch_flash_untouched(sched, s, &f) && !g->no_flash && sch_flash_pays(&f));
    }
    arena_free(&scratch);
    return flashed;
}

const char *sch_flash_parallel_loop(const SStage *s, const SchFlash *f)
{
    for (int d = 0; d < f->nbatch; d++)
        if (s->svars[d]->extent > 1)
            return s->svars[d]->name;
    return f->nbatch > 0 ? s->svars[0]->name : NULL;
}

/* check.c — names and argument kinds in schedules, before any is applied.
 *
 * requires: a Graph from sema (stages resolved), its schedules as parsed.
 * guarantees: every statement names a known primitive with arguments of
 * the kinds its signature wants; every stage and loop it names exists at
 * that point of the schedule; knobs are defined once, used after, and
 * hold positive values; or one error diagnostic and false.
 *
 * Loop names are simulated the way the primitives will rename them: a
 * stage starts with its index variables, then its reduction axes; split
 * and tile replace a loop by their outputs, fuse replaces two by one,
 * cache_read and cache_write add a stage.  Whether a primitive's deeper
 * preconditions hold (adjacency, reduction axes, ...) is for sched/ to say
 * when it applies the schedule.
 */
#include <string.h>

#include "sched/sched.h"

typedef struct StageLoops {
    const char *name;
    const Tensor *tensor; /* NULL for a cache stage */
    PtrVec loops;         /* const char * */
    const char *label;    /* for messages, quoted: 'z', or 'y' (fused into
                             'z') when the statement named an alias */
    const char *written;  /* the name the statement used: NAME or an alias */
} StageLoops;

typedef struct Checker {
    Arena *arena;
    const Graph *g;
    const Schedule *sched;
    PtrVec stages; /* StageLoops * */
} Checker;

static const char *const scopes[] = { "global", "shared", "local" };

static bool in_list(const char *name, const char *const *list, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return true;
    return false;
}

/* The stage called NAME, or the fused stage NAME was merged into. */
static StageLoops *find_stage(Checker *c, const char *name)
{
    for (int i = 0; i < c->stages.len; i++) {
        StageLoops *s = c->stages.items[i];
        if (strcmp(s->name, name) == 0) {
            s->label = arena_printf(c->arena, "'%s'", s->name);
            s->written = s->name;
            return s;
        }
    }
    for (int i = 0; i < c->stages.len; i++) {
        StageLoops *s = c->stages.items[i];
        for (int k = 0; s->tensor && k < s->tensor->naliases; k++)
            if (strcmp(s->tensor->aliases[k], name) == 0) {
                s->label = sch_stage_label(c->arena, s->tensor, name);
                s->written = s->tensor->aliases[k];
                return s;
            }
    }
    return NULL;
}

static int find_loop(const StageLoops *s, const char *name)
{
    for (int i = 0; i < s->loops.len; i++)
        if (strcmp(s->loops.items[i], name) == 0)
            return i;
    return -1;
}

static void collect_axes(Checker *c, const Expr *e, StageLoops *s)
{
    if (e->kind == EX_REDUCE)
        for (int i = 0; i < e->naxes; i++)
            vec_push(c->arena, &s->loops, (void *)e->axes[i]->name);
    for (int i = 0; i < e->nargs; i++)
        collect_axes(c, e->args[i], s);
}

static StageLoops *add_stage(Checker *c, const char *name, const Tensor *t)
{
    StageLoops *s = arena_alloc(c->arena, sizeof *s);
    s->name = name;
    s->label = arena_printf(c->arena, "'%s'", name);
    s->written = name;
    s->tensor = t;
    vec_push(c->arena, &c->stages, s);
    return s;
}

static void init_stages(Checker *c)
{
    c->stages.len = 0;
    for (int i = 0; i < c->g->ntensors; i++) {
        const Tensor *t = c->g->tensors[i];
        if (t->kind != TK_STAGE)
            continue;
        StageLoops *s = add_stage(c, t->name, t);
        for (int d = 0; d < t->rank; d++)
            vec_push(c->arena, &s->loops, (void *)t->vars[d]->name);
        collect_axes(c, t->body, s);
    }
}

static const char *loop_list(Checker *c, const StageLoops *s)
{
    if (s->loops.len == 0)
        return "none";
    const char *out = "";
    for (int i = 0; i < s->loops.len; i++)
        out = arena_printf(c->arena, "%s%s%s", out, i ? ", " : "",
                           (const char *)s->loops.items[i]);
    return out;
}

/* Why stage S, as the statement named it, has no loop NAME when the
 * optimizer is to blame: fusion gave the kernel its anchor's loop names,
 * or the statement named a stage merged into another, whose loops these
 * are.  "" otherwise. */
static const char *loop_hint(Checker *c, const StageLoops *s, const char *name)
{
    const Tensor *t = s->tensor;
    if (!t)
        return "";
    PassId by = sch_merged_by(t, s->written);
    const StageOrigin *o = te_stage_origin(c->g, s->written);
    /* stages merged point to point: the same loops under other names */
    bool pointwise = by == PASS_cse || by == PASS_dce ||
                     (t->anchor && strcmp(t->anchor, s->written) != 0 && by == PASS_COUNT);
    for (int d = 0; pointwise && o && o->tensor->rank == t->rank && d < t->rank; d++) {
        if (strcmp(o->var_names[d], name) != 0 || strcmp(t->vars[d]->name, name) == 0)
            continue;
        if (by == PASS_COUNT) {
            by = sch_merged_by(t, t->anchor);
            return arena_printf(c->arena,
                                ": '%s' is fused with the reduction '%s' and has its loop names, so '%s' is '%s' now (or use -fno-%s)",
                                s->written, t->anchor, name, t->vars[d]->name,
                                te_pass_name(by));
        }
        return arena_printf(c->arena, ", those of '%s', so '%s' is '%s' now (or use -fno-%s)",
                            s->name, name, t->vars[d]->name, te_pass_name(by));
    }
    /* a name the stage had as written that the kernel never had (the
     * kernel's loops are its anchor's, and a loop a statement renamed is
     * the schedule's doing) */
    bool had = false;
    for (int d = 0; o && d < o->tensor->rank; d++)
        had = had || strcmp(o->var_names[d], name) == 0;
    for (int d = 0; d < t->rank; d++)
        had = had && strcmp(t->vars[d]->name, name) != 0;
    if (by == PASS_COUNT || !had || (t->anchor && strcmp(t->anchor, s->written) == 0))
        return "";
    return arena_printf(c->arena, ", those of '%s' (schedule '%s', or use -fno-%s)", s->name,
                        s->name, te_pass_name(by));
}

static bool check_loop(Checker *c, const StageLoops *s, const SchedArg *a)
{
    if (a->kind != SA_NAME) {
        diag_error(c->g->src, a->span, "expected a loop of stage %s, got '%.*s'; its loops are %s",
                   s->label, (int)(a->span.end - a->span.begin),
                   c->g->src->text + a->span.begin, loop_list(c, s));
        return false;
    }
    if (find_loop(s, a->name) < 0) {
        diag_error(c->g->src, a->span, "stage %s has no loop '%s'; its loops are %s%s",
                   s->label, a->name, loop_list(c, s), loop_hint(c, s, a->name));
        return false;
    }
    return true;
}

/* The loop names a statement introduces must be new in the stage. */
static bool check_new_names(Checker *c, const StageLoops *s, const SchedStmt *st)
{
    for (int i = 0; i < st->nouts; i++) {
        int at = find_loop(s, st->outs[i]);
        bool repeated = false;
        for (int k = 0; k < i; k++)
            repeated = repeated || strcmp(st->outs[k], st->outs[i]) == 0;
        if (repeated || at >= 0) {
            diag_error(c->g->src, st->out_spans[i], "stage %s already has a loop '%s'",
                       s->label, st->outs[i]);
            return false;
        }
    }
    return true;
}

static bool check_int(Checker *c, const SchedArg *a, const char *prim)
{
    if (a->kind == SA_INT) {
        if (a->ival <= 0) {
            diag_error(c->g->src, a->span, "%s needs a positive integer, got %lld",
                       prim, (long long)a->ival);
            return false;
        }
        return true;
    }
    if (a->kind == SA_KNOB) {
        for (int i = 0; i < a->knob->nvalues; i++)
            if (a->knob->values[i] <= 0) {
                diag_error(c->g->src, a->knob->span,
                           "knob ?%s holds %lld; %s needs positive integers",
                           a->knob->name, (long long)a->knob->values[i], prim);
                return false;
            }
        return true;
    }
    diag_error(c->g->src, a->span, "%s needs an integer or a knob here, got '%.*s'", prim,
               (int)(a->span.end - a->span.begin), c->g->src->text + a->span.begin);
    return false;
}

/* Does stage tensor T read the tensor called NAME? */
static bool reads(const Expr *e, const char *name)
{
    /* a prepack stage is its source in another layout (layout.c) */
    if (e->kind == EX_LOAD && (strcmp(e->tensor->name, name) == 0 ||
                               (e->tensor->packs && strcmp(e->tensor->packs->name, name) == 0)))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (reads(e->args[i], name))
            return true;
    return false;
}

static const Tensor *find_tensor(const Graph *g, const char *name)
{
    for (int i = 0; i < g->ntensors; i++)
        if (strcmp(g->tensors[i]->name, name) == 0)
            return g->tensors[i];
    return NULL;
}

/* Replaces loop FROM in S by the NEW names, or removes it if n == 0. */
static void replace_loop(Checker *c, StageLoops *s, int at, const char **names, int n)
{
    PtrVec v = {0};
    for (int i = 0; i < s->loops.len; i++) {
        if (i == at)
            for (int k = 0; k < n; k++)
                vec_push(c->arena, &v, (void *)names[k]);
        else
            vec_push(c->arena, &v, s->loops.items[i]);
    }
    s->loops = v;
}

/* PRIM's arguments, in words. */
static const char *signature(Prim prim)
{
    switch (prim) {
    case PR_SPLIT: return "(loop, factor)";
    case PR_TILE: return "(loop, loop, factor, factor)";
    case PR_REORDER: return "(loop, loop, ...)";
    case PR_FUSE: return "(loop, loop)";
    case PR_BIND: return "(loop, gpu axis)";
    case PR_COMPUTE_AT: return "(stage, loop)";
    case PR_COMPUTE_INLINE: return "()";
    case PR_CACHE_READ: return "(scope, consumer stage[, \"layout\"])";
    case PR_CACHE_WRITE: return "(scope)";
    case PR_PIPELINE: return "(loop, stages)";
    case PR_PREFETCH: return "(loop, distance)";
    case PR_TENSORIZE: return "(block rows, block columns, warp rows, warp columns[, k step[, stages]])";
    case PR_FLASH: return "(key loop, key tile)";
    default: return "(loop)";
    }
}

/* A stage the program wrote that the optimizer removed, named at SPAN. */
static void removed_stage(Checker *c, Span span, const StageOrigin *o)
{
    if (o->tensor->body->kind == EX_CONST)
        diag_error(c->g->src, span,
                   "stage '%s' is not computed: constant folding put its value into its readers; remove its schedule, or use -fno-constfold",
                   o->name);
    else
        diag_error(c->g->src, span,
                   "stage '%s' is not computed: no output needs it, so the optimizer removed it; remove its schedule",
                   o->name);
}

static bool check_args(Checker *c, const SchedStmt *st, Prim prim,
                       const char *sig, StageLoops *s)
{
    const Source *src = c->g->src;
    StageLoops *loops = s; /* an L after an S is a loop of that stage */
    int ai = 0;
    for (const char *p = sig; *p; p++) {
        if (*p == '*' || *p == '?')
            continue;
        bool optional = p[1] == '?';
        bool repeat = p[1] == '*';
        do {
            if (ai >= st->nargs) {
                if (optional || (repeat && ai > 0))
                    break;
                diag_error(src, st->span, "%s takes %s; too few arguments", prim_name(prim),
                           signature(prim));
                return false;
            }
            const SchedArg *a = &st->args[ai++];
            switch (*p) {
            case 'L':
                if (!check_loop(c, loops, a))
                    return false;
                break;
            case 'N':
                if (!check_int(c, a, prim_name(prim)))
                    return false;
                break;
            case 'S': {
                StageLoops *t = a->kind == SA_NAME ? find_stage(c, a->name) : NULL;
                const StageOrigin *o = a->kind == SA_NAME ? te_stage_origin(c->g, a->name) : NULL;
                if (!t && o) {
                    removed_stage(c, a->span, o);
                    return false;
                }
                if (!t) {
                    diag_error(src, a->span, "expected a stage, got '%.*s'",
                               (int)(a->span.end - a->span.begin), src->text + a->span.begin);
                    return false;
                }
                loops = t;
                break;
            }
            case 'C':
                if (a->kind != SA_NAME || !in_list(a->name, scopes, 3)) {
                    diag_error(src, a->span, "expected a memory scope: global, shared or local");
                    return false;
                }
                if (strcmp(a->name, "shared") == 0 && c->sched->target != TARGET_CUDA) {
                    diag_error(src, a->span, "shared memory exists only in a cuda schedule");
                    return false;
                }
                break;
            case 'A':
                if (a->kind != SA_NAME || sch_gpu_axis_lookup(a->name) == GPU_AXIS_COUNT) {
                    diag_error(src, a->span,
                               "expected a GPU axis: block.x, block.y, block.z, thread.x, thread.y or thread.z");
                    return false;
                }
                break;
            case 'Y':
                if (a->kind != SA_STRING) {
                    diag_error(src, a->span, "expected a layout string, such as \"KN16\"");
                    return false;
                }
                break;
            default:
                TE_UNREACHABLE();
            }
        } while (repeat);
    }
    if (ai < st->nargs) {
        diag_error(src, st->args[ai].span, "%s takes %s; too many arguments",
                   prim_name(prim), signature(prim));
        return false;
    }
    return true;
}

static bool check_stmt(Checker *c, const SchedStmt *st)
{
    static const struct {
        const char *sig;
        int outs;
        bool result, at;
    } info[] = {
#define X(e, n, s, o, r, a) { s, o, r, a },
        SCHED_PRIMS(X)
#undef X
    };
    const Source *src = c->g->src;
    Prim prim = prim_lookup(st->prim);
    if (prim == PR_COUNT) {
        const char *known = "";
        for (int k = 0; k < PR_COUNT; k++)
            known = arena_printf(c->arena, "%s%s%s", known,
                                 k == 0 ? "" : k == PR_COUNT - 1 ? " or " : ", ",
                                 prim_name((Prim)k));
        diag_error(src, st->prim_span,
                   "unknown schedule primitive '%s': expected %s", st->prim, known);
        return false;
    }
    if (prim == PR_TENSORIZE && c->sched->target != TARGET_CUDA) {
        diag_error(src, st->prim_span, "tensorize is a cuda primitive: a cpu has no tensor cores");
        return false;
    }
    if (prim == PR_FLASH && c->sched->target != TARGET_CPU) {
        diag_error(src, st->prim_span, "flash is a cpu primitive (its kernel is C for a cpu)");
        return false;
    }
    if (prim == PR_BIND && c->sched->target != TARGET_CUDA) {
        diag_error(src, st->prim_span, "bind needs a cuda schedule: a cpu has no GPU axes");
        return false;
    }
    StageLoops *s = find_stage(c, st->stage);
    const Tensor *read_tensor = NULL;
    if (prim == PR_CACHE_READ) {
        read_tensor = find_tensor(c->g, st->stage);
        if (!read_tensor && !s) {
            diag_error(src, st->stage_span, "unknown tensor '%s'", st->stage);
            return false;
        }
    } else if (!s) {
        const Tensor *t = find_tensor(c->g, st->stage);
        const StageOrigin *o = te_stage_origin(c->g, st->stage);
        if (t) {
            diag_error(src, st->stage_span, "'%s' is an input, not a stage", st->stage);
        } else if (o) {
            removed_stage(c, st->stage_span, o);
        } else {
            const char *known = "";
            for (int k = 0; k < c->stages.len; k++)
                known = arena_printf(c->arena, "%s%s%s", known, k ? ", " : "",
                                     ((StageLoops *)c->stages.items[k])->name);
            diag_error(src, st->stage_span, "unknown stage '%s'; the stages are %s",
                       st->stage, known);
        }
        return false;
    }
    /* cache_read's loops and "at" belong to the consumer stage */
    StageLoops *loops = s;
    if (prim == PR_CACHE_READ) {
        loops = st->nargs >= 2 && st->args[1].kind == SA_NAME
                    ? find_stage(c, st->args[1].name) : NULL;
    }
    if (prim != PR_CACHE_READ && !check_args(c, st, prim, info[prim].sig, s))
        return false;
    if (prim == PR_CACHE_READ) {
        if (!check_args(c, st, prim, info[prim].sig, s ? s : loops))
            return false;
        if (loops->tensor && !reads(loops->tensor->body, st->stage)) {
            diag_error(src, st->args[1].span, "stage %s does not read '%s'",
                       loops->label, st->stage);
            return false;
        }
    }
    if (info[prim].outs < 0 && st->nouts > 0) {
        diag_error(src, st->out_spans[0], "%s names no new loops: remove '-> ...'",
                   prim_name(prim));
        return false;
    }
    if (info[prim].outs >= 0 && st->nouts != info[prim].outs) {
        Span outs = st->span;
        if (st->nouts > 0)
            outs = (Span){ st->out_spans[0].begin, st->out_spans[st->nouts - 1].end };
        diag_error(src, outs,
                   "%s names %d new loop%s after '->', got %d",
                   prim_name(prim), info[prim].outs, info[prim].outs == 1 ? "" : "s",
                   st->nouts);
        return false;
    }
    if (info[prim].result && !st->result) {
        diag_error(src, st->span, "%s creates a stage: name it, as in %s_c = %s.%s(...)",
                   prim_name(prim), st->stage, st->stage, prim_name(prim));
        return false;
    }
    if (!info[prim].result && st->result) {
        diag_error(src, st->result_span, "%s creates no stage: remove '%s ='",
                   prim_name(prim), st->result);
        return false;
    }
    if (st->at && !info[prim].at) {
        diag_error(src, st->at_span, "%s takes no 'at'", prim_name(prim));
        return false;
    }
    if (st->at) {
        /* at_span covers "at LOOP"; the loop's name ends it. */
        Span name = { st->at_span.end - (uint32_t)strlen(st->at), st->at_span.end };
        SchedArg at = { .kind = SA_NAME, .span = name, .name = st->at };
        if (!check_loop(c, loops, &at))
            return false;
    }
    if (!check_new_names(c, s ? s : loops, st))
        return false;
    if (st->result) {
        bool clash = find_stage(c, st->result) || find_tensor(c->g, st->result);
        for (int d = 0; d < c->g->ndims && !clash; d++)
            clash = strcmp(c->g->dims[d].name, st->result) == 0;
        if (clash) {
            diag_error(src, st->result_span, "'%s' is already defined", st->result);
            return false;
        }
    }

    /* Rename loops as the primitive will. */
    switch (prim) {
    case PR_SPLIT:
        replace_loop(c, s, find_loop(s, st->args[0].name), st->outs, 2);
        break;
    case PR_TILE: {
        int a = find_loop(s, st->args[0].name), b = find_loop(s, st->args[1].name);
        if (a == b) {
            diag_error(src, st->args[1].span, "tile needs two different loops");
            return false;
        }
        replace_loop(c, s, a, st->outs, 4);
        replace_loop(c, s, find_loop(s, st->args[1].name), NULL, 0);
        break;
    }
    case PR_FUSE: {
        int a = find_loop(s, st->args[0].name);
        if (a == find_loop(s, st->args[1].name)) {
            diag_error(src, st->args[1].span, "fuse needs two different loops");
            return false;
        }
        replace_loop(c, s, a, st->outs, 1);
        replace_loop(c, s, find_loop(s, st->args[1].name), NULL, 0);
        break;
    }
    case PR_REORDER:
        for (int i = 0; i < st->nargs; i++)
            for (int k = 0; k < i; k++)
                if (strcmp(st->args[i].name, st->args[k].name) == 0) {
                    diag_error(src, st->args[i].span, "reorder names '%s' twice",
                               st->args[i].name);
                    return false;
                }
        break;
    case PR_CACHE_READ: {
        StageLoops *n = add_stage(c, st->result, NULL);
        const Tensor *t = read_tensor;
        int rank = t ? t->rank : 0;
        for (int d = 0; d < rank; d++)
            vec_push(c->arena, &n->loops, arena_printf(c->arena, "ax%d", d));
        break;
    }
    case PR_CACHE_WRITE: {
        StageLoops *n = add_stage(c, st->result, NULL);
        n->loops = s->loops;
        break;
    }
    case PR_COMPUTE_INLINE:
        if (s->tensor && sch_inline_refused(c->arena, src, st, s->tensor))
            return false;
        break;
    default:
        break;
    }
    return true;
}

/* Resolves knob uses (?T) to their definitions in the same schedule. */
static bool resolve_knobs(Checker *c, Schedule *s)
{
    const Source *src = c->g->src;
    for (int i = 0; i < s->nknobs; i++)
        for (int k = 0; k < i; k++)
            if (strcmp(s->knobs[i]->name, s->knobs[k]->name) == 0) {
                diag_error(src, s->knobs[i]->span, "knob ?%s is already defined",
                           s->knobs[i]->name);
                diag_note(src, s->knobs[k]->span, "the first definition");
                return false;
            }
    for (int i = 0; i < s->nstmts; i++) {
        SchedStmt *st = s->stmts[i];
        for (int a = 0; a < st->nargs; a++) {
            SchedArg *arg = &st->args[a];
            if (arg->kind != SA_KNOB || arg->knob->nvalues > 0)
                continue;
            Knob *def = NULL;
            for (int k = 0; k < s->nknobs; k++)
                if (strcmp(s->knobs[k]->name, arg->knob->name) == 0)
                    def = s->knobs[k];
            if (!def) {
                diag_error(src, arg->span,
                           "knob ?%s has no values: define it once as ?%s in [v1, v2, ...]",
                           arg->knob->name, arg->knob->name);
                return false;
            }
            if (def->span.begin > arg->span.begin) {
                diag_error(src, arg->span, "knob ?%s is used before its definition",
                           arg->knob->name);
                diag_note(src, def->span, "move the values here, to the first use");
                return false;
            }
            arg->knob = def;
        }
    }
    return true;
}

/* S's when clauses: each names a dim declared with a range (run-time, or
 * made static by -D), once, with a nonempty range inside the dim's. */
static bool check_when(const Graph *g, Schedule *s)
{
    for (int i = 0; i < s->nwhen; i++) {
        SchedWhen *w = &s->when[i];
        w->index = -1;
        for (int d = 0; d < g->ndims; d++)
            if (strcmp(g->dims[d].name, w->dim) == 0)
                w->index = d;
        const Dim *dim = w->index >= 0 ? &g->dims[w->index] : NULL;
        if (!dim) {
            diag_error(g->src, w->dim_span, "'when' names '%s', which is no dim of the program",
                       w->dim);
            return false;
        }
        if (!dim->declared && !(dim->overridden && dim->range_span.end)) {
            diag_error(g->src, w->dim_span,
                       "'when' names '%s', which is %s: only a run-time dim (dim %s in LO..HI) has sizes to choose a schedule by",
                       w->dim, dim->runtime ? "computed from other dims" : "a static dim", w->dim);
            return false;
        }
        for (int k = 0; k < i; k++)
            if (s->when[k].index == w->index) {
                diag_error(g->src, w->dim_span, "'when' names '%s' twice", w->dim);
                return false;
            }
        if (w->lo > w->hi) {
            diag_error(g->src, w->range_span, "empty range %lld..%lld of '%s': the range is inclusive, LO..HI with LO <= HI",
                       (long long)w->lo, (long long)w->hi, w->dim);
            return false;
        }
        if (dim->runtime && (w->lo < dim->lo || w->hi > dim->hi)) {
            diag_error(g->src, w->range_span, "sizes %lld..%lld of '%s' are outside its range %lld..%lld",
                       (long long)w->lo, (long long)w->hi, w->dim, (long long)dim->lo,
                       (long long)dim->hi);
            diag_note(g->src, dim->range_span, "the range of '%s'", w->dim);
            return false;
        }
    }
    return true;
}

/* The sizes S is for along dim D: its when clause's, else all of D's. */
static void when_range(const Graph *g, const Schedule *s, int d, int64_t *lo, int64_t *hi)
{
    *lo = g->dims[d].lo;
    *hi = g->dims[d].hi;
    for (int i = 0; i < s->nwhen; i++)
        if (s->when[i].index == d) {
            *lo = s->when[i].lo;
            *hi = s->when[i].hi;
        }
}

/* Do the sizes A and B are for overlap (along every dim)? */
static bool whens_overlap(const Graph *g, const Schedule *a, const Schedule *b)
{
    for (int d = 0; d < g->ndims; d++) {
        int64_t alo, ahi, blo, bhi;
        when_range(g, a, d, &alo, &ahi);
        when_range(g, b, d, &blo, &bhi);
        if (ahi < blo || bhi < alo)
            return false;
    }
    return true;
}

bool sch_check(Graph *g)
{
    Arena scratch = {0};
    Checker c = { .arena = &scratch, .g = g };
    bool ok = true;
    for (int i = 0; i < g->nschedules && ok; i++) {
        Schedule *s = g->schedules[i];
        c.sched = s;
        if (s->target == TARGET_COUNT) {
            diag_error(g->src, s->target_span,
                       "unknown schedule target '%s': expected cpu or cuda", s->unknown_target);
            ok = false;
            break;
        }
        if (!check_when(g, s)) {
            ok = false;
            break;
        }
        for (int k = 0; k < i && ok; k++) {
            const Schedule *f = g->schedules[k];
            if (f->target != s->target)
                continue;
            if (!s->nwhen && !f->nwhen) {
                diag_error(g->src, s->target_span,
                           "a second schedule for %s: a program has one schedule per target (and one per 'when' range)",
                           target_name(s->target));
                diag_note(g->src, f->target_span, "the first schedule for %s",
                          target_name(s->target));
                ok = false;
            } else if (s->nwhen && f->nwhen && whens_overlap(g, f, s)) {
                diag_error(g->src, s->when[0].dim_span,
                           "the sizes of this schedule %s overlap those of an earlier one: each size has one schedule at most",
                           target_name(s->target));
                diag_note(g->src, f->when[0].dim_span, "the earlier schedule %s for these sizes",
                          target_name(s->target));
                ok = false;
            }
        }
        if (!ok || !resolve_knobs(&c, s))
            ok = false;
        init_stages(&c);
        for (int k = 0; k < s->nstmts && ok; k++)
            ok = check_stmt(&c, s->stmts[k]);
    }
    arena_free(&scratch);
    return ok;
}

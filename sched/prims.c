/* prims.c — the primitive table, the schedule printer and knob setting.
 *
 * The tables themselves are the SCHED_PRIMS and SCH_GPU_AXES X-macros in
 * sched.h; this file turns them into lookups.  The printer writes a
 * schedule back in the syntax it was parsed from, each knob followed by
 * the value it holds now, so a tuned schedule can be pasted into a .te
 * file.
 */
#include <string.h>

#include "sched/sched.h"

static const char *const prim_names[] = { SCHED_PRIMS(TE_ENUM_NAME) };

const char *prim_name(Prim p)
{
    return prim_names[p];
}

Prim prim_lookup(const char *name)
{
    return (Prim)te_name_index(prim_names, PR_COUNT, name);
}

static const char *const gpu_axis_names[] = { SCH_GPU_AXES(TE_ENUM_NAME) };

const char *sch_gpu_axis_name(GpuAxis a)
{
    return gpu_axis_names[a];
}

GpuAxis sch_gpu_axis_lookup(const char *name)
{
    return (GpuAxis)te_name_index(gpu_axis_names, GPU_AXIS_COUNT, name);
}

/* A knob prints as ?NAME=VALUE where the schedule is shown as written,
 * as its value where it is shown as applied (a trace). */
static void print_arg(FILE *out, const SchedArg *a, bool knob_names)
{
    switch (a->kind) {
    case SA_NAME:
        fputs(a->name, out);
        break;
    case SA_INT:
        fprintf(out, "%lld", (long long)a->ival);
        break;
    case SA_STRING:
        fprintf(out, "\"%s\"", a->name);
        break;
    case SA_KNOB:
        if (knob_names)
            fprintf(out, "?%s=", a->knob->name);
        fprintf(out, "%lld", a->knob->nvalues ? (long long)a->knob->values[a->knob->chosen] : 0LL);
        break;
    }
}

void sch_print_stmt_text(FILE *out, const SchedStmt *st, bool knob_names)
{
    if (st->result)
        fprintf(out, "%s = ", st->result);
    fprintf(out, "%s.%s(", st->stage, st->prim);
    for (int a = 0; a < st->nargs; a++) {
        if (a)
            fputs(", ", out);
        print_arg(out, &st->args[a], knob_names);
    }
    fputc(')', out);
    for (int o = 0; o < st->nouts; o++)
        fprintf(out, "%s%s", o ? ", " : " -> ", st->outs[o]);
    if (st->at)
        fprintf(out, " at %s", st->at);
    fputs(";\n", out);
}

void sch_add_stmt(Arena *a, Schedule *s, SchedStmt *stmt)
{
    PtrVec v = { (void **)s->stmts, s->nstmts, s->stmts_cap };
    vec_push(a, &v, stmt);
    s->stmts = (SchedStmt **)v.items;
    s->nstmts = v.len;
    s->stmts_cap = v.cap;
}

void sch_add_knob(Arena *a, Schedule *s, Knob *knob)
{
    PtrVec v = { (void **)s->knobs, s->nknobs, s->knobs_cap };
    vec_push(a, &v, knob);
    s->knobs = (Knob **)v.items;
    s->nknobs = v.len;
    s->knobs_cap = v.cap;
}

/* Does S's when hold for the sizes lo..hi (by Graph.dims index; NULL:
 * the static dims' values): every clause's range holds them? */
static bool when_holds(const Graph *g, const Schedule *s, const int64_t *lo, const int64_t *hi)
{
    for (int i = 0; i < s->nwhen; i++) {
        const SchedWhen *w = &s->when[i];
        if (w->index < 0)
            return false; /* unchecked */
        const Dim *d = &g->dims[w->index];
        int64_t l = lo ? lo[w->index] : d->value, h = hi ? hi[w->index] : d->value;
        if ((!lo && d->runtime) || l < w->lo || h > w->hi)
            return false;
    }
    return true;
}

const Schedule *sch_file_schedule(const Graph *g, Target target)
{
    /* a when schedule whose dims -D made static, at those values; else
       the one for every size */
    const Schedule *written = NULL;
    for (int i = 0; i < g->nschedules; i++)
        if (g->schedules[i]->target == target && !g->schedules[i]->nwhen)
            written = g->schedules[i];
    for (int i = 0; i < g->nschedules; i++)
        if (g->schedules[i]->target == target && g->schedules[i]->nwhen &&
            when_holds(g, g->schedules[i], NULL, NULL))
            written = g->schedules[i];
    return written;
}

const Schedule *sch_bucket_schedule(const Graph *g, Target target, const Bucket *b)
{
    for (int i = 0; i < g->nschedules; i++)
        if (g->schedules[i]->target == target && g->schedules[i]->nwhen &&
            when_holds(g, g->schedules[i], b->lo, b->hi))
            return g->schedules[i];
    for (int i = 0; i < g->nschedules; i++)
        if (g->schedules[i]->target == target && !g->schedules[i]->nwhen)
            return g->schedules[i];
    return NULL;
}

void sch_print(FILE *out, const Schedule *s)
{
    fprintf(out, "schedule %s", s->target == TARGET_COUNT ? s->unknown_target : target_name(s->target));
    for (int i = 0; i < s->nwhen; i++)
        fprintf(out, "%s %s in %lld..%lld", i ? "," : " when", s->when[i].dim, (long long)s->when[i].lo,
                (long long)s->when[i].hi);
    fputs(" {\n", out);
    for (int i = 0; i < s->nstmts; i++) {
        fputs("  ", out);
        sch_print_stmt_text(out, s->stmts[i], true);
    }
    fputs("}\n", out);
}

bool sch_set_knob(Graph *g, const char *name, int64_t value)
{
    bool found = false;
    for (int i = 0; i < g->nschedules; i++) {
        Schedule *s = g->schedules[i];
        for (int k = 0; k < s->nknobs; k++) {
            Knob *kn = s->knobs[k];
            if (strcmp(kn->name, name) != 0)
                continue;
            found = true;
            int at = -1;
            for (int v = 0; v < kn->nvalues; v++)
                if (kn->values[v] == value)
                    at = v;
            if (at < 0) {
                fprintf(stderr, "texc: -K %s=%lld: not one of the knob's values (", name,
                        (long long)value);
                for (int v = 0; v < kn->nvalues; v++)
                    fprintf(stderr, "%s%lld", v ? ", " : "", (long long)kn->values[v]);
                fputs(")\n", stderr);
                return false;
            }
            kn->chosen = at;
            kn->set = true;
        }
    }
    if (!found)
        fprintf(stderr, "texc: -K %s: the program's schedules have no knob ?%s\n", name, name);
    return found;
}

/* print_loops.c — the loop IR dumps: --dump=loops and --dump=schedule.
 *
 * sch_print_stages is the compact view after each schedule step (each
 * stage's loops with their extents and kinds); sch_print_stmt is the
 * lowered nest, one statement a line, which the golden tests compare.
 */
#include "sched/sched.h"

static const char *const kind_names[] = { SCH_LOOP_KINDS(TE_ENUM_NAME) };

void sch_print_trace_stmt(FILE *out, const SchedStmt *st)
{
    sch_print_stmt_text(out, st, false);
}

void sch_print_trace(FILE *out, const SchedState *st)
{
    fprintf(out, "schedule %s {\n", target_name(st->target));
    for (int i = 0; i < st->trace.len; i++) {
        fputs("  ", out);
        sch_print_trace_stmt(out, st->trace.items[i]);
    }
    fputs("}\n", out);
}

void sch_print_stages(FILE *out, const SchedState *st)
{
    for (int i = 0; i < st->stages.len; i++) {
        const SStage *s = st->stages.items[i];
        fprintf(out, "stage %s", s->name);
        if (s->inlined) {
            fputs(": inlined\n", out);
            continue;
        }
        if (s->flashed) {
            fprintf(out, ": in the flash kernel of %s\n", s->flashed->name);
            continue;
        }
        if (s->attach)
            fprintf(out, " at %s.%s", s->attach->name, s->attach_loop->name);
        fputc(':', out);
        for (int k = 0; k < s->loops.len; k++) {
            const Loop *l = s->loops.items[k];
            fprintf(out, "%s %s(%lld)%s", k ? "," : "", l->name, (long long)l->var->extent,
                    l->reduce ? "r" : "");
            if (l->kind == LOOP_BOUND)
                fprintf(out, " %s", sch_gpu_axis_name(l->gpu_axis));
            else if (l->kind != LOOP_SERIAL)
                fprintf(out, " %s", kind_names[l->kind]);
            if (l->pipeline)
                fprintf(out, " pipeline %d", l->pipeline);
        }
        fputc('\n', out);
        for (int g = 0; g < s->guards.len; g++) {
            fputs("  guard ", out);
            te_print_expr(out, s->guards.items[g]);
            fputc('\n', out);
        }
    }
}

static void print_index(FILE *out, const Tensor *buf, Expr *const *index)
{
    fputs(buf->name, out);
    if (buf->rank == 0)
        return;
    fputc('[', out);
    for (int d = 0; d < buf->rank; d++) {
        if (d)
            fputs(", ", out);
        te_print_expr(out, index[d]);
    }
    fputc(']', out);
}

void sch_print_stmt(FILE *out, const Stmt *s, int indent)
{
    if (!s)
        return;
    switch (s->kind) {
    case S_FOR: {
        fprintf(out, "%*s%s %s in ", indent, "",
                s->loop->kind == LOOP_BOUND ? sch_gpu_axis_name(s->loop->gpu_axis)
                                            : kind_names[s->loop->kind],
                s->loop->name);
        int64_t m;
        if (sch_const_int(s->min, &m) && m == 0) {
            fputs("[0, ", out);
            te_print_expr(out, s->extent);
        } else {
            fputs("[", out);
            te_print_expr(out, s->min);
            fputs(", ", out);
            te_print_expr(out, s->min);
            fputs(" + ", out);
            te_print_expr(out, s->extent);
        }
        fputs("):\n", out);
        sch_print_stmt(out, s->body, indent + 2);
        break;
    }
    case S_SEQ:
        for (int i = 0; i < s->n; i++)
            sch_print_stmt(out, s->stmts[i], indent);
        break;
    case S_STORE:
        fprintf(out, "%*s", indent, "");
        print_index(out, s->buf, s->index);
        fputs(" = ", out);
        te_print_expr(out, s->value);
        fputc('\n', out);
        break;
    case S_IF:
        fprintf(out, "%*sif ", indent, "");
        te_print_expr(out, s->cond);
        fputs(":\n", out);
        sch_print_stmt(out, s->body, indent + 2);
        break;
    case S_ALLOC:
        fprintf(out, "%*s%s %s %s[", indent, "",
                s->scope == SCOPE_SHARED ? "shared" : "local", dtype_name(s->buf->dtype),
                s->buf->name);
        for (int d = 0; d < s->buf->rank; d++)
            fprintf(out, "%s%lld", d ? ", " : "", (long long)s->buf->shape[d]);
        fputs("]:\n", out);
        sch_print_stmt(out, s->body, indent + 2);
        break;
    case S_FLASH: {
        const SchFlash *f = s->flash;
        fprintf(out, "%*sflash %s[", indent, "", s->buf->name);
        for (int d = 0; d < f->nbatch; d++) {
            te_print_expr(out, f->batch_at[d]);
            fputs(", ", out);
        }
        fprintf(out, "0..%lld, 0..%lld] over %lld keys in tiles of %lld: q = ", (long long)f->sq,
                (long long)f->dv, (long long)f->sk, (long long)f->bk);
        te_print_expr(out, f->q);
        fputs(", k = ", out);
        te_print_expr(out, f->k);
        fputs(", v = ", out);
        te_print_expr(out, f->v);
        fputc('\n', out);
        break;
    }
    }
}

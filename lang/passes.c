/* passes.c — the graph optimizer's driver.
 *
 * A straight list: each pass in TE_PASSES order, unless -fno-NAME turned
 * it off, each followed by its dump when --dump=after-NAME asked for it.
 * The passes themselves live one per file (pass_NAME.c).
 */

#include "texc.h"

static const char *const names[] = {
#define X(n, d) #n,
    TE_PASSES(X)
#undef X
};
static const char *const descriptions[] = {
#define X(n, d) d,
    TE_PASSES(X)
#undef X
};
static bool (*const entries[])(OptCtx *, Graph *) = {
#define X(n, d) te_pass_##n,
    TE_PASSES(X)
#undef X
};

const char *te_pass_name(PassId p) { return names[p]; }
const char *te_pass_description(PassId p) { return descriptions[p]; }

PassId te_pass_lookup(const char *name)
{
    return (PassId)te_name_index(names, PASS_COUNT, name);
}

static int count_stages(const Graph *g)
{
    int n = 0;
    for (int i = 0; i < g->ntensors; i++)
        n += g->tensors[i]->kind == TK_STAGE && !g->tensors[i]->packs;
    return n;
}

bool te_optimize(Arena *a, Graph *g, const OptOptions *o, OptStats *stats)
{
    OptCtx c = { a, o, stats };
    stats->stages_before = count_stages(g);
    g->strict_fp = o->strict_fp;
    for (int p = 0; p < PASS_COUNT; p++) {
        if (!(o->disabled & (1u << p)) && !entries[p](&c, g))
            return false;
        if (o->dump_after & (1u << p)) {
            fprintf(o->dump, "# after %s%s\n", names[p],
                    (o->disabled & (1u << p)) ? " (disabled)" : "");
            te_print_graph(o->dump, g);
        }
    }
    stats->kernels_after = count_stages(g);
    return true;
}

void te_print_kernels(FILE *out, const Graph *g)
{
    for (int i = 0; i < g->ntensors; i++) {
        const Tensor *t = g->tensors[i];
        if (t->kind != TK_STAGE)
            continue;
        if (t->packs) {
            fprintf(out, "prepack %s: %s in panels of %lld\n", t->name, t->packs->name,
                    (long long)t->pack_width);
            continue;
        }
        fprintf(out, "kernel %s", t->name);
        if (t->anchor)
            fprintf(out, " (anchor %s)", t->anchor);
        if (t->naliases) {
            fputs(": fuses", out);
            for (int k = 0; k < t->naliases; k++)
                fprintf(out, "%s %s", k ? "," : "", t->aliases[k]);
        }
        fputc('\n', out);
    }
}

static void count(FILE *out, bool *first, int n, const char *what, const char *plural)
{
    if (n == 0)
        return;
    fprintf(out, "%s%s %d %s", *first ? "" : ";", *first ? "" : "", n, n == 1 ? what : plural);
    *first = false;
}

void te_print_opt_summary(FILE *out, const OptStats *s)
{
    fprintf(out, "texc: %d stage%s -> %d kernel%s", s->stages_before,
            s->stages_before == 1 ? "" : "s", s->kernels_after, s->kernels_after == 1 ? "" : "s");
    bool first = false;
    count(out, &first, s->folded, "constant folded", "constants folded");
    count(out, &first, s->removed, "stage removed", "stages removed");
    count(out, &first, s->cse, "common subexpression shared", "common subexpressions shared");
    count(out, &first, s->simplified, "algebraic rewrite", "algebraic rewrites");
    count(out, &first, s->substituted, "operator substituted", "operators substituted");
    count(out, &first, s->fused, "stage fused", "stages fused");
    count(out, &first, s->packed, "weight prepacked", "weights prepacked");
    for (int i = 0; i < s->layout_notes.len; i++)
        fprintf(out, "; %s", (const char *)s->layout_notes.items[i]);
    for (int i = 0; i < s->notes.len; i++)
        fprintf(out, "; %s", (const char *)s->notes.items[i]);
    fputc('\n', out);
}


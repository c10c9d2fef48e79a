/* passes.c — the graph optimizer's driver.
 *
 * A straight list: each pass in TE_PASSES order, unless -fno-NAME turned
 * it off, each followed by its dump when --dump=after-NAME asked for it.
 * The passes themselves live one per file (pass_NAME.c).
 *
 * Provenance: before the first pass the driver keeps the stages as the
 * program wrote them (Graph.origins), and after each pass it records that
 * pass as the one that merged every alias the pass added
 * (Tensor.alias_pass), so that schedule messages can say what became of
 * a stage the user named: fused, merged with an equal one, removed.
 */

#include <string.h>

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
        n += g->tensors[i]->kind == TK_STAGE && !te_prepacked(g->tensors[i]);
    return n;
}

static void keep_origins(Arena *a, Graph *g)
{
    g->origins = arena_alloc(a, sizeof *g->origins * (size_t)(g->ntensors + 1));
    g->norigins = 0;
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        if (t->kind != TK_STAGE)
            continue;
        StageOrigin *o = &g->origins[g->norigins++];
        o->name = t->name;
        o->tensor = t;
        o->var_names = arena_alloc(a, sizeof *o->var_names * (size_t)(t->rank + 1));
        for (int d = 0; d < t->rank; d++)
            o->var_names[d] = t->vars[d]->name;
    }
}

/* The aliases pass P added are P's. */
static void record_alias_pass(Graph *g, PassId p)
{
    for (int i = 0; i < g->ntensors; i++) {
        Tensor *t = g->tensors[i];
        for (int k = 0; k < t->naliases; k++)
            if (t->alias_pass[k] == PASS_COUNT)
                t->alias_pass[k] = (unsigned char)p;
    }
}

const StageOrigin *te_stage_origin(const Graph *g, const char *name)
{
    for (int i = 0; i < g->norigins; i++)
        if (strcmp(g->origins[i].name, name) == 0)
            return &g->origins[i];
    return NULL;
}

bool te_optimize(Arena *a, Graph *g, const OptOptions *o, OptStats *stats)
{
    OptCtx c = { a, o, stats };
    stats->stages_before = count_stages(g);
    g->strict_fp = o->strict_fp;
    keep_origins(a, g);
    for (int p = 0; p < PASS_COUNT; p++) {
        if (!(o->disabled & (1u << p)) && !entries[p](&c, g))
            return false;
        record_alias_pass(g, (PassId)p);
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
        if (te_prepacked(t)) {
            fprintf(out, "prepack %s: %s in panels of %lld\n", t->name, t->packs->name,
                    (long long)t->pack_width);
            continue;
        }
        fprintf(out, "kernel %s", t->name);
        if (t->packs && !t->pack_width)
            fprintf(out, " (packs %s in one panel of run-time width, at every call)", t->packs->name);
        else if (t->packs)
            fprintf(out, " (packs %s in panels of %lld, at every call)", t->packs->name,
                    (long long)t->pack_width);
        if (t->anchor)
            fprintf(out, " (anchor %s)", t->anchor);
        if (t->naliases) {
            fputs(": fuses", out);
            for (int k = 0; k < t->naliases; k++)
                fprintf(out, "%s %s", k ? "," : "", t->aliases[k]);
        }
        fputc('\n', out);
        for (int k = 0; k < t->fuse_notes.len; k++)
            fprintf(out, "  %s\n", (const char *)t->fuse_notes.items[k]);
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


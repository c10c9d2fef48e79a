/* build.c — the build sequence: what every build of an optimized graph
 * does before a backend sees it, written once.  texc's own build
 * (driver/main.c), every candidate the tuner builds (tuner/measure.c's
 * build child) and every point it checks (tuner/space.c's point_applies)
 * call sch_build, so the tuner times and checks exactly what a build
 * makes.
 *
 * requires: a Graph the optimizer ran on (lang/passes.c) and whose
 * schedules sch_check accepted; B->sched, the schedule to build (the
 * file's, the tuning log's winner, a tuner candidate; NULL: none, the
 * default for every stage).
 * guarantees, in order:
 *   1. layouts (sch_build_layout): unless -fno-layout cleared g->layouts,
 *      the const weights that B->sched's tiles want in panels are
 *      prepacked (layout.c: the schedule's tiles, else the default's,
 *      sch_default_panel_width), any earlier assignment undone first.
 *      This is the only place layouts are
 *      assigned: they depend on the schedule, so they are assigned once
 *      per build, for the schedule built;
 *   2. a SchedState of the graph as laid out;
 *   3. B->sched's statements, then the default schedule (default.c) for
 *      the stages it leaves out (B->naive: sch_naive's, for every stage);
 *   4. lowered into *FN.
 * A failed step is a diagnostic and NULL.  Step 1 changes G in place
 * (from B->graph_arena): a tuner child builds on its own copy of the
 * graph, and a later build simply assigns again.
 *
 * The dumps come where their step is: --dump=after-layout and
 * --dump=kernels after step 1 (layout assignment was once the
 * optimizer's last pass, and its dump keeps that name and form),
 * --dump=loops before step 3, after each statement, and after lowering.
 */
#include "sched/sched.h"

void sch_build_layout(const SchedBuild *b)
{
    Graph *g = b->g;
    sch_relayout(b->graph_arena ? b->graph_arena : b->arena, g, b->target, b->sched,
                 b->layout_notes);
    /* flushed: the messages of the steps after them come after them too,
       when both streams go to one file */
    if (b->dump_layout) {
        fprintf(b->dump_layout, "# after %s%s\n", SCH_LAYOUT_STEP, g->layouts ? "" : " (disabled)");
        te_print_graph(b->dump_layout, g);
        fflush(b->dump_layout);
    }
    if (b->dump_kernels) {
        te_print_kernels(b->dump_kernels, g);
        fflush(b->dump_kernels);
    }
}

SchedState *sch_build(const SchedBuild *b, LoweredFunc *fn)
{
    if (!b->keep_layout)
        sch_build_layout(b);
    SchedState *st = sch_state_new_bucket(b->arena, b->g, b->target, b->bucket);
    st->sm = b->sm;
    FILE *loops = b->dump_loops;
    if (loops) {
        fputs("# before scheduling\n", loops);
        sch_print_stages(loops, st);
    }
    /* the schedule given, then the default for the stages it leaves out */
    if (b->sched && !sch_apply_schedule(st, b->sched, loops))
        return NULL;
    if (!sch_apply_schedule(st, b->naive ? sch_naive(st) : sch_default(st, b->sched), loops))
        return NULL;
    if (!sch_lower(st, fn))
        return NULL;
    if (loops) {
        if (fn->prepack) {
            fputs("# lowered: prepack\n", loops);
            sch_print_stmt(loops, fn->prepack, 0);
        }
        fputs("# lowered\n", loops);
        sch_print_stmt(loops, fn->body, 0);
    }
    return st;
}

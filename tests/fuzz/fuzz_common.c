/* fuzz_common.c — see fuzz_common.h. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_common.h"

FILE *fuzz_devnull(void)
{
    static FILE *devnull;
    if (!devnull) {
        devnull = fopen("/dev/null", "w");
        if (!devnull) {
            perror("fuzz: /dev/null");
            abort();
        }
    }
    return devnull;
}

void fuzz_quiet(void)
{
    diag_stream = fuzz_devnull();
    diag_errors = 0;
    diag_warnings = 0;
}

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: FINDING: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void fuzz_trace(const char *fmt, ...)
{
    static int on = -1;
    if (on < 0)
        on = getenv("TEXC_FUZZ_TRACE") != NULL;
    if (!on)
        return;
    va_list ap;
    va_start(ap, fmt);
    /* fd 2, not stderr: a target may have pointed stderr at /dev/null */
    dprintf(2, "fuzz: ");
    vdprintf(2, fmt, ap);
    dprintf(2, "\n");
    va_end(ap);
}

void fuzz_program(FuzzProgram *p, Arena *arena, const uint8_t *data, size_t size)
{
    char *text = arena_alloc(arena, size + 1); /* zeroed: NUL-terminated */
    if (size)
        memcpy(text, data, size);
    p->arena = arena;
    src_from_string(&p->src, "fuzz.te", text, size);
}

Graph *fuzz_graph(const FuzzProgram *p)
{
    fuzz_quiet(); /* the counts of an earlier graph's diagnostics go */
    Parser parser = { .arena = p->arena, .src = &p->src };
    Program prog = {0};
    if (!fe_parse(&parser, &prog))
        return NULL;
    return fe_sema(p->arena, &p->src, &prog, NULL, 0);
}

Graph *fuzz_optimized(const FuzzProgram *p, const OptOptions *opt)
{
    Graph *g = fuzz_graph(p);
    if (!g)
        return NULL;
    OptOptions defaults = { .dump = fuzz_devnull() };
    OptStats stats = {0};
    if (!te_optimize(p->arena, g, opt ? opt : &defaults, &stats))
        return NULL;
    g->layouts = true;
    return sch_check(g) ? g : NULL;
}

static int64_t saturating_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t saturating_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* The most points any reduction in X runs over (nested ones multiply). */
static int64_t reduce_points(const Expr *x)
{
    if (!x)
        return 1;
    int64_t most = 1;
    for (int i = 0; i < x->nargs; i++) {
        int64_t k = reduce_points(x->args[i]);
        if (k > most)
            most = k;
    }
    if (x->kind == EX_REDUCE)
        for (int i = 0; i < x->naxes; i++)
            most = saturating_mul(most, x->axes[i]->extent > 0 ? x->axes[i]->extent : 1);
    return most;
}

int64_t fuzz_work(const Graph *g)
{
    int64_t work = 0;
    for (int i = 0; i < g->ntensors; i++) {
        const Tensor *t = g->tensors[i];
        int64_t points = tensor_elems(t);
        if (t->kind == TK_STAGE)
            points = saturating_mul(points, reduce_points(t->body));
        work = saturating_add(work, points);
    }
    return work;
}

bool fuzz_build(Arena *a, Graph *g, Target target, const Schedule *sched)
{
    SchedBuild b = { .arena = a, .g = g, .target = target, .sched = sched };
    LoweredFunc fn = {0};
    SchedState *st = sch_build(&b, &fn);
    WorkspacePlan plan;
    if (!st || !cg_plan_workspace(a, st, &fn, &plan)) {
        fuzz_trace("build for %s refused", target_name(target));
        return false;
    }
    CodegenOptions co = { .name = "fuzz", .header = "fuzz.h", .source_path = "fuzz.te",
                          .target = target, .schedule_from = "the fuzzer" };
    bool ok;
    if (target == TARGET_CUDA) {
        CudaProgram prog;
        ok = cg_cuda_emit(st, &fn, &co, "sm_80", 80, &prog);
        if (ok)
            fputs(prog.source, fuzz_devnull());
    } else {
        ok = cg_emit_c(st, &fn, &co, fuzz_devnull(), fuzz_devnull());
    }
    fuzz_trace("built for %s under %s: %s", target_name(target),
               sched ? "a schedule" : "the default schedule", ok ? "ok" : "refused");
    return ok;
}

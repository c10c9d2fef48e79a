/* main.c — the texc command line.
 *
 * The driver lives in driver/, above every other directory: it is the one
 * place that calls the frontend (text -> checked graph), the optimizer
 * (lang/), the scheduler, the backends and the tuner, so none of them
 * needs to know about another's options.  It is a straight line: read,
 * lex+parse, check, (dump), then the action the options ask for.  Exit
 * status: 0 success, 1 an error in the user's program (a diagnostic was
 * printed), 2 a usage error.  Output files are written only after
 * everything that can fail on the program has succeeded, as one set
 * (codegen/output.c): all of them, or none if writing one fails.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "frontend/frontend.h"
#include "onnx/onnx.h"
#include "tuner/tuner.h"

enum {
    DUMP_TOKENS = 1 << 0,
    DUMP_AST = 1 << 1,
    DUMP_GRAPH = 1 << 2,
    DUMP_SCHEDULE = 1 << 3,
    DUMP_LOOPS = 1 << 4,
    DUMP_CUDA = 1 << 5,
    DUMP_KERNELS = 1 << 6,
    DUMP_SPACE = 1 << 7,
    DUMP_MEMORY = 1 << 8,
};

static const struct {
    const char *name;
    unsigned bit;
    const char *help;
} dumps[] = {
    { "tokens", DUMP_TOKENS, "the tokens, as the lexer sees them" },
    { "ast", DUMP_AST, "the syntax tree, as parsed" },
    { "graph", DUMP_GRAPH, "the checked tensor graph: every stage's shape and dtype" },
    { "schedule", DUMP_SCHEDULE, "the schedule applied, as a trace with every value" },
    { "loops", DUMP_LOOPS, "the loop nests after every schedule step and after lowering" },
    { "cuda", DUMP_CUDA, "the generated CUDA C (--target cuda)" },
    { "kernels", DUMP_KERNELS, "the kernels after fusion: each one's anchor and fused stages" },
    { "space", DUMP_SPACE, "the tuner's search space and its size" },
    { "memory", DUMP_MEMORY, "the intermediates' live ranges, offsets and peak bytes" },
};

typedef struct InputFile {
    const char *name, *path;
} InputFile;

/* A -D NAME=LO..HI[=HINT]: RANGE false for a -D NAME=VALUE; HINT 0
 * when not given. */
typedef struct DimRange {
    bool range;
    int64_t lo, hi, hint;
} DimRange;

typedef struct Options {
    const char *file;
    const char *prefix; /* -o */
    Target target;
    const char *arch;
    unsigned dump;
    bool eval;
    bool check_only; /* --check: no output files */
    bool eval_optimized; /* --eval=optimized: evaluate after the passes */
    bool compile;    /* -c: also compile NAME.o */
    bool harness;    /* --harness: also write NAME_harness.c */
    bool profile;    /* --profile: time each kernel step (codegen/c.c) */
    bool save_inputs; /* --eval --save-inputs: write the inputs too */
    uint64_t seed;
    bool verbose;
    DimOverride *defines;
    int ndefines;
    DimRange *ranges;    /* per define: -D NAME=LO..HI[=HINT] (ONNX models) */
    const char **knobs; /* NAME=VALUE */
    int nknobs;
    InputFile *inputs;
    int ninputs;
    OptOptions opt; /* -fno-PASS, -fstrict-fp, --dump=after-PASS */
    bool no_layout;         /* -fno-layout: the build's layout step is off */
    bool no_flash;          /* -fno-flash: the default schedule flashes nothing */
    bool dump_after_layout; /* --dump=after-layout */
    bool tune;          /* --tune */
    TuneOptions tuning; /* --trials, --time-budget, --jobs, --log, --plot */
    const char *log_summary; /* --log-summary FILE */
    CudaOptions cuda;   /* --embed, --keep, --dump=cuda */
    BucketSpec *buckets; /* --buckets DIM=LIST, one per dim */
    int nbuckets;
    bool emit_te;        /* --emit-te: write PREFIX.te (an ONNX model's program) */
    bool embed_weights;  /* --embed-weights: an ONNX model's weights in NAME.c */
    const OxImport *onnx; /* FILE is an ONNX model: its program's weights */
} Options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: texc [options] FILE.te\n"
            "       texc [options] MODEL.onnx\n"
            "\n"
            "Compiles a tensor-expression program, or an ONNX model imported as one\n"
            "(its weights: PREFIX.weights beside PREFIX.h and PREFIX.c, or PREFIX.cubin).\n"
            "\n"
            "options:\n"
            "  -o PREFIX           name outputs PREFIX.* (default: FILE's base name)\n"
            "  -D NAME=VALUE       override the dim NAME (ONNX: bind the symbolic input dim NAME)\n"
            "  -D NAME=LO..HI[=HINT]\n"
            "                      ONNX: keep the symbolic input dim NAME a run-time dim, LO\n"
            "                      to HI inclusive (as `dim NAME in LO..HI = HINT;`)\n"
            "  -K NAME=VALUE       set the schedule knob ?NAME\n"
            "      --target=T      cpu (default) or cuda\n"
            "      --arch=sm_XX    CUDA architecture\n"
            "      --dump=WHAT     print an intermediate form (comma-separated):\n");
    for (size_t i = 0; i < sizeof dumps / sizeof dumps[0]; i++)
        fprintf(out, "                        %-9s %s\n", dumps[i].name, dumps[i].help);
    fprintf(out, "                        after-PASS the graph after an optimizer pass\n"
                 "  -fno-PASS           turn an optimizer pass off; the passes:\n");
    for (int p = 0; p < PASS_COUNT; p++)
        fprintf(out, "                        %-10s %s\n", te_pass_name((PassId)p),
                te_pass_description((PassId)p));
    /* the build's first step (sched/build.c), turned off and dumped as if
       it were the optimizer's last pass */
    fprintf(out, "                        %-10s %s\n", SCH_LAYOUT_STEP, SCH_LAYOUT_DESCRIPTION);
    fprintf(out, "                        %-10s %s\n", "flash", "the default schedule's flash kernels (attention)");
    fprintf(out, "  -fstrict-fp         only rewrites that are exact in the dtype (no reassociation)\n");
    fprintf(out,
            "      --check         check the program (and print dumps); write nothing\n"
            "  -c                  also compile NAME.o with the C compiler texc was built with\n"
            "      --harness       also write NAME_harness.c, a main() that runs NAME on .npy files\n"
            "      --profile       time each kernel: NAME_profile_print(FILE *) prints the table (cpu)\n"
            "      --tune          search schedules, log every measurement, build the winner;\n"
            "                      a program of several kernels: one task per kernel\n"
            "      --tune-whole    one search space for the whole program (--tune, and the\n"
            "                      build's records), not one task per kernel\n"
            "      --trials=N      at most N candidates (--tune)\n"
            "      --time-budget=S stop tuning after S seconds\n"
            "      --jobs=N        parallel candidate builds (default: the number of cores)\n"
            "      --tune-cache=C  cold (default): time each call on inputs not in cache;\n"
            "                      warm: on the inputs the call before left in cache (cpu);\n"
            "                      a build uses records measured the same way\n"
            "      --log=FILE      the tuning log (default $XDG_CACHE_HOME/texc/tuning.jsonl)\n"
            "      --log-summary=FILE\n"
            "                      print the best record per workload in a tuning log\n"
            "      --plot=FILE.svg draw best-so-far against trials (--tune)\n"
            "      --embed         cuda: put the cubin's bytes in the header\n"
            "      --keep          cuda: also write NAME.cu\n"
            "      --eval[=optimized]\n"
            "                      run the reference evaluator on the program as written (or\n"
            "                      after the optimizer); write PREFIX.OUTPUT.npy\n"
            "      --save-inputs   with --eval, also write PREFIX.in.INPUT.npy\n"
            "      --emit-te       MODEL.onnx: write the imported program as PREFIX.te, and its\n"
            "                      weights as PREFIX.WEIGHT.npy (--input files for it)\n"
            "      --embed-weights MODEL.onnx: the weights in PREFIX.c, no PREFIX.weights (at\n"
            "                      most 4 MiB of them)\n"
            "      --buckets DIM=LIST\n"
            "                      the buckets of a run-time dim, each compiled as a variant:\n"
            "                      sizes and inclusive ranges, e.g. M=1,2..16,17..4096\n"
            "      --seed=N        seed of the random inputs (default 1)\n"
            "      --input NAME=FILE.npy\n"
            "                      read input NAME from a .npy file instead\n"
            "  -v, --verbose       say more\n"
            "  -q, --quiet         no warnings\n"
            "  -h, --help          this text\n"
            "  -V, --version       texc's version\n"
            "\n"
            "Exit status: 0 success, 1 an error in the program, 2 a usage error.\n");
}

static _Noreturn void usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static _Noreturn void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("texc: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\ntry 'texc --help'\n", stderr);
    va_end(ap);
    exit(2);
}

static int64_t parse_int(const char *text, const char *what)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end)
        usage_error("%s: '%s' is not an integer", what, text);
    return v;
}

static bool is_onnx(const char *file);

/* -D NAME=LO..HI or NAME=LO..HI=HINT (TEXT is what follows NAME=): a
 * run-time dim for an ONNX model's symbolic dim, te's `dim NAME in
 * LO..HI = HINT;`.  A malformed one is a usage error, as `-D M=abc` is. */
static DimRange parse_range(const char *name, char *text)
{
    char *dots = strstr(text, ".."), *eq = strchr(text, '=');
    DimRange r = { .range = true };
    char *end;
    errno = 0;
    r.lo = strtoll(text, &end, 10);
    bool bad = errno || end != dots || end == text;
    char *hi = dots + 2;
    if (eq)
        *eq = '\0';
    r.hi = strtoll(hi, &end, 10);
    bad = bad || errno || end == hi || *end;
    if (eq) {
        r.hint = strtoll(eq + 1, &end, 10);
        bad = bad || errno || end == eq + 1 || *end;
    }
    if (eq)
        *eq = '=';
    if (bad)
        usage_error("-D %s=%s: expected NAME=LO..HI or NAME=LO..HI=HINT (integers: a range of "
                    "sizes, inclusive, and the size to optimize for)",
                    name, text);
    if (r.lo < 1 || r.lo > r.hi)
        usage_error("-D %s=%s: the range must have 1 <= LO <= HI", name, text);
    if (eq && (r.hint < r.lo || r.hint > r.hi))
        usage_error("-D %s=%s: the hint %lld is outside %lld..%lld", name, text,
                    (long long)r.hint, (long long)r.lo, (long long)r.hi);
    return r;
}

/* Splits NAME=VALUE for -D, -K and --input. */
static char *split_assign(char *arg, const char *opt)
{
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        usage_error("%s expects NAME=VALUE, got '%s'", opt, arg);
    *eq = '\0';
    return eq + 1;
}

/* --buckets DIM=A,B..C,...: the list; its checks against the dim's range
 * are sema's (sched/bucket.c), which knows the range. */
static void parse_buckets(Arena *a, char *arg, BucketSpec *sp)
{
    char *list = split_assign(arg, "--buckets");
    sp->dim = arg;
    sp->text = arena_strdup(a, list);
    if (list[0] == ',' || strstr(list, ",,") || list[strlen(list) - 1] == ',')
        usage_error("--buckets %s=%s: expected sizes and ranges LO..HI separated by commas", arg,
                    sp->text);
    int cap = 1;
    for (const char *c = list; *c; c++)
        cap += *c == ',';
    sp->lo = arena_alloc(a, sizeof *sp->lo * (size_t)cap);
    sp->hi = arena_alloc(a, sizeof *sp->hi * (size_t)cap);
    for (char *item = strtok(list, ","); item; item = strtok(NULL, ",")) {
        char *dots = strstr(item, "..");
        if (dots) {
            *dots = '\0';
            sp->lo[sp->n] = parse_int(item, "--buckets");
            sp->hi[sp->n] = parse_int(dots + 2, "--buckets");
        } else {
            sp->lo[sp->n] = sp->hi[sp->n] = parse_int(item, "--buckets");
        }
        sp->n++;
    }
}

static unsigned parse_dumps(char *list, Options *o)
{
    OptOptions *opt = &o->opt;
    unsigned bits = 0;
    size_t n = strlen(list);
    if (n == 0 || list[0] == ',' || list[n - 1] == ',' || strstr(list, ",,"))
        usage_error("--dump=%s: an empty form (forms are separated by single commas; see --help)",
                    list);
    for (char *w = strtok(list, ","); w; w = strtok(NULL, ",")) {
        size_t i;
        if (strncmp(w, "after-", 6) == 0 && strcmp(w + 6, SCH_LAYOUT_STEP) == 0) {
            o->dump_after_layout = true; /* the build's layout step */
            continue;
        }
        if (strncmp(w, "after-", 6) == 0) {
            PassId p = te_pass_lookup(w + 6);
            if (p == PASS_COUNT)
                usage_error("--dump=%s: no pass is called '%s' (see --help)", w, w + 6);
            opt->dump_after |= 1u << p;
            continue;
        }
        for (i = 0; i < sizeof dumps / sizeof dumps[0]; i++)
            if (strcmp(dumps[i].name, w) == 0)
                break;
        if (i == sizeof dumps / sizeof dumps[0])
            usage_error("--dump: unknown form '%s' (see --help)", w);
        bits |= dumps[i].bit;
    }
    return bits;
}

static void parse_options(int argc, char **argv, Options *o, Arena *a)
{
    enum { OPT_TARGET = 256, OPT_ARCH, OPT_DUMP, OPT_EVAL, OPT_SEED, OPT_INPUT, OPT_CHECK,
           OPT_HARNESS, OPT_SAVE_INPUTS, OPT_TUNE, OPT_TRIALS, OPT_TIME_BUDGET, OPT_JOBS,
           OPT_LOG, OPT_LOG_SUMMARY, OPT_PLOT, OPT_EMBED, OPT_KEEP, OPT_TUNE_CACHE, OPT_TUNE_WHOLE, OPT_BUCKETS,
           OPT_PROFILE, OPT_EMIT_TE, OPT_EMBED_WEIGHTS };
    static const struct option longopts[] = {
        { "target", required_argument, NULL, OPT_TARGET },
        { "arch", required_argument, NULL, OPT_ARCH },
        { "dump", required_argument, NULL, OPT_DUMP },
        { "eval", optional_argument, NULL, OPT_EVAL },
        { "check", no_argument, NULL, OPT_CHECK },
        { "harness", no_argument, NULL, OPT_HARNESS },
        { "profile", no_argument, NULL, OPT_PROFILE },
        { "emit-te", no_argument, NULL, OPT_EMIT_TE },
        { "embed-weights", no_argument, NULL, OPT_EMBED_WEIGHTS },
        { "save-inputs", no_argument, NULL, OPT_SAVE_INPUTS },
        { "tune", no_argument, NULL, OPT_TUNE },
        { "trials", required_argument, NULL, OPT_TRIALS },
        { "time-budget", required_argument, NULL, OPT_TIME_BUDGET },
        { "jobs", required_argument, NULL, OPT_JOBS },
        { "tune-cache", required_argument, NULL, OPT_TUNE_CACHE },
        { "tune-whole", no_argument, NULL, OPT_TUNE_WHOLE },
        { "log", required_argument, NULL, OPT_LOG },
        { "log-summary", required_argument, NULL, OPT_LOG_SUMMARY },
        { "plot", required_argument, NULL, OPT_PLOT },
        { "embed", no_argument, NULL, OPT_EMBED },
        { "keep", no_argument, NULL, OPT_KEEP },
        { "seed", required_argument, NULL, OPT_SEED },
        { "buckets", required_argument, NULL, OPT_BUCKETS },
        { "input", required_argument, NULL, OPT_INPUT },
        { "verbose", no_argument, NULL, 'v' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    o->target = TARGET_CPU;
    o->seed = 1;
    o->defines = arena_alloc(a, sizeof *o->defines * (size_t)argc);
    o->ranges = arena_alloc(a, sizeof *o->ranges * (size_t)argc);
    o->knobs = arena_alloc(a, sizeof *o->knobs * (size_t)argc);
    o->inputs = arena_alloc(a, sizeof *o->inputs * (size_t)argc);
    o->buckets = arena_alloc(a, sizeof *o->buckets * (size_t)argc);
    int c;
    while ((c = getopt_long(argc, argv, "o:D:K:f:cvqhV", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            o->prefix = optarg;
            break;
        case 'D': {
            char *val = split_assign(optarg, "-D");
            if (strstr(val, "..")) {
                o->ranges[o->ndefines] = parse_range(optarg, val);
                o->defines[o->ndefines++] = (DimOverride){ optarg, 0, false };
            } else {
                o->defines[o->ndefines++] = (DimOverride){ optarg, parse_int(val, "-D"), false };
            }
            break;
        }
        case 'K':
            o->knobs[o->nknobs++] = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "strict-fp") == 0) {
                o->opt.strict_fp = true;
            } else if (strncmp(optarg, "no-", 3) == 0 && strcmp(optarg + 3, SCH_LAYOUT_STEP) == 0) {
                o->no_layout = true;
            } else if (strcmp(optarg, "no-flash") == 0) {
                o->no_flash = true;
            } else if (strncmp(optarg, "no-", 3) == 0 && te_pass_lookup(optarg + 3) != PASS_COUNT) {
                o->opt.disabled |= 1u << te_pass_lookup(optarg + 3);
            } else {
                usage_error("-f%s: expected -fstrict-fp or -fno-PASS (see --help)", optarg);
            }
            break;
        case OPT_TARGET:
            o->target = target_lookup(optarg);
            if (o->target == TARGET_COUNT)
                usage_error("--target: expected cpu or cuda, got '%s'", optarg);
            break;
        case OPT_ARCH:
            o->arch = optarg;
            break;
        case OPT_DUMP:
            o->dump |= parse_dumps(optarg, o);
            break;
        case OPT_EVAL:
            o->eval = true;
            if (optarg && strcmp(optarg, "optimized") == 0)
                o->eval_optimized = true;
            else if (optarg)
                usage_error("--eval=%s: expected --eval or --eval=optimized", optarg);
            break;
        case OPT_CHECK:
            o->check_only = true;
            break;
        case OPT_HARNESS:
            o->harness = true;
            break;
        case OPT_PROFILE:
            o->profile = true;
            break;
        case OPT_EMIT_TE:
            o->emit_te = true;
            break;
        case OPT_EMBED_WEIGHTS:
            o->embed_weights = true;
            break;
        case OPT_SAVE_INPUTS:
            o->save_inputs = true;
            break;
        case OPT_TUNE:
            o->tune = true;
            break;
        case OPT_TRIALS:
            o->tuning.trials = (int)parse_int(optarg, "--trials");
            if (o->tuning.trials <= 0)
                usage_error("--trials: expected a positive number, got %s", optarg);
            break;
        case OPT_TIME_BUDGET:
            o->tuning.time_budget = (double)parse_int(optarg, "--time-budget");
            if (o->tuning.time_budget <= 0)
                usage_error("--time-budget: expected a positive number of seconds, got %s", optarg);
            break;
        case OPT_JOBS:
            o->tuning.jobs = (int)parse_int(optarg, "--jobs");
            if (o->tuning.jobs <= 0)
                usage_error("--jobs: expected a positive number, got %s", optarg);
            break;
        case OPT_TUNE_WHOLE:
            o->tuning.whole = true;
            break;
        case OPT_TUNE_CACHE:
            if (strcmp(optarg, "warm") != 0 && strcmp(optarg, "cold") != 0)
                usage_error("--tune-cache: expected warm or cold, got %s", optarg);
            o->tuning.warm = strcmp(optarg, "warm") == 0;
            break;
        case OPT_LOG:
            o->tuning.log_path = optarg;
            break;
        case OPT_LOG_SUMMARY:
            o->log_summary = optarg;
            break;
        case OPT_PLOT:
            o->tuning.plot = optarg;
            break;
        case OPT_EMBED:
            o->cuda.embed = true;
            break;
        case OPT_KEEP:
            o->cuda.keep = true;
            break;
        case 'c':
            o->compile = true;
            break;
        case OPT_SEED:
            o->seed = (uint64_t)parse_int(optarg, "--seed");
            break;
        case OPT_BUCKETS:
            parse_buckets(a, optarg, &o->buckets[o->nbuckets++]);
            break;
        case OPT_INPUT: {
            char *path = split_assign(optarg, "--input");
            for (int k = 0; k < o->ninputs; k++)
                if (strcmp(o->inputs[k].name, optarg) == 0)
                    usage_error("--input %s: given twice (%s and %s)", optarg,
                                o->inputs[k].path, path);
            o->inputs[o->ninputs++] = (InputFile){ optarg, path };
            break;
        }
        case 'v':
            o->verbose = true;
            break;
        case 'q':
            diag_quiet = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        case 'V':
            printf("texc %s\n", TE_VERSION);
            exit(0);
        default:
            fputs("try 'texc --help'\n", stderr);
            exit(2);
        }
    }
    if (o->profile && o->target == TARGET_CUDA)
        usage_error("--profile times the C target's kernels; the cuda target has no timers "
                    "(time its launches with cuEventRecord)");
    if (o->embed_weights && o->emit_te)
        usage_error("--embed-weights puts the weights in the generated C; --emit-te writes "
                    "the program and its weights as .npy files");
    if (o->embed_weights && o->target == TARGET_CUDA)
        usage_error("--embed-weights is for the cpu target");
    if (o->log_summary && optind >= argc)
        return;
    if (optind >= argc)
        usage_error("no input file");
    if (optind + 1 < argc)
        usage_error("one input file at a time; got '%s' and '%s'", argv[optind],
                    argv[optind + 1]);
    o->file = argv[optind];
    for (int k = 0; k < o->ndefines; k++)
        if (o->ranges[k].range && !is_onnx(o->file))
            usage_error("-D %s=%lld..%lld: a range keeps an ONNX model's symbolic dim at run "
                        "time; in a .te program declare it (`dim %s in %lld..%lld;`) and -D "
                        "gives it one size",
                        o->defines[k].name, (long long)o->ranges[k].lo,
                        (long long)o->ranges[k].hi, o->defines[k].name,
                        (long long)o->ranges[k].lo, (long long)o->ranges[k].hi);
}

static bool is_onnx(const char *file)
{
    size_t n = strlen(file);
    return n > 5 && strcmp(file + n - 5, ".onnx") == 0;
}

/* The default output prefix: FILE without its directory and ".te" (or
 * ".onnx"). */
static const char *default_prefix(Arena *a, const char *file)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strlen(base);
    if (n > 3 && strcmp(base + n - 3, ".te") == 0)
        n -= 3;
    else if (n > 5 && is_onnx(base))
        n -= 5;
    return arena_strndup(a, base, n);
}

/* The output prefix: -o, else the file's name less .te.  Its last part
 * names the files (PREFIX.h, PREFIX.c, PREFIX.OUT.npy) and goes into the
 * generated #include and comments, so it must be a file name: not empty
 * (-o d/, or a file called .te), '.' or '..', and without a quote, a
 * backslash or control characters.  Otherwise a usage error. */
static const char *output_prefix(Arena *a, const Options *o)
{
    const char *prefix = o->prefix ? o->prefix : default_prefix(a, o->file);
    const char *base = strrchr(prefix, '/');
    base = base ? base + 1 : prefix;
    const char *why = NULL;
    if (!*base)
        why = "it ends in no file name";
    else if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        why = "it names a directory, not a file";
    for (const char *c = base; !why && *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20 || *c == 0x7f)
            why = "its file name has a quote, a backslash or a control character";
    if (why)
        usage_error("%s '%s': %s (PREFIX names the outputs PREFIX.h, PREFIX.c, ...; "
                    "pass -o DIR/NAME)",
                    o->prefix ? "-o" : "the output prefix from the file's name", prefix, why);
    return prefix;
}

/* Could PATH be written: an existing file we may write, or a new name in
 * a folder we may write?  (errno says why not.) */
static bool can_create(Arena *a, const char *path)
{
    if (access(path, F_OK) == 0)
        return access(path, W_OK) == 0;
    const char *slash = strrchr(path, '/');
    const char *dir = !slash ? "." : slash == path ? "/" : arena_strndup(a, path, (size_t)(slash - path));
    return access(dir, W_OK | X_OK) == 0;
}

/* Writes T's DATA as PATH, a member of SET; false after a message (a
 * stream's error is said by the commit). */
static bool npy_member(OutputSet *set, const char *path, const Tensor *t, const double *data)
{
    FILE *f = cg_output_open(set, path, true);
    if (!f)
        return false;
    if (npy_write_file(f, t, data) == 0)
        return true;
    if (!ferror(f))
        fprintf(stderr, "texc: cannot write %s: %s\n", path, strerror(errno));
    return false;
}

/* An ONNX model's weights as PREFIX.WEIGHT.npy, members of SET: the
 * --input files of the program --emit-te writes. */
static bool write_weight_npys(Arena *a, OutputSet *set, const OxImport *im, const char *prefix)
{
    for (int i = 0; im && i < im->nweights; i++) {
        const Tensor *t = im->weights[i].tensor;
        double *v = malloc(sizeof *v * (size_t)tensor_elems(t));
        if (!v) {
            fprintf(stderr, "texc: out of memory for weight '%s'\n", t->name);
            return false;
        }
        ox_weight_values(&im->weights[i], v);
        bool ok = npy_member(set, arena_printf(a, "%s.%s.npy", prefix, t->name), t, v);
        free(v);
        if (!ok)
            return false;
    }
    return true;
}

/* --emit-te: the imported program as PREFIX.te, its weights beside it. */
static int emit_te(Arena *a, const Options *o, const Source *src)
{
    const char *prefix = output_prefix(a, o);
    OutputSet set = { .arena = a };
    const char *path = arena_printf(a, "%s.te", prefix);
    FILE *f = cg_output_open(&set, path, false);
    bool ok = f && fwrite(src->text, 1, src->len, f) == src->len &&
              write_weight_npys(a, &set, o->onnx, prefix);
    if (!cg_output_commit(&set, ok))
        return 1;
    if (o->verbose)
        fprintf(stderr, "texc: wrote %s and %d weights\n", path, o->onnx->nweights);
    return 0;
}

static int run_eval(Arena *a, const Options *o, const Graph *g)
{
    double **in = arena_alloc(a, sizeof *in * (size_t)(g->ninputs + 1));
    double **out = arena_alloc(a, sizeof *out * (size_t)(g->noutputs + 1));
    int status = 1;
    for (int k = 0; k < o->ninputs; k++) {
        bool found = false;
        for (int i = 0; i < g->ninputs; i++)
            found = found || strcmp(g->inputs[i]->name, o->inputs[k].name) == 0;
        if (!found) {
            fprintf(stderr, "texc: --input %s: the program has no input '%s'\n",
                    o->inputs[k].name, o->inputs[k].name);
            return 2;
        }
    }
    for (int i = 0; i < g->ninputs; i++) {
        const Tensor *t = g->inputs[i];
        in[i] = malloc(sizeof(double) * (size_t)tensor_elems(t));
        if (!in[i]) {
            fprintf(stderr, "texc: out of memory for input '%s'\n", t->name);
            goto done;
        }
        const char *path = NULL;
        for (int k = 0; k < o->ninputs; k++)
            if (strcmp(o->inputs[k].name, t->name) == 0)
                path = o->inputs[k].path;
        const OxWeight *w = NULL;
        for (int k = 0; !path && o->onnx && k < o->onnx->nweights; k++)
            if (strcmp(o->onnx->weights[k].tensor->name, t->name) == 0)
                w = &o->onnx->weights[k];
        if (w) {
            ox_weight_values(w, in[i]); /* the model's */
        } else if (path) {
            if (npy_read(path, t, in[i]) != 0)
                goto done;
        } else {
            te_random_input(t, o->seed, in[i]);
        }
    }
    if (te_eval(g, in, out) != 0)
        goto done;
    /* one set, as a build's: all of them in place, or none */
    const char *prefix = output_prefix(a, o);
    OutputSet set = { .arena = a };
    bool ok = true;
    for (int i = 0; ok && o->save_inputs && i < g->ninputs; i++)
        ok = npy_member(&set, arena_printf(a, "%s.in.%s.npy", prefix, g->inputs[i]->name),
                        g->inputs[i], in[i]);
    for (int i = 0; ok && i < g->noutputs; i++)
        ok = npy_member(&set, arena_printf(a, "%s.%s.npy", prefix, g->outputs[i]->name),
                        g->outputs[i], out[i]);
    if (!cg_output_commit(&set, ok))
        goto done;
    for (int i = 0; o->verbose && i < g->noutputs; i++)
        fprintf(stderr, "texc: wrote %s.%s.npy\n", prefix, g->outputs[i]->name);
    status = 0;
done:
    for (int i = 0; i < g->ninputs; i++)
        free(in[i]);
    for (int i = 0; i < g->noutputs; i++)
        free(out[i]);
    return status;
}

/* Weight I's values (CgWeights.values): CTX is the OxWeight of each. */
static void weight_values(const void *ctx, int i, double *out)
{
    const OxWeight *const *weights = ctx;
    ox_weight_values(weights[i], out);
}

/* An ONNX model's weights among G's inputs (those the import names), for
 * NAME.weights and the API that loads it (codegen/weights.c). */
static const CgWeights *model_weights(Arena *a, const Options *o, const Graph *g)
{
    CgWeights *w = arena_alloc(a, sizeof *w);
    int *input = arena_alloc(a, sizeof *input * (size_t)(g->ninputs + 1));
    const OxWeight **of = arena_alloc(a, sizeof *of * (size_t)(g->ninputs + 1));
    for (int i = 0; i < g->ninputs; i++)
        for (int k = 0; k < o->onnx->nweights; k++)
            if (strcmp(o->onnx->weights[k].tensor->name, g->inputs[i]->name) == 0) {
                input[w->n] = i;
                of[w->n++] = &o->onnx->weights[k];
            }
    w->input = input;
    w->values = weight_values;
    w->ctx = of;
    w->embed = o->embed_weights;
    return w;
}

/* Runs ARGV (no shell) and waits; true if it exited 0. */
static bool run_command(char *const *argv, bool verbose)
{
    if (verbose) {
        fputs("texc:", stderr);
        for (char *const *a = argv; *a; a++)
            fprintf(stderr, " %s", *a);
        fputc('\n', stderr);
    }
    pid_t pid;
    extern char **environ;
    int rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (rc != 0) {
        fprintf(stderr, "texc: cannot run %s: %s\n", argv[0], strerror(rc));
        return false;
    }
    int wstatus;
    while (waitpid(pid, &wstatus, 0) < 0)
        if (errno != EINTR)
            return false;
    return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
}

/* The build sequence's description (sched/build.c) for SCHED: the
 * layouts' notes go to STATS for -v's summary; the dumps asked for. */
static SchedBuild build_of(Arena *a, const Options *o, Graph *g, const Schedule *sched,
                           OptStats *stats)
{
    return (SchedBuild){ .arena = a,
                         .g = g,
                         .target = o->target,
                         .sched = sched,
                         .layout_notes = &stats->layout_notes,
                         .dump_layout = o->dump_after_layout ? stdout : NULL,
                         .dump_kernels = (o->dump & DUMP_KERNELS) ? stdout : NULL,
                         .dump_loops = (o->dump & DUMP_LOOPS) ? stdout : NULL,
                         .sm = o->target == TARGET_CUDA ? cg_cuda_sm(o->arch) : 0 };
}

/* The weights the layout step prepacked (its notes also name the
 * intermediates it packs at every call). */
static int count_prepacked(const Graph *g)
{
    int n = 0;
    for (int i = 0; i < g->ntensors; i++)
        n += te_prepacked(g->tensors[i]);
    return n;
}

/* --eval=optimized, and a schedule sch_check rejects: the build
 * sequence's first step alone, the layouts (and their dumps). */
static void layout_step(Arena *a, const Options *o, Graph *g, const Schedule *sched,
                        OptStats *stats)
{
    SchedBuild b = build_of(a, o, g, sched, stats);
    sch_build_layout(&b);
    if (g->layouts)
        stats->packed = count_prepacked(g);
}

/* The most rows (the product of all dims but the last) of a kernel that
 * reads a prepacked weight for which NAME and NAME_ws read the weights
 * where they are instead of packing them at every call.  Measured on
 * matmul_gelu (N = 3072, K = 768) at one thread: packing at every call
 * against the default schedule reading w in place, 6 against 42
 * GFLOP/s at M = 1, 84 against 201 at 16, 149 against 179 at 64, 155
 * against 172 at 128, 172 against 111 at 256. */
#define PLAIN_MAX_ROWS 128

/* Does reading G's prepacked weights where they are pay, against packing
 * them at every call?  Each one must be panelled along its last, unit
 * stride, dimension (a w[j, k] read along k would be gathered in place),
 * and read by kernels of at most PLAIN_MAX_ROWS rows. */
static bool plain_pays(const Graph *g)
{
    int packed = 0;
    for (int i = 0; i < g->ntensors; i++) {
        const Tensor *w = g->tensors[i];
        if (!te_prepacked(w))
            continue;
        packed++;
        if (w->pack_dim != w->packs->rank - 1)
            return false;
        int readers = 0;
        for (int k = 0; k < g->ntensors; k++) {
            const Tensor *r = g->tensors[k];
            if (r->kind != TK_STAGE || !r->body || !te_expr_any(r->body, te_is_load_of, w))
                continue;
            int64_t rows = 1;
            for (int d = 0; d + 1 < r->rank; d++)
                rows *= r->shape[d];
            if (rows > PLAIN_MAX_ROWS)
                return false;
            readers++;
        }
        if (!readers)
            return false;
    }
    return packed > 0;
}

/* A run-time-dims program's variants (sched/bucket.c): the buckets, the
 * layouts once (for the schedule of the bucket that holds the hints),
 * then one build per bucket under the file's schedule for it (or the
 * default), neighbours with the same schedule merged and built again.
 * Into *OUT (N of them); false after a diagnostic. */
static bool build_variants(Arena *a, const Options *o, Graph *g, OptStats *stats, CgVariant **out,
                           int *n, const char **tuned_from)
{
    PtrVec buckets = { 0 };
    if (!sch_buckets(a, g, o->target, o->buckets, o->nbuckets, &buckets))
        return false;
    /* each bucket's schedule: the tuning log's record for it, else the
       file's for it, else none (the default); the hint bucket's first,
       since the others' records were measured with the layouts it gives
       (tuner/tune.c, tune_buckets) */
    const Schedule **scheds = arena_alloc(a, sizeof *scheds * (size_t)buckets.len);
    const char **tuned = arena_alloc(a, sizeof *tuned * (size_t)buckets.len);
    const Schedule *layout_sched = NULL;
    int ntuned = 0, hint = sch_hint_bucket(g, &buckets);
    for (int step = 0; step < buckets.len; step++) {
        int i = step == 0 ? hint : step <= hint ? step - 1 : step;
        TuneOptions ob = o->tuning;
        ob.bucket = buckets.items[i];
        ob.quiet = !o->verbose;
        ob.layout_fixed = step > 0;
        ob.layout_sched = layout_sched;
        ob.hint_bucket = buckets.items[hint];
        const Schedule *file = sch_bucket_schedule(g, o->target, buckets.items[i]);
        const char *from = NULL;
        /* a program of several kernels: its kernels' records in this
           bucket (tuner/tasks.c), else the whole program's */
        scheds[i] = tune_best_tasks(a, g, &ob, &from);
        if (!scheds[i])
            scheds[i] = tune_best(a, g, file, &ob, &from);
        tuned[i] = from;
        ntuned += from != NULL;
        if (step == 0)
            layout_sched = scheds[i];
    }
    if (ntuned && !diag_quiet)
        fprintf(stderr, "texc: tuned schedules from the tuning log for %d of %d buckets\n", ntuned,
                buckets.len);
    SchedBuild lb = build_of(a, o, g, layout_sched, stats);
    sch_build_layout(&lb);
    int *first = NULL; /* after merging: each bucket's first before */
    for (int round = 0; round < 2; round++) {
        CgVariant *v = arena_alloc(a, sizeof *v * (size_t)buckets.len);
        const char **texts = arena_alloc(a, sizeof *texts * (size_t)buckets.len);
        for (int i = 0; i < buckets.len; i++) {
            const Bucket *bk = buckets.items[i];
            int k = first ? first[i] : i;
            const Schedule *sched = scheds[k];
            SchedBuild b = build_of(a, o, g, sched, stats);
            b.bucket = bk;
            b.keep_layout = true;
            b.dump_layout = b.dump_kernels = NULL;
            if (round == 0)
                b.dump_loops = NULL;
            else if (b.dump_loops)
                printf("# variant %d: %s\n", i, sch_bucket_str(a, g, bk));
            LoweredFunc *fn = arena_alloc(a, sizeof *fn);
            SchedState *st = sch_build(&b, fn);
            if (!st)
                return false;
            char *text = NULL;
            size_t len = 0;
            FILE *m = open_memstream(&text, &len);
            if (!m)
                return false;
            sch_print_trace(m, st);
            fclose(m);
            texts[i] = arena_strdup(a, text);
            free(text);
            char *hints = "";
            for (int d = 0; d < g->ndims; d++)
                if (g->dims[d].runtime && g->dims[d].declared && bk->lo[d] != bk->hi[d])
                    hints = arena_printf(a, "%s%s%s = %lld", hints, *hints ? ", " : "", g->dims[d].name,
                                         (long long)bk->hint[d]);
            const char *from =
                tuned[k] ? tuned[k]
                : !sched ? arena_printf(a, "the default%s%s", *hints ? ", at " : "", hints)
                : sched->nwhen ? arena_printf(a, "the file's `schedule %s when ...`, the default for the stages it leaves out",
                                              target_name(o->target))
                               : arena_printf(a, "the file's `schedule %s`, the default for the stages it leaves out",
                                              target_name(o->target));
            v[i] = (CgVariant){ st, fn, bk, texts[i], from };
        }
        /* the second round builds the merged list, with the dumps */
        if (round == 1 ||
            (sch_merge_buckets(a, g, &buckets, texts, &first) == 0 && !(o->dump & DUMP_LOOPS))) {
            *out = v;
            *n = buckets.len;
            /* one variant left, its schedule from the log: the whole
               build's origin */
            if (buckets.len == 1 && tuned[first ? first[0] : 0])
                *tuned_from = tuned[first ? first[0] : 0];
            return true;
        }
    }
    TE_UNREACHABLE();
}

/* Schedules, lowers and writes NAME.h and NAME.c (and NAME.o with -c).
 * With -v, prints STATS (the optimizer's summary) with the workspace. */
/* What plain_graph makes the plain entry point's graph from, made only
 * when a build finds that it pays (plain_pays). */
typedef struct PlainSource {
    const Source *src;
    const Program *prog;
} PlainSource;

static Graph *plain_graph(Arena *a, const Options *o, const Source *src, const Program *prog);

static int build(Arena *a, const Options *o, Graph *g, const PlainSource *plain_src, OptStats *stats)
{
    /* an ONNX model's weights: NAME.weights, or in NAME.c (cpu) */
    const CgWeights *weights = o->onnx ? model_weights(a, o, g) : NULL;
    int64_t weight_bytes = weights ? cg_weights_bytes(g, weights) : 0;
    if (weights && weights->embed && weight_bytes > CG_EMBED_MAX_BYTES) {
        fprintf(stderr, "%s: error: --embed-weights: the model's weights take %lld bytes, more "
                        "than the %lld (%lld MiB) texc puts in C, whose compiler's time and memory "
                        "grow with each literal; without --embed-weights they go to %s.weights\n",
                o->file, (long long)weight_bytes, (long long)CG_EMBED_MAX_BYTES,
                (long long)(CG_EMBED_MAX_BYTES >> 20), output_prefix(a, o));
        return 1;
    }
    const Schedule *written = sch_file_schedule(g, o->target);
    if (o->dump & DUMP_SPACE)
        tune_space_print(stdout, tune_space_new(a, g, written, o->target));
    if (o->tune) {
        /* in an MPI job (tuner/mpi.c) every rank tunes the same program;
           rank 0 searches, writes the log and builds, the others measure
           what it sends them, quietly, and write nothing */
        TuneOptions to = o->tuning;
        if (!tune_mpi_start(&to))
            return 1;
        bool worker = tune_mpi_rank() > 0;
        if (worker) {
            to.quiet = true;
            to.verbose = false;
            to.plot = NULL;
        }
        /* a program of several kernels: one task per kernel (tasks.c),
           else the whole program */
        int rc = tune_tasks(a, g, &to);
        if (rc < 0)
            rc = tune_run(a, g, &to);
        rc = tune_mpi_end(rc);
        if (worker)
            return rc;
        if (rc != 0)
            return 1;
    }
    /* the tuning log's winner, when one matches this workload and machine */
    const char *from =
        written ? arena_printf(a, "the file's `schedule %s`, the default for the stages it leaves out",
                               target_name(o->target))
                : arena_printf(a, "the default (the file has no `schedule %s`)",
                               target_name(o->target));
    bool dynamic = sch_has_runtime_dims(g);
    PtrVec unused = { 0 };
    if (o->nbuckets && !dynamic && !sch_buckets(a, g, o->target, o->buckets, o->nbuckets, &unused))
        return 1; /* --buckets of a dim -D made static: said, not ignored */
    /* the kernels' records (tasks), else the whole program's; a run-time
       program's are per bucket: build_variants */
    const Schedule *tasks = dynamic ? NULL : tune_best_tasks(a, g, &o->tuning, &from);
    if (tasks) {
        written = tasks;
        if (!diag_quiet)
            fprintf(stderr, "texc: using %s\n", from);
    } else if (!dynamic) {
        written = tune_best(a, g, written, &o->tuning, &from);
    }
    if (!written && o->verbose)
        fprintf(stderr, "texc: %s has no %s schedule: using the default one\n", o->file,
                target_name(o->target));
    /* the build sequence (sched/build.c), the one the tuner's candidates
       go through: the layouts its tiles want, the schedule, the default
       for the rest, lowering; once per variant for run-time dims */
    LoweredFunc fn = {0};
    CgVariant one = { NULL, &fn, NULL, NULL, from }, *variants = &one;
    int nvariants = 1;
    if (dynamic) {
        if (!build_variants(a, o, g, stats, &variants, &nvariants, &from))
            return 1;
    } else {
        SchedBuild b = build_of(a, o, g, written, stats);
        one.st = sch_build(&b, &fn);
        if (!one.st)
            return 1;
    }
    if (g->layouts)
        stats->packed = count_prepacked(g);
    /* the plain entry point, where packing at every call does not pay: the
       same program, never laid out, under the default schedule */
    LoweredFunc plain_fn = {0};
    CgVariant plain = { NULL, &plain_fn, NULL, NULL,
                        "the default, on the weights as given" };
    Graph *plain_g = NULL;
    if (plain_src && !dynamic && plain_pays(g))
        plain_g = plain_graph(a, o, plain_src->src, plain_src->prog);
    if (plain_g) {
        OptStats unused_stats = {0};
        SchedBuild pb = build_of(a, o, plain_g, NULL, &unused_stats);
        pb.dump_layout = pb.dump_kernels = pb.dump_loops = NULL;
        plain.st = sch_build(&pb, &plain_fn);
        if (!plain.st)
            return 1;
        if (o->verbose)
            fprintf(stderr, "texc: %s reads its weights where they are (at most %d rows a kernel: "
                            "packing at every call would cost more than it saves)\n",
                    o->file, PLAIN_MAX_ROWS);
    }
    WorkspacePlan plan = { 0 };
    for (int i = 0; i < nvariants; i++) {
        const char *which = nvariants > 1 ? arena_printf(a, "# variant %d: %s\n", i,
                                                         sch_bucket_str(a, g, variants[i].bucket))
                                          : "";
        if (o->dump & DUMP_SCHEDULE) {
            fputs(which, stdout);
            sch_print_trace(stdout, variants[i].st);
        }
        WorkspacePlan p;
        if (!cg_plan_workspace(a, variants[i].st, variants[i].fn, &p))
            return 1;
        if (o->dump & DUMP_MEMORY) {
            fputs(which, stdout);
            const SStage **roots;
            const Stmt **bodies;
            int nsteps = cg_kernel_steps(a, variants[i].st, variants[i].fn, &roots, &bodies);
            for (int k = 0; k < nsteps; k++)
                printf("kernel %d : %s\n", k, roots[k]->name);
            te_print_memplan(stdout, p.bufs, p.nbufs, p.naive, p.bytes);
        }
        if (i == 0 || p.bytes > plan.bytes)
            plan = p;
    }
    if (o->verbose) {
        vec_push(a, &stats->notes,
                 plan.bytes == plan.naive
                     ? arena_printf(a, "workspace %" PRId64 " bytes", plan.bytes)
                     : arena_printf(a, "workspace %" PRId64 " bytes (%" PRId64 " unshared)",
                                    plan.bytes, plan.naive));
        te_print_opt_summary(stderr, stats);
    }
    const char *prefix = output_prefix(a, o);
    const char *base = strrchr(prefix, '/');
    base = base ? base + 1 : prefix;
    CodegenOptions co = { .name = cg_entry_name(a, base),
                          .header = arena_printf(a, "%s.h", base),
                          .source_path = o->file,
                          .target = o->target,
                          .schedule_from = from,
                          .profile = o->profile,
                          .plain = plain.st ? &plain : NULL,
                          .weights = weights };
    if (o->target == TARGET_CUDA) {
        CudaOptions cuda = o->cuda;
        cuda.arch = o->arch;
        cuda.prefix = prefix;
        cuda.dump = (o->dump & DUMP_CUDA) != 0;
        cuda.check_only = o->check_only;
        cuda.verbose = o->verbose;
        return cg_cuda_build(variants, nvariants, &co, &cuda);
    }
    if (o->check_only)
        return 0;

    const char *c_path = arena_printf(a, "%s.c", prefix);
    const char *h_path = arena_printf(a, "%s.h", prefix);
    const char *m_path = arena_printf(a, "%s_harness.c", prefix);
    const char *w_path = arena_printf(a, "%s.weights", prefix);
    /* one set (codegen/output.c): all of them in place, or none */
    OutputSet out = { .arena = a };
    FILE *c = cg_output_open(&out, c_path, false), *h = cg_output_open(&out, h_path, false);
    FILE *m = o->harness ? cg_output_open(&out, m_path, false) : NULL;
    FILE *w = weights && !weights->embed ? cg_output_open(&out, w_path, true) : NULL;
    bool ok = !out.failed && cg_emit_c_variants(variants, nvariants, &co, c, h) &&
              (!o->harness || cg_emit_harness(a, g, co.name, co.header, weights, m));
    if (ok && w && !cg_write_weights(g, weights, w)) {
        if (!ferror(w))
            fprintf(stderr, "texc: cannot write %s: %s\n", w_path, strerror(errno));
        ok = false;
    }
    if (!cg_output_commit(&out, ok))
        return 1;
    if (o->verbose)
        fprintf(stderr, "texc: wrote %s and %s%s%s\n", h_path, c_path, w ? " and " : "",
                w ? w_path : "");
    if (o->compile) {
        const char *obj = arena_printf(a, "%s.o", prefix);
        const char *words[] = { "-c", c_path, "-o", obj };
        char **argv = cg_kernel_cc_argv(a, words, 4); /* as the tuner compiles */
        if (!run_command(argv, o->verbose)) {
            fprintf(stderr, "texc: %s failed to compile %s\n", argv[0], c_path);
            return 1;
        }
    }
    return 0;
}

/* -K NAME=VALUE: each knob's value, into G; false after a message. */
static bool set_knobs(Arena *a, const Options *o, Graph *g)
{
    for (int k = 0; k < o->nknobs; k++) {
        char *arg = arena_strdup(a, o->knobs[k]);
        char *val = split_assign(arg, "-K");
        if (!sch_set_knob(g, arg, parse_int(val, "-K")))
            return false;
    }
    return true;
}

/* PROG again as a graph, optimized as the build's is but never laid out:
 * the build of the plain entry point (NAME, NAME_ws) where reading the
 * weights in place pays (plain_pays).  NULL where there is no such
 * build: another target, -fno-layout, run-time dims. */
static Graph *plain_graph(Arena *a, const Options *o, const Source *src, const Program *prog)
{
    if (o->target != TARGET_CPU || o->no_layout)
        return NULL;
    /* (the build's graph said whatever there was to say) */
    bool quiet = diag_quiet;
    diag_quiet = true;
    Graph *g = fe_sema(a, src, prog, o->defines, o->ndefines);
    OptOptions opt = o->opt;
    opt.dump = NULL;
    opt.dump_after = 0;
    OptStats stats = {0};
    bool ok = g && !sch_has_runtime_dims(g) && set_knobs(a, o, g) &&
              te_optimize(a, g, &opt, &stats) && sch_check(g);
    diag_quiet = quiet;
    if (!ok)
        return NULL;
    g->layouts = false;
    return g;
}

int main(int argc, char **argv)
{
    Arena arena = {0};
    Options o = {0};
    /* a rank of an MPI job: texc-mpi takes over (tuner/mpi.c) */
    tune_mpi_exec(argc, argv);
    parse_options(argc, argv, &o, &arena);
    if (o.log_summary) {
        int rc = tune_log_summary(o.log_summary);
        arena_free(&arena);
        return rc;
    }
    /* --plot is written at the end of a tuning run: a path that cannot be
       written is said now, not after the whole run */
    if (o.tune && o.tuning.plot && !can_create(&arena, o.tuning.plot)) {
        fprintf(stderr, "texc: --plot %s: cannot write there: %s\n", o.tuning.plot,
                strerror(errno));
        arena_free(&arena);
        return 1;
    }
    if (o.tuning.warm && o.target != TARGET_CPU)
        usage_error("--tune-cache=warm is for the cpu target (CUDA candidates are timed on inputs "
                    "rotated over twice the L2 cache)");
    o.tuning.source_path = o.file;
    o.tuning.target = o.target;
    o.tuning.arch = o.arch;
    o.tuning.seed = o.seed;
    o.tuning.verbose = o.verbose;
    o.tuning.quiet = diag_quiet;
    o.tuning.buckets = o.buckets;
    o.tuning.nbuckets = o.nbuckets;

    Source src;
    if (is_onnx(o.file)) {
        /* the model as a .te program (onnx/): compiled, evaluated and
           dumped as one written by hand; -D binds its symbolic dims */
        OxModel model;
        OxImport *im = arena_alloc(&arena, sizeof *im);
        OxDefine *defs = arena_alloc(&arena, sizeof *defs * (size_t)(o.ndefines + 1));
        for (int k = 0; k < o.ndefines; k++)
            defs[k] = (OxDefine){ o.defines[k].name, o.defines[k].value, o.ranges[k].range,
                                  o.ranges[k].lo, o.ranges[k].hi, o.ranges[k].hint };
        const char *prefix = output_prefix(&arena, &o);
        const char *base = strrchr(prefix, '/');
        if (!ox_read_model(&arena, o.file, NULL, 0, &model) ||
            !ox_import(&arena, &model, defs, o.ndefines,
                       arena_printf(&arena, "%s.te", base ? base + 1 : prefix), im)) {
            arena_free(&arena);
            return 1;
        }
        o.ndefines = 0; /* bound: the program has the sizes */
        o.onnx = im;
        /* --input takes the graph's names as well as the program's */
        for (int k = 0; k < o.ninputs; k++)
            for (int j = 0; j < im->nnames; j++)
                if (strcmp(o.inputs[k].name, im->onnx_names[j]) == 0)
                    o.inputs[k].name = im->te_names[j];
        /* --eval runs one instance: a run-time dim takes its size from
           the input file that has it, as -D would give it */
        for (int d = 0; o.eval && d < im->nrtdims; d++) {
            const OxRtDim *rd = &im->rtdims[d];
            const char *path = NULL;
            for (int k = 0; k < o.ninputs; k++)
                if (rd->input && strcmp(o.inputs[k].name, rd->input) == 0)
                    path = o.inputs[k].path;
            int rank;
            int64_t shape[TE_MAX_RANK];
            if (!path) {
                fprintf(stderr, "texc: --eval: the run-time dim '%s' takes its size from input "
                                "'%s' (dim %d); give it with --input %s=FILE.npy\n",
                        rd->onnx, rd->input ? rd->input : "?", rd->axis,
                        rd->input ? rd->input : "NAME");
                arena_free(&arena);
                return 1;
            }
            if (npy_read_shape(path, &rank, shape) < 0) {
                arena_free(&arena);
                return 1;
            }
            if (rank <= rd->axis || shape[rd->axis] < rd->lo || shape[rd->axis] > rd->hi) {
                fprintf(stderr, "texc: %s: dim %d is %lld, outside the range %lld..%lld of "
                                "'%s' (-D %s=%lld..%lld)\n",
                        path, rd->axis, rank > rd->axis ? (long long)shape[rd->axis] : 0LL,
                        (long long)rd->lo, (long long)rd->hi, rd->onnx, rd->onnx,
                        (long long)rd->lo, (long long)rd->hi);
                arena_free(&arena);
                return 1;
            }
            o.defines[o.ndefines++] = (DimOverride){ rd->te, shape[rd->axis], false };
        }
        src_from_string(&src, arena_printf(&arena, "%s (imported)", o.file), im->text, im->len);
    } else if (o.emit_te) {
        usage_error("--emit-te writes the program an ONNX model imports; %s is not a .onnx file",
                    o.file);
    } else if (o.embed_weights) {
        usage_error("--embed-weights embeds an ONNX model's weights; %s is not a .onnx file",
                    o.file);
    } else if (!src_load(&arena, &src, o.file)) {
        arena_free(&arena);
        return 1;
    }
    Parser p = { .arena = &arena, .src = &src };
    if (o.dump & DUMP_TOKENS)
        p.dump_tokens = stdout;
    Program prog = {0};
    int status = 1;
    if (!fe_parse(&p, &prog))
        goto out;
    if (o.dump & DUMP_AST)
        fe_print_ast(stdout, &prog);
    Graph *g = fe_sema(&arena, &src, &prog, o.defines, o.ndefines);
    if (!g)
        goto out;
    if (o.emit_te) { /* the program checked: it compiles */
        status = emit_te(&arena, &o, &src);
        goto out;
    }
    if (!set_knobs(&arena, &o, g)) {
        status = 2;
        goto out;
    }
    if (o.dump & DUMP_GRAPH)
        te_print_graph(stdout, g);
    /* run-time dims build for both targets and tune for the CPU; --eval
       and CUDA tuning take static sizes only, for now (doc/runtime-dims.md):
       one diagnostic here */
    const char *needs_static = o.eval ? "--eval"
                               : o.target == TARGET_CUDA && o.tune ? "tuning for the cuda target"
                                                                   : NULL;
    if (needs_static && !te_require_static_dims(g, needs_static))
        goto out;
    /* --eval runs the program as written: it is the reference */
    OptStats stats = {0};
    if (!o.eval || o.eval_optimized) {
        o.opt.dump = stdout;
        if (!te_optimize(&arena, g, &o.opt, &stats))
            goto out;
        /* layouts depend on the schedule: each build assigns them for its
           own (sched/build.c), unless -fno-layout */
        g->layouts = !o.no_layout;
    }
    g->no_flash = o.no_flash;
    if (o.eval_optimized) {
        /* the graph a build under the file's schedule compiles */
        layout_step(&arena, &o, g, sch_file_schedule(g, o.target), &stats);
        /* (a build prints it once it knows the workspace) */
        if (o.verbose)
            te_print_opt_summary(stderr, &stats);
    }
    /* schedules are checked against the kernels they will apply to */
    if (!sch_check(g)) {
        /* those kernels, when asked for: the build that would have shown
           them (with the layouts, sched/build.c) does not run */
        if (!o.eval && ((o.dump & DUMP_KERNELS) || o.dump_after_layout))
            layout_step(&arena, &o, g, sch_file_schedule(g, o.target), &stats);
        goto out;
    }
    status = o.eval ? run_eval(&arena, &o, g)
                    : build(&arena, &o, g, &(PlainSource){ &src, &prog }, &stats);
out:
    arena_free(&arena);
    return status;
}

/* halide_gen.cc — make bench's Halide peer, built ahead of time.
 *
 *   halide_gen PLUGIN OUTDIR 'THREADS' MxKxN...
 *
 * matmul_gelu, z = gelu(x @ w * 0.125 + b) in f32, written in Halide's
 * language, once for every shape and thread count, each copy scheduled by
 * the Adams2019 autoscheduler (PLUGIN, libautoschedule_adams2019.so) with
 * the shape as its estimates and the thread count as its parallelism
 * (the bench runs every copy of a shape at each thread count), and
 * compiled for the host (Halide's "host" target: AVX-512 here).  The
 * autoscheduler runs when the pipeline is built, as in a Halide generator:
 * this program is that build step, run by the Makefile, and the bench links
 * what it writes:
 *
 *   OUTDIR/hl_MxKxN_tT.o, .h     the pipeline hl_MxKxN_tT(x, w, b, z), on
 *                                halide_buffer_t, without Halide's runtime
 *   OUTDIR/hl_MxKxN_tT.schedule.h  the schedule Adams2019 chose, as C++
 *   OUTDIR/halide_runtime.o      Halide's runtime, once for all of them
 *   OUTDIR/halide_kernels.h      includes the headers and lists the
 *                                pipelines as the X-macro HALIDE_KERNELS(X),
 *                                X(M, K, N, PARALLELISM, function, "note"),
 *                                the note saying how long scheduling and
 *                                compiling took; written last, so that its
 *                                presence means every pipeline was built
 *
 * The algorithm is the one the other peers compute: the sum over k, times
 * 0.125, plus b, then GELU with erf, the formula of bench.h's bench_gelu
 * (Halide's erf is its own f32 polynomial, "accurate up to the last three
 * bits of the mantissa").  Each pipeline is specialized to its shape as
 * texc's kernels are: the buffers' extents and strides are constrained to
 * the shape, and their hosts to 64-byte alignment (the bench allocates
 * with bench_xmalloc).  Adams2019 reads its search settings from the
 * environment (HL_BEAM_SIZE and others); unset, it runs its default beam
 * search (beam 32), and it reads nothing of MachineParams but the
 * parallelism.
 */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "Halide.h"

using namespace Halide;

namespace {

struct Shape {
    int m, k, n;  // z is m x n, the reduction runs over k
};

[[noreturn]] void die(const std::string &msg)
{
    std::fprintf(stderr, "halide_gen: %s\n", msg.c_str());
    std::exit(1);
}

double seconds_since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void write_file(const std::string &path, const std::string &text)
{
    std::ofstream f(path);
    f << text;
    if (!f.good())
        die("cannot write " + path);
}

/* Builds, schedules (for PARALLELISM threads) and compiles the pipeline
 * NAME for S into DIR; the note for the bench's row. */
std::string build(const Shape &s, int parallelism, const Target &target, const std::string &dir,
                  const std::string &name)
{
    ImageParam x(Float(32), 2, "x"), w(Float(32), 2, "w"), b(Float(32), 1, "b");
    Var j("j"), i("i");  // column and row of z: Halide's first dimension is the innermost
    RDom r(0, s.k, "r");

    Func matmul("matmul"), z("z");
    matmul(j, i) += x(r, i) * w(j, r);
    Expr v = matmul(j, i) * 0.125f + b(j);
    z(j, i) = 0.5f * v * (1.0f + erf(v * 0.707106781f));

    // The shape, as constraints (the code is specialized to it) and as
    // the estimates the autoscheduler plans for.
    x.dim(0).set_bounds(0, s.k).dim(1).set_bounds(0, s.m).set_stride(s.k);
    w.dim(0).set_bounds(0, s.n).dim(1).set_bounds(0, s.k).set_stride(s.n);
    b.dim(0).set_bounds(0, s.n);
    z.output_buffer().dim(0).set_bounds(0, s.n).dim(1).set_bounds(0, s.m).set_stride(s.n);
    for (OutputImageParam p : {OutputImageParam(x), OutputImageParam(w), OutputImageParam(b),
                               z.output_buffer()})
        p.set_host_alignment(64);
    x.set_estimates({{0, s.k}, {0, s.m}});
    w.set_estimates({{0, s.n}, {0, s.k}});
    b.set_estimates({{0, s.n}});
    z.set_estimates({{0, s.n}, {0, s.m}});

    Pipeline pipeline(z);
    MachineParams params = MachineParams::generic();
    params.parallelism = parallelism;
    auto start = std::chrono::steady_clock::now();
    AutoSchedulerResults results = pipeline.auto_schedule("Adams2019", target, params);
    double schedule_secs = seconds_since(start);

    start = std::chrono::steady_clock::now();
    std::vector<Argument> args = {x, w, b};
    Target no_runtime = target.with_feature(Target::NoRuntime);
    pipeline.compile_to_object(dir + "/" + name + ".o", args, name, no_runtime);
    pipeline.compile_to_header(dir + "/" + name + ".h", args, name, no_runtime);
    double compile_secs = seconds_since(start);
    write_file(dir + "/" + name + ".schedule.h", results.schedule_source);

    char note[160];
    std::snprintf(note, sizeof note, "scheduled in %.2f s, compiled in %.2f s, at build time",
                  schedule_secs, compile_secs);
    std::fprintf(stderr, "  %s: %s\n", name.c_str(), note);
    return note;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc < 5)
        die("usage: halide_gen PLUGIN OUTDIR 'THREADS' MxKxN...");
    std::string plugin = argv[1], dir = argv[2];
    std::vector<int> thread_counts;
    std::istringstream threads_words(argv[3]);
    for (int t; threads_words >> t;) {
        if (t < 1)
            die(std::string("bad thread count in '") + argv[3] + "'");
        thread_counts.push_back(t);
    }
    if (thread_counts.empty())
        die(std::string("no thread counts in '") + argv[3] + "'");
    std::vector<Shape> shapes;
    for (int a = 4; a < argc; a++) {
        Shape s;
        char end;
        if (std::sscanf(argv[a], "%dx%dx%d%c", &s.m, &s.k, &s.n, &end) != 3 || s.m < 1 ||
            s.k < 1 || s.n < 1)
            die(std::string("bad shape '") + argv[a] + "' (MxKxN)");
        shapes.push_back(s);
    }

    load_plugin(plugin);
    Target target = get_host_target();
    compile_standalone_runtime(dir + "/halide_runtime.o", target);

    // Adams2019's search settings come from the environment: say which.
    std::string search;
    for (const char *var : {"HL_BEAM_SIZE", "HL_NUM_PASSES", "HL_RANDOM_DROPOUT", "HL_SEED",
                            "HL_WEIGHTS_DIR", "HL_NO_SUBTILING", "HL_AUTOSCHEDULE_MEMORY_LIMIT"})
        if (const char *value = std::getenv(var))
            search += std::string(search.empty() ? "" : ", ") + var + "=" + value;
    if (search.empty())
        search = "no HL_ variables set: its default search (beam 32, 5 passes, no random dropout) "
                 "and built-in cost model";

    std::string includes, list;
    for (const Shape &s : shapes)
        for (int t : thread_counts) {
            std::string name = "hl_" + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
                               std::to_string(s.n) + "_t" + std::to_string(t);
            std::string note = build(s, t, target, dir, name);
            includes += "#include \"" + name + ".h\"\n";
            list += "    X(" + std::to_string(s.m) + ", " + std::to_string(s.k) + ", " +
                    std::to_string(s.n) + ", " + std::to_string(t) + ", " + name + ", \"" + note +
                    "\") \\\n";
        }
    write_file(dir + "/halide_kernels.h.tmp",
               "/* halide_kernels.h — generated by bench/halide_gen for make bench. */\n" +
                   includes + "#define HALIDE_TARGET \"" + target.to_string() + "\"\n" +
                   "#define HALIDE_AUTOSCHEDULER \"autoscheduler Adams2019 (" + plugin + "), " +
                   search + "; MachineParams parallelism: each of the run's thread counts\"\n" +
                   "#define HALIDE_KERNELS(X) \\\n" + list + "    /* end */\n");
    if (std::rename((dir + "/halide_kernels.h.tmp").c_str(), (dir + "/halide_kernels.h").c_str()))
        die("cannot write " + dir + "/halide_kernels.h");
    return 0;
}

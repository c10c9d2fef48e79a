# kernel_lib.sh — the shell functions that build texc's kernels for make
# bench, shared by gen_kernels.sh and gen_rtdims.sh (sourced, not run).
#
# The caller sets: texc (texc's path), out (the output folder), cc (the C
# compiler and its flags), log (the tuning log, or empty for texc's
# default) and cache (the --tune-cache of the records tuned builds use);
# and starts includes='' (the text of the kernels header the functions
# append to).  set -e is the caller's.

# adapt NAME [rt]: appends to $includes NAME's header and two functions the
# benchmark calls: NAME_bench_prepare(w), which puts w in the layout the
# kernel reads (NAME_prepack, once, outside the timed loop, as oneDNN's
# weights are reordered once) and returns the seconds it took, or -1 when
# the kernel reads w as it is; and NAME_bench(x, w, b, z), the timed call.
# For a static kernel of x, w, b -> z (matmul_gelu's signature); with rt,
# for one with run-time M, which takes M first and returns 0 or
# NAME_ERANGE: NAME_bench(m, x, w, b, z) returns what it returns.
adapt() {
    up=$(echo "$1" | tr a-z A-Z)
    # (the callers' variables, m among them, are left alone: adapt's own start ad_)
    ad_ret=void ad_m= ad_kw=
    if [ "${2:-}" = rt ]; then
        ad_ret=int ad_m='int64_t m, ' ad_kw='return '
    fi
    ad_mm=${ad_m:+m, }
    if grep -q "^void $1_prepack(" "$out/$1.h"; then
        includes="$includes#include \"$1.h\"
static float *$1_wp;
static double $1_bench_prepare(const float *w)
{
    free($1_wp);
    $1_wp = aligned_alloc(64, (${up}_W_PACKED_ELEMS * sizeof(float) + 63) / 64 * 64);
    if (!$1_wp)
        abort();
    double t0 = omp_get_wtime();
    $1_prepack(w, $1_wp);
    return omp_get_wtime() - t0;
}
static $ad_ret $1_bench(${ad_m}const float *x, const float *w, const float *b, float *z)
{
    (void)w;
    $ad_kw$1_packed(${ad_mm}x, $1_wp, b, z);
}
"
    else
        includes="$includes#include \"$1.h\"
static double $1_bench_prepare(const float *w) { (void)w; return -1; }
static $ad_ret $1_bench(${ad_m}const float *x, const float *w, const float *b, float *z) { $ad_kw$1(${ad_mm}x, w, b, z); }
"
    fi
}

# build NAME SRC TEXC-ARGS...: NAME.{h,c,o} from SRC without the tuning log
build() {
    name=$1 src=$2
    shift 2
    "$texc" -q --log=/dev/null "$src" "$@" -o "$out/$name"
    $cc -c "$out/$name.c" -o "$out/$name.o"
    includes="$includes#include \"$name.h\"
"
}

# build_tuned NAME SRC TEXC-ARGS...: NAME.{h,c,o} from SRC with the tuning
# log's winner; sets tuned (the function, or NULL) and note (a C string's
# contents: texc's lines about the log)
build_tuned() {
    name=$1 src=$2
    shift 2
    if [ -n "$log" ]; then
        set -- "--log=$log" "$@"
    fi
    "$texc" -v --tune-cache="${cache:-cold}" "$src" "$@" -o "$out/$name" 2> "$out/$name.log"
    # texc's lines about the log, without the prefix, quotes, backslashes
    # or repeats (texc looks the log up once per task: "no tuning log at
    # ..." came once per kernel)
    words=$(grep -E 'tuning log|tuned schedule|no record in|not a tuning record' "$out/$name.log" |
            sed 's/^texc: //; s/["\\]//g' | awk '!seen[$0]++' | tr '\n' ' ' | sed 's/ $//')
    # (a program of several kernels is tuned as tasks: "using the tuning
    # log's records for 17 of its 17 kernels (tasks), the default for the
    # rest"; a single kernel: "using the tuned schedule ..."; a program
    # whose tuning run measured no kernel faster tuned in it: "using the
    # default schedule for all N kernels: the tuning log's end-to-end
    # record ...", the tuned build that run chose)
    if grep -q -E "using the tuned schedule|using the tuning log's records for [1-9]|using the default schedule for all [0-9]* kernels: the tuning log" "$out/$name.log"; then
        $cc -c "$out/$name.c" -o "$out/$name.o"
        includes="$includes#include \"$name.h\"
"
        tuned=$name note=$words
    else
        rm -f "$out/$name.c" "$out/$name.h"
        tuned=NULL note="no tuning record: ${words:-none for it in ${log:-the default tuning log}}"
    fi
}

# strip_schedules FILE: the computation alone, texc's default schedule for
# it: every block that starts with `schedule` at the start of a line is
# dropped, up to the "}" that closes it (tests/lib.sh's, copied: the
# benchmark does not source the tests' TAP helpers).
strip_schedules() {
    awk '
    skipping == 0 && /^[ \t]*schedule[ \t]/ { skipping = 1; depth = 0; opened = 0 }
    skipping {
        text = $0
        sub(/#.*/, "", text)
        opened += gsub(/\{/, "{", text)
        depth += gsub(/\{/, "{", text) - gsub(/\}/, "}", text)
        if (opened && depth <= 0)
            skipping = 0
        next
    }
    { print }' "$1"
}

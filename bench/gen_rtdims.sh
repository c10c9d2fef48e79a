#!/bin/sh
# gen_rtdims.sh — generates and compiles the kernels of make bench's
# run-time sizes benchmark (bench_rtdims.c, issue #16).
#
#   gen_rtdims.sh TEXC SAMPLES OUTDIR 'CC FLAGS' LOG CACHE M...
#
# The program: OUTDIR/matmul_gelu_rt.te, SAMPLES/matmul_gelu.te with its
# schedule blocks stripped (texc's default schedule) and its dim line made
# `dim M in 1..4096 = 512, N = 3072, K = 768;`.  From it:
#   OUTDIR/mg_rt            the one dynamic artifact: M a run-time size
#   OUTDIR/mg_rt_tuned      the same with the tuning log's records, when
#                           texc uses them; otherwise no kernel and a note
#   OUTDIR/mg_m<M>          for every M: the static build -D M=<M>
#   OUTDIR/mg_oracle_m<M>   the static build -D M=<M> with the tuning log's
#                           winner for that M (the oracle), when the log
#                           has one; otherwise no kernel and a note
# The first and the static ones are built without the log
# (--log=/dev/null), so that a tuning log never changes them behind the
# table's back.  The tuned builds read LOG (empty: texc's default,
# $XDG_CACHE_HOME/texc/tuning.jsonl) and its records measured with --tune-cache
# CACHE.  Records for them come from tuning this very file, so that the
# workload is the same (bench_rtdims.c's header says how).
#
# Last, OUTDIR/rt_kernels.h includes every header and defines:
#   BENCH_RT_SIZES(X)   X(M, static_fn, static_prepare, oracle_fn or NULL,
#                       oracle_prepare or NULL, "oracle note") for each M
#   BENCH_RT_DYNAMIC, BENCH_RT_DYNAMIC_PREPARE, BENCH_RT_CHECK_SIZES, BENCH_RT_VARIANT,
#   BENCH_RT_ERANGE, BENCH_RT_M_MIN, BENCH_RT_M_MAX   the dynamic artifact
#   BENCH_RT_TUNED, BENCH_RT_TUNED_PREPARE (or NULL), BENCH_RT_TUNED_NOTE
#   BENCH_RT_LOG, BENCH_RT_CACHE, BENCH_RT_KERNEL   where tuning records are
#                       and the kernel name they carry (the file's base name)
#   BENCH_RT_BUILD_DYNAMIC_S, BENCH_RT_BUILD_STATIC_S   build seconds (texc
#                       + the C compiler, wall) of the dynamic artifact and
#                       of all the static builds together
# It is written last, so that its presence means every kernel was built.
set -e
texc=$1 samples=$2 out=$3 cc=$4 log=$5 cache=$6
shift 6

# adapt, build, build_tuned and strip_schedules (kernel_lib.sh): they
# read texc, out, cc, log and cache, and append to includes
includes=''
. "$(dirname "$0")/kernel_lib.sh"

rm -rf "$out"
mkdir -p "$out"
te=$out/matmul_gelu_rt.te
strip_schedules "$samples/matmul_gelu.te" |
    sed 's/^dim M = \([0-9]*\), /dim M in 1..4096 = \1, /' > "$te"
if grep -q '^schedule' "$te" || ! grep -q '^dim M in 1\.\.4096 = 512, N = 3072, K = 768;' "$te"; then
    echo "gen_rtdims.sh: $samples/matmul_gelu.te no longer declares 'dim M = 512, N = 3072, K = 768;' or its schedules would not strip" >&2
    exit 1
fi

# adapt_rt NAME: as adapt, for a kernel that takes M first and returns 0
# or NAME_ERANGE: NAME_bench_prepare(w) and NAME_bench(m, x, w, b, z)
adapt_rt() {
    up=$(echo "$1" | tr a-z A-Z)
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
static int $1_bench(int64_t m, const float *x, const float *w, const float *b, float *z)
{
    (void)w;
    return $1_packed(m, x, $1_wp, b, z);
}
"
    else
        includes="$includes#include \"$1.h\"
static double $1_bench_prepare(const float *w) { (void)w; return -1; }
static int $1_bench(int64_t m, const float *x, const float *w, const float *b, float *z)
{
    return $1(m, x, w, b, z);
}
"
    fi
}

now() {
    date +%s.%N
}

# seconds from $1 to now, to the millisecond
since() {
    awk -v t0="$1" -v t1="$(now)" 'BEGIN { printf "%.3f", t1 - t0 }'
}

t0=$(now)
build mg_rt "$te"
dynamic_s=$(since "$t0")
adapt_rt mg_rt
build_tuned mg_rt_tuned "$te"
dyn_tuned=$tuned dyn_tuned_note=$note dyn_tuned_prep=NULL
if [ "$tuned" != NULL ]; then
    adapt_rt mg_rt_tuned
    dyn_tuned=mg_rt_tuned_bench dyn_tuned_prep=mg_rt_tuned_bench_prepare
fi

static_s=0
list=''
for m in "$@"; do
    t0=$(now)
    build "mg_m$m" "$te" -D M="$m"
    static_s=$(awk -v a="$static_s" -v b="$(since "$t0")" 'BEGIN { printf "%.3f", a + b }')
    adapt "mg_m$m"
    build_tuned "mg_oracle_m$m" "$te" -D M="$m"
    oracle_prep=NULL
    if [ "$tuned" != NULL ]; then
        adapt "$tuned"
        oracle_prep=${tuned}_bench_prepare tuned=${tuned}_bench
    fi
    list="$list    X($m, mg_m${m}_bench, mg_m${m}_bench_prepare, $tuned, $oracle_prep, \"$note\") \\
"
done

# the log the tuned builds read, as texc finds it
if [ -z "$log" ]; then
    case "${XDG_CACHE_HOME:-}" in
    /*) log=$XDG_CACHE_HOME/texc/tuning.jsonl ;;
    *) log=$HOME/.cache/texc/tuning.jsonl ;;
    esac
fi

{
    echo "/* rt_kernels.h — generated by bench/gen_rtdims.sh for make bench. */"
    printf '%s' "$includes"
    printf '#define BENCH_RT_SIZES(X) \\\n'
    printf '%s' "$list"
    echo '    /* end */'
    echo '#define BENCH_RT_DYNAMIC mg_rt_bench'
    echo '#define BENCH_RT_DYNAMIC_PREPARE mg_rt_bench_prepare'
    echo '#define BENCH_RT_CHECK_SIZES mg_rt_check_sizes'
    echo '#define BENCH_RT_VARIANT mg_rt_variant'
    echo '#define BENCH_RT_NVARIANTS MG_RT_NVARIANTS'
    echo '#define BENCH_RT_ERANGE MG_RT_ERANGE'
    echo '#define BENCH_RT_M_MIN MG_RT_M_MIN'
    echo '#define BENCH_RT_M_MAX MG_RT_M_MAX'
    echo "#define BENCH_RT_TUNED $dyn_tuned"
    echo "#define BENCH_RT_TUNED_PREPARE $dyn_tuned_prep"
    echo "#define BENCH_RT_TUNED_NOTE \"$dyn_tuned_note\""
    printf '#define BENCH_RT_LOG "%s"\n' "$(printf '%s' "$log" | sed 's/["\\]/\\&/g')"
    echo "#define BENCH_RT_CACHE \"${cache:-cold}\""
    echo '#define BENCH_RT_KERNEL "matmul_gelu_rt"'
    echo "#define BENCH_RT_BUILD_DYNAMIC_S $dynamic_s"
    echo "#define BENCH_RT_BUILD_STATIC_S $static_s"
} > "$out/rt_kernels.h.tmp"
mv "$out/rt_kernels.h.tmp" "$out/rt_kernels.h"

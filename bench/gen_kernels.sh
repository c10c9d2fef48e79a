#!/bin/sh
# gen_kernels.sh — generates and compiles texc's kernels for make bench.
#
#   gen_kernels.sh TEXC SAMPLES OUTDIR 'CC FLAGS' LOG CACHE MxKxN...
#
# matmul_gelu (SAMPLES/matmul_gelu.te), for every shape, three kernels:
#   OUTDIR/mg_sched_MxKxN     the file's own `schedule cpu`
#   OUTDIR/mg_default_MxKxN   texc's default schedule (the same file with
#                             its schedule blocks removed)
#   OUTDIR/mg_tuned_MxKxN     the tuning log's winner for this shape and
#                             machine, when the log has a record that
#                             applies; otherwise no kernel, and a note that
#                             says why (texc's own words)
# The sched and default builds are given an empty log (--log=/dev/null),
# so that a tuning log never changes them behind the table's back.  LOG is
# the tuning log's path, or empty for texc's default location
# ($XDG_CACHE_HOME/texc/tuning.jsonl); CACHE (warm or cold) is the
# --tune-cache of the records the tuned builds use.
#
# The other operations of the benchmark (bench_ops.c), at their samples'
# sizes: OUTDIR/op_NAME_default (the file's schedule, or texc's default
# one where the file has none) and OUTDIR/op_NAME_tuned as above, for NAME
# in batch_matmul conv2d softmax layernorm.
#
# Last, OUTDIR/kernels.h includes every header and lists the matmul shapes
# as the X-macro BENCH_KERNELS(X), X(M, K, N, sched_fn, sched_prepare,
# default_fn, default_prepare, tuned_fn or NULL, tuned_prepare or NULL,
# "tuning note") (the adaptors adapt() writes), and defines BENCH_OP_TUNED_NAME (the
# tuned function or NULL) and BENCH_OP_TUNED_NOTE_NAME for each operation;
# it is written last, so that its presence means every kernel was built.
set -e
texc=$1 samples=$2 out=$3 cc=$4 log=$5 cache=$6
shift 6

rm -rf "$out"
mkdir -p "$out"
# A schedule block runs from `schedule TARGET {` to the `}` in column 0.
sed '/^schedule[ \t]/,/^}/d' "$samples/matmul_gelu.te" > "$out/matmul_gelu_default.te"
if grep -q '^schedule' "$out/matmul_gelu_default.te"; then
    echo "gen_kernels.sh: could not strip the schedule blocks of $samples/matmul_gelu.te" >&2
    exit 1
fi

includes=''
# adapt NAME: appends to $includes NAME's header and two functions the
# benchmark calls: NAME_bench_prepare(w), which puts w in the layout the
# kernel reads (NAME_prepack, once, outside the timed loop, as oneDNN's
# weights are reordered once) and returns the seconds it took, or -1 when
# the kernel reads w as it is; and NAME_bench(x, w, b, z), the timed call.
adapt() {
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
static void $1_bench(const float *x, const float *w, const float *b, float *z)
{
    (void)w;
    $1_packed(x, $1_wp, b, z);
}
"
    else
        includes="$includes#include \"$1.h\"
static double $1_bench_prepare(const float *w) { (void)w; return -1; }
static void $1_bench(const float *x, const float *w, const float *b, float *z) { $1(x, w, b, z); }
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
    # texc's lines about the log, without the prefix, quotes or backslashes
    words=$(grep -E 'tuning log|tuned schedule|no record in|not a tuning record' "$out/$name.log" |
            sed 's/^texc: //; s/["\\]//g' | tr '\n' ' ' | sed 's/ $//')
    if grep -q 'using the tuned schedule' "$out/$name.log"; then
        $cc -c "$out/$name.c" -o "$out/$name.o"
        includes="$includes#include \"$name.h\"
"
        tuned=$name note=$words
    else
        rm -f "$out/$name.c" "$out/$name.h"
        tuned=NULL note="no tuning record: ${words:-none for it in ${log:-the default tuning log}}"
    fi
}

list=''
for shape in "$@"; do
    m=${shape%%x*} n=${shape##*x} k=${shape#*x}
    k=${k%x*}
    build "mg_sched_$shape" "$samples/matmul_gelu.te" -D M="$m" -D K="$k" -D N="$n"
    build "mg_default_$shape" "$out/matmul_gelu_default.te" -D M="$m" -D K="$k" -D N="$n"
    build_tuned "mg_tuned_$shape" "$samples/matmul_gelu.te" -D M="$m" -D K="$k" -D N="$n"
    adapt "mg_sched_$shape"
    adapt "mg_default_$shape"
    tuned_prep=NULL
    if [ "$tuned" != NULL ]; then
        adapt "$tuned"
        tuned_prep=${tuned}_bench_prepare tuned=${tuned}_bench
    fi
    list="$list    X($m, $k, $n, mg_sched_${shape}_bench, mg_sched_${shape}_bench_prepare, \\
      mg_default_${shape}_bench, mg_default_${shape}_bench_prepare, $tuned, $tuned_prep, \"$note\") \\
"
done

ops=''
for op in batch_matmul conv2d softmax layernorm; do
    upper=$(echo "$op" | tr a-z A-Z)
    build "op_${op}_default" "$samples/$op.te"
    build_tuned "op_${op}_tuned" "$samples/$op.te"
    ops="$ops#define BENCH_OP_TUNED_$upper $tuned
#define BENCH_OP_TUNED_NOTE_$upper \"$note\"
"
done

{
    echo "/* kernels.h — generated by bench/gen_kernels.sh for make bench. */"
    printf '%s' "$includes"
    printf '#define BENCH_KERNELS(X) \\\n'
    printf '%s' "$list"
    echo '    /* end */'
    printf '%s' "$ops"
} > "$out/kernels.h.tmp"
mv "$out/kernels.h.tmp" "$out/kernels.h"

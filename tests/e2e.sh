#!/bin/sh
# e2e.sh — end to end: every sample, built with texc under several
# schedules and at two sets of sizes, compiled with the sanitizers, run on
# the reference evaluator's inputs, and compared with its outputs.
#
# For each sample (the table at the bottom) and each of its two size sets
# (one the sample's tiles divide, one they do not), the schedules are:
#   own      the file's own cpu schedule, if it has one;
#   default  the file with its schedule blocks stripped (sch_default);
#   N        tests/e2e/SAMPLE.N.sched appended to the stripped file.
# Each case: texc --harness, $CC with ASan and UBSan, the harness on
# REF.in.*.npy (from texc --eval --save-inputs, once per sample and size),
# then tests/npycmp on every output.  One TAP line per (sample, schedule,
# size).  Cases run in parallel (E2E_JOBS, default: the number of CPUs);
# their lines are printed in a fixed order.  E2E_ONLY=SAMPLE limits the run
# to one sample.
#
# A case directory is kept (and named in the failure) when E2E_KEEP is set.

KCFLAGS="-std=gnu11 -O1 -g -fopenmp -fsanitize=address,undefined -fno-sanitize-recover=all"

# --- one case, run by xargs in a child: e2e.sh --case DIR ---------------
# DIR holds: te (the program), defines (-D words), ref (the reference
# prefix), desc.  Writes DIR/status (ok or a failed step) and DIR/log.
if [ "${1:-}" = --case ]; then
    dir=$2
    defines=$(cat "$dir/defines")
    ref=$(cat "$dir/ref")
    log=$dir/log
    step() {  # step NAME COMMAND...: runs it, logging; on failure records NAME
        name=$1
        shift
        if ! timeout 60 "$@" >>"$log" 2>&1; then
            echo "$name" >"$dir/status"
            exit 0
        fi
    }
    # shellcheck disable=SC2086 # $defines splits on purpose
    step "texc" "$TEXC" "$dir/te" $defines -o "$dir/k" --harness
    # shellcheck disable=SC2086 # $KCFLAGS too
    step "compiling the generated C" ${CC:-cc} $KCFLAGS -o "$dir/run" "$dir/k.c" \
        "$dir/k_harness.c" -lm
    ins=$(sed -n 's/^ \* input  \([A-Za-z0-9_]*\) :.*/\1/p' "$dir/k.h")
    outs=$(sed -n 's/^ \* output \([A-Za-z0-9_]*\) :.*/\1/p' "$dir/k.h")
    set --
    for i in $ins; do set -- "$@" "$ref.in.$i.npy"; done
    for o in $outs; do set -- "$@" "$dir/got.$o.npy"; done
    step "running the kernel" "$dir/run" "$@"
    for o in $outs; do
        step "comparing '$o'" "$builddir/tests/npycmp" "$ref.$o.npy" "$dir/got.$o.npy"
    done
    echo ok >"$dir/status"
    [ -n "${E2E_KEEP:-}" ] || rm -f "$dir/run" "$dir"/got.*.npy
    exit 0
fi

. "${srcdir:-.}/tests/lib.sh"

samples=$srcdir/samples
scheds=$srcdir/tests/e2e
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export ASAN_OPTIONS OMP_NUM_THREADS TEXC builddir KCFLAGS
jobs=${E2E_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
[ -n "${E2E_KEEP:-}" ] && tmp_cases=$(mktemp -d "${TMPDIR:-/tmp}/texc-e2e.XXXXXX") ||
    tmp_cases=$tmp

# The computation alone: every block that starts with `schedule` at the
# start of a line is dropped, up to the "}" that closes it.
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

cases=$tmp/cases
: >"$cases"
case_n=0

# add_case SAMPLE SCHED-NAME TE-FILE REF-PREFIX SIZES
add_case() {
    case_n=$((case_n + 1))
    dir=$tmp_cases/case$case_n
    mkdir -p "$dir"
    cp "$3" "$dir/te"
    defines=
    for d in $5; do defines="$defines -D $d"; done
    echo "$defines" >"$dir/defines"
    echo "$4" >"$dir/ref"
    echo "$1 $2 $5" >"$dir/desc"
    echo "$dir" >>"$cases"
}

# sample SAMPLE SMALL-SIZES ODD-SIZES: queues its cases
sample() {
    name=$1 small=$2 odd=$3
    if [ -n "${E2E_ONLY:-}" ] && [ "$E2E_ONLY" != "$name" ]; then
        return
    fi
    src=$samples/$name.te
    base=$tmp_cases/$name
    mkdir -p "$base"
    strip_schedules "$src" >"$base/plain.te"
    for sizes in "$small" "$odd"; do
        tag=$(echo "$sizes" | tr ' =' '_-')
        ref=$base/ref.$tag
        defines=
        for d in $sizes; do defines="$defines -D $d"; done
        # shellcheck disable=SC2086 # $defines splits on purpose
        if ! timeout 60 "$TEXC" "$base/plain.te" $defines --eval --save-inputs \
            -o "$ref" >"$base/eval.log" 2>&1; then
            not_ok "$name: texc --eval at $sizes" "$base/eval.log"
            continue
        fi
        if grep -q '^[ \t]*schedule[ \t][ \t]*cpu' "$src"; then
            add_case "$name" own "$src" "$ref" "$sizes"
        fi
        add_case "$name" default "$base/plain.te" "$ref" "$sizes"
        for sched in "$scheds/$name".*.sched; do
            [ -f "$sched" ] || continue
            n=${sched##*/"$name".}
            n=${n%.sched}
            cat "$base/plain.te" "$sched" >"$base/sched$n.te"
            add_case "$name" "schedule $n" "$base/sched$n.te" "$ref" "$sizes"
        done
    done
}

#      sample         sizes the tiles divide      odd sizes
sample matmul_gelu   "M=64 N=128 K=16"           "M=127 N=129 K=67"
sample batch_matmul  "B=2 M=8 N=64 K=16"         "B=3 M=7 N=37 K=13"
sample conv2d        "N=1 C=4 H=8 W=8 F=8"       "N=2 C=3 H=9 W=11 F=5"
sample layernorm     "M=8 D=64"                  "M=7 D=37"
sample maxpool       "N=1 C=4 H=8 W=32"          "N=2 C=3 H=11 W=37"
sample softmax       "M=8 N=64"                  "M=7 N=37"
sample transpose_add "M=16 N=64"                 "M=13 N=37"

xargs -P "$jobs" -n 1 sh "$0" --case <"$cases"

while read -r dir; do
    desc=$(cat "$dir/desc")
    status=$(cat "$dir/status" 2>/dev/null || echo "no result")
    if [ "$status" = ok ]; then
        ok "$desc"
    else
        echo "$status failed; case in $dir" >>"$dir/log"
        not_ok "$desc: $status" "$dir/log"
    fi
done <"$cases"
done_testing

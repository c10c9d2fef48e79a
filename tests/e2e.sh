#!/bin/sh
# e2e.sh — end to end: every sample, built with texc under several
# schedules and at two sets of sizes, compiled with the sanitizers, run on
# the reference evaluator's inputs, and compared with its outputs.
#
# For each sample (the table at the bottom; tests/e2e/*.te are programs
# of the tests' own, i32_wrap.te the i32 boundaries, lowp.te the 8-bit and
# 16-bit inputs, conv_rows.te a convolution's micro-kernel rows along f,
# attention.te the chain flash computes in one kernel, gather.te indices
# read from tensors, panel.te a weight's column panels copied at jo,
# im2col.te a convolution's columns over flattened positions, guarded.te
# loads under a select read before a vectorized loop or not)
# and each of its two
# size sets
# (one the sample's tiles divide, one they do not), the schedules are:
#   own      the file's own cpu schedule, if it has one;
#   default  the file with its schedule blocks stripped (sch_default);
#   N        tests/e2e/SAMPLE.N.sched appended to the stripped file; a
#            first line "# texc: FLAGS" adds texc options (-fno-fuse and
#            the like, for a schedule naming stages the optimizer merges).
# Once per sample and size: texc --eval --save-inputs (the reference and
# its inputs) and the harness, compiled.  Each case: texc --harness, the
# kernel compiled with ASan and UBSan ($CC) and linked with that harness,
# run on the reference's inputs, then tests/npycmp on every output.  One
# TAP line per (sample, schedule, size).
#
# Cases run in parallel (E2E_JOBS, default: the number of CPUs), each a
# child of this script (--prep, --case) started by xargs; the TAP lines
# come in a fixed order.  E2E_ONLY=SAMPLE runs one sample; E2E_KEEP=1 keeps
# the case directories (a failure names its directory).

# -O0: the sanitizers check as much, and a file of unrolled register tiles
# compiles ten times faster (transformer_block 4.6 s, against 44 s at -O1);
# the kernels here are small.  make bench builds them at -O3 and checks them.
KCFLAGS="-std=gnu11 -O0 -g -fopenmp -fsanitize=address,undefined -fno-sanitize-recover=all"

# Children, run by xargs: e2e.sh --prep DIR and e2e.sh --case DIR.
# step NAME COMMAND...: runs COMMAND, logging to $dir/log; on failure
# writes NAME to $dir/status and ends the child.  $limit seconds (60
# unless a caller sets it) guard against a hang.
step() {
    name=$1
    shift
    if ! timeout "${limit:-60}" "$@" >>"$dir/log" 2>&1; then
        echo "$name" >"$dir/status"
        exit 0
    fi
}

# --prep DIR: one sample at one size.  DIR holds plain.te and defines;
# writes the reference (ref.*), and the harness compiled once (harness.o),
# since it is the same for every schedule.
if [ "${1:-}" = --prep ]; then
    dir=$2
    defines=$(cat "$dir/defines")
    # shellcheck disable=SC2086 # $defines splits on purpose
    step "texc --eval" "$TEXC" "$dir/plain.te" $defines --eval --save-inputs -o "$dir/ref"
    # shellcheck disable=SC2086
    step "texc --harness" "$TEXC" "$dir/plain.te" $defines -o "$dir/k" --harness
    # shellcheck disable=SC2086 # $KCFLAGS too
    step "compiling the harness" ${CC:-cc} $KCFLAGS -c -o "$dir/harness.o" "$dir/k_harness.c"
    echo ok >"$dir/status"
    exit 0
fi

# --case DIR: one schedule.  DIR holds te (the program) and prep (the
# --prep directory).  Writes DIR/status (ok, or the step that failed).
if [ "${1:-}" = --case ]; then
    dir=$2
    prep=$(cat "$dir/prep")
    defines=$(cat "$prep/defines")
    flags=$(cat "$dir/flags")
    # shellcheck disable=SC2086 # $defines and $flags split on purpose
    step "texc" "$TEXC" "$dir/te" $defines $flags -o "$dir/k" --harness
    # the kernel with the prepared harness (same name, inputs and shapes)
    step "the same harness" cmp -s "$dir/k_harness.c" "$prep/k_harness.c"
    # the sanitized build of a many-kernel program (transformer_block's
    # default schedule unrolls six register-tiled matmuls) took 40 s at -O1
    # on a loaded two-core machine, and the cases run in parallel
    limit=300
    # shellcheck disable=SC2086 # $KCFLAGS too
    step "compiling the generated C" ${CC:-cc} $KCFLAGS -o "$dir/run" "$dir/k.c" \
        "$prep/harness.o" -lm
    limit=60
    ins=$(sed -n 's/^ \* input  \([A-Za-z0-9_]*\) :.*/\1/p' "$dir/k.h")
    outs=$(sed -n 's/^ \* output \([A-Za-z0-9_]*\) :.*/\1/p' "$dir/k.h")
    set --
    for i in $ins; do set -- "$@" "$prep/ref.in.$i.npy"; done
    for o in $outs; do set -- "$@" "$dir/got.$o.npy"; done
    step "running the kernel" "$dir/run" "$@"
    for o in $outs; do
        step "comparing '$o'" "$builddir/tests/npycmp" "$prep/ref.$o.npy" "$dir/got.$o.npy"
    done
    # the plain entry point too (harness -p: NAME on the weights as given,
    # which packs them at every call or reads them where they are)
    step "running the plain entry point" "$dir/run" "$@" -p
    for o in $outs; do
        step "comparing '$o' (plain entry point)" "$builddir/tests/npycmp" "$prep/ref.$o.npy" \
            "$dir/got.$o.npy"
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
if [ -n "${E2E_KEEP:-}" ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/texc-e2e.XXXXXX")
else
    work=$tmp
fi

# prepare SAMPLE SMALL-SIZES ODD-SIZES [FILE]: a --prep directory per size;
# FILE, if not samples/SAMPLE.te
preps=$tmp/preps
: >"$preps"
prepare() {
    if [ -n "${E2E_ONLY:-}" ] && [ "$E2E_ONLY" != "$1" ]; then
        return
    fi
    for sizes in "$2" "$3"; do
        dir=$work/$1.$(echo "$sizes" | tr ' =' '_-')
        mkdir -p "$dir"
        echo "${4:-$samples/$1.te}" >"$dir/source"
        strip_schedules "$(cat "$dir/source")" >"$dir/plain.te"
        defines=
        for d in $sizes; do defines="$defines -D $d"; done
        echo "$defines" >"$dir/defines"
        echo "$1 $sizes" >"$dir/desc"
        echo "$dir" >>"$preps"
    done
}

#       sample         sizes the tiles divide      odd sizes
prepare matmul_gelu   "M=64 N=128 K=16"           "M=127 N=129 K=67"
prepare batch_matmul  "B=2 M=8 N=64 K=16"         "B=3 M=7 N=37 K=13"
prepare conv2d        "N=1 C=4 H=8 W=8 F=8"       "N=2 C=3 H=9 W=11 F=5"
prepare layernorm     "M=8 D=64"                  "M=7 D=37"
prepare maxpool       "N=1 C=4 H=8 W=32"          "N=2 C=3 H=11 W=37"
prepare softmax       "M=8 N=64"                  "M=7 N=37"
prepare transpose_add "M=16 N=64"                 "M=13 N=37"
prepare transformer_block "S=16 D=32 H=2 F=64"    "S=13 D=36 H=3 F=40"
prepare i32_wrap      "M=64"                      "M=37"  "$scheds/i32_wrap.te"
prepare linear_t      "M=16 N=64 K=16"            "M=37 N=131 K=29" "$scheds/linear_t.te"
prepare attn_keys     "H=2 S=64 D=64"             "H=3 S=37 D=19"   "$scheds/attn_keys.te"
prepare attention     "B=2 H=2 S=64 T=64 D=16 E=32" "B=1 H=3 S=37 T=45 D=19 E=21" "$scheds/attention.te"
# (the same at sizes where the default flashes it, 256 KiB of scores a head)
prepare attention_big "B=1 H=2 S=256 T=256 D=16 E=16" "B=2 H=1 S=257 T=261 D=19 E=21" "$scheds/attention.te"
prepare lowp          "M=16 N=64 K=32"            "M=13 N=37 K=67"  "$scheds/lowp.te"
prepare conv_rows     "N=2 C=4 H=32 W=32 F=16"    "N=1 C=3 H=9 W=37 F=13" "$scheds/conv_rows.te"
prepare gather        "S=16 V=37 D=64 R=8"        "S=13 V=11 D=19 R=3" "$scheds/gather.te"
prepare panel         "M=64 N=192 K=384"          "M=40 N=100 K=300" "$scheds/panel.te"
prepare matmul_panel  "M=64 N=192 K=384"          "M=40 N=100 K=300" "$samples/matmul_gelu.te"
prepare im2col        "N=1 C=4 H=14 W=14 F=8"     "N=2 C=3 H=7 W=5 F=5" "$scheds/im2col.te"
prepare guarded       "N=5 W=32"                  "N=3 W=37"        "$scheds/guarded.te"

xargs -P "$jobs" -n 1 sh "$0" --prep <"$preps"

# The cases of each prepared sample and size: its own schedule (if any),
# the default, and each tests/e2e/SAMPLE.N.sched.
cases=$tmp/cases
: >"$cases"
case_n=0
add_case() {  # add_case PREP-DIR SCHEDULE-NAME TE-FILE [TEXC-FLAGS]
    case_n=$((case_n + 1))
    dir=$work/case$case_n
    mkdir -p "$dir"
    cp "$3" "$dir/te"
    echo "$1" >"$dir/prep"
    echo "$2${4:+ ($4)}" >"$dir/sched"
    echo "${4:-}" >"$dir/flags"
    echo "$dir" >>"$cases"
}
while read -r prep; do
    # shellcheck disable=SC2046 # the words of desc
    set -- $(cat "$prep/desc")
    name=$1
    if [ "$(cat "$prep/status" 2>/dev/null)" != ok ]; then
        not_ok "$*: $(cat "$prep/status" 2>/dev/null || echo preparing) failed" "$prep/log"
        continue
    fi
    if grep -q '^[ \t]*schedule[ \t][ \t]*cpu' "$(cat "$prep/source")"; then
        add_case "$prep" own "$(cat "$prep/source")"
    fi
    add_case "$prep" default "$prep/plain.te"
    for sched in "$scheds/$name".*.sched; do
        [ -f "$sched" ] || continue
        n=${sched##*/"$name".}
        n=${n%.sched}
        cat "$prep/plain.te" "$sched" >"$prep/sched$n.te"
        add_case "$prep" "schedule $n" "$prep/sched$n.te" \
            "$(sed -n '1s/^# texc: //p' "$sched")"
    done
done <"$preps"

xargs -P "$jobs" -n 1 sh "$0" --case <"$cases"

while read -r dir; do
    # shellcheck disable=SC2046
    set -- $(cat "$(cat "$dir/prep")/desc")
    name=$1
    shift
    desc="$name $(cat "$dir/sched") $*"
    status=$(cat "$dir/status" 2>/dev/null || echo "no result")
    if [ "$status" = ok ]; then
        ok "$desc"
    else
        [ -n "${E2E_KEEP:-}" ] && echo "the case is in $dir" >>"$dir/log"
        not_ok "$desc: $status failed" "$dir/log"
    fi
done <"$cases"

# The comparison is not vacuous: softmax's input has its output's shape,
# and other values.
for prep in "$work"/softmax.*; do
    [ -f "$prep/ref.p.npy" ] || continue
    if "$builddir/tests/npycmp" "$prep/ref.p.npy" "$prep/ref.in.x.npy" >"$tmp/cmp.out" 2>&1; then
        not_ok "npycmp rejects softmax's input as its output" "$tmp/cmp.out"
    else
        ok "npycmp rejects softmax's input as its output"
    fi
    break
done
done_testing

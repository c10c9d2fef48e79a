#!/bin/sh
# samples.sh — texc --eval on every sample, at small sizes, against an
# independent oracle (tests/check_samples.c): the checker writes known
# inputs, texc evaluates the sample with them (--input), and the checker
# recomputes each output in plain C and compares.  Each sample runs as
# written (f32 outputs) and with f32 replaced by f64, where the evaluator's
# double results come back unrounded and must match to 1e-9; and each at
# a second, odd set of sizes.
. "${srcdir:-.}/tests/lib.sh"

checker=$builddir/tests/check_samples
samples=$srcdir/samples

# Cases live in numbered directories under $tmp, so that no path the
# checker prints contains a space.
cd "$tmp" || exit 99
case_n=0

# run_case SAMPLE FILE TAG NAME=VALUE...: one evaluation, checked.
run_case() {
    sample=$1 file=$2 tag=$3
    shift 3
    case_n=$((case_n + 1))
    dir=case$case_n
    desc="$sample $tag $*"
    mkdir "$dir"
    defines=
    for d in "$@"; do defines="$defines -D $d"; done
    if ! "$checker" gen "$sample" "$dir" "$@" >"$dir/inputs" 2>"$dir/err"; then
        not_ok "$desc: writing the inputs" "$dir/err"
        return
    fi
    inputs=
    for a in $(cat "$dir/inputs"); do inputs="$inputs --input $a"; done
    # shellcheck disable=SC2086 # $defines and $inputs split on purpose
    if ! timeout 60 "$TEXC" --eval --seed "$case_n" $defines $inputs -o "$dir/out" \
        "$file" >"$dir/err" 2>&1; then
        not_ok "$desc: texc --eval" "$dir/err"
        return
    fi
    check "$desc" "$checker" verify "$sample" "$dir" "$@"
}

# run_sample SAMPLE SIZES ODD-SIZES: both sizes, in f32 and in f64.
run_sample() {
    sample=$1 sizes=$2 odd=$3
    sed 's/f32/f64/g' "$samples/$sample.te" >"$sample.f64.te"
    # shellcheck disable=SC2086 # the sizes are NAME=VALUE words
    for file in "$samples/$sample.te" "$sample.f64.te"; do
        case $file in *.f64.te) tag=f64 ;; *) tag=f32 ;; esac
        run_case "$sample" "$file" "$tag" $sizes
        run_case "$sample" "$file" "$tag" $odd
    done
}

run_sample matmul_gelu "M=5 N=7 K=3" "M=1 N=13 K=17"
run_sample batch_matmul "B=2 M=3 N=4 K=5" "B=3 M=1 N=7 K=11"
run_sample conv2d "N=1 C=2 H=6 W=6 F=3" "N=2 C=3 H=7 W=5 F=5"
run_case conv2d "$samples/conv2d.te" f32 N=1 C=2 H=9 W=8 F=2 R=2 S=5 STRIDE=3 PAD=2
run_sample softmax "M=3 N=5" "M=1 N=11"
run_sample layernorm "M=4 D=6" "M=3 D=13"
run_sample transpose_add "M=3 N=4" "M=1 N=9"
run_sample maxpool "N=1 C=2 H=4 W=6" "N=2 C=3 H=5 W=7"
run_sample transformer_block "S=5 D=8 H=2 F=12" "S=7 D=10 H=3 F=9"

# The checker is not vacuous: random inputs (no --input) must not pass.
mkdir wrong
if ! "$TEXC" --eval -D M=3 -D N=5 -o wrong/out "$samples/softmax.te" >wrong/err 2>&1; then
    not_ok "the checker rejects an output from other inputs: texc --eval" wrong/err
elif "$checker" verify softmax wrong M=3 N=5 >wrong/err 2>&1; then
    not_ok "the checker rejects an output from other inputs" wrong/err
else
    ok "the checker rejects an output from other inputs"
fi

# Random inputs depend on --seed and nothing else.
for run in a:7 b:7 c:8; do
    "$TEXC" --eval --seed "${run#*:}" -D M=3 -D N=5 -o "seed.${run%:*}" \
        "$samples/softmax.te" 2>>"$tmp/err"
done
if [ -f seed.a.p.npy ] && cmp -s seed.a.p.npy seed.b.p.npy; then
    ok "--seed 7 twice gives the same random inputs"
else
    not_ok "--seed 7 twice gives the same random inputs" "$tmp/err"
fi
if [ -f seed.c.p.npy ] && ! cmp -s seed.a.p.npy seed.c.p.npy; then
    ok "--seed 8 gives other random inputs than --seed 7"
else
    not_ok "--seed 8 gives other random inputs than --seed 7" "$tmp/err"
fi
done_testing

#!/bin/sh
# exercise_c.sh — exercise C of the seed text, for make bench: "run a
# compiled model with 20 different sequence lengths; count the
# recompilations", with texc's answer: one artifact built once with the
# sequence length a run-time size, against a static build per length.
#
#   exercise_c.sh TEXC SAMPLES OUTDIR 'CC FLAGS' NPYCMP THREADS REPEATS S...
#
# The model is samples/transformer_block.te (one pre-norm encoder block:
# layer norm, 4-head self-attention, a GELU MLP, two residuals) at the
# sample's own small sizes, D = 64, H = 4, DH = 16, F = 256, with its dim
# line made `dim S in 1..512 = 32` (S, the sequence length, at run time).
# It has no schedule: texc's default one, in both builds.
#
#   the dynamic artifact   texc --harness once, compiled once with CC FLAGS;
#                          its harness takes S as its first argument, and
#                          runs every length (its checksum is compared
#                          before and after: zero rebuilds)
#   the static builds      texc -D S=s --harness and CC FLAGS, once per length
#
# Each length's inputs come from `texc --eval -D S=s --save-inputs` (the
# reference evaluator, which also writes the expected output); each build
# runs them with its harness, -r REPEATS (the median of REPEATS timed runs
# after one warm-up, rotating through copies of the buffers larger than
# the last-level cache: codegen/harness.c), on THREADS threads
# (OMP_NUM_THREADS), and NPYCMP compares its output with the evaluator's.
# Build times are wall times of texc and the C compiler together.
#
# Prints a Markdown section on stdout; exit status 1 when an output does
# not match or the artifact changed.
set -e
texc=$1 samples=$2 out=$3 cc=$4 npycmp=$5 threads=$6 repeats=$7
shift 7

rm -rf "$out"
mkdir -p "$out"
te=$out/transformer_block_rt.te
sed 's/^dim S = 32, /dim S in 1..512 = 32, /' "$samples/transformer_block.te" > "$te"
if ! grep -q '^dim S in 1\.\.512 = 32, D = 64, H = 4, DH = D / H, F = 256;' "$te"; then
    echo "exercise_c.sh: $samples/transformer_block.te no longer declares 'dim S = 32, D = 64, H = 4, DH = D / H, F = 256;'" >&2
    exit 1
fi
# the harness's arguments: the inputs in the file's order, then the output
inputs=$(sed -n 's/^input \([A-Za-z_][A-Za-z0-9_]*\) *:.*/\1/p' "$te")

now() {
    date +%s.%N
}

# prints B - A to the millisecond
minus() {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'
}

# build NAME TEXC-ARGS...: OUTDIR/NAME.{c,h}, NAME_harness.c and the
# harness program OUTDIR/NAME_harness; prints the seconds it took
build() {
    name=$1
    shift
    t0=$(now)
    "$texc" -q --log=/dev/null "$te" "$@" --harness -o "$out/$name" 2>/dev/null
    # shellcheck disable=SC2086 # CC FLAGS split on purpose
    $cc -o "$out/${name}_harness" "$out/$name.c" "$out/${name}_harness.c" -lm
    minus "$t0" "$(now)"
}

# run HARNESS PREFIX OUTPUT [S=s]: the harness on PREFIX's inputs; prints
# the median seconds
run() {
    harness=$1 prefix=$2 output=$3
    shift 3
    for name in $inputs; do
        set -- "$@" "$prefix.in.$name.npy"
    done
    OMP_NUM_THREADS=$threads "$harness" "$@" "$output" -r "$repeats" | awk '{ print $1 }'
}

dynamic_s=$(build tb_rt)
sum_before=$(cksum < "$out/tb_rt_harness")

static_s=0 rows='' bad=0 n=0 log_sum=0 worst='' worst_s=''
for s in "$@"; do
    n=$((n + 1))
    "$texc" -q --log=/dev/null --eval -D S="$s" --save-inputs -o "$out/ref_$s" "$te"
    secs=$(build "tb_s$s" -D S="$s")
    static_s=$(awk -v a="$static_s" -v b="$secs" 'BEGIN { printf "%.3f", a + b }')
    dyn=$(run "$out/tb_rt_harness" "$out/ref_$s" "$out/dyn_$s.y.npy" "S=$s")
    sta=$(run "$out/tb_s${s}_harness" "$out/ref_$s" "$out/static_$s.y.npy")
    check=ok
    for got in dyn static; do
        # (-s 4: the block's f32 rounding compounds; as tests/rtdims.sh)
        if ! "$npycmp" -s 4 "$out/ref_$s.y.npy" "$out/${got}_$s.y.npy" > "$out/cmp_${got}_$s.txt" 2>&1; then
            check="**MISMATCH** ($got: $(head -1 "$out/cmp_${got}_$s.txt"))"
            bad=1
        fi
    done
    ratio=$(awk -v d="$dyn" -v t="$sta" 'BEGIN { printf "%.3f", t / d }')
    log_sum=$(awk -v a="$log_sum" -v r="$ratio" 'BEGIN { printf "%.9f", a + log(r) }')
    if [ -z "$worst" ] || awk -v r="$ratio" -v w="$worst" 'BEGIN { exit !(r < w) }'; then
        worst=$ratio worst_s=$s
    fi
    rows="$rows| $s | $(awk -v t="$dyn" 'BEGIN { printf "%.4f", t * 1e3 }') | $(awk -v t="$sta" 'BEGIN { printf "%.4f", t * 1e3 }') | $ratio | $secs | $check |
"
    echo "exercise C: S = $s: dynamic $dyn s, static $sta s, static build $secs s, $check" >&2
done
sum_after=$(cksum < "$out/tb_rt_harness")
if [ "$sum_before" = "$sum_after" ]; then
    rebuilt="none (the harness program's checksum is the same after the $n lengths)"
else
    rebuilt="**the harness program changed**"
    bad=1
fi
geomean=$(awk -v a="$log_sum" -v n="$n" 'BEGIN { printf "%.3f", exp(a / n) }')

cat <<EOF

## Exercise C: $n sequence lengths through one transformer block

The seed text's exercise C (run a compiled model with 20 sequence lengths, count the
recompilations) with texc: samples/transformer_block.te (pre-norm encoder block: layer
norm, 4-head self-attention, GELU MLP; the sample's sizes D = 64, H = 4, DH = 16, F = 256)
with \`dim S in 1..512 = 32\`, built **once** and run at every length, against a static
build per length (\`-D S=s\`).  Both with texc's default schedule, compiled with
\`$cc\`, run by texc's harness (\`-r $repeats\`: the median of $repeats timed runs after a
warm-up, on buffers rotated past the last-level cache) on $threads thread(s), each output
checked against the reference evaluator's with npycmp (tolerance times 4: the block's f32 rounding compounds).  Written by \`make bench\`
(bench/exercise_c.sh).

- builds (texc + the C compiler, wall): the one artifact **$dynamic_s s**, once; the $n
  static builds **$static_s s** in all
- rebuilds of the artifact over the $n lengths: $rebuilt
- dynamic ÷ static, a speed ratio (the static build's time over the artifact's; > 1: the artifact faster): geomean **$geomean** over the $n lengths,
  worst $worst (at S = $worst_s)

| S | dynamic ms | static ms | dynamic ÷ static | static build s | check |
|--:|--:|--:|--:|--:|---|
$rows
EOF
exit $bad

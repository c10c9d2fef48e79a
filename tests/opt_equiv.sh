#!/bin/sh
# opt_equiv.sh — the optimizer keeps every sample's numbers.
#
# For every sample (at the small sizes of the table below), the reference
# evaluator runs the program as written (texc --eval) and after the
# optimizer's passes (texc --eval=optimized), on the same random inputs;
# tests/npycmp compares every output with its dtype's tolerance (f32:
# rtol = atol = 1e-4, the reassociation tolerance of DESIGN.md section 4).
# Then again with -fstrict-fp, where only rewrites exact in the dtype
# apply, and again with two other seeds.  One TAP line per (sample, mode,
# seed).  A sample missing from the table runs at its own sizes, since a
# new sample may not know to add itself here.
. "${srcdir:-.}/tests/lib.sh"

samples=$srcdir/samples
npycmp=$builddir/tests/npycmp

# sizes SAMPLE: its -D flags
sizes() {
    case $1 in
    matmul_gelu) echo "-D M=5 -D N=7 -D K=64" ;;
    batch_matmul) echo "-D B=2 -D M=3 -D N=4 -D K=5" ;;
    conv2d) echo "-D N=1 -D C=2 -D H=6 -D W=6 -D F=3" ;;
    layernorm) echo "-D M=4 -D D=37" ;;
    maxpool) echo "-D N=1 -D C=2 -D H=4 -D W=6" ;;
    softmax) echo "-D M=3 -D N=11" ;;
    transpose_add) echo "-D M=3 -D N=4" ;;
    transformer_block) echo "-D S=5 -D D=8 -D H=2 -D F=12" ;;
    *) echo "" ;;
    esac
}

# (and tests/e2e/gather.te: the passes on indices that read tensors)
for te in "$samples"/*.te "$srcdir/tests/e2e/gather.te"; do
    sample=$(basename "$te" .te)
    defines=$(sizes "$sample")
    for mode in fast strict; do
        flags=
        [ "$mode" = strict ] && flags=-fstrict-fp
        for seed in 1 2 3; do
            dir=$tmp/$sample.$mode.$seed
            mkdir -p "$dir"
            desc="$sample $mode-fp seed $seed"
            # shellcheck disable=SC2086 # $defines and $flags split on purpose
            if ! timeout 120 "$TEXC" $defines $flags --seed "$seed" --eval -o "$dir/ref" \
                "$te" >"$dir/log" 2>&1; then
                not_ok "$desc: texc --eval" "$dir/log"
                continue
            fi
            # shellcheck disable=SC2086
            if ! timeout 120 "$TEXC" $defines $flags --seed "$seed" --eval=optimized \
                -o "$dir/opt" "$te" >"$dir/log" 2>&1; then
                not_ok "$desc: texc --eval=optimized" "$dir/log"
                continue
            fi
            failed=
            : >"$dir/cmp"
            for ref in "$dir"/ref.*.npy; do
                out=${ref#"$dir"/ref.}
                if ! "$npycmp" "$ref" "$dir/opt.$out" >>"$dir/cmp" 2>&1; then
                    failed="$failed $out"
                fi
            done
            if [ -n "$failed" ]; then
                not_ok "$desc:$failed" "$dir/cmp"
            else
                ok "$desc"
            fi
        done
    done
done
done_testing

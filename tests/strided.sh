#!/bin/sh
# strided.sh — vector loads whose lanes are 2, 3 or 4 elements apart
# (codegen/c.c te_vloads): conv2d at strides 1 to 4, its default schedule
# (the padded image a stage of its own, the output columns vectorized), at
# column counts 16 does not divide, built with ASan and UBSan for this CPU
# (-march=native: on AVX-512 a permute for stride 2 and a gather above it),
# and at stride 3 also for the baseline ISA (a loop over lanes; e2e.sh
# covers it at stride 2), each run on the reference evaluator's inputs and
# compared with its output.
. "${srcdir:-.}/tests/lib.sh"

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export ASAN_OPTIONS
cflags="-std=gnu11 -O1 -g -fopenmp -fsanitize=address,undefined -fno-sanitize-recover=all"
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    native="-march=native (AVX-512: permute and gather)"
else
    native="-march=native (no AVX-512 here: the loop over lanes)"
fi
sed '/^schedule/,$d' "$srcdir/samples/conv2d.te" >"$tmp/conv.te"
for stride in 1 2 3 4; do
    d="-D N=1 -D C=3 -D H=13 -D W=100 -D F=5 -D STRIDE=$stride"
    what="conv2d stride $stride (W=100)"
    # shellcheck disable=SC2086 # $d splits on purpose
    if ! "$TEXC" "$tmp/conv.te" $d --eval --save-inputs -o "$tmp/ref$stride" >"$tmp/out" 2>&1 ||
       ! "$TEXC" "$tmp/conv.te" $d --harness -o "$tmp/k$stride" >"$tmp/out" 2>&1; then
        not_ok "$what: texc" "$tmp/out"
        continue
    fi
    if [ "$stride" -gt 1 ]; then
        check "$what: the columns load through te_vloads(.., $stride)" \
            grep -q "te_vloads(&pad\[.*, $stride)" "$tmp/k$stride.c"
    else
        check "$what: the columns load as plain vectors" \
            sh -c "! grep -q 'te_vloads(&pad' '$tmp/k$stride.c' && grep -q 'te_vload(&pad' '$tmp/k$stride.c'"
    fi
    isas=native
    [ "$stride" = 3 ] && isas="native baseline"
    for isa in $isas; do
        march=
        [ "$isa" = native ] && march=-march=native
        label=$native
        [ "$isa" = baseline ] && label="baseline ISA (the loop over lanes)"
        # shellcheck disable=SC2086 # $cflags and $march split on purpose
        if ! ${CC:-cc} $cflags $march -o "$tmp/run" "$tmp/k$stride.c" "$tmp/k${stride}_harness.c" -lm \
            >"$tmp/out" 2>&1; then
            not_ok "$what, $label: compiling" "$tmp/out"
            continue
        fi
        if "$tmp/run" "$tmp/ref$stride.in.img.npy" "$tmp/ref$stride.in.flt.npy" \
               "$tmp/ref$stride.in.bias.npy" "$tmp/got.npy" >"$tmp/out" 2>&1 &&
           "$builddir/tests/npycmp" "$tmp/ref$stride.out.npy" "$tmp/got.npy" >>"$tmp/out" 2>&1; then
            ok "$what, $label: matches the evaluator"
        else
            not_ok "$what, $label: matches the evaluator" "$tmp/out"
        fi
    done
done
done_testing

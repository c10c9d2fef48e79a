#!/bin/sh
# conversions.sh — the kernels' bf16 and f16 conversions against the
# evaluator's (dtype_round: round to nearest even) over every bit pattern
# (issue 20, ask 3).  tests/conv/patterns.te makes, with the evaluator,
# every bf16 and f16 pattern as an f32, the midpoint to its successor and
# the f32 values either side of that midpoint; tests/conv/convert.te
# converts them in a kernel, as casts (to f32 again) and as stores.  The
# results must be the evaluator's exactly (npycmp -s 0), with the kernel
# built four ways: under ASan and UBSan at -O0, and at -O2 for this
# machine (-march=native: F16C and, where the CPU has them, AVX-512 BF16
# and FP16), for x86-64-v3 (F16C, no AVX-512) and for plain x86-64 (no
# F16C: the compiler's own conversions), so the portable code and the
# instructions are held to the same numbers.
. "${srcdir:-.}/tests/lib.sh"

npycmp=$builddir/tests/npycmp
conv=$srcdir/tests/conv
"$TEXC" "$conv/patterns.te" --eval -o "$tmp/pat" >"$tmp/err" 2>&1 &&
    "$TEXC" "$conv/convert.te" --eval --input "bx=$tmp/pat.bx.npy" --input "hx=$tmp/pat.hx.npy" \
        -o "$tmp/ref" >>"$tmp/err" 2>&1 &&
    "$TEXC" "$conv/convert.te" --harness -o "$tmp/k" >>"$tmp/err" 2>&1 ||
    { not_ok "the patterns, the reference and the kernel are written" "$tmp/err"; done_testing; exit; }

# the comparison is not vacuous: the inputs themselves, not yet rounded,
# differ from their bf16 and f16 roundings
check "npycmp -s 0 tells the unrounded values from the bf16 ones" \
    sh -c "! '$npycmp' -s 0 '$tmp/ref.rb.npy' '$tmp/pat.bx.npy'"
check "npycmp -s 0 tells the unrounded values from the f16 ones" \
    sh -c "! '$npycmp' -s 0 '$tmp/ref.rh.npy' '$tmp/pat.hx.npy'"

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export ASAN_OPTIONS
for build in "sanitized:-O0 -fsanitize=address,undefined -fno-sanitize-recover=all" \
             "native:-O2 -march=native" "x86-64-v3:-O2 -march=x86-64-v3" "x86-64:-O2 -march=x86-64"; do
    name=${build%%:*}
    flags=${build#*:}
    case $name in x86-64*) [ "$(uname -m)" = x86_64 ] || { skip "$name build" "not an x86-64 machine"; continue; } ;; esac
    # shellcheck disable=SC2086 # $flags splits on purpose
    if ! ${CC:-cc} -std=gnu11 -g -fopenmp $flags -o "$tmp/run" "$tmp/k.c" "$tmp/k_harness.c" -lm \
        >"$tmp/err" 2>&1; then
        not_ok "$name: the conversion kernel compiles" "$tmp/err"
        continue
    fi
    if ! "$tmp/run" "$tmp/pat.bx.npy" "$tmp/pat.hx.npy" "$tmp/got.rb.npy" "$tmp/got.sb.npy" \
        "$tmp/got.rh.npy" "$tmp/got.sh.npy" >"$tmp/err" 2>&1; then
        not_ok "$name: the conversion kernel runs" "$tmp/err"
        continue
    fi
    for o in rb sb rh sh; do
        case $o in
        rb) what="f32(bf16(x))" ;; sb) what="a bf16 store" ;;
        rh) what="f32(f16(x))" ;; sh) what="an f16 store" ;;
        esac
        check "$name: $what of all 65536 patterns, their midpoints and neighbours, exactly as the evaluator" \
            "$npycmp" -s 0 "$tmp/ref.$o.npy" "$tmp/got.$o.npy"
    done
done
done_testing

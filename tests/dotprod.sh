#!/bin/sh
# dotprod.sh — matmuls on the dot-product instructions (issue 20, ask 2),
# and the low-precision matmuls that have none.  tests/dot/bf16_matmul.te
# reads a const bf16 weight that layout assignment prepacks with pairs of
# k interleaved, tests/dot/u8i8_matmul.te const i8 weights with quads of
# k, and their default schedules' inner loops run over the pairs
# (te_vdot_bf16: vdpbf16ps where the compiler targets AVX512_BF16) and the
# quads (te_vdot_u8i8: vpdpbusd, AVX512_VNNI), with the same arithmetic in
# the same order in portable code elsewhere.  tests/dot/i8i8_matmul.te
# (x signed too: vpdpbusd, u8 x s8, does not apply) and tests/dot/
# f16_matmul.te take the element-wise path: i32 (f32) products of the
# widened elements, the f16 ones converted by F16C's vcvtph2ps where the
# target has it and by the compiler's own code on plain x86-64.  At odd
# sizes (a K the groups do not divide: the last k padded with 0) and at
# M = 1 (one panel as wide as w, K a multiple of the groups), each program
# is built
#   native     -O0 -march=native under ASan and UBSan: the instructions
#              where this CPU and compiler have them (checked with
#              objdump, else a SKIP says so);
#   x86-64-v3  -O1 -march=x86-64-v3: the portable code (no AVX-512);
#   x86-64     -O1 -march=x86-64, f16 only: no F16C (checked with
#              objdump: no vcvtph2ps);
# (at once), and each is compared with the evaluator (npycmp: f32 within
# its tolerance, i32 exactly), and each with the native one bit for bit
# (npycmp -s 0): the instructions and the portable code give the same
# numbers.  Hand schedules whose k loops do not run over the groups (a
# split of 3; a split of 4 with an edge) are compared with the evaluator
# too, for all four programs.
. "${srcdir:-.}/tests/lib.sh"

npycmp=$builddir/tests/npycmp
dot=$srcdir/tests/dot
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export ASAN_OPTIONS
SAN="-O0 -fsanitize=address,undefined -fno-sanitize-recover=all"

# has_isa CPUFLAG MACRO: does -march=native give it here (CPU and compiler)?
has_isa() {
    [ "$(uname -m)" = x86_64 ] && grep -qw "$1" /proc/cpuinfo 2>/dev/null &&
        ${CC:-cc} -march=native -dM -E - </dev/null 2>/dev/null | grep -q "$2"
}

# write TE DEFINES...: the reference ($tmp/ref.*) and the kernel
# ($tmp/k.*), and $outs, the kernel's outputs
write() {
    te=$1
    shift
    "$TEXC" "$te" "$@" --eval --save-inputs -o "$tmp/ref" >"$tmp/err" 2>&1 &&
        "$TEXC" "$te" "$@" --harness -o "$tmp/k" >>"$tmp/err" 2>&1 &&
        outs=$(sed -n 's/^ \* output \([A-Za-z0-9_]*\) :.*/\1/p' "$tmp/k.h")
}

# build NAME FLAGS: $tmp/k.c with its harness, as $tmp/run.NAME
build() {
    # shellcheck disable=SC2086 # $2 splits on purpose
    ${CC:-cc} -std=gnu11 -g -fopenmp $2 -o "$tmp/run.$1" "$tmp/k.c" "$tmp/k_harness.c" -lm \
        >"$tmp/err.$1" 2>&1
}

# run NAME: the kernel on the reference's inputs, into $tmp/NAME.OUT.npy
run() {
    name=$1
    set --
    for i in $(sed -n 's/^ \* input  \([A-Za-z0-9_]*\) :.*/\1/p' "$tmp/k.h"); do
        set -- "$@" "$tmp/ref.in.$i.npy"
    done
    for o in $outs; do set -- "$@" "$tmp/$name.$o.npy"; done
    "$tmp/run.$name" "$@" >"$tmp/err" 2>&1
}

# compare NAME DESC: the outputs against the evaluator's
compare() {
    for o in $outs; do
        check "$2: $o as the evaluator" "$npycmp" "$tmp/ref.$o.npy" "$tmp/$1.$o.npy"
    done
}

# program, its inner step (- where its k loop runs element by element),
# the instruction the native build runs (- for none asserted), its
# cpuinfo flag and compiler macro, the builds besides native
for test in "bf16_matmul te_vdot_bf16 vdpbf16ps avx512_bf16 __AVX512BF16__ x86-64-v3" \
            "u8i8_matmul te_vdot_u8i8 vpdpbusd avx512_vnni __AVX512VNNI__ x86-64-v3" \
            "i8i8_matmul - - - - x86-64-v3" \
            "f16_matmul - vcvtph2ps f16c __F16C__ x86-64-v3 x86-64"; do
    # shellcheck disable=SC2086 # the words of $test
    set -- $test
    prog=$1 fn=$2 insn=$3 flag=$4 macro=$5
    shift 5
    others=$*
    isa=no
    [ "$insn" != - ] && has_isa "$flag" "$macro" && isa=yes
    for sizes in "M=13 N=37 K=67" "M=1 N=64 K=8"; do
        what="$prog $sizes"
        set --
        for d in $sizes; do set -- "$@" -D "$d"; done
        if ! write "$dot/$prog.te" "$@"; then
            not_ok "$what: the reference and the kernel are written" "$tmp/err"
            continue
        fi
        if [ "$fn" != - ]; then
            check "$what: the kernels' k loops run over groups of k ($fn)" grep -q "$fn(._acc" "$tmp/k.c"
        else
            # vpdpbusd is u8 x s8: i8 x i8 (and f16) take the element-wise path
            check "$what: the kernels' k loops run element by element (no te_vdot)" \
                sh -c "! grep -q te_vdot_ '$tmp/k.c'"
        fi
        names=native
        if [ "$(uname -m)" = x86_64 ]; then
            names="native $others"
        else
            skip "$what: $others" "not an x86-64 machine"
        fi
        # compiled at once, then each checked
        for name in $names; do
            case $name in native) flags="$SAN -march=native" ;; *) flags="-O1 -march=$name" ;; esac
            (build "$name" "$flags"; echo $? >"$tmp/rc.$name") &
        done
        wait
        for name in $names; do
            if [ "$(cat "$tmp/rc.$name")" != 0 ]; then
                not_ok "$what: $name: the kernel compiles" "$tmp/err.$name"
                continue
            fi
            if [ "$name" = native ] && [ "$insn" != - ]; then
                if [ "$isa" = yes ]; then
                    check "$what: native: the build runs $insn" \
                        sh -c "objdump -d '$tmp/run.native' | grep -q $insn"
                else
                    skip "$what: native: the build runs $insn" "no $flag here (CPU or compiler)"
                fi
            fi
            if [ "$name" = x86-64 ] && [ "$insn" != - ]; then
                check "$what: x86-64: the build does without $insn (the portable path)" \
                    sh -c "! objdump -d '$tmp/run.x86-64' | grep -q $insn"
            fi
            if ! run "$name"; then
                not_ok "$what: $name: the kernel runs" "$tmp/err"
                continue
            fi
            compare "$name" "$what: $name"
        done
        for name in $names; do
            [ "$name" = native ] && continue
            for o in $outs; do
                if [ -f "$tmp/native.$o.npy" ] && [ -f "$tmp/$name.$o.npy" ]; then
                    check "$what: $o of the native build and the $name one, bit for bit" \
                        "$npycmp" -s 0 "$tmp/native.$o.npy" "$tmp/$name.$o.npy"
                fi
            done
        done
        rm -f "$tmp"/native.* "$tmp"/x86-64*
    done
done

# hand schedules whose k loops do not run over the groups (a split of 3;
# a split of 4 with an edge): bf16 and u8 x i8 read the same panels (pairs,
# quads) element by element; i8 x i8 and f16 their plain panels
for test in "bf16_matmul 2" "u8i8_matmul 4" "i8i8_matmul -" "f16_matmul -"; do
    # shellcheck disable=SC2086 # the words of $test
    set -- $test
    prog=$1 group=$2
    for ks in 3 4; do
        te=$tmp/split$ks.te
        { cat "$dot/$prog.te"
          echo "schedule cpu {"
          echo "  y.tile(i, j, 4, 16) -> io, jo, ii, ji;"
          echo "  y.split(k, $ks) -> ko, ki;"
          echo "  y.reorder(io, jo, ko, ki, ii, ji);"
          echo "  y.vectorize(ji);"
          echo "}"; } >"$te"
        what="$prog split(k, $ks), M=13 N=37 K=67"
        if ! write "$te"; then
            not_ok "$what: the reference and the kernel are written" "$tmp/err"
            continue
        fi
        if [ "$group" != - ]; then
            # the packing loop's store: lane l holds k % G = l % G
            check "$what: the weight is packed in groups of $group k" \
                grep -Eq "_packed(_[0-9]+)?\[[a-z0-9_]+\]\[[a-z0-9_]+\]\[[a-z0-9_]+\] = .*[^a-z0-9_]l(_[0-9]+)? % $group[^0-9]" "$tmp/k.c"
        fi
        if ! build split "$SAN -march=native"; then
            not_ok "$what: the kernel compiles" "$tmp/err.split"
        elif ! run split; then
            not_ok "$what: the kernel runs" "$tmp/err"
        else
            compare split "$what"
        fi
    done
done
done_testing

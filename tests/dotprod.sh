#!/bin/sh
# dotprod.sh — matmuls on the dot-product instructions (issue 20, ask 2).
# tests/dot/bf16_matmul.te reads a const bf16 weight that layout
# assignment prepacks with pairs of k interleaved, tests/dot/
# u8i8_matmul.te const i8 weights with quads of k, and their default
# schedules' inner loops run over the pairs (te_vdot_bf16: vdpbf16ps
# where the compiler targets AVX512_BF16) and the quads (te_vdot_u8i8:
# vpdpbusd, AVX512_VNNI), with the same arithmetic in the same order in
# portable code elsewhere.  At odd sizes (a K the groups do not divide:
# the last k padded with 0) and at M = 1 (one panel as wide as w, K a
# multiple of the groups), each program is built
#   native     -O0 -march=native under ASan and UBSan: the instructions
#              where this CPU and compiler have them (checked with
#              objdump, else a SKIP says so);
#   x86-64-v3  -O1 -march=x86-64-v3: the portable code (the two builds
#              run at once);
# and each is compared with the evaluator (npycmp: f32 within its
# tolerance, i32 exactly), and the two with each other bit for bit
# (npycmp -s 0): the instructions and the portable code give the same
# numbers.  Two schedules whose k loops do not run over pairs (a split
# of 3; a split of 4 with an edge) read the same bf16 panels an element
# at a time and are compared with the evaluator too.
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

#    program      its inner step    instruction  cpuinfo flag  compiler macro
for test in "bf16_matmul te_vdot_bf16 vdpbf16ps avx512_bf16 __AVX512BF16__" \
            "u8i8_matmul te_vdot_u8i8 vpdpbusd avx512_vnni __AVX512VNNI__"; do
    # shellcheck disable=SC2086 # the words of $test
    set -- $test
    prog=$1 fn=$2 insn=$3 flag=$4 macro=$5
    isa=no
    has_isa "$flag" "$macro" && isa=yes
    for sizes in "M=13 N=37 K=67" "M=1 N=64 K=8"; do
        what="$prog $sizes"
        set --
        for d in $sizes; do set -- "$@" -D "$d"; done
        if ! write "$dot/$prog.te" "$@"; then
            not_ok "$what: the reference and the kernel are written" "$tmp/err"
            continue
        fi
        check "$what: the kernels' k loops run over groups of k ($fn)" grep -q "$fn(._acc" "$tmp/k.c"
        names=native
        if [ "$(uname -m)" = x86_64 ]; then
            names="native x86-64-v3"
        else
            skip "$what: x86-64-v3" "not an x86-64 machine"
        fi
        # both compiled at once, then each checked
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
            if [ "$name" = native ]; then
                if [ "$isa" = yes ]; then
                    check "$what: native: the build runs $insn" \
                        sh -c "objdump -d '$tmp/run.native' | grep -q $insn"
                else
                    skip "$what: native: the build runs $insn" "no $flag here (CPU or compiler)"
                fi
            fi
            if ! run "$name"; then
                not_ok "$what: $name: the kernel runs" "$tmp/err"
                continue
            fi
            compare "$name" "$what: $name"
        done
        for o in $outs; do
            if [ -f "$tmp/native.$o.npy" ] && [ -f "$tmp/x86-64-v3.$o.npy" ]; then
                check "$what: $o of the native build and the x86-64-v3 one, bit for bit" \
                    "$npycmp" -s 0 "$tmp/native.$o.npy" "$tmp/x86-64-v3.$o.npy"
            fi
        done
        rm -f "$tmp"/native.* "$tmp"/x86-64-v3.*
    done
done

# k loops that do not run over pairs read the same panels element by element
for ks in 3 4; do
    te=$tmp/split$ks.te
    { cat "$dot/bf16_matmul.te"
      echo "schedule cpu {"
      echo "  y.tile(i, j, 4, 16) -> io, jo, ii, ji;"
      echo "  y.split(k, $ks) -> ko, ki;"
      echo "  y.reorder(io, jo, ko, ki, ii, ji);"
      echo "  y.vectorize(ji);"
      echo "}"; } >"$te"
    what="bf16_matmul split(k, $ks), M=13 N=37 K=67"
    if ! write "$te"; then
        not_ok "$what: the reference and the kernel are written" "$tmp/err"
        continue
    fi
    check "$what: the weight is packed in pairs of k" grep -q '% 2)\]' "$tmp/k.c"
    if ! build split "$SAN -march=native"; then
        not_ok "$what: the kernel compiles" "$tmp/err.split"
    elif ! run split; then
        not_ok "$what: the kernel runs" "$tmp/err"
    else
        compare split "$what"
    fi
done
done_testing

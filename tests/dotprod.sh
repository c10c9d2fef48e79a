#!/bin/sh
# dotprod.sh — bf16 matmuls on the dot-product instruction (issue 20,
# ask 2).  tests/dot/bf16_matmul.te reads a const bf16 weight that layout
# assignment prepacks with pairs of k interleaved, and its default
# schedule's inner loop runs over the pairs (te_vdot_bf16: vdpbf16ps where
# the compiler targets AVX512_BF16, the same arithmetic in the same order
# elsewhere).  At sizes the tiles divide, odd ones (odd K: the last k
# paired with 0) and M = 1 (one panel as wide as w), the kernel is built
#   native     -O0 -march=native under ASan and UBSan: vdpbf16ps when this
#              CPU and compiler have AVX512_BF16 (checked with objdump,
#              else a SKIP says so);
#   x86-64-v3  -O1 -march=x86-64-v3: the portable code (the two builds
#              run at once);
# and each is compared with the evaluator (npycmp's f32 tolerance), and
# the two with each other bit for bit (npycmp -s 0): the instruction and
# the portable code give the same numbers.  Two schedules whose k loops
# do not run over pairs (a split of 3; a split of 4 with an edge) read the
# same panels lane by lane and are compared with the evaluator too.
. "${srcdir:-.}/tests/lib.sh"

npycmp=$builddir/tests/npycmp
prog=$srcdir/tests/dot/bf16_matmul.te
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export ASAN_OPTIONS
SAN="-O0 -fsanitize=address,undefined -fno-sanitize-recover=all"

# does -march=native give AVX512_BF16 on this machine (compiler and CPU)?
bf16_isa=no
if [ "$(uname -m)" = x86_64 ] && grep -qw avx512_bf16 /proc/cpuinfo 2>/dev/null &&
    ${CC:-cc} -march=native -dM -E - </dev/null 2>/dev/null | grep -q __AVX512BF16__; then
    bf16_isa=yes
fi

# build NAME FLAGS: $tmp/k.c with its harness, as $tmp/run.NAME
build() {
    # shellcheck disable=SC2086 # $2 splits on purpose
    ${CC:-cc} -std=gnu11 -g -fopenmp $2 -o "$tmp/run.$1" "$tmp/k.c" "$tmp/k_harness.c" -lm \
        >"$tmp/err.$1" 2>&1
}

# run NAME: the kernel on the reference's inputs, into $tmp/NAME.*.npy
run() {
    "$tmp/run.$1" "$tmp/ref.in.x.npy" "$tmp/ref.in.w.npy" "$tmp/ref.in.b.npy" \
        "$tmp/$1.z.npy" "$tmp/$1.zb.npy" >"$tmp/err" 2>&1
}

# compare NAME DESC: both outputs against the evaluator's
compare() {
    check "$2: z as the evaluator" "$npycmp" "$tmp/ref.z.npy" "$tmp/$1.z.npy"
    check "$2: zb as the evaluator" "$npycmp" "$tmp/ref.zb.npy" "$tmp/$1.zb.npy"
}

for sizes in "M=13 N=37 K=67" "M=16 N=96 K=64" "M=1 N=64 K=6"; do
    defines=
    for d in $sizes; do defines="$defines -D $d"; done
    # shellcheck disable=SC2086 # $defines splits on purpose
    if ! "$TEXC" "$prog" $defines --eval --save-inputs -o "$tmp/ref" >"$tmp/err" 2>&1 ||
        ! "$TEXC" "$prog" $defines --harness -o "$tmp/k" >>"$tmp/err" 2>&1; then
        not_ok "$sizes: the reference and the kernel are written" "$tmp/err"
        continue
    fi
    check "$sizes: the kernel's k loop runs over pairs (te_vdot_bf16)" \
        grep -q 'te_vdot_bf16(y_acc' "$tmp/k.c"
    names=native
    [ "$(uname -m)" = x86_64 ] && names="native x86-64-v3"
    [ "$(uname -m)" = x86_64 ] || skip "$sizes: x86-64-v3" "not an x86-64 machine"
    # both compiled at once, then each checked
    for name in $names; do
        case $name in native) flags="$SAN -march=native" ;; *) flags="-O1 -march=$name" ;; esac
        (build "$name" "$flags"; echo $? >"$tmp/rc.$name") &
    done
    wait
    for name in $names; do
        if [ "$(cat "$tmp/rc.$name")" != 0 ]; then
            not_ok "$sizes: $name: the kernel compiles" "$tmp/err.$name"
            continue
        fi
        if [ "$name" = native ]; then
            if [ "$bf16_isa" = yes ]; then
                check "$sizes: native: the build runs vdpbf16ps" \
                    sh -c "objdump -d '$tmp/run.native' | grep -q vdpbf16ps"
            else
                skip "$sizes: native: the build runs vdpbf16ps" "no AVX512_BF16 here (CPU or compiler)"
            fi
        fi
        if ! run "$name"; then
            not_ok "$sizes: $name: the kernel runs" "$tmp/err"
            continue
        fi
        compare "$name" "$sizes: $name"
    done
    for o in z zb; do
        if [ -f "$tmp/native.$o.npy" ] && [ -f "$tmp/x86-64-v3.$o.npy" ]; then
            check "$sizes: $o of the native build and the x86-64-v3 one, bit for bit" \
                "$npycmp" -s 0 "$tmp/native.$o.npy" "$tmp/x86-64-v3.$o.npy"
        fi
    done
    rm -f "$tmp"/native.* "$tmp"/x86-64-v3.*
done

# k loops that do not run over pairs read the same panels lane by lane
for ks in 3 4; do
    te=$tmp/split$ks.te
    { cat "$prog"
      echo "schedule cpu {"
      echo "  y.tile(i, j, 4, 16) -> io, jo, ii, ji;"
      echo "  y.split(k, $ks) -> ko, ki;"
      echo "  y.reorder(io, jo, ko, ki, ii, ji);"
      echo "  y.vectorize(ji);"
      echo "}"; } >"$te"
    what="split(k, $ks), M=13 N=37 K=67"
    if ! "$TEXC" "$te" --eval --save-inputs -o "$tmp/ref" >"$tmp/err" 2>&1 ||
        ! "$TEXC" "$te" --harness -o "$tmp/k" >>"$tmp/err" 2>&1; then
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

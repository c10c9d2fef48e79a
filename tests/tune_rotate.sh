#!/bin/sh
# tune_rotate.sh — the harness's input rotation (codegen/harness.c), which
# the tuner's timings rely on: with -r REPEATS it runs the kernel on
# COPIES copies of the inputs and outputs in turn and prints
# "MEDIAN COPIES".  The kernel and the harness are compiled with ASan and
# UBSan, so a copy allocated short or used out of bounds fails; every
# output copy starts poisoned with NaN, so an output written from a copy
# the kernel did not compute fails the comparison with the reference.
. "${srcdir:-.}/tests/lib.sh"

te=$srcdir/tests/tune/autospace.te
KCFLAGS="-std=gnu11 -O1 -g -fopenmp -fsanitize=address,undefined -fno-sanitize-recover=all"

"$TEXC" "$te" --eval --save-inputs -o "$tmp/ref" >"$tmp/eval.out" 2>&1 &&
    "$TEXC" "$te" -o "$tmp/k" --harness >"$tmp/texc.out" 2>&1
check "texc --eval and texc --harness" test -s "$tmp/k_harness.c"
# shellcheck disable=SC2086 # $KCFLAGS splits on purpose
${CC:-cc} $KCFLAGS -o "$tmp/run" "$tmp/k.c" "$tmp/k_harness.c" -lm >"$tmp/cc.out" 2>&1
check "the kernel and its harness compile" test -x "$tmp/run"

ins="$tmp/ref.in.x.npy $tmp/ref.in.w.npy $tmp/ref.in.b.npy"
# run NAME ARGS...: runs the harness writing NAME.y.npy and NAME.r.npy,
# its stdout in NAME.txt; then both outputs must match the reference
run() {
    name=$1
    shift
    # shellcheck disable=SC2086 # $ins splits on purpose
    if "$tmp/run" $ins "$tmp/$name.y.npy" "$tmp/$name.r.npy" "$@" >"$tmp/$name.txt" 2>"$tmp/$name.err" &&
        "$builddir/tests/npycmp" "$tmp/ref.y.npy" "$tmp/$name.y.npy" >>"$tmp/$name.err" 2>&1 &&
        "$builddir/tests/npycmp" "$tmp/ref.r.npy" "$tmp/$name.r.npy" >>"$tmp/$name.err" 2>&1; then
        ok "$name: exit 0, outputs match the reference"
    else
        not_ok "$name: exit 0, outputs match the reference" "$tmp/$name.err"
    fi
}
# copies NAME: the second number the harness printed
copies() { sed -n 's/^[0-9.e+-]* \([0-9]*\)$/\1/p' "$tmp/$1.txt"; }

run plain
check "plain: no -r, no timing printed" test ! -s "$tmp/plain.txt"

run forced -r 7 -c 3
check "-r 7 -c 3: prints the median and 3 copies" test "$(copies forced)" = 3

# Five copies, four runs (a warm-up and three timed): the output written
# is copy 3's, computed only by the last run.
run fewer -r 3 -c 5
check "-r 3 -c 5: uses the 5 copies it was told" test "$(copies fewer)" = 5

# Unforced: this kernel's buffers (6 KB) are far smaller than any
# last-level cache, so the harness rotates through as many copies as
# there are runs (REPEATS + 1), and never more.
run auto -r 9
check "-r 9: rotates through 10 copies (one per run)" test "$(copies auto)" = 10
run auto_many -r 5000
n=$(copies auto_many)
check "-r 5000: at most 1024 copies, and more than one" sh -c "test '$n' -gt 1 && test '$n' -le 1024"

# shellcheck disable=SC2086
"$tmp/run" $ins "$tmp/u.y.npy" "$tmp/u.r.npy" -c 3 >"$tmp/u.out" 2>&1
rc=$?
check "-c without -r is a usage error (exit 2)" sh -c "test $rc -eq 2 && grep -q 'usage:.*-r REPEATS \[-c COPIES\]' '$tmp/u.out'"

done_testing

#!/bin/sh
# cudaemu_mma.sh — the emulator's tensor-core instructions (te_emu_ldmatrix,
# te_emu_mma_m16n8k16 in tests/cudaemu), without texc: tests/cudaemu/mma_unit.cc
# runs warps that load f16 and bf16 tiles with every ldmatrix form a code
# generator uses and multiply them with mma.m16n8k16, through the
# emulator's own launch path, against a host matmul (exact: the same order
# of additions), for each case of `mma_unit --list`:
#   f16|bf16 A B   D matches;
#   plant WHAT     a planted layout error makes the comparison fail (so it
#                  cannot pass vacuously);
#   abort WHAT     a misuse (a block not of whole warps, lanes at different
#                  instructions, a lane returning early, a misaligned row,
#                  half a warp at __syncthreads and half at an mma, which
#                  the emulator gives up waiting for after
#                  $CUDAEMU_WARP_PATIENCE_S, 1 s here) aborts the run with
#                  the emulator's message.
# Built with the flags tests/cuda.sh gives cudaemu.cc (plus the sanitizer
# build's ASan/UBSan), and again under ThreadSanitizer where it runs, as
# tests/cuda.sh runs the emulator: there a race fails, on fewer cases
# (every ldmatrix form for A and for B with both types) and one block of 64
# threads (ThreadSanitizer takes 10 ms to start a thread).  Skipped,
# visibly, without a C++ compiler ($CXX, default c++).
. "${srcdir:-.}/tests/lib.sh"

CXX=${CXX:-c++}
echo 'int main() { return 0; }' >"$tmp/probe.cc"
if ! $CXX -x c++ "$tmp/probe.cc" -o "$tmp/probe" >/dev/null 2>&1; then
    skip "the emulator's ldmatrix and mma.sync" "no C++ compiler ($CXX)"
    done_testing
    exit
fi
# shellcheck disable=SC3045 # dash and bash have ulimit -c
ulimit -c 0 2>/dev/null # the abort cases dump no core

# build NAME FLAGS...: $tmp/NAME, or a not-ok line and false
build() {
    name=$1
    shift
    if $CXX -std=c++17 -O1 -g "$@" -I"$srcdir/tests/cudaemu" -I"$srcdir/runtime" \
            "$srcdir/tests/cudaemu/mma_unit.cc" "$srcdir/tests/cudaemu/cudaemu.cc" \
            -o "$tmp/$name" -lpthread >"$tmp/build.log" 2>&1; then
        return 0
    fi
    not_ok "mma_unit builds ($name)" "$tmp/build.log"
    return 1
}

# the abort cases' messages, by case
expected_message() {
    case $1 in
        block) echo 'in a block of 48 threads (48x1x1), not whole warps of 32' ;;
        mixed) echo 'while lane 3 of the warp is at ldmatrix.m8n8.x2.b16' ;;
        exit) echo 'returned from the kernel\|lanes of the warp have returned from the kernel' ;;
        align) echo 'ldmatrix.x1 row address 0x[0-9a-f]* is not 16-byte aligned' ;;
        sync) echo 'mma.m16n8k16.f32.bf16: 16 of 32 lanes arrived in 1 s (do all lanes reach it?)' ;;
    esac
}

# run_cases NAME CASES [--small]: each case in the file CASES by $tmp/NAME
run_cases() {
    name=$1
    prog=$tmp/$name
    small=${3:-}
    # shellcheck disable=SC2086 # $small and $more: a word or none
    while read -r kind what more; do
        case $kind in
            f16|bf16)
                # shellcheck disable=SC2086 # $more is the B mode
                check "$kind: A by ldmatrix .$what, B by .$more, 2x2 mma.m16n8k16 per warp: D equals the host matmul ($name)" \
                    "$prog" $small "$kind" "$what" $more ;;
            plant)
                check "a planted layout error ($what) makes D differ ($name)" "$prog" $small plant "$what" ;;
            abort)
                CUDAEMU_WARP_PATIENCE_S=1 "$prog" $small abort "$what" >"$tmp/out" 2>&1
                rc=$?
                pattern="cudaemu: block ([0-9,]*), warp [0-9]*, lane [0-9]*: .*$(expected_message "$what")"
                if [ "$rc" -ge 128 ] && grep -q "$pattern" "$tmp/out"; then
                    ok "a misuse ($what) aborts with the emulator's message ($name)"
                else
                    echo "exit status $rc, expected an abort with: $pattern" >>"$tmp/out"
                    not_ok "a misuse ($what) aborts with the emulator's message ($name)" "$tmp/out"
                fi ;;
        esac
    done <"$2"
}

# shellcheck disable=SC2086 # $SANITIZER_FLAGS splits on purpose
if build plain ${SANITIZER_FLAGS:-}; then
    if "$tmp/plain" --list >"$tmp/cases"; then
        run_cases plain "$tmp/cases"
    else
        not_ok "mma_unit --list"
    fi
fi
if $CXX -fsanitize=thread -x c++ "$tmp/probe.cc" -o "$tmp/probe" >/dev/null 2>&1 && "$tmp/probe" >/dev/null 2>&1; then
    if build tsan -fsanitize=thread; then
        # a race is an error (exit status 66), not a report to pass over
        TSAN_OPTIONS="halt_on_error=1 exitcode=66 report_signal_unsafe=0"
        export TSAN_OPTIONS
        cat >"$tmp/tsan_cases" <<EOF
bf16 x4 x2.trans
bf16 x4.trans x2
bf16 x2 x4.trans
bf16 x1 x4
f16 x4 x4
f16 x4.trans x4.trans
f16 x2 x2
f16 x1 x2.trans
EOF
        run_cases tsan "$tmp/tsan_cases" --small
    fi
else
    skip "the cases under ThreadSanitizer" "-fsanitize=thread does not build and run here"
fi
done_testing

#!/bin/sh
# rtdims.sh — run-time dims end to end: each sample made dynamic in its
# natural dim, built once by texc for the CPU, compiled as a shared object
# with the build's sanitizer flags, and run by tests/rtdims_run at every
# size of the case (all of 1..300 where the range allows) against the
# reference evaluator at that size, then at 0, -1 and the maximum + 1,
# which must return NAME_ERANGE and write nothing.  One TAP line per case
# (sample, schedule): the runner's own lines go to the log on a failure.
#
# The other dims are small (-D), since the reference evaluator is naive
# and, under the sanitizers, slow.
. "${srcdir:-.}/tests/lib.sh"

samples=$srcdir/samples
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export ASAN_OPTIONS
# -O0: the sanitizers check as much, and it compiles fast (e2e.sh)
KCFLAGS="-std=gnu11 -O0 -g -fopenmp -fPIC -shared ${SANITIZER_FLAGS:-}"

# run_case NAME SAMPLE SED SCHEDULE SIZES [-t SCALE] DEFINES...: SAMPLE's
# dim line rewritten by SED, under its own schedule (SCHEDULE "own") or
# the default (the schedule blocks stripped), run at SIZES ("M=1-300,512"),
# the f32 tolerance times SCALE.
run_case() {
    name=$1 sample=$2 rewrite=$3 sched=$4 sizes=$5
    shift 5
    tol=
    if [ "${1:-}" = -t ]; then
        tol="-t $2"
        shift 2
    fi
    dir=$tmp/$name
    mkdir -p "$dir"
    if [ "$sched" = own ]; then
        sed "$rewrite" "$samples/$sample.te" >"$dir/k.te"
    else
        strip_schedules "$samples/$sample.te" | sed "$rewrite" >"$dir/k.te"
    fi
    if ! grep -q '^dim [A-Za-z_]* in ' "$dir/k.te"; then
        echo "the rewrite '$rewrite' made no run-time dim" >"$dir/log"
        not_ok "$name: the sample declares a run-time dim" "$dir/log"
        return
    fi
    if ! (cd "$dir" && "$TEXC" --log=/dev/null "$@" -o k k.te) >"$dir/log" 2>&1; then
        not_ok "$name: texc builds it" "$dir/log"
        return
    fi
    # shellcheck disable=SC2086 # KCFLAGS splits on purpose
    if ! ${CC:-cc} $KCFLAGS -o "$dir/k.so" "$dir/k.c" -lm >>"$dir/log" 2>&1; then
        not_ok "$name: the generated C compiles" "$dir/log"
        return
    fi
    # shellcheck disable=SC2086 # $sizes and $tol are words
    if timeout 600 "$builddir/tests/rtdims_run" "$dir/k.so" k "$dir/k.te" $tol "$@" $sizes \
        >"$dir/out" 2>&1 && ! grep -q '^not ok' "$dir/out"; then
        ok "$name: $(grep -c '^ok' "$dir/out") checks at $sizes and out of range"
    else
        grep -v '^ok' "$dir/out" >"$dir/log"
        not_ok "$name: every size matches the reference" "$dir/log"
    fi
}

run_case matmul_gelu_own matmul_gelu 's/^dim M = 512,/dim M in 1..4096 = 512,/' own \
    "M=1-300,511-513,1000,4095,4096" -D N=64 -D K=32
run_case matmul_gelu_default matmul_gelu 's/^dim M = 512,/dim M in 1..4096 = 512,/' default \
    "M=1-300,1023,1024,4096" -D N=50 -D K=24
run_case softmax softmax 's/^dim M = 256,/dim M in 1..2048 = 256,/' own \
    "M=1-300,1024,2048" -D N=100
run_case layernorm layernorm 's/^dim M = 128,/dim M in 1..1024 = 128,/' own \
    "M=1-300,1024" -D D=48
# six matmuls, two layer norms and a softmax: f32 rounding compounds, and
# over 300 sizes a few elements of 10^6 land just past npycmp's 1e-4 (at
# 1.2 times it at most)
run_case transformer_block transformer_block 's/^dim S = 32,/dim S in 1..512 = 32,/' own \
    "S=1-300,511,512" -t 4 -D D=32 -D H=2 -D F=64
run_case conv2d conv2d 's/^dim N = 2,/dim N in 1..16 = 2,/' own \
    "N=1-16" -D C=4 -D H=10 -D W=9 -D F=8
run_case batch_matmul batch_matmul 's/^dim B = 8,/dim B in 1..300 = 8,/' own \
    "B=1-300" -D M=5 -D N=33 -D K=7

# a load under a select, free of the vectorized loop, from a tensor whose
# size is a run-time dim: its index is inside the largest size (i < 50 <=
# 100), not inside the one a call has (M = 1, N = 50), so the C backend
# leaves it guarded (codegen/c.c load_in_bounds) and does not read b[i]
# before the row's loop
cat >"$tmp/guarded_rt.te" <<'EOF_TE'
dim M in 1..100 = 8, N in 1..50 = 8;
input b : f32[M];
input x : f32[N, 64];
y[i in N, j in 64] = select(i < 1, x[i, j] + b[i], 0.0);
output y;
EOF_TE
if (cd "$tmp" && "$TEXC" guarded_rt.te -o guarded_rt) >"$tmp/log" 2>&1 &&
    ! grep -q 'read before the loop' "$tmp/guarded_rt.c" && grep -q 'b\[i[_0-9]*\] : 0.0f' "$tmp/guarded_rt.c"; then
    ok "a guarded load from a run-time-sized tensor stays guarded"
else
    not_ok "a guarded load from a run-time-sized tensor stays guarded" "$tmp/log"
fi
done_testing

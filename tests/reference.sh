#!/bin/sh
# reference.sh — the tuner's compiled reference (tuner/reference.c): the
# program compiled by the C backend in double under a naive schedule,
# which computes the outputs candidates are checked against in place of
# the evaluator.  The evaluator stays the source of truth, so:
#   1. every sample (at small sizes, -D), a run-time-dims program at a few
#      sizes (one build for all) and tests/reference/'s corner cases of
#      the dtypes, through tests/reference_check: the compiled reference
#      and te_eval_at agree within 1e-12 relative on every float element
#      and exactly on every i32 and bool one (in practice: bit for bit);
#   2. a program it cannot compute as the evaluator does (a cast to bf16)
#      falls back to the evaluator;
#   3. texc --tune says which computed the reference, builds it once for
#      all the buckets of a run-time-dims program, and when the compiled
#      reference crashes or hangs (the test hook TEXC_TUNE_REFERENCE)
#      says so and tunes on with the evaluator.
. "${srcdir:-.}/tests/lib.sh"

check_ref="$builddir/tests/reference_check"
TMPDIR=$tmp
XDG_CACHE_HOME=$tmp/cache
TEXC_LOCK_DIR=$tmp
TEXC_TUNE_MIN_TIME=0.005
export TMPDIR XDG_CACHE_HOME TEXC_LOCK_DIR TEXC_TUNE_MIN_TIME
unset TEXC_TUNE_PLANT TEXC_TUNE_REFERENCE

# refcheck NAME ARGS...: one TAP line from reference_check's lines
refcheck() {
    name=$1
    shift
    if "$check_ref" "$@" >"$tmp/rc.out" 2>&1; then
        ok "$name: $(grep -c 'computed by' "$tmp/rc.out") run(s) agree: $(grep 'computed by' "$tmp/rc.out" |
            sed -n 's/.*elements, \([0-9]*\) bit-exact, largest relative difference \([^,]*\), computed by the \(.*\)/\1 bit-exact, worst \2, \3/p' |
            tail -1)"
    else
        not_ok "$name: the compiled reference matches the evaluator" "$tmp/rc.out"
    fi
}

# --- 1. every sample, at small sizes --------------------------------------
for f in "$srcdir"/samples/*.te; do
    s=$(basename "$f" .te)
    case $s in
    matmul_gelu) defs="-D M=40 -D N=72 -D K=56" ;;
    batch_matmul) defs="-D B=3 -D M=12 -D N=20 -D K=18" ;;
    conv2d) defs="-D C=3 -D H=11 -D W=10 -D F=5" ;;
    layernorm) defs="-D M=12 -D D=80" ;;
    maxpool) defs="-D C=3 -D H=12 -D W=10" ;;
    softmax) defs="-D M=12 -D N=90" ;;
    transpose_add) defs="-D M=30 -D N=44" ;;
    *) defs= ;; # transformer_block and new samples: their own sizes
    esac
    # shellcheck disable=SC2086 # $defs splits on purpose
    refcheck "sample $s" "$f" $defs
done

# --- 1b. run-time dims: one build, several sizes --------------------------
strip_schedules "$srcdir/samples/matmul_gelu.te" |
    sed 's/^dim M = 512,/dim M in 1..4096 = 512,/' >"$tmp/mg_rt.te"
refcheck "run-time dims: matmul_gelu, M in 1..4096" "$tmp/mg_rt.te" -D N=48 -D K=40 M=1,7,64,513,4096
sed 's/^dim M = 256,/dim M in 1..2048 = 256,/' "$srcdir/samples/softmax.te" >"$tmp/sm_rt.te"
refcheck "run-time dims: softmax, M in 1..2048" "$tmp/sm_rt.te" -D N=70 M=1,3,256,2048

# --- 1c. the dtypes' corner cases ------------------------------------------
refcheck "f16, bf16, f64 inputs, casts, NaN, math, selects, integers" "$srcdir/tests/reference/dtypes.te"
refcheck "i32 at its boundaries (tests/e2e/i32_wrap.te)" "$srcdir/tests/e2e/i32_wrap.te"
refcheck "gathers, clamped (tests/e2e/gather.te)" "$srcdir/tests/e2e/gather.te"

# --- 2. what it cannot compute: the evaluator does -------------------------
refcheck "a cast to bf16 falls back to the evaluator" -e "$srcdir/tests/reference/bf16_cast.te"
check "the fallback says why with -v" grep -q "cannot compute this program as the evaluator does: a cast to bf16" "$tmp/rc.out"

# --- 3. in texc --tune -----------------------------------------------------
small=$srcdir/tests/tune/small.te
leftover() { ls -d "$tmp"/texc-tune.* 2>/dev/null | wc -l | tr -d ' '; }

"$TEXC" "$small" --tune --trials 2 --jobs 1 -v --log "$tmp/a.jsonl" -o "$tmp/a" >"$tmp/a.out" 2>"$tmp/a.err"
rc=$?
check "tune: exits 0" test $rc -eq 0
check "tune: the reference took ... (compiled reference)" grep -q "the reference took .* s (compiled reference)" "$tmp/a.err"
check "tune: every candidate checked ok against it" test "$(grep -c '"status":"ok"' "$tmp/a.jsonl")" -eq 3
check "tune: its build removed" test "$(leftover)" -eq 0
# -v's last tuning line: where the time went, its parts within the total
times_add_up() {
    test "$(grep -c '^texc: tuning time: ' "$1")" -eq 1 &&
        grep '^texc: tuning time: ' "$1" | awk '{
            gsub(/,/, ""); t = $5; r = $8; b = $11; m = $14; o = $17
            ok = $4 == "total" && $7 == "reference" && $10 == "builds" && $13 == "measurements" && $16 == "other"
            ok = ok && r > 0 && b > 0 && m > 0 && o >= 0 && r + b + m + o <= t + 0.25 && r + b + m + o >= t - 0.25
            exit !ok }'
}
check "tune -v: one 'tuning time' line whose reference, builds, measurements and other add up to the total" \
    times_add_up "$tmp/a.err"

for how in crash hang; do
    TEXC_TUNE_REFERENCE=$how "$TEXC" "$small" --tune --trials 1 --jobs 1 --log "$tmp/$how.jsonl" \
        -o "$tmp/$how" >"$tmp/$how.out" 2>"$tmp/$how.err"
    rc=$?
    case $how in
    crash) said="the compiled reference crashed" ;;
    hang) said="the compiled reference ran past its limit" ;;
    esac
    check "tune, reference made to $how: exits 0" test $rc -eq 0
    check "tune, reference made to $how: says '$said' and falls back" \
        grep -q "$said.*; the evaluator computes the reference outputs instead" "$tmp/$how.err"
    check "tune, reference made to $how: the candidates are checked (ok) all the same" \
        test "$(grep -c '"status":"ok"' "$tmp/$how.jsonl")" -eq 2
done
TEXC_TUNE_REFERENCE=evaluator "$TEXC" "$small" --tune --trials 1 --jobs 1 -v --log "$tmp/e.jsonl" \
    -o "$tmp/e" >"$tmp/e.out" 2>"$tmp/e.err"
check "tune, TEXC_TUNE_REFERENCE=evaluator: the reference took ... (evaluator)" \
    grep -q "the reference took .* s (evaluator)" "$tmp/e.err"

sed 's/^dim M = 16,/dim M in 1..40 = 16,/' "$small" >"$tmp/rt.te"
"$TEXC" "$tmp/rt.te" --tune --buckets M=1,2..40 --trials 4 --jobs 1 -v --log "$tmp/rt.jsonl" \
    -o "$tmp/rt" >"$tmp/rt.out" 2>"$tmp/rt.err"
rc=$?
check "tune, 2 buckets: exits 0" test $rc -eq 0
check "tune, 2 buckets: the compiled reference is built once for both" \
    test "$(grep -c 'built the compiled reference' "$tmp/rt.err")" -eq 1
check "tune, 2 buckets: each bucket's references from it" \
    test "$(grep -c 'the references at [0-9]* sizes\{0,1\} took .* (compiled reference)' "$tmp/rt.err")" -eq 2
check "tune, 2 buckets: its build removed" test "$(leftover)" -eq 0
check "tune -v, 2 buckets: one 'tuning time' line for both, adding up" times_add_up "$tmp/rt.err"

done_testing

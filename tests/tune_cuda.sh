#!/bin/sh
# tune_cuda.sh — texc --tune --target cuda on a machine without a GPU.
#
# 1. No device: a clear message, exit 1, no output files, no log.
# 2. --dump=space --target cuda: the knobs of the sample's cuda schedule,
#    and the automatic space of a kernel without one (tests/tune/small.te).
# 3. The whole loop against libtexrt's fake driver (runtime/
#    fake_libcuda.c, through TEXRT_LIBCUDA): --trials 4 on the sample's
#    knobs, at small sizes.  The candidates build with NVRTC, and each
#    measurement child loads its cubin through libtexrt on the fake
#    device, copies the inputs, launches and copies the outputs back; but
#    the fake driver runs no kernel, so the outputs stay as they were
#    poisoned (NaN) and every candidate must be recorded as wrong, and
#    the build after tuning must keep the file's schedule.  That proves
#    the check can fail: a candidate is never valid just for running.
# 4. Every point of small.te's automatic space (exhaustive): each one
#    built and loaded (recorded wrong, never invalid or compile_error) and,
#    kept by the test hook TEXC_TUNE_KEEP, a cubin for the fake device's
#    sm_86 holding its kernels (tests/cubin_check); three of the points
#    run on the host by tests/cudaemu, matching the reference.
# 5. Two fake devices: candidates measured on both, every one recorded.
# 6. A kernel that faults (the fake driver's cuCtxSynchronize reports an
#    illegal address) and a measurement child that crashes
#    (TEXC_TUNE_PLANT=crash:N) are recorded as crash; the search goes on.
# Skipped, visibly, when configure disabled the cuda target.
. "${srcdir:-.}/tests/lib.sh"

small=$srcdir/tests/tune/small.te
sample=$srcdir/samples/matmul_gelu.te
fake=$TEXRT_TEST_FAKE_LIBCUDA
TEXC_TUNE_MIN_TIME=0.005
TMPDIR=$tmp
XDG_CACHE_HOME=$tmp/cache
# a machine lock of its own (tuner/lock.c): no other tuner waits for it
TEXC_LOCK_DIR=$tmp
export TEXC_TUNE_MIN_TIME TMPDIR XDG_CACHE_HOME TEXC_LOCK_DIR
unset TEXC_TUNE_PLANT TEXC_TUNE_KEEP FAKE_CUDA_DEVICES FAKE_CUDA_SM FAKE_CUDA_SYNC_ERROR

# lines FILE: the number of lines; count FILE PATTERN: lines matching
lines() { if [ -f "$1" ]; then wc -l <"$1" | tr -d ' '; else echo 0; fi; }
count() { grep -c -- "$2" "$1" 2>/dev/null || true; }
# field FILE TRIAL KEY: the value of KEY in the record of trial TRIAL
field() {
    grep "\"trial\":$2," "$1" | sed -n "s/.*\"$3\":\(\"[^\"]*\"\|{[^}]*}\|[-0-9.e+]*\).*/\1/p" | head -1
}
leftover() { ls -d "$tmp"/texc-tune.* 2>/dev/null | wc -l | tr -d ' '; }

if "$TEXC" --target cuda --arch sm_80 "$small" --check 2>&1 | grep -q "disabled at configure time"; then
    skip "tune --target cuda" "the cuda target was disabled at configure time"
    done_testing
    exit 0
fi

# --- 1. no device ----------------------------------------------------------
TEXRT_LIBCUDA=$tmp/no-such-libcuda.so "$TEXC" "$small" --tune --target cuda --log "$tmp/nd.jsonl" \
    -o "$tmp/nd" >"$tmp/nd.out" 2>"$tmp/nd.err"
rc=$?
check "no device: exit 1" test "$rc" -eq 1
check "no device: says it needs one, and why there is none" \
    grep -q -- "--tune --target cuda needs a CUDA device: none found (no CUDA driver: cannot load" \
    "$tmp/nd.err"
check "no device: says a build without --tune still works" \
    grep -q "building without --tune works without one" "$tmp/nd.err"
check "no device: no output files, no log" sh -c "
    ! ls '$tmp'/nd.* 2>/dev/null | grep -v 'nd\.out\|nd\.err' | grep -q . && ! test -e '$tmp/nd.jsonl'"
FAKE_CUDA_DEVICES=0 TEXRT_LIBCUDA=$fake "$TEXC" "$small" --tune --target cuda --log "$tmp/nd.jsonl" \
    -o "$tmp/nd" >/dev/null 2>"$tmp/nd0.err"
rc=$?
check "a driver with no device: exit 1, the driver's word" sh -c "
    test $rc -eq 1 && grep -q 'none found (the driver reports no device)' '$tmp/nd0.err' &&
    ! test -e '$tmp/nd.jsonl' && ! test -e '$tmp/nd.h'"
"$TEXC" "$small" --target cuda --arch sm_80 -o "$tmp/nt" >"$tmp/nt.out" 2>&1
check "no device: building without --tune works (--arch)" sh -c "
    test -s '$tmp/nt.cubin' && test -s '$tmp/nt.h'"
FAKE_CUDA_SM=90 TEXRT_LIBCUDA=$fake "$TEXC" "$small" --tune --target cuda --arch sm_80 \
    --log "$tmp/na.jsonl" -o "$tmp/na" >/dev/null 2>"$tmp/na.err"
rc=$?
check "--arch other than the device's: refused, exit 1, nothing written" sh -c "
    test $rc -eq 1 && grep -q 'measures on device 0, Fake CUDA Device (sm_90): it cannot tune for --arch sm_80' \
        '$tmp/na.err' && ! test -e '$tmp/na.jsonl' && ! test -e '$tmp/na.h'"

# --- 2. --dump=space ---------------------------------------------------------
"$TEXC" "$sample" --target cuda --arch sm_90 --check --dump=space >"$tmp/ks.out" 2>&1
check "--dump=space: the sample's cuda knobs" sh -c "
    grep -q 'the knobs of the cuda schedule, 24 points' '$tmp/ks.out' &&
    grep -q 'BM *in \[128, 64\]' '$tmp/ks.out' && grep -q 'BN *in \[128, 64\]' '$tmp/ks.out' &&
    grep -q 'BK *in \[8, 16, 32\]' '$tmp/ks.out' && grep -q 'STAGES *in \[3, 2\]' '$tmp/ks.out'"
"$TEXC" "$small" --target cuda --arch sm_90 --check --dump=space >"$tmp/as.out" 2>&1
check "--dump=space: small.te's automatic cuda space, its size" \
    grep -q 'search space: automatic, 1 stage, 136 points' "$tmp/as.out"
check "--dump=space: block tile, thread tile, k split, staging, pipeline, unroll" sh -c "
    grep -q 'y.bm *in \[16\]' '$tmp/as.out' && grep -q 'y.bn *in \[16, 32\]' '$tmp/as.out' &&
    grep -q 'y.tm *in \[1, 2, 4, 8\]' '$tmp/as.out' && grep -q 'y.tn *in \[1, 2, 4, 8\]' '$tmp/as.out' &&
    grep -q 'y.bk *in \[0, 8\]' '$tmp/as.out' && grep -q 'y.stage *in \[0, 1\]' '$tmp/as.out' &&
    grep -q 'y.pipe *in \[1, 2, 3\]' '$tmp/as.out' && grep -q 'y.unroll *in \[0, 1\]' '$tmp/as.out'"
check "--dump=space: the limits, 48 KiB of shared memory without a device" \
    grep -q 'at most 49152 bytes of shared memory (the default; no CUDA device here)' "$tmp/as.out"
check "--dump=space: what a tiled point is" \
    grep -q 'y: tiled, 136 points: blocks of bm x bn outputs (io, jo to block.y, block.x).* x and w staged in shared memory at ko' \
    "$tmp/as.out"
"$TEXC" "$srcdir/tests/tune/autospace.te" --target cuda --arch sm_90 --check --dump=space \
    >"$tmp/as2.out" 2>&1
check "--dump=space: an elementwise output gets a flat plan" sh -c "
    grep -q 'r.threads *in \[32, 64, 128, 256, 512\]' '$tmp/as2.out' &&
    grep -q 'r: flat, 5 points' '$tmp/as2.out'"
TEXRT_LIBCUDA=$fake FAKE_CUDA_SMEM_OPTIN=65536 "$TEXC" "$small" --target cuda --check --dump=space \
    >"$tmp/as3.out" 2>&1
check "--dump=space: with a device, its shared memory limit" \
    grep -q 'at most 65536 bytes of shared memory (device 0)' "$tmp/as3.out"

# --- 3. the whole loop on the fake device --------------------------------------
log=$tmp/f.jsonl
TEXRT_LIBCUDA=$fake "$TEXC" "$sample" -D M=64 -D N=128 -D K=64 --tune --target cuda --trials 4 \
    --seed 3 --log "$log" -o "$tmp/f" >"$tmp/f.out" 2>"$tmp/f.err"
rc=$?
# (a fake device runs no kernel: every candidate is wrong, so the tuning
# fails, exit 1, and nothing is built with it)
check "fake device: texc --tune --target cuda fails, exit 1: nothing ran correctly" sh -c "
    test $rc -eq 1 && grep -q 'tuning failed: none of the 5 candidates measured built and ran correctly' '$tmp/f.err'"
check "fake device: no output files after a failed tuning" sh -c "! test -e '$tmp/f.cubin' && ! test -e '$tmp/f.h'"
TEXRT_LIBCUDA=$fake "$TEXC" "$sample" -D M=64 -D N=128 -D K=64 --target cuda --log "$log" \
    -o "$tmp/f" >"$tmp/fb.out" 2>"$tmp/fb.err"
check "fake device: the default and 4 candidates recorded" test "$(lines "$log")" -eq 5
check "fake device: every one wrong (outputs still poisoned: NaN)" sh -c "
    test $(count "$log" '"status":"wrong"') -eq 5 && test $(count "$log" 'got nan') -eq 5"
check "fake device: records of the cuda target, the device, NVRTC" sh -c "
    test $(count "$log" '"target":"cuda","arch":"sm_86; Fake CUDA Device","sm":"sm_86","device":"Fake CUDA Device"') -eq 5 &&
    test $(count "$log" '"compiler":"NVRTC [0-9]*\.[0-9]*"') -eq 5 &&
    test $(count "$log" '"measured_on":0') -eq 5"
check "fake device: the candidates are points of the knob space" \
    test "$(count "$log" '"config":{"BM":[0-9]*,"BN":[0-9]*,"BK":[0-9]*,"STAGES":[0-9]*}')" -eq 4
check "fake device: no time recorded for a wrong result" sh -c "! grep -q '\"time_s\"' '$log'"
check "fake device: the summary says nothing was valid" sh -c "
    grep -q '5 candidates measured (0 ok, 5 wrong)' '$tmp/f.err' &&
    grep -q 'no valid measurement: the default schedule stays' '$tmp/f.err'"
check "fake device: a build after tuning keeps the file's schedule, and says why" \
    grep -q "no record in $log applies to matmul_gelu on this machine (5 without a valid time): using the file's schedule" \
    "$tmp/fb.err"
check "fake device: the build wrote the header and the cubin, for the device's sm_86" sh -c "
    test -s '$tmp/f.cubin' && grep -q 'F_ARCH \"sm_86\"' '$tmp/f.h'"
TEXRT_LIBCUDA=$fake "$TEXC" "$sample" -D M=64 -D N=128 -D K=64 --target cuda --log "$log" \
    --check --dump=schedule >"$tmp/fb.out" 2>"$tmp/fb.err"
check "fake device: a later build uses the knobs' first values" sh -c "
    grep -q 'y.split(i, 128) -> bi, ib;' '$tmp/fb.out' && grep -q 'y.split(k, 8) -> ko, ki;' '$tmp/fb.out' &&
    grep -q 'y.pipeline(ko, 3);' '$tmp/fb.out' && ! grep -q 'using the tuned' '$tmp/fb.err'"
check "fake device: no temporary directory left" test "$(leftover)" -eq 0
# a valid record, as a GPU would have written it (trial 3 made ok): a
# build on this device uses it; one from another GPU is not applied
sed '/"trial":3,/s/"status":"wrong"/"status":"ok","time_s":0.001,"gflops":2.1/' "$log" >"$tmp/ok.jsonl"
want=$(field "$tmp/ok.jsonl" 3 config)
bm=$(echo "$want" | sed -n 's/.*"BM":\([0-9]*\).*/\1/p')
bk=$(echo "$want" | sed -n 's/.*"BK":\([0-9]*\).*/\1/p')
stages=$(echo "$want" | sed -n 's/.*"STAGES":\([0-9]*\).*/\1/p')
TEXRT_LIBCUDA=$fake "$TEXC" "$sample" -D M=64 -D N=128 -D K=64 --target cuda --log "$tmp/ok.jsonl" \
    --check --dump=schedule >"$tmp/ok.out" 2>"$tmp/ok.err"
check "a valid record of this GPU: the build uses its knobs ($want) and says so" sh -c "
    grep -q 'using the tuned schedule from $tmp/ok.jsonl' '$tmp/ok.err' &&
    grep -q 'y.split(i, $bm) -> bi, ib;' '$tmp/ok.out' && grep -q 'y.split(k, $bk) -> ko, ki;' '$tmp/ok.out' &&
    grep -q 'y.pipeline(ko, $stages);' '$tmp/ok.out'"
sed 's/"arch":"sm_86; Fake CUDA Device"/"arch":"sm_90; Another GPU"/' "$tmp/ok.jsonl" >"$tmp/og.jsonl"
TEXRT_LIBCUDA=$fake "$TEXC" "$sample" -D M=64 -D N=128 -D K=64 --target cuda --log "$tmp/og.jsonl" \
    --check >"$tmp/og.out" 2>"$tmp/og.err"
check "a record of another GPU: not applied, and said so" sh -c "
    ! grep -q 'using the tuned' '$tmp/og.err' && grep -q 'from another machine' '$tmp/og.err'"

# --- 4. every point of an automatic space builds --------------------------------
log=$tmp/e.jsonl
TEXC_TUNE_KEEP=$tmp/keep TEXRT_LIBCUDA=$fake "$TEXC" "$small" --tune --target cuda --trials 200 \
    --log "$log" -o "$tmp/e" >"$tmp/e.out" 2>"$tmp/e.err"
rc=$?
check "every point: an exhaustive search of the 136 points (none right: exit 1)" sh -c "
    test $rc -eq 1 && grep -q 'exhaustive search of 136 points' '$tmp/e.err'"
check "every point: the default and 136 points recorded, all built and loaded (wrong)" sh -c "
    test $(lines "$log") -eq 137 && test $(count "$log" '"status":"wrong"') -eq 137"
check "every point: none pruned as illegal" sh -c "! grep -q 'pruned as illegal' '$tmp/e.err'"
check "every point: each configuration once" \
    test "$(sed -n 's/.*"config":\({[^}]*}\).*/\1/p' "$log" | sort -u | wc -l | tr -d ' ')" -eq 137
bad=0
checked=0
for dir in "$tmp"/keep/trial*; do
    [ -d "$dir" ] || continue
    checked=$((checked + 1))
    # shellcheck disable=SC2046 # one argument per kernel
    if ! "$builddir/tests/cubin_check" "$dir/kernel.cubin" sm_86 \
            $(sed -n 's/^kernel \([^ ]*\) .*/\1/p' "$dir/launch.txt") >>"$tmp/cubins.out" 2>&1; then
        bad=$((bad + 1))
        echo "$dir" >>"$tmp/cubins.out"
    fi
done
check "every point: 137 cubins for sm_86 holding their kernels (cubin_check)" sh -c "
    test $checked -eq 137 && test $bad -eq 0"
[ "$bad" -eq 0 ] || sed 's/^/# /' "$tmp/cubins.out" | grep -v ': present$' | head -20

# Three of those points computed on the host by tests/cudaemu (the
# emulator of tests/cuda.sh, whose --prep and --emu cases this reuses), at
# sizes no tile divides, against the reference evaluator: the space's
# schedules are right, not only accepted.  The points: staged in shared
# memory (cp.async on sm_80), a split reduction without staging (sm_75),
# no split and one output a thread.
CXX=${CXX:-c++}
export CXX TEXC builddir srcdir
emu_point() {  # emu_point NAME PATTERN ARCH: the first record matching PATTERN
    dir=$tmp/emu_$1
    mkdir -p "$dir"
    rec=$(grep -- "$2" "$tmp/e.jsonl" | head -1)
    { cat "$tmp/emu_prep/plain.te"; printf "%s\n" "$rec" | sed -n 's/.*"schedule":"\([^"]*\)".*/\1/p' |
        sed 's/\\n/\n/g'; } >"$dir/te"
    echo "$tmp/emu_prep" >"$dir/prep"
    echo "$3" >"$dir/arch"
    : >"$dir/san"
    echo "$tmp/emu.o" >"$dir/emu"
    sh "$srcdir/tests/cuda.sh" --emu "$dir"
    if [ "$(cat "$dir/status" 2>/dev/null)" = ok ] && grep -q 'schedule cuda' "$dir/te"; then
        ok "every point: $1 ($(printf "%s\n" "$rec" | sed -n 's/.*"config":{\([^}]*\)}.*/\1/p')), emulated, matches the reference"
    else
        not_ok "every point: $1, emulated" "$dir/log"
    fi
}
if echo 'int main() { return 0; }' >"$tmp/probe.cc" && $CXX -x c++ "$tmp/probe.cc" -o "$tmp/probe" >/dev/null 2>&1 &&
        $CXX -std=c++17 -O1 -I"$srcdir/tests/cudaemu" -I"$srcdir/runtime" \
            -c "$srcdir/tests/cudaemu/cudaemu.cc" -o "$tmp/emu.o" >/dev/null 2>&1; then
    mkdir -p "$tmp/emu_prep"
    cp "$small" "$tmp/emu_prep/plain.te"
    echo "-D M=13 -D N=37 -D K=19" >"$tmp/emu_prep/defines"
    sh "$srcdir/tests/cuda.sh" --prep "$tmp/emu_prep"
    emu_point staged '"y.bk":8,"y.stage":1' sm_80
    emu_point split '"y.tn":2,"y.bk":8,"y.stage":0,"y.pipe":1,"y.unroll":1' sm_75
    emu_point plain '"y.tm":1,"y.tn":1,"y.bk":0' sm_80
else
    skip "every point: three of them emulated" "no C++ compiler ($CXX) for tests/cudaemu"
fi

# --- 5. two devices --------------------------------------------------------------
log=$tmp/d.jsonl
FAKE_CUDA_DEVICES=2 TEXRT_LIBCUDA=$fake "$TEXC" "$small" --tune --target cuda --trials 7 --seed 5 \
    --log "$log" -o "$tmp/d" >"$tmp/d.out" 2>"$tmp/d.err"
rc=$?
check "two devices: every candidate recorded (none right: exit 1)" sh -c "
    test $rc -eq 1 && test $(lines "$log") -eq 8 && test $(count "$log" '"status":"wrong"') -eq 8"
check "two devices: the records say 2 devices" test "$(count "$log" '"devices":2')" -eq 8
check "two devices: both measured candidates" sh -c "
    test $(count "$log" '"measured_on":0') -ge 1 && test $(count "$log" '"measured_on":1') -ge 1"

# --- 6. faults and crashes ------------------------------------------------------
log=$tmp/c.jsonl
FAKE_CUDA_SYNC_ERROR=700 TEXRT_LIBCUDA=$fake "$TEXC" "$small" --tune --target cuda --trials 1 \
    --log "$log" -o "$tmp/c" >"$tmp/c.out" 2>"$tmp/c.err"
check "a kernel that faults: recorded as crash, with the driver's word" sh -c "
    test $(lines "$log") -eq 2 && test $(count "$log" '"status":"crash"') -eq 2 &&
    grep -q 'the kernel faulted: error: running the kernels: waiting for device 0 failed: an illegal memory access was encountered' '$log'"
log=$tmp/p.jsonl
TEXC_TUNE_PLANT=crash:2 TEXRT_LIBCUDA=$fake "$TEXC" "$small" --tune --target cuda --trials 2 \
    --log "$log" -o "$tmp/p" >"$tmp/p.out" 2>"$tmp/p.err"
rc=$?
check "a measurement that crashes: recorded as crash, the search goes on" sh -c "
    test $rc -eq 1 && test $(lines "$log") -eq 3 && test '$(field "$log" 2 status)' = '\"crash\"' &&
    test '$(field "$log" 3 status)' = '\"wrong\"'"
check "no temporary directory left" test "$(leftover)" -eq 0

done_testing

#!/bin/sh
# run.sh — the CUDA tests and the CUDA benchmark, on a machine with a GPU.
#
#   sh tests/gpu/run.sh                 from the top of a texc checkout
#   sh tests/gpu/run.sh --tune          only steps 1 and 3 (a short check)
#   sh tests/gpu/run.sh --bench-build DIR ARCH
#                                       only build the benchmark in DIR for
#                                       ARCH with the texc already built (no
#                                       GPU needed; tests/cuda.sh does this)
#
# 1. Builds texc (running configure first if there is no Makefile, and
#    autoreconf if there is no configure).  With TEXC_PREBUILT=1, or where
#    there is no make, it uses a tree built on another machine and unpacked
#    at the same path as it is (a GPU machine's image may lack the build's
#    libraries: its texc then needs libjansson and libxxhash copied beside
#    it), and builds samples/app_cuda again for the device.
# 2. Runs tests/cuda.sh with CUDA_DEVICE=1: every CUDA test (each sample
#    under its cuda schedule, the default schedule and tests/cuda/*.sched,
#    and the f16/bf16 and i32 programs of tests/cuda) built for the local
#    GPU's architecture and run on it by tests/gpu/harness.c, on fresh
#    random inputs (CUDA_SEED, default: the time) with poisoned outputs and
#    workspace, compared with the reference evaluator; then
#    tests/cuda_rtdims.sh the same way (six samples with a run-time dim,
#    one build each, run at many sizes); then tests/onnx.sh's cuda part
#    (ONNX_CUDA_ONLY: two imported models, their NAME.weights loaded
#    onto the GPU by the header's NAME_load_weights and run by
#    NAME_run_weights, against PyTorch); then samples/app_cuda.
# 3. The CUDA tuner: texc samples/matmul_gelu.te --tune --target cuda
#    --trials 20 (TUNE_TRIALS) at the sample's own sizes, into a fresh log;
#    every candidate valid (the sample's knob points are all schedules the
#    backend must run right: a wrong result, a crash or a hang is a bug);
#    then a build that must take its schedule from that log,
#    run on the GPU by tests/gpu/harness.c on the evaluator's inputs
#    (seed CUDA_SEED) and compared with its outputs by tests/npycmp; the
#    fake driver's error messages compared with the real driver's
#    (tests/gpu/driver_messages.c); and tests/cuda/mma.te tuned in the
#    automatic space (tensor-core tiles) at 2048^3, every candidate valid.
# 4. The benchmark (bench/cuda_bench.cu, built with nvcc): texc's
#    matmul_gelu under its default CUDA schedule and under
#    tests/cuda/matmul_gelu.1.sched, against cuBLAS sgemm + a bias/GELU
#    kernel and cuBLASLt's GELU_BIAS epilogue, all FP32, at M = N = K = 4096
#    and at (M, K, N) = (512, 768, 3072): milliseconds, TFLOP/s, ratios.
#    Then bench/cuda_bench_bf16.cu: bench/matmul_bf16.te (bf16 x and w, f32
#    sums) under texc's default CUDA schedule against cublasGemmEx in bf16
#    and cuBLASLt's fastest bf16 algorithm, at 4096^3, 8192^3 and
#    (512, 768, 3072).  BENCH_REPS runs each (default 20); a benchmark that
#    fails (a result off by more than 1e-3 relative, an error) fails the run.
#
# Everything it prints is also in $RESULTS (default: gpu-results/).  Exit
# status: 0 when every test passed, 1 when one failed, 77 (and a SKIP
# line) without a GPU.

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 4)
cuda_home=${CUDA_HOME:-/usr/local/cuda}
nvcc=${NVCC:-$(command -v nvcc || echo "$cuda_home/bin/nvcc")}

# bench_nvcc ARCH SOURCE OUT NVCC-ARGS...: a benchmark binary on libtexrt
# and cuBLAS.
bench_nvcc() {
    arch=$1 src=$2 out=$3
    shift 3
    "$nvcc" -O3 -std=c++17 -arch="$arch" -I"$top/runtime" "$@" "$src" \
        -L"${builddir:-$top}/runtime/.libs" -Xlinker -rpath -Xlinker "${builddir:-$top}/runtime/.libs" \
        -L"$cuda_home/lib64" -ltexrt -lcublasLt -lcublas -o "$out"
}

# The shapes (MxKxN) of the bf16 benchmark.
bf16_shapes="4096x4096x4096 8192x8192x8192 512x768x3072"

# bench_build DIR ARCH: the FP32 benchmark, the headers of both variants at
# both shapes and one binary per shape, DIR/cuda_bench_SHAPE; the bf16
# benchmark, bench/matmul_bf16.te under the default schedule and one binary
# per shape, DIR/cuda_bench_bf16_SHAPE.
bench_build() {
    dir=$1 arch=$2
    texc=${TEXC:-$top/texc}
    mkdir -p "$dir" || return 1
    awk '/^[ \t]*schedule[ \t]/ { skip = 1 } !skip { print } skip && /^}/ { skip = 0 }' \
        "$top/samples/matmul_gelu.te" >"$dir/plain.te"
    cat "$dir/plain.te" "$top/tests/cuda/matmul_gelu.1.sched" >"$dir/tuned.te"
    # a tuning log that is not there: the default schedules, whatever the
    # user's default log holds
    nolog=$dir/no-tuning-log.jsonl
    rm -f "$nolog"
    for shape in 4096x4096x4096 512x768x3072; do
        m=${shape%%x*} rest=${shape#*x}
        k=${rest%%x*} n=${rest#*x}
        for v in default tuned; do
            te=$dir/plain.te
            [ "$v" = tuned ] && te=$dir/tuned.te
            "$texc" "$te" -D M="$m" -D N="$n" -D K="$k" --target cuda --arch "$arch" \
                --log "$nolog" -o "$dir/${v}_$m" || return 1
        done
        bench_nvcc "$arch" "$top/bench/cuda_bench.cu" "$dir/cuda_bench_$shape" -I"$dir" \
            -DVARIANT_A="\"default_$m.h\"" -DNAME_A="default_$m" -DMACRO_A="DEFAULT_$m" \
            -DVARIANT_B="\"tuned_$m.h\"" -DNAME_B="tuned_$m" -DMACRO_B="TUNED_$m" || return 1
    done
    for shape in $bf16_shapes; do
        m=${shape%%x*} rest=${shape#*x}
        k=${rest%%x*} n=${rest#*x}
        # -v: how texc runs it (tensor cores or not, the tiles), for the log
        "$texc" "$top/bench/matmul_bf16.te" -D M="$m" -D N="$n" -D K="$k" --target cuda --arch "$arch" \
            --log "$nolog" -v -o "$dir/bf16_$m" 2>"$dir/bf16_$m.v" || { cat "$dir/bf16_$m.v"; return 1; }
        bench_nvcc "$arch" "$top/bench/cuda_bench_bf16.cu" "$dir/cuda_bench_bf16_$shape" -I"$dir" \
            -DVARIANT_A="\"bf16_$m.h\"" -DNAME_A="bf16_$m" -DMACRO_A="BF16_$m" || return 1
    done
}

if [ "${1:-}" = --bench-build ]; then
    bench_build "$2" "$3"
    exit $?
fi
tune_only=
[ "${1:-}" = --tune ] && tune_only=yes

# tune_check DIR SEED: step 3; its verdict is its exit status.
tune_check() {
    dir=$1 seed=$2
    trials=${TUNE_TRIALS:-20}
    rm -rf "$dir"
    mkdir -p "$dir" || return 1
    tlog=$dir/tuning.jsonl # (say writes $log)
    say "run.sh: texc samples/matmul_gelu.te --tune --target cuda --trials $trials"
    if ! ./texc samples/matmul_gelu.te --tune --target cuda --trials "$trials" --log "$tlog" \
            -o "$dir/tuned" >"$dir/tune.out" 2>"$dir/tune.err"; then
        say "run.sh: tuning FAILED: $(tail -3 "$dir/tune.err")"
        return 1
    fi
    grep '^texc: \(tuned\|best\|tuning\|stopped\)' "$dir/tune.err" | tee -a "$results/run.log"
    sed -n 's/.*"status":"\([a-z_]*\)".*/\1/p' "$tlog" | sort | uniq -c |
        sed 's/^ */run.sh: tuning records: /' | tee -a "$results/run.log"
    valid=$(grep -c '"status":"ok"' "$tlog")
    if [ "$valid" -lt 1 ]; then
        say "run.sh: tuning FAILED: no valid candidate"
        return 1
    fi
    # every knob point of the sample is a schedule the backend should run
    # right: any other status is a bug to look at
    if grep -q '"status":"\(wrong\|crash\|timeout\|invalid\|compile_error\|run_error\)"' "$tlog"; then
        say "run.sh: tuning FAILED: a knob point of the sample was wrong, crashed, hung or did not build:"
        grep -v '"status":"ok"' "$tlog" | sed -n 's/.*"config":\({[^}]*}\).*"detail":"\([^"]*\)".*/  \1: \2/p' |
            head -5 | tee -a "$results/run.log"
        return 1
    fi
    # the build after tuning: from the log, checked against the evaluator
    ./texc samples/matmul_gelu.te --target cuda --log "$tlog" -o "$dir/k" 2>"$dir/build.err" || {
        say "run.sh: the tuned build FAILED: $(cat "$dir/build.err")"
        return 1
    }
    if ! grep -q "using the tuned schedule from $tlog" "$dir/build.err"; then
        say "run.sh: the build did not use the tuning log: $(cat "$dir/build.err")"
        return 1
    fi
    ./texc samples/matmul_gelu.te --eval --save-inputs --seed "$seed" -o "$dir/ref" >>"$tlog.eval" 2>&1 &&
        ${CC:-cc} -std=c11 -O2 -Wall -Werror -I"$top/runtime" -I"$dir" -DTEXC_HEADER='"k.h"' \
            -DTEXC_NAME=k -DTEXC_MACRO=K "$top/tests/gpu/harness.c" -L"$top/runtime/.libs" \
            -Wl,-rpath,"$top/runtime/.libs" -ltexrt -o "$dir/run" >>"$tlog.eval" 2>&1 &&
        "$dir/run" "$dir/ref.in.x.npy" "$dir/ref.in.w.npy" "$dir/ref.in.b.npy" "$dir/got.z.npy" \
            >>"$tlog.eval" 2>&1 &&
        tests/npycmp "$dir/ref.z.npy" "$dir/got.z.npy" >>"$tlog.eval" 2>&1 || {
        say "run.sh: the tuned build's output FAILED against the evaluator: $(tail -5 "$tlog.eval")"
        return 1
    }
    say "run.sh: the tuned build ($(sed -n 's/^texc: using the tuned schedule from .* (\(.*\))$/\1/p' \
        "$dir/build.err")) matches the evaluator"
    return 0
}

results=${RESULTS:-$top/gpu-results}
mkdir -p "$results"
log=$results/run.log
: >"$log"
say() { echo "$*" | tee -a "$log"; }

# 1. build
cd "$top" || exit 1
prebuilt=
if [ -n "${TEXC_PREBUILT:-}" ] || ! command -v make >/dev/null 2>&1; then
    prebuilt=yes
    # TEXC_PREBUILT=1, or no make: a tree built on another machine and
    # unpacked at the same path is used as it is (a GPU machine's image may
    # lack the build's libraries, and make would rebuild for the headers its
    # dependency files name)
    if [ -x texc ] && [ -x tests/npycmp ] && [ -x samples/app_cuda ]; then
        say "run.sh: using the texc already built in $top"
    else
        say "run.sh: no make (or TEXC_PREBUILT), and no texc built in $top"
        exit 1
    fi
else
    if [ ! -f Makefile ]; then
        [ -x configure ] || autoreconf -fi || exit 1
        ./configure || exit 1
    fi
    make -j"$jobs" >>"$log" 2>&1 &&
        make -j"$jobs" tests/npycmp tests/cubin_check samples/app_cuda >>"$log" 2>&1 ||
        { say "run.sh: the build failed; see $log"; exit 1; }
fi

if ! ./texc --target cuda samples/transpose_add.te --check >"$results/probe" 2>&1; then
    say "run.sh: SKIP: no GPU here: $(cat "$results/probe")"
    exit 77
fi
arch=$(./texc --target cuda samples/transpose_add.te --check -v 2>&1 |
    sed -n 's/^texc: building for \(sm_[0-9a-z]*\),.*/\1/p')
say "run.sh: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "a GPU"), $arch"

seed=${CUDA_SEED:-$(date +%s)}
status=0
if [ -n "$tune_only" ]; then
    tune_check "$results/tune" "$seed" || status=1
    exit $status
fi

# 2. the tests on the GPU
say "run.sh: tests/cuda.sh on the GPU, seed $seed"
TEXC=$top/texc srcdir=$top builddir=$top CC=${CC:-cc} CUDA_DEVICE=1 CUDA_SEED=$seed \
    TEXRT_TEST_FAKE_LIBCUDA=$top/tests/.libs/libfakecuda.so \
    sh tests/cuda.sh >"$results/cuda.tap" 2>&1 || status=1
cat "$results/cuda.tap" >>"$log"
grep -c '^ok' "$results/cuda.tap" | sed 's/^/run.sh: passed /' | tee -a "$log"
grep '^not ok' "$results/cuda.tap" | tee -a "$log"
say "run.sh: tests/cuda_rtdims.sh on the GPU, seed $seed"
TEXC=$top/texc srcdir=$top builddir=$top CC=${CC:-cc} CUDA_DEVICE=1 CUDA_SEED=$seed \
    sh tests/cuda_rtdims.sh >"$results/cuda_rtdims.tap" 2>&1 || status=1
cat "$results/cuda_rtdims.tap" >>"$log"
grep -c '^ok' "$results/cuda_rtdims.tap" | sed 's/^/run.sh: passed /' | tee -a "$log"
grep '^not ok' "$results/cuda_rtdims.tap" | tee -a "$log"
say "run.sh: tests/onnx.sh's cuda part on the GPU (models with NAME.weights)"
TEXC=$top/texc srcdir=$top builddir=$top CC=${CC:-cc} CUDA_DEVICE=1 ONNX_CUDA_ONLY=1 \
    sh tests/onnx.sh >"$results/onnx_cuda.tap" 2>&1 || status=1
cat "$results/onnx_cuda.tap" >>"$log"
grep -c '^ok' "$results/onnx_cuda.tap" | sed 's/^/run.sh: passed /' | tee -a "$log"
grep '^not ok' "$results/onnx_cuda.tap" | tee -a "$log"
app=samples/app_cuda
if [ -n "$prebuilt" ]; then
    # make embedded a cubin for the build machine's device, or for sm_80
    # where it had none; an sm_80 cubin does not run on sm_90: build the
    # user's program again here, for this device
    # (the source beside its header: "cuda/matmul_gelu.h" is looked for
    # first in the source's folder, which holds make's)
    app=$results/app/app_cuda
    mkdir -p "$results/app/cuda" && cp samples/app_cuda.c "$results/app/" &&
        ./texc --target cuda --embed --arch "$arch" -D M=256 samples/matmul_gelu.te \
            -o "$results/app/cuda/matmul_gelu" >>"$log" 2>&1 &&
        ${CC:-cc} -std=c11 -O2 -I"$results/app" -I"$top/runtime" "$results/app/app_cuda.c" \
            -L"$top/runtime/.libs" -Wl,-rpath,"$top/runtime/.libs" -ltexrt -lm -o "$app" >>"$log" 2>&1 ||
        say "run.sh: building samples/app_cuda for $arch FAILED; see $log"
fi
if "$app" >"$results/app_cuda.out" 2>&1; then
    say "run.sh: samples/app_cuda: $(cat "$results/app_cuda.out")"
else
    say "run.sh: samples/app_cuda FAILED: $(cat "$results/app_cuda.out")"
    status=1
fi

# the fake driver of the tests (tests/fake_libcuda.c) says what this one says
if ${CC:-cc} -std=c11 -O1 tests/gpu/driver_messages.c -ldl -o "$results/driver_messages" >>"$log" 2>&1 &&
        "$results/driver_messages" libcuda.so.1 >"$results/messages.real" 2>>"$log" &&
        "$results/driver_messages" tests/.libs/libfakecuda.so >"$results/messages.fake" 2>>"$log"; then
    if diff "$results/messages.fake" "$results/messages.real" >"$results/messages.diff"; then
        say "run.sh: the fake driver's messages are this driver's ($(wc -l <"$results/messages.real") codes)"
    else
        say "run.sh: the fake driver's messages differ from this driver's:"
        tee -a "$log" <"$results/messages.diff"
        status=1
    fi
else
    say "run.sh: reading the drivers' messages FAILED; see $log"
    status=1
fi

# 3. the tuner on the GPU
tune_check "$results/tune" "$seed" || status=1
# ... and its automatic space on a tensor-core program: every point valid
say "run.sh: texc tests/cuda/mma.te at 2048^3 --tune --target cuda --trials 16"
if ./texc tests/cuda/mma.te -D M=2048 -D N=2048 -D K=2048 --tune --target cuda --trials 16 \
        --log "$results/tune_mma.jsonl" -o "$results/tune_mma" >/dev/null 2>"$results/tune_mma.err" &&
        ! grep -v '"status":"ok"' "$results/tune_mma.jsonl" | grep -q '"status"'; then
    grep '^texc: \(tuned\|best\)' "$results/tune_mma.err" | tee -a "$log"
else
    say "run.sh: tuning the tensor-core program FAILED: $(tail -3 "$results/tune_mma.err")"
    grep -v '"status":"ok"' "$results/tune_mma.jsonl" 2>/dev/null | head -3 | tee -a "$log"
    status=1
fi

# 4. the benchmark
if [ ! -x "$nvcc" ]; then
    say "run.sh: no nvcc ($nvcc): no benchmark"
    exit $status
fi
if ! bench_build "$results/bench" "$arch" >>"$log" 2>&1; then
    say "run.sh: building the benchmark failed; see $log"
    exit 1
fi
# bench_run BINARY: its table into the log; a failure (a wrong result, an
# error) fails the run
bench_run() {
    "$1" -r "${BENCH_REPS:-20}" >"$results/bench.out" 2>&1
    rc=$?
    tee -a "$log" <"$results/bench.out"
    if [ $rc -ne 0 ]; then
        say "run.sh: $(basename "$1") FAILED (exit $rc)"
        status=1
    fi
    echo | tee -a "$log"
}
for shape in 4096x4096x4096 512x768x3072; do
    bench_run "$results/bench/cuda_bench_$shape"
done
for shape in $bf16_shapes; do
    grep '^texc: kernel' "$results/bench/bf16_${shape%%x*}.v" | tee -a "$log"
    bench_run "$results/bench/cuda_bench_bf16_$shape"
done
exit $status

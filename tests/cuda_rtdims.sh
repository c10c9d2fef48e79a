#!/bin/sh
# cuda_rtdims.sh — run-time dims on the cuda target, on a machine without
# a GPU.  Each sample made dynamic in its natural dim (rtdims.sh's cases,
# the other dims small) is built once by texc --target cuda, and:
#   nvrtc    for sm_80 and sm_90: tests/cubin_check finds every kernel of
#            every variant the header names in the cubin, and the header
#            compiles as C and as C++ without a warning;
#   emu      the sm_80 kernels, run on the host by tests/cudaemu through
#            tests/gpu/harness.c (-DTEXC_DYNAMIC: the sizes are its first
#            arguments, NAME_launch_dims dispatches), at a subset of sizes
#            (both ends of the default buckets up to 33, sizes no tile
#            divides, the range's ends where the emulator is quick), each
#            against the reference evaluator at that size (texc --eval -D),
#            compared by tests/npycmp; then at 0 and the maximum + 1,
#            which launch nothing (the harness's exit status 3).
# One TAP line per program and check.  With CUDA_DEVICE set
# (tests/gpu/run.sh) the emu cases run on the GPU, built for its
# architecture and linked with libtexrt.  Skipped, visibly, when configure
# disabled the cuda target or there is no C++ compiler ($CXX).
. "${srcdir:-.}/tests/lib.sh"
. "$srcdir/tests/cudaemu/unit.sh"

cuda_disabled "the cuda target with run-time dims" && exit 0
samples=$srcdir/samples
CXX=${CXX:-c++}
CXX_OK=
echo 'int main() { return 0; }' >"$tmp/probe.cc"
if $CXX -x c++ "$tmp/probe.cc" -o "$tmp/probe" >/dev/null 2>&1; then
    CXX_OK=yes
    $CXX -std=c++17 -O1 -g -I"$srcdir/tests/cudaemu" -I"$srcdir/runtime" \
        -c "$srcdir/tests/cudaemu/cudaemu.cc" -o "$tmp/emu.o" || CXX_OK=
fi

kernels_of() { sed -n 's/^    { "\([A-Za-z0-9_]*\)", {.*/\1/p' "$1"; }
inputs_of() { sed -n 's/^ \*   input  \([A-Za-z0-9_]*\) :.*/\1/p' "$1"; }
outputs_of() { sed -n 's/^ \*   output \([A-Za-z0-9_]*\) :.*/\1/p' "$1"; }

# run_case NAME SAMPLE SED DIM "SIZES" MAX DEFINES...: SAMPLE's dim line
# rewritten by SED into run-time DIM (range 1..MAX), the other dims given
# by DEFINES.
run_case() {
    name=$1 sample=$2 rewrite=$3 dim=$4 sizes=$5 max=$6
    shift 6
    dir=$tmp/$name
    mkdir -p "$dir"
    sed "$rewrite" "$samples/$sample.te" >"$dir/k.te"
    if ! grep -q "^dim $dim in " "$dir/k.te"; then
        echo "the rewrite '$rewrite' made no run-time dim $dim" >"$dir/log"
        not_ok "$name: the sample declares a run-time dim" "$dir/log"
        return
    fi
    for arch in sm_90 sm_80; do
        if ! "$TEXC" --log=/dev/null "$dir/k.te" "$@" --target cuda --arch $arch --keep \
                -o "$dir/k" >"$dir/log" 2>&1; then
            not_ok "$name: texc builds it for $arch" "$dir/log"
            return
        fi
        # shellcheck disable=SC2046 # one argument per kernel
        if "$builddir/tests/cubin_check" "$dir/k.cubin" $arch $(kernels_of "$dir/k.h") >"$dir/log" 2>&1; then
            ok "$name: the $arch cubin holds the $(kernels_of "$dir/k.h" | wc -l) kernels of $(sed -n 's/^#define K_NVARIANTS \([0-9]*\)$/\1/p' "$dir/k.h") variants"
        else
            not_ok "$name: $arch cubin holds every kernel" "$dir/log"
        fi
    done
    echo 'int main(void) { return 0; }' >"$dir/main.c"
    check "$name: the header compiles as C" ${CC:-cc} -std=c11 -Wall -Wextra -Werror \
        -I"$srcdir/runtime" -include "$dir/k.h" -c "$dir/main.c" -o "$dir/main.o"
    if [ -z "$CXX_OK" ]; then
        skip "$name: the kernels emulated" "no C++ compiler ($CXX) for tests/cudaemu"
        return
    fi
    check "$name: the header compiles as C++" $CXX -Wall -Wextra -Werror -I"$srcdir/runtime" \
        -include "$dir/k.h" -x c++ -c "$dir/main.c" -o "$dir/main.o"
    where=emulated
    if [ -n "${CUDA_DEVICE:-}" ]; then
        where="on the GPU"
        "$TEXC" --log=/dev/null "$dir/k.te" "$@" --target cuda -o "$dir/k" >"$dir/log" 2>&1 &&
        ${CC:-cc} -std=c11 -O2 -Wall -Werror -I"$srcdir/runtime" -I"$dir" -DTEXC_HEADER='"k.h"' \
            -DTEXC_NAME=k -DTEXC_MACRO=K -DTEXC_DYNAMIC "$srcdir/tests/gpu/harness.c" \
            -L"$builddir/runtime/.libs" -Wl,-rpath,"$builddir/runtime/.libs" -ltexrt \
            -o "$dir/run" >>"$dir/log" 2>&1
    else
        cudaemu_unit "$dir"
        $CXX -std=c++17 -O1 -g -w -I"$srcdir/tests/cudaemu" -I"$srcdir/runtime" -I"$dir" \
            -c "$dir/table.cc" -o "$dir/table.o" >"$dir/log" 2>&1 &&
        ${CC:-cc} -std=c11 -O1 -g -Wall -Werror -I"$srcdir/runtime" -I"$dir" -DTEXC_HEADER='"k.h"' \
            -DTEXC_NAME=k -DTEXC_MACRO=K -DTEXC_DYNAMIC -c "$srcdir/tests/gpu/harness.c" \
            -o "$dir/harness.o" >>"$dir/log" 2>&1 &&
        $CXX -o "$dir/run" "$dir/harness.o" "$dir/table.o" "$tmp/emu.o" -lpthread >>"$dir/log" 2>&1
    fi
    if [ $? -ne 0 ]; then
        not_ok "$name: the harness builds" "$dir/log"
        return
    fi
    : >"$dir/log"
    bad=0 n=0
    for m in $sizes; do
        n=$((n + 1))
        ref=$dir/ref$m
        if ! "$TEXC" --log=/dev/null "$dir/k.te" "$@" -D "$dim=$m" --eval --save-inputs \
                --seed "${CUDA_SEED:-1}" -o "$ref" >>"$dir/log" 2>&1; then
            echo "$dim=$m: texc --eval failed" >>"$dir/log"
            bad=$((bad + 1))
            continue
        fi
        files=
        for i in $(inputs_of "$dir/k.h"); do files="$files $ref.in.$i.npy"; done
        for o in $(outputs_of "$dir/k.h"); do files="$files $dir/got.$o.npy"; done
        # shellcheck disable=SC2086 # $files splits on purpose
        if ! timeout 300 "$dir/run" -c "$dir/k.cubin" "$dim=$m" $files >>"$dir/log" 2>&1; then
            echo "$dim=$m: the kernels failed" >>"$dir/log"
            bad=$((bad + 1))
        else
            for o in $(outputs_of "$dir/k.h"); do
                if ! "$builddir/tests/npycmp" "$ref.$o.npy" "$dir/got.$o.npy" >>"$dir/log" 2>&1; then
                    echo "$dim=$m: '$o' differs from the reference" >>"$dir/log"
                    bad=$((bad + 1))
                fi
            done
        fi
    done
    if [ $bad -eq 0 ]; then
        ok "$name: $where at $n sizes ($(echo $sizes | tr ' ' ',')) matches the reference"
    else
        not_ok "$name: $where, every size matches the reference" "$dir/log"
    fi
    : >"$dir/log"
    for m in 0 $((max + 1)); do
        "$dir/run" -c "$dir/k.cubin" "$dim=$m" x x x x x x x x x x x x x x x x >>"$dir/log" 2>&1
        rc=$?
        [ $rc -eq 3 ] || { echo "$dim=$m: exit status $rc, not 3" >>"$dir/log"; bad=1; }
    done
    if [ $bad -eq 0 ] && grep -q 'outside its range' "$dir/log"; then
        ok "$name: $dim = 0 and $((max + 1)) launch nothing and say why"
    else
        not_ok "$name: $dim = 0 and $((max + 1)) launch nothing and say why" "$dir/log"
    fi
}

run_case matmul_gelu matmul_gelu 's/^dim M = 512,/dim M in 1..300 = 64,/' M \
    "1 2 3 7 8 9 16 17 33 100 129 300" 300 -D N=96 -D K=40
run_case softmax softmax 's/^dim M = 256,/dim M in 1..2048 = 256,/' M \
    "1 2 5 8 9 17 33 70 2048" 2048 -D N=100
run_case layernorm layernorm 's/^dim M = 128,/dim M in 1..1024 = 128,/' M \
    "1 3 8 9 17 65 1024" 1024 -D D=48
run_case transformer_block transformer_block 's/^dim S = 32,/dim S in 1..512 = 32,/' S \
    "1 2 7 9 17 33" 512
run_case conv2d conv2d 's/^dim N = 2,/dim N in 1..16 = 2,/' N \
    "1 2 3 9 16" 16 -D C=4 -D H=10 -D W=9 -D F=8
run_case batch_matmul batch_matmul 's/^dim B = 8,/dim B in 1..300 = 8,/' B \
    "1 2 8 9 17 300" 300 -D M=5 -D N=33 -D K=7
done_testing

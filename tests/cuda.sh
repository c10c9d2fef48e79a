#!/bin/sh
# cuda.sh — the cuda target on a machine without a GPU.
#
# The programs: every sample (the table at the bottom), tests/cuda/*.te
# (f16/bf16 and i32 values), tests/e2e/i32_wrap.te (i32 at its
# boundaries, which e2e.sh runs as C) and tests/e2e/gather.te (indices
# read from tensors, clamped).  Their CUDA schedules:
#   own      the file's own cuda schedule, if it has one;
#   default  the file with its schedule blocks stripped (sch_default_cuda);
#   N        tests/cuda/NAME.N.sched appended to the stripped file.
# For each program and schedule:
#   nvrtc    texc --target cuda --arch sm_80 and sm_90 at the program's own
#            sizes; tests/cubin_check: an EM_CUDA ELF for that architecture
#            whose symbol table holds every kernel the header names; the
#            header compiles as C and as C++ without a warning;
#   emu      at two sets of small sizes (one the tiles divide, one they do
#            not) the kernels, built for sm_80 (cp.async) at the first and
#            sm_75 (plain loads) at the second, run on the host through
#            tests/cudaemu (each CUDA thread a host thread; at the first
#            sizes under ThreadSanitizer, so that a missing barrier fails)
#            on the reference evaluator's inputs, compared with its outputs
#            by tests/npycmp.
# Then the command line and the generated header: --embed, --keep,
# --dump=cuda, --check, -v, a bad --arch, no device, the local device's
# architecture, errors leaving no files, and the header's loader and
# launcher against libtexrt's fake driver (tests/unit_texrt tests the
# runtime's own messages).
#
# With CUDA_DEVICE set (tests/gpu/run.sh, on a machine with a GPU), the
# emu cases run on the GPU instead: built for its architecture, linked with
# libtexrt, on inputs of seed CUDA_SEED, and at the programs' own sizes too.
# When nvcc is found, the benchmark of tests/gpu/run.sh is built (not run).
#
# Everything is skipped, visibly, when configure disabled the cuda target;
# the emu cases when there is no C++ compiler ($CXX, default c++).  Cases
# run in parallel (CUDA_JOBS, default: the number of CPUs), their lines
# printed in a fixed order.  CUDA_ONLY='NAME ...' limits them to those programs;
# CUDA_KEEP keeps the case directories.

. "${srcdir:-.}/tests/cudaemu/unit.sh" # cudaemu_unit, cuda_disabled

# step NAME COMMAND...: runs COMMAND, logging to $dir/log; on failure writes
# NAME to $dir/status and ends the child.
step() {
    name=$1
    shift
    if ! timeout 300 "$@" >>"$dir/log" 2>&1; then
        echo "$name" >"$dir/status"
        exit 0
    fi
}

# The kernels a generated header names, and its inputs and outputs.
kernels_of() { sed -n 's/^    { "\([A-Za-z0-9_]*\)", {.*/\1/p' "$1"; }
inputs_of() { sed -n 's/^ \*   input  \([A-Za-z0-9_]*\) :.*/\1/p' "$1"; }
outputs_of() { sed -n 's/^ \*   output \([A-Za-z0-9_]*\) :.*/\1/p' "$1"; }

# --nvrtc DIR: DIR holds te and arch.
if [ "${1:-}" = --nvrtc ]; then
    dir=${2:-}
    [ -n "$dir" ] || exit 0 # xargs with nothing to do
    arch=$(cat "$dir/arch")
    step "texc" "$TEXC" "$dir/te" --target cuda --arch "$arch" -o "$dir/k"
    # shellcheck disable=SC2046 # one argument per kernel
    step "cubin_check" "$builddir/tests/cubin_check" "$dir/k.cubin" "$arch" $(kernels_of "$dir/k.h")
    echo 'int main(void) { return 0; }' >"$dir/main.c"
    step "the header as C" ${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$srcdir/runtime" \
        -include "$dir/k.h" -c "$dir/main.c" -o "$dir/main.o"
    if [ -n "$CXX_OK" ]; then
        step "the header as C++" $CXX -Wall -Wextra -Werror -I"$srcdir/runtime" \
            -include "$dir/k.h" -x c++ -c "$dir/main.c" -o "$dir/main.o"
    fi
    echo ok >"$dir/status"
    exit 0
fi

# --prep DIR: the reference at one size; DIR holds plain.te and defines.
if [ "${1:-}" = --prep ]; then
    dir=${2:-}
    [ -n "$dir" ] || exit 0 # xargs with nothing to do
    # shellcheck disable=SC2046,SC2086 # $defines splits on purpose
    step "texc --eval" "$TEXC" "$dir/plain.te" $(cat "$dir/defines") --eval --save-inputs \
        --seed "${CUDA_SEED:-1}" -o "$dir/ref"
    echo ok >"$dir/status"
    exit 0
fi

# --emu DIR: DIR holds te, prep (the --prep directory) and san (the
# sanitizer flags, maybe none).
if [ "${1:-}" = --emu ]; then
    dir=${2:-}
    [ -n "$dir" ] || exit 0 # xargs with nothing to do
    prep=$(cat "$dir/prep")
    san=$(cat "$dir/san")
    set --
    if [ -n "${CUDA_DEVICE:-}" ]; then
        # on the GPU: the local architecture, the real libtexrt
        # shellcheck disable=SC2046,SC2086
        step "texc" "$TEXC" "$dir/te" $(cat "$prep/defines") --target cuda -o "$dir/k"
        step "compiling the harness" ${CC:-cc} -std=c11 -O2 -Wall -Werror ${SANITIZER_FLAGS:-} -I"$srcdir/runtime" \
            -I"$dir" -DTEXC_HEADER='"k.h"' -DTEXC_NAME=k -DTEXC_MACRO=K "$srcdir/tests/gpu/harness.c" \
            -L"$builddir/runtime/.libs" -Wl,-rpath,"$builddir/runtime/.libs" -ltexrt -o "$dir/run"
        for i in $(inputs_of "$dir/k.h"); do set -- "$@" "$prep/ref.in.$i.npy"; done
        for o in $(outputs_of "$dir/k.h"); do set -- "$@" "$dir/got.$o.npy"; done
        step "running the kernels on the GPU" "$dir/run" "$@"
        for o in $(outputs_of "$dir/k.h"); do
            step "comparing '$o'" "$builddir/tests/npycmp" "$prep/ref.$o.npy" "$dir/got.$o.npy"
        done
        echo ok >"$dir/status"
        exit 0
    fi
    # shellcheck disable=SC2046,SC2086
    step "texc" "$TEXC" "$dir/te" $(cat "$prep/defines") --target cuda --arch "$(cat "$dir/arch")" \
        --keep -o "$dir/k"
    # the kernels as host C++: dynamic shared memory is the emulator's
    cudaemu_unit "$dir"
    # shellcheck disable=SC2086 # $san splits on purpose
    step "compiling the kernels for the host" $CXX -std=c++17 -O1 -g $san -w \
        -I"$srcdir/tests/cudaemu" -I"$srcdir/runtime" -I"$dir" -c "$dir/table.cc" -o "$dir/table.o"
    # shellcheck disable=SC2086
    step "compiling the harness" ${CC:-cc} -std=c11 -O1 -g $san -Wall -Werror -I"$srcdir/runtime" \
        -I"$dir" -DTEXC_HEADER='"k.h"' -DTEXC_NAME=k -DTEXC_MACRO=K \
        -c "$srcdir/tests/gpu/harness.c" -o "$dir/harness.o"
    # shellcheck disable=SC2086
    step "linking" $CXX $san -o "$dir/run" "$dir/harness.o" "$dir/table.o" \
        "$(cat "$dir/emu")" -lpthread
    for i in $(inputs_of "$dir/k.h"); do set -- "$@" "$prep/ref.in.$i.npy"; done
    for o in $(outputs_of "$dir/k.h"); do set -- "$@" "$dir/got.$o.npy"; done
    TSAN_OPTIONS="halt_on_error=1 exitcode=66 report_signal_unsafe=0" \
        step "running the kernels (emulated)" "$dir/run" -c "$dir/k.cubin" "$@"
    for o in $(outputs_of "$dir/k.h"); do
        step "comparing '$o'" "$builddir/tests/npycmp" "$prep/ref.$o.npy" "$dir/got.$o.npy"
    done
    echo ok >"$dir/status"
    [ -n "${CUDA_KEEP:-}" ] || rm -f "$dir/run" "$dir"/*.o "$dir"/got.*.npy
    exit 0
fi

. "${srcdir:-.}/tests/lib.sh"

cuda_disabled "the cuda target" && exit 0

samples=$srcdir/samples
scheds=$srcdir/tests/cuda
jobs=${CUDA_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
CXX=${CXX:-c++}
if [ -n "${CUDA_KEEP:-}" ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/texc-cuda.XXXXXX")
    echo "# case directories in $work"
else
    work=$tmp
fi
export TEXC builddir srcdir CXX

# The host side of the emulator, once per set of flags; ThreadSanitizer if
# it builds and runs here.
CXX_OK=
if echo 'int main() { return 0; }' >"$work/probe.cc" &&
        $CXX -x c++ "$work/probe.cc" -o "$work/probe" >/dev/null 2>&1; then
    CXX_OK=yes
fi
export CXX_OK
tsan=
if [ -n "$CXX_OK" ] && $CXX -fsanitize=thread -x c++ "$work/probe.cc" -o "$work/probe" >/dev/null 2>&1 &&
        "$work/probe" >/dev/null 2>&1; then
    tsan=-fsanitize=thread
fi
if [ -n "$CXX_OK" ]; then
    # shellcheck disable=SC2086
    $CXX -std=c++17 -O1 -g -I"$srcdir/tests/cudaemu" -I"$srcdir/runtime" \
        -c "$srcdir/tests/cudaemu/cudaemu.cc" -o "$work/emu.o" &&
    { [ -z "$tsan" ] || $CXX -std=c++17 -O1 -g $tsan -I"$srcdir/tests/cudaemu" -I"$srcdir/runtime" \
        -c "$srcdir/tests/cudaemu/cudaemu.cc" -o "$work/emu_tsan.o"; } || CXX_OK=
fi
[ -n "$tsan" ] || echo "# ThreadSanitizer is not available: emulated runs check values, not races"

nvrtc_cases=$tmp/nvrtc
preps=$tmp/preps
emu_cases=$tmp/emu
: >"$nvrtc_cases"
: >"$preps"
: >"$emu_cases"
n=0

# program NAME FILE SIZES1 SIZES2 [ARCH2]: the cases of one program; the
# emulated ones are sm_80 code at SIZES1, ARCH2 (default sm_75) at SIZES2.
program() {
    name=$1 file=$2 arch2=${5:-sm_75}
    if [ -n "${CUDA_ONLY:-}" ]; then
        case " $CUDA_ONLY " in
        *" $name "*) ;;
        *) return ;;
        esac
    fi
    base=$work/$name
    mkdir -p "$base"
    strip_schedules "$file" >"$base/plain.te"
    # the schedules: NAME and TE file
    : >"$base/schedules"
    if grep -q '^[ \t]*schedule[ \t][ \t]*cuda' "$file"; then
        cp "$file" "$base/own.te"
        echo "own $base/own.te" >>"$base/schedules"
    fi
    echo "default $base/plain.te" >>"$base/schedules"
    for sched in "$scheds/$name".*.sched; do
        [ -f "$sched" ] || continue
        k=${sched##*/"$name".}
        k=${k%.sched}
        cat "$base/plain.te" "$sched" >"$base/sched$k.te"
        echo "schedule_$k $base/sched$k.te" >>"$base/schedules"
    done
    while read -r sname te; do
        for arch in sm_80 sm_90; do
            n=$((n + 1))
            dir=$work/nvrtc$n
            mkdir -p "$dir"
            cp "$te" "$dir/te"
            echo "$arch" >"$dir/arch"
            echo "$name $sname $arch" >"$dir/desc"
            echo "$dir" >>"$nvrtc_cases"
        done
    done <"$base/schedules"
    first=yes
    own=
    [ -n "${CUDA_DEVICE:-}" ] && own=own-sizes
    for sizes in "$3" "$4" $own; do
        [ "$sizes" = own-sizes ] && sizes=
        prep=$base/$(echo "${sizes:-own}" | tr ' =' '_-')
        mkdir -p "$prep"
        cp "$base/plain.te" "$prep/plain.te"
        defines=
        for d in $sizes; do defines="$defines -D $d"; done
        echo "$defines" >"$prep/defines"
        echo "$prep" >>"$preps"
        while read -r sname te; do
            n=$((n + 1))
            dir=$work/emu$n
            mkdir -p "$dir"
            cp "$te" "$dir/te"
            echo "$prep" >"$dir/prep"
            # sm_80 code (cp.async) at the first sizes, sm_75 (plain loads) at the others
            arch=$arch2
            [ -n "$first" ] && arch=sm_80
            echo "$arch" >"$dir/arch"
            if [ -n "${CUDA_DEVICE:-}" ]; then
                echo "$name $sname ${sizes:-(its own sizes)} (GPU)" >"$dir/desc"
            elif [ -n "$first" ] && [ -n "$tsan" ]; then
                echo "$tsan" >"$dir/san"
                echo "$work/emu_tsan.o" >"$dir/emu"
                echo "$name $sname $sizes, $arch code emulated (ThreadSanitizer)" >"$dir/desc"
            else
                : >"$dir/san"
                echo "$work/emu.o" >"$dir/emu"
                echo "$name $sname $sizes, $arch code emulated" >"$dir/desc"
            fi
            echo "$dir" >>"$emu_cases"
        done <"$base/schedules"
        first=
    done
}

#       name           file                        sizes the tiles divide    odd sizes
program matmul_gelu   "$samples/matmul_gelu.te"   "M=64 N=128 K=16"         "M=127 N=129 K=67"
program batch_matmul  "$samples/batch_matmul.te"  "B=2 M=8 N=64 K=16"       "B=3 M=7 N=37 K=13"
program conv2d        "$samples/conv2d.te"        "N=1 C=4 H=8 W=8 F=8"     "N=2 C=3 H=9 W=11 F=5"
program layernorm     "$samples/layernorm.te"     "M=8 D=64"                "M=7 D=37"
program maxpool       "$samples/maxpool.te"       "N=1 C=4 H=8 W=32"        "N=2 C=3 H=11 W=37"
program softmax       "$samples/softmax.te"       "M=8 N=64"                "M=7 N=37"
program transpose_add "$samples/transpose_add.te" "M=16 N=64"               "M=13 N=37"
program transformer_block "$samples/transformer_block.te" "S=16 D=32 H=2 F=64" "S=13 D=36 H=3 F=40"
program half          "$scheds/half.te"           "M=64 N=64 K=32"          "M=33 N=40 K=24"
program ints          "$scheds/ints.te"           "M=16 N=64"               "M=9 N=37"
program i32_wrap      "$srcdir/tests/e2e/i32_wrap.te" "M=64"                "M=37"
program lowp          "$srcdir/tests/e2e/lowp.te" "M=16 N=64 K=32"          "M=13 N=37 K=67"
program gather        "$srcdir/tests/e2e/gather.te" "S=16 V=37 D=64 R=8"    "S=13 V=11 D=19 R=3"
# the tensor cores (sm_80 code at both sizes; the default schedule's SIMT
# fallback for them is sm_75's, in program half and below)
program mma           "$scheds/mma.te"            "M=128 N=128 K=64"        "M=100 N=72 K=40" sm_80
program mma_nt        "$scheds/mma_nt.te"         "M=64 N=128 K=32"         "M=72 N=40 K=56" sm_80
program mma_simt      "$scheds/mma.te"            "M=32 N=32 K=32"          "M=9 N=16 K=24"

[ ! -s "$nvrtc_cases" ] || xargs -P "$jobs" -n 1 sh "$0" --nvrtc <"$nvrtc_cases"
[ ! -s "$preps" ] || xargs -P "$jobs" -n 1 sh "$0" --prep <"$preps"
if [ -s "$emu_cases" ] && { [ -n "$CXX_OK" ] || [ -n "${CUDA_DEVICE:-}" ]; }; then
    while read -r dir; do
        [ "$(cat "$(cat "$dir/prep")/status" 2>/dev/null)" = ok ] && echo "$dir"
    done <"$emu_cases" | xargs -P "$jobs" -n 1 sh "$0" --emu
fi

report() {  # report DIR
    status=$(cat "$1/status" 2>/dev/null || echo "no result")
    if [ "$status" = ok ]; then
        ok "$(cat "$1/desc")"
    else
        echo "$status failed; the case is $1" >>"$1/log"
        not_ok "$(cat "$1/desc"): $status" "$1/log"
    fi
}
while read -r dir; do
    report "$dir"
done <"$nvrtc_cases"
while read -r dir; do
    prep=$(cat "$dir/prep")
    if [ -z "$CXX_OK" ] && [ -z "${CUDA_DEVICE:-}" ]; then
        skip "$(cat "$dir/desc") emulated" "no C++ compiler ($CXX) for tests/cudaemu"
    elif [ "$(cat "$prep/status" 2>/dev/null)" != ok ]; then
        not_ok "$(cat "$dir/desc"): preparing the reference" "$prep/log"
    else
        report "$dir"
    fi
done <"$emu_cases"

### The command line and the generated header ###########################

mg=$work/cli
mkdir -p "$mg"
small="-D M=64 -D N=128 -D K=16"
mgte=$samples/matmul_gelu.te

expect() {  # expect DESC STATUS CMD...: exit status STATUS; output in $mg/out, $mg/err
    desc=$1 want=$2
    shift 2
    "$@" >"$mg/out" 2>"$mg/err"
    got=$?
    if [ "$got" -eq "$want" ]; then
        ok "$desc"
    else
        echo "exit $got, wanted $want" >>"$mg/err"
        not_ok "$desc" "$mg/err"
    fi
}
contains() {  # contains DESC FILE TEXT
    if grep -qF -- "$3" "$2"; then ok "$1"; else not_ok "$1" "$2"; fi
}
no_files() {  # no_files DESC PREFIX
    if ls "$2".* >/dev/null 2>&1; then
        ls "$2".* >"$mg/left"
        not_ok "$1" "$mg/left"
    else
        ok "$1"
    fi
}

mkdir -p "$mg/check"
# shellcheck disable=SC2086 # $small splits on purpose
expect "--check --dump=cuda prints the CUDA C" 0 "$TEXC" "$mgte" $small --target cuda --arch sm_80 \
    --check --dump=cuda -o "$mg/check/keep"
contains "--dump=cuda shows the kernel" "$mg/out" 'extern "C" __global__ void __launch_bounds__'
no_files "--check writes nothing" "$mg/check/keep"
cp "$mg/out" "$mg/dumped.cu"
# shellcheck disable=SC2086
expect "--keep writes PREFIX.cu" 0 "$TEXC" "$mgte" $small --target cuda --arch sm_80 --keep -o "$mg/keep"
if cmp -s "$mg/keep.cu" "$mg/dumped.cu"; then ok "PREFIX.cu is what --dump=cuda prints"; else
    diff "$mg/dumped.cu" "$mg/keep.cu" >"$mg/diff" 2>&1; not_ok "PREFIX.cu is what --dump=cuda prints" "$mg/diff"; fi
[ -f "$mg/keep.cubin" ] && [ -f "$mg/keep.h" ] && ok "PREFIX.cubin and PREFIX.h written" ||
    not_ok "PREFIX.cubin and PREFIX.h written"
ls "$mg"/*.tmp >/dev/null 2>&1 && not_ok "no .tmp files left" || ok "no .tmp files left"
# shellcheck disable=SC2086
expect "--embed" 0 "$TEXC" "$mgte" $small --target cuda --arch sm_80 --embed -o "$mg/embed"
[ ! -f "$mg/embed.cubin" ] && grep -q 'embed_cubin_image\[' "$mg/embed.h" &&
    ok "--embed puts the cubin in the header, not in a file" ||
    not_ok "--embed puts the cubin in the header, not in a file"
# shellcheck disable=SC2086
expect "-v" 0 "$TEXC" "$mgte" $small --target cuda --arch sm_90 -v -o "$mg/verbose"
contains "-v reports registers, shared memory and spills per kernel" "$mg/err" \
    "texc: kernel verbose_z: "
contains "-v names the spills" "$mg/err" "spills: "
expect "an --arch NVRTC does not know" 1 "$TEXC" "$mgte" --target cuda --arch sm_91 -o "$mg/bad"
contains "its message lists the architectures NVRTC supports" "$mg/err" "it supports sm_75 sm_80"
no_files "a bad --arch writes nothing" "$mg/bad"
expect "a malformed --arch" 1 "$TEXC" "$mgte" --target cuda --arch compute_80 -o "$mg/bad"
contains "its message says what is expected" "$mg/err" "expected sm_XX, sm_XXa or sm_XXf"
expect "no --arch and no driver" 1 env TEXRT_LIBCUDA=/nonexistent/libcuda.so.1 "$TEXC" "$mgte" \
    --target cuda -o "$mg/nodev"
contains "its message names the flag" "$mg/err" "no CUDA device here"
contains "its message names the flag (2)" "$mg/err" "pass --arch sm_XX"
no_files "no device: nothing written" "$mg/nodev"
# shellcheck disable=SC2086
expect "no --arch: the local device's architecture (fake driver, sm_86)" 0 \
    env TEXRT_LIBCUDA="$TEXRT_TEST_FAKE_LIBCUDA" FAKE_CUDA_SM=86 "$TEXC" "$mgte" $small \
    --target cuda -o "$mg/local"
check "the cubin is for sm_86" "$builddir/tests/cubin_check" "$mg/local.cubin" sm_86 local_z
for a in sm_86 sm_89 sm_90a sm_100 sm_120; do
    # shellcheck disable=SC2086
    expect "--arch $a" 0 "$TEXC" "$mgte" $small --target cuda --arch $a -o "$mg/$a"
    check "the cubin is for $a" "$builddir/tests/cubin_check" "$mg/$a.cubin" "${a%f}" "${a}_z"
done

# schedules CUDA cannot run: an error at the statement, no files
# with_schedule NAME 'TEXT': $mg/NAME.te, the program of $mgte under the
# schedule TEXT (its backslash escapes interpreted) instead of its own
with_schedule() {
    printf '%b' "$2" >"$mg/$1.sched"
    strip_schedules "$mgte" | cat - "$mg/$1.sched" >"$mg/$1.te"
}
with_schedule in_threads 'schedule cuda {\n  y.split(i, 32) -> io, ii;\n  y.bind(ii, thread.x);\n  y.bind(j, thread.y);\n}\n'
# shellcheck disable=SC2086
expect "a block of too many threads" 1 "$TEXC" "$mg/in_threads.te" $small --target cuda --arch sm_80 \
    -o "$mg/threads"
contains "its message gives the count and the limit" "$mg/err" "CUDA allows 1024"
no_files "too many threads: nothing written" "$mg/threads"
with_schedule in_smem 'schedule cuda {\n  y.split(j, 64) -> bj, tj;\n  y.reorder(bj, i, tj, k);\n  y.bind(bj, block.x);\n  y.bind(tj, thread.x);\n  xs = x.cache_read(shared, y) at bj;\n  ws = w.cache_read(shared, y) at bj;\n}\n'
expect "shared memory beyond the architecture's limit" 1 "$TEXC" "$mg/in_smem.te" -D M=20 -D K=256 \
    --target cuda --arch sm_75 -o "$mg/smem"
contains "its message gives the bytes and the limit" "$mg/err" "sm_75 allows a block 65536"
no_files "too much shared memory: nothing written" "$mg/smem"
expect "the same fits sm_80 (dynamic shared memory)" 0 "$TEXC" "$mg/in_smem.te" -D M=20 -D K=256 \
    --target cuda --arch sm_80 -o "$mg/smem"
contains "the header launches it with dynamic shared memory" "$mg/smem.h" "}, 86016, 0 }"
# a 16 x 16 thread tile, k in steps of 2048, both operands staged: 256 KiB
# of shared memory, which was once quietly two global buffers (issue 15)
with_schedule in_tile 'schedule cuda {\n  y.split(i, 16) -> bi, ty;\n  y.split(j, 16) -> bj, tx;\n  y.split(k, 2048) -> ko, ki;\n  y.reorder(bi, bj, ko, ty, tx, ki);\n  y.bind(bi, block.y);\n  y.bind(bj, block.x);\n  y.bind(ty, thread.y);\n  y.bind(tx, thread.x);\n  xs = x.cache_read(shared, y) at ko;\n  ws = w.cache_read(shared, y) at ko;\n}\n'
expect "shared tiles beyond the architecture's limit" 1 "$TEXC" "$mg/in_tile.te" -D K=4096 \
    --target cuda --arch sm_80 -o "$mg/tile"
contains "its message gives the bytes" "$mg/err" "needs 262144 bytes of shared memory ('xs' 131072, 'ws' 131072)"
contains "its message points at the cache_read" "$mg/err" "  ws = w.cache_read(shared, y) at ko;"
no_files "oversized shared tiles: nothing written" "$mg/tile"
# 128 x 128 blocks, k in steps of 256, pipelined 8 deep: the pipeline was
# once dropped with only a comment in the .cu
with_schedule in_pipe 'schedule cuda {\n  y.split(i, 128) -> bi, ib;\n  y.split(ib, 16) -> ri, ty;\n  y.split(j, 128) -> bj, jb;\n  y.split(jb, 16) -> rj, tx;\n  y.split(k, 256) -> ko, ki;\n  y.reorder(bi, bj, ko, ty, tx, ki, ri, rj);\n  y.bind(bi, block.y);\n  y.bind(bj, block.x);\n  y.bind(ty, thread.y);\n  y.bind(tx, thread.x);\n  xs = x.cache_read(shared, y) at ko;\n  ws = w.cache_read(shared, y) at ko;\n  y.pipeline(ko, 8);\n}\n'
expect "a pipeline of shared tiles beyond the architecture's limit" 1 "$TEXC" "$mg/in_pipe.te" \
    -D K=4096 --target cuda --arch sm_80 -o "$mg/pipe"
contains "its message counts the slots" "$mg/err" "'xs' 1048576 (8 pipeline slots)"
no_files "an oversized pipeline: nothing written" "$mg/pipe"
with_schedule in_pipe_local 'schedule cuda {\n  y.split(i, 16) -> bi, ty;\n  y.split(j, 16) -> bj, tx;\n  y.split(k, 16) -> ko, ki;\n  y.reorder(bi, bj, ko, ty, tx, ki);\n  y.bind(bi, block.y);\n  y.bind(bj, block.x);\n  y.bind(ty, thread.y);\n  y.bind(tx, thread.x);\n  xl = x.cache_read(local, y) at ko;\n  y.pipeline(ko, 2);\n}\n'
# shellcheck disable=SC2086
expect "a pipeline of local tiles" 1 "$TEXC" "$mg/in_pipe_local.te" $small --target cuda --arch sm_80 \
    -o "$mg/pipe_local"
contains "its message says why" "$mg/err" "'xl' is computed at it, not in shared memory"
no_files "a pipeline of local tiles: nothing written" "$mg/pipe_local"
if [ -n "$CXX_OK" ] && [ -z "${CUDA_DEVICE:-}" ]; then
    # the same computed, emulated: an --emu case of its own
    mkdir -p "$mg/smem_prep" "$mg/smem_emu"
    cp "$mg/in_smem.te" "$mg/smem_prep/plain.te"
    cp "$mg/in_smem.te" "$mg/smem_emu/te"
    echo "-D M=20 -D K=256" >"$mg/smem_prep/defines"
    echo "$mg/smem_prep" >"$mg/smem_emu/prep"
    : >"$mg/smem_emu/san"
    echo "$work/emu.o" >"$mg/smem_emu/emu"
    echo sm_80 >"$mg/smem_emu/arch"
    echo "86016 bytes of dynamic shared memory, emulated" >"$mg/smem_emu/desc"
    sh "$0" --prep "$mg/smem_prep" && sh "$0" --emu "$mg/smem_emu"
    report "$mg/smem_emu"
fi

# The header's loader and launcher on libtexrt, against its fake driver:
# the kernels are found and launched (the fake runs nothing); a cubin for
# another architecture is refused with the message that says how to fix it.
harness() {  # harness PREFIX: builds PREFIX_run, the harness on libtexrt
    dirn=$(dirname "$1") base=$(basename "$1")
    upper=$(echo "$base" | tr 'a-z' 'A-Z')
    # a program linking the sanitized libtexrt must be sanitized too
    # shellcheck disable=SC2086
    ${CC:-cc} -std=c11 -Wall -Werror ${SANITIZER_FLAGS:-} -I"$srcdir/runtime" -I"$dirn" -DTEXC_HEADER="\"$base.h\"" \
        -DTEXC_NAME="$base" -DTEXC_MACRO="$upper" "$srcdir/tests/gpu/harness.c" \
        -L"$builddir/runtime/.libs" -Wl,-rpath,"$builddir/runtime/.libs" -ltexrt -o "$1_run" \
        >"$mg/err" 2>&1
}
ref=$mg/ref
# shellcheck disable=SC2086
"$TEXC" "$mgte" $small --eval --save-inputs -o "$ref" >/dev/null 2>&1
inputs="$ref.in.x.npy $ref.in.w.npy $ref.in.b.npy"
if harness "$mg/keep"; then
    ok "tests/gpu/harness.c builds on the generated header and libtexrt"
    # shellcheck disable=SC2086 # $inputs splits on purpose
    expect "the header loads the cubin and launches it (fake driver, sm_80)" 0 \
        env TEXRT_LIBCUDA="$TEXRT_TEST_FAKE_LIBCUDA" FAKE_CUDA_SM=80 "$mg/keep_run" \
        -c "$mg/keep.cubin" $inputs "$mg/got.npy"
    # shellcheck disable=SC2086
    expect "an sm_80 cubin runs on an sm_86 device" 0 \
        env TEXRT_LIBCUDA="$TEXRT_TEST_FAKE_LIBCUDA" FAKE_CUDA_SM=86 "$mg/keep_run" \
        -c "$mg/keep.cubin" $inputs "$mg/got.npy"
    # shellcheck disable=SC2086
    expect "no driver: the harness skips" 77 env TEXRT_LIBCUDA=/nonexistent/libcuda.so.1 \
        "$mg/keep_run" -c "$mg/keep.cubin" $inputs "$mg/got.npy"
    contains "it says why" "$mg/out" "skip: no CUDA device"
else
    not_ok "tests/gpu/harness.c builds on the generated header and libtexrt" "$mg/err"
fi
if harness "$mg/sm_90a"; then
    # shellcheck disable=SC2086
    expect "an sm_90a cubin on an sm_86 device is refused" 2 \
        env TEXRT_LIBCUDA="$TEXRT_TEST_FAKE_LIBCUDA" FAKE_CUDA_SM=86 "$mg/sm_90a_run" $inputs "$mg/got.npy"
    contains "with the rebuild command" "$mg/err" \
        "sm_90a.cubin was built for sm_90a; device 0 is sm_86: rebuild with texc --arch sm_86"
else
    not_ok "the harness builds on an sm_90a header" "$mg/err"
fi
if harness "$mg/embed"; then
    # shellcheck disable=SC2086
    expect "the embedded cubin loads and launches (fake driver)" 0 \
        env TEXRT_LIBCUDA="$TEXRT_TEST_FAKE_LIBCUDA" FAKE_CUDA_SM=80 "$mg/embed_run" $inputs "$mg/got.npy"
else
    not_ok "the harness builds on an --embed header" "$mg/err"
fi
if harness "$mg/smem"; then
    "$TEXC" "$mg/in_smem.te" -D M=20 -D K=256 --eval --save-inputs -o "$mg/sref" >/dev/null 2>&1
    expect "a kernel with 86016 bytes of dynamic shared memory launches (fake driver)" 0 \
        env TEXRT_LIBCUDA="$TEXRT_TEST_FAKE_LIBCUDA" FAKE_CUDA_SM=80 "$mg/smem_run" \
        "$mg/sref.in.x.npy" "$mg/sref.in.w.npy" "$mg/sref.in.b.npy" "$mg/got.npy"
else
    not_ok "the harness builds on a dynamic-shared-memory header" "$mg/err"
fi

# Every program's default CUDA schedule at tiny sizes (every size dim 1, 2
# or 5) builds with NVRTC, or is refused with a diagnostic: never an
# internal error.  The f16 matmul once failed at these sizes with
# "te_cp_async_commit is undefined" (issue 15); it must build at 1, 2 and
# 4 to 7, for sm_80 and sm_90.
tiny() {  # tiny NAME FILE DIMS...
    name=$1 file=$2
    shift 2
    strip_schedules "$file" >"$work/tiny.te"
    for s in 1 2 5; do
        defines=
        for d in "$@"; do defines="$defines -D $d=$s"; done
        # shellcheck disable=SC2086 # one -D a dim
        "$TEXC" "$work/tiny.te" $defines --target cuda --arch sm_80 --check >/dev/null 2>"$work/tiny.err"
        rc=$?
        if [ $rc -eq 0 ] || { [ $rc -eq 1 ] && grep -q ': error: ' "$work/tiny.err" &&
                              ! grep -q 'internal error' "$work/tiny.err"; }; then
            ok "$name default cuda schedule, every dim $s: built or refused with a diagnostic"
        else
            echo "exit $rc" >>"$work/tiny.err"
            not_ok "$name default cuda schedule, every dim $s" "$work/tiny.err"
        fi
    done
}
tiny matmul_gelu "$samples/matmul_gelu.te" M N K
tiny batch_matmul "$samples/batch_matmul.te" B M N K
tiny conv2d "$samples/conv2d.te" N C H W F
tiny layernorm "$samples/layernorm.te" M D
tiny maxpool "$samples/maxpool.te" N C H W
tiny softmax "$samples/softmax.te" M N
tiny transpose_add "$samples/transpose_add.te" M N
tiny transformer_block "$samples/transformer_block.te" S D H F
tiny ints "$scheds/ints.te" M N
strip_schedules "$scheds/half.te" >"$work/half_tiny.te"
for arch in sm_80 sm_90; do
    for s in 1 2 4 5 6 7; do
        expect "half's default cuda schedule at M=N=K=$s builds ($arch)" 0 \
            "$TEXC" "$work/half_tiny.te" -D M=$s -D N=$s -D K=$s --target cuda --arch $arch --check
    done
done

### The tensor cores ###################################################

# the kernel text has the instructions, ptxas keeps every sum in registers
for arch in sm_80 sm_90; do
    for t in mma mma_nt; do
        strip_schedules "$scheds/$t.te" >"$work/${t}_tc.te"
        expect "$t: the default schedule tensorizes ($arch)" 0 \
            "$TEXC" "$work/${t}_tc.te" -D M=256 -D N=256 -D K=128 --target cuda --arch $arch \
            -v --keep -o "$mg/tc_$t"
        contains "$t: -v says the kernel is on the tensor cores ($arch)" "$mg/err" \
            "tensor cores (mma.sync m16n8k16"
        contains "$t: ptxas spills nothing ($arch)" "$mg/err" "spills: 0 bytes stored, 0 loaded"
        regs=$(sed -n 's/^texc: kernel [a-z_]*: \([0-9]*\) registers.*/\1/p' "$mg/err")
        if [ -n "$regs" ] && [ "$regs" -le 255 ]; then
            ok "$t: at most 255 registers a thread ($arch: $regs)"
        else
            not_ok "$t: at most 255 registers a thread ($arch: ${regs:-none said})" "$mg/err"
        fi
        for insn in mma.sync.aligned.m16n8k16.row.col.f32 ldmatrix.sync.aligned.m8n8.x4 cp.async.cg.shared.global; do
            contains "$t: the kernel uses $insn ($arch)" "$mg/tc_$t.cu" "$insn"
        done
    done
done
contains "mma_nt: A stored k-major is read with ldmatrix .trans" "$mg/tc_mma_nt.cu" "te_ldsm_t4(te_fa"
contains "mma: B stored k-major is read with ldmatrix .trans" "$mg/tc_mma.cu" "te_ldsm_t4(te_r"
# where they cannot: SIMT, and -v says why
expect "the default schedule on sm_75: SIMT" 0 "$TEXC" "$work/mma_tc.te" --target cuda \
    --arch sm_75 -v --check
contains "  ... -v says sm_75 has no mma.sync.m16n8k16" "$mg/err" \
    "SIMT, not the tensor cores: sm_75 has no mma.sync.m16n8k16"
expect "a reduction over 36 values of rows of 36: SIMT" 0 "$TEXC" "$work/mma_tc.te" -D K=36 \
    --target cuda --arch sm_90 -v --check
contains "  ... -v says why (16-byte cp.async)" "$mg/err" "not a multiple of 8 (cp.async"
expect "f16 times bf16: SIMT" 0 "$TEXC" "$scheds/half.te" --target cuda --arch sm_90 -v --check
contains "  ... -v says an mma multiplies one type" "$mg/err" "its operands are f16 and bf16"
strip_schedules "$samples/matmul_gelu.te" >"$work/mg_tc.te"
expect "f32 operands: SIMT" 0 "$TEXC" "$work/mg_tc.te" --target cuda --arch sm_90 -v --check
contains "  ... -v says tf32 is not used" "$mg/err" "its operands are f32: the tensor cores take f16 or bf16"

# tests/gpu/run.sh: it parses, and the benchmark it runs builds (nvcc,
# cuBLAS) where a CUDA toolkit is
check "tests/gpu/run.sh parses (sh -n)" sh -n "$srcdir/tests/gpu/run.sh"
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ -x "$nvcc" ] && [ -z "${CUDA_DEVICE:-}" ]; then
    check "the CUDA benchmarks build (bench/cuda_bench.cu, cuda_bench_bf16.cu, nvcc, sm_90)" env NVCC="$nvcc" \
        TEXC="$TEXC" sh "$srcdir/tests/gpu/run.sh" --bench-build "$work/bench" sm_90
else
    skip "the CUDA benchmark builds" "no nvcc here"
fi

done_testing

# unit.sh — the host translation unit of a texc CUDA program for
# tests/cudaemu (sourced by tests/cuda.sh and tests/cuda_rtdims.sh).
#
# cudaemu_unit DIR: from DIR/k.cu and DIR/k.h (texc --keep -o DIR/k),
# writes DIR/k_emu.cu (the kernels, their dynamic shared memory the
# emulator's) and DIR/table.cc (cudaemu.h, the kernels, and the table of
# every kernel the header names), to be compiled as C++.
cudaemu_unit() {
    sed 's/^\( *\)extern __shared__ __align__(16) unsigned char te_smem\[\];/\1unsigned char *te_smem = te_emu_smem;/' \
        "$1/k.cu" >"$1/k_emu.cu"
    {
        echo '#include "cudaemu.h"'
        echo '#include "k_emu.cu"'
        echo 'const te_emu_kernel te_emu_kernels[] = {'
        sed -n 's/^    { "\([A-Za-z0-9_]*\)", {.*/    TE_EMU_KERNEL(\1)/p' "$1/k.h"
        echo '};'
        echo 'const int te_emu_nkernels = sizeof te_emu_kernels / sizeof te_emu_kernels[0];'
    } >"$1/table.cc"
}

# cuda_disabled: true (after a visible SKIP line and the plan) when
# configure disabled the cuda target; the caller exits 0 then.
cuda_disabled() {
    if "$TEXC" --target cuda --arch sm_80 "$srcdir/samples/transpose_add.te" --check 2>&1 |
            grep -q "disabled at configure time"; then
        skip "$1" "the cuda target was disabled at configure time"
        done_testing
        return 0
    fi
    return 1
}

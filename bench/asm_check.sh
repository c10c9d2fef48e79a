#!/bin/sh
# asm_check.sh — which vector width texc's compiled kernels compute with.
#
#   asm_check.sh KERNEL.o...
#
# For each object, disassembles the kernel function, the functions its
# parallel loops are lifted into (NAME_STAGE_LOOP, which te_parallel_for
# runs: most of the work is there) and any OpenMP bodies outlined from
# them (NAME._omp_fn.N), and counts the
# packed single-precision FMAs, multiplies and adds by register width,
# plus every instruction that touches a zmm register.  One line per
# object, for bench/results.md.
if ! command -v objdump >/dev/null 2>&1; then
    echo "objdump not found: no assembly check"
    exit 0
fi
for obj in "$@"; do
    fn=$(basename "$obj" .o)
    objdump -d --no-show-raw-insn "$obj" | awk -v fn="$fn" '
        /^[0-9a-f]+ <.*>:$/ { inside = index($2, "<" fn ">") == 1 || index($2, "<" fn ".") == 1 || index($2, "<" fn "_") == 1; next }
        !inside { next }
        /vfn?m(add|sub)[0-9]+ps/ { w = /zmm/ ? "zmm" : /ymm/ ? "ymm" : "xmm"; fma[w]++ }
        /vfn?m(add|sub)[0-9]+ss/ { fma["scalar"]++ }
        /v(mul|add)ps/ { w = /zmm/ ? "zmm" : /ymm/ ? "ymm" : "xmm"; muladd[w]++ }
        /zmm/ { zmm++ }
        END {
            printf "%s: packed FMAs zmm %d, ymm %d, xmm %d (scalar %d); vmulps/vaddps zmm %d, ymm %d, xmm %d; instructions on zmm %d\n",
                fn, fma["zmm"], fma["ymm"], fma["xmm"], fma["scalar"],
                muladd["zmm"], muladd["ymm"], muladd["xmm"], zmm
        }'
done

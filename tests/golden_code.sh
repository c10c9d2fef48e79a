#!/bin/sh
# golden_code.sh — goldens of generated code: the .h and .c texc writes
# for a few samples under their default schedules (the file's schedule
# blocks stripped), and the CUDA C (.cu, from --keep) of two, so that a
# change to an emitter shows as a diff of tests/golden/code/ in review.
# The goldens are named NAME.EXT.golden (matmul_gelu.c.golden): they are
# not sources of the project, for the build or for tools that read C.
#
# Each row of the table below is a golden: NAME, the program, its sizes
# (small ones that the default tiles do not all divide, so the edge code
# shows too) and the target.  The program is stripped into $tmp/NAME.te
# and built there as `texc NAME.te SIZES [--target cuda --arch sm_80
# --keep] -o NAME`, so the header comments name NAME.te, as a user's
# build from the program's own folder would.  Regenerate with
#   tests/golden_code.sh --update [NAME]
# and review the diff.
. "${srcdir:-.}/tests/lib.sh"

cuda_target=yes
if "$TEXC" "$srcdir/samples/matmul_gelu.te" --target cuda --arch sm_80 --check 2>&1 |
        grep -q "disabled at configure time"; then
    cuda_target=
fi

update=
[ "${1:-}" = --update ] && update=${2:-all}

golden() {  # golden NAME PROGRAM SIZES TARGET [SED]: SED rewrites the program
    name=$1
    strip_schedules "$srcdir/$2" | sed "${5:-}" >"$tmp/$name.te"
    if [ "$4" = cuda ]; then
        if [ -z "$cuda_target" ]; then
            skip "$name.cu" "the cuda target was disabled at configure time"
            return
        fi
        exts=cu
        flags="--target cuda --arch sm_80 --keep"
    else
        exts="h c"
        flags=
    fi
    # shellcheck disable=SC2086 # sizes and flags split on purpose
    if ! (cd "$tmp" && "$TEXC" "$name.te" $3 $flags -o "$name") >"$tmp/log" 2>&1; then
        not_ok "$name: texc failed" "$tmp/log"
        return
    fi
    for ext in $exts; do
        want=$srcdir/tests/golden/code/$name.$ext.golden
        if [ -n "$update" ] && { [ "$update" = all ] || [ "$update" = "$name" ]; }; then
            cp "$tmp/$name.$ext" "$want"
            echo "# updated $want"
        fi
        if diff -u "$want" "$tmp/$name.$ext" >"$tmp/diff" 2>&1; then
            ok "$name.$ext"
        else
            not_ok "$name.$ext differs from tests/golden/code/$name.$ext.golden" "$tmp/diff"
        fi
    done
}

#      name               program                      sizes                              target
golden matmul_gelu        samples/matmul_gelu.te       "-D M=20 -D N=40 -D K=24"          cpu
golden softmax            samples/softmax.te           "-D M=7 -D N=37"                   cpu
golden conv2d             samples/conv2d.te            "-D N=1 -D C=3 -D H=9 -D W=11 -D F=5" cpu
golden transformer_block  samples/transformer_block.te "-D S=13 -D D=36 -D H=3 -D F=40"   cpu
golden matmul_gelu_cuda   samples/matmul_gelu.te       "-D M=20 -D N=40 -D K=24"          cuda
golden layernorm_cuda     samples/layernorm.te         "-D M=7 -D D=37"                   cuda
# a gather: an embedding's rows read at run-time ids (clamped), fused
# into the matmul that reads them
golden gather             tests/golden/gather.te       ""                                 cpu
golden gather_cuda        tests/golden/gather.te       ""                                 cuda
# run-time dims: the rows of softmax at run time, two variants (M = 1 and
# the rest), their dispatcher and table, and NAME_ERANGE
golden softmax_rtdim      samples/softmax.te           "-D N=37 --buckets M=1,2..64"      cpu \
    's/^dim M = 256,/dim M in 1..64 = 16,/'
# a matmul with M at run time, one variant: full tiles of rows, then the
# edge tile as a copy for each of its 1 to 7 rows (sched/peel.c), no test
# of the edge in the reduction loop
golden matmul_gelu_rtdim  samples/matmul_gelu.te       "-D N=40 -D K=24 --buckets M=1..64" cpu \
    's/^dim M = 512,/dim M in 1..64 = 16,/'
# a weight read in place (an input, not prepacked): each thread copies
# the column panel it works on, in its first row tile's reduction loop
# (sched/fold.c), and the other row tiles read the copy; the last panel
# (36 of 64 columns) and the last row tile are edges
golden panel              tests/e2e/panel.te           "-D M=20 -D N=100 -D K=128"        cpu
# a convolution's columns over its flattened output positions q (the
# ONNX importer's im2col): the default splits q by the row width, and
# the bounds tests and the load read q / 7 and q % 7 as the two loops
golden im2col             tests/e2e/im2col.te          "-D C=2 -D H=7 -D W=7 -D F=3"      cpu
done_testing

#!/bin/sh
# onnx.sh — texc MODEL.onnx (onnx/): PyTorch's models imported, evaluated,
# compiled and run, against the outputs PyTorch gave; NAME.weights and
# the API that loads it (tests/onnx_weights.c), --embed-weights; the
# program --emit-te writes; -D for symbolic dims; the one error listing
# every unsupported op; hostile models (every prefix, bit flips, crafted files)
# refused with "FILE: error: ...", exit 1 and nothing written.
#
# The models and PyTorch's outputs are committed (tests/onnx/, written by
# tests/onnx/gen_models.py with python3-torch; embed and gathers, whose
# indices are read at run time, by tests/onnx/gen_embedding.py), so nothing here needs
# Python; the one check that uses python3-onnx, when it is there, SKIPs
# visibly without it.
. "${srcdir:-.}/tests/lib.sh"
d=${srcdir:-.}/tests/onnx
b=${builddir:-.}
KCFLAGS="-std=gnu11 -O0 -g -fopenmp -fsanitize=address,undefined -fno-sanitize-recover=all"

# inputs MODEL: the --input options of MODEL's PyTorch inputs
inputs() {
    for f in "$d/$1".in.*.npy; do
        n=${f##*/$1.in.}
        printf ' --input %s=%s' "${n%.npy}" "$f"
    done
}

# same_outputs MODEL PREFIX: every PyTorch output of MODEL against PREFIX.OUT.npy
same_outputs() {
    for f in "$d/$1".out.*.npy; do
        n=${f##*/$1.out.}
        "$b/tests/npycmp" "$f" "$2.$n" || return 1
    done
}

# 2c. --target cuda: NAME.weights beside NAME.h and NAME.cubin (the same
# file as the cpu target's), and the header's NAME_load_weights (the
# weights copied to the device once) and NAME_run_weights, in
# tests/onnx_weights.c built with -DCUDA: run in the emulator
# (tests/cudaemu, with the sanitizers; on the GPU with CUDA_DEVICE set, as
# tests/gpu/run.sh runs this part alone, ONNX_CUDA_ONLY=1) against
# PyTorch, and the loader on the hostile files.
cuda_models() {
    if "$TEXC" --target cuda --arch sm_80 "$d/mlp.onnx" --check 2>&1 | grep -q "disabled at configure time"; then
        skip "--target cuda: NAME.weights and NAME_run_weights" "the cuda target was disabled at configure time"
        return
    fi
    cxx=${CXX:-c++}
    if [ -z "${CUDA_DEVICE:-}" ] && ! command -v "$cxx" >/dev/null 2>&1; then
        skip "--target cuda: NAME_run_weights, emulated" "no C++ compiler ($cxx) for tests/cudaemu"
        return
    fi
    . "${srcdir:-.}/tests/cudaemu/unit.sh" # cudaemu_unit
    san="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all"
    # the emulator's architecture, or the GPU's own (no --arch)
    arch='' where="on the GPU"
    if [ -z "${CUDA_DEVICE:-}" ]; then
        arch="--arch sm_80" where=emulated
        # shellcheck disable=SC2086
        $cxx -std=c++17 $san -I"${srcdir:-.}/tests/cudaemu" -I"${srcdir:-.}/runtime" \
            -c "${srcdir:-.}/tests/cudaemu/cudaemu.cc" -o "$tmp/emu.o" >"$tmp/out" 2>&1 ||
            { not_ok "tests/cudaemu builds" "$tmp/out"; return; }
    fi
    for m in mlp cnn; do
        c=$tmp/cu_$m
        mkdir "$c"
        # shellcheck disable=SC2086 # $arch splits on purpose
        if "$TEXC" "$d/$m.onnx" --target cuda $arch --keep -o "$c/k" >"$tmp/out" 2>&1 &&
            "$TEXC" "$d/$m.onnx" -o "$c/cpu" >>"$tmp/out" 2>&1 && cmp "$c/k.weights" "$c/cpu.weights" >>"$tmp/out" 2>&1 &&
            grep -q "^static inline int k_run_weights(texrt_module \*module, const k_weights \*weights, uint64_t x, uint64_t y)$" "$c/k.h"; then
            ok "$m --target cuda: k.weights beside k.h and k.cubin, the cpu target's file; k_run_weights takes x and y"
        else
            not_ok "$m --target cuda: k.weights beside k.h and k.cubin, the cpu target's file; k_run_weights takes x and y" "$tmp/out"
            continue
        fi
        # shellcheck disable=SC2086
        if [ -n "${CUDA_DEVICE:-}" ]; then
            ${CC:-cc} -std=gnu11 $san -DCUDA -DMODEL=k -I"${srcdir:-.}/runtime" -include "$c/k.h" -I"$c" \
                "${srcdir:-.}/tests/onnx_weights.c" -L"$b/runtime/.libs" -Wl,-rpath,"$b/runtime/.libs" -ltexrt \
                -o "$c/api" >"$tmp/out" 2>&1
        else
            cudaemu_unit "$c" && $cxx -std=c++17 $san -w -I"${srcdir:-.}/tests/cudaemu" -I"${srcdir:-.}/runtime" \
                -I"$c" -c "$c/table.cc" -o "$c/table.o" >"$tmp/out" 2>&1 &&
                ${CC:-cc} -std=gnu11 $san -Wall -Wextra -Werror -DCUDA -DMODEL=k -I"${srcdir:-.}/runtime" \
                    -include "$c/k.h" -I"$c" -c "${srcdir:-.}/tests/onnx_weights.c" -o "$c/api.o" >>"$tmp/out" 2>&1 &&
                $cxx $san -o "$c/api" "$c/api.o" "$c/table.o" "$tmp/emu.o" -lpthread >>"$tmp/out" 2>&1
        fi || { not_ok "$m --target cuda: tests/onnx_weights.c builds on k.h" "$tmp/out"; continue; }
        if "$c/api" run "$c/k.weights" "$d/$m.in.x.npy" "$d/$m.out.y.npy" "$c/got.npy" >"$tmp/out" 2>&1 &&
            "$b/tests/npycmp" "$d/$m.out.y.npy" "$c/got.npy" >>"$tmp/out" 2>&1; then
            ok "$m --target cuda: k_load_weights with one call, k_run_weights on x alone ($where): PyTorch's numbers"
        else
            not_ok "$m --target cuda: k_load_weights with one call, k_run_weights on x alone ($where): PyTorch's numbers" "$tmp/out"
        fi
    done
    # a run-time dim: NAME_run_weights takes its size first; a model with
    # no weights (gathers.onnx: its file holds no entries); three models'
    # headers in one translation unit, as C and as C++
    c=$tmp/cu_mlp
    echo 'int main(void) { return 0; }' >"$c/two.c"
    # shellcheck disable=SC2086
    if "$TEXC" "$d/mlp_rt.onnx" -D batch=1..64=8 --target cuda $arch -o "$c/r" >"$tmp/out" 2>&1 &&
        "$TEXC" "$d/gathers.onnx" --target cuda $arch -o "$c/o" >>"$tmp/out" 2>&1 && [ "$(wc -c <"$c/o.weights")" -eq 64 ] &&
        grep -q "^static inline int r_run_weights(texrt_module \*module, const r_weights \*weights, int64_t batch, uint64_t x, uint64_t y)$" "$c/r.h" &&
        ${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"${srcdir:-.}/runtime" -include "$c/k.h" -include "$c/r.h" \
            -include "$c/o.h" -c "$c/two.c" -o "$c/two.o" >>"$tmp/out" 2>&1 &&
        { ! command -v "$cxx" >/dev/null 2>&1 ||
            $cxx -Wall -Wextra -Werror -I"${srcdir:-.}/runtime" -include "$c/k.h" -include "$c/r.h" \
                -include "$c/o.h" -x c++ -c "$c/two.c" -o "$c/two.o" >>"$tmp/out" 2>&1; }; then
        ok "mlp_rt --target cuda -D batch=1..64: r_run_weights takes batch first; gathers (no weights): a 64-byte file; three models' headers in one C and C++ unit"
    else
        not_ok "mlp_rt --target cuda -D batch=1..64: r_run_weights takes batch first; gathers (no weights): a 64-byte file; three models' headers in one C and C++ unit" "$tmp/out"
    fi
    # the header's loader on hostile files (its TAP lines, renumbered)
    mkdir "$tmp/cu_hw"
    if [ -x "$tmp/cu_mlp/api" ]; then
        "$tmp/cu_mlp/api" hostile "$tmp/cu_mlp/k.weights" "$tmp/cu_hw" >"$tmp/hostile" 2>&1
        rc=$?
        relay_tap "$tmp/hostile" "k_load_weights (cuda): "
        [ $rc -eq 0 ] || not_ok "onnx_weights -DCUDA hostile exited $rc" "$tmp/hostile"
    fi
}
if [ -n "${ONNX_CUDA_ONLY:-}" ]; then
    cuda_models
    done_testing
    exit
fi

# 1. --eval: the reference evaluator on PyTorch's models
for m in mlp tiny encoder14 encoder17 cnn resblock rows ops ops11 semantics embed gathers; do
    # shellcheck disable=SC2046 # inputs splits on purpose
    if "$TEXC" "$d/$m.onnx" --eval $(inputs $m) -o "$tmp/ev_$m" >"$tmp/out" 2>&1 &&
        same_outputs $m "$tmp/ev_$m" >>"$tmp/out" 2>&1; then
        ok "$m.onnx --eval matches PyTorch"
    else
        not_ok "$m.onnx --eval matches PyTorch" "$tmp/out"
    fi
done

# 2. compiled: NAME.h + NAME.c and the weights as NAME.weights, built
# with the sanitizers and run by texc's harness on PyTorch's inputs
for m in mlp cnn resblock rows encoder17 embed gathers; do
    k=$tmp/k_$m
    args=
    run() {
        "$TEXC" "$d/$m.onnx" --emit-te -o "$k" || return 1
        "$TEXC" "$d/$m.onnx" --harness -o "$k" || return 1
        [ -f "$k.h" ] && [ -f "$k.c" ] && [ -f "$k.weights" ] || return 1
        # the harness's arguments: the real inputs in the program's order,
        # then the weights' file
        args="$(sed -n 's/^input \([A-Za-z0-9_]*\) : [^c].*/\1/p' "$k.te" |
            while read -r n; do printf '%s ' "$d/$m.in.$n.npy"; done)$k.weights"
        # shellcheck disable=SC2086
        ${CC:-cc} $KCFLAGS -I"$tmp" "$k.c" "${k}_harness.c" -lm -o "$k.run" || return 1
        outs=
        for f in "$d/$m".out.*.npy; do
            n=${f##*/$m.out.}
            outs="$outs $k.got.$n"
        done
        # shellcheck disable=SC2086
        "$k.run" $args $outs || return 1
        for f in "$d/$m".out.*.npy; do
            n=${f##*/$m.out.}
            "$b/tests/npycmp" "$f" "$k.got.$n" || return 1
        done
    }
    if run >"$tmp/out" 2>&1; then
        ok "$m.onnx compiled and run matches PyTorch"
    else
        not_ok "$m.onnx compiled and run matches PyTorch" "$tmp/out"
    fi
done

# 2a. rows narrower than a vector: resblock's four convolutions (7 wide)
# are matmuls over the output positions (im2col), and the 1x1 strided
# one's columns, which only move data, stay a kernel of their own: read
# inside the product, their divisions would run once per multiply-add
if [ "$(grep -c '^[A-Za-z_0-9]*_col\[' "$tmp/k_resblock.te")" -eq 4 ] &&
    "$TEXC" "$d/resblock.onnx" --dump=kernels -o "$tmp/kr" 2>&1 |
    grep -A1 '^kernel down_Conv_col' | grep -q 'not fused: its indices divide and down_Conv_conv reduces over it along its innermost axis'; then
    ok "resblock.onnx: its 7-wide convolutions as im2col matmuls, the columns kept"
else
    { grep '_col\[' "$tmp/k_resblock.te"; "$TEXC" "$d/resblock.onnx" --dump=kernels -o "$tmp/kr" 2>&1; } >"$tmp/out"
    not_ok "resblock.onnx: its 7-wide convolutions as im2col matmuls, the columns kept" "$tmp/out"
fi

# 2b. rows at least a vector long that vectors do not divide (rows.onnx:
# 20 and 18 wide, stride 1): the four convolutions over the padded rows
# laid end to end, each read back at oh * WP + ow
if [ "$(grep -c '^[a-z]*_[a-zC]*_*rows\[' "$tmp/k_rows.te")" -eq 4 ] &&
    grep -q '^b_Conv_conv\[_i0 in 2, _i1 in 16, _i2 in 476\] = sum(_k0 in 16, _k1 in 3, _k2 in 3) b_Conv_rows\[_i0, _k0, _i2 + _k1 \* 48 + _k2 \* 2\]' "$tmp/k_rows.te" &&
    grep -q '^y\[_i0 in 2, _i1 in 4, _i2 in 18, _i3 in 18\] = y_conv\[_i0, _i1, _i2 \* 20 + _i3\]' "$tmp/k_rows.te"; then
    ok "rows.onnx: its convolutions over the padded rows end to end"
else
    not_ok "rows.onnx: its convolutions over the padded rows end to end" "$tmp/k_rows.te"
fi

# ... and the padding before each, with the layer before's ReLU, stays a
# kernel of its own (te_fuse_keeps_select): the columns read each of its
# elements once per window position, and would run its bounds checks,
# and the ReLU, in each of them
if "$TEXC" "$d/resblock.onnx" --dump=kernels -o "$tmp/kr" >"$tmp/out" 2>&1 &&
    grep -A2 '^kernel conv2_Conv_pad: fuses Relu, conv1_Conv' "$tmp/out" |
    grep -q 'not fused: it selects and conv2_Conv_col has 5 times its elements'; then
    ok "resblock.onnx: the paddings kept, the columns plain copies"
else
    not_ok "resblock.onnx: the paddings kept, the columns plain copies" "$tmp/out"
fi

# ... and a convolution of stride 2 whose window is wider (cnn's conv2,
# 3x3, in two groups) reads its padded input through the columns side by
# side (onnx/ops.c deinterleaved), consecutive along the output row
if "$TEXC" "$d/cnn.onnx" --emit-te -o "$tmp/kc" >"$tmp/out" 2>&1 &&
    grep -q '^conv2_Conv_cols\[_i0 in 2, _i1 in 8, _i2 in 10, _i3 in 2, _i4 in 5\] = conv2_Conv_pad\[_i0, _i1, _i2, _i4 \* 2 + _i3\];$' "$tmp/kc.te" &&
    grep -q 'conv2_Conv_cols\[_i0, _i1 / 4 \* 4 + _k0, _i2 \* 2 + _k1, _k2 % 2, _i3 + _k2 / 2\]' "$tmp/kc.te"; then
    ok "cnn.onnx: the 3x3 stride-2 convolution reads its columns side by side"
else
    { cat "$tmp/out"; grep '_cols' "$tmp/kc.te"; } >"$tmp/out2" 2>&1
    not_ok "cnn.onnx: the 3x3 stride-2 convolution reads its columns side by side" "$tmp/out2"
fi

# ... while a view that divides its index and is read as a matmul's row
# operand (the encoder's attention output, [H, S, DH] viewed as [S, D],
# read once a row and k by the output projection) is still fused
if "$TEXC" "$d/encoder17.onnx" --dump=kernels -o "$tmp/ke" >"$tmp/out" 2>&1 &&
    grep -q '^kernel ' "$tmp/out" && ! grep -q 'indices divide and layer_self_attn_Gemm' "$tmp/out" &&
    grep -q 'layer_self_attn_Reshape_3: elementwise, inlined into its only reader' "$tmp/out"; then
    ok "encoder17.onnx: the attention output's view stays fused into the projection"
else
    not_ok "encoder17.onnx: the attention output's view stays fused into the projection" "$tmp/out"
fi

# 2b. a C program of the model (tests/onnx_weights.c, with the
# sanitizers): the weights loaded with one call, NAME_load_weights, then
# NAME_run on the real input alone; --embed-weights the same with nothing
# to load; the loader on damaged and crafted files, and another model's
api() {  # api K [-DEMBEDDED]: K.api, the program built against K.h and K.c
    # shellcheck disable=SC2086
    ${CC:-cc} $KCFLAGS ${2:-} -DMODEL="${1##*/}" -include "$1.h" -I"${1%/*}" \
        "${srcdir:-.}/tests/onnx_weights.c" "$1.c" -lm -o "$1.api"
}
mkdir "$tmp/emb"
for m in mlp encoder17; do
    k=$tmp/k_$m # k.h, k.c and k.weights: texc wrote them in 2.
    if api "$k" >"$tmp/out" 2>&1 &&
        "$k.api" run "$k.weights" "$d/$m.in.x.npy" "$d/$m.out.y.npy" "$tmp/api_$m.npy" >>"$tmp/out" 2>&1 &&
        "$b/tests/npycmp" "$d/$m.out.y.npy" "$tmp/api_$m.npy" >>"$tmp/out" 2>&1; then
        ok "$m: a C program loads k_$m.weights with one call and runs the model: PyTorch's numbers"
    else
        not_ok "$m: a C program loads k_$m.weights with one call and runs the model: PyTorch's numbers" "$tmp/out"
    fi
    e=$tmp/emb/k_$m
    if "$TEXC" "$d/$m.onnx" --embed-weights --harness -o "$e" >"$tmp/out" 2>&1 && [ ! -e "$e.weights" ] &&
        grep -q "^k_${m}_weights \*k_${m}_embedded_weights(void);" "$e.h" && ! grep -q load_weights "$e.h" &&
        api "$e" -DEMBEDDED >>"$tmp/out" 2>&1 &&
        "$e.api" run "$d/$m.in.x.npy" "$d/$m.out.y.npy" "$tmp/emb_$m.npy" >>"$tmp/out" 2>&1 &&
        "$b/tests/npycmp" "$d/$m.out.y.npy" "$tmp/emb_$m.npy" >>"$tmp/out" 2>&1; then
        ok "$m --embed-weights: no weights file; the same program with the embedded weights: PyTorch's numbers"
    else
        not_ok "$m --embed-weights: no weights file; the same program with the embedded weights: PyTorch's numbers" "$tmp/out"
    fi
done
# the harness of --embed-weights takes no weights file
e=$tmp/emb/k_mlp
# shellcheck disable=SC2086
check "mlp --embed-weights --harness: run on its input alone" sh -c "
    ${CC:-cc} $KCFLAGS -I'$tmp/emb' '$e.c' '${e}_harness.c' -lm -o '$e.run' &&
    '$e.run' '$d/mlp.in.x.npy' '$tmp/emb_h.npy' && '$b/tests/npycmp' '$d/mlp.out.y.npy' '$tmp/emb_h.npy'"
# the loader on hostile files (its TAP lines, renumbered)
mkdir "$tmp/hw"
"$tmp/k_mlp.api" hostile "$tmp/k_mlp.weights" "$tmp/hw" >"$tmp/hostile" 2>&1
rc=$?
relay_tap "$tmp/hostile" "k_mlp_load_weights: "
[ $rc -eq 0 ] || not_ok "onnx_weights hostile exited $rc" "$tmp/hostile"
# another model's weights, given to the harness
"$tmp/k_mlp.run" "$d/mlp.in.x.npy" "$tmp/k_cnn.weights" "$tmp/other.npy" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 2 ] && [ ! -e "$tmp/other.npy" ] &&
    grep -qF "harness: $tmp/k_cnn.weights: entry 0: the program takes no weight called 'conv1_Conv_B'" "$tmp/out"; then
    ok "mlp's harness given cnn's weights: refused, saying why"
else
    echo "exit $rc" >>"$tmp/out"
    not_ok "mlp's harness given cnn's weights: refused, saying why" "$tmp/out"
fi

# 2c. --target cuda (cuda_models, above)
cuda_models

# 3. --emit-te: names from the model, weights as const inputs, GELU as gelu;
# the program evaluates to the model's numbers with the weights beside it,
# and compiles to the same C
te=$tmp/k_mlp.te
if grep -q '^input fc1_weight : const f32\[48, 64\];' "$te" &&
    grep -q '^fc1_Gemm_mm\[_i0 in 3, _i1 in 48\] = sum(_k0 in 64) ' "$te" &&
    grep -q '= gelu(fc2_Gemm\[_i0, _i1\]);' "$te" && ! grep -q erf "$te" &&
    ! grep -v '^ *#' "$te" | grep -q 'onnx::\|output_0' && grep -q '^output y;' "$te"; then
    ok "--emit-te: stage names from the model, weights const, the erf chain as gelu"
else
    not_ok "--emit-te: stage names from the model, weights const, the erf chain as gelu" "$te"
fi
wargs=
for n in $(sed -n 's/^input \([A-Za-z0-9_]*\) : const .*/\1/p' "$te"); do
    wargs="$wargs --input $n=$tmp/k_mlp.$n.npy"
done
# shellcheck disable=SC2046,SC2086
check "the emitted program with its weights evaluates to PyTorch's numbers" \
    sh -c "'$TEXC' '$te' --eval $(inputs mlp) $wargs -o '$tmp/te_ev' && \
           '$b/tests/npycmp' '$d/mlp.out.y.npy' '$tmp/te_ev.y.npy'"
mkdir "$tmp/te" "$tmp/model"
"$TEXC" "$te" -o "$tmp/te/m" 2>"$tmp/out"
"$TEXC" "$d/mlp.onnx" -o "$tmp/model/m" 2>>"$tmp/out"
# (the comments name the source file; the model's C has its weights'
# loader too, at the end, and the headers that uses)
sed '/generated by texc/d; /source:/d; /^#include <\(errno\|stdarg\|stdio\)\.h>$/d' \
    "$tmp/model/m.c" >"$tmp/a.c"
sed '/generated by texc/d; /source:/d' "$tmp/te/m.c" >"$tmp/b.c"
n=$(wc -c <"$tmp/b.c")
if [ -s "$tmp/b.c" ] && head -c "$n" "$tmp/a.c" | cmp -s - "$tmp/b.c" &&
    tail -c +$((n + 1)) "$tmp/a.c" | grep -q '^m_weights \*m_load_weights(const char \*path'; then
    ok "the emitted program compiles to the model's C, the model's with its weights' loader"
else
    diff "$tmp/a.c" "$tmp/b.c" | head -20 >"$tmp/out"
    not_ok "the emitted program compiles to the model's C, the model's with its weights' loader" "$tmp/out"
fi

# 4. symbolic dims: -D binds them
check "-D batch=5 binds mlp_dyn's symbolic batch" \
    sh -c "'$TEXC' '$d/mlp_dyn.onnx' -D batch=5 --eval --input x='$d/mlp_dyn.in.x.npy' -o '$tmp/dyn' && \
           '$b/tests/npycmp' '$d/mlp_dyn.out.y.npy' '$tmp/dyn.y.npy'"

# fails DESCRIPTION MESSAGE FILE ARGS...: texc FILE ARGS exits 1 with
# "FILE: error: MESSAGE..." and writes nothing
fails() {
    desc=$1 msg=$2
    shift 2
    rm -rf "$tmp/none" && mkdir "$tmp/none"
    "$TEXC" "$@" -o "$tmp/none/out" >"$tmp/out" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && grep -qF -- "$msg" "$tmp/out" && [ -z "$(ls "$tmp/none")" ]; then
        ok "$desc"
    else
        echo "exit $rc; wanted: $msg" >>"$tmp/out"
        not_ok "$desc" "$tmp/out"
    fi
}
fails "a symbolic dim without -D" \
    "mlp_dyn.onnx: error: graph input 'x': dim 0 is 'batch', a size the model leaves open; give it one with -D batch=VALUE, or keep it a run-time size in a range with -D batch=LO..HI" \
    "$d/mlp_dyn.onnx"
fails "-D naming no dim of the model" "-D nosuch: the model's inputs have no dim called 'nosuch' (they have batch)" \
    "$d/mlp_dyn.onnx" -D batch=2 -D nosuch=3
fails "-D batch=0" "'x' would have dim 0 of size 0" "$d/mlp_dyn.onnx" -D batch=0 --eval
fails "an empty input a stage reads" \
    "bad_empty.onnx: error: graph input 'x' is empty (dim 0 is 0); texc takes no empty tensors" \
    "$d/bad_empty.onnx" --eval

# 4b. run-time dims: -D NAME=LO..HI keeps a symbolic dim one; the model
# compiles once and runs at every size of the range (tests/onnx/
# gen_symdims.py: PyTorch's outputs at the range's ends and odd sizes)
# rt_model NAME DIMS AXES LO HI SIZES DEFINES...: DIMS the run-time dims
# ("batch seq"), AXES their axes in x ("1 2"), LO..HI the first's range,
# SIZES the files' tags (the dims' sizes joined by _): --emit-te declares
# the first dim; --eval at each size (read from the input file); one
# build, its harness (NAME=SIZE first) and NAME_run (tests/onnx_weights.c)
# at each size, and the first dim at LO - 1 and HI + 1 refused with
# nothing written
rt_model() {
    m=$1 dims=$2 axes=$3 lo=$4 hi=$5 sizes=$6
    shift 6
    k=$tmp/rt_$m
    dim=${dims%% *}
    if "$TEXC" "$d/$m.onnx" "$@" --emit-te -o "$k" >"$tmp/out" 2>&1 &&
        grep -q "^dim $dim in $lo\.\.$hi" "$k.te" && grep -q "^input x : f32\[.*$dim" "$k.te"; then
        ok "$m.onnx $*: --emit-te declares 'dim $dim in $lo..$hi' and x's shape uses it"
    else
        not_ok "$m.onnx $*: --emit-te declares 'dim $dim in $lo..$hi' and x's shape uses it" "$tmp/out"
    fi
    : >"$tmp/out"
    for s in $sizes; do
        "$TEXC" "$d/$m.onnx" "$@" --eval --input "x=$d/$m.in.x.$s.npy" -o "$k.ev$s" >>"$tmp/out" 2>&1 &&
            "$b/tests/npycmp" "$d/$m.out.y.$s.npy" "$k.ev$s.y.npy" >>"$tmp/out" 2>&1 || break
        s=
    done
    if [ -z "$s" ]; then
        ok "$m.onnx --eval at sizes $sizes matches PyTorch"
    else
        not_ok "$m.onnx --eval at sizes $sizes matches PyTorch" "$tmp/out"
    fi
    run() {
        "$TEXC" "$d/$m.onnx" "$@" --harness --log=/dev/null -o "$k" || return 1
        params=$(for n in $dims; do printf 'int64_t %s, ' "$n"; done)
        grep -qF "int rt_${m}_run(const rt_${m}_weights *weights, ${params}const float *x, float *y);" "$k.h" || return 1
        # shellcheck disable=SC2086
        ${CC:-cc} $KCFLAGS -I"$tmp" "$k.c" "${k}_harness.c" -lm -o "$k.run" || return 1
        axis2=
        [ "${axes#* }" != "$axes" ] && axis2=-DRTDIM_AXIS2=${axes#* }
        # shellcheck disable=SC2086
        ${CC:-cc} $KCFLAGS -DMODEL="rt_$m" -DRTDIM_AXIS="${axes%% *}" $axis2 -DRTDIM_LO="$lo" \
            -DRTDIM_HI="$hi" -include "$k.h" -I"$tmp" "${srcdir:-.}/tests/onnx_weights.c" "$k.c" \
            -lm -o "$k.api" || return 1
        for s in $sizes; do
            # the harness's sizes: batch=2 seq=7 from the tag 2_7
            args=$(echo "$s" | tr _ ' ' | { read -r s1 s2; set -- $dims; printf '%s=%s' "$1" "$s1"
                [ -n "${s2:-}" ] && printf ' %s=%s' "$2" "$s2"; })
            # shellcheck disable=SC2086
            "$k.run" $args "$d/$m.in.x.$s.npy" "$k.weights" "$k.got$s.npy" || return 1
            "$b/tests/npycmp" "$d/$m.out.y.$s.npy" "$k.got$s.npy" || return 1
            "$k.api" run "$k.weights" "$d/$m.in.x.$s.npy" "$d/$m.out.y.$s.npy" "$k.api$s.npy" || return 1
            "$b/tests/npycmp" "$d/$m.out.y.$s.npy" "$k.api$s.npy" || return 1
        done
        # (the harness's status for sizes its check refuses: 3)
        # shellcheck disable=SC2086
        "$k.run" $(echo "$args" | sed "s/^$dim=[0-9]*/$dim=$((hi + 1))/") "$d/$m.in.x.$s.npy" \
            "$k.weights" "$k.big.npy"
        [ $? -eq 3 ] && [ ! -e "$k.big.npy" ]
    }
    if run "$@" >"$tmp/out" 2>&1; then
        ok "$m.onnx built once: its harness and rt_${m}_run at sizes $sizes match PyTorch; $dim $((lo - 1)) and $((hi + 1)) refused"
    else
        not_ok "$m.onnx built once: its harness and rt_${m}_run at sizes $sizes match PyTorch; $dim $((lo - 1)) and $((hi + 1)) refused" "$tmp/out"
    fi
}
rt_model mlp_rt batch 0 1 64 "1 2 7 13 64" -D batch=1..64=8
# the attention's [seq * batch, 16] view kept in its rows' dims
rt_model encoder_rt "batch seq" "0 1" 1 4 "1_1 1_16 2_5 3_7 4_16 4_1" -D batch=1..4 -D seq=1..16=8

fails "a size outside the range at --eval" \
    "mlp_rt.in.x.1.npy: dim 0 is 1, outside the range 2..64 of 'batch' (-D batch=2..64)" \
    "$d/mlp_rt.onnx" -D batch=2..64 --eval --input "x=$d/mlp_rt.in.x.1.npy"
fails "the size of a run-time batch as a value (a mean over the batch)" \
    "centered_rt.onnx: error: node '/ReduceMean' (ReduceMean): computes with the size of 'batch' as a value, not only as a shape, which a run-time dim cannot be; bind it with -D batch=VALUE" \
    "$d/centered_rt.onnx" -D batch=1..8
fails "a weight whose shape is the run-time dim's (arange(x.size(0)) folded)" \
    "ramp_rt.onnx: error: the declaration 'input Mul : const f32[1009, 4]': a weight's shape varies with the size of 'n', and weights are fixed when compiling; bind it with -D n=VALUE" \
    "$d/ramp_rt.onnx" -D n=1..8
fails "learned positions of torch.arange(seq): the probe's size does not fit, and the note says why" \
    "positions_rt.onnx: note: texc imports a model with run-time dims at large sizes standing for them (here seq = 1009); a model that cannot take those cannot keep them at run time: bind them with -D seq=VALUE" \
    "$d/positions_rt.onnx" -D seq=1..16
fails "a symbolic dim left open names the range form too" \
    "give it one with -D batch=VALUE, or keep it a run-time size in a range with -D batch=LO..HI" \
    "$d/mlp_rt.onnx"
# a malformed range is a usage error (exit 2), as -D M=abc is
for bad in "batch=1.." "batch=..4" "batch=a..4" "batch=0..4" "batch=5..4" "batch=1..4=9" "batch=1..4=x"; do
    rm -rf "$tmp/none" && mkdir "$tmp/none"
    "$TEXC" "$d/mlp_rt.onnx" -D "$bad" -o "$tmp/none/out" >"$tmp/out" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "texc: -D $bad: " "$tmp/out" && [ -z "$(ls "$tmp/none")" ]; then
        ok "-D $bad: refused, saying why"
    else
        echo "exit $rc" >>"$tmp/out"
        not_ok "-D $bad: refused, saying why" "$tmp/out"
    fi
done
"$TEXC" -D M=1..64 "${srcdir:-.}/samples/softmax.te" -o "$tmp/none/out" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -qF "texc: -D M=1..64: a range keeps an ONNX model's symbolic dim at run time" "$tmp/out"; then
    ok "-D M=1..64 on a .te program: a usage error, saying where ranges go"
else
    echo "exit $rc" >>"$tmp/out"
    not_ok "-D M=1..64 on a .te program: a usage error, saying where ranges go" "$tmp/out"
fi

# 4c. PyTorch's layer norm: at opset 14 the chain ReduceMean, Sub, Pow,
# ReduceMean, Add, Sqrt, Div, Mul, Add; at 17 LayerNormalization.  Both
# reach the form a layer norm written in te gets (samples/layernorm.te):
# four kernels (the mean's sum, the deviation, the sum of squares, the
# normalization), lowered by the default schedule to one parallel loop
# over the rows with both row reductions computed inside it; the two
# opsets' loop nests are the same, and both give PyTorch's numbers
# compiled and evaluated
loops() {  # loops MODEL: the lowered loop nest's statement kinds, one a line
    "$TEXC" "$d/$1.onnx" --dump=loops -o "$tmp/ln_$1" | sed -n '/^# lowered/,$p' |
        sed -n 's/^\( *\)\(parallel\|for\|vectorized\|local\) .*/\1\2/p'
}
for o in 14 17; do
    m=layernorm$o
    "$TEXC" "$d/$m.onnx" --dump=kernels -o "$tmp/ln_$m" >"$tmp/ln_$m.kernels" 2>&1
    loops $m >"$tmp/ln_$m.loops" 2>&1
    if [ "$(grep -c '^kernel' "$tmp/ln_$m.kernels")" = 4 ] &&
        [ "$(grep -c '^[a-z]' "$tmp/ln_$m.loops")" = 1 ] && grep -q '^parallel$' "$tmp/ln_$m.loops" &&
        [ "$(grep -c 'vectorized' "$tmp/ln_$m.loops")" = 3 ]; then
        ok "$m.onnx: 4 kernels, one parallel loop over the rows holding both row reductions"
    else
        cat "$tmp/ln_$m.loops" >>"$tmp/ln_$m.kernels"
        not_ok "$m.onnx: 4 kernels, one parallel loop over the rows holding both row reductions" "$tmp/ln_$m.kernels"
    fi
    check "$m.onnx: --eval and the compiled model match PyTorch" sh -c "
        '$TEXC' '$d/$m.onnx' --eval --input x='$d/$m.in.x.npy' -o '$tmp/ln_$m.ev' &&
        '$b/tests/npycmp' '$d/$m.out.y.npy' '$tmp/ln_$m.ev.y.npy' &&
        '$TEXC' '$d/$m.onnx' --harness -o '$tmp/ln_$m' &&
        ${CC:-cc} $KCFLAGS -I'$tmp' '$tmp/ln_$m.c' '$tmp/ln_${m}_harness.c' -lm -o '$tmp/ln_$m.run' &&
        '$tmp/ln_$m.run' '$d/$m.in.x.npy' '$tmp/ln_$m.weights' '$tmp/ln_$m.got.npy' &&
        '$b/tests/npycmp' '$d/$m.out.y.npy' '$tmp/ln_$m.got.npy'"
done
if cmp -s "$tmp/ln_layernorm14.loops" "$tmp/ln_layernorm17.loops"; then
    ok "layer norm: the opset 14 chain and LayerNormalization lower to the same loop nest"
else
    diff "$tmp/ln_layernorm14.loops" "$tmp/ln_layernorm17.loops" >"$tmp/out"
    not_ok "layer norm: the opset 14 chain and LayerNormalization lower to the same loop nest" "$tmp/out"
fi

# 5. every unsupported op, in one error
fails "unsupported ops: one error lists them all" \
    "unsupported.onnx: error: the model uses ops texc does not convert (opset 14):" "$d/unsupported.onnx"
if grep -q "node '/CumSum': CumSum" "$tmp/out" && grep -q "node '/ArgMax': ArgMax" "$tmp/out" &&
    grep -q "node '/TopK': TopK" "$tmp/out" && [ "$(grep -c error "$tmp/out")" -eq 1 ]; then
    ok "unsupported ops: each with its node's name"
else
    not_ok "unsupported ops: each with its node's name" "$tmp/out"
fi

# 6. hostile models
fails "a missing initializer" \
    "bad_missing.onnx: error: node 'add' (Add): input 'w' is not an output of any node, an initializer or a graph input" \
    "$d/bad_missing.onnx"
fails "a cycle" "bad_cycle.onnx: error: node 'first' (Relu): is on a cycle" "$d/bad_cycle.onnx"
fails "a negative dim" "bad_negdim.onnx: error: tensor 'w': dim 0 is -4" "$d/bad_negdim.onnx"
fails "a huge dim" "bad_hugedim.onnx: error: 'x' would have more than 2^40 elements" "$d/bad_hugedim.onnx"
fails "a shape from run-time data" \
    "bad_runtime_shape.onnx: error: node 'reshape' (Reshape): its shape 's' depends on run-time data" \
    "$d/bad_runtime_shape.onnx"
fails "external data above the model's folder" \
    "bad_extdotdot.onnx: error: tensor 'w': external data location '../secret.bin' leaves the model's folder" \
    "$d/bad_extdotdot.onnx"
fails "external data at an absolute path" \
    "bad_extabs.onnx: error: tensor 'w': external data location '/etc/passwd' is an absolute path" \
    "$d/bad_extabs.onnx"
# --embed-weights above its limit: big_ext's [1025, 1024] f32 weight, as
# external data written here (zeros), not committed
mkdir "$tmp/big"
cp "$d/big_ext.onnx" "$tmp/big/"
head -c 4198400 /dev/zero >"$tmp/big/big_ext.bin"
fails "--embed-weights of weights over 4 MiB" \
    "big_ext.onnx: error: --embed-weights: the model's weights take 4198400 bytes, more than the 4194304 (4 MiB) texc puts in C" \
    "$tmp/big/big_ext.onnx" --embed-weights
"$TEXC" "${srcdir:-.}/samples/softmax.te" --embed-weights -o "$tmp/none/x" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--embed-weights embeds an ONNX model's weights" "$tmp/out" &&
    [ -z "$(ls "$tmp/none")" ]; then
    ok "--embed-weights of a .te file: a usage error"
else
    not_ok "--embed-weights of a .te file: a usage error" "$tmp/out"
fi
check "external data beside the model" \
    sh -c "'$TEXC' '$d/extdata.onnx' --eval --input x='$d/extdata.in.x.npy' -o '$tmp/ext' && \
           '$b/tests/npycmp' -s 0 '$d/extdata.out.y.npy' '$tmp/ext.y.npy'"
head -c 1000 "$d/mlp.onnx" >"$tmp/cut.onnx"
fails "a truncated file" "cut.onnx: error: a field of" "$tmp/cut.onnx"
: >"$tmp/empty.onnx"
fails "an empty file" "empty.onnx: error: the file is empty" "$tmp/empty.onnx"
"$TEXC" "${srcdir:-.}/samples/softmax.te" --emit-te -o "$tmp/none/x" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--emit-te writes the program an ONNX model imports" "$tmp/out"; then
    ok "--emit-te of a .te file: a usage error"
else
    not_ok "--emit-te of a .te file: a usage error" "$tmp/out"
fi
# every prefix and bit flips, in process (its TAP lines, renumbered)
"$b/tests/onnx_hostile" -f 1000 "$d/mlp.onnx" "$d/tiny.onnx" "$d/encoder14.onnx" \
    "$d/encoder17.onnx" "$d/cnn.onnx" "$d/ops.onnx" >"$tmp/hostile" 2>&1
rc=$?
relay_tap "$tmp/hostile"
[ $rc -eq 0 ] || not_ok "onnx_hostile exited $rc" "$tmp/hostile"

# 7. optional: python3-onnx's checker agrees the committed models are valid
py=
for p in python3 /usr/bin/python3; do
    # (from $tmp: texc's own onnx/ folder would be the module in the tree)
    if (cd "$tmp" && "$p" -c 'import onnx.checker') 2>/dev/null; then py=$p; break; fi
done
if [ -n "$py" ]; then
    check "onnx.checker accepts PyTorch's models" env -C "$tmp" "$py" -c "
import onnx, sys
for m in ['mlp', 'mlp_dyn', 'tiny', 'encoder14', 'encoder17', 'cnn', 'ops', 'ops11', 'unsupported',
          'semantics']:
    onnx.checker.check_model(onnx.load('$d/' + m + '.onnx'))"
else
    skip "onnx.checker accepts PyTorch's models" "no Python with the onnx module (python3-onnx)"
fi

done_testing

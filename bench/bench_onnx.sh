#!/bin/sh
# bench_onnx.sh — make bench-onnx: real ONNX models through texc, against
# PyTorch eager (issue 19).
#
#   bench_onnx.sh TEXC SRCDIR DIR 'CC FLAGS' PYTHON 'MODELS' 'OPSETS' 'THREADS' MIN_TIME OUT [small]
#
# 1. PYTHON bench/onnx_models.py export: each model of MODELS exported at
#    each opset of OPSETS into DIR (DIR/NAME_opN.onnx), with its input and
#    PyTorch's f32 output;
# 2. texc DIR/NAME_opN.onnx -o DIR/NAME_opN (the default schedule, no
#    tuning log: XDG_CACHE_HOME points into DIR), then CC FLAGS builds
#    bench/bench_onnx.c with it, the real input's and the output's element
#    counts taken from NAME_opN.h;
# 3. each build run once per thread count of THREADS (bench_onnx.c says how
#    it times), one process each;
# 4. PYTHON bench/onnx_models.py torch: PyTorch eager on the same models,
#    in its best configuration (onnx_models.py says which it tries);
# 5. PYTHON bench/onnx_models.py report: every texc output checked against
#    PyTorch's, the Markdown table to stdout and OUT.
# A model texc does not compile, a build or a run that fails, is a row
# that says so (DIR/NAME_opN.*.log hold the messages), not a stop; the
# exit status is the report's: 1 when any row failed or mismatched.
# An eleventh argument 'small' exports --small shapes (a smoke run).
set -u
if [ $# -lt 10 ]; then
    echo "usage: $0 TEXC SRCDIR DIR 'CC FLAGS' PYTHON 'MODELS' 'OPSETS' 'THREADS' MIN_TIME OUT [small]" >&2
    exit 2
fi
texc=$1 src=$2 dir=$3 cc=$4 py=$5 models=$6 opsets=$7 threads=$8 min_time=$9
shift 9
out=$1 small=
if [ $# -ge 2 ] && [ "$2" = small ]; then small=--small; fi
common="--dir $dir --models '$models' --opsets '$opsets' --threads '$threads' $small"

rm -rf "$dir" && mkdir -p "$dir" || exit 1
XDG_CACHE_HOME=$dir/no-cache
export XDG_CACHE_HOME
echo "$("$texc" --version | head -n 1), kernels built with $cc" > "$dir/texc_about.txt"
cat /proc/loadavg > "$dir/load_before.txt" 2>/dev/null || echo unknown > "$dir/load_before.txt"
eval "\"$py\" \"$src/bench/onnx_models.py\" export $common" || exit 1
# the models exported (ResNet-18 needs torchvision)
models=$(cat "$dir/models.txt")
common="--dir $dir --models '$models' --opsets '$opsets' --threads '$threads' $small"

# The element count of NAME.h's one real input (KIND input) or one output
# (KIND output), from its comment ` * input  x : f32[1, 128, 768]`;
# nothing when it has none or several.
elems() {
    sed -n "s/^ \\* $1  *[A-Za-z0-9_]* : f32\\[\\(.*\\)\\]\$/\\1/p" "$2" |
        awk -F', *' '{ n = 1; for (i = 1; i <= NF; i++) n *= $i; c++ } END { if (c == 1) print n }'
}

# The first line of LOG that says error, else its last line, made short.
first_error() {
    { grep -m 1 'error' "$1" || tail -n 1 "$1"; } | cut -c 1-200
}

rows=$dir/texc_rows.txt
: > "$rows"
for m in $models; do
    for op in $opsets; do
        name=${m}_op$op
        base=$dir/$name
        why=
        echo "bench_onnx.sh: texc $base.onnx" >&2
        start=$(date +%s)
        "$texc" "$base.onnx" -o "$base" 2> "$base.texc.log"
        st=$?
        if [ $st -ne 0 ]; then
            why="texc failed (exit $st): $(first_error "$base.texc.log")"
        else
            in_elems=$(elems input "$base.h") out_elems=$(elems output "$base.h")
            if [ -z "$in_elems" ] || [ -z "$out_elems" ]; then
                why="$name.h: not one f32 input and one f32 output"
            elif ! $cc -I"$src/bench" -include "$base.h" -DBENCH_ONNX_MODEL="$name" \
                    -DBENCH_ONNX_IN_ELEMS="$in_elems" -DBENCH_ONNX_OUT_ELEMS="$out_elems" \
                    -o "$base.bench" "$src/bench/bench_onnx.c" "$src/bench/measure.c" "$base.c" -lm \
                    2> "$base.cc.log"; then
                why="the C compiler failed on $name.c: $(first_error "$base.cc.log")"
            fi
        fi
        echo "bench_onnx.sh: $name: texc and the C compiler took $(($(date +%s) - start)) s" >&2
        for t in $threads; do
            if [ -z "$why" ]; then
                echo "bench_onnx.sh: $name, $t thread(s)" >&2
                OMP_NUM_THREADS=$t "$base.bench" "$base.weights" "$dir/$m.in.f32" "${base}_t$t.out.f32" \
                    "$t" "$min_time" > "$base.t$t.txt" 2> "$base.t$t.log"
                st=$?
                if [ $st -eq 0 ]; then
                    echo "texc $m $op $t $(cat "$base.t$t.txt")" >> "$rows"
                else
                    echo "fail $m $op $t the run failed (exit $st): $(first_error "$base.t$t.log")" >> "$rows"
                fi
            else
                echo "fail $m $op $t $why" >> "$rows"
            fi
        done
    done
done

eval "\"$py\" \"$src/bench/onnx_models.py\" torch $common --min-time $min_time" || exit 1
cat /proc/loadavg > "$dir/load_after.txt" 2>/dev/null || echo unknown > "$dir/load_after.txt"
eval "\"$py\" \"$src/bench/onnx_models.py\" report $common --min-time $min_time --out \"$out\""

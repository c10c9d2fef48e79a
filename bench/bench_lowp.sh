#!/bin/sh
# bench_lowp.sh — make bench-lowp (issue 20): builds bench/bench_lowp.c
# once per shape with texc's fp32, bf16 and u8 x i8 matmul_gelu of that
# shape, runs it on each thread count, and writes the Markdown section
# OUT: one table (a row per shape, threads and implementation), then the
# issue's targets judged on this run.
#
#   bench_lowp.sh TEXC SRCDIR GENDIR "CC CFLAGS" DNNL_LIBS SBGEMM_PEER \
#       "THREADS" MIN_TIME OUT MxKxN...
#
# SBGEMM_PEER is bench/sbgemm_peer, or empty where configure found no
# cblas_sbgemm.  The exit status is 1 where a build failed, a row's
# output was wrong or a peer failed; OUT is written either way.
set -u
texc=$1 srcdir=$2 gen=$3 cc=$4 dnnl_libs=$5 sbgemm=$6 threads=$7 min_time=$8 out=$9
shift 9
mkdir -p "$gen" || exit 1
rows=$gen/rows.md targets=$gen/targets.md
: >"$rows"
: >"$targets"
st=0
for shape in "$@"; do
    m=${shape%%x*} rest=${shape#*x}
    k=${rest%%x*} n=${rest#*x}
    g=$gen/$shape
    mkdir -p "$g"
    # shellcheck disable=SC2086 # $cc and $dnnl_libs split on purpose
    if ! { "$texc" -D M="$m" -D K="$k" -D N="$n" "$srcdir/samples/matmul_gelu.te" -o "$g/fp" &&
           "$texc" -D M="$m" -D K="$k" -D N="$n" "$srcdir/bench/lowp_bf16.te" -o "$g/bf" &&
           "$texc" -D M="$m" -D K="$k" -D N="$n" "$srcdir/bench/lowp_u8i8.te" -o "$g/iu" &&
           $cc -std=gnu11 -DBENCH_HAVE_DNNL -I"$srcdir/bench" \
               -DLOWP_M="$m" -DLOWP_K="$k" -DLOWP_N="$n" -DLOWP_FP=fp -DLOWP_BF=bf -DLOWP_IU=iu \
               -include "$g/fp.h" -include "$g/bf.h" -include "$g/iu.h" \
               -o "$g/bench_lowp" "$srcdir/bench/bench_lowp.c" "$srcdir/bench/measure.c" \
               "$g/fp.c" "$g/bf.c" "$g/iu.c" $dnnl_libs -lm; }; then
        echo "bench_lowp.sh: $shape: the benchmark does not build" >&2
        echo "| $m×$k×$n | — | — | — | — | — | — | — | failed | the benchmark did not build |" >>"$rows"
        st=1
        continue
    fi
    for t in $threads; do
        echo "bench-lowp: $shape, $t thread(s)" >&2
        # shellcheck disable=SC2086 # $sbgemm is one word or none
        OMP_NUM_THREADS=$t "$g/bench_lowp" "$min_time" "$rows" "$targets" $sbgemm || st=1
    done
done

load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
{
    echo "## Low precision: bf16 and u8×i8 matmul_gelu (issue 20)"
    echo
    echo "z = gelu(x @ w * 0.125 + b) with x and w bf16 (an f32 sum), and z = gelu(sx * f32(x @ w) + b) with x u8 and w i8 (an exact i32 sum), against texc's own fp32 (samples/matmul_gelu.te) and the peers.  Written by \`make bench-lowp\` (bench/bench_lowp.sh, bench/bench_lowp.c); \`make bench\` appends it here."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); CPU: ${cpu:-?}, $(nproc 2>/dev/null || echo ?) logical CPUs; load average after the run: ${load:-?}"
    echo "- compiler: $(${cc%% *} --version 2>/dev/null | head -1); texc kernels and glue: \`${cc#* }\`"
    echo "- texc: bf16 and u8×i8 under the default schedule (vdpbf16ps, vpdpbusd where the CPU has them), fp32 under matmul_gelu.te's schedule; weights prepacked once, untimed"
    echo "- oneDNN: matmul primitives, bf16 × bf16 → f32 and u8 × s8 → f32 (s32 sum), output scale, bias and gelu_erf post-op; weights reordered once, untimed"
    if [ -n "$sbgemm" ]; then
        echo "- OpenBLAS bf16: cblas_sbgemm (cblas_sbgemv at M = 1) with alpha 0.125 on w as given, then the fp32 peer's bias + GELU pass through libmvec (bench/gelu_mvec.c), in a process of its own (bench/sbgemm_peer.c) under OPENBLAS_CORETYPE SkylakeX and Cooperlake and OMP_WAIT_POLICY PASSIVE and ACTIVE, the fastest kept (the row's notes give all four)"
    else
        echo "- OpenBLAS bf16: not run: the OpenBLAS the peer links has no cblas_sbgemm (configure checks that it links: Debian 12's 0.3.21, for one, declares it in cblas.h but is built without it)"
    fi
    echo "- method: inputs uniform in [-1, 1) rounded to bf16 (u8 and i8: scaled from the same values), fixed seeds; warm caches; the rows of texc and oneDNN timed in turns (five rounds, the order rotated each round, so that a drifting clock favours none), the median of each row's separately timed calls (>= BENCH_MIN_TIME = $min_time s in all); GFLOP/s counts 2·M·N·K operations (GOP/s for u8×i8)"
    echo "- check: bf16 rows against texc fp32 on the same bf16 values, u8×i8 against each other, max|z − ref| / max|ref| <= 1e-4; \"texc bf16 ÷ this\", \"texc u8×i8 ÷ this\": this row's median over texc's (> 1: texc faster)"
    echo
    echo "| M×K×N | thr | impl | median ms | GFLOP/s | texc bf16 ÷ this | texc u8×i8 ÷ this | max rel err | check | notes |"
    echo "|---|--:|---|--:|--:|--:|--:|---|---|---|"
    cat "$rows"
    echo
    echo "### Issue 20's targets, judged on this run"
    echo
    if [ -s "$targets" ]; then
        cat "$targets"
    else
        echo "- not judged: none of the issue's shapes (512×768×3072, 1024×1024×1024, 64×768×3072, 1×768×3072) ran"
    fi
    echo
} >"$out"
cat "$out"
exit $st

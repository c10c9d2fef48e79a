#!/bin/sh
# run.sh — runs the fuzz targets built by `make fuzz-build`, FUZZ_JOBS at a
# time, each for FUZZ_TIME seconds on its corpus, and prints one line per
# target: executions, coverage (libFuzzer's edges "cov" and features
# "ft"), the corpus size, and what it found (crash-*, leak-*, timeout-*,
# oom-* files).  Everything a run writes stays in FUZZ_WORK (default
# $TMPDIR/texc-fuzz): TARGET.log, TARGET.new/ (the inputs it added) and
# TARGET.found/ (the findings).  With FUZZ_MERGE=1 the new inputs that add
# coverage are merged into the corpus in the tree (libFuzzer -merge=1).
# Exit status 1 if any target found anything.
#
#   sh tests/fuzz/run.sh compile npy        # two targets only
set -u
srcdir=${srcdir:-.}
builddir=${builddir:-.}
time=${FUZZ_TIME:-60}
jobs=${FUZZ_JOBS:-2}
merge=${FUZZ_MERGE:-0}
work=${FUZZ_WORK:-${TMPDIR:-/tmp}/texc-fuzz}
mkdir -p "$work" || exit 1
[ $# -gt 0 ] || set -- frontend compile diff npy log cli onnx

# corpus TARGET: its corpus in the tree
corpus() {
    case $1 in
    frontend) echo "$srcdir/tests/fuzz/corpus" ;;
    *) echo "$srcdir/tests/fuzz/corpus-$1" ;;
    esac
}

# flags TARGET: its limits (inputs of a program, a log, an argument list)
flags() {
    case $1 in
    frontend|compile) echo "-max_len=8192 -timeout=20" ;;
    diff) echo "-max_len=4096 -timeout=120" ;;
    npy) echo "-max_len=4096 -timeout=10" ;;
    log) echo "-max_len=65536 -timeout=20" ;;
    cli) echo "-max_len=1024 -timeout=60" ;;
    onnx) echo "-max_len=32768 -timeout=20" ;;
    esac
}

run_one() {
    t=$1
    bin=$builddir/tests/fuzz/fuzz_$t
    if [ ! -x "$bin" ]; then
        echo "$t: no $bin (run make fuzz-build)"
        return 1
    fi
    start=$(date +%s)
    rm -rf "$work/$t.new" "$work/$t.found"
    mkdir -p "$work/$t.new" "$work/$t.found"
    # shellcheck disable=SC2046
    "$bin" $(flags "$t") -max_total_time="$time" -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="$work/$t.found/" "$work/$t.new" "$(corpus "$t")" \
        >"$work/$t.log" 2>&1
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$work/$t.log" | tail -1)
    cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
    # (a slow-unit-* file is the slowest input so far, not a finding)
    found=$(ls "$work/$t.found" | grep -v '^slow-unit-' | wc -l)
    echo "$t: ${execs:-?} executions in $(($(date +%s) - start)) s, cov ${cov:-?} ft ${ft:-?}, corpus ${corp:-?}, findings $found ($work/$t.log)"
    if [ "$merge" = 1 ] && [ "$found" -eq 0 ]; then
        # shellcheck disable=SC2046
        "$bin" $(flags "$t") -merge=1 "$(corpus "$t")" "$work/$t.new" >>"$work/$t.log" 2>&1
    fi
    [ "$found" -eq 0 ]
}

# JOBS lanes, each running its share of the targets one after another
status=0
lane=0
while [ $lane -lt "$jobs" ]; do
    (
        k=0
        for t in "$@"; do
            if [ $((k % jobs)) -eq $lane ]; then
                run_one "$t" >"$work/$t.summary"
                echo $? >"$work/$t.status"
            fi
            k=$((k + 1))
        done
    ) &
    lane=$((lane + 1))
done
wait
for t in "$@"; do
    cat "$work/$t.summary"
    [ "$(cat "$work/$t.status")" = 0 ] || status=1
done
exit $status

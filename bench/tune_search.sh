#!/bin/sh
# tune_search.sh — the guided search against the exhaustive one, measured
# (issue #6: the guided search gets within 5% of the best configuration
# of its space).  A benchmark, not a test: it prints numbers and passes.
#
#   bench/tune_search.sh TEXC [FILE.te [OUTDIR]]
#
# FILE.te (default bench/tune_search.te, a 256-point knob space of
# matmul_gelu at M=256 N=768 K=256) is tuned twice, each run with a log
# of its own in OUTDIR (default bench/tune_search.out):
#   exhaustive  --trials 100000 --time-budget 100000: every point of the
#               space is measured;
#   guided      the default budget (200 trials, 300 s, early stopping):
#               the space is larger than the trials, so the tuner ranks
#               candidates with its cost model.
# Both use --seed 1 and every core for builds.  Printed: each run's best
# (configuration, time, candidates measured, wall time), and two ratios
# of guided best time to exhaustive best time:
#   as measured   the two runs' own best times (includes the noise of
#                 measuring twice on a machine others may be using);
#   same run      the guided winner's time as the exhaustive run measured
#                 it, over the exhaustive best: what the search itself
#                 lost, free of the second run's noise.
# Needs jq (Debian's jq) to read the logs.  TUNE_SEARCH_REPORT_ONLY=1
# reports on OUTDIR's logs without tuning again.
set -eu

texc=${1:?usage: tune_search.sh TEXC [FILE.te [OUTDIR]]}
here=$(dirname "$0")
te=${2:-$here/tune_search.te}
out=${3:-bench/tune_search.out}
command -v jq >/dev/null 2>&1 || {
    echo "tune_search.sh: needs jq (apt-get install jq) to read the tuning logs" >&2
    exit 1
}
mkdir -p "$out"
[ -n "${TUNE_SEARCH_REPORT_ONLY:-}" ] || rm -f "$out/exhaustive.jsonl" "$out/guided.jsonl"

# tune NAME ARGS...: one tuning run, its log NAME.jsonl, its stderr NAME.err
tune() {
    name=$1
    shift
    start=$(date +%s)
    "$texc" "$te" --tune --seed 1 --log "$out/$name.jsonl" -o "$out/$name" "$@" \
        >"$out/$name.out" 2>"$out/$name.err" </dev/null
    end=$(date +%s)
    echo $((end - start)) >"$out/$name.wall"
}
# best LOG [points]: "TIME CONFIG" of the fastest valid record (with
# "points", of the space's points only: not the default schedule)
best() {
    jq -r --arg only "${2:-}" 'select(.status == "ok" and ($only == "" or (.config.default | not)))
        | "\(.time_s) \(.config | tojson)"' "$1" | sort -g | head -1
}
# time_of LOG CONFIG: the time LOG measured for CONFIG (compact JSON)
time_of() {
    jq -r --argjson c "$2" 'select(.status == "ok" and .config == $c) | .time_s' "$1" | head -1
}

echo "tune_search: $te"
"$texc" "$te" --dump=space -o "$out/space" | sed 's/^texc: /  /'
if [ -z "${TUNE_SEARCH_REPORT_ONLY:-}" ]; then
    echo "exhaustive search (every point)..."
    tune exhaustive --trials 100000 --time-budget 100000
    echo "guided search (the default budget)..."
    tune guided
fi

# report [points]: the table and the ratios, over all records or over
# the space's points only (the default schedule is a candidate of both
# runs, measured once in each: on a busy machine one of the two can be
# the slow one)
report() {
    only=${1:-}
    set -- $(best "$out/exhaustive.jsonl" $only)
    ex_time=$1 ex_config=$2
    set -- $(best "$out/guided.jsonl" $only)
    gu_time=$1 gu_config=$2
    gu_in_ex=$(time_of "$out/exhaustive.jsonl" "$gu_config")
    rank=$(jq -r 'select(.status == "ok") | .time_s' "$out/exhaustive.jsonl" |
        sort -g | awk -v t="$gu_in_ex" '$1 < t { n++ } END { print n + 1 }')

    printf '\n%-11s %10s %6s %7s  %s\n' search "best (s)" trials "wall s" configuration
    printf '%-11s %10.6f %6d %7d  %s\n' exhaustive "$ex_time" "$(count "$out/exhaustive.jsonl")" \
        "$(cat "$out/exhaustive.wall")" "$ex_config"
    printf '%-11s %10.6f %6d %7d  %s\n' guided "$gu_time" "$(count "$out/guided.jsonl")" \
        "$(cat "$out/guided.wall")" "$gu_config"
    awk -v g="$gu_time" -v e="$ex_time" 'BEGIN {
        printf "\nguided / exhaustive best time, as measured: %.3f\n", g / e }'
    awk -v g="$gu_in_ex" -v e="$ex_time" -v r="$rank" 'BEGIN {
        if (g == "") print "guided winner / exhaustive best, same run: (the exhaustive run has no valid record of it)"
        else printf "guided winner / exhaustive best, same run: %.3f (the guided winner ranks %d of the exhaustive run)\n", g / e, r }'
}
count() { jq -s 'length' "$1"; }

echo
echo "all candidates (the default schedule included):"
report
echo
echo "the space's points only (the default schedule left out):"
report points
grep -h '^texc: stopped:' "$out/guided.err" | sed 's/^texc: /guided: /' || true

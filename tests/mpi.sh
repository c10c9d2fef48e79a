#!/bin/sh
# mpi.sh — tuning over MPI (tuner/mpi.c): `mpirun -np 3 texc FILE.te
# --tune` on this one machine, as root, oversubscribed.  The three ranks'
# timings overlap here, so this checks the protocol, not the speed:
# every rank measures, every record is valid and names its host and
# rank, each configuration is measured once, a rank of another machine
# model measures into records of its own, and a rank killed with
# SIGKILL mid-run costs only its candidates in flight: the tuning goes on
# with the others, finishes and builds.  Without Open MPI (configure found
# no libopenmpi-dev, or no mpirun) each check is a visible SKIP.
. "${srcdir:-.}/tests/lib.sh"

auto=$srcdir/tests/tune/autospace.te
te=$srcdir/samples/transformer_block.te
d="-D S=16 -D D=64 -D H=4 -D F=128"
TEXC_TUNE_MIN_TIME=0.002
OMP_NUM_THREADS=1
TEXC_TUNE_REFERENCE=evaluator
TMPDIR=$tmp
XDG_CACHE_HOME=$tmp/cache
TEXC_LOCK_DIR=$tmp
export TEXC_TUNE_MIN_TIME OMP_NUM_THREADS TEXC_TUNE_REFERENCE TMPDIR XDG_CACHE_HOME TEXC_LOCK_DIR
unset TEXC_TUNE_PLANT

mpirun=$(command -v mpirun)
if [ ! -x "$(dirname "$TEXC")/texc-mpi" ] || [ -z "$mpirun" ]; then
    why="no Open MPI: configure found no libopenmpi-dev or no mpirun (apt-get install libopenmpi-dev openmpi-bin)"
    for c in "3 ranks tune a program" "every rank measures" "records name host and rank" \
             "another machine model is not pooled" \
             "a rank killed mid-run: the tuning finishes and builds"; do
        skip "$c" "$why"
    done
    done_testing
    exit
fi
# --tune last: Open MPI's mpirun reads "--tune FILE" anywhere on its
# command line, texc's arguments included, as its own option (a file of
# MCA parameters), and says it cannot find FILE)
run_mpi() {
    timeout 600 "$mpirun" --allow-run-as-root --oversubscribe --enable-recovery -np 3 -- "$@"
}
# ranks FILE: the ranks the records name, sorted, on one line
ranks() { sed -n 's/.*"rank":\([0-9]*\).*/\1/p' "$1" | sort -u | tr '\n' ' '; }
# records FILE: its candidates' records (not the program's, tasks.c)
records() { if [ -f "$1" ]; then grep -vc '"space_kind":"program"' "$1"; else echo 0; fi; }

# --- 1. three ranks, one kernel ------------------------------------------
log=$tmp/a.jsonl
run_mpi "$TEXC" "$auto" --trials 11 --seed 3 --log "$log" -o "$tmp/a" --tune \
    >"$tmp/a.out" 2>"$tmp/a.err"
rc=$?
check "3 ranks tune a program: exit 0, rank 0 says the job" sh -c "
    test $rc -eq 0 && grep -q 'texc: MPI: 3 of 3 ranks answered, on 1 host' '$tmp/a.err'"
# (autospace.te is two kernels, so two tasks: a default schedule each,
# and the 11 candidates shared between them)
n=$(records "$log")
check "every record valid, one per candidate (2 defaults + 11), and rank 0's program record" sh -c "
    test $n -eq 13 && test \$(grep -v '\"space_kind\":\"program\"' '$log' | grep -c '\"status\":\"ok\"') -eq 13 &&
    test \$(grep '\"space_kind\":\"program\"' '$log' | grep -c '\"rank\":0}\$') -eq 1"
check "each configuration of each task measured once" \
    test "$(grep -v '"space_kind":"program"' "$log" |
            sed -n 's/.*"workload":"\([0-9a-f]*\)".*"config":\({[^}]*}\).*/\1 \2/p' |
            sort -u | wc -l | tr -d ' ')" -eq 13
check "every rank measures (ranks 0, 1 and 2 in the log)" test "$(ranks "$log")" = "0 1 2 "
host=$(uname -n)
check "records name host and rank" sh -c "
    test \$(grep -c '\"host\":\"$host\",\"rank\":[012]}' '$log') -eq 14"
check "rank 0 builds the winner; the others write nothing else" sh -c "
    test -s '$tmp/a.c' && test -s '$tmp/a.h' && grep -q 'using the tuning log.s records for [12] of its 2 kernels\\|using the default schedule for all 2 kernels' '$tmp/a.err' &&
    test \$(ls '$tmp' | grep -c '^a\\.[ch]\$') -eq 2"
check "no temporary directory left" test "$(ls -d "$tmp"/texc-tune.* 2>/dev/null | wc -l)" -eq 0

# --- 2. a rank of another machine model ----------------------------------
# OMP_NUM_THREADS is part of a record's machine ("arch": the CPU, its
# cores and SIMD flags, the threads), so rank 2 on 2 threads is another
# model: it measures into records of its own, which rank 0's search does
# not read.  (The second app context's ":" follows the first one's
# --tune, which Open MPI's mpirun warns about; harmless.)
log=$tmp/m.jsonl
set -- "$auto" --trials 8 --seed 5 --log "$log" -o "$tmp/m" --tune
timeout 600 "$mpirun" --allow-run-as-root --oversubscribe --enable-recovery \
    -np 2 "$TEXC" "$@" : -np 1 -x OMP_NUM_THREADS=2 "$TEXC" "$@" >"$tmp/m.out" 2>"$tmp/m.err"
rc=$?
check "another machine model: rank 0 says rank 2 is one, and does not pool it" sh -c "
    test $rc -eq 0 && grep -q 'texc: MPI: rank 2 (.*) is another machine model (.*OMP_NUM_THREADS=2.*): it measures into records of its own' '$tmp/m.err'"
check "another machine model: its records name its machine, the others rank 0's" sh -c "
    test \$(grep -c '\"status\":\"ok\"' '$log') -eq \$(wc -l <'$log') &&
    grep '\"rank\":2}' '$log' | grep -q 'OMP_NUM_THREADS=2' &&
    ! grep '\"rank\":2}' '$log' | grep -q 'OMP_NUM_THREADS=1' &&
    ! grep '\"rank\":[01]}' '$log' | grep -q 'OMP_NUM_THREADS=2'"

# --- 3. a rank killed with SIGKILL after 10 s ---------------------------
log=$tmp/k.jsonl
# shellcheck disable=SC2086 # $d splits on purpose
run_mpi "$TEXC" "$te" $d --trials 40 --time-budget 30 --log "$log" -o "$tmp/k" --tune \
    >"$tmp/k.out" 2>"$tmp/k.err" &
job=$!
sleep 10
victim=
for p in /proc/[0-9]*; do
    [ "$(readlink "$p/exe" 2>/dev/null)" = "$(cd "$(dirname "$TEXC")" && pwd)/texc-mpi" ] || continue
    if tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
        victim=${p#/proc/}
    fi
done
before=$(records "$log")
[ -n "$victim" ] && kill -KILL "$victim"
wait $job
rc=$?
check "rank 1 was running after 10 s, and was killed (pid ${victim:-none})" test -n "$victim"
check "a rank killed mid-run: rank 0 says it lost rank 1 and goes on" \
    grep -q "texc: MPI: lost rank 1 (.*): its process is gone; .* going on with 2 ranks" "$tmp/k.err"
check "a rank killed mid-run: the tuning finishes and builds" sh -c "
    test $rc -eq 0 && grep -q '^texc: tuned [0-9]* tasks in' '$tmp/k.err' && test -s '$tmp/k.c' &&
    grep -q 'texc: end to end:' '$tmp/k.err'"
check "a rank killed mid-run: the others measure on (rank 2 after the kill), every record valid" sh -c "
    tail -n +$((before + 1)) '$log' | grep -q '\"rank\":2' &&
    test \$(grep -c -v '\"status\":\"ok\"' '$log') -eq 0"
[ "$tap_failed" -eq 0 ] || { sed 's/^/# /' "$tmp/k.err" | tail -30; }
done_testing

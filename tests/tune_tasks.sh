#!/bin/sh
# tune_tasks.sh — --tune of a program of several kernels (tuner/tasks.c):
# the transformer block at a small size, one task per kernel, q/k/v one
# task; the task scheduler gives every task a measured candidate of its
# space and prints its rounds and the end-to-end line (and with -v both
# programs' profiles); the records are keyed per kernel workload, the
# plain build takes them and computes the right numbers, and another
# program with the same kernels (tests/tune/ffn_part.te) uses them; the
# rows the default computes in one pass are no tasks.
# Timings on a busy machine are noise at these sizes: nothing here
# depends on which candidate wins.
. "${srcdir:-.}/tests/lib.sh"

te=$srcdir/samples/transformer_block.te
part=$srcdir/tests/tune/ffn_part.te
d="-D S=16 -D D=64 -D H=4 -D F=128"
# (one thread a kernel: on a busy machine OpenMP's barriers would make
# every run slow; the evaluator: the compiled reference is tested in
# reference.sh, and at these sizes it costs more than it saves)
TEXC_TUNE_MIN_TIME=0.002
OMP_NUM_THREADS=1
TEXC_TUNE_REFERENCE=evaluator
TMPDIR=$tmp
XDG_CACHE_HOME=$tmp/cache
TEXC_LOCK_DIR=$tmp
export TEXC_TUNE_MIN_TIME OMP_NUM_THREADS TEXC_TUNE_REFERENCE TMPDIR XDG_CACHE_HOME TEXC_LOCK_DIR
unset TEXC_TUNE_PLANT

log=$tmp/t.jsonl
# shellcheck disable=SC2086 # $d splits on purpose
"$TEXC" "$te" $d --tune -v --trials 13 --jobs 2 --log "$log" -o "$tmp/t" >"$tmp/t.out" 2>"$tmp/t.err"
rc=$?
check "texc --tune of the block exits 0" test "$rc" -eq 0
# the tasks: the kernels (what --dump=kernels lists) less the stages the
# default inlines and the rows it computes in one pass (a row statistic
# at its reader's row, and that reader: the layer norms, the softmax),
# which keep the default's one loop nest; q, k and v one task
nk=$(sed -n 's/^texc: tuning \([0-9]*\) kernels as \([0-9]*\) tasks.*/\1/p' "$tmp/t.err")
nt=$(sed -n 's/^texc: tuning \([0-9]*\) kernels as \([0-9]*\) tasks.*/\2/p' "$tmp/t.err")
# shellcheck disable=SC2086
"$TEXC" "$te" $d --check --dump=schedule 2>/dev/null |
    sed -n 's/^ *\([a-z_0-9]*\)\.compute_at(\([a-z_0-9]*\), .*/\1 \2/p' | grep -v '_acc ' |
    tr ' ' '\n' | sort -u >"$tmp/rows"
check "tasks: the $nk kernels as $nt tasks, one per workload (q, k, v one)" sh -c "
    test -n '$nt' && test '$nk' -eq \$(($nt + 2)) &&
    test \$(grep -c '^texc:   task [0-9]*: ' '$tmp/t.err') -eq '$nt'"
check "tasks: the q, k and v projections are one task" \
    grep -q "^texc:   task [0-9]*: transformer_block:kh (one workload with q, vh)" "$tmp/t.err"
check "tasks: the rows the default computes in one pass are no tasks (layer norms, softmax)" sh -c "
    test \$(wc -l <'$tmp/rows') -eq 8 &&
    ! grep -q 'transformer_block:\\(mean1\\|var1\\|xn\\|smax\\|prob\\|mean2\\|var2\\|rn\\)' '$tmp/t.err'"
# every task: at least one measured candidate of its space (not the default)
grep '"status":"ok"' "$log" | grep -v '"config":{"default":true}' | grep -v '"space_kind":"program"' |
    sed -n 's/.*"kernel":"\([^"]*\)".*/\1/p' | sort -u >"$tmp/measured"
check "scheduler: every one of the $nt tasks has a valid candidate of its space" \
    test "$(wc -l <"$tmp/measured" | tr -d ' ')" -eq $nt
check "scheduler: one first round per task, then rounds by gain" sh -c "
    test \$(grep -c '^texc: task [0-9]*/$nt .*: first round' '$tmp/t.err') -eq $nt &&
    grep -q '^texc: round [0-9]*: task [0-9]* transformer_block:[a-z0-9_]* ([0-9]*% of the program, gain' '$tmp/t.err'"
check "scheduler: at most --trials candidates of the spaces" \
    test "$(grep -v '"space_kind":"program"' "$log" | grep -vc '"config":{"default":true}')" -le 13
check "scheduler: the table of the tasks" grep -q "^texc: the kernels' times added up: default" "$tmp/t.err"
check "end to end: default against tuned, measured in the run" \
    grep -Eq "^texc: end to end: default [0-9.e+-]+ ms, tuned [0-9.e+-]+ ms: [0-9.]+x the default schedule \\(the medians of 5 runs each, in turns; the rounds' ratios [0-9.]+ to [0-9.]+\\)$" "$tmp/t.err"
check "-v: the profile of the default and of the tuned program" sh -c "
    grep -q '^texc: profile of the default program' '$tmp/t.err' &&
    grep -q '^texc: profile of the tuned program' '$tmp/t.err' &&
    test \$(grep -c '^texc:   all ' '$tmp/t.err') -eq 2"
check "records: keyed per kernel workload (FILE:KERNEL), none for q or vh" sh -c "
    grep -q '\"kernel\":\"transformer_block:kh\"' '$log' &&
    ! grep -q '\"kernel\":\"transformer_block:q\"' '$log' &&
    ! grep -q '\"kernel\":\"transformer_block:vh\"' '$log' &&
    test \$(grep -v '\"space_kind\":\"program\"' '$log' |
             sed -n 's/.*\"workload\":\"\([0-9a-f]*\)\".*/\1/p' | sort -u | wc -l) -eq $nt"
# the end-to-end check: each kernel's time in the program, profiled, both
# ways; one program record that names every kernel once, as keeping the
# default or taking its winner (each as the lines before said)
grep '"space_kind":"program"' "$log" >"$tmp/prog"
kernels_of() { # FIELD: the names in the program record's array FIELD
    sed -n "s/.*\"$1\":\[\([^]]*\)\].*/\1/p" "$tmp/prog" | tr ',' '\n' | tr -d '"' | grep . | sort
}
kernels_of default_kernels >"$tmp/kdef"
kernels_of tuned_kernels >"$tmp/ktun"
# (a kernel whose task has no record runs the default both ways: it keeps
# it, whatever the noise in its ratio; that line says why in parentheses)
sed -n 's/^texc: in the program, \([a-z_0-9]*\) takes .*: it keeps the default\( (.*)\)\{0,1\}$/\1/p' "$tmp/t.err" | sort >"$tmp/said"
check "end to end: each kernel timed in the program, both ways" \
    test "$(grep -c '^texc: in the program, [a-z_0-9]* takes [0-9.e+-]* ms a call by default, [0-9.e+-]* ms tuned ([0-9.]*x): it ' "$tmp/t.err")" -eq "$nk"
check "end to end: one program record naming each kernel once" sh -c "
    test \$(wc -l <'$tmp/prog') -eq 1 && grep -q '\"time_s\":' '$tmp/prog' &&
    test \$(cat '$tmp/kdef' '$tmp/ktun' | sort -u | wc -l) -eq $nk &&
    test \$(cat '$tmp/kdef' '$tmp/ktun' | wc -l) -eq $nk"
if grep -q '^texc: the tuned program is not faster end to end' "$tmp/t.err"; then
    check "end to end: not faster: every kernel keeps the default" test "$(wc -l <"$tmp/kdef")" -eq "$nk"
else
    check "end to end: the kernels kept default are those slower tuned in the program" \
        cmp -s "$tmp/kdef" "$tmp/said"
fi
ndef=$(wc -l <"$tmp/kdef" | tr -d ' ')
if grep -q ': it takes the tuned schedule$' "$tmp/t.err"; then
    check "end to end: what the profiles expect of the choice" \
        grep -Eq "^texc: the kernels that take their tuned schedule save [0-9.e+-]+ ms a call in the profiles: [0-9.]+% of the default program's [0-9.e+-]+ ms" "$tmp/t.err"
else
    check "end to end: no kernel takes its tuned schedule, no expectation line" \
        sh -c "! grep -q '^texc: the kernels that take their tuned schedule save' '$tmp/t.err'"
fi

# the plain build takes each kernel's record, and computes the right numbers
# shellcheck disable=SC2086
"$TEXC" "$te" $d --log "$log" --harness -o "$tmp/b" >"$tmp/b.out" 2>"$tmp/b.err"
if [ "$ndef" -lt "$nk" ]; then
    check "build: uses the records of every kernel the program record leaves tuned" \
        grep -q "^texc: using the tuning log's records for $((nk - ndef)) of its $nk kernels (tasks)" "$tmp/b.err"
    check "build: the generated C says so" grep -q "schedule: the tuning log's records for $((nk - ndef)) of its" "$tmp/b.c"
else
    check "build: every kernel keeps the default, as the program record says" \
        grep -q "^texc: using the default schedule for all $nk kernels" "$tmp/b.err"
    check "build: the generated C says so" grep -q "schedule: the default schedule for all $nk kernels" "$tmp/b.c"
fi
check "build: the rows keep the default's one pass" sh -c "
    grep -q '^ \\*   mean1.compute_at(xn, i);' '$tmp/b.c' && grep -q '^ \\*   smax.compute_at(prob, h);' '$tmp/b.c'"
# shellcheck disable=SC2086
"$TEXC" "$te" $d --eval --save-inputs -o "$tmp/ref" >/dev/null 2>&1
set --
for n in x ln1_g ln1_b wq wk wv wo bo ln2_g ln2_b w1 b1 w2 b2; do
    set -- "$@" "$tmp/ref.in.$n.npy"
done
if ${CC:-cc} -std=gnu11 -O1 -fopenmp -o "$tmp/run" "$tmp/b.c" "$tmp/b_harness.c" -lm >"$tmp/cc.out" 2>&1 &&
   "$tmp/run" "$@" "$tmp/got.npy" -r 2 >"$tmp/run.out" 2>&1 &&
   "$builddir/tests/npycmp" "$tmp/ref.y.npy" "$tmp/got.npy" >"$tmp/cmp.out" 2>&1; then
    ok "build: the tuned program matches the evaluator"
else
    cat "$tmp/cc.out" "$tmp/run.out" "$tmp/cmp.out" >"$tmp/fail.out" 2>/dev/null
    not_ok "build: the tuned program matches the evaluator" "$tmp/fail.out"
fi

# later builds follow the log's last program record for this program on
# this machine; a record of another machine, or a malformed one, is not
# followed; --tune-whole's search does not take one (its space differs)
all=$(cat "$tmp/kdef" "$tmp/ktun" | sed 's/.*/"&"/' | paste -sd, -)
program_log() { # DEFAULT_KERNELS_JSON [SED]: the log with a program record appended
    cp "$log" "$tmp/p.jsonl"
    sed -e "s/\"default_kernels\":\[[^]]*\]/\"default_kernels\":$1/" -e "${2:-s/^//}" "$tmp/prog" >>"$tmp/p.jsonl"
}
build_with() { # builds the block with $tmp/p.jsonl as its log, into $tmp/pb.err
    # shellcheck disable=SC2086
    "$TEXC" "$te" $d --log "$tmp/p.jsonl" -o "$tmp/pb" >/dev/null 2>"$tmp/pb.err"
}
program_log "[$all]" && build_with
check "program record: all kept default, the build says so" \
    grep -q "^texc: using the default schedule for all $nk kernels: the tuning log's end-to-end record" "$tmp/pb.err"
program_log "[]" && build_with
check "program record: the last one wins (none kept: every kernel's record)" \
    grep -q "^texc: using the tuning log's records for $nk of its $nk kernels (tasks), the default for the rest\$" "$tmp/pb.err"
program_log "[$all]" 's/"arch":"[^"]*"/"arch":"another machine"/' && build_with
if [ "$ndef" -lt "$nk" ]; then
    said="^texc: using the tuning log's records for $((nk - ndef)) of its $nk kernels"
else
    said="^texc: using the default schedule for all $nk kernels"
fi
check "program record: another machine's is not followed (the run's own is)" grep -q "$said" "$tmp/pb.err"
program_log '[1, {"x": 2}, "no such kernel"]' && build_with
check "program record: malformed names keep nothing, and crash nothing" sh -c "
    test \$? -eq 0 && grep -q \"^texc: using the tuning log's records for $nk of its $nk kernels\" '$tmp/pb.err'"

# another program with the same kernels finds the records
"$TEXC" "$part" --log "$log" -o "$tmp/p" >"$tmp/p.out" 2>"$tmp/p.err"
check "another program: its 2 kernels use the block's records" \
    grep -q "^texc: using the tuning log's records for 2 of its 2 kernels (tasks)" "$tmp/p.err"
"$TEXC" "$part" --tune --trials 3 --jobs 2 --log "$log" -o "$tmp/p2" >"$tmp/p2.out" 2>"$tmp/p2.err"
check "another program: its tuning resumes the block's records" \
    grep -q "^texc: resuming: [0-9]* configurations of this workload already measured" "$tmp/p2.err"

# --tune-whole: one space for the whole program, as before tasks
# shellcheck disable=SC2086
"$TEXC" "$te" $d --tune --tune-whole --trials 1 --jobs 2 --log "$tmp/w.jsonl" -o "$tmp/w" \
    >"$tmp/w.out" 2>"$tmp/w.err"
check "--tune-whole: one search of the whole program's space" sh -c "
    grep -q '^texc: tuning transformer_block: guided search of [0-9]* points (automatic space, 14 stages)\\|^texc: tuning transformer_block: guided search' '$tmp/w.err' &&
    ! grep -q 'as $nt tasks' '$tmp/w.err' && grep -q '\"kernel\":\"transformer_block\"' '$tmp/w.jsonl'"
# run-time dims: a task per kernel in each bucket (tune.c's tune_buckets,
# tasks.c), the build's variants from the kernels' records, each bucket's;
# the program (tests/tune/autospace.te with M at run time) then right at
# every M of its range (tests/rtdims_run, against the evaluator)
sed 's/^dim M = 16,/dim M in 1..40 = 16,/' "$srcdir/tests/tune/autospace.te" >"$tmp/rt.te"
log=$tmp/rt.jsonl
"$TEXC" "$tmp/rt.te" --tune --trials 8 --jobs 2 --buckets M=1..8,9..40 --log "$log" -o "$tmp/rt" \
    >"$tmp/rt.out" 2>"$tmp/rt.err"
rc=$?
check "run-time dims: each of the 2 buckets tuned as 2 tasks" sh -c "
    test $rc -eq 0 && test \$(grep -c '^texc: tuning 2 kernels as 2 tasks' '$tmp/rt.err') -eq 2 &&
    grep -q '^texc: bucket 2 of 2: M in 1..8' '$tmp/rt.err'"
check "run-time dims: records per kernel and bucket" sh -c "
    grep '\"kernel\":\"rt:y\"' '$log' | grep -q '\"M\":{\"lo\":1,\"hi\":8' &&
    grep '\"kernel\":\"rt:y\"' '$log' | grep -q '\"M\":{\"lo\":9,\"hi\":40' &&
    grep '\"kernel\":\"rt:r\"' '$log' | grep -q '\"M\":{\"lo\":1,\"hi\":8' &&
    ! grep -v '\"kernel\":\"rt:[yr]\"' '$log' | grep -q ."
(cd "$tmp" && "$TEXC" rt.te --buckets M=1..8,9..40 --log "$log" -o rtb) >"$tmp/rtb.out" 2>"$tmp/rtb.err"
check "run-time dims: the build takes the kernels' records in both buckets" \
    grep -q "^texc: tuned schedules from the tuning log for 2 of 2 buckets" "$tmp/rtb.err"
check "run-time dims: the generated C says its schedule comes from the kernels' records" \
    grep -q "the tuning log's records for 2 of its 2 kernels" "$tmp/rtb.c"
# shellcheck disable=SC2086 # SANITIZER_FLAGS splits on purpose
if ${CC:-cc} -std=gnu11 -O0 -g -fopenmp -fPIC -shared ${SANITIZER_FLAGS:-} -o "$tmp/rtb.so" \
        "$tmp/rtb.c" -lm >"$tmp/rtcc.out" 2>&1 &&
   "$builddir/tests/rtdims_run" "$tmp/rtb.so" rtb "$tmp/rt.te" M=1-40 >"$tmp/rtrun.out" 2>&1 &&
   ! grep -q '^not ok' "$tmp/rtrun.out"; then
    ok "run-time dims: the tuned build matches the evaluator at every M of 1..40"
else
    cat "$tmp/rtcc.out" "$tmp/rtrun.out" >"$tmp/fail.out" 2>/dev/null
    not_ok "run-time dims: the tuned build matches the evaluator at every M of 1..40" "$tmp/fail.out"
fi
check "no temporary directory left" test "$(ls -d "$tmp"/texc-tune.* 2>/dev/null | wc -l)" -eq 0

done_testing

#!/bin/sh
# tune.sh — the autotuner: texc --tune on small workloads (tests/tune/).
#
# small.te has a four-point knob space (an exhaustive search is five
# candidates with the default schedule); autospace.te has no schedule, so
# its space is derived from its stages and searched by the guided search.
# Timings on a busy machine are noise at these sizes, so the checks that
# need a known winner make one with the test hook TEXC_TUNE_PLANT
# (tuner/measure.c): best:N slows every candidate but trial N by 20 ms a
# call; crash:N, hang:N and wrong:N make trial N's kernel raise SIGSEGV,
# spin forever or get its first output element wrong.
# TEXC_TUNE_MIN_TIME shortens the timed repeats.
. "${srcdir:-.}/tests/lib.sh"

small=$srcdir/tests/tune/small.te
autospace=$srcdir/tests/tune/autospace.te
TEXC_TUNE_MIN_TIME=0.005
TMPDIR=$tmp
XDG_CACHE_HOME=$tmp/cache
# a machine lock of its own (tuner/lock.c): no other tuner waits for it
TEXC_LOCK_DIR=$tmp
export TEXC_TUNE_MIN_TIME TMPDIR XDG_CACHE_HOME TEXC_LOCK_DIR
unset TEXC_TUNE_PLANT

# field FILE TRIAL KEY: the value of KEY in the record of trial TRIAL
# (records are compact JSON objects, one a line; KEY's value is a number,
# a string or a flat object).
field() {
    grep "\"trial\":$2," "$1" | sed -n "s/.*\"$3\":\(\"[^\"]*\"\|{[^}]*}\|[-0-9.e+]*\).*/\1/p" | head -1
}
# lines FILE: the number of lines
lines() { if [ -f "$1" ]; then wc -l <"$1" | tr -d ' '; else echo 0; fi; }
# distinct_configs FILE: configurations of the valid records, one a line
configs() { sed -n 's/.*"config":\({[^}]*}\).*/\1/p' "$1"; }
# leftover: temporary directories the tuner did not remove
leftover() { ls -d "$tmp"/texc-tune.* 2>/dev/null | wc -l | tr -d ' '; }

# --- 1. exhaustive search: every point, once; the known best wins -------
log=$tmp/a.jsonl
TEXC_TUNE_PLANT=best:4 "$TEXC" "$small" --tune --seed 7 --log "$log" --plot "$tmp/a.svg" \
    -o "$tmp/a" >"$tmp/a.out" 2>"$tmp/a.err"
rc=$?
check "exhaustive: texc --tune exits 0" test "$rc" -eq 0
check "exhaustive: says it searches the 4 knob points exhaustively" \
    grep -q "exhaustive search of 4 points" "$tmp/a.err"
check "exhaustive: one record per candidate (default + 4 points)" test "$(lines "$log")" -eq 5
check "exhaustive: each configuration measured once" \
    test "$(configs "$log" | sort -u | wc -l | tr -d ' ')" -eq 5
check "exhaustive: every record valid (status ok)" \
    test "$(grep -c '"status":"ok"' "$log")" -eq 5
best_config=$(field "$log" 4 config)
best_tj=$(echo "$best_config" | sed -n 's/.*"TJ":\([0-9]*\).*/\1/p')
best_tk=$(echo "$best_config" | sed -n 's/.*"TK":\([0-9]*\).*/\1/p')
winner=$(sed -n 's/^texc: best: .*s), \(.*\);.*/\1/p' "$tmp/a.err")
check "exhaustive: the planted best (trial 4, $best_config) wins" \
    test "$winner" = "TJ=$best_tj TK=$best_tk"
check "exhaustive: prints the winner as schedule text" \
    grep -q "y.split(j, $best_tj) -> jo, ji;" "$tmp/a.out"
check "exhaustive: prints the speed-up over the default" grep -q "x the default schedule" "$tmp/a.err"
check "exhaustive: the build after tuning uses the log" \
    grep -q "using the tuned schedule from $log" "$tmp/a.err"
check "exhaustive: records carry workload, machine, compiler, times, error" sh -c "
    grep -q '\"workload\":\"[0-9a-f]\{32\}\"' '$log' && grep -q '\"arch\":' '$log' &&
    grep -q '\"compiler\":' '$log' && grep -q '\"texc_version\":' '$log' &&
    grep -q '\"time_s\":' '$log' && grep -q '\"max_err\":' '$log' &&
    grep -q '\"copies\":[1-9]' '$log' &&
    grep -q '\"timestamp\":' '$log' && grep -q '\"dims\":{\"M\":16' '$log'"
check "exhaustive: --plot writes an SVG" grep -q "<polyline" "$tmp/a.svg"
check "exhaustive: no temporary directory left" test "$(leftover)" -eq 0

# a later build picks the logged winner and prints which
"$TEXC" "$small" --log "$log" -o "$tmp/b" --dump=schedule >"$tmp/b.out" 2>"$tmp/b.err"
check "build: uses the logged winner" grep -q "y.split(j, $best_tj) -> jo, ji;" "$tmp/b.out"
check "build: says which record it used" grep -q "using the tuned schedule from $log (" "$tmp/b.err"
workload=$(sed -n 's/.*"workload":"\([0-9a-f]*\)".*/\1/p' "$log" | head -n 1)
check "build: the generated files name the record (its workload and date)" sh -c "
    grep -q '^ \* schedule: a tuning-log record (workload $workload, 20[0-9-]* [0-9:]*): the file.s schedule, its knobs set$' '$tmp/b.c' &&
    grep -q '^ \* Schedule: a tuning-log record (workload $workload, ' '$tmp/b.h'"
# w is const: the winner's tiles (TJ=16, not the file's first value, 32,
# where one panel would be all of w) read it in panels of 16
"$TEXC" "$small" --log "$log" -o "$tmp/b" --dump=loops >"$tmp/bl.out" 2>&1
check "build: the winner's tiles get their own panels of w ($best_tj)" sh -c "
    test '$best_tj' = 16 && grep -q 'w_packed\[p, a0, l\] = w\[a0, p \* 16 + l\]' '$tmp/bl.out' &&
    grep -q 'w_packed\[jo, ko \* [0-9]* + ki, ji\]' '$tmp/bl.out'"
"$TEXC" "$small" --log "$log" -o "$tmp/b" -v >/dev/null 2>"$tmp/bv.err"
check "build: -v tells the panels the winner's tiles got" \
    grep -q "w prepacked in panels of $best_tj for y (w_packed)" "$tmp/bv.err"
other_tj=$([ "$best_tj" = 16 ] && echo 32 || echo 16)
"$TEXC" "$small" -K TJ=$other_tj --log "$log" -o "$tmp/b" --dump=schedule >"$tmp/kk.out" 2>"$tmp/kk.err"
check "build: -K wins over the log" sh -c "
    grep -q 'y.split(j, $other_tj) -> jo, ji;' '$tmp/kk.out' && ! grep -q 'using the tuned' '$tmp/kk.err'"
"$TEXC" --log-summary "$log" >"$tmp/sum.out" 2>&1
check "--log-summary: the best record of the workload" \
    grep -q "best .*\"TJ\": *$best_tj" "$tmp/sum.out"

# --- 2. a record from another machine or texc version is not applied ----
sed 's/"arch":"[^"]*"/"arch":"Another CPU; 64 cores; avx2"/' "$log" >"$tmp/m.jsonl"
"$TEXC" "$small" --log "$tmp/m.jsonl" -o "$tmp/b" --dump=schedule >"$tmp/m.out" 2>"$tmp/m.err"
check "another machine: its records are not applied" sh -c "
    ! grep -q 'using the tuned' '$tmp/m.err' && grep -q 'from another machine' '$tmp/m.err'"
sed 's/"texc_version":"[^"]*"/"texc_version":"0.0.1"/' "$log" >"$tmp/v.jsonl"
"$TEXC" "$small" --log "$tmp/v.jsonl" -o "$tmp/b" >"$tmp/v.out" 2>"$tmp/v.err"
check "another texc version: its records are not applied" sh -c "
    ! grep -q 'using the tuned' '$tmp/v.err' && grep -q 'from another texc version' '$tmp/v.err'"
"$TEXC" "$small" -D N=64 --log "$log" -o "$tmp/b" >"$tmp/d.out" 2>"$tmp/d.err"
check "other sizes: not applied, and said so" sh -c "
    ! grep -q 'using the tuned' '$tmp/d.err' && grep -q 'for other sizes' '$tmp/d.err'"

# --- 3. crashing, hanging and wrong candidates are recorded and skipped -
log=$tmp/p.jsonl
TEXC_TUNE_PLANT=crash:2,hang:3,wrong:4 "$TEXC" "$small" --tune --log "$log" -o "$tmp/p" \
    >"$tmp/p.out" 2>"$tmp/p.err"
rc=$?
check "plants: the search goes on (exit 0, 5 records)" sh -c "test $rc -eq 0 && test $(lines "$log") -eq 5"
check "plants: the crash is recorded as crash" test "$(field "$log" 2 status)" = '"crash"'
check "plants: the hang is killed and recorded as timeout" test "$(field "$log" 3 status)" = '"timeout"'
check "plants: the wrong result is recorded as wrong, with its error" sh -c "
    test '$(field "$log" 4 status)' = '\"wrong\"' && test -n '$(field "$log" 4 max_err)'"
check "plants: the others are valid" sh -c "
    test '$(field "$log" 1 status)' = '\"ok\"' && test '$(field "$log" 5 status)' = '\"ok\"'"
check "plants: no failed candidate has a time" sh -c "! grep -v '\"status\":\"ok\"' '$log' | grep -q '\"time_s\"'"
winner=$(sed -n 's/^texc: best: .*s), \(.*\);.*/\1/p' "$tmp/p.err")
bad=
for n in 2 3 4; do
    c=$(field "$log" $n config | sed 's/[{}"]//g; s/:/=/g; s/,/ /g')
    [ "$winner" = "$c" ] && bad=$n
done
check "plants: no failed candidate wins" test -z "$bad"
check "plants: the summary counts them" grep -q "1 wrong, 1 crash, 1 timeout" "$tmp/p.err"

# an i32 output computed from an f32 through a cast: the kernels compute
# x * 4294962875 in f32, the reference in double, so the integers differ by
# some units; the check takes the f32 tolerance for it (once every candidate
# came out wrong: the differential fuzzer's first finding)
printf 'dim N = 64;\ninput x : f32[N];\nq[i] = i32(x[i] * 4294962875.0);\noutput q;\n' >"$tmp/fcast.te"
log=$tmp/fc.jsonl
"$TEXC" "$tmp/fcast.te" --tune --trials 2 --log "$log" -o "$tmp/fc" >"$tmp/fc.out" 2>"$tmp/fc.err"
rc=$?
check "an integer from a float cast: the candidates are right (exit 0)" sh -c "
    test $rc -eq 0 && grep -q '\"status\":\"ok\"' '$log' && ! grep -q '\"status\":\"wrong\"' '$log'"

# every candidate wrong or crashing, the default schedule too: the tuning
# failed (exit 1), the log keeps the records, nothing is built
log=$tmp/w.jsonl
TEXC_TUNE_PLANT=wrong:1,crash:2,wrong:3,wrong:4,crash:5 "$TEXC" "$small" --tune --log "$log" \
    -o "$tmp/w" >"$tmp/w.out" 2>"$tmp/w.err"
rc=$?
check "none right: exit 1, said so, 5 records, no output files" sh -c "
    test $rc -eq 1 && test $(lines "$log") -eq 5 &&
    grep -q 'tuning failed: none of the 5 candidates measured built and ran correctly' '$tmp/w.err' &&
    ! test -e '$tmp/w.c' && ! test -e '$tmp/w.h'"

# --- 4. killed with SIGKILL, then resumed ---------------------------------
log=$tmp/k.jsonl
TEXC_TUNE_PLANT=best:5 "$TEXC" "$small" --tune --log "$log" -o "$tmp/k" >/dev/null 2>&1 &
pid=$!
i=0
while [ "$i" -lt 600 ] && [ "$(lines "$log")" -lt 2 ]; do
    sleep 0.1
    i=$((i + 1))
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
before=$(lines "$log")
# as if the tuner had died in the middle of a write
printf '{"workload":"0123' >>"$log"
"$TEXC" "$small" --tune --log "$log" -o "$tmp/k" >"$tmp/k.out" 2>"$tmp/k.err"
rc=$?
check "resume: the second run completes" test "$rc" -eq 0
check "resume: it resumes what the killed run logged" \
    grep -q "resuming: $before configuration" "$tmp/k.err"
check "resume: the partial line is skipped with a warning" \
    grep -q "k.jsonl:$((before + 1)): skipping a line" "$tmp/k.err"
check "resume: no configuration measured twice" \
    test "$(configs "$log" | sort | uniq -d | wc -l | tr -d ' ')" -eq 0
check "resume: all five configurations in the log" \
    test "$(configs "$log" | sort -u | wc -l | tr -d ' ')" -eq 5
"$TEXC" --log-summary "$log" >"$tmp/ks.out" 2>&1
check "resume: only the killed line is invalid" grep -q "1 invalid line skipped" "$tmp/ks.out"

# --- 5. two tuners on one log ----------------------------------------------
log=$tmp/c.jsonl
"$TEXC" "$small" --tune --trials 2 --seed 1 --log "$log" -o "$tmp/c1" >/dev/null 2>"$tmp/c1.err" &
p1=$!
"$TEXC" "$small" --tune --trials 2 --seed 2 --log "$log" -o "$tmp/c2" >/dev/null 2>"$tmp/c2.err" &
p2=$!
wait "$p1"
r1=$?
wait "$p2"
r2=$?
check "concurrent: both tuners finish" sh -c "test $r1 -eq 0 && test $r2 -eq 0"
"$TEXC" --log-summary "$log" >"$tmp/cs.out" 2>&1
n=$(lines "$log")
check "concurrent: every line is a valid record" sh -c "
    grep -q '^$log: $n records' '$tmp/cs.out' && ! grep -q invalid '$tmp/cs.out'"
check "concurrent: both tuners' records are in the log" sh -c "
    grep -q '\"seed\":1[,}]' '$log' && grep -q '\"seed\":2[,}]' '$log'"

# --- 6. an automatic space, searched by the guided search -----------------
log=$tmp/g.jsonl
"$TEXC" "$autospace" --tune --tune-whole --trials 6 --jobs 1 --log "$log" -o "$tmp/g" >"$tmp/g.out" 2>"$tmp/g.err"
rc=$?
check "auto space: texc --tune exits 0" test "$rc" -eq 0
check "auto space: a guided search of the derived space" \
    grep -q "guided search of [0-9]* points (automatic space)" "$tmp/g.err"
check "auto space: 7 candidates measured (default + 6)" test "$(lines "$log")" -eq 7
check "auto space: random and model-ranked candidates" sh -c "
    grep -q '\"search\":\"random\"' '$log' && grep -q '\"search\":\"guided\"' '$log'"
"$TEXC" "$autospace" --log "$log" -o "$tmp/g2" --dump=schedule >"$tmp/g2.out" 2>"$tmp/g2.err"
check "auto space: the build rebuilds the winner's schedule from the log" \
    cmp -s "$tmp/g.out" "$tmp/g2.out"
check "auto space: and says so" grep -q "using the tuned schedule" "$tmp/g2.err"
# (the default schedule is one of the candidates, and may win)
check "auto space: the generated C says the schedule came from the log" \
    grep -Eq "^ \* schedule: a tuning-log record \(workload [0-9a-f]{32}, .*\): the (tuner's|default) schedule$" "$tmp/g2.c"

# --- 6b. the automatic space holds the register-blocked micro-kernel -------
"$TEXC" "$autospace" --dump=space -o "$tmp/sp" >"$tmp/sp.out" 2>"$tmp/sp.err"
check "auto space: --dump=space shows the micro-kernel form of the matmul" sh -c "
    grep -q 'y.form *in \[0, 1\]' '$tmp/sp.out' &&
    grep -q 'y: matmul-like, [0-9]* points: [0-9]* loop nests (form 0), [1-9][0-9]* register-blocked micro-kernels (form 1)' '$tmp/sp.out' &&
    grep -q 'form 1: y_acc = y.cache_write(local), a ti x tj tile: ti in \[4, 6, 8\]' '$tmp/sp.out'"
# One micro-kernel point, made the log's winner: 6-row tiles (which do not
# divide M = 16), column panels outside, both tile loops fused and
# parallel.  The build must apply it as such and compute the right numbers.
ok_line=$(grep '"status":"ok"' "$log" | grep '"y.form":' | head -1)
printf '%s\n' "$ok_line" | sed 's/"y.ti":[0-9]*,"y.tj":[0-9]*,"y.tk":[0-9]*,"y.order":[0-9]*,"y.ui":[0-9]*,"y.uk":[0-9]*,"y.vec":[0-9]*,"y.par":[0-9]*,"y.form":[0-9]*/"y.ti":6,"y.tj":16,"y.tk":0,"y.order":2,"y.ui":0,"y.uk":0,"y.vec":0,"y.par":1,"y.form":1/; s/"time_s":[-0-9.e+]*/"time_s":1e-09/' >"$tmp/micro.jsonl"
"$TEXC" "$autospace" --log "$tmp/micro.jsonl" -o "$tmp/mk" --harness --dump=schedule \
    >"$tmp/mk.out" 2>"$tmp/mk.err"
check "micro-kernel point: the build applies it" sh -c "
    grep -q 'y_acc = y.cache_write(local);' '$tmp/mk.out' &&
    grep -q 'y.tile(i, j, 6, 16) -> io, jo, ii, ji;' '$tmp/mk.out' &&
    grep -q 'y.fuse(jo, io) -> f;' '$tmp/mk.out' && grep -q 'y_acc.compute_at(y, f);' '$tmp/mk.out' &&
    grep -q 'y_acc.unroll(i);' '$tmp/mk.out' && grep -q 'y.parallel(f);' '$tmp/mk.out' &&
    grep -q 'using the tuned schedule' '$tmp/mk.err'"
"$TEXC" "$autospace" --eval --save-inputs -o "$tmp/mkref" >/dev/null 2>&1
${CC:-cc} -std=gnu11 -O1 -fopenmp -o "$tmp/mkrun" "$tmp/mk.c" "$tmp/mk_harness.c" -lm \
    >"$tmp/mkcc.out" 2>&1 &&
    "$tmp/mkrun" "$tmp/mkref.in.x.npy" "$tmp/mkref.in.w.npy" "$tmp/mkref.in.b.npy" \
        "$tmp/mk.y.npy" "$tmp/mk.r.npy" -r 3 >"$tmp/mkrun.out" 2>&1
check "micro-kernel point: its outputs match the reference" sh -c "
    '$builddir/tests/npycmp' '$tmp/mkref.y.npy' '$tmp/mk.y.npy' &&
    '$builddir/tests/npycmp' '$tmp/mkref.r.npy' '$tmp/mk.r.npy'"

# --- 6c. the automatic space offers flash for an attention ----------------
# (tests/e2e/attention.te at small sizes: the default does not flash; a
# record of the space's flash point, made the log's winner, is built as
# flash and computes the evaluator's numbers)
att=$tmp/att.te
strip_schedules "$srcdir/tests/e2e/attention.te" >"$att"
ad="-D B=1 -D H=2 -D S=40 -D T=45 -D D=8 -D E=8"
# shellcheck disable=SC2086 # $ad splits on purpose
"$TEXC" "$att" $ad --dump=space -o "$tmp/asp" >"$tmp/asp.out" 2>"$tmp/asp.err"
check "auto space: an attention's last stage may be flashed" sh -c "
    grep -q 'ctx.flash *in \[0, 32, 64, 128, 256\]' '$tmp/asp.out' &&
    grep -q 'ctx: attention, 5 points: flash(t, keys) for keys > 0, computing score, smax, prob and psum' '$tmp/asp.out'"
alog=$tmp/att.jsonl
# shellcheck disable=SC2086
"$TEXC" "$att" $ad --tune --tune-whole --trials 2 --jobs 1 --log "$alog" -o "$tmp/at" >"$tmp/at.out" 2>"$tmp/at.err"
line=$(grep '"status":"ok"' "$alog" | grep '"ctx.flash":' | head -1)
printf '%s\n' "$line" | sed 's/"ctx.flash":[0-9]*/"ctx.flash":32/; s/"time_s":[-0-9.e+]*/"time_s":1e-09/' >"$tmp/flash.jsonl"
# shellcheck disable=SC2086
"$TEXC" "$att" $ad --log "$tmp/flash.jsonl" -o "$tmp/fk" --harness --dump=schedule \
    >"$tmp/fk.out" 2>"$tmp/fk.err"
check "flash point: the build applies it" sh -c "
    grep -q 'ctx.flash(t, 32);' '$tmp/fk.out' && grep -q 'ctx.parallel(h);' '$tmp/fk.out' &&
    ! grep -q 'score' '$tmp/fk.out' && grep -q 'using the tuned schedule' '$tmp/fk.err'"
# shellcheck disable=SC2086
"$TEXC" "$att" $ad --eval --save-inputs -o "$tmp/fkref" >/dev/null 2>&1
if ${CC:-cc} -std=gnu11 -O1 -fopenmp -o "$tmp/fkrun" "$tmp/fk.c" "$tmp/fk_harness.c" -lm \
    >"$tmp/fkcc.out" 2>&1 &&
    "$tmp/fkrun" "$tmp/fkref.in.q.npy" "$tmp/fkref.in.k.npy" "$tmp/fkref.in.v.npy" \
        "$tmp/fk.ctx.npy" -r 3 >"$tmp/fkrun.out" 2>&1 &&
    "$builddir/tests/npycmp" "$tmp/fkref.ctx.npy" "$tmp/fk.ctx.npy" >>"$tmp/fkrun.out" 2>&1; then
    ok "flash point: matches the evaluator"
else
    cat "$tmp/fkcc.out" >>"$tmp/fkrun.out"
    not_ok "flash point: matches the evaluator" "$tmp/fkrun.out"
fi

# --- 7. odds and ends -------------------------------------------------------
# (tests/tune_cuda.sh tests --tune --target cuda, with and without a device)
"$TEXC" "$small" --tune --trials 1 -q -o "$tmp/q" >"$tmp/q.out" 2>"$tmp/q.err"
rc=$?
check "-q: tuning prints nothing" sh -c "test $rc -eq 0 && ! test -s '$tmp/q.err'"
check "the default log is under XDG_CACHE_HOME" test -s "$tmp/cache/texc/tuning.jsonl"
check "no temporary directory left (the killed tuner's was removed by the next)" \
    test "$(leftover)" -eq 0

# --- 8. --tune-cache=warm: one copy of the buffers, records kept apart -----
log=$tmp/warm.jsonl
"$TEXC" "$small" --tune --tune-cache=warm --trials 2 --log "$log" -o "$tmp/w" >"$tmp/w.out" 2>"$tmp/w.err"
rc=$?
check "warm: texc --tune --tune-cache=warm exits 0" test "$rc" -eq 0
n=$(lines "$log")
check "warm: all $n records say cache warm, and one copy of the buffers" sh -c "
    test $n -gt 1 && test \"\$(grep -c '\"cache\":\"warm\"' '$log')\" -eq $n &&
    test \"\$(grep -c '\"copies\":1,' '$log')\" -eq $n"
check "warm: the build after tuning uses them" grep -q "using the tuned schedule from $log" "$tmp/w.err"
"$TEXC" "$small" --log "$log" -o "$tmp/w2" >"$tmp/w2.out" 2>"$tmp/w2.err"
check "warm: a build without --tune-cache=warm does not, and says why" \
    grep -q "no record in $log applies .*$n measured with warm caches (--tune-cache=warm)" "$tmp/w2.err"
check "cold: records without --tune-cache say cache cold and rotate copies" sh -c "
    grep -q '\"cache\":\"cold\"' '$tmp/a.jsonl' && ! grep -q '\"copies\":1,' '$tmp/a.jsonl'"
"$TEXC" "$small" --tune-cache=lukewarm --check >"$tmp/w3.out" 2>&1
rc=$?
check "--tune-cache=lukewarm: a usage error" sh -c "test $rc -eq 2 && grep -q 'expected warm or cold' '$tmp/w3.out'"

# The kernel compiler's temporary files go into the candidate's folder
# (issue 15, defect 10): a gcc on PATH that records its TMPDIR.
cc_word=$("$TEXC" "$small" -c -v -o "$tmp/ccw" 2>&1 | sed -n 's/^texc: \([^ ]*\) -std=.*/\1/p' | head -n 1)
real_cc=$(command -v "$cc_word" 2>/dev/null)
if [ -n "$cc_word" ] && [ "${cc_word#*/}" = "$cc_word" ] && [ -n "$real_cc" ]; then
    mkdir -p "$tmp/wrap"
    printf '#!/bin/sh\necho "$TMPDIR $*" >>"%s"\nexec "%s" "$@"\n' "$tmp/wrap.log" "$real_cc" >"$tmp/wrap/$cc_word"
    chmod +x "$tmp/wrap/$cc_word"
    PATH="$tmp/wrap:$PATH" "$TEXC" "$small" --tune --trials 1 --jobs 1 --log "$tmp/wrap.jsonl" \
        -o "$tmp/wrapk" >/dev/null 2>"$tmp/wrap.err"
    # (the compiles: the candidate's run and the harness, not a version probe)
    grep -e ' -o run ' -e ' -c harness.c' "$tmp/wrap.log" >"$tmp/wrap.compiles"
    check "the kernel compiler runs with TMPDIR in the candidate's folder" sh -c "
        test -s '$tmp/wrap.compiles' && ! grep -qv '^\\. ' '$tmp/wrap.compiles'"
else
    skip "the kernel compiler runs with TMPDIR in the candidate's folder" \
        "the configured compiler ($cc_word) is not a bare name found on PATH"
fi

# A log that cannot be written stops the tuning, says what was lost, and
# exits 1 (issue 15, defect 7): here the log already fills a file-size
# limit (4 MiB of empty lines, past the limit in 512- or 1024-byte blocks).
head -c 4194304 /dev/zero | tr '\0' '\n' >"$tmp/full.jsonl"
(trap '' XFSZ; ulimit -f 4096; exec "$TEXC" "$small" --tune --trials 4 --jobs 1 \
    --log "$tmp/full.jsonl" -o "$tmp/fullk") >/dev/null 2>"$tmp/full.err"
rc=$?
check "an unwritable log: tuning stops at the first record, exit 1, the loss said" sh -c "
    test $rc -eq 1 && grep -q 'cannot append to $tmp/full.jsonl' '$tmp/full.err' &&
    grep -q 'stopped: the tuning log cannot be written' '$tmp/full.err' &&
    grep -q '^texc: 1 measurement could not be written to $tmp/full.jsonl and is lost' '$tmp/full.err'"

# The log reader reads logs only (issue 15, defect 8): a folder or a
# device is refused, and a line is a record only with the fields every
# record has; each skipped line says why, with its number.
mkdir -p "$tmp/logdir"
"$TEXC" --log-summary "$tmp/logdir" >/dev/null 2>"$tmp/ld.err"
rc=$?
check "--log-summary of a folder: refused, exit 1" sh -c "
    test $rc -eq 1 && grep -q 'cannot read $tmp/logdir as a tuning log: not a regular file' '$tmp/ld.err'"
timeout 20 "$TEXC" --log-summary /dev/zero >/dev/null 2>"$tmp/lz.err"
rc=$?
check "--log-summary of /dev/zero: refused at once" sh -c "
    test $rc -eq 1 && grep -q 'not a regular file' '$tmp/lz.err'"
"$TEXC" --log=/dev/null "$small" -o "$tmp/nulllog" >/dev/null 2>"$tmp/nul.err"
rc=$?
check "--log=/dev/null: an empty log, read quietly" sh -c "
    test $rc -eq 0 && ! grep -q 'tuning log' '$tmp/nul.err'"
printf '[1,2]\n{"workload": 5, "kernel": "k"}\n{"workload": "w", "kernel": "k", "target": "cpu", "status": "ok", "timestamp": "t", "config": {}}\n' \
    >"$tmp/notlog.jsonl"
"$TEXC" --log-summary "$tmp/notlog.jsonl" >"$tmp/nl.out" 2>"$tmp/nl.err"
check "lines that are no records: skipped, each with its line and reason" sh -c "
    grep -q 'notlog.jsonl:1: skipping a line that is not a tuning record (not a JSON object)' '$tmp/nl.err' &&
    grep -q 'notlog.jsonl:2: skipping .* (no workload string)' '$tmp/nl.err' &&
    grep -q 'notlog.jsonl:3: skipping .* (an ok record without a numeric time_s)' '$tmp/nl.err' &&
    grep -q '0 records' '$tmp/nl.out'"

# Run-time dims (issue 16): one task per bucket, measured at its
# representative sizes, logged as a workload of its own, seeded with the
# neighbour's winner; the build then takes a record per bucket.
sed 's/^dim M = 16,/dim M in 1..40 = 16,/' "$small" >"$tmp/rt.te"
"$TEXC" "$tmp/rt.te" --tune --buckets M=1,2..40 --trials 4 --jobs 1 --log "$tmp/rt.jsonl" \
    -o "$tmp/rtk" --harness >"$tmp/rt.out" 2>"$tmp/rt.err"
rc=$?
check "run-time dims: --tune exits 0, tuning each bucket" sh -c "
    test $rc -eq 0 && grep -q 'tuning 2 buckets of the run-time dims' '$tmp/rt.err' &&
    grep -q 'bucket 1 of 2: M in 2..40 (first: its schedule decides the layouts every variant reads)' '$tmp/rt.err' && grep -q 'bucket 2 of 2: M = 1' '$tmp/rt.err'"
check "run-time dims: the records name their bucket, two workloads" sh -c "
    grep -q '\"M\":{\"lo\":1,\"hi\":1,\"hint\":1}' '$tmp/rt.jsonl' &&
    grep -q '\"M\":{\"lo\":2,\"hi\":40,\"hint\":16}' '$tmp/rt.jsonl' &&
    test \$(sed -n 's/.*\"workload\":\"\\([0-9a-f]*\\)\".*/\\1/p' '$tmp/rt.jsonl' | sort -u | wc -l) -eq 2"
check "run-time dims: the second bucket measured the first one's winner first" \
    test "$(grep -c '"status":"ok"' "$tmp/rt.jsonl")" -ge 4
check "run-time dims: the second bucket's cost model starts from the first one's measurements" \
    grep -q 'bucket 2 of 2: M = 1 (the cost model starts from the [1-9][0-9]* measurements of the bucket tuned before)' "$tmp/rt.err"
check "run-time dims: the build takes a record for each bucket" \
    grep -q 'tuned schedules from the tuning log for 2 of 2 buckets' "$tmp/rt.err"
check "run-time dims: the variants' table names the records" \
    grep -q 'a tuning-log record (workload' "$tmp/rtk.c"
check "run-time dims: --log-summary shows each bucket" sh -c "
    '$TEXC' --log-summary '$tmp/rt.jsonl' >'$tmp/rt.sum' &&
    grep -q 'cpu, bucket M = 1)' '$tmp/rt.sum' && grep -q 'cpu, bucket M in 2..40)' '$tmp/rt.sum'"
done_testing

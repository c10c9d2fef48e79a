#!/bin/sh
# tune_lock.sh — tuners on one machine take turns (tuner/lock.c): two
# tuners on one log measure each configuration once between them; a
# tuner waits while the machine lock is held (here by flock(1)), says so,
# and measures nothing until it gets it; a lock file planted as a symlink,
# a hard link or a FIFO is refused, not followed.
# tests/tune/small.te's exhaustive search is five candidates (the default
# schedule and four knob points).
. "${srcdir:-.}/tests/lib.sh"

small=$srcdir/tests/tune/small.te
TEXC_TUNE_MIN_TIME=0.005
TMPDIR=$tmp
XDG_CACHE_HOME=$tmp/cache
TEXC_LOCK_DIR=$tmp/locks
export TEXC_TUNE_MIN_TIME TMPDIR XDG_CACHE_HOME TEXC_LOCK_DIR
unset TEXC_TUNE_PLANT TEXC_TUNE_KEEP
mkdir "$TEXC_LOCK_DIR"
uid=$(id -u)
lock=$TEXC_LOCK_DIR/texc-measure-$uid.lock

# configs FILE: the configuration of each record, one a line
configs() { if [ -f "$1" ]; then sed -n 's/.*"config":\({[^}]*}\).*/\1/p' "$1"; fi; }
count() { wc -l | tr -d ' '; }
# hold: holds the machine lock with flock(1) until $tmp/release exists;
# returns once it is held, the holder's pid in $holder
hold() {
    rm -f "$tmp/release"
    flock -o "$lock" sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done' sh "$tmp/release" &
    holder=$!
    i=0
    while flock -n "$lock" true && [ $i -lt 100 ]; do
        sleep 0.05
        i=$((i + 1))
    done
}
release() {
    touch "$tmp/release"
    wait "$holder"
}

# --- 1. two tuners, one log: every configuration measured once ---------
log=$tmp/two.jsonl
"$TEXC" "$small" --tune --seed 1 --log "$log" -o "$tmp/a" >"$tmp/a.out" 2>"$tmp/a.err" &
first=$!
"$TEXC" "$small" --tune --seed 2 --log "$log" -o "$tmp/b" >"$tmp/b.out" 2>"$tmp/b.err" &
second=$!
wait "$first"
rc_a=$?
wait "$second"
rc_b=$?
check "two tuners: both exit 0" test "$rc_a" -eq 0 -a "$rc_b" -eq 0
check "two tuners: five records between them (the default and 4 points)" \
    test "$(configs "$log" | count)" -eq 5
check "two tuners: no configuration measured twice" \
    test "$(configs "$log" | sort | uniq -d | count)" -eq 0
check "two tuners: one waited for the other's turn, and said whose" \
    grep -q "waiting for another texc tuner (pid [0-9]*) on this machine" "$tmp/a.err" "$tmp/b.err"
check "two tuners: what the other measured is counted, not measured again" \
    grep -q "[1-4] measured meanwhile by another tuner" "$tmp/a.err" "$tmp/b.err"

# --- 2. the lock held by another process: the tuner waits --------------
log=$tmp/held.jsonl
hold
"$TEXC" "$small" --tune --log "$log" -o "$tmp/c" >"$tmp/c.out" 2>"$tmp/c.err" &
tuner=$!
sleep 1.5
configs "$log" | count >"$tmp/c.during"
cp "$tmp/c.err" "$tmp/c.err.during"
release
wait "$tuner"
rc=$?
check "lock held: nothing measured while another holds the machine" test "$(cat "$tmp/c.during")" -eq 0
check "lock held: the tuner says it waits, and on which lock" \
    grep -q "waiting for another texc tuner on this machine: .*($lock)" "$tmp/c.err.during"
check "lock held: then it measures everything, and exits 0" \
    test "$rc" -eq 0 -a "$(configs "$log" | count)" -eq 5
check "lock held: the wait is said not to count in the time budget" \
    grep -q "waited 0:0[1-9] for other tuners' turns on this machine (not counted in the time budget)" "$tmp/c.err"

# --- 3. held past the time budget: the tuner stops, nothing recorded ----
log=$tmp/late.jsonl
hold
"$TEXC" "$small" --tune --time-budget 1 --log "$log" -o "$tmp/d" >"$tmp/d.out" 2>"$tmp/d.err"
rc=$?
release
check "held past the budget: stops and says why" \
    grep -q "stopped: another texc tuner kept the machine for longer than the time budget (1 s)" "$tmp/d.err"
check "held past the budget: no measurement recorded" test "$(configs "$log" | count)" -eq 0
check "held past the budget: exits 0, as when the budget is spent" test "$rc" -eq 0

# --- 4. planted lock files are refused, never followed ------------------
# plant NAME WHY: tunes with TEXC_LOCK_DIR=$tmp/NAME, which the caller
# has planted; texc must exit 1 saying WHY, before measuring anything
plant() {
    TEXC_LOCK_DIR=$tmp/$1 timeout 60 "$TEXC" "$small" --tune --log "$tmp/$1.jsonl" -o "$tmp/$1" \
        >"$tmp/$1.out" 2>"$tmp/$1.err"
    rc=$?
    check "planted $1: refused with exit status 1" test "$rc" -eq 1
    check "planted $1: says why and what to do" \
        grep -q "cannot use the machine lock $tmp/$1/texc-[a-z]*-$uid.lock: $2; .*set TEXC_LOCK_DIR" "$tmp/$1.err"
    check "planted $1: nothing measured" test ! -e "$tmp/$1.jsonl"
}
echo precious >"$tmp/victim"
mkdir "$tmp/symlink" "$tmp/dangling" "$tmp/hardlink" "$tmp/fifo"
ln -s "$tmp/victim" "$tmp/symlink/texc-measure-$uid.lock"
plant symlink "a symbolic link (not followed)"
ln -s "$tmp/created" "$tmp/dangling/texc-queue-$uid.lock"
plant dangling "a symbolic link (not followed)"
check "planted symlinks: the file linked to is untouched, none created" \
    sh -c "test \"\$(cat '$tmp/victim')\" = precious && test ! -e '$tmp/created'"
ln "$tmp/victim" "$tmp/hardlink/texc-measure-$uid.lock"
plant hardlink "a file with other links"
check "planted hard link: the file is untouched" test "$(cat "$tmp/victim")" = precious
mkfifo "$tmp/fifo/texc-measure-$uid.lock"
plant fifo "not a regular file"

done_testing

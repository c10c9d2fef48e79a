#!/bin/sh
# profile.sh — texc --profile (issue 18, ask 4): the transformer block
# built with a timer around each kernel step, run through its harness
# under ASan and UBSan: the table names every kernel step the build has
# (--dump=memory) with the timed calls' count, the shares add up to
# about 100%, the output still matches the evaluator, and without
# --profile the code carries no timer.  Also a program with run-time
# dims: each variant's kernels are timed under their own names.
. "${srcdir:-.}/tests/lib.sh"

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export ASAN_OPTIONS
# -O0: the sanitizers check as much, and the run-time-dims build (a copy of
# the block for each variant) compiles in seconds, not minutes (e2e.sh)
cflags="-std=gnu11 -O0 -g -fopenmp -fsanitize=address,undefined -fno-sanitize-recover=all"
te=$srcdir/samples/transformer_block.te
d="-D S=13 -D D=36 -D H=3 -D F=40"

# shellcheck disable=SC2086 # $d splits on purpose
if "$TEXC" "$te" $d --eval --save-inputs -o "$tmp/ref" >"$tmp/out" 2>&1 &&
   "$TEXC" "$te" $d --profile --harness -o "$tmp/k" >"$tmp/out" 2>&1 &&
   ${CC:-cc} $cflags -o "$tmp/run" "$tmp/k.c" "$tmp/k_harness.c" -lm >"$tmp/out" 2>&1; then
    ok "--profile --harness builds"
else
    not_ok "--profile --harness builds" "$tmp/out"
fi
set --
for n in x ln1_g ln1_b wq wk wv wo bo ln2_g ln2_b w1 b1 w2 b2; do
    set -- "$@" "$tmp/ref.in.$n.npy"
done
if "$tmp/run" "$@" "$tmp/got.npy" -r 5 >"$tmp/stdout" 2>"$tmp/table" &&
   "$builddir/tests/npycmp" "$tmp/ref.y.npy" "$tmp/got.npy" >"$tmp/out" 2>&1; then
    ok "the profiled kernel matches the evaluator"
else
    cat "$tmp/table" >>"$tmp/out"
    not_ok "the profiled kernel matches the evaluator" "$tmp/out"
fi
# shellcheck disable=SC2086
"$TEXC" "$te" $d --check --dump=memory 2>/dev/null | sed -n 's/^kernel [0-9]* : \([a-z_0-9]*\).*/\1/p' >"$tmp/kernels"
missing=
while read -r k; do
    grep -q "^$k  *5 " "$tmp/table" || missing="$missing $k"
done <"$tmp/kernels"
if [ -s "$tmp/kernels" ] && [ -z "$missing" ]; then
    ok "the table has every kernel, 5 timed calls each ($(wc -l <"$tmp/kernels") kernels)"
else
    echo "missing or wrong:$missing" >"$tmp/out"
    cat "$tmp/table" >>"$tmp/out"
    not_ok "the table has every kernel, 5 timed calls each" "$tmp/out"
fi
total=$(awk '/%$/ { s += $NF + 0 } END { printf "%.0f", s }' "$tmp/table")
if [ "$total" -ge 99 ] && [ "$total" -le 101 ]; then
    ok "the shares add up to 100% ($total)"
else
    not_ok "the shares add up to 100% (got ${total:-nothing})" "$tmp/table"
fi
if grep -q "all  " "$tmp/table"; then
    ok "the table ends with the whole's time"
else
    not_ok "the table ends with the whole's time" "$tmp/table"
fi

# shellcheck disable=SC2086
"$TEXC" "$te" $d -o "$tmp/plain" >/dev/null 2>&1
if ! grep -q "te_prof\|_profile_" "$tmp/plain.c" "$tmp/plain.h"; then
    ok "without --profile the code has no timer"
else
    not_ok "without --profile the code has no timer"
fi

# run-time dims: the variants' kernels, named by variant
sed 's/^dim S = 32,/dim S in 1..64 = 32,/' "$te" >"$tmp/rt.te"
if "$TEXC" "$tmp/rt.te" --profile -o "$tmp/rt" >"$tmp/out" 2>&1 &&
   ${CC:-cc} $cflags -c -o "$tmp/rt.o" "$tmp/rt.c" >>"$tmp/out" 2>&1 &&
   grep -q '"prob (variant 0)"' "$tmp/rt.c" && grep -q "rt_profile_print(FILE \*out);" "$tmp/rt.h"; then
    ok "run-time dims: each variant's kernels timed under their names"
else
    not_ok "run-time dims: each variant's kernels timed under their names" "$tmp/out"
fi

# the cuda target has no timers: a usage error, nothing written
"$TEXC" "$te" $d --target cuda --arch sm_90 --profile -o "$tmp/cu" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q -- "--profile times the C target" "$tmp/out" && [ ! -e "$tmp/cu.h" ]; then
    ok "--profile --target cuda: a usage error, no output"
else
    not_ok "--profile --target cuda: a usage error, no output (rc $rc)" "$tmp/out"
fi
done_testing

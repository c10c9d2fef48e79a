#!/bin/sh
# pool.sh — the generated C's parallel loops (codegen/parallel.c's
# te_parallel_for and its pool of threads), in a program: tests/pool_app.c
# with matmul_gelu at sizes no tile divides (37x70x300: 7 column panels,
# parts of unequal size), compiled like e2e's kernels (ASan + UBSan).
. "${srcdir:-.}/tests/lib.sh"

# -O0: the sanitizers check as much, and it compiles fast (e2e.sh)
KCFLAGS="-std=gnu11 -O0 -g -fopenmp -fsanitize=address,undefined -fno-sanitize-recover=all"
sizes="-D M=37 -D K=70 -D N=300 -K TI=6 -K TJ=48 --log=/dev/null"

# shellcheck disable=SC2086 # $sizes and $KCFLAGS split on purpose
check "texc writes the kernel pk" "$TEXC" "$srcdir/samples/matmul_gelu.te" $sizes -o "$tmp/pk"
check "a parallel loop is a function run by te_parallel_for" \
    grep -q 'te_parallel_for(pk_[a-z_]*_jo, &(struct pk_[a-z_]*_jo_ctx){ x_, w_packed_, b_, z_ }, 0, 7);' "$tmp/pk.c"
check "one OpenMP parallel loop is left: te_parallel_for's fallback" \
    test "$(grep -c '^ *#pragma omp parallel' "$tmp/pk.c")" -eq 1
check "the kernel compiles with -std=c11 -Wall -Wextra -Werror, with and without -fopenmp" \
    sh -c "${CC:-cc} -std=c11 -Wall -Wextra -Werror -fopenmp -c -o '$tmp/c11.o' '$tmp/pk.c' &&
           ${CC:-cc} -std=c11 -Wall -Wextra -Werror -Wno-unknown-pragmas -c -o '$tmp/c11.o' '$tmp/pk.c'"
if command -v clang >/dev/null 2>&1; then
    check "... and with clang -std=c11 -Wall -Wextra -Werror (no OpenMP: Debian's clang lacks libomp)" \
        clang -std=c11 -Wall -Wextra -Werror -Wno-unknown-pragmas -Wno-unused-function -c -o "$tmp/clang.o" "$tmp/pk.c"
else
    skip "... and with clang -std=c11 -Wall -Wextra -Werror" "no clang"
fi
# shellcheck disable=SC2086
check "pool_app builds" ${CC:-cc} $KCFLAGS -I"$tmp" -o "$tmp/pool_app" "$srcdir/tests/pool_app.c" "$tmp/pk.c" -lm -ldl -lpthread

check "1-7 threads, calls in a row, concurrent, in a region, after fork: all give the 1-thread output" \
    "$tmp/pool_app" check
sed 's/^/# /' "$tmp/check.out"
check "the same with TEXC_POOL=0 (OpenMP's threads)" env TEXC_POOL=0 "$tmp/pool_app" check
check "the same with OMP_NUM_THREADS=1" env OMP_NUM_THREADS=1 "$tmp/pool_app" check

# shellcheck disable=SC2086
check "pool_app builds with threads that never sleep (-DTE_POOL_SPIN=2000000000)" \
    ${CC:-cc} $KCFLAGS -DTE_POOL_SPIN=2000000000L -I"$tmp" -o "$tmp/pool_app_spin" \
    "$srcdir/tests/pool_app.c" "$tmp/pk.c" -lm -ldl -lpthread

# shellcheck disable=SC2086
if check "the kernel as a shared library (pkdl)" sh -c "'$TEXC' '$srcdir/samples/matmul_gelu.te' $sizes -o '$tmp/pkdl' &&
        ${CC:-cc} $KCFLAGS -fPIC -shared -o '$tmp/pkdl.so' '$tmp/pkdl.c' -lm"; then
    check "opened, called on 2 threads, closed: the pool's threads go with it" \
        "$tmp/pool_app" dl "$tmp/pkdl.so"
fi

# 500 calls on 2 threads: the pool makes no futex calls once its thread
# runs (a few at start), where libgomp makes two a call (TEXC_POOL=0).
# The pool's threads sleep after spinning a while, and on a loaded machine
# (make -j check) a preempted caller can leave them long enough to, so the
# count is taken on pool_app_spin, whose threads never sleep: it checks
# that a call itself makes none.  The count is strace's; without strace
# these two are skipped.  (Leak checking is off under strace:
# LeakSanitizer cannot run under ptrace.)
futexes() {  # futexes ENV...: futex calls of "pool_app_spin steady 500"
    env ASAN_OPTIONS=detect_leaks=0 "$@" strace -f -c -e trace=futex -o "$tmp/strace.out" "$tmp/pool_app_spin" steady 500 >/dev/null 2>&1 &&
        awk '$NF == "futex" { print $4 }' "$tmp/strace.out"
}
if command -v strace >/dev/null 2>&1; then
    n_pool=$(futexes TEXC_POOL=1)
    n_omp=$(futexes TEXC_POOL=0)
    echo "# futex calls in 500 calls on 2 threads: pool ${n_pool:-none}, OpenMP ${n_omp:-none}"
    check "500 calls through the pool: fewer than 50 futex calls" test "${n_pool:-999999}" -lt 50
    check "the count can fail: OpenMP's threads make 500 or more" test "${n_omp:-0}" -ge 500
else
    skip "500 calls through the pool: fewer than 50 futex calls" "no strace"
    skip "the count can fail: OpenMP's threads make 500 or more" "no strace"
fi
done_testing

#!/bin/sh
# scale.sh — long programs compile in bounded time and memory.
#
# Generated, not committed: a chain of 8000 elementwise stages, each
# reading the one before (fusion merges them into kernels of at most
# TE_MAX_KERNEL_NODES nodes); a chain whose every stage reads the two
# before it (inlined naively, it doubles with every link); programs of
# many independent outputs; one expression over many inputs; and a
# written schedule that inlines every stage of the read-twice chain
# (refused, at the statement that passes the bound).  Each must pass
# --check, a build or --dump=space under ulimit -v (1 GiB) and timeout
# (60 s; a sanitizer build: 3 GiB resident, 180 s): generous resource limits that the old quadratic and exponential
# paths blew through (49 s and 7 GB for the first; stages x variables of
# memory in scheduling, temps x steps in the memory plan, parameters x
# loops and names x names in code generation), not a timing benchmark.
. "${srcdir:-.}/tests/lib.sh"

# program KIND N: the generated program on stdout.
program() {
    awk -v kind="$1" -v n="$2" '
    function term(k) { return k == 1 ? "x[i]" : sprintf("x%d[i]", k) }
    function sum(lo, hi,   mid) {
        if (lo == hi)
            return term(lo)
        mid = int((lo + hi) / 2)
        return "(" sum(lo, mid) " + " sum(mid + 1, hi) ")"
    }
    BEGIN {
        print "dim M = 64;"
        print "input x : f32[M];"
        if (kind == "wide") {
            for (k = 1; k <= n; k++)
                printf "s%d[i] = x[i] * %d.0 + 0.5;\noutput s%d;\n", k, k, k
            exit
        }
        if (kind == "inputs") { # x and x2 .. xN, summed as a balanced tree
            for (k = 2; k <= n; k++)
                printf "input x%d : f32[M];\n", k
            printf "y[i] = %s;\noutput y;\n", sum(1, n)
            exit
        }
        print "s1[i] = x[i] * 1.0001 + 0.5;"
        print "s2[i] = s1[i] * 1.0001 + 0.5;"
        for (k = 3; k <= n; k++)
            if (kind == "chain")
                printf "s%d[i] = s%d[i] * 1.0001 + 0.5;\n", k, k - 1
            else
                printf "s%d[i] = s%d[i] * 1.0001 + s%d[i];\n", k, k - 1, k - 2
        printf "output s%d;\n", n
        if (kind == "inline") {
            print "schedule cpu {"
            for (k = 1; k < n; k++)
                printf "  s%d.compute_inline();\n", k
            print "}"
        }
    }'
}

# limited CMD...: CMD under the limits.  ASan reserves terabytes of
# address space for its shadow, so ulimit -v cannot apply to a sanitizer
# build: there ASan's own limit on resident memory does, higher since it
# counts the shadow and the quarantine, with more time.
if [ -n "${SANITIZER_FLAGS:-}" ]; then
    limited() {
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=3072" timeout 180 "$@"
    }
else
    limited() { (ulimit -v 1048576 && timeout 60 "$@"); }
fi

# bounded DESCRIPTION ARGS...: texc ARGS finishes within the limits.
bounded() {
    desc=$1
    shift
    if limited "$TEXC" "$@" >"$tmp/out" 2>&1; then
        ok "$desc"
    else
        echo "exit status $?" >>"$tmp/out"
        not_ok "$desc" "$tmp/out"
    fi
}

for case in "chain 8000" "twice 1000" "wide 2000" "twice 6000"; do
    set -- $case
    program "$1" "$2" >"$tmp/$1$2.te"
    bounded "$1 of $2 stages: --check" "$tmp/$1$2.te" --check
done
bounded "chain of 8000 stages: a build" "$tmp/chain8000.te" -o "$tmp/chain"
program wide 16000 >"$tmp/wide16000.te"
bounded "wide of 16000 stages: --check --dump=space" "$tmp/wide16000.te" --check --dump=space
for case in "twice 2000" "wide 8000" "inputs 48000"; do
    set -- $case
    program "$1" "$2" >"$tmp/$1$2.te"
    bounded "$1 of $2: a build" "$tmp/$1$2.te" -o "$tmp/$1$2"
done

# Inlining every stage of the read-twice chain is refused, at once.
program inline 2000 >"$tmp/inline.te"
if limited "$TEXC" "$tmp/inline.te" --check -fno-fuse >"$tmp/out" 2>&1; then
    not_ok "inline of 2000 stages: refused" "$tmp/out"
elif grep -q "inline.te:[0-9]*:3: error: cannot inline 's[0-9]*': .* more than the 1024 texc allows" "$tmp/out"; then
    ok "inline of 2000 stages: refused at the statement past the bound"
else
    not_ok "inline of 2000 stages: refused at the statement past the bound" "$tmp/out"
fi

# The chain's kernels stay within the bound: more than one, all named.
"$TEXC" "$tmp/chain8000.te" --check --dump=kernels >"$tmp/kernels" 2>&1
n=$(grep -c '^kernel ' "$tmp/kernels")
if [ "$n" -gt 1 ] && [ "$n" -lt 8000 ]; then
    ok "chain: fusion stops at the size bound ($n kernels)"
else
    not_ok "chain: fusion stops at the size bound ($n kernels)" "$tmp/kernels"
fi

done_testing

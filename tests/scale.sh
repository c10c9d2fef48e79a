#!/bin/sh
# scale.sh — long programs compile in bounded time and memory.
#
# Generated, not committed: a chain of 8000 elementwise stages, each
# reading the one before (fusion merges them into kernels of at most
# TE_MAX_KERNEL_NODES nodes); a chain whose every stage reads the two
# before it (inlined naively, it doubles with every link); and a program
# of many independent outputs.  Each must pass --check, and the chain a
# full build, under ulimit -v (1 GiB) and timeout (60 s): generous
# resource limits that the old quadratic and exponential paths blew
# through (49 s and 7 GB for the first), not a timing benchmark.  (Builds
# of the other two still meet quadratic paths in code generation.)
. "${srcdir:-.}/tests/lib.sh"

# program KIND N: the generated program on stdout.
program() {
    awk -v kind="$1" -v n="$2" 'BEGIN {
        print "dim M = 64;"
        print "input x : f32[M];"
        if (kind == "wide") {
            for (k = 1; k <= n; k++)
                printf "s%d[i] = x[i] * %d.0 + 0.5;\noutput s%d;\n", k, k, k
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
    }'
}

# bounded DESCRIPTION ARGS...: texc ARGS finishes within the limits.
bounded() {
    desc=$1
    shift
    if (ulimit -v 1048576 && timeout 60 "$TEXC" "$@") >"$tmp/out" 2>&1; then
        ok "$desc"
    else
        echo "exit status $?" >>"$tmp/out"
        not_ok "$desc" "$tmp/out"
    fi
}

for case in "chain 8000" "twice 1000" "wide 2000"; do
    set -- $case
    program "$1" "$2" >"$tmp/$1.te"
    bounded "$1 of $2 stages: --check" "$tmp/$1.te" --check
done
bounded "chain of 8000 stages: a build" "$tmp/chain.te" -o "$tmp/chain"

# The chain's kernels stay within the bound: more than one, all named.
"$TEXC" "$tmp/chain.te" --check --dump=kernels >"$tmp/kernels" 2>&1
n=$(grep -c '^kernel ' "$tmp/kernels")
if [ "$n" -gt 1 ] && [ "$n" -lt 8000 ]; then
    ok "chain: fusion stops at the size bound ($n kernels)"
else
    not_ok "chain: fusion stops at the size bound ($n kernels)" "$tmp/kernels"
fi

done_testing

#!/bin/sh
# app.sh — builds nothing; runs samples/app (a user's program calling the
# generated matmul_gelu kernel, built by make check) and reports in TAP.
. "${srcdir:-.}/tests/lib.sh"
check "samples/app: generated matmul_gelu matches a plain C reference" "$builddir/samples/app"
sed 's/^/# /' "$tmp/check.out"
cp "$tmp/check.out" "$tmp/app.out"
# matmul_gelu's w is const: the header offers the prepacked entry points,
# and app.c checks that they give exactly what matmul_gelu gives
check "samples/app: w prepacked once, then matmul_gelu_packed, as matmul_gelu" \
    grep -q '^matmul_gelu_prepack + matmul_gelu_packed: 0 elements differ' "$tmp/app.out"
done_testing

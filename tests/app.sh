#!/bin/sh
# app.sh — builds nothing; runs samples/app (a user's program calling the
# generated matmul_gelu kernel, built by make check) and reports in TAP.
. "${srcdir:-.}/tests/lib.sh"
check "samples/app: generated matmul_gelu matches a plain C reference" "$builddir/samples/app"
sed 's/^/# /' "$tmp/check.out"
done_testing

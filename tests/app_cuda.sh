#!/bin/sh
# app_cuda.sh — runs samples/app_cuda (a user's program running the
# generated matmul_gelu kernels on the GPU, built by make check) and
# reports in TAP; without a GPU, or without the cuda target, a visible SKIP.
. "${srcdir:-.}/tests/lib.sh"
desc="samples/app_cuda: matmul_gelu on the GPU matches a plain C reference"
if [ ! -x "$builddir/samples/app_cuda" ]; then
    skip "$desc" "the cuda target was disabled at configure time"
else
    "$builddir/samples/app_cuda" >"$tmp/check.out" 2>&1
    case $? in
    0) ok "$desc" ;;
    77) skip "$desc" "no CUDA device" ;;
    *) not_ok "$desc" "$tmp/check.out" ;;
    esac
    sed 's/^/# /' "$tmp/check.out"
fi
done_testing

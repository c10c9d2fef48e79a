#!/bin/sh
# fuzz.sh — replays the fuzz corpus (tests/fuzz/corpus) and the programs
# that must fail (tests/diag) through the fuzz target, without libFuzzer:
# every file must give a diagnostic or a graph, never a crash.  The TAP
# lines come from tests/fuzz/replay itself.
set -- "${srcdir:-.}/tests/fuzz/corpus"
[ -d "${srcdir:-.}/tests/diag" ] && set -- "$@" "${srcdir:-.}/tests/diag"
exec "${builddir:-.}/tests/fuzz/replay" "$@"

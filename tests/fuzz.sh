#!/bin/sh
# fuzz.sh — replays every fuzz target's corpus through it, without
# libFuzzer (tests/fuzz/replay*, built from replay.c and each target):
# every file must give a diagnostic or a result, never a crash, and the
# differential targets' checks must hold.  The TAP lines come from the
# replay binaries; one run per target, in this order:
#   frontend  tests/fuzz/corpus and the programs that must fail (tests/diag)
#   compile   tests/fuzz/corpus-compile and tests/fuzz/corpus
#   diff      tests/fuzz/corpus-diff (each file compiles and runs kernels)
#   npy       tests/fuzz/corpus-npy
#   log       tests/fuzz/corpus-log
#   cli       tests/fuzz/corpus-cli
#   onnx      tests/fuzz/corpus-onnx (small models of tests/onnx)
# The plans add up: each replay prints its own, so they are renumbered
# into one.
s=${srcdir:-.}/tests/fuzz
b=${builddir:-.}/tests/fuzz
out=$(mktemp -d "${TMPDIR:-/tmp}/fuzz.sh.XXXXXX") || exit 99
trap 'rm -rf "$out"' EXIT
status=0
run() {  # run REPLAY PATH...
    bin=$1
    shift
    "$b/$bin" "$@" >"$out/tap" 2>"$out/err"
    rc=$?
    grep -v '^1\.\.' "$out/tap" >>"$out/all"
    if [ $rc -ne 0 ]; then
        status=1
        echo "not ok - $bin exited $rc (its last file is the one above)" >>"$out/all"
        sed 's/^/# /' "$out/err" | tail -n 40 >>"$out/all"
    fi
}
: >"$out/all"
run replay "$s/corpus" "${srcdir:-.}/tests/diag"
run replay_compile "$s/corpus-compile" "$s/corpus"
run replay_diff "$s/corpus-diff"
run replay_npy "$s/corpus-npy"
run replay_log "$s/corpus-log"
run replay_cli "$s/corpus-cli"
run replay_onnx "$s/corpus-onnx"
awk '/^(not )?ok/ { n++; sub(/^ok [0-9]+/, "ok " n); sub(/^not ok [0-9]*/, "not ok " n) } { print }
     END { print "1.." n }' "$out/all"
exit $status

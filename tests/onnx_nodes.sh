#!/bin/sh
# onnx_nodes.sh — ONNX's own backend node tests, as conformance: the ~920
# tests python3-onnx generates (a one-node model, its inputs and the
# outputs ONNX's reference gives), each run by texc --eval and compared at
# ONNX's tolerance (rtol 1e-3, atol 1e-7) by tests/onnx_nodes.py, which
# prints one line per test (pass, fail and why, unsupported and the ops)
# and a summary; a test texc does not convert must get its one error
# listing the ops (exit 1).
#
# tests/onnx_nodes.pass lists the tests that pass (sorted): one of them
# failing is a regression and fails this script; a test passing that is
# not on it is reported, not failed (add it to the list).  A sample of 30
# passing tests (every k-th by name) is also compiled with --harness, built
# and run.  The tests are generated into $tmp, not committed; without
# python3-onnx the whole script SKIPs visibly.
. "${srcdir:-.}/tests/lib.sh"
py=
for p in /usr/bin/python3 python3; do
    # (from $tmp: texc's own onnx/ folder must not be the module)
    if (cd "$tmp" && "$p" -c 'import numpy, onnx.backend.test') 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then
    skip "ONNX's backend node tests" "no Python with the onnx module (python3-onnx)"
    done_testing
    exit
fi
helper=${srcdir:-.}/tests/onnx_nodes.py
passlist=${srcdir:-.}/tests/onnx_nodes.pass

# 1. generate the tests into $tmp
if "$py" "$helper" generate "$tmp/data" >"$tmp/gen.out" 2>&1 &&
    n=$(find "$tmp/data/node" -name model.onnx | wc -l) && [ "$n" -gt 0 ]; then
    ok "python3-onnx generated $n node tests"
else
    not_ok "python3-onnx generated the node tests" "$tmp/gen.out"
    done_testing
    exit
fi

# 2. each through texc --eval; the sample compiled and run too
case $TEXC in /*) texc=$TEXC ;; *) texc=$PWD/$TEXC ;; esac
if "$py" "$helper" run "$texc" "$tmp/data/node" "$tmp/work" --jobs 2 \
    --compile 30 "${CC:-cc}" >"$tmp/results" 2>"$tmp/err"; then
    ok "every node test run"
else
    not_ok "every node test run" "$tmp/err"
fi
grep -v '^compiled ' "$tmp/results" | sed 's/^/# /'
grep '^summary: ' "$tmp/results" >/dev/null || not_ok "a summary line" "$tmp/err"

# 3. the checked-in passing tests still pass
sed -n 's/^pass //p' "$tmp/results" | sort >"$tmp/passing"
comm -23 "$passlist" "$tmp/passing" >"$tmp/regressed"
if [ -s "$tmp/regressed" ]; then
    not_ok "every test in tests/onnx_nodes.pass passes" "$tmp/regressed"
else
    ok "every test in tests/onnx_nodes.pass passes ($(wc -l <"$passlist"))"
fi
comm -13 "$passlist" "$tmp/passing" >"$tmp/new"
if [ -s "$tmp/new" ]; then
    echo "# newly passing (not yet in tests/onnx_nodes.pass):"
    sed 's/^/#   /' "$tmp/new"
fi

# 4. an op texc does not convert gets the one error (exit 1), and no test
# crashes texc (exit status above 1, or a signal)
grep -E '^fail [^:]*: (unsupported ops, but exit|texc exit)' "$tmp/results" >"$tmp/bad"
if [ -s "$tmp/bad" ]; then
    not_ok "texc exits 1 with its error on every test it does not pass" "$tmp/bad"
else
    ok "texc exits 1 with its error on every test it does not pass ($(grep -c '^unsupported ' "$tmp/results") with unsupported ops)"
fi

# 5. the sample compiled with --harness, built and run
grep '^compiled ' "$tmp/results" >"$tmp/compiled"
if [ -s "$tmp/compiled" ] && ! grep -q '^compiled fail' "$tmp/compiled"; then
    ok "$(wc -l <"$tmp/compiled") passing tests compiled with --harness, built and run, match"
else
    not_ok "passing tests compiled with --harness, built and run, match" "$tmp/compiled"
fi

done_testing

#!/bin/sh
# golden.sh — golden tests: every tests/diag/*.expect (programs that must
# fail or warn with an exact message) and tests/golden/*.expect (dumps).
#
# An .expect file is, line by line:
#   $ texc ARGS          the command, run in the .expect file's folder
#   exit N               its exit status
#   ...                  its exact stdout
#   --- stderr           (only when there is any) then its exact stderr
# Regenerate with  tests/golden.sh --update [NAME]  and review the diff.
. "${srcdir:-.}/tests/lib.sh"

update=
[ "${1:-}" = --update ] && update=${2:-all}

run_case() {  # run_case EXPECT-FILE -> $tmp/got
    dir=$(dirname "$1")
    cmd=$(sed -n '1s/^\$ texc //p' "$1")
    (cd "$dir" && eval "\"\$TEXC\" $cmd" >"$tmp/stdout" 2>"$tmp/stderr"; echo "exit $?" >"$tmp/status")
    {
        echo "\$ texc $cmd"
        cat "$tmp/status" "$tmp/stdout"
        if [ -s "$tmp/stderr" ]; then
            echo "--- stderr"
            cat "$tmp/stderr"
        fi
    } >"$tmp/got"
}

for expect in "$srcdir"/tests/diag/*.expect "$srcdir"/tests/golden/*.expect; do
    [ -f "$expect" ] || continue
    name=$(basename "$(dirname "$expect")")/$(basename "$expect" .expect)
    run_case "$expect"
    if [ -n "$update" ] && { [ "$update" = all ] || [ "$update" = "$(basename "$name")" ]; }; then
        cp "$tmp/got" "$expect"
        echo "# updated $name"
    fi
    if diff -u "$expect" "$tmp/got" >"$tmp/diff"; then
        ok "$name"
    else
        not_ok "$name" "$tmp/diff"
    fi
done
done_testing

# lib.sh — TAP helpers shared by the test scripts (sourced, not run).
#
# Each script prints "1..N" at the end (plan last is valid TAP), one
# "ok"/"not ok" line per check, and diagnostics as "# " lines.

: "${TEXC:=$builddir/texc}"
tap_n=0
tap_failed=0

ok() {  # ok DESCRIPTION
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - $1"
}

not_ok() {  # not_ok DESCRIPTION [DETAILS-FILE]
    tap_n=$((tap_n + 1))
    tap_failed=$((tap_failed + 1))
    echo "not ok $tap_n - $1"
    if [ -n "${2:-}" ] && [ -f "$2" ]; then
        sed 's/^/# /' "$2" | head -40
    fi
}

skip() {  # skip DESCRIPTION REASON
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - $1 # SKIP $2"
}

check() {  # check DESCRIPTION COMMAND...: ok iff COMMAND succeeds
    desc=$1
    shift
    if "$@" >"$tmp/check.out" 2>&1; then
        ok "$desc"
    else
        not_ok "$desc" "$tmp/check.out"
    fi
}

# strip_schedules FILE: the computation alone: every block that starts
# with `schedule` at the start of a line is dropped, up to the "}" that
# closes it.
strip_schedules() {
    awk '
    skipping == 0 && /^[ \t]*schedule[ \t]/ { skipping = 1; depth = 0; opened = 0 }
    skipping {
        text = $0
        sub(/#.*/, "", text)
        opened += gsub(/\{/, "{", text)
        depth += gsub(/\{/, "{", text) - gsub(/\}/, "}", text)
        if (opened && depth <= 0)
            skipping = 0
        next
    }
    { print }' "$1"
}

relay_tap() {  # relay_tap FILE [PREFIX]: FILE's TAP lines as this script's checks
    while read -r line; do
        case $line in
        "ok "*) ok "${2:-}${line#* - }" ;;
        "not ok "*) not_ok "${2:-}${line#* - }" ;;
        esac
    done <"$1"
}

done_testing() {
    echo "1..$tap_n"
    [ "$tap_failed" -eq 0 ]
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/texc-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

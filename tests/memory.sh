#!/bin/sh
# memory.sh — the memory plan (texc --dump=memory) and the workspace API.
#
# For every sample: the plan texc prints is valid, checked here from the
# dump alone — offsets 64-byte aligned, no two buffers whose live ranges
# (in kernel steps) overlap share a byte, the planned peak is the top of
# the highest buffer and at most the naive sum — and the generated
# header's NAME_WORKSPACE_BYTES is that planned peak.  For the
# transformer block, the plan must save memory (planned peak strictly
# below the naive one), and tests/workspace_app (built by make check from
# the generated code) runs the kernel on a workspace of its own.
. "${srcdir:-.}/tests/lib.sh"

samples=$srcdir/samples

# valid_plan DUMP: the plan in DUMP holds the invariants above.
valid_plan() {
    awk '
    function fail(msg) { print msg; bad = 1 }
    /^buffer / {
        # buffer NAME : BYTES bytes, live [FIRST, LAST], offset OFFSET
        line = $0
        gsub(/[\[\],]/, " ", line)
        split(line, w, " ")
        n++
        name[n] = w[2]; bytes[n] = w[4] + 0; first[n] = w[7] + 0; last[n] = w[8] + 0
        off[n] = w[10] + 0
        size[n] = int((bytes[n] + 63) / 64) * 64
        next
    }
    /^naive peak / { naive = $3 + 0; planned = $7 + 0; seen = 1 }
    END {
        if (!seen) fail("no peak line")
        top = 0; sum = 0
        for (i = 1; i <= n; i++) {
            if (off[i] % 64 != 0) fail(name[i] " at " off[i] ": not 64-byte aligned")
            if (first[i] > last[i]) fail(name[i] ": empty live range")
            if (off[i] + size[i] > top) top = off[i] + size[i]
            sum += size[i]
            for (j = 1; j < i; j++)
                if (first[i] <= last[j] && first[j] <= last[i] && size[i] && size[j] &&
                    off[i] < off[j] + size[j] && off[j] < off[i] + size[i])
                    fail(name[i] " and " name[j] " are live together and share bytes")
        }
        if (top != planned) fail("planned peak " planned ", but the buffers reach " top)
        if (sum != naive) fail("naive peak " naive ", but the buffers sum to " sum)
        if (planned > naive) fail("planned peak " planned " above the naive " naive)
        exit bad
    }' "$1"
}

for te in "$samples"/*.te; do
    sample=$(basename "$te" .te)
    dir=$tmp/$sample
    mkdir -p "$dir"
    if ! "$TEXC" --dump=memory -o "$dir/k" "$te" >"$dir/dump" 2>"$dir/err"; then
        not_ok "$sample: texc --dump=memory" "$dir/err"
        continue
    fi
    check "$sample: the memory plan is valid" valid_plan "$dir/dump"
    planned=$(sed -n 's/^naive peak [0-9]* bytes, planned peak \([0-9]*\) bytes.*/\1/p' "$dir/dump")
    header=$(sed -n 's/^#define K_WORKSPACE_BYTES \([0-9]*\)$/\1/p' "$dir/k.h")
    if [ -n "$planned" ] && [ "$planned" = "$header" ]; then
        ok "$sample: K_WORKSPACE_BYTES is the planned peak ($planned)"
    else
        echo "planned '$planned', header '$header'" >"$dir/cmp"
        not_ok "$sample: K_WORKSPACE_BYTES is the planned peak" "$dir/cmp"
    fi
done

# The check is not vacuous: a plan with two live buffers on one byte fails.
printf '%s\n' 'buffer a : 64 bytes, live [0, 1], offset 0' \
    'buffer b : 64 bytes, live [1, 2], offset 0' \
    'naive peak 128 bytes, planned peak 64 bytes (50.0% less)' >"$tmp/bad"
if valid_plan "$tmp/bad" >/dev/null; then
    not_ok "the plan check rejects two live buffers sharing bytes"
else
    ok "the plan check rejects two live buffers sharing bytes"
fi

# The transformer block: most intermediates die a few kernels after they
# are made, so the plan must beat giving each its own bytes.
dump=$tmp/transformer_block/dump
naive=$(sed -n 's/^naive peak \([0-9]*\) bytes.*/\1/p' "$dump")
planned=$(sed -n 's/^naive peak [0-9]* bytes, planned peak \([0-9]*\) bytes.*/\1/p' "$dump")
if [ -n "$naive" ] && [ -n "$planned" ] && [ "$planned" -lt "$naive" ]; then
    ok "transformer_block: planned peak $planned bytes < naive peak $naive bytes"
else
    not_ok "transformer_block: planned peak '$planned' < naive peak '$naive'" "$dump"
fi

# The cuda target takes its offsets from the same plan.
cu=$tmp/cuda
mkdir -p "$cu"
if ! "$TEXC" --target cuda --arch sm_80 --check "$samples/softmax.te" >/dev/null 2>&1; then
    skip "transformer_block --target cuda: the workspace is the planned peak" \
        "the cuda target is disabled"
elif "$TEXC" --target cuda --arch sm_80 --dump=memory -o "$cu/k" "$samples/transformer_block.te" \
    >"$cu/dump" 2>"$cu/err"; then
    planned=$(sed -n 's/^naive peak [0-9]* bytes, planned peak \([0-9]*\) bytes.*/\1/p' "$cu/dump")
    header=$(sed -n 's/^#define K_WORKSPACE_BYTES \([0-9]*\) .*/\1/p' "$cu/k.h")
    if [ -n "$planned" ] && [ "$planned" = "$header" ] && valid_plan "$cu/dump" >"$cu/err"; then
        ok "transformer_block --target cuda: the workspace is the planned peak ($planned)"
    else
        echo "planned '$planned', header '$header'" >>"$cu/err"
        not_ok "transformer_block --target cuda: the workspace is the planned peak" "$cu/err"
    fi
else
    not_ok "transformer_block --target cuda --dump=memory" "$cu/err"
fi

check "workspace_app: transformer_block_ws on a caller's workspace matches transformer_block" \
    "$builddir/tests/workspace_app"
sed 's/^/# /' "$tmp/check.out"
done_testing

#!/bin/sh
# flash_special.sh — flash (sched/flash.c, codegen/c.c emit_flash) keeps
# the evaluator's NaN and infinity: its row maximum (te_vmaxa, a compare
# and a blend) may drop a NaN score, which the row's exponentials, its sum
# and its weighted sums then carry to the output, as the evaluator's
# max, exp and sum do.  tests/e2e/attention.te at odd sizes with a NaN
# key (head 0: every row NaN), an infinite query element (head 1, row 7:
# an infinite score, inf - inf = NaN) and a NaN value (head 2: one output
# column NaN), under the default schedule and its three .sched files
# (16, 64 and 128 keys a tile: one chunk in registers, a masked tile, two
# chunks), built with ASan and UBSan, each output compared with the
# evaluator's (tests/npycmp: NaN passes only where the reference is NaN).
. "${srcdir:-.}/tests/lib.sh"

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export ASAN_OPTIONS
cflags="-std=gnu11 -O1 -g -fopenmp -fsanitize=address,undefined -fno-sanitize-recover=all"
d="-D B=1 -D H=3 -D S=37 -D T=45 -D D=19 -D E=21"
att=$srcdir/tests/e2e/attention.te
cat >"$tmp/gen.te" <<'TE'
dim B = 1, H = 3, S = 37, T = 45, D = 19, E = 21;
input q0 : f32[B, H, S, D];
input k0 : f32[B, H, T, D];
input v0 : f32[B, T, H, E];
q[b, h, i, d] = select(h == 1 && i == 7 && d == 2, 1.0 / 0.0, q0[b, h, i, d]);
k[b, h, t, d] = select(h == 0 && t == 5 && d == 3, 0.0 / 0.0, k0[b, h, t, d]);
v[b, t, h, e] = select(h == 2 && t == 9 && e == 4, 0.0 / 0.0, v0[b, t, h, e]);
output q, k, v;
TE
in="--input q=$tmp/gen.q.npy --input k=$tmp/gen.k.npy --input v=$tmp/gen.v.npy"
# shellcheck disable=SC2086 # $d and $in split on purpose
if ! "$TEXC" "$tmp/gen.te" --eval -o "$tmp/gen" >"$tmp/out" 2>&1 ||
   ! "$TEXC" "$att" $d --eval $in -o "$tmp/ref" >"$tmp/out" 2>&1; then
    not_ok "the evaluator writes the inputs and the reference" "$tmp/out"
    done_testing
    exit
fi
sed '/^schedule/,$d' "$att" >"$tmp/plain.te"
for s in default 1 2 3; do
    cp "$tmp/plain.te" "$tmp/a.te"
    [ "$s" = default ] || cat "$srcdir/tests/e2e/attention.$s.sched" >>"$tmp/a.te"
    # shellcheck disable=SC2086
    if ! "$TEXC" "$tmp/a.te" $d --harness -o "$tmp/k" >"$tmp/out" 2>&1 ||
       ! ${CC:-cc} $cflags -march=native -o "$tmp/run" "$tmp/k.c" "$tmp/k_harness.c" -lm >"$tmp/out" 2>&1; then
        not_ok "schedule $s: texc and the compiler" "$tmp/out"
        continue
    fi
    if [ "$s" != default ]; then
        check "schedule $s: the chain is one flash kernel" grep -q "flash: ctx = softmax(score)" "$tmp/k.c"
    fi
    if "$tmp/run" "$tmp/gen.q.npy" "$tmp/gen.k.npy" "$tmp/gen.v.npy" "$tmp/got.npy" >"$tmp/out" 2>&1 &&
       "$builddir/tests/npycmp" "$tmp/ref.ctx.npy" "$tmp/got.npy" >>"$tmp/out" 2>&1; then
        ok "schedule $s: NaN and inf as the evaluator has them"
    else
        not_ok "schedule $s: NaN and inf as the evaluator has them" "$tmp/out"
    fi
done
done_testing

#!/bin/sh
# cli.sh — the command line: exit statuses, usage errors, outputs written
# only on success, hostile inputs that must give a diagnostic (status 1)
# and never a crash (a signal gives status >= 128) or a hang.
. "${srcdir:-.}/tests/lib.sh"

samples=$srcdir/samples

expect_status() {  # expect_status DESC WANT CMD...
    desc=$1 want=$2
    shift 2
    timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    if [ "$got" -eq "$want" ]; then
        ok "$desc (exit $want)"
    else
        echo "exit $got, wanted $want" >>"$tmp/err"
        not_ok "$desc" "$tmp/err"
    fi
}

expect_status "--version" 0 "$TEXC" --version
grep -q '^texc [0-9]' "$tmp/out" && ok "--version prints the version" || not_ok "--version output" "$tmp/out"
expect_status "--help" 0 "$TEXC" --help
grep -q -- '--dump=WHAT' "$tmp/out" && ok "--help lists --dump" || not_ok "--help output" "$tmp/out"
expect_status "no file is a usage error" 2 "$TEXC"
expect_status "two files are a usage error" 2 "$TEXC" "$samples/softmax.te" "$samples/softmax.te"
expect_status "unknown option" 2 "$TEXC" --frobnicate "$samples/softmax.te"
expect_status "bad --dump form" 2 "$TEXC" --dump=nothing "$samples/softmax.te"
expect_status "bad -D" 2 "$TEXC" -D M "$samples/softmax.te"
expect_status "non-integer -D" 2 "$TEXC" -D M=abc "$samples/softmax.te"
expect_status "bad --target" 2 "$TEXC" --target=tpu "$samples/softmax.te"
expect_status "-K with an unknown knob" 2 "$TEXC" -K NOPE=1 "$samples/matmul_gelu.te"
expect_status "-K with a value not in the knob" 2 "$TEXC" -K TI=7 "$samples/matmul_gelu.te"
expect_status "-K with a value of the knob" 0 "$TEXC" -K TI=4 --check --dump=schedule "$samples/matmul_gelu.te"
grep -q 'y.tile(i, j, 4, ' "$tmp/out" && ok "-K sets the knob" || not_ok "-K sets the knob" "$tmp/out"
expect_status "a build with the file's schedule" 0 "$TEXC" -D M=16 --log=/dev/null "$samples/matmul_gelu.te" -o "$tmp/own"
grep -qx " \* schedule: the file's \`schedule cpu\`, the default for the stages it leaves out" "$tmp/own.c" &&
    grep -qx " \* Schedule: the file's \`schedule cpu\`, the default for the stages it leaves out." "$tmp/own.h" &&
    ok "the generated files say the schedule is the file's" ||
    not_ok "the generated files say the schedule is the file's" "$tmp/own.c"
expect_status "missing file" 1 "$TEXC" "$tmp/does-not-exist.te"
grep -q "cannot read" "$tmp/err" && ok "missing file message" || not_ok "missing file message" "$tmp/err"
expect_status "-D of an unknown dim" 1 "$TEXC" -D Q=3 "$samples/softmax.te"

# --eval writes one .npy per output, and nothing when the program fails.
expect_status "--eval" 0 "$TEXC" --eval -D M=4 -D N=5 -o "$tmp/sm" "$samples/softmax.te"
[ -f "$tmp/sm.p.npy" ] && ok "--eval writes PREFIX.OUTPUT.npy" || not_ok "--eval output file"
printf 'dim N = 4;\ninput x : f32[N];\ny[i] = x[i + 1];\noutput y;\n' >"$tmp/oob.te"
expect_status "an out-of-bounds program" 1 "$TEXC" --eval -o "$tmp/oob" "$tmp/oob.te"
[ ! -e "$tmp/oob.y.npy" ] && ok "no output file after an error" || not_ok "partial output left behind"
expect_status "--input with an unknown name" 2 "$TEXC" --eval --input q=/dev/null -o "$tmp/x" "$samples/softmax.te"
expect_status "--input with a wrong shape" 1 "$TEXC" --eval -D M=4 -D N=3 --input "x=$tmp/sm.p.npy" -o "$tmp/x" "$samples/softmax.te"
expect_status "--input round trip" 0 "$TEXC" --eval -D M=4 -D N=5 --input "x=$tmp/sm.p.npy" -o "$tmp/again" "$samples/softmax.te"

# --input stores values as the input's dtype does: f64 data into an f32
# input is rounded to f32 (what a kernel called on it sees), and an i32 or
# bool input refuses a value it cannot hold (2.5; a NaN read as bool).
npycmp=$builddir/tests/npycmp
printf 'dim N = 3;\ninput a : f64[N];\nz[i] = a[i] * 0.0 + 1.0 / 3.0;\noutput z;\n' >"$tmp/third.te"
printf 'dim N = 3;\ninput x : f32[N];\ny[i] = f64(x[i]);\noutput y;\n' >"$tmp/widen.te"
printf 'dim N = 3;\ninput a : f64[N];\nz[i] = f64(f32(a[i] * 0.0 + 1.0 / 3.0));\noutput z;\n' >"$tmp/third32.te"
"$TEXC" --eval -o "$tmp/third" "$tmp/third.te" && "$TEXC" --eval -o "$tmp/third32" "$tmp/third32.te" &&
    "$TEXC" --eval --input "x=$tmp/third.z.npy" -o "$tmp/widen" "$tmp/widen.te" &&
    "$npycmp" "$tmp/third32.z.npy" "$tmp/widen.y.npy" >"$tmp/err" 2>&1 &&
    ! "$npycmp" "$tmp/third.z.npy" "$tmp/widen.y.npy" >/dev/null 2>&1 &&
    ok "--input rounds f64 data to an f32 input's values" ||
    not_ok "--input rounds f64 data to an f32 input's values" "$tmp/err"
printf 'dim N = 3;\ninput a : f32[N];\nz[i] = a[i] * 0.0 + 2.5;\noutput z;\n' >"$tmp/half.te"
printf 'dim N = 3;\ninput x : i32[N];\ny[i] = x[i] + 1;\noutput y;\n' >"$tmp/int.te"
printf 'dim N = 3;\ninput x : bool[N];\ny[i] = select(x[i], 1.0, 0.0);\noutput y;\n' >"$tmp/flag.te"
printf 'dim N = 3;\ninput a : f32[N];\nz[i] = sqrt(a[i] * 0.0 - 1.0);\noutput z;\n' >"$tmp/nan.te"
"$TEXC" --eval -o "$tmp/half" "$tmp/half.te" && "$TEXC" --eval -o "$tmp/nan" "$tmp/nan.te" ||
    not_ok "--eval writes the .npy files of the --input tests"
expect_status "--input 2.5 into an i32 input" 1 "$TEXC" --eval --input "x=$tmp/half.z.npy" -o "$tmp/int" "$tmp/int.te"
grep -q "value 0 is 2.5, which the i32 input x cannot hold" "$tmp/err" &&
    ok "--input names the value an i32 input cannot hold" ||
    not_ok "--input names the value an i32 input cannot hold" "$tmp/err"
[ ! -e "$tmp/int.y.npy" ] && ok "no output after a refused --input" || not_ok "no output after a refused --input"
expect_status "--input NaN into a bool input" 1 "$TEXC" --eval --input "x=$tmp/nan.z.npy" -o "$tmp/flag" "$tmp/flag.te"
# u8 and i8 take exactly their ranges: an i32 file of 255 and -128 round
# trips through them, 256 and -1 do not fit a u8 (nor -129 an i8)
printf 'dim N = 3;\ninput a : i32[N];\nz[i] = select(i == 0, 255, select(i == 1, 256, -1)) + a[i] * 0;\noutput z;\n' >"$tmp/bytes.te"
printf 'dim N = 3;\ninput x : u8[N];\ny[i] = i32(x[i]);\noutput y;\n' >"$tmp/u8.te"
printf 'dim N = 3;\ninput x : i8[N];\ny[i] = i32(x[i]);\noutput y;\n' >"$tmp/i8.te"
"$TEXC" --eval -o "$tmp/bytes" "$tmp/bytes.te" || not_ok "--eval writes the .npy file of the u8 tests"
expect_status "--input 256 into a u8 input" 1 "$TEXC" --eval --input "x=$tmp/bytes.z.npy" -o "$tmp/u8" "$tmp/u8.te"
grep -q "value 1 is 256, which the u8 input x cannot hold" "$tmp/err" &&
    ok "--input names the value a u8 input cannot hold" ||
    not_ok "--input names the value a u8 input cannot hold" "$tmp/err"
printf 'dim N = 2;\ninput a : i32[N];\nz[i] = select(i == 0, 127, -128) + a[i] * 0;\noutput z;\n' >"$tmp/i8ok.te"
"$TEXC" --eval -o "$tmp/i8ok" "$tmp/i8ok.te" && "$TEXC" --eval --input "x=$tmp/i8ok.z.npy" -o "$tmp/i8" -D N=2 "$tmp/i8.te" 2>"$tmp/err" &&
    "$TEXC" --eval --input "x=$tmp/i8.y.npy" -o "$tmp/i8back" -D N=2 "$tmp/i8.te" 2>>"$tmp/err" &&
    "$npycmp" "$tmp/i8ok.z.npy" "$tmp/i8back.y.npy" >>"$tmp/err" 2>&1 &&
    ok "--input reads i8 data at its limits, through i32 files" ||
    not_ok "--input reads i8 data at its limits, through i32 files" "$tmp/err"

# Hostile inputs: a diagnostic and status 1, never a crash or a hang.
: >"$tmp/empty.te"
expect_status "empty file" 1 "$TEXC" "$tmp/empty.te"
head -c 4096 /dev/urandom >"$tmp/garbage.te" 2>/dev/null || dd if=/dev/urandom of="$tmp/garbage.te" bs=4096 count=1 2>/dev/null
expect_status "binary garbage" 1 "$TEXC" "$tmp/garbage.te"
printf 'dim N = 4;\000\ninput x : f32[N];\n' >"$tmp/nul.te"
expect_status "a NUL byte" 1 "$TEXC" "$tmp/nul.te"
grep -q "NUL byte" "$tmp/err" && ok "NUL byte message" || not_ok "NUL byte message" "$tmp/err"
printf 'dim N = 4; /* never closed\n' >"$tmp/comment.te"
expect_status "unterminated comment" 1 "$TEXC" "$tmp/comment.te"
printf 'schedule cpu { y.cache_read(local, y, "KN16); }\n' >"$tmp/string.te"
expect_status "unterminated string" 1 "$TEXC" "$tmp/string.te"
awk 'BEGIN { printf "dim N = 4;\ninput x : f32[N];\ny[i] = "; for (i = 0; i < 10000; i++) printf "("; printf "x[i]"; for (i = 0; i < 10000; i++) printf ")"; printf ";\noutput y;\n" }' >"$tmp/deep.te"
expect_status "10,000-deep parentheses" 1 "$TEXC" "$tmp/deep.te"
awk 'BEGIN { printf "dim N = 4;\ninput x : f32[N];\ny[i] = "; for (i = 0; i < 10000; i++) printf "-"; printf "x[i];\noutput y;\n" }' >"$tmp/unary.te"
expect_status "10,000 unary minuses" 1 "$TEXC" "$tmp/unary.te"
awk 'BEGIN { printf "dim "; for (i = 0; i < 1048576; i++) printf "a"; printf " = 4;\n" }' >"$tmp/ident.te"
expect_status "a 1 MB identifier" 1 "$TEXC" "$tmp/ident.te"
printf 'dim N = 99999999999999999999999;\n' >"$tmp/bigint.te"
expect_status "an integer that overflows" 1 "$TEXC" "$tmp/bigint.te"
printf 'let c = 1e999;\n' >"$tmp/bigfloat.te"
expect_status "a float that overflows" 1 "$TEXC" "$tmp/bigfloat.te"
printf 'dim A = 4294967296, B = 4294967296;\ninput x : f32[A, B];\ny[i, j] = x[i, j];\noutput y;\n' >"$tmp/huge.te"
expect_status "dims whose product overflows 64 bits" 1 "$TEXC" "$tmp/huge.te"
awk 'BEGIN { printf "input x : f32["; for (i = 0; i < 64; i++) printf "%s1", (i ? ", " : ""); printf "];\n" }' >"$tmp/rank64.te"
expect_status "a rank-64 tensor" 1 "$TEXC" "$tmp/rank64.te"

# --- the harness (texc --harness) on the files --eval writes ----------
# bf16 inputs come as '<f4' (NumPy has no bf16): the harness converts;
# a file of the wrong shape or dtype is an error, never a silent misread
cat >"$tmp/bf.te" <<'EOF2'
dim M = 5, N = 19, K = 7;
input x : bf16[M, K];
input w : const bf16[K, N];
y[i, j] = sum(k) x[i, k] * w[k, j];
z[i, j] = relu(y[i, j]);
output z;
EOF2
if "$TEXC" "$tmp/bf.te" --eval --save-inputs -o "$tmp/bf" &&
   "$TEXC" "$tmp/bf.te" --harness -o "$tmp/bk" &&
   ${CC:-cc} -std=gnu11 -O1 -fopenmp $SANITIZER_FLAGS -o "$tmp/bk" "$tmp/bk.c" "$tmp/bk_harness.c" -lm \
       2>"$tmp/cc.err"; then
    check "harness: bf16 inputs from --eval's '<f4' files match the reference" sh -c "
        '$tmp/bk' '$tmp/bf.in.x.npy' '$tmp/bf.in.w.npy' '$tmp/bz.npy' &&
        '$builddir/tests/npycmp' '$tmp/bf.z.npy' '$tmp/bz.npy'"
    "$tmp/bk" "$tmp/bf.z.npy" "$tmp/bf.in.w.npy" "$tmp/bz.npy" 2>"$tmp/err"
    check "harness: an input of another shape is an error" sh -c "
        test $? -eq 2 && grep -q 'not of the shape the kernel takes (5, 7)' '$tmp/err'"
    printf 'dim M = 5, K = 7;\ninput x : i32[M, K];\ny[i, k] = x[i, k] + 1;\noutput y;\n' >"$tmp/i.te"
    "$TEXC" "$tmp/i.te" --eval -o "$tmp/i" >/dev/null 2>&1
    "$tmp/bk" "$tmp/i.y.npy" "$tmp/bf.in.w.npy" "$tmp/bz.npy" 2>"$tmp/err"
    check "harness: an input of another dtype is an error" sh -c "
        test $? -eq 2 && grep -q \"holds '<i4' values, expected '<u2' or '<f4'\" '$tmp/err'"
else
    not_ok "harness: builds for a bf16 program" "$tmp/cc.err"
fi
# a write that fails (here past a file-size limit, as on a full disk) is
# said, with status 1, and leaves no file of the set behind
(trap '' XFSZ; ulimit -f 8; exec "$TEXC" "$samples/transformer_block.te" -o "$tmp/full") \
    >/dev/null 2>"$tmp/full.err"
check "a failed write: status 1, a message naming the file, no file left" sh -c "
    test $? -eq 1 && grep -q '^texc: cannot write $tmp/full.c.tmp[A-Za-z0-9]*: ' '$tmp/full.err' &&
    ! ls '$tmp'/full.* 2>/dev/null | grep -v 'full.err'"
# Output names that are not C identifiers (issue 15): the .c includes the
# header by its file name, the entry point is a C name that no header the
# .c or the harness includes declares, and what names no file is refused.
mkdir -p "$tmp/names"
cp "$samples/softmax.te" "$tmp/names/my-kernel.te"
for name in my-kernel int 1abc kérnel fmaf sigaction read pthread_join omp_get_max_threads; do
    if [ "$name" = my-kernel ]; then
        set -- # the prefix from the file's name
    else
        set -- -o "$tmp/names/$name"
    fi
    if (cd "$tmp/names" && "$TEXC" my-kernel.te -D M=4 -D N=16 --harness "$@") >"$tmp/names/err" 2>&1 &&
        ${CC:-cc} -std=gnu11 -fopenmp -Wall -Werror -o "$tmp/names/run" "$tmp/names/$name.c" \
            "$tmp/names/${name}_harness.c" -lm >>"$tmp/names/err" 2>&1; then
        ok "-o $name: the C and its harness compile and link"
    else
        not_ok "-o $name: the C and its harness compile and link" "$tmp/names/err"
    fi
done
grep -q '^void fmaf_kernel(' "$tmp/names/fmaf.h" && grep -q '^void my_kernel(' "$tmp/names/my-kernel.h" &&
    ok "a C library name gets _kernel, other characters '_'" ||
    not_ok "a C library name gets _kernel, other characters '_'" "$tmp/names/fmaf.h"
for bad in "$tmp/names/" "$tmp/names/.." ""; do
    expect_status "-o '$bad' names no file: a usage error" 2 "$TEXC" "$samples/softmax.te" -o "$bad"
done
grep -q "ends in no file name" "$tmp/err" && ! ls "$tmp/names/.c" "$tmp/names/.h" .c .h 2>/dev/null &&
    ok "-o '': the message says why, and no hidden .c or .h is written" ||
    not_ok "-o '': the message says why, and no hidden .c or .h is written" "$tmp/err"
# Hostile folders (issue 15): a symlink planted at PREFIX.c.tmp or
# PREFIX.h.tmp is not written through, nor removed; --eval's outputs go
# through temporary files too, and a symlink at the output itself is
# replaced, not followed; a failed write removes only what texc made.
mkdir -p "$tmp/ln/d"
echo precious >"$tmp/ln/victim"
ln -s ../victim "$tmp/ln/d/k.c.tmp"
ln -s ../victim "$tmp/ln/d/k.h.tmp"
ln -s ../victim "$tmp/ln/d/k.p.npy"
"$TEXC" "$samples/softmax.te" -D M=4 -D N=16 -o "$tmp/ln/d/k" >"$tmp/ln/out" 2>&1 &&
    "$TEXC" "$samples/softmax.te" -D M=4 -D N=16 --eval -o "$tmp/ln/d/k" >>"$tmp/ln/out" 2>&1
check "planted symlinks: the victim is untouched, the outputs are files, the links stay" sh -c "
    test \"\$(cat '$tmp/ln/victim')\" = precious &&
    test -f '$tmp/ln/d/k.c' && ! test -L '$tmp/ln/d/k.c' && test -f '$tmp/ln/d/k.h' &&
    test -f '$tmp/ln/d/k.p.npy' && ! test -L '$tmp/ln/d/k.p.npy' &&
    test -L '$tmp/ln/d/k.c.tmp' && test -L '$tmp/ln/d/k.h.tmp'"
rm -f "$tmp/ln/d/k.c" "$tmp/ln/d/k.h"
echo mine >"$tmp/ln/d/big.c.tmp"
(trap '' XFSZ; ulimit -f 8; exec "$TEXC" "$samples/transformer_block.te" -o "$tmp/ln/d/big") \
    >/dev/null 2>&1
check "a failed write removes only what texc made" sh -c "
    test \"\$(cat '$tmp/ln/d/big.c.tmp')\" = mine && ! ls '$tmp/ln/d/' | grep -q 'big.c.tmp.\|big.h\|big.c$'"
# Options checked at once (issue 15, defect 12)
expect_status "--dump=, (an empty form)" 2 "$TEXC" --dump=, --check "$samples/softmax.te"
expect_status "--dump=kernels, (a trailing comma)" 2 "$TEXC" --dump=kernels, --check "$samples/softmax.te"
expect_status "--input given twice for one input" 2 "$TEXC" --eval --input x=a.npy --input x=b.npy \
    "$samples/softmax.te"
grep -q "given twice" "$tmp/err" && ok "--input twice: says so" || not_ok "--input twice: says so" "$tmp/err"
expect_status "--plot in a folder that does not exist: said before tuning" 1 "$TEXC" --tune \
    --plot "$tmp/no/such/dir/p.svg" --log "$tmp/plot.jsonl" "$samples/softmax.te"
grep -q "^texc: --plot $tmp/no/such/dir/p.svg: cannot write there" "$tmp/err" && ! test -e "$tmp/plot.jsonl" &&
    ok "--plot: the message, and nothing measured" || not_ok "--plot: the message, and nothing measured" "$tmp/err"
awk 'BEGIN { printf "dim M = 8;\ninput x : f32[M];\ny[i] = x[i] + 1.0;\noutput y;\n"
             printf "schedule cpu {\n  y.split(i, ?T in [1"
             for (v = 2; v <= 4097; v++) printf ", %d", v
             printf "]) -> a, b;\n}\n" }' >"$tmp/bigknob.te"
expect_status "a knob list of 4097 values" 1 "$TEXC" --check "$tmp/bigknob.te"
grep -q "bigknob.te:6:20: error: a knob holds at most 4096 values, this list 4097" "$tmp/err" &&
    ok "a knob list over the limit: the range's limit, with its place" ||
    not_ok "a knob list over the limit: the range's limit, with its place" "$tmp/err"
# A long schedule is read in linear time (issue 15, defect 4): 50,000
# statements whose error is at the second took 57 s and 19.6 GB when each
# append copied the statement array.  (A hang guard, not a timing.)
awk 'BEGIN { printf "dim M = 8;\ninput x : f32[M];\ny[i] = x[i] + 1.0;\noutput y;\nschedule cpu {\n"
             for (k = 0; k < 50000; k++) print "  y.unroll(i);"
             print "}" }' >"$tmp/long.te"
timeout 30 "$TEXC" --check "$tmp/long.te" >/dev/null 2>"$tmp/long.err"
rc=$?
check "50,000 schedule statements: the first error, promptly" sh -c "
    test $rc -eq 1 && grep -q 'long.te:7:3: error: cannot unroll' '$tmp/long.err'"
timeout 30 "$TEXC" /dev/zero >/dev/null 2>"$tmp/zero.err"
rc=$?
check "texc /dev/zero: refused past the size limit, not read without bound" sh -c "
    test $rc -eq 1 && grep -q 'cannot read /dev/zero: longer than 64 MiB' '$tmp/zero.err'"
# Run-time dims (issue 16, its first phase): -D specializes one to a
# constant, and the program then compiles exactly as the static one does;
# without -D a CPU build (and --tune) takes it at run time, and --eval and CUDA
# refuse it with one diagnostic at the dim.
mkdir -p "$tmp/rt/static" "$tmp/rt/dyn"
cp "$samples/matmul_gelu.te" "$tmp/rt/static/"
sed 's/^dim M = 512, N = 3072, K = 768;/dim M in 1..4096 = 512, N = 3072, K = 768;/' \
    "$samples/matmul_gelu.te" >"$tmp/rt/dyn/matmul_gelu.te"
check "the run-time matmul_gelu declares M in 1..4096" grep -q '^dim M in 1..4096 = 512,' "$tmp/rt/dyn/matmul_gelu.te"
(cd "$tmp/rt/static" && "$TEXC" --log=/dev/null --harness matmul_gelu.te) >"$tmp/rt/err" 2>&1 &&
    (cd "$tmp/rt/dyn" && "$TEXC" --log=/dev/null --harness -D M=512 matmul_gelu.te) >>"$tmp/rt/err" 2>&1 &&
    cmp "$tmp/rt/static/matmul_gelu.c" "$tmp/rt/dyn/matmul_gelu.c" >>"$tmp/rt/err" 2>&1 &&
    cmp "$tmp/rt/static/matmul_gelu.h" "$tmp/rt/dyn/matmul_gelu.h" >>"$tmp/rt/err" 2>&1 &&
    cmp "$tmp/rt/static/matmul_gelu_harness.c" "$tmp/rt/dyn/matmul_gelu_harness.c" >>"$tmp/rt/err" 2>&1 &&
    ok "dim M in 1..4096 = 512 with -D M=512: the static program's C, byte for byte" ||
    not_ok "dim M in 1..4096 = 512 with -D M=512: the static program's C, byte for byte" "$tmp/rt/err"
# (N and K small: the evaluator is naive, and slow under the sanitizers)
expect_status "-D M=100 on a run-time dim: --eval" 0 "$TEXC" --eval -D M=100 -D N=24 -D K=16 \
    -o "$tmp/rt/e" "$tmp/rt/dyn/matmul_gelu.te"
check "-D M=100 on a run-time dim: the output is 100 rows" sh -c "
    head -c 128 '$tmp/rt/e.z.npy' | grep -q \"'shape': (100, 24)\""
expect_status "-D M=4097 outside the range" 1 "$TEXC" --check -D M=4097 "$tmp/rt/dyn/matmul_gelu.te"
grep -q "matmul_gelu.te:7:10: error: -D M=4097: outside the range 1..4096 of 'M'" "$tmp/err" &&
    ok "-D outside the range: the range's place" || not_ok "-D outside the range: the range's place" "$tmp/err"
for action in --eval "--target=cuda --arch=sm_90 --tune"; do
    what=${action%% *}
    [ "$what" = --target=cuda ] && what="tuning for the cuda target"
    rtmsg="matmul_gelu.te:7:5: error: run-time dim 'M' (1..4096): $what takes static sizes only, for now; give it a size with -D M=VALUE"
    rm -f "$tmp/rt/r".*
    # shellcheck disable=SC2086 # ACTION is words
    expect_status "a run-time dim without -D: texc $action refuses it" 1 \
        "$TEXC" $action --log="$tmp/rt/log" -o "$tmp/rt/r" "$tmp/rt/dyn/matmul_gelu.te"
    if [ "$(grep -c error: "$tmp/err")" -eq 1 ] && grep -qF "$rtmsg" "$tmp/err" &&
        ! ls "$tmp/rt/r".* >/dev/null 2>&1 && [ ! -s "$tmp/rt/log" ]; then
        ok "texc $action: one diagnostic at the dim, nothing written"
    else
        not_ok "texc $action: one diagnostic at the dim, nothing written" "$tmp/err"
    fi
done
# a cuda build takes it too (tests/cuda_rtdims.sh runs its kernels)
if "$TEXC" --target cuda --arch sm_80 "$samples/transpose_add.te" --check 2>&1 |
        grep -q "disabled at configure time"; then
    skip "a run-time dim without -D: texc --target=cuda --check takes it" "the cuda target is disabled"
else
    expect_status "a run-time dim without -D: texc --target=cuda --check takes it" 0 \
        "$TEXC" --target=cuda --arch=sm_90 --check --log="$tmp/rt/log" "$tmp/rt/dyn/matmul_gelu.te"
fi
# a CPU build takes the run-time dim: the functions take M first
expect_status "a run-time dim without -D: texc builds it for the CPU" 0 \
    "$TEXC" --log="$tmp/rt/log" -o "$tmp/rt/r" "$tmp/rt/dyn/matmul_gelu.te"
check "the entry function takes M first and returns int" \
    grep -q "^int r(int64_t M, const float \*x, const float \*w, const float \*b, float \*z);" "$tmp/rt/r.h"

# Edge tiles out of the hot loop (sched/peel.c): where the row tile of 8
# does not divide M, the full tiles' loop comes first with constant
# extents (its unrolled rows and vectors untested), then the edge tile.
# full_tiles FILE FROM TO: FILE's lines from the first holding FROM up to
# the first after it holding TO (the edge tile's loop).
full_tiles() {
    awk -v from="$2" -v to="$3" 'index($0, from) { on = 1 } on && index($0, to) { exit } on { print }' "$1"
}
no_edge_tests() {  # no_edge_tests FILE: the full tiles' code, with no test of the edge
    grep -q 'i: unrolled 8 times' "$1" && ! grep -q 'te_min_i64\|if (' "$1"
}
mkdir -p "$tmp/peel"
(cd "$tmp/peel" && "$TEXC" --log=/dev/null -D M=100 -o st "$samples/matmul_gelu.te") >"$tmp/peel/err" 2>&1
full_tiles "$tmp/peel/st.c" 'for (int64_t io = 0; io < 12; io++) {' 'for (int64_t io = 12; io < 13; io++) {' \
    >"$tmp/peel/st.full"
check "-D M=100: the 12 full row tiles' loop tests no edge" no_edge_tests "$tmp/peel/st.full"
check "-D M=100: then the edge tile, its 4 rows unrolled" sh -c "
    sed -n '/for (int64_t io = 12; io < 13; io++) {/,\$p' '$tmp/peel/st.c' | grep -q 'i: unrolled 4 times'"
# (the variant for M in 9..4096: its loop variable is numbered after the
# variants before it, io_9)
io=$(sed -n 's/.*for (int64_t \(io[_0-9]*\) = 0; io[_0-9]* < M \/ 8; .*/\1/p' "$tmp/rt/r.c" | head -1)
full_tiles "$tmp/rt/r.c" "for (int64_t $io = 0; $io < M / 8; $io++) {" \
    "for (int64_t $io = M / 8; $io < (M + 7) / 8; $io++) {" >"$tmp/peel/rt.full"
check "run-time M: the M / 8 full row tiles' loop tests no edge" no_edge_tests "$tmp/peel/rt.full"

done_testing

/* fuzz_npy.c — the .npy reader (lang/npy.c) on fuzzed files.
 *
 * The first two bytes choose what the file is read as, the way --input
 * reads a file for an input: byte 0 the dtype (any of TE_DTYPES), byte 1
 * the rank (0 to 4) and then one byte per dimension (1 to 8 elements
 * each); the rest is the file, read from memory (fmemopen).  A message
 * and -1 is a correct answer; reading out of bounds, a crash, a hang or a
 * sanitizer report is a finding, and so is a success that leaves a value
 * unwritten (the buffer starts filled with a NaN payload no conversion
 * yields) or gives an integer input a value that is not finite.  The
 * reader's messages go to /dev/null: glibc lets stderr be assigned. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (size < 2)
        return 0;
    Tensor t = { .name = "x", .kind = TK_INPUT };
    t.dtype = (DType)(1 + data[0] % (DT_COUNT - 1));
    t.rank = data[1] % 5;
    size_t used = 2;
    for (int d = 0; d < t.rank; d++)
        t.shape[d] = used < size ? 1 + data[used++] % 8 : 1;
    int64_t n = tensor_elems(&t);
    double *values = malloc(sizeof *values * (size_t)n);
    if (!values)
        abort();
    /* a NaN with a payload no conversion yields: left unwritten */
    uint64_t marker = 0x7ff4dead0000beefu;
    for (int64_t i = 0; i < n; i++)
        memcpy(&values[i], &marker, sizeof marker);
    /* fmemopen of a zero-length buffer is an error: the empty file is
       one byte read as none */
    static char empty[1];
    size_t len = size - used;
    FILE *f = len ? fmemopen((void *)(data + used), len, "rb") : fmemopen(empty, 1, "rb");
    if (!f)
        abort();
    if (!len)
        (void)fgetc(f);
    FILE *saved = stderr;
    stderr = fuzz_devnull();
    int rc = npy_read_file(f, "fuzz.npy", &t, values);
    stderr = saved;
    fclose(f);
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &values[i], sizeof bits);
        if (bits == marker)
            fuzz_fail("npy_read succeeded but left value %lld of %lld unwritten", (long long)i,
                      (long long)n);
        if (!dtype_is_float(t.dtype) && !isfinite(values[i]))
            fuzz_fail("npy_read gave %g for an %s", values[i], dtype_name(t.dtype));
    }
    free(values);
    return 0;
}

/* fuzz_frontend.c — the libFuzzer entry point for the frontend.
 *
 * Each input is one .te program: the bytes are copied into a fresh
 * NUL-terminated Source (the lexer relies on the final NUL, and the input
 * may hold earlier NULs), then lexed, parsed and checked (fe_parse,
 * fe_sema, which also runs sched/check.c over the schedule blocks) with no
 * -D overrides, in an arena that is freed whole afterwards.  Diagnostics go
 * to /dev/null: a diagnostic is a correct answer, only a crash, a sanitizer
 * report, a leak or a hang is a finding.  te_internal_error aborts, so an
 * internal assertion is a finding too.
 *
 * The same file is linked into tests/fuzz/replay (replay.c), which feeds
 * the seed corpus through this function under gcc in `make check`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    if (!devnull) {
        devnull = fopen("/dev/null", "w");
        if (!devnull) {
            perror("fuzz_frontend: /dev/null");
            abort();
        }
    }
    diag_stream = devnull;
    diag_errors = 0;
    diag_warnings = 0;

    Arena arena = {0};
    char *text = arena_alloc(&arena, size + 1); /* zeroed: NUL-terminated */
    if (size)
        memcpy(text, data, size);
    Source src;
    src_from_string(&src, "fuzz.te", text, size);

    Parser p = { .arena = &arena, .src = &src };
    Program prog = {0};
    if (fe_parse(&p, &prog))
        (void)fe_sema(&arena, &src, &prog, NULL, 0);
    arena_free(&arena);
    return 0;
}

/* fuzz_frontend.c — the libFuzzer entry point for the frontend.
 *
 * Each input is one .te program: the bytes are copied into a fresh
 * NUL-terminated Source (the lexer relies on the final NUL, and the input
 * may hold earlier NULs), then lexed, parsed and checked (fuzz_graph:
 * fe_parse, fe_sema) with no -D overrides, in an arena that is freed
 * whole afterwards.  Diagnostics go to /dev/null: a diagnostic is a
 * correct answer, only a crash, a sanitizer report, a leak or a hang is a
 * finding.  te_internal_error aborts, so an internal assertion is a
 * finding too.  (fuzz_compile.c takes the same programs past sema.)
 *
 * The same file is linked into tests/fuzz/replay (replay.c), which feeds
 * the seed corpus through this function under gcc in `make check`.
 */
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    Arena arena = {0};
    FuzzProgram p;
    fuzz_program(&p, &arena, data, size);
    (void)fuzz_graph(&p);
    arena_free(&arena);
    return 0;
}

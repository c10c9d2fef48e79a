/* fuzz_onnx.c — the ONNX reader and importer (onnx/) on fuzzed models.
 *
 * The input is an .onnx file, read from memory (so external data is
 * refused and no file is opened) and imported; the program an import
 * writes is parsed and checked as texc would.  A message is a correct
 * answer; a crash, a sanitizer report, a hang, an internal error, or an
 * imported program that does not parse (the importer wrote text the
 * frontend does not take) is a finding.  The corpus (tests/fuzz/
 * corpus-onnx) holds small models of tests/onnx. */
#include "onnx/onnx.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    Arena a = { 0 };
    OxModel m;
    OxImport im;
    FILE *saved = stderr;
    stderr = fuzz_devnull();
    if (ox_read_model(&a, "fuzz.onnx", data, size, &m) &&
        ox_import(&a, &m, NULL, 0, "fuzz.te", &im)) {
        Source src;
        src_from_string(&src, "fuzz.te", im.text, im.len);
        Parser p = { .arena = &a, .src = &src };
        Program prog = { 0 };
        if (!fe_parse(&p, &prog)) {
            stderr = saved;
            fuzz_fail("the imported program does not parse:\n%s", im.text);
        }
        fuzz_trace("imported %d nodes: %s\n", m.nnodes,
                   fe_sema(&a, &src, &prog, NULL, 0) ? "checked" : "a diagnostic");
    }
    stderr = saved;
    arena_free(&a);
    return 0;
}

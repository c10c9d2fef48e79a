/* onnx_hostile.c — ONNX models cut short and with bits flipped, read and
 * imported in process (tests/onnx.sh; the sanitizer build checks every
 * read).
 *
 *     onnx_hostile [-s STRIDE] [-f FLIPS] MODEL.onnx...
 *
 * For each model, four TAP lines:
 *   - the model itself reads, imports, and its program parses and checks;
 *   - every proper prefix (every STRIDE-th length, default 1) is refused:
 *     ox_read_model or ox_import returns false (each says why on stderr,
 *     which the script sends to /dev/null);
 *   - FLIPS copies (default 300), each with one bit flipped at a position
 *     drawn by a fixed generator, are read and imported without a crash,
 *     and those that import give a program that parses (sema may refuse
 *     it: a diagnostic);
 *   - the counts, as a comment line.
 * Reading from memory (bytes given) refuses external data, so no mutation
 * opens a file.
 */
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "onnx/onnx.h"

static int tap_n, tap_failed;

static void tap(bool ok, const char *fmt, const char *name, long a, long b)
{
    tap_n++;
    tap_failed += !ok;
    printf("%s %d - ", ok ? "ok" : "not ok", tap_n);
    printf(fmt, name, a, b);
    putchar('\n');
}

/* Reads and imports BYTES; 0 refused, 1 imported (the program parses),
 * 2 imported and checked by sema, -1 imported but the program does not
 * parse (an importer bug). */
static int try_model(const uint8_t *bytes, size_t len)
{
    Arena a = { 0 };
    OxModel m;
    OxImport im;
    int rc = 0;
    if (ox_read_model(&a, "hostile.onnx", bytes, len, &m) &&
        ox_import(&a, &m, NULL, 0, "hostile.te", &im)) {
        Source src;
        src_from_string(&src, "hostile.te", im.text, im.len);
        Parser p = { .arena = &a, .src = &src };
        Program prog = { 0 };
        rc = -1;
        if (fe_parse(&p, &prog))
            rc = fe_sema(&a, &src, &prog, NULL, 0) ? 2 : 1;
    }
    arena_free(&a);
    return rc;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

int main(int argc, char **argv)
{
    long stride = 1, flips = 300;
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (strcmp(argv[i], "-s") == 0)
            stride = atol(argv[i + 1]);
        else if (strcmp(argv[i], "-f") == 0)
            flips = atol(argv[i + 1]);
    }
    FILE *quiet = fopen("/dev/null", "w");
    FILE *saved = stderr;
    for (; i < argc; i++) {
        size_t len;
        uint8_t *model = slurp(argv[i], &len);
        if (!model) {
            tap(false, "%s: cannot read it%ld%ld", argv[i], 0, 0);
            continue;
        }
        const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        int whole = try_model(model, len);
        tap(whole == 2, "%s: the whole model imports and its program checks (%ld)", name, whole, 0);
        stderr = quiet;
        long refused = 0, tried = 0;
        for (size_t n = 0; n < len; n += (size_t)stride) {
            /* a copy of its own, so that ASan sees a read past its end */
            uint8_t *cut = malloc(n ? n : 1);
            memcpy(cut, model, n);
            refused += try_model(cut, n) == 0;
            tried++;
            free(cut);
        }
        stderr = saved;
        tap(refused == tried, "%s: %ld of %ld prefixes refused", name, refused, tried);
        uint64_t state = 0x9e3779b97f4a7c15u ^ len;
        long imported = 0, bad = 0;
        uint8_t *copy = malloc(len);
        stderr = quiet;
        for (long k = 0; k < flips; k++) {
            state = state * 6364136223846793005u + 1442695040888963407u;
            size_t at = (size_t)(state >> 33) % len;
            memcpy(copy, model, len);
            copy[at] ^= (uint8_t)(1u << ((state >> 20) & 7));
            int rc = try_model(copy, len);
            imported += rc > 0;
            bad += rc < 0;
        }
        stderr = saved;
        free(copy);
        tap(bad == 0, "%s: %ld bit flips, none crashed, %ld imported, every program parsed",
            name, flips, imported);
        if (bad)
            printf("# %ld programs did not parse\n", bad);
        free(model);
    }
    printf("1..%d\n", tap_n);
    return tap_failed != 0;
}

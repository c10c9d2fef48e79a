/* workspace_app.c — a user's program that brings its own workspace.
 *
 *   texc samples/transformer_block.te -o transformer_block
 *   cc -fopenmp workspace_app.c transformer_block.c -lm
 *
 * The generated transformer_block() allocates its intermediates' workspace
 * on every call; an application that calls it in a loop asks once for
 * transformer_block_workspace_size() bytes and passes them to
 * transformer_block_ws().  This checks that contract: the size is the
 * header's TRANSFORMER_BLOCK_WORKSPACE_BYTES, a positive multiple of 64;
 * transformer_block_ws() with a workspace full of garbage (NaN bytes), at
 * a 64-byte aligned offset inside a larger buffer, gives exactly the
 * output of transformer_block(), and again when called a second time on
 * the workspace the first call left behind.  Prints one line per failed
 * check; exit status 0 when all pass.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transformer_block.h"

enum {
    S = TRANSFORMER_BLOCK_S,
    D = TRANSFORMER_BLOCK_D,
    F = TRANSFORMER_BLOCK_F,
};

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("workspace_app: %s\n", what);
        failures++;
    }
}

/* N floats in [-1, 1), deterministic per SEED. */
static float *values(unsigned seed, size_t n)
{
    float *v = malloc(sizeof *v * n);
    if (!v) {
        fputs("workspace_app: out of memory\n", stderr);
        exit(1);
    }
    unsigned long long h = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    return v;
}

int main(void)
{
    float *x = values(1, S * D), *ln1_g = values(2, D), *ln1_b = values(3, D);
    float *wq = values(4, D * D), *wk = values(5, D * D), *wv = values(6, D * D);
    float *wo = values(7, D * D), *bo = values(8, D);
    float *ln2_g = values(9, D), *ln2_b = values(10, D);
    float *w1 = values(11, D * F), *b1 = values(12, F);
    float *w2 = values(13, F * D), *b2 = values(14, D);
    float *own = values(15, S * D), *with_ws = values(16, S * D);

    size_t size = transformer_block_workspace_size();
    check(size == TRANSFORMER_BLOCK_WORKSPACE_BYTES,
          "transformer_block_workspace_size() is not TRANSFORMER_BLOCK_WORKSPACE_BYTES");
    check(size > 0 && size % 64 == 0, "the workspace size is not a positive multiple of 64");

    transformer_block(x, ln1_g, ln1_b, wq, wk, wv, wo, bo, ln2_g, ln2_b, w1, b1, w2, b2, own);
    int finite = 1, nonzero = 0;
    for (int i = 0; i < S * D; i++) {
        finite = finite && isfinite(own[i]);
        nonzero = nonzero || own[i] != 0.0f;
    }
    check(finite && nonzero, "transformer_block()'s output is not finite and nonzero");

    /* the workspace: 64 bytes into a larger buffer, full of NaN bytes */
    unsigned char *buffer = aligned_alloc(64, size + 128);
    if (!buffer) {
        fputs("workspace_app: out of memory\n", stderr);
        return 1;
    }
    memset(buffer, 0xff, size + 128);
    void *workspace = buffer + 64;
    for (int call = 1; call <= 2; call++) {
        memset(with_ws, 0, sizeof *with_ws * S * D);
        transformer_block_ws(x, ln1_g, ln1_b, wq, wk, wv, wo, bo, ln2_g, ln2_b, w1, b1, w2, b2,
                             with_ws, workspace);
        int same = memcmp(own, with_ws, sizeof *own * S * D) == 0;
        check(same, call == 1 ? "transformer_block_ws() differs from transformer_block()"
                              : "a second transformer_block_ws() on the same workspace differs");
    }
    /* the bytes around the workspace are the caller's */
    int untouched = 1;
    for (size_t i = 0; i < 64; i++)
        untouched = untouched && buffer[i] == 0xff && buffer[64 + size + i] == 0xff;
    check(untouched, "transformer_block_ws() wrote outside its workspace");

    free(buffer);
    free(x), free(ln1_g), free(ln1_b), free(wq), free(wk), free(wv), free(wo), free(bo);
    free(ln2_g), free(ln2_b), free(w1), free(b1), free(w2), free(b2), free(own), free(with_ws);
    if (!failures)
        printf("workspace_app: %zu bytes of workspace; transformer_block_ws matches "
               "transformer_block\n", size);
    return failures ? 1 : 0;
}

/* cubin_check.c — checks a cubin texc wrote, without a GPU.
 *
 *   cubin_check FILE.cubin sm_XX[a] [KERNEL...]
 *
 * FILE must be a 64-bit little-endian ELF for the CUDA machine (EM_CUDA,
 * 190) built for sm_XX (read by libtexrt's texrt_cubin_arch, the check the
 * runtime makes before loading; an "a" target must be marked
 * architecture-specific), and each KERNEL must be a global function
 * (STT_FUNC) in its symbol table.  Prints what it found; exit status 0 when
 * all holds, 1 otherwise, 2 on a usage or I/O error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "texrt.h"

enum { EM_CUDA = 190, SHT_SYMTAB = 2, STT_FUNC = 2, STB_GLOBAL = 1, STB_WEAK = 2 };

static uint64_t rd(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Is NAME a global or weak function symbol of the ELF image? */
static int has_function(const unsigned char *img, size_t size, const char *name)
{
    uint64_t shoff = rd(img + 0x28, 8);
    unsigned shentsize = (unsigned)rd(img + 0x3a, 2), shnum = (unsigned)rd(img + 0x3c, 2);
    if (shoff > size || shentsize < 64 || (size - shoff) / shentsize < shnum)
        return 0;
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *sh = img + shoff + (uint64_t)i * shentsize;
        if (rd(sh + 4, 4) != SHT_SYMTAB)
            continue;
        uint64_t off = rd(sh + 24, 8), len = rd(sh + 32, 8), entsize = rd(sh + 56, 8);
        unsigned link = (unsigned)rd(sh + 40, 4);
        if (link >= shnum || entsize < 24 || off > size || len > size - off)
            return 0;
        const unsigned char *str = img + shoff + (uint64_t)link * shentsize;
        uint64_t stroff = rd(str + 24, 8), strlen_ = rd(str + 32, 8);
        if (stroff > size || strlen_ > size - stroff)
            return 0;
        for (uint64_t s = 0; s + entsize <= len; s += entsize) {
            const unsigned char *sym = img + off + s;
            uint64_t nameoff = rd(sym, 4);
            unsigned info = sym[4];
            if (nameoff >= strlen_ || (info & 0xf) != STT_FUNC ||
                ((info >> 4) != STB_GLOBAL && (info >> 4) != STB_WEAK))
                continue;
            const char *n = (const char *)img + stroff + nameoff;
            if (strnlen(n, strlen_ - nameoff) < strlen_ - nameoff && strcmp(n, name) == 0)
                return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: cubin_check FILE.cubin sm_XX[a] [KERNEL...]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *img = malloc(size > 0 ? (size_t)size : 1);
    if (size <= 0 || !img || fread(img, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: cannot read\n", argv[1]);
        return 2;
    }
    fclose(f);
    int bad = 0;
    if (size < 64 || memcmp(img, "\177ELF", 4) != 0 || img[4] != 2 || img[5] != 1 ||
        rd(img + 18, 2) != EM_CUDA) {
        printf("%s: not a 64-bit little-endian ELF for EM_CUDA\n", argv[1]);
        return 1;
    }
    int want_sm = atoi(argv[2] + 3), want_specific = argv[2][strlen(argv[2]) - 1] == 'a';
    int sm = 0, specific = 0;
    if (strncmp(argv[2], "sm_", 3) != 0 || want_sm <= 0) {
        fprintf(stderr, "cubin_check: expected sm_XX, got %s\n", argv[2]);
        return 2;
    }
    if (texrt_cubin_arch(img, (size_t)size, &sm, &specific) != TEXRT_OK) {
        printf("%s: %s\n", argv[1], texrt_last_error());
        return 1;
    }
    printf("%s: EM_CUDA ELF, sm_%d%s\n", argv[1], sm, specific ? "a" : "");
    if (sm != want_sm || specific != want_specific) {
        printf("%s: built for sm_%d%s, expected %s\n", argv[1], sm, specific ? "a" : "", argv[2]);
        bad = 1;
    }
    for (int i = 3; i < argc; i++) {
        int found = has_function(img, (size_t)size, argv[i]);
        printf("%s: kernel %s: %s\n", argv[1], argv[i], found ? "present" : "MISSING");
        bad = bad || !found;
    }
    free(img);
    return bad;
}

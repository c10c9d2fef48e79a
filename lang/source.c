/* source.c — a program's text in memory.
 *
 * A Source is the whole file in memory, NUL-terminated; it may contain
 * earlier NULs (the lexer reports them), so its length is kept beside it.
 * Diagnostics (diag.c) point into it by byte offsets.  Loading lives apart
 * from them so that the calls go one way: source.c allocates from the
 * arena, and the arena and this file report their bugs through diag.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "texc.h"

bool src_load(Arena *a, Source *src, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "texc: cannot read %s: %s\n", path, strerror(errno));
        return false;
    }
    /* Read in growing chunks rather than trusting the file's size: PATH may
     * be a pipe or /dev/stdin. */
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int err = 0;
    for (;;) {
        if (!buf) {
            err = ENOMEM;
            break;
        }
        if (len > TE_MAX_SOURCE_BYTES) {
            free(buf);
            fclose(f);
            fprintf(stderr, "texc: cannot read %s: longer than %d MiB, the most a program may be\n",
                    path, TE_MAX_SOURCE_BYTES >> 20);
            return false;
        }
        if (len == cap) {
            char *bigger = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!bigger) {
                err = ENOMEM;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                err = errno ? errno : EIO;
            break;
        }
    }
    fclose(f);
    if (err) {
        free(buf);
        fprintf(stderr, "texc: cannot read %s: %s\n", path, strerror(err));
        return false;
    }
    char *text = arena_alloc(a, len + 1); /* zeroed: NUL-terminated */
    if (len)
        memcpy(text, buf, len);
    free(buf);
    src_from_string(src, arena_strdup(a, path), text, len);
    return true;
}

void src_from_string(Source *src, const char *path, char *text, size_t len)
{
    TE_ASSERT(text[len] == '\0');
    src->path = path;
    src->text = text;
    src->len = len;
}

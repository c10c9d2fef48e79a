/* output.c — writing a build's artifacts as one set, atomically.
 *
 * Every file a build hands its user (NAME.h and NAME.c, NAME_harness.c
 * with --harness; NAME.h, NAME.cubin and NAME.cu with --keep for cuda) is
 * opened here as a member of an OutputSet: the text goes to PATH.tmp, and
 * cg_output_commit renames the files into place, in the order they were
 * opened, only once every one of them was written and closed.  On any
 * failure (an open, a write the caller reports, a close, a rename) every
 * PATH.tmp is removed and so is every PATH the commit had already
 * renamed, so a failed build leaves no partial set behind: never a new
 * NAME.h beside an old NAME.c.  The driver's CPU build and nvrtc.c's
 * CUDA build both write through here.
 *
 * Messages name the file: "texc: cannot write PATH: why" (PATH.tmp for
 * an open, a write or a close, PATH for a rename), once a set.
 */
#include <errno.h>
#include <string.h>

#include "codegen/codegen.h"

FILE *cg_output_open(OutputSet *set, const char *path, bool binary)
{
    if (set->failed)
        return NULL; /* one message: the first failure's */
    TE_ASSERT(set->n < CG_MAX_OUTPUTS);
    OutputFile *o = &set->files[set->n];
    o->path = path;
    o->tmp = arena_printf(set->arena, "%s.tmp", path);
    o->f = fopen(o->tmp, binary ? "wb" : "w");
    if (!o->f) {
        fprintf(stderr, "texc: cannot write %s: %s\n", o->tmp, strerror(errno));
        set->failed = true;
        return NULL;
    }
    set->n++;
    return o->f;
}

bool cg_output_commit(OutputSet *set, bool ok)
{
    ok = ok && !set->failed;
    bool said = false;
    for (int i = 0; i < set->n; i++) {
        OutputFile *o = &set->files[i];
        /* a write that failed (a full disk) sets the stream's error flag,
           whether or not the caller noticed: its message is said here */
        errno = 0;
        bool bad = ferror(o->f) != 0;
        bad = fclose(o->f) != 0 || bad;
        if (bad && !said) {
            fprintf(stderr, "texc: cannot write %s: %s\n", o->tmp, strerror(errno ? errno : EIO));
            said = true;
        }
        ok = ok && !bad;
        o->f = NULL;
    }
    for (int i = 0; i < set->n && ok; i++) {
        if (rename(set->files[i].tmp, set->files[i].path) != 0) {
            fprintf(stderr, "texc: cannot write %s: %s\n", set->files[i].path, strerror(errno));
            for (int k = 0; k < i; k++)
                remove(set->files[k].path);
            ok = false;
        }
    }
    for (int i = 0; i < set->n; i++)
        remove(set->files[i].tmp); /* after a commit, there is none */
    set->n = 0;
    set->failed = !ok;
    return ok;
}

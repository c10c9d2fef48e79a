/* output.c — writing a build's artifacts as one set, atomically.
 *
 * Every file a run hands its user (NAME.h and NAME.c, NAME_harness.c
 * with --harness; NAME.h, NAME.cubin and NAME.cu with --keep for cuda;
 * --eval's .npy files) is opened here as a member of an OutputSet: the
 * text goes to a temporary file beside PATH, and cg_output_commit renames
 * the files into place, in the order they were opened, only once every
 * one of them was written and closed.  On any failure (an open, a write,
 * a close, a rename) every temporary file is removed and so is every PATH
 * the commit had already renamed, so a failed run leaves no partial set
 * behind: never a new NAME.h beside an old NAME.c.  The driver's CPU
 * build and --eval, and nvrtc.c's CUDA build, write through here.
 *
 * Hostile folders: the temporary file is mkstemp's (PATH.tmpXXXXXX,
 * created with O_EXCL), so a file or symlink planted at PATH.tmp is never
 * written through, nor removed: texc removes only files it created.  A
 * symlink at PATH itself is replaced by the new file, not followed.
 *
 * Messages name the file: "texc: cannot write PATH: why" (PATH for an
 * open or a rename, the temporary file for a write or a close), once a
 * set.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/codegen.h"

FILE *cg_output_open(OutputSet *set, const char *path, bool binary)
{
    (void)binary;
    if (set->failed)
        return NULL; /* one message: the first failure's */
    OutputFile *o = arena_alloc(set->arena, sizeof *o);
    o->path = path;
    char *tmp = arena_printf(set->arena, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp); /* O_CREAT | O_EXCL: not through a symlink */
    if (fd < 0) {
        fprintf(stderr, "texc: cannot write %s: %s\n", path, strerror(errno));
        set->failed = true;
        return NULL;
    }
    o->tmp = tmp;
    /* mkstemp's 0600 becomes what fopen would have made: 0666 less umask */
    mode_t mask = umask(0);
    umask(mask);
    o->f = fchmod(fd, 0666 & ~mask) == 0 ? fdopen(fd, "w") : NULL;
    if (!o->f) {
        fprintf(stderr, "texc: cannot write %s: %s\n", tmp, strerror(errno));
        close(fd);
        remove(tmp);
        set->failed = true;
        return NULL;
    }
    vec_push(set->arena, &set->files, o);
    return o->f;
}

bool cg_output_commit(OutputSet *set, bool ok)
{
    ok = ok && !set->failed;
    bool said = false;
    int n = set->files.len;
    OutputFile **files = (OutputFile **)set->files.items;
    for (int i = 0; i < n; i++) {
        OutputFile *o = files[i];
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
    /* rename replaces what is at PATH, a symlink included, without
       following it */
    for (int i = 0; i < n && ok; i++) {
        if (rename(files[i]->tmp, files[i]->path) != 0) {
            fprintf(stderr, "texc: cannot write %s: %s\n", files[i]->path, strerror(errno));
            for (int k = 0; k < i; k++)
                remove(files[k]->path); /* texc's own: renamed just now */
            ok = false;
        }
    }
    for (int i = 0; i < n; i++)
        remove(files[i]->tmp); /* after a commit, there is none */
    set->files.len = 0;
    set->failed = !ok;
    return ok;
}

/* replay.c — runs the fuzz corpus through the fuzz target without libFuzzer.
 *
 *     tests/fuzz/replay PATH...
 *
 * Every PATH is a file or a directory; a directory's regular files are
 * replayed in name order (not recursively), so the TAP numbering is the
 * same on every machine.  Each file is one call of LLVMFuzzerTestOneInput
 * and one TAP line, "ok N - FILE"; the plan comes last.  A crash kills the
 * process, which the TAP driver reports with the last file that passed;
 * under the sanitizer build (--enable-sanitizers) that includes ASan and
 * UBSan reports.  A path that cannot be read is a "not ok".
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int tap_n;
static int tap_failed;

/* Reads PATH whole into a malloc'd buffer; NULL with errno set on failure. */
static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        if (len == cap) {
            uint8_t *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                errno = ENOMEM;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                free(buf);
                buf = NULL;
                errno = EIO;
            }
            break;
        }
    }
    fclose(f);
    *size = len;
    return buf;
}

static void replay_file(const char *path)
{
    size_t size;
    uint8_t *data = read_file(path, &size);
    tap_n++;
    if (!data) {
        tap_failed++;
        printf("not ok %d - %s\n# cannot read: %s\n", tap_n, path, strerror(errno));
        return;
    }
    /* Flushed first, so a crash leaves the name of the file that caused it
     * right after the last "ok". */
    printf("# %s\n", path);
    fflush(stdout);
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    printf("ok %d - %s\n", tap_n, path);
    fflush(stdout);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        tap_n++;
        tap_failed++;
        printf("not ok %d - %s\n# cannot open: %s\n", tap_n, dir, strerror(errno));
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            if (!names) {
                perror("replay");
                exit(99);
            }
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) {
            perror("replay");
            exit(99);
        }
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            replay_file(names[i]);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: replay FILE-OR-DIRECTORY...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            replay_dir(argv[i]);
        else
            replay_file(argv[i]);
    }
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

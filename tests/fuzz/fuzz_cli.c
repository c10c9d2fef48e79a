/* fuzz_cli.c — the texc command line (driver/main.c) on fuzzed arguments.
 *
 * Each input is an argument list: arguments separated by NUL or newline
 * bytes (at most FUZZ_CLI_ARGS of FUZZ_CLI_ARG_BYTES), after "texc".  The
 * whole driver runs on them in process, in a private directory (the process's working directory only
 * while the driver runs) that holds
 * the programs and files the arguments may name (p.te, a matmul with knobs
 * and a file schedule; s.te, a softmax with none; x.npy, p.te's input x;
 * p.log, a log), rewritten before every run and emptied of everything
 * else after it.  driver/main.c is compiled into this target with its
 * main renamed texc_main; what it cannot do in process is wrapped at link
 * time (-Wl,--wrap):
 *   - exit() returns to the harness (longjmp), so that a usage error is a
 *     correct answer like any other;
 *   - fork() and posix_spawn[p]() fail with EAGAIN, so --tune, -c and
 *     the tuner's children take their error paths instead of running
 *     compilers for minutes (the tuner's own tests run those);
 * Arguments that could reach outside the directory (a leading '/', "..")
 * or set a dim (-D, which can ask the evaluator for any size) are not
 * run.  A crash, a sanitizer report, an internal error or a hang is a
 * finding.  Leaks are not checked here: exit() leaves the driver's arena
 * behind by design. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_common.h"

enum { FUZZ_CLI_ARGS = 24, FUZZ_CLI_ARG_BYTES = 200 };

int texc_main(int argc, char **argv);

const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}

static jmp_buf back;
static bool in_driver;
static int exit_status;

void __real_exit(int status) __attribute__((noreturn));
void __wrap_exit(int status) __attribute__((noreturn));
void __wrap_exit(int status)
{
    if (in_driver) {
        exit_status = status;
        longjmp(back, 1);
    }
    __real_exit(status);
}

pid_t __wrap_fork(void);
pid_t __wrap_fork(void)
{
    errno = EAGAIN;
    return -1;
}

int __wrap_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[]);
int __wrap_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    (void)pid, (void)path, (void)fa, (void)attr, (void)argv, (void)envp;
    return EAGAIN;
}

int __wrap_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[]);
int __wrap_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    (void)pid, (void)file, (void)fa, (void)attr, (void)argv, (void)envp;
    return EAGAIN;
}

static const char p_te[] =
    "dim M = 5, N = 7, K = 19;\n"
    "input x : f32[M, K];\n"
    "input w : const f32[K, N];\n"
    "input b : f32[N];\n"
    "y[i, j] = sum(k) x[i, k] * w[k, j];\n"
    "z[i, j] = gelu(y[i, j] + b[j]);\n"
    "output z;\n"
    "schedule cpu {\n"
    "  y.tile(i, j, ?TI in [1, 2, 4], ?TJ in [8, 16]) -> io, jo, ii, ji;\n"
    "  y.parallel(io);\n"
    "}\n";

static const char s_te[] =
    "dim M = 3, N = 11;\n"
    "input x : f32[M, N];\n"
    "m[i] = max(j) x[i, j];\n"
    "e[i, j] = exp(x[i, j] - m[i]);\n"
    "s[i] = sum(j) e[i, j];\n"
    "y[i, j] = e[i, j] / s[i];\n"
    "output y;\n";

static const char p_log[] = "{\"workload\": \"0\", \"status\": \"ok\"}\nnot a record\n";

static const char *const fixtures[] = { "p.te", "s.te", "x.npy", "p.log" };

static void write_file(const char *name, const void *data, size_t len)
{
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len || close(fd) != 0) {
        perror(name);
        abort();
    }
}

/* x.npy: p.te's x, a 5x19 f32 array of ones. */
static void write_npy(void)
{
    static const char header[] =
        "{'descr': '<f4', 'fortran_order': False, 'shape': (5, 19), }";
    unsigned char buf[128 + 5 * 19 * 4] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 118, 0 };
    memset(buf + 10, ' ', 118);
    memcpy(buf + 10, header, sizeof header - 1);
    buf[127] = '\n';
    float one = 1.0f;
    for (int i = 0; i < 5 * 19; i++)
        memcpy(buf + 128 + 4 * i, &one, 4);
    write_file("x.npy", buf, sizeof buf);
}

static void write_fixtures(void)
{
    write_file("p.te", p_te, sizeof p_te - 1);
    write_file("s.te", s_te, sizeof s_te - 1);
    write_file("p.log", p_log, sizeof p_log - 1);
    write_npy();
}

/* Removes what the last run left in the directory. */
static void clean(void)
{
    DIR *d = opendir(".");
    if (!d)
        abort();
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        bool keep = false;
        for (size_t i = 0; i < sizeof fixtures / sizeof *fixtures; i++)
            keep = keep || strcmp(e->d_name, fixtures[i]) == 0;
        if (!keep)
            tune_remove_tree(e->d_name);
    }
    closedir(d);
}

static bool runnable(char **argv, int argc)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '/' || strstr(a, "..") || strchr(a, '~'))
            return false;
        if (a[0] == '-' && a[1] != '-' && strchr(a, 'D'))
            return false;
        if (strcmp(a, "-") == 0)
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool init;
    static int scratch = -1;
    if (!init) {
        init = true;
        const char *tmp = getenv("TMPDIR");
        char dir[256];
        snprintf(dir, sizeof dir, "%.200s/fuzz-cli.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir) || (scratch = open(dir, O_RDONLY | O_DIRECTORY)) < 0) {
            perror("fuzz_cli: a directory of its own");
            abort();
        }
        /* the default log and cache live here too */
        setenv("XDG_CACHE_HOME", dir, 1);
        setenv("HOME", dir, 1);
        setenv("TEXC_TUNE_MIN_TIME", "0", 1);
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || dup2(null, 0) < 0)
            abort();
        close(null);
    }
    char *argv[FUZZ_CLI_ARGS + 2];
    static char text[FUZZ_CLI_ARGS * (FUZZ_CLI_ARG_BYTES + 1)];
    int argc = 0;
    argv[argc++] = "texc";
    size_t used = 0;
    for (size_t i = 0; i < size && argc <= FUZZ_CLI_ARGS;) {
        size_t n = 0;
        while (i + n < size && data[i + n] != '\0' && data[i + n] != '\n')
            n++;
        if (n > FUZZ_CLI_ARG_BYTES)
            return 0;
        memcpy(text + used, data + i, n);
        text[used + n] = '\0';
        argv[argc++] = text + used;
        used += n + 1;
        i += n + 1;
    }
    argv[argc] = NULL;
    if (!runnable(argv, argc))
        return 0;
    /* the run's directory is ours; the caller's is given back after */
    int caller = open(".", O_RDONLY | O_DIRECTORY);
    if (caller < 0 || fchdir(scratch) != 0)
        abort();
    write_fixtures();
    diag_stream = stderr;
    diag_errors = diag_warnings = 0;
    diag_quiet = false;
    optind = 0; /* glibc: start getopt over */
    fflush(NULL);
    int saved_out = dup(1), null = open("/dev/null", O_WRONLY);
    if (saved_out < 0 || null < 0 || dup2(null, 1) < 0)
        abort();
    close(null);
    in_driver = true;
    if (setjmp(back) == 0)
        exit_status = texc_main(argc, argv);
    in_driver = false;
    fflush(stdout);
    dup2(saved_out, 1);
    close(saved_out);
    fuzz_trace("texc exited %d", exit_status);
    if (exit_status < 0 || exit_status > 2)
        fuzz_fail("texc exited %d (0, 1 or 2 expected)", exit_status);
    clean();
    if (fchdir(caller) != 0)
        abort();
    close(caller);
    return 0;
}

/* lock.c — the machine lock: texc tuners on one machine take turns.
 *
 * A timing means something only when nothing else holds the cores: two
 * tuners at once measured each other's compilers and kernels (a 1.4 us
 * kernel timed at 3.6 ms, and recorded as valid) and, sharing a log,
 * measured the same configurations twice.  So a tuner works only while
 * it holds the machine lock, exclusively: one batch at a time (reading
 * what the log gained since its last turn, proposing, checking,
 * building, measuring, appending the records), then it lets go and
 * queues again.  Nothing of another tuner runs while one measures, and
 * because the log is re-read at the start of every turn, no
 * configuration is measured by two tuners.  Building in parallel with
 * another tuner would gain nothing anyway: each tuner's builds already
 * use every core (--jobs).
 *
 * Taking turns: flock(2) gives no order among waiters, and a tuner that
 * lets go and asks again at once would win every time.  So there are
 * two files: the queue and the lock.  A tuner takes the queue, then the
 * lock, then leaves the queue; the one that just let go of the lock
 * finds the queue held by the next in line and waits behind it.  Both
 * are polled (LOCK_NB), so that a wait can be interrupted (SIGINT sets
 * tune_interrupted) and given up after PATIENCE seconds.  The holder of
 * the lock writes its pid into it, for the waiters' message.
 *
 * Where: $TEXC_LOCK_DIR if set, else /tmp: texc-measure-UID.lock and
 * texc-queue-UID.lock, one pair per user.  Not $XDG_RUNTIME_DIR or
 * $TMPDIR: they differ between one user's sessions (a cron job has
 * neither), and every tuner of the machine must find the same file.
 * /tmp is shared, so each file is opened without following a symlink
 * (O_NOFOLLOW), without blocking on a planted FIFO (O_NONBLOCK), and
 * used only if it is a regular file of ours with one link: the pid
 * written into it must not land in a file someone linked there.
 * Anything else is refused with a message: a tuner never measures
 * without the lock, so every record it writes was measured alone
 * (among texc tuners: other work on the machine is not seen).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tuner/tuner.h"

/* Opens DIR/texc-WHAT-UID.lock as described above, into *FD and PATH.
 * Returns false after a message. */
static bool open_lock_file(const char *dir, const char *what, int *fd, char *path, size_t size)
{
    snprintf(path, size, "%s/texc-%s-%u.lock", dir, what, (unsigned)geteuid());
    *fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
    const char *why = NULL;
    struct stat sb;
    if (*fd < 0)
        why = errno == ELOOP ? "a symbolic link (not followed)" : strerror(errno);
    else if (fstat(*fd, &sb) != 0)
        why = strerror(errno);
    else if (!S_ISREG(sb.st_mode))
        why = "not a regular file";
    else if (sb.st_uid != geteuid())
        why = "owned by another user";
    else if (sb.st_nlink != 1)
        why = "a file with other links";
    if (!why)
        return true;
    fprintf(stderr, "texc: cannot use the machine lock %s: %s; texc tuners on this machine "
                    "take turns through it, so that no timing shares the cores: remove it, or "
                    "set TEXC_LOCK_DIR to a directory of your own\n",
            path, why);
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
    return false;
}

bool tune_lock_open(MachineLock *l)
{
    memset(l, 0, sizeof *l);
    l->fd = l->queue_fd = -1;
    const char *dir = getenv("TEXC_LOCK_DIR");
    if (!dir || !*dir)
        dir = "/tmp";
    char queue_path[sizeof l->path];
    if (!open_lock_file(dir, "measure", &l->fd, l->path, sizeof l->path))
        return false;
    if (!open_lock_file(dir, "queue", &l->queue_fd, queue_path, sizeof queue_path)) {
        close(l->fd);
        l->fd = -1;
        return false;
    }
    return true;
}

/* The pid the lock's holder wrote, or 0 when it is unknown, ours, or
 * no longer running. */
static long holder_pid(const MachineLock *l)
{
    char text[32];
    ssize_t n = pread(l->fd, text, sizeof text - 1, 0);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    long pid = strtol(text, NULL, 10);
    if (pid <= 0 || pid == (long)getpid() || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
        return 0;
    return pid;
}

/* Polls flock(FD, LOCK_EX) until it succeeds, the tuner is interrupted
 * or DEADLINE (tune_now) passes, saying once that it waits when the wait
 * that began at START passes 0.1 s (by then a new holder has written its
 * pid; a shorter wait is not worth a line). */
static TuneLockResult wait_for(MachineLock *l, int fd, double start, double deadline, bool quiet)
{
    int ms = 1;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            fprintf(stderr, "texc: cannot take the machine lock (%s): %s\n", l->path,
                    strerror(errno));
            return TUNE_LOCK_FAILED;
        }
        if (tune_interrupted)
            return TUNE_LOCK_INTERRUPTED;
        if (tune_now() > deadline)
            return TUNE_LOCK_TIMEOUT;
        if (!l->said && !quiet && tune_now() - start >= 0.1) {
            long pid = holder_pid(l);
            char who[48] = "";
            if (pid)
                snprintf(who, sizeof who, " (pid %ld)", pid);
            fprintf(stderr, "texc: waiting for another texc tuner%s on this machine: tuners take "
                            "turns, a batch each, so that no timing shares the cores (%s)\n",
                    who, l->path);
            l->said = true;
        }
        tune_sleep_ms(ms);
        if (ms < 20)
            ms++;
    }
    return TUNE_LOCK_HELD;
}

TuneLockResult tune_lock_take(MachineLock *l, double patience, bool quiet)
{
    if (l->held)
        return TUNE_LOCK_HELD;
    double start = tune_now(), deadline = start + patience;
    /* the queue, then the lock: see the top of the file */
    TuneLockResult r = wait_for(l, l->queue_fd, start, deadline, quiet);
    if (r == TUNE_LOCK_HELD) {
        r = wait_for(l, l->fd, start, deadline, quiet);
        flock(l->queue_fd, LOCK_UN);
    }
    l->waited += tune_now() - start;
    if (r != TUNE_LOCK_HELD)
        return r;
    l->held = true;
    char text[32];
    int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    /* for the waiters' message only: without it they name no pid */
    bool noted = ftruncate(l->fd, 0) == 0 && pwrite(l->fd, text, (size_t)n, 0) == n;
    (void)noted;
    return TUNE_LOCK_HELD;
}

long tune_lock_holder(const MachineLock *l)
{
    return l->fd >= 0 ? holder_pid(l) : 0;
}

void tune_lock_release(MachineLock *l)
{
    if (!l->held)
        return;
    flock(l->fd, LOCK_UN);
    l->held = false;
}

void tune_lock_close(MachineLock *l)
{
    tune_lock_release(l);
    if (l->fd >= 0)
        close(l->fd);
    if (l->queue_fd >= 0)
        close(l->queue_fd);
    l->fd = l->queue_fd = -1;
}

/* mpi.c — tuning on several machines through MPI (issue 18, ask 5).
 *
 *     mpirun --enable-recovery -np N texc FILE.te --tune
 *     srun -N N --ntasks-per-node=1 --mpi=pmix texc FILE.te --tune
 *
 * Rank 0 runs the search and the task scheduler and writes the log, as a
 * tuning run on one machine does.  Every rank, rank 0 included, builds and
 * measures candidates on its own machine: rank 0 hands each live rank a
 * share of every batch (tune.c's tuner_batches), the rank builds and
 * measures it under its machine's lock (lock.c: one measurement per
 * machine at a time, whatever runs there) and answers with the records,
 * which name the host and the rank.  Rank 0 appends them to the log and
 * feeds them to the search when the rank's machine is of rank 0's model
 * (the record's "arch" and "compiler" are the same); a rank of another
 * model measures too, but its records only go to the log, where builds
 * on such a machine find them and builds on rank 0's never do.
 *
 * A rank that dies or hangs costs the candidates it had in flight, no
 * more: rank 0 waits for a share's records until a deadline (or, for a
 * rank on its own host, until the rank's pid is gone), says which rank it
 * lost and why, and goes on with the others.  Open MPI's mpirun ends the
 * whole job when a rank dies unless it runs with --enable-recovery;
 * Slurm's srun keeps a step's other tasks by default (KillOnBadExit=0).
 *
 * The messages are JSON text (jansson, as the log), each one MPI_CHAR
 * message: HELLO (a rank's host, pid and machine), JOB (a share: its task,
 * time limit and candidates), RECORDS (the share's records) and STOP.
 * Nobody blocks in MPI: waits poll MPI_Iprobe with a sleep, so that a
 * waiting rank leaves its cores to the measurements.
 *
 * This file is compiled twice.  In libtexc (and so in `texc`), without
 * TEXC_MPI: texc is one rank; started by an MPI launcher it becomes
 * texc-mpi, the same program linked with Open MPI (configure builds it
 * when it finds libopenmpi-dev), so that every other run of texc does not
 * load MPI's libraries.  In texc-mpi, with TEXC_MPI: the real thing; its
 * definitions replace libtexc's (an archive member is only linked for a
 * symbol nothing else defines). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/tuner.h"

#ifdef TEXC_MPI
#include <mpi.h>
#endif

/* Is this process a rank of a job an MPI launcher started? */
static bool under_launcher(int *rank)
{
    static const char *const vars[][2] = {
        { "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK" }, /* Open MPI's mpirun */
        { "PMIX_SIZE", "PMIX_RANK" },                        /* PMIx: srun --mpi=pmix */
        { "PMI_SIZE", "PMI_RANK" },                          /* PMI-2: srun --mpi=pmi2 */
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *size = getenv(vars[i][0]), *r = getenv(vars[i][1]);
        if (size && atoi(size) > 1) {
            *rank = r ? atoi(r) : 0;
            return true;
        }
    }
    /* PMIx sets PMIX_RANK without a size */
    const char *r = getenv("PMIX_RANK");
    if (r && getenv("PMIX_NAMESPACE")) {
        *rank = atoi(r);
        return true;
    }
    return false;
}

#ifndef TEXC_MPI
/* ------------------------------------------------------------------ */
/* texc: one rank, or the way to texc-mpi.                             */

static bool lone_worker; /* a rank > 0 of a job texc-mpi could not serve */

void tune_mpi_exec(int argc, char **argv)
{
    (void)argc;
    int rank = 0;
    if (!under_launcher(&rank))
        return;
    /* texc-mpi beside this executable (the build tree, or the bindir) */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 16);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            strcpy(slash + 1, "texc-mpi");
            if (access(self, X_OK) == 0) {
                execv(self, argv);
                fprintf(stderr, "texc: cannot run %s: %s\n", self, strerror(errno));
            }
        }
    }
    /* no MPI in this build: rank 0 does the work alone, the others
       nothing, each saying why once */
    if (rank == 0)
        fprintf(stderr, "texc: started by an MPI launcher, but this texc was built without MPI "
                        "(configure found no libopenmpi-dev): rank 0 works alone\n");
    else
        lone_worker = true;
}

bool tune_mpi_start(const TuneOptions *o) { (void)o; return true; }
int tune_mpi_rank(void) { return lone_worker ? 1 : 0; }
int tune_mpi_size(void) { return 1; }
int tune_mpi_workers(void) { return 0; }
int tune_mpi_assign(int *ranks, int n) { (void)ranks; (void)n; return 0; }
bool tune_mpi_send_job(int rank, json_t *job) { (void)rank; (void)job; return false; }
json_t *tune_mpi_wait_records(int rank, int job, int ncands, double deadline)
{
    (void)rank; (void)job; (void)ncands; (void)deadline;
    return NULL;
}
bool tune_mpi_pooled(int rank) { (void)rank; return true; }
const char *tune_mpi_host(void) { return NULL; }
json_t *tune_mpi_next_job(void) { return NULL; }
void tune_mpi_send_records(json_t *msg) { (void)msg; }
void tune_mpi_alone(const char *why) { (void)why; }
int tune_mpi_end(int status) { return status; }

#else
/* ------------------------------------------------------------------ */
/* texc-mpi: a rank of the job.                                        */

enum { TAG_HELLO = 1, TAG_JOB, TAG_RECORDS, TAG_STOP };

typedef struct Rank {
    bool alive;
    bool pooled;       /* its machine is rank 0's model */
    bool local;        /* on rank 0's host: its pid can be watched */
    long pid;
    char host[256];
    char arch[1024];
} Rank;

static struct {
    bool on;           /* MPI_Init ran */
    int rank, size;
    Rank *ranks;       /* rank 0: every rank's, by rank */
    char host[256];
    long pid0;         /* a worker: rank 0's pid, when on its host */
    bool stopped;      /* rank 0: the workers were sent home (tune_mpi_alone) */
    bool no_finalize;  /* a rank is lost: MPI_Finalize's fence would wait
                          for it for ever, so nobody calls it (mpirun
                          --enable-recovery then ends the job as well) */
} M;

void tune_mpi_exec(int argc, char **argv)
{
    (void)argc;
    (void)argv;
}

/* MSG as JSON text to rank TO; false when MPI refused it. */
static bool send_json(int to, int tag, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text)
        return false;
    int rc = MPI_Send(text, (int)strlen(text) + 1, MPI_CHAR, to, tag, MPI_COMM_WORLD);
    free(text);
    return rc == MPI_SUCCESS;
}

/* The next message with TAG from FROM (MPI_ANY_SOURCE: anyone), polled
 * until DEADLINE (tune_now; 0: just look once), or NULL.  *SOURCE is its
 * sender.  A message that is not JSON is dropped. */
static json_t *poll_json(int from, int tag, double deadline, int *source)
{
    for (;;) {
        int flag = 0;
        MPI_Status st;
        if (MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
            return NULL;
        if (flag) {
            int count = 0;
            MPI_Get_count(&st, MPI_CHAR, &count);
            char *text = malloc((size_t)count + 1);
            if (!text)
                te_internal_error(__FILE__, __LINE__, "out of memory");
            MPI_Recv(text, count, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            text[count] = '\0';
            json_t *msg = json_loads(text, 0, NULL);
            free(text);
            if (source)
                *source = st.MPI_SOURCE;
            if (msg)
                return msg;
            continue;
        }
        if (tune_now() >= deadline || tune_interrupted)
            return NULL;
        tune_sleep_ms(5);
    }
}

static bool pid_alive(long pid)
{
    return pid <= 0 || kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

static void lose(int r, const char *why, int inflight)
{
    Rank *k = &M.ranks[r];
    if (!k->alive)
        return;
    k->alive = false;
    int left = 0;
    for (int i = 0; i < M.size; i++)
        left += M.ranks[i].alive;
    fprintf(stderr, "texc: MPI: lost rank %d (%s, pid %ld): %s; %d candidate%s in flight %s lost; "
                    "going on with %d rank%s\n",
            r, k->host, k->pid, why, inflight, inflight == 1 ? "" : "s",
            inflight == 1 ? "is" : "are", left, left == 1 ? "" : "s");
}

bool tune_mpi_start(const TuneOptions *o)
{
    int rank = 0;
    if (M.on || !under_launcher(&rank))
        return true;
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "texc: MPI_Init failed: tuning on this machine alone\n");
        return rank == 0;
    }
    M.on = true;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &M.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &M.size);
    if (gethostname(M.host, sizeof M.host - 1) != 0)
        snprintf(M.host, sizeof M.host, "unknown");
    Machine m;
    tune_machine(&m, o->target, o->arch);
    if (M.rank > 0) {
        json_t *hello = json_pack("{s:s, s:I, s:s, s:s}", "host", M.host, "pid", (json_int_t)getpid(),
                                  "arch", m.arch, "compiler", m.compiler);
        send_json(0, TAG_HELLO, hello);
        json_decref(hello);
        return true;
    }
    M.ranks = calloc((size_t)M.size, sizeof *M.ranks);
    if (!M.ranks)
        te_internal_error(__FILE__, __LINE__, "out of memory");
    M.ranks[0] = (Rank){ .alive = true, .pooled = true, .local = true, .pid = getpid() };
    snprintf(M.ranks[0].host, sizeof M.ranks[0].host, "%s", M.host);
    snprintf(M.ranks[0].arch, sizeof M.ranks[0].arch, "%s", m.arch);
    /* every rank's hello, for at most a minute (a rank that never starts
       is lost like one that dies) */
    double deadline = tune_now() + 60;
    int got = 0;
    while (got < M.size - 1) {
        int from = -1;
        json_t *h = poll_json(MPI_ANY_SOURCE, TAG_HELLO, deadline, &from);
        if (!h)
            break;
        if (from > 0 && from < M.size && !M.ranks[from].alive) {
            Rank *k = &M.ranks[from];
            const char *host = json_string_value(json_object_get(h, "host"));
            const char *arch = json_string_value(json_object_get(h, "arch"));
            const char *cc = json_string_value(json_object_get(h, "compiler"));
            snprintf(k->host, sizeof k->host, "%s", host ? host : "?");
            snprintf(k->arch, sizeof k->arch, "%s", arch ? arch : "?");
            k->pid = (long)json_integer_value(json_object_get(h, "pid"));
            k->alive = true;
            k->local = strcmp(k->host, M.host) == 0;
            k->pooled = arch && cc && strcmp(arch, m.arch) == 0 && strcmp(cc, m.compiler) == 0;
            got++;
        }
        json_decref(h);
    }
    /* the workers watch rank 0's pid when they share its host */
    json_t *welcome = json_pack("{s:b, s:s, s:I}", "welcome", 1, "host", M.host,
                                "pid", (json_int_t)getpid());
    for (int i = 1; i < M.size; i++)
        if (M.ranks[i].alive)
            send_json(i, TAG_JOB, welcome);
    json_decref(welcome);
    /* say where the job runs */
    int hosts = 0;
    for (int i = 0; i < M.size; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = (M.ranks[j].alive || j == 0) && strcmp(M.ranks[i].host, M.ranks[j].host) == 0;
        hosts += M.ranks[i].alive && !seen;
    }
    if (!o->quiet)
        fprintf(stderr, "texc: MPI: %d of %d ranks answered, on %d host%s; rank 0 (%s) searches and "
                        "writes the log, every rank measures\n",
                got + 1, M.size, hosts, hosts == 1 ? "" : "s", M.host);
    for (int i = 1; i < M.size; i++) {
        Rank *k = &M.ranks[i];
        if (!k->alive)
            fprintf(stderr, "texc: MPI: rank %d did not say hello within 60 s: not used\n", i);
        else if (!k->pooled)
            fprintf(stderr, "texc: MPI: rank %d (%s) is another machine model (%s): it measures "
                            "into records of its own, which this machine's search does not "
                            "read\n",
                    i, k->host, k->arch);
    }
    return true;
}

int tune_mpi_rank(void) { return M.rank; }
int tune_mpi_size(void) { return M.on ? M.size : 1; }
const char *tune_mpi_host(void) { return M.on ? M.host : NULL; }

int tune_mpi_workers(void)
{
    int n = 0;
    for (int i = 1; M.on && M.rank == 0 && i < M.size; i++)
        n += M.ranks[i].alive;
    return n;
}

int tune_mpi_assign(int *ranks, int n)
{
    int k = 0;
    for (int i = 1; M.on && M.rank == 0 && i < M.size && k < n; i++)
        if (M.ranks[i].alive)
            ranks[k++] = i;
    return k;
}

bool tune_mpi_pooled(int rank)
{
    return !M.on || rank <= 0 || rank >= M.size || M.ranks[rank].pooled;
}

bool tune_mpi_send_job(int rank, json_t *job)
{
    if (!M.on || rank <= 0 || rank >= M.size || !M.ranks[rank].alive)
        return false;
    if (send_json(rank, TAG_JOB, job))
        return true;
    lose(rank, "a job could not be sent to it", (int)json_array_size(json_object_get(job, "cands")));
    return false;
}

json_t *tune_mpi_wait_records(int rank, int job, int ncands, double deadline)
{
    Rank *k = &M.ranks[rank];
    for (;;) {
        if (!k->alive)
            return NULL;
        json_t *msg = poll_json(rank, TAG_RECORDS, tune_now() + 0.2, NULL);
        if (msg) {
            if (json_integer_value(json_object_get(msg, "job")) == job)
                return msg;
            json_decref(msg); /* a late answer to a share given up on */
            continue;
        }
        if (tune_interrupted)
            return NULL;
        if (k->local && !pid_alive(k->pid)) {
            lose(rank, "its process is gone", ncands);
            return NULL;
        }
        if (tune_now() >= deadline) {
            lose(rank, "it did not answer by its share's deadline", ncands);
            return NULL;
        }
    }
}

json_t *tune_mpi_next_job(void)
{
    /* a worker waits for rank 0 as long as rank 0 lives: on its host, as
       long as its pid does; elsewhere, a day at most */
    double deadline = tune_now() + 86400;
    for (;;) {
        int from = -1;
        json_t *msg = poll_json(0, MPI_ANY_TAG, tune_now() + 1, &from);
        if (msg) {
            if (json_object_get(msg, "stop")) {
                M.no_finalize = json_is_true(json_object_get(msg, "lost"));
                json_decref(msg);
                return NULL;
            }
            if (json_object_get(msg, "welcome")) {
                const char *host = json_string_value(json_object_get(msg, "host"));
                if (host && strcmp(host, M.host) == 0)
                    M.pid0 = (long)json_integer_value(json_object_get(msg, "pid"));
                json_decref(msg);
                continue;
            }
            return msg;
        }
        if (tune_interrupted || tune_now() >= deadline)
            return NULL;
        if (M.pid0 > 0 && !pid_alive(M.pid0)) {
            M.no_finalize = true;
            return NULL;
        }
    }
}

void tune_mpi_send_records(json_t *msg)
{
    json_object_set_new(msg, "rank", json_integer(M.rank));
    send_json(0, TAG_RECORDS, msg);
}

void tune_mpi_alone(const char *why)
{
    if (!M.on || M.rank != 0 || tune_mpi_workers() == 0)
        return;
    fprintf(stderr, "texc: MPI: %s: rank 0 tunes alone\n", why);
    json_t *stop = json_pack("{s:b}", "stop", 1);
    for (int i = 1; i < M.size; i++)
        if (M.ranks[i].alive)
            send_json(i, TAG_STOP, stop);
    json_decref(stop);
    for (int i = 1; i < M.size; i++)
        M.ranks[i].alive = false;
    M.stopped = true;
}

int tune_mpi_end(int status)
{
    if (!M.on)
        return status;
    if (M.rank == 0) {
        for (int i = 1; !M.stopped && i < M.size; i++)
            M.no_finalize = M.no_finalize || !M.ranks[i].alive;
        json_t *stop = json_pack("{s:b, s:b}", "stop", 1, "lost", M.no_finalize);
        for (int i = 1; !M.stopped && i < M.size; i++)
            if (M.ranks[i].alive)
                send_json(i, TAG_STOP, stop);
        json_decref(stop);
    }
    if (!M.no_finalize)
        MPI_Finalize();
    free(M.ranks);
    M.ranks = NULL;
    M.on = false;
    return status;
}
#endif

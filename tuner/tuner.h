/* tuner.h — the autotuner: searches schedules, measures every candidate in
 * an isolated process against the reference evaluator, logs everything,
 * and hands later builds the winner.  See tuner/tune.c's top comment.
 *
 * The first part is the interface driver/main.c uses; the rest is
 * shared by the files of tuner/ only. */
#ifndef TEXC_TUNER_H
#define TEXC_TUNER_H

#include <jansson.h>

#include "sched/sched.h"

typedef struct TuneOptions {
    const char *source_path; /* the .te file */
    Target target;
    const char *log_path;    /* --log, or NULL for the default under
                                $XDG_CACHE_HOME/texc/ */
    int trials;              /* --trials, 0: the default budget */
    double time_budget;      /* --time-budget seconds, 0: the default */
    int jobs;                /* --jobs, 0: the number of cores */
    uint64_t seed;           /* --seed */
    const char *plot;        /* --plot FILE.svg, or NULL */
    const char *arch;        /* --arch sm_XX (cuda), or NULL */
    bool warm;               /* --tune-cache=warm: time calls on one set of
                                buffers, left in cache by the call before
                                (cpu); else rotated copies (measure.c) */
    bool verbose, quiet;
    /* run-time dims (doc/runtime-dims.md): --buckets, and the bucket one
       task tunes (tune_run sets it, a task per bucket; a build asks
       tune_best per bucket); NULL for a static program */
    const BucketSpec *buckets;
    int nbuckets;
    const Bucket *bucket;
    json_t *seed_config;     /* a configuration to measure first (the
                                neighbouring bucket's winner), or NULL */
    json_t **best_config;    /* if set, receives the winner's configuration */
    const Bucket *hint_bucket; /* the bucket whose schedule decides the
                                layouts of a program with run-time dims
                                (tune_buckets, a build's variants): a task's
                                layouts in another bucket are its winner's
                                there (tasks.c) */
    bool layout_fixed;       /* a bucket's candidates read the layouts that
                                LAYOUT_SCHED assigns (the hint bucket's
                                schedule, as a build's variants do), not
                                their own */
    const Schedule *layout_sched;
    struct TuneShared *shared; /* if set, what the cost model learned in the
                                neighbouring bucket: fitted on with this
                                task's own measurements, then replaced by them */
    struct Reference *reference; /* the compiled reference the buckets of a
                                    program share (tune_run of a bucket), or
                                    NULL: the run's own */
    struct TuneTimes *times; /* if set, tune_run adds where its time went
                                (the buckets' total) */
    const char *task;        /* a task of a program (tasks.c): its name in
                                the records ("FILE:KERNEL"), and no summary
                                of its own; NULL for a whole program */
    bool relative_atol;      /* tolerances grown with each output's largest
                                |ref| (measure.c, set_tolerances): a task's
                                inputs stand for intermediates */
    bool whole;              /* --tune-whole: a program of several kernels
                                is one task, as before tasks.c */
    bool profile;            /* candidates built with --profile's timers,
                                the harness's table kept (measure.c) */
    int task_no;             /* a task's place in its program's tasks (the
                                same on every MPI rank): a job names it */
} TuneOptions;

/* Where a tuning run's time went, for -v's last line: the reference
 * outputs (the compiled reference's build and runs, or the evaluator),
 * the candidates' builds (checking, applying and compiling, in parallel:
 * wall time), their measurements, and the rest (the search, the cost
 * model, the log, the inputs' files) is TOTAL less those. */
typedef struct TuneTimes {
    double total, reference, builds, measure;
} TuneTimes;
/* Prints "texc: tuning time: total T s, reference R s, builds B s,
 * measurements M s, other O s". */
void tune_times_print(FILE *out, const TuneTimes *t);

/* Cost-model data one bucket's task leaves to the next (tune_buckets):
 * the features of its measured points in space SPACE (Space.id) and their
 * log-seconds less their mean, so that the next bucket, whose sizes make
 * every time larger or smaller, reads them on its own scale. */
typedef struct TuneShared {
    char space[33];
    int nfeatures;
    double *x, *y;           /* malloc'ed; n rows of nfeatures, n values */
    int n;
} TuneShared;

/* --tune: searches G's schedule space for O->target and appends every
 * measurement to the log.  Returns 0, or 1 after a message (a graph with
 * a run-time dim is refused: te_require_static_dims). */
int tune_run(Arena *a, Graph *g, const TuneOptions *o);

/* For a normal build: the fastest valid logged schedule for G's workload
 * on this machine (knobs of the file's schedule set, or a schedule of its
 * own), printing which record it used, and setting *FROM to a phrase that
 * names the record (its date and workload hash) for the generated files'
 * header comments; or WRITTEN (the file's schedule for the target, or
 * NULL), saying once that no record matches, *FROM untouched. */
const Schedule *tune_best(Arena *a, Graph *g, const Schedule *written, const TuneOptions *o,
                          const char **from);

/* --tune of a program of several kernels, static sizes, no file
 * schedule for the target (tasks.c): one task per kernel, a task
 * scheduler for the budget, the end-to-end time of the tuned program
 * against the default.  Returns 0, 1 after a message, or -1 when G is not
 * such a program (tune_run tunes it whole). */
int tune_tasks(Arena *a, Graph *g, const TuneOptions *o);
/* Is G (in O's bucket, if any) tuned as tasks? */
bool tune_tasks_apply(Graph *g, const TuneOptions *o);
/* For a normal build of such a program: each kernel's fastest logged
 * schedule (its task's records, whichever program measured them) as one
 * schedule of G's stage names, or NULL when no kernel has a record; *FROM
 * says how many kernels have one. */
const Schedule *tune_best_tasks(Arena *a, Graph *g, const TuneOptions *o, const char **from);

/* mpi.c — tuning on several machines through MPI (see mpi.c's top
 * comment).  Outside an MPI job texc is rank 0 of 1 and none of this
 * does anything. */
/* main(): started by an MPI launcher, texc becomes texc-mpi (beside
 * it), or says that rank 0 works alone. */
void tune_mpi_exec(int argc, char **argv);
/* Joins the job (MPI_Init, the ranks' hellos, said on rank 0).  False
 * when this rank should stop (MPI could not start on a worker). */
bool tune_mpi_start(const TuneOptions *o);
/* Ends it: rank 0 sends the workers home; MPI_Finalize.  Returns
 * STATUS. */
int tune_mpi_end(int status);
/* This process's rank (0: the one that searches and builds; outside a
 * job, 0) and the job's size (1 outside a job). */
int tune_mpi_rank(void);
int tune_mpi_size(void);
/* This host's name in a job, else NULL: records name it. */
const char *tune_mpi_host(void);
/* Rank 0: the live workers, and the first N of them into RANKS. */
int tune_mpi_workers(void);
int tune_mpi_assign(int *ranks, int n);
/* Rank 0: is RANK's machine of rank 0's model (its timings join the
 * search)? */
bool tune_mpi_pooled(int rank);
/* Rank 0: sends the workers home, saying WHY rank 0 tunes alone. */
void tune_mpi_alone(const char *why);
/* Rank 0: sends RANK a job (a share of a batch); false when the rank is
 * lost (said). */
bool tune_mpi_send_job(int rank, json_t *job);
/* Rank 0: RANK's answer to job JOB (NCANDS candidates), waited for until
 * DEADLINE (tune_now), or NULL when the rank is lost (said). */
json_t *tune_mpi_wait_records(int rank, int job, int ncands, double deadline);
/* A worker: the next job, or NULL when rank 0 sends it home (or is
 * gone). */
json_t *tune_mpi_next_job(void);
/* A worker: a job's answer to rank 0. */
void tune_mpi_send_records(json_t *msg);

/* --log-summary FILE: the best record per workload.  Returns an exit
 * status. */
int tune_log_summary(const char *path);

/* ------------------------------------------------------------------ */
/* Inside tuner/.                                                      */

/* The default budget: enough for the sample's knob space several times
 * over, and a time budget that keeps `texc samples/matmul_gelu.te --tune`
 * (reference evaluation included) under ten minutes on two cores. */
enum {
    TUNE_DEFAULT_TRIALS = 200,
    TUNE_DEFAULT_BUDGET_S = 300,
};

/* space.c — the search space: one Param per knob of the file's schedule,
 * or, without knobs, the parameters of an automatic space derived from
 * each stage's structure.  A point is an array of value indices, one per
 * Param. */
typedef struct Param {
    const char *name;  /* the knob's name, or "STAGE.what" (auto) */
    int64_t *values;
    int nvalues;
    bool categorical;  /* the values name variants, not sizes */
    int plan;          /* auto: the stage plan it belongs to; -1 knobs */
} Param;

typedef struct StagePlan StagePlan; /* space.c: one auto-scheduled stage */

typedef struct Space {
    bool is_auto;            /* derived from the stages, not from knobs */
    Target target;
    const Schedule *written; /* the file's schedule for the target, or NULL */
    Param *params;
    int nparams;
    StagePlan **plans;       /* auto */
    int nplans;
    Knob **knobs;            /* knobs: params[i] is knobs[i] */
    char id[33];             /* a hash of the space's definition: records
                                of another space are never applied */
    double size;             /* points that pass the legality rules */
    int nfeatures;           /* tune_space_features' length */
    /* cuda */
    int64_t smem_limit;      /* auto: bytes of shared memory a block may stage */
    const char *smem_from;   /* ... and where that limit comes from */
    int sm;                  /* tune_space_check also asks the CUDA
                                backend's limits for sm_SM (cg_cuda_fits);
                                0: it does not */
    const Bucket *bucket;    /* points are checked as this bucket's variant */
} Space;

/* Builds the space of G for TARGET (WRITTEN: the file's schedule, or
 * NULL).  Returns NULL after a message when WRITTEN does not apply. */
Space *tune_space_new(Arena *a, Graph *g, const Schedule *written, Target target);
/* Does POINT pass the space's legality rules (register budget, unroll
 * extents, variants that need a split)?  Knob points are checked by
 * applying them (tune_space_check). */
bool tune_space_legal(const Space *sp, const int *point);
/* The statements a build applies before sch_default: the file's schedule
 * with POINT's knob values, or the file's plus the generated ones. */
Schedule *tune_space_schedule(Arena *a, const Space *sp, const int *point);
/* Applies and lowers every point of POINTS (N of them) in a child
 * process; OK[i] says whether point i applies without a diagnostic.  A
 * point that crashes texc itself counts as illegal, with a warning. */
void tune_space_check(Arena *a, Graph *g, const Space *sp, int *const *points, int n, bool *ok);
/* The configuration as a JSON object ({"TI": 32} or {"y.ti": 4}), and
 * back; tune_space_point_of returns false when CONFIG is not a point of
 * SP. */
json_t *tune_space_config(const Space *sp, const int *point);
bool tune_space_point_of(const Space *sp, const json_t *config, int *point);
/* Feature vector for the cost model (nfeatures values). */
void tune_space_features(const Space *sp, const int *point, double *out);
/* One line per parameter, and the size. */
void tune_space_print(FILE *out, const Space *sp);
/* A random legal point (of an automatic space: a matmul stage in its
 * micro-kernel form half the time); false if none found. */
bool tune_space_random(const Space *sp, uint64_t *rng, int *point);
uint64_t tune_rand(uint64_t *state);

/* cuda_measure.c — the CUDA devices, and what building and measuring a
 * CUDA candidate do in their child processes. */
enum { TUNE_MAX_DEVICES = 16 };
typedef struct CudaDevices {
    int count;           /* devices the driver reports; 0: none, WHY says why */
    char why[256];
    int sm;              /* device 0's architecture: 90 for sm_90 */
    char name[256];      /* device 0's name */
    int smem_optin;      /* bytes of shared memory a block may opt into */
    int l2_bytes;
    int driver;          /* the driver's version: 13000 for 13.0 */
    int used[TUNE_MAX_DEVICES]; /* the devices like device 0 (same
                                   architecture and name): measured on */
    int nused;
} CudaDevices;
/* The devices, probed once per process in a child process (see
 * cuda_measure.c: the tuner itself never initialises the driver). */
const CudaDevices *tune_cuda_devices(void);

/* reference.c — the reference outputs every candidate is checked
 * against: the program compiled by the C backend in double with a naive
 * schedule, built once per tuning run (once for all the sizes of a
 * program with run-time dims) and run in a child process; te_eval_at
 * where it cannot be built or does not run (see reference.c). */
typedef struct Reference {
    char dir[4096];      /* its build (a texc-tune.XXXXXX directory with a
                            pid file, as the Bench's); "" before */
    bool tried;          /* the build was tried */
    bool compiled;       /* built, and has not failed since: it computes */
    bool evaluator;      /* TEXC_TUNE_REFERENCE=evaluator, or given up */
    const char *plant;   /* TEXC_TUNE_REFERENCE=crash or hang: a test hook */
    const char *source;  /* the .te file, for the generated header */
    bool verbose, quiet;
} Reference;
/* A reference for the tuning run of O (its file, -v, -q). */
void tune_reference_init(Reference *r, const TuneOptions *o);
/* G's outputs at the sizes DIMS (one per g->dims; NULL: its static ones)
 * on the inputs IN (their values) that INPUT_PATHS hold (.npy files, as
 * the candidates read them), into OUT[0..g->noutputs) (malloc'ed).  The
 * first call builds the compiled reference; a build or a run that fails
 * is said, and te_eval_at computes this call's outputs and every later
 * one's.  *COMPILED says which did.  Returns false after a message when
 * neither could (te_eval_at's diagnostic). */
bool tune_reference_outputs(Reference *r, Graph *g, const int64_t *dims, double *const *in,
                            char *const *input_paths, double **out, bool *compiled);
/* Removes the build. */
void tune_reference_free(Reference *r);

/* tune.c — a task's tuner, kept open across the rounds the task
 * scheduler (tasks.c) gives it. */
typedef struct Tuner Tuner;
typedef struct TuneTaskState {
    bool done;        /* the search ended (space, patience, budget) */
    bool failed;      /* its bench could not start */
    int measured, ok; /* candidates recorded, valid ones */
    int space;        /* recorded candidates of the space (the default
                         schedule is not one: --trials does not count it) */
    double best_s, default_s; /* 0: none */
    int batch;        /* candidates a batch builds */
    double flop;
} TuneTaskState;
/* NULL after a message. */
Tuner *tune_task_open(Arena *outer, Graph *g, const TuneOptions *o);
/* Measures about TRIALS more candidates (the default schedule first,
 * the first time), stopping at DEADLINE (tune_now's clock) but for the
 * task's first candidate.  Returns how many were recorded. */
int tune_task_round(Tuner *t, int trials, double deadline);
TuneTaskState tune_task_state(const Tuner *t);
/* Returns tune_run's status. */
int tune_task_close(Tuner *t);
/* An MPI worker's loop (mpi.c): builds and measures the jobs rank 0
 * sends, with TUNERS (N of them, by TuneOptions.task_no), until it is
 * sent home.  Returns 0. */
int tune_serve(Tuner **tuners, int n);

/* measure.c — building and timing candidates in child processes. */

#define TUNE_STATUSES(X)                                                    \
    X(TS_OK, "ok")                       /* correct; the times count    */ \
    X(TS_WRONG, "wrong")                 /* an output differs from the reference */ \
    X(TS_CRASH, "crash")                 /* killed by a signal          */ \
    X(TS_TIMEOUT, "timeout")             /* ran past its time limit     */ \
    X(TS_RUN_ERROR, "run_error")         /* exited with a failure status */ \
    X(TS_INVALID, "invalid")             /* the schedule did not apply  */ \
    X(TS_COMPILE_ERROR, "compile_error") /* the C compiler failed       */ \
    X(TS_COMPILE_TIMEOUT, "compile_timeout") /* the C compiler ran too long */

typedef enum TuneStatus { TUNE_STATUSES(TE_ENUM_ITEM) TS_COUNT } TuneStatus;
const char *tune_status_name(TuneStatus s);

enum { TUNE_MAX_PLANTS = 8 };

/* The fixed part of every measurement: inputs, reference, limits. */
typedef struct Bench {
    Graph *g;
    Arena *arena;         /* what lives as long as the run */
    Target target;
    const char *kernel;   /* a C identifier: the generated function */
    const char *source;   /* the .te file */
    char workdir[4096];   /* private: inputs and candidate directories */
    char **input_paths;   /* one .npy per graph input */
    double **ref;         /* the reference's outputs */
    double *rtol, *atol;  /* per output */
    Reference *reference; /* what computes ref: O's (the buckets'), or ... */
    Reference own_reference; /* ... the Bench's own */
    double min_time;      /* seconds of timed repeats to aim for */
    double compile_limit; /* seconds */
    double reference_s;   /* seconds the reference outputs took */
    char harness_obj[4200]; /* the harness, compiled once; "" if not */
    bool harness_tried;
    bool verbose;
    /* TEXC_TUNE_PLANT: a test hook, see measure.c */
    const char *plant_kind[TUNE_MAX_PLANTS];
    int plant_trial[TUNE_MAX_PLANTS];
    int nplants;
    const char *keep;     /* TEXC_TUNE_KEEP: a directory for the builds */
    /* cuda */
    bool cuda;
    char arch[16];        /* "sm_90": the devices', what candidates are built for */
    int sm;
    void **host_inputs;   /* each input as the kernels read it ... */
    size_t *input_bytes;  /* ... and its size */
    int devices[TUNE_MAX_DEVICES]; /* the ordinals measured on */
    int ndevices;
    int max_repeats;      /* timed repeats of one run at most */
    bool warm;            /* --tune-cache=warm: the harness keeps one copy */
    bool relative_atol;   /* TuneOptions' */
    bool profile;         /* TuneOptions': built with --profile's timers;
                             each run's table is in the candidate's run.log */
    /* a bucket of a program with run-time dims: the variant candidates
       build, and the sizes each is measured at (its representative sizes:
       smallest, largest, hint, one no tile divides), each with inputs and
       a reference of its own; input_paths and ref point at size CUR's */
    const Bucket *bucket;
    bool layout_fixed;    /* TuneOptions' */
    const Schedule *layout_sched;
    int nsizes;
    int64_t **sizes;      /* by size: one per Graph.dims (te_eval_at's) */
    char ***size_inputs;
    double ***size_ref;
    double *size_weight;  /* a size's time counts times this in the score */
    int cur;
} Bench;

typedef struct Candidate {
    int *point;           /* NULL: the default schedule */
    Schedule *sched;      /* applied before sch_default */
    char *key;            /* the configuration, canonical JSON */
    json_t *config;
    int trial;            /* 1-based, in this run */
    double predicted;     /* the cost model's log-time, NAN if none */
    bool guided;          /* chosen by the model, not at random */
    int device;           /* cuda: the device it is measured on */
    /* building */
    char dir[4200];
    int pid;
    double started;
    /* results */
    TuneStatus status;
    char detail[256];
    char *schedule_text;  /* the applied trace, from the build */
    double build_s, time_s, first_s;
    int repeats;
    int copies;           /* input copies the timed run rotated through */
    double max_err;       /* largest |got - ref| over all outputs */
    double worst_ratio;   /* largest |got - ref| / (atol + rtol |ref|) */
} Candidate;

/* Writes the inputs and computes the reference (slow at full size).
 * Returns false after a message. */
bool tune_bench_init(Bench *b, Arena *a, Graph *g, const TuneOptions *o, const char *kernel);
void tune_bench_free(Bench *b);
/* Builds CANDS[0..n) in parallel, at most JOBS compilers at a time;
 * each ends with status TS_OK (built) or a build failure. */
void tune_build(Bench *b, Candidate **cands, int n, int jobs);
/* Runs a built candidate alone: validates its output and times it.
 * RUN_LIMIT is the seconds one repeat may take. */
void tune_measure(Bench *b, Candidate *c, double run_limit);
/* Measures CANDS[0..n) (built) at once, one at a time on each of B's
 * devices, each in a child process of its own (see measure.c). */
void tune_measure_devices(Bench *b, Candidate **cands, int n, double run_limit);
/* Removes the candidate's directory (after copying what it built to
 * TEXC_TUNE_KEEP, if set). */
void tune_discard(Bench *b, Candidate *c);

/* process.c — the plumbing every child process of the tuner shares;
 * it calls no other file of tuner/. */
/* In a child: be killed when the tuner dies (Linux's PR_SET_PDEATHSIG). */
void tune_die_with_parent(void);
/* measure.c: the start of a build child (a candidate's, the compiled
 * reference's): its own process group, dying with its parent, in DIR,
 * its output and texc's diagnostics to DIR/build.log, quietly. */
void tune_build_child_enter(const char *dir);
/* measure.c: where tuners make their directories (TMPDIR, else /tmp), and
 * a fresh TMP/texc-tune.XXXXXX into DIR (SIZE bytes) holding the pid file
 * by which a later tuner removes it if this one is killed; false with
 * errno set and DIR "" if it cannot be made. */
const char *tune_tmp_root(void);
bool tune_make_workdir(const char *tmp, char *dir, size_t size);
/* measure.c: into OUT, the first line of DIR/FILE that says "error" (or
 * "internal"), else its first line; "" when it cannot be read. */
void tune_first_error(const char *dir, const char *file, char *out, size_t size);
/* Seconds on CLOCK_MONOTONIC, and a sleep between polls of children. */
double tune_now(void);
void tune_sleep_ms(int ms);
/* Waits for the child PID (its own process group) for at most LIMIT
 * seconds, killing the group past it or on SIGINT or SIGTERM.  Returns 0
 * with *WSTATUS set when it ended, 1 when it was killed for the time, 2
 * when for a signal to the tuner. */
int tune_wait(int pid, double limit, int *wstatus);
/* Recursively removes PATH (no symlinks followed). */
void tune_remove_tree(const char *path);
/* Reads TEXC_TUNE_PLANT into B's plants (a test hook, see measure.c). */
void tune_plant_parse(Bench *b);
/* The TEXC_TUNE_PLANT kind for trial TRIAL, or NULL. */
const char *tune_plant_of(const Bench *b, int trial);
/* Has SIGINT or SIGTERM arrived while tuning? */
extern volatile int tune_interrupted;

/* Exit statuses of the children that build and run candidates: the
 * schedule did not apply (or the backend refused it), a file could not be
 * written, the compiler could not be run or failed, a CUDA kernel
 * faulted (an illegal address: the GPU's crash). */
enum {
    TUNE_EXIT_FAULT = 95,
    TUNE_EXIT_COMPILE = 96,
    TUNE_EXIT_SCHEDULE = 97,
    TUNE_EXIT_WRITE = 98,
    TUNE_EXIT_EXEC = 99,
};

/* cuda_measure.c, continued. */
/* The input's values as the kernels store them (malloc'ed, *BYTES long,
 * at least 4 and a multiple of 4). */
void *tune_cuda_host_bytes(const Tensor *t, const double *values, size_t *bytes);
/* In a build child, in the candidate's directory: emits the CUDA C of FN,
 * compiles it with NVRTC for B's architecture, writes kernel.cubin and
 * launch.txt (the kernels, their grids, blocks and arguments); exits. */
_Noreturn void tune_cuda_build(Bench *b, SchedState *st, const LoweredFunc *fn, Arena *a);
/* In a run child, in the candidate's directory: runs the candidate on its
 * device through libtexrt once, then REPEATS timed times; writes each
 * output as outN.npy and "MEDIAN_SECONDS COPIES" on stdout; exits. */
_Noreturn void tune_cuda_run(const Bench *b, const Candidate *c, int repeats);

/* lock.c — the machine lock: tuners on one machine take turns, a batch
 * each, so that no timing shares the cores with another tuner's work
 * (see lock.c). */
typedef struct MachineLock {
    int fd;              /* texc-measure-UID.lock; -1: not open */
    int queue_fd;        /* texc-queue-UID.lock: the next in line holds it */
    char path[4200];     /* the lock's */
    bool held;
    bool said;           /* "waiting for another texc tuner" said */
    double waited;       /* seconds spent waiting for it, in all */
} MachineLock;
typedef enum TuneLockResult {
    TUNE_LOCK_HELD,        /* taken: this tuner's turn */
    TUNE_LOCK_TIMEOUT,     /* not taken within the patience */
    TUNE_LOCK_INTERRUPTED, /* SIGINT or SIGTERM while waiting */
    TUNE_LOCK_FAILED,      /* flock failed (after a message) */
} TuneLockResult;
/* Opens the lock files in $TEXC_LOCK_DIR or /tmp, refusing anything but
 * regular files of this user's with one link.  Returns false after a
 * message. */
bool tune_lock_open(MachineLock *l);
/* Waits at most PATIENCE seconds for the lock (saying once, unless
 * QUIET, that it waits, and for whom), adding the wait to L's waited. */
TuneLockResult tune_lock_take(MachineLock *l, double patience, bool quiet);
/* The pid of the tuner holding the lock, or 0 when unknown. */
long tune_lock_holder(const MachineLock *l);
void tune_lock_release(MachineLock *l);
void tune_lock_close(MachineLock *l);

/* model.c — the cost model: ridge regression on quadratic features of
 * the point, predicting log(seconds).  See model.c for why not XGBoost. */
typedef struct CostModel CostModel;
CostModel *tune_model_fit(Arena *a, const double *x, const double *y, int n, int nfeatures);
double tune_model_predict(const CostModel *m, const double *x);
/* Spearman's rank correlation of A and B (N values). */
double tune_rank_correlation(const double *a, const double *b, int n);

/* log.c — the tuning log: JSON lines, one record per measurement. */
typedef struct Machine {
    Target target;
    char cpu[256];       /* the CPU model */
    char isa[512];       /* the SIMD extensions, space-separated */
    int cores;
    char arch[1024];     /* cpu, cores and isa, or the GPU's sm_XX and name:
                            what records must match */
    char compiler[256];  /* cc --version's first line, or "NVRTC 13.0" */
    char device[256];    /* cuda: device 0's name ... */
    char sm[16];         /* ... and architecture, "sm_90" */
    int ndevices;        /* cuda: the devices like it */
} Machine;

typedef struct Workload {
    char hash[33];       /* te_hash of the optimized graph */
    const char *kernel;  /* the file's base name */
    Target target;
    double flop;         /* floating-point operations per run */
    json_t *shapes;      /* inputs and outputs: name, dtype, shape */
    json_t *dims;        /* the dims and their values */
    bool warm;           /* measured with warm caches (--tune-cache=warm) */
} Workload;

/* The machine kernels of TARGET run on: the CPU, or (cuda) the GPU
 * device 0 is (ARCH, --arch, when it is not the device's: a build for
 * another GPU, whose records are not this machine's). */
void tune_machine(Machine *m, Target target, const char *arch);
/* G's workload as O tunes or builds it: the kernel named after O's file,
 * O's target and --tune-cache. */
void tune_workload(Arena *a, Graph *g, const TuneOptions *o, Workload *w);
/* The log's path: O's --log or the default; NULL after a message. */
const char *tune_log_path(Arena *a, const TuneOptions *o);
/* Creates the directories above PATH.  Returns false after a message. */
bool tune_log_prepare(const char *path);
/* Appends one record: a single write() on an O_APPEND descriptor under
 * flock.  Returns false after a message. */
bool tune_log_append(const char *path, json_t *record);
/* The limits of what is read as a log: a regular file of at most
 * TUNE_LOG_MAX_BYTES, a line of at most TUNE_RECORD_MAX_BYTES (texc's
 * records are a few KB). */
#define TUNE_LOG_MAX_BYTES (1LL << 30)
#define TUNE_LOG_MAX_TEXT "1 GiB"
#define TUNE_RECORD_MAX_BYTES (1 << 20)
/* Where a read of the log stopped, for the next read to go on from. */
typedef struct LogPlace {
    long long offset; /* bytes read */
    int line;         /* lines read */
} LogPlace;
/* Reads every valid record (a JSON object with the fields every record
 * has, of their types) into *OUT, warning about and skipping other lines,
 * with their line number and why.  With FROM, reads only what follows
 * *FROM (all of the log if it is now shorter) and moves *FROM to the end.
 * Returns the number of records, or -1 when the log does not exist
 * (errno ENOENT) or cannot be read, or is not a regular file within the
 * limit (after a message). */
int tune_log_read(const char *path, LogPlace *from, json_t ***out, int *invalid, bool quiet);
/* Does RECORD come from this workload (measured with its caches, warm or
 * cold) and machine, this texc and this compiler?  If not and WHY is
 * given, *WHY says what differs. */
bool tune_record_matches(json_t *record, const Workload *w, const Machine *m, const char **why);
/* The common fields of a record. */
json_t *tune_record_new(const Workload *w, const Machine *m, const Space *sp);
/* "2024-05-01 12:00" from record R's timestamp, into OUT. */
void tune_record_date(json_t *r, char *out, size_t size);
/* Its last fields: in an MPI job, the host and rank that measured it. */
void tune_record_where(json_t *r);
/* A program's record (tasks.c): the common fields of the whole program's
 * workload, space "program"; tune_best never takes one. */
json_t *tune_program_record_new(const Workload *w, const Machine *m);
/* G's whole workload (O's task ignored) and this machine, as a program
 * record names them. */
void tune_program_workload(Arena *a, Graph *g, const TuneOptions *o, Workload *w, Machine *m);
/* The last ok program record in the log for G's whole workload (O's
 * task ignored) on this machine, texc and compiler (a new reference),
 * or NULL. */
json_t *tune_program_record(Arena *a, Graph *g, const TuneOptions *o);

/* plot.c — --plot: best-so-far GFLOP/s against trials, as SVG. */
bool tune_plot(const char *path, const char *title, const double *gflops, int n);

#endif

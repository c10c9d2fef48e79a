/* log.c — the tuning log, and the builds that use it.
 *
 * The log is JSON lines (jansson), one record per measurement.  A record
 * names its workload (te_hash of the optimized graph, the kernel's name,
 * the sizes and dtypes), the machine (CPU model, cores, SIMD extensions;
 * for --target cuda the GPU's sm_XX and name, the number of such devices
 * measured on and which one measured it), the compiler (`cc --version`'s
 * first line, or NVRTC's version) and texc's version, the
 * search space it belongs to (its id, see space.c), the configuration,
 * the schedule as text, the status, the times and the error against the
 * reference, and when it was measured.
 *
 * Appending: each record is one write() of one line on an O_APPEND
 * descriptor, under an exclusive flock, so that two tuners sharing a log
 * never interleave.  A tuner killed in the middle of a write can leave at
 * most one partial line; the next append starts on a new line, and reads
 * skip any line that is not a JSON object, with a warning.
 *
 * A record applies to a build when its workload, target, machine, texc
 * version and compiler all match and it belongs to the build's search
 * space; tune_best takes the fastest valid one.  When the log has records
 * for the workload (or for a kernel of the same name) but none applies,
 * the build says why, once, and uses the file's (or the default)
 * schedule: never a silent fallback.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "codegen/codegen.h"
#include "tuner/tuner.h"

/* ------------------------------------------------------------------ */
/* The machine and the workload.                                       */

/* SIMD extensions that change what the compiler emits for a kernel. */
static const char *const isa_flags[] = {
    "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
    "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "asimd", "sve", "sve2",
};

/* The CPU's model and the extensions of isa_flags it has, as
 * sched/host.c reads them (the space's vector widths come from there too). */
static void read_cpuinfo(Machine *m)
{
    snprintf(m->cpu, sizeof m->cpu, "%s", sch_host_cpu_model());
    for (size_t i = 0; i < sizeof isa_flags / sizeof isa_flags[0]; i++) {
        if (!sch_host_cpu_has(isa_flags[i]))
            continue;
        size_t len = strlen(m->isa);
        snprintf(m->isa + len, sizeof m->isa - len, "%s%s", len ? " " : "", isa_flags[i]);
    }
    if (!m->cpu[0]) {
        struct utsname u;
        snprintf(m->cpu, sizeof m->cpu, "%s", uname(&u) == 0 ? u.machine : "unknown");
    }
}

/* The first line ARGV prints on stdout, or "". */
static void first_line_of(char *const *argv, char *out, size_t size)
{
    out[0] = '\0';
    int fds[2];
    if (pipe(fds) != 0)
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return;
    }
    FILE *f = fdopen(fds[0], "r");
    if (f) {
        if (fgets(out, (int)size, f))
            out[strcspn(out, "\n")] = '\0';
        else
            out[0] = '\0';
        char sink[256];
        while (fgets(sink, sizeof sink, f))
            ;
        fclose(f);
    } else {
        close(fds[0]);
    }
    int wstatus;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
        out[0] = '\0';
}

/* The GPU of a cuda build: device 0 (tuning measures on the devices like
 * it), named by architecture and model; NVRTC is the compiler. */
static void cuda_machine(Machine *m, const char *arch)
{
    memset(m, 0, sizeof *m);
    m->target = TARGET_CUDA;
    const CudaDevices *d = tune_cuda_devices();
    int major, minor;
    cg_nvrtc_version(&major, &minor);
    snprintf(m->compiler, sizeof m->compiler, "NVRTC %d.%d", major, minor);
    if (d->count == 0) {
        snprintf(m->arch, sizeof m->arch, "no CUDA device (%s)", d->why);
        return;
    }
    snprintf(m->sm, sizeof m->sm, "sm_%d", d->sm);
    snprintf(m->device, sizeof m->device, "%s", d->name);
    m->ndevices = d->nused;
    if (arch && strcmp(arch, m->sm) != 0)
        snprintf(m->arch, sizeof m->arch, "%s (--arch; device 0 is %s, %s)", arch, m->sm, m->device);
    else
        snprintf(m->arch, sizeof m->arch, "%s; %s", m->sm, m->device);
}

void tune_machine(Machine *m, Target target, const char *arch)
{
    if (target == TARGET_CUDA) {
        cuda_machine(m, arch);
        return;
    }
    static Machine cached;
    static bool done;
    if (!done) {
        cached.target = TARGET_CPU;
        read_cpuinfo(&cached);
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cached.cores = n > 0 ? (int)n : 1;
        const char *threads = getenv("OMP_NUM_THREADS");
        snprintf(cached.arch, sizeof cached.arch, "%s; %d cores%s%s; %s", cached.cpu, cached.cores,
                 threads && *threads ? "; OMP_NUM_THREADS=" : "", threads && *threads ? threads : "",
                 cached.isa[0] ? cached.isa : "no SIMD flags");
        char *argv[] = { (char *)TEXC_KERNEL_CC, "--version", NULL };
        first_line_of(argv, cached.compiler, sizeof cached.compiler);
        if (!cached.compiler[0])
            snprintf(cached.compiler, sizeof cached.compiler, "%s (version unknown)",
                     TEXC_KERNEL_CC);
        done = true;
    }
    *m = cached;
}

/* Floating-point operations of E at one point: arithmetic and intrinsics
 * count 1, a reduction its length times (body + 1); index arithmetic,
 * comparisons, select and casts count nothing. */
static double expr_flop(const Expr *e)
{
    switch (e->kind) {
    case EX_CONST:
    case EX_VAR:
    case EX_LOAD:
        return 0;
    case EX_REDUCE: {
        double n = 1;
        for (int i = 0; i < e->naxes; i++)
            n *= (double)e->axes[i]->extent;
        return n * (expr_flop(e->args[0]) + 1);
    }
    case EX_OP: {
        double f = 0;
        for (int i = 0; i < e->nargs; i++)
            f += expr_flop(e->args[i]);
        switch (e->op) {
        case OP_CAST: case OP_SELECT: case OP_NOT: case OP_AND: case OP_OR: case OP_LT:
        case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
            return f;
        default:
            return f + (dtype_is_float(e->dtype) ? 1 : 0);
        }
    }
    }
    return 0;
}

static json_t *tensor_json(const Tensor *t, const char *role)
{
    json_t *shape = json_array();
    for (int d = 0; d < t->rank; d++)
        json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
    return json_pack("{s:s, s:s, s:s, s:o}", "name", t->name, "role", role, "dtype",
                     dtype_name(t->dtype), "shape", shape);
}

void tune_workload(Arena *a, Graph *g, const TuneOptions *o, Workload *w)
{
    const char *source = o->source_path;
    memset(w, 0, sizeof *w);
    te_hash(g, w->hash);
    if (o->bucket) {
        /* a bucket of a program with run-time dims: a workload of its own,
           and one for each layout its candidates read (the hint bucket's
           schedule's: TuneOptions.layout_fixed) */
        char *layouts = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&layouts, &len);
        if (!m)
            te_internal_error(__FILE__, __LINE__, "out of memory");
        if (o->layout_fixed && o->layout_sched)
            sch_print(m, o->layout_sched);
        else if (o->layout_fixed)
            fputs("the default", m);
        fclose(m);
        const char *text = arena_printf(a, "%s bucket %s%s%s", w->hash, sch_bucket_str(a, g, o->bucket),
                                        o->layout_fixed ? " layouts of " : "", layouts);
        free(layouts);
        XXH128_hash_t h = XXH3_128bits(text, strlen(text));
        snprintf(w->hash, sizeof w->hash, "%016llx%016llx", (unsigned long long)h.high64,
                 (unsigned long long)h.low64);
    }
    const char *base = source ? strrchr(source, '/') : NULL;
    base = base ? base + 1 : source ? source : "kernel";
    size_t n = strlen(base);
    if (n > 3 && strcmp(base + n - 3, ".te") == 0)
        n -= 3;
    w->kernel = o->task ? o->task : arena_strndup(a, base, n);
    w->target = o->target;
    w->warm = o->warm;
    for (int i = 0; i < g->ntensors; i++) {
        const Tensor *t = g->tensors[i];
        /* (a bucket's at its hint: its time is scaled to that work) */
        if (t->kind == TK_STAGE && t->body)
            w->flop += (double)(o->bucket ? te_elems_at(t, o->bucket->hint) : tensor_elems(t)) *
                       expr_flop(t->body);
    }
    w->shapes = json_array();
    for (int i = 0; i < g->ninputs; i++)
        json_array_append_new(w->shapes, tensor_json(g->inputs[i], "input"));
    for (int i = 0; i < g->noutputs; i++)
        json_array_append_new(w->shapes, tensor_json(g->outputs[i], "output"));
    w->dims = json_object();
    for (int i = 0; i < g->ndims; i++) {
        const Dim *d = &g->dims[i];
        if (o->bucket && d->runtime && d->declared)
            json_object_set_new(w->dims, d->name,
                                json_pack("{s:I, s:I, s:I}", "lo", (json_int_t)o->bucket->lo[i], "hi",
                                          (json_int_t)o->bucket->hi[i], "hint",
                                          (json_int_t)o->bucket->hint[i]));
        else
            json_object_set_new(w->dims, d->name, json_integer((json_int_t)d->value));
    }
}

/* ------------------------------------------------------------------ */
/* The file.                                                           */

const char *tune_log_path(Arena *a, const TuneOptions *o)
{
    if (o->log_path)
        return o->log_path;
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/')
        return arena_printf(a, "%s/texc/tuning.jsonl", xdg);
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : NULL;
    }
    if (!home || !*home) {
        fputs("texc: no tuning log: set HOME or XDG_CACHE_HOME, or give --log FILE\n", stderr);
        return NULL;
    }
    return arena_printf(a, "%s/.cache/texc/tuning.jsonl", home);
}

bool tune_log_prepare(const char *path)
{
    char *dir = strdup(path);
    char *slash = strrchr(dir, '/');
    bool ok = true;
    if (slash && slash != dir) {
        *slash = '\0';
        for (char *p = dir + 1; ok; p++) {
            if (*p == '/' || *p == '\0') {
                char c = *p;
                *p = '\0';
                if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
                    fprintf(stderr, "texc: cannot create %s for the tuning log: %s\n", dir,
                            strerror(errno));
                    ok = false;
                }
                *p = c;
                if (!c)
                    break;
            }
        }
    }
    free(dir);
    return ok;
}

bool tune_log_append(const char *path, json_t *record)
{
    char *text = json_dumps(record, JSON_COMPACT);
    if (!text) {
        fputs("texc: cannot encode a tuning record\n", stderr);
        return false;
    }
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "texc: cannot write %s: %s\n", path, strerror(errno));
        free(text);
        return false;
    }
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
        ;
    /* a line left partial by a killed tuner: start on a new one */
    struct stat sb;
    char last = '\n';
    if (fstat(fd, &sb) == 0 && sb.st_size > 0 && pread(fd, &last, 1, sb.st_size - 1) != 1)
        last = '\n';
    size_t len = strlen(text);
    char *line = malloc(len + 3);
    size_t n = 0;
    if (last != '\n')
        line[n++] = '\n';
    memcpy(line + n, text, len);
    n += len;
    line[n++] = '\n';
    ssize_t wrote = write(fd, line, n);
    bool ok = wrote == (ssize_t)n;
    if (!ok)
        fprintf(stderr, "texc: cannot append to %s: %s\n", path,
                wrote < 0 ? strerror(errno) : "short write");
    flock(fd, LOCK_UN);
    close(fd);
    free(line);
    free(text);
    return ok;
}

/* The fields every record has, and their JSON types: a line without
 * them is not a tuning record, whatever else it holds.  (A valid "ok"
 * record also has a numeric time_s.) */
static const struct {
    const char *key;
    json_type type;
} record_fields[] = {
    { "workload", JSON_STRING }, { "kernel", JSON_STRING }, { "target", JSON_STRING },
    { "status", JSON_STRING },   { "timestamp", JSON_STRING }, { "config", JSON_OBJECT },
};

/* Why R is not a tuning record, or NULL when it is one. */
static const char *not_a_record(json_t *r)
{
    if (!json_is_object(r))
        return "not a JSON object";
    for (size_t i = 0; i < sizeof record_fields / sizeof record_fields[0]; i++) {
        json_t *v = json_object_get(r, record_fields[i].key);
        if (!v || json_typeof(v) != record_fields[i].type) {
            static char why[64];
            snprintf(why, sizeof why, "no %s %s", record_fields[i].key,
                     record_fields[i].type == JSON_OBJECT ? "object" : "string");
            return why;
        }
    }
    const char *status = json_string_value(json_object_get(r, "status"));
    if (strcmp(status, "ok") == 0 && !json_is_number(json_object_get(r, "time_s")))
        return "an ok record without a numeric time_s";
    return NULL;
}

int tune_log_read(const char *path, LogPlace *from, json_t ***out, int *invalid, bool quiet)
{
    *out = NULL;
    *invalid = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        int err = errno;
        if (err != ENOENT)
            fprintf(stderr, "texc: cannot read %s: %s\n", path, strerror(err));
        errno = err;
        return -1;
    }
    /* a log is a file of lines: a directory, a device (/dev/zero) or a
       pipe is refused, and so is a file too large to be one; /dev/null
       is the empty log (a build that must not take tuned schedules) */
    struct stat sb, null;
    bool stat_ok = fstat(fileno(f), &sb) == 0;
    if (stat_ok && S_ISCHR(sb.st_mode) && stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) &&
        sb.st_rdev == null.st_rdev) {
        fclose(f);
        return 0;
    }
    if (!stat_ok || !S_ISREG(sb.st_mode) || sb.st_size > TUNE_LOG_MAX_BYTES) {
        fprintf(stderr, "texc: cannot read %s as a tuning log: %s\n", path,
                !stat_ok               ? strerror(errno)
                : !S_ISREG(sb.st_mode) ? "not a regular file"
                                       : "larger than " TUNE_LOG_MAX_TEXT " (start a new one with --log)");
        fclose(f);
        errno = EINVAL;
        return -1;
    }
    while (flock(fileno(f), LOCK_SH) != 0 && errno == EINTR)
        ;
    int lineno = 0;
    if (from && from->offset <= (long long)sb.st_size && fseeko(f, (off_t)from->offset, SEEK_SET) == 0)
        lineno = from->line;
    json_t **recs = NULL;
    int n = 0, cap = 0;
    char *line = NULL;
    size_t linecap = 0;
    ssize_t len;
    while ((len = getline(&line, &linecap, f)) > 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == (size_t)len)
            continue;
        json_error_t err;
        json_t *r = len > TUNE_RECORD_MAX_BYTES ? NULL : json_loadb(line, (size_t)len, 0, &err);
        const char *why = len > TUNE_RECORD_MAX_BYTES ? "longer than any record texc writes"
                          : !r && line[len - 1] != '\n' ? "partial: a tuner killed while writing?"
                          : !r                          ? err.text
                                                        : not_a_record(r);
        if (why) {
            json_decref(r);
            if (!quiet && *invalid < 3)
                fprintf(stderr, "texc: warning: %s:%d: skipping a line that is not a tuning "
                                "record (%s)\n",
                        path, lineno, why);
            ++*invalid;
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            recs = realloc(recs, sizeof *recs * (size_t)cap);
        }
        recs[n++] = r;
    }
    if (!quiet && *invalid > 3)
        fprintf(stderr, "texc: warning: %s: %d more lines skipped\n", path, *invalid - 3);
    free(line);
    if (from) {
        off_t end = ftello(f);
        from->offset = end >= 0 ? (long long)end : from->offset;
        from->line = lineno;
    }
    flock(fileno(f), LOCK_UN);
    fclose(f);
    *out = recs;
    return n;
}

static void free_records(json_t **recs, int n)
{
    for (int i = 0; i < n; i++)
        json_decref(recs[i]);
    free(recs);
}

static const char *str_field(json_t *r, const char *key)
{
    const char *s = json_string_value(json_object_get(r, key));
    return s ? s : "";
}

static double num_field(json_t *r, const char *key)
{
    json_t *v = json_object_get(r, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Why a record does not apply (tune_record_matches), as tune_best counts
 * and says it. */
enum { NOT_WORKLOAD, NOT_TARGET, NOT_MACHINE, NOT_VERSION, NOT_COMPILER, NOT_WARM, NOT_COLD,
       NREASONS };
static const char *const reason_text[NREASONS] = {
    [NOT_WORKLOAD] = "for other sizes or another version of the program",
    [NOT_TARGET] = "for another target",
    [NOT_MACHINE] = "from another machine",
    [NOT_VERSION] = "from another texc version",
    [NOT_COMPILER] = "from another compiler",
    [NOT_WARM] = "measured with cold caches (without --tune-cache=warm)",
    [NOT_COLD] = "measured with warm caches (--tune-cache=warm)",
};

bool tune_record_matches(json_t *r, const Workload *w, const Machine *m, const char **why)
{
    int reason = NREASONS;
    if (strcmp(str_field(r, "workload"), w->hash) != 0)
        reason = NOT_WORKLOAD;
    else if (target_lookup(str_field(r, "target")) != w->target)
        reason = NOT_TARGET;
    else if (strcmp(str_field(r, "arch"), m->arch) != 0)
        reason = NOT_MACHINE;
    else if (strcmp(str_field(r, "texc_version"), TE_VERSION) != 0)
        reason = NOT_VERSION;
    else if (strcmp(str_field(r, "compiler"), m->compiler) != 0)
        reason = NOT_COMPILER;
    else if ((strcmp(str_field(r, "cache"), "warm") == 0) != w->warm)
        reason = w->warm ? NOT_WARM : NOT_COLD;
    if (why)
        *why = reason < NREASONS ? reason_text[reason] : NULL;
    return reason == NREASONS;
}

/* The fields every record has: the workload, the machine, the compiler,
 * texc's version, the space (its id and kind) and when. */
static json_t *record_new(const Workload *w, const Machine *m, const char *space, const char *kind)
{
    char stamp[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *r = json_object();
    json_object_set_new(r, "workload", json_string(w->hash));
    json_object_set_new(r, "kernel", json_string(w->kernel));
    json_object_set_new(r, "target", json_string(target_name(w->target)));
    json_object_set_new(r, "arch", json_string(m->arch));
    if (m->target == TARGET_CUDA) {
        json_object_set_new(r, "sm", json_string(m->sm));
        json_object_set_new(r, "device", json_string(m->device));
        json_object_set_new(r, "devices", json_integer(m->ndevices));
    } else {
        json_object_set_new(r, "cpu", json_string(m->cpu));
        json_object_set_new(r, "isa", json_string(m->isa));
        json_object_set_new(r, "cores", json_integer(m->cores));
    }
    json_object_set_new(r, "compiler", json_string(m->compiler));
    json_object_set_new(r, "texc_version", json_string(TE_VERSION));
    json_object_set_new(r, "tensors", json_deep_copy(w->shapes));
    json_object_set_new(r, "dims", json_deep_copy(w->dims));
    json_object_set_new(r, "flop", json_real(w->flop));
    json_object_set_new(r, "space", json_string(space));
    json_object_set_new(r, "space_kind", json_string(kind));
    json_object_set_new(r, "cache", json_string(w->warm ? "warm" : "cold"));
    json_object_set_new(r, "timestamp", json_string(stamp));
    return r;
}

void tune_record_where(json_t *r)
{
    if (tune_mpi_host()) { /* measured in an MPI job: where */
        json_object_set_new(r, "host", json_string(tune_mpi_host()));
        json_object_set_new(r, "rank", json_integer(tune_mpi_rank()));
    }
}

json_t *tune_record_new(const Workload *w, const Machine *m, const Space *sp)
{
    return record_new(w, m, sp->id, sp->is_auto ? "auto" : "knobs");
}

/* A program's record (tasks.c): its space is "program", of that kind. */
#define PROGRAM_SPACE "program"

json_t *tune_program_record_new(const Workload *w, const Machine *m)
{
    return record_new(w, m, PROGRAM_SPACE, PROGRAM_SPACE);
}

static bool is_program_record(json_t *r)
{
    return strcmp(str_field(r, "space_kind"), PROGRAM_SPACE) == 0;
}

void tune_program_workload(Arena *a, Graph *g, const TuneOptions *o, Workload *w, Machine *m)
{
    TuneOptions op = *o;
    op.task = NULL;
    tune_workload(a, g, &op, w);
    tune_machine(m, o->target, o->arch);
}

json_t *tune_program_record(Arena *a, Graph *g, const TuneOptions *o)
{
    const char *path = tune_log_path(a, o);
    json_t **recs;
    int invalid;
    int n = path ? tune_log_read(path, NULL, &recs, &invalid, true) : -1;
    if (n <= 0)
        return NULL;
    Workload w;
    Machine m;
    tune_program_workload(a, g, o, &w, &m);
    json_t *last = NULL;
    for (int i = 0; i < n; i++)
        if (is_program_record(recs[i]) && strcmp(str_field(recs[i], "status"), "ok") == 0 &&
            tune_record_matches(recs[i], &w, &m, NULL))
            last = recs[i];
    json_incref(last);
    json_decref(w.shapes);
    json_decref(w.dims);
    free_records(recs, n);
    return last;
}

/* ------------------------------------------------------------------ */
/* Builds: the best record.                                            */

void tune_record_date(json_t *r, char *out, size_t size)
{
    const char *t = str_field(r, "timestamp");
    snprintf(out, size, "%.10s %.5s", t, strlen(t) > 11 ? t + 11 : "");
}

const Schedule *tune_best(Arena *a, Graph *g, const Schedule *written, const TuneOptions *o,
                          const char **from)
{
    const char *path = tune_log_path(a, o);
    if (!path)
        return written;
    json_t **recs;
    int invalid;
    int n = tune_log_read(path, NULL, &recs, &invalid, o->quiet);
    if (n < 0) {
        if (o->verbose && errno == ENOENT)
            fprintf(stderr, "texc: no tuning log at %s\n", path);
        return written;
    }
    for (int k = 0; written && k < written->nknobs; k++) {
        if (written->knobs[k]->set) {
            /* -K chose a knob: the user's choice wins over the log */
            if (o->verbose)
                fprintf(stderr, "texc: -K set knob ?%s: the tuning log is not used\n",
                        written->knobs[k]->name);
            free_records(recs, n);
            return written;
        }
    }
    Workload w;
    tune_workload(a, g, o, &w);
    Machine m;
    tune_machine(&m, o->target, o->arch);
    /* the build applies the file's schedule itself and reports its errors:
       here they would be said twice */
    FILE *saved_stream = diag_stream, *null = fopen("/dev/null", "w");
    int saved_errors = diag_errors, saved_warnings = diag_warnings;
    if (null)
        diag_stream = null;
    Space *sp = tune_space_new(a, g, written, o->target);
    if (sp)
        sp->bucket = o->bucket;
    diag_stream = saved_stream;
    diag_errors = saved_errors;
    diag_warnings = saved_warnings;
    if (null)
        fclose(null);
    int related = 0, other_space = 0, failed = 0;
    int reasons[NREASONS] = { 0 };
    json_t *best = NULL;
    int *point = sp ? arena_alloc(a, sizeof *point * (size_t)(sp->nparams + 1)) : NULL;
    for (int i = 0; i < n; i++) {
        json_t *r = recs[i];
        /* records of the other target are not this build's concern, nor
           are a program's choices among its kernels' (tasks.c) */
        if (is_program_record(r) ||
            (strcmp(str_field(r, "workload"), w.hash) != 0 &&
             strcmp(str_field(r, "kernel"), w.kernel) != 0) ||
            target_lookup(str_field(r, "target")) != w.target)
            continue;
        related++;
        const char *why;
        if (!tune_record_matches(r, &w, &m, &why)) {
            for (int k = 0; k < NREASONS; k++)
                if (why == reason_text[k])
                    reasons[k]++;
            continue;
        }
        if (!sp || strcmp(str_field(r, "space"), sp->id) != 0) {
            other_space++;
            continue;
        }
        double t = num_field(r, "time_s");
        json_t *config = json_object_get(r, "config");
        bool usable = strcmp(str_field(r, "status"), "ok") == 0 && t > 0 &&
                      (json_is_true(json_object_get(config, "default")) ||
                       tune_space_point_of(sp, config, point));
        if (!usable) {
            failed++;
            continue;
        }
        if (!best || t < num_field(best, "time_s"))
            best = r;
    }
    const Schedule *result = written;
    if (best) {
        json_t *config = json_object_get(best, "config");
        const char *what;
        if (json_is_true(json_object_get(config, "default"))) {
            Schedule *empty = arena_alloc(a, sizeof *empty);
            empty->target = o->target;
            result = empty; /* the default schedule won */
            what = "the default schedule";
        } else {
            tune_space_point_of(sp, config, point);
            if (sp->is_auto) {
                result = tune_space_schedule(a, sp, point);
                what = "the tuner's schedule";
            } else {
                for (int k = 0; k < sp->nparams; k++)
                    sp->knobs[k]->chosen = point[k];
                result = written;
                what = "the file's schedule, its knobs set";
            }
        }
        char date[32];
        tune_record_date(best, date, sizeof date);
        *from = arena_printf(a, "a tuning-log record (workload %s, %s): %s", w.hash, date, what);
        if (!o->quiet) {
            fprintf(stderr, "texc: using the tuned schedule from %s (%.3g GFLOP/s, record of %s)\n",
                    path, num_field(best, "gflops"), date);
        }
    } else if (related > 0 && !o->quiet) {
        char why[1024] = "";
        size_t len = 0;
        for (int k = 0; k < NREASONS; k++)
            if (reasons[k])
                len += (size_t)snprintf(why + len, sizeof why - len, "%s%d %s", len ? ", " : "",
                                        reasons[k], reason_text[k]);
        if (other_space)
            len += (size_t)snprintf(why + len, sizeof why - len,
                                    "%s%d for another schedule space (the file's schedule changed)",
                                    len ? ", " : "", other_space);
        if (failed)
            snprintf(why + len, sizeof why - len, "%s%d without a valid time", len ? ", " : "",
                     failed);
        fprintf(stderr, "texc: no record in %s applies to %s on this machine (%s): using the %s schedule\n",
                path, w.kernel, why, written ? "file's" : "default");
    }
    json_decref(w.shapes);
    json_decref(w.dims);
    free_records(recs, n);
    return result;
}

/* ------------------------------------------------------------------ */
/* --log-summary.                                                      */

/* The group --log-summary puts R in: its workload, target, machine, texc
 * and compiler (malloc'ed; NULL when out of memory). */
static char *group_key(json_t *r)
{
    char *k = NULL;
    if (asprintf(&k, "%s\x1f%s\x1f%s\x1f%s\x1f%s", str_field(r, "workload"), str_field(r, "target"),
                 str_field(r, "arch"), str_field(r, "texc_version"), str_field(r, "compiler")) < 0)
        return NULL;
    return k;
}

int tune_log_summary(const char *path)
{
    json_t **recs;
    int invalid;
    int n = tune_log_read(path, NULL, &recs, &invalid, false);
    if (n < 0) {
        if (errno == ENOENT)
            fprintf(stderr, "texc: cannot read %s: %s\n", path, strerror(ENOENT));
        return 1;
    }
    /* group by workload, target, machine, texc and compiler */
    json_t *groups = json_object();
    for (int i = 0; i < n; i++) {
        json_t *r = recs[i];
        char *key = group_key(r);
        if (!key)
            continue;
        json_t *grp = json_object_get(groups, key);
        if (!grp) {
            grp = json_pack("{s:i, s:i, s:n}", "records", 0, "failed", 0, "best");
            json_object_set_new(groups, key, grp);
        }
        free(key);
        json_object_set_new(grp, "records",
                            json_integer(json_integer_value(json_object_get(grp, "records")) + 1));
        double t = num_field(r, "time_s");
        if (strcmp(str_field(r, "status"), "ok") != 0 || !(t > 0)) {
            json_object_set_new(grp, "failed",
                                json_integer(json_integer_value(json_object_get(grp, "failed")) + 1));
            continue;
        }
        json_t *best = json_object_get(grp, "best");
        if (json_is_null(best) || t < num_field(best, "time_s"))
            json_object_set(grp, "best", r);
    }
    printf("%s: %d record%s in %zu group%s (workload, target, machine, texc, compiler)%s\n", path, n,
           n == 1 ? "" : "s", json_object_size(groups), json_object_size(groups) == 1 ? "" : "s",
           invalid ? "" : "");
    if (invalid)
        printf("%s: %d invalid line%s skipped\n", path, invalid, invalid == 1 ? "" : "s");
    const char *key;
    json_t *grp;
    json_object_foreach(groups, key, grp) {
        json_t *best = json_object_get(grp, "best");
        json_t *any = json_is_null(best) ? NULL : best;
        for (int i = 0; !any && i < n; i++) {
            char *k = group_key(recs[i]);
            if (k && strcmp(k, key) == 0)
                any = recs[i];
            free(k);
        }
        /* a bucket of a program with run-time dims: the dims it covers */
        char bucket[256] = "";
        size_t blen = 0;
        const char *dname;
        json_t *dval;
        json_object_foreach(json_object_get(any, "dims"), dname, dval) {
            if (!json_is_object(dval) || blen >= sizeof bucket)
                continue;
            json_int_t lo = json_integer_value(json_object_get(dval, "lo"));
            json_int_t hi = json_integer_value(json_object_get(dval, "hi"));
            blen += (size_t)(lo == hi ? snprintf(bucket + blen, sizeof bucket - blen, "%s%s = %lld",
                                                 blen ? ", " : ", bucket ", dname, (long long)lo)
                                      : snprintf(bucket + blen, sizeof bucket - blen, "%s%s in %lld..%lld",
                                                 blen ? ", " : ", bucket ", dname, (long long)lo,
                                                 (long long)hi));
        }
        printf("\n%s (workload %.12s, %s%s)\n", str_field(any, "kernel"), str_field(any, "workload"),
               str_field(any, "target"), bucket);
        printf("  machine   %s\n", str_field(any, "arch"));
        printf("  texc %s, %s\n", str_field(any, "texc_version"), str_field(any, "compiler"));
        printf("  records   %lld (%lld failed)\n",
               (long long)json_integer_value(json_object_get(grp, "records")),
               (long long)json_integer_value(json_object_get(grp, "failed")));
        if (!json_is_null(best) && is_program_record(best)) {
            /* a program's end-to-end verdicts: builds follow the last */
            for (int i = 0; i < n; i++) {
                char *k = is_program_record(recs[i]) && strcmp(str_field(recs[i], "status"), "ok") == 0
                              ? group_key(recs[i])
                              : NULL;
                if (k && strcmp(k, key) == 0)
                    best = recs[i];
                free(k);
            }
            char *keep = json_dumps(json_object_get(json_object_get(best, "config"), "default_kernels"),
                                    JSON_COMPACT);
            char date[32];
            tune_record_date(best, date, sizeof date);
            printf("  program   end to end %.3g s, default %.3g s; kernels kept default: %s; "
                   "recorded %s (the last, which builds follow)\n",
                   num_field(best, "time_s"), num_field(best, "default_s"), keep ? keep : "?", date);
            free(keep);
            continue;
        }
        if (json_is_null(best)) {
            printf("  best      none valid\n");
            continue;
        }
        char *config = json_dumps(json_object_get(best, "config"), JSON_COMPACT | JSON_SORT_KEYS);
        char date[32];
        tune_record_date(best, date, sizeof date);
        printf("  best      %.3g GFLOP/s, %.3g s, %s, recorded %s\n", num_field(best, "gflops"),
               num_field(best, "time_s"), config ? config : "?", date);
        free(config);
    }
    json_decref(groups);
    free_records(recs, n);
    return 0;
}

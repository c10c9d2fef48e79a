/* cuda_measure.c — the CUDA half of the tuner: the devices, and what the
 * child processes that build and measure a CUDA candidate do.  The loop
 * itself is tune.c's, the forking and waiting measure.c's, the same for
 * both targets; only the bodies of the children differ.  measure.c calls
 * into this file, never the other way: what the children here need of
 * the plumbing (tune_die_with_parent, tune_plant_of) is process.c's.
 *
 * Processes, not threads.  A CUDA candidate is built by a forked child of
 * the tuner (measure.c's tune_build, --jobs of them at a time): it runs
 * the build sequence (sched/build.c), emits the CUDA C (codegen/cuda.c) and compiles it
 * with NVRTC in its own address space.  NVRTC is thread-safe (one
 * nvrtcProgram per thread), so threads would also build in parallel; but
 * NVRTC is a whole compiler, and one that crashes (an internal compiler
 * error is a SIGSEGV as often as a message) or loops would take the tuner
 * with it, where a child is simply recorded as compile_error or
 * compile_timeout and killed with its process group.  A fork costs
 * microseconds next to NVRTC's second per kernel.  The child writes a
 * marker file before calling NVRTC, so a crash is blamed on the right
 * compiler.
 *
 * The driver is never initialised in the tuner's own process.  CUDA does
 * not survive fork: a child of a process that called cuInit cannot use the
 * GPU.  So the tuner asks about the devices in a child of its own
 * (tune_cuda_devices, once per run), and every measurement is a forked
 * child that loads the driver itself through libtexrt (which honours
 * TEXRT_LIBCUDA, so the tests point it at tests/fake_libcuda.c).  A
 * kernel that faults or hangs kills nothing but that child: its context
 * dies with it.
 *
 * A measurement (tune_cuda_run, in the child measure.c's run_harness
 * forks, with its time limit): initialise the candidate's device, load
 * kernel.cubin (libtexrt checks its architecture), copy the seeded random
 * inputs (the values the reference evaluator saw, converted once by
 * tune_cuda_host_bytes), fill every output and the workspace with NaN
 * (0x7f bytes for integers), launch the program once and synchronize (a
 * fault here is the GPU's crash: exit TUNE_EXIT_FAULT), then time REPEATS
 * more runs with CUDA events (texrt_time_calls: the median of each run's
 * time, a run being every kernel of the program in order), synchronize,
 * copy the outputs back and write them as outN.npy for measure.c to
 * compare with the reference.  Inputs are rotated between runs as the CPU
 * harness rotates them: enough copies of the inputs and outputs to fill
 * twice the device's L2 cache (at most 16 copies and 1 GiB), each run the
 * next copy, so that a small kernel is not timed on what the last run left
 * in L2.  Copy 0's outputs (the first run's, and every copies-th after)
 * are the ones checked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "runtime/texrt.h"
#include "tuner/tuner.h"

/* ------------------------------------------------------------------ */
/* The devices.                                                        */

/* In the probing child: what the driver says, written to FD. */
static _Noreturn void probe(int fd)
{
    CudaDevices d;
    memset(&d, 0, sizeof d);
    int count = 0;
    if (texrt_device_count(&count) != TEXRT_OK) {
        snprintf(d.why, sizeof d.why, "%s", texrt_last_error());
        count = 0;
    } else if (count == 0) {
        snprintf(d.why, sizeof d.why, "the driver reports no device");
    }
    if (count > 0 && (texrt_device_arch(0, &d.sm) != TEXRT_OK ||
                      texrt_device_name(0, d.name, sizeof d.name) != TEXRT_OK)) {
        snprintf(d.why, sizeof d.why, "device 0: %s", texrt_last_error());
        count = 0;
    }
    if (count > 0) {
        d.count = count;
        if (texrt_device_attribute(0, TEXRT_ATTR_MAX_SHARED_PER_BLOCK_OPTIN, &d.smem_optin) !=
            TEXRT_OK)
            d.smem_optin = 0;
        if (texrt_device_attribute(0, TEXRT_ATTR_L2_CACHE_BYTES, &d.l2_bytes) != TEXRT_OK)
            d.l2_bytes = 0;
        if (texrt_driver_version(&d.driver) != TEXRT_OK)
            d.driver = 0;
        /* measured on: the devices of device 0's architecture and name
           (records name one GPU model) */
        for (int i = 0; i < count && d.nused < TUNE_MAX_DEVICES; i++) {
            int sm = 0;
            char name[sizeof d.name];
            if (texrt_device_arch(i, &sm) == TEXRT_OK && sm == d.sm &&
                texrt_device_name(i, name, sizeof name) == TEXRT_OK && strcmp(name, d.name) == 0)
                d.used[d.nused++] = i;
        }
    }
    /* one write, smaller than PIPE_BUF */
    _exit(write(fd, &d, sizeof d) == (ssize_t)sizeof d ? 0 : 1);
}

const CudaDevices *tune_cuda_devices(void)
{
    static CudaDevices cached;
    static bool probed;
    if (probed)
        return &cached;
    probed = true;
    memset(&cached, 0, sizeof cached);
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(cached.why, sizeof cached.why, "cannot make a pipe: %s", strerror(errno));
        return &cached;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        tune_die_with_parent();
        probe(fds[1]);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        snprintf(cached.why, sizeof cached.why, "cannot fork: %s", strerror(errno));
        return &cached;
    }
    /* cuInit takes a second on some machines; a driver that does not
       answer in a minute is as good as none */
    CudaDevices d;
    ssize_t got = -1;
    struct pollfd pfd = { fds[0], POLLIN, 0 };
    int ready;
    while ((ready = poll(&pfd, 1, 60000)) < 0 && errno == EINTR)
        ;
    if (ready > 0)
        while ((got = read(fds[0], &d, sizeof d)) < 0 && errno == EINTR)
            ;
    close(fds[0]);
    if (ready == 0)
        kill(pid, SIGKILL);
    int wstatus;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    if (got == (ssize_t)sizeof d) {
        cached = d;
        cached.why[sizeof cached.why - 1] = '\0';
        cached.name[sizeof cached.name - 1] = '\0';
    } else {
        snprintf(cached.why, sizeof cached.why, "asking the driver %s",
                 ready == 0              ? "took more than 60 s"
                 : WIFSIGNALED(wstatus) ? strsignal(WTERMSIG(wstatus))
                                        : "failed");
    }
    return &cached;
}

/* ------------------------------------------------------------------ */
/* Inputs.                                                             */

void *tune_cuda_host_bytes(const Tensor *t, const double *values, size_t *bytes)
{
    int64_t n = tensor_elems(t);
    int size = dtype_bytes(t->dtype);
    size_t total = (size_t)n * (size_t)size;
    *bytes = total < 4 ? 4 : (total + 3) / 4 * 4;
    unsigned char *out = calloc(1, *bytes);
    if (!out)
        return NULL;
    for (int64_t i = 0; i < n; i++) {
        unsigned char *p = out + i * size;
        double v = values[i];
        switch (t->dtype) {
        case DT_BOOL: p[0] = v != 0; break;
        case DT_I32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
        case DT_U8: p[0] = (unsigned char)v; break;
        case DT_I8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
        case DT_F16: { uint16_t x = dtype_f16_bits(v); memcpy(p, &x, 2); break; }
        case DT_BF16: {
            /* rounded to bf16 first: exact in a float, its top half */
            float f = (float)dtype_round(DT_BF16, v);
            uint32_t bits;
            memcpy(&bits, &f, 4);
            uint16_t x = (uint16_t)(bits >> 16);
            memcpy(p, &x, 2);
            break;
        }
        case DT_F32: { float x = (float)v; memcpy(p, &x, 4); break; }
        case DT_F64: memcpy(p, &v, 8); break;
        default: break;
        }
    }
    return out;
}

/* ------------------------------------------------------------------ */
/* Building: kernel.cubin and launch.txt.                              */

/* launch.txt, what a run needs to launch the program (one token group a
 * line):
 *   workspace BYTES
 *   kernel NAME GX GY GZ BX BY BZ DYN_SMEM NARGS
 *   arg input I | arg output I | arg temp OFFSET      (NARGS lines)
 * A kernel's arguments are device pointers: the program's inputs and
 * outputs by position, intermediates at offsets of one workspace. */
static bool write_launch(FILE *f, const Graph *g, const CudaProgram *p)
{
    fprintf(f, "workspace %lld\n", (long long)p->workspace_bytes);
    for (int k = 0; k < p->nkernels; k++) {
        const CudaKernel *kn = &p->kernels[k];
        fprintf(f, "kernel %s %u %u %u %u %u %u %u %d\n", kn->name, kn->grid[0], kn->grid[1],
                kn->grid[2], kn->block[0], kn->block[1], kn->block[2], kn->dyn_smem, kn->nparams);
        for (int a = 0; a < kn->nparams; a++) {
            const Tensor *t = kn->params[a];
            bool found = false;
            for (int i = 0; i < g->ninputs && !found; i++)
                if (g->inputs[i] == t)
                    found = fprintf(f, "arg input %d\n", i) > 0;
            for (int i = 0; i < g->noutputs && !found; i++)
                if (g->outputs[i] == t)
                    found = fprintf(f, "arg output %d\n", i) > 0;
            for (int i = 0; i < p->ntemps && !found; i++)
                if (p->temps[i] == t)
                    found = fprintf(f, "arg temp %lld\n", (long long)p->temp_offsets[i]) > 0;
            if (!found) {
                fprintf(stderr, "texc: internal error: kernel %s reads '%s', neither an input, an "
                                "output nor an intermediate\n",
                        kn->name, t->name);
                return false;
            }
        }
    }
    return !ferror(f);
}

_Noreturn void tune_cuda_build(Bench *b, SchedState *st, const LoweredFunc *fn, Arena *a)
{
    CudaProgram prog;
    CodegenOptions co = { .name = b->kernel, .source_path = b->source, .target = TARGET_CUDA };
    if (!cg_cuda_emit(st, fn, &co, b->arch, b->sm, &prog))
        _exit(TUNE_EXIT_SCHEDULE); /* a limit of the backend: too many threads, ... */
    FILE *cu = fopen("kernel.cu", "w"), *launch = fopen("launch.txt", "w");
    if (!cu || !launch)
        _exit(TUNE_EXIT_WRITE);
    bool ok = fputs(prog.source, cu) >= 0 && write_launch(launch, b->g, &prog);
    ok = fclose(cu) == 0 && ok;
    ok = fclose(launch) == 0 && ok;
    /* from here on a crash is NVRTC's (measure.c's build_done) */
    int marker = open("nvrtc.started", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!ok || marker < 0)
        _exit(TUNE_EXIT_WRITE);
    close(marker);
    char *cubin = NULL;
    size_t size = 0;
    /* verbose: ptxas's registers and spills go to build.log */
    if (!cg_nvrtc_compile("kernel.cu", prog.source, b->arch, true, &cubin, &size))
        _exit(TUNE_EXIT_COMPILE);
    FILE *out = fopen("kernel.cubin", "wb");
    ok = out && fwrite(cubin, 1, size, out) == size;
    ok = out && fclose(out) == 0 && ok;
    free(cubin);
    (void)a;
    _exit(ok ? 0 : TUNE_EXIT_WRITE);
}

/* ------------------------------------------------------------------ */
/* Running.                                                            */

enum { ARG_INPUT, ARG_OUTPUT, ARG_TEMP };

typedef struct LaunchArg {
    int kind;        /* ARG_INPUT, ARG_OUTPUT, ARG_TEMP */
    int64_t index;   /* the input's or output's position, the temp's offset */
} LaunchArg;

typedef struct LaunchKernel {
    char name[256];
    unsigned grid[3], block[3], dyn_smem;
    texrt_kernel *kernel;
    LaunchArg *args;
    int nargs;
    uint64_t *values;  /* per copy: nargs device pointers ... */
    void **pointers;   /* ... and pointers to them, as cuLaunchKernel takes */
} LaunchKernel;

typedef struct Program {
    int64_t workspace;
    LaunchKernel *kernels;
    int nkernels;
    int copies;
    bool slow;         /* TEXC_TUNE_PLANT=slow: 20 ms before each run */
} Program;

/* Everything in the run child ends through here on a failure: the
 * message on stderr (run.log), where measure.c finds its "error". */
static _Noreturn void fail(int status, const char *what)
{
    fprintf(stderr, "error: %s%s%s\n", what, *texrt_last_error() ? ": " : "", texrt_last_error());
    fflush(NULL);
    _exit(status);
}

static bool read_launch(const char *path, Program *p)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    memset(p, 0, sizeof *p);
    long long ws = -1;
    bool ok = fscanf(f, " workspace %lld", &ws) == 1 && ws >= 0;
    p->workspace = ws;
    char word[16];
    while (ok && fscanf(f, " %15s", word) == 1) {
        if (strcmp(word, "kernel") != 0) {
            ok = false;
            break;
        }
        p->kernels = realloc(p->kernels, sizeof *p->kernels * (size_t)(p->nkernels + 1));
        LaunchKernel *k = &p->kernels[p->nkernels++];
        memset(k, 0, sizeof *k);
        ok = fscanf(f, " %255s %u %u %u %u %u %u %u %d", k->name, &k->grid[0], &k->grid[1],
                    &k->grid[2], &k->block[0], &k->block[1], &k->block[2], &k->dyn_smem,
                    &k->nargs) == 9 &&
             k->nargs >= 0 && k->nargs < 4096;
        k->args = ok ? calloc((size_t)k->nargs + 1, sizeof *k->args) : NULL;
        for (int a = 0; ok && a < k->nargs; a++) {
            char kind[16];
            long long index;
            ok = fscanf(f, " arg %15s %lld", kind, &index) == 2 && index >= 0;
            k->args[a].index = index;
            k->args[a].kind = strcmp(kind, "input") == 0    ? ARG_INPUT
                              : strcmp(kind, "output") == 0 ? ARG_OUTPUT
                                                            : ARG_TEMP;
        }
    }
    fclose(f);
    return ok;
}

/* One run of the program: every kernel in order, on copy I % copies. */
static int run_program(void *ctx, int i)
{
    Program *p = ctx;
    if (p->slow) {
        struct timespec ts = { 0, 20000000 };
        nanosleep(&ts, NULL);
    }
    int copy = i % p->copies;
    for (int k = 0; k < p->nkernels; k++) {
        LaunchKernel *kn = &p->kernels[k];
        int rc = texrt_launch(kn->kernel, kn->grid, kn->block, kn->dyn_smem,
                              kn->pointers + (size_t)copy * (size_t)kn->nargs);
        if (rc != TEXRT_OK)
            return rc;
    }
    return TEXRT_OK;
}

/* OUT as a .npy file of T's shape: the bytes the kernels stored. */
static bool write_output(const char *path, const Tensor *t, const void *data, size_t bytes)
{
    char shape[TE_MAX_RANK * 24 + 8] = "";
    size_t len = 0;
    for (int d = 0; d < t->rank; d++)
        len += (size_t)snprintf(shape + len, sizeof shape - len, "%lld,%s", (long long)t->shape[d],
                                d + 1 < t->rank ? " " : "");
    char header[512];
    int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                     cg_npy_descr(t->dtype), shape);
    /* magic, version, length, header padded with spaces and a newline to
       a multiple of 64 */
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    unsigned hlen = (unsigned)(n + pad + 1);
    unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                              (unsigned char)(hlen >> 8) };
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)n, f) == (size_t)n;
    for (int i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF && fwrite(data, 1, bytes, f) == bytes;
    return fclose(f) == 0 && ok;
}

/* The 32-bit pattern that poisons a buffer of T: NaN for every float
 * dtype (0x7fff is a NaN in f16 and bf16, 0x7fff7fff in f32 and f64), 0x7f
 * bytes for integers and bools, as the CPU harness poisons. */
static uint32_t poison_of(DType t)
{
    return dtype_is_float(t) ? 0x7fff7fffu : 0x7f7f7f7fu;
}

/* TEXC_TUNE_PLANT=wrong: the first element of output 0 off, as the CPU
 * plant makes it (one more, or its exponent changed). */
static void spoil(DType t, unsigned char *first)
{
    switch (t) {
    case DT_BOOL: first[0] = !first[0]; break;
    case DT_U8:
    case DT_I8: first[0] ^= 1; break;
    case DT_F16:
    case DT_BF16: first[1] ^= 0x40; break;
    case DT_I32: { int32_t v; memcpy(&v, first, 4); v += 1; memcpy(first, &v, 4); break; }
    case DT_F64: { double v; memcpy(&v, first, 8); v += 1; memcpy(first, &v, 8); break; }
    default: { float v; memcpy(&v, first, 4); v += 1; memcpy(first, &v, 4); break; }
    }
}

_Noreturn void tune_cuda_run(const Bench *b, const Candidate *c, int repeats)
{
    const Graph *g = b->g;
    int device = c->device;
    Program p;
    if (!read_launch("launch.txt", &p))
        fail(1, "launch.txt is unreadable");
    if (texrt_cuda_init(device) != TEXRT_OK)
        fail(1, "no device");
    texrt_module *module;
    if (texrt_module_load_file(&module, "kernel.cubin", device) != TEXRT_OK)
        fail(1, "loading kernel.cubin");
    for (int k = 0; k < p.nkernels; k++)
        if (texrt_kernel_get(module, p.kernels[k].name, &p.kernels[k].kernel) != TEXRT_OK)
            fail(1, "finding the kernels");
    const char *plant = tune_plant_of(b, c->trial);
    if (plant && strcmp(plant, "crash") == 0) {
        signal(SIGSEGV, SIG_DFL); /* a crash, not ASan's report of one */
        raise(SIGSEGV);
    }
    if (plant && strcmp(plant, "hang") == 0)
        for (;;)
            pause();
    p.slow = plant && strcmp(plant, "slow") == 0;

    /* the copies: twice the L2 cache, within bounds */
    size_t *out_bytes = calloc((size_t)g->noutputs + 1, sizeof *out_bytes);
    uint64_t set = 0;
    for (int i = 0; i < g->ninputs; i++)
        set += b->input_bytes[i];
    for (int o = 0; o < g->noutputs; o++) {
        size_t raw = (size_t)tensor_elems(g->outputs[o]) * (size_t)dtype_bytes(g->outputs[o]->dtype);
        out_bytes[o] = raw < 4 ? 4 : (raw + 3) / 4 * 4;
        set += out_bytes[o];
    }
    int l2 = 0;
    if (texrt_device_attribute(device, TEXRT_ATTR_L2_CACHE_BYTES, &l2) != TEXRT_OK)
        l2 = 0;
    uint64_t want = set > 0 && l2 > 0 ? (2 * (uint64_t)l2 + set - 1) / set : 1;
    p.copies = want < 1 ? 1 : want > 16 ? 16 : (int)want;
    while (p.copies > 1 && (uint64_t)p.copies * set > (1ull << 30))
        p.copies--;

    /* device memory: inputs (copied) and outputs (poisoned), per copy;
       one workspace, poisoned */
    uint64_t *in = calloc((size_t)p.copies * (size_t)(g->ninputs + 1), sizeof *in);
    uint64_t *out = calloc((size_t)p.copies * (size_t)(g->noutputs + 1), sizeof *out);
    uint64_t ws = 0;
    if (!in || !out)
        fail(1, "out of memory");
    for (int cp = 0; cp < p.copies; cp++) {
        for (int i = 0; i < g->ninputs; i++) {
            uint64_t *d = &in[cp * g->ninputs + i];
            if (texrt_dev_alloc(d, b->input_bytes[i]) != TEXRT_OK ||
                texrt_memcpy_htod(*d, b->host_inputs[i], b->input_bytes[i]) != TEXRT_OK)
                fail(1, "copying the inputs to the device");
        }
        for (int o = 0; o < g->noutputs; o++) {
            uint64_t *d = &out[cp * g->noutputs + o];
            if (texrt_dev_alloc(d, out_bytes[o]) != TEXRT_OK ||
                texrt_memset32(*d, poison_of(g->outputs[o]->dtype), out_bytes[o] / 4) != TEXRT_OK)
                fail(1, "poisoning the outputs");
        }
    }
    if (p.workspace > 0 &&
        (texrt_dev_alloc(&ws, (size_t)(p.workspace + 3) / 4 * 4) != TEXRT_OK ||
         texrt_memset32(ws, 0x7fff7fffu, (size_t)(p.workspace + 3) / 4) != TEXRT_OK))
        fail(1, "poisoning the workspace");
    for (int k = 0; k < p.nkernels; k++) {
        LaunchKernel *kn = &p.kernels[k];
        size_t n = (size_t)p.copies * (size_t)kn->nargs;
        kn->values = calloc(n + 1, sizeof *kn->values);
        kn->pointers = calloc(n + 1, sizeof *kn->pointers);
        if (!kn->values || !kn->pointers)
            fail(1, "out of memory");
        for (int cp = 0; cp < p.copies; cp++) {
            for (int a = 0; a < kn->nargs; a++) {
                const LaunchArg *arg = &kn->args[a];
                uint64_t *v = &kn->values[cp * kn->nargs + a];
                *v = arg->kind == ARG_INPUT    ? in[cp * g->ninputs + arg->index]
                     : arg->kind == ARG_OUTPUT ? out[cp * g->noutputs + arg->index]
                                               : ws + (uint64_t)arg->index;
                kn->pointers[cp * kn->nargs + a] = v;
            }
        }
    }

    /* the first run, alone: a fault shows here */
    if (run_program(&p, 0) != TEXRT_OK)
        fail(1, "launching");
    if (texrt_synchronize() != TEXRT_OK)
        fail(TUNE_EXIT_FAULT, "running the kernels");
    float median_ms = 0;
    if (texrt_time_calls(run_program, &p, 0, repeats, &median_ms) != TEXRT_OK) {
        /* a launch refused, or a kernel that faulted this time */
        bool faulted = texrt_synchronize() != TEXRT_OK;
        fail(faulted ? TUNE_EXIT_FAULT : 1, "timing the kernels");
    }
    if (texrt_synchronize() != TEXRT_OK)
        fail(TUNE_EXIT_FAULT, "running the kernels");
    for (int o = 0; o < g->noutputs; o++) {
        unsigned char *host = malloc(out_bytes[o]);
        if (!host || texrt_memcpy_dtoh(host, out[o], out_bytes[o]) != TEXRT_OK)
            fail(1, "copying the outputs back");
        const Tensor *t = g->outputs[o];
        size_t raw = (size_t)tensor_elems(t) * (size_t)dtype_bytes(t->dtype);
        if (o == 0 && plant && strcmp(plant, "wrong") == 0)
            spoil(t->dtype, host);
        char path[64];
        snprintf(path, sizeof path, "out%d.npy", o);
        if (!write_output(path, t, host, raw))
            fail(1, "writing the outputs");
        free(host);
    }
    printf("%.9g %d\n", median_ms * 1e-3, p.copies);
    fflush(NULL);
    _exit(0);
}

/* cudaemu.cc — libtexrt's CUDA half, emulated on the host for the kernels
 * of one NAME.cu compiled with cudaemu.h (see there).
 *
 * "Device memory" is host memory; a module is the table of kernels linked
 * in (te_emu_kernels), so loading checks only that the cubin file exists
 * and each kernel lookup that the name is in the table; a launch runs every
 * block in turn, each with one host thread per CUDA thread.  Launches are
 * synchronous.  Only what the generated header and tests/gpu/harness.c use
 * is here.
 *
 * Warp-collective instructions (te_emu_ldmatrix, te_emu_mma_m16n8k16):
 * each warp of the running block has a Warp, its lanes' posts and a
 * barrier.  A lane posts its operands, waits for the 31 others, then
 * computes its own results from all the posts.  The posts are
 * double-buffered by call parity, so one barrier per instruction suffices:
 * a lane can only write the buffer of call n + 2 after passing the barrier
 * of call n + 1, which every lane reaches only after reading the posts of
 * call n.  The barrier is a count and a generation number the waiting
 * lanes sleep on (a Linux futex): the 32nd lane bumps it and wakes the 31
 * others with one call.  Lanes never spin, so a warp-collective call
 * costs what 31 lanes going to sleep and waking cost: 0.1-0.2 ms of a
 * 2-core machine (a mutex and condition variable cost twice that, the
 * woken lanes queueing for the mutex).  The atomics order the posts
 * (ThreadSanitizer sees them).
 */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <new>

#include "cudaemu.h"
#include "mma_layout.h"
#include "texrt.h"

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim;
thread_local unsigned char *te_emu_smem;

static thread_local char last_error[512];
static pthread_barrier_t *block_barrier;

void te_emu_syncthreads(void)
{
    pthread_barrier_wait(block_barrier);
}

static int fail(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return rc;
}

/* --- Warps ---------------------------------------------------------------- */

/* What one lane posts for a warp-collective instruction. */
struct Post {
    unsigned op;         /* the instruction (op_ldmatrix, op_mma), the same in every lane */
    const void *row;     /* ldmatrix: the row address the lane supplies */
    unsigned a[4], b[2]; /* mma: the lane's A and B fragment registers */
};

struct Warp {
    std::atomic<unsigned> arrived{ 0 };    /* lanes at the current barrier */
    std::atomic<unsigned> generation{ 0 }; /* barriers passed; the waiting lanes sleep on it */
    std::atomic<unsigned> exited{ 0 };     /* lanes that returned from the kernel */
    Post post[2][32];                      /* by call parity, then lane */
};
static_assert(sizeof(std::atomic<unsigned>) == sizeof(unsigned), "a futex word is an unsigned");

static Warp *block_warps; /* the running block's warps */
static thread_local Warp *my_warp;
static thread_local unsigned my_lane, my_warp_id, my_parity;

/* How long a lane waits for the rest of its warp before calling it a
 * hang (lanes that wait elsewhere, at __syncthreads or another branch):
 * 120 s, or $CUDAEMU_WARP_PATIENCE_S (for testing). */
static int warp_patience_s(void)
{
    const char *s = getenv("CUDAEMU_WARP_PATIENCE_S");
    return s && atoi(s) > 0 ? atoi(s) : 120;
}
static const int warp_patience = warp_patience_s();

enum { OP_LDMATRIX = 1, OP_MMA = 2 };

/* Sleeps while WORD holds VALUE, or until DEADLINE (CLOCK_MONOTONIC) has
 * passed: then returns false. */
static bool sleep_while(std::atomic<unsigned> *word, unsigned value, const struct timespec &deadline)
{
    struct timespec now, left;
    clock_gettime(CLOCK_MONOTONIC, &now);
    left.tv_sec = deadline.tv_sec - now.tv_sec;
    left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
    if (left.tv_nsec < 0) {
        left.tv_nsec += 1000000000;
        left.tv_sec--;
    }
    if (left.tv_sec < 0)
        return false;
    syscall(SYS_futex, reinterpret_cast<unsigned *>(word), FUTEX_WAIT_PRIVATE, value, &left, NULL, 0);
    return true;
}

static unsigned op_ldmatrix(int nmat, bool trans)
{
    return OP_LDMATRIX | (unsigned)nmat << 4 | (trans ? 1u << 8 : 0);
}

static unsigned op_mma(bool bf16)
{
    return OP_MMA | (bf16 ? 1u << 8 : 0);
}

static const char *op_name(unsigned op, char *buf, size_t n)
{
    if ((op & 15) == OP_LDMATRIX)
        snprintf(buf, n, "ldmatrix.m8n8.x%u%s.b16", op >> 4 & 15, op >> 8 & 1 ? ".trans" : "");
    else
        snprintf(buf, n, "mma.m16n8k16.f32.%s", op >> 8 & 1 ? "bf16" : "f16");
    return buf;
}

/* A misuse of the warp-collective instructions: the message, then abort
 * (a wrong kernel must not pass for a slow one). */
[[noreturn]] __attribute__((format(printf, 1, 2))) static void warp_fail(const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cudaemu: block (%u,%u,%u), warp %u, lane %u: %s\n", blockIdx.x, blockIdx.y,
            blockIdx.z, my_warp_id, my_lane, msg);
    abort();
}

/* Posts MINE for the calling lane, waits for the whole warp, checks that
 * every lane is at the same instruction and copies the 32 posts to POSTS
 * (one copy: ThreadSanitizer checks a memcpy as one access, where the
 * element-wise reads of an mma cost it milliseconds). */
static void warp_exchange(const Post &mine, Post posts[32])
{
    char name[64], other[64];
    unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
    if (nthreads % 32 != 0)
        warp_fail("%s in a block of %u threads (%ux%ux%u), not whole warps of 32",
                  op_name(mine.op, name, sizeof name), nthreads, blockDim.x, blockDim.y, blockDim.z);
    Warp *w = my_warp;
    unsigned parity = my_parity;
    my_parity ^= 1;
    w->post[parity][my_lane] = mine;
    /* read before arriving: the barrier cannot pass without this lane */
    unsigned generation = w->generation.load(std::memory_order_acquire);
    bool last = w->arrived.fetch_add(1) == 31;
    /* A lane that returned without arriving is seen here or by its own
     * exit check in run_thread (both seq_cst, so one of the two sees the
     * other; looking before arriving would lose that, and such a lane
     * would show only as a timeout).  Lanes that return after this barrier
     * passed are no error, and a lane can be slow to look: so only while
     * the barrier still waits (an exit after it passed is ordered after
     * the generation's bump, which the load then sees). */
    if (w->exited.load() != 0 && w->generation.load() == generation)
        warp_fail("%s while %u lanes of the warp have returned from the kernel",
                  op_name(mine.op, name, sizeof name), w->exited.load());
    if (last) {
        w->arrived.store(0, std::memory_order_relaxed);
        w->generation.store(generation + 1, std::memory_order_release);
        syscall(SYS_futex, reinterpret_cast<unsigned *>(&w->generation), FUTEX_WAKE_PRIVATE, INT_MAX,
                NULL, NULL, 0);
    } else {
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += warp_patience;
        while (w->generation.load(std::memory_order_acquire) == generation)
            if (!sleep_while(&w->generation, generation, deadline))
                warp_fail("%s: %u of 32 lanes arrived in %d s (do all lanes reach it?)",
                          op_name(mine.op, name, sizeof name), w->arrived.load(), warp_patience);
    }
    memcpy(posts, w->post[parity], sizeof w->post[parity]);
    for (unsigned l = 0; l < 32; l++)
        if (posts[l].op != mine.op)
            warp_fail("%s while lane %u of the warp is at %s", op_name(mine.op, name, sizeof name), l,
                      op_name(posts[l].op, other, sizeof other));
}

/* Where each lane's results come from, from mma_layout.h once at start. */
struct Src {
    unsigned char lane, reg, shift; /* mma: bits >> shift of register reg of lane */
};
struct MemSrc {
    unsigned char row, col, shift; /* ldmatrix: element col of row row, into bits << shift */
};
struct Layouts {
    MemSrc ldm[2][32][2]; /* [trans][lane][half] */
    Src a[32][4][16];     /* [lane][d element][k]: A[row of d][k] */
    Src b[32][4][16];     /* [lane][d element][k]: B[k][column of d] */
    Layouts()
    {
        for (int trans = 0; trans < 2; trans++)
            for (int lane = 0; lane < 32; lane++)
                for (int half = 0; half < 2; half++) {
                    int matrix, row, col;
                    te_ldm_pos(lane, 0, half, trans, &matrix, &row, &col);
                    ldm[trans][lane][half] = { (unsigned char)row, (unsigned char)col,
                                               (unsigned char)(16 * half) };
                }
        for (int lane = 0; lane < 32; lane++)
            for (int e = 0; e < 4; e++) {
                int row, col, src, se;
                te_mma_c_pos(lane, e, &row, &col);
                for (int k = 0; k < 16; k++) {
                    te_mma_a_at(row, k, &src, &se);
                    a[lane][e][k] = { (unsigned char)src, (unsigned char)(se >> 1),
                                      (unsigned char)(16 * (se & 1)) };
                    te_mma_b_at(k, col, &src, &se);
                    b[lane][e][k] = { (unsigned char)src, (unsigned char)(se >> 1),
                                      (unsigned char)(16 * (se & 1)) };
                }
            }
    }
};
static const Layouts layouts;

void te_emu_ldmatrix(unsigned *r, int nmat, bool trans, const void *row)
{
    if (nmat != 1 && nmat != 2 && nmat != 4)
        warp_fail("ldmatrix of %d matrices (.x1, .x2 or .x4)", nmat);
    Post mine = {};
    mine.op = op_ldmatrix(nmat, trans);
    mine.row = row;
    if (my_lane < 8u * (unsigned)nmat && (uintptr_t)row % 16 != 0)
        warp_fail("ldmatrix.x%d row address %p is not 16-byte aligned", nmat, row);
    Post posts[32];
    warp_exchange(mine, posts);
    for (int m = 0; m < nmat; m++) {
        unsigned v = 0;
        for (int half = 0; half < 2; half++) {
            const MemSrc &s = layouts.ldm[trans][my_lane][half];
            const unsigned char *row_m = (const unsigned char *)posts[te_ldm_addr_lane(m, s.row)].row;
            uint16_t bits;
            memcpy(&bits, row_m + 2 * s.col, sizeof bits);
            v |= (unsigned)bits << s.shift;
        }
        r[m] = v;
    }
}

static float f16_value(unsigned bits)
{
    _Float16 h;
    uint16_t b = (uint16_t)bits;
    memcpy(&h, &b, sizeof h);
    return (float)h;
}

static float bf16_value(unsigned bits)
{
    uint32_t u = (bits & 0xffffu) << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void te_emu_mma_m16n8k16(float d[4], const unsigned a[4], const unsigned b[2], bool bf16)
{
    Post mine = {};
    mine.op = op_mma(bf16);
    memcpy(mine.a, a, sizeof mine.a);
    memcpy(mine.b, b, sizeof mine.b);
    Post posts[32];
    warp_exchange(mine, posts);
    float (*value)(unsigned) = bf16 ? bf16_value : f16_value;
    for (int e = 0; e < 4; e++) {
        float acc = d[e];
        for (int k = 0; k < 16; k++) {
            const Src &sa = layouts.a[my_lane][e][k], &sb = layouts.b[my_lane][e][k];
            float x = value(posts[sa.lane].a[sa.reg] >> sa.shift);
            float y = value(posts[sb.lane].b[sb.reg] >> sb.shift);
            acc += x * y; /* exact product, one rounding */
        }
        d[e] = acc;
    }
}

/* --- The runtime ------------------------------------------------------------ */

extern "C" {

const char *texrt_last_error(void)
{
    return last_error;
}

double texrt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int texrt_cuda_init(int device)
{
    return device == 0 ? TEXRT_OK : fail(TEXRT_E_BADDEVICE, "device %d does not exist", device);
}

struct texrt_module {
    int unused;
};
struct texrt_kernel {
    const te_emu_kernel *k;
};
static texrt_module the_module;
static texrt_kernel kernels[256];

int texrt_module_load(texrt_module **out, const void *image, size_t size, const char *name,
                      int device)
{
    (void)image;
    (void)size;
    (void)name;
    *out = &the_module;
    return texrt_cuda_init(device);
}

int texrt_module_load_file(texrt_module **out, const char *path, int device)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(TEXRT_E_IO, "cannot read %s", path);
    fclose(f);
    return texrt_module_load(out, NULL, 0, path, device);
}

void texrt_module_unload(texrt_module *module)
{
    (void)module;
}

int texrt_kernel_get(texrt_module *module, const char *name, texrt_kernel **out)
{
    (void)module;
    for (int i = 0; i < te_emu_nkernels && i < 256; i++)
        if (strcmp(te_emu_kernels[i].name, name) == 0) {
            kernels[i].k = &te_emu_kernels[i];
            *out = &kernels[i];
            return TEXRT_OK;
        }
    return fail(TEXRT_E_NOTFOUND, "no kernel %s in the module", name);
}

struct Thread {
    pthread_t id;
    uint3 thread, block;
    dim3 dims;
    unsigned char *smem;
    const te_emu_kernel *k;
    void **args;
};

static void *run_thread(void *arg)
{
    Thread *t = (Thread *)arg;
    threadIdx = t->thread;
    blockIdx = t->block;
    blockDim = t->dims;
    te_emu_smem = t->smem;
    unsigned id = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    my_warp_id = id / 32;
    my_lane = id % 32;
    my_warp = &block_warps[my_warp_id];
    my_parity = 0;
    t->k->call(t->args);
    my_warp->exited.fetch_add(1);
    if (unsigned waiting = my_warp->arrived.load())
        warp_fail("returned from the kernel while %u lanes of the warp wait at a warp-collective "
                  "instruction", waiting);
    return NULL;
}

int texrt_launch(texrt_kernel *kernel, const unsigned grid[3], const unsigned block[3],
                 unsigned dyn_smem, void **args)
{
    unsigned n = block[0] * block[1] * block[2];
    if (n == 0 || n > 1024 || grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
        return fail(TEXRT_E_CUDA, "bad launch configuration");
    Thread *threads = (Thread *)calloc(n, sizeof *threads);
    unsigned char *smem = (unsigned char *)aligned_alloc(16, (dyn_smem + 15) / 16 * 16 + 16);
    unsigned nwarps = (n + 31) / 32;
    Warp *warps = new (std::nothrow) Warp[nwarps];
    pthread_barrier_t barrier;
    if (!threads || !smem || !warps)
        return fail(TEXRT_E_NOMEM, "out of memory");
    pthread_barrier_init(&barrier, NULL, n);
    block_barrier = &barrier;
    block_warps = warps;
    int rc = TEXRT_OK;
    for (unsigned bz = 0; bz < grid[2]; bz++)
        for (unsigned by = 0; by < grid[1]; by++)
            for (unsigned bx = 0; bx < grid[0] && rc == TEXRT_OK; bx++) {
                for (unsigned w = 0; w < nwarps; w++)
                    warps[w].exited = 0; /* (arrived is 0 between barriers) */
                for (unsigned i = 0; i < n; i++) {
                    Thread *t = &threads[i];
                    t->thread = { i % block[0], i / block[0] % block[1], i / (block[0] * block[1]) };
                    t->block = { bx, by, bz };
                    t->dims = { block[0], block[1], block[2] };
                    t->smem = smem;
                    t->k = kernel->k;
                    t->args = args;
                    if (pthread_create(&t->id, NULL, run_thread, t) != 0) {
                        /* the threads started wait at a barrier for ever */
                        fprintf(stderr, "cudaemu: cannot start %u threads\n", n);
                        exit(2);
                    }
                }
                for (unsigned i = 0; i < n; i++)
                    pthread_join(threads[i].id, NULL);
            }
    pthread_barrier_destroy(&barrier);
    block_warps = NULL;
    delete[] warps;
    free(threads);
    free(smem);
    return rc;
}

int texrt_dev_alloc(uint64_t *dptr, size_t bytes)
{
    void *p = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    if (!p)
        return fail(TEXRT_E_NOMEM, "out of memory");
    *dptr = (uint64_t)(uintptr_t)p;
    return TEXRT_OK;
}

int texrt_dev_free(uint64_t dptr)
{
    free((void *)(uintptr_t)dptr);
    return TEXRT_OK;
}

int texrt_memcpy_htod(uint64_t dst, const void *src, size_t bytes)
{
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return TEXRT_OK;
}

int texrt_memcpy_dtoh(void *dst, uint64_t src, size_t bytes)
{
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return TEXRT_OK;
}

int texrt_memset32(uint64_t dst, uint32_t value, size_t count)
{
    uint32_t *p = (uint32_t *)(uintptr_t)dst;
    for (size_t i = 0; i < count; i++)
        p[i] = value;
    return TEXRT_OK;
}

int texrt_synchronize(void)
{
    return TEXRT_OK;
}

int texrt_device_arch(int device, int *sm)
{
    (void)device;
    *sm = 0;
    return TEXRT_OK;
}

int texrt_device_name(int device, char *buf, size_t n)
{
    (void)device;
    snprintf(buf, n, "cudaemu (the host)");
    return TEXRT_OK;
}

} /* extern "C" */

/* cudaemu.cc — libtexrt's CUDA half, emulated on the host for the kernels
 * of one NAME.cu compiled with cudaemu.h (see there).
 *
 * "Device memory" is host memory; a module is the table of kernels linked
 * in (te_emu_kernels), so loading checks only that the cubin file exists
 * and each kernel lookup that the name is in the table; a launch runs every
 * block in turn, each with one host thread per CUDA thread.  Launches are
 * synchronous.  Only what the generated header and tests/gpu/harness.c use
 * is here.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudaemu.h"
#include "texrt.h"

thread_local uint3 threadIdx, blockIdx;
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
    unsigned char *smem;
    const te_emu_kernel *k;
    void **args;
};

static void *run_thread(void *arg)
{
    Thread *t = (Thread *)arg;
    threadIdx = t->thread;
    blockIdx = t->block;
    te_emu_smem = t->smem;
    t->k->call(t->args);
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
    pthread_barrier_t barrier;
    if (!threads || !smem)
        return fail(TEXRT_E_NOMEM, "out of memory");
    pthread_barrier_init(&barrier, NULL, n);
    block_barrier = &barrier;
    int rc = TEXRT_OK;
    for (unsigned bz = 0; bz < grid[2]; bz++)
        for (unsigned by = 0; by < grid[1]; by++)
            for (unsigned bx = 0; bx < grid[0] && rc == TEXRT_OK; bx++) {
                for (unsigned i = 0; i < n; i++) {
                    Thread *t = &threads[i];
                    t->thread = { i % block[0], i / block[0] % block[1], i / (block[0] * block[1]) };
                    t->block = { bx, by, bz };
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

/*
 * fake_libcuda.c — a stand-in for libcuda.so.1, for testing libtexrt on
 * machines without a GPU.  Never installed, never linked into anything:
 * tests/unit_texrt builds it as a shared library and points TEXRT_LIBCUDA
 * at it.
 *
 *   cc -shared -fPIC tests/fake_libcuda.c -o libfakecuda.so
 *   cc -shared -fPIC -DFAKE_CUDA_OLD_DRIVER tests/fake_libcuda.c -o libfakecuda_old.so
 *
 * It implements the Driver API functions libtexrt resolves, on the host:
 * "device memory" is malloc'd, copies are memcpy, a launch only records its
 * arguments, events read CLOCK_MONOTONIC.  It keeps the driver's rules that
 * libtexrt must respect: nothing works before cuInit, calls that need a
 * context fail without a current one, a launch asking for more than 48 KiB
 * of dynamic shared memory fails unless the kernel's
 * MAX_DYNAMIC_SHARED_SIZE_BYTES attribute was raised.
 *
 * Behaviour is read from the environment at each call, so one test process
 * can change it between calls:
 *   FAKE_CUDA_DEVICES      number of devices (default 1)
 *   FAKE_CUDA_SM           compute capability of every device as an SM
 *                          number, e.g. 86 for 8.6 (default 86)
 *   FAKE_CUDA_INIT_ERROR   a CUresult cuInit returns (default 0, success)
 *   FAKE_CUDA_SMEM_OPTIN   MAX_SHARED_MEMORY_PER_BLOCK_OPTIN (default 101376)
 *   FAKE_CUDA_SYNC_ERROR   a CUresult cuCtxSynchronize returns (default 0;
 *                          700, an illegal address: a kernel that faulted)
 *   FAKE_CUDA_L2_BYTES     L2_CACHE_SIZE (default 1 MiB); the other
 *                          attributes libtexrt's callers read are fixed:
 *                          1024 threads, 48 KiB of shared memory and 64 Ki
 *                          registers per block, 4 multiprocessors
 * Built with -DFAKE_CUDA_OLD_DRIVER it lacks cuFuncSetAttribute, like a
 * driver older than CUDA 9.
 *
 * fake_cuda_* functions let a test look at what libtexrt asked for.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The types of cuda.h, as libtexrt declares them. */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_FAILED = 719
};

enum { MAX_DEVICES = 16 };

struct CUctx_st {
  int device;
  int refcount;
};

struct CUmod_st {
  unsigned char *image; /* a copy of the ELF image, for name lookups */
  size_t size;
  struct CUfunc_st *functions;
};

struct CUfunc_st {
  char *name;
  int max_dynamic_smem;
  struct CUfunc_st *next;
};

struct CUevent_st {
  double when;
};

static int initialised;
static struct CUctx_st contexts[MAX_DEVICES];
static _Thread_local CUcontext current;

/* What the test can inspect. */
static int module_loads, live_modules, live_allocs, live_events, attribute_sets, launches;
static unsigned last_launch[7]; /* grid x y z, block x y z, dynamic smem */
static void **last_params;

int fake_cuda_module_loads(void) { return module_loads; }
int fake_cuda_live_modules(void) { return live_modules; }
int fake_cuda_live_allocs(void) { return live_allocs; }
int fake_cuda_live_events(void) { return live_events; }
int fake_cuda_attribute_sets(void) { return attribute_sets; }
int fake_cuda_launches(void) { return launches; }
int fake_cuda_refcount(int device) { return device >= 0 && device < MAX_DEVICES ? contexts[device].refcount : -1; }
void **fake_cuda_last_launch(unsigned dims[7])
{
  memcpy(dims, last_launch, sizeof last_launch);
  return last_params;
}

static int env_int(const char *name, int fallback)
{
  const char *s = getenv(name);
  return s && *s ? atoi(s) : fallback;
}

static int device_count(void)
{
  int n = env_int("FAKE_CUDA_DEVICES", 1);
  return n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : n;
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define NEED_INIT()                 \
  do {                              \
    if (!initialised)               \
      return CUDA_ERROR_NOT_INITIALIZED; \
  } while (0)

#define NEED_CONTEXT()                  \
  do {                                  \
    NEED_INIT();                        \
    if (!current || current->refcount <= 0) \
      return CUDA_ERROR_INVALID_CONTEXT;    \
  } while (0)

CUresult cuGetErrorString(CUresult error, const char **text)
{
  static const struct {
    CUresult code;
    const char *text;
  } texts[] = {
    {CUDA_SUCCESS, "no error"},
    {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
    /* the real driver's (580.159.04, read on an H200 by
       tests/gpu/driver_messages.c), for the codes the fake never returns */
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"},
  };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    if (texts[i].code == error) {
      *text = texts[i].text;
      return CUDA_SUCCESS;
    }
  *text = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuInit(unsigned flags)
{
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = env_int("FAKE_CUDA_INIT_ERROR", 0);
  if (r == CUDA_SUCCESS)
    initialised = 1;
  return r;
}

CUresult cuDriverGetVersion(int *version)
{
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
  NEED_INIT();
  *count = device_count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
  NEED_INIT();
  if (ordinal < 0 || ordinal >= device_count())
    return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attr, CUdevice dev)
{
  NEED_INIT();
  if (dev < 0 || dev >= device_count())
    return CUDA_ERROR_INVALID_DEVICE;
  int sm = env_int("FAKE_CUDA_SM", 86);
  switch (attr) {
  case 75: *value = sm / 10; return CUDA_SUCCESS; /* COMPUTE_CAPABILITY_MAJOR */
  case 76: *value = sm % 10; return CUDA_SUCCESS; /* COMPUTE_CAPABILITY_MINOR */
  case 1: *value = 1024; return CUDA_SUCCESS;    /* MAX_THREADS_PER_BLOCK */
  case 8: *value = 49152; return CUDA_SUCCESS;   /* MAX_SHARED_MEMORY_PER_BLOCK */
  case 12: *value = 65536; return CUDA_SUCCESS;  /* MAX_REGISTERS_PER_BLOCK */
  case 16: *value = 4; return CUDA_SUCCESS;      /* MULTIPROCESSOR_COUNT */
  case 38: *value = env_int("FAKE_CUDA_L2_BYTES", 1 << 20); return CUDA_SUCCESS; /* L2_CACHE_SIZE */
  case 97: *value = env_int("FAKE_CUDA_SMEM_OPTIN", 101376); return CUDA_SUCCESS;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
  NEED_INIT();
  if (dev < 0 || dev >= device_count() || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  strncpy(name, "Fake CUDA Device", (size_t)len);
  name[len - 1] = '\0';
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
  NEED_INIT();
  if (dev < 0 || dev >= device_count())
    return CUDA_ERROR_INVALID_DEVICE;
  contexts[dev].device = dev;
  contexts[dev].refcount++;
  *ctx = &contexts[dev];
  return CUDA_SUCCESS;
}

/* Exported under the old name only: libtexrt must fall back to it. */
CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
  NEED_INIT();
  if (dev < 0 || dev >= MAX_DEVICES || contexts[dev].refcount <= 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  contexts[dev].refcount--;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
  NEED_INIT();
  current = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
  NEED_CONTEXT();
  return env_int("FAKE_CUDA_SYNC_ERROR", 0);
}

/* The extent of an ELF64 image: the furthest of its headers and sections. */
static size_t elf_extent(const unsigned char *img)
{
  unsigned long long shoff, phoff, end;
  unsigned short shentsize, shnum, phentsize, phnum;
  memcpy(&phoff, img + 0x20, 8);
  memcpy(&shoff, img + 0x28, 8);
  memcpy(&phentsize, img + 0x36, 2);
  memcpy(&phnum, img + 0x38, 2);
  memcpy(&shentsize, img + 0x3a, 2);
  memcpy(&shnum, img + 0x3c, 2);
  end = 64;
  if (shoff + (unsigned long long)shentsize * shnum > end)
    end = shoff + (unsigned long long)shentsize * shnum;
  if (phoff + (unsigned long long)phentsize * phnum > end)
    end = phoff + (unsigned long long)phentsize * phnum;
  for (unsigned i = 0; i < shnum; i++) {
    unsigned long long off, size;
    unsigned type;
    memcpy(&type, img + shoff + (unsigned long long)i * shentsize + 4, 4);
    memcpy(&off, img + shoff + (unsigned long long)i * shentsize + 24, 8);
    memcpy(&size, img + shoff + (unsigned long long)i * shentsize + 32, 8);
    if (type != 8 /* SHT_NOBITS */ && off + size > end)
      end = off + size;
  }
  return (size_t)end;
}

CUresult cuModuleLoadData(CUmodule *mod, const void *image)
{
  NEED_CONTEXT();
  const unsigned char *img = image;
  if (!img || memcmp(img, "\177ELF", 4) != 0 || img[4] != 2 || img[18] != 190 || img[19] != 0)
    return CUDA_ERROR_INVALID_IMAGE;
  struct CUmod_st *m = calloc(1, sizeof *m);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  m->size = elf_extent(img);
  m->image = malloc(m->size);
  if (!m->image) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(m->image, img, m->size);
  module_loads++;
  live_modules++;
  *mod = m;
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule mod)
{
  NEED_CONTEXT();
  if (!mod)
    return CUDA_ERROR_INVALID_HANDLE;
  for (struct CUfunc_st *f = mod->functions, *next; f; f = next) {
    next = f->next;
    free(f->name);
    free(f);
  }
  free(mod->image);
  free(mod);
  live_modules--;
  return CUDA_SUCCESS;
}

/* A kernel exists if its name appears NUL-delimited in the image (it is in
   the cubin's string table). */
CUresult cuModuleGetFunction(CUfunction *fn, CUmodule mod, const char *name)
{
  NEED_CONTEXT();
  size_t n = strlen(name);
  int found = 0;
  for (size_t i = 1; !found && i + n + 1 <= mod->size; i++)
    found = mod->image[i - 1] == '\0' && memcmp(mod->image + i, name, n) == 0 &&
            mod->image[i + n] == '\0';
  if (!found)
    return CUDA_ERROR_NOT_FOUND;
  for (struct CUfunc_st *f = mod->functions; f; f = f->next)
    if (strcmp(f->name, name) == 0) {
      *fn = f;
      return CUDA_SUCCESS;
    }
  struct CUfunc_st *f = calloc(1, sizeof *f);
  if (!f || !(f->name = malloc(n + 1))) {
    free(f);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(f->name, name, n + 1);
  f->max_dynamic_smem = 48 * 1024;
  f->next = mod->functions;
  mod->functions = f;
  *fn = f;
  return CUDA_SUCCESS;
}

#ifndef FAKE_CUDA_OLD_DRIVER
CUresult cuFuncSetAttribute(CUfunction fn, int attr, int value)
{
  NEED_CONTEXT();
  if (!fn)
    return CUDA_ERROR_INVALID_HANDLE;
  if (attr != 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */ || value < 0 ||
      value > env_int("FAKE_CUDA_SMEM_OPTIN", 101376))
    return CUDA_ERROR_INVALID_VALUE;
  fn->max_dynamic_smem = value;
  attribute_sets++;
  return CUDA_SUCCESS;
}
#endif

CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned smem, CUstream stream, void **params,
                        void **extra)
{
  NEED_CONTEXT();
  (void)stream;
  (void)extra;
  if (!fn)
    return CUDA_ERROR_INVALID_HANDLE;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
      (unsigned long long)bx * by * bz > 1024 || smem > (unsigned)fn->max_dynamic_smem)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned dims[7] = {gx, gy, gz, bx, by, bz, smem};
  memcpy(last_launch, dims, sizeof dims);
  last_params = params;
  launches++;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes)
{
  NEED_CONTEXT();
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  void *p = malloc(bytes);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  live_allocs++;
  *dptr = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
  NEED_CONTEXT();
  free((void *)(uintptr_t)dptr);
  live_allocs--;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
  NEED_CONTEXT();
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
  NEED_CONTEXT();
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned value, size_t count)
{
  NEED_CONTEXT();
  unsigned *p = (unsigned *)(uintptr_t)dst;
  for (size_t i = 0; i < count; i++)
    p[i] = value;
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *ev, unsigned flags)
{
  NEED_CONTEXT();
  (void)flags;
  struct CUevent_st *e = calloc(1, sizeof *e);
  if (!e)
    return CUDA_ERROR_OUT_OF_MEMORY;
  live_events++;
  *ev = e;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent ev, CUstream stream)
{
  NEED_CONTEXT();
  (void)stream;
  ev->when = now();
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent ev)
{
  NEED_CONTEXT();
  return ev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
  NEED_CONTEXT();
  *ms = (float)((end->when - start->when) * 1e3);
  return CUDA_SUCCESS;
}

/* Exported under the versioned name only: libtexrt must prefer it. */
CUresult cuEventDestroy_v2(CUevent ev)
{
  NEED_CONTEXT();
  free(ev);
  live_events--;
  return CUDA_SUCCESS;
}

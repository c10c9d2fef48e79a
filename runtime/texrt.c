/*
 * texrt.c — libtexrt: CPU helpers, and cubin loading through the CUDA
 * Driver API without linking against the driver.
 *
 * The driver.  libcuda.so.1 (or $TEXRT_LIBCUDA) is opened with dlopen on
 * first use and every function libtexrt calls is resolved up front from the
 * CU_FUNCTIONS table below, so a driver too old for one of them is reported
 * at texrt_cuda_init, by name, instead of crashing later.  A failed load is
 * not remembered: the next call tries again.  A successful load is kept for
 * the life of the process (never dlclose'd: the driver does not support
 * being unloaded while contexts exist).  The same goes for cuInit: retried
 * until it succeeds once.
 *
 * Contexts.  libtexrt retains each device's primary context (the one cudart
 * uses) the first time it needs it and makes it current on the calling
 * thread before every call that needs a context.  That costs a thread-local
 * store in the driver, and keeps libtexrt correct when other code in the
 * process switches contexts behind its back.  Each thread has a "current
 * device" for the memory functions: the device of its last texrt_cuda_init,
 * else the first device any thread initialised.
 *
 * Errors.  Every failure goes through set_error, which formats the
 * thread-local message read by texrt_last_error and returns the status.
 * Messages say what the user can do (rebuild for sm_86, install a driver),
 * not which call failed inside libtexrt, except for unexpected driver
 * errors, where the failing action and the driver's own text are all there
 * is to say.
 *
 * Where a cubin says which GPU it is for: see the long comment above
 * parse_cubin.
 */
#define _POSIX_C_SOURCE 200809L

#include "texrt.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- errors -------------------------------------------------------------- */

static _Thread_local char error_text[512];

const char *texrt_last_error(void) { return error_text; }

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int set_error(int status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(error_text, sizeof error_text, fmt, ap);
  va_end(ap);
  return status;
}

/* ---- CPU helpers ----------------------------------------------------------- */

enum { TEXRT_ALIGN = 64 };

void *texrt_alloc(size_t bytes)
{
  if (bytes > SIZE_MAX - (TEXRT_ALIGN - 1)) {
    set_error(TEXRT_E_NOMEM, "cannot allocate %zu bytes: out of memory", bytes);
    return NULL;
  }
  size_t rounded = (bytes + TEXRT_ALIGN - 1) & ~(size_t)(TEXRT_ALIGN - 1);
  if (rounded == 0)
    rounded = TEXRT_ALIGN; /* a unique pointer, never NULL, for 0 bytes */
  void *ptr = NULL;
  if (posix_memalign(&ptr, TEXRT_ALIGN, rounded) != 0) {
    set_error(TEXRT_E_NOMEM, "cannot allocate %zu bytes: out of memory", bytes);
    return NULL;
  }
  return ptr;
}

void texrt_free(void *ptr) { free(ptr); }

double texrt_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* splitmix64's output function (Steele, Lea, Flood 2014). */
static uint64_t mix64(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

void texrt_fill_random(float *dst, size_t n, uint64_t seed)
{
  for (size_t i = 0; i < n; i++) {
    uint64_t z = mix64(seed + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15u);
    /* 24 random bits: k / 2^23 - 1 is exact in a float and lies in [-1, 1). */
    dst[i] = (float)(z >> 40) * (1.0f / 8388608.0f) - 1.0f;
  }
}

/* ---- the Driver API, declared here ------------------------------------------
 *
 * These mirror cuda.h.  Everything below is part of the driver's stable
 * ABI: the enum values never change meaning, and the _v2 entry points are
 * the ones cuda.h has mapped the plain names to since CUDA 4.0 (64-bit
 * sizes and CUdeviceptr).  Declaring them here keeps texrt.h and the build
 * free of the toolkit.
 */
typedef int CUresult;                   /* CUDA_SUCCESS = 0 */
typedef int CUdevice;                   /* an ordinal, after cuDeviceGet */
typedef unsigned long long CUdeviceptr; /* 64-bit device address */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_FOUND = 500,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_EVENT_DEFAULT = 0
};

/* Every driver function libtexrt uses:
   X(field, name, preferred, parameters).  `name` is what messages print;
   `preferred`, when not NULL, is a newer versioned symbol that cuda.h maps
   the name to and that is tried first. */
#define CU_FUNCTIONS(X)                                                                  \
  X(Init, "cuInit", NULL, (unsigned flags))                                              \
  X(DriverGetVersion, "cuDriverGetVersion", NULL, (int *version))                        \
  X(DeviceGetCount, "cuDeviceGetCount", NULL, (int *count))                              \
  X(DeviceGet, "cuDeviceGet", NULL, (CUdevice * dev, int ordinal))                       \
  X(DeviceGetAttribute, "cuDeviceGetAttribute", NULL, (int *value, int attr, CUdevice dev)) \
  X(DeviceGetName, "cuDeviceGetName", NULL, (char *name, int len, CUdevice dev))         \
  X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, (CUcontext * ctx, CUdevice dev)) \
  X(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2",      \
    (CUdevice dev))                                                                      \
  X(CtxSetCurrent, "cuCtxSetCurrent", NULL, (CUcontext ctx))                             \
  X(CtxSynchronize, "cuCtxSynchronize", NULL, (void))                                    \
  X(ModuleLoadData, "cuModuleLoadData", NULL, (CUmodule * mod, const void *image))       \
  X(ModuleUnload, "cuModuleUnload", NULL, (CUmodule mod))                                \
  X(ModuleGetFunction, "cuModuleGetFunction", NULL,                                      \
    (CUfunction * fn, CUmodule mod, const char *name))                                   \
  X(FuncSetAttribute, "cuFuncSetAttribute", NULL, (CUfunction fn, int attr, int value))  \
  X(LaunchKernel, "cuLaunchKernel", NULL,                                                \
    (CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,     \
     unsigned bz, unsigned smem, CUstream stream, void **params, void **extra))          \
  X(MemAlloc, "cuMemAlloc_v2", NULL, (CUdeviceptr * dptr, size_t bytes))                 \
  X(MemFree, "cuMemFree_v2", NULL, (CUdeviceptr dptr))                                   \
  X(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL, (CUdeviceptr dst, const void *src, size_t bytes)) \
  X(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL, (void *dst, CUdeviceptr src, size_t bytes))     \
  X(MemsetD32, "cuMemsetD32_v2", NULL, (CUdeviceptr dst, unsigned value, size_t count))  \
  X(EventCreate, "cuEventCreate", NULL, (CUevent * ev, unsigned flags))                  \
  X(EventRecord, "cuEventRecord", NULL, (CUevent ev, CUstream stream))                   \
  X(EventSynchronize, "cuEventSynchronize", NULL, (CUevent ev))                          \
  X(EventElapsedTime, "cuEventElapsedTime", NULL, (float *ms, CUevent start, CUevent end)) \
  X(EventDestroy, "cuEventDestroy", "cuEventDestroy_v2", (CUevent ev))                   \
  X(GetErrorString, "cuGetErrorString", NULL, (CUresult error, const char **text))

struct cu_table {
#define CU_FIELD(field, name, preferred, params) CUresult(*field) params;
  CU_FUNCTIONS(CU_FIELD)
#undef CU_FIELD
};

static const struct cu_symbol {
  const char *name;      /* the documented name, printed in messages */
  const char *preferred; /* a versioned alias tried first, or NULL */
  size_t offset;         /* of the pointer in struct cu_table */
} cu_symbols[] = {
#define CU_SYMBOL(field, name, preferred, params) {name, preferred, offsetof(struct cu_table, field)},
  CU_FUNCTIONS(CU_SYMBOL)
#undef CU_SYMBOL
};

/* ---- driver and device state ----------------------------------------------
 *
 * Guarded by `lock`: the driver handle, the function table while it is
 * filled, cuInit's success and changes to the device slots.  Once driver_lib
 * is set the table is read-only and read without the lock; a slot's context
 * is atomic so that the launch path can read it without the lock.
 */
enum { TEXRT_MAX_DEVICES = 64 };

struct device_slot {
  _Atomic(CUcontext) ctx; /* the retained primary context, or NULL */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct cu_table cu;
static void *driver_lib;     /* dlopen handle; NULL until every symbol resolved */
static int driver_inited;    /* cuInit succeeded */
static int default_device = -1; /* the first device texrt_cuda_init retained */
static struct device_slot devices[TEXRT_MAX_DEVICES];

static _Thread_local int thread_device = -1; /* this thread's texrt_cuda_init */

/* The driver's text for an error; never NULL. */
static const char *cu_text(CUresult r)
{
  static _Thread_local char unknown[40];
  const char *text = NULL;
  if (cu.GetErrorString && cu.GetErrorString(r, &text) == CUDA_SUCCESS && text)
    return text;
  snprintf(unknown, sizeof unknown, "CUDA error %d", r);
  return unknown;
}

/* Open the driver and resolve every symbol.  Requires `lock`. */
static int load_driver(void)
{
  const char *path = getenv("TEXRT_LIBCUDA");
  if (!path || !*path)
    path = "libcuda.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    return set_error(TEXRT_E_NODRIVER, "no CUDA driver: cannot load %s (%s)", path,
                     why ? why : "unknown reason");
  }
  for (size_t i = 0; i < sizeof cu_symbols / sizeof cu_symbols[0]; i++) {
    const struct cu_symbol *s = &cu_symbols[i];
    void *fn = s->preferred ? dlsym(lib, s->preferred) : NULL;
    if (!fn)
      fn = dlsym(lib, s->name);
    if (!fn) {
      memset(&cu, 0, sizeof cu);
      dlclose(lib);
      return set_error(TEXRT_E_NODRIVER, "%s lacks %s: driver too old", path, s->name);
    }
    /* POSIX guarantees a function pointer round-trips through void *. */
    memcpy((char *)&cu + s->offset, &fn, sizeof fn);
  }
  driver_lib = lib;
  return TEXRT_OK;
}

/* The driver loaded and cuInit done. */
static int driver_ready(void)
{
  int rc = TEXRT_OK;
  pthread_mutex_lock(&lock);
  if (!driver_lib)
    rc = load_driver();
  if (rc == TEXRT_OK && !driver_inited) {
    CUresult r = cu.Init(0);
    if (r != CUDA_SUCCESS)
      rc = set_error(TEXRT_E_NODEVICE, "no CUDA device: cuInit failed: %s", cu_text(r));
    else
      driver_inited = 1;
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

/* The driver ready and `device` an existing ordinal; its handle in *dev. */
static int check_device(int device, CUdevice *dev)
{
  int rc = driver_ready();
  if (rc != TEXRT_OK)
    return rc;
  int count = 0;
  CUresult r = cu.DeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_NODEVICE, "no CUDA device: cuDeviceGetCount failed: %s", cu_text(r));
  if (count == 0)
    return set_error(TEXRT_E_NODEVICE, "no CUDA device: the driver reports 0 devices");
  if (device < 0 || device >= count)
    return set_error(TEXRT_E_BADDEVICE, "device %d does not exist: the driver reports %d device(s)",
                     device, count);
  if (device >= TEXRT_MAX_DEVICES)
    return set_error(TEXRT_E_BADDEVICE, "device %d: libtexrt handles at most %d devices", device,
                     TEXRT_MAX_DEVICES);
  r = cu.DeviceGet(dev, device);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_BADDEVICE, "device %d: cuDeviceGet failed: %s", device, cu_text(r));
  return TEXRT_OK;
}

static int set_current(int device, CUcontext ctx)
{
  CUresult r = cu.CtxSetCurrent(ctx);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "cannot make device %d's context current: %s", device,
                     cu_text(r));
  return TEXRT_OK;
}

/* Make `device`'s primary context current on this thread, retaining it
   first if libtexrt holds no reference yet.  A retained context means the
   device was checked already: that path is one atomic load and the
   driver's cuCtxSetCurrent, cheap enough for every launch. */
static int make_current(int device)
{
  if (device >= 0 && device < TEXRT_MAX_DEVICES) {
    CUcontext ctx = atomic_load_explicit(&devices[device].ctx, memory_order_acquire);
    if (ctx)
      return set_current(device, ctx);
  }
  CUdevice dev;
  int rc = check_device(device, &dev);
  if (rc != TEXRT_OK)
    return rc;
  pthread_mutex_lock(&lock);
  CUcontext ctx = atomic_load_explicit(&devices[device].ctx, memory_order_relaxed);
  if (!ctx) {
    CUresult r = cu.PrimaryCtxRetain(&ctx, dev);
    if (r != CUDA_SUCCESS) {
      pthread_mutex_unlock(&lock);
      return set_error(TEXRT_E_CUDA, "cannot open a context on device %d: %s", device, cu_text(r));
    }
    atomic_store_explicit(&devices[device].ctx, ctx, memory_order_release);
    if (default_device < 0)
      default_device = device;
  }
  pthread_mutex_unlock(&lock);
  return set_current(device, ctx);
}

/* The calling thread's current device made current; its ordinal in *device. */
static int enter_current_device(int *device)
{
  int d = thread_device;
  if (d < 0) {
    pthread_mutex_lock(&lock);
    d = default_device;
    pthread_mutex_unlock(&lock);
  }
  if (d < 0)
    return set_error(TEXRT_E_INVAL, "no CUDA device initialised: call texrt_cuda_init first");
  *device = d;
  return make_current(d);
}

int texrt_cuda_init(int device)
{
  int rc = make_current(device);
  if (rc == TEXRT_OK)
    thread_device = device;
  return rc;
}

int texrt_cuda_release(int device)
{
  CUdevice dev;
  int rc = check_device(device, &dev);
  if (rc != TEXRT_OK)
    return rc;
  pthread_mutex_lock(&lock);
  CUresult r = CUDA_SUCCESS;
  if (atomic_load_explicit(&devices[device].ctx, memory_order_relaxed)) {
    r = cu.PrimaryCtxRelease(dev);
    atomic_store_explicit(&devices[device].ctx, NULL, memory_order_release);
    if (default_device == device)
      default_device = -1;
  }
  pthread_mutex_unlock(&lock);
  if (thread_device == device)
    thread_device = -1;
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "releasing device %d's context failed: %s", device, cu_text(r));
  return TEXRT_OK;
}

int texrt_device_count(int *count)
{
  if (!count)
    return set_error(TEXRT_E_INVAL, "texrt_device_count: count is NULL");
  *count = 0;
  int rc = driver_ready();
  if (rc != TEXRT_OK)
    return rc;
  CUresult r = cu.DeviceGetCount(count);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_NODEVICE, "no CUDA device: cuDeviceGetCount failed: %s", cu_text(r));
  return TEXRT_OK;
}

int texrt_driver_version(int *version)
{
  if (!version)
    return set_error(TEXRT_E_INVAL, "texrt_driver_version: version is NULL");
  *version = 0;
  pthread_mutex_lock(&lock);
  int rc = driver_lib ? TEXRT_OK : load_driver();
  pthread_mutex_unlock(&lock);
  if (rc != TEXRT_OK)
    return rc;
  CUresult r = cu.DriverGetVersion(version);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "cuDriverGetVersion failed: %s", cu_text(r));
  return TEXRT_OK;
}

int texrt_device_arch(int device, int *sm)
{
  if (!sm)
    return set_error(TEXRT_E_INVAL, "texrt_device_arch: sm is NULL");
  *sm = 0;
  CUdevice dev;
  int rc = check_device(device, &dev);
  if (rc != TEXRT_OK)
    return rc;
  int major = 0, minor = 0;
  CUresult r = cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  if (r == CUDA_SUCCESS)
    r = cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "cannot read device %d's compute capability: %s", device,
                     cu_text(r));
  *sm = major * 10 + minor;
  return TEXRT_OK;
}

int texrt_device_name(int device, char *buf, size_t n)
{
  if (!buf || n == 0)
    return set_error(TEXRT_E_INVAL, "texrt_device_name: empty buffer");
  buf[0] = '\0';
  CUdevice dev;
  int rc = check_device(device, &dev);
  if (rc != TEXRT_OK)
    return rc;
  CUresult r = cu.DeviceGetName(buf, n > INT_MAX ? INT_MAX : (int)n, dev);
  buf[n - 1] = '\0';
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "cannot read device %d's name: %s", device, cu_text(r));
  return TEXRT_OK;
}

int texrt_device_attribute(int device, int attribute, int *value)
{
  if (!value)
    return set_error(TEXRT_E_INVAL, "texrt_device_attribute: value is NULL");
  *value = 0;
  CUdevice dev;
  int rc = check_device(device, &dev);
  if (rc != TEXRT_OK)
    return rc;
  CUresult r = cu.DeviceGetAttribute(value, attribute, dev);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "cannot read attribute %d of device %d: %s", attribute, device,
                     cu_text(r));
  return TEXRT_OK;
}

/* ---- cubins ------------------------------------------------------------------
 *
 * A cubin is an ELF64 little-endian file with e_machine EM_CUDA (190).  Its
 * target SM is in e_flags, in one of two layouts told apart by
 * e_ident[EI_ABIVERSION] (byte 8):
 *
 *   ABI version 7 and below: ptxas up to CUDA 12.x for sm_90 and older;
 *   e_ident[EI_OSABI] 0x33 (ELFOSABI_CUDA).  Names from LLVM's ELF.h:
 *     bits  0..7   EF_CUDA_SM                the SM number (0x5a = 90)
 *     bit   8      EF_CUDA_TEXMODE_UNIFIED
 *     bit   9      EF_CUDA_TEXMODE_INDEPENDENT
 *     bit  10      EF_CUDA_64BIT_ADDRESS
 *     bit  11      EF_CUDA_ACCELERATORS_V1   the "a" of sm_90a
 *     bit  12      EF_CUDA_SW_FLAG_V2
 *     bits 16..23  EF_CUDA_VIRTUAL_SM        the PTX target compiled from
 *     e.g. sm_80 0x00500550, sm_86 0x00560556, sm_90 0x005a055a
 *
 *   ABI version 8: CUDA 13 for every target, and CUDA 12.8+ for sm_100 and
 *   newer; e_ident[EI_OSABI] 0x41.
 *     bits  0..7   flags: 0x04 on sm_75..sm_90 and 0x02 on sm_100+ as
 *                  ptxas 13.0 writes them (meaning undocumented), 0x08
 *                  EF_CUDA_ACCELERATORS
 *     bits  8..15  the SM number
 *     bits 24..31  0x06 (undocumented)
 *     measured with nvcc 13.0 -cubin: sm_75 0x06004b04, sm_80 0x06005004,
 *     sm_86 0x06005604, sm_89 0x06005904, sm_90 0x06005a04,
 *     sm_100 0x06006402, sm_103 0x06006702, sm_120 0x06007802
 *
 * The layout is chosen by the ABI version; if that gives an SM below 20 (no
 * such GPU: it is the other layout's flag byte) the other layout is tried.
 *
 * "a" (architecture-specific) targets.  nvcc 13.0 writes the SAME e_flags
 * for sm_90 and sm_90a (likewise sm_100/sm_100a, sm_120/sm_120a), even for
 * code using wgmma, and leaves EF_CUDA_ACCELERATORS clear.  What differs is
 * the .nv.compat section (sh_type SHT_CUDA_COMPAT = 0x70000086): a list of
 * records {u8 format, u8 attribute, u16 value}, where format 2 keeps a byte
 * value in the first byte of the u16, format 3 a u16 value, and format 4
 * means the u16 is the length of a payload that follows.  Attribute 0x09
 * (cuobjdump's EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET) is 1 for an "a" cubin
 * and 0 otherwise.  A cubin is taken as architecture-specific if either
 * accelerator bit of e_flags or that record says so.  "f" (family) targets
 * cannot be told from plain ones and need not be: sm_100f and sm_100 run on
 * the same devices (10.0 and the 10.x minors above it).
 */
enum {
  ELF_HEADER_SIZE = 64,
  ELF_SECTION_HEADER_SIZE = 64,
  EI_CLASS = 4,
  EI_DATA = 5,
  EI_ABIVERSION = 8,
  ELFCLASS64 = 2,
  ELFDATA2LSB = 1,
  EM_CUDA = 190,
  CUDA_ABI_SM_IN_BITS_8_15 = 8, /* first ABI version with the newer layout */
  EF_CUDA_ACCELERATORS_V1 = 0x800,
  EF_CUDA_ACCELERATORS = 0x8,
  EICOMPAT_FORMAT_BYTE = 2,
  EICOMPAT_FORMAT_HALF = 3,
  EICOMPAT_FORMAT_SIZED = 4,
  EICOMPAT_ACCELERATOR_TARGET = 0x09
};
#define SHT_CUDA_COMPAT 0x70000086u

static uint32_t read16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

static uint32_t read32(const unsigned char *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t read64(const unsigned char *p) { return read32(p) | (uint64_t)read32(p + 4) << 32; }

static int truncated(const char *name, size_t size)
{
  return set_error(TEXRT_E_BADIMAGE, "%s is truncated: its ELF sections reach past its %zu bytes",
                   name, size);
}

/* Scan .nv.compat for the accelerator-target record; *specific set to 1 if
   it says "a".  A cubin without the section is not architecture-specific. */
static int compat_arch_specific(const unsigned char *img, size_t size, const char *name,
                                int *specific)
{
  uint64_t shoff = read64(img + 0x28);
  uint32_t shentsize = read16(img + 0x3a);
  uint32_t shnum = read16(img + 0x3c);
  if (shnum == 0)
    return TEXRT_OK;
  if (shentsize < ELF_SECTION_HEADER_SIZE || shoff > size || (size - shoff) / shentsize < shnum)
    return truncated(name, size);
  for (uint32_t i = 0; i < shnum; i++) {
    const unsigned char *sh = img + shoff + (uint64_t)i * shentsize;
    if (read32(sh + 4) != SHT_CUDA_COMPAT)
      continue;
    uint64_t off = read64(sh + 24), len = read64(sh + 32);
    if (off > size || len > size - off)
      return truncated(name, size);
    const unsigned char *rec = img + off, *end = rec + len;
    while (end - rec >= 4) {
      unsigned format = rec[0], attribute = rec[1];
      uint32_t value = format == EICOMPAT_FORMAT_BYTE ? rec[2] : read16(rec + 2);
      if (attribute == EICOMPAT_ACCELERATOR_TARGET &&
          (format == EICOMPAT_FORMAT_BYTE || format == EICOMPAT_FORMAT_HALF) && value != 0)
        *specific = 1;
      rec += 4;
      if (format == EICOMPAT_FORMAT_SIZED) {
        uint32_t payload = read16(rec - 2);
        if ((size_t)(end - rec) < payload)
          break;
        rec += payload;
      }
    }
  }
  return TEXRT_OK;
}

static int parse_cubin(const void *image, size_t size, const char *name, int *sm, int *specific)
{
  const unsigned char *img = image;
  *sm = 0;
  *specific = 0;
  if (!img || size < ELF_HEADER_SIZE || memcmp(img, "\177ELF", 4) != 0 ||
      img[EI_CLASS] != ELFCLASS64 || img[EI_DATA] != ELFDATA2LSB || read16(img + 18) != EM_CUDA)
    return set_error(TEXRT_E_BADIMAGE, "%s is not a CUDA cubin (bad ELF header)", name);

  uint32_t flags = read32(img + 48);
  int low_sm = (int)(flags & 0xff), high_sm = (int)(flags >> 8 & 0xff);
  int newer = img[EI_ABIVERSION] >= CUDA_ABI_SM_IN_BITS_8_15;
  if ((newer ? high_sm : low_sm) < 20)
    newer = !newer;
  int found = newer ? high_sm : low_sm;
  if (found < 20)
    return set_error(TEXRT_E_BADIMAGE, "%s: no CUDA architecture in its ELF flags 0x%08x", name,
                     (unsigned)flags);
  *specific = (flags & (newer ? EF_CUDA_ACCELERATORS : EF_CUDA_ACCELERATORS_V1)) != 0;
  int rc = compat_arch_specific(img, size, name, specific);
  if (rc != TEXRT_OK)
    return rc;
  *sm = found;
  return TEXRT_OK;
}

int texrt_cubin_arch(const void *image, size_t size, int *sm, int *arch_specific)
{
  int found_sm, found_specific;
  if (!sm)
    return set_error(TEXRT_E_INVAL, "texrt_cubin_arch: sm is NULL");
  int rc = parse_cubin(image, size, "image", &found_sm, &found_specific);
  *sm = found_sm;
  if (arch_specific)
    *arch_specific = found_specific;
  return rc;
}

int texrt_arch_runs_on(int cubin_sm, int arch_specific, int device_sm)
{
  if (arch_specific)
    return cubin_sm == device_sm;
  return cubin_sm / 10 == device_sm / 10 && cubin_sm % 10 <= device_sm % 10;
}

/* ---- modules and kernels ------------------------------------------------- */

struct texrt_kernel {
  texrt_module *module;
  CUfunction fn;
  char *name;
  _Atomic unsigned smem_allowed; /* dynamic shared memory opted into so far */
  texrt_kernel *next;            /* the module's kernels */
};

struct texrt_module {
  CUmodule mod;
  int device;
  char *name;            /* for messages: "matmul_gelu.cubin" */
  texrt_kernel *kernels; /* every kernel handed out, freed with the module */
  pthread_mutex_t kernels_lock;
};

static char *copy_string(const char *s)
{
  size_t n = strlen(s) + 1;
  char *copy = malloc(n);
  if (copy)
    memcpy(copy, s, n);
  return copy;
}

int texrt_module_load(texrt_module **out, const void *image, size_t size, const char *name,
                      int device)
{
  if (!out)
    return set_error(TEXRT_E_INVAL, "texrt_module_load: out is NULL");
  *out = NULL;
  if (!name)
    name = "image";

  /* The architecture first: the driver's own refusal would only say
     "no kernel image is available for execution on the device". */
  int sm, specific, device_sm;
  int rc = parse_cubin(image, size, name, &sm, &specific);
  if (rc == TEXRT_OK)
    rc = texrt_device_arch(device, &device_sm);
  if (rc != TEXRT_OK)
    return rc;
  if (!texrt_arch_runs_on(sm, specific, device_sm))
    return set_error(TEXRT_E_ARCH,
                     "%s was built for sm_%d%s; device %d is sm_%d: rebuild with texc --arch sm_%d",
                     name, sm, specific ? "a" : "", device, device_sm, device_sm);

  rc = make_current(device);
  if (rc != TEXRT_OK)
    return rc;
  texrt_module *module = calloc(1, sizeof *module);
  char *name_copy = copy_string(name);
  if (!module || !name_copy) {
    free(module);
    free(name_copy);
    return set_error(TEXRT_E_NOMEM, "loading %s: out of memory", name);
  }
  CUresult r = cu.ModuleLoadData(&module->mod, image);
  if (r != CUDA_SUCCESS) {
    free(module);
    free(name_copy);
    return set_error(TEXRT_E_CUDA, "loading %s on device %d failed: %s", name, device, cu_text(r));
  }
  module->device = device;
  module->name = name_copy;
  pthread_mutex_init(&module->kernels_lock, NULL);
  *out = module;
  return TEXRT_OK;
}

int texrt_module_load_file(texrt_module **out, const char *path, int device)
{
  if (!out || !path)
    return set_error(TEXRT_E_INVAL, "texrt_module_load_file: NULL argument");
  *out = NULL;
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;

  FILE *f = fopen(path, "rb");
  if (!f)
    return set_error(TEXRT_E_IO, "cannot read %s: %s", path, strerror(errno));
  unsigned char *image = NULL;
  size_t size = 0, cap = 0;
  for (;;) {
    if (size == cap) {
      cap = cap ? cap * 2 : 64 * 1024;
      unsigned char *grown = realloc(image, cap);
      if (!grown) {
        free(image);
        fclose(f);
        return set_error(TEXRT_E_NOMEM, "reading %s: out of memory", path);
      }
      image = grown;
    }
    size_t got = fread(image + size, 1, cap - size, f);
    size += got;
    if (got == 0)
      break;
  }
  int failed = ferror(f);
  fclose(f);
  if (failed) {
    free(image);
    return set_error(TEXRT_E_IO, "cannot read %s: read error", path);
  }
  int rc = texrt_module_load(out, image, size, base, device);
  free(image);
  return rc;
}

void texrt_module_unload(texrt_module *module)
{
  if (!module)
    return;
  if (make_current(module->device) == TEXRT_OK)
    cu.ModuleUnload(module->mod);
  for (texrt_kernel *k = module->kernels, *next; k; k = next) {
    next = k->next;
    free(k->name);
    free(k);
  }
  pthread_mutex_destroy(&module->kernels_lock);
  free(module->name);
  free(module);
}

/* A new kernel record for `name`, looked up in the driver.  Requires the
   module's kernels_lock. */
static int find_kernel(texrt_module *module, const char *name, texrt_kernel **out)
{
  int rc = make_current(module->device);
  if (rc != TEXRT_OK)
    return rc;
  CUfunction fn = NULL;
  CUresult r = cu.ModuleGetFunction(&fn, module->mod, name);
  if (r == CUDA_ERROR_NOT_FOUND)
    return set_error(TEXRT_E_NOTFOUND, "%s has no kernel named %s", module->name, name);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "looking up kernel %s in %s failed: %s", name, module->name,
                     cu_text(r));
  texrt_kernel *k = calloc(1, sizeof *k);
  char *name_copy = copy_string(name);
  if (!k || !name_copy) {
    free(k);
    free(name_copy);
    return set_error(TEXRT_E_NOMEM, "looking up kernel %s: out of memory", name);
  }
  k->module = module;
  k->fn = fn;
  k->name = name_copy;
  atomic_init(&k->smem_allowed, 48 * 1024);
  k->next = module->kernels;
  module->kernels = k;
  *out = k;
  return TEXRT_OK;
}

int texrt_kernel_get(texrt_module *module, const char *name, texrt_kernel **out)
{
  if (!module || !name || !out)
    return set_error(TEXRT_E_INVAL, "texrt_kernel_get: NULL argument");
  *out = NULL;
  int rc = TEXRT_OK;
  pthread_mutex_lock(&module->kernels_lock);
  texrt_kernel *k = module->kernels;
  while (k && strcmp(k->name, name) != 0)
    k = k->next;
  if (k)
    *out = k;
  else
    rc = find_kernel(module, name, out);
  pthread_mutex_unlock(&module->kernels_lock);
  return rc;
}

/* Opt the kernel into `smem` bytes of dynamic shared memory if it is above
   what it was allowed so far (48 KiB without opting in). */
static int allow_smem(texrt_kernel *kernel, unsigned smem)
{
  if (smem <= atomic_load_explicit(&kernel->smem_allowed, memory_order_relaxed))
    return TEXRT_OK;
  texrt_module *module = kernel->module;
  int rc = TEXRT_OK;
  pthread_mutex_lock(&module->kernels_lock);
  if (smem > atomic_load_explicit(&kernel->smem_allowed, memory_order_relaxed)) {
    CUresult r = smem > INT_MAX ? 1 /* CUDA_ERROR_INVALID_VALUE */
                                : cu.FuncSetAttribute(kernel->fn,
                                                      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                      (int)smem);
    if (r == CUDA_SUCCESS) {
      atomic_store_explicit(&kernel->smem_allowed, smem, memory_order_relaxed);
    } else {
      int limit = -1;
      CUdevice dev;
      if (cu.DeviceGet(&dev, module->device) != CUDA_SUCCESS ||
          cu.DeviceGetAttribute(&limit, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                dev) != CUDA_SUCCESS)
        limit = -1;
      if (limit >= 0 && smem > (unsigned)limit)
        rc = set_error(TEXRT_E_CUDA,
                       "kernel %s asks for %u bytes of dynamic shared memory; device %d allows at "
                       "most %d per block",
                       kernel->name, smem, module->device, limit);
      else
        rc = set_error(TEXRT_E_CUDA,
                       "cannot give kernel %s %u bytes of dynamic shared memory: %s",
                       kernel->name, smem, cu_text(r));
    }
  }
  pthread_mutex_unlock(&module->kernels_lock);
  return rc;
}

int texrt_launch(texrt_kernel *kernel, const unsigned grid[3], const unsigned block[3],
                 unsigned dyn_smem, void **args)
{
  if (!kernel || !grid || !block)
    return set_error(TEXRT_E_INVAL, "texrt_launch: NULL argument");
  int rc = make_current(kernel->module->device);
  if (rc == TEXRT_OK)
    rc = allow_smem(kernel, dyn_smem);
  if (rc != TEXRT_OK)
    return rc;
  CUresult r = cu.LaunchKernel(kernel->fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                               dyn_smem, NULL, args, NULL);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA,
                     "launching %s (grid %ux%ux%u, block %ux%ux%u, %u bytes of dynamic shared "
                     "memory) failed: %s",
                     kernel->name, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                     dyn_smem, cu_text(r));
  return TEXRT_OK;
}

static int compare_floats(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* The timing of texrt_time_kernel and texrt_time_calls, on the current
   context; WHAT names the work in messages. */
static int time_calls(int (*call)(void *ctx, int i), void *ctx, int warmup, int reps,
                      float *median_ms, const char *what)
{
  for (int i = 0; i < warmup; i++) {
    int rc = call(ctx, i);
    if (rc != TEXRT_OK)
      return rc;
  }
  /* events[i] and events[i + 1] bracket call i.  All calls are queued
     back to back and waited for once, so while the CPU keeps ahead of the
     GPU each interval is the work's own time, not the launch latency an
     idle GPU would add to every sample. */
  CUevent *events = calloc((size_t)reps + 1, sizeof *events);
  float *times = malloc((size_t)reps * sizeof *times);
  int rc = TEXRT_OK;
  CUresult r = CUDA_SUCCESS;
  const char *step = "creating events for";
  if (!events || !times)
    rc = set_error(TEXRT_E_NOMEM, "timing %s: out of memory", what);
  for (int i = 0; i <= reps && rc == TEXRT_OK && r == CUDA_SUCCESS; i++)
    r = cu.EventCreate(&events[i], CU_EVENT_DEFAULT);
  if (rc == TEXRT_OK && r == CUDA_SUCCESS) {
    step = "recording events around";
    r = cu.EventRecord(events[0], NULL);
  }
  for (int i = 0; i < reps && rc == TEXRT_OK && r == CUDA_SUCCESS; i++) {
    rc = call(ctx, warmup + i);
    if (rc == TEXRT_OK)
      r = cu.EventRecord(events[i + 1], NULL);
  }
  if (rc == TEXRT_OK && r == CUDA_SUCCESS) {
    step = "waiting for";
    r = cu.EventSynchronize(events[reps]);
  }
  for (int i = 0; i < reps && rc == TEXRT_OK && r == CUDA_SUCCESS; i++) {
    step = "reading the times of";
    r = cu.EventElapsedTime(&times[i], events[i], events[i + 1]);
  }
  if (rc == TEXRT_OK && r != CUDA_SUCCESS)
    rc = set_error(TEXRT_E_CUDA, "%s %s failed: %s", step, what, cu_text(r));
  if (rc == TEXRT_OK) {
    qsort(times, (size_t)reps, sizeof *times, compare_floats);
    *median_ms = reps % 2 ? times[reps / 2] : (times[reps / 2 - 1] + times[reps / 2]) / 2;
  }
  for (int i = 0; events && i <= reps; i++)
    if (events[i])
      cu.EventDestroy(events[i]);
  free(events);
  free(times);
  return rc;
}

/* One launch per call: texrt_time_kernel's. */
struct one_launch {
  texrt_kernel *kernel;
  const unsigned *grid, *block;
  unsigned dyn_smem;
  void **args;
};

static int launch_once(void *ctx, int i)
{
  (void)i;
  struct one_launch *l = ctx;
  return texrt_launch(l->kernel, l->grid, l->block, l->dyn_smem, l->args);
}

int texrt_time_kernel(texrt_kernel *kernel, const unsigned grid[3], const unsigned block[3],
                      unsigned dyn_smem, void **args, int warmup, int reps, float *median_ms)
{
  if (!kernel || !median_ms || warmup < 0 || reps < 1)
    return set_error(TEXRT_E_INVAL, "texrt_time_kernel: needs a kernel, warmup >= 0, reps >= 1");
  *median_ms = 0;
  int rc = make_current(kernel->module->device);
  if (rc != TEXRT_OK)
    return rc;
  struct one_launch l = {kernel, grid, block, dyn_smem, args};
  return time_calls(launch_once, &l, warmup, reps, median_ms, kernel->name);
}

int texrt_time_calls(int (*call)(void *ctx, int i), void *ctx, int warmup, int reps,
                     float *median_ms)
{
  if (!call || !median_ms || warmup < 0 || reps < 1)
    return set_error(TEXRT_E_INVAL, "texrt_time_calls: needs a function, warmup >= 0, reps >= 1");
  *median_ms = 0;
  int device;
  int rc = enter_current_device(&device);
  if (rc != TEXRT_OK)
    return rc;
  return time_calls(call, ctx, warmup, reps, median_ms, "the launches");
}

/* ---- device memory ---------------------------------------------------------- */

int texrt_dev_alloc(uint64_t *dptr, size_t bytes)
{
  if (!dptr)
    return set_error(TEXRT_E_INVAL, "texrt_dev_alloc: dptr is NULL");
  *dptr = 0;
  if (bytes == 0)
    return set_error(TEXRT_E_INVAL, "texrt_dev_alloc: cannot allocate 0 bytes");
  int device;
  int rc = enter_current_device(&device);
  if (rc != TEXRT_OK)
    return rc;
  CUdeviceptr p = 0;
  CUresult r = cu.MemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS)
    return set_error(r == CUDA_ERROR_OUT_OF_MEMORY ? TEXRT_E_NOMEM : TEXRT_E_CUDA,
                     "cannot allocate %zu bytes on device %d: %s", bytes, device, cu_text(r));
  *dptr = p;
  return TEXRT_OK;
}

int texrt_dev_free(uint64_t dptr)
{
  if (dptr == 0)
    return TEXRT_OK;
  int device;
  int rc = enter_current_device(&device);
  if (rc != TEXRT_OK)
    return rc;
  CUresult r = cu.MemFree(dptr);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "freeing device %d's buffer 0x%llx failed: %s", device,
                     (unsigned long long)dptr, cu_text(r));
  return TEXRT_OK;
}

int texrt_memcpy_htod(uint64_t dst, const void *src, size_t bytes)
{
  int device;
  int rc = enter_current_device(&device);
  if (rc != TEXRT_OK)
    return rc;
  CUresult r = cu.MemcpyHtoD(dst, src, bytes);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "copying %zu bytes to device %d failed: %s", bytes, device,
                     cu_text(r));
  return TEXRT_OK;
}

int texrt_memcpy_dtoh(void *dst, uint64_t src, size_t bytes)
{
  int device;
  int rc = enter_current_device(&device);
  if (rc != TEXRT_OK)
    return rc;
  CUresult r = cu.MemcpyDtoH(dst, src, bytes);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "copying %zu bytes from device %d failed: %s", bytes, device,
                     cu_text(r));
  return TEXRT_OK;
}

int texrt_memset32(uint64_t dst, uint32_t value, size_t count)
{
  int device;
  int rc = enter_current_device(&device);
  if (rc != TEXRT_OK)
    return rc;
  CUresult r = cu.MemsetD32(dst, value, count);
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "setting %zu words on device %d failed: %s", count, device,
                     cu_text(r));
  return TEXRT_OK;
}

int texrt_synchronize(void)
{
  int device;
  int rc = enter_current_device(&device);
  if (rc != TEXRT_OK)
    return rc;
  CUresult r = cu.CtxSynchronize();
  if (r != CUDA_SUCCESS)
    return set_error(TEXRT_E_CUDA, "waiting for device %d failed: %s", device, cu_text(r));
  return TEXRT_OK;
}

/* cudaemu.h — just enough CUDA for the host to run texc's generated
 * kernels, so that the tests check their results on machines without a GPU.
 *
 * Included before NAME.cu, which is then compiled as C++ by the host
 * compiler.  Each thread of a block is a host thread; a block's threads
 * run together and __syncthreads() is a barrier among them, so a missing
 * barrier shows up as a data race (build with -fsanitize=thread to see it
 * reported) or a wrong result.  Blocks run one after another, so
 * __shared__ arrays are function-level statics.  Dynamic shared memory is
 * te_emu_smem (tests/cuda.sh rewrites the kernel's extern declaration).
 * cp.async is a plain copy (the generated helpers fall back to memcpy
 * without __CUDA_ARCH__), so the emulation checks where the barriers are,
 * not the asynchronous copies' timing.
 *
 * The warp-collective tensor-core instructions (ldmatrix, mma.sync) are
 * functions the generated code calls without __CUDA_ARCH__: te_emu_ldmatrix
 * and te_emu_mma_m16n8k16 below.  The lanes of a warp (linear thread id
 * threadIdx.x + blockDim.x (threadIdx.y + blockDim.y threadIdx.z), lane =
 * id % 32, warp = id / 32) post their operands, meet at a barrier of their
 * warp, and each computes its own results from the others' posts, placing
 * elements by tests/cudaemu/mma_layout.h, the PTX ISA's fragment layouts
 * (not the code generator's).  A block whose thread count is not a
 * multiple of 32, lanes of one warp at different instructions, or a lane
 * that returns while the others wait abort the run with a message.
 */
#ifndef TEXC_CUDAEMU_H
#define TEXC_CUDAEMU_H

#include <cmath>
#include <cstdint>
#include <cstring>

struct dim3 {
    unsigned x, y, z;
};
typedef dim3 uint3;
struct uint4 {
    unsigned x, y, z, w;
};

extern thread_local uint3 threadIdx, blockIdx;
extern thread_local dim3 blockDim;
extern thread_local unsigned char *te_emu_smem;
void te_emu_syncthreads(void);

/* ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16: NMAT (1, 2 or 4)
 * matrices; the calling lane supplies ROW, the address of one 8-element
 * (16-byte, 16-byte aligned) row as the ISA says (lanes 8m..8m+7 the rows
 * 0-7 of matrix m; the other lanes' ROW is not read); r[0..NMAT-1]
 * receive the lane's fragment of each matrix (two b16 values: the
 * lower-numbered column in the low half; with TRANS the matrix is read
 * column-major). */
void te_emu_ldmatrix(unsigned *r, int nmat, bool trans, const void *row);
/* mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32 with D = C = d
 * (accumulating in place): T is bf16 when BF16, else f16; a[4], b[2] the
 * lane's .b32 fragment registers.  Each d element is c + a_0 b_0 + ... +
 * a_15 b_15 summed in k order in float, each product exact (an f16 or
 * bf16 product fits a float's significand) and each addition rounded to
 * nearest even; the hardware's order and rounding differ, so results are
 * compared against the evaluator with a tolerance. */
void te_emu_mma_m16n8k16(float d[4], const unsigned a[4], const unsigned b[2], bool bf16);

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __syncthreads() te_emu_syncthreads()

using std::erf;
using std::exp;
using std::log;
using std::pow;
using std::sqrt;
using std::tanh;
using std::fabs;

static inline float __int_as_float(int bits)
{
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

static inline double __longlong_as_double(long long bits)
{
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
}

/* f16 and bf16: storage types with round-to-nearest-even conversions. */
struct __half {
    uint16_t bits;
};
struct __nv_bfloat16 {
    uint16_t bits;
};

static inline float __half2float(__half h)
{
    return (float)*(const _Float16 *)&h.bits;
}

static inline __half __float2half_rn(float f)
{
    _Float16 v = (_Float16)f;
    __half h;
    std::memcpy(&h.bits, &v, sizeof h.bits);
    return h;
}

static inline float __bfloat162float(__nv_bfloat16 b)
{
    uint32_t u = (uint32_t)b.bits << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

static inline __nv_bfloat16 __float2bfloat16_rn(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    __nv_bfloat16 b;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        b.bits = (uint16_t)((u >> 16) | 0x40);
    else
        b.bits = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return b;
}

/* The kernels of one NAME.cu, by name, each called with a launch's
 * argument array (pointers to the device pointers). */
#include <utility>

typedef void (*te_emu_thunk)(void **args);
struct te_emu_kernel {
    const char *name;
    te_emu_thunk call;
};

template <typename... A, std::size_t... I>
static void te_emu_invoke(void (*f)(A...), void **args, std::index_sequence<I...>)
{
    f(*reinterpret_cast<A *>(args[I])...);
}

template <typename... A>
static void te_emu_invoke(void (*f)(A...), void **args)
{
    te_emu_invoke(f, args, std::index_sequence_for<A...>{});
}

#define TE_EMU_KERNEL(k) { #k, [](void **args) { te_emu_invoke(&k, args); } },

extern const te_emu_kernel te_emu_kernels[];
extern const int te_emu_nkernels;

#endif

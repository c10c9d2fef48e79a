/* mma_unit.cc — the emulator's tensor-core instructions (te_emu_ldmatrix,
 * te_emu_mma_m16n8k16), run through its own launch path (texrt_kernel_get,
 * texrt_launch) by tests/cudaemu_mma.sh.
 *
 * Each warp of a 128-thread block (16x4x2, so a warp spans threadIdx.y
 * and .z; two blocks, or with --small one block of 64 threads, 32x2x1,
 * since ThreadSanitizer takes 10 ms to start a thread) stages a 16x32 A and a 32x16 B tile in shared
 * memory, loads fragments with ldmatrix in one of the ways a code
 * generator would (A: .x4 row-major, .x4.trans k-major, .x2 and .x1
 * row-major; B: .x2.trans k-major [32][16], .x2 n-major [16][32], .x4.trans
 * and .x4 loading two n tiles at once), runs 2 k steps x 2 n tiles of
 * mma.m16n8k16 for f16 or bf16 with C loaded into the accumulators, and
 * stores D.  The addresses, the C loads and D stores are written from the
 * ISA's formulas here, apart from mma_layout.h that the emulator uses.
 * D must equal a host matmul summing c + a_0 b_0 + ... + a_31 b_31 in k
 * order in float — exactly, since the emulator adds in the same order and
 * f16/bf16 products are exact in float.
 *
 * usage: mma_unit [--small] CASE, CASE one of --list's lines:
 *   f16|bf16 A B        exit 0 iff D matches;
 *   plant WHAT          a planted layout error (two lanes' A row addresses
 *                       swapped, a register's halves swapped, two lanes'
 *                       B registers swapped, two C elements loaded
 *                       swapped): exit 0 iff the comparison fails, so the
 *                       check above cannot pass vacuously;
 *   abort WHAT          a misuse the emulator must stop with a message
 *                       (a 48-thread block, lanes at different
 *                       instructions, a lane returning early, a misaligned
 *                       row, half a warp at __syncthreads while the other
 *                       half waits at an mma, found after
 *                       $CUDAEMU_WARP_PATIENCE_S): the run must abort, the
 *                       script checks the message;
 *   bench N             N mma per warp in a 256-thread block, timed (for
 *                       measuring, not a test).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudaemu.h"
#include "texrt.h"

enum AMode { A_X4, A_X4T, A_X2, A_X1, A_NMODES };
enum BMode { B_X2T, B_X2, B_X4T, B_X4, B_NMODES };
enum Plant { PLANT_NONE, PLANT_ROWS, PLANT_HALVES, PLANT_LANES, PLANT_C, PLANT_N };
enum Misuse { MISUSE_NONE, MISUSE_MIXED, MISUSE_EXIT, MISUSE_ALIGN, MISUSE_SYNC };

static const char *const a_names[] = { "x4", "x4.trans", "x2", "x1" };
static const char *const b_names[] = { "x2.trans", "x2", "x4.trans", "x4" };
static const char *const plant_names[] = { "none", "rows", "halves", "lanes", "c" };

enum { M = 16, N = 16, K = 32, MAXWARPS = 8 };

struct Job {
    const uint16_t *a; /* per tile A[M][K], row-major */
    const uint16_t *b; /* per tile B[K][N], row-major (k-major) */
    const float *c;    /* per tile C[M][N] */
    float *d;          /* per tile D[M][N] */
    bool bf16;
    AMode amode;
    BMode bmode;
    Plant plant;
    Misuse misuse;
    int steps; /* k steps of 16 over the tile (2), more to time it */
};

/* The ISA's accumulator formula: c_e of LANE is C[row][col]. */
static void c_position(unsigned lane, int e, int *row, int *col)
{
    *row = (int)(lane >> 2) + (e >= 2 ? 8 : 0);
    *col = (int)(lane % 4) * 2 + (e & 1);
}

__global__ void tiles(const Job *job)
{
    unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned nwarps = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
    unsigned warp = tid / 32, lane = tid % 32;
    unsigned tile = blockIdx.x * nwarps + warp;
    __shared__ __align__(16) uint16_t sa[MAXWARPS][M * K];
    __shared__ __align__(16) uint16_t sb[MAXWARPS][K * N];
    __shared__ unsigned swapped[MAXWARPS][32];
    bool a_kmajor = job->amode == A_X4T, b_nmajor = job->bmode == B_X2 || job->bmode == B_X4;
    const uint16_t *ga = job->a + (size_t)tile * M * K, *gb = job->b + (size_t)tile * K * N;
    uint16_t *wa = sa[warp % MAXWARPS], *wb = sb[warp % MAXWARPS];
    for (unsigned i = lane; i < M * K; i += 32) {
        unsigned m = i / K, k = i % K;
        wa[a_kmajor ? k * M + m : m * K + k] = ga[i];
    }
    for (unsigned i = lane; i < K * N; i += 32) {
        unsigned k = i / N, n = i % N;
        wb[b_nmajor ? n * K + k : k * N + n] = gb[i];
    }
    __syncthreads();
    if (job->misuse == MISUSE_EXIT && lane == 7)
        return;

    float acc[2][4];
    const float *gc = job->c + (size_t)tile * M * N;
    for (int t = 0; t < 2; t++)
        for (int e = 0; e < 4; e++) {
            int row, col;
            /* PLANT_C: lane 6 loads c1 and c2 from each other's places */
            int place = job->plant == PLANT_C && lane == 6 && (e == 1 || e == 2) ? 3 - e : e;
            c_position(lane, place, &row, &col);
            acc[t][e] = gc[row * N + 8 * t + col];
        }

    /* PLANT_ROWS: lanes 0 and 1 give each other's A row addresses */
    unsigned al = job->plant == PLANT_ROWS && lane < 2 ? lane ^ 1 : lane;
    unsigned m8 = al / 8, j = al % 8;
    for (int s = 0; s < job->steps; s++) {
        int ks = 16 * (s % (K / 16)); /* more steps than K / 16 go round again */
        unsigned a[4], b[2][2], r[4];
        switch (job->amode) {
        case A_X4: /* matrix m: rows 8 (m & 1).., columns 8 (m >> 1).. */
            te_emu_ldmatrix(a, 4, false, &wa[(al % 16) * K + ks + 8 * (al / 16)]);
            break;
        case A_X4T: /* Ak[k][m]; matrix m: k rows 8 (m >> 1).., m columns 8 (m & 1).. */
            te_emu_ldmatrix(a, 4, true, &wa[(ks + 8 * (m8 >> 1) + j) * M + 8 * (m8 & 1)]);
            break;
        case A_X2: /* a0,a1 then a2,a3; lanes 16-31 give no address */
            for (int h = 0; h < 2; h++)
                te_emu_ldmatrix(&a[2 * h], 2, false,
                                al < 16 ? &wa[(al % 16) * K + ks + 8 * h] : nullptr);
            break;
        case A_X1: /* one register each; lanes 8-31 give no address */
            for (int reg = 0; reg < 4; reg++)
                te_emu_ldmatrix(&a[reg], 1, false,
                                al < 8 ? &wa[(8 * (reg & 1) + al) * K + ks + 8 * (reg >> 1)] : nullptr);
            break;
        default:
            abort();
        }
        switch (job->bmode) {
        case B_X2T: /* Bk[k][n]; matrix m: k rows 8m.. */
            for (int t = 0; t < 2; t++)
                te_emu_ldmatrix(b[t], 2, true, lane < 16 ? &wb[(ks + lane) * N + 8 * t] : nullptr);
            break;
        case B_X2: /* Bn[n][k]; matrix m: k columns 8m.. */
            for (int t = 0; t < 2; t++)
                te_emu_ldmatrix(b[t], 2, false,
                                lane < 16 ? &wb[(8 * t + lane % 8) * K + ks + 8 * (lane / 8)] : nullptr);
            break;
        case B_X4T: /* matrix m: k rows 8 (m & 1).., n columns 8 (m >> 1).. */
            te_emu_ldmatrix(r, 4, true, &wb[(ks + 8 * (lane / 8 & 1) + lane % 8) * N + 8 * (lane / 16)]);
            b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
            break;
        case B_X4: /* Bn[n][k]; matrix m: n rows 8 (m >> 1).., k columns 8 (m & 1).. */
            te_emu_ldmatrix(r, 4, false, &wb[(8 * (lane / 16) + lane % 8) * K + ks + 8 * (lane / 8 & 1)]);
            b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
            break;
        default:
            abort();
        }
        if (job->plant == PLANT_HALVES && lane == 5)
            a[0] = a[0] >> 16 | a[0] << 16;
        if (job->plant == PLANT_LANES) { /* lanes 2 and 3 swap b[0][1] */
            swapped[warp % MAXWARPS][lane] = b[0][1];
            __syncthreads();
            if (lane == 2 || lane == 3)
                b[0][1] = swapped[warp % MAXWARPS][lane ^ 1];
            __syncthreads();
        }
        if (job->misuse == MISUSE_SYNC && lane >= 16)
            __syncthreads(); /* never passes: lanes 0-15 wait at the mma */
        if (job->misuse == MISUSE_MIXED && lane == 3)
            te_emu_ldmatrix(r, 2, false, &wb[0]);
        else if (job->misuse == MISUSE_ALIGN)
            te_emu_ldmatrix(r, 1, false, (const unsigned char *)&wb[0] + (lane == 4 ? 2 : 0));
        for (int t = 0; t < 2; t++)
            te_emu_mma_m16n8k16(acc[t], a, b[t], job->bf16);
    }

    float *gd = job->d + (size_t)tile * M * N;
    for (int t = 0; t < 2; t++)
        for (int e = 0; e < 4; e++) {
            int row, col;
            c_position(lane, e, &row, &col);
            gd[row * N + 8 * t + col] = acc[t][e];
        }
}

const te_emu_kernel te_emu_kernels[] = { TE_EMU_KERNEL(tiles) };
const int te_emu_nkernels = 1;

/* --- The host side ---------------------------------------------------------- */

static unsigned long long rng_state = 0x243f6a8885a308d3ull;

static unsigned rng(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng_state >> 33);
}

static uint16_t to_bits(float f, bool bf16)
{
    return bf16 ? __float2bfloat16_rn(f).bits : __float2half_rn(f).bits;
}

static float from_bits(uint16_t bits, bool bf16)
{
    return bf16 ? __bfloat162float(__nv_bfloat16{ bits }) : __half2float(__half{ bits });
}

/* Runs JOB on GRID blocks of BLOCK threads; returns the number of D
 * elements that differ from the host matmul (printing the first), or -1
 * when the launch fails. */
static long run(Job job, unsigned grid, const unsigned block[3])
{
    unsigned ntiles = grid * ((block[0] * block[1] * block[2] + 31) / 32);
    size_t na = (size_t)ntiles * M * K, nb = (size_t)ntiles * K * N, nc = (size_t)ntiles * M * N;
    uint16_t *a = (uint16_t *)malloc(na * sizeof *a), *b = (uint16_t *)malloc(nb * sizeof *b);
    float *c = (float *)malloc(nc * sizeof *c), *d = (float *)malloc(nc * sizeof *d);
    if (!a || !b || !c || !d) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    /* values with a few significant bits, |x| < 4; C in [-8, 8) */
    for (size_t i = 0; i < na; i++)
        a[i] = to_bits(((float)(rng() % 2048) - 1024.0f) / 256.0f, job.bf16);
    for (size_t i = 0; i < nb; i++)
        b[i] = to_bits(((float)(rng() % 2048) - 1024.0f) / 256.0f, job.bf16);
    for (size_t i = 0; i < nc; i++)
        c[i] = ((float)(rng() % 65536) - 32768.0f) / 4096.0f;
    memset(d, 0xff, nc * sizeof *d); /* poisoned: NaN */
    job.a = a, job.b = b, job.c = c, job.d = d;

    texrt_module *module;
    texrt_kernel *kernel;
    const Job *jp = &job;
    void *args[] = { &jp };
    unsigned grid3[3] = { grid, 1, 1 };
    if (texrt_module_load(&module, NULL, 0, "mma_unit", 0) != TEXRT_OK ||
            texrt_kernel_get(module, "tiles", &kernel) != TEXRT_OK ||
            texrt_launch(kernel, grid3, block, 0, args) != TEXRT_OK) {
        fprintf(stderr, "launch: %s\n", texrt_last_error());
        return -1;
    }

    long wrong = 0;
    int steps = job.steps;
    for (unsigned t = 0; t < ntiles; t++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float acc = c[((size_t)t * M + m) * N + n];
                for (int s = 0; s < steps; s++)
                    for (int k = 16 * (s % (K / 16)); k < 16 * (s % (K / 16)) + 16; k++)
                        acc += from_bits(a[((size_t)t * M + m) * K + k], job.bf16) *
                               from_bits(b[((size_t)t * K + k) * N + n], job.bf16);
                float got = d[((size_t)t * M + m) * N + n];
                if (memcmp(&got, &acc, sizeof got) != 0 && wrong++ == 0)
                    printf("tile %u D[%d][%d] = %.9g, the host matmul %.9g\n", t, m, n, got, acc);
            }
    free(a), free(b), free(c), free(d);
    return wrong;
}

static int lookup(const char *name, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    fprintf(stderr, "mma_unit: unknown mode '%s'\n", name);
    exit(2);
}

int main(int argc, char **argv)
{
    unsigned block[3] = { 16, 4, 2 }, grid = 2;
    if (argc > 1 && strcmp(argv[1], "--small") == 0) {
        block[0] = 32, block[1] = 2, block[2] = 1, grid = 1;
        argc--, argv++;
    }
    unsigned ntiles = grid * block[0] * block[1] * block[2] / 32;
    Job job = {};
    job.steps = K / 16;
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (int bf16 = 1; bf16 >= 0; bf16--)
            for (int am = 0; am < A_NMODES; am++)
                for (int bm = 0; bm < B_NMODES; bm++)
                    printf("%s %s %s\n", bf16 ? "bf16" : "f16", a_names[am], b_names[bm]);
        for (int p = 1; p < PLANT_N; p++)
            printf("plant %s\n", plant_names[p]);
        printf("abort block\nabort mixed\nabort exit\nabort align\nabort sync\n");
        return 0;
    }
    if (argc == 4 && (strcmp(argv[1], "bf16") == 0 || strcmp(argv[1], "f16") == 0)) {
        job.bf16 = strcmp(argv[1], "bf16") == 0;
        job.amode = (AMode)lookup(argv[2], a_names, A_NMODES);
        job.bmode = (BMode)lookup(argv[3], b_names, B_NMODES);
        long wrong = run(job, grid, block);
        if (wrong == 0)
            printf("D = C + A B: all %u elements of %u tiles equal the host matmul's\n", M * N * ntiles, ntiles);
        else if (wrong > 0)
            printf("%ld of %u elements differ\n", wrong, M * N * ntiles);
        return wrong != 0;
    }
    if (argc == 3 && strcmp(argv[1], "plant") == 0) {
        job.bf16 = true;
        job.plant = (Plant)lookup(argv[2], plant_names, PLANT_N);
        long wrong = run(job, grid, block);
        printf("the planted error changes %ld of %u elements\n", wrong, M * N * ntiles);
        return wrong <= 0;
    }
    if (argc == 3 && strcmp(argv[1], "abort") == 0) {
        const unsigned block48[3] = { 48, 1, 1 };
        job.bf16 = true;
        if (strcmp(argv[2], "mixed") == 0)
            job.misuse = MISUSE_MIXED;
        else if (strcmp(argv[2], "exit") == 0)
            job.misuse = MISUSE_EXIT;
        else if (strcmp(argv[2], "align") == 0)
            job.misuse = MISUSE_ALIGN;
        else if (strcmp(argv[2], "sync") == 0)
            job.misuse = MISUSE_SYNC;
        else if (strcmp(argv[2], "block") != 0)
            lookup(argv[2], NULL, 0);
        run(job, 1, job.misuse == MISUSE_NONE ? block48 : block);
        printf("the misuse ran to the end\n");
        return 1;
    }
    if (argc == 3 && strcmp(argv[1], "bench") == 0) {
        const unsigned block256[3] = { 256, 1, 1 };
        job.bf16 = true;
        job.amode = A_X4;
        job.bmode = B_X4T;
        job.steps = atoi(argv[2]) / 2; /* 2 mma per step */
        double t0 = texrt_now();
        long wrong = run(job, 1, block256);
        double t1 = texrt_now();
        printf("8 warps, each %d mma and %d ldmatrix: %.3f s, %.1f us per warp-collective call, %ld wrong\n",
               2 * job.steps, 2 * job.steps, t1 - t0, (t1 - t0) * 1e6 / (8 * 4.0 * job.steps), wrong);
        return wrong != 0;
    }
    fprintf(stderr, "usage: mma_unit [--small] --list | f16|bf16 A B | plant WHAT | abort WHAT | bench N\n");
    return 2;
}

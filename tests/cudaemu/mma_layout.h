/* mma_layout.h — which lane of a warp holds which matrix element, for the
 * tensor-core instructions texc's CUDA target emits, written down from the
 * PTX ISA's fragment figures (not from texc's code generator, which this
 * model is the ground truth for):
 *
 *   ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{,.trans}.shared.b16
 *       ISA 9.7.14.5.15 (ldmatrix), Figure "ldmatrix fragment layout for
 *       one 8x8 Matrix with 16-bit elements";
 *   mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32
 *       ISA 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating
 *       point type", the figures for A (.f16/.bf16), B (.f16/.bf16) and
 *       the accumulators C/D (.f32).
 *
 * The figures are drawn from one pattern, the "core matrix" of ldmatrix:
 * an 8x8 matrix of 16-bit elements in which the four lanes 4r..4r+3 hold
 * row r, two consecutive columns each, the lower-numbered column in the
 * register's low half (the ISA lists a fragment's elements "low to high").
 * That is te_core_lane below, a transcription of the figure.  Every
 * fragment of mma.m16n8k16 is a few such 8x8 blocks, one per .b32 register
 * (or per pair of .f32 registers for C/D), placed by the block tables:
 *   A (16x16, m x k, row-major): a0..a3 are the blocks
 *       (rows 0-7, cols 0-7), (rows 8-15, cols 0-7), (rows 0-7, cols 8-15),
 *       (rows 8-15, cols 8-15);
 *   B (16x8, k x n, .col): the figure holds B by columns: b0, b1 are the
 *       blocks k 0-7 and k 8-15 of B transposed (n the core row, k the
 *       core column), so a lane's two halves are consecutive k;
 *   C/D (16x8, m x n, f32): c0,c1 is the block rows 0-7, c2,c3 rows 8-15,
 *       c(2p + h) the element the core pattern puts in half h.
 * ISA formulas (groupID = lane >> 2 ...) are deliberately not used here:
 * tests/mma_layout.c checks these tables against them.
 *
 * Element numbering: A's element e (0..7) is half e & 1 of register e >> 1
 * (the ISA's a0..a7); B's e (0..3) half e & 1 of register e >> 1 (b0..b3);
 * C's e (0..3) the float c_e.  For ldmatrix, (matrix, row, col) name an
 * element where it lies in memory: row is the row whose address a lane
 * supplied, col the 16-bit element within that 16-byte row.
 *
 * Header-only, C and C++.
 */
#ifndef TEXC_MMA_LAYOUT_H
#define TEXC_MMA_LAYOUT_H

/* The core 8x8 matrix (ldmatrix figure): the lane holding element
 * (row, col); it is in the low half when col is even. */
static const unsigned char te_core_lane[8][8] = {
    { 0, 0, 1, 1, 2, 2, 3, 3 },
    { 4, 4, 5, 5, 6, 6, 7, 7 },
    { 8, 8, 9, 9, 10, 10, 11, 11 },
    { 12, 12, 13, 13, 14, 14, 15, 15 },
    { 16, 16, 17, 17, 18, 18, 19, 19 },
    { 20, 20, 21, 21, 22, 22, 23, 23 },
    { 24, 24, 25, 25, 26, 26, 27, 27 },
    { 28, 28, 29, 29, 30, 30, 31, 31 },
};

/* The element of the core matrix in HALF (0 low, 1 high) of LANE's
 * register. */
static inline void te_core_pos(int lane, int half, int *row, int *col)
{
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++)
            if (te_core_lane[r][c] == lane && (c & 1) == half) {
                *row = r;
                *col = c;
                return;
            }
    *row = *col = -1; /* no such lane */
}

/* --- mma.m16n8k16 --------------------------------------------------------- */

/* A: the (row block, col block) of registers a0..a3. */
static const unsigned char te_mma_a_block[4][2] = { { 0, 0 }, { 1, 0 }, { 0, 1 }, { 1, 1 } };
/* B: the k block of registers b0, b1 (n is always 0-7). */
static const unsigned char te_mma_b_block[2] = { 0, 1 };
/* C/D: the row block of the pairs c0,c1 and c2,c3. */
static const unsigned char te_mma_c_block[2] = { 0, 1 };

/* A (16x16): LANE's element E (0..7) is A[*row][*col]. */
static inline void te_mma_a_pos(int lane, int e, int *row, int *col)
{
    int r, c;
    te_core_pos(lane, e & 1, &r, &c);
    *row = 8 * te_mma_a_block[e >> 1][0] + r;
    *col = 8 * te_mma_a_block[e >> 1][1] + c;
}

/* A[row][col] is element *E of lane *LANE. */
static inline void te_mma_a_at(int row, int col, int *lane, int *e)
{
    int reg = 0;
    while (te_mma_a_block[reg][0] != row / 8 || te_mma_a_block[reg][1] != col / 8)
        reg++;
    *lane = te_core_lane[row % 8][col % 8];
    *e = 2 * reg + ((col % 8) & 1);
}

/* B (16x8, k x n): LANE's element E (0..3) is B[*k][*n]. */
static inline void te_mma_b_pos(int lane, int e, int *k, int *n)
{
    int r, c;
    te_core_pos(lane, e & 1, &r, &c); /* of B transposed: r is n, c is k */
    *k = 8 * te_mma_b_block[e >> 1] + c;
    *n = r;
}

/* B[k][n] is element *E of lane *LANE. */
static inline void te_mma_b_at(int k, int n, int *lane, int *e)
{
    int reg = 0;
    while (te_mma_b_block[reg] != k / 8)
        reg++;
    *lane = te_core_lane[n][k % 8];
    *e = 2 * reg + ((k % 8) & 1);
}

/* C/D (16x8, f32): LANE's element E (0..3) is C[*row][*col]. */
static inline void te_mma_c_pos(int lane, int e, int *row, int *col)
{
    int r, c;
    te_core_pos(lane, e & 1, &r, &c);
    *row = 8 * te_mma_c_block[e >> 1] + r;
    *col = c;
}

/* C[row][col] is element *E of lane *LANE. */
static inline void te_mma_c_at(int row, int col, int *lane, int *e)
{
    int pair = 0;
    while (te_mma_c_block[pair] != row / 8)
        pair++;
    *lane = te_core_lane[row % 8][col];
    *e = 2 * pair + (col & 1);
}

/* --- ldmatrix .m8n8 .b16 ---------------------------------------------------- */

/* The ISA's address table: with NMAT matrices (1, 2 or 4), the lanes
 * 0-7 give the addresses of the rows 0-7 of matrix 0, lanes 8-15 those of
 * matrix 1, 16-23 matrix 2, 24-31 matrix 3; the other lanes' addresses are
 * not read.  Returns 0 for an unread lane, else 1 and the row LANE's
 * address is. */
static const signed char te_ldm_addr_matrix[3][4] = {
    /* .x1 */ { 0, -1, -1, -1 },
    /* .x2 */ { 0, 1, -1, -1 },
    /* .x4 */ { 0, 1, 2, 3 },
};

static inline int te_ldm_addr(int lane, int nmat, int *matrix, int *row)
{
    int m = te_ldm_addr_matrix[nmat == 1 ? 0 : nmat == 2 ? 1 : 2][lane / 8];
    if (m < 0)
        return 0;
    *matrix = m;
    *row = lane % 8;
    return 1;
}

/* The lane whose address is row ROW of matrix MATRIX. */
static inline int te_ldm_addr_lane(int matrix, int row)
{
    return 8 * matrix + row;
}

/* Register r[M] of LANE: the element in its HALF (0 low, 1 high) is, in
 * memory, column *COL of row *ROW of matrix M (*MATRIX = M).  Without
 * .trans the register holds the core matrix's element (row, col) as the
 * rows lie in memory; with .trans the matrix is read column-major, so
 * the core element (row, col) is memory row col, column row. */
static inline void te_ldm_pos(int lane, int m, int half, int trans, int *matrix, int *row, int *col)
{
    int r, c;
    te_core_pos(lane, half, &r, &c);
    *matrix = m;
    *row = trans ? c : r;
    *col = trans ? r : c;
}

/* Memory row ROW, column COL of matrix m lands in half *HALF of register
 * r[m] of lane *LANE (the same lane and half for every m). */
static inline void te_ldm_at(int row, int col, int trans, int *lane, int *half)
{
    int r = trans ? col : row, c = trans ? row : col;
    *lane = te_core_lane[r][c];
    *half = c & 1;
}

#endif

/* mma_layout.c — tests/cudaemu/mma_layout.h, the lane layouts of
 * mma.m16n8k16 and ldmatrix that the emulator runs texc's tensor-core
 * kernels with, checked exhaustively:
 *   - each map is a bijection from 32 lanes x fragment elements onto the
 *     matrix (or matrices);
 *   - the inverse maps undo the forward ones, both ways;
 *   - they agree with the ISA's closed formulas, written out below apart
 *     from the header's tables (groupID = lane >> 2, threadID_in_group =
 *     lane % 4, ...), so that a wrong table entry and a wrong formula
 *     cannot hide each other;
 *   - ldmatrix with the usual row addresses yields mma's A and B
 *     fragments (.x4 for A, .x2.trans for k-major B, .x2 for n-major B,
 *     .x4.trans for k-major A), which is how the two are meant to meet.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "tests/cudaemu/mma_layout.h"

/* --- The ISA's formulas (PTX ISA 9.7.14.5.8 and ldmatrix) ---------------- */

/* A, .f16/.bf16: element a_i, i = 0..7 (two per .b32 register). */
static void isa_a(int lane, int i, int *row, int *col)
{
    int group = lane >> 2, tig = lane % 4;
    *row = (i < 2 || (4 <= i && i < 6)) ? group : group + 8;
    *col = tig * 2 + (i & 1) + (i >= 4 ? 8 : 0);
}

/* B, .f16/.bf16: element b_i, i = 0..3; row is k, col is n. */
static void isa_b(int lane, int i, int *row, int *col)
{
    int group = lane >> 2, tig = lane % 4;
    *row = tig * 2 + (i & 1) + (i >= 2 ? 8 : 0);
    *col = group;
}

/* C/D, .f32: element c_i, i = 0..3. */
static void isa_c(int lane, int i, int *row, int *col)
{
    int group = lane >> 2, tig = lane % 4;
    *row = i < 2 ? group : group + 8;
    *col = tig * 2 + (i & 1);
}

/* ldmatrix: the lane holds row lane >> 2, columns (lane % 4) * 2 + i of
 * the 8x8 matrix; .trans loads it column-major, so the element is the
 * memory matrix's transposed one. */
static void isa_ldm(int lane, int i, bool trans, int *row, int *col)
{
    int r = lane >> 2, c = (lane % 4) * 2 + i;
    *row = trans ? c : r;
    *col = trans ? r : c;
}

/* --- One fragment map, checked --------------------------------------------- */

/* A fragment: NLANES x NELEM elements onto a ROWS x COLS matrix. */
typedef struct {
    const char *name;
    int rows, cols, nelem;
    void (*pos)(int lane, int e, int *row, int *col); /* the header's forward map */
    void (*at)(int row, int col, int *lane, int *e);  /* the header's inverse */
    void (*isa)(int lane, int e, int *row, int *col); /* the formula */
} Map;

static void check_map(const Map *m)
{
    static int owner[16][32]; /* lane * 8 + e + 1 holding each element; 0 none */
    memset(owner, 0, sizeof owner);
    char why[200] = "";
    if (m->rows > 16 || m->cols > 32) {
        check(false, "%s: a %dx%d matrix fits the test's table", m->name, m->rows, m->cols);
        return;
    }
    /* bijection: in range, no element twice, all covered (count) */
    for (int lane = 0; lane < 32; lane++)
        for (int e = 0; e < m->nelem; e++) {
            int row, col;
            m->pos(lane, e, &row, &col);
            if (!*why && (row < 0 || row >= m->rows || col < 0 || col >= m->cols))
                snprintf(why, sizeof why, "lane %d element %d: (%d, %d) is outside %dx%d", lane, e,
                         row, col, m->rows, m->cols);
            else if (!*why && owner[row][col])
                snprintf(why, sizeof why, "(%d, %d) held by lane %d element %d and lane %d element %d",
                         row, col, (owner[row][col] - 1) / 8, (owner[row][col] - 1) % 8, lane, e);
            else if (!*why)
                owner[row][col] = lane * 8 + e + 1;
        }
    check(!*why, "%s: 32 lanes x %d elements map one to one onto %dx%d%s%s", m->name, m->nelem,
          m->rows, m->cols, *why ? ": " : "", why);
    /* inverse, both ways */
    *why = 0;
    for (int lane = 0; lane < 32 && !*why; lane++)
        for (int e = 0; e < m->nelem && !*why; e++) {
            int row, col, l2 = -1, e2 = -1;
            m->pos(lane, e, &row, &col);
            m->at(row, col, &l2, &e2);
            if (l2 != lane || e2 != e)
                snprintf(why, sizeof why, "lane %d element %d is (%d, %d), whose inverse is lane %d element %d",
                         lane, e, row, col, l2, e2);
        }
    for (int row = 0; row < m->rows && !*why; row++)
        for (int col = 0; col < m->cols && !*why; col++) {
            int lane, e, r2 = -1, c2 = -1;
            m->at(row, col, &lane, &e);
            m->pos(lane, e, &r2, &c2);
            if (r2 != row || c2 != col)
                snprintf(why, sizeof why, "(%d, %d) is lane %d element %d, which is (%d, %d)", row, col,
                         lane, e, r2, c2);
        }
    check(!*why, "%s: the inverse map undoes the forward one, both ways%s%s", m->name,
          *why ? ": " : "", why);
    /* the ISA's formula */
    *why = 0;
    for (int lane = 0; lane < 32 && !*why; lane++)
        for (int e = 0; e < m->nelem && !*why; e++) {
            int row, col, r2, c2;
            m->pos(lane, e, &row, &col);
            m->isa(lane, e, &r2, &c2);
            if (row != r2 || col != c2)
                snprintf(why, sizeof why, "lane %d element %d: the table says (%d, %d), the ISA (%d, %d)",
                         lane, e, row, col, r2, c2);
        }
    check(!*why, "%s: the map is the ISA's formula%s%s", m->name, *why ? ": " : "", why);
}

/* ldmatrix's fragment maps, as Maps: the matrices side by side (the
 * matrix number times 8 added to the column), with or without .trans. */
static bool ldm_trans;

static void ldm_pos(int lane, int e, int *row, int *col)
{
    int matrix;
    te_ldm_pos(lane, e >> 1, e & 1, ldm_trans, &matrix, row, col);
    *col += 8 * matrix;
}

static void ldm_at(int row, int col, int *lane, int *e)
{
    int half;
    te_ldm_at(row, col % 8, ldm_trans, lane, &half);
    *e = 2 * (col / 8) + half;
}

static void ldm_isa(int lane, int e, int *row, int *col)
{
    isa_ldm(lane, e & 1, ldm_trans, row, col);
    *col += 8 * (e >> 1); /* register r[m] holds matrix m */
}

/* ldmatrix's address map: the lanes that supply an address give each row
 * of each matrix once, the lanes 8m..8m+7 the rows of matrix m in order,
 * and the others none. */
static void check_ldm_addr(int nmat)
{
    int seen[4][8];
    memset(seen, 0, sizeof seen);
    char why[200] = "";
    for (int lane = 0; lane < 32 && !*why; lane++) {
        int matrix = -1, row = -1;
        int used = te_ldm_addr(lane, nmat, &matrix, &row);
        bool isa_used = lane < 8 * nmat; /* .x1: lanes 0-7, .x2: 0-15, .x4: all */
        if (used != isa_used)
            snprintf(why, sizeof why, "lane %d's address is %sread", lane, used ? "" : "not ");
        else if (used && (matrix != lane / 8 || row != lane % 8))
            snprintf(why, sizeof why, "lane %d gives row %d of matrix %d", lane, row, matrix);
        else if (used && seen[matrix][row]++)
            snprintf(why, sizeof why, "row %d of matrix %d given twice", row, matrix);
        else if (used && te_ldm_addr_lane(matrix, row) != lane)
            snprintf(why, sizeof why, "te_ldm_addr_lane(%d, %d) is %d, not %d", matrix, row,
                     te_ldm_addr_lane(matrix, row), lane);
    }
    for (int m = 0; m < nmat && !*why; m++)
        for (int row = 0; row < 8 && !*why; row++)
            if (!seen[m][row])
                snprintf(why, sizeof why, "no lane gives row %d of matrix %d", row, m);
    check(!*why, "ldmatrix .x%d: lanes 0-%d give the rows' addresses, 8 per matrix%s%s", nmat,
          8 * nmat - 1, *why ? ": " : "", why);
}

/* --- ldmatrix feeding mma --------------------------------------------------- */

/* The usual addresses: A (16x16, row-major) by .x4, lane l giving
 * &A[l % 16][8 * (l / 16)], i.e. matrix m = l / 8 the block (rows
 * 8 (m & 1).., cols 8 (m >> 1)..); B stored k-major (Bk[16][8]) by
 * .x2.trans, lane l < 16 giving &Bk[l][0]; B stored n-major (Bn[8][16]) by
 * .x2, lane l < 16 giving &Bn[l % 8][8 * (l / 8)]; A stored k-major
 * (Ak[16][16], Ak[k][m]) by .x4.trans, matrix m the rows k 8 (m >> 1)..,
 * columns 8 (m & 1)..  Each must put in lane l's register r the elements
 * mma wants in a_r (b_r). */
static void check_feeding(void)
{
    char why[200] = "";
    for (int lane = 0; lane < 32 && !*why; lane++)
        for (int e = 0; e < 8 && !*why; e++) {
            int reg = e >> 1, half = e & 1, matrix, row, col, want_r, want_c;
            te_ldm_pos(lane, reg, half, 0, &matrix, &row, &col);
            /* the memory element: row `row` of matrix `matrix` is A row
             * 8 (matrix & 1) + row, from column 8 (matrix >> 1) */
            int ar = 8 * (matrix & 1) + row, ac = 8 * (matrix >> 1) + col;
            isa_a(lane, e, &want_r, &want_c);
            if (ar != want_r || ac != want_c)
                snprintf(why, sizeof why, "lane %d a%d gets A[%d][%d], mma wants A[%d][%d]", lane, e,
                         ar, ac, want_r, want_c);
        }
    check(!*why, "ldmatrix .x4 with rows A[l %% 16] + 8 (l / 16) gives mma's A fragment%s%s",
          *why ? ": " : "", why);
    *why = 0;
    for (int lane = 0; lane < 32 && !*why; lane++)
        for (int e = 0; e < 8 && !*why; e++) {
            int reg = e >> 1, half = e & 1, matrix, row, col, want_r, want_c;
            te_ldm_pos(lane, reg, half, 1, &matrix, &row, &col);
            /* matrix m: Ak rows 8 (m >> 1).., columns 8 (m & 1).. */
            int k = 8 * (matrix >> 1) + row, mrow = 8 * (matrix & 1) + col;
            isa_a(lane, e, &want_r, &want_c);
            if (mrow != want_r || k != want_c)
                snprintf(why, sizeof why, "lane %d a%d gets A[%d][%d], mma wants A[%d][%d]", lane, e,
                         mrow, k, want_r, want_c);
        }
    check(!*why, "ldmatrix .x4.trans of A stored k-major gives mma's A fragment%s%s",
          *why ? ": " : "", why);
    for (int trans = 1; trans >= 0; trans--) {
        *why = 0;
        for (int lane = 0; lane < 32 && !*why; lane++)
            for (int e = 0; e < 4 && !*why; e++) {
                int reg = e >> 1, half = e & 1, matrix, row, col, want_k, want_n, k, n;
                te_ldm_pos(lane, reg, half, trans, &matrix, &row, &col);
                if (trans) { /* Bk[k][n]: matrix m is rows k = 8m.. */
                    k = 8 * matrix + row;
                    n = col;
                } else { /* Bn[n][k]: matrix m is columns k = 8m.. */
                    n = row;
                    k = 8 * matrix + col;
                }
                isa_b(lane, e, &want_k, &want_n);
                if (k != want_k || n != want_n)
                    snprintf(why, sizeof why, "lane %d b%d gets B[%d][%d], mma wants B[%d][%d]", lane,
                             e, k, n, want_k, want_n);
            }
        check(!*why, "ldmatrix .x2%s of B stored %s gives mma's B fragment%s%s",
              trans ? ".trans" : "", trans ? "k-major [16][8]" : "n-major [8][16]", *why ? ": " : "",
              why);
    }
}

int main(void)
{
    const Map maps[] = {
        { "mma.m16n8k16 A (.f16/.bf16)", 16, 16, 8, te_mma_a_pos, te_mma_a_at, isa_a },
        { "mma.m16n8k16 B (.f16/.bf16)", 16, 8, 4, te_mma_b_pos, te_mma_b_at, isa_b },
        { "mma.m16n8k16 C/D (.f32)", 16, 8, 4, te_mma_c_pos, te_mma_c_at, isa_c },
    };
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        check_map(&maps[i]);
    for (int nmat = 1; nmat <= 4; nmat *= 2) {
        check_ldm_addr(nmat);
        for (int trans = 0; trans < 2; trans++) {
            char name[64];
            snprintf(name, sizeof name, "ldmatrix .x%d%s registers", nmat, trans ? ".trans" : "");
            ldm_trans = trans;
            Map m = { name, 8, 8 * nmat, 2 * nmat, ldm_pos, ldm_at, ldm_isa };
            check_map(&m);
        }
    }
    check_feeding();
    return tap_done();
}

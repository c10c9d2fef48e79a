/* model.c — the cost model that ranks candidates before they are built.
 *
 * It predicts log(seconds) from a point's features (tune_space_features:
 * log2 of each size, one-hot variants) by ridge regression on the
 * standardized features, or on the features, their squares and their
 * pairwise products; the form and the ridge penalty are chosen by 4-fold
 * cross-validation on the measurements so far, each time the model is
 * fitted.
 *
 * Why not XGBoost (the anchor's choice, libxgboost-dev in Debian)?  The
 * model sees tens to a few hundred measurements of a space with a dozen
 * parameters; it only has to rank the next batch better than chance, and
 * it is refitted after every batch.  A quadratic ridge model does that
 * with a Cholesky solve of a few hundred unknowns (microseconds), no
 * dependency and no training parameters to get wrong; the pairwise
 * products capture the interactions that matter here (rows x columns of
 * a register tile, a split with its unroll).  Its adequacy is measured,
 * not assumed: every guided candidate's prediction is kept, and tune.c
 * prints (-v, and at the end) Spearman's rank correlation between what
 * the model predicted before the build and what was measured; and
 * bench/model_compare.c (make model-compare) cross-validates it against
 * XGBoost on a tuning log.  See the README for the numbers: on a
 * 256-point log of matmul_gelu, XGBoost did not rank measurably better.
 *
 * Failed candidates do not enter the model (tune.c trains on valid
 * measurements and on timeouts, which count at their time limit).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/tuner.h"

enum {
    QUAD_MAX = 20,  /* more features than this: a linear model (the solve
                       grows with the cube of the expanded features) */
    FEATURE_MAX = 512,
    EXPANDED_MAX = 1 + QUAD_MAX + QUAD_MAX * (QUAD_MAX + 1) / 2 > 1 + FEATURE_MAX
                       ? 1 + QUAD_MAX + QUAD_MAX * (QUAD_MAX + 1) / 2
                       : 1 + FEATURE_MAX,
};

struct CostModel {
    int nf;        /* raw features */
    int nq;        /* expanded: 1, x_i, x_i x_j (i <= j) */
    bool quadratic; /* the products too (up to QUAD_MAX features) */
    double *mean;  /* per raw feature */
    double *scale; /* 1 / standard deviation (0 for a constant feature) */
    double *w;     /* nq weights */
};

static void expand(const CostModel *m, const double *x, double *q)
{
    double z[FEATURE_MAX];
    int nf = m->nf;
    for (int i = 0; i < nf; i++)
        z[i] = (x[i] - m->mean[i]) * m->scale[i];
    int k = 0;
    q[k++] = 1;
    for (int i = 0; i < nf; i++)
        q[k++] = z[i];
    for (int i = 0; i < nf && m->quadratic; i++)
        for (int j = i; j < nf; j++)
            q[k++] = z[i] * z[j];
}

/* Solves (A + lambda I') w = b in place by Cholesky (A symmetric positive
 * semi-definite, N x N; the intercept, row 0, is not penalized beyond a
 * tiny jitter).  Returns false if the factorization fails. */
static bool ridge_solve(double *A, double *b, int n, double lambda, double *w)
{
    for (int i = 0; i < n; i++)
        A[i * n + i] += i == 0 ? 1e-9 : lambda;
    for (int j = 0; j < n; j++) {
        double d = A[j * n + j];
        for (int k = 0; k < j; k++)
            d -= A[j * n + k] * A[j * n + k];
        if (!(d > 0))
            return false;
        d = sqrt(d);
        A[j * n + j] = d;
        for (int i = j + 1; i < n; i++) {
            double s = A[i * n + j];
            for (int k = 0; k < j; k++)
                s -= A[i * n + k] * A[j * n + k];
            A[i * n + j] = s / d;
        }
    }
    for (int i = 0; i < n; i++) { /* L y = b */
        double s = b[i];
        for (int k = 0; k < i; k++)
            s -= A[i * n + k] * w[k];
        w[i] = s / A[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) { /* L^T w = y */
        double s = w[i];
        for (int k = i + 1; k < n; k++)
            s -= A[k * n + i] * w[k];
        w[i] = s / A[i * n + i];
    }
    return true;
}

/* Fits weights on the rows of Q (expanded, nq wide) whose FOLD differs
 * from SKIP (-1: all rows). */
static bool fit_rows(const double *Q, const double *y, const int *fold, int n, int nq, int skip,
                     double lambda, double *w)
{
    double *A = calloc((size_t)nq * (size_t)nq, sizeof *A);
    double *b = calloc((size_t)nq, sizeof *b);
    if (!A || !b) {
        free(A);
        free(b);
        return false;
    }
    for (int r = 0; r < n; r++) {
        if (fold[r] == skip)
            continue;
        const double *q = Q + (size_t)r * nq;
        for (int i = 0; i < nq; i++) {
            if (q[i] == 0)
                continue;
            b[i] += q[i] * y[r];
            for (int j = 0; j <= i; j++)
                A[i * nq + j] += q[i] * q[j];
        }
    }
    for (int i = 0; i < nq; i++)
        for (int j = 0; j < i; j++)
            A[j * nq + i] = A[i * nq + j];
    bool ok = ridge_solve(A, b, nq, lambda, w);
    free(A);
    free(b);
    return ok;
}

/* The cross-validated squared error of the model form M (expanded into
 * Q, NQ wide) with penalty LAMBDA; INFINITY if a fit fails. */
static double cv_error(const double *Q, const double *y, const int *fold, int folds, int n,
                       int nq, double lambda, double *w)
{
    double err = 0;
    for (int k = 0; k < folds; k++) {
        if (!fit_rows(Q, y, fold, n, nq, k, lambda, w))
            return INFINITY;
        for (int r = 0; r < n; r++) {
            if (fold[r] != k)
                continue;
            double p = 0;
            for (int i = 0; i < nq; i++)
                p += w[i] * Q[(size_t)r * nq + i];
            err += (p - y[r]) * (p - y[r]);
        }
    }
    return err;
}

CostModel *tune_model_fit(Arena *a, const double *x, const double *y, int n, int nfeatures)
{
    if (n < 4 || nfeatures > FEATURE_MAX)
        return NULL;
    CostModel *m = arena_alloc(a, sizeof *m);
    m->nf = nfeatures;
    m->mean = arena_alloc(a, sizeof *m->mean * (size_t)nfeatures);
    m->scale = arena_alloc(a, sizeof *m->scale * (size_t)nfeatures);
    for (int f = 0; f < nfeatures; f++) {
        double s = 0, s2 = 0;
        for (int r = 0; r < n; r++)
            s += x[(size_t)r * nfeatures + f];
        double mean = s / n;
        for (int r = 0; r < n; r++) {
            double d = x[(size_t)r * nfeatures + f] - mean;
            s2 += d * d;
        }
        double sd = sqrt(s2 / n);
        m->mean[f] = mean;
        m->scale[f] = sd > 1e-12 ? 1 / sd : 0;
    }
    int nq_max = 1 + nfeatures + (nfeatures <= QUAD_MAX ? nfeatures * (nfeatures + 1) / 2 : 0);
    double *Q = malloc(sizeof *Q * (size_t)n * (size_t)nq_max);
    int *fold = malloc(sizeof *fold * (size_t)n);
    double *w = malloc(sizeof *w * (size_t)nq_max);
    if (!Q || !fold || !w) {
        free(Q);
        free(fold);
        free(w);
        return NULL;
    }
    int folds = n < 4 ? n : 4;
    for (int r = 0; r < n; r++)
        fold[r] = r % folds;
    /* the form (linear, or with the products) and the penalty with the
       least cross-validated squared error: with few or noisy measurements
       the products overfit, with many they pay */
    static const double lambdas[] = { 1e-2, 1e-1, 1, 10 };
    double best_err = INFINITY, best_lambda = 10;
    bool best_quadratic = false;
    for (int form = 0; form < 2; form++) {
        m->quadratic = form == 1;
        if (m->quadratic && nfeatures > QUAD_MAX)
            break;
        m->nq = 1 + nfeatures + (m->quadratic ? nfeatures * (nfeatures + 1) / 2 : 0);
        for (int r = 0; r < n; r++)
            expand(m, x + (size_t)r * nfeatures, Q + (size_t)r * m->nq);
        for (size_t li = 0; li < sizeof lambdas / sizeof lambdas[0]; li++) {
            double err = cv_error(Q, y, fold, folds, n, m->nq, lambdas[li], w);
            if (err < best_err) {
                best_err = err;
                best_lambda = lambdas[li];
                best_quadratic = m->quadratic;
            }
        }
    }
    m->quadratic = best_quadratic;
    m->nq = 1 + nfeatures + (m->quadratic ? nfeatures * (nfeatures + 1) / 2 : 0);
    m->w = arena_alloc(a, sizeof *m->w * (size_t)m->nq);
    for (int r = 0; r < n; r++)
        expand(m, x + (size_t)r * nfeatures, Q + (size_t)r * m->nq);
    bool ok = fit_rows(Q, y, fold, n, m->nq, -1, best_lambda, m->w);
    free(Q);
    free(fold);
    free(w);
    return ok ? m : NULL;
}

double tune_model_predict(const CostModel *m, const double *x)
{
    double q[EXPANDED_MAX];
    expand(m, x, q);
    double p = 0;
    for (int i = 0; i < m->nq; i++)
        p += m->w[i] * q[i];
    return p;
}

/* Ranks of V (1-based, ties averaged). */
static void ranks(const double *v, int n, double *out)
{
    for (int i = 0; i < n; i++) {
        int less = 0, equal = 0;
        for (int j = 0; j < n; j++) {
            less += v[j] < v[i];
            equal += v[j] == v[i];
        }
        out[i] = less + (equal + 1) / 2.0;
    }
}

double tune_rank_correlation(const double *a, const double *b, int n)
{
    if (n < 3)
        return NAN;
    double *ra = malloc(sizeof *ra * (size_t)n), *rb = malloc(sizeof *rb * (size_t)n);
    if (!ra || !rb) {
        free(ra);
        free(rb);
        return NAN;
    }
    ranks(a, n, ra);
    ranks(b, n, rb);
    double ma = 0, mb = 0;
    for (int i = 0; i < n; i++) {
        ma += ra[i];
        mb += rb[i];
    }
    ma /= n;
    mb /= n;
    double sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    free(ra);
    free(rb);
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : NAN;
}

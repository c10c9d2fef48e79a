/* model_compare.c — the tuner's cost model (tuner/model.c: ridge
 * regression on quadratic features) against XGBoost, on a real tuning log.
 *
 *   bench/model_compare LOG.jsonl [FOLDS]
 *
 * The records used: those with status "ok" and a point of the space (not
 * the default schedule) of the log's most frequent workload and space.
 * Each record's features are its "features" array (what the tuner's model
 * saw, tune_space_features); a log written before records carried them
 * gives its configuration's values as log2(1 + v), which is what
 * tune_space_features computes for a knob space.  Both models predict
 * log(seconds), as the tuner's does.
 *
 * Two experiments, with a fixed shuffle (seed 1):
 *   k-fold       FOLDS-fold cross-validation (default 5): each model fitted
 *                on the other folds ranks the held-out fold.  Reported:
 *                Spearman's rank correlation of predicted and measured
 *                times over all held-out predictions, and the mean over
 *                folds of the top-1 and top-5 regret: the measured time of
 *                the fold's predicted fastest (the fastest of its five
 *                predicted fastest) over the fold's true fastest, minus 1.
 *   few-shot     what the guided search faces: fitted on N random
 *                records (N = 16, 32, 64), the model ranks all the others;
 *                the same metrics, averaged over 20 draws.
 *
 * XGBoost (Debian's libxgboost-dev, its C API) is compiled in when the
 * make target finds <xgboost/c_api.h> (-DHAVE_XGBOOST); without it only
 * the ridge model is measured.  Two XGBoost settings: the library's
 * defaults (eta 0.3, max_depth 6, 100 rounds) and a smaller, slower one
 * suited to a few hundred records (eta 0.1, max_depth 4, 300 rounds,
 * min_child_weight 1, subsample 1).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tuner/tuner.h"

#ifdef HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

typedef struct Data {
    int n, nf;
    double *x; /* n x nf */
    double *y; /* log(seconds) */
} Data;

/* A model: fitted on (X, Y) of N rows, predicts M rows of XT into OUT. */
typedef bool (*FitPredict)(const double *x, const double *y, int n, int nf, const double *xt,
                           int m, double *out, const void *setting);

static bool ridge(const double *x, const double *y, int n, int nf, const double *xt, int m,
                  double *out, const void *setting)
{
    (void)setting;
    Arena a = { 0 };
    CostModel *model = tune_model_fit(&a, x, y, n, nf);
    for (int i = 0; model && i < m; i++)
        out[i] = tune_model_predict(model, xt + (size_t)i * nf);
    arena_free(&a);
    return model != NULL;
}

#ifdef HAVE_XGBOOST
typedef struct XgbSetting {
    const char *eta, *depth;
    int rounds;
} XgbSetting;

static bool xgboost(const double *x, const double *y, int n, int nf, const double *xt, int m,
                    double *out, const void *setting)
{
    const XgbSetting *s = setting;
    float *fx = malloc(sizeof *fx * (size_t)n * nf), *fy = malloc(sizeof *fy * (size_t)n);
    float *ft = malloc(sizeof *ft * (size_t)m * nf);
    for (size_t i = 0; i < (size_t)n * nf; i++)
        fx[i] = (float)x[i];
    for (int i = 0; i < n; i++)
        fy[i] = (float)y[i];
    for (size_t i = 0; i < (size_t)m * nf; i++)
        ft[i] = (float)xt[i];
    DMatrixHandle train = NULL, test = NULL;
    BoosterHandle b = NULL;
    bool ok = XGDMatrixCreateFromMat(fx, (bst_ulong)n, (bst_ulong)nf, NAN, &train) == 0 &&
              XGDMatrixSetFloatInfo(train, "label", fy, (bst_ulong)n) == 0 &&
              XGDMatrixCreateFromMat(ft, (bst_ulong)m, (bst_ulong)nf, NAN, &test) == 0 &&
              XGBoosterCreate(&train, 1, &b) == 0 &&
              XGBoosterSetParam(b, "objective", "reg:squarederror") == 0 &&
              XGBoosterSetParam(b, "eta", s->eta) == 0 &&
              XGBoosterSetParam(b, "max_depth", s->depth) == 0 &&
              XGBoosterSetParam(b, "nthread", "1") == 0 &&
              XGBoosterSetParam(b, "seed", "1") == 0 &&
              XGBoosterSetParam(b, "verbosity", "0") == 0;
    for (int it = 0; ok && it < s->rounds; it++)
        ok = XGBoosterUpdateOneIter(b, it, train) == 0;
    bst_ulong len = 0;
    const float *pred = NULL;
    ok = ok && XGBoosterPredict(b, test, 0, 0, 0, &len, &pred) == 0 && len == (bst_ulong)m;
    for (int i = 0; ok && i < m; i++)
        out[i] = pred[i];
    if (!ok)
        fprintf(stderr, "model_compare: xgboost: %s\n", XGBGetLastError());
    if (b)
        XGBoosterFree(b);
    if (train)
        XGDMatrixFree(train);
    if (test)
        XGDMatrixFree(test);
    free(fx);
    free(fy);
    free(ft);
    return ok;
}
#endif

/* ------------------------------------------------------------------ */
/* Reading the log.                                                    */

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static bool load(const char *path, Data *d)
{
    json_t **recs = NULL;
    int invalid = 0;
    int n = tune_log_read(path, NULL, &recs, &invalid, false);
    if (n < 0)
        return false;
    /* the most frequent workload and space among the valid points */
    json_t *counts = json_object();
    const char *top = NULL;
    int topn = 0;
    for (int i = 0; i < n; i++) {
        json_t *r = recs[i];
        if (strcmp(str(r, "status"), "ok") != 0 ||
            json_is_true(json_object_get(json_object_get(r, "config"), "default")))
            continue;
        char key[128];
        snprintf(key, sizeof key, "%s/%s", str(r, "workload"), str(r, "space"));
        json_int_t c = json_integer_value(json_object_get(counts, key)) + 1;
        json_object_set_new(counts, key, json_integer(c));
        if (c > topn) {
            topn = (int)c;
            top = json_object_iter_key(json_object_iter_at(counts, key));
        }
    }
    d->n = 0;
    d->nf = 0;
    d->x = NULL;
    d->y = malloc(sizeof *d->y * (size_t)(topn + 1));
    for (int i = 0; top && i < n; i++) {
        json_t *r = recs[i], *config = json_object_get(r, "config");
        char key[128];
        snprintf(key, sizeof key, "%s/%s", str(r, "workload"), str(r, "space"));
        double t = json_number_value(json_object_get(r, "time_s"));
        if (strcmp(str(r, "status"), "ok") != 0 || json_is_true(json_object_get(config, "default")) ||
            strcmp(key, top) != 0 || !(t > 0))
            continue;
        json_t *features = json_object_get(r, "features");
        int nf = json_is_array(features) ? (int)json_array_size(features)
                                         : (int)json_object_size(config);
        if (d->nf == 0) {
            d->nf = nf;
            d->x = malloc(sizeof *d->x * (size_t)(topn + 1) * nf);
        }
        if (nf != d->nf)
            continue;
        double *row = d->x + (size_t)d->n * nf;
        if (json_is_array(features)) {
            for (int k = 0; k < nf; k++)
                row[k] = json_number_value(json_array_get(features, (size_t)k));
        } else {
            /* a knob space's features (tune_space_features), in the
               configuration's order, which is the space's */
            int k = 0;
            const char *name;
            json_t *v;
            json_object_foreach(config, name, v) {
                double value = (double)json_integer_value(v);
                row[k++] = value >= 0 ? log2(1 + value) : -log2(1 - value);
            }
        }
        d->y[d->n++] = log(t);
    }
    printf("%s: %d records, %d invalid lines; %d valid points of workload/space %s, %d features\n",
           path, n, invalid, d->n, top ? top : "(none)", d->nf);
    json_decref(counts);
    for (int i = 0; i < n; i++)
        json_decref(recs[i]);
    free(recs);
    return d->n >= 10;
}

/* ------------------------------------------------------------------ */
/* Metrics.                                                            */

static uint64_t rng_state = 1;

static void shuffle(int *idx, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(tune_rand(&rng_state) % (uint64_t)(i + 1));
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

/* The regret of choosing, among M points with predictions PRED and
 * measured log-times Y, the fastest measured of the K best predicted. */
static double regret(const double *pred, const double *y, int m, int k)
{
    double best = INFINITY, chosen = INFINITY;
    bool *used = calloc((size_t)m, sizeof *used);
    for (int i = 0; i < m; i++)
        if (y[i] < best)
            best = y[i];
    for (int pick = 0; pick < k && pick < m; pick++) {
        int arg = -1;
        for (int i = 0; i < m; i++)
            if (!used[i] && (arg < 0 || pred[i] < pred[arg]))
                arg = i;
        used[arg] = true;
        if (y[arg] < chosen)
            chosen = y[arg];
    }
    free(used);
    return exp(chosen - best) - 1;
}

typedef struct Score {
    double spearman, top1, top5;
} Score;

/* Fits on the rows TRAIN (NT), predicts the rows TEST (M): the scores. */
static bool evaluate(const Data *d, FitPredict model, const void *setting, const int *train,
                     int nt, const int *test, int m, double *pred_out, double *meas_out,
                     Score *s)
{
    int nf = d->nf;
    double *x = malloc(sizeof *x * (size_t)nt * nf), *y = malloc(sizeof *y * (size_t)nt);
    double *xt = malloc(sizeof *xt * (size_t)m * nf), *yt = malloc(sizeof *yt * (size_t)m);
    double *pred = malloc(sizeof *pred * (size_t)m);
    for (int i = 0; i < nt; i++) {
        memcpy(x + (size_t)i * nf, d->x + (size_t)train[i] * nf, sizeof *x * (size_t)nf);
        y[i] = d->y[train[i]];
    }
    for (int i = 0; i < m; i++) {
        memcpy(xt + (size_t)i * nf, d->x + (size_t)test[i] * nf, sizeof *x * (size_t)nf);
        yt[i] = d->y[test[i]];
    }
    bool ok = model(x, y, nt, nf, xt, m, pred, setting);
    if (ok) {
        s->spearman = tune_rank_correlation(pred, yt, m);
        s->top1 = regret(pred, yt, m, 1);
        s->top5 = regret(pred, yt, m, 5);
        if (pred_out)
            memcpy(pred_out, pred, sizeof *pred * (size_t)m);
        if (meas_out)
            memcpy(meas_out, yt, sizeof *yt * (size_t)m);
    }
    free(x);
    free(y);
    free(xt);
    free(yt);
    free(pred);
    return ok;
}

static void kfold(const Data *d, int folds, const char *name, FitPredict model,
                  const void *setting)
{
    int n = d->n;
    int *idx = malloc(sizeof *idx * (size_t)n), *train = malloc(sizeof *train * (size_t)n);
    int *test = malloc(sizeof *test * (size_t)n);
    double *pred = malloc(sizeof *pred * (size_t)n), *meas = malloc(sizeof *meas * (size_t)n);
    for (int i = 0; i < n; i++)
        idx[i] = i;
    rng_state = 1;
    shuffle(idx, n);
    int np = 0;
    double top1 = 0, top5 = 0;
    int nfolds = 0;
    for (int f = 0; f < folds; f++) {
        int nt = 0, m = 0;
        for (int i = 0; i < n; i++) {
            if (i % folds == f)
                test[m++] = idx[i];
            else
                train[nt++] = idx[i];
        }
        Score s;
        if (!evaluate(d, model, setting, train, nt, test, m, pred + np, meas + np, &s))
            continue;
        np += m;
        top1 += s.top1;
        top5 += s.top5;
        nfolds++;
    }
    if (nfolds)
        printf("  %-28s %5d-fold   Spearman %5.3f   top-1 regret %6.2f%%   top-5 regret %6.2f%%\n",
               name, folds, tune_rank_correlation(pred, meas, np), 100 * top1 / nfolds,
               100 * top5 / nfolds);
    free(idx);
    free(train);
    free(test);
    free(pred);
    free(meas);
}

static void few_shot(const Data *d, int ntrain, const char *name, FitPredict model,
                     const void *setting)
{
    int n = d->n;
    if (ntrain + 10 > n)
        return;
    int *idx = malloc(sizeof *idx * (size_t)n);
    double sp = 0, top1 = 0, top5 = 0;
    int draws = 0;
    rng_state = 2;
    for (int r = 0; r < 20; r++) {
        for (int i = 0; i < n; i++)
            idx[i] = i;
        shuffle(idx, n);
        Score s;
        if (!evaluate(d, model, setting, idx, ntrain, idx + ntrain, n - ntrain, NULL, NULL, &s))
            continue;
        sp += s.spearman;
        top1 += s.top1;
        top5 += s.top5;
        draws++;
    }
    if (draws)
        printf("  %-28s %3d trained   Spearman %5.3f   top-1 regret %6.2f%%   top-5 regret %6.2f%%\n",
               name, ntrain, sp / draws, 100 * top1 / draws, 100 * top5 / draws);
    free(idx);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s LOG.jsonl [FOLDS]\n", argv[0]);
        return 2;
    }
    int folds = argc == 3 ? atoi(argv[2]) : 5;
    if (folds < 2) {
        fprintf(stderr, "model_compare: FOLDS must be at least 2\n");
        return 2;
    }
    Data d;
    if (!load(argv[1], &d)) {
        fprintf(stderr, "model_compare: %s: fewer than 10 valid measurements of one workload\n",
                argv[1]);
        return 1;
    }
    struct {
        const char *name;
        FitPredict fn;
        const void *setting;
    } models[4];
    int nmodels = 0;
    models[nmodels++] = (typeof(models[0])){ "ridge (tuner/model.c)", ridge, NULL };
#ifdef HAVE_XGBOOST
    static const XgbSetting xdef = { "0.3", "6", 100 }, xsmall = { "0.1", "4", 300 };
    models[nmodels++] = (typeof(models[0])){ "xgboost eta .3 depth 6 x100", xgboost, &xdef };
    models[nmodels++] = (typeof(models[0])){ "xgboost eta .1 depth 4 x300", xgboost, &xsmall };
#else
    printf("(built without XGBoost: <xgboost/c_api.h> was not found; only the ridge model)\n");
#endif
    printf("cross-validation:\n");
    for (int i = 0; i < nmodels; i++)
        kfold(&d, folds, models[i].name, models[i].fn, models[i].setting);
    static const int shots[] = { 16, 32, 64 };
    printf("fitted on a few random records, ranking the rest (20 draws):\n");
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < nmodels; i++)
            few_shot(&d, shots[k], models[i].name, models[i].fn, models[i].setting);
    free(d.x);
    free(d.y);
    return 0;
}

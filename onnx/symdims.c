/* symdims.c — symbolic input dims kept as run-time dims (-D NAME=LO..HI).
 *
 * The converters (ops.c) compute with sizes as numbers: they fold shape
 * arithmetic (Shape, Gather, Concat, Reshape's -1), compare dims to
 * broadcast, and write extents and index arithmetic as literals.  Rather
 * than teach each of them symbolic sizes, ox_import imports the model
 * several times, each run-time dim bound to a different *probe* (a prime
 * above 1000 that no static size of the model has), and compares the
 * programs token by token:
 *
 *   - a number that is the same in every import is static;
 *   - one that differs is a function of the probes.  With k run-time dims
 *     the 2^k imports at the corners (each dim at one of two probes)
 *     determine a multilinear polynomial in the dims, which must have
 *     integer coefficients, and one more import, every dim at a third
 *     probe, checks it;
 *   - where such a number is a size (an extent, after `in` or `..`, or a
 *     dim in a real input's declaration) the program gets the polynomial
 *     over the dims' names (`batch * 192`), which te's size expressions
 *     take; anywhere else it is the size used as a value (a mean's
 *     divisor, an index's stride, a weight's shape), which a run-time dim
 *     cannot be in te: an error naming the node and the -D that binds it;
 *   - everything else must be the same text, and the weights the same:
 *     a converter that took another path at another size is an error.
 *
 * The base import (every dim at its first probe) gives the weights and
 * the names.  What probing cannot see is a decision the model takes on a
 * size that comes out the same at every probe (a folded `size > 4`):
 * probes are large, so such a decision is the one for large sizes.  One
 * more thing is the converters' business: a flat view that merges a
 * run-time dim with the dims before it divides by it, so ops.c asks
 * ox_is_probe where it has another form (cv_matmul keeps such rows
 * batched; held_rows keeps a linear layer's flat rows in their dims).
 */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"

#define MAX_RT_DIMS 3 /* 2^3 + 1 imports */
#define MAX_RUNS ((1 << MAX_RT_DIMS) + 1)

typedef struct Probing {
    Arena *a;
    const OxModel *m;
    int k;                             /* run-time dims */
    const OxDefine *range[MAX_RT_DIMS]; /* their defines */
    const char *param[MAX_RT_DIMS];    /* their dim_params */
    const char *te[MAX_RT_DIMS];       /* their names in the program */
    int64_t probe[MAX_RT_DIMS][3];     /* corner low, corner high, the check */
    int nruns;
    OxImport run[MAX_RUNS];            /* run R < 2^k: dim D at probe[D][R >> D & 1] */
    FILE *out;                         /* the merged program */
    char *text;
    size_t len;
} Probing;

static int64_t probe_at(const Probing *p, int run, int d)
{
    return run == p->nruns - 1 ? p->probe[d][2] : p->probe[d][run >> d & 1];
}

static bool is_prime(int64_t n)
{
    for (int64_t f = 2; f * f <= n; f++)
        if (n % f == 0)
            return false;
    return n > 1;
}

/* Is N a size the model has without the run-time dims (a static input
 * dim, an initializer's dim, a small integer initializer's value)? */
static bool static_size(const OxModel *m, int64_t n)
{
    for (int i = 0; i < m->ninputs; i++)
        for (int d = 0; d < m->inputs[i].rank; d++)
            if (m->inputs[i].dims[d] == n)
                return true;
    for (int i = 0; i < m->ninits; i++) {
        const OxTensor *t = &m->inits[i];
        for (int d = 0; d < t->rank; d++)
            if (t->dims[d] == n)
                return true;
        if ((t->dtype == OX_INT64 || t->dtype == OX_INT32) && t->nelems <= 64)
            for (int64_t e = 0; e < t->nelems; e++)
                if (ox_tensor_value(t, e) == (double)n)
                    return true;
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* The comparison. */

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The length of the number at S: digits, a fraction, an exponent. */
static size_t number_len(const char *s)
{
    size_t n = 0;
    while (digit(s[n]))
        n++;
    if (s[n] == '.' && s[n + 1] != '.') {
        n++;
        while (digit(s[n]))
            n++;
    }
    if ((s[n] == 'e' || s[n] == 'E') &&
        (digit(s[n + 1]) || ((s[n + 1] == '+' || s[n + 1] == '-') && digit(s[n + 2])))) {
        n += 2;
        while (digit(s[n]))
            n++;
    }
    return n;
}

/* Where AT in the base program is, for a message: "node '/Reshape'
 * (Reshape)", "graph output y", or the declaration of an input. */
static const char *where(Arena *a, const char *text, size_t at)
{
    size_t line = at;
    while (line > 0 && text[line - 1] != '\n')
        line--;
    if (strncmp(text + line, "input ", 6) == 0) {
        size_t end = line;
        while (text[end] && text[end] != ';' && text[end] != '\n')
            end++;
        return arena_printf(a, "the declaration '%.*s'", (int)(end - line), text + line);
    }
    for (size_t c = line; c > 0; c--) {
        if (text[c - 1] != '\n' || strncmp(text + c, "# ", 2) != 0 || c == line)
            continue;
        const char *nl = strchr(text + c, '\n');
        int n = nl ? (int)(nl - (text + c)) - 2 : (int)strlen(text + c + 2);
        const char *s = text + c + 2;
        if (strncmp(s, "graph output ", 13) == 0)
            return arena_printf(a, "%.*s", n, s);
        const char *op = NULL; /* "NAME (OP)": the last " (" */
        for (int i = 0; i + 1 < n; i++)
            if (s[i] == ' ' && s[i + 1] == '(')
                op = s + i;
        if (op)
            return arena_printf(a, "node '%.*s' %.*s", (int)(op - s), s, n - (int)(op - s) - 1,
                                op + 1);
        return arena_printf(a, "'%.*s'", n, s);
    }
    return "the program's declarations";
}

/* "'batch'", "'batch' and 'seq'": the dims V's values vary with. */
static const char *dims_of(const Probing *p, const long long *v)
{
    const char *list = "";
    for (int d = 0; d < p->k; d++)
        if (v[0] != v[1 << d])
            list = arena_printf(p->a, "%s%s'%s'", list, *list ? " and " : "", p->param[d]);
    return *list ? list : arena_printf(p->a, "'%s'", p->param[0]);
}

/* "-D batch=VALUE -D seq=VALUE" for the dims V varies with. */
static const char *binding(const Probing *p, const long long *v)
{
    const char *list = "";
    for (int d = 0; d < p->k; d++)
        if (v[0] != v[1 << d] || p->k == 1)
            list = arena_printf(p->a, "%s%s-D %s=VALUE", list, *list ? " " : "", p->param[d]);
    return *list ? list : arena_printf(p->a, "-D %s=VALUE", p->param[0]);
}

/* V (one value a run) as a polynomial over the dims' names, or NULL when
 * it is not one with integer coefficients, multilinear in the dims. */
static const char *polynomial(const Probing *p, const long long *v)
{
    int corners = 1 << p->k;
    long long c[1 << MAX_RT_DIMS];
    for (int r = 0; r < corners; r++)
        c[r] = v[r];
    /* per dim, the values at its two probes become intercept and slope */
    for (int d = 0; d < p->k; d++)
        for (int r = 0; r < corners; r++) {
            if (r >> d & 1)
                continue;
            long long lo = c[r], hi = c[r | 1 << d], a = p->probe[d][0], b = p->probe[d][1];
            if ((hi - lo) % (b - a) != 0)
                return NULL;
            long long slope = (hi - lo) / (b - a);
            c[r] = lo - slope * a;
            c[r | 1 << d] = slope;
        }
    long long check = 0;
    for (int r = 0; r < corners; r++) {
        long long term = c[r];
        for (int d = 0; d < p->k; d++)
            if (r >> d & 1)
                term *= p->probe[d][2];
        check += term;
    }
    if (check != v[p->nruns - 1])
        return NULL;
    const char *s = "";
    for (int r = 1; r < corners; r++) {
        if (!c[r])
            continue;
        const char *term = "";
        for (int d = 0; d < p->k; d++)
            if (r >> d & 1)
                term = arena_printf(p->a, "%s%s%s", term, *term ? " * " : "", p->te[d]);
        long long mag = c[r] < 0 ? -c[r] : c[r];
        if (mag != 1)
            term = arena_printf(p->a, "%s * %lld", term, mag);
        s = arena_printf(p->a, "%s%s%s", s, !*s ? (c[r] < 0 ? "-" : "") : c[r] < 0 ? " - " : " + ",
                         term);
    }
    if (!*s)
        return arena_printf(p->a, "%lld", c[0]);
    if (c[0])
        s = arena_printf(p->a, "%s %s %lld", s, c[0] < 0 ? "-" : "+", c[0] < 0 ? -c[0] : c[0]);
    return s;
}

static bool mismatch(const Probing *p, const char *text, size_t at)
{
    fprintf(stderr, "%s: error: %s: the program changes with the size of '%s' in a way texc "
                    "cannot keep at run time (it imports differently at different sizes); "
                    "bind it with -D %s=VALUE\n",
            p->m->path, where(p->a, text, at), p->param[0], p->param[0]);
    return false;
}

/* The base program with every number that varies with the probes written
 * as its polynomial (a size) or refused (a value). */
static bool merge(Probing *p)
{
    const char *t[MAX_RUNS] = { 0 };
    size_t at[MAX_RUNS] = { 0 };
    for (int r = 0; r < p->nruns; r++) {
        t[r] = p->run[r].text;
        at[r] = 0;
    }
    const char *base = t[0];
    bool line_start = true, input_line = false;
    int depth = 0;          /* brackets open on an input's line */
    const char *last = ""; /* the last token: "in", "..", or anything */
    while (base[at[0]]) {
        char c = base[at[0]];
        if (line_start) {
            const char *nl = strchr(base + at[0], '\n');
            size_t n = nl ? (size_t)(nl - (base + at[0])) : strlen(base + at[0]);
            input_line = strncmp(base + at[0], "input ", 6) == 0;
            for (size_t i = 0; input_line && i + 8 <= n; i++)
                input_line = strncmp(base + at[0] + i, ": const ", 8) != 0;
            depth = 0;
        }
        line_start = c == '\n';
        size_t n0;
        if (c == '#' || (ident_char(c) && !digit(c))) { /* a comment, a word: the same text */
            n0 = 0;
            if (c == '#')
                while (base[at[0] + n0] && base[at[0] + n0] != '\n')
                    n0++;
            else
                while (ident_char(base[at[0] + n0]))
                    n0++;
            for (int r = 1; r < p->nruns; r++) {
                if (strncmp(t[r] + at[r], base + at[0], n0) != 0 ||
                    (c != '#' && ident_char(t[r][at[r] + n0])))
                    return mismatch(p, base, at[0]);
                at[r] += n0;
            }
            fwrite(base + at[0], 1, n0, p->out);
            last = n0 == 2 && strncmp(base + at[0], "in", 2) == 0 ? "in" : "word";
            at[0] += n0;
            continue;
        }
        if (digit(c)) {
            size_t n[MAX_RUNS];
            bool same = true;
            for (int r = 0; r < p->nruns; r++) {
                n[r] = number_len(t[r] + at[r]);
                same = same && n[r] == n[0] && strncmp(t[r] + at[r], base + at[0], n[0]) == 0;
            }
            if (same) {
                fwrite(base + at[0], 1, n[0], p->out);
            } else {
                long long v[MAX_RUNS];
                bool integer = true;
                for (int r = 0; r < p->nruns; r++) {
                    char *end;
                    v[r] = strtoll(t[r] + at[r], &end, 10);
                    integer = integer && end == t[r] + at[r] + n[r];
                }
                bool size = strcmp(last, "in") == 0 || strcmp(last, "..") == 0 ||
                            (input_line && depth > 0);
                const char *poly = integer ? polynomial(p, v) : NULL;
                if (!size || !poly) {
                    if (!size && strncmp(where(p->a, base, at[0]), "the declaration", 15) == 0)
                        fprintf(stderr, "%s: error: %s: a weight's shape varies with the size "
                                        "of %s, and weights are fixed when compiling; bind it "
                                        "with %s\n",
                                p->m->path, where(p->a, base, at[0]), dims_of(p, v),
                                binding(p, v));
                    else if (size)
                        fprintf(stderr, "%s: error: %s: a size varies with %s in a way te's "
                                        "sizes cannot say (a sum of products of the run-time "
                                        "dims and integers); bind it with %s\n",
                                p->m->path, where(p->a, base, at[0]), dims_of(p, v),
                                binding(p, v));
                    else
                        fprintf(stderr, "%s: error: %s: computes with the size of %s as a "
                                        "value, not only as a shape, which a run-time dim "
                                        "cannot be; bind it with %s\n",
                                p->m->path, where(p->a, base, at[0]), dims_of(p, v),
                                binding(p, v));
                    return false;
                }
                fputs(poly, p->out);
            }
            for (int r = 0; r < p->nruns; r++)
                at[r] += n[r];
            last = "number";
            continue;
        }
        for (int r = 1; r < p->nruns; r++)
            if (t[r][at[r]] != c)
                return mismatch(p, base, at[0]);
        if (c == '.' && base[at[0] + 1] == '.') {
            for (int r = 0; r < p->nruns; r++)
                if (t[r][at[r] + 1] != '.')
                    return mismatch(p, base, at[0]);
            fputs("..", p->out);
            for (int r = 0; r < p->nruns; r++)
                at[r] += 2;
            last = "..";
            continue;
        }
        if (input_line)
            depth += c == '[' ? 1 : c == ']' ? -1 : 0;
        if (c != ' ' && c != '\n')
            last = "punct";
        fputc(c, p->out);
        for (int r = 0; r < p->nruns; r++)
            at[r]++;
    }
    for (int r = 1; r < p->nruns; r++)
        if (t[r][at[r]])
            return mismatch(p, base, at[0]);
    return true;
}

/* The weights of every import must be the base's: a constant whose
 * shape or values depend on a run-time dim cannot be a weight. */
static bool same_weights(Probing *p)
{
    const OxImport *b = &p->run[0];
    for (int r = 1; r < p->nruns; r++) {
        const OxImport *o = &p->run[r];
        for (int i = 0; i < b->nweights || i < o->nweights; i++) {
            const OxWeight *w = i < b->nweights ? &b->weights[i] : &o->weights[i];
            bool same = i < b->nweights && i < o->nweights &&
                        strcmp(b->weights[i].tensor->name, o->weights[i].tensor->name) == 0 &&
                        te_same_shape(b->weights[i].tensor, o->weights[i].tensor) &&
                        b->weights[i].init == o->weights[i].init;
            if (same && !w->init)
                same = memcmp(w->values, o->weights[i].values,
                              sizeof *w->values * (size_t)tensor_elems(w->tensor)) == 0;
            if (!same) {
                fprintf(stderr, "%s: error: the constant '%s' depends on the size of '%s', and "
                                "a weight's shape and values are fixed when compiling; bind it "
                                "with -D %s=VALUE\n",
                        p->m->path, w->tensor->name, p->param[0], p->param[0]);
                return false;
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* The import. */

/* The dim_param DEF names, or NULL (bind_inputs then says so). */
static const char *param_of(Arena *a, const OxModel *m, const OxDefine *def)
{
    for (int i = 0; i < m->ninputs; i++)
        for (int d = 0; d < m->inputs[i].rank; d++) {
            const char *p = m->inputs[i].params[d];
            if (p && (strcmp(def->name, p) == 0 || strcmp(def->name, ox_c_safe(a, p)) == 0))
                return p;
        }
    return NULL;
}

/* The run-time dim's name in the program: its C-safe name, unless a
 * graph input or output, a keyword or another dim has it. */
static const char *dim_name(Probing *p, const char *param)
{
    static const char *reserved[] = { "at", "const", "dim", "in", "input", "let", "output",
                                      "schedule" };
    const char *base = ox_c_safe(p->a, param), *cand = base;
    for (int k = 2;; k++) {
        bool taken = false;
        for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
            taken = taken || strcmp(cand, reserved[i]) == 0;
        for (int i = 0; i < p->m->ninputs; i++)
            taken = taken || strcmp(cand, ox_c_safe(p->a, p->m->inputs[i].name)) == 0;
        for (int i = 0; i < p->m->noutputs; i++)
            taken = taken || strcmp(cand, ox_c_safe(p->a, p->m->outputs[i].name)) == 0;
        for (int d = 0; d < p->k && p->te[d]; d++)
            taken = taken || strcmp(cand, p->te[d]) == 0;
        if (!taken)
            return cand;
        cand = arena_printf(p->a, "%s_%d", base, k);
    }
}

bool ox_import(Arena *a, const OxModel *m, const OxDefine *defines, int ndefines,
               const char *title, OxImport *out)
{
    Probing p = { .a = a, .m = m };
    for (int i = 0; i < ndefines; i++) {
        if (!defines[i].range)
            continue;
        if (p.k == MAX_RT_DIMS) {
            fprintf(stderr, "%s: error: -D %s=%lld..%lld: texc keeps at most %d symbolic dims "
                            "at run time; bind the others with -D NAME=VALUE\n",
                    m->path, defines[i].name, (long long)defines[i].lo,
                    (long long)defines[i].hi, MAX_RT_DIMS);
            return false;
        }
        p.range[p.k++] = &defines[i];
    }
    if (p.k == 0)
        return ox_import_bound(a, m, defines, ndefines, title, NULL, NULL, 0, NULL, 0, out);
    /* the dims, their names, their probes: primes above 1000 that are no
       static size of the model */
    const char *dims_text = "";
    int64_t probes[3 * MAX_RT_DIMS], cand = 1000;
    for (int d = 0; d < p.k; d++) {
        const OxDefine *def = p.range[d];
        p.param[d] = param_of(a, m, def);
        if (!p.param[d]) /* the bound import says which dims there are */
            p.param[d] = def->name;
        p.te[d] = dim_name(&p, p.param[d]);
        for (int j = 0; j < 3; j++) {
            do
                cand++;
            while (!is_prime(cand) || static_size(m, cand));
            p.probe[d][j] = probes[3 * d + j] = cand;
        }
        dims_text = def->hint ? arena_printf(a, "%sdim %s in %lld..%lld = %lld;\n", dims_text,
                                             p.te[d], (long long)def->lo, (long long)def->hi,
                                             (long long)def->hint)
                              : arena_printf(a, "%sdim %s in %lld..%lld;\n", dims_text, p.te[d],
                                             (long long)def->lo, (long long)def->hi);
    }
    p.nruns = (1 << p.k) + 1;
    OxDefine *bound = arena_alloc(a, sizeof *bound * (size_t)(ndefines + 1));
    for (int r = 0; r < p.nruns; r++) {
        memcpy(bound, defines, sizeof *bound * (size_t)ndefines);
        for (int i = 0, d = 0; i < ndefines; i++)
            if (bound[i].range) {
                bound[i].range = false;
                bound[i].value = probe_at(&p, r, d++);
            }
        if (!ox_import_bound(a, m, bound, ndefines, title, dims_text, p.te, p.k, probes, 3 * p.k,
                             &p.run[r])) {
            const char *at = "", *bind = "";
            for (int d = 0; d < p.k; d++) {
                at = arena_printf(a, "%s%s%s = %lld", at, d ? ", " : "", p.param[d],
                                  (long long)probe_at(&p, r, d));
                bind = arena_printf(a, "%s%s-D %s=VALUE", bind, d ? " " : "", p.param[d]);
            }
            fprintf(stderr, "%s: note: texc imports a model with run-time dims at large sizes "
                            "standing for them (here %s); a model that cannot take those "
                            "cannot keep them at run time: bind them with %s\n",
                    m->path, at, bind);
            return false;
        }
    }
    p.out = open_memstream(&p.text, &p.len);
    if (!p.out) {
        fprintf(stderr, "texc: out of memory\n");
        return false;
    }
    bool ok = merge(&p) && same_weights(&p);
    fclose(p.out);
    if (ok) {
        *out = p.run[0];
        out->text = arena_strdup(a, p.text);
        out->len = strlen(out->text);
        out->rtdims = arena_alloc(a, sizeof *out->rtdims * (size_t)p.k);
        out->nrtdims = p.k;
        for (int d = 0; d < p.k; d++) {
            OxRtDim *rd = &out->rtdims[d];
            *rd = (OxRtDim){ p.param[d], p.te[d], p.range[d]->lo, p.range[d]->hi,
                             p.range[d]->hint, NULL, 0 };
            for (int i = 0; !rd->input && i < m->ninputs; i++)
                for (int x = 0; !rd->input && x < m->inputs[i].rank; x++)
                    if (m->inputs[i].params[x] && strcmp(m->inputs[i].params[x], p.param[d]) == 0)
                        for (int j = 0; j < out->nnames; j++)
                            if (strcmp(out->onnx_names[j], m->inputs[i].name) == 0) {
                                rd->input = out->te_names[j];
                                rd->axis = x;
                            }
        }
    }
    free(p.text);
    return ok;
}

/* dtype.c — element types, operators, reducers and targets: the tables
 * generated from texc.h's X-macros, and rounding to each dtype.
 *
 * dtype_round is the one definition of what storing a value in a dtype
 * means; the evaluator, the constant folder and the .npy writer all go
 * through it.  The narrow float formats are rounded by hand, in double,
 * with round-to-nearest-even regardless of the FPU's rounding mode:
 *   - f16 (IEEE binary16): 10 fraction bits, exponents -14..15, subnormals
 *     down to 2^-24, and everything from 65520 (the midpoint between 65504
 *     and the first power of two beyond it) up rounds to infinity;
 *   - bf16: f32's exponent range with 7 fraction bits.  It is rounded
 *     directly from double, which gives what rounding the f32 bits
 *     (bits + 0x7fff + lsb) gives for every value that is already an f32,
 *     and avoids double rounding for the rest.
 * NaNs stay NaN (their sign and payload are not meaningful here).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "texc.h"

typedef struct DTypeInfo {
    const char *name;  /* as written in .te files */
    const char *ctype; /* as written in generated C */
    int bytes;
    bool is_float;
    const char *npy; /* the .npy descr it is written as */
} DTypeInfo;

static const DTypeInfo dtype_info[DT_COUNT] = {
    [DT_NONE] = { "none", "void", 0, false, "" },
#define X(e, n, c, b, f, npy) [e] = { n, c, b, f, npy },
    TE_DTYPES(X)
#undef X
};

int te_name_index(const char *const *names, int n, const char *name)
{
    int i = 0;
    while (i < n && strcmp(names[i], name) != 0)
        i++;
    return i;
}

static const DTypeInfo *info(DType t)
{
    TE_ASSERT(t >= DT_NONE && t < DT_COUNT);
    return &dtype_info[t];
}

const char *dtype_name(DType t)
{
    return info(t)->name;
}

const char *dtype_ctype(DType t)
{
    return info(t)->ctype;
}

int dtype_bytes(DType t)
{
    return info(t)->bytes;
}

bool dtype_is_float(DType t)
{
    return info(t)->is_float;
}

bool dtype_is_narrow_int(DType t)
{
    return t == DT_U8 || t == DT_I8;
}

const char *dtype_npy(DType t)
{
    return info(t)->npy;
}

DType dtype_lookup(const char *name, size_t len)
{
    for (int t = DT_NONE + 1; t < DT_COUNT; t++) {
        const char *n = dtype_info[t].name;
        if (strlen(n) == len && memcmp(n, name, len) == 0)
            return (DType)t;
    }
    return DT_NONE;
}

/* A binary float format with FRAC fraction bits whose normal numbers have
 * exponents EMIN..EMAX. */
typedef struct FloatFormat {
    int frac, emin, emax;
} FloatFormat;

static const FloatFormat format_f16 = { 10, -14, 15 };
static const FloatFormat format_bf16 = { 7, -126, 127 };

/* Q rounded to an integer, ties to even.  Q >= 0 and below 2^53. */
static double round_half_even(double q)
{
    double fl = floor(q);
    double rest = q - fl; /* exact */
    if (rest > 0.5 || (rest == 0.5 && fmod(fl, 2.0) != 0.0))
        fl += 1.0;
    return fl;
}

static double round_to_format(FloatFormat fmt, double v)
{
    if (isnan(v) || isinf(v) || v == 0.0)
        return v;
    double mag = fabs(v);
    /* The midpoint between the largest finite value and 2^(emax+1) rounds
     * up (the largest finite value has an odd significand). */
    double overflow = ldexp(2.0 - ldexp(1.0, -fmt.frac - 1), fmt.emax);
    if (mag >= overflow)
        return copysign(INFINITY, v);
    int e;
    frexp(mag, &e); /* mag in [2^(e-1), 2^e) */
    int lead = e - 1;
    if (lead < fmt.emin)
        lead = fmt.emin; /* subnormal: the spacing stops shrinking */
    int ulp_exp = lead - fmt.frac;
    /* Scaling by a power of two is exact, and the quotient is below 2^53. */
    double q = round_half_even(ldexp(mag, -ulp_exp));
    return copysign(ldexp(q, ulp_exp), v);
}

/* V toward zero, saturating at LO and HI; NaN is 0. */
static double round_to_int(double v, double lo, double hi)
{
    if (isnan(v))
        return 0.0;
    if (v >= hi)
        return hi;
    if (v <= lo)
        return lo;
    return trunc(v);
}

double dtype_round(DType t, double v)
{
    switch (t) {
    case DT_NONE:
    case DT_F64:
        return v;
    case DT_F32:
        return (double)(float)v;
    case DT_F16:
        return round_to_format(format_f16, v);
    case DT_BF16:
        return round_to_format(format_bf16, v);
    case DT_I32:
        return round_to_int(v, INT32_MIN, INT32_MAX);
    case DT_U8:
        return round_to_int(v, 0, UINT8_MAX);
    case DT_I8:
        return round_to_int(v, INT8_MIN, INT8_MAX);
    case DT_BOOL:
        return v != 0.0 ? 1.0 : 0.0;
    case DT_COUNT:
        break;
    }
    TE_UNREACHABLE();
}

uint16_t dtype_f16_bits(double v)
{
    v = round_to_format(format_f16, v);
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    if (isnan(v))
        return 0x7e00 | sign;
    if (isinf(v))
        return 0x7c00 | sign;
    double mag = fabs(v);
    if (mag == 0.0)
        return sign;
    int e;
    frexp(mag, &e);
    int lead = e - 1;
    if (lead < format_f16.emin) /* subnormal: exponent field 0 */
        return sign | (uint16_t)ldexp(mag, 24);
    uint16_t frac = (uint16_t)(ldexp(mag, format_f16.frac - lead) - 1024.0);
    return sign | (uint16_t)((lead + 15) << 10) | frac;
}

double dtype_f16_value(uint16_t bits)
{
    int exp = (bits >> 10) & 0x1f;
    int frac = bits & 0x3ff;
    double mag;
    if (exp == 0x1f)
        mag = frac ? NAN : INFINITY;
    else if (exp == 0)
        mag = ldexp(frac, -24);
    else
        mag = ldexp(1024 + frac, exp - 25);
    return bits & 0x8000 ? -mag : mag;
}

/* Operators. */

static const char *const op_texts[OP_COUNT] = { TE_OPS(TE_ENUM_NAME) };
static const signed char op_arities[OP_COUNT] = {
#define X(e, t, a, c) [e] = a,
    TE_OPS(X)
#undef X
};
static const bool op_calls[OP_COUNT] = {
#define X(e, t, a, c) [e] = c,
    TE_OPS(X)
#undef X
};

const char *op_text(Op op)
{
    TE_ASSERT(op >= 0 && op < OP_COUNT);
    return op_texts[op];
}

int op_arity(Op op)
{
    TE_ASSERT(op >= 0 && op < OP_COUNT);
    return op_arities[op];
}

bool op_is_call(Op op)
{
    TE_ASSERT(op >= 0 && op < OP_COUNT);
    return op_calls[op];
}

/* i32 arithmetic.  The bits are worked in uint32_t, where C defines
 * wrap-around, and read back as two's complement without an
 * implementation-defined conversion. */

static int32_t from_bits(uint32_t u)
{
    return u < 0x80000000u ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

int32_t te_i32_wrap(double v)
{
    if (!isfinite(v))
        return 0;
    /* fmod is exact: the remainder of an integer is the integer mod 2^32 */
    double m = fmod(trunc(v), 4294967296.0);
    if (m < 0)
        m += 4294967296.0;
    return from_bits((uint32_t)m);
}

bool te_i32_wraps(Op op)
{
    switch (op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD: case OP_NEG: case OP_ABS:
        return true;
    default:
        return false;
    }
}

int32_t te_i32_arith(Op op, double a, double b)
{
    int32_t x = te_i32_wrap(a), y = te_i32_wrap(b);
    uint32_t ux = (uint32_t)x, uy = (uint32_t)y;
    switch (op) {
    case OP_ADD: return from_bits(ux + uy);
    case OP_SUB: return from_bits(ux - uy);
    case OP_MUL: return from_bits(ux * uy);
    case OP_NEG: return from_bits(0u - ux);
    case OP_ABS: return x < 0 ? from_bits(0u - ux) : x;
    /* C's / and % trap on 0 and on INT32_MIN / -1; these are defined */
    case OP_DIV: return y == 0 ? 0 : y == -1 ? from_bits(0u - ux) : x / y;
    case OP_MOD: return y == 0 || y == -1 ? 0 : x % y;
    default: break;
    }
    TE_UNREACHABLE();
}

/* Reducers. */

static const char *const reducer_names[RED_COUNT] = { TE_REDUCERS(TE_ENUM_NAME) };

const char *reducer_name(Reducer r)
{
    TE_ASSERT(r >= 0 && r < RED_COUNT);
    return reducer_names[r];
}

Reducer reducer_lookup(const char *name)
{
    return (Reducer)te_name_index(reducer_names, RED_COUNT, name);
}

double reducer_identity(Reducer r)
{
    switch (r) {
    case RED_SUM:
        return 0.0;
    case RED_PROD:
        return 1.0;
    case RED_MAX:
        return -INFINITY;
    case RED_MIN:
        return INFINITY;
    case RED_COUNT:
        break;
    }
    TE_UNREACHABLE();
}

/* Targets. */

static const char *const target_names[TARGET_COUNT] = { TE_TARGETS(TE_ENUM_NAME) };

const char *target_name(Target t)
{
    TE_ASSERT(t >= 0 && t < TARGET_COUNT);
    return target_names[t];
}

Target target_lookup(const char *name)
{
    return (Target)te_name_index(target_names, TARGET_COUNT, name);
}

/* V rounded to the precision an operator of dtype T is computed in: f32
 * for the narrow floats (lang/pass_constfold.c says why). */
double te_arith_round(DType t, double v)
{
    return dtype_round(t == DT_F16 || t == DT_BF16 ? DT_F32 : t, v);
}


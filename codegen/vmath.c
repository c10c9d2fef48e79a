/* codegen/vmath.c — vector math for the generated C kernels.
 *
 * cg_vmath_helpers are the prelude pieces of C11 text that define, on
 * te_v16f (and te_splat, before them in the C prelude),
 *     te_vexp_fast  te_verf_fast  te_vtanh_fast  te_vgelu_fast  te_vsigmoid_fast
 * with only vector arithmetic, comparisons, bit operations for blending and
 * __builtin_convertvector: no libm calls and no per-lane loops, so that
 * gcc/clang -O3 -march=native turn them into straight AVX-512 code.  Where
 * AVX-512F is there, gelu's fast path uses three of its intrinsics (a lane
 * permute, fma, a mask test); elsewhere portable per-lane loops stand in.
 *
 * The C generator prints a piece only where the code, or a piece printed,
 * uses a name it defines (cg_print_helpers), so a kernel that calls gelu
 * gets gelu and what gelu is built from, not erf or sigmoid: clang warns
 * about a static function nobody calls.  Hence one piece per function,
 * type and macro; a comment piece names the functions it comments on; a
 * piece comes after the pieces it uses; and no piece's text, comments
 * included, names a helper it does not need.  TE_VM_SPLIT's functions
 * call NAME_8 by token pasting, which cg_print_helpers cannot see, so the
 * TE_VM_SPLIT line shares a piece with the NAME_8 it calls.
 *
 * Method: each function widens its 16 floats to two vectors of 8 doubles,
 * evaluates there and rounds once back to float.  The double-precision
 * approximations have relative error < 1e-10 (exp: Cody-Waite reduction and
 * a degree-8 polynomial, 2^n built in the exponent bits; erf: z*P(z^2) for
 * |z| < 1, 1 - exp(-z^2)*Q((z-3)/(z+3))/(z+3) above; tanh: Taylor series for
 * |x| < 1/16, 1 - 2/(exp(2x)+1) above; gelu: x/2*erfc(-x/sqrt2); sigmoid:
 * 1/(1+exp(-x))), so every result, subnormal ones included, is within 1 ulp
 * of the correctly rounded float (and almost always is it); NaN -> NaN,
 * infinities, overflow, underflow and -0 as libm.  gelu(-inf) is -0 (the
 * limit).
 *
 * gelu, the epilogue of most matmuls, also has a fast path in float, with
 * no exp (a polynomial of Phi(-|x|) picked per lane from 32): a vector
 * whose lanes all have |x| <= 5.9 takes it, any other vector (a lane
 * outside, a NaN) the double path.  It is within 2 ulp of the correctly
 * rounded float (te_vm_gelu_tab says how; its coefficients come from
 * codegen/vmath_gelu_fit.py).  The selection is
 * one branch per 16 lanes, taken the same way for almost every vector of a
 * real activation.  exp (softmax's, twice per element) has one too, for
 * vectors with every lane in [-87, 88] (normal results), four times the
 * double path's speed and still within 1 ulp of the correctly rounded float
 * (all 2^32 inputs checked: at most 1.06 ulp from the exact value;
 * te_vexp_narrow).  tests/unit_vmath.c checks all this against double
 * libm, compiling every piece in order.
 */
#include "codegen/codegen.h"

const CgHelper cg_vmath_helpers[] = {
    { "te_vexp_fast te_verf_fast te_vtanh_fast te_vgelu_fast te_vsigmoid_fast",
      "/* texc vector math (codegen/vmath.c): f32 exp, erf, tanh, gelu and sigmoid\n"
      "   on te_v16f, those of them the code uses.  Each widens to double,\n"
      "   evaluates there (range reduction and polynomials with relative error\n"
      "   < 1e-10) and rounds once back to float, so the result is within 1 ulp\n"
      "   of the correctly rounded one over the whole f32 range, subnormal results\n"
      "   included.  NaN in gives NaN out; -0 keeps its sign where the function is\n"
      "   odd.  gelu and exp also have float fast paths, for vectors with every\n"
      "   |x| <= 5.9 (gelu, within 2 ulp) and every x in [-87, 88] (exp, still\n"
      "   within 1 ulp). */\n" },
    { "te_v16i", "typedef int te_v16i __attribute__((vector_size(64)));\n" },
    { "te_vm_v8f", "typedef float te_vm_v8f __attribute__((vector_size(32)));\n" },
    { "te_vm_v8d", "typedef double te_vm_v8d __attribute__((vector_size(64)));\n" },
    { "te_vm_v8l", "typedef long long te_vm_v8l __attribute__((vector_size(64)));\n" },
    { "te_vm_v8u",
      "typedef unsigned long long te_vm_v8u __attribute__((vector_size(64)));\n" },
    { "te_vm_v16u", "typedef unsigned te_vm_v16u __attribute__((vector_size(64)));\n" },
    { "te_vm_dsplat",
      "static inline __attribute__((always_inline)) te_vm_v8d te_vm_dsplat(double x)\n"
      "{ return (te_vm_v8d){ x, x, x, x, x, x, x, x }; }\n" },
    { "te_vm_lo te_vm_hi te_vm_join",
      "/* the work is done in double, eight lanes (one AVX-512 register) at a time */\n" },
    { "te_vm_lo",
      "static inline __attribute__((always_inline)) te_vm_v8d te_vm_lo(te_v16f x)\n"
      "{ return __builtin_convertvector(((te_vm_v8f){ x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7] }), te_vm_v8d); }\n" },
    { "te_vm_hi",
      "static inline __attribute__((always_inline)) te_vm_v8d te_vm_hi(te_v16f x)\n"
      "{ return __builtin_convertvector(((te_vm_v8f){ x[8], x[9], x[10], x[11], x[12], x[13], x[14], x[15] }), te_vm_v8d); }\n" },
    { "te_vm_join",
      "static inline __attribute__((always_inline)) te_v16f te_vm_join(te_vm_v8d a, te_vm_v8d b)\n"
      "{\n"
      "    te_vm_v8f l = __builtin_convertvector(a, te_vm_v8f), h = __builtin_convertvector(b, te_vm_v8f);\n"
      "    return (te_v16f){ l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7], h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7] };\n"
      "}\n" },
    { "TE_VM_SPLIT",
      "#define TE_VM_SPLIT(name) \\\n"
      "    static inline __attribute__((always_inline)) te_v16f name(te_v16f x) \\\n"
      "    { return te_vm_join(name##_8(te_vm_lo(x)), name##_8(te_vm_hi(x))); }\n" },
    { "te_vm_sel",
      "/* m ? a : b, lane by lane (m: all ones or all zeros per lane) */\n"
      "static inline __attribute__((always_inline)) te_vm_v8d te_vm_sel(te_vm_v8l m, te_vm_v8d a, te_vm_v8d b)\n"
      "{ return (te_vm_v8d)((m & (te_vm_v8l)a) | (~m & (te_vm_v8l)b)); }\n" },
    { "te_vm_abs",
      "static inline __attribute__((always_inline)) te_vm_v8d te_vm_abs(te_vm_v8d x)\n"
      "{ return (te_vm_v8d)((te_vm_v8l)x & 0x7fffffffffffffffLL); }\n" },
    { "te_vm_clamp",
      "/* lo <= x <= hi; NaN stays NaN */\n"
      "static inline __attribute__((always_inline)) te_vm_v8d te_vm_clamp(te_vm_v8d x, double lo, double hi)\n"
      "{\n"
      "    x = te_vm_sel((te_vm_v8l)(x > hi), te_vm_dsplat(hi), x);\n"
      "    return te_vm_sel((te_vm_v8l)(x < lo), te_vm_dsplat(lo), x);\n"
      "}\n" },
    { "te_vm_exp",
      "/* exp(y) for |y| <= 700 (or NaN); relative error < 1e-12 */\n"
      "static inline __attribute__((always_inline)) te_vm_v8d te_vm_exp(te_vm_v8d y)\n"
      "{\n"
      "    te_vm_v8d t = y * 0x1.71547652b82fep0 + 0x1.8p52;\n"
      "    te_vm_v8d n = t - 0x1.8p52;\n"
      "    te_vm_v8d r = (y - n * 0x1.62e42fee00000p-1) - n * 0x1.a39ef35793c76p-33;\n"
      "    te_vm_v8d p = te_vm_dsplat(0x1.9eb712ba8e0f0p-16);\n"
      "    p = p * r + 0x1.a1a7f1fc28d50p-13;\n"
      "    p = p * r + 0x1.6c18d5459a024p-10;\n"
      "    p = p * r + 0x1.111082d5a0b10p-7;\n"
      "    p = p * r + 0x1.555553f0ba250p-5;\n"
      "    p = p * r + 0x1.555555a059e0dp-3;\n"
      "    p = p * r + 0x1.000000008fafcp-1;\n"
      "    p = p * r + 0x1.ffffffffd58c4p-1;\n"
      "    p = p * r + 0x1.ffffffffff728p-1;\n"
      "    /* t's low mantissa bits hold n: 2^n = (n + 1023) << 52 */\n"
      "    te_vm_v8u s = ((te_vm_v8u)t << 52) + (1023ULL << 52);\n"
      "    return p * (te_vm_v8d)s;\n"
      "}\n" },
    { "te_vm_erf_small",
      "/* erf(z)/z = P(z*z) for 0 <= z <= 1; relative error < 4e-11 */\n"
      "static inline __attribute__((always_inline)) te_vm_v8d te_vm_erf_small(te_vm_v8d s)\n"
      "{\n"
      "    te_vm_v8d p = te_vm_dsplat(-0x1.45215a869a000p-17);\n"
      "    p = p * s + 0x1.d8e535fa55400p-14;\n"
      "    p = p * s - 0x1.bce192fd2aa80p-11;\n"
      "    p = p * s + 0x1.562c2abd14a60p-8;\n"
      "    p = p * s - 0x1.b829f89523b48p-6;\n"
      "    p = p * s + 0x1.ce2f0b89a720cp-4;\n"
      "    p = p * s - 0x1.8127467402ca0p-2;\n"
      "    return p * s + 0x1.20dd750418c28p+0;\n"
      "}\n" },
    { "te_vm_erfc_big",
      "/* erfc(z) for 1 <= z <= 11, given z and -z*z; relative error < 3e-11 */\n"
      "static inline __attribute__((always_inline)) te_vm_v8d te_vm_erfc_big(te_vm_v8d z, te_vm_v8d nzz)\n"
      "{\n"
      "    te_vm_v8d inv = 1.0 / (z + 3.0);\n"
      "    te_vm_v8d t = (z - 3.0) * inv;\n"
      "    te_vm_v8d p = te_vm_dsplat(0x1.b8453b87b4ba0p-14);\n"
      "    p = p * t - 0x1.0e0533e0f2bb0p-12;\n"
      "    p = p * t - 0x1.20dc35e53ff40p-11;\n"
      "    p = p * t + 0x1.8d12c1d9b6a7cp-9;\n"
      "    p = p * t - 0x1.3d9902356f370p-10;\n"
      "    p = p * t - 0x1.b787836c3d563p-6;\n"
      "    p = p * t + 0x1.e995d8c2af3e7p-4;\n"
      "    p = p * t - 0x1.3deb22b0525cep-2;\n"
      "    p = p * t + 0x1.2e32695fd7e46p-1;\n"
      "    p = p * t - 0x1.c44c47197255ap-1;\n"
      "    p = p * t + 0x1.12f21ddd8e62bp+0;\n"
      "    return te_vm_exp(nzz) * (p * inv);\n"
      "}\n" },
    { "te_vexp_wide te_vexp_wide_8",
      "static inline __attribute__((always_inline)) te_vm_v8d te_vexp_wide_8(te_vm_v8d y)\n"
      "{\n"
      "    /* exp(89) rounds to inf and exp(-104) to 0 in float */\n"
      "    return te_vm_exp(te_vm_clamp(y, -104.0, 89.0));\n"
      "}\n"
      "TE_VM_SPLIT(te_vexp_wide)\n" },
    { "te_vsigmoid_fast te_vsigmoid_fast_8",
      "static inline __attribute__((always_inline)) te_vm_v8d te_vsigmoid_fast_8(te_vm_v8d y)\n"
      "{\n"
      "    te_vm_v8d e = te_vm_exp(te_vm_clamp(-y, -104.0, 104.0));\n"
      "    return 1.0 / (1.0 + e);\n"
      "}\n"
      "TE_VM_SPLIT(te_vsigmoid_fast)\n" },
    { "te_vtanh_fast te_vtanh_fast_8",
      "static inline __attribute__((always_inline)) te_vm_v8d te_vtanh_fast_8(te_vm_v8d y)\n"
      "{\n"
      "    te_vm_v8d s = y * y;\n"
      "    /* |y| < 1/16: Taylor series to y^9, written y * (1 + ...) to keep -0 */\n"
      "    te_vm_v8d p = te_vm_dsplat(0x1.6656b1f4e9fd9p-7);              /* 62/2835 */\n"
      "    p = p * s - 0x1.ba1ba1ba1ba1cp-5;                  /* 17/315 */\n"
      "    p = p * s + 0x1.1111111111111p-3;                  /* 2/15 */\n"
      "    p = p * s - 0x1.5555555555555p-2;                  /* 1/3 */\n"
      "    p = y * (1.0 + s * p);\n"
      "    te_vm_v8d e = te_vm_exp(2.0 * te_vm_clamp(y, -10.0, 10.0));\n"
      "    te_vm_v8d q = 1.0 - 2.0 / (e + 1.0);\n"
      "    return te_vm_sel((te_vm_v8l)(te_vm_abs(y) < 0.0625), p, q);\n"
      "}\n"
      "TE_VM_SPLIT(te_vtanh_fast)\n" },
    { "te_verf_fast te_verf_fast_8",
      "static inline __attribute__((always_inline)) te_vm_v8d te_verf_fast_8(te_vm_v8d y)\n"
      "{\n"
      "    te_vm_v8d a = te_vm_clamp(te_vm_abs(y), 0.0, 6.0), s = a * a; /* exact */\n"
      "    te_vm_v8d p = y * te_vm_erf_small(s);\n"
      "    te_vm_v8d q = 1.0 - te_vm_erfc_big(a, -s);\n"
      "    q = (te_vm_v8d)((te_vm_v8l)q | ((te_vm_v8l)y & (-0x7fffffffffffffffLL - 1)));\n"
      "    return te_vm_sel((te_vm_v8l)(a < 1.0), p, q);\n"
      "}\n"
      "TE_VM_SPLIT(te_verf_fast)\n" },
    { "te_vgelu_wide te_vgelu_wide_8",
      "/* gelu(x) = x/2 * erfc(-x/sqrt2): erfc keeps its relative accuracy for\n"
      "   negative x, so tiny and subnormal results are right too; gelu(-inf) = -0 */\n"
      "static inline __attribute__((always_inline)) te_vm_v8d te_vgelu_wide_8(te_vm_v8d y)\n"
      "{\n"
      "    te_vm_v8d ay = te_vm_abs(y);\n"
      "    te_vm_v8d a = te_vm_clamp(ay, 0.0, 15.0), s = 0.5 * a * a;   /* s = z*z exact */\n"
      "    te_vm_v8d z = a * 0x1.6a09e667f3bcdp-1;\n"
      "    te_vm_v8d e = te_vm_sel((te_vm_v8l)(z < 1.0),\n"
      "                             1.0 - z * te_vm_erf_small(s), te_vm_erfc_big(z, -s));\n"
      "    e = te_vm_sel((te_vm_v8l)(ay > 15.0), te_vm_dsplat(0.0), e);   /* erfc(|z|) */\n"
      "    te_vm_v8d h = 0.5 * e;\n"
      "    te_vm_v8d f = te_vm_sel((te_vm_v8l)(y < 0.0), h, 1.0 - h);\n"
      "    return te_vm_clamp(y, -15.0, __builtin_inf()) * f;\n"
      "}\n"
      "TE_VM_SPLIT(te_vgelu_wide)\n" },
    { "te_vm_gelu_tab",
      "/* gelu, fast path: for |x| <= 5.9, sixteen lanes in float.  With\n"
      "   Q(a) = Phi(-a) = erfc(a/sqrt2)/2, gelu(x) = x * Q(|x|) for x < 0 and\n"
      "   x - x * Q(|x|) above.  Q is a degree-7 polynomial in d = |x| - m_k on\n"
      "   each of 32 intervals of width 3/16, m_k the interval's middle\n"
      "   (coefficients picked by lane from two registers each; relative error\n"
      "   < 3.6e-9 with the float coefficients, the constant term in two floats;\n"
      "   codegen/vmath_gelu_fit.py).  No exp: Q's relative accuracy for\n"
      "   negative x comes from the short intervals.  Within 2 ulp of the\n"
      "   correctly rounded result: 1.76 ulp from the exact value at most over\n"
      "   all 2^32 floats (TEXC_VMATH_ONLY=gelu TEXC_VMATH_STRIDE=1\n"
      "   tests/unit_vmath).  A vector with a lane outside\n"
      "   the range, or a NaN, takes the double path above.  Row pairs: lanes\n"
      "   0-15 and 16-31 of c7, c6, ..., c1, c0lo, c0hi. */\n"
      "static const te_v16f te_vm_gelu_tab[18] = {\n"
    "    { -0x1.29967p-4f, 0x1.0a8a92p-5f, 0x1.974c18p-4f, 0x1.941e6p-4f, 0x1.6b653ep-4f, 0x1.2af0d2p-7f, 0x1.a7314p-7f, 0x1.e7d33ap-6f,\n"
    "      -0x1.b0e3cep-10f, -0x1.cb31cp-7f, -0x1.c4cf9p-7f, -0x1.713f1ap-9f, 0x1.1f5478p-9f, 0x1.0d5566p-8f, 0x1.d0ceb6p-9f, 0x1.78f486p-10f },  /* c7, intervals 0-15 */\n"
    "    { 0x1.c3e0e6p-11f, -0x1.05450ap-14f, 0x1.192484p-14f, -0x1.de96a6p-13f, -0x1.831f6cp-14f, -0x1.4051cap-19f, -0x1.24aca4p-16f, -0x1.1e04ecp-16f,\n"
    "      -0x1.2bb434p-17f, -0x1.b7802ep-19f, -0x1.53e408p-19f, -0x1.73b5fap-20f, -0x1.6231aap-21f, -0x1.11ada6p-22f, -0x1.1428c6p-23f, -0x1.c5f5fcp-25f },  /* c7, intervals 16-31 */\n"
    "    { 0x1.d63e9ap-12f, 0x1.2ed1p-9f, 0x1.de7906p-9f, 0x1.fa221cp-9f, 0x1.bed6b8p-9f, 0x1.00c38cp-9f, 0x1.a869bp-11f, 0x1.a83492p-15f,\n"
    "      -0x1.d4d20cp-11f, -0x1.6b908ep-10f, -0x1.884cd2p-10f, -0x1.29b52p-10f, -0x1.ac6a64p-11f, -0x1.ab0996p-12f, -0x1.8f78ccp-14f, 0x1.e15d8cp-15f },  /* c6, intervals 0-15 */\n"
    "    { 0x1.683618p-13f, 0x1.8f8c5ep-13f, 0x1.87b202p-13f, 0x1.355d04p-13f, 0x1.d54aa4p-14f, 0x1.44bcc8p-14f, 0x1.9c8294p-15f, 0x1.eaee8ep-16f,\n"
    "      0x1.161a94p-16f, 0x1.2c1aecp-17f, 0x1.3063ep-18f, 0x1.26ff18p-19f, 0x1.117e8ap-20f, 0x1.e4ced2p-22f, 0x1.9a45eap-23f, 0x1.4ca0d8p-24f },  /* c6, intervals 16-31 */\n"
    "    { -0x1.16387ap-7f, -0x1.1afb9p-7f, -0x1.c207bp-8f, -0x1.b3f636p-9f, 0x1.da822cp-13f, 0x1.14956ap-8f, 0x1.70a508p-8f, 0x1.6e69e4p-8f,\n"
    "      0x1.638ddep-8f, 0x1.19f198p-8f, 0x1.6895b2p-9f, 0x1.24f88cp-10f, -0x1.4a0244p-14f, -0x1.b17ec2p-11f, -0x1.2f9294p-10f, -0x1.345cfcp-10f },  /* c5, intervals 0-15 */\n"
    "    { -0x1.12704ap-10f, -0x1.b22142p-11f, -0x1.422a2cp-11f, -0x1.b69de8p-12f, -0x1.1d0e4p-12f, -0x1.5eb61ep-13f, -0x1.958646p-14f, -0x1.be176p-15f,\n"
    "      -0x1.d4f0a4p-16f, -0x1.d76556p-17f, -0x1.c303cp-18f, -0x1.9d86ecp-19f, -0x1.6b73c4p-20f, -0x1.32ab0ep-21f, -0x1.ef15cep-23f, -0x1.801fd6p-24f },  /* c5, intervals 16-31 */\n"
    "    { -0x1.2ff132p-8f, -0x1.ae2c32p-7f, -0x1.3e1dep-6f, -0x1.725bdp-6f, -0x1.706bbcp-6f, -0x1.3f98acp-6f, -0x1.de762cp-7f, -0x1.2377aap-7f,\n"
    "      -0x1.c0aac2p-9f, 0x1.12a11cp-10f, 0x1.0e99d6p-8f, 0x1.7af286p-8f, 0x1.985738p-8f, 0x1.7d900cp-8f, 0x1.42e182p-8f, 0x1.f94a1ep-9f },  /* c4, intervals 0-15 */\n"
    "    { 0x1.71c69ep-9f, 0x1.fe0318p-10f, 0x1.4cfe16p-10f, 0x1.9d367ep-11f, 0x1.e8671ap-12f, 0x1.1380dp-12f, 0x1.2922c6p-13f, 0x1.32bb18p-14f,\n"
    "      0x1.2f59acp-15f, 0x1.1fa83cp-16f, 0x1.05c0cap-17f, 0x1.c9586ap-19f, 0x1.7fc936p-20f, 0x1.357e34p-21f, 0x1.dfe126p-23f, 0x1.65c5f6p-24f },  /* c4, intervals 16-31 */\n"
    "    { 0x1.0cbdeap-4f, 0x1.e22c82p-5f, 0x1.7cdb5ep-5f, 0x1.f4355p-6f, 0x1.b7f01p-7f, -0x1.44ef78p-9f, -0x1.f724dp-7f, -0x1.8c2374p-6f,\n"
    "      -0x1.d723bap-6f, -0x1.e4739p-6f, -0x1.c327c6p-6f, -0x1.84dd74p-6f, -0x1.39fae4p-6f, -0x1.de7a1ep-7f, -0x1.59bb54p-7f, -0x1.db6d14p-8f },  /* c3, intervals 0-15 */\n"
    "    { -0x1.37d0f2p-8f, -0x1.86e8a8p-9f, -0x1.d50622p-10f, -0x1.0d9ec8p-10f, -0x1.294ac2p-11f, -0x1.3aa1p-12f, -0x1.3fce96p-13f, -0x1.385f46p-14f,\n"
    "      -0x1.25523cp-15f, -0x1.08e49cp-16f, -0x1.cc4d2ap-18f, -0x1.80debep-19f, -0x1.35c312p-20f, -0x1.e0137ap-22f, -0x1.6642c2p-23f, -0x1.01821ap-24f },  /* c3, intervals 16-31 */\n"
    "    { 0x1.310b4ap-6f, 0x1.b9c26ep-5f, 0x1.57233cp-4f, 0x1.b04e7ep-4f, 0x1.e2e83ep-4f, 0x1.ef13c8p-4f, 0x1.d9d246p-4f, 0x1.ab733ap-4f,\n"
    "      0x1.6dad56p-4f, 0x1.29d814p-4f, 0x1.cf3c98p-5f, 0x1.58a308p-5f, 0x1.eb582p-6f, 0x1.4ffcep-6f, 0x1.b932aap-7f, 0x1.1656ep-7f },  /* c2, intervals 0-15 */\n"
    "    { 0x1.51a64cp-8f, 0x1.89fee6p-9f, 0x1.ba69dp-10f, 0x1.de37ccp-11f, 0x1.f1c02cp-12f, 0x1.f2fe5ep-13f, 0x1.e1e9f2p-14f, 0x1.c073f6p-15f,\n"
    "      0x1.922b66p-16f, 0x1.5b9fap-17f, 0x1.21a63ap-18f, 0x1.d1595cp-20f, 0x1.686c44p-21f, 0x1.0d2e14p-22f, 0x1.83bc4ep-24f, 0x1.0d5112p-25f },  /* c2, intervals 16-31 */\n"
    "    { -0x1.96b9cp-2f, -0x1.88acd2p-2f, -0x1.6e037p-2f, -0x1.49605ep-2f, -0x1.1e2acep-2f, -0x1.e0132ep-3f, -0x1.84c6cap-3f, -0x1.2ff6eap-3f,\n"
    "      -0x1.cae38ep-4f, -0x1.4e6bep-4f, -0x1.d696f4p-5f, -0x1.3fa9c4p-5f, -0x1.a347cap-6f, -0x1.0978cap-6f, -0x1.448f32p-7f, -0x1.7f173ap-8f },  /* c1, intervals 0-15 */\n"
    "    { -0x1.b48e9ap-9f, -0x1.e04caep-10f, -0x1.fe2b9ap-11f, -0x1.0596dep-11f, -0x1.02fe02p-12f, -0x1.ef201ep-14f, -0x1.c8ecfcp-15f, -0x1.971b34p-16f,\n"
    "      -0x1.5e303ep-17f, -0x1.22d282p-18f, -0x1.d25a88p-20f, -0x1.68ff82p-21f, -0x1.0dca4ep-22f, -0x1.85528ep-24f, -0x1.0f33f8p-25f, -0x1.6cc9e8p-27f },  /* c1, intervals 16-31 */\n"
    "    { 0x1.9c30a2p-34f, -0x1.4fba5ap-27f, -0x1.e29544p-27f, 0x1.a6f894p-27f, -0x1.e1a29cp-28f, 0x1.5a0d8ap-30f, 0x1.67347ap-29f, -0x1.da26f6p-29f,\n"
    "      0x1.fc0fe2p-30f, -0x1.c5acf2p-30f, -0x1.b71e82p-31f, 0x1.d60edep-34f, -0x1.f40b6cp-33f, -0x1.dcdca2p-34f, 0x1.41a948p-34f, -0x1.51f2ecp-36f },  /* c0lo, intervals 0-15 */\n"
    "    { 0x1.f5c6p-36f, -0x1.5761ap-38f, 0x1.2899a8p-37f, -0x1.99609ep-38f, -0x1.ad66d4p-45f, -0x1.f34c92p-41f, -0x1.711ea2p-42f, 0x1.36310ep-45f,\n"
    "      -0x1.fcfef6p-44f, 0x1.aa1116p-46f, -0x1.a16764p-47f, 0x1.d6a34ep-51f, 0x1.1cc404p-50f, -0x1.f57638p-52f, 0x1.d3bd18p-56f, 0x1.e4146p-55f },  /* c0lo, intervals 16-31 */\n"
    "    { 0x1.d9c1fp-2f, 0x1.8e9ap-2f, 0x1.474b9p-2f, 0x1.05f8bap-2f, 0x1.98616cp-3f, 0x1.35ae88p-3f, 0x1.c8944ap-4f, 0x1.46f688p-4f,\n"
    "      0x1.c69f96p-5f, 0x1.32ac96p-5f, 0x1.91424cp-6f, 0x1.fcf47cp-7f, 0x1.38c94ep-7f, 0x1.746e3ep-8f, 0x1.ad739cp-9f, 0x1.df7272p-10f },  /* c0hi, intervals 0-15 */\n"
    "    { 0x1.030e4ep-10f, 0x1.0eebbcp-11f, 0x1.12248ap-12f, 0x1.0c5d2ap-13f, 0x1.fc37ap-15f, 0x1.d16886p-16f, 0x1.9c266p-17f, 0x1.60e92p-18f,\n"
    "      0x1.2428b8p-19f, 0x1.d3a334p-21f, 0x1.69c674p-22f, 0x1.0e85f8p-23f, 0x1.8706f6p-25f, 0x1.111f7p-26f, 0x1.70b75ap-28f, 0x1.e1033ap-30f },  /* c0hi, intervals 16-31 */\n"
      "};\n" },
    { "te_vm_pick te_vm_fmaf te_vm_all",
      "#if defined(__AVX512F__)\n"
      "#include <immintrin.h>\n"
      "#endif\n" },
    { "te_vm_pick",
      "/* lane l: entry k[l] of the 32 in LO (0-15) and HI (16-31) */\n"
      "#if defined(__AVX512F__)\n"
      "static inline __attribute__((always_inline)) te_v16f te_vm_pick(te_v16f lo, te_v16f hi, te_v16i k)\n"
      "{ return (te_v16f)_mm512_permutex2var_ps((__m512)lo, (__m512i)k, (__m512)hi); }\n"
      "#else\n"
      "static inline te_v16f te_vm_pick(te_v16f lo, te_v16f hi, te_v16i k)\n"
      "{ te_v16f r; for (int l = 0; l < 16; l++) r[l] = k[l] & 16 ? hi[k[l] & 15] : lo[k[l] & 15]; return r; }\n"
      "#endif\n" },
    { "te_vm_fmaf",
      "#if defined(__AVX512F__)\n"
      "static inline __attribute__((always_inline)) te_v16f te_vm_fmaf(te_v16f a, te_v16f b, te_v16f c)\n"
      "{ return (te_v16f)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }\n"
      "#else\n"
      "static inline te_v16f te_vm_fmaf(te_v16f a, te_v16f b, te_v16f c)\n"
      "{ te_v16f r; for (int l = 0; l < 16; l++) r[l] = fmaf(a[l], b[l], c[l]); return r; }\n"
      "#endif\n" },
    { "te_vm_all",
      "#if defined(__AVX512F__)\n"
      "static inline __attribute__((always_inline)) int te_vm_all(te_v16i m)\n"
      "{ return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) == 0xffff; }\n"
      "#else\n"
      "static inline int te_vm_all(te_v16i m)\n"
      "{ int a = -1; for (int l = 0; l < 16; l++) a &= m[l]; return a != 0; }\n"
      "#endif\n" },
    { "te_vgelu_narrow",
      "static inline __attribute__((always_inline)) te_v16f te_vgelu_narrow(te_v16f x)\n"
      "{\n"
      "    const te_v16f *c = te_vm_gelu_tab;\n"
      "    te_v16f ax = (te_v16f)((te_v16i)x & 0x7fffffff);\n"
      "    te_v16i k = __builtin_convertvector(ax * (16.0f / 3.0f), te_v16i);\n"
      "    /* m_k = (2k + 1) * 3/32 exactly; ax - m_k is exact for k >= 1 (the two\n"
      "       within a factor of 2), and off by < 2^-27 for k = 0 */\n"
      "    te_v16f d = ax - te_vm_fmaf(__builtin_convertvector(k, te_v16f), te_splat(0.1875f), te_splat(0.09375f));\n"
      "    te_v16f p = te_vm_pick(c[0], c[1], k);\n"
      "    for (int i = 1; i < 7; i++)\n"
      "        p = te_vm_fmaf(p, d, te_vm_pick(c[2 * i], c[2 * i + 1], k));\n"
      "    /* Q = q0 + t, |t| < 0.6 q0: q0 (exact) is added last, in the final\n"
      "       fma for x < 0, where Q's relative error is the result's */\n"
      "    te_v16f t = te_vm_fmaf(p, d, te_vm_pick(c[14], c[15], k)), q0 = te_vm_pick(c[16], c[17], k);\n"
      "    te_v16f neg = te_vm_fmaf(x, q0, x * t), pos = te_vm_fmaf(-x, q0 + t, x);\n"
      "    /* x < 0 or -0: neg (a product with x, so rounded to zero it is -0) */\n"
      "    te_v16i m = (te_v16i)x < 0;\n"
      "    return (te_v16f)((m & (te_v16i)neg) | (~m & (te_v16i)pos));\n"
      "}\n" },
    { "te_vexp_narrow",
      "/* exp, fast path: for -87 <= x <= 88 (normal results), sixteen lanes in\n"
      "   float.  n = round(x/ln2), r = x - n*ln2 in two FMAs (the first exact),\n"
      "   exp(r) = 1 + (r + r*r*Q(r)) with Q the Taylor series of (exp(r)-1-r)/r^2\n"
      "   to r^5 (|r| <= 0.35: truncation < 0.1 ulp), times 2^n built in the\n"
      "   exponent bits (exact: the result is normal).  Within 1 ulp of the\n"
      "   correctly rounded result (tests/unit_vmath; TEXC_VMATH_ONLY=exp\n"
      "   TEXC_VMATH_STRIDE=1 checks all 2^32 floats).  A vector with a lane\n"
      "   outside the range, or a NaN, takes the double path above. */\n"
      "static inline __attribute__((always_inline)) te_v16f te_vexp_narrow(te_v16f x)\n"
      "{\n"
      "    te_v16f t = te_vm_fmaf(x, te_splat(0x1.715476p+0f), te_splat(0x1.8p23f));\n"
      "    te_v16f n = t - 0x1.8p23f;\n"
      "    te_v16f r = te_vm_fmaf(n, te_splat(-0x1.62e4p-1f), x);\n"
      "    r = te_vm_fmaf(n, te_splat(-0x1.7f7d1cp-20f), r);\n"
      "    te_v16f q = te_splat(0x1.a01a02p-13f);                 /* 1/5040 */\n"
      "    q = te_vm_fmaf(q, r, te_splat(0x1.6c16c2p-10f));       /* 1/720 */\n"
      "    q = te_vm_fmaf(q, r, te_splat(0x1.111112p-7f));        /* 1/120 */\n"
      "    q = te_vm_fmaf(q, r, te_splat(0x1.555556p-5f));        /* 1/24 */\n"
      "    q = te_vm_fmaf(q, r, te_splat(0x1.555556p-3f));        /* 1/6 */\n"
      "    q = te_vm_fmaf(q, r, te_splat(0.5f));\n"
      "    te_v16f p = te_vm_fmaf(r * r, q, r);\n"
      "    te_v16f scale = (te_v16f)(((te_vm_v16u)t << 23) + 0x3f800000u);\n"
      "    return (1.0f + p) * scale;\n"
      "}\n" },
    { "te_vexp_fast",
      "static inline __attribute__((always_inline)) te_v16f te_vexp_fast(te_v16f x)\n"
      "{\n"
      "    return te_vm_all((te_v16i)(x >= -87.0f) & (te_v16i)(x <= 88.0f)) ? te_vexp_narrow(x) : te_vexp_wide(x);\n"
      "}\n" },
    { "te_vgelu_fast",
      "static inline __attribute__((always_inline)) te_v16f te_vgelu_fast(te_v16f x)\n"
      "{\n"
      "    te_v16f ax = (te_v16f)((te_v16i)x & 0x7fffffff);\n"
      "    return te_vm_all(ax <= 5.9f) ? te_vgelu_narrow(x) : te_vgelu_wide(x);\n"
      "}\n" },
};

const int cg_vmath_nhelpers = (int)(sizeof cg_vmath_helpers / sizeof cg_vmath_helpers[0]);

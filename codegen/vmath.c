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
 * gelu, the epilogue of most matmuls, also has a fast path in float, four
 * times the double path's speed: a vector whose lanes all have |x| <= 5.9
 * takes it, any other vector (a lane outside, a NaN) the double path.  It is
 * within 2 ulp of the correctly rounded float (te_vgelu_narrow says how;
 * its coefficients come from codegen/vmath_gelu_fit.py).  The selection is
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
      "/* gelu, fast path: for |x| <= 5.9, sixteen lanes in float.  gelu(x) =\n"
      "   x/2 * erfc(|x|/sqrt2) for x < 0 and x - x/2 * erfc(|x|/sqrt2) above, with\n"
      "   erfc(|x|/sqrt2) = exp(-x*x/2) * G(|x|): G is erfcx(|x|/sqrt2), a degree-6\n"
      "   polynomial in d = |x| - 0.375k on each of 16 intervals of width 0.375\n"
      "   (coefficients picked by lane from registers; relative error < 1.5e-8,\n"
      "   the constant term in two floats; codegen/vmath_gelu_fit.py), and\n"
      "   x*x/2 is carried exactly as hi + lo into exp, whose argument error the\n"
      "   result would otherwise amplify.  Within 2 ulp of the correctly rounded\n"
      "   result: 1.89 ulp from the exact value at most over all 2^32 floats\n"
      "   (TEXC_VMATH_ONLY=gelu TEXC_VMATH_STRIDE=1 tests/unit_vmath).  A vector\n"
      "   with a lane outside the range, or a NaN, takes the double path above. */\n"
      "static const te_v16f te_vm_gelu_tab[8] = {\n"
      "    { 0x1.ad1878p-7f, 0x1.5f64bcp-8f, 0x1.3193bep-9f, 0x1.18d856p-10f, 0x1.0f8e64p-11f, 0x1.1311cap-12f, 0x1.22b9d6p-13f, 0x1.3f6fb2p-14f,\n"
      "      0x1.6ba4ep-15f, 0x1.ab95b8p-16f, 0x1.02ed34p-16f, 0x1.422e46p-17f, 0x1.9aeeap-18f, 0x1.0c1384p-18f, 0x1.65216ap-19f, 0x1.e4f638p-20f },  /* c6 */\n"
      "    { -0x1.95e9c8p-5f, -0x1.5e885ep-6f, -0x1.419dacp-7f, -0x1.37e9bap-8f, -0x1.3e33acp-9f, -0x1.53e93cp-10f, -0x1.7a9b48p-11f, -0x1.b603f8p-12f,\n"
      "      -0x1.063eeep-12f, -0x1.43fb54p-13f, -0x1.9bc37cp-14f, -0x1.0c7f7cp-14f, -0x1.667932p-15f, -0x1.e8f41ap-16f, -0x1.540ca2p-16f, -0x1.e186d6p-17f },  /* c5 */\n"
      "    { 0x1.fc602ap-4f, 0x1.d97676p-5f, 0x1.d459acp-6f, 0x1.e9505p-7f, 0x1.0c892cp-7f, 0x1.34232p-8f, 0x1.6ffd62p-9f, 0x1.c7874ep-10f,\n"
      "      0x1.232ffep-10f, 0x1.7f3a3p-11f, 0x1.02da66p-11f, 0x1.66064ap-12f, 0x1.f9d99ap-13f, 0x1.6c516ep-13f, 0x1.0b0634p-13f, 0x1.8db902p-14f },  /* c4 */\n"
      "    { -0x1.103b1cp-2f, -0x1.15b32ep-3f, -0x1.2c72fap-4f, -0x1.569ebep-5f, -0x1.9972dcp-6f, -0x1.fe1abcp-7f, -0x1.49b498p-7f, -0x1.b86854p-8f,\n"
      "      -0x1.2ed3c2p-8f, -0x1.ab60fcp-9f, -0x1.34a02cp-9f, -0x1.c70a5ep-10f, -0x1.55ba76p-10f, -0x1.04f194p-10f, -0x1.948c7ap-11f, -0x1.3de368p-11f },  /* c3 */\n"
      "    { 0x1.fffe4cp-2f, 0x1.222e8p-2f, 0x1.5bf76ep-3f, 0x1.b658fap-4f, 0x1.204006p-4f, 0x1.899938p-5f, 0x1.15aa54p-5f, 0x1.931dc4p-6f,\n"
      "      0x1.2c08bep-6f, 0x1.c889ccp-7f, 0x1.622006p-7f, 0x1.176d9p-7f, 0x1.bfbae8p-8f, 0x1.6b995p-8f, 0x1.2ae286p-8f, 0x1.f0c62ep-9f },  /* c2 */\n"
      "    { -0x1.98844ep-1f, -0x1.06bfbp-1f, -0x1.63e07p-2f, -0x1.f7949ep-3f, -0x1.71c04cp-3f, -0x1.18274ep-3f, -0x1.b405ccp-4f, -0x1.5b205ep-4f,\n"
      "      -0x1.19cef2p-4f, -0x1.d15736p-5f, -0x1.85dc7cp-5f, -0x1.4ad238p-5f, -0x1.1be2c6p-5f, -0x1.ec1058p-6f, -0x1.ae369cp-6f, -0x1.7b18bep-6f },  /* c1 */\n"
      "    { 0.0f, -0x1.38bbbcp-29f, -0x1.086b3cp-26f, -0x1.7b61ccp-28f, -0x1.a5db52p-28f, 0x1.cf4ceap-27f, -0x1.cc2dp-31f, -0x1.06f92cp-27f,\n"
      "      0x1.18f4dcp-30f, 0x1.d6ae4ap-29f, 0x1.b67674p-28f, -0x1.aba5dp-31f, -0x1.89d408p-28f, 0x1.15acfep-29f, 0x1.84e722p-28f, -0x1.5804dap-29f },  /* c0lo */\n"
      "    { 0x1p+0f, 0x1.84b706p-1f, 0x1.337024p-1f, 0x1.f6704ep-2f, 0x1.a57056p-2f, 0x1.690b32p-2f, 0x1.3aaddep-2f, 0x1.1630fap-2f,\n"
      "      0x1.f1b89cp-3f, 0x1.c1b2dp-3f, 0x1.99c2b6p-3f, 0x1.78167cp-3f, 0x1.5b5acep-3f, 0x1.42938ap-3f, 0x1.2d01fep-3f, 0x1.1a1398p-3f },  /* c0hi */\n"
      "};\n" },
    { "te_vm_pick te_vm_fmaf te_vm_all",
      "#if defined(__AVX512F__)\n"
      "#include <immintrin.h>\n"
      "#endif\n" },
    { "te_vm_pick",
      "#if defined(__AVX512F__)\n"
      "static inline __attribute__((always_inline)) te_v16f te_vm_pick(te_v16f tab, te_v16i k)\n"
      "{ return (te_v16f)_mm512_permutexvar_ps((__m512i)k, (__m512)tab); }\n"
      "#else\n"
      "static inline te_v16f te_vm_pick(te_v16f tab, te_v16i k)\n"
      "{ te_v16f r; for (int l = 0; l < 16; l++) r[l] = tab[k[l] & 15]; return r; }\n"
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
      "    te_v16i k = __builtin_convertvector(ax * (8.0f / 3.0f), te_v16i);\n"
      "    te_v16f d = ax - __builtin_convertvector(k, te_v16f) * 0.375f;   /* exact */\n"
      "    te_v16f p = te_vm_pick(c[0], k);\n"
      "    for (int i = 1; i < 6; i++)\n"
      "        p = te_vm_fmaf(p, d, te_vm_pick(c[i], k));\n"
      "    te_v16f t = te_vm_fmaf(p, d, te_vm_pick(c[6], k)), g0 = te_vm_pick(c[7], k);\n"
      "    /* exp(-(hi + lo)) = 2^n (1 + r + r*r*e), hi + lo = x*x/2 exactly */\n"
      "    te_v16f xx = x * x, hi = 0.5f * xx, lo = 0.5f * te_vm_fmaf(x, x, -xx);\n"
      "    te_v16f nt = te_vm_fmaf(hi, te_splat(-0x1.715476p+0f), te_splat(0x1.8p23f));\n"
      "    te_v16f n = nt - 0x1.8p23f;\n"
      "    te_v16f r = te_vm_fmaf(n, te_splat(-0x1.62e4p-1f), -hi);\n"
      "    r = te_vm_fmaf(n, te_splat(-0x1.7f7d1cp-20f), r) - lo;\n"
      "    te_v16f e = te_splat(0x1.6a1a86p-10f);\n"
      "    e = te_vm_fmaf(e, r, te_splat(0x1.123fb6p-7f));\n"
      "    e = te_vm_fmaf(e, r, te_splat(0x1.555916p-5f));\n"
      "    e = te_vm_fmaf(e, r, te_splat(0x1.55548ap-3f));\n"
      "    e = te_vm_fmaf(e, r, te_splat(0x1.fffffcp-2f));\n"
      "    /* erfc = 2^n (g0 + t)(1 + r + r*r*e) = 2^n (g0 + v): the small terms of v\n"
      "       first, g0 (exact) last, folded into the final product */\n"
      "    te_v16f w = te_vm_fmaf(g0 + t, (r * r) * e, t);\n"
      "    te_v16f v = te_vm_fmaf(g0, r, te_vm_fmaf(t, r, w));\n"
      "    te_v16f scale = (te_v16f)(((te_vm_v16u)nt << 23) + 0x3f800000u);\n"
      "    te_v16f xs = (0.5f * x) * scale;   /* exact */\n"
      "    te_v16f neg = te_vm_fmaf(xs, g0, xs * v), pos = te_vm_fmaf(-xs, g0 + v, x);\n"
      "    /* x < 0 (or -0) gives a result <= 0: its sign bit set, so that a product\n"
      "       rounded to zero is -0 */\n"
      "    te_v16i m = (te_v16i)x < 0;\n"
      "    return (te_v16f)((m & ((te_v16i)neg | (-0x7fffffff - 1))) | (~m & (te_v16i)pos));\n"
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

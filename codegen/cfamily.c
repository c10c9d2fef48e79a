/* cfamily.c — the expression printer the C and the CUDA backends share.
 *
 * An expression reads the same in C11 and in CUDA C++ but for a few
 * spellings, and those are a CgDialect: the literal suffix of integer
 * helpers (te_min_i64, te_min_int), NaN and infinity (C's NAN and
 * INFINITY; CUDA has no math.h macros NVRTC accepts without headers, so
 * bit patterns), f16 and bf16 conversions (_Float16 and texc's bf16
 * helpers; cuda_fp16.h's and cuda_bf16.h's intrinsics), bool constants,
 * and the identifiers a user's name must not become.  How an element is
 * addressed differs more (a C view x[i][k], a flat CUDA x[i * 768 + k], a
 * CUDA accumulator in registers): that is the printer's element hook.
 *
 * What lives where: here, names (claiming them against the dialect's
 * reserved words and each other) and expressions, with their precedence,
 * constants, casts, calls and loads; the indentation of lines; and the
 * preludes' math helpers, written once with the dialect's qualifier
 * (static inline, TE_DEVICE) and integer type.  c.c and cuda.c keep what
 * differs: statements, stores, vector code, parallel lifting, barriers,
 * shared memory, launch code, and the prelude pieces of their own around
 * the math helpers.
 *
 * A prelude prints only what the code uses: a translation unit's body is
 * written first, then cg_print_helpers picks the pieces whose names it
 * (or a piece picked) mentions.  So no piece's text may name another
 * helper it does not need, not even in a comment.
 *
 * Arithmetic is the reference evaluator's in both: i32 values computed in
 * the printer's int_type, wrapping modulo 2^32 at every +, -, * and
 * unary - that could leave i32's range (te_add_i32 and the like, through
 * the 32-bit unsigned type, so that no overflow is undefined; what the
 * operands' ranges keep inside, index arithmetic above all, is written
 * plainly), integer division by zero 0 and INT32_MIN / -1 INT32_MIN
 * (te_div_*), float-to-int casts saturating with NaN to 0 (te_f2i,
 * te_f2i_u8, te_f2i_i8; from i32, te_sat_u8 and te_sat_i8),
 * min/max/relu propagating NaN, f16 and bf16 computed in float.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "codegen/codegen.h"

/* ------------------------------------------------------------------ */
/* Dialects.                                                           */

/* Reserved in both: C's keywords, and the library's names that generated
 * code calls or its headers may define. */
static const char *const common_reserved[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
    "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
    "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
    "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool", "true",
    "false", "main", "assert", "free", "malloc", "memcpy", "memset", "size_t", "int32_t",
    "int64_t", "uint16_t", "uint32_t", "uint64_t", "exp", "expf", "log", "logf", "sqrt",
    "sqrtf", "tanh", "tanhf", "erf", "erff", "fabs", "fabsf", "pow", "powf", "isnan",
};

/* C11's other keywords, and what the C prelude and OpenMP use. */
static const char *const c_reserved[] = {
    "_Bool", "_Complex", "_Imaginary", "_Alignas", "_Alignof", "_Atomic", "_Generic",
    "_Noreturn", "_Static_assert", "_Thread_local", "_Float16", "NULL", "errno", "abort",
    "calloc", "realloc", "aligned_alloc", "INFINITY", "NAN", "stdin", "stdout", "stderr",
    "EOF", "omp_get_thread_num",
};

/* C++'s keywords, and CUDA's built-in variables, types and functions. */
static const char *const cuda_reserved[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "catch", "class",
    "compl", "concept", "consteval", "constexpr", "constinit", "const_cast", "co_await",
    "co_return", "co_yield", "decltype", "delete", "dynamic_cast", "explicit", "export",
    "friend", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
    "operator", "or", "or_eq", "private", "protected", "public", "reinterpret_cast",
    "requires", "static_assert", "static_cast", "template", "this", "thread_local",
    "throw", "try", "typeid", "typename", "using", "virtual", "wchar_t", "xor", "xor_eq",
    "char8_t", "char16_t", "char32_t", "std", "threadIdx", "blockIdx", "blockDim",
    "gridDim", "warpSize", "dim3", "uint3", "half", "__half", "nv_bfloat16",
    "__nv_bfloat16", "rsqrt", "rsqrtf", "min", "max", "fmin", "fmax", "abs", "printf",
};

static const char *const c_prefixes[] = { "te_", "TE_", NULL };
/* "__": the CUDA headers' and NVRTC's own names */
static const char *const cuda_prefixes[] = { "te_", "TE_", "__", NULL };

#define NELEMS(a) ((int)(sizeof (a) / sizeof (a)[0]))

const CgDialect cg_dialect_c = {
    .reserved = c_reserved,
    .nreserved = NELEMS(c_reserved),
    .prefixes = c_prefixes,
    .int_suffix = "i64",
    .bool_words = false,
    .nan = { "NAN", "NAN" },
    .inf = { "INFINITY", "INFINITY" },
    .neg_inf = { "(-INFINITY)", "(-INFINITY)" },
    .load_f16 = { "(float)", "" },
    .load_bf16 = { "te_bf16_to_f32(", ")" },
    .round_f16 = { "(float)(_Float16)(", ")" },
    .round_bf16 = { "te_round_bf16(", ")" },
    .helper = "static inline",
    .i32_type = "int32_t",
    .u32_type = "uint32_t",
};

const CgDialect cg_dialect_cuda = {
    .reserved = cuda_reserved,
    .nreserved = NELEMS(cuda_reserved),
    .prefixes = cuda_prefixes,
    .c_identifiers = true,
    .int_suffix = "int",
    .bool_words = true,
    .nan = { "__int_as_float(0x7fc00000)", "__longlong_as_double(0x7ff8000000000000LL)" },
    .inf = { "__int_as_float(0x7f800000)", "__longlong_as_double(0x7ff0000000000000LL)" },
    .neg_inf = { "-__int_as_float(0x7f800000)", "-__longlong_as_double(0x7ff0000000000000LL)" },
    .load_f16 = { "__half2float(", ")" },
    .load_bf16 = { "__bfloat162float(", ")" },
    .round_f16 = { "__half2float(__float2half_rn(", "))" },
    .round_bf16 = { "__bfloat162float(__float2bfloat16_rn(", "))" },
    .helper = "TE_DEVICE",
    .i32_type = "int",
    .u32_type = "unsigned int",
};

/* ------------------------------------------------------------------ */
/* Names.                                                              */

static bool has_prefix(const CgDialect *d, const char *name)
{
    for (const char *const *pre = d->prefixes; *pre; pre++)
        if (strncmp(name, *pre, strlen(*pre)) == 0)
            return true;
    return false;
}

static int claimed(const CgPrinter *p, const char *name);

static bool name_taken(const CgPrinter *p, const char *name)
{
    for (int i = 0; i < NELEMS(common_reserved); i++)
        if (strcmp(common_reserved[i], name) == 0)
            return true;
    for (int i = 0; i < p->d->nreserved; i++)
        if (strcmp(p->d->reserved[i], name) == 0)
            return true;
    if (has_prefix(p->d, name))
        return true;
    return claimed(p, name) >= 0;
}

/* The position in P's names where NAME was claimed, if it is still
 * there; -1 if not.  Dropping the newest names leaves their entries in
 * p->name_at, so each is checked. */
static int claimed(const CgPrinter *p, const char *name)
{
    int i = strmap_get(&p->name_at, name);
    return i >= 0 && i < p->names.len && strcmp(p->names.items[i], name) == 0 ? i : -1;
}

/* The smallest free NAME_K, K >= 2, starting after the newest numbered
 * claim of NAME where that is still in use: names are dropped newest
 * first, so the ones taken before it are still in use too.  A program of
 * many stages claims i, i_2, i_3, ... in linear time.
 * (Without the u_, a te_ name would be taken however it is numbered.) */
const char *cg_claim(CgPrinter *p, const char *name)
{
    if (has_prefix(p->d, name))
        name = arena_printf(p->a, "u_%s", name);
    const char *c = name;
    if (name_taken(p, c)) {
        int k = 2;
        int n = strmap_get(&p->numbered, name);
        if (n >= 0) {
            const CgNumbered *last = p->numbered_claims.items[n];
            if (last->pos < p->names.len && p->names.items[last->pos] == last->name)
                k = last->k + 1;
        }
        for (;; k++) {
            c = arena_printf(p->a, "%s_%d", name, k);
            if (!name_taken(p, c))
                break;
        }
        CgNumbered *claim = arena_alloc(p->a, sizeof *claim);
        *claim = (CgNumbered){ c, k, p->names.len };
        strmap_set(p->a, &p->numbered, name, p->numbered_claims.len);
        vec_push(p->a, &p->numbered_claims, claim);
    }
    strmap_set(p->a, &p->name_at, c, p->names.len);
    vec_push(p->a, &p->names, (void *)c);
    return c;
}

char *cg_c_identifier(Arena *a, const char *name)
{
    size_t n = strlen(name);
    char *id = arena_alloc(a, n + 2);
    size_t k = 0;
    if (n == 0 || isdigit((unsigned char)name[0]))
        id[k++] = '_';
    for (size_t i = 0; i < n; i++)
        id[k++] = isalnum((unsigned char)name[i]) ? name[i] : '_';
    /* a file called auto.te must not define a function called auto */
    CgPrinter probe = { .a = a, .d = &cg_dialect_c };
    if (name_taken(&probe, id))
        return arena_printf(a, "%s_kernel", id);
    return id;
}

/* What the headers a generated .c (and its harness) includes declare at
 * file scope, which the entry point NAME must not redefine: C's and
 * POSIX's functions in math.h (also with f and l), stdlib.h, string.h,
 * stdio.h, unistd.h and signal.h; and whole prefixes (pthread.h,
 * sched.h, omp.h, immintrin.h, the implementation's _X and __x). */
static const char *const libc_math[] = {
    "acos", "asin", "atan", "atan2", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh",
    "sinh", "tanh", "exp", "exp2", "exp10", "expm1", "frexp", "ilogb", "ldexp", "log", "log10",
    "log1p", "log2", "logb", "modf", "scalbn", "scalbln", "scalb", "cbrt", "fabs", "hypot", "pow",
    "pow10", "sqrt", "erf", "erfc", "lgamma", "tgamma", "gamma", "ceil", "floor", "nearbyint",
    "rint", "lrint", "llrint", "round", "lround", "llround", "trunc", "fmod", "remainder",
    "remquo", "drem", "copysign", "nan", "nextafter", "nexttoward", "fdim", "fmax", "fmin",
    "fma", "j0", "j1", "jn", "y0", "y1", "yn", "significand", "sincos", "finite", "isinf",
    "isnan", "signbit", "fpclassify", "isfinite", "isnormal",
};
static const char *const libc_names[] = {
    /* stdlib.h */
    "atof", "atoi", "atol", "atoll", "strtod", "strtof", "strtold", "strtol", "strtoll",
    "strtoul", "strtoull", "rand", "srand", "rand_r", "random", "srandom", "drand48", "erand48",
    "lrand48", "nrand48", "mrand48", "jrand48", "srand48", "seed48", "lcong48", "malloc",
    "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "abort", "atexit",
    "at_quick_exit", "exit", "quick_exit", "getenv", "setenv", "unsetenv", "putenv", "system",
    "bsearch", "qsort", "abs", "labs", "llabs", "div", "ldiv", "lldiv", "mblen", "mbtowc",
    "wctomb", "mbstowcs", "wcstombs", "mkstemp", "mkdtemp", "realpath",
    /* string.h */
    "memcpy", "memmove", "memset", "memcmp", "memchr", "memccpy", "strcpy", "strncpy", "strcat",
    "strncat", "strcmp", "strncmp", "strcoll", "strxfrm", "strchr", "strrchr", "strspn",
    "strcspn", "strpbrk", "strstr", "strtok", "strtok_r", "strlen", "strnlen", "strerror",
    "strerror_r", "strdup", "strndup", "stpcpy", "stpncpy", "strsignal",
    /* stdio.h (the harness) */
    "printf", "fprintf", "sprintf", "snprintf", "dprintf", "vprintf", "vfprintf", "vsprintf",
    "vsnprintf", "scanf", "fscanf", "sscanf", "fopen", "fdopen", "freopen", "fclose", "fread",
    "fwrite", "fflush", "fgets", "fputs", "puts", "putchar", "getchar", "getc", "putc", "fgetc",
    "fputc", "ungetc", "fseek", "ftell", "rewind", "remove", "rename", "tmpfile", "tmpnam",
    "perror", "feof", "ferror", "clearerr", "setvbuf", "setbuf", "fileno", "popen", "pclose",
    "getline", "getdelim",
    /* unistd.h */
    "access", "alarm", "brk", "chdir", "chown", "close", "confstr", "crypt", "dup", "dup2",
    "execl", "execle", "execlp", "execv", "execve", "execvp", "fchown", "fchdir", "fdatasync",
    "fork", "fpathconf", "fsync", "ftruncate", "getcwd", "getegid", "geteuid", "getgid",
    "getgroups", "gethostid", "gethostname", "getlogin", "getlogin_r", "getopt", "getpagesize",
    "getpgid", "getpgrp", "getpid", "getppid", "getsid", "getuid", "isatty", "lchown", "link",
    "lockf", "lseek", "nice", "pathconf", "pause", "pipe", "pread", "pwrite", "read",
    "readlink", "rmdir", "sbrk", "setegid", "seteuid", "setgid", "setpgid", "setsid", "setuid",
    "sleep", "swab", "symlink", "sync", "sysconf", "tcgetpgrp", "tcsetpgrp", "truncate",
    "ttyname", "ttyname_r", "unlink", "usleep", "vfork", "write", "optarg", "optind", "opterr",
    "optopt", "environ",
    /* signal.h */
    "signal", "raise", "kill", "killpg", "sigaction", "sigaddset", "sigdelset", "sigemptyset",
    "sigfillset", "sigismember", "sigprocmask", "sigpending", "sigsuspend", "sigwait",
    "sigwaitinfo", "sigtimedwait", "sigqueue", "sigaltstack", "siginterrupt", "psignal",
    "psiginfo", "sighold", "sigignore", "sigpause", "sigrelse", "sigset",
};
static const char *const libc_prefixes[] = { "pthread_", "sched_", "omp_", "_mm", "__", NULL };

static bool is_libc_name(const char *id)
{
    for (const char *const *pre = libc_prefixes; *pre; pre++)
        if (strncmp(id, *pre, strlen(*pre)) == 0)
            return true;
    if (id[0] == '_' && isupper((unsigned char)id[1]))
        return true;
    for (int i = 0; i < NELEMS(libc_names); i++)
        if (strcmp(libc_names[i], id) == 0)
            return true;
    size_t n = strlen(id);
    for (int i = 0; i < NELEMS(libc_math); i++) {
        size_t m = strlen(libc_math[i]);
        if (strncmp(libc_math[i], id, m) == 0 &&
            (n == m || (n == m + 1 && (id[m] == 'f' || id[m] == 'l'))))
            return true;
    }
    return false;
}

const char *cg_entry_name(Arena *a, const char *base)
{
    const char *id = cg_c_identifier(a, base);
    return is_libc_name(id) ? arena_printf(a, "%s_kernel", id) : id;
}

/* A user's NAME as the dialect first spells it. */
static const char *user_name(CgPrinter *p, const char *name)
{
    return p->d->c_identifiers ? cg_c_identifier(p->a, name) : name;
}

const char *cg_tensor_name(CgPrinter *p, const Tensor *t)
{
    int i = map_get(&p->tensor_at, t);
    if (i >= 0 && i < p->tensors.len && p->tensors.items[i] == t)
        return p->tnames.items[i];
    const char *n = cg_claim(p, user_name(p, t->name));
    map_set(p->a, &p->tensor_at, t, p->tensors.len);
    vec_push(p->a, &p->tensors, (void *)t);
    vec_push(p->a, &p->tnames, (void *)n);
    return n;
}

void cg_same_name(CgPrinter *p, const Tensor *t, const Tensor *as)
{
    const char *n = cg_tensor_name(p, as);
    map_set(p->a, &p->tensor_at, t, p->tensors.len);
    vec_push(p->a, &p->tensors, (void *)t);
    vec_push(p->a, &p->tnames, (void *)n);
}

const char *cg_var_name(CgPrinter *p, const IterVar *v)
{
    if (v->id >= p->nvars) {
        int n = v->id + 16;
        const char **names = arena_alloc(p->a, sizeof *names * (size_t)n);
        memcpy(names, p->var_names, sizeof *names * (size_t)p->nvars);
        p->var_names = names;
        if (p->var_text) {
            const char **text = arena_alloc(p->a, sizeof *text * (size_t)n);
            memcpy(text, p->var_text, sizeof *text * (size_t)p->nvars);
            p->var_text = text;
        }
        p->nvars = n;
    }
    /* unique in the function: a stage computed inside another's loop must
     * not shadow the loop variables its bounds are computed from */
    if (!p->var_names[v->id])
        p->var_names[v->id] = cg_claim(p, user_name(p, v->name));
    return p->var_names[v->id];
}

const char *cg_compute_type(const CgPrinter *p, DType t)
{
    switch (t) {
    case DT_BOOL: return "bool";
    case DT_I32: case DT_U8: case DT_I8: return p->int_type;
    case DT_F64: return "double";
    default: return "float";
    }
}

/* ------------------------------------------------------------------ */
/* Statements' lines (the statements themselves are the backends').    */

void cg_line(CgPrinter *p, const char *fmt, ...)
{
    fprintf(p->out, "%*s", p->indent * 4, "");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->out, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Expressions.                                                        */

int cg_prec(Op op)
{
    switch (op) {
    case OP_OR: return 1;
    case OP_AND: return 2;
    case OP_EQ: case OP_NE: return 3;
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: return 4;
    case OP_ADD: case OP_SUB: return 5;
    case OP_MUL: case OP_DIV: case OP_MOD: return 6;
    default: return 7;
    }
}

static void emit_const(CgPrinter *p, DType t, double v)
{
    FILE *out = p->out;
    if (!dtype_is_float(t)) {
        if (t == DT_BOOL && p->d->bool_words)
            fputs(v != 0 ? "true" : "false", out);
        else if (v < 0)
            fprintf(out, "(%lld)", (long long)v);
        else
            fprintf(out, "%lld", (long long)v);
        return;
    }
    bool dbl = t == DT_F64;
    if (isnan(v)) {
        fputs(p->d->nan[dbl], out);
        return;
    }
    if (isinf(v)) {
        fputs(v > 0 ? p->d->inf[dbl] : p->d->neg_inf[dbl], out);
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", v);
    if (!strpbrk(buf, ".en"))
        strcat(buf, ".0");
    fprintf(out, v < 0 ? "(%s%s)" : "%s%s", buf, dbl ? "" : "f");
}

/* i32 ranges.  An i32 operation is written plainly, in int_type, where
 * its operands' ranges keep its exact result inside i32's: then the plain
 * result is the wrapped one.  Elsewhere it wraps, and its value may be any
 * i32.  A loaded i32, a cast to i32, an operand deeper than RANGE_DEPTH:
 * any i32 too. */

enum { RANGE_DEPTH = 32 };

typedef struct Range {
    int64_t lo, hi;
} Range;

static const Range any_i32 = { INT32_MIN, INT32_MAX };

static bool in_i32(Range r)
{
    return r.lo >= INT32_MIN && r.hi <= INT32_MAX;
}

static Range i32_range(const Expr *x, int depth);

/* The exact range of X (an i32 +, -, * or unary -) from its operands',
 * or false when it does not fit in int64. */
static bool exact_range(const Expr *x, int depth, Range *out)
{
    Range a = i32_range(x->args[0], depth + 1);
    if (x->op == OP_NEG)
        return !__builtin_sub_overflow(0, a.hi, &out->lo) &&
               !__builtin_sub_overflow(0, a.lo, &out->hi);
    Range b = i32_range(x->args[1], depth + 1);
    bool over = false;
    switch (x->op) {
    case OP_ADD:
        over = __builtin_add_overflow(a.lo, b.lo, &out->lo) ||
               __builtin_add_overflow(a.hi, b.hi, &out->hi);
        break;
    case OP_SUB:
        over = __builtin_sub_overflow(a.lo, b.hi, &out->lo) ||
               __builtin_sub_overflow(a.hi, b.lo, &out->hi);
        break;
    case OP_MUL: {
        int64_t c[4];
        over = __builtin_mul_overflow(a.lo, b.lo, &c[0]) ||
               __builtin_mul_overflow(a.lo, b.hi, &c[1]) ||
               __builtin_mul_overflow(a.hi, b.lo, &c[2]) ||
               __builtin_mul_overflow(a.hi, b.hi, &c[3]);
        if (over)
            break;
        *out = (Range){ c[0], c[0] };
        for (int i = 1; i < 4; i++) {
            out->lo = c[i] < out->lo ? c[i] : out->lo;
            out->hi = c[i] > out->hi ? c[i] : out->hi;
        }
        break;
    }
    default:
        TE_UNREACHABLE();
    }
    return !over;
}

static bool wraps_at(const Expr *x, int depth)
{
    if (x->kind != EX_OP || x->dtype != DT_I32)
        return false;
    if (x->op != OP_ADD && x->op != OP_SUB && x->op != OP_MUL && x->op != OP_NEG)
        return false;
    Range r;
    return !exact_range(x, depth, &r) || !in_i32(r);
}

bool cg_i32_wraps(const Expr *x)
{
    return wraps_at(x, 0);
}

/* The values X (of dtype i32 or bool) takes in the generated code. */
static Range i32_range(const Expr *x, int depth)
{
    if (x->dtype == DT_BOOL)
        return (Range){ 0, 1 };
    if (x->dtype != DT_I32 || depth > RANGE_DEPTH)
        return any_i32;
    switch (x->kind) {
    case EX_CONST:
        return (Range){ (int64_t)x->value, (int64_t)x->value };
    case EX_VAR: {
        const IterVar *v = x->var;
        if (v->extent > 0)
            return (Range){ v->lo, v->lo + v->extent - 1 };
        if (v->region_lo && v->region_trip > 0) {
            Range r = i32_range(v->region_lo, depth + 1);
            if (in_i32(r))
                return (Range){ r.lo, r.hi + v->region_trip - 1 };
        }
        return any_i32;
    }
    case EX_LOAD:
    case EX_REDUCE:
        return any_i32;
    case EX_OP:
        break;
    }
    Range a, b, r;
    switch (x->op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_NEG:
        if (!exact_range(x, depth, &r) || !in_i32(r))
            return any_i32;
        return r;
    case OP_MIN: case OP_MAX:
        a = i32_range(x->args[0], depth + 1);
        b = i32_range(x->args[1], depth + 1);
        if (x->op == OP_MIN)
            return (Range){ a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi };
        return (Range){ a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi };
    case OP_RELU:
        a = i32_range(x->args[0], depth + 1);
        return (Range){ a.lo > 0 ? a.lo : 0, a.hi > 0 ? a.hi : 0 };
    case OP_SELECT:
        a = i32_range(x->args[1], depth + 1);
        b = i32_range(x->args[2], depth + 1);
        return (Range){ a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi };
    case OP_CAST:
        return x->args[0]->dtype == DT_BOOL ? (Range){ 0, 1 } : any_i32;
    case OP_DIV:
    case OP_MOD:
        /* by a constant C > 0: C's truncating division is monotonic, and
           a remainder has its dividend's sign and is smaller than C (an
           unflattened index, q / 14 and q % 14, stays small) */
        if (x->args[1]->kind == EX_CONST && x->args[1]->value > 0) {
            int64_t c = (int64_t)x->args[1]->value;
            a = i32_range(x->args[0], depth + 1);
            if (x->op == OP_DIV)
                return (Range){ a.lo / c, a.hi / c };
            return (Range){ a.lo < 0 ? (a.lo > -(c - 1) ? a.lo : -(c - 1)) : 0,
                            a.hi > 0 ? (a.hi < c - 1 ? a.hi : c - 1) : 0 };
        }
        return any_i32;
    default:
        /* abs keeps to i32 (INT32_MIN's wrap to INT32_MIN) */
        return any_i32;
    }
}

/* "FN(args of X)". */
static void emit_call(CgPrinter *p, const char *fn, const Expr *x)
{
    fprintf(p->out, "%s(", fn);
    for (int i = 0; i < x->nargs; i++) {
        if (i)
            fputs(", ", p->out);
        cg_emit_expr(p, x->args[i], 0);
    }
    fputc(')', p->out);
}

/* The functions of the math operators: libm's or texc's helpers (the
 * preludes define te_*), in f32 and f64; integer ones are te_NAME_ and the
 * dialect's suffix, or NULL where the operator has none. */
#define CG_MATH_OPS(X)                                            \
    X(OP_EXP, "expf", "exp", NULL)                                \
    X(OP_LOG, "logf", "log", NULL)                                \
    X(OP_SQRT, "sqrtf", "sqrt", NULL)                             \
    X(OP_RSQRT, "te_rsqrt_f32", "te_rsqrt_f64", NULL)             \
    X(OP_TANH, "tanhf", "tanh", NULL)                             \
    X(OP_ERF, "erff", "erf", NULL)                                \
    X(OP_ABS, "fabsf", "fabs", "abs")                             \
    X(OP_GELU, "te_gelu_f32", "te_gelu_f64", NULL)                \
    X(OP_SIGMOID, "te_sigmoid_f32", "te_sigmoid_f64", NULL)       \
    X(OP_RELU, "te_relu_f32", "te_relu_f64", "relu")              \
    X(OP_POW, "powf", "pow", NULL)                                \
    X(OP_MIN, "te_min_f32", "te_min_f64", "min")                  \
    X(OP_MAX, "te_max_f32", "te_max_f64", "max")

/* The function for OP computed in type T. */
static const char *func_name(CgPrinter *p, Op op, DType t)
{
    const char *f32 = NULL, *f64 = NULL, *integer = NULL;
    switch (op) {
#define X(o, s, d, i) case o: f32 = s; f64 = d; integer = i; break;
    CG_MATH_OPS(X)
#undef X
    default: TE_UNREACHABLE();
    }
    if (t == DT_I32 && integer)
        return arena_printf(p->a, "te_%s_%s", integer, p->d->int_suffix);
    return t == DT_F64 ? f64 : f32;
}

/* OPEN X CLOSE, X printed whole (precedence 0 inside) */
static void emit_around(CgPrinter *p, const char *const around[2], const Expr *x)
{
    fputs(around[0], p->out);
    cg_emit_expr(p, x, 0);
    fputs(around[1], p->out);
}

static void emit_cast(CgPrinter *p, const Expr *x)
{
    DType to = x->dtype, from = x->args[0]->dtype;
    const Expr *v = x->args[0];
    if (to == DT_BOOL) {
        fputs("(", p->out);
        cg_emit_expr(p, v, 3);
        fputs(" != 0)", p->out);
    } else if (to == DT_I32 && dtype_is_float(from)) {
        emit_call(p, "te_f2i", x);
    } else if (dtype_is_narrow_int(to) && from != DT_BOOL && from != to) {
        emit_call(p, arena_printf(p->a, "te_%s_%s", dtype_is_float(from) ? "f2i" : "sat", dtype_name(to)), x);
    } else if (to == DT_F16) {
        emit_around(p, p->d->round_f16, v);
    } else if (to == DT_BF16) {
        emit_around(p, p->d->round_bf16, v);
    } else {
        fprintf(p->out, "(%s)", cg_compute_type(p, to));
        cg_emit_expr(p, v, 7);
    }
}

/* A load, converted to the type it is computed in: i32 values widen to
 * int_type, where the arithmetic that could leave i32's range wraps;
 * f16 and bf16 become float. */
static void emit_load(CgPrinter *p, const Expr *x)
{
    const Tensor *t = x->tensor;
    const char *open = "", *close = "";
    if (!p->computed || !p->computed(p, t, x->args)) {
        if (t->dtype == DT_I32)
            open = arena_printf(p->a, "(%s)", p->int_type);
        else if (t->dtype == DT_F16)
            open = p->d->load_f16[0], close = p->d->load_f16[1];
        else if (t->dtype == DT_BF16)
            open = p->d->load_bf16[0], close = p->d->load_bf16[1];
    }
    fputs(open, p->out);
    p->element(p, t, x->args);
    fputs(close, p->out);
}

/* A variable replaced by text: parenthesised unless it is a name or it
 * stands where a sum needs no parentheses. */
static void emit_var_text(CgPrinter *p, const char *text, int prec)
{
    bool simple = strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789_") == strlen(text);
    fprintf(p->out, simple || prec <= 5 ? "%s" : "(%s)", text);
}

void cg_emit_expr(CgPrinter *p, const Expr *x, int prec)
{
    FILE *out = p->out;
    switch (x->kind) {
    case EX_CONST:
        emit_const(p, x->dtype, x->value);
        return;
    case EX_VAR:
        if (p->var_text && x->var->id < p->nvars && p->var_text[x->var->id])
            emit_var_text(p, p->var_text[x->var->id], prec);
        else
            fputs(cg_var_name(p, x->var), out);
        return;
    case EX_LOAD:
        emit_load(p, x);
        return;
    case EX_REDUCE:
        TE_UNREACHABLE();
    case EX_OP:
        break;
    }
    DType t = x->nargs ? x->args[0]->dtype : x->dtype;
    switch (x->op) {
    case OP_NEG:
    case OP_NOT:
        if (cg_i32_wraps(x)) {
            emit_call(p, "te_neg_i32", x);
            return;
        }
        fputs(x->op == OP_NEG ? "-" : "!", out);
        cg_emit_expr(p, x->args[0], 7);
        return;
    case OP_CAST:
        emit_cast(p, x);
        return;
    case OP_SELECT:
        fputc('(', out);
        cg_emit_expr(p, x->args[0], 1);
        fputs(" ? ", out);
        cg_emit_expr(p, x->args[1], 1);
        fputs(" : ", out);
        cg_emit_expr(p, x->args[2], 1);
        fputc(')', out);
        return;
    case OP_DIV:
    case OP_MOD:
        if (t == DT_I32) {
            /* C's / and % trap on 0 and on INT_MIN / -1 */
            int64_t c;
            if (!sch_const_int(x->args[1], &c) || c == 0 || c == -1) {
                const char *f = x->op == OP_DIV ? "div" : "mod";
                emit_call(p, arena_printf(p->a, "te_%s_%s", f, p->d->int_suffix), x);
                return;
            }
        }
        break;
    case OP_ADD: case OP_SUB: case OP_MUL:
        if (cg_i32_wraps(x)) {
            const char *f = x->op == OP_ADD ? "add" : x->op == OP_SUB ? "sub" : "mul";
            emit_call(p, arena_printf(p->a, "te_%s_i32", f), x);
            return;
        }
        break;
    case OP_LT: case OP_LE: case OP_GT:
    case OP_GE: case OP_EQ: case OP_NE: case OP_AND: case OP_OR:
        break;
    default:
        emit_call(p, func_name(p, x->op, t), x);
        return;
    }
    int q = cg_prec(x->op);
    if (q < prec)
        fputc('(', out);
    cg_emit_expr(p, x->args[0], q);
    fprintf(out, " %s ", op_text(x->op));
    cg_emit_expr(p, x->args[1], q + 1);
    if (q < prec)
        fputc(')', out);
}

/* ------------------------------------------------------------------ */
/* Preludes.                                                           */

/* The helpers cg_emit_expr's code calls (and stores, te_sat_i32), in the
 * reference evaluator's arithmetic. */
static const CgHelper math_helpers[] = {
    { "te_rsqrt_f32", "$Q float te_rsqrt_f32(float x) { return 1.0f / sqrtf(x); }\n" },
    { "te_rsqrt_f64", "$Q double te_rsqrt_f64(double x) { return 1.0 / sqrt(x); }\n" },
    { "te_gelu_f32",
      "$Q float te_gelu_f32(float x) { return 0.5f * x * (1.0f + erff(x * 0.707106781f)); }\n" },
    { "te_gelu_f64",
      "$Q double te_gelu_f64(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752)); }\n" },
    { "te_sigmoid_f32", "$Q float te_sigmoid_f32(float x) { return 1.0f / (1.0f + expf(-x)); }\n" },
    { "te_sigmoid_f64", "$Q double te_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }\n" },
    { "te_min_f32 te_max_f32 te_min_f64 te_max_f64 te_relu_f32 te_relu_f64",
      "/* min, max and relu propagate NaN, like the reference evaluator */\n" },
    { "te_min_f32", "$Q float te_min_f32(float a, float b) { return a < b || a != a ? a : b; }\n" },
    { "te_max_f32", "$Q float te_max_f32(float a, float b) { return a > b || a != a ? a : b; }\n" },
    { "te_min_f64", "$Q double te_min_f64(double a, double b) { return a < b || a != a ? a : b; }\n" },
    { "te_max_f64", "$Q double te_max_f64(double a, double b) { return a > b || a != a ? a : b; }\n" },
    { "te_relu_f32", "$Q float te_relu_f32(float x) { return x > 0.0f || x != x ? x : 0.0f; }\n" },
    { "te_relu_f64", "$Q double te_relu_f64(double x) { return x > 0.0 || x != x ? x : 0.0; }\n" },
    { "te_min_$S", "$Q $I te_min_$S($I a, $I b) { return a < b ? a : b; }\n" },
    { "te_max_$S", "$Q $I te_max_$S($I a, $I b) { return a > b ? a : b; }\n" },
    { "te_abs_$S", "$Q $I te_abs_$S($I a) { return a < 0 && a != -2147483647 - 1 ? -a : a; }\n" },
    { "te_relu_$S", "$Q $I te_relu_$S($I a) { return a > 0 ? a : 0; }\n" },
    { "te_sat_i32", "/* an i32 stage's value saturates to the i32 range when stored */\n"
                    "$Q $W te_sat_i32($I a) { return a > 2147483647 ? 2147483647 : "
                    "a < -2147483647 - 1 ? -2147483647 - 1 : ($W)a; }\n" },
    { "te_div_$S te_mod_$S", "/* integer division by zero is 0, and INT32_MIN / -1 wraps, as in the\n"
                             " * reference evaluator */\n" },
    { "te_div_$S", "$Q $I te_div_$S($I a, $I b)\n"
                   "{\n"
                   "    return b == 0 ? 0 : b == -1 ? (a == -2147483647 - 1 ? a : -a) : a / b;\n"
                   "}\n" },
    { "te_mod_$S", "$Q $I te_mod_$S($I a, $I b) { return b == 0 || b == -1 ? 0 : a % b; }\n" },
    { "te_add_i32 te_sub_i32 te_mul_i32 te_neg_i32",
      "/* i32 arithmetic wraps modulo 2^32, as in the reference evaluator */\n" },
    { "te_wrap_i32", "$Q $I te_wrap_i32($U u)\n"
                     "{\n"
                     "    return u < 0x80000000u ? ($I)u : ($I)(u - 0x80000000u) - 2147483647 - 1;\n"
                     "}\n" },
    { "te_add_i32", "$Q $I te_add_i32($I a, $I b) { return te_wrap_i32(($U)a + ($U)b); }\n" },
    { "te_sub_i32", "$Q $I te_sub_i32($I a, $I b) { return te_wrap_i32(($U)a - ($U)b); }\n" },
    { "te_mul_i32", "$Q $I te_mul_i32($I a, $I b) { return te_wrap_i32(($U)a * ($U)b); }\n" },
    { "te_neg_i32", "$Q $I te_neg_i32($I a) { return te_wrap_i32(0u - ($U)a); }\n" },
    { "te_sat_u8 te_sat_i8 te_f2i_u8 te_f2i_i8",
      "/* casts to u8 and i8 saturate; from a float toward zero, NaN to 0 */\n" },
    { "te_sat_u8", "$Q $I te_sat_u8($I a) { return a > 255 ? 255 : a < 0 ? 0 : a; }\n" },
    { "te_sat_i8", "$Q $I te_sat_i8($I a) { return a > 127 ? 127 : a < -128 ? -128 : a; }\n" },
    { "te_f2i_u8", "$Q $I te_f2i_u8(double x) { return x != x ? 0 : x >= 255.0 ? 255 : x <= 0.0 ? 0 : ($I)x; }\n" },
    { "te_f2i_i8",
      "$Q $I te_f2i_i8(double x) { return x != x ? 0 : x >= 127.0 ? 127 : x <= -128.0 ? -128 : ($I)x; }\n" },
    { "te_f2i", "/* float to i32: NaN is 0, out of range saturates */\n"
                "$Q $I te_f2i(double x)\n"
                "{\n"
                "    return x != x ? 0 : x >= 2147483647.0 ? 2147483647 : "
                "x <= -2147483648.0 ? -2147483647 - 1 : ($I)x;\n"
                "}\n" },
};

/* TEXT with the $ names of CgHelper replaced. */
static char *expand(CgPrinter *p, const char *text)
{
    size_t cap = strlen(text) + 1;
    for (const char *c = strchr(text, '$'); c; c = strchr(c + 1, '$'))
        cap += 32;
    char *r = arena_alloc(p->a, cap), *w = r;
    for (const char *c = text; *c; c++) {
        const char *sub = NULL;
        if (*c == '$') {
            switch (c[1]) {
            case 'Q': sub = p->d->helper; break;
            case 'I': sub = p->int_type; break;
            case 'W': sub = p->d->i32_type; break;
            case 'U': sub = p->d->u32_type; break;
            case 'S': sub = p->d->int_suffix; break;
            }
        }
        if (!sub) {
            *w++ = *c;
            continue;
        }
        size_t n = strlen(sub);
        TE_ASSERT(n <= 32);
        memcpy(w, sub, n);
        w += n;
        c++;
    }
    *w = 0;
    return r;
}

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Does TEXT use the identifier NAME (of length N)? */
static bool uses(const char *text, const char *name, size_t n)
{
    for (const char *c = text; (c = strstr(c, name)); c++) {
        /* a whole identifier, not a part of a longer one */
        if ((c == text || !ident_char(c[-1])) && !ident_char(c[n]))
            return true;
    }
    return false;
}

/* The next of the space-separated names at *C, into NAME (64 bytes);
 * false past the last. */
static bool next_name(const char **c, char *name)
{
    if (!**c)
        return false;
    size_t n = strcspn(*c, " ");
    TE_ASSERT(n > 0 && n < 64);
    memcpy(name, *c, n);
    name[n] = 0;
    *c += n;
    *c += **c == ' ';
    return true;
}

/* Does TEXT use one of the space-separated NAMES? */
static bool uses_any(const char *text, const char *names)
{
    char name[64];
    for (const char *c = names; next_name(&c, name);)
        if (uses(text, name, strlen(name)))
            return true;
    return false;
}

/* Which of the space-separated NAMES are whole identifiers in TEXT: those
 * NAMES holds, each once (strings), set in USED.  One pass over TEXT,
 * however many names there are: a body can be tens of megabytes. */
static void identifiers_in(Arena *a, const char *text, const PtrMap *names, PtrMap *used)
{
    char id[64];
    for (const char *c = text; *c;) {
        if (!ident_char(*c)) {
            c++;
            continue;
        }
        const char *start = c;
        while (ident_char(*c))
            c++;
        size_t n = (size_t)(c - start);
        if (n >= sizeof id)
            continue; /* longer than any name (uses_any's bound) */
        memcpy(id, start, n);
        id[n] = 0;
        if (strmap_get(names, id) >= 0 && strmap_get(used, id) < 0)
            strmap_set(a, used, arena_strdup(a, id), 0);
    }
}

/* Is one of the space-separated NAMES in USED? */
static bool any_used(const PtrMap *used, const char *names)
{
    char name[64];
    for (const char *c = names; next_name(&c, name);)
        if (strmap_get(used, name) >= 0)
            return true;
    return false;
}

/* Adds the space-separated NAMES to the string set SET. */
static void add_names(Arena *a, PtrMap *set, const char *names)
{
    for (const char *c = names; *c;) {
        size_t n = strcspn(c, " ");
        strmap_set(a, set, arena_strndup(a, c, n), 0);
        c += n;
        c += *c == ' ';
    }
}

void cg_print_helpers(CgPrinter *p, FILE *out, const CgHelper *before, int nbefore,
                      const CgHelper *after, int nafter, const char *body)
{
    int n = nbefore + NELEMS(math_helpers) + nafter;
    const char **names = arena_alloc(p->a, sizeof *names * (size_t)n);
    const char **texts = arena_alloc(p->a, sizeof *texts * (size_t)n);
    bool *chosen = arena_alloc(p->a, sizeof *chosen * (size_t)n);
    for (int i = 0; i < n; i++) {
        const CgHelper *h = i < nbefore ? &before[i]
                            : i < nbefore + NELEMS(math_helpers) ? &math_helpers[i - nbefore]
                            : &after[i - nbefore - NELEMS(math_helpers)];
        names[i] = expand(p, h->names);
        texts[i] = expand(p, h->text);
        chosen[i] = false;
    }
    /* what the body uses, then what those use, until nothing is added */
    PtrMap defined = {0}, in_body = {0};
    for (int i = 0; i < n; i++)
        add_names(p->a, &defined, names[i]);
    identifiers_in(p->a, body, &defined, &in_body);
    for (bool grew = true; grew;) {
        grew = false;
        for (int i = 0; i < n; i++) {
            if (chosen[i])
                continue;
            bool used = any_used(&in_body, names[i]);
            for (int j = 0; j < n && !used; j++)
                used = chosen[j] && uses_any(texts[j], names[i]);
            if (used)
                chosen[i] = grew = true;
        }
    }
    for (int i = 0; i < n; i++)
        if (chosen[i])
            fputs(texts[i], out);
}

/* ------------------------------------------------------------------ */
/* The header comment's schedule.                                      */

void cg_print_schedule_comment(FILE *out, const SchedState *st, const CodegenOptions *o)
{
    if (o->schedule_from)
        fprintf(out, " * schedule: %s\n", o->schedule_from);
    else
        fputs(" * schedule:\n", out);
    for (int i = 0; i < st->trace.len; i++) {
        fputs(" *   ", out);
        sch_print_trace_stmt(out, st->trace.items[i]);
    }
}

/* ------------------------------------------------------------------ */
/* Header macros.                                                      */

char *cg_upper(Arena *a, const char *s)
{
    char *u = arena_strdup(a, s);
    for (char *c = u; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    return u;
}

const char *cg_size_c(Arena *a, const SizeExpr *e, const char *const *leaf)
{
    switch (e->kind) {
    case SZ_NUM:
        return arena_printf(a, "%lldLL", (long long)e->value);
    case SZ_DIM:
        return leaf[e->dim];
    case SZ_MIN:
    case SZ_MAX: {
        const char *x = cg_size_c(a, e->a, leaf), *y = cg_size_c(a, e->b, leaf);
        return arena_printf(a, "(%s %s %s ? %s : %s)", x, e->kind == SZ_MIN ? "<" : ">", y, x, y);
    }
    default: {
        static const char *const ops[] = { TE_SIZE_KINDS(TE_ENUM_NAME) };
        return arena_printf(a, "(%s %s %s)", cg_size_c(a, e->a, leaf), ops[e->kind],
                            cg_size_c(a, e->b, leaf));
    }
    }
}

/* Is NAME in TAKEN? */
static bool macro_taken(const PtrVec *taken, const char *name)
{
    for (int i = 0; i < taken->len; i++)
        if (strcmp(taken->items[i], name) == 0)
            return true;
    return false;
}

void cg_print_dim_macros(Arena *a, FILE *h, const char *name, const Graph *g, PtrVec *taken)
{
    /* a run-time dim's macros are M_MIN and M_MAX: each must be free */
    for (int d = 0; d < g->ndims; d++) {
        const Dim *dim = &g->dims[d];
        const char *m = cg_upper(a, arena_printf(a, "%s_%s", name, dim->name));
        for (int k = 2;; k++) {
            bool clash = dim->runtime ? macro_taken(taken, arena_printf(a, "%s_MIN", m)) ||
                                            macro_taken(taken, arena_printf(a, "%s_MAX", m))
                                      : macro_taken(taken, m);
            if (!clash)
                break;
            m = cg_upper(a, arena_printf(a, "%s_%s_%d", name, dim->name, k));
        }
        if (dim->runtime) {
            vec_push(a, taken, arena_printf(a, "%s_MIN", m));
            vec_push(a, taken, arena_printf(a, "%s_MAX", m));
            fprintf(h, "#define %s_MIN %lld /* %s: a run-time size%s%s */\n#define %s_MAX %lld\n", m,
                    (long long)dim->lo, dim->name, dim->declared ? ", an argument" : " = ",
                    dim->declared ? "" : te_size_str(a, dim->size), m, (long long)dim->hi);
        } else {
            vec_push(a, taken, (void *)m);
            fprintf(h, "#define %s %lld\n", m, (long long)dim->value);
        }
    }
}

/* ------------------------------------------------------------------ */
/* The run-time sizes' API.                                            */

const char *cg_sizes_decl(Arena *a, const CgSizes *s)
{
    if (!s->n)
        return "void";
    const char *t = "";
    for (int i = 0; i < s->n; i++)
        t = arena_printf(a, "%s%sint64_t %s", t, i ? ", " : "", s->names[i]);
    return t;
}

void cg_print_sizes_functions(Arena *a, FILE *c, const CgSizes *s)
{
    const Graph *g = s->g;
    fprintf(c, "\n%sint %s(%s)\n{\n    return ", s->qual, s->check, cg_sizes_decl(a, s));
    for (int i = 0; i < s->n; i++) {
        const Dim *d = &g->dims[s->dims[i]];
        fprintf(c, "%s%s >= %lld && %s <= %lld", i ? " && " : "", s->names[i], (long long)d->lo,
                s->names[i], (long long)d->hi);
    }
    /* the checks over the parameters, for every size in the ranges */
    const char **leaf = arena_alloc(a, sizeof *leaf * (size_t)(g->ndims + 1));
    for (int i = 0; i < s->n; i++)
        leaf[s->dims[i]] = s->names[i];
    for (int i = 0; i < g->nchecks; i++)
        fprintf(c, " &&\n           %s >= 0", cg_size_c(a, g->checks[i].value, leaf));
    fprintf(c, " ? 0 : %s;\n}\n", s->erange);
    fprintf(c, "\n%sconst char *%s_strerror(int code)\n{\n    switch (code) {\n"
               "    case 0:\n        return \"success\";\n    case %s:\n        return \"",
            s->qual, s->name, s->erange);
    fputs("a run-time size is outside its range (", c);
    for (int i = 0; i < s->n; i++) {
        const Dim *d = &g->dims[s->dims[i]];
        fprintf(c, "%s%s in %lld..%lld", i ? ", " : "", d->name, (long long)d->lo, (long long)d->hi);
    }
    fputs(g->nchecks ? ") or the sizes fail a check the header lists" : ")", c);
    fputs("\";\n    default:\n        return \"unknown error code\";\n    }\n}\n", c);
}

void cg_print_variant_of(Arena *a, FILE *c, const CgSizes *s, const CgVariant *v, int n)
{
    const Graph *g = s->g;
    int varying = 0; /* dims along which the buckets differ */
    for (int k = 0; k < s->n; k++)
        for (int i = 1; i < n; i++)
            if (v[i].bucket->lo[s->dims[k]] != v[0].bucket->lo[s->dims[k]]) {
                varying++;
                break;
            }
    fprintf(c, "\n%sint %s_variant(%s)\n{\n", s->qual, s->name, cg_sizes_decl(a, s));
    fprintf(c, "    if (%s(", s->check);
    for (int i = 0; i < s->n; i++)
        fprintf(c, "%s%s", i ? ", " : "", s->names[i]);
    fprintf(c, ") != 0)\n        return %s;\n", s->erange);
    for (int i = 0; i + 1 < n; i++) {
        const Bucket *b = v[i].bucket;
        fputs("    if (", c);
        const char *sep = "";
        for (int k = 0; k < s->n; k++) {
            int d = s->dims[k];
            if (b->lo[d] > g->dims[d].lo && varying != 1) {
                fprintf(c, "%s%s >= %lld", sep, s->names[k], (long long)b->lo[d]);
                sep = " && ";
            }
            if (b->hi[d] < g->dims[d].hi) {
                fprintf(c, "%s%s <= %lld", sep, s->names[k], (long long)b->hi[d]);
                sep = " && ";
            }
        }
        fprintf(c, "%s) /* %s */\n        return %d;\n", *sep ? "" : "1", sch_bucket_str(a, g, b), i);
    }
    fprintf(c, "    return %d; /* %s */\n}\n", n - 1,
            v[n - 1].bucket ? sch_bucket_str(a, g, v[n - 1].bucket) : "every size");
}

/* S as a C string literal's contents */
static const char *c_string(Arena *a, const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++)
        n += *p == '"' || *p == '\\' || *p == '\n' ? 2 : 1;
    char *out = arena_alloc(a, n + 1), *o = out;
    for (const char *p = s; *p; p++) {
        if (*p == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        } else {
            if (*p == '"' || *p == '\\')
                *o++ = '\\';
            *o++ = *p;
        }
    }
    *o = 0;
    return out;
}

void cg_print_variant_table(Arena *a, FILE *out, const CgSizes *s, const CgVariant *v, int n,
                            bool define)
{
    const Graph *g = s->g;
    const char *up = cg_upper(a, s->name);
    bool own = *s->qual != 0; /* the header's own: no .c defines it */
    if (!define) {
        fprintf(out, "\n/* The compiled variants, in the order the functions try them: the\n"
                     " * sizes each serves (inclusive; lo[i] and hi[i] are the i-th run-time\n"
                     " * dim's), its schedule, one statement a line, and where that came from. */\n");
        fprintf(out, "struct %s_variant {\n    int64_t lo[%d], hi[%d];\n    const char *schedule, *from;\n};\n",
                s->name, s->n, s->n);
        fprintf(out, "#define %s_NVARIANTS %d\n", up, n);
        if (own)
            return;
        fprintf(out, "extern const struct %s_variant %s_variants[%s_NVARIANTS];\n", s->name, s->name, up);
        fprintf(out, "/* The index in %s_variants of the variant that runs at these sizes, or\n"
                     " * %s: the whole of the dispatch a call makes. */\n", s->name, s->erange);
        fprintf(out, "int %s_variant(%s);\n\n", s->name, cg_sizes_decl(a, s));
        return;
    }
    fprintf(out, "\n%sconst struct %s_variant %s_variants[%s_NVARIANTS] = {\n", own ? "static " : "",
            s->name, s->name, up);
    for (int i = 0; i < n; i++) {
        fputs("    { {", out);
        for (int k = 0; k < s->n; k++) {
            int d = s->dims[k];
            fprintf(out, "%s%lld", k ? ", " : " ", (long long)(v[i].bucket ? v[i].bucket->lo[d] : g->dims[d].lo));
        }
        fputs(" }, {", out);
        for (int k = 0; k < s->n; k++) {
            int d = s->dims[k];
            fprintf(out, "%s%lld", k ? ", " : " ", (long long)(v[i].bucket ? v[i].bucket->hi[d] : g->dims[d].hi));
        }
        fprintf(out, " },\n      \"%s\",\n      \"%s\" },\n", c_string(a, v[i].schedule ? v[i].schedule : ""),
                c_string(a, v[i].from ? v[i].from : ""));
    }
    fputs("};\n", out);
}

/* nvrtc.c — the cuda target's build: the architecture, NVRTC, and the
 * NAME.cubin + NAME.h pair other programs use.
 *
 * requires: a lowered function and its SchedState.
 * guarantees: cg_cuda_build
 *   - picks the architecture: --arch sm_XX[a|f] (checked against the list
 *     NVRTC gives), or the local device's through libtexrt, or says there
 *     is none and names the flag;
 *   - emits the CUDA C (cuda.c), prints it for --dump=cuda, compiles it
 *     with NVRTC to a cubin; a failure shows NVRTC's log with the source
 *     line each message is about; -v prints each kernel's registers,
 *     shared memory and spills (ptxas's report);
 *   - unless --check, writes PREFIX.cubin (not with --embed), PREFIX.h and,
 *     with --keep, PREFIX.cu as one output set (output.c): each first as
 *     PATH.tmp, all renamed once all are written, none left behind on an
 *     error.
 * The header (see write_header) is C and C++: the sizes, the architecture,
 * the texc and NVRTC versions, one texc_cuda_kernel per kernel (name,
 * grid, block, shared memory), one texc_cuda_tensor per input and output,
 * and static inline functions that load the cubin and launch the kernels
 * through libtexrt (texrt.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h" /* first: config.h says whether NVRTC is here */
#include "runtime/texrt.h"

#ifdef TEXC_HAVE_CUDA
#include <nvrtc.h>
#endif

#ifdef TEXC_HAVE_CUDA

/* A target: sm_90 is {90, 0}, sm_90a {90, 'a'}, sm_100f {100, 'f'}. */
typedef struct Arch {
    int sm;
    char suffix;
    const char *name;
} Arch;

static bool parse_arch(const char *text, Arch *out)
{
    if (strncmp(text, "sm_", 3) != 0 || !isdigit((unsigned char)text[3]))
        return false;
    char *end;
    long sm = strtol(text + 3, &end, 10);
    if (sm < 10 || sm > 999)
        return false;
    out->sm = (int)sm;
    out->suffix = 0;
    if (*end == 'a' || *end == 'f')
        out->suffix = *end++;
    out->name = text;
    return *end == '\0';
}

/* Checks ARCH against NVRTC's list; prints what it supports if not. */
static bool arch_supported(const Arch *arch, int major, int minor)
{
    int n = 0;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
        return true; /* NVRTC will say */
    int *list = malloc(sizeof *list * (size_t)n);
    if (!list || nvrtcGetSupportedArchs(list) != NVRTC_SUCCESS) {
        free(list);
        return true;
    }
    bool found = false;
    for (int i = 0; i < n; i++)
        found = found || list[i] == arch->sm;
    /* architecture-specific targets: sm_90a and later; families: sm_100f and later */
    bool suffix_ok = arch->suffix == 0 || (arch->suffix == 'a' && arch->sm >= 90) ||
                     (arch->suffix == 'f' && arch->sm >= 100);
    if (!found || !suffix_ok) {
        fprintf(stderr, "texc: --arch %s: NVRTC %d.%d cannot compile for it; it supports", arch->name,
                major, minor);
        for (int i = 0; i < n; i++)
            fprintf(stderr, " sm_%d", list[i]);
        fprintf(stderr, " (and sm_XXa from sm_90, sm_XXf from sm_100)\n");
    }
    free(list);
    return found && suffix_ok;
}

/* The architecture to build for: --arch, or device 0's. */
static bool pick_arch(Arena *a, const CudaOptions *o, Arch *arch, int major, int minor)
{
    if (o->arch) {
        if (!parse_arch(o->arch, arch)) {
            fprintf(stderr, "texc: --arch %s: expected sm_XX, sm_XXa or sm_XXf (e.g. --arch sm_90)\n",
                    o->arch);
            return false;
        }
        return arch_supported(arch, major, minor);
    }
    int count = 0, sm = 0;
    if (texrt_device_count(&count) != TEXRT_OK || count == 0) {
        fprintf(stderr, "texc: no CUDA device here (%s): pass --arch sm_XX (e.g. --arch sm_90)\n",
                count == 0 && !*texrt_last_error() ? "the driver reports none" : texrt_last_error());
        return false;
    }
    if (texrt_device_arch(0, &sm) != TEXRT_OK) {
        fprintf(stderr, "texc: cannot read the architecture of device 0 (%s): pass --arch sm_XX\n",
                texrt_last_error());
        return false;
    }
    arch->sm = sm;
    arch->suffix = 0;
    arch->name = arena_printf(a, "sm_%d", sm);
    if (o->verbose) {
        char name[128] = "";
        texrt_device_name(0, name, sizeof name);
        fprintf(stderr, "texc: building for %s, the architecture of device 0 (%s)\n", arch->name,
                name);
    }
    return arch_supported(arch, major, minor);
}

/* Prints NVRTC's LOG; after each "FILE(LINE): ..." message, that line of
 * SOURCE. */
static void print_log(const char *log, const char *file, const char *source)
{
    size_t flen = strlen(file);
    for (const char *p = log; *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        fprintf(stderr, "  %.*s\n", (int)n, p);
        long lineno = 0;
        if (n > flen + 2 && strncmp(p, file, flen) == 0 && p[flen] == '(')
            lineno = strtol(p + flen + 1, NULL, 10);
        if (lineno > 0) {
            const char *s = source;
            for (long l = 1; l < lineno && s; l++) {
                s = strchr(s, '\n');
                if (s)
                    s++;
            }
            if (s) {
                const char *end = strchr(s, '\n');
                fprintf(stderr, "  %5ld | %.*s\n", lineno, (int)(end ? end - s : (long)strlen(s)), s);
            }
        }
        p = eol ? eol + 1 : p + n;
    }
}

/* The number just before WORD in LINE ("128 bytes smem"), or 0. */
static long number_before(const char *line, const char *eol, const char *word)
{
    const char *w = strstr(line, word);
    if (!w || w > eol)
        return 0;
    while (w > line && w[-1] == ' ')
        w--;
    while (w > line && isdigit((unsigned char)w[-1]))
        w--;
    return strtol(w, NULL, 10);
}

/* -v: ptxas's report, one line per kernel:
 *   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
 *   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 40 registers, used 1 barriers, 16384 bytes smem, ... */
static void print_resources(const char *log)
{
    char name[256] = "?";
    long stack = 0, stores = 0, loads = 0;
    for (const char *line = log; *line;) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            eol = line + strlen(line);
        const char *c = strstr(line, "Compiling entry function '");
        if (c && c < eol) {
            c += strlen("Compiling entry function '");
            const char *q = memchr(c, '\'', (size_t)(eol - c));
            snprintf(name, sizeof name, "%.*s", (int)(q ? q - c : eol - c), c);
            stack = stores = loads = 0;
        }
        const char *frame = strstr(line, "bytes stack frame");
        if (frame && frame < eol) {
            stack = number_before(line, eol, "bytes stack frame");
            stores = number_before(line, eol, "bytes spill stores");
            loads = number_before(line, eol, "bytes spill loads");
        }
        const char *used = strstr(line, "Used ");
        if (used && used < eol) {
            long regs = strtol(used + 5, NULL, 10);
            long smem = number_before(line, eol, "bytes smem");
            fprintf(stderr,
                    "texc: kernel %s: %ld registers, %ld bytes of static shared memory, "
                    "%ld bytes of stack, spills: %ld bytes stored, %ld loaded%s\n",
                    name, regs, smem, stack, stores, loads,
                    stores || loads ? " (slow: a smaller register tile would avoid them)" : "");
        }
        line = *eol ? eol + 1 : eol;
    }
}

/* Compiles SOURCE for ARCH; the cubin is malloc'ed. */
static bool compile(const char *file, const char *source, const Arch *arch, bool verbose,
                    char **cubin, size_t *cubin_size)
{
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, source, file, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "texc: NVRTC: %s\n", nvrtcGetErrorString(r));
        return false;
    }
    char gpu[64], include[512];
    snprintf(gpu, sizeof gpu, "--gpu-architecture=%s", arch->name);
    snprintf(include, sizeof include, "--include-path=%s/include", TEXC_CUDA_HOME);
    const char *opts[] = { gpu, "--std=c++17", "-lineinfo", include, "--ptxas-options=-v" };
    int nopts = verbose ? 5 : 4;
    r = nvrtcCompileProgram(prog, nopts, opts);
    size_t log_size = 0;
    char *log = NULL;
    if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        log = malloc(log_size);
        if (log && nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
            log[0] = '\0';
    }
    bool ok = r == NVRTC_SUCCESS;
    if (!ok) {
        fprintf(stderr,
                "texc: internal error: NVRTC could not compile the generated CUDA C for %s (%s); "
                "its log:\n",
                arch->name, nvrtcGetErrorString(r));
        if (log)
            print_log(log, file, source);
        fputs("texc: this is a bug in texc; --dump=cuda prints the whole source\n", stderr);
    } else if (verbose && log) {
        print_resources(log);
    }
    free(log);
    if (ok) {
        ok = nvrtcGetCUBINSize(prog, cubin_size) == NVRTC_SUCCESS && *cubin_size > 0 &&
             (*cubin = malloc(*cubin_size)) != NULL && nvrtcGetCUBIN(prog, *cubin) == NVRTC_SUCCESS;
        if (!ok)
            fprintf(stderr, "texc: NVRTC produced no cubin for %s\n", arch->name);
    }
    nvrtcDestroyProgram(&prog);
    return ok;
}

bool cg_nvrtc_compile(const char *file, const char *source, const char *arch, bool verbose,
                      char **cubin, size_t *cubin_size)
{
    Arch a;
    if (!parse_arch(arch, &a)) {
        fprintf(stderr, "texc: internal error: bad architecture '%s'\n", arch);
        return false;
    }
    return compile(file, source, &a, verbose, cubin, cubin_size);
}

void cg_nvrtc_version(int *major, int *minor)
{
    *major = *minor = 0;
    nvrtcVersion(major, minor);
}

/* ------------------------------------------------------------------ */
/* The header.                                                         */

typedef struct Header {
    Arena *a;
    FILE *h;
    const char *name;      /* the identifier: NAME_load, ... */
    const char *macro;     /* NAME in capitals */
    const Graph *g;
    const CudaProgram *p;
    PtrVec cnames;         /* const char *: C names of the launch function's parameters */
    PtrVec ctensors;       /* ... and their tensors (NULL: a run-time dim) */
    const CgVariant *variants; /* the program's variants (one without run-time dims) */
    CgSizes sizes;         /* with run-time dims: the sizes' API (cfamily.c) */
    const char **leaf;     /* by Graph.dims index: a run-time dim's parameter */
} Header;

/* C and C++ keywords and the launchers' own names, which a tensor's
 * parameter must not take. */
static const char *const header_reserved[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "bool", "true", "false", "class", "new",
    "delete", "this", "template", "typename", "namespace", "operator", "private", "public",
    "protected", "virtual", "friend", "using", "nullptr", "module", "workspace", "kernel",
    "rc", "args", "tensors", "device", "cubin_path", "weights",
};

/* A parameter's C name from BASE: not a keyword, not the launchers' own,
 * not another parameter's; T its tensor (NULL: a run-time dim's). */
static const char *claim_param(Header *hd, const Tensor *t, const char *base)
{
    const char *n = cg_c_identifier(hd->a, base);
    for (bool clash = true; clash;) {
        clash = false;
        for (size_t i = 0; i < sizeof header_reserved / sizeof header_reserved[0]; i++)
            clash = clash || strcmp(n, header_reserved[i]) == 0;
        for (int i = 0; i < hd->cnames.len; i++)
            clash = clash || strcmp(n, hd->cnames.items[i]) == 0;
        if (clash)
            n = arena_printf(hd->a, "%s_", n);
    }
    vec_push(hd->a, &hd->ctensors, (void *)t);
    vec_push(hd->a, &hd->cnames, (void *)n);
    return n;
}

static const char *param_name(Header *hd, const Tensor *t)
{
    for (int i = 0; i < hd->ctensors.len; i++)
        if (hd->ctensors.items[i] == t)
            return hd->cnames.items[i];
    return claim_param(hd, t, t->name);
}

/* The header's own macros, NAME_... : a dim's macro must not take one. */
static const char *const own_macros[] = {
    "ARCH", "SM", "TEXC_VERSION", "NVRTC_VERSION", "CUBIN", "NKERNELS", "NTENSORS",
    "WORKSPACE_BYTES", "ERANGE", "NVARIANTS", "NDIMS",
};

/* #define NAME_DIM value for each dim; a clash with another dim's macro or
 * the header's own gets a suffix, _2, _3, ... */
static void write_dims(Header *hd)
{
    PtrVec macros = {0};
    for (size_t i = 0; i < sizeof own_macros / sizeof own_macros[0]; i++)
        vec_push(hd->a, &macros, cg_upper(hd->a, arena_printf(hd->a, "%s_%s", hd->name, own_macros[i])));
    cg_print_dim_macros(hd->a, hd->h, hd->name, hd->g, &macros);
}

static const char types[] =
    "#ifndef TEXC_CUDA_TYPES\n"
    "#define TEXC_CUDA_TYPES\n"
    "/* A kernel of a texc program and how it is launched. */\n"
    "typedef struct texc_cuda_kernel {\n"
    "    const char *name;     /* its symbol in the cubin */\n"
    "    unsigned grid[3];     /* blocks along x, y, z */\n"
    "    unsigned block[3];    /* threads per block along x, y, z */\n"
    "    unsigned dyn_smem;    /* bytes of dynamic shared memory to launch with */\n"
    "    unsigned static_smem; /* bytes of static shared memory it declares */\n"
    "} texc_cuda_kernel;\n"
    "\n"
    "/* An input or output of a texc program: a row-major array. */\n"
    "typedef struct texc_cuda_tensor {\n"
    "    const char *name;\n"
    "    const char *dtype;    /* f32 f64 f16 bf16 i32 bool */\n"
    "    int rank;\n"
    "    int64_t shape[16];\n"
    "    uint64_t bytes;\n"
    "    int is_output;\n"
    "} texc_cuda_tensor;\n"
    "#endif\n\n";

static void write_tensor_comment(Arena *a, FILE *h, const Tensor *t, const char *what)
{
    fprintf(h, "\n *   %s %s : %s%s[", what, t->name, t->is_const ? "const " : "", dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++)
        if (t->shape_size[d])
            fprintf(h, "%s%s", d ? ", " : "", te_size_str(a, t->shape_size[d]));
        else
            fprintf(h, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    fputc(']', h);
}

/* "x, w, b, z" or "uint64_t x, uint64_t w, ..."; with run-time dims,
 * "M, x, ..." or "int64_t M, uint64_t x, ..." */
static void write_params(Header *hd, bool typed, bool dims)
{
    const Graph *g = hd->g;
    for (int k = 0; dims && k < hd->sizes.n; k++)
        fprintf(hd->h, "%s%s, ", typed ? "int64_t " : "", hd->sizes.names[k]);
    for (int i = 0; i < g->ninputs + g->noutputs; i++) {
        const Tensor *t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
        fprintf(hd->h, "%s%s%s", i ? ", " : "", typed ? "uint64_t " : "", param_name(hd, t));
    }
}

/* "int64_t M, " (the run-time dims as the launchers' first parameters) or "" */
static const char *dims_params(Header *hd)
{
    return hd->sizes.n ? arena_printf(hd->a, "%s, ", cg_sizes_decl(hd->a, &hd->sizes)) : "";
}

/* NAME_FN_dims(BEFORE, const int64_t *dims, AFTER): NAME_FN with the
 * run-time sizes from an array (for harnesses). */
static void write_dims_form(Header *hd, const char *ret, const char *fn, const char *before,
                            const char *after, const char *before_args, const char *after_args)
{
    FILE *h = hd->h;
    fprintf(h, "/* %s_%s with DIMS the run-time sizes in order (%s_dim_names). */\n", hd->name, fn,
            hd->name);
    fprintf(h, "static inline %s %s_%s_dims(%sconst int64_t *dims, %s)\n{\n    return %s_%s(%s", ret,
            hd->name, fn, before, after, hd->name, fn, before_args);
    for (int k = 0; k < hd->sizes.n; k++)
        fprintf(h, "dims[%d], ", k);
    fprintf(h, "%s);\n}\n", after_args);
}

/* With run-time dims: the sizes' API, the variants, and the shapes and
 * workspace at given sizes; all the header's own (it has no .c). */
static void write_sizes(Header *hd)
{
    FILE *h = hd->h;
    const Graph *g = hd->g;
    const CgSizes *sz = &hd->sizes;
    const char *n = hd->name, *M = hd->macro;
    int ntensors = g->ninputs + g->noutputs;
    fputs("\n/* Run-time sizes.  The launchers take", h);
    for (int i = 0; i < sz->n; i++)
        fprintf(h, "%s %s", i == 0 ? "" : i + 1 < sz->n ? "," : " and", sz->names[i]);
    fprintf(h, " first (in the order the\n * program declares %s) and return TEXRT_OK, a TEXRT_E_* code, or\n"
               " * %s with nothing launched when a size is outside its range (the\n"
               " * _MIN and _MAX macros above)",
            sz->n > 1 ? "them" : "it", sz->erange);
    if (g->nchecks) {
        fputs(" or one of these checks fails:", h);
        for (int i = 0; i < g->nchecks; i++)
            fprintf(h, "\n *   %s >= 0 (%s)", te_size_str(hd->a, g->checks[i].value), g->checks[i].message);
    }
    fprintf(h, ".\n * %s tells without launching anything; %s_strerror(code)\n"
               " * says what %s means (texrt_last_error() the others). */\n",
            sz->check, n, sz->erange);
    fprintf(h, "#define %s_NDIMS %d /* run-time sizes */\n", M, sz->n);
    fprintf(h, "static const char *const %s_dim_names[%s_NDIMS] = {", n, M);
    for (int k = 0; k < sz->n; k++)
        fprintf(h, "%s\"%s\"", k ? ", " : " ", g->dims[sz->dims[k]].name);
    fputs(" };\n", h);
    fprintf(h, "#define %s (-100) /* not a TEXRT_E_* code */\n", sz->erange);
    cg_print_sizes_functions(hd->a, h, sz);
    cg_print_variant_table(hd->a, h, sz, hd->variants, hd->p->nvariants, false);
    cg_print_variant_table(hd->a, h, sz, hd->variants, hd->p->nvariants, true);
    cg_print_variant_of(hd->a, h, sz, hd->variants, hd->p->nvariants);
    fprintf(h, "\n/* Tensor I of %s_tensors at these sizes: its shape into SHAPE (its rank's\n"
               " * entries; NULL: not wanted) and its bytes, or 0 when a size is outside its\n"
               " * range.  (%s_tensors holds the shapes and bytes at the ranges' maxima.) */\n", n, n);
    fprintf(h, "static inline uint64_t %s_tensor_shape(%sint i, int64_t *shape)\n{\n", n, dims_params(hd));
    fputs("    int64_t s[16];\n    int rank;\n    uint64_t bytes;\n    if (", h);
    fprintf(h, "%s(", sz->check);
    for (int k = 0; k < sz->n; k++)
        fprintf(h, "%s%s", k ? ", " : "", sz->names[k]);
    fputs(") != 0)\n        return 0;\n    switch (i) {\n", h);
    for (int i = 0; i < ntensors; i++) {
        const Tensor *t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
        fprintf(h, "    case %d: /* %s */\n        rank = %d;\n        bytes = %d;\n", i, t->name, t->rank,
                dtype_bytes(t->dtype));
        for (int d = 0; d < t->rank; d++)
            fprintf(h, "        s[%d] = %s;\n", d,
                    t->shape_size[d] ? cg_size_c(hd->a, t->shape_size[d], hd->leaf)
                                     : arena_printf(hd->a, "%lld", (long long)t->shape[d]));
        fputs("        break;\n", h);
    }
    fputs("    default:\n        return 0;\n    }\n", h);
    fputs("    for (int d = 0; d < rank; d++) {\n"
          "        bytes *= (uint64_t)s[d];\n        if (shape)\n            shape[d] = s[d];\n    }\n", h);
    fputs("    return bytes;\n}\n", h);
    fputc('\n', h);
    write_dims_form(hd, "uint64_t", "tensor_shape", "", "int i, int64_t *shape", "", "i, shape");
    fprintf(h, "\n/* The workspace the launchers need at these sizes: %s_WORKSPACE_BYTES, enough for\n"
               " * every size in the ranges. */\n", M);
    fprintf(h, "static inline uint64_t %s_workspace_size(%s)\n{\n", n, cg_sizes_decl(hd->a, sz));
    for (int k = 0; k < sz->n; k++)
        fprintf(h, "    (void)%s;\n", sz->names[k]);
    fprintf(h, "    return %s_WORKSPACE_BYTES;\n}\n\n", M);
}

/* One kernel's launch in NAME_launch: GRID its own, or the table's. */
static void write_kernel_launch(Header *hd, int i, const char *indent)
{
    FILE *h = hd->h;
    const CudaKernel *k = &hd->p->kernels[i];
    bool sized = k->grid_size[0] || k->grid_size[1] || k->grid_size[2];
    fprintf(h, "%s{\n", indent);
    if (sized) {
        fprintf(h, "%s    const unsigned grid[3] = {", indent);
        for (int ax = 0; ax < 3; ax++)
            if (k->grid_size[ax])
                fprintf(h, "%s(unsigned)%s", ax ? ", " : " ", cg_size_c(hd->a, k->grid_size[ax], hd->leaf));
            else
                fprintf(h, "%s%u", ax ? ", " : " ", k->grid[ax]);
        fputs(" };\n", h);
    }
    fprintf(h, "%s    void *args[] = {", indent);
    for (int j = 0; j < hd->p->nrt; j++)
        fprintf(h, "%s&te_%s", j ? ", " : " ", hd->sizes.names[j]);
    for (int j = 0; j < k->nparams; j++)
        fprintf(h, "%s&%s", j + hd->p->nrt ? ", " : " ", param_name(hd, k->params[j]));
    fprintf(h, "%s};\n", k->nparams + hd->p->nrt ? " " : " NULL ");
    fprintf(h, "%s    const texc_cuda_kernel *info = &%s_kernels[%d];\n", indent, hd->name, i);
    fprintf(h, "%s    if ((rc = texrt_kernel_get(module, info->name, &kernel)) != TEXRT_OK ||\n"
               "%s        (rc = texrt_launch(kernel, %s, info->block, info->dyn_smem, args)) != TEXRT_OK)\n"
               "%s        return rc;\n%s}\n",
            indent, indent, sized ? "grid" : "info->grid", indent, indent);
}

/* NAME_launch with run-time dims: the sizes checked and the variant
 * chosen by NAME_variant, then its kernels, each grid computed from the
 * sizes. */
static void write_launch_dynamic(Header *hd)
{
    FILE *h = hd->h;
    const Graph *g = hd->g;
    const CudaProgram *p = hd->p;
    const char *n = hd->name, *M = hd->macro;
    int ntensors = g->ninputs + g->noutputs;
    fprintf(h, "/* Launches the kernels of the variant for these sizes, asynchronously, on the\n"
               " * device pointers TENSORS (in the order of %s_tensors, each of\n"
               " * %s_tensor_shape's bytes at these sizes), with WORKSPACE (%s_WORKSPACE_BYTES\n"
               " * of device memory, 64-byte aligned as texrt_dev_alloc's is; ignored when\n"
               " * that is 0) for the intermediates.  A size outside its range launches\n"
               " * nothing and returns %s. */\n", n, n, M, hd->sizes.erange);
    fprintf(h, "static inline int %s_launch(texrt_module *module, %suint64_t workspace, const uint64_t *tensors)\n{\n",
            n, dims_params(hd));
    for (int i = 0; i < ntensors; i++) {
        const Tensor *t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
        fprintf(h, "    uint64_t %s = tensors[%d];\n", param_name(hd, t), i);
    }
    for (int k = 0; k < p->nrt; k++)
        fprintf(h, "    %s te_%s = (%s)%s; /* the kernels' parameter */\n", p->int_type,
                hd->sizes.names[k], p->int_type, hd->sizes.names[k]);
    fputs("    texrt_kernel *kernel;\n    int rc;\n    (void)workspace;\n", h);
    fprintf(h, "    switch (%s_variant(", n);
    for (int k = 0; k < p->nrt; k++)
        fprintf(h, "%s%s", k ? ", " : "", hd->sizes.names[k]);
    fputs(")) {\n", h);
    for (int v = 0; v < p->nvariants; v++) {
        const CudaVariant *cv = &p->variants[v];
        fprintf(h, "    case %d: { /* %s */\n", v,
                hd->variants[v].bucket ? sch_bucket_str(hd->a, g, hd->variants[v].bucket) : "every size");
        int mark = hd->cnames.len; /* a variant's intermediates are its own */
        for (int i = 0; i < cv->ntemps; i++)
            fprintf(h, "        uint64_t %s = workspace + %lldu; /* intermediate */\n",
                    param_name(hd, cv->temps[i]), (long long)cv->temp_offsets[i]);
        for (int i = cv->first; i < cv->first + cv->nkernels; i++)
            write_kernel_launch(hd, i, "        ");
        fputs("        return TEXRT_OK;\n    }\n", h);
        hd->cnames.len = hd->ctensors.len = mark;
    }
    fprintf(h, "    default:\n        return %s;\n    }\n}\n\n", hd->sizes.erange);
    write_dims_form(hd, "int", "launch", "texrt_module *module, ",
                    "uint64_t workspace, const uint64_t *tensors", "module, ", "workspace, tensors");
    fputc('\n', h);
}

static bool write_header(Arena *a, FILE *h, const CodegenOptions *co, const CudaOptions *o,
                         const Graph *g, const CgVariant *variants, const CudaProgram *p,
                         const Arch *arch, int major, int minor, const char *cubin_path,
                         const char *cubin, size_t cubin_size)
{
    Header hd = { a, h, co->name, cg_upper(a, co->name), g, p, {0}, {0}, variants, {0}, NULL };
    const char *n = co->name, *M = hd.macro;
    int ntensors = g->ninputs + g->noutputs;
    if (p->nrt) {
        /* the run-time dims: the launchers' first parameters, named first */
        const char **names = arena_alloc(a, sizeof *names * (size_t)p->nrt);
        hd.leaf = arena_alloc(a, sizeof *hd.leaf * (size_t)(g->ndims + 1));
        for (int k = 0; k < p->nrt; k++)
            hd.leaf[p->rt_dims[k]] = names[k] = claim_param(&hd, NULL, g->dims[p->rt_dims[k]].name);
        hd.sizes = (CgSizes){ g, n, p->nrt, p->rt_dims, names,
                              arena_printf(a, "%s_check_sizes", n),
                              cg_upper(a, arena_printf(a, "%s_ERANGE", n)), "static inline " };
    }
    fprintf(h, "/* %s.h — generated by texc %s from %s (target cuda, %s, NVRTC %d.%d).\n", n,
            TE_VERSION, co->source_path, arch->name, major, minor);
    if (co->schedule_from)
        fprintf(h, " * Schedule: %s.\n", co->schedule_from);
    fprintf(h, " *\n * Runs %s on the GPU through libtexrt (cc ... $(pkg-config --cflags --libs texrt)):\n *\n", n);
    fprintf(h, " *   texrt_module *m;\n");
    fprintf(h, " *   if (%s_load(&m, NULL, 0) != TEXRT_OK)      (NULL: %s)\n", n,
            o->embed ? "the cubin embedded below" : "the cubin texc wrote");
    fprintf(h, " *       fprintf(stderr, \"%%s\\n\", texrt_last_error());\n");
    fprintf(h, " *   %s_run(m, ", n);
    write_params(&hd, false, true);
    fprintf(h, ");   (device pointers)\n");
    fprintf(h, " *   texrt_module_unload(m);\n *\n");
    if (co->weights) {
        fprintf(h, " * or, the model's weights loaded once from the file texc wrote (below):\n *\n");
        fprintf(h, " *   char err[256];\n");
        fprintf(h, " *   %s_weights *w = %s_load_weights(\"%s.weights\", 0, err, sizeof err);\n", n, n,
                o->prefix);
        fprintf(h, " *   %s_run_weights(m, w, <sizes, >real inputs, outputs);\n", n);
        fprintf(h, " *   %s_free_weights(w);\n *\n", n);
    }
    fprintf(h, " * The tensors, row-major:");
    for (int i = 0; i < g->ninputs; i++)
        write_tensor_comment(a, h, g->inputs[i], "input ");
    for (int i = 0; i < g->noutputs; i++)
        write_tensor_comment(a, h, g->outputs[i], "output");
    fprintf(h, "\n *\n * Do not edit: regenerate with texc.\n */\n");
    fprintf(h, "#ifndef TEXC_%s_CUDA_H\n#define TEXC_%s_CUDA_H\n\n", M, M);
    if (co->weights) /* the weights' reader's */
        fputs("#include <errno.h>\n#include <stdarg.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
              "#include <string.h>\n", h);
    fputs("#include <stdint.h>\n\n#include <texrt.h>\n\n", h);
    fputs("#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", h);
    write_dims(&hd);
    fprintf(h, "#define %s_ARCH \"%s\"           /* the cubin's architecture */\n", M, arch->name);
    fprintf(h, "#define %s_SM %d\n", M, arch->sm);
    fprintf(h, "#define %s_TEXC_VERSION \"%s\"\n", M, TE_VERSION);
    fprintf(h, "#define %s_NVRTC_VERSION \"%d.%d\"\n", M, major, minor);
    if (!o->embed)
        fprintf(h, "#define %s_CUBIN \"%s\"      /* where texc wrote it */\n", M, cubin_path);
    fprintf(h, "#define %s_NKERNELS %d\n", M, p->nkernels);
    fprintf(h, "#define %s_NTENSORS %d          /* inputs, then outputs */\n", M, ntensors);
    fprintf(h, "#define %s_WORKSPACE_BYTES %lld /* device memory for intermediates%s */\n\n", M,
            (long long)p->workspace_bytes, p->nrt ? ", enough for every size in the ranges" : "");
    fputs(types, h);

    if (p->nrt)
        fprintf(h, "/* The kernels, in launch order, variant by variant (a grid here is its\n"
                   " * bound in the variant's bucket; %s_launch computes it from the sizes). */\n", n);
    else
        fprintf(h, "/* The kernels, in launch order. */\n");
    fprintf(h, "static const texc_cuda_kernel %s_kernels[%d] = {\n", n, p->nkernels);
    for (int i = 0; i < p->nkernels; i++) {
        const CudaKernel *k = &p->kernels[i];
        fprintf(h, "    { \"%s\", { %u, %u, %u }, { %u, %u, %u }, %u, %u }, /* stage %s%s */\n", k->name,
                k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2],
                k->dyn_smem, k->static_smem, k->stage,
                p->nvariants > 1 ? arena_printf(a, ", variant %d", k->variant) : "");
    }
    fputs("};\n\n", h);
    fprintf(h, "static const texc_cuda_tensor %s_tensors[%d] = {\n", n, ntensors);
    for (int i = 0; i < ntensors; i++) {
        const Tensor *t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
        fprintf(h, "    { \"%s\", \"%s\", %d, {", t->name, dtype_name(t->dtype), t->rank);
        for (int d = 0; d < t->rank; d++)
            fprintf(h, "%s%lld", d ? ", " : " ", (long long)t->shape[d]);
        fprintf(h, "%s}, %lluull, %d },\n", t->rank ? " " : "",
                (unsigned long long)(tensor_elems(t) * dtype_bytes(t->dtype)), i >= g->ninputs);
    }
    fputs("};\n\n", h);
    if (p->nrt)
        write_sizes(&hd);

    if (o->embed) {
        fprintf(h, "/* %s.cubin, %zu bytes. */\n", n, cubin_size);
        fprintf(h, "static const unsigned char %s_cubin_image[%zu] __attribute__((aligned(64))) = {", n,
                cubin_size);
        for (size_t i = 0; i < cubin_size; i++)
            fprintf(h, "%s0x%02x,", i % 16 ? " " : "\n    ", (unsigned char)cubin[i]);
        fputs("\n};\n\n", h);
    }

    /* NAME_load */
    fprintf(h, "/* Loads the cubin (CUBIN_PATH, or %s when NULL) on DEVICE and finds its\n"
               " * kernels.  A cubin of another architecture than the device's is refused\n"
               " * with a message naming both (texrt_last_error()). */\n",
            o->embed ? "the image above" : arena_printf(a, "%s_CUBIN", M));
    fprintf(h, "static inline int %s_load(texrt_module **module, const char *cubin_path, int device)\n{\n", n);
    if (o->embed)
        fprintf(h, "    int rc = cubin_path ? texrt_module_load_file(module, cubin_path, device)\n"
                   "                        : texrt_module_load(module, %s_cubin_image, sizeof %s_cubin_image,\n"
                   "                                            \"%s.cubin\", device);\n",
                n, n, n);
    else
        fprintf(h, "    int rc = texrt_module_load_file(module, cubin_path ? cubin_path : %s_CUBIN, device);\n", M);
    fprintf(h, "    for (int i = 0; rc == TEXRT_OK && i < %s_NKERNELS; i++) {\n"
               "        texrt_kernel *kernel;\n"
               "        rc = texrt_kernel_get(*module, %s_kernels[i].name, &kernel);\n"
               "        if (rc != TEXRT_OK) {\n"
               "            texrt_module_unload(*module);\n"
               "            *module = NULL;\n"
               "        }\n"
               "    }\n"
               "    return rc;\n}\n\n",
            M, n);

    /* NAME_launch: the kernels on TENSORS (in NAME_tensors order) */
    if (p->nrt)
        write_launch_dynamic(&hd);
    else {
    fprintf(h, "/* Launches the kernels, asynchronously, on the device pointers TENSORS\n"
               " * (in the order of %s_tensors), with WORKSPACE (%s_WORKSPACE_BYTES of\n"
               " * device memory, 64-byte aligned as texrt_dev_alloc's is; ignored when\n"
               " * that is 0) for the intermediates, which share it as texc's memory plan\n"
               " * says (texc --dump=memory). */\n", n, M);
    fprintf(h, "static inline int %s_launch(texrt_module *module, uint64_t workspace, const uint64_t *tensors)\n{\n", n);
    for (int i = 0; i < ntensors; i++) {
        const Tensor *t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
        fprintf(h, "    uint64_t %s = tensors[%d];\n", param_name(&hd, t), i);
    }
    for (int i = 0; i < p->ntemps; i++)
        fprintf(h, "    uint64_t %s = workspace + %lldu; /* intermediate */\n", param_name(&hd, p->temps[i]),
                (long long)p->temp_offsets[i]);
    if (p->ntemps == 0)
        fputs("    (void)workspace;\n", h);
    fputs("    texrt_kernel *kernel;\n    int rc;\n", h);
    for (int i = 0; i < p->nkernels; i++) {
        const CudaKernel *k = &p->kernels[i];
        fprintf(h, "    {\n        void *args[] = {");
        for (int j = 0; j < k->nparams; j++)
            fprintf(h, "%s&%s", j ? ", " : " ", param_name(&hd, k->params[j]));
        fprintf(h, "%s};\n", k->nparams ? " " : " NULL ");
        fprintf(h, "        const texc_cuda_kernel *info = &%s_kernels[%d];\n", n, i);
        fputs("        if ((rc = texrt_kernel_get(module, info->name, &kernel)) != TEXRT_OK ||\n"
              "            (rc = texrt_launch(kernel, info->grid, info->block, info->dyn_smem, args)) != TEXRT_OK)\n"
              "            return rc;\n    }\n", h);
    }
    fputs("    return TEXRT_OK;\n}\n\n", h);
    }

    /* NAME_run_ws and NAME_run */
    fprintf(h, "/* The same with the tensors as parameters; asynchronous. */\n");
    fprintf(h, "static inline int %s_run_ws(texrt_module *module, %suint64_t workspace, ", n,
            dims_params(&hd));
    write_params(&hd, true, false);
    fprintf(h, ")\n{\n    const uint64_t tensors[%d] = { ", ntensors);
    write_params(&hd, false, false);
    fprintf(h, " };\n    return %s_launch(module, ", n);
    for (int k = 0; k < p->nrt; k++)
        fprintf(h, "%s, ", hd.sizes.names[k]);
    fputs("workspace, tensors);\n}\n\n", h);
    fprintf(h, "/* Runs %s and waits for it: allocates the workspace, launches, synchronizes. */\n", n);
    fprintf(h, "static inline int %s_run(texrt_module *module, ", n);
    write_params(&hd, true, true);
    fputs(")\n{\n    uint64_t workspace = 0;\n    int rc = TEXRT_OK;\n", h);
    if (p->nrt) {
        fprintf(h, "    if (%s(", hd.sizes.check);
        for (int k = 0; k < p->nrt; k++)
            fprintf(h, "%s%s", k ? ", " : "", hd.sizes.names[k]);
        fprintf(h, ") != 0)\n        return %s;\n", hd.sizes.erange);
    }
    if (p->workspace_bytes > 0)
        fprintf(h, "    if ((rc = texrt_dev_alloc(&workspace, %s_WORKSPACE_BYTES)) != TEXRT_OK)\n"
                   "        return rc;\n", M);
    fprintf(h, "    rc = %s_run_ws(module, ", n);
    for (int k = 0; k < p->nrt; k++)
        fprintf(h, "%s, ", hd.sizes.names[k]);
    fputs("workspace, ", h);
    write_params(&hd, false, false);
    fputs(");\n    if (rc == TEXRT_OK)\n        rc = texrt_synchronize();\n", h);
    if (p->workspace_bytes > 0)
        fputs("    texrt_dev_free(workspace);\n", h);
    fputs("    return rc;\n}\n\n", h);
    if (co->weights) { /* an imported model: its weights' API (weights.c) */
        const char **cnames = arena_alloc(a, sizeof *cnames * (size_t)(ntensors + 1));
        for (int i = 0; i < ntensors; i++)
            cnames[i] = param_name(&hd, i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs]);
        cg_emit_weights_cuda(a, g, co->weights, n, cnames, hd.sizes.names, hd.sizes.n, h);
    }
    fprintf(h, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
    return !ferror(h);
}

int cg_cuda_sm(const char *arch_opt)
{
    Arch arch;
    if (arch_opt)
        return parse_arch(arch_opt, &arch) ? arch.sm : 0;
    int count = 0, sm = 0;
    if (texrt_device_count(&count) != TEXRT_OK || count == 0 || texrt_device_arch(0, &sm) != TEXRT_OK)
        return 0;
    return sm;
}

int cg_cuda_build(const CgVariant *variants, int nvariants, const CodegenOptions *co,
                  const CudaOptions *o)
{
    SchedState *st = variants[0].st;
    Arena *a = st->arena;
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    Arch arch;
    if (!pick_arch(a, o, &arch, major, minor))
        return 1;
    CudaProgram prog;
    if (!cg_cuda_emit_variants(variants, nvariants, co, arch.name, arch.sm, &prog))
        return 1;
    if (o->dump)
        fputs(prog.source, stdout);
    for (int i = 0; o->verbose && i < prog.nkernels; i++) {
        const CudaKernel *k = &prog.kernels[i];
        unsigned threads = k->block[0] * k->block[1] * k->block[2];
        fprintf(stderr, "texc: kernel %s (stage %s): grid (%u, %u, %u), block (%u, %u, %u)%s\n",
                k->name, k->stage, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
                k->block[2],
                threads == 1 ? ": one thread per block (bind loops to thread.x/y/z to use more)" : "");
        if (k->how)
            fprintf(stderr, "texc: kernel %s: %s\n", k->name, k->how);
    }
    char *cubin = NULL;
    size_t cubin_size = 0;
    const char *cu_file = arena_printf(a, "%s.cu", co->name);
    if (!compile(cu_file, prog.source, &arch, o->verbose, &cubin, &cubin_size))
        return 1;
    if (o->check_only) {
        free(cubin);
        return 0;
    }

    const char *cubin_path = arena_printf(a, "%s.cubin", o->prefix);
    const char *h_path = arena_printf(a, "%s.h", o->prefix);
    const char *cu_path = arena_printf(a, "%s.cu", o->prefix);
    /* one set (output.c): all three in place, or none */
    OutputSet out = { .arena = a };
    FILE *cb = o->embed ? NULL : cg_output_open(&out, cubin_path, true);
    FILE *hf = cg_output_open(&out, h_path, false);
    FILE *cu = o->keep ? cg_output_open(&out, cu_path, false) : NULL;
    const char *w_path = arena_printf(a, "%s.weights", o->prefix);
    FILE *wf = co->weights ? cg_output_open(&out, w_path, true) : NULL;
    bool ok = !out.failed;
    if (ok && !o->embed)
        ok = fwrite(cubin, 1, cubin_size, cb) == cubin_size;
    if (ok)
        ok = write_header(a, hf, co, o, st->g, variants, &prog, &arch, major, minor, cubin_path,
                          cubin, cubin_size);
    if (ok && o->keep)
        ok = fputs(prog.source, cu) >= 0;
    if (ok && wf && !cg_write_weights(st->g, co->weights, wf)) {
        if (!ferror(wf))
            fprintf(stderr, "texc: cannot write %s: %s\n", w_path, strerror(errno));
        ok = false;
    }
    free(cubin);
    if (!cg_output_commit(&out, ok))
        return 1;
    if (o->verbose) {
        fprintf(stderr, "texc: wrote %s", h_path);
        if (!o->embed)
            fprintf(stderr, " and %s", cubin_path);
        if (o->keep)
            fprintf(stderr, " and %s", cu_path);
        if (wf)
            fprintf(stderr, " and %s", w_path);
        fprintf(stderr, " (%s, %d kernel%s)\n", arch.name, prog.nkernels, prog.nkernels == 1 ? "" : "s");
    }
    return 0;
}

#else /* !TEXC_HAVE_CUDA */

bool cg_nvrtc_compile(const char *file, const char *source, const char *arch, bool verbose,
                      char **cubin, size_t *cubin_size)
{
    (void)file;
    (void)source;
    (void)arch;
    (void)verbose;
    *cubin = NULL;
    *cubin_size = 0;
    fputs("texc: the cuda target was disabled at configure time (no NVRTC found)\n", stderr);
    return false;
}

void cg_nvrtc_version(int *major, int *minor)
{
    *major = *minor = 0;
}

int cg_cuda_sm(const char *arch_opt)
{
    (void)arch_opt;
    return 0;
}

int cg_cuda_build(const CgVariant *variants, int nvariants, const CodegenOptions *co,
                  const CudaOptions *o)
{
    (void)variants;
    (void)nvariants;
    (void)co;
    (void)o;
    fputs("texc: the cuda target was disabled at configure time (no NVRTC found); "
          "reconfigure with --with-cuda=DIR\n", stderr);
    return 1;
}

#endif

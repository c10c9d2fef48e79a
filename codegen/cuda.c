/* cuda.c — placeholder until the CUDA backend is written. */
#include "codegen/codegen.h"

int cg_cuda_build(SchedState *st, const LoweredFunc *fn, const CodegenOptions *co,
                  const CudaOptions *o)
{
    (void)st;
    (void)fn;
    (void)co;
    (void)o;
    fputs("texc: the cuda target does not generate code yet; use --target cpu\n", stderr);
    return 1;
}

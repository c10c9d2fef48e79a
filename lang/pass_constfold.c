/* pass_constfold.c — placeholder until the pass is written: changes nothing. */
#include "texc.h"

bool te_pass_constfold(OptCtx *c, Graph *g)
{
    (void)c;
    (void)g;
    return true;
}

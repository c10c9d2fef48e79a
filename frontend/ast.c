/* ast.c — AST construction and the --dump=ast printer.
 *
 * Nodes come from the parser's arena and are never freed one by one; a
 * node's kids grow by doubling, which the arena makes cheap enough for the
 * few kids a node has.
 */
#include <string.h>

#include "frontend/frontend.h"

static const char *const node_kind_names[] = {
#define X(e) #e,
    FE_NODE_KINDS(X)
#undef X
};

const char *fe_node_kind_name(NodeKind k)
{
    return node_kind_names[k];
}

Node *node_new(Parser *p, NodeKind kind, Span sp)
{
    Node *n = arena_alloc(p->arena, sizeof *n);
    n->kind = kind;
    n->span = sp;
    return n;
}

void node_add(Parser *p, Node *parent, Node *kid)
{
    /* the room kept beside the array: appending a node's thousands of
       kids takes linear time and memory */
    PtrVec v = { (void **)parent->kids, parent->nkids, parent->kids_cap };
    vec_push(p->arena, &v, kid);
    parent->kids = (Node **)v.items;
    parent->nkids = v.len;
    parent->kids_cap = v.cap;
    /* Trees are built bottom-up, so depths are known without recursion;
     * fe_parse refuses a tree that the recursive passes could not walk. */
    if (kid->depth + 1 > parent->depth)
        parent->depth = kid->depth + 1;
    bool is_expr = parent->kind == N_ACCESS || parent->kind == N_UNARY ||
                   parent->kind == N_BINARY || parent->kind == N_CALL ||
                   parent->kind == N_REDUCE;
    if (is_expr && parent->depth > FE_MAX_DEPTH && !p->too_deep)
        p->too_deep = parent;
}

Span span_join(Span a, Span b)
{
    return (Span){ a.begin < b.begin ? a.begin : b.begin,
                   a.end > b.end ? a.end : b.end };
}

static void print_node(FILE *out, const Node *n, int depth)
{
    fprintf(out, "%*s%s", depth * 2, "", fe_node_kind_name(n->kind) + 2);
    if (n->name)
        fprintf(out, " %s", n->name);
    switch (n->kind) {
    case N_NUM:
        fprintf(out, n->is_int ? " %.0f" : " %.17g", n->num);
        break;
    case N_UNARY:
    case N_BINARY:
        fprintf(out, " '%s'", op_text(n->op));
        break;
    case N_INPUT:
        fprintf(out, " : %s%s", n->is_const ? "const " : "", n->dtype_name);
        break;
    case N_DIM:
        if (n->is_range)
            fputs(n->nkids == 3 ? " in LO..HI = HINT" : " in LO..HI", out);
        break;
    default:
        break;
    }
    fprintf(out, " @%u..%u\n", n->span.begin, n->span.end);
    for (int i = 0; i < n->nkids; i++)
        print_node(out, n->kids[i], depth + 1);
    if (n->kind == N_SCHEDULE && n->sched)
        sch_print(out, n->sched);
}

void fe_print_ast(FILE *out, const Program *prog)
{
    for (int i = 0; i < prog->nitems; i++)
        print_node(out, prog->items[i], 0);
}

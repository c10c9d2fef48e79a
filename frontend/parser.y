/* parser.y — the .te grammar.
 *
 * A pure Bison parser with locations (byte spans), LAC and custom syntax
 * errors that name what was expected.  It builds the AST of frontend.h and
 * the schedule AST of sched/sched.h; it resolves nothing (sema.c does)
 * but the word that names a schedule's target, which sch_check checks.
 *
 * Two constructs deserve a word:
 *   - A reduction is written like a call followed by its body:
 *         sum(k) x[i, k] * w[k, j]
 *     The body extends as far right as it can (like a lambda), so the rule
 *     has the lowest precedence.  A call followed by '-' is a call minus
 *     something: write max(j) (-x[i, j]) for a reduction of a negation.
 *   - Axes are arguments of the form NAME, NAME in HI or NAME in LO..HI; an
 *     argument list that mixes them with expressions is sorted out by
 *     sema.c, which knows whether the callee is a reduction.
 */
%define api.pure full
%define api.location.type {Span}
%define parse.error custom
%define parse.lac full
%locations
%expect 0
%param {Parser *p}

%code requires {
#include "frontend/frontend.h"
}

%code provides {
int fe_lex(YYSTYPE *val, Span *loc, Parser *p);
}

%code {
#include <string.h>

#define YYLLOC_DEFAULT(Cur, Rhs, N)                    \
    do {                                               \
        if (N) {                                       \
            (Cur).begin = YYRHSLOC(Rhs, 1).begin;      \
            (Cur).end = YYRHSLOC(Rhs, N).end;          \
        } else {                                       \
            (Cur).begin = (Cur).end = YYRHSLOC(Rhs, 0).end; \
        }                                              \
    } while (0)

/* Deep nesting is refused by the lexer first (FE_MAX_NESTING) and by
 * fe_parse (FE_MAX_DEPTH); this bounds the parser's own stack for long
 * chains of unary operators. */
#define YYMAXDEPTH 20000

static int yylex(YYSTYPE *val, Span *loc, Parser *p);

static void yyerror(Span *loc, Parser *p, const char *msg);
static Node *mk(Parser *p, NodeKind k, Span sp) { return node_new(p, k, sp); }
static Node *mk_binary(Parser *p, Span sp, Span op_span, Op op, Node *l, Node *r)
{
    Node *n = mk(p, N_BINARY, sp);
    n->op = op;
    n->name_span = op_span;
    node_add(p, n, l);
    node_add(p, n, r);
    return n;
}
static Node *mk_named(Parser *p, NodeKind k, Span sp, const char *name,
                      Span name_span)
{
    Node *n = mk(p, k, sp);
    n->name = name;
    n->name_span = name_span;
    return n;
}
static void add_all(Parser *p, Node *parent, PtrVec *v)
{
    for (int i = 0; i < v->len; i++)
        node_add(p, parent, v->items[i]);
}
static SchedStmt *mk_stmt(Parser *p, Span sp, const char *stage,
                          Span stage_span, const char *prim, Span prim_span,
                          PtrVec *args, PtrVec *outs, PtrVec *out_spans);
/* The values a knob may hold, as a list or a range: the tuner searches
 * their product, and -K and the log name them one by one. */
#define KNOB_MAX_VALUES 4096
static Knob *mk_knob(Parser *p, const char *name, Span sp, PtrVec *values);
static Knob *knob_range(Parser *p, const char *name, Span sp, double lo,
                        double hi, Span range_span);
static SchedWhen *mk_when(Parser *p, const char *dim, Span dim_span, double lo, double hi,
                          Span range_span);
}

%union {
    Node *node;
    const char *str;
    double num;
    PtrVec vec;
    SchedArg *sarg;
    SchedStmt *stmt;
    Knob *knob;
}

%token <str> IDENT "identifier"
%token <num> INT "integer"
%token <num> FLOAT "number"
%token <str> STRING "string"
%token DIM "'dim'" INPUT "'input'" CONST "'const'" LET "'let'"
%token OUTPUT "'output'" SCHEDULE "'schedule'" IN "'in'" AT "'at'"
%token ARROW "'->'" DOTDOT "'..'"
%token LE "'<='" GE "'>='" EQ "'=='" NE "'!='" ANDAND "'&&'" OROR "'||'"
%token END 0 "end of file"

%type <node> item dimdef axis expr primary arg
%type <vec> dimdefs axes exprs args arglist names sargs sarglist
%type <vec> outs_opt numlist whens when_opt
%type <sarg> sarg
%type <stmt> sstmt sstmt_body
%type <knob> knob
%type <str> at_opt

%precedence REDUCE
%left OROR
%left ANDAND
%left EQ NE
%left '<' LE '>' GE
%left '+' '-'
%left '*' '/' '%'
%precedence UNARY
%precedence CALL

%%

/* program = item* */
program:
  %empty
| program item  { if ($2) vec_push(p->arena, &p->items, $2); }
;

/* item = "dim" dimdef {"," dimdef} ";"               (dimdef: below)
 *      | "input" NAME ":" ["const"] DTYPE ["[" expr {"," expr} "]"] ";"
 *      | "let" NAME "=" expr ";"
 *      | NAME ["[" axis {"," axis} "]"] "=" expr ";"
 *      | "output" NAME {"," NAME} ";"
 *      | "schedule" NAME ["when" when {"," when}] "{" sstmt* "}"
 * when = NAME "in" INTEGER ".." INTEGER        (the sizes it is for) */
item:
  DIM dimdefs ';'  {
      $$ = NULL;
      for (int i = 0; i < $2.len; i++)
          vec_push(p->arena, &p->items, $2.items[i]);
  }
| INPUT IDENT ':' IDENT '[' exprs ']' ';'  {
      $$ = mk_named(p, N_INPUT, @$, $2, @2);
      $$->dtype_name = $4; $$->dtype_span = @4;
      add_all(p, $$, &$6);
  }
| INPUT IDENT ':' CONST IDENT '[' exprs ']' ';'  {
      $$ = mk_named(p, N_INPUT, @$, $2, @2);
      $$->is_const = true;
      $$->dtype_name = $5; $$->dtype_span = @5;
      add_all(p, $$, &$7);
  }
| INPUT IDENT ':' IDENT ';'  {
      $$ = mk_named(p, N_INPUT, @$, $2, @2);
      $$->dtype_name = $4; $$->dtype_span = @4;
  }
| INPUT IDENT ':' CONST IDENT ';'  {
      $$ = mk_named(p, N_INPUT, @$, $2, @2);
      $$->is_const = true;
      $$->dtype_name = $5; $$->dtype_span = @5;
  }
| LET IDENT '=' expr ';'  {
      $$ = mk_named(p, N_LET, @$, $2, @2);
      node_add(p, $$, $4);
  }
| IDENT '[' axes ']' '=' expr ';'  {
      $$ = mk_named(p, N_STAGE, @$, $1, @1);
      add_all(p, $$, &$3);
      node_add(p, $$, $6);
  }
| IDENT '=' expr ';'  {
      $$ = mk_named(p, N_STAGE, @$, $1, @1);
      node_add(p, $$, $3);
  }
| OUTPUT names ';'  {
      $$ = mk(p, N_OUTPUT, @$);
      add_all(p, $$, &$2);
  }
| SCHEDULE IDENT when_opt '{' sstmts '}'  {
      $$ = mk_named(p, N_SCHEDULE, @$, $2, @2);
      $$->sched = p->sched;
      $$->sched->nwhen = $3.len;
      $$->sched->when = arena_alloc(p->arena, sizeof *$$->sched->when * (size_t)($3.len + 1));
      for (int i = 0; i < $3.len; i++)
          $$->sched->when[i] = *(SchedWhen *)$3.items[i];
      /* any word parses; sch_check rejects one that names no target */
      $$->sched->target = target_lookup($2);
      $$->sched->unknown_target = $$->sched->target == TARGET_COUNT ? $2 : NULL;
      $$->sched->target_span = @2;
      p->sched = NULL;
  }
;

/* "when" is no keyword: a word after the target that is not "when" is
   an error here, and "when" stays a name everywhere else */
when_opt:
  %empty  { $$ = (PtrVec){0}; }
| IDENT whens  {
      if (strcmp($1, "when") != 0) {
          diag_error(p->src, @1, "expected 'when' or '{' after the schedule's target, not '%s'", $1);
          YYABORT;
      }
      $$ = $2;
  }
;

whens:
  IDENT IN INT DOTDOT INT  {
      $$ = (PtrVec){0};
      vec_push(p->arena, &$$, mk_when(p, $1, @1, $3, $5, span_join(@3, @5)));
  }
| whens ',' IDENT IN INT DOTDOT INT  {
      $$ = $1;
      vec_push(p->arena, &$$, mk_when(p, $3, @3, $5, $7, span_join(@5, @7)));
  }
;

dimdefs:
  dimdef              { $$ = (PtrVec){0}; vec_push(p->arena, &$$, $1); }
| dimdefs ',' dimdef  { $$ = $1; vec_push(p->arena, &$$, $3); }
;

/* dimdef = NAME "=" expr                       a static dim (or computed)
 *        | NAME "in" expr ".." expr ["=" expr]  a run-time dim: its range,
 *                                               inclusive, and a hint */
dimdef:
  IDENT '=' expr  {
      $$ = mk_named(p, N_DIM, @$, $1, @1);
      node_add(p, $$, $3);
  }
| IDENT IN expr DOTDOT expr  {
      $$ = mk_named(p, N_DIM, @$, $1, @1);
      $$->is_range = true;
      node_add(p, $$, $3);
      node_add(p, $$, $5);
  }
| IDENT IN expr DOTDOT expr '=' expr  {
      $$ = mk_named(p, N_DIM, @$, $1, @1);
      $$->is_range = true;
      node_add(p, $$, $3);
      node_add(p, $$, $5);
      node_add(p, $$, $7);
  }
;

names:
  IDENT  {
      $$ = (PtrVec){0};
      vec_push(p->arena, &$$, mk_named(p, N_NAME, @1, $1, @1));
  }
| names ',' IDENT  {
      $$ = $1;
      vec_push(p->arena, &$$, mk_named(p, N_NAME, @3, $3, @3));
  }
;

axes:
  axis           { $$ = (PtrVec){0}; vec_push(p->arena, &$$, $1); }
| axes ',' axis  { $$ = $1; vec_push(p->arena, &$$, $3); }
;

/* axis = NAME ["in" expr [".." expr]] */
axis:
  IDENT                { $$ = mk_named(p, N_AXIS, @$, $1, @1); }
| IDENT IN expr        { $$ = mk_named(p, N_AXIS, @$, $1, @1); node_add(p, $$, $3); }
| IDENT IN expr DOTDOT expr  {
      $$ = mk_named(p, N_AXIS, @$, $1, @1);
      node_add(p, $$, $3);
      node_add(p, $$, $5);
  }
;

exprs:
  expr            { $$ = (PtrVec){0}; vec_push(p->arena, &$$, $1); }
| exprs ',' expr  { $$ = $1; vec_push(p->arena, &$$, $3); }
;

/* expr = expr binop expr | "-" expr | "!" expr | primary */
expr:
  expr OROR expr    { $$ = mk_binary(p, @$, @2, OP_OR, $1, $3); }
| expr ANDAND expr  { $$ = mk_binary(p, @$, @2, OP_AND, $1, $3); }
| expr EQ expr      { $$ = mk_binary(p, @$, @2, OP_EQ, $1, $3); }
| expr NE expr      { $$ = mk_binary(p, @$, @2, OP_NE, $1, $3); }
| expr '<' expr     { $$ = mk_binary(p, @$, @2, OP_LT, $1, $3); }
| expr LE expr      { $$ = mk_binary(p, @$, @2, OP_LE, $1, $3); }
| expr '>' expr     { $$ = mk_binary(p, @$, @2, OP_GT, $1, $3); }
| expr GE expr      { $$ = mk_binary(p, @$, @2, OP_GE, $1, $3); }
| expr '+' expr     { $$ = mk_binary(p, @$, @2, OP_ADD, $1, $3); }
| expr '-' expr     { $$ = mk_binary(p, @$, @2, OP_SUB, $1, $3); }
| expr '*' expr     { $$ = mk_binary(p, @$, @2, OP_MUL, $1, $3); }
| expr '/' expr     { $$ = mk_binary(p, @$, @2, OP_DIV, $1, $3); }
| expr '%' expr     { $$ = mk_binary(p, @$, @2, OP_MOD, $1, $3); }
| '-' expr %prec UNARY  { $$ = mk(p, N_UNARY, @$); $$->op = OP_NEG; node_add(p, $$, $2); }
| '!' expr %prec UNARY  { $$ = mk(p, N_UNARY, @$); $$->op = OP_NOT; node_add(p, $$, $2); }
| primary
;

/* primary = NUMBER | NAME | NAME "[" exprs "]" | NAME "(" args ")" [expr]
 *         | "(" expr ")" */
primary:
  INT    { $$ = mk(p, N_NUM, @$); $$->num = $1; $$->is_int = true; }
| FLOAT  { $$ = mk(p, N_NUM, @$); $$->num = $1; }
| IDENT  { $$ = mk_named(p, N_NAME, @$, $1, @1); }
| IDENT '[' exprs ']'  {
      $$ = mk_named(p, N_ACCESS, @$, $1, @1);
      add_all(p, $$, &$3);
  }
| IDENT '(' args ')' %prec CALL  {
      $$ = mk_named(p, N_CALL, @$, $1, @1);
      add_all(p, $$, &$3);
  }
| IDENT '(' args ')' expr %prec REDUCE  {
      $$ = mk_named(p, N_REDUCE, @$, $1, @1);
      add_all(p, $$, &$3);
      node_add(p, $$, $5);
  }
| '(' expr ')'  { $$ = $2; $$->span = @$; }
;

args:
  %empty   { $$ = (PtrVec){0}; }
| arglist
;

arglist:
  arg              { $$ = (PtrVec){0}; vec_push(p->arena, &$$, $1); }
| arglist ',' arg  { $$ = $1; vec_push(p->arena, &$$, $3); }
;

arg:
  expr
| IDENT IN expr  { $$ = mk_named(p, N_AXIS, @$, $1, @1); node_add(p, $$, $3); }
| IDENT IN expr DOTDOT expr  {
      $$ = mk_named(p, N_AXIS, @$, $1, @1);
      node_add(p, $$, $3);
      node_add(p, $$, $5);
  }
;

/* sstmt = [NAME "="] NAME "." NAME "(" sargs ")" ["->" names] ["at" NAME] ";" */
sstmts:
  %empty  { if (!p->sched) p->sched = arena_alloc(p->arena, sizeof *p->sched); }
| sstmts sstmt  {
      sch_add_stmt(p->arena, p->sched, $2);
  }
;

sstmt:
  sstmt_body ';'  { $$ = $1; $$->span = @$; }
| IDENT '=' sstmt_body ';'  {
      $$ = $3;
      $$->span = @$;
      $$->result = $1;
      $$->result_span = @1;
  }
;

sstmt_body:
  IDENT '.' IDENT '(' sargs ')' outs_opt at_opt  {
      PtrVec spans = {0};
      for (int i = 0; i < $7.len; i++)
          vec_push(p->arena, &spans, $7.items[i]);
      $$ = mk_stmt(p, @$, $1, @1, $3, @3, &$5, &$7, &spans);
      $$->at = $8;
      $$->at_span = @8;
  }
;

outs_opt:
  %empty       { $$ = (PtrVec){0}; }
| ARROW names  { $$ = $2; }
;

at_opt:
  %empty    { $$ = NULL; }
| AT IDENT  { $$ = $2; }
;

sargs:
  %empty  { $$ = (PtrVec){0}; }
| sarglist
;

sarglist:
  sarg               { $$ = (PtrVec){0}; vec_push(p->arena, &$$, $1); }
| sarglist ',' sarg  { $$ = $1; vec_push(p->arena, &$$, $3); }
;

/* sarg = NAME | NAME "." NAME | INTEGER | STRING | knob */
sarg:
  IDENT  {
      $$ = arena_alloc(p->arena, sizeof *$$);
      *$$ = (SchedArg){ .kind = SA_NAME, .span = @$, .name = $1 };
  }
| IDENT '.' IDENT  {
      $$ = arena_alloc(p->arena, sizeof *$$);
      *$$ = (SchedArg){ .kind = SA_NAME, .span = @$,
                        .name = arena_printf(p->arena, "%s.%s", $1, $3) };
  }
| INT  {
      $$ = arena_alloc(p->arena, sizeof *$$);
      *$$ = (SchedArg){ .kind = SA_INT, .span = @$, .ival = (int64_t)$1 };
  }
| STRING  {
      $$ = arena_alloc(p->arena, sizeof *$$);
      *$$ = (SchedArg){ .kind = SA_STRING, .span = @$, .name = $1 };
  }
| knob  {
      $$ = arena_alloc(p->arena, sizeof *$$);
      *$$ = (SchedArg){ .kind = SA_KNOB, .span = @$, .knob = $1,
                        .name = $1->name };
  }
;

/* knob = "?" NAME ["in" ("[" INTEGER {"," INTEGER} "]" | INTEGER ".." INTEGER)] */
knob:
  '?' IDENT  { $$ = mk_knob(p, $2, @$, NULL); }
| '?' IDENT IN '[' numlist ']'  {
      if ($5.len > KNOB_MAX_VALUES) {
          diag_error(p->src, span_join(@4, @6), "a knob holds at most %d values, this list %d",
                     KNOB_MAX_VALUES, $5.len);
          YYABORT;
      }
      $$ = mk_knob(p, $2, @$, &$5);
  }
| '?' IDENT IN INT DOTDOT INT  {
      $$ = knob_range(p, $2, @$, $4, $6, span_join(@4, @6));
      if (!$$)
          YYABORT;
  }
;

numlist:
  INT  {
      $$ = (PtrVec){0};
      int64_t *v = arena_alloc(p->arena, sizeof *v);
      *v = (int64_t)$1;
      vec_push(p->arena, &$$, v);
  }
| numlist ',' INT  {
      $$ = $1;
      int64_t *v = arena_alloc(p->arena, sizeof *v);
      *v = (int64_t)$3;
      vec_push(p->arena, &$$, v);
  }
;

%%

static SchedStmt *mk_stmt(Parser *p, Span sp, const char *stage,
                          Span stage_span, const char *prim, Span prim_span,
                          PtrVec *args, PtrVec *outs, PtrVec *out_spans)
{
    SchedStmt *s = arena_alloc(p->arena, sizeof *s);
    s->span = sp;
    s->stage = stage;
    s->stage_span = stage_span;
    s->prim = prim;
    s->prim_span = prim_span;
    s->nargs = args->len;
    s->args = arena_alloc(p->arena, sizeof *s->args * (args->len + 1));
    for (int i = 0; i < args->len; i++)
        s->args[i] = *(SchedArg *)args->items[i];
    s->nouts = outs->len;
    s->outs = arena_alloc(p->arena, sizeof *s->outs * (outs->len + 1));
    s->out_spans = arena_alloc(p->arena, sizeof *s->out_spans * (outs->len + 1));
    for (int i = 0; i < outs->len; i++) {
        Node *n = out_spans->items[i];
        s->outs[i] = n->name;
        s->out_spans[i] = n->name_span;
    }
    return s;
}

/* Records a knob in the schedule being parsed.  VALUES == NULL is a use of
 * a knob defined earlier; sched/check.c resolves it. */
static Knob *mk_knob(Parser *p, const char *name, Span sp, PtrVec *values)
{
    if (!p->sched)
        p->sched = arena_alloc(p->arena, sizeof *p->sched);
    Knob *k = arena_alloc(p->arena, sizeof *k);
    k->name = name;
    k->span = sp;
    if (values) {
        k->nvalues = values->len;
        k->values = arena_alloc(p->arena, sizeof *k->values * values->len);
        for (int i = 0; i < values->len; i++)
            k->values[i] = *(int64_t *)values->items[i];
        sch_add_knob(p->arena, p->sched, k);
    }
    return k;
}

static Knob *knob_range(Parser *p, const char *name, Span sp, double lo,
                        double hi, Span range_span)
{
    if (hi < lo || hi - lo >= KNOB_MAX_VALUES) {
        diag_error(p->src, range_span,
                   "knob range %.0f..%.0f must be increasing and hold at most %d values",
                   lo, hi, KNOB_MAX_VALUES);
        return NULL;
    }
    PtrVec vals = {0};
    for (double v = lo; v <= hi; v++) {
        int64_t *x = arena_alloc(p->arena, sizeof *x);
        *x = (int64_t)v;
        vec_push(p->arena, &vals, x);
    }
    return mk_knob(p, name, sp, &vals);
}

/* A when clause; sch_check resolves the dim and checks the range. */
static SchedWhen *mk_when(Parser *p, const char *dim, Span dim_span, double lo, double hi,
                          Span range_span)
{
    SchedWhen *w = arena_alloc(p->arena, sizeof *w);
    *w = (SchedWhen){ dim, dim_span, (int64_t)lo, (int64_t)hi, range_span, -1 };
    return w;
}

/* Bison calls yyerror only when its stack is full: with the lexer's limit
 * on brackets, that takes a long chain of unary operators. */
static void yyerror(Span *loc, Parser *p, const char *msg)
{
    (void)msg; /* "memory exhausted" */
    if (p->lex_failed)
        return;
    diag_error(p->src, *loc, "expression nested too deeply: more than %d levels",
               FE_MAX_DEPTH);
}

static unsigned line_of(const Parser *p, uint32_t offset)
{
    unsigned line = 1;
    for (uint32_t i = 0; i < offset; i++)
        line += p->src->text[i] == '\n';
    return line;
}

/* Whether a line break separates the end of the previous token from LOC. */
static bool on_new_line(const Parser *p, Span loc)
{
    for (uint32_t i = p->prev_end; i < loc.begin; i++)
        if (p->src->text[i] == '\n')
            return true;
    return loc.begin == p->src->len;
}

/* "unexpected ')', expected expression or ']'": the tokens LAC says could
 * follow, in their quoted names.  The tokens that can start an expression
 * are said "expression"; the binary operators, which can follow any
 * expression, are left out, with the '[' and '(' that can follow a name.
 * A ';' missing at the end of a line is reported there, after the last
 * token, and a bracket the parser wants closed gets a note pointing at it. */
static int yyreport_syntax_error(const yypcontext_t *ctx, Parser *p)
{
    if (p->lex_failed)
        return 0;
    enum { MAX_LISTED = 8 };
    static const int starts[] = { IDENT, INT, FLOAT, '-', '!', '(' };
    static const int binops[] = { OROR, ANDAND, EQ, NE, '<', LE, '>', GE,
                                  '+', '-', '*', '/', '%' };
    yysymbol_kind_t expected[YYNTOKENS];
    int n = yypcontext_expected_tokens(ctx, expected, YYNTOKENS);
    if (n < 0)
        return n;
    bool want[YYNTOKENS] = { false };
    for (int i = 0; i < n; i++)
        want[expected[i]] = true;
    bool is_expr = true, any_binop = true;
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
        is_expr = is_expr && want[YYTRANSLATE(starts[i])];
    for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
        any_binop = any_binop && want[YYTRANSLATE(binops[i])];
    if (any_binop) {
        for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
            want[YYTRANSLATE(binops[i])] = false;
        /* after a name in an expression: it could be indexed or called */
        want[YYTRANSLATE('[')] = want[YYTRANSLATE('(')] = false;
    }
    if (is_expr)
        for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
            want[YYTRANSLATE(starts[i])] = false;

    const char *listed[YYNTOKENS + 1];
    int nlisted = 0;
    if (is_expr)
        listed[nlisted++] = "expression";
    for (int k = 0; k < YYNTOKENS; k++)
        if (want[k] && k != YYSYMBOL_YYEOF)
            listed[nlisted++] = yysymbol_name((yysymbol_kind_t)k);
    if (want[YYSYMBOL_YYEOF])
        listed[nlisted++] = yysymbol_name(YYSYMBOL_YYEOF);

    yysymbol_kind_t got = yypcontext_token(ctx);
    const char *got_name = got == YYSYMBOL_YYEMPTY ? "token" : yysymbol_name(got);
    Span loc = *yypcontext_location(ctx);
    if (want[YYTRANSLATE(';')] && on_new_line(p, loc)) {
        Span at = { p->prev_end, p->prev_end };
        if (got == YYSYMBOL_YYEOF)
            diag_error(p->src, at, "missing ';' at the end of the file");
        else
            diag_error(p->src, at, "missing ';' before %s on line %u", got_name,
                       line_of(p, loc.begin));
        return 0;
    }
    char msg[512];
    size_t len = (size_t)snprintf(msg, sizeof msg, "unexpected %s", got_name);
    if (nlisted > 0 && nlisted <= MAX_LISTED) {
        len += (size_t)snprintf(msg + len, sizeof msg - len, ", expected ");
        for (int i = 0; i < nlisted && len < sizeof msg; i++)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s",
                                    i == 0 ? "" : i == nlisted - 1 ? " or " : ", ",
                                    listed[i]);
    }
    if (got == YYTRANSLATE(':') && want[YYTRANSLATE('=')] && len < sizeof msg)
        snprintf(msg + len, sizeof msg - len, "; an input is declared as 'input NAME : DTYPE[...]'");
    diag_error(p->src, loc, "%s", msg);

    /* The innermost bracket open before the unexpected token, when closing
     * it is the fix or it is out of sight. */
    if (p->prev_nesting > 0) {
        uint32_t at = p->open[p->prev_nesting - 1];
        char opener = p->src->text[at];
        int closer = opener == '(' ? ')' : opener == '[' ? ']' : '}';
        if (want[YYTRANSLATE(closer)] &&
            (nlisted == 1 || line_of(p, at) != line_of(p, loc.begin)))
            diag_note(p->src, (Span){ at, at + 1 }, "to match this '%c'", opener);
    }
    return 0;
}

bool fe_parse(Parser *p, Program *prog)
{
    p->cursor = p->src->text;
    p->limit = p->src->text + p->src->len;
    int rc = yyparse(p);
    if (rc == 0 && p->too_deep)
        diag_error(p->src, p->too_deep->span, "expression nested too deeply: more than %d levels",
                   FE_MAX_DEPTH);
    if (rc != 0 || diag_errors)
        return false;
    prog->items = (Node **)p->items.items;
    prog->nitems = p->items.len;
    return true;
}

/* The lexer's next token; with --dump=tokens also printed, as
 * "LINE:COL NAME 'TEXT'" with Bison's quoted name of the token. */
static int yylex(YYSTYPE *val, Span *loc, Parser *p)
{
    int tok = fe_lex(val, loc, p);
    if (!p->dump_tokens)
        return tok;
    int line = 1, col = 1;
    for (const char *c = p->src->text; c < p->src->text + loc->begin; c++) {
        if (*c == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    fprintf(p->dump_tokens, "%d:%d %s", line, col, yysymbol_name(YYTRANSLATE(tok)));
    if (tok != END && tok != YYerror)
        fprintf(p->dump_tokens, " '%.*s'", (int)(loc->end - loc->begin), p->src->text + loc->begin);
    fputc('\n', p->dump_tokens);
    return tok;
}

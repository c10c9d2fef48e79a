/* lexer.re — the .te tokens, scanned by a re2c-generated DFA.
 *
 * The input is NUL-terminated (re2c:yyfill:enable = 0); a NUL before the
 * end is an error, not the end.  Every token's span is its byte range.
 * Errors are reported here, once, and the parser is told with YYerror so
 * that it adds no generic message of its own.
 *
 * Limits that keep hostile input harmless: identifiers of at most
 * FE_MAX_IDENT bytes, at most FE_MAX_NESTING open brackets, integer
 * literals that fit in int64, floating literals that fit in a double.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "frontend/parser.h"

static int lex_error(Parser *p, const char *start, const char *end,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int lex_error(Parser *p, const char *start, const char *end,
                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    Span sp = { (uint32_t)(start - p->src->text), (uint32_t)(end - p->src->text) };
    diag_verror(p->src, sp, fmt, ap);
    va_end(ap);
    p->lex_failed = true;
    return YYerror;
}

/* Open brackets are remembered, so that a syntax error can point at the
 * one left unclosed. */
static int open_bracket(Parser *p, const char *start, int tok)
{
    if (p->nesting == FE_MAX_NESTING)
        return lex_error(p, start, start + 1,
                         "brackets nested deeper than %d levels", FE_MAX_NESTING);
    p->open[p->nesting++] = (uint32_t)(start - p->src->text);
    return tok;
}

static int close_bracket(Parser *p, int tok)
{
    if (p->nesting > 0)
        p->nesting--;
    return tok;
}

static int lex_number(Parser *p, YYSTYPE *val, const char *start, bool is_int)
{
    size_t n = (size_t)(p->cursor - start);
    char buf[64];
    char *text = n < sizeof buf ? buf : arena_strndup(p->arena, start, n);
    if (text == buf) {
        memcpy(buf, start, n);
        buf[n] = '\0';
    }
    errno = 0;
    if (is_int) {
        char *end;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno == ERANGE || v > (unsigned long long)INT64_MAX)
            return lex_error(p, start, p->cursor,
                             "integer literal is too large (the limit is %lld)",
                             (long long)INT64_MAX);
        val->num = (double)v;
        if ((unsigned long long)val->num != v && v > (1ull << 53))
            return lex_error(p, start, p->cursor,
                             "integer literal %llu cannot be represented exactly (the limit is 2^53)",
                             v);
        return INT;
    }
    val->num = strtod(text, NULL);
    if (errno == ERANGE && (val->num > 1.0 || val->num < -1.0))
        return lex_error(p, start, p->cursor,
                         "number is too large for a double");
    return FLOAT;
}

/* Skips a block comment whose opening "/" "*" ends at p->cursor. */
static int skip_block_comment(Parser *p, const char *start)
{
    for (const char *c = p->cursor; c + 1 < p->limit; c++) {
        if (c[0] == '*' && c[1] == '/') {
            p->cursor = c + 2;
            return 0;
        }
    }
    return lex_error(p, start, start + 2,
                     "unterminated comment: '/*' has no matching '*/'");
}

/* A string runs to the next '"' on the same line; no escapes. */
static int lex_string(Parser *p, YYSTYPE *val, const char *start)
{
    const char *c = p->cursor;
    while (c < p->limit && *c != '"' && *c != '\n' && *c != '\0')
        c++;
    if (c >= p->limit || *c != '"')
        return lex_error(p, start, start + 1,
                         "unterminated string: '\"' has no closing '\"' on its line");
    val->str = arena_strndup(p->arena, p->cursor, (size_t)(c - p->cursor));
    p->cursor = c + 1;
    return STRING;
}

/* A character that starts no token: shown whole if it is valid UTF-8. */
static int bad_char(Parser *p, const char *start)
{
    const unsigned char *s = (const unsigned char *)start;
    if (s[0] >= 0x20 && s[0] < 0x7f)
        return lex_error(p, start, start + 1, "unexpected character '%c'", s[0]);
    int len = s[0] >= 0xC2 && s[0] <= 0xDF ? 2
              : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
              : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    uint32_t cp = len ? s[0] & (0x7F >> len) : 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) { /* also stops at the final NUL */
            len = 0;
            break;
        }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (len < 2 || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return lex_error(p, start, start + 1,
                         "unexpected byte 0x%02x: not a character of UTF-8 text", s[0]);
    return lex_error(p, start, start + len,
                     "unexpected character '%.*s' (U+%04X): outside comments and strings a program is ASCII",
                     len, start, (unsigned)cp);
}

static int scan(Parser *p, YYSTYPE *val, const char **tok_start)
{
    for (;;) {
        const char *start = p->cursor;
        const char *YYMARKER;
        *tok_start = start;
        /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = p->cursor;
        re2c:yyfill:enable = 0;

        digit = [0-9];
        exp = [eE] [+-]? digit+;
        ident = [a-zA-Z_] [a-zA-Z_0-9]*;

        "\x00" {
            if (start == p->limit) {
                p->cursor = start;
                return END;
            }
            return lex_error(p, start, start + 1,
                             "unexpected NUL byte in the source");
        }
        [ \t\r\n\f\v]+ { continue; }
        "#" [^\n\x00]* { continue; }
        "//" [^\n\x00]* { continue; }
        "/*" {
            int rc = skip_block_comment(p, start);
            if (rc)
                return rc;
            continue;
        }
        "\"" { return lex_string(p, val, start); }

        "dim"      { return DIM; }
        "input"    { return INPUT; }
        "const"    { return CONST; }
        "let"      { return LET; }
        "output"   { return OUTPUT; }
        "schedule" { return SCHEDULE; }
        "in"       { return IN; }
        "at"       { return AT; }

        ident {
            size_t n = (size_t)(p->cursor - start);
            if (n > FE_MAX_IDENT)
                return lex_error(p, start, start + FE_MAX_IDENT,
                                 "identifier is %zu bytes long; the limit is %d",
                                 n, FE_MAX_IDENT);
            val->str = arena_strndup(p->arena, start, n);
            return IDENT;
        }
        digit+ { return lex_number(p, val, start, true); }
        digit+ "." digit+ exp? | digit+ exp | "." digit+ exp? {
            return lex_number(p, val, start, false);
        }

        "->" { return ARROW; }
        ".." { return DOTDOT; }
        "<=" { return LE; }
        ">=" { return GE; }
        "==" { return EQ; }
        "!=" { return NE; }
        "&&" { return ANDAND; }
        "||" { return OROR; }
        "(" { return open_bracket(p, start, '('); }
        "[" { return open_bracket(p, start, '['); }
        "{" { return open_bracket(p, start, '{'); }
        ")" { return close_bracket(p, ')'); }
        "]" { return close_bracket(p, ']'); }
        "}" { return close_bracket(p, '}'); }
        [-+*/%<>=!,;:.?] { return (unsigned char)*start; }

        digit+ "." / [^0-9.] {
            return lex_error(p, start, p->cursor,
                             "'%.*s' is not a number: write %.*s0",
                             (int)(p->cursor - start), start,
                             (int)(p->cursor - start), start);
        }

        * { return bad_char(p, start); }
        */
    }
}

int fe_lex(YYSTYPE *val, Span *loc, Parser *p)
{
    const char *start;
    p->prev_end = (uint32_t)(p->cursor - p->src->text);
    p->prev_nesting = p->nesting;
    int tok = scan(p, val, &start);
    loc->begin = (uint32_t)(start - p->src->text);
    loc->end = (uint32_t)(p->cursor - p->src->text);
    return tok;
}

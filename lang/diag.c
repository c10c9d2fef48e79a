/* diag.c — the diagnostics that point into a source text (source.c).
 *
 * Spans are byte offsets; line and column are computed here, only when a
 * diagnostic is printed, by scanning from the start of the text.
 *
 * A diagnostic is three lines:
 *
 *     PATH:LINE:COL: error: MESSAGE
 *     the source line, tabs kept
 *            ^~~~~
 *
 * LINE and COL are 1-based and COL counts bytes.  The caret line repeats
 * the source line's tabs so the caret lines up whatever the tab width, and
 * skips UTF-8 continuation bytes so a non-ASCII character takes one cell.
 * The '~'s cover the rest of the span when it ends on the same line.  A
 * span at the very end of the text (an "unexpected end of input") points
 * just after the last character that is not a line break, where the user
 * would type what is missing.  Lines longer than DIAG_MAX_LINE bytes are
 * shown as a window around the caret, cut with "...".  Warnings hidden by
 * -q (diag_quiet) still count in diag_warnings, and the notes that follow a
 * hidden warning are hidden with it.  A NULL Source gives "texc: error: msg"
 * alone, for errors that have no place in a file.
 *
 * Internal errors (te_internal_error) are a separate path: a bug in texc,
 * never the user's fault, reported on stderr and followed by abort().
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "texc.h"

enum {
    DIAG_MAX_LINE = 200, /* longer source lines are cut around the caret */
    DIAG_WINDOW = 160,   /* bytes of a cut line that are shown */
};

int diag_errors;
int diag_warnings;
bool diag_quiet;
FILE *diag_stream; /* NULL means stderr, which is not a constant */

/* Where a byte offset falls: its 1-based line and column, and the bounds
 * of its line's text (not counting the line break). */
typedef struct Position {
    size_t offset; /* the byte the caret points at */
    unsigned line, col;
    size_t line_begin, line_end;
} Position;

static Position locate(const Source *src, size_t offset)
{
    const char *text = src->text;
    if (offset > src->len)
        offset = src->len;
    if (offset == src->len) {
        /* End of input: step back over trailing line breaks. */
        while (offset > 0 && (text[offset - 1] == '\n' || text[offset - 1] == '\r'))
            offset--;
    }
    Position pos = { offset, 1, 1, 0, 0 };
    for (size_t i = 0; i < offset; i++) {
        if (text[i] == '\n') {
            pos.line++;
            pos.line_begin = i + 1;
        }
    }
    pos.col = (unsigned)(offset - pos.line_begin + 1);
    size_t end = pos.line_begin;
    while (end < src->len && text[end] != '\n' && text[end] != '\0')
        end++;
    if (end > pos.line_begin && text[end - 1] == '\r' && end < src->len &&
        text[end] == '\n')
        end--; /* CRLF: the CR is part of the line break */
    pos.line_end = end; /* the caret may lie beyond, after an embedded NUL */
    return pos;
}

/* The source line (or a window of it) and the caret line under it. */
static void print_excerpt(FILE *out, const Source *src, Span sp)
{
    Position pos = locate(src, sp.begin);
    const char *text = src->text;
    size_t show_begin = pos.line_begin, show_end = pos.line_end;
    if (show_end - show_begin > DIAG_MAX_LINE) {
        size_t before = DIAG_WINDOW / 2;
        size_t caret = pos.offset < pos.line_end ? pos.offset : pos.line_end;
        show_begin = caret - pos.line_begin > before ? caret - before
                                                     : pos.line_begin;
        show_end = show_begin + DIAG_WINDOW;
        if (show_end > pos.line_end) {
            show_end = pos.line_end;
            show_begin = show_end - DIAG_WINDOW;
        }
        /* Do not cut a UTF-8 sequence in half. */
        while (show_begin > pos.line_begin &&
               (text[show_begin] & 0xC0) == 0x80)
            show_begin--;
        while (show_end < pos.line_end && (text[show_end] & 0xC0) == 0x80)
            show_end++;
    }
    bool cut_left = show_begin > pos.line_begin;
    bool cut_right = show_end < pos.line_end;
    fprintf(out, "%s%.*s%s\n", cut_left ? "..." : "",
            (int)(show_end - show_begin), text + show_begin,
            cut_right ? "..." : "");

    if (cut_left)
        fputs("   ", out);
    for (size_t i = show_begin; i < pos.offset; i++) {
        if (text[i] == '\t')
            fputc('\t', out);
        else if ((text[i] & 0xC0) != 0x80)
            fputc(' ', out);
    }
    fputc('^', out);
    /* The underline: only for a span that ends on this line, and never
     * past what is shown. */
    if (sp.end > sp.begin + 1 && sp.begin == pos.offset && sp.end <= pos.line_end) {
        size_t end = sp.end < show_end ? sp.end : show_end;
        for (size_t i = pos.offset + 1; i < end; i++)
            if ((text[i] & 0xC0) != 0x80)
                fputc('~', out);
    }
    fputc('\n', out);
}

static void vreport(const Source *src, Span sp, const char *severity,
                    const char *fmt, va_list ap)
{
    FILE *out = diag_stream ? diag_stream : stderr;
    if (src) {
        Position pos = locate(src, sp.begin);
        fprintf(out, "%s:%u:%u: %s: ", src->path, pos.line, pos.col, severity);
    } else {
        fprintf(out, "texc: %s: ", severity);
    }
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    if (src)
        print_excerpt(out, src, sp);
    fflush(out);
}

/* A note belongs to the diagnostic before it: it is hidden with a hidden
 * warning. */
static bool last_hidden;

void diag_verror(const Source *src, Span sp, const char *fmt, va_list ap)
{
    diag_errors++;
    last_hidden = false;
    vreport(src, sp, "error", fmt, ap);
}

void diag_error(const Source *src, Span sp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_verror(src, sp, fmt, ap);
    va_end(ap);
}

/* Warnings are counted even when -q hides them. */
void diag_warning(const Source *src, Span sp, const char *fmt, ...)
{
    diag_warnings++;
    last_hidden = diag_quiet;
    if (diag_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vreport(src, sp, "warning", fmt, ap);
    va_end(ap);
}

void diag_note(const Source *src, Span sp, const char *fmt, ...)
{
    if (last_hidden)
        return;
    va_list ap;
    va_start(ap, fmt);
    vreport(src, sp, "note", fmt, ap);
    va_end(ap);
}

_Noreturn void te_internal_error(const char *file, int line, const char *fmt, ...)
{
    if (diag_stream && diag_stream != stderr)
        fflush(diag_stream);
    fprintf(stderr, "texc: internal error at %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

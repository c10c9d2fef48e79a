/* plot.c — --plot FILE.svg: the tuning run as a picture.
 *
 * One hand-written SVG: every valid measurement as a dot (GFLOP/s against
 * its trial number) and the best so far as a step line, with labelled
 * axes.  No library: the format is text and the picture is small.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "tuner/tuner.h"

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f); break;
        }
    }
}

/* A round step for an axis running to MAX with about five ticks. */
static double tick_step(double max)
{
    double raw = max / 5, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

bool tune_plot(const char *path, const char *title, const double *gflops, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "texc: cannot write %s: %s\n", path, strerror(errno));
        return false;
    }
    const double W = 640, H = 400, left = 70, right = 20, top = 40, bottom = 50;
    double pw = W - left - right, ph = H - top - bottom;
    double ymax = 0;
    for (int i = 0; i < n; i++)
        if (gflops[i] > ymax)
            ymax = gflops[i];
    if (!(ymax > 0))
        ymax = 1;
    double ystep = tick_step(ymax * 1.05);
    ymax = ceil(ymax * 1.05 / ystep) * ystep;
    int xmax = n > 1 ? n : 2;
    double xstep = tick_step(xmax);
    if (xstep < 1)
        xstep = 1;
#define X(t) (left + pw * ((t) - 1) / (xmax - 1 > 0 ? xmax - 1 : 1))
#define Y(v) (top + ph * (1 - (v) / ymax))
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" font-size=\"14\">", W / 2);
    xml_text(f, title);
    fputs("</text>\n", f);
    /* grid and ticks */
    for (double v = 0; v <= ymax + 1e-9; v += ystep) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                left, Y(v), left + pw, Y(v));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", left - 6,
                Y(v) + 4, v);
    }
    for (double t = 1; t <= xmax + 1e-9; t += (t == 1 && xstep > 1 ? xstep - 1 : xstep))
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", X(t),
                top + ph + 18, t);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
               "stroke=\"black\"/>\n",
            left, top, pw, ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">trial</text>\n", left + pw / 2,
            H - 10);
    fprintf(f, "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">"
               "GFLOP/s</text>\n",
            top + ph / 2);
    /* every valid measurement */
    for (int i = 0; i < n; i++)
        if (gflops[i] > 0)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#999\"/>\n", X(i + 1),
                    Y(gflops[i]));
    /* the best so far */
    fputs("<polyline fill=\"none\" stroke=\"#c03\" stroke-width=\"2\" points=\"", f);
    double best = 0;
    bool started = false;
    for (int i = 0; i < n; i++) {
        if (gflops[i] > best) {
            if (started)
                fprintf(f, "%.1f,%.1f ", X(i + 1), Y(best));
            best = gflops[i];
            started = true;
        }
        if (started)
            fprintf(f, "%.1f,%.1f ", X(i + 1), Y(best));
    }
    fputs("\"/>\n", f);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c03\" text-anchor=\"end\">best so far "
               "(%.1f GFLOP/s)</text>\n",
            left + pw - 6, top + 16, best);
    fputs("</svg>\n", f);
#undef X
#undef Y
    if (fclose(f) != 0) {
        fprintf(stderr, "texc: cannot write %s: %s\n", path, strerror(errno));
        return false;
    }
    return true;
}

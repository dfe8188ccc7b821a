/* svg.c: igrun's --plot: attributions as an SVG, one panel per input shown
 * (stacked). An input that is an image (--image [C x] H x W, or an
 * image-shaped .npy) is drawn as the input in grey beside a diverging heat
 * map (red positive, blue negative, scaled to the panel's largest
 * magnitude), a row per channel and one of their sum; anything else as a
 * bar chart. Pure
 * text generation: no library, and the file is written atomically.
 */
#include "svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static void color(double t, char *buf, size_t len)
{
    /* t in [-1, 1]: blue (-1) .. white (0) .. red (+1) */
    int r = 255, g = 255, b = 255;
    if (t > 0) {
        g = b = (int)lround(255 * (1 - t));
    } else if (t < 0) {
        r = g = (int)lround(255 * (1 + t));
    }
    snprintf(buf, len, "rgb(%d,%d,%d)", r, g, b);
}

static double max_abs(const float *v, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabs(v[i]) > m ? fabs(v[i]) : m;
    return m > 0 ? m : 1;
}

/* One row of an image panel at y0: the plane x (grey, scaled to its own
 * range; NULL: none) beside the attributions a (colours scaled to m). */
static void image_row(struct cbc_buf *b, const char *label, const float *x, const float *a,
                      int height, int width, double cell, double m, double y0)
{
    double pw = cell * width, ph = cell * height;
    char c[32];
    double xmin = 0, xr = 1;
    if (x) {
        double xmax = x[0];
        xmin = x[0];
        for (size_t i = 1; i < (size_t)height * (size_t)width; i++) {
            xmin = x[i] < xmin ? x[i] : xmin;
            xmax = x[i] > xmax ? x[i] : xmax;
        }
        xr = xmax > xmin ? xmax - xmin : 1;
        cbc_buf_printf(b, "<text x=\"10\" y=\"%.0f\">input%s</text>\n", y0 + ph + 16, label);
    }
    cbc_buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\">attributions%s (red +, blue -, max |a| = %.4g)</text>\n",
                   pw + 20, y0 + ph + 16, label, m);
    for (int r = 0; r < height; r++)
        for (int q = 0; q < width; q++) {
            size_t i = (size_t)r * width + q;
            if (x) {
                int g = (int)lround(255 * (x[i] - xmin) / xr);
                cbc_buf_printf(b,
                               "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                               "fill=\"rgb(%d,%d,%d)\"/>\n",
                               10 + q * cell, y0 + r * cell, cell, cell, g, g, g);
            }
            color(a[i] / m, c, sizeof c);
            cbc_buf_printf(b,
                           "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                           "fill=\"%s\"><title>[%d,%d] %.6g</title></rect>\n",
                           pw + 20 + q * cell, y0 + r * cell, cell, cell, c, r, q, a[i]);
        }
}

/* One panel at the origin; *w and *h get its size. An image of C channels
 * ([C][H][W], C order) is a row per channel, then, for C > 1, a row of the
 * attributions summed over the channels; one colour scale for the panel. */
static void panel(struct cbc_buf *b, const struct igrun_panel *p, size_t F, int height, int width,
                  int channels, double *w, double *h)
{
    const float *attr = p->attr;
    double m = max_abs(attr, F);
    const size_t plane = (size_t)(height > 0 ? height : 0) * (size_t)(width > 0 ? width : 0);
    if (plane && channels >= 1 && plane * (size_t)channels == F) {
        double cell = 320.0 / (width > height ? width : height);
        double ph = cell * height, y = 28;
        cbc_buf_printf(b, "<text x=\"10\" y=\"18\">%s</text>\n", p->title);
        for (int c = 0; c < channels; c++, y += ph + 26) {
            char label[40] = "";
            if (channels > 1)
                snprintf(label, sizeof label, ", channel %d", c);
            image_row(b, label, p->x + c * plane, attr + c * plane, height, width, cell, m, y);
        }
        if (channels > 1) {
            float *sum = calloc(plane, sizeof *sum);
            for (size_t i = 0; sum && i < plane; i++)
                for (int c = 0; c < channels; c++)
                    sum[i] += attr[c * plane + i];
            if (sum) {
                image_row(b, ", summed over the channels", NULL, sum, height, width, cell,
                          max_abs(sum, plane), y);
                y += ph + 26;
            }
            free(sum);
        }
        *w = 2 * cell * width + 30;
        *h = y + 8;
        return;
    }
    double bw = F > 0 ? 640.0 / (double)F : 1, mid = 170;
    cbc_buf_printf(b,
                   "<text x=\"10\" y=\"18\">%s</text>\n"
                   "<line x1=\"10\" y1=\"%.0f\" x2=\"650\" y2=\"%.0f\" stroke=\"black\"/>\n"
                   "<text x=\"10\" y=\"350\">features 0..%zu; max |a| = %.4g</text>\n",
                   p->title, mid, mid, F ? F - 1 : 0, m);
    for (size_t i = 0; i < F; i++) {
        double hh = 140 * attr[i] / m;
        char label[40];
        snprintf(label, sizeof label, "[%zu]", i);
        cbc_buf_printf(b,
                       "<rect x=\"%.3f\" y=\"%.3f\" width=\"%.3f\" height=\"%.3f\" fill=\"%s\">"
                       "<title>%s %.6g</title></rect>\n",
                       10 + i * bw, hh >= 0 ? mid - hh : mid, bw, fabs(hh),
                       attr[i] >= 0 ? "rgb(200,30,30)" : "rgb(30,60,200)",
                       p->names ? p->names[i] : label, attr[i]);
        if (p->names && F <= 40) /* the axis: each bar's name under it */
            cbc_buf_printf(b,
                           "<text x=\"%.3f\" y=\"330\" font-size=\"9\" "
                           "transform=\"rotate(-60 %.3f 330)\">%s</text>\n",
                           10 + (i + 0.5) * bw, 10 + (i + 0.5) * bw, p->names[i]);
    }
    *w = 660;
    *h = 360;
}

enum cbc_status igrun_plot_svg(const char *path, const struct igrun_panel *panels, size_t n,
                               size_t F, int height, int width, int channels, struct cbc_err *err)
{
    struct cbc_buf body = {0}, b = {0};
    double W = 0, H = 0;
    for (size_t k = 0; k < n; k++) {
        double w, h;
        cbc_buf_printf(&body, "<g transform=\"translate(0,%.0f)\">\n", H);
        panel(&body, &panels[k], F, height, width, channels, &w, &h);
        cbc_buf_puts(&body, "</g>\n");
        W = w > W ? w : W;
        H += h;
    }
    cbc_buf_printf(&b,
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                   "font-family=\"sans-serif\" font-size=\"12\">\n",
                   W, H);
    if (body.p)
        cbc_buf_append(&b, body.p, body.len);
    cbc_buf_puts(&b, "</svg>\n");
    enum cbc_status st = b.oom || body.oom ? cbc_err_oom(err)
                                           : cbc_file_write_atomic(path, b.p, b.len, 0644, err);
    cbc_buf_release(&b);
    cbc_buf_release(&body);
    return st;
}

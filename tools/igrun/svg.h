/* svg.h: igrun's attribution plots. */
#ifndef IGRUN_SVG_H
#define IGRUN_SVG_H

#include "common.h"

struct igrun_panel {
    const float *x, *attr; /* [F] each */
    const char *title;     /* XML-safe */
    char *const *names;    /* [F] XML-safe feature names for the bars' labels, or NULL */
};

/* Writes an SVG of n panels, one under another: a heat map beside the
 * input when height*width == F (height, width > 0), else a bar chart. */
enum cbc_status igrun_plot_svg(const char *path, const struct igrun_panel *panels, size_t n,
                               size_t F, int height, int width, struct cbc_err *err);

#endif

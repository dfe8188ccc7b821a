/* svg.h: igrun's attribution plots. */
#ifndef IGRUN_SVG_H
#define IGRUN_SVG_H

#include "common.h"

struct igrun_panel {
    const float *x, *attr; /* [F] each */
    const char *title;     /* XML-safe */
    char *const *names;    /* [F] XML-safe feature names for the bars' labels, or NULL */
};

/* Writes an SVG of n panels, one under another: heat maps beside the input
 * when channels*height*width == F (all > 0; a row per channel, C order),
 * else a bar chart. */
enum cbc_status igrun_plot_svg(const char *path, const struct igrun_panel *panels, size_t n,
                               size_t F, int height, int width, int channels,
                               struct cbc_err *err);

#endif

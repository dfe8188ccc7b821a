/* svg.h: igrun's attribution plots. */
#ifndef IGRUN_SVG_H
#define IGRUN_SVG_H

#include "common.h"

/* Writes an SVG: a heat map beside the input when height*width == F
 * (height, width > 0), else a bar chart. `title` must be XML-safe. */
enum cbc_status igrun_plot_svg(const char *path, const float *x, const float *attr, size_t F,
                               int height, int width, const char *title, struct cbc_err *err);

#endif

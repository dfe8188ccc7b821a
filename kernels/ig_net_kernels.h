/* ig_net_kernels.h: parameter blocks of the network kernels
 * (kernels/ig_net_kernels.cu), shared with the host code that launches them
 * (src/ig/ig_gpu_net.c).
 *
 * Invariant: as ig_kernels.h: the layout is identical on both sides
 * (pointers are 64-bit integers in C), every struct goes by value as one
 * kernel argument. Rows are (input b, step s), b*S + s = row0 + r; a value
 * is [R][elements of one row], rows contiguous.
 */
#ifndef CBC_IG_NET_KERNELS_H
#define CBC_IG_NET_KERNELS_H

#include "ig_kernels.h"

/* A convolution, forward (y = conv(x) + bias) or its input gradient
 * (gx (+)= conv^T(gy)), as an implicit GEMM per group: forward, M = rows x
 * output pixels, N = the group's output channels, K = its input channels x
 * kernel taps; backward, M = rows x input pixels, N = the group's input
 * channels, K = its output channels x taps. tab[k] (int4) is the k-th
 * column's offsets, computed on the host:
 *   forward  {ic IH IW + kh dh IW + kw dw, kh dh, kw dw, 0}
 *   backward {oc OH OW, kh dh, kw dw, oc ICg KH KW + kh KW + kw} */
struct cbc_k_conv {
    int R;
    int IC, IH, IW, OC, OH, OW;
    int groups, ICg, OCg, K;
    int kh, kw, sh, sw, dh, dw, pt, pl;
    int accumulate; /* backward: add into gx rather than store */
    /* backward: the input pixels (phy + psy i, phx + psx j), i < PHh, j <
     * PWw, of one phase of a strided convolution, whose taps (their own
     * table, K columns) each land on one output pixel: launched as a
     * unit-stride one (sh = sw = 1, pt = pl = 0, the table's kh dh and kw dw
     * the offsets -(phy + pt - a dh) / sh and -(phx + pl - b dw) / sw);
     * the whole plane is phase 0 of step 1 */
    int phy, phx, psy, psx, PHh, PWw;
    CBC_DPTR(const float) x;    /* forward: x [R][IC][IH][IW]; backward: gy [R][OC][OH][OW] */
    CBC_DPTR(const float) w;    /* [OC][ICg][kh][kw] */
    CBC_DPTR(const float) bias; /* forward, [OC] or 0 */
    CBC_DPTR(const int) tab;    /* [K][4] */
    CBC_DPTR(float) y;          /* forward: y; backward: gx */
};

/* A direct convolution of stride 1 and dilation 1, KH x KW taps (3x3 and
 * 5x5; groups 1): forward, y = conv(x) + bias; the input gradient of such a
 * convolution is one too (gy in, the weights transposed and flipped, the
 * padding kh - 1 - pt), gx (+)= it. Output (oy, ox), tap (a, b) reads input
 * (oy - pt + a, ox - pl + b), zero outside the input. A block stages, CC
 * channels at a time, the input rows and columns of its tile with their halo
 * (each element loaded once) and the weights of its NG * OCT output
 * channels in shared memory; a thread computes PX = 4 consecutive pixels of
 * one output row for OCT channels. The host chooses the tile:
 * TX * 4 >= columns of a tile, TH rows, IPB whole images when TH = OH;
 * threads TX TH IPB NG (rounded up to a warp; the rest only stage). */
struct cbc_k_dconv {
    int R, C, IH, IW, OC, OH, OW;
    int pt, pl;
    int TX, TH, IPB, NG, CC, SW; /* SW: a staged row's stride (floats, a multiple of 4) */
    int tiles_y, tiles_x;        /* row and column tiles of an image */
    int accumulate;
    CBC_DPTR(const float) x;    /* [R][C][IH][IW] */
    CBC_DPTR(const float) w;    /* [OC][C][KH][KW] */
    CBC_DPTR(const float) bias; /* [OC] or 0 */
    CBC_DPTR(float) y;          /* [R][OC][OH][OW] */
};

/* A pool (max or average) over windows, forward (y) or backward (gx (+)=):
 * the backward gathers, per input element, from every window holding it
 * (a window's largest element gets its gradient: the first in scan order). */
enum { CBC_K_POOL_MAX = 0, CBC_K_POOL_AVG = 1 };
struct cbc_k_pool {
    int R, C, IH, IW, OH, OW;
    int kh, kw, sh, sw, dh, dw, pt, pl;
    int kind, count_include_pad, accumulate;
    CBC_DPTR(const float) x;  /* the pool's input [R][C][IH][IW] */
    CBC_DPTR(float) y;        /* forward: the output */
    CBC_DPTR(const float) gy; /* backward: dF/dy */
    CBC_DPTR(float) gx;       /* backward: dF/dx */
};

/* Elementwise and row operations. */
enum {
    CBC_K_EW_AFFINE = 0,    /* y = x mul[c] + add[c], c = (i / plane) % C */
    CBC_K_EW_ACT = 1,       /* y = act(x) */
    CBC_K_EW_ADD = 2,       /* y = x + x2 */
    CBC_K_EW_COPY = 3,      /* y = x (backward: gx (+)= gy) */
    CBC_K_EW_GAP = 4        /* forward y[r][c] = mean of x[r][c][.]; backward gx (+)= gy / plane */
};
struct cbc_k_ew {
    int op, R, E;  /* rows, elements of a row of y (GAP: of x) */
    int C, plane;  /* AFFINE and GAP: channels and their size */
    int act;
    float act_param;
    int accumulate; /* backward: add into gx */
    int vec4;       /* ACT, ADD forward, ACT, COPY backward: four elements a thread
                     * (every pointer 16-byte aligned, R E a multiple of 4) */
    CBC_DPTR(const float) x;
    CBC_DPTR(const float) x2;
    CBC_DPTR(float) y;
    CBC_DPTR(const float) mul;
    CBC_DPTR(const float) add;
    /* backward */
    CBC_DPTR(const float) gy;
    CBC_DPTR(float) gx;
    /* COPY of a slice: rows of y are ldy floats, from offset yoff; of x, ldx from xoff */
    int ldx, xoff, ldy, yoff;
};

/* LayerNorm, Softmax, LogSoftmax of whole rows (a warp per row). */
enum { CBC_K_ROW_LN = 0, CBC_K_ROW_SOFTMAX = 1, CBC_K_ROW_LOG_SOFTMAX = 2 };
struct cbc_k_rows {
    int op, R, E, accumulate;
    float eps;
    CBC_DPTR(const float) x;
    CBC_DPTR(float) y;
    CBC_DPTR(const float) gamma; /* LN, [E] or 0 */
    CBC_DPTR(const float) beta;
    CBC_DPTR(const float) gy; /* backward */
    CBC_DPTR(float) gx;
};

/* The path and the ends of the pass. */
struct cbc_k_netio {
    int R, F, S, row0, outs, target;
    CBC_DPTR(const float) x;      /* inputs [n][F] (global b) */
    struct cbc_k_base base;
    CBC_DPTR(const float) alpha;  /* [S] */
    CBC_DPTR(const float) weight; /* [S] */
    CBC_DPTR(float) rows;         /* path: the rows [R][F] */
    CBC_DPTR(const float) out;    /* seed: the last value [R][outs] */
    CBC_DPTR(float) fo;           /* seed: [R] the target output */
    CBC_DPTR(float) gout;         /* seed: one-hot [R][outs] */
    CBC_DPTR(const int) targets;  /* a target per input (global b), or 0 */
    CBC_DPTR(const float) g0;     /* attributions: dF/d rows [R][F] */
    CBC_DPTR(float) attr;         /* [n][F] (global b) */
    int nb;                       /* attributions: inputs of this chunk */
};

#endif

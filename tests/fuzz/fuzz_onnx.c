/* fuzz_onnx.c: libFuzzer target for igrun's ONNX reader (src/ig/onnx.c):
 * the wire-format check, protobuf-c's decoding, tensors (inline, typed
 * fields; external data names resolve under a directory that does not
 * exist), the symbolic run of the graph onto layers, and the same bytes
 * read as a convolutional network (cbc_net_load_onnx: Conv, pools, Concat,
 * ...); then, for a model either reader accepts, a forward pass and a few
 * IG steps of one input on the CPU reference, so every model it returns is
 * one the engines can run. */
#include "ig_int.h"

#include <stdlib.h>
#include <string.h>

static void fuzz_net(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_net(data, size);
    struct cbc_mlp_owned *m = NULL;
    struct cbc_err err = {0};
    if (ig_onnx_load_mem("/nonexistent-fuzz-dir/m.onnx", data, size, &m, &err) != CBC_OK)
        return 0;
    const struct cbc_mlp *mlp = &m->mlp;
    size_t F = (size_t)mlp->layers[0].in, outs = (size_t)mlp->layers[mlp->n_layers - 1].out;
    if (F <= 4096 && outs <= 4096) {
        float *x = calloc(F, sizeof *x), *attr = calloc(F, sizeof *attr);
        double *y = calloc(outs, sizeof *y), v[4];
        for (size_t i = 0; x && i < F; i++)
            x[i] = (float)((int)(i % 7) - 3) * 0.25f;
        if (x && attr && y && cbc_mlp_forward(mlp, x, 1, y, &err) == CBC_OK) {
            struct cbc_ig_request r;
            cbc_ig_request_defaults(&r);
            r.x = x, r.n = 1, r.steps = 3, r.target = (int)(outs - 1);
            struct cbc_ig_output o = {attr, v, v + 1, v + 2, v + 3};
            cbc_ig_cpu_mlp(mlp, &r, &o, &err);
        }
        free(x), free(attr), free(y);
    }
    cbc_mlp_owned_free(m);
    return 0;
}

/* The network reader on the same bytes; a small network it returns is run. */
static void fuzz_net(const uint8_t *data, size_t size)
{
    struct cbc_net_owned *nw = NULL;
    struct cbc_err err = {0};
    if (ig_onnx_load_any_mem("/nonexistent-fuzz-dir/m.onnx", data, size, 1, NULL, &nw, &err) !=
        CBC_OK)
        return;
    const struct cbc_net *net = &nw->net;
    size_t F = cbc_net_features(net), outs = cbc_net_outputs(net), work = F;
    for (int k = 0; k < net->n_nodes; k++)
        work += (size_t)net->nodes[k].c * net->nodes[k].h * net->nodes[k].w;
    if (work <= (1u << 16)) { /* what a claimed shape makes the reference allocate */
        float *x = calloc(F, sizeof *x), *attr = calloc(F, sizeof *attr);
        double *y = calloc(outs, sizeof *y), v[4];
        for (size_t i = 0; x && i < F; i++)
            x[i] = (float)((int)(i % 7) - 3) * 0.25f;
        if (x && attr && y && cbc_net_forward(net, x, 1, y, &err) == CBC_OK) {
            struct cbc_ig_request r;
            cbc_ig_request_defaults(&r);
            r.x = x, r.n = 1, r.steps = 2, r.target = (int)(outs - 1);
            struct cbc_ig_output o = {attr, v, v + 1, v + 2, v + 3};
            cbc_ig_cpu_net(net, &r, &o, &err);
        }
        free(x), free(attr), free(y);
    }
    cbc_net_owned_free(nw);
}

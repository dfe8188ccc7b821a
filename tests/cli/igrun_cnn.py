#!/usr/bin/env python3
"""igrun_cnn.py: igrun on convolutional image models exported by real
PyTorch, and on hand-built convolutional graphs it must refuse, on the CPU.

The models are tests/data/ig/cnn/*, made once by make_cnn_models.py there
with torch.onnx.export, with the attributions of real Captum 0.9 in float64:
- a LeNet-style MNIST CNN, a ResNet-style CIFAR network (residual blocks,
  BatchNorm folded by the exporter, kept for igrun to fold, and the dynamo
  exporter's graph), a depthwise-separable block with a Concat, a model of
  every window attribute (stride, padding, dilation, groups, pools with and
  without counting the padding, ceil_mode), a 1-D model and a flat input
  reshaped into an image: each equals Captum float64 to 1e-5 relative L2
  (the measured figure is printed), computes the model's own outputs
  (--check-outputs), and its .npy is shaped like the input;
- --target pred and a target per input agree, FD agrees with the analytic
  gradient, SmoothGrad with stdev 0 is plain IG, per-channel and summed heat
  maps are drawn;
- graphs igrun cannot run are refused naming the node, the operator or
  attribute and the fix; every prefix and many byte flips of a real model
  give an answer or an error, never a crash.
Meson passes BUILDDIR and SRCDIR; CBC_PYTHON is the interpreter with numpy."""
import json
import os
import re
import sys
import tempfile

try:
    import numpy as np
except ImportError as e:
    print("numpy is needed (scripts/run.sh test installs it): %s" % e, file=sys.stderr)
    sys.exit(77)

IGRUN = os.path.join(os.environ["BUILDDIR"], "tools", "igrun", "igrun")
DATA = os.path.join(os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                    "tests", "data", "ig", "cnn")
tmp = tempfile.mkdtemp(prefix="cbc-cnn.")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from igrun_checks import Checks  # noqa: E402
from onnx_writer import attr_i, attr_s, fld, fint, node, tensor, value_info  # noqa: E402

C = Checks(IGRUN)
fail, igrun, expect = C.fail, C.igrun, C.expect


def d(name):
    return os.path.join(DATA, name)


def t(name):
    return os.path.join(tmp, name)


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def run_attr(model, x, *extra):
    out = t("a.npy")
    if os.path.exists(out):
        os.remove(out)
    rc, text = igrun("--model", model, "--input", x, "--out", out, "-q", *extra)
    if rc != 0:
        fail("igrun on %s exited %d: %s" % (model, rc, text[-600:]))
        return None
    return np.load(out).astype(np.float64)


# ---- the exported models against Captum float64 ---------------------------
MODELS = [("lenet.onnx", "lenet"), ("resnet.onnx", "resnet"), ("resnet.nofold.onnx", "resnet"),
          ("resnet.dynamo.onnx", "resnet"), ("dwsep.onnx", "dwsep"),
          ("dwsep.nofold.onnx", "dwsep"), ("zoo.onnx", "zoo"), ("conv1d.onnx", "conv1d"),
          ("viewconv.onnx", "viewconv")]
worst = 0.0
for model, name in MODELS:
    C.checks += 1
    x = d(name + ".x.npy")
    a = run_attr(d(model), x, "--target", d(name + ".t.npy"), "--check-outputs",
                 d(name + ".y.npy"))
    want = np.load(d(name + ".attr.npy"))
    if a is None:
        continue
    if a.shape != want.shape:
        fail("%s: attributions of shape %s, the input's is %s" % (model, a.shape, want.shape))
        continue
    e = rel_l2(a, want)
    worst = max(worst, e)
    print("  %s: rel L2 %.2e from Captum 0.9 float64" % (model, e))
    if not e <= 1e-5:
        fail("%s: relative L2 %.3g from Captum float64 (1e-5 allowed)" % (model, e))

# the header names the network's operators
expect(0, ["1x28x28 conv(6,5x5) relu maxpool conv(16,5x5) relu maxpool linear(64) relu",
           "a convolutional network"], "--model", d("lenet.onnx"), "--input", d("lenet.x.npy"),
       "--target", "0")
expect(0, ["conv(8,3x3,depthwise)", "concat"], "--model", d("dwsep.onnx"), "--input",
       d("dwsep.x.npy"), "--target", "0")
# a model whose outputs are not these inputs' is refused by --check-outputs
yb = np.load(d("resnet.y.npy"))
yb[1, 3] += 0.5
np.save(t("resnet.bad.y.npy"), yb)
expect(1, ["--check-outputs", "input 1, output 3", "not the model that computed them"],
       "--model", d("resnet.onnx"), "--input", d("resnet.x.npy"), "--target", "0",
       "--check-outputs", t("resnet.bad.y.npy"))

# ---- what is explained -------------------------------------------------------
x = d("lenet.x.npy")
X = np.load(x)
rc, text = igrun("--model", d("lenet.onnx"), "--input", x, "--target", "pred", "--out",
                 t("pred.json"))
if rc != 0:
    fail("--target pred: %s" % text[-400:])
else:
    preds = [i["target"] for i in json.load(open(t("pred.json")))["inputs"]]
    np.save(t("pred.t.npy"), np.array(preds, dtype=np.int64))
    a_pred = run_attr(d("lenet.onnx"), x, "--target", "pred")
    a_file = run_attr(d("lenet.onnx"), x, "--target", t("pred.t.npy"))
    if a_pred is not None and a_file is not None and rel_l2(a_pred, a_file) > 1e-12:
        fail("--target pred and the same targets from a file differ")
# several targets: a target axis after the inputs'
a2 = run_attr(d("zoo.onnx"), d("zoo.x.npy"), "--target", "1,3")
if a2 is not None and a2.shape != (3, 2, 3, 16, 16):
    fail("--target 1,3: attributions of shape %s, expected (3, 2, 3, 16, 16)" % (a2.shape,))
# SmoothGrad with no noise is IG; with noise it differs
a_sg0 = run_attr(d("dwsep.onnx"), d("dwsep.x.npy"), "--target", "1", "--noise", "smoothgrad",
                 "--samples", "3", "--stdev", "0")
a_ig = run_attr(d("dwsep.onnx"), d("dwsep.x.npy"), "--target", "1")
a_sg = run_attr(d("dwsep.onnx"), d("dwsep.x.npy"), "--target", "1", "--noise", "smoothgrad",
                "--samples", "3", "--stdev", "0.1")
if a_sg0 is not None and a_ig is not None and rel_l2(a_sg0, a_ig) > 1e-6:
    fail("SmoothGrad of stdev 0 is not IG: %.3g" % rel_l2(a_sg0, a_ig))
if a_sg is not None and a_ig is not None and rel_l2(a_sg, a_ig) < 1e-3:
    fail("SmoothGrad of stdev 0.1 equals IG")
# a baseline per input, and the mean baseline
expect(0, "max |delta|", "--model", d("resnet.onnx"), "--input", d("resnet.x.npy"), "--target",
       "0", "--baseline", "mean", "--tolerance", "0.01")

# ---- heat maps: a row per channel and their sum -------------------------------
svg = t("resnet.svg")
expect(0, "delta", "--model", d("resnet.onnx"), "--input", d("resnet.x.npy"), "--target", "2",
       "--plot", svg, "--plot-inputs", "0,2", "--out", t("r.npy"))
text = open(svg).read()
for needle in ("channel 0", "channel 2", "summed over the channels", "input 2 of 3"):
    if needle not in text:
        fail("resnet heat map lacks '%s'" % needle)
A = np.load(t("r.npy"))
cells = [float(v) for v in re.findall(r"<title>\[\d+,\d+\] ([-0-9.e+]+)</title>", text)]
want = list(A[0, 0].ravel()) + list(A[0, 1].ravel()) + list(A[0, 2].ravel()) + \
    list(A[0].sum(0).ravel())
if not np.allclose(cells[:len(want)], want, rtol=1e-4, atol=1e-7):
    fail("the heat map's cells are not the attributions of channels 0..2 and their sum")

# ---- refusals, each naming the node and the fix ----------------------------------
rng = np.random.default_rng(31)
W = rng.standard_normal((2, 1, 3, 3))
inits = [tensor("w", W), tensor("b", rng.standard_normal(2)),
         tensor("fcw", rng.standard_normal((3, 2 * 4 * 4))), tensor("two", np.array(2.0)),
         tensor("chan3", rng.standard_normal((3, 1, 1))), tensor("shp", np.array([1, -1]))]


def model(nodes, in_dims=(1, 1, 6, 6), out="y", extra_inits=()):
    g = b"".join(fld(1, n) for n in nodes) + fld(2, "g")
    g += b"".join(fld(5, i) for i in list(inits) + list(extra_inits))
    g += fld(11, value_info("x", in_dims)) + fld(12, value_info(out, [1, 3]))
    return fint(1, 8) + fld(8, fint(2, 17)) + fld(7, g)


def write(name, blob):
    with open(t(name), "wb") as f:
        f.write(blob)
    return t(name)


x66 = t("x66.npy")
np.save(x66, rng.random((2, 1, 6, 6)).astype(np.float32))
CONV = node("Conv", ["x", "w", "b"], ["c"], "conv", [attr_i("group", 1)])
RELU = node("Relu", ["c"], ["r"], "relu")


def ints_attr(name, vals):
    return fld(1, name) + b"".join(fint(8, v) for v in vals) + fint(20, 7)  # type INTS


POOL = node("MaxPool", ["r"], ["p"], "pool", [ints_attr("kernel_shape", [1, 1])])
HEAD = [node("Flatten", ["p"], ["f"], "flat"),
        node("Gemm", ["f", "fcw"], ["y"], "fc", [attr_i("transB", 1)])]
ok = model([CONV, RELU, POOL] + HEAD)
expect(0, "max |delta|", "--model", write("ok.onnx", ok), "--input", x66, "--target", "1")
cases = [
    ("resize", [CONV, node("Resize", ["c"], ["r"], "up"), POOL] + HEAD,
     ["node 'up' (Resize): is not an operator igrun runs", "upsampling decoder"]),
    ("hardswish", [CONV, node("HardSwish", ["c"], ["r"], "hs"), POOL] + HEAD,
     ["node 'hs' (HardSwish): is not an operator igrun runs", "igrun runs: Conv, MaxPool"]),
    ("ceil", [CONV, RELU, node("MaxPool", ["r"], ["p"], "pool",
                               [ints_attr("kernel_shape", [3, 3]), ints_attr("strides", [2, 2]),
                                attr_i("ceil_mode", 1)])] + HEAD,
     ["node 'pool' (MaxPool): takes ceil_mode=1, whose last window on axis 2 is partial",
      "ceil_mode=False"]),
    ("indices", [CONV, RELU, node("MaxPool", ["r"], ["p", "idx"], "pool",
                                  [ints_attr("kernel_shape", [1, 1])]),
                 node("Add", ["idx", "p"], ["q"], "useidx"),
                 node("Flatten", ["q"], ["f"], "flat"),
                 node("Gemm", ["f", "fcw"], ["y"], "fc", [attr_i("transB", 1)])],
     ["node 'pool' (MaxPool): its indices are used", "return_indices=False"]),
    ("mul2", [CONV, RELU, node("Mul", ["r", "c"], ["p"], "gate")] + HEAD,
     ["node 'gate' (Mul): takes two tensors of the graph", "Sub, Mul and Div only by constants"]),
    ("concat2", [CONV, RELU, node("Concat", ["r", "c"], ["p"], "cat", [attr_i("axis", 2)])] + HEAD,
     ["node 'cat' (Concat): concatenates along axis 2", "along the channels"]),
    ("weightin", [node("Conv", ["x", "x"], ["c"], "conv"), RELU, POOL] + HEAD,
     ["node 'conv' (Conv): its weight 'x' is not a constant"]),
    ("perpix", [CONV, node("Mul", ["c", "fcw"], ["r"], "scale"), POOL] + HEAD,
     ["node 'scale' (Mul): constant 'fcw' (96 values) is not one per channel", "[C, 1, 1]"]),
    ("softmax4", [CONV, node("Softmax", ["c"], ["r"], "sm", [attr_i("axis", 1)]), POOL] + HEAD,
     ["node 'sm' (Softmax): is taken over axis 1 of a tensor of rank 4", "flat outputs"]),
    ("gemm4", [CONV, RELU, node("Gemm", ["r", "fcw"], ["y"], "fc", [attr_i("transB", 1)])],
     ["node 'fc' (Gemm): multiplies 'r' of rank 4", "flatten first"]),
    ("groups", [node("Conv", ["x", "w"], ["c"], "conv", [attr_i("group", 2)]), RELU, POOL] + HEAD,
     ["node 'conv' (Conv): weight 'w' [2, 1, ...] in 2 groups does not fit 'x' of 1 channels"]),
    ("avgdil", [CONV, RELU, node("AveragePool", ["r"], ["p"], "avg",
                                 [ints_attr("kernel_shape", [1, 1]),
                                  ints_attr("dilations", [2, 2])])] + HEAD,
     ["node 'avg' (AveragePool): averages with dilations 2, 2"]),
    ("poolpad", [CONV, RELU, node("MaxPool", ["r"], ["p"], "pool",
                                  [ints_attr("kernel_shape", [2, 2]),
                                   ints_attr("pads", [2, 2, 2, 2])])] + HEAD,
     ["node 'pool' (MaxPool): pads 2, 2, 2, 2 with a window of 2x2", "half its window"]),
    ("bntrain", [CONV, node("BatchNormalization", ["c", "b", "b", "b", "b"], ["r"], "bn",
                            [attr_i("training_mode", 1)]), POOL] + HEAD,
     ["node 'bn' (BatchNormalization): is in training mode", "model.eval()"]),
    ("order", [RELU, CONV, POOL] + HEAD,
     ["node 'relu' (Relu): reads 'c', which no earlier node", "topological order"]),
]
for name, nodes, needles in cases:
    expect(2, needles, "--model", write(name + ".onnx", model(nodes)), "--input", x66,
           "--target", "1")
# the input's shape must be known
dyn = model([CONV, RELU, POOL] + HEAD, in_dims=(1, 1, 0, 6))
expect(2, ["the input 'x' has no fixed size on axis 2", "fixed input shape"], "--model",
       write("dyn.onnx", dyn), "--input", x66, "--target", "1")
# SAME padding is resolved as ONNX defines it (the model runs: a 6x6 output)
same = model([node("Conv", ["x", "w", "b"], ["c"], "conv", [attr_s("auto_pad", "SAME_UPPER")]),
              RELU, node("MaxPool", ["r"], ["p"], "pool", [ints_attr("kernel_shape", [2, 2]),
                                                           ints_attr("strides", [2, 2])]),
              node("Flatten", ["p"], ["f"], "flat"),
              node("Gemm", ["f", "fcw9"], ["y"], "fc", [attr_i("transB", 1)])],
             extra_inits=[tensor("fcw9", rng.standard_normal((3, 2 * 3 * 3)))])
expect(0, "max |delta|", "--model", write("same.onnx", same), "--input", x66, "--target", "1")
# a per-channel constant on the input (normalisation), broadcast as [C, 1, 1]
x3 = t("x3.npy")
np.save(x3, rng.random((2, 3, 6, 6)).astype(np.float32))
norm = model([node("Sub", ["x", "chan3"], ["xn"], "centre"),
              node("Conv", ["xn", "w3", "b"], ["c"], "conv"), RELU, POOL] + HEAD,
             in_dims=(1, 3, 6, 6), extra_inits=[tensor("w3", rng.standard_normal((2, 3, 3, 3)))])
expect(0, ["3x6x6 scale conv(2,3x3)", "max |delta|"], "--model", write("norm.onnx", norm),
       "--input", x3, "--target", "1")

# central differences agree with backpropagation on a smooth network (no
# ReLU kink or argmax for a perturbation to cross)
smooth = model([node("Conv", ["x", "w", "b"], ["c"], "conv", [ints_attr("pads", [1, 1, 1, 1])]),
                node("Tanh", ["c"], ["r"], "tanh"),
                node("AveragePool", ["r"], ["p"], "avg", [ints_attr("kernel_shape", [2, 2]),
                                                          ints_attr("strides", [2, 2])]),
                node("Flatten", ["p"], ["f"], "flat"),
                node("Gemm", ["f", "fcw18"], ["y"], "fc", [attr_i("transB", 1)])],
               extra_inits=[tensor("fcw18", rng.standard_normal((3, 2 * 3 * 3)))])
sm = write("smooth.onnx", smooth)
a_an = run_attr(sm, x66, "--target", "2", "--steps", "8")
a_fd = run_attr(sm, x66, "--target", "2", "--steps", "8", "--gradient", "fd")
if a_an is not None and a_fd is not None:
    e = rel_l2(a_fd, a_an)
    print("  a smooth network: finite differences %.2e from backpropagation" % e)
    if not e <= 1e-4:
        fail("finite differences differ from backpropagation by %.3g" % e)

# MaxPool's gradient goes to the first largest element of each window, as
# autograd's: on an input with ties, IG of Linear(MaxPool(x)) is x_i times the
# weights of the windows whose first largest element is i (exact: the pool is
# linear along the path from 0)
xt = np.floor(rng.random((2, 1, 6, 6)) * 3).astype(np.float32)  # values 0, 1, 2: many ties
np.save(t("ties.npy"), xt)
Wt = rng.standard_normal((3, 9))
tie = model([node("MaxPool", ["x"], ["p"], "pool", [ints_attr("kernel_shape", [2, 2]),
                                                    ints_attr("strides", [2, 2])]),
             node("Flatten", ["p"], ["f"], "flat"),
             node("Gemm", ["f", "wt"], ["y"], "fc", [attr_i("transB", 1)])],
            extra_inits=[tensor("wt", Wt)])
a_tie = run_attr(write("ties.onnx", tie), t("ties.npy"), "--target", "1")
want = np.zeros_like(xt, dtype=np.float64)
for b in range(2):
    for oy in range(3):
        for ox in range(3):
            win = xt[b, 0, 2 * oy:2 * oy + 2, 2 * ox:2 * ox + 2].ravel()
            k = int(np.argmax(win))  # numpy's argmax: the first largest, in scan order
            want[b, 0, 2 * oy + k // 2, 2 * ox + k % 2] += Wt[1, oy * 3 + ox] * win[k]
C.checks += 1
if a_tie is not None and not np.allclose(a_tie, want, rtol=1e-5, atol=1e-6):
    fail("MaxPool over ties: the gradient did not go to each window's first largest element")

# BatchNorm folded into a Conv with a bias (W' = W s, b' = b s + t) equals the
# same BatchNorm run as a node of its own, which a second reader of the
# Conv's output forces (a dead Identity)
bn_inits = [tensor("bn_s", rng.uniform(0.5, 1.5, 2)), tensor("bn_b", rng.standard_normal(2)),
            tensor("bn_m", rng.standard_normal(2)), tensor("bn_v", rng.uniform(0.5, 2, 2))]
BN = node("BatchNormalization", ["c", "bn_s", "bn_b", "bn_m", "bn_v"], ["r0"], "bn")
folded = model([CONV, BN, node("Relu", ["r0"], ["r"], "relu"), POOL] + HEAD,
               extra_inits=bn_inits)
apart = model([CONV, node("Identity", ["c"], ["dead"], "other"), BN,
               node("Relu", ["r0"], ["r"], "relu"), POOL] + HEAD, extra_inits=bn_inits)
out_f = expect(0, ["conv(2,3x3) relu"], "--model", write("bnfold.onnx", folded), "--input", x66,
               "--target", "1")
out_a = expect(0, ["conv(2,3x3) scale relu"], "--model", write("bnapart.onnx", apart),
               "--input", x66, "--target", "1")
a_f = run_attr(t("bnfold.onnx"), x66, "--target", "1")
a_a = run_attr(t("bnapart.onnx"), x66, "--target", "1")
C.checks += 1
if a_f is not None and a_a is not None and rel_l2(a_f, a_a) > 1e-6:
    fail("BatchNorm folded into a Conv with a bias differs from it run apart by %.3g"
         % rel_l2(a_f, a_a))

# ---- hostile files: prefixes and byte flips of a real model ------------------
real = open(d("dwsep.onnx"), "rb").read()
xr = d("dwsep.x.npy")
for cut in range(0, len(real), max(1, len(real) // 61)):
    igrun("--model", write("cut.onnx", real[:cut]), "--input", xr, "--target", "0", "-q")
r = np.random.default_rng(31)
for _ in range(120):
    b = bytearray(real)
    for _ in range(3):
        b[r.integers(len(b))] = int(r.integers(256))
    igrun("--model", write("flip.onnx", bytes(b)), "--input", xr, "--target", "0", "-q")

C.finish("# igrun on convolutional models: %d checks, %d models against Captum float64 "
         "(worst rel L2 %.2e), %d refusals, prefixes and byte flips" %
         (C.checks, len(MODELS), worst, len(cases) + 1))

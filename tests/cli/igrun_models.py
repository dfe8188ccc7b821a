#!/usr/bin/env python3
"""igrun_models.py: igrun on models written by real PyTorch, and on hostile
ONNX files, on the CPU.

The models are tests/data/ig/*: made once by make_models.py there with
torch.onnx.export (both exporters) and the real safetensors.torch.save_file,
with the attributions of real Captum 0.9 in float64 beside them. Here:
- issue 26's five cases: each model's ONNX equals Captum float64 to 1e-6
  relative L2; its safetensors form is right, or refused by name, or (what a
  state_dict cannot show) refused by --check-outputs and warned about
  without it;
- ONNX equals its safetensors twin; external data is read, and refused when
  it leaves the model's directory, is missing, a symbolic link, or short;
- hand-built graphs igrun cannot run (a branch, a value used after it
  changed, two activations in a layer, an unknown operator, training-mode
  BatchNorm, tanh GELU, Softmax over the batch, int8 weights, a graph out of
  order, nesting 40 deep, garbage) are refused naming the node and the fix,
  never a crash.
Meson passes BUILDDIR and SRCDIR; CBC_PYTHON is the interpreter with numpy."""
import os
import shutil
import sys
import tempfile

try:
    import numpy as np
except ImportError as e:
    print("numpy is needed (scripts/run.sh test installs it): %s" % e, file=sys.stderr)
    sys.exit(77)

IGRUN = os.path.join(os.environ["BUILDDIR"], "tools", "igrun", "igrun")
DATA = os.path.join(os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                    "tests", "data", "ig")
tmp = tempfile.mkdtemp(prefix="cbc-models.")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from igrun_checks import Checks  # noqa: E402

C = Checks(IGRUN)
fail, igrun, expect = C.fail, C.igrun, C.expect


def d(name):
    return os.path.join(DATA, name)


def t(name):
    return os.path.join(tmp, name)


def attributions(model, name, *extra):
    out = t("a.npy")
    if os.path.exists(out):
        os.remove(out)
    rc, text = igrun("--model", model, "--input", d("x.npy"), "--target", d(name + ".t.npy"),
                     "--out", out, "-q", *extra)
    if rc != 0:
        fail("igrun on %s exited %d: %s" % (model, rc, text[-600:]))
        return None
    return np.load(out).astype(np.float64)


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def equals_captum(model, name, *extra):
    C.checks += 1
    a = attributions(model, name, *extra)
    want = np.load(d(name + ".attr.npy"))
    if a is None:
        return None
    e = rel_l2(a, want)
    if e > 1e-6:
        fail("%s: relative L2 %.3g from Captum float64 (1e-6 allowed)" % (model, e))
    return a


# ---- issue 26's five cases ------------------------------------------------
# 1. residual, 2. a scaled activation: the graph carries them; a state_dict
# cannot, so its answer is refused by --check-outputs and warned about
for name in ("residual", "scaled"):
    equals_captum(d(name + ".onnx"), name)
    if os.path.exists(d(name + ".dynamo.onnx")):
        equals_captum(d(name + ".dynamo.onnx"), name)
    expect(1, ["--check-outputs", "is not the model that computed them", "export ONNX"],
           "--model", d(name + ".safetensors"), "--input", d("x.npy"), "--target", "0",
           "--check-outputs", d(name + ".y.npy"))
    expect(0, ["layers inferred from its tensors", "torch.onnx.export", "--check-outputs"],
           "--model", d(name + ".safetensors"), "--input", d("x.npy"), "--target", "0")
    # the ONNX model agrees with its own outputs
    expect(0, "max |delta|", "--model", d(name + ".onnx"), "--input", d("x.npy"), "--target", "0",
           "--check-outputs", d(name + ".y.npy"))
# 3. layers input, hidden, output and 4. README's fc1, bn1, fc2, fc3, saved by
# the real save_file (sorted by name): refused without layer_order, right with it
for name, layers in (("named", "'hidden', 'input', 'output'"), ("recipe", "'bn1', 'fc1', 'fc2'")):
    expect(2, ["are named, not numbered", layers, "sorts tensors by name", "layer_order",
               "--layers", "torch.onnx.export"],
           "--model", d(name + ".safetensors"), "--input", d("x.npy"), "--target", "0")
    a_st = equals_captum(d(name + ".order.safetensors"), name)
    a_onnx = equals_captum(d(name + ".onnx"), name)
    C.checks += 1
    if a_st is not None and a_onnx is not None and rel_l2(a_onnx, a_st) > 1e-6:
        fail("%s: the ONNX model and its safetensors twin differ by %.3g" %
             (name, rel_l2(a_onnx, a_st)))
    expect(0, "max |delta|", "--model", d(name + ".order.safetensors"), "--input", d("x.npy"),
           "--target", "0", "--check-outputs", d(name + ".y.npy"))
equals_captum(d("recipe.dynamo.onnx"), "recipe")
equals_captum(d("recipe.safetensors"), "recipe", "--layers", "fc1,bn1,fc2,fc3")
# a wrong order says which order ran, where it came from and the fixes
expect(2, ["tensor 'fc1.weight' [8, 6] takes 6 inputs but 'fc2.weight' [8, 8] gives 8",
           "ran in the order fc2, fc1, bn1, fc3 (--layers)", "correct --layers",
           "torch.onnx.export"],
       "--model", d("recipe.safetensors"), "--input", d("x.npy"), "--target", "0", "--layers",
       "fc2,fc1,bn1,fc3")
# 5. parameters of layers igrun does not run are refused by name
expect(2, ["tensor 'conv.weight' of shape [2, 1, 2, 2] is a Conv2d", "not its strides",
           "torch.onnx.export"],
       "--model", d("conv.safetensors"), "--input", d("x.npy"), "--target", "0")
expect(2, ["tensor 'emb.weight' of shape [10, 4] is an Embedding's table",
           "LayerIntegratedGradients"],
       "--model", d("embedding.safetensors"), "--input", d("x.npy"), "--target", "0")
expect(2, ["tensor 'act.weight' of shape [1] is a PReLU's slopes", "LeakyReLU"],
       "--model", d("prelu.safetensors"), "--input", d("x.npy"), "--target", "0")
# its ONNX graph is a convolutional network, which igrun explains (issue 31;
# tests/cli/igrun_cnn.py holds such models to Captum)
x9 = t("x9.npy")
np.save(x9, np.random.default_rng(9).standard_normal((2, 9)).astype(np.float32))
expect(0, ["conv(2,2x2)", "max |delta|"], "--model", d("conv.onnx"), "--input", x9, "--target", "0")
expect(2, ["node '/act/PRelu' (PRelu): is not an operator igrun runs", "LeakyReLU"],
       "--model", d("prelu.onnx"), "--input", d("x.npy"), "--target", "0")

# ---- the other operators the reader maps --------------------------------
# LayerNorm, GELU, SiLU, BatchNorm after an activation, a scale, LogSoftmax;
# at opset 17 GELU is the Erf pattern; a residual of the input before the
# activation, with Sub and Div
for m in ("mixed.onnx", "mixed.dynamo.onnx", "gelu17.onnx"):
    equals_captum(d(m), "mixed")
equals_captum(d("preres.onnx"), "preres")
expect(2, ["--activations with an ONNX model"], "--model", d("mixed.onnx"), "--input",
       d("x.npy"), "--target", "0", "--activations", "relu,relu,relu")
out = expect(0, "fc1,ln,fc2,fc3" if False else "max |delta|", "--model", d("mixed.onnx"),
             "--input", d("x.npy"), "--target", "0")
if "layers inferred" in out:
    fail("an ONNX model was warned about as if its layers were inferred")

# ---- external data ----------------------------------------------------------
equals_captum(d("external.onnx"), "recipe")
ext = open(d("external.onnx"), "rb").read()
data = open(d("external.onnx.data"), "rb").read()
loc = b"external.onnx.data"


def ext_case(name, location, data_bytes=data, link=False):
    """external.onnx with its location replaced (same length, so the
    protobuf stays valid) in a directory of its own."""
    dd = t(name)
    os.makedirs(dd, exist_ok=True)
    assert len(location) == len(loc)
    with open(os.path.join(dd, "m.onnx"), "wb") as f:
        f.write(ext.replace(loc, location))
    target = os.path.join(dd, location.decode()) if b"/" not in location else None
    if target and data_bytes is not None:
        if link:
            with open(os.path.join(dd, "real.data"), "wb") as f:
                f.write(data_bytes)
            os.symlink("real.data", target)
        else:
            with open(target, "wb") as f:
                f.write(data_bytes)
    return os.path.join(dd, "m.onnx")


expect(2, ["outside the model's directory", "save_as_external_data=False"], "--model",
       ext_case("up", b"../external.onnx.d"), "--input", d("x.npy"), "--target", "0")
expect(2, ["outside the model's directory"], "--model", ext_case("abs", b"/xternal.onnx.data"),
       "--input", d("x.npy"), "--target", "0")
expect(2, ["which cannot be opened", "copy the data file"], "--model",
       ext_case("missing", b"externaX.onnx.data", None), "--input", d("x.npy"), "--target", "0")
expect(4, ["which cannot be opened"], "--model", ext_case("link", loc, data, link=True),
       "--input", d("x.npy"), "--target", "0")
expect(2, ["which has 100", "truncated"], "--model", ext_case("short", loc, data[:100]),
       "--input", d("x.npy"), "--target", "0")


# ---- hand-built graphs (tests/cli/onnx_writer.py) ---------------------------
from onnx_writer import attr_f, attr_i, attr_s, fint, fld, node, tensor, value_info  # noqa: E402,F401


def model(nodes, inits, out="y", width=3, more_outputs=()):
    g = b"".join(fld(1, n) for n in nodes) + fld(2, "g")
    g += b"".join(fld(5, i) for i in inits)
    g += fld(11, value_info("x", [1, width])) + fld(12, value_info(out, [1, 2]))
    g += b"".join(fld(12, value_info(o, [1, 3])) for o in more_outputs)
    return fint(1, 8) + fld(8, fint(2, 17)) + fld(7, g)  # ir_version, opset 17, graph


def write(name, blob):
    with open(t(name), "wb") as f:
        f.write(blob)
    return t(name)


rng = np.random.default_rng(3)
W1, B1 = rng.standard_normal((3, 3)), rng.standard_normal(3)
W2 = rng.standard_normal((2, 3))
lin = [tensor("w1", W1), tensor("b1", B1), tensor("w2", W2), tensor("two", np.array(2.0))]
x3 = t("x3.npy")
np.save(x3, rng.standard_normal((2, 3)).astype(np.float32))
ok = model([node("Gemm", ["x", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)]),
            node("Relu", ["z"], ["h"], "act"),
            node("Gemm", ["h", "w2"], ["y"], "fc2", [attr_i("transB", 1)])], lin)
expect(0, "max |delta|", "--model", write("ok.onnx", ok), "--input", x3, "--target", "1")
# a node whose output is its own input's name (Identity, Reshape of a constant)
alias = model([node("Identity", ["w1"], ["w1"], "same"), node("Flatten", ["b1"], ["b1"], "flat"),
               node("Gemm", ["x", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)]),
               node("Relu", ["z"], ["h"], "act"),
               node("Gemm", ["h", "w2"], ["y"], "fc2", [attr_i("transB", 1)])], lin)
expect(0, "max |delta|", "--model", write("alias.onnx", alias), "--input", x3, "--target", "1")
cases = [
    ("branch", [node("Gemm", ["x", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)]),
                node("Gemm", ["z", "w1"], ["p"], "left", [attr_i("transB", 1)]),
                node("Gemm", ["z", "w1"], ["q"], "right", [attr_i("transB", 1)]),
                node("Add", ["p", "q"], ["s"], "join"),
                node("Gemm", ["s", "w2"], ["y"], "fc2", [attr_i("transB", 1)])],
     ["node 'right' (Gemm)", "the graph branches"]),
    ("stale", [node("Gemm", ["x", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)]),
               node("Relu", ["z"], ["h"], "act"),
               node("Mul", ["z", "two"], ["m"], "dbl"),
               node("Add", ["h", "m"], ["s"], "sum"),
               node("Gemm", ["s", "w2"], ["y"], "fc2", [attr_i("transB", 1)])],
     ["node 'dbl' (Mul)", "an earlier state of layer 'fc1'"]),
    ("twoacts", [node("Gemm", ["x", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)]),
                 node("Relu", ["z"], ["h"], "act"), node("Tanh", ["h"], ["h2"], "act2"),
                 node("Gemm", ["h2", "w2"], ["y"], "fc2", [attr_i("transB", 1)])],
     ["node 'act2' (Tanh)", "a second activation in one layer"]),
    ("unknown", [node("Gemm", ["x", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)]),
                 node("HardSwish", ["z"], ["h"], "hs"),
                 node("Gemm", ["h", "w2"], ["y"], "fc2", [attr_i("transB", 1)])],
     ["node 'hs' (HardSwish): is not an operator igrun runs", "igrun runs: Gemm"]),
    ("gelutanh", [node("Gemm", ["x", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)]),
                  node("Gelu", ["z"], ["h"], "g", [attr_s("approximate", "tanh")]),
                  node("Gemm", ["h", "w2"], ["y"], "fc2", [attr_i("transB", 1)])],
     ["node 'g' (Gelu): is the tanh approximation", "approximate='none'"]),
    ("softmax0", [node("Gemm", ["x", "w2"], ["z"], "fc", [attr_i("transB", 1)]),
                  node("Softmax", ["z"], ["y"], "sm", [attr_i("axis", 0)])],
     ["node 'sm' (Softmax): is taken over axis 0", "dim=-1"]),
    ("order", [node("Relu", ["z"], ["h"], "act"),
               node("Gemm", ["x", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)]),
               node("Gemm", ["h", "w2"], ["y"], "fc2", [attr_i("transB", 1)])],
     ["node 'act' (Relu): reads 'z', which no earlier node", "topological order"]),
    ("bntrain", [node("Gemm", ["x", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)]),
                 node("BatchNormalization", ["z", "b1", "b1", "b1", "b1"], ["h"], "bn",
                      [attr_i("training_mode", 1)]),
                 node("Gemm", ["h", "w2"], ["y"], "fc2", [attr_i("transB", 1)])],
     ["node 'bn' (BatchNormalization): is in training mode", "model.eval()"]),
]
G1 = node("Gemm", ["x", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)])
G2 = node("Gemm", ["h", "w2"], ["y"], "fc2", [attr_i("transB", 1)])
cases += [
    ("subtwo", [G1, node("Relu", ["z"], ["r"], "act"),
                node("Gemm", ["r", "w1"], ["q"], "mid", [attr_i("transB", 1)]),
                node("Sub", ["q", "r"], ["h"], "minus"), G2],
     ["node 'minus' (Sub): takes two tensors", "residual connection"]),
    ("div0", [G1, node("Div", ["z", "zero"], ["h"], "div"), G2],
     ["node 'div' (Div): divides by 0 ('zero')"]),
    ("reshape", [G1, node("Reshape", ["z", "shape3"], ["h"], "rs"), G2],
     ["node 'rs' (Reshape): reshapes to a shape that is not two constant numbers",
      "x.flatten(1)"]),
    ("actin", [node("Relu", ["x"], ["a"], "early"),
               node("Gemm", ["a", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)]),
               node("Relu", ["z"], ["h"], "act"), G2],
     ["node 'early' (Relu): is applied to the input", "a Linear's output"]),
    ("lnafter", [G1, node("Relu", ["z"], ["r"], "act"), node("Mul", ["r", "two"], ["s"], "dbl"),
                 node("LayerNormalization", ["s", "b1", "b1"], ["h"], "ln"), G2],
     ["node 'ln' (LayerNormalization): follows layer 'fc1''s scaling or residual"]),
    ("notearlier", [G1, node("Relu", ["z"], ["r"], "act"),
                    node("Gemm", ["r", "w1"], ["q"], "mid", [attr_i("transB", 1)]),
                    node("Add", ["q", "z"], ["h"], "res"), G2],
     ["node 'res' (Add): adds 'z', which is not an earlier layer's output"]),
    ("domain", [G1, node("FusedGelu", ["z"], ["h"], "ms") + fld(7, "com.microsoft"), G2],
     ["node 'ms' (FusedGelu): is an operator of domain 'com.microsoft'"]),
    ("view", [node("Shape", ["x"], ["s"], "shape"),
              node("Reshape", ["x", "s"], ["xf"], "view"),
              node("Gemm", ["xf", "w1", "b1"], ["z"], "fc1", [attr_i("transB", 1)]),
              node("Relu", ["z"], ["h"], "act"), G2],
     ["node 'shape' (Shape): is not an operator igrun runs", "write x.flatten(1)"]),
]
lin += [tensor("zero", np.array(0.0)), tensor("shape3", np.array([-1, 3, 1]))]
for name, nodes, needles in cases:
    expect(2, needles, "--model", write(name + ".onnx", model(nodes, lin)), "--input", x3,
           "--target", "1")
two = model([G1, node("Relu", ["z"], ["h"], "act"), G2], lin, more_outputs=["z"])
expect(2, ["the graph has 2 outputs", "return one tensor"], "--model", write("two.onnx", two),
       "--input", x3, "--target", "1")
int8 = model([node("Gemm", ["x", "w8"], ["y"], "fc", [attr_i("transB", 1)])],
             [tensor("w8", np.ones((2, 3)), dtype=3)])
expect(2, ["tensor 'w8' is of type INT8", "float32"], "--model", write("int8.onnx", int8),
       "--input", x3, "--target", "1")
# a shape is a claim: 2^30 elements without their data are refused before
# anything that size is allocated (the fuzzer found the allocation first)
huge = model([node("Gemm", ["x", "wh"], ["y"], "fc", [attr_i("transB", 1)])],
             [b"".join(fint(1, n) for n in (1 << 15, 1 << 15)) + fint(2, 1) + fld(8, "wh")])
expect(2, ["tensor 'wh' holds 0 values but its shape needs 1073741824"], "--model",
       write("huge.onnx", huge), "--input", x3, "--target", "1")
# nesting: a graph in an attribute of a node of a graph ... 40 deep
g = fld(2, "leaf")
for _ in range(40):
    g = fld(1, fld(5, fld(1, "a") + fld(6, g)))  # graph > node > attribute > graph
expect(2, ["nests deeper than 32"], "--model", write("deep.onnx", fld(7, g)), "--input", x3,
       "--target", "1")
expect(2, ["not an ONNX model", "torch.onnx.export"], "--model",
       write("half.onnx", ok[:len(ok) // 2]), "--input", x3, "--target", "1")
expect(2, ["not an ONNX model"], "--model", write("junk.onnx", bytes(range(256)) * 4),
       "--input", x3, "--target", "1")
# every prefix and many single-byte changes of a real model: an answer or an
# error, never a crash (fail() reports any death by signal)
real = open(d("mixed.onnx"), "rb").read()
for cut in range(0, len(real), max(1, len(real) // 97)):
    igrun("--model", write("cut.onnx", real[:cut]), "--input", d("x.npy"), "--target", "0", "-q")
r = np.random.default_rng(26)
for _ in range(150):
    b = bytearray(real)
    for _ in range(3):
        b[r.integers(len(b))] = int(r.integers(256))
    igrun("--model", write("flip.onnx", bytes(b)), "--input", d("x.npy"), "--target", "0", "-q")

C.finish("# igrun on real PyTorch models: %d checks, external data, %d hand-built refusals, "
         "prefixes and byte flips of a real model" % (C.checks, len(cases) + 5))

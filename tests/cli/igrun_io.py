#!/usr/bin/env python3
"""igrun_io.py: igrun and its readers (src/ig/io.c) on files written by the
real `safetensors` and `numpy` packages, and on damaged copies of them.

- safetensors in F32, F16, BF16 and F64, a linear model, so the
  attributions have a closed form: IG_i = w_i (x_i - x'_i), for every rule;
- .npy inputs in every dtype igrun reads, little- and big-endian, C and
  Fortran order; .csv with and without a header line;
- --out in .json, .csv and .npy, read back and compared with the closed form;
- --tolerance exits 3 when a delta exceeds it, 0 when none does;
- damaged copies: truncated, a lying header length, offsets past the end,
  overlapping tensors, an unknown dtype, a missing tensor, shapes that do
  not chain, NaN and Inf; each must exit 2 with words that name the cause.
Meson passes BUILDDIR; CBC_PYTHON is the interpreter with numpy and
safetensors (scripts/run.sh installs them)."""
import json
import re
import os
import struct
import sys
import tempfile

try:
    import numpy as np
    from safetensors.numpy import save_file
except ImportError as e:
    print("numpy and safetensors are needed (scripts/run.sh test installs them): %s" % e,
          file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from igrun_noise import igrun_noise  # noqa: E402

IGRUN = os.path.join(os.environ["BUILDDIR"], "tools", "igrun", "igrun")
tmp = tempfile.mkdtemp(prefix="cbc-igrun.")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from igrun_checks import Checks  # noqa: E402

C = Checks(IGRUN)
fail, igrun, expect = C.fail, C.igrun, C.expect


def path(name):
    return os.path.join(tmp, name)


F = 6
rng = np.random.default_rng(7)
W = rng.standard_normal((1, F)).astype(np.float32)
b = np.array([0.25], dtype=np.float32)
X = rng.standard_normal((3, F)).astype(np.float32)


def want_attr(w):
    return (w[0].astype(np.float64) * X.astype(np.float64)).astype(np.float32)


# ---- valid models: every float dtype safetensors writes ------------------
models = {}
for dt in ("float32", "float16", "bfloat16", "float64"):
    if dt == "bfloat16":
        # numpy has no bfloat16: safetensors' numpy API takes its bits as uint16
        # only through the torch API, so write the file the format's own way
        w32 = W.view(np.uint32)
        w16 = ((w32 + 0x8000) >> 16).astype(np.uint16)  # round to nearest
        wq = (w16.astype(np.uint32) << 16).view(np.float32)
        hdr = {"0.weight": {"dtype": "BF16", "shape": [1, F], "data_offsets": [0, 2 * F]},
               "0.bias": {"dtype": "BF16", "shape": [1], "data_offsets": [2 * F, 2 * F + 2]},
               "__metadata__": {"activations": "identity"}}
        bq = ((b.view(np.uint32) + 0x8000) >> 16).astype(np.uint16)
        h = json.dumps(hdr).encode()
        with open(path("m_bf16.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + w16.tobytes() + bq.tobytes())
        models["bf16"] = (path("m_bf16.safetensors"), wq)
        continue
    w = W.astype(dt)
    save_file({"0.weight": w, "0.bias": b.astype(dt)}, path("m_%s.safetensors" % dt),
              metadata={"activations": "identity"})
    models[dt] = (path("m_%s.safetensors" % dt), w.astype(np.float32))

np.save(path("x.npy"), X)
for name, (mfile, wq) in models.items():
    want = want_attr(wq)
    for fmt in ("json", "csv", "npy"):
        out = path("out_%s.%s" % (name, fmt))
        expect(0, "delta", "--model", mfile, "--input", path("x.npy"), "--steps", "16", "-q",
               "--out", out)
        if fmt == "npy":
            got = np.load(out)
        elif fmt == "csv":
            rows = open(out).read().strip().split("\n")
            head = rows[0].split(",")
            if head[:6] != ["input", "target", "f_x", "f_baseline", "sum", "delta"]:
                fail("csv header: %s" % rows[0])
            if any(r.split(",")[1] != "0" for r in rows[1:]):
                fail("csv: the target column is not the one explained")
            got = np.array([[float(v) for v in r.split(",")[6:]] for r in rows[1:]], dtype=np.float32)
        else:
            doc = json.load(open(out))
            got = np.array([i["attributions"] for i in doc["inputs"]], dtype=np.float32)
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
            fail("%s model, --out .%s: attributions %s, closed form %s" % (name, fmt, got, want))

# ---- inputs: every dtype and order of .npy, and .csv ---------------------
mfile = models["float32"][0]
Xi = np.array([[1, -2, 3, 0, 5, -1], [2, 2, 2, 2, 2, 2]], dtype=np.int64)
ref = None
for dt in ("<f2", "<f4", ">f4", "<f8", "|i1", "<i2", ">i4", "<i8", "|u1", "<u2", "<u4", "<u8"):
    arr = np.abs(Xi).astype(dt) if dt[1] == "u" else Xi.astype(dt)
    for order in ("C", "F"):
        f = path("in_%s_%s.npy" % (dt.replace("<", "le").replace(">", "be").replace("|", ""), order))
        np.save(f, np.asfortranarray(arr) if order == "F" else np.ascontiguousarray(arr))
        out = path("o.npy")
        expect(0, "delta", "--model", mfile, "--input", f, "-q", "--out", out)
        got = np.load(out)
        want = (W[0].astype(np.float64) * arr.astype(np.float64)).astype(np.float32)
        if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
            fail("input %s order %s: %s, expected %s" % (dt, order, got, want))
np.save(path("bool.npy"), np.array([[True, False] * 3]))
expect(0, "delta", "--model", mfile, "--input", path("bool.npy"), "-q")
np.save(path("c64.npy"), X.astype(np.complex64))
expect(2, "dtype '<c8'", "--model", mfile, "--input", path("c64.npy"))
with open(path("x.csv"), "w") as f:
    f.write("\n".join(",".join("%.9g" % v for v in r) for r in X) + "\n")
with open(path("xh.csv"), "w") as f:
    f.write(",".join("f%d" % i for i in range(F)) + "\n")
    f.write("\n".join(",".join("%.9g" % v for v in r) for r in X) + "\n")
for f in ("x.csv", "xh.csv"):
    expect(0, "delta", "--model", mfile, "--input", path(f), "-q", "--out", path("oc.npy"))
    if not np.allclose(np.load(path("oc.npy")), want_attr(W), rtol=1e-5, atol=1e-6):
        fail("csv input %s: attributions differ from the closed form" % f)

# ---- --tolerance: exit 3 only when a delta exceeds it -------------------
save_file({"0.weight": np.ones((4, F), np.float32) / 3, "2.weight": np.ones((1, 4), np.float32)},
          path("tanh.safetensors"), metadata={"activations": "tanh,identity"})
out = expect(3, "exceeds --tolerance", "--model", path("tanh.safetensors"), "--input",
             path("x.npy"), "--steps", "2", "--method", "riemann_left", "--tolerance", "1e-9")
expect(0, "delta", "--model", path("tanh.safetensors"), "--input", path("x.npy"), "--steps",
       "64", "--tolerance", "1e-2")
# PyTorch's full spelling of a parameter, commas and blanks inside it: F(x) of
# sum(LeakyReLU(0.2)(sum(x) / 3)) over the 4 units
out = path("leaky.json")
expect(0, "delta", "--model", path("tanh.safetensors"), "--input", path("x.npy"), "--out", out,
       "--activations", "nn.LeakyReLU(negative_slope=0.2, inplace=True), Identity")
z = X.astype(np.float64).sum(axis=1) / 3
want_f = 4 * np.where(z > 0, z, 0.2 * z)
got_f = [i["f_x"] for i in json.load(open(out))["inputs"]]
if not np.allclose(got_f, want_f, rtol=1e-5, atol=1e-6):
    fail("LeakyReLU(negative_slope=0.2, inplace=True): F(x) %s, expected %s" % (got_f, want_f))

# ---- damaged copies ------------------------------------------------------
good = open(mfile, "rb").read()
hlen = struct.unpack("<Q", good[:8])[0]


def damaged(name, data):
    p = path(name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def st_file(name, header, payload):
    h = json.dumps(header).encode()
    return damaged(name, struct.pack("<Q", len(h)) + h + payload)


data = good[8 + hlen:]
expect(2, ["truncated"], "--model", damaged("trunc.safetensors", good[:len(good) - 10]),
       "--input", path("x.npy"))
expect(2, ["header length", "runs past the end"], "--model",
       damaged("lying.safetensors", struct.pack("<Q", hlen + 1000) + good[8:]), "--input", path("x.npy"))
expect(2, ["ends at byte", "truncated file or lying header"], "--model",
       st_file("past.safetensors", {"0.weight": {"dtype": "F32", "shape": [1, F], "data_offsets": [0, 4 * F + 64]},
                                    "__metadata__": {"activations": "identity"}}, data), "--input", path("x.npy"))
expect(2, ["overlap"], "--model",
       st_file("overlap.safetensors", {"0.weight": {"dtype": "F32", "shape": [1, F], "data_offsets": [0, 4 * F]},
                                       "0.bias": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
                                       "__metadata__": {"activations": "identity"}}, data), "--input", path("x.npy"))
expect(2, ["has dtype 'F8_E4M3'"], "--model",
       st_file("dtype.safetensors", {"0.weight": {"dtype": "F8_E4M3", "shape": [1, F], "data_offsets": [0, F]},
                                     "__metadata__": {"activations": "identity"}}, data), "--input", path("x.npy"))
expect(2, ["tensor '0.bias' has no '0.weight' beside it"], "--model",
       st_file("missing.safetensors", {"0.bias": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                       "__metadata__": {"activations": "identity"}}, data[:4]), "--input", path("x.npy"))
save_file({"0.weight": np.ones((4, F), np.float32), "2.weight": np.ones((1, 5), np.float32)},
          path("chain.safetensors"), metadata={"activations": "tanh,identity"})
expect(2, ["takes 5 inputs", "gives 4 outputs"], "--model", path("chain.safetensors"), "--input", path("x.npy"))
np.save(path("x7.npy"), rng.standard_normal((2, F + 1)).astype(np.float32))
expect(2, ["7 features per input", "takes 6"], "--model", mfile, "--input", path("x7.npy"))
wn = W.copy()
wn[0, 2] = np.nan
save_file({"0.weight": wn}, path("nan.safetensors"), metadata={"activations": "identity"})
expect(2, ["'0.weight' [0][2] is nan"], "--model", path("nan.safetensors"), "--input", path("x.npy"))
wi = W.copy()
wi[0, 4] = np.inf
save_file({"0.weight": wi}, path("inf.safetensors"), metadata={"activations": "identity"})
expect(2, ["'0.weight' [0][4] is inf"], "--model", path("inf.safetensors"), "--input", path("x.npy"))
# a BatchNorm without weights (affine=False) is named by a tensor it has:
# these two crashed the loader, which quoted the missing weight's name
save_file({"0.running_mean": np.zeros(F, np.float32), "0.running_var": np.ones(F, np.float32),
           "other.1.weight": np.ones((1, F), np.float32)}, path("prefix.safetensors"),
          metadata={"activations": "identity"})
expect(2, ["'0.running_mean' and 'other.1.weight' have different prefixes"], "--model",
       path("prefix.safetensors"), "--input", path("x.npy"))
save_file({"net.01.running_mean": np.zeros(F, np.float32),
           "net.01.running_var": np.ones(F, np.float32),
           "net.1.weight": np.ones((1, F), np.float32)}, path("twice.safetensors"),
          metadata={"activations": "identity"})
expect(2, ["are both layer 1"], "--model", path("twice.safetensors"), "--input", path("x.npy"))
xn = X.copy()
xn[1, 3] = np.nan
np.save(path("xnan.npy"), xn)
expect(2, ["input 1 feature 3 is nan"], "--model", mfile, "--input", path("xnan.npy"))
npy = open(path("x.npy"), "rb").read()
expect(2, ["truncated"], "--model", mfile, "--input", damaged("tr.npy", npy[:-5]))
expect(2, ["not a .npy file"], "--model", mfile, "--input", damaged("magic.npy", b"PK" + npy[2:]))
expect(2, [".npy header length"], "--model", mfile, "--input",
       damaged("hl.npy", npy[:8] + struct.pack("<H", 60000) + npy[10:]))
with open(path("bad.csv"), "w") as f:
    f.write("1,2,3,4,5,6\n1,2,x,4,5,6\n")
expect(2, ["line 2 field 3 is not a number"], "--model", mfile, "--input", path("bad.csv"))
with open(path("ragged.csv"), "w") as f:
    f.write("1,2,3,4,5,6\n1,2,3\n")
expect(2, ["line 2 has 3 fields"], "--model", mfile, "--input", path("ragged.csv"))

# ---- targets, NoiseTunnel, several baselines, named layers ----------------
# a linear model with 3 outputs and named layers (PyTorch's spellings): IG of
# output t is W[t] * (x - x') exactly
W3 = rng.standard_normal((3, F)).astype(np.float32)
b3 = rng.standard_normal(3).astype(np.float32)
save_file({"head.weight": W3, "head.bias": b3}, path("three.safetensors"),
          metadata={"activations": "nn.Identity"})
m3 = path("three.safetensors")
expect(2, ["3 outputs: say which to explain with --target", "--target pred"], "--model", m3,
       "--input", path("x.npy"))
expect(2, ["--target 5", "outputs 0 to 2"], "--model", m3, "--input", path("x.npy"), "--target", "5")
expect(2, ["expected an output index, pred, a list"], "--model", m3, "--input", path("x.npy"),
       "--target", "1;2")
n = X.shape[0]
pred = np.argmax(X.astype(np.float64) @ W3.T.astype(np.float64) + b3, axis=1)
out = path("pred.json")
expect(0, "max |delta|", "--model", m3, "--input", path("x.npy"), "--target", "pred", "--out", out)
doc = json.load(open(out))
if [i["target"] for i in doc["inputs"]] != list(pred):
    fail("--target pred explained %s, the predictions are %s"
         % ([i["target"] for i in doc["inputs"]], list(pred)))
for i in doc["inputs"]:
    want = W3[i["target"]] * X[i["index"]]
    if not np.allclose(i["attributions"], want, rtol=1e-5, atol=1e-6):
        fail("--target pred, input %d: %s, expected %s" % (i["index"], i["attributions"], want))
out = path("two.npy")
expect(0, "x 2 targets", "--model", m3, "--input", path("x.npy"), "--target", "2,0", "--out", out)
got = np.load(out)
want = np.stack([W3[2] * X, W3[0] * X], axis=1)
if got.shape != (n, 2, F) or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
    fail("--target 2,0: shape %s, expected (%d, 2, %d) with W[t] * x" % (got.shape, n, F))
tfile = path("t.npy")
np.save(tfile, (np.arange(n) % 3).astype(np.int64))
out = path("tfile.csv")
expect(0, "delta", "--model", m3, "--input", path("x.npy"), "--target", tfile, "--out", out)
rows = [r.split(",") for r in open(out).read().strip().split("\n")[1:]]
if [int(r[1]) for r in rows] != [i % 3 for i in range(n)]:
    fail("--target FILE: the target column is %s" % [r[1] for r in rows])
np.save(path("tbad.npy"), np.array([0, 7] + [0] * (n - 2), np.int64))
expect(2, ["input 1: 7 is not an output"], "--model", m3, "--input", path("x.npy"), "--target",
       path("tbad.npy"))
# several baselines: the mean of W[t] (x - b_k) is W[t] (x - mean b)
B = rng.standard_normal((4, F)).astype(np.float32)
np.save(path("bases.npy"), B)
out = path("bases.json")
expect(0, "averaged over 4 baselines", "--model", m3, "--input", path("x.npy"), "--target", "1",
       "--baselines", path("bases.npy"), "--out", out)
doc = json.load(open(out))
for i in doc["inputs"]:
    if not np.allclose(i["attributions"], W3[1] * (X[i["index"]] - B.mean(axis=0)), rtol=1e-4,
                       atol=1e-5) or len(i["baseline_deltas"]) != 4:
        fail("--baselines, input %d: %s" % (i["index"], i))
# --baseline mean: each feature's mean over the inputs (a linear model: W[t] (x - mean))
out = path("mean.npy")
expect(0, "delta", "--model", m3, "--input", path("x.npy"), "--target", "2", "--baseline", "mean",
       "--out", out)
if not np.allclose(np.load(out), W3[2] * (X - X.mean(axis=0)), rtol=1e-5, atol=1e-6):
    fail("--baseline mean is not W[t] (x - the inputs' mean)")
# the noise is tests/igrun_noise.py's for the seed (what lets a test hand the
# same noise to Captum): SmoothGrad of a linear model is W[t] (mean noisy x)
out = path("sgseed.npy")
expect(0, "smoothgrad of 4 samples", "--model", m3, "--input", path("x.npy"), "--target", "1",
       "--noise", "smoothgrad", "--samples", "4", "--stdev", "0.5", "--seed", "5", "--out", out)
g = np.array(igrun_noise(5, n, 4 * F)).reshape(n, 4, F)
noisy = (X.astype(np.float64)[:, None, :] + 0.5 * g).astype(np.float32)
if not np.allclose(np.load(out), W3[1] * noisy.astype(np.float64).mean(axis=1), rtol=1e-5,
                   atol=1e-6):
    fail("--seed 5: the noise is not tests/igrun_noise.py's")
# the same on a batch large enough to be expanded on several threads: the
# draws do not depend on how the work was split
FW = 1000
Wb = rng.standard_normal((1, FW)).astype(np.float32)
Xb = rng.standard_normal((40, FW)).astype(np.float32)
save_file({"0.weight": Wb}, path("wide.safetensors"), metadata={"activations": "identity"})
np.save(path("xwide.npy"), Xb)
out = path("sgwide.npy")
expect(0, "smoothgrad of 8 samples", "--model", path("wide.safetensors"), "--input",
       path("xwide.npy"), "--target", "0", "--noise", "smoothgrad", "--samples", "8", "--stdev",
       "0.5", "--seed", "9", "--out", out)
g = np.array(igrun_noise(9, 40, 8 * FW)).reshape(40, 8, FW)
noisy = (Xb.astype(np.float64)[:, None, :] + 0.5 * g).astype(np.float32)
if not np.allclose(np.load(out), Wb[0] * noisy.astype(np.float64).mean(axis=1), rtol=1e-5,
                   atol=1e-6):
    fail("--seed 9, 40 inputs of 1000 features: the noise is not tests/igrun_noise.py's")
# SmoothGrad without noise is IG; with it the JSON records the noise
out = path("sg0.npy")
expect(0, "smoothgrad of 3 samples", "--model", m3, "--input", path("x.npy"), "--target", "0",
       "--noise", "smoothgrad", "--samples", "3", "--stdev", "0", "--out", out)
if not np.allclose(np.load(out), W3[0] * X, rtol=1e-5, atol=1e-6):
    fail("smoothgrad with stdev 0 is not IG")
out = path("vg.json")
expect(0, "vargrad", "--model", m3, "--input", path("x.npy"), "--target", "0", "--noise",
       "vargrad", "--samples", "400", "--stdev", "10%", "--seed", "4", "--out", out)
doc = json.load(open(out))
if doc["noise"] != "vargrad" or doc["samples"] != 400 or not doc["stdev_relative"]:
    fail("the JSON does not record the noise: %s" % {k: doc[k] for k in doc if k != "inputs"})
for i in doc["inputs"]:
    sd = 0.1 * (X[i["index"]].max() - X[i["index"]].min())
    if not np.allclose(i["attributions"], W3[0] ** 2 * sd ** 2, rtol=0.25):
        fail("vargrad of a linear model is not w^2 sigma^2: %s" % i["attributions"])
expect(2, ["--noise 'smooth'"], "--model", m3, "--input", path("x.npy"), "--target", "0",
       "--noise", "smooth")
expect(2, ["--stdev '-1'"], "--model", m3, "--input", path("x.npy"), "--target", "0",
       "--noise", "vargrad", "--stdev", "-1")
# -q: only the summary
rc, out = igrun("--model", m3, "--input", path("x.npy"), "--target", "pred", "-q")
if rc != 0 or out.strip().count("\n") != 0 or "max |delta|" not in out:
    fail("-q printed more than the summary: %s" % out)
# plots: SVG only, one panel per input asked for, titles that say what was run,
# a heat map only when --image says the input is one
expect(2, ["igrun writes SVG only"], "--model", m3, "--input", path("x.npy"), "--target", "1",
       "--plot", path("p.png"))
svg = path("p.svg")
expect(0, "delta", "--model", m3, "--input", path("x.npy"), "--target", "1", "--plot", svg,
       "--plot-inputs", "0,2")
text = open(svg).read()
if text.count("<g transform") != 2 or "input 2 of 3, target 1, gausslegendre 50 steps" not in text:
    fail("--plot-inputs 0,2: %s" % text[:400])
if "attributions (red +" in text:
    fail("a tabular input was drawn as an image")
expect(0, "delta", "--model", m3, "--input", path("x.npy"), "--target", "1", "--plot", svg,
       "--image", "2x3")
if "attributions (red +" not in open(svg).read():
    fail("--image 2x3 did not draw a heat map")
expect(2, ["--image 3x3 is 9 features"], "--model", m3, "--input", path("x.npy"), "--target", "1",
       "--plot", svg, "--image", "3x3")
expect(2, ["--plot-inputs: input 7 of 3"], "--model", m3, "--input", path("x.npy"), "--target",
       "1", "--plot", svg, "--plot-inputs", "7")

# image-shaped inputs: [n, H, W] and [n, C, H, W] are drawn as images without
# --image, their features flattened in C order; two channels are a row each
# and a row of their sum
np.save(path("img3.npy"), X.reshape(n, 2, 3))
out = path("img3.npy.out.npy")
expect(0, "delta", "--model", m3, "--input", path("img3.npy"), "--target", "0", "--out", out,
       "--plot", path("img3.svg"))
got = np.load(out)
if got.shape != (n, 2, 3) or not np.allclose(got.reshape(n, -1), W3[0] * X, rtol=1e-5, atol=1e-6):
    fail("a 3-D input was not flattened in C order, or its attributions (%s) are not shaped "
         "like it" % (got.shape,))
if "attributions (red +" not in open(path("img3.svg")).read():
    fail("an [n, H, W] input was not drawn as an image")
np.save(path("img4.npy"), X.reshape(n, 1, 2, 3))
expect(0, "delta", "--model", m3, "--input", path("img4.npy"), "--target", "0", "--plot",
       path("img4.svg"))
if "attributions (red +" not in open(path("img4.svg")).read():
    fail("an [n, 1, H, W] input was not drawn as an image")
np.save(path("img2c.npy"), X.reshape(n, 2, 1, 3))
a0 = W3[0] * X[0]
want = list(a0[:3]) + list(a0[3:]) + list(a0[:3] + a0[3:])  # channel 0, channel 1, their sum
for args in (("--input", path("img2c.npy")), ("--input", path("x.npy"), "--image", "2x1x3")):
    expect(0, "delta", "--model", m3, *args, "--target", "0", "--plot", path("img2c.svg"))
    text = open(path("img2c.svg")).read()
    cells = [float(v) for v in re.findall(r"<title>\[\d+,\d+\] ([-0-9.e+]+)</title>", text)]
    if ("channel 1" not in text or "summed over the channels" not in text or
            not np.allclose(cells, want, rtol=1e-4, atol=1e-6)):
        fail("%s: two channels are not a row each and their sum: %s, expected %s"
             % (" ".join(args), cells, want))
expect(2, ["--image 3x1x3 is 9 features"], "--model", m3, "--input", path("x.npy"), "--target",
       "1", "--plot", svg, "--image", "3x1x3")
expect(2, ["--image '2x3x'"], "--model", m3, "--input", path("x.npy"), "--target", "1",
       "--plot", svg, "--image", "2x3x")
np.save(path("imgf.npy"), np.asfortranarray(X.reshape(n, 2, 3)))
expect(2, ["Fortran-ordered 3-D array"], "--model", m3, "--input", path("imgf.npy"), "--target", "0")
np.save(path("x5.npy"), X.reshape(n, 1, 1, 2, 3))
expect(2, ["5-or-more-D array"], "--model", m3, "--input", path("x5.npy"), "--target", "0")

# feature names: the input CSV's header, or --feature-names; CSV columns,
# JSON, the largest attributions and the plot's labels use them (escaped)
names = ["age", "b<mi", "bp", "s1", "s2, s3", "s4"]
with open(path("named.csv"), "w") as f:
    f.write(",".join(n if "," not in n else n.replace(",", ";") for n in names) + "\n")
    for row in X:
        f.write(",".join("%.9g" % v for v in row) + "\n")
out = path("names.csv")
expect(0, "delta", "--model", m3, "--input", path("named.csv"), "--target", "0", "--out", out)
head = open(out).readline().strip().split(",")
if head[6:] != ["age", "b<mi", "bp", "s1", "s2; s3", "s4"]:
    fail("CSV header names: %s" % head)
with open(path("names.txt"), "w") as f:
    f.write("\n".join(names) + "\n")
out = path("names.json")
expect(0, "delta", "--model", m3, "--input", path("x.npy"), "--target", "0", "--feature-names",
       path("names.txt"), "--out", out, "--plot", path("names.svg"))
if json.load(open(out)).get("feature_names") != names:
    fail("JSON feature_names: %s" % json.load(open(out)).get("feature_names"))
if "<title>b&lt;mi " not in open(path("names.svg")).read():
    fail("the plot does not label (escaped) bars by name")
with open(path("five.txt"), "w") as f:
    f.write("a,b,c,d,e\n")
expect(2, ["names 5 features; the model takes 6"], "--model", m3, "--input", path("x.npy"),
       "--target", "0", "--feature-names", path("five.txt"))

# a torch.save file is named for what it is
with open(path("model.pt"), "wb") as f:
    f.write(b"PK\x03\x04" + b"\0" * 60)
expect(2, ["PyTorch checkpoint", "not safetensors", "save_file(model.state_dict()"], "--model",
       path("model.pt"), "--input", path("x.npy"))

C.finish("# igrun: 4 model dtypes x 3 output formats, 24 .npy dtype/order inputs, 2 csv forms, "
         "15 damaged files; targets (pred, a list, a file), several baselines, NoiseTunnel")

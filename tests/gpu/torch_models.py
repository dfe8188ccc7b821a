#!/usr/bin/env python3
"""torch_models.py: igrun on the models PyTorch users save, made by real
PyTorch (skipped, 77, where it is not installed: the GPU machine has it).

A named MLP (fc1, bn1, fc2, fc3: Linear, BatchNorm1d in eval mode with
trained running statistics, ReLU, Tanh) is written as safetensors in
state_dict() order, with its layer_order metadata and PyTorch's activation
spellings; a residual MLP and a functionally scaled one are exported with
torch.onnx.export (both exporters) and explained on both devices against
autograd and Captum float64, and with SmoothGrad GPU against CPU; igrun explains each
input's predicted class (--target pred) on the CPU and the GPU, and both are
compared with IG computed by autograd in float64 with the same
Gauss-Legendre rule. torch.save files (zip and legacy pickle) are refused
with the fix; a file with no metadata needs --activations.
Meson passes BUILDDIR."""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    from torch import nn
except ImportError as e:
    print("PyTorch and numpy are needed: %s" % e, file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from igrun_noise import igrun_noise  # noqa: E402

IGRUN = os.path.join(os.environ["BUILDDIR"], "tools", "igrun", "igrun")
tmp = tempfile.mkdtemp(prefix="cbc-torch.")
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)


def igrun(*args):
    p = subprocess.run([IGRUN, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=300)
    return p.returncode, p.stdout.decode(errors="replace")


def save_safetensors(path, sd, metadata):
    """safetensors' format, tensors in state_dict() order (as the
    safetensors package is not needed here), with the layer_order metadata
    README's recipe writes (the real save_file sorts tensors by name)."""
    metadata = dict(metadata or {}, layer_order=",".join(sd.keys()))
    header, blobs, off = {}, [], 0
    for name, t in sd.items():
        if t.dtype not in (torch.float32,):
            continue  # num_batches_tracked
        b = t.detach().cpu().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def autograd_ig(f, x, targets, baseline=None, steps=50):
    """IG of f's output targets[i] for each row of x by autograd, with the
    Gauss-Legendre rule igrun uses by default; baseline: None (zeros), a
    row or a tensor like x. Computed in x's dtype and device."""
    t_nodes, t_w = np.polynomial.legendre.leggauss(steps)
    base = torch.zeros_like(x) if baseline is None else baseline.to(x).expand_as(x)
    idx = torch.as_tensor(targets, device=x.device).reshape(-1, 1)
    acc = torch.zeros_like(x)
    for a, w in zip((t_nodes + 1) / 2, t_w / 2):
        p = (base + float(a) * (x - base)).requires_grad_(True)
        (g,) = torch.autograd.grad(f(p).gather(1, idx).sum(), p)
        acc += float(w) * g
    return (acc * (x - base)).detach().double().cpu().numpy()


def igrun_attr(out):
    """Attributions igrun wrote to out (.json or .npy), one row per input."""
    if out.endswith(".npy"):
        return np.load(out)
    return np.array([i["attributions"] for i in json.load(open(out))["inputs"]])


def compare(what, model, x_file, want, tol, *args, devices=("cpu", "cuda")):
    """igrun on each device against want (relative L2 within tol); want is
    torch's attributions, computed as `what` says."""
    for device in devices:
        out = os.path.join(tmp, "%s-%s.npy" % (what.split()[0].strip(",:"), device))
        rc, text = igrun("--model", model, "--input", x_file, "--device", device, "--out", out,
                         "-q", *args)
        if rc != 0:
            fail("%s on %s: %s" % (what, device, text))
            continue
        err = np.linalg.norm(igrun_attr(out) - want) / np.linalg.norm(want)
        print("  %s on %s: rel L2 %.2e from torch's" % (what, device, err))
        if not err <= tol[device]:
            fail("%s on %s differs from torch's by %.3g (tolerance %g)"
                 % (what, device, err, tol[device]))


TOL = {"cpu": 1e-6, "cuda": 1e-4}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.bn1 = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 5)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(torch.relu(self.bn1(self.fc1(x))))))


torch.manual_seed(0)
net = Net()
net.train()
with torch.no_grad():
    for _ in range(20):  # running statistics far from 0 and 1
        net(torch.randn(64, 20) * 2 + 0.5)
net.eval()
sd = net.state_dict()
model = os.path.join(tmp, "named.safetensors")
save_safetensors(model, sd, {"activations": "ReLU,nn.Tanh,Identity"})
X = torch.randn(16, 20)
xfile = os.path.join(tmp, "x.npy")
np.save(xfile, X.numpy().astype(np.float32))

# IG by autograd in float64, Gauss-Legendre 50 points on [0, 1], baseline 0
net64 = Net().double()
net64.load_state_dict({k: v.double() if v.dtype == torch.float32 else v for k, v in sd.items()})
net64.eval()
x64 = X.double()
pred = net64(x64).argmax(dim=1)
want = autograd_ig(net64, x64, pred)

for device, tol in (("cpu", 1e-6), ("cuda", 1e-4)):
    out = os.path.join(tmp, "ig-%s.json" % device)
    rc, text = igrun("--model", model, "--input", xfile, "--target", "pred", "--device", device,
                     "--out", out, "-q")
    if rc != 0:
        fail("igrun on %s: %s" % (device, text))
        continue
    doc = json.load(open(out))
    got = igrun_attr(out)
    if [i["target"] for i in doc["inputs"]] != pred.tolist():
        fail("%s: targets %s, torch predicts %s" % (device, [i["target"] for i in doc["inputs"]],
                                                    pred.tolist()))
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    print("  named layers, BatchNorm1d folded, --target pred on %s: rel L2 %.2e from torch "
          "float64 autograd IG" % (device, err))
    if not err <= tol:
        fail("%s: attributions differ from torch's by %.3g (tolerance %g)" % (device, err, tol))

# --precision fp32: within 3x of PyTorch float32's own error (TF32 off), on
# the same inputs, against the same float64 reference
torch.backends.cuda.matmul.allow_tf32 = False
net32 = Net().cuda()
net32.load_state_dict(sd)
net32.eval()
t32 = autograd_ig(net32, X.cuda(), pred)
e_torch = np.linalg.norm(t32 - want) / np.linalg.norm(want)
out = os.path.join(tmp, "ig-fp32.json")
rc, text = igrun("--model", model, "--input", xfile, "--target", "pred", "--device", "cuda",
                 "--precision", "fp32", "--out", out, "-q")
if rc != 0:
    fail("--precision fp32: %s" % text)
else:
    got = igrun_attr(out)
    e = np.linalg.norm(got - want) / np.linalg.norm(want)
    print("  --precision fp32 on cuda: rel L2 %.2e; PyTorch float32: %.2e (%.1fx)"
          % (e, e_torch, e / e_torch))
    if not e <= 3 * e_torch:
        fail("--precision fp32 is %.1fx PyTorch float32's error (limit 3x)" % (e / e_torch))
# the default precision is that accurate mode: the same attributions, within
# 2x of PyTorch float32's error (issue 26's bar)
out_d = os.path.join(tmp, "ig-default.json")
rc, text = igrun("--model", model, "--input", xfile, "--target", "pred", "--device", "cuda",
                 "--out", out_d, "-q")
if rc != 0:
    fail("the default precision: %s" % text)
else:
    got_d = igrun_attr(out_d)
    e_d = np.linalg.norm(got_d - want) / np.linalg.norm(want)
    print("  default precision on cuda: rel L2 %.2e; PyTorch float32: %.2e (%.1fx)"
          % (e_d, e_torch, e_d / e_torch))
    if not e_d <= 2 * e_torch:
        fail("the default precision is %.1fx PyTorch float32's error (limit 2x)" % (e_d / e_torch))

# SiLU, Softplus, ELU, LeakyReLU in nn.Sequential, numbered layers
torch.manual_seed(1)
seq = nn.Sequential(nn.Linear(20, 24), nn.SiLU(), nn.Linear(24, 24), nn.Softplus(),
                    nn.Linear(24, 16), nn.ELU(), nn.Linear(16, 8), nn.LeakyReLU(),
                    nn.Linear(8, 3)).eval()
model2 = os.path.join(tmp, "acts.safetensors")
save_safetensors(model2, seq.state_dict(), {"activations": "SiLU,Softplus,ELU,LeakyReLU,Identity"})
compare("SiLU, Softplus, ELU, LeakyReLU", model2, xfile,
        autograd_ig(seq.double(), x64, [2] * len(x64)), TOL, "--target", "2")

# LayerNorm before and after an activation, LeakyReLU(0.2), a Softmax
# output (the probability of each input's predicted class) and LogSoftmax
torch.manual_seed(2)
for last, spelled in ((nn.Softmax(dim=-1), "Softmax(dim=-1)"), (nn.LogSoftmax(dim=1), "LogSoftmax(dim=1)")):
    seq3 = nn.Sequential(nn.Linear(20, 48), nn.LayerNorm(48), nn.GELU(), nn.Linear(48, 40),
                         nn.LeakyReLU(0.2), nn.LayerNorm(40), nn.Linear(40, 6), last).eval()
    with torch.no_grad():  # LayerNorm parameters away from 1 and 0
        for m in seq3:
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.3, 0.3)
    model3 = os.path.join(tmp, "ln.safetensors")
    save_safetensors(model3, seq3.state_dict(),
                     {"activations": "GELU,nn.LeakyReLU(negative_slope=0.2),%s" % spelled})
    s64 = seq3.double()
    pred3 = s64(x64).argmax(dim=1)
    compare("LayerNorm, LeakyReLU(0.2), %s, --target pred" % spelled, model3, xfile,
            autograd_ig(s64, x64, pred3), TOL, "--target", "pred")

# A Captum user's script: each input's predicted class, SmoothGrad over IG,
# the inputs' mean as the baseline. igrun does it in one command; the only
# change made to Captum is where its noise comes from: torch.normal, which
# NoiseTunnel calls once for all noisy copies, returns igrun's draws for the
# seed (a xoshiro256** per input seeded by splitmix64, Marsaglia's polar
# method: the generator src/ig/explain.c documents), so both explain the
# same points.
try:
    from captum.attr import IntegratedGradients, NoiseTunnel
except ImportError as e:
    print("  Captum: not importable here (%s); the Captum script comparison did not run" % e)
    IntegratedGradients = None
if IntegratedGradients is not None:
    SAMPLES, STDEV, SEED = 8, 0.3, 11
    noise = np.array(igrun_noise(SEED, len(X), SAMPLES * X.shape[1])).reshape(len(X) * SAMPLES, -1)
    real_normal = torch.normal

    def igrun_normal(mean, std, *args, **kw):  # in the inputs' dtype (Captum's stdev is float32)
        assert tuple(std.shape) == noise.shape, (std.shape, noise.shape)
        return torch.as_tensor(noise * STDEV, dtype=noise_dtype, device=std.device)

    for dtype, tol in ((torch.float32, {"cpu": 1e-5, "cuda": 1e-5}),
                       (torch.float64, {"cpu": 1e-6, "cuda": 1e-4})):
        # --- the user's script ---
        model_c = Net().to(dtype)
        model_c.load_state_dict({k: v.to(dtype) if v.is_floating_point() else v
                                 for k, v in sd.items()})
        model_c.eval()
        inputs = X.to(dtype)
        targets = model_c(inputs).argmax(dim=1)
        baseline = inputs.mean(dim=0, keepdim=True)
        nt = NoiseTunnel(IntegratedGradients(model_c))
        noise_dtype = dtype
        torch.normal = igrun_normal
        try:
            attr = nt.attribute(inputs, nt_type="smoothgrad", nt_samples=SAMPLES, stdevs=STDEV,
                                baselines=baseline, target=targets, n_steps=50,
                                method="gausslegendre")
        finally:
            torch.normal = real_normal
        # --- the one igrun command ---
        compare("Captum NoiseTunnel(IntegratedGradients) in %s" % str(dtype).split(".")[1],
                model, xfile, attr.detach().double().numpy(), tol, "--target", "pred",
                "--baseline", "mean", "--noise", "smoothgrad", "--samples", str(SAMPLES),
                "--stdev", str(STDEV), "--seed", str(SEED))

# ONNX models (issue 26): a residual MLP and a functional scale, exported by
# both exporters, explained on the CPU and the GPU (the layered path: the
# residual's gradient, the scale, a target per input in one call) against
# autograd float64, and with Captum's own IntegratedGradients in float64
class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3, self.out = (nn.Linear(20, 48), nn.Linear(48, 48),
                                                  nn.Linear(48, 48), nn.Linear(48, 6))

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = h + torch.relu(self.fc2(h))
        h = torch.tanh(self.fc3(h) + h) * 0.5
        return self.out(h)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(20, 32), nn.Linear(32, 6)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)) * 2.0 - 0.1)


try:
    import onnx  # noqa: F401  (torch.onnx.export needs it)
    have_onnx = True
except ImportError as e:
    print("  ONNX: onnx is not importable here (%s); the ONNX models did not run" % e)
    have_onnx = False
for cls in (Residual, Scaled) if have_onnx else ():
    torch.manual_seed(7)
    mo = cls().eval()
    m64 = cls().double().eval()
    m64.load_state_dict({k: v.double() for k, v in mo.state_dict().items()})
    pred_o = m64(x64).argmax(dim=1)
    want_o = autograd_ig(m64, x64, pred_o)
    for dynamo in (False, True):
        f = os.path.join(tmp, "%s%s.onnx" % (cls.__name__, ".dynamo" if dynamo else ""))
        try:
            kw = {"external_data": False} if dynamo else {}
            torch.onnx.export(mo, (X,), f, dynamo=dynamo, **kw)
        except Exception as e:  # the dynamo exporter needs onnxscript
            print("  %s: torch.onnx.export(dynamo=%s) failed here: %s" % (cls.__name__, dynamo, e))
            continue
        compare("%s ONNX (dynamo=%s), --target pred" % (cls.__name__, dynamo), f, xfile, want_o,
                TOL, "--target", "pred")
    if IntegratedGradients is not None:
        ca = IntegratedGradients(m64).attribute(x64, target=pred_o, n_steps=50,
                                                method="gausslegendre")
        compare("%s ONNX against Captum float64" % cls.__name__,
                os.path.join(tmp, "%s.onnx" % cls.__name__), xfile,
                ca.detach().numpy(), TOL, "--target", "pred")
    # SmoothGrad of 8 with each input's prediction: GPU against CPU (one batch
    # of every target and noisy copy on the GPU)
    outs = {}
    for device in ("cpu", "cuda"):
        outs[device] = os.path.join(tmp, "sg-%s-%s.npy" % (cls.__name__, device))
        rc, text = igrun("--model", os.path.join(tmp, "%s.onnx" % cls.__name__), "--input", xfile,
                         "--device", device, "--target", "pred", "--noise", "smoothgrad",
                         "--samples", "8", "--stdev", "0.2", "--seed", "3", "--out",
                         outs[device], "-q")
        if rc != 0:
            fail("%s smoothgrad on %s: %s" % (cls.__name__, device, text))
    if all(os.path.exists(o) for o in outs.values()):
        a_c, a_g = np.load(outs["cpu"]), np.load(outs["cuda"])
        e = np.linalg.norm(a_g - a_c) / np.linalg.norm(a_c)
        print("  %s ONNX, smoothgrad 8, --target pred: GPU against CPU rel L2 %.2e"
              % (cls.__name__, e))
        if not e <= 1e-4:
            fail("%s smoothgrad: GPU differs from the CPU by %.3g" % (cls.__name__, e))

# torch.save files: what they are and the fix
for name, kw, what in (("zip.pt", {}, "PyTorch checkpoint"),
                       ("legacy.pt", {"_use_new_zipfile_serialization": False}, "pickle")):
    pt = os.path.join(tmp, name)
    torch.save(sd, pt, **kw)
    rc, text = igrun("--model", pt, "--input", xfile, "--target", "pred", "--device", "cpu")
    print("  torch.save %s: exit %d" % (name, rc))
    if rc != 2 or what not in text or "save_file(model.state_dict()" not in text:
        fail("%s: exit %d: %s" % (name, rc, text))

# no metadata: --activations says them
bare = os.path.join(tmp, "bare.safetensors")
save_safetensors(bare, sd, None)
rc, text = igrun("--model", bare, "--input", xfile, "--target", "0", "--device", "cpu")
if rc != 2 or "no activations" not in text:
    fail("no metadata: exit %d: %s" % (rc, text))
rc, text = igrun("--model", bare, "--input", xfile, "--target", "0", "--device", "cpu",
                 "--activations", "relu,tanh,identity", "-q")
if rc != 0:
    fail("--activations: exit %d: %s" % (rc, text))

if failures:
    print("%d failures" % failures)
    sys.exit(1)
print("torch_models: ok")

#!/usr/bin/env python3
"""torch_models.py: igrun on the models PyTorch users save, made by real
PyTorch (skipped, 77, where it is not installed: the GPU machine has it).

A named MLP (fc1, bn1, fc2, fc3: Linear, BatchNorm1d in eval mode with
trained running statistics, ReLU, Tanh) is written as safetensors in
state_dict() order with PyTorch's activation spellings; igrun explains each
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
    safetensors package is not needed here)."""
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
t_nodes, t_w = np.polynomial.legendre.leggauss(50)
alphas, weights = (t_nodes + 1) / 2, t_w / 2
x64 = X.double()
pred = net64(x64).argmax(dim=1)
want = torch.zeros_like(x64)
for a, w in zip(alphas, weights):
    p = (a * x64).requires_grad_(True)
    out = net64(p).gather(1, pred[:, None]).sum()
    (g,) = torch.autograd.grad(out, p)
    want += w * g
want = (want * x64).numpy()

for device, tol in (("cpu", 1e-6), ("cuda", 1e-4)):
    out = os.path.join(tmp, "ig-%s.json" % device)
    rc, text = igrun("--model", model, "--input", xfile, "--target", "pred", "--device", device,
                     "--out", out, "-q")
    if rc != 0:
        fail("igrun on %s: %s" % (device, text))
        continue
    doc = json.load(open(out))
    got = np.array([i["attributions"] for i in doc["inputs"]])
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
x32 = X.cuda()
acc = torch.zeros_like(x32)
for a, w in zip(alphas, weights):
    p = (float(a) * x32).requires_grad_(True)
    (g,) = torch.autograd.grad(net32(p).gather(1, pred.cuda()[:, None]).sum(), p)
    acc += float(w) * g
t32 = (acc * x32).double().cpu().numpy()
e_torch = np.linalg.norm(t32 - want) / np.linalg.norm(want)
out = os.path.join(tmp, "ig-fp32.json")
rc, text = igrun("--model", model, "--input", xfile, "--target", "pred", "--device", "cuda",
                 "--precision", "fp32", "--out", out, "-q")
if rc != 0:
    fail("--precision fp32: %s" % text)
else:
    got = np.array([i["attributions"] for i in json.load(open(out))["inputs"]])
    e = np.linalg.norm(got - want) / np.linalg.norm(want)
    print("  --precision fp32 on cuda: rel L2 %.2e; PyTorch float32: %.2e (%.1fx)"
          % (e, e_torch, e / e_torch))
    if not e <= 3 * e_torch:
        fail("--precision fp32 is %.1fx PyTorch float32's error (limit 3x)" % (e / e_torch))

# SiLU, Softplus, ELU, LeakyReLU in nn.Sequential, numbered layers
torch.manual_seed(1)
seq = nn.Sequential(nn.Linear(20, 24), nn.SiLU(), nn.Linear(24, 24), nn.Softplus(),
                    nn.Linear(24, 16), nn.ELU(), nn.Linear(16, 8), nn.LeakyReLU(),
                    nn.Linear(8, 3)).eval()
model2 = os.path.join(tmp, "acts.safetensors")
save_safetensors(model2, seq.state_dict(), {"activations": "SiLU,Softplus,ELU,LeakyReLU,Identity"})
seq64 = seq.double()
want2 = torch.zeros_like(x64)
for a, w in zip(alphas, weights):
    p = (a * x64).requires_grad_(True)
    (g,) = torch.autograd.grad(seq64(p)[:, 2].sum(), p)
    want2 += w * g
want2 = (want2 * x64).detach().numpy()
for device, tol in (("cpu", 1e-6), ("cuda", 1e-4)):
    out = os.path.join(tmp, "acts-%s.npy" % device)
    rc, text = igrun("--model", model2, "--input", xfile, "--target", "2", "--device", device,
                     "--out", out, "-q")
    if rc != 0:
        fail("activations on %s: %s" % (device, text))
        continue
    err = np.linalg.norm(np.load(out) - want2) / np.linalg.norm(want2)
    print("  SiLU, Softplus, ELU, LeakyReLU on %s: rel L2 %.2e from torch float64 autograd IG"
          % (device, err))
    if not err <= tol:
        fail("activations on %s differ from torch's by %.3g" % (device, err))

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

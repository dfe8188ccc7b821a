#!/usr/bin/env python3
"""make_models.py: the model fixtures of tests/cli/igrun_models.py, made
once by real PyTorch and committed (CI has no torch). Run it again only to
change them:

    python3 -m venv .venv && .venv/bin/pip install torch onnx onnxscript captum==0.9.0 \\
        numpy safetensors
    .venv/bin/python tests/data/ig/make_models.py

Every model is written the ways a Captum user writes it: torch.onnx.export
(the TorchScript exporter, dynamo=False, and the dynamo one) and the real
safetensors.torch.save_file, which sorts tensors by name (with and without
the layer_order metadata igrun's README asks for). For each model: x.npy
(inputs), <model>.y.npy (the model's own outputs, for --check-outputs),
<model>.t.npy (a target per input) and <model>.attr.npy, the attributions
of real Captum 0.9 IntegratedGradients in float64 (gausslegendre, 50 steps,
zero baseline), which igrun's CPU must equal to 1e-6 relative L2.

The five cases of issue 26:
  residual   h = relu(fc1 x); h = h + relu(fc2 h); out(h)
  scaled     fc2(relu(fc1 x) * 2.0)
  named      layers input, hidden, output (save_file sorts them alphabetically)
  recipe     README's fc1, bn1, fc2, fc3 (BatchNorm1d with trained statistics)
  conv, embedding, prelu: parameters that must be refused by name
and more of what the ONNX reader maps: LayerNorm, GELU, SiLU, BatchNorm
after an activation, a constant scale, LogSoftmax (mixed); the same at
opset 17, where the TorchScript exporter writes GELU in its Erf form
(gelu17); a residual into the pre-activation from the input (preres);
weights in an external data file (external)."""
import json
import os
import sys
import warnings

import numpy as np
import onnx
import torch
from torch import nn
from safetensors.torch import save_file
from captum.attr import IntegratedGradients

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
F = 6
torch.manual_seed(26)
X = torch.randn(5, F)


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.out = nn.Linear(F, 8), nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = h + torch.relu(self.fc2(h))
        return self.out(h)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(F, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)) * 2.0)


class Named(nn.Module):
    """input, hidden, output: forward() order is not the alphabetical one."""
    def __init__(self):
        super().__init__()
        self.input, self.hidden, self.output = nn.Linear(F, 7), nn.Linear(7, 7), nn.Linear(7, 3)

    def forward(self, x):
        return self.output(torch.tanh(self.hidden(torch.relu(self.input(x)))))


class Recipe(nn.Module):
    """README's recipe: fc1, bn1, fc2, fc3."""
    def __init__(self):
        super().__init__()
        self.fc1, self.bn1 = nn.Linear(F, 8), nn.BatchNorm1d(8)
        self.fc2, self.fc3 = nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(torch.relu(self.bn1(self.fc1(x))))))


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.ln = nn.Linear(F, 8), nn.LayerNorm(8)
        self.fc2, self.bn = nn.Linear(8, 8), nn.BatchNorm1d(8)
        self.fc3 = nn.Linear(8, 3)

    def forward(self, x):
        h = nn.functional.gelu(self.ln(self.fc1(x)))
        h = self.bn(nn.functional.silu(self.fc2(h))) * 0.5
        return torch.log_softmax(self.fc3(h), -1)


class PreResidual(nn.Module):
    """A residual of the input into the pre-activation, a Sub and a Div."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(F, F), nn.Linear(F, 2)

    def forward(self, x):
        h = torch.nn.functional.leaky_relu(self.fc1((x - 0.25) / 2.0) + x, 0.2)
        return self.fc2(h)


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(1, 2, 2), nn.Linear(2 * 2 * 2, 3)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x.view(-1, 1, 3, 3))).flatten(1))


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.fc = nn.Embedding(10, 4), nn.Linear(4, 2)

    def forward(self, i):
        return self.fc(self.emb(i).mean(1))


class PRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(F, 8), nn.PReLU(), nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def trained_bn(m):
    """BatchNorm statistics that are not the defaults: a few training steps."""
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(64, F) * 1.5 + 0.3)
    m.eval()
    for mod in m.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.LayerNorm)):
            with torch.no_grad():
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.3, 0.3)


def path(name):
    return os.path.join(HERE, name)


def export(m, name, dynamo=False, **kw):
    args = dict(dynamo=dynamo, **kw)
    if dynamo:
        args["external_data"] = False
    torch.onnx.export(m, (X,), path(name), **args)
    onnx.checker.check_model(onnx.load(path(name)))


def captum(m, name):
    """Targets, outputs and Captum float64 attributions of model m on X."""
    y = m(X).detach()
    t = torch.arange(X.shape[0]) % y.shape[1]
    np.save(path(name + ".y.npy"), y.numpy().astype(np.float32))
    np.save(path(name + ".t.npy"), t.numpy().astype(np.int64))
    md = m.double()
    attr = IntegratedGradients(md).attribute(X.double(), target=t, n_steps=50,
                                             method="gausslegendre")
    np.save(path(name + ".attr.npy"), attr.detach().numpy())
    m.float()


def main():
    np.save(path("x.npy"), X.numpy())
    manifest = {}

    m = Residual().eval()
    export(m, "residual.onnx")
    export(m, "residual.dynamo.onnx", dynamo=True)
    save_file(m.state_dict(), path("residual.safetensors"),
              metadata={"activations": "relu,relu,identity",
                        "layer_order": ",".join(m.state_dict())})
    captum(m, "residual")

    m = Scaled().eval()
    export(m, "scaled.onnx")
    save_file(m.state_dict(), path("scaled.safetensors"),
              metadata={"activations": "relu,identity", "layer_order": ",".join(m.state_dict())})
    captum(m, "scaled")

    m = Named().eval()
    export(m, "named.onnx")
    save_file(m.state_dict(), path("named.safetensors"),
              metadata={"activations": "relu,tanh,identity"})
    save_file(m.state_dict(), path("named.order.safetensors"),
              metadata={"activations": "relu,tanh,identity",
                        "layer_order": ",".join(m.state_dict())})
    captum(m, "named")

    m = Recipe()
    trained_bn(m)
    export(m, "recipe.onnx")
    export(m, "recipe.dynamo.onnx", dynamo=True)
    sd = m.state_dict()
    save_file(sd, path("recipe.safetensors"), metadata={"activations": "ReLU,Tanh,Identity"})
    save_file(sd, path("recipe.order.safetensors"),
              metadata={"activations": "ReLU,Tanh,Identity", "layer_order": ",".join(sd)})
    captum(m, "recipe")

    m = Mixed()
    trained_bn(m)
    export(m, "mixed.onnx")
    export(m, "mixed.dynamo.onnx", dynamo=True)
    export(m, "gelu17.onnx", opset_version=17)
    captum(m, "mixed")

    m = PreResidual().eval()
    export(m, "preres.onnx")
    captum(m, "preres")

    # the weights in a data file beside the model (as large models are saved)
    mp = onnx.load(path("recipe.onnx"))
    onnx.save_model(mp, path("external.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="external.onnx.data",
                    size_threshold=0)

    # what igrun must refuse by name
    conv = Conv().eval()
    save_file(conv.state_dict(), path("conv.safetensors"), metadata={"activations": "relu"})
    torch.onnx.export(conv, (torch.randn(2, 9),), path("conv.onnx"), dynamo=False)
    emb = Embed().eval()
    save_file(emb.state_dict(), path("embedding.safetensors"),
              metadata={"activations": "identity,identity",
                        "layer_order": ",".join(emb.state_dict())})
    pr = PRelu().eval()
    save_file(pr.state_dict(), path("prelu.safetensors"),
              metadata={"activations": "identity,identity", "layer_order": ",".join(pr.state_dict())})
    torch.onnx.export(pr, (X,), path("prelu.onnx"), dynamo=False)

    manifest["torch"] = torch.__version__
    manifest["onnx"] = onnx.__version__
    import captum as cp
    manifest["captum"] = cp.__version__
    with open(path("versions.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    for leftover in os.listdir(HERE):  # the dynamo exporter's empty data files
        if leftover.endswith(".onnx.data") and os.path.getsize(path(leftover)) == 0:
            os.remove(path(leftover))
    return 0


if __name__ == "__main__":
    sys.exit(main())

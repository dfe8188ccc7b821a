#!/usr/bin/env python3
"""make_cnn_models.py: the image-model fixtures of tests/cli/igrun_cnn.py,
made once by real PyTorch and committed (CI has no torch). Run it again only
to change them:

    python3 -m venv .venv && .venv/bin/pip install torch onnx onnxscript captum==0.9.0 numpy
    .venv/bin/python tests/data/ig/make_cnn_models.py

Each model is exported by torch.onnx.export as a Captum user does (the
TorchScript exporter, dynamo=False, which folds BatchNorm into the Conv in
eval mode; where it matters also with do_constant_folding=False, which keeps
the BatchNormalization nodes for igrun to fold, and the dynamo exporter),
with, in cnn/: <model>.x.npy (inputs [n, C, H, W]), <model>.y.npy (the
model's own outputs, for --check-outputs), <model>.t.npy (a target per
input) and <model>.attr.npy, real Captum 0.9 IntegratedGradients in float64
(gausslegendre, 50 steps, zero baseline, the per-input targets), which
igrun's CPU must equal to 1e-5 relative L2.

  lenet     a LeNet-style MNIST CNN: Conv 5x5 (padding 2), ReLU, MaxPool 2,
            Conv 5x5, ReLU, MaxPool 2, Flatten, three Linear layers
  resnet    a ResNet-style CIFAR network: a stem, a basic block with an
            identity residual, a downsampling block (stride 2) with a 1x1
            projection shortcut, BatchNorm everywhere (trained statistics),
            global average pooling, a Linear head; also resnet.nofold.onnx
            (BatchNormalization nodes kept) and resnet.dynamo.onnx
  dwsep     a depthwise-separable block (MobileNet-style): depthwise 3x3
            (groups = channels) and pointwise 1x1 with BatchNorm, two
            branches concatenated along the channels, AvgPool, x.mean((2, 3))
  zoo       every attribute the reader maps, each once: stride 2, padding
            (asymmetric through F.pad is not exported; symmetric 1 and 2),
            dilation 2, groups 2, MaxPool with padding and stride 1,
            AvgPool counting the padding and not, ceil_mode where it changes
            nothing, a per-channel normalisation of the input (x - mean) / std,
            SiLU, GELU, LeakyReLU, LogSoftmax
  conv1d    a 1-D signal model: Conv1d, MaxPool1d, AvgPool1d, Linear
  viewconv  a flat input reshaped into an image in forward() (x.view)
"""
import json
import os
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn.functional as Fn
from torch import nn
from captum.attr import IntegratedGradients

warnings.filterwarnings("ignore")
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cnn")
torch.manual_seed(31)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 64), nn.Linear(64, 32), nn.Linear(32, 10)

    def forward(self, x):
        x = Fn.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = Fn.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout))

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return torch.relu(h + (x if self.short is None else self.short(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.layer1 = Block(8, 8, 1)
        self.layer2 = Block(8, 16, 2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        x = self.layer2(self.layer1(x))
        x = Fn.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class DWSep(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 2, 1)
        self.dw = nn.Conv2d(8, 8, 3, 1, 1, groups=8, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.pw = nn.Conv2d(8, 16, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.side = nn.Conv2d(8, 8, 1)
        self.fc = nn.Linear(24, 5)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        a = torch.relu(self.bn2(self.pw(torch.relu(self.bn1(self.dw(x))))))
        b = torch.tanh(self.side(x))
        h = torch.cat([a, b], 1)
        h = Fn.avg_pool2d(h, 2)
        return self.fc(h.mean((2, 3)))


class Zoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.4, 0.5, 0.6]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.2, 0.25, 0.3]).view(1, 3, 1, 1))
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2)
        self.c3 = nn.Conv2d(8, 6, (3, 1), padding=(1, 0))
        self.fc = nn.Linear(6 * 2 * 2, 4)

    def forward(self, x):
        x = (x - self.mean) / self.std
        x = Fn.silu(self.c1(x))                                        # 16 -> 8
        x = Fn.max_pool2d(x, 3, stride=1, padding=1)                   # 8
        x = Fn.gelu(self.c2(x))                                        # 8
        x = Fn.avg_pool2d(x, 3, stride=2, padding=1)                   # 8 -> 4 (pad counted)
        x = Fn.leaky_relu(self.c3(x), 0.1)
        x = Fn.avg_pool2d(x, 2, stride=2, padding=1, count_include_pad=False)  # 4 -> 3
        x = Fn.max_pool2d(x, 2, stride=1, ceil_mode=True)              # 3 -> 2, exact
        return torch.log_softmax(self.fc(x.flatten(1)), -1)


class Conv1D(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(2, 4, 5, padding=2)
        self.c2 = nn.Conv1d(4, 4, 3, stride=2)
        self.fc = nn.Linear(4 * 2, 3)

    def forward(self, x):
        x = Fn.max_pool1d(torch.relu(self.c1(x)), 2)      # 24 -> 12
        x = Fn.avg_pool1d(torch.tanh(self.c2(x)), 2)      # 12 -> 5 -> 2
        return self.fc(x.flatten(1))


class ViewConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(1, 2, 2), nn.Linear(2 * 2 * 2, 3)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x.view(-1, 1, 3, 3))).flatten(1))


def trained_bn(m, x):
    """BatchNorm statistics and affine parameters that are not the defaults."""
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(x * 1.5 + 0.3)
    m.eval()
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            with torch.no_grad():
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.3, 0.3)


def path(name):
    return os.path.join(HERE, name)


def export(m, x, name, dynamo=False, **kw):
    args = dict(dynamo=dynamo, **kw)
    if dynamo:
        args["external_data"] = False
    torch.onnx.export(m, (x[:1],), path(name), **args)
    onnx.checker.check_model(onnx.load(path(name)))
    return sorted({n.op_type for n in onnx.load(path(name)).graph.node})


def references(m, x, name):
    """Inputs, outputs, targets and Captum float64 attributions of m on x."""
    y = m(x).detach()
    t = (torch.arange(x.shape[0]) * 3 + 1) % y.shape[1]
    np.save(path(name + ".x.npy"), x.numpy().astype(np.float32))
    np.save(path(name + ".y.npy"), y.numpy().astype(np.float32))
    np.save(path(name + ".t.npy"), t.numpy().astype(np.int64))
    md = m.double()
    attr = IntegratedGradients(md).attribute(x.double(), target=t, n_steps=50,
                                             method="gausslegendre")
    np.save(path(name + ".attr.npy"), attr.detach().numpy())
    m.float()


def main():
    os.makedirs(HERE, exist_ok=True)
    ops = {}
    x = torch.rand(4, 1, 28, 28)
    m = LeNet().eval()
    ops["lenet.onnx"] = export(m, x, "lenet.onnx")
    references(m, x, "lenet")

    x = torch.rand(3, 3, 32, 32)
    m = ResNet()
    trained_bn(m, torch.rand(16, 3, 32, 32))
    ops["resnet.onnx"] = export(m, x, "resnet.onnx")
    ops["resnet.nofold.onnx"] = export(m, x, "resnet.nofold.onnx", do_constant_folding=False,
                                       training=torch.onnx.TrainingMode.PRESERVE)
    ops["resnet.dynamo.onnx"] = export(m, x, "resnet.dynamo.onnx", dynamo=True)
    references(m, x, "resnet")

    x = torch.rand(4, 3, 16, 16)
    m = DWSep()
    trained_bn(m, torch.rand(16, 3, 16, 16))
    ops["dwsep.onnx"] = export(m, x, "dwsep.onnx")
    ops["dwsep.nofold.onnx"] = export(m, x, "dwsep.nofold.onnx", do_constant_folding=False,
                                      training=torch.onnx.TrainingMode.PRESERVE)
    references(m, x, "dwsep")

    x = torch.rand(3, 3, 16, 16)
    m = Zoo().eval()
    ops["zoo.onnx"] = export(m, x, "zoo.onnx")
    references(m, x, "zoo")

    x = torch.randn(4, 2, 24)
    m = Conv1D().eval()
    ops["conv1d.onnx"] = export(m, x, "conv1d.onnx")
    references(m, x, "conv1d")

    x = torch.randn(4, 9)
    m = ViewConv().eval()
    ops["viewconv.onnx"] = export(m, x, "viewconv.onnx")
    references(m, x, "viewconv")

    import captum as cp
    manifest = {"torch": torch.__version__, "onnx": onnx.__version__, "captum": cp.__version__,
                "operators": ops}
    with open(path("versions.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    for leftover in os.listdir(HERE):  # the dynamo exporter's empty data files
        if leftover.endswith(".onnx.data") and os.path.getsize(path(leftover)) == 0:
            os.remove(path(leftover))
    return 0


if __name__ == "__main__":
    sys.exit(main())

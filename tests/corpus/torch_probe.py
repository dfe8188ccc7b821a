#!/usr/bin/env python3
"""torch_probe.py: what PyTorch runs on this machine's GPU 0, for the deploy
gate's truth (scripts/gpu_gate.sh). Each operation runs on the GPU through
the library PyTorch hands it to, its result is copied back and compared
with the same operation in float64 on the CPU; one line each, in the
corpus's words:

  KERNEL torch.matmul RAN (cuBLAS, max relative error 2.1e-07)
  KERNEL torch.nn.functional.conv2d FAILED (RuntimeError: ...)

then PROGRAM RAN|FAILED, the build's arch list (torch.cuda.get_arch_list()),
the GPU's compute capability, the distributions that installed PyTorch and
NVIDIA's libraries (DIST <name> <version>: what to download to get the same
files elsewhere), and every shared library the process has mapped once
they ran (LOADED <path>): what PyTorch really loads, including what it
opens with dlopen (cuDNN's engines, libtorch_cuda_linalg, cuSOLVER), which
DT_NEEDED alone does not show. Exit 0 when every operation ran.
"""
import importlib.metadata
import os
import sys


def main():
    try:
        import torch
    except Exception as e:  # no PyTorch: say so, the gate has nothing to probe
        print(f"PROGRAM FAILED (no PyTorch: {e})")
        return 1
    print(f"TORCH {torch.__version__} cuda {torch.version.cuda} at {os.path.dirname(torch.__file__)}")
    # the arch list is compiled in (CUDA_ARCH_FLAGS, a string in
    # libtorch_python.so); get_arch_list() splits it where a GPU is seen
    flags = getattr(torch._C, "_cuda_getArchFlags", lambda: None)()
    print(f"ARCH_FLAGS {flags}")
    if not torch.cuda.is_available():
        print("PROGRAM FAILED (torch.cuda.is_available() is False)")
        return 1
    cap = torch.cuda.get_device_capability(0)
    print(f"GPU {torch.cuda.get_device_name(0)} compute capability {cap[0]}.{cap[1]}")
    print(f"ARCH_LIST {' '.join(torch.cuda.get_arch_list())}")
    torch.manual_seed(25)
    dev = torch.device("cuda", 0)

    def matmul():
        a, b = torch.randn(512, 384), torch.randn(384, 256)
        return (a.to(dev) @ b.to(dev)).cpu(), a.double() @ b.double(), 1e-4

    def conv2d():
        x, w = torch.randn(4, 3, 32, 32), torch.randn(8, 3, 3, 3)
        f = torch.nn.functional.conv2d
        return f(x.to(dev), w.to(dev), padding=1).cpu(), f(x.double(), w.double(), padding=1), 1e-4

    def sparse_mm():
        i = torch.tensor([[0, 1, 2, 3, 5, 7], [1, 0, 3, 2, 6, 4]])
        v = torch.randn(6)
        s = torch.sparse_coo_tensor(i, v, (8, 8))
        d = torch.randn(8, 5)
        got = torch.sparse.mm(s.to(dev), d.to(dev)).cpu()
        return got, torch.sparse.mm(s.double(), d.double()), 1e-5

    def fft():
        x = torch.randn(256, dtype=torch.complex64)
        return torch.fft.fft(x.to(dev)).cpu(), torch.fft.fft(x.to(torch.complex128)), 1e-4

    def eigh():
        a = torch.randn(64, 64)
        a = a + a.T
        return torch.linalg.eigvalsh(a.to(dev)).cpu(), torch.linalg.eigvalsh(a.double()), 1e-4

    ops = [("torch.matmul", "cuBLAS", matmul), ("torch.nn.functional.conv2d", "cuDNN", conv2d),
           ("torch.sparse.mm", "cuSPARSE", sparse_mm), ("torch.fft.fft", "cuFFT", fft),
           ("torch.linalg.eigvalsh", "cuSOLVER", eigh)]
    bad = 0
    for name, lib, op in ops:
        try:
            got, want, tol = op()
            torch.cuda.synchronize()
            err = ((got.to(want.dtype) - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
            ok = err <= tol
            print(f"KERNEL {name} {'RAN' if ok else 'FAILED'} ({lib}, max relative error {err:.2e})")
        except Exception as e:
            ok = False
            msg = str(e).splitlines()[0] if str(e) else ""
            print(f"KERNEL {name} FAILED ({type(e).__name__}: {msg[:200]})")
        bad += not ok
    print(f"PROGRAM {'FAILED' if bad else 'RAN'}")
    dists = set()
    for d in importlib.metadata.distributions():
        name = (d.metadata["Name"] or "").lower()
        if name == "torch" or name.startswith("nvidia-"):
            dists.add((name, d.version))
    for name, version in sorted(dists):
        print(f"DIST {name} {version}")
    seen = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) >= 6 and ".so" in parts[5] and parts[5] not in seen:
                seen.add(parts[5])
                print(f"LOADED {parts[5]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

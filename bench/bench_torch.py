#!/usr/bin/env python3
"""bench_torch.py: the deploy gate on PyTorch's real libraries, against
cuobjdump in the same run (issue 25's target: `check --arch 90` of
libtorch_cuda.so in at most 0.1x `cuobjdump --list-elf`'s time, under
300 MB resident).

Data, downloaded here and never committed: the PyPI wheel torch==2.15.0
(520 MB libtorch_cuda.so, 476 modules, built for CUDA 13.2) and the
nvidia-* wheels its metadata pins (cuBLAS, cuSPARSE, cuSPARSELt, cuFFT,
NCCL, cuDNN, NVSHMEM, ...: about 2.5 GB more), so that its DT_NEEDED
libraries resolve to its own as they do where it is installed; their
shared libraries are unpacked into $CBC_BENCH_DATA (default
build-bench-data/). BENCH_TORCH_LIBS=0 takes the torch wheel alone (its
libraries are then what this machine's loader finds, or missing). cuobjdump is $CUOBJDUMP,
the one beside nvcc, on PATH, or PyPI's nvidia-cuda-cuobjdump (13.2.86).

Timing waits before every run until the 1-minute load average is under
0.5 (this machine's 2 cores are shared; BENCH_TORCH_WAIT_S bounds the wait,
0, the default, waits as long as it takes), alternates ours and the peer
round by round, and
reports medians and the peak resident set of each run (wait4's ru_maxrss).
BENCH_TORCH_BASELINE names another cubincache (an earlier commit's,
BENCH_TORCH_BASELINE_REV; bench_torch.sh builds 6ef78fd's, where issue 25
measured the gate) timed the same way beside them. Prints JSON lines for bench/report.py: one per
measurement, one with the shape of libtorch_cuda.so (its modules with
kernels, images and their inflated size, as check and inspect count them), one per compute capability from 5.0 to 12.1 with check's
verdict, the wheel's arch list (the CUDA_ARCH_FLAGS string
libtorch_python.so carries, which torch.cuda.get_arch_list() splits), and
one per library of the wheels with GPU code with its dispatch-rule verdict
for each compute capability."""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import zipfile

TORCH = "2.15.0"
CCS = ["5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.8",
       "8.9", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1"]


def log(msg):
    print("bench_torch: " + msg, file=sys.stderr, flush=True)


def pip_download(spec, dest, deps=False):
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
           "--only-binary=:all:", "-d", dest, spec]
    if not deps:
        cmd.insert(5, "--no-deps")
    subprocess.run(cmd, check=True)


def requires(wheel):
    """The Requires-Dist lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as z:
        meta = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")][0]
        return [line[len("Requires-Dist: "):] for line in z.read(meta).decode().splitlines()
                if line.startswith("Requires-Dist: ")]


def nvidia_pins(wheels, torch_whl):
    """The nvidia-* packages torch pins for Linux, through cuda-toolkit's
    extras: ["nvidia-cublas==13.4.1.3.*", ...]."""
    out = []
    for r in requires(torch_whl):
        req, _, marker = r.partition(";")
        if "Linux" not in marker and marker.strip():
            continue
        m = re.match(r"\s*(nvidia-[\w-]+)\s*(==\s*[\w.*]+)", req)
        if m:
            out.append(m.group(1) + m.group(2).replace(" ", ""))
            continue
        m = re.match(r"\s*cuda-toolkit\[([\w,]+)\]\s*==\s*([\w.]+)", req)
        if not m:
            continue
        extras, version = m.group(1).split(","), m.group(2)
        pip_download("cuda-toolkit==" + version, wheels)
        tk = [os.path.join(wheels, w) for w in os.listdir(wheels) if w.startswith("cuda_toolkit-")][0]
        for r2 in requires(tk):
            req2, _, marker2 = r2.partition(";")
            if "x86_64" not in marker2 or not any("extra == '%s'" % e in marker2 for e in extras):
                continue
            m2 = re.match(r"\s*(nvidia-[\w-]+)\s*((?:==|<|>=)[^;]*)", req2)
            if m2:
                out.append(m2.group(1) + m2.group(2).replace(" ", ""))
    return sorted(set(out))


def fetch(data):
    site = os.path.join(data, "site")
    lib = os.path.join(site, "torch", "lib")
    if not os.path.exists(os.path.join(lib, "libtorch_cuda.so")):
        wheels = os.path.join(data, "wheels")
        os.makedirs(wheels, exist_ok=True)
        if not [w for w in os.listdir(wheels) if w.startswith("torch-" + TORCH)]:
            log("downloading the torch %s wheel from PyPI (about 540 MB)" % TORCH)
            pip_download("torch==" + TORCH, wheels)
        torch_whl = [os.path.join(wheels, w) for w in os.listdir(wheels)
                     if w.startswith("torch-" + TORCH)][0]
        if os.environ.get("BENCH_TORCH_LIBS", "1") != "0":
            pins = nvidia_pins(wheels, torch_whl)
            log("downloading the libraries it pins (about 2.5 GB): " + " ".join(pins))
            for pin in pins:
                pip_download(pin, wheels)
        for w in sorted(os.listdir(wheels)):
            if not w.endswith(".whl") or not (w.startswith("torch-") or w.startswith("nvidia")):
                continue
            with zipfile.ZipFile(os.path.join(wheels, w)) as z:
                for n in z.namelist():
                    if re.search(r"(^torch/lib/|^nvidia/.*/lib/).*\.so", n):
                        z.extract(n, site)
    for root, _, files in os.walk(site):
        for f in files:
            os.chmod(os.path.join(root, f), 0o755)
    return lib


def find_cuobjdump(data, nvcc):
    c = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    beside = os.path.join(os.path.dirname(nvcc), "cuobjdump") if nvcc else ""
    if not c and beside and os.access(beside, os.X_OK):
        c = beside
    if c:
        return c
    got = os.path.join(data, "cuobjdump", "nvidia", "cu13", "bin", "cuobjdump")
    if not os.path.exists(got):
        w = os.path.join(data, "wheels-cuobjdump")
        os.makedirs(w, exist_ok=True)
        log("no cuobjdump here: downloading nvidia-cuda-cuobjdump 13.2.86 from PyPI")
        pip_download("nvidia-cuda-cuobjdump==13.2.86", w)
        for f in os.listdir(w):
            with zipfile.ZipFile(os.path.join(w, f)) as z:
                z.extractall(os.path.join(data, "cuobjdump"))
        os.chmod(got, 0o755)
    return got


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def wait_idle(limit_s):
    """Waits until the 1-minute load is under 0.5 (limit_s 0: for as long as
    it takes); returns the load it went on at."""
    t0 = time.time()
    while load1() >= 0.5 and (not limit_s or time.time() - t0 < limit_s):
        time.sleep(15)
    return load1()


def run_once(cmd, env=None):
    """(wall ms, cpu ms, peak RSS MB, exit) of one run of cmd."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1e3
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_maxrss / 1024.0, os.waitstatus_to_exitcode(status)


def main():
    cbc = os.environ.get("CUBINCACHE") or "build/tools/cubincache"
    nvcc = os.environ.get("NVCC_REAL") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    data = os.path.abspath(os.environ.get("CBC_BENCH_DATA", "build-bench-data"))
    rounds = int(os.environ.get("BENCH_TORCH_ROUNDS", "5"))
    os.makedirs(data, exist_ok=True)
    lib = fetch(data)
    so = os.path.join(lib, "libtorch_cuda.so")
    cuobjdump = find_cuobjdump(data, nvcc)
    benches = [
        ("cuobjdump_list_elf_libtorch_cuda", [cuobjdump, "--list-elf", so]),
        ("check_arch90_nolibs_libtorch_cuda", [cbc, "check", "-q", "--no-libs", "--arch", "90", so]),
        ("check_arch90_nolibs_j1_libtorch_cuda",
         [cbc, "check", "-q", "-j", "1", "--no-libs", "--arch", "90", so]),
        ("check_arch90_libtorch_cuda", [cbc, "check", "-q", "--arch", "90", so]),
        ("check_integrity_nolibs_libtorch_cuda", [cbc, "check", "-q", "--no-libs", so]),
        ("inspect_libtorch_cuda", [cbc, "inspect", so]),
        ("select_cc90_libtorch_cuda", [cbc, "select", "--cc", "9.0", so]),
    ]
    base = os.environ.get("BENCH_TORCH_BASELINE")
    base_rev = os.environ.get("BENCH_TORCH_BASELINE_REV", "an earlier commit")
    if base:
        benches += [("baseline_check_arch90_nolibs_libtorch_cuda",
                     [base, "check", "-q", "--no-libs", "--arch", "90", so]),
                    ("baseline_check_arch90_libtorch_cuda", [base, "check", "-q", "--arch", "90", so])]
    # warm the page cache, then measure round by round, ours next to the peer
    for _, cmd in benches:
        run_once(cmd)
    got = {name: [] for name, _ in benches}
    loads = []
    limit = float(os.environ.get("BENCH_TORCH_WAIT_S", "0"))
    for r in range(rounds):
        for name, cmd in benches:
            if (name.startswith("cuobjdump") or name.startswith("baseline")) and r >= 3:
                continue  # seconds a run: three are enough
            loads.append(wait_idle(limit))  # before every run: the machine is shared
            got[name].append(run_once(cmd))
    for name, cmd in benches:
        rs = got[name]
        print(json.dumps({
            "bench": name, "median_ms": statistics.median(x[0] for x in rs),
            "min_ms": min(x[0] for x in rs), "max_ms": max(x[0] for x in rs),
            "cpu_ms": statistics.median(x[1] for x in rs),
            "max_rss_mb": max(x[2] for x in rs), "runs": len(rs),
            "exit": rs[-1][3], "load_max": max(loads), "size_bytes": os.path.getsize(so),
            "command": " ".join(os.path.relpath(c) if os.path.isabs(c) else c for c in cmd),
            **({"baseline_rev": base_rev} if name.startswith("baseline") else {})}))
    # what the file is: the modules check judges, the images inspect reads
    p = subprocess.run([cbc, "check", "--json", "--no-libs", "--arch", "9.0", so],
                       capture_output=True, text=True)
    modules = next((o["files"][0]["modules"] for o in map(json.loads, p.stdout.splitlines())
                    if o.get("files")), None)
    p = subprocess.run([cbc, "inspect", "--json", so], capture_output=True, text=True)
    entries = [e for o in map(json.loads, p.stdout.splitlines()) for e in o.get("entries", [])]
    print(json.dumps({"bench": "torch_shape", "torch": TORCH, "size_bytes": os.path.getsize(so),
                      "modules": modules, "images": len(entries),
                      "inflated_bytes": sum(e.get("size", 0) for e in entries)}))
    # what check says of the wheel, GPU by GPU, next to the arch list
    flags = ""
    with open(os.path.join(lib, "libtorch_python.so"), "rb") as f:
        m = re.search(rb"\0((?:sm|compute)_\d+[af]?(?: (?:sm|compute)_\d+[af]?)+)\0", f.read())
        flags = m.group(1).decode() if m else ""
    print(json.dumps({"bench": "torch_arch_list", "arch_list": flags.split(), "torch": TORCH}))
    for cc in CCS:
        p = subprocess.run([cbc, "check", "--no-libs", "--arch", cc, so], capture_output=True,
                           text=True)
        line = p.stdout.splitlines()[0] if p.stdout else p.stderr.strip()
        p2 = subprocess.run([cbc, "check", "--arch", cc, so], capture_output=True, text=True)
        line2 = p2.stdout.splitlines()[0] if p2.stdout else p2.stderr.strip()
        print(json.dumps({"bench": "torch_verdict", "cc": cc, "exit": p.returncode,
                          "verdict": line, "exit_libs": p2.returncode, "verdict_libs": line2}))
    # each library of the wheels with GPU code, judged alone by the dispatch
    # rule: NVIDIA states CUDA 13's libraries support 7.5 (Turing) and later
    site = os.path.dirname(os.path.dirname(lib))
    libs = []
    for root, _, files in os.walk(site):
        for f in sorted(files):
            path = os.path.join(root, f)
            if ".so" in f and not os.path.islink(path):
                p = subprocess.run([cbc, "check", "--no-libs", "--arch", "9.0", path],
                                   capture_output=True, text=True)
                if p.stdout and "no GPU code" not in p.stdout.splitlines()[0]:
                    libs.append(path)
    for path in sorted(libs, key=os.path.basename):
        verdicts = {}
        for cc in CCS:
            p = subprocess.run([cbc, "check", "--no-libs", "--rule", "dispatch", "--arch", cc, path],
                               capture_output=True, text=True)
            first = p.stdout.split()[0] if p.stdout else "ERROR"
            verdicts[cc] = first
        print(json.dumps({"bench": "torch_lib_verdict", "library": os.path.basename(path),
                          "verdicts": verdicts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

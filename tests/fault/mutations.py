#!/usr/bin/env python3
"""mutations.py: a bundle's manifest is untrusted input. Mutates it many
ways (fields removed, retyped or retargeted; file names pointing at the
source, a foreign file, a symlink, another bundle's image, a path outside;
hashes set to a foreign file's; bytes flipped) and runs build, check,
select and embed on each mutant. Invariants, whatever the mutant:
  - no command dies of a signal; exit codes are 0, 1, 2 or 4;
  - nothing outside the bundle's own outputs changes: the source, its
    header, foreign files, a symlink's target, another bundle's images;
  - after a build that exits 0, check of the bundle exits 0.
Meson passes CUBINCACHE and SRCDIR; CBC_MUTATIONS sets the count."""
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

C = os.environ["CUBINCACHE"]
N = int(os.environ.get("CBC_MUTATIONS", "300"))
rng = random.Random(1729)
tmp = tempfile.mkdtemp(prefix="cbc-mut.")
os.environ["CUBINCACHE_DIR"] = os.path.join(tmp, "cache")
os.environ["NO_COLOR"] = "1"
for v in ("CUDA_COMPUTE_CAP", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "MAKEFLAGS", "MFLAGS",
          "CARGO_MAKEFLAGS", "CUBINCACHE_SHARED_JOBS"):
    os.environ.pop(v, None)


def run(*args, cwd=None):
    # no wall-clock limit of its own: a busy machine makes a command slow,
    # never wrong; a hang is bounded by the suite's timeout (tests/meson.build)
    p = subprocess.run([C, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return p.returncode, p.stdout.decode(errors="replace")


def snapshot(paths):
    out = {}
    for p in paths:
        if not os.path.lexists(p):
            out[p] = None  # deleted
            continue
        st = os.lstat(p)
        data = os.readlink(p) if os.path.islink(p) else open(p, "rb").read()
        out[p] = (st.st_mode, hashlib.sha256(data if isinstance(data, bytes) else data.encode()).hexdigest())
    return out


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


src = os.path.join(tmp, "src")
os.makedirs(src)
open(os.path.join(src, "kh.cuh"), "w").write("__device__ inline float sq(float v) { return v * v; }\n")
open(os.path.join(src, "k.cu"), "w").write(
    '#include "kh.cuh"\nextern "C" __global__ void scale(float *x, float a, int n)\n'
    "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = sq(x[i]) * a; }\n")
good = os.path.join(tmp, "good")
args = ["build", "-q", "-a", "86,90", "-o", good, "-n", "k", "k.cu"]
rc, out = run(*args, cwd=src)
if rc != 0:
    fail("clean build: " + out)
rc, out = run("build", "-q", "-a", "80", "-o", good, "-n", "other", "k.cu", cwd=src)
if rc != 0:
    fail("other bundle: " + out)
base = json.load(open(os.path.join(good, "k.manifest.json")))
other = json.load(open(os.path.join(good, "other.manifest.json")))

kinds = {}
for i in range(N):
    d = os.path.join(tmp, "m%d" % (i % 4))
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(good, d, symlinks=True)
    open(os.path.join(d, "notes.txt"), "w").write("foreign %d\n" % i)
    victim = os.path.join(tmp, "victim.txt")
    open(victim, "w").write("victim\n")
    os.symlink(victim, os.path.join(d, "k.sm_75.cubin"))
    protected = [os.path.join(src, "k.cu"), os.path.join(src, "kh.cuh"),
                 os.path.join(d, "notes.txt"), os.path.join(d, "k.sm_75.cubin"), victim,
                 os.path.join(d, "other.sm_80.cubin"), os.path.join(d, "other.manifest.json")]
    m = json.loads(json.dumps(base))
    e = rng.choice(m["entries"])
    kind = rng.randrange(12)
    kinds[kind] = kinds.get(kind, 0) + 1
    names = ["k.cu", "../src/k.cu", "/etc/passwd", "notes.txt", "k.sm_75.cubin", "other.sm_80.cubin",
             "other.manifest.json", ".hidden", "", "k.sm_90.cubin", "k.sm_86.cubin", "a\nb"]
    if kind == 0:
        e["file"] = rng.choice(names)
    elif kind == 1:
        e["target"] = rng.choice(["sm_75", "sm_80", "sm_89", "sm_90a", "compute_90", "sm_9", "x"])
    elif kind == 2:
        x = dict(e)
        x["target"] = rng.choice(["sm_75", "sm_80", "sm_87"])
        x["file"] = rng.choice(names)
        if x["file"] == "other.sm_80.cubin":  # with the hash its own manifest records
            x["target"] = "sm_80"
            x["xxh3"] = other["entries"][0]["xxh3"]
        m["entries"].append(x)
    elif kind == 3:
        del e[rng.choice(list(e.keys()))]
    elif kind == 4:
        key = rng.choice(list(m.keys()))
        m[key] = rng.choice([None, 7, "x", [], {}, True])
    elif kind == 5:
        m["name"] = rng.choice(["other", "../k", "k/x", "", "k" * 300, "x */ y", "K"])
    elif kind == 6:
        e["xxh3"] = rng.choice(["0" * 32, "f" * 32, "zz", ""])
    elif kind == 7:
        e["size"] = rng.choice([-1, 0, 1e300, "12", 2 ** 63])
    elif kind == 8:
        m["dependencies"].append({"path": rng.choice(["/dev/zero", "/proc/self/mem", victim, d]),
                                  "xxh3": "0" * 32})
    elif kind == 9:
        e["deps"] = rng.choice([[0, 0, 0], [999], [-1], "x", [0.5]])
    elif kind == 10:
        m["entries"] = m["entries"] * rng.randrange(2, 5)
    text = json.dumps(m, indent="\t").encode()
    if kind == 11:  # raw bytes flipped
        b = bytearray(text)
        for _ in range(rng.randrange(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        text = bytes(b)
    open(os.path.join(d, "k.manifest.json"), "wb").write(text)
    before = snapshot(protected)
    cmds = [("check", d), ("select", "--cc", "9.0", os.path.join(d, "k.manifest.json")),
            ("embed", "-o", os.path.join(tmp, "e.c"), os.path.join(d, "k.manifest.json")),
            ("build", "-q", "-a", "86,90", "-o", d, "-n", "k", "k.cu"),
            ("build", "-q", "-a", "90", "-o", d, "-n", "k", "k.cu")]
    for c in cmds:
        rc, out = run(*c, cwd=src)
        if rc < 0 or rc >= 128:
            fail("mutant %d (kind %d): '%s' died of signal %d" % (i, kind, " ".join(c), -rc))
        if rc not in (0, 1, 2, 4):
            fail("mutant %d (kind %d): '%s' exited %d: %s" % (i, kind, " ".join(c), rc, out))
        after = snapshot(protected)
        if after != before:
            changed = [p for p in protected if before.get(p) != after.get(p)]
            fail("mutant %d (kind %d): '%s' changed %s" % (i, kind, " ".join(c), changed))
        if c[0] == "build" and rc == 0:
            rc2, out2 = run("check", os.path.join(d, "k.manifest.json"))
            if rc2 != 0:
                fail("mutant %d (kind %d): check after a good build exited %d: %s" % (i, kind, rc2, out2))
print("# %d manifest mutations, %d kinds, 5 commands each: nothing outside the bundle touched" %
      (N, len(kinds)))
shutil.rmtree(tmp)
print("ok")

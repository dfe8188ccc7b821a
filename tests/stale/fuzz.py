#!/usr/bin/env python3
"""fuzz.py: a differential stale-hit fuzzer for cubincache (and ccache).

A small CUDA project (headers in several include directories, a shadowing
candidate in each, #include_next, __has_include, a generated header, a
symbolic link to a header, -isystem) is mutated by a random sequence of
edits; after every edit the outputs of the cache under test are compared
with plain nvcc's for the same command in the same world:

  launcher  `cubincache nvcc -cubin ...` and `cubincache nvcc -c ...`
            (the split compile), and `cubincache build -a LIST`, whose
            cubins must equal `nvcc -cubin -gencode` per target byte for
            byte (objects are compared with nvcc's tmpxft_<pid> names masked);
  --peer ccache  `ccache nvcc -c ...` the same way (ccache caches no -cubin).

The project lives in two checkouts of one tree (a and b, each with .git,
so the base directory is their root); the command runs in the tree's root,
b1 or b1/deep, with its paths absolute or relative to that directory.

The edits: a header edited (sometimes to the same size with its mtime put
back), a new header earlier on the include path or beside the source,
one removed, -I order and membership changed, an -isystem directory, a
__has_include target appearing and going, the generated header rewritten,
the symlink retargeted, __FILE__ in host or device code and an internal
device function (nvcc's module id) switched on and off, every environment
variable the key covers set and unset (the profile's INCLUDES,
PTXAS_FLAGS, CUDAFE_FLAGS; NVCC_*_FLAGS, CPATH, CPLUS_INCLUDE_PATH), host
and device flags, the arch list, touches
and future modification times; the working directory moved, the paths
spelled relative or absolute, and the other checkout made the one built
(it keeps its own state: edits go to the checkout in use) or brought to
this one's state first (two runners at one commit).

Reference outputs are memoized by the whole world the fuzzer controls
(every file's bytes, every link's target, the command and the
environment), so a state met again is not compiled by nvcc again.

Every failure prints the seed and step that reproduce it:
    fuzz.py --seed S --steps N [--workers W] [--peer ccache]
Exit 0: no stale output; 1: at least one; 2: usage or setup error (a
worker that could not run: ERROR, never counted as stale). --seconds T
ends a long run with its summary: no step starts after T seconds.
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

TMPX = re.compile(rb"tmpxft_[0-9a-f]{8}_[0-9a-f]{8}-[0-9]+_")
ARCHS = ["86", "89", "90"]
ENV_KNOBS = {
    # variable: values the fuzzer sets it to (None: unset)
    "PTXAS_FLAGS": [None, "-O0", "-O1"],
    "INCLUDES": [None, "-DEXTRA=2", "-DEXTRA=3"],
    "CUDAFE_FLAGS": [None, "--diag_suppress=177"],
    "NVCC_APPEND_FLAGS": [None, "-DEXTRA=5", "-lineinfo"],
    "NVCC_PREPEND_FLAGS": [None, "-DPRE=1"],
    "CPATH": [None, "@inc3"],
    "CPLUS_INCLUDE_PATH": [None, "@inc3"],
}
HOST_FLAGS = [[], ["-O0"], ["-DHOSTOPT=1"], ["-Xcompiler", "-O1"], ["-DHOST_FILE=1"]]
# DEV_FILE: __FILE__ in a kernel (a PTX byte array, raw in the cubin); ANON:
# an internal device function, whose name holds nvcc's module id (a hash of
# the source's absolute path): both name the tree, so the other checkout
# must get its own bytes
DEV_FLAGS = [[], ["-DVAL_OFF=1"], ["-Xptxas", "-O1"], ["-maxrregcount=32"], ["-lineinfo"],
             ["-DDEV_FILE=1"], ["-DANON=1"], ["-DANON=1", "-DDEV_FILE=1"]]


class World:
    """The project on disk and the command's knobs."""

    def __init__(self, root, rng):
        self.root = root
        self.rng = rng
        self.idirs = ["inc1", "inc2"]     # -I order
        self.sysdir = False                # -isystem sys
        self.env = {k: None for k in ENV_KNOBS}
        self.host = []
        self.dev = []
        self.archs = ["89", "90"]
        self.counter = 0
        self.cwd = ""                      # the working directory, below the tree's root
        self.rel = False                   # paths spelled relative to it
        self.trees = [root]
        for d in ("src", "inc1", "inc2", "inc3", "sys", "gen", "alt", ".git", "b1/deep"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        self.write("inc1/a.h", "#define A_VAL %s\n" % self.num())
        self.write("inc1/b.h", "#pragma once\n#define B_VAL %s\n" % self.num())
        self.write("inc2/b.h", "#if __has_include_next(<b.h>)\n#include_next <b.h>\n#endif\n"
                   "#define B2_VAL %s\n" % self.num())
        self.write("sys/s.h", "#define S_VAL %s\n" % self.num())
        self.write("gen/gen.h", "#define GEN_VAL %s\n" % self.num())
        self.write("alt/one.cuh", "#define LINK_VAL %s\n" % self.num())
        self.write("alt/two.cuh", "#define LINK_VAL %s\n" % self.num())
        os.symlink("../alt/one.cuh", os.path.join(root, "src", "link.cuh"))
        self.write("src/k.cu", SOURCE)
        self.age_all()

    def num(self):
        self.counter += 1
        return "%d.%df" % (self.rng.randrange(1, 9), self.counter)

    def path(self, rel):
        return os.path.join(self.root, rel)

    def cwd_path(self):
        return os.path.join(self.root, self.cwd)

    def spell(self, p):
        """A path as the command names it."""
        return os.path.relpath(p, self.cwd_path()) if self.rel else p

    def write(self, rel, text):
        with open(self.path(rel), "w") as f:
            f.write(text)

    def age_all(self):
        past = time.time() - 3600
        for d, _, files in os.walk(self.root):
            for f in files:
                p = os.path.join(d, f)
                if not os.path.islink(p):
                    os.utime(p, (past, past))

    # ---- the command ---------------------------------------------------------
    def flags(self):
        f = []
        for d in self.idirs:
            f += ["-I", self.spell(self.path(d))]
        if self.sysdir:
            f += ["-isystem", self.spell(self.path("sys"))]
        f += ["-I", self.spell(self.path("gen"))]
        return f + self.host + self.dev

    def environ(self):
        e = dict(os.environ)
        for k, v in self.env.items():
            e.pop(k, None)
            if v is not None:
                e[k] = v.replace("@", self.root + "/")
        return e

    def state(self):
        """Everything the fuzzer controls, for the reference memo."""
        h = hashlib.sha256()
        for d, dirs, files in sorted(os.walk(self.root)):
            dirs.sort()
            rel = os.path.relpath(d, self.root)
            if rel.split(os.sep)[0] in ("out", "ref", "cache", "work", "ccache", ".git"):
                continue
            for f in sorted(files):
                p = os.path.join(d, f)
                h.update(p.encode() + b"\0")
                if os.path.islink(p):
                    h.update(b"L" + os.readlink(p).encode())
                else:
                    with open(p, "rb") as fh:
                        h.update(b"F" + fh.read())
        h.update(json.dumps([self.cwd_path(), self.flags(), self.archs, sorted(
            (k, v) for k, v in self.env.items() if v is not None)]).encode())
        return h.hexdigest()

    # ---- the edits -----------------------------------------------------------
    def mutate(self):
        r = self.rng
        kinds = [self.edit, self.edit_same_size, self.shadow, self.unshadow, self.reorder,
                 self.toggle_dir, self.toggle_sys, self.has_include, self.regenerate,
                 self.relink, self.env_knob, self.host_flags, self.dev_flags, self.arch_list,
                 self.touch, self.future, self.move_cwd, self.toggle_rel, self.switch_tree,
                 self.sync_tree]
        return r.choice(kinds)()

    def headers(self):
        out = []
        for d in ("inc1", "inc2", "inc3", "sys", "src", "gen", "alt"):
            for f in sorted(os.listdir(self.path(d))):
                p = os.path.join(d, f)
                if f.endswith((".h", ".cuh")) and not os.path.islink(self.path(p)):
                    out.append(p)
        return out

    def edit(self):
        h = self.rng.choice(self.headers())
        text = open(self.path(h)).read()
        text = re.sub(r"\d+\.\d+f", lambda m: self.num(), text, count=1)
        self.write(h, text)
        return "edit %s" % h

    def edit_same_size(self):
        """Same size, same mtime: only ctime and the bytes change."""
        h = self.rng.choice(self.headers())
        p = self.path(h)
        st = os.stat(p)
        text = open(p).read()
        m = re.search(r"(\d)\.(\d+)f", text)
        if not m:
            return self.edit()
        d = str((int(m.group(1)) % 8) + 1)
        text = text[:m.start(1)] + d + text[m.end(1):]
        self.write(h, text)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        return "same-size edit %s (mtime kept)" % h

    def shadow(self):
        where = self.rng.choice(["inc2/a.h", "inc3/a.h", "src/a.h", "inc1/s.h", "src/gen.h",
                                 "inc3/b.h", "inc1/opt.h" if self.rng.random() < 0.3 else "inc2/a.h"])
        name = os.path.basename(where)
        macro = {"a.h": "A_VAL", "s.h": "S_VAL", "gen.h": "GEN_VAL", "b.h": "B_VAL",
                 "opt.h": "OPT_VAL"}[name]
        extra = "#pragma once\n" if name == "b.h" else ""
        self.write(where, "%s#define %s %s\n" % (extra, macro, self.num()))
        return "new header %s" % where

    def unshadow(self):
        cands = [h for h in ("inc2/a.h", "inc3/a.h", "src/a.h", "inc1/s.h", "src/gen.h",
                             "inc3/b.h", "inc1/opt.h") if os.path.exists(self.path(h))]
        if not cands:
            return self.shadow()
        h = self.rng.choice(cands)
        os.unlink(self.path(h))
        return "removed %s" % h

    def reorder(self):
        self.rng.shuffle(self.idirs)
        return "-I order %s" % self.idirs

    def toggle_dir(self):
        if "inc3" in self.idirs:
            self.idirs.remove("inc3")
            return "-I inc3 dropped"
        self.idirs.insert(self.rng.randrange(len(self.idirs) + 1), "inc3")
        return "-I inc3 added: %s" % self.idirs

    def toggle_sys(self):
        self.sysdir = not self.sysdir
        return "-isystem sys %s" % ("on" if self.sysdir else "off")

    def has_include(self):
        p = self.path("inc1/opt.h")
        if os.path.exists(p):
            os.unlink(p)
            return "__has_include target removed"
        self.write("inc1/opt.h", "#define OPT_VAL %s\n" % self.num())
        return "__has_include target created"

    def regenerate(self):
        self.write("gen/gen.h", "#define GEN_VAL %s\n" % self.num())
        return "gen.h regenerated"

    def relink(self):
        p = self.path("src/link.cuh")
        cur = os.readlink(p)
        os.unlink(p)
        os.symlink("../alt/two.cuh" if cur.endswith("one.cuh") else "../alt/one.cuh", p)
        return "link.cuh -> %s" % os.readlink(p)

    def env_knob(self):
        k = self.rng.choice(sorted(ENV_KNOBS))
        self.env[k] = self.rng.choice(ENV_KNOBS[k])
        return "%s=%s" % (k, self.env[k])

    def host_flags(self):
        self.host = list(self.rng.choice(HOST_FLAGS))
        return "host flags %s" % self.host

    def dev_flags(self):
        self.dev = list(self.rng.choice(DEV_FLAGS))
        return "device flags %s" % self.dev

    def arch_list(self):
        n = self.rng.randrange(1, len(ARCHS) + 1)
        self.archs = sorted(self.rng.sample(ARCHS, n))
        return "archs %s" % ",".join(self.archs)

    def touch(self):
        h = self.rng.choice(self.headers())
        os.utime(self.path(h))
        return "touch %s" % h

    def move_cwd(self):
        self.cwd = self.rng.choice([d for d in ("", "b1", "b1/deep") if d != self.cwd])
        return "cd %s" % (self.cwd or "the root")

    def toggle_rel(self):
        self.rel = not self.rel
        return "paths %s" % ("relative" if self.rel else "absolute")

    def switch_tree(self):
        self.root = self.trees[1] if self.root == self.trees[0] else self.trees[0]
        return "build in checkout %s" % os.path.basename(os.path.dirname(self.root))

    def sync_tree(self):
        """The other checkout at this one's state (a second runner at the
        same commit, modification times as a checkout of it leaves them),
        then built: whatever names the tree must be its own there."""
        other = self.trees[1] if self.root == self.trees[0] else self.trees[0]
        shutil.rmtree(other)
        shutil.copytree(self.root, other, symlinks=True)
        self.root = other
        return "the other checkout at this state, built"

    def future(self):
        h = self.rng.choice(self.headers())
        t = time.time() + 7200
        os.utime(self.path(h), (t, t))
        return "future mtime %s" % h


SOURCE = r'''#include "a.h"
#include <b.h>
#include "link.cuh"
#include "gen.h"
#if __has_include(<s.h>)
#include <s.h>
#else
#define S_VAL 0.0f
#endif
#if __has_include(<opt.h>)
#include <opt.h>
#else
#define OPT_VAL 0.0f
#endif
#ifndef EXTRA
#define EXTRA 1
#endif
#ifndef B_VAL
#define B_VAL 0.0f
#endif
#ifndef B2_VAL
#define B2_VAL 0.0f
#endif
#ifdef VAL_OFF
#undef A_VAL
#define A_VAL 0.5f
#endif
#ifdef ANON
namespace { __device__ __noinline__ float twice(float v) { return 2.0f * v; } }
#define TWICE(v) twice(v)
#else
#define TWICE(v) (v)
#endif
extern "C" __global__ void k(float *o)
{
    o[0] = TWICE(A_VAL + B_VAL + B2_VAL + LINK_VAL + GEN_VAL + S_VAL + OPT_VAL + EXTRA);
}
#ifdef DEV_FILE
extern "C" __global__ void where(char *o)
{
    const char *f = __FILE__;
    for (int i = 0; f[i]; i++)
        o[i] = f[i];
}
#endif
#ifdef HOST_FILE
const char *host_where() { return __FILE__; }
#endif
'''


def masked(data):
    return TMPX.sub(b"tmpxft_", data)


class Runner:
    def __init__(self, args, root, worker):
        self.a = args
        self.root = root
        self.worker = worker
        self.memo = {}
        self.nvcc = args.nvcc
        self.cbc = args.cubincache
        self.stats = {"steps": 0, "compares": 0, "memo_hits": 0}

    def run(self, argv, env, out=None, cwd=None):
        p = subprocess.run(argv, env=env, cwd=cwd or self.root, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        if p.returncode != 0:
            raise RuntimeError("%s exited %d: %s" % (" ".join(argv), p.returncode,
                                                    p.stderr.decode(errors="replace")[-800:]))
        if out:
            with open(os.path.join(self.root, out), "rb") as f:
                return f.read()
        return None

    def reference(self, w, env, key, argv, out):
        k = (w.state(), key)
        if k in self.memo:
            self.stats["memo_hits"] += 1
            return self.memo[k]
        data = self.run([self.nvcc] + argv, env, out, w.cwd_path())
        self.memo[k] = data
        return data

    def step(self, w, env, step_no, what):
        """Every comparison of one world; returns the list of failures."""
        bad = []
        src = w.spell(w.path("src/k.cu"))
        fl = w.flags()
        cwd = w.cwd_path()
        work = os.path.join(self.root, "work")
        os.makedirs(work, exist_ok=True)
        cache_env = dict(env, CUBINCACHE_DIR=os.path.join(self.root, "cache"),
                         CCACHE_DIR=os.path.join(self.root, "ccache"))
        gencode = []
        for a in w.archs:
            gencode += ["-gencode", "arch=compute_%s,code=[sm_%s,compute_%s]" % (a, a, a)]

        def compare(label, got, want, mask):
            self.stats["compares"] += 1
            if (masked(got) if mask else got) != (masked(want) if mask else want):
                bad.append("%s differs from nvcc's" % label)

        if self.a.peer == "ccache":
            argv = ["-c", src, "-o", work + "/obj.o"] + fl + gencode
            got = self.run([self.a.ccache, self.nvcc] + argv, cache_env, work + "/obj.o", cwd)
            want = self.reference(w, env, "obj", argv[:3] + [work + "/ref.o"] + argv[4:],
                                  work + "/ref.o")
            compare("ccache's object", got, want, True)
            return bad
        # the launcher, one -cubin (the whole-command path)
        a = self.a_rng.choice(w.archs)
        argv = ["-cubin", "-arch=sm_%s" % a, src, "-o", work + "/l.cubin"] + fl
        got = self.run([self.cbc, self.nvcc] + argv, cache_env, work + "/l.cubin", cwd)
        want = self.reference(w, env, "cubin" + a,
                              argv[:3] + ["-o", work + "/r.cubin"] + argv[5:],
                              work + "/r.cubin")
        compare("the launcher's sm_%s cubin" % a, got, want, False)
        # the launcher, -c: split into steps, each arch's device code cached
        if step_no % self.a.object_every == 0:
            argv = ["-c", src, "-o", work + "/obj.o"] + fl + gencode
            got = self.run([self.cbc, self.nvcc] + argv, cache_env, work + "/obj.o", cwd)
            want = self.reference(w, env, "obj", argv[:3] + [work + "/ref.o"] + argv[4:],
                                  work + "/ref.o")
            compare("the launcher's object", got, want, True)
        # build: one cubin per target
        out = os.path.join(self.root, "out")
        self.run([self.cbc, "build", "-q", "-a", ",".join(w.archs), "-o", out, "-n", "k", src,
                  "--"] + fl, cache_env, None, cwd)
        for t in w.archs:
            with open(os.path.join(out, "k.sm_%s.cubin" % t), "rb") as f:
                got = f.read()
            want = self.reference(w, env, "build" + t,
                                  ["-cubin", "-gencode", "arch=compute_%s,code=sm_%s" % (t, t),
                                   "-o", work + "/b.cubin", w.path("src/k.cu")] + fl,
                                  work + "/b.cubin")
            compare("build's sm_%s cubin" % t, got, want, False)
        return bad

    def fuzz(self, seed, steps):
        rng = random.Random(seed)
        self.a_rng = random.Random(seed ^ 0x5eed)
        w = World(os.path.join(self.root, "a", "proj"), rng)
        other = os.path.join(self.root, "b", "proj")
        shutil.copytree(w.root, other, symlinks=True)
        w.trees.append(other)
        failures = []
        time.sleep(1.1)  # the aged files' ctimes settle: stamps are trusted
        for i in range(1, steps + 1):
            if self.a.seconds and time.time() > self.deadline:
                break  # --seconds: the steps begun are finished and reported
            what = "start" if i == 1 else w.mutate()
            env = w.environ()
            try:
                bad = self.step(w, env, i, what)
            except RuntimeError as e:
                bad = ["a command failed: %s" % e]
            self.stats["steps"] += 1
            for b in bad:
                failures.append("seed %d step %d (%s): %s" % (seed, i, what, b))
                print("STALE seed %d step %d (%s): %s" % (seed, i, what, b), file=sys.stderr,
                      flush=True)  # at once: a run stopped from outside still says it
            if self.a.verbose:
                print("worker %d step %d: %s%s" % (self.worker, i, what,
                                                   "" if not bad else " -> " + "; ".join(bad)),
                      flush=True)
            if bad and self.a.stop:
                break
        return failures


def worker_main(args, wid, q):
    root = None
    try:
        root = tempfile.mkdtemp(prefix="cbc-fuzz-%d-" % wid, dir=args.tmp)
        r = Runner(args, root, wid)
        r.deadline = time.time() + args.seconds
        fails = r.fuzz(args.seed + wid, args.steps)
        q.put((wid, fails, r.stats, None))
    except BaseException as e:  # a setup error is reported, never a pass, no stale hit,
        q.put((wid, [], {}, "worker %d: %s" % (wid, e)))  # and never a wait for ever
    finally:
        if root and not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--steps", type=int, default=20, help="steps per worker")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--peer", choices=["cubincache", "ccache"], default="cubincache")
    ap.add_argument("--cubincache", default=os.environ.get("CUBINCACHE", "cubincache"))
    ap.add_argument("--nvcc", default=os.environ.get("NVCC_REAL", "/usr/local/cuda/bin/nvcc"))
    ap.add_argument("--ccache", default="ccache")
    ap.add_argument("--object-every", type=int, default=4,
                    help="compile an object through the launcher every N steps")
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--stop", action="store_true", help="stop a worker at its first failure")
    ap.add_argument("--seconds", type=float, default=0,
                    help="start no step after this long (a long run that ends with its summary)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    if a.peer == "ccache" and not shutil.which(a.ccache):
        print("fuzz.py: ccache not found ('%s')" % a.ccache, file=sys.stderr)
        return 2
    import multiprocessing as mp
    q = mp.Queue()
    t0 = time.time()
    procs = [mp.Process(target=worker_main, args=(a, i, q)) for i in range(a.workers)]
    for p in procs:
        p.start()
    results = [q.get() for _ in procs]
    for p in procs:
        p.join()
    fails = [f for _, fs, _, _ in results for f in fs]
    errors = [e for _, _, _, e in results if e]
    total = {k: sum(st.get(k, 0) for _, _, st, _ in results) for k in ("steps", "compares",
                                                                           "memo_hits")}
    secs = time.time() - t0
    summary = dict(total, peer=a.peer, seed=a.seed, workers=a.workers, seconds=round(secs, 1),
                   stale=len(fails))
    summary["errors"] = len(errors)
    for f in fails:
        print("STALE " + f)
    for e in errors:
        print("ERROR " + e)
    print(json.dumps(summary) if a.json else
          "fuzz.py: %(peer)s: %(steps)d steps, %(compares)d comparisons with nvcc, "
          "%(stale)d stale, %(seconds).1f s (seed %(seed)d, %(workers)d workers)" % summary)
    return 1 if fails else 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

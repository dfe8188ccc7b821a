#!/usr/bin/env python3
"""check_layers.py SOURCE_ROOT BUILD_DIR: the module edges of
docs/architecture.md, enforced two ways.

1. Includes: every `#include "x.h"` in src/<module>/ and tools/ names a
   header of the same module or of a module it may depend on (EDGES); the
   IG engine (src/ig) includes no header of libcubincache's but the public
   ones (<cubincache/*.h>) and kernels/ig_kernels.h.
2. Links: every cbc_ symbol a module's static library leaves undefined is
   defined by the module itself or one it may depend on; the IG library's
   are all functions libcubincache exports (its public API).
3. Files: inside each module, no circle of files: when a.c uses what b.c
   defines, b.c uses nothing of a.c's, directly or through others (the
   objects' global symbols, as nm lists them), so every module's files are
   layered too.

Exit 0 when every edge is allowed; 1 listing each one that is not, with
the file or symbol that makes it."""
import os
import re
import subprocess
import sys

# module -> the modules it may use (includes and symbols). Keep in step with
# the table in docs/architecture.md.
EDGES = {
    "common": set(),
    "cudadrv": {"common"},
    "binfmt": {"common"},
    "select": {"common", "binfmt"},
    "program": {"common", "binfmt", "select"},
    "manifest": {"common"},
    "loader": {"common", "cudadrv", "binfmt", "select", "manifest"},
    "key": {"common", "cudadrv", "manifest"},
    "remote": {"common"},
    "trace": {"common"},
    "store": {"common", "binfmt", "remote"},
    "cache": {"common", "binfmt", "key", "store", "trace"},
    "bundle": {"common", "cudadrv", "binfmt", "manifest", "key", "store", "trace", "cache"},
    "launch": {"common", "cudadrv", "binfmt", "manifest", "key", "store", "trace", "cache"},
    "check": {"common", "cudadrv", "binfmt", "select", "program", "manifest", "key", "store"},
    "lint": {"common"},
    "ig": {"public", "kernels"},
    # the commands
    "tools/common": {"common"},
    "tools/cubincache": {"tools/common", "common", "binfmt", "select", "program", "manifest",
                         "key", "store", "trace", "cache", "bundle", "launch", "check", "loader",
                         "cudadrv", "lint"},
    "tools/igrun": {"tools/common", "common", "public"},
}


def module_dirs(root):
    dirs = {m: os.path.join(root, "src", m) for m in os.listdir(os.path.join(root, "src"))
            if os.path.isdir(os.path.join(root, "src", m))}
    for t in ("common", "cubincache", "igrun"):
        dirs["tools/" + t] = os.path.join(root, "tools", t)
    dirs["kernels"] = os.path.join(root, "kernels")
    return dirs


def check_includes(root):
    dirs = module_dirs(root)
    # headers generated at build time, and the module that owns each: the
    # ONNX reader's protobuf-c code, from the onnx.proto Debian ships
    owner = {"onnx.pb-c.h": "ig"}  # header file name -> module
    for m, d in dirs.items():
        for f in os.listdir(d):
            if f.endswith(".h"):
                owner.setdefault(f, m)
    bad = []
    for m, d in sorted(dirs.items()):
        if m == "kernels":
            continue
        if m not in EDGES:
            bad.append("%s: a module docs/architecture.md does not know; add it to the table "
                       "and to EDGES in %s" % (d, __file__))
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            for n, line in enumerate(open(path, errors="replace"), 1):
                mm = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not mm:
                    continue
                name = os.path.basename(mm.group(1))
                target = owner.get(name)
                if target is None:
                    bad.append("%s:%d: includes \"%s\", which no module owns" % (path, n, name))
                elif target != m and target not in EDGES[m]:
                    bad.append("%s:%d: %s includes \"%s\" of %s, an edge docs/architecture.md "
                               "does not allow" % (path, n, m, name, target))
    return bad


def nm(args):
    return subprocess.run(["nm"] + args, check=True, capture_output=True, text=True).stdout


def symbols(lib):
    """(defined, undefined) cbc_ symbols of a static library."""
    defined, undefined = set(), set()
    for line in nm(["-g", lib]).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U" and parts[1].startswith("cbc_"):
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[2].startswith("cbc_") and parts[1] != "U":
            defined.add(parts[2])
    return defined, undefined


def check_links(build):
    libs = {}
    for m in EDGES:
        if m.startswith("tools/"):
            p = os.path.join(build, m, "libcbc_tool.a") if m == "tools/common" else None
        elif m == "ig":
            p = os.path.join(build, "src", "ig", "libcbc_ig.a")
        else:
            p = os.path.join(build, "src", "libcbc_%s.a" % m)
        if p and os.path.exists(p):
            libs[m] = p
    missing = [m for m in EDGES if not m.startswith("tools/") and m not in libs]
    if missing:
        return ["no static library found in %s for: %s" % (build, ", ".join(missing))]
    table = {m: symbols(p) for m, p in libs.items()}
    where = {}
    for m, (defined, _) in table.items():
        for s in defined:
            where.setdefault(s, m)
    public = set()
    for line in nm(["-D", "--defined-only", os.path.join(build, "libcubincache.so")]).splitlines():
        parts = line.split()
        if len(parts) == 3:
            public.add(parts[2])
    bad = []
    for m, (_, undefined) in sorted(table.items()):
        for s in sorted(undefined):
            if m == "ig":
                if s not in public and s not in table[m][0]:
                    bad.append("%s (src/ig) uses %s, which is not libcubincache's public API"
                               % (libs[m], s))
                continue
            d = where.get(s)
            if d and d != m and d not in EDGES[m]:
                bad.append("%s (%s) uses %s of %s, an edge docs/architecture.md does not allow"
                           % (libs[m], m, s, d))
    return bad


def file_circles(lib):
    """The circles (lists of object files) of a static library's objects."""
    defs, uses = {}, {}
    for line in nm(["-A", lib]).splitlines():
        m = re.match(r".*?:([^:]+\.o):\s*(?:[0-9a-f]+)?\s+([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        defs.setdefault(obj, set())
        uses.setdefault(obj, set())
        if kind == "U":
            uses[obj].add(sym)
        elif kind.isupper():
            defs[obj].add(sym)
    owner = {s: o for o, ss in defs.items() for s in ss}
    graph = {o: {owner[s] for s in uses[o] if s in owner and owner[s] != o} for o in defs}
    # Tarjan's strongly connected components, without recursion
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def check_files(build):
    bad = []
    libs = [os.path.join(build, "src", f) for f in sorted(os.listdir(os.path.join(build, "src")))
            if f.startswith("libcbc_") and f.endswith(".a")]
    libs.append(os.path.join(build, "src", "ig", "libcbc_ig.a"))
    for lib in libs:
        if not os.path.exists(lib):
            continue
        for comp in file_circles(lib):
            # "libcbc_store.a.p/store_maint.c.o" -> "maint.c"
            names = [re.sub(r"^[a-z]+_", "", os.path.basename(c)).replace(".c.o", ".c")
                     for c in comp]
            bad.append("%s: its files %s use each other in a circle: move what they share into "
                       "a file they all build on" % (lib, ", ".join(names)))
    return bad


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, build = sys.argv[1], sys.argv[2]
    bad = check_includes(root) + check_links(build) + check_files(build)
    for b in bad:
        print(b)
    if bad:
        return 1
    print("every include and link edge of %d modules is one docs/architecture.md allows, and "
          "no module's files form a circle" % len(EDGES))
    return 0


if __name__ == "__main__":
    sys.exit(main())

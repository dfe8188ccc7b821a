#!/usr/bin/env python3
"""clean_outputs.py BUILDDIR: every cubin, PTX, fatbin and bundle manifest
the project's own build wrote lies inside an output Meson declared (a file,
or a NAME.bundle / fixtures / corpus directory), so `ninja clean` removes
it: the advice the project gives users, followed by its own build.
Reads meson-info/intro-targets.json; walks BUILDDIR but Meson's own
directories. Exit 1 naming each stray file."""
import json
import os
import sys

GPU_SUFFIXES = (".cubin", ".ptx", ".fatbin", ".manifest.json")


def main(build):
    build = os.path.realpath(build)
    with open(os.path.join(build, "meson-info", "intro-targets.json")) as f:
        targets = json.load(f)
    declared = set()
    for t in targets:
        for name in t.get("filename", []):
            declared.add(os.path.realpath(name))
    stray = []
    for root, dirs, files in os.walk(build):
        dirs[:] = [d for d in dirs if not d.startswith("meson-") and not d.endswith(".p")]
        for name in files:
            if not name.endswith(GPU_SUFFIXES):
                continue
            path = os.path.realpath(os.path.join(root, name))
            p = path
            while p != build and p not in declared:
                p = os.path.dirname(p)
            if p == build:
                stray.append(os.path.relpath(path, build))
    for s in sorted(stray):
        print(f"{s}: written by the build outside every declared output; ninja clean leaves it "
              "(make the target's output a NAME.bundle directory, or declare the file)")
    return 1 if stray else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

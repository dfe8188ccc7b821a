#!/usr/bin/env python3
"""check_exports.py LIBRARY HEADER...: the dynamic symbols LIBRARY defines
(nm -D --defined-only) must be exactly the functions HEADER... mark CBC_API.
An internal function that leaks (a missing `static`, or a module compiled
without hidden visibility) fails it, and so does a public declaration
whose definition is missing or hidden. Exit 0 when they agree, 1 with both
differences listed."""
import re
import subprocess
import sys


def declared(headers):
    names = set()
    for h in headers:
        text = open(h).read()
        # CBC_API <return type> name(  -- the name is the last word before '('
        for m in re.finditer(r"^CBC_API\b[^(;]*?\b([A-Za-z_]\w*)\s*\(", text, re.M):
            names.add(m.group(1))
    return names


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in "TtWwDdBbRrVvi":
            names.add(parts[2].split("@")[0])
    # symbols the toolchain adds to every shared object
    return {n for n in names if not n.startswith("_")}


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    lib, headers = sys.argv[1], sys.argv[2:]
    want, have = declared(headers), exported(lib)
    if not want:
        print("no CBC_API declarations found in %s" % " ".join(headers), file=sys.stderr)
        return 1
    leaked, missing = sorted(have - want), sorted(want - have)
    for n in leaked:
        print("%s exports %s, which no public header declares (make it static or keep it "
              "hidden)" % (lib, n))
    for n in missing:
        print("%s does not export %s, which a public header declares CBC_API" % (lib, n))
    if leaked or missing:
        return 1
    print("%s exports exactly the %d functions of %s" % (lib, len(want),
                                                         ", ".join(h.split("/")[-1] for h in headers)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

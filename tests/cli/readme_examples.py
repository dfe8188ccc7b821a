#!/usr/bin/env python3
"""readme_examples.py: every example README.md marks as one (a line
`<!-- example -->` right before a ```sh block) runs as it is written, so
README and the suite cannot drift. The commands come from README itself:
each block runs in one bash, from a copy of the repository's examples/
and tests/launcher/ with `build` standing for this build directory (as
scripts/run.sh leaves it), with a cache of its own.

Per line, what README's comment says is checked:
  - the exit status is 0;
  - `# => TEXT`: TEXT is in what the line printed;
  - `# (GPU)`: the line needs a GPU; without one it must exit 4 (the
    loader's "no driver or GPU"), with one 0.
A block that runs cargo, cmake, meson or ninja where that tool is not
installed is skipped, saying so.
Meson passes SRCDIR, BUILDDIR, NVCC_REAL."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

SRC, BUILD = os.environ["SRCDIR"], os.environ["BUILDDIR"]
if os.environ.get("CBC_SANITIZED"):
    # README's examples are for a plain build: an uninstrumented cargo program
    # cannot load the instrumented library
    print("a sanitizer build: README's examples run in the plain build's suite")
    sys.exit(77)
readme = open(os.path.join(SRC, "README.md")).read().split("\n")


def plain(text):
    """Text safe inside a double-quoted bash string."""
    return re.sub(r'["`$\\]', "", text)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


blocks = []  # (line number, [logical lines])
i = 0
while i < len(readme):
    if readme[i].strip() == "<!-- example -->":
        if i + 1 >= len(readme) or readme[i + 1].strip() != "```sh":
            fail(f"README.md:{i + 1}: <!-- example --> is not followed by a ```sh block")
        start, body, i = i + 1, [], i + 2
        while i < len(readme) and readme[i].strip() != "```":
            body.append(readme[i])
            i += 1
        lines, cur = [], ""
        for b in body:
            cur += b
            if cur.endswith("\\"):
                cur = cur[:-1] + " "
                continue
            if cur.strip():
                lines.append(cur)
            cur = ""
        blocks.append((start + 1, lines))
    i += 1
if len(blocks) < 4:
    fail(f"README.md marks {len(blocks)} examples; the cargo, CMake, Meson and ccache ones are expected")

gpu = os.path.exists("/dev/nvidiactl")
tmp = tempfile.mkdtemp(prefix="cbc-readme.")
repo = os.path.join(tmp, "repo")
os.makedirs(os.path.join(repo, "tests"))
shutil.copytree(os.path.join(SRC, "examples"), os.path.join(repo, "examples"), symlinks=True,
                ignore=shutil.ignore_patterns("target", "build-*"))
shutil.copytree(os.path.join(SRC, "tests", "launcher"), os.path.join(repo, "tests", "launcher"))
os.symlink(BUILD, os.path.join(repo, "build"))
env = {k: v for k, v in os.environ.items()
       if not k.startswith(("CUBINCACHE", "CUDA_", "NVCC", "MAKEFLAGS", "MFLAGS", "CARGO_", "PKG_CONFIG"))}
env.update(CUBINCACHE_DIR=os.path.join(tmp, "cache"), NO_COLOR="1")  # HOME stays: rustup's
# the user's own tools: cargo where rustup puts it
env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":" + os.path.expanduser("~/.cargo/bin")

try:
    for start, lines in blocks:
        tools = [t for t in ("cargo", "cmake", "meson", "ninja")
                 if any(re.match(rf"(\S+=\S+\s+)*{t}\b", l) for l in lines)]
        missing = [t for t in tools if not shutil.which(t, path=env["PATH"])]
        if missing:  # the reader's own tools, which README does not install
            print(f"# README.md:{start}: skipped, no {', '.join(missing)} here")
            continue
        script = ["cd " + shlex.quote(repo), "_fail() { echo \"FAIL: README.md:$1: $2\" >&2; exit 1; }"]
        for n, line in enumerate(lines):
            m = re.search(r"#\s*=>\s*(.*)$", line)
            want = m.group(1).strip() if m else ""
            needs_gpu = "# (GPU)" in line
            out = os.path.join(tmp, f"out.{start}.{n}")
            expect = 0 if (gpu or not needs_gpu) else 4
            script += [
                f"{{ {line}\n}} > '{out}' 2>&1; rc=$?",
                f"[ $rc = {expect} ] || _fail {start} \"'{plain(line)}' exited $rc, "
                f"expected {expect}: $(tail -40 '{out}')\"",
            ]
            if want and not (needs_gpu and not gpu):
                script.append(f"grep -qF -- {shlex.quote(want)} '{out}' || "
                              f"_fail {start} \"'{plain(want)}' is not in what "
                              f"'{plain(line.split('#')[0].strip())}' "
                              f"printed: $(tail -40 '{out}')\"")
        print(f"# README.md:{start}: {len(lines)} commands")
        p = subprocess.run(["bash", "-c", "\n".join(script)], env=env)
        if p.returncode != 0:
            sys.exit(1)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("ok")

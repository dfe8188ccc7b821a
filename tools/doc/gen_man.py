#!/usr/bin/env python3
"""gen_man.py CUBINCACHE OUT: cubincache.1, made at build time from the
command's own help texts (`cubincache --help`, `cubincache CMD --help`)
and its settings table (`cubincache config --json`), so the manual page
says what the program says. Run with an empty cache directory of its own,
so the values shown are the defaults, whoever builds it."""
import json
import os
import re
import subprocess
import sys
import tempfile

exe, out = sys.argv[1], sys.argv[2]
env = {k: v for k, v in os.environ.items() if not k.startswith("CUBINCACHE")}
# a sanitizer build runs here too: its leak report is the test suite's business
env["ASAN_OPTIONS"] = "detect_leaks=0"


def run(*args):
    p = subprocess.run([exe, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        sys.exit(f"gen_man: '{' '.join(args)}' exited {p.returncode}: {p.stdout.decode()}")
    return p.stdout.decode()


def roff(text):
    """Text as roff: backslashes and leading dots or quotes escaped."""
    lines = []
    for line in text.replace("\\", "\\e").split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line.replace("-", "\\-"))
    return "\n".join(lines)


with tempfile.TemporaryDirectory() as tmp:
    env["CUBINCACHE_DIR"] = os.path.join(tmp, "cache")
    top = run("--help")
    version = run("--version").split()[-1]
    commands = re.findall(r"^  ([a-z]+) +(.*)$", top.split("commands:")[1].split("\n\n")[0], re.M)
    settings = [json.loads(l) for l in run("config", "--json").splitlines() if l.strip()]
    sections = [(name, summary, run(name, "--help")) for name, summary in commands
                if name != "nvcc"]
    zero = run("--zero-stats", "--help")

m = [f'.TH CUBINCACHE 1 "" "cubincache {version}" "User Commands"',
     ".SH NAME", "cubincache \\- build\\-system hygiene and a multi\\-arch cubin cache for CUDA",
     ".SH SYNOPSIS",
     ".B cubincache\n.I COMMAND\n[\\fIoptions\\fR]\n.br",
     ".B cubincache nvcc\n.I NVCC_ARGS...\n.br",
     ".B cubincache\n\\-s | \\-z | \\-p | \\-V",
     ".SH DESCRIPTION",
     ".nf", roff(top.rstrip()), ".fi",
     ".SH COMMANDS"]
for name, summary, text in sections:
    m += [f".SS {name}", roff(summary), ".PP", ".nf", roff(text.rstrip()), ".fi"]
m += [".SS \\-z, \\-\\-zero\\-stats", ".nf", roff(zero.rstrip()), ".fi",
      ".SS nvcc (the compiler launcher)",
      roff("cubincache nvcc ARGS... (or cubincache /path/to/nvcc ARGS...) runs an nvcc "
           "command through the cache; every argument is nvcc's. Use it as CMake's "
           "CMAKE_CUDA_COMPILER_LAUNCHER (the value is just cubincache), as Meson's cuda "
           "compiler ['cubincache', 'nvcc'], or as Make's NVCC = cubincache nvcc."),
      ".SH ENVIRONMENT AND SETTINGS",
      roff("Each setting comes from its environment variable, else from the cache's "
           "v1/config (key = value), else its default; cubincache config shows where each "
           "value in force came from.")]
for s in settings:
    head = s.get("env") or s["name"]
    where = [f"config key {s['config_key']}"] if s.get("config_key") else []
    where.append(f"default {s['default']!r}" if s["default"] else "no default")
    m += [".TP", f".B {roff(head)}", roff(f"{s['help']} ({s['name']}; " + ", ".join(where) + ")")]
m += [".SH EXIT STATUS",
      roff("0 success; 1 a negative verdict (compile error, code for another target, a check "
           "problem); 2 usage error or bad input; 3 igrun --tolerance exceeded; 4 cannot be "
           "done here (nvcc missing, no space left, no driver or GPU); 5 out of memory."),
      ".SH SEE ALSO", "ccache(1), make(1), ninja(1), nvcc(1)", ""]
with open(out, "w") as f:
    f.write("\n".join(m))

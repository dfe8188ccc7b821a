#!/usr/bin/env bash
# bench_lint.sh: `cubincache lint` of a tree of 10,000 files holding 500
# cargo crates (each a build.rs of about 40 lines, from 10 shapes: helpers,
# consts, loops, branches, modules; half with findings), 100 CMakeLists.txt
# and 100 meson.build, the rest Rust and CUDA sources, in nested
# directories. Target: under 1 s. The peer: `grep -rl` for the reads in the
# same tree (every file opened and scanned for text), the floor of any tool
# that finds them.
. "$(dirname "$0")/bench_lib.sh"
python3 - "$B/tree" <<'PY'
import os, sys
root = sys.argv[1]
shapes = [
    # (build.rs body, clean?)
    ('''use std::env;
fn main() {
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    let cap = env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "90".into());
    let out = env::var("OUT_DIR").unwrap();
    println!("cargo:rustc-env=SM={}{}", cap, out);
}
''', True),
    ('''use std::env;
fn main() {
    let cap = env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "89".into());
    println!("cargo:rustc-env=SM={}", cap);
}
''', False),
    ('''fn tracked(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={}", name);
    std::env::var(name).ok()
}
fn untracked(name: &str) -> Option<String> {
    std::env::var(name).ok()
}
fn main() {
    let a = tracked("CUDA_COMPUTE_CAP");
    let b = untracked("NVCC_FLAGS");
    println!("cargo:rustc-env=X={:?}{:?}", a, b);
}
''', False),
    ('''const CAP: &str = "CUDA_COMPUTE_CAP";
const TRACKED: [&str; 3] = ["NVCC", "NVCC_CCBIN", "CUDA_HOME"];
fn main() {
    for v in TRACKED {
        println!("cargo:rerun-if-env-changed={v}");
    }
    println!("cargo:rerun-if-env-changed={CAP}");
    let cap = std::env::var(CAP);
    let home = std::env::var("CUDA_HOME");
    println!("cargo:rustc-env=X={:?}{:?}", cap.ok(), home.ok());
}
''', True),
    ('''use std::env;
/* a comment with env::var("IN_COMMENT") */
fn main() {
    let s = r#"env::var("IN_RAW")"#;
    let fast = env::args().count() > 3;
    if fast {
        println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    }
    let cap = env::var("CUDA_COMPUTE_CAP");
    match cap.as_deref() {
        Ok("90") => println!("cargo:rerun-if-env-changed=HOPPER"),
        Ok(_) => {
            let _ = env::var("HOPPER");
        }
        Err(_) => {}
    }
    println!("{}", s);
}
''', False),
    ('''use std::process::Command;
fn main() {
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    println!("cargo:rerun-if-changed=kernels/k.cu");
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "90".into());
    let out = std::env::var("OUT_DIR").unwrap();
    let _ = Command::new("nvcc")
        .args(["-cubin", "-arch", &format!("sm_{}", cap), "-o"])
        .arg(format!("{}/k.cubin", out))
        .arg("kernels/k.cu")
        .status();
}
''', True),
]
n_files = 0
def write(path, text):
    global n_files
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    n_files += 1
filler = "// " + "x" * 70 + "\n"
for i in range(500):
    crate = os.path.join(root, "group%02d" % (i // 25), "crate%03d" % i)
    body, _ = shapes[i % len(shapes)]
    write(os.path.join(crate, "Cargo.toml"), '[package]\nname = "c%d"\nversion = "0.1.0"\n' % i)
    write(os.path.join(crate, "build.rs"), "// crate %d\n" % i + filler * 20 + body)
    for k in range(15):
        write(os.path.join(crate, "src", "m%02d.rs" % k), "pub fn f%d() -> u32 { %d }\n" % (k, k) + filler * 30)
    write(os.path.join(crate, "kernels", "k.cu"), "extern \"C\" __global__ void k() {}\n" + filler * 30)
for i in range(100):
    d = os.path.join(root, "cmake", "p%03d" % i)
    write(os.path.join(d, "CMakeLists.txt"),
          "cmake_minimum_required(VERSION 3.24)\nproject(p%d LANGUAGES CXX CUDA)\n" % i +
          ("set(CMAKE_CUDA_ARCHITECTURES $ENV{CUDA_COMPUTE_CAP})\n" if i % 2 else
           "set(CMAKE_CUDA_ARCHITECTURES native CACHE STRING \"archs\")\n") +
          "# " + "y" * 70 + "\n" * 20 + "add_executable(p p.cu)\n")
    d = os.path.join(root, "meson", "p%03d" % i)
    write(os.path.join(d, "meson.build"),
          "project('p%d', 'cuda')\n" % i +
          ("cap = run_command('sh', '-c', 'echo $CUDA_COMPUTE_CAP', check: true).stdout().strip()\n"
           "executable('p', 'p.cu', cuda_args: ['-arch=sm_' + cap])\n" if i % 2 else
           "executable('p', 'p.cu', cuda_args: ['-arch=sm_' + get_option('arch')])\n"))
i = 0
while n_files < 10000:
    write(os.path.join(root, "docs", "d%02d" % (i // 100), "page%04d.md" % i), "# page\n" + filler * 10)
    i += 1
PY
[ "$(find "$B/tree" -type f | wc -l)" = 10000 ] || { echo "the tree is not 10000 files" >&2; exit 1; }
rc=0
"$CUBINCACHE" lint -q "$B/tree" > "$B/lint.out" || rc=$?
[ $rc = 1 ] || { echo "lint of the tree exited $rc" >&2; exit 1; }
n=$(grep -c '^[^ ].*: \[' "$B/lint.out" || true)
[ "$n" = 433 ] || { echo "lint found $n findings, not 433 (1 in 2 CMake and Meson files, 4 per 6 crates)" >&2; exit 1; }
HF_IGNORE_EXIT=1 measure lint_10000_files_500_build_scripts 20 3 "$CUBINCACHE" lint -q "$B/tree"
measure grep_10000_files_env_reads 20 3 grep -rl -e "env::var" -e "ENV{" -e run_command "$B/tree"

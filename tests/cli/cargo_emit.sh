#!/usr/bin/env bash
# cargo_emit.sh: a cargo build script that calls `cubincache build --emit
# cargo` cannot go stale: cargo reruns it when CUDA_COMPUTE_CAP changes (the
# incident of ../shared/reference/origin.md: an sm_89 cubin kept for an
# H100), when a header of the kernel changes, and not otherwise. A real
# cargo build, offline, of a crate with no dependencies; skipped (77) only
# when cargo is not installed.
. "$(dirname "$0")/lib.sh"
PATH="$PATH:$HOME/.cargo/bin"
command -v cargo > /dev/null || { echo "cargo is not installed" >&2; exit 77; }
mkdir -p "$T/crate/src" "$T/crate/kernels"
cd "$T/crate"
cat > Cargo.toml <<'TOML'
[package]
name = "emitdemo"
version = "0.1.0"
edition = "2021"
build = "build.rs"
TOML
echo 'fn main() {}' > src/main.rs
printf '#include "kh.cuh"\nextern "C" __global__ void k(float *x) { x[0] = sq(x[1]); }\n' > kernels/k.cu
printf '__device__ inline float sq(float v) { return v * v; }\n' > kernels/kh.cuh
cat > build.rs <<'RS'
// Builds the kernels through cubincache and hands cargo what they depend on.
use std::io::Write;
fn main() {
    println!("cargo:rerun-if-env-changed=CBC_BIN");
    println!("cargo:rerun-if-env-changed=CBC_RUNS_LOG");
    let cbc = std::env::var("CBC_BIN").expect("CBC_BIN");
    let out = std::env::var("OUT_DIR").unwrap();
    let r = std::process::Command::new(cbc)
        .args(["build", "-q", "--emit", "cargo", "-o"])
        .arg(format!("{}/k.bundle", out))
        .arg("kernels/k.cu")
        .output()
        .expect("run cubincache");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    std::io::stdout().write_all(&r.stdout).unwrap();
    let log = std::env::var("CBC_RUNS_LOG").unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).create(true).open(log).unwrap();
    writeln!(f, "{}", out).unwrap();
}
RS
export CBC_BIN="$CUBINCACHE" CBC_RUNS_LOG="$T/runs.log" CARGO_TARGET_DIR="$T/target"
runs() { wc -l < "$T/runs.log" 2>/dev/null | tr -d ' ' || echo 0; }
cb() { CUDA_COMPUTE_CAP=$1 cargo build --offline -q > "$T/cargo.log" 2>&1 || fail "cargo build: $(cat "$T/cargo.log")"; }
bundle() { sed -n 1p "$T/runs.log" | sed 's|$|/k.bundle|'; }

note "CUDA_COMPUTE_CAP=89 cargo build: the build script runs, the bundle is sm_89"
cb 89
[ "$(runs)" = 1 ] || fail "the build script ran $(runs) times"
[ "$(sm_of "$(bundle)/k.sm_89.cubin")" = 89 ] || fail "no sm_89 cubin: $(ls "$(bundle)")"
note "again, nothing changed: cargo does not rerun it"
cb 89
[ "$(runs)" = 1 ] || fail "an unchanged build reran the build script"
note "CUDA_COMPUTE_CAP=90: cargo reruns it (the incident's fix, by construction), sm_90 only"
cb 90
[ "$(runs)" = 2 ] || fail "a changed CUDA_COMPUTE_CAP did not rerun the build script"
[ "$(sm_of "$(bundle)/k.sm_90.cubin")" = 90 ] && [ ! -e "$(bundle)/k.sm_89.cubin" ] ||
    fail "after CUDA_COMPUTE_CAP=90: $(ls "$(bundle)")"
note "a header of the kernel edited: cargo reruns it"
sleep 1.1 # cargo compares mtimes at one-second granularity on some file systems
printf '__device__ inline float sq(float v) { return v * v * 1.0f; }\n' > kernels/kh.cuh
cb 90
[ "$(runs)" = 3 ] || fail "a header edit did not rerun the build script"
expect_out 0 "OK" "$CUBINCACHE" check "$(bundle)"
echo ok

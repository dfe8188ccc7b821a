// A helper that declares its parameter makes its callers clean; one that
// does not makes each call site a finding.
use std::env;
fn tracked(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={}", name);
    env::var(name).ok()
}
fn untracked(name: &str) -> Option<String> {
    env::var(name).ok()
}
fn main() {
    let a = tracked("CUDA_COMPUTE_CAP");
    let b = untracked("NVCC_FLAGS");
    let c = untracked("CUDA_HOME");
    let d = tracked("CUDA_PATH");
    println!("cargo:rustc-env=X={:?}{:?}{:?}{:?}", a, b, c, d);
}

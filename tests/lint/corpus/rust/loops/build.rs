// A for loop over a literal list runs: its declarations count after it.
// One over something unknown may not run.
use std::env;
fn main() {
    for name in ["CUDA_COMPUTE_CAP", "NVCC"] {
        println!("cargo:rerun-if-env-changed={}", name);
    }
    let _ = env::var("NVCC");
    let extra: Vec<String> = env::args().collect();
    for name in &extra {
        println!("cargo:rerun-if-env-changed={}", name);
    }
    while extra.is_empty() {
        println!("cargo:rerun-if-env-changed=IN_WHILE");
        break;
    }
    let _ = env::var("IN_WHILE");
    for name in ["A_ONE", "A_TWO"] {
        let _ = env::var(name);
    }
}

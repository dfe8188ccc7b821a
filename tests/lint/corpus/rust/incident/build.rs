// The incident: the arch comes from CUDA_COMPUTE_CAP, never declared.
use std::env;
fn main() {
    let cap = env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "89".to_string());
    println!("cargo:rustc-env=SM={}", cap);
}

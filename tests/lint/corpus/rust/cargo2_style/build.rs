// Uses the cargo:: form: a fix must keep it.
fn main() {
    println!("cargo::rerun-if-env-changed=NVCC");
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_default();
    println!("cargo::rustc-env=X={}{}", nvcc, cap);
}

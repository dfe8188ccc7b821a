// Clean: declared before the read.
fn main() {
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_default();
    println!("cargo:rustc-env=SM={}", cap);
}

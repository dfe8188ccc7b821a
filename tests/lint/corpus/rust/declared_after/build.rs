// The read comes first: the later declaration does not cover it.
fn main() {
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_default();
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    println!("cargo:rustc-env=SM={}", cap);
}

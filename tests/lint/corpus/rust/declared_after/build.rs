// The read comes first and the declaration after it: cargo reads the
// directives from the whole output of a script that finishes, so this is
// declared (the rule the lint had before said otherwise).
fn main() {
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_default();
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    println!("cargo:rustc-env=SM={}", cap);
}

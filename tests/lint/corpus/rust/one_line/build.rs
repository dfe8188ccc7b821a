// Statements that do not start their line: the fix goes inline.
fn main() { let cap = std::env::var("CUDA_COMPUTE_CAP"); println!("cargo:rustc-env=X={:?}", cap.ok()); }

// Modelled on EricLBuehler/mistral.rs 1cafa192e^, mistralrs-paged-attn/
// build.rs: bindgen_cuda's default kernels (src/**/*.cu) go to build_lib(),
// which declares none of them, and the script declares some by hand. The
// kernel it forgot does not rebuild when edited. CUDA_COMPUTE_CAP is read
// before Builder::default(), which declares it: fine.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/copy.cu");
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_default();
    let builder = bindgen_cuda::Builder::default().arg("-O3");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    builder.build_lib(out.join("libkernels.a"));
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-env=CAP={cap}");
}

// Modelled on EricLBuehler/mistral.rs 9e922623f, mistralrs-core/build.rs:
// CUDA_PATH is declared only in a function called under
// #[cfg(feature = "cudnn")], but read (by the toolkit search) on every
// build: without the feature nothing declares it.
fn cudnn_link_search() {
    println!("cargo:rerun-if-env-changed=CUDA_PATH");
    println!("cargo:rerun-if-env-changed=CUDNN_LIB_DIR");
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "cudnn")]
    cudnn_link_search();
    let root = std::env::var("CUDA_PATH").unwrap_or_else(|_| "/usr/local/cuda".into());
    println!("cargo:rustc-link-search={root}/lib64");
}

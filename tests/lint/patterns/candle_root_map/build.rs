// Modelled on huggingface/candle 75629981b, candle-kernels/build.rs: the
// CUDA root is the first of four variables that names a directory with
// include/cuda.h, read through `.map(std::env::var)` and declared nowhere.
// The lint used to miss the iterator form.
use std::path::PathBuf;

fn include_dir() -> PathBuf {
    let names = ["CUDA_PATH", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR", "CUDNN_LIB"];
    let from_env = names
        .into_iter()
        .map(std::env::var)
        .filter_map(Result::ok)
        .map(PathBuf::from);
    let fallback = ["/usr/local/cuda", "/opt/cuda"].into_iter().map(PathBuf::from);
    from_env
        .chain(fallback)
        .find(|p| p.join("include").join("cuda.h").is_file())
        .unwrap_or_else(|| PathBuf::from("/usr/local/cuda"))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=KERNEL_INCLUDE={}", include_dir().join("include").display());
}

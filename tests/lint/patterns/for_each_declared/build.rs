// Modelled on coreylowman/cudarc 7f144ea^, build.rs: three roots declared
// one by one, the fourth of the list they are read from forgotten
// (CUDNN_LIB), which picks a library search path.
const ENVS: [&str; 4] = ["CUDA_PATH", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR", "CUDNN_LIB"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CUDA_ROOT");
    println!("cargo:rerun-if-env-changed=CUDA_PATH");
    println!("cargo:rerun-if-env-changed=CUDA_TOOLKIT_ROOT_DIR");
    let roots = ENVS.iter().map(std::env::var).filter_map(Result::ok).collect::<Vec<_>>();
    for r in roots {
        println!("cargo:rustc-link-search=native={r}/lib64");
    }
}

// Modelled on coreylowman/cudarc 8995648, build.rs: CONDA_PREFIX only
// decides whether a warning is printed; what is built does not depend on
// it, so its read is no finding. The roots are declared with for_each over
// the same list they are read from.
const ROOTS: [&str; 3] = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    ROOTS.iter().for_each(|v| println!("cargo:rerun-if-env-changed={v}"));
    let found: Vec<String> = ROOTS.iter().map(std::env::var).filter_map(Result::ok).collect();
    if found.is_empty() && std::env::var("CONDA_PREFIX").is_ok() {
        println!("cargo:warning=CONDA_PREFIX is set but no CUDA root: linking the system's");
    }
    for root in found {
        println!("cargo:rustc-link-search=native={root}/lib64");
    }
}

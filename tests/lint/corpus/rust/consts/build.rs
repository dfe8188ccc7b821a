// Names through consts, statics and let bindings.
const CAP: &str = "CUDA_COMPUTE_CAP";
static ARCH_LIST: &str = "CUDA_ARCH_LIST";
const TRACKED: [&str; 2] = ["NVCC", "NVCC_CCBIN"];
fn main() {
    for v in TRACKED {
        println!("cargo:rerun-if-env-changed={v}");
    }
    let _ = std::env::var("NVCC_CCBIN");
    println!("cargo:rerun-if-env-changed={CAP}");
    let cap = std::env::var(CAP);
    let list = std::env::var(ARCH_LIST);
    let key = "CUDA_TOOLKIT_ROOT";
    let root = std::env::var_os(key);
    println!("cargo:rustc-env=X={:?}{:?}{:?}", cap.ok(), list.ok(), root);
}

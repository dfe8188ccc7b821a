// Modelled on huggingface/candle 2a13b0f3f, candle-kernels/build.rs, with
// the kernels compiled by nvcc itself instead of cudaforge's builder:
// cudaforge::detect_compute_cap() reads CUDA_COMPUTE_CAP inside the
// dependency and declares nothing, and the arch it returns picks nvcc's
// -arch and -DNO_BF16_KERNEL. Nothing of the script declares it: the
// incident, one crate away.
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/moe.cu");
    let cap = cudaforge::detect_compute_cap().map(|a| a.base()).unwrap_or(80);
    let out = std::env::var("OUT_DIR").unwrap();
    let mut nvcc = Command::new("nvcc");
    nvcc.arg(format!("-arch=sm_{cap}")).args(["-c", "src/moe.cu", "-o"]).arg(format!("{out}/moe.o"));
    if cap < 80 {
        nvcc.arg("-DNO_BF16_KERNEL");
    }
    assert!(nvcc.status().unwrap().success());
}

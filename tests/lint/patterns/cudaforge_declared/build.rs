// Modelled on huggingface/candle 2a13b0f3f, candle-kernels/build.rs as it
// is: build_ptx() runs first and prints rerun-if-env-changed=CUDA_COMPUTE_CAP
// (cudaforge src/builder.rs), so the detect_compute_cap() after it is
// declared. What cudaforge reads to find nvcc and never declares
// (CUDA_HOME, CUDA_PATH) is a finding, and so is the header the kernels
// include that nothing declares.
use cudaforge::{KernelBuilder, Result};

fn main() -> Result<()> {
    println!("cargo::rerun-if-changed=build.rs");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let ptx = KernelBuilder::new().source_dir("src").exclude(&["moe_*.cu"]).build_ptx()?;
    ptx.write(out.join("ptx.rs"))?;
    let mut moe = KernelBuilder::default().source_files(vec!["src/moe_gemm.cu"]);
    let cap = cudaforge::detect_compute_cap().map(|a| a.base()).unwrap_or(80);
    if cap < 80 {
        moe = moe.arg("-DNO_BF16_KERNEL");
    }
    moe.build_lib(out.join("libmoe.a"))?;
    Ok(())
}

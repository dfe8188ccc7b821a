// Modelled on huggingface/candle f041b8717, candle-flash-attn/build.rs: the
// kernels and a list of headers are declared by hand; a header the kernels
// include is missing from the list, so editing it rebuilds nothing (candle
// fixed this by declaring every header and hashing them). build_lib() of
// bindgen_cuda also reads NVCC_CCBIN without declaring it.
const KERNELS: [&str; 1] = ["kernels/flash_fwd.cu"];
const HEADERS: [&str; 1] = ["kernels/flash.h"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for k in KERNELS.iter() {
        println!("cargo:rerun-if-changed={k}");
    }
    for h in HEADERS.iter() {
        println!("cargo:rerun-if-changed={h}");
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let kernels: Vec<_> = KERNELS.iter().collect();
    let builder = bindgen_cuda::Builder::default().kernel_paths(kernels).arg("-O3");
    builder.build_lib(out.join("libflash.a"));
}

// Modelled on huggingface/candle 75629981b, candle-kernels/build.rs: the
// host compiler is read first and declared on the next line. Cargo reads
// the directives from the whole output of a script that finishes, so this
// is declared; the lint once called it a finding.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let ccbin = std::env::var("CANDLE_NVCC_CCBIN");
    println!("cargo:rerun-if-env-changed=CANDLE_NVCC_CCBIN");
    if let Ok(path) = ccbin {
        println!("cargo:rustc-env=CCBIN={path}");
    }
}

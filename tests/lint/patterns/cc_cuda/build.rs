// Modelled on rust-lang/cc-rs a91e05e, dev-tools/cc-test/build.rs: the cc
// crate in CUDA mode declares the variables it reads (rerun-if-env-changed=
// CC, NVCC, ...), which ends cargo's scan of the package, and declares none
// of the files it compiles: the kernel is not rebuilt when edited. NVCC is
// read by the script before and declared by cc only when the CUDA build
// runs.
use std::env;

fn main() {
    cc::Build::new().file("src/host.c").compile("host");
    let nvcc = env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    if std::path::Path::new(&nvcc).exists() {
        cc::Build::new().cuda(true).file("src/kernel.cu").compile("kernel");
    }
}

// declare() returns early before its declaration on some runs, so the
// read in main is not covered on that path.
fn declare(skip: bool) {
    if skip {
        return;
    }
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
}
fn main() {
    declare(std::env::args().count() > 5);
    let cap = std::env::var("CUDA_COMPUTE_CAP");
    println!("cargo:rustc-env=SM={:?}", cap.ok());
}

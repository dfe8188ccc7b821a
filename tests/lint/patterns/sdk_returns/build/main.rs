// Modelled on Rust-GPU/Rust-CUDA ac2674f, crates/cust_raw/build/main.rs and
// cuda_sdk.rs: the script's own SDK type reads the roots with filter_map
// and declares the list its method returns; the lint follows Sdk::new()
// (not every new() of the script) and the names related_envs() returns.
// A read the list forgets (cudnn-sys's CUDNN_INCLUDE_DIR) is a finding.
mod sdk;

fn main() {
    let s = sdk::Sdk::new();
    println!("cargo::rerun-if-changed=build");
    for e in s.related_envs() {
        println!("cargo::rerun-if-env-changed={e}");
    }
    println!("cargo::metadata=root={}", s.root.display());
    let cudnn = std::env::var_os("CUDNN_INCLUDE_DIR");
    println!("cargo::metadata=cudnn={:?}", cudnn);
}

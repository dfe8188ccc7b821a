// Variables cargo sets for build scripts need no declaration.
use std::env;
fn main() {
    let out = env::var("OUT_DIR").unwrap();
    let target = env::var("TARGET").unwrap();
    let feat = env::var_os("CARGO_FEATURE_CUDA").is_some();
    let dep = env::var("DEP_Z_INCLUDE").ok();
    let prof = env::var("PROFILE").unwrap();
    let host = env::var("HOST").unwrap();
    println!("cargo:rustc-env=X={}{}{}{:?}{}{}", out, target, feat, dep, prof, host);
}

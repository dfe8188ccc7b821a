// var() imported from std::env is a read; a method named var is not.
use std::env::{var, var_os};
struct Config;
impl Config {
    fn var(&self, _n: &str) -> Option<String> {
        None
    }
}
fn main() {
    let c = Config;
    let _ = c.var("NOT_ENV");
    let cap = var("CUDA_COMPUTE_CAP");
    let home = var_os("CUDA_HOME");
    println!("cargo:rustc-env=X={:?}{:?}", cap.ok(), home);
}

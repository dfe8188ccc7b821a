// Reads inside closures and struct literals are reads.
struct Cfg {
    arch: Option<String>,
}
fn main() {
    let get = |n: &str| std::env::var(n).ok();
    let cfg = Cfg { arch: std::env::var("CUDA_ARCH_OVERRIDE").ok() };
    let other = Some(1).map(|_| std::env::var("IN_CLOSURE"));
    println!("cargo:rustc-env=X={:?}{:?}{:?}", cfg.arch, other, get("UNRESOLVED"));
}

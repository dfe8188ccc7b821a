// Kernels built by cubincache --emit cargo: it declares the sources and
// the variables itself; the script's own reads are declared.
use std::io::Write;
fn main() {
    println!("cargo:rerun-if-env-changed=CUBINCACHE");
    let cbc = std::env::var("CUBINCACHE").unwrap_or_else(|_| "cubincache".into());
    let out = std::env::var("OUT_DIR").unwrap();
    let r = std::process::Command::new(cbc)
        .args(["build", "--emit", "cargo", "-o"])
        .arg(format!("{}/k.bundle", out))
        .arg("kernels/k.cu")
        .output()
        .unwrap();
    std::io::stdout().write_all(&r.stdout).unwrap();
}

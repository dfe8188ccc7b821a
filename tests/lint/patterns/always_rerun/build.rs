// Modelled on EricLBuehler/mistral.rs 9e922623f, mistralrs-core/build.rs:
// the script prints rerun-if-changed=.git/HEAD from the crate's directory,
// where no .git is (it is the repository's). Cargo reruns a script whose
// declared path does not exist at every build, so the read below cannot go
// stale: a note says so, no finding.
fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=build.rs");
    let home = std::env::var("CUDA_HOME").unwrap_or_default();
    println!("cargo:rustc-env=TOOLKIT={home}");
}

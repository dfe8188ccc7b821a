// The reads may live in a module of the build script.
mod detect;
fn main() {
    let cap = detect::compute_cap();
    println!("cargo:rustc-env=SM={}", cap);
}

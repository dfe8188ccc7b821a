// The cmake crate (rust-lang/cmake-rs 511160f, src/lib.rs) configures a CUDA
// project at every run of the script and asks cc for the compilers, which
// prints rerun-if-env-changed lines; CMake reads CUDAARCHS, CUDAFLAGS,
// CUDACXX and CUDAHOSTCXX from the environment, and nothing declares them
// nor the project's directory. The shape of the crate's README example.
fn main() {
    let dst = cmake::Config::new("kernels").define("BUILD_TESTING", "OFF").build();
    println!("cargo:rustc-link-search=native={}/lib", dst.display());
    println!("cargo:rustc-link-lib=static=kernels");
}

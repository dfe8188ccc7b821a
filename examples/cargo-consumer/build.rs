//! build.rs: builds kernels/saxpy.cu for this machine's SM targets with
//! `cubincache build --emit cargo`, embeds the cubins in the program with
//! `cubincache embed`, and links libcubincache (found with pkg-config).
//!
//! Hygiene by construction: every variable this script reads is declared
//! to cargo before it is read, and `--emit cargo` prints a rerun-if line for
//! the kernel, each header it includes and every variable the cache key or
//! the arch choice reads (CUDA_COMPUTE_CAP, NVCC, NVCC_PREPEND_FLAGS, ...),
//! so `CUDA_COMPUTE_CAP=90 cargo build` after an sm_89 build reruns it.
//! `cubincache lint` finds nothing here.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{}: cannot run it: {} (is it installed and on PATH?)", what, e));
    if !out.status.success() {
        panic!("{} failed:\n{}", what, String::from_utf8_lossy(&out.stderr));
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn main() {
    for var in ["CUBINCACHE", "CC", "PKG_CONFIG_PATH"] {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    let cubincache = env::var("CUBINCACHE").unwrap_or_else(|_| "cubincache".to_string());
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));

    // the kernels, one cubin per SM target, through the cache; its
    // rerun-if lines go straight to cargo
    let bundle = out.join("saxpy.bundle");
    let directives = run(
        Command::new(&cubincache)
            .args(["build", "-q", "--emit", "cargo", "-o"])
            .arg(&bundle)
            .arg("kernels/saxpy.cu"),
        "cubincache build",
    );
    print!("{}", directives);

    // the bundle as C, compiled into a static library the program links
    let c_file = out.join("saxpy_bundle.c");
    run(
        Command::new(&cubincache)
            .args(["embed", "-s", "cbc_bundle_saxpy", "-o"])
            .arg(&c_file)
            .arg(bundle.join("saxpy.manifest.json")),
        "cubincache embed",
    );
    let cflags = run(Command::new("pkg-config").args(["--cflags", "cubincache"]), "pkg-config --cflags cubincache");
    let obj = out.join("saxpy_bundle.o");
    run(
        Command::new(&cc)
            .args(["-c", "-fPIC", "-O2"])
            .args(cflags.split_whitespace())
            .arg(&c_file)
            .arg("-o")
            .arg(&obj),
        "cc (the embedded bundle)",
    );
    run(
        Command::new("ar").arg("crs").arg(out.join("libsaxpy_bundle.a")).arg(&obj),
        "ar",
    );
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=saxpy_bundle");

    // libcubincache: its directory from pkg-config, remembered in the binary
    let libs = run(Command::new("pkg-config").args(["--libs-only-L", "cubincache"]), "pkg-config --libs-only-L cubincache");
    for dir in libs.split_whitespace().filter_map(|f| f.strip_prefix("-L")) {
        if Path::new(dir).is_dir() {
            println!("cargo:rustc-link-search=native={}", dir);
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
        }
    }
    println!("cargo:rustc-link-lib=dylib=cubincache");
}

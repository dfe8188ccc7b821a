//! build.rs: builds kernels/saxpy.cu for this machine's SM targets with
//! `cubincache build --emit cargo`, embeds the cubins in the program with
//! `cubincache embed`, and links libcubincache (found with pkg-config: as
//! PKG_CONFIG_PATH says, else beside the cubincache it runs, a build tree's
//! meson-uninstalled/ or an install's lib*/pkgconfig/, else it stops with
//! the export to run).
//!
//! Hygiene by construction: every variable this script reads is declared
//! to cargo before it is read, and `--emit cargo` prints a rerun-if line for
//! the kernel, each header it includes and every variable the cache key or
//! the arch choice reads (CUDA_COMPUTE_CAP, NVCC, NVCC_PREPEND_FLAGS, ...),
//! so `CUDA_COMPUTE_CAP=90 cargo build` after an sm_89 build reruns it.
//! `cubincache lint` finds nothing here.
use std::env;
use std::ffi::OsString;
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

/// The cubincache that `name` runs: a path as it is, else the first on PATH.
fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Path::new(name).canonicalize().ok();
    }
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}

/// Where the .pc of the cubincache at `exe` is: a build tree's
/// BUILDDIR/meson-uninstalled (the binary is BUILDDIR/tools/cubincache),
/// or an install's PREFIX/lib*/pkgconfig (the binary is PREFIX/bin/cubincache).
fn pc_dir_beside(exe: &Path) -> Option<PathBuf> {
    let up = exe.parent()?.parent()?;
    let uninstalled = up.join("meson-uninstalled");
    if uninstalled.join("cubincache-uninstalled.pc").is_file() {
        return Some(uninstalled);
    }
    let mut dirs = vec![up.join("lib/pkgconfig"), up.join("lib64/pkgconfig"), up.join("share/pkgconfig")];
    if let Ok(rd) = up.join("lib").read_dir() {
        dirs.extend(rd.flatten().map(|e| e.path().join("pkgconfig")));
    }
    dirs.into_iter().find(|d| d.join("cubincache.pc").is_file())
}

/// pkg-config ARGS cubincache: as PKG_CONFIG_PATH says, else with the .pc
/// beside the cubincache this script runs; else the export that fixes it.
fn pkg_config(args: &[&str], cubincache: &str) -> String {
    let plain = Command::new("pkg-config").args(args).arg("cubincache").output();
    if let Ok(out) = &plain {
        if out.status.success() {
            return String::from_utf8_lossy(&out.stdout).into_owned();
        }
    }
    let exe = which(cubincache);
    if let Some(dir) = exe.as_deref().and_then(pc_dir_beside) {
        let mut path = OsString::from(&dir);
        if let Some(old) = env::var_os("PKG_CONFIG_PATH") {
            path.push(":");
            path.push(old);
        }
        let what = format!("pkg-config {} cubincache (PKG_CONFIG_PATH={})", args.join(" "), dir.display());
        return run(Command::new("pkg-config").env("PKG_CONFIG_PATH", path).args(args).arg("cubincache"), &what);
    }
    let why = match &plain {
        Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
        Err(e) => format!("cannot run pkg-config: {}", e),
    };
    let fix = match &exe {
        Some(p) => format!(
            "no cubincache.pc beside {} either; export PKG_CONFIG_PATH=BUILDDIR/meson-uninstalled \
             (a build tree) or PKG_CONFIG_PATH=PREFIX/lib/pkgconfig (an install), then cargo build again",
            p.display()
        ),
        None => format!("'{}' is not on PATH: put cubincache there (or CUBINCACHE=PATH)", cubincache),
    };
    panic!("pkg-config cannot find cubincache: {}\n{}", why, fix);
}

fn main() {
    for var in ["CUBINCACHE", "CC", "PKG_CONFIG_PATH", "PATH"] {
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
    let cflags = pkg_config(&["--cflags"], &cubincache);
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
    let libs = pkg_config(&["--libs-only-L"], &cubincache);
    for dir in libs.split_whitespace().filter_map(|f| f.strip_prefix("-L")) {
        if Path::new(dir).is_dir() {
            println!("cargo:rustc-link-search=native={}", dir);
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
        }
    }
    println!("cargo:rustc-link-lib=dylib=cubincache");
}

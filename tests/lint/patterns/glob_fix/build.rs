// Modelled on huggingface/candle d9904a3ba, candle-examples/build.rs, with
// nvcc run by the script: the kernels are named by a glob. The fix must
// declare the glob's directory (cargo scans a directory), never the glob,
// which cargo takes literally: the script would rerun at every build.
const KERNELS: &str = "kernels/*.cu";

fn main() {
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "90".into());
    for k in glob_paths(KERNELS) {
        let status = std::process::Command::new("nvcc")
            .arg(format!("-arch=sm_{cap}"))
            .args(["--ptx", &k])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

fn glob_paths(pattern: &str) -> Vec<String> {
    let dir = pattern.rsplit_once('/').map(|p| p.0).unwrap_or(".");
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path().display().to_string())
        .filter(|p| p.ends_with(".cu"))
        .collect()
}

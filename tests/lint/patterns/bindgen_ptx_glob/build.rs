// Modelled on huggingface/candle d9904a3ba, candle-examples/build.rs: the
// kernels are a glob handed to bindgen_cuda, whose build_ptx() prints
// rerun-if-changed for every kernel it compiles. The lint once wanted a
// rerun-if-changed for them and its fix wrote the glob itself, which cargo
// takes literally (the script then reruns at every build). The header the
// kernel includes is declared by nothing: that one is a finding.
struct KernelDir {
    glob: &'static str,
    target: &'static str,
}

const DIRS: [KernelDir; 1] = [KernelDir { glob: "kernels/*.cu", target: "ptx.rs" }];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    for d in DIRS.iter() {
        let builder = bindgen_cuda::Builder::default().kernel_paths_glob(d.glob);
        let bindings = builder.build_ptx().unwrap();
        bindings.write(out.join(d.target)).unwrap();
    }
}

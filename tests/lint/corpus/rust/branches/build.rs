// A declaration inside a branch covers only that branch.
use std::env;
fn main() {
    let fast = env::args().count() > 3;
    if fast {
        println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
        let _ = env::var("CUDA_COMPUTE_CAP");
    } else if env::var("USE_PTX").is_ok() {
        println!("cargo:rerun-if-env-changed=USE_PTX");
    }
    let cap = env::var("CUDA_COMPUTE_CAP");
    match cap.as_deref() {
        Ok("90") => println!("cargo:rerun-if-env-changed=HOPPER_FLAGS"),
        Ok(_) => {
            let _ = env::var("HOPPER_FLAGS");
        }
        Err(_) => {}
    }
    unsafe {
        println!("cargo:rerun-if-env-changed=UNSAFE_OK");
    }
    let _ = env::var("UNSAFE_OK");
}

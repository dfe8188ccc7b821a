// Part of the build script: reads the arch without declaring it.
pub fn compute_cap() -> String {
    std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "80".into())
}

use std::env;
use std::path::PathBuf;

const ROOT_ENVS: &[&str] = &["CUDA_PATH", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR"];
const LIBRARY_PATH_ENV: &str = "CUDA_LIBRARY_PATH";

pub struct Sdk {
    pub root: PathBuf,
    pub libs: Vec<PathBuf>,
}

impl Sdk {
    pub fn new() -> Self {
        let root = Self::find_root().unwrap_or_else(|| PathBuf::from("/usr/local/cuda"));
        let libs = match env::var_os(LIBRARY_PATH_ENV) {
            Some(v) => env::split_paths(&v).collect(),
            None => vec![root.join("lib64")],
        };
        Sdk { root, libs }
    }

    fn find_root() -> Option<PathBuf> {
        ROOT_ENVS.iter().filter_map(|n| env::var(n).ok()).map(PathBuf::from).find(|p| p.is_dir())
    }

    pub fn related_envs(&self) -> Vec<String> {
        ROOT_ENVS
            .iter()
            .map(|n| n.to_string())
            .chain(std::iter::once(LIBRARY_PATH_ENV.to_string()))
            .collect::<Vec<_>>()
    }
}

//! Helpers shared by the cross-crate tests: where the repository and the real clients are.

use std::path::{Path, PathBuf};

/// The repository's top directory.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// A tool of the Python virtualenv `./test.sh` prepares (`.venv/`), or from `EFB_VENV`.
/// Real-client tests fail, loudly, when it is missing: run them through `./test.sh`.
pub fn venv_tool(name: &str) -> PathBuf {
    let venv = std::env::var_os("EFB_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv"));
    let tool = venv.join("bin").join(name);
    assert!(
        tool.exists(),
        "{} is missing: run ./test.sh, which creates the virtualenv with the real clients",
        tool.display()
    );
    tool
}

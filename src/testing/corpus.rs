//! The profile corpus under `tests/profiles/` (`valid/` and `invalid/`, described in its
//! README): berth's local validation and the test API server's admission both run it, so
//! both read it the same way.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The YAML files of `tests/profiles/<kind>/`, sorted by name.
pub fn profile_corpus(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/profiles")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// The text of a corpus file and its one YAML document as JSON.
pub fn read_yaml(file: &Path) -> (String, Value) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let value = serde_saphyr::from_str::<Value>(&text)
        .unwrap_or_else(|e| panic!("{}: not YAML: {e}", file.display()));
    (text, value)
}

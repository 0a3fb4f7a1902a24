//! Shared helpers of the native integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The conformance data directory (`../shared/conformance` next to the repository).
/// When it is absent the test fails under `CI=true` and is skipped with a notice otherwise.
pub fn conformance_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "conformance data missing at {} (required under CI=true)",
            dir.display()
        );
    }
    eprintln!(
        "SKIP: conformance data not found at {}; conformance tests skipped",
        dir.display()
    );
    None
}

/// Reads a conformance file, or `None` (after the notice) when the data is absent.
pub fn read(rel: &str) -> Option<Vec<u8>> {
    let dir = conformance_dir()?;
    Some(std::fs::read(dir.join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}")))
}

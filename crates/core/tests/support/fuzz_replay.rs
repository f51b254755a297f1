//! Replaying saved fuzz inputs, shared by the test crates that keep them (included by `#[path]`,
//! not a test target of its own); the inputs are `tests/fuzz_regressions/TARGET/` of the crate
//! that includes it.

use std::path::PathBuf;

/// The folder of `target`'s saved inputs.
pub(crate) fn dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions").join(target)
}

/// Every saved input of `target` through `check`; how many there were.
pub(crate) fn replay(target: &str, check: fn(&[u8])) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir(target)).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() && path.file_name().is_some_and(|f| f != ".gitkeep") {
            check(&std::fs::read(&path).unwrap());
            n += 1;
        }
    }
    n
}

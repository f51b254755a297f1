//! Replays every saved fuzz input (crash reproducers and interesting seeds) through the same checks
//! the fuzz targets run. See README "Fuzzing" for how to run the fuzzers.

use crate::fuzz_checks;

use std::path::PathBuf;

fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions").join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() && path.file_name().is_some_and(|f| f != ".gitkeep") {
            check(&std::fs::read(&path).unwrap());
            n += 1;
        }
    }
    n
}

#[test]
fn config_json_regressions() {
    assert!(replay("config_json", fuzz_checks::check_config_json) > 0);
}

#[test]
fn gpu_file_regressions() {
    assert!(replay("gpu_file", fuzz_checks::check_gpu_file) > 0);
}

#[test]
fn scenario_query_regressions() {
    assert!(replay("scenario_query", fuzz_checks::check_scenario_query) > 0);
}

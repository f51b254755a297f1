//! Replays every saved fuzz input (crash reproducers and interesting seeds) through the same checks
//! the fuzz targets run. See README "Fuzzing" for how to run the fuzzers.

use crate::fuzz_checks;

#[path = "../support/fuzz_replay.rs"]
mod fuzz_replay;
use fuzz_replay::replay;

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

#[test]
fn safetensors_index_regressions() {
    assert!(replay("safetensors_index", fuzz_checks::check_safetensors_index) >= 3);
}

#[test]
fn gguf_metadata_regressions() {
    assert!(replay("gguf_metadata", fuzz_checks::check_gguf_metadata) >= 2);
}

/// A short fuzzing run on stable Rust, part of `cargo test`: `cases` mutants of every saved input
/// of `target` (bytes flipped, set to a delimiter or a boundary value, cut, repeated or
/// removed, mostly in the first 2 KiB where the headers are), from a fixed seed, through `check`.
fn mutate(target: &str, check: fn(&[u8]), cases: usize) -> usize {
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(fuzz_replay::dir(target))
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    seeds.sort();
    // xorshift64: the same mutants on every run.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % below.max(1) as u64) as usize
    };
    const VALUES: [u8; 10] = [0, 0xff, 0x7f, 0x80, b'"', b'[', b'{', b'9', b'-', b'\\'];
    let mut n = 0;
    for seed in &seeds {
        for _ in 0..cases {
            let mut m = seed.clone();
            for _ in 0..1 + next(4) {
                let span = if next(4) == 0 { m.len() } else { m.len().min(2048) };
                let at = next(span).min(m.len());
                let len = next(64).min(m.len() - at);
                let (op, bit, value) = (next(6), 1u8 << next(8), VALUES[next(VALUES.len())]);
                match op {
                    0 if at < m.len() => m[at] ^= bit,
                    1 if at < m.len() => m[at] = value,
                    2 => m.truncate(at),
                    3 => {
                        let piece = m[at..at + len].to_vec();
                        m.splice(at..at, piece);
                    }
                    4 => {
                        m.drain(at..at + len);
                    }
                    _ => m.insert(at, value),
                }
            }
            check(&m);
            n += 1;
        }
    }
    n
}

#[test]
fn safetensors_index_short_fuzz_run() {
    assert_eq!(mutate("safetensors_index", fuzz_checks::check_safetensors_index, 2000), 3 * 2000);
}

#[test]
fn gguf_metadata_short_fuzz_run() {
    assert_eq!(mutate("gguf_metadata", fuzz_checks::check_gguf_metadata, 300), 2 * 300);
}

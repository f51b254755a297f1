//! No message or help text of the product shows Rust's range syntax (`1..=4096`): ranges are
//! written in words (`from 1 to 4,096`, [`llm_ledger_core::error::range_words`]) or as intervals
//! (`[0, 1]`). Every string literal in the non-test code of every crate of the workspace is
//! checked (a sweep axis's own syntax, `1..=256`, is input, and appears only in docs and tests).

use crate::module_layers::{code_lines, rust_files};
use std::path::Path;

/// Whether `literal` holds a range `A..=B` whose ends are numbers or format arguments.
fn has_range_syntax(literal: &str) -> bool {
    let b = literal.as_bytes();
    literal.match_indices("..=").any(|(at, _)| {
        let before = at.checked_sub(1).map(|j| b[j]);
        let after = b.get(at + 3).copied();
        before.is_some_and(|c| c.is_ascii_digit() || c == b'}')
            && after.is_some_and(|c| c.is_ascii_digit() || c == b'{')
    })
}

#[test]
fn messages_write_ranges_in_words() {
    assert!(has_range_syntax("an integer in 1..={MAX}") && has_range_syntax("(1..=8)"));
    assert!(!has_range_syntax("an integer from 1 to 4,096") && !has_range_syntax("a..=b"));
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    rust_files(&crates, &mut files);
    let sources: Vec<_> = files.iter().filter(|p| p.components().any(|c| c.as_os_str() == "src")).collect();
    assert!(sources.len() > 100, "{} source files", sources.len());
    let mut found = Vec::new();
    for path in sources {
        let text = std::fs::read_to_string(path).unwrap();
        for line in code_lines(&text) {
            // The string literals of the line: every other piece between quotes.
            for literal in line.split('"').skip(1).step_by(2).filter(|l| has_range_syntax(l)) {
                found.push(format!("{}: {literal}", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "range syntax in messages:\n{}", found.join("\n"));
}

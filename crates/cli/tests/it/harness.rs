//! The helpers every CLI test uses: run the binary, expect success or one clean error line, parse
//! JSON, write a scratch input file.

use assert_cmd::Command;
use serde_json::Value;
use std::path::PathBuf;

/// The `llm-ledger` binary under test, offline (`HF_HUB_OFFLINE=1`): no test reaches the network.
pub fn cli() -> Command {
    let mut c = Command::cargo_bin("llm-ledger").unwrap();
    c.env("HF_HUB_OFFLINE", "1");
    c
}

/// Run with arguments; return (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = cli().args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// Run with arguments, expect success; return stdout.
pub fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// Like [`ok`], and nothing on stderr either (no progress bar or hint on a pipe).
pub fn ok_quiet(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    assert!(err.is_empty(), "no progress bar or noise on a pipe: {err}");
    out
}

/// Run with arguments, expect success, parse stdout as JSON.
pub fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).unwrap()
}

/// A user error: exit code 2, nothing on stdout, exactly one line on stderr starting with `error: `,
/// no panic. Returns the line (without its newline).
pub fn fails(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 2, "args {args:?}: stdout {out} stderr {err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("error: ") && !err.contains("panicked"), "{err}");
    err.trim_end().to_string()
}

/// Write `contents` to a scratch file named `name` (shared by the tests of this binary: names must
/// differ); return its path.
pub fn temp_file(name: &str, contents: &[u8]) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p.to_string_lossy().into_owned()
}

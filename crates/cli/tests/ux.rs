//! What a user meets around the numbers (issue 11): output that cannot be written, usage errors
//! that keep clap's content on one line, help that lists only accepted flags, tables that fit the
//! terminal, byte sizes with units, and the build and CI set-up.

use assert_cmd::Command;
use std::io::Read;
use std::path::PathBuf;
use std::process::Stdio;

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("llm-ledger")
}

/// Run with arguments; return (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin()).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// A usage or input error: exit code 2 and exactly one line on stderr; returns the line.
fn fails(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 2, "args {args:?}: stdout {out} stderr {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("error: "), "{err}");
    err.trim_end().to_string()
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

// ---- item 6: write errors are errors, a closed pipe is not ----

#[test]
#[cfg(target_os = "linux")]
fn issue_11_output_to_a_full_disk_is_an_error() {
    for args in [&["ledger"][..], &["gpus", "--format", "md"], &["sweep", "--batch", "1..64"]] {
        let full = std::fs::File::create("/dev/full").unwrap();
        let out = std::process::Command::new(bin()).args(args).stdout(full).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err, "error: cannot write output: No space left on device\n", "{args:?}");
    }
}

#[test]
fn issue_11_a_pipe_closed_early_is_quiet_and_succeeds() {
    // Outputs far larger than a pipe's buffer on both paths: the buffered one (an MoE table of
    // 4,096 rows as JSON, 0.8 MB) and the streamed sweep.
    let cases: [&[&str]; 2] = [
        &["moe", "--experts", "8", "--top-k", "2", "--batch", "1..4096", "--format", "json"],
        &["sweep", "--batch", "1..200000"],
    ];
    for args in cases {
        let mut child =
            std::process::Command::new(bin()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        drop(child.stdout.take()); // the reader goes away at once, as `| head -0` would
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
}

// ---- item 14: usage errors keep their content on one line ----

#[test]
fn issue_11_usage_errors_name_the_missing_argument_and_keep_the_tip() {
    assert_eq!(
        fails(&["tile", "--m", "1", "--n", "14336"]),
        "error: the following required arguments were not provided: --k <K> (see `llm-ledger tile --help`)"
    );
    assert_eq!(
        fails(&["ledger", "--bach", "3"]),
        "error: unexpected argument '--bach' found; tip: a similar argument exists: '--batch' (see `llm-ledger ledger --help`)"
    );
    let two = fails(&["plan"]);
    assert!(two.contains("--tpot-ms <TPOT_MS>"), "{two}");
    assert!(!fails(&["ledger", "--bogus"]).contains("Usage"));
}

// ---- item 21: small release binary, CI that installs only what is missing ----

#[test]
fn issue_11_release_builds_are_stripped_and_profiling_keeps_debug_info() {
    let manifest: toml::Table = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap().parse().unwrap();
    let profile = |name: &str| manifest["profile"][name].as_table().unwrap().clone();
    let release = profile("release");
    assert_eq!(release["debug"].as_integer(), Some(0));
    assert_eq!(release["strip"].as_bool(), Some(true));
    let profiling = profile("profiling");
    assert_eq!(profiling["inherits"].as_str(), Some("release"));
    assert_eq!(profiling["debug"].as_integer(), Some(1));
    assert_eq!(profiling["strip"].as_bool(), Some(false));
}

#[test]
#[cfg(unix)]
fn issue_11_ci_installs_only_what_is_missing_and_says_how_when_it_cannot() {
    use std::os::unix::fs::PermissionsExt;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ci-path");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = repo_root().join(".ci/browser-deps");
    // A PATH with neither Chromium nor apt-get: one line that says how, and success.
    let deps = || std::process::Command::new("/bin/bash").arg(&script).env_clear().env("PATH", &dir).output().unwrap();
    let out = deps();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("apt-get install chromium chromium-driver"), "{err}");
    // With both present nothing is installed and nothing is said.
    for tool in ["chromium", "chromedriver"] {
        let p = dir.join(tool);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = deps();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
    assert!(std::fs::read_to_string(repo_root().join(".ci/run")).unwrap().contains(".ci/browser-deps"));
}

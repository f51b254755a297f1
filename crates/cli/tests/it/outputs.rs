//! The files the CLI writes where the user asked (`--plot`, `--trace-out`, `calibrate --out`):
//! never one of the run's inputs, never a FIFO, a device or a symbolic link, and written whole or
//! not at all, so a run that fails leaves the old file as it was.

use crate::harness::{cli, fails, ok, temp_file};
use crate::hub::{scratch, LLAMA_8B};
use std::path::Path;

fn read(p: &str) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let config = temp_file("same-config.json", LLAMA_8B.as_bytes());
    let e = fails(&["ledger", "--model", &config, "--plot", &config]);
    assert!(e.starts_with("error: invalid `--plot`: `") && e.contains("is also an input of this run"), "{e}");
    assert_eq!(read(&config), LLAMA_8B);

    let rows = "model,gpu,batch,ctx,tpot_ms\nllama-3-8b,h100-sxm,1,2048,7\nllama-3-8b,h100-sxm,8,1024,8\nllama-3-8b,h100-sxm,4,8192,9\n";
    let measurements = temp_file("same-measurements.csv", rows.as_bytes());
    let e = fails(&["calibrate", &measurements, "--out", &measurements]);
    assert!(e.starts_with("error: invalid `--out`: `"), "{e}");
    assert!(e.contains("is also an input of this run"), "{e}");
    assert_eq!(read(&measurements), rows);

    let trace_text = "arrival_s,prompt_tokens,output_tokens\n0,100,10\n0.5,300,40\n";
    let trace = temp_file("same-trace.csv", trace_text.as_bytes());
    let e = fails(&["simulate", "--trace", &trace, "--trace-out", &trace]);
    assert!(e.starts_with("error: invalid `--trace-out`: `") && e.contains("is also an input"), "{e}");
    assert_eq!(read(&trace), trace_text);
    // Another spelling of the same file is the same file.
    let dir = Path::new(&trace).parent().unwrap().display().to_string();
    let other = format!("{dir}/./same-trace.csv");
    let e = fails(&["simulate", "--trace", &trace, "--plot", &other]);
    assert!(e.contains("is also an input"), "{e}");
    assert_eq!(read(&trace), trace_text);
}

/// A FIFO, a device, a folder or a symbolic link at the output path: one line, at once (a FIFO
/// once blocked the run forever).
#[test]
#[cfg(unix)]
fn special_files_and_links_are_refused_as_outputs() {
    let dir = scratch("special-outputs");
    let fifo = dir.join("plot.svg");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    let f = fifo.display().to_string();
    let mut c = cli();
    c.args(["ledger", "--plot", &f]).timeout(std::time::Duration::from_secs(60));
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        format!("error: invalid `--plot`: `{f}` is a FIFO, not a regular file (give the path of a file to write)")
    );
    let e = fails(&["simulate", "--requests", "10", "--trace-out", "/dev/null"]);
    assert!(e.contains("`/dev/null` is a device"), "{e}");
    let d = dir.display().to_string();
    let e = fails(&["zoom", "--at", "layer.0", "--plot", &d]);
    assert!(e.contains("is a folder"), "{e}");
    let target = dir.join("elsewhere.svg");
    std::fs::write(&target, "mine").unwrap();
    let link = dir.join("link.svg");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let e = fails(&["ledger", "--plot", &link.display().to_string()]);
    assert!(e.contains("is a symbolic link (to `") && e.contains("give the path of the file itself"), "{e}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine", "the link's target is not written");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is kept");
}

/// A simulation that fails after it started leaves the old trace as it was (it was left empty),
/// and a run that succeeds replaces it whole, with no temporary file left beside it.
#[test]
fn a_failed_run_leaves_the_old_output_intact() {
    let dir = scratch("failed-run");
    let old = dir.join("old.csv");
    std::fs::write(&old, "keep me\n").unwrap();
    let o = old.display().to_string();
    // The simulator refuses pipeline parallelism once it starts running.
    let e = fails(&["simulate", "--requests", "10", "--pp", "2", "--trace-out", &o]);
    assert!(e.contains("`--pp`"), "{e}");
    assert_eq!(read(&o), "keep me\n");
    ok(&["simulate", "--requests", "10", "--trace-out", &o]);
    assert!(read(&o).starts_with("time_s,") || read(&o).lines().count() > 2, "{}", read(&o));
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["old.csv"]);
}

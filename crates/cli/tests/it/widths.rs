//! Output fits the terminal: every table of every command at `--width 80` and `--width 100`
//! (columns hidden are named in a last line; title and footer lines wrap), and every `--help`
//! at 80 and 100 columns.

use crate::harness::{cli, ok};
use std::path::PathBuf;

/// Run from the repository root (the examples' files resolve); expect success; return stdout.
fn ok_at_root(args: &[&str]) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = cli().args(args).current_dir(root).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// One invocation of every command with a table (and the variants whose tables differ).
const TABLES: &[&[&str]] = &[
    &["ledger"],
    &["ledger", "--counting", "seed", "--batch", "64"],
    &["ledger", "--model", "llama-3.1-405b"],
    &["ledger", "--model", "llama-3.1-70b", "--tp", "4", "--pp", "2"],
    &["ledger", "--model", "examples/tiny-q4_k_m.gguf"],
    &["models"],
    &["gpus"],
    &["sweep", "--batch", "1,8,64,256"],
    &["sweep", "--gpu", "h100-sxm,h200,b200", "--weights", "bf16,fp8", "--batch", "1,64"],
    &["sweep", "--model", "llama-3.1-405b", "--batch", "1,2"],
    &["kv", "--batch", "64"],
    &["kv", "--model", "llama-3.1-405b"],
    &["levers", "--batch", "8", "--ctx", "32768"],
    &["latency", "--batch", "8"],
    &["cost", "--batch", "16", "--tpot-ms", "20"],
    &["measure", "--step-ms", "7.5"],
    &["advise", "--histogram", "examples/mix.csv"],
    &["calibrate", "examples/gpt-fast-a100.csv"],
    &[
        "calibrate",
        "crates/cli/tests/data/benchmarks/vllm-serving.json",
        "crates/cli/tests/data/benchmarks/trtllm-bench-report.json",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
    ],
    &["zoom"],
    &["zoom", "--at", "layer.0.mlp.up.tiles"],
    &["zoom", "--at", "layer.0.attn.attention.tiles"],
    &["tile", "--m", "1", "--n", "14336", "--k", "4096"],
    &["moe", "--model", "mixtral-8x7b", "--batch", "1..16*2"],
    &["moe", "--experts", "8", "--top-k", "2"],
    &["plan", "--model", "llama-3.1-70b", "--tpot-ms", "50", "--max-gpus", "8"],
    &["simulate", "--requests", "50"],
    &["simulate", "--rate", "4,16", "--requests", "50"],
    &["simulate", "--rate", "16", "--requests", "50", "--disagg", "1:3"],
];

/// Columns of the first table in `out`: the cells of its header (the line after the first rule),
/// separated by two spaces or more.
fn columns(out: &str) -> usize {
    let mut lines = out.lines().skip_while(|l| !l.starts_with('─'));
    lines.next();
    lines.next().map_or(0, |h| h.split("  ").filter(|c| !c.trim().is_empty()).count())
}

/// The lines of `out` wider than `width` columns.
fn too_wide(out: &str, width: usize) -> Vec<String> {
    out.lines().filter(|l| l.chars().count() > width).map(|l| format!("{} > {width}: {l}", l.chars().count())).collect()
}

#[test]
fn every_table_fits_80_and_100_columns_or_names_what_it_hid() {
    let mut failures = Vec::new();
    for args in TABLES {
        let full = ok_at_root(args);
        for width in [80, 100] {
            let w = width.to_string();
            let out = ok_at_root(&[args, &["--width", w.as_str()][..]].concat());
            for l in too_wide(&out, width) {
                failures.push(format!("{args:?}: {l}"));
            }
            // Nothing is lost without saying so: a table with fewer columns names those it hid.
            if columns(&out) < columns(&full) && !out.replace("\n  ", " ").contains("hidden to fit the terminal: ") {
                failures.push(format!("{args:?} at {width}: columns hidden without naming them"));
            }
        }
    }
    assert!(failures.is_empty(), "{} lines too wide:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_streamed_sweep_hides_the_same_way_as_the_other_tables() {
    let out = ok(&["sweep", "--batch", "1,8", "--width", "80"]);
    let header = out.lines().find(|l| l.contains("batch") && l.contains("fits")).unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["batch", "ctx", "step", "tok/s", "weights", "memory", "fits"]
    );
    assert!(out.contains("hidden to fit the terminal: KV; FLOP/B; largest row (--wide shows every column)"), "{out}");
    // Every column without a width, and at a width that holds them all.
    for args in [&["sweep", "--batch", "1,8"][..], &["sweep", "--batch", "1,8", "--width", "200"]] {
        let out = ok(args);
        assert!(out.contains("largest row") && !out.contains("hidden"), "{out}");
    }
    // JSON and CSV are never fitted.
    let csv = ok(&["sweep", "--batch", "1,8", "--width", "40", "--format", "csv"]);
    assert!(
        csv.starts_with("batch,ctx,step_time_s,tokens_per_s,flops,bytes,weight_bytes,kv_bytes,intensity,largest_op,"),
        "{csv}"
    );
}

/// Every subcommand's name, and the top level (`None`).
fn commands() -> Vec<Option<String>> {
    let out = ok(&["--help"]);
    let mut names: Vec<Option<String>> = vec![None];
    let mut in_commands = false;
    for l in out.lines() {
        if l.starts_with("Commands:") {
            in_commands = true;
        } else if in_commands && l.starts_with("  ") {
            let name = l.split_whitespace().next().unwrap().to_string();
            if name != "help" {
                names.push(Some(name));
            }
        } else if in_commands && !l.starts_with(' ') {
            in_commands = false;
        }
    }
    assert!(names.len() > 15, "{names:?}");
    names
}

#[test]
fn help_wraps_to_the_terminal_width() {
    let mut failures = Vec::new();
    for command in commands() {
        for flag in ["-h", "--help"] {
            for width in [80, 100] {
                let mut c = cli();
                c.env("COLUMNS", width.to_string());
                if let Some(name) = &command {
                    c.arg(name);
                }
                let out = c.arg(flag).output().unwrap();
                assert!(out.status.success(), "{command:?} {flag}");
                let text = String::from_utf8(out.stdout).unwrap();
                for l in too_wide(&text, width) {
                    failures.push(format!("{command:?} {flag}: {l}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} help lines too wide:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn short_help_is_a_summary_and_long_help_explains() {
    let short = ok(&["ledger", "-h"]);
    let long = ok(&["ledger", "--help"]);
    assert!(
        short.lines().count() * 3 < long.lines().count() * 2,
        "-h {} lines, --help {}",
        short.lines().count(),
        long.lines().count()
    );
    // Flags are grouped under headings.
    for heading in ["Model and GPU:", "Step:", "Precision:", "Clock:", "Parallel deployment:", "Output:"] {
        assert!(short.contains(heading) && long.contains(heading), "{heading}\n{short}");
    }
    // The summary of --counting is one line; the explanation is in --help only.
    let words = |h: &str| h.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words(&short).contains("--counting <full|seed> Counting: full (default) or seed (the reference calculator's) ")
    );
    assert!(!words(&short).contains("reference decode calculator"), "{short}");
    assert!(words(&long).contains("as the reference decode calculator counts them"), "{long}");
}

//! What a user meets around the numbers: output that cannot be written, usage errors
//! that keep clap's content on one line, help that lists only accepted flags, tables that fit the
//! terminal, byte sizes with units, and the build and CI set-up.

use crate::harness::{fails, run};
use assert_cmd::Command;
use std::io::Read;
use std::path::PathBuf;
use std::process::Stdio;

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("llm-ledger")
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

// ---- item 6: write errors are errors, a closed pipe is not ----

#[test]
#[cfg(target_os = "linux")]
fn output_to_a_full_disk_is_an_error() {
    for args in [&["ledger"][..], &["gpus", "--format", "md"], &["sweep", "--batch", "1..64"]] {
        let full = std::fs::File::create("/dev/full").unwrap();
        let out = std::process::Command::new(bin()).args(args).stdout(full).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err, "error: cannot write output: No space left on device\n", "{args:?}");
    }
}

#[test]
fn a_pipe_closed_early_is_quiet_and_succeeds() {
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
fn usage_errors_name_the_missing_argument_and_keep_the_tip() {
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
fn release_builds_are_stripped_and_profiling_keeps_debug_info() {
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
fn ci_installs_only_what_is_missing_and_says_how_when_it_cannot() {
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
    // One line per missing thing, each saying how: the browser, and (where this checkout has no
    // axe-core under target/axe yet) npm for axe-core.
    assert!(err.lines().all(|l| l.starts_with(".ci: ") && l.contains("install")), "{err}");
    assert_eq!(err.lines().filter(|l| l.contains("apt-get install chromium chromium-driver")).count(), 1, "{err}");
    assert!(err.lines().count() <= 2, "{err}");
    // With both present nothing is installed and nothing is said.
    for tool in ["chromium", "chromedriver"] {
        let p = dir.join(tool);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = deps();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("chromium"), "{err}");
    assert!(err.lines().count() <= 1, "{err}");
    assert!(std::fs::read_to_string(repo_root().join(".ci/run")).unwrap().contains(".ci/browser-deps"));
}

// ---- item 16: --help lists only what the command accepts ----

/// The long flags a subcommand's `--help` lists.
fn listed_flags(sub: &str) -> Vec<String> {
    let (code, help, _) = run(&[sub, "--help"]);
    assert_eq!(code, 0);
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l =
                l.strip_prefix("-").filter(|r| r.chars().nth(1) == Some(',')).map(|r| r[2..].trim_start()).unwrap_or(l);
            l.strip_prefix("--").map(|r| r.split([' ', '=', '<']).next().unwrap().to_string())
        })
        .filter(|f| f != "help" && f != "version")
        .collect()
}

/// A valid value for a flag (`None`: a switch), with the arguments the command needs beside it.
fn valid(sub: &str, flag: &str, tmp: &std::path::Path) -> (Vec<String>, Vec<String>) {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let base: Vec<String> = match sub {
        "measure" if flag == "step-ms" || flag == "tokens-per-s" => vec![],
        "measure" => s(&["--step-ms", "10"]),
        "plan" if flag == "tpot-ms" => s(&["--max-gpus", "2"]),
        "plan" if flag == "max-gpus" => s(&["--tpot-ms", "50"]),
        "plan" => s(&["--tpot-ms", "50", "--max-gpus", "2"]),
        "tile" if ["m", "n", "k"].contains(&flag) => vec![],
        "tile" => s(&["--m", "1", "--n", "4096", "--k", "4096"]),
        "moe" if flag == "experts" || flag == "top-k" || flag == "model" || flag == "revision" => vec![],
        "moe" => s(&["--model", "mixtral-8x7b"]),
        _ => vec![],
    };
    let root = repo_root();
    let file = |name: &str, text: &str| {
        let p = tmp.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let value: &[String] = &match (sub, flag) {
        ("moe", "model") => s(&["mixtral-8x7b"]),
        ("moe", "experts") => s(&["8", "--top-k", "2"]),
        ("moe", "top-k") => s(&["2", "--experts", "8"]),
        ("tile", "m") => s(&["1", "--n", "4096", "--k", "4096"]),
        ("tile", "n") => s(&["4096", "--m", "1", "--k", "4096"]),
        ("tile", "k") => s(&["4096", "--m", "1", "--n", "4096"]),
        ("tile", "output") => s(&["bf16"]),
        // `plan --rate` needs a TTFT bound, and the load flags need a rate (a small search).
        ("plan", "rate") => s(&["2", "--ttft-ms", "1000", "--requests", "50"]),
        ("plan", "ttft-ms") => s(&["1000", "--rate", "2", "--requests", "50"]),
        ("plan", "requests") => s(&["50", "--rate", "2", "--ttft-ms", "1000"]),
        ("plan", "gpus-total") => s(&["2", "--rate", "2", "--ttft-ms", "1000", "--requests", "50"]),
        ("plan", "seed") => s(&["3", "--rate", "2", "--ttft-ms", "1000", "--requests", "50"]),
        ("plan", "prompt") => s(&["500", "--rate", "2", "--ttft-ms", "1000", "--requests", "50"]),
        ("plan", "output") => s(&["50", "--rate", "2", "--ttft-ms", "1000", "--requests", "50"]),
        ("plan", "max-steps") => s(&["100000000", "--rate", "2", "--ttft-ms", "1000", "--requests", "50"]),
        ("sweep", "plot") => s(&[&tmp.join("curve.svg").to_string_lossy()]),
        ("zoom", "plot") => s(&[&tmp.join("dataflow.svg").to_string_lossy(), "--at", "layer.0"]),
        (_, "plot") => s(&[&tmp.join("roofline.svg").to_string_lossy()]),
        (_, "model") => s(&["llama-3-8b"]),
        // A Hub id in the cache `tmp/hub` (HF_HUB_CACHE of these runs), at its main branch.
        (_, "revision") => {
            let snap = tmp.join("hub/models--test-org--tiny-moe/snapshots/0123456789abcdef0123456789abcdef01234567");
            std::fs::create_dir_all(&snap).unwrap();
            std::fs::write(
                snap.join("config.json"),
                r#"{"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "num_local_experts": 4,
                "num_experts_per_tok": 2}"#,
            )
            .unwrap();
            std::fs::create_dir_all(tmp.join("hub/models--test-org--tiny-moe/refs")).unwrap();
            std::fs::write(
                tmp.join("hub/models--test-org--tiny-moe/refs/main"),
                "0123456789abcdef0123456789abcdef01234567",
            )
            .unwrap();
            s(&["main", "--model", "test-org/tiny-moe"])
        }
        (_, "gpu") => s(&["h200"]),
        (_, "gpu-file") => s(&[&file("gpu.toml", &llm_ledger_core::testing::minimal_gpu_toml("my-gpu"))]),
        (_, "preset-file") => s(&[&root.join("crates/core/data/models.toml").to_string_lossy()]),
        (_, "phase") => s(&["decode"]),
        (_, "batch") => s(&["2"]),
        (_, "ctx") => s(&["1024"]),
        (_, "contexts") => s(&["1000,2000"]),
        (_, "histogram") => s(&[&root.join("crates/cli/tests/data/histogram.csv").to_string_lossy()]),
        (_, "weights") => s(&["fp8"]),
        (_, "kv") => s(&["fp8"]),
        (_, "activations" | "gemm-activations") => s(&["bf16"]),
        (_, "flash") => s(&["off"]),
        (_, "causal") => s(&["full"]),
        (_, "logits") => s(&["all"]),
        (_, "counting") => s(&["seed"]),
        (_, "mla") => s(&["naive"]),
        (_, "compute-efficiency" | "bandwidth-efficiency" | "link-efficiency") => s(&["0.5"]),
        (_, "zipf") => s(&["0.5"]),
        (_, "expert-loads") => s(&[&file("loads.csv", "2\n1\n1\n1\n1\n1\n1\n1\n")]),
        (_, "tp" | "pp" | "dp") => s(&["2"]),
        (_, "ep" | "micro-batches") => s(&["1"]),
        (_, "interconnect") => s(&["pcie"]),
        (_, "time-model") => s(&["roofline"]),
        (_, "engine") => s(&["vllm"]),
        (_, "profile") => s(&[&file("profile.toml", "memory_scale = 1.1\ncompute_scale = 1\nkernel_s = 1e-6\n")]),
        (_, "reserve") => s(&["4GB"]),
        (_, "attend") => s(&["1024"]),
        (_, "prompt") => s(&["1000"]),
        (_, "output") => s(&["100"]),
        (_, "usd-per-hour") => s(&["2"]),
        (_, "tpot-ms") => s(&["50"]),
        (_, "step-ms") => s(&["10"]),
        (_, "tokens-per-s") => s(&["100"]),
        (_, "max-gpus") => s(&["2"]),
        (_, "at") => s(&["layer.0"]),
        (_, "format") => s(&["json"]),
        (_, "tile") => s(&["128x128x64"]),
        (_, "wide" | "pareto") => vec![],
        (_, "width") => s(&["100"]),
        _ => panic!("no valid value known for `{sub} --{flag}`: add one to this table"),
    };
    let mut args = vec![format!("--{flag}")];
    args.extend(value.iter().cloned());
    (base, args)
}

#[test]
fn every_flag_a_help_lists_is_accepted_alone() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("help-flags");
    std::fs::create_dir_all(&tmp).unwrap();
    let subs = ["ledger", "models", "gpus", "sweep", "kv", "levers", "latency", "cost", "measure", "advise", "zoom"];
    let subs = subs.into_iter().chain(["tile", "moe", "plan"]);
    let mut failures = Vec::new();
    let mut tried = 0;
    for sub in subs {
        for flag in listed_flags(sub) {
            let (base, args) = valid(sub, &flag, &tmp);
            let mut all = vec![sub.to_string()];
            all.extend(base);
            all.extend(args);
            let out = Command::new(bin())
                .env("HF_HUB_OFFLINE", "1")
                .env("HF_HUB_CACHE", tmp.join("hub"))
                .args(&all)
                .output()
                .unwrap();
            tried += 1;
            if !out.status.success() {
                failures.push(format!("`{}`: {}", all.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
            }
        }
    }
    assert!(tried > 200, "{tried} flags tried");
    assert!(failures.is_empty(), "flags listed in --help but refused:\n{}", failures.join("\n"));
}

#[test]
fn the_reproductions_are_not_listed() {
    for sub in ["cost", "latency"] {
        let flags = listed_flags(sub);
        for refused in ["phase", "ctx", "contexts", "histogram"] {
            assert!(!flags.iter().any(|f| f == refused), "{sub} lists --{refused}");
        }
    }
    for sub in ["kv", "levers", "advise"] {
        assert!(!listed_flags(sub)
            .iter()
            .any(|f| ["tp", "pp", "ep", "dp", "micro-batches", "interconnect"].contains(&f.as_str())));
    }
    let plan = listed_flags("plan");
    assert!(!plan.iter().any(|f| ["tp", "pp", "ep", "dp", "phase", "contexts"].contains(&f.as_str())), "{plan:?}");
    assert!(plan.iter().any(|f| f == "interconnect"));
    // The defaults the core applies are in the help.
    let (_, help, _) = run(&["ledger", "--help"]);
    for d in ["[default: llama-3-8b]", "[default: h100-sxm]", "[default: 1]", "[default: 2048]"] {
        assert!(help.contains(d), "{d}");
    }
}

// ---- item 17: tables fit the terminal and no line ends in a space ----

/// Every report type, as the commands print it.
const REPORTS: &[&[&str]] = &[
    &["ledger"],
    &["ledger", "--tp", "2"],
    &["models"],
    &["gpus"],
    &["sweep", "--batch", "1,8"],
    &["sweep", "--gpu", "h100-sxm,h200"],
    &["kv"],
    &["levers"],
    &["latency"],
    &["cost", "--tpot-ms", "20"],
    &["measure", "--step-ms", "10"],
    &["advise"],
    &["zoom"],
    &["zoom", "--at", "layer.0.mlp.up.tiles"],
    &["tile", "--m", "1", "--n", "14336", "--k", "4096"],
    &["moe", "--model", "mixtral-8x7b"],
    &["plan", "--tpot-ms", "50", "--max-gpus", "8"],
];

#[test]
fn no_line_of_a_table_or_markdown_ends_in_a_space() {
    for report in REPORTS {
        for extra in [&["--format", "table"][..], &["--format", "md"], &["--width", "100"]] {
            let mut args = report.to_vec();
            args.extend(extra);
            let (code, out, err) = run(&args);
            assert_eq!(code, 0, "{args:?}: {err}");
            for (i, line) in out.lines().enumerate() {
                assert!(!line.ends_with(' '), "{args:?} line {}: {line:?}", i + 1);
            }
        }
    }
}

#[test]
fn tables_fit_a_forced_width_and_say_what_they_hid() {
    // Output to a pipe is never cut: every column, as before.
    let (_, full, _) = run(&["gpus"]);
    assert!(full.lines().map(|l| l.chars().count()).max().unwrap() > 200);
    assert!(full.contains("description") && !full.contains("hidden to fit"));
    for args in [
        &["gpus"][..],
        &["plan", "--tpot-ms", "50", "--max-gpus", "8"],
        &["tile", "--m", "1", "--n", "14336", "--k", "4096"],
        &["advise"],
        &["models"],
    ] {
        let mut a = args.to_vec();
        a.extend(["--width", "100"]);
        let (code, out, err) = run(&a);
        assert_eq!(code, 0, "{err}");
        for line in out.lines() {
            assert!(line.chars().count() <= 100, "{a:?}: {} columns: {line}", line.chars().count());
        }
    }
    let (_, narrow, _) = run(&["gpus", "--width", "100"]);
    assert!(
        narrow.contains(
            "hidden to fit the terminal: ridge fp8; SMs; links, each way; description (--wide shows every column)"
        ),
        "{narrow}"
    );
    assert!(narrow.contains(" h100-sxm ") && narrow.contains("3.35 TB/s"), "the important columns stay");
    // --wide wins over nothing, and --width with --wide is refused.
    assert_eq!(run(&["gpus", "--wide"]).1, full);
    assert!(fails(&["gpus", "--wide", "--width", "80"]).contains("cannot be used with"));
}

// ---- item 20: conventions named for what they are ----

/// Mentions of the seed documents that do not define them: `the reference calculator`, `the reference calculator's`, … (a
/// definition reads `seed document 004`).
fn undefined_seed_mentions(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    ["seed 00", "seed doc", "seed's", "seed rule", "(seed)", "seed:"]
        .iter()
        .flat_map(|p| {
            lower.match_indices(p).map(|(i, _)| lower[i.saturating_sub(30)..(i + 30).min(lower.len())].to_string())
        })
        .collect()
}

#[test]
fn help_output_and_docs_name_the_reference_calculator() {
    let mut texts = vec![("--help".to_string(), run(&["--help"]).1)];
    for sub in
        ["ledger", "sweep", "kv", "levers", "latency", "cost", "measure", "advise", "zoom", "tile", "moe", "plan"]
    {
        texts.push((format!("{sub} --help"), run(&[sub, "--help"]).1));
    }
    for report in REPORTS {
        texts.push((report.join(" "), run(report).1));
    }
    texts.push(("ledger --counting seed".into(), run(&["ledger", "--counting", "seed"]).1));
    let root = repo_root();
    let mut pages = vec![root.join("README.md")];
    pages.extend(std::fs::read_dir(root.join("docs")).unwrap().map(|e| e.unwrap().path()));
    for page in pages.into_iter().filter(|p| p.extension().is_some_and(|e| e == "md")) {
        texts.push((page.display().to_string(), std::fs::read_to_string(&page).unwrap()));
    }
    let mut bare = Vec::new();
    for (name, text) in &texts {
        bare.extend(undefined_seed_mentions(text).into_iter().map(|m| format!("{name}: …{m}…")));
    }
    assert!(bare.is_empty(), "seed documents named without a definition:\n{}", bare.join("\n"));
    // The README defines the name the tool uses.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("**The reference calculator.**") && readme.contains("digit for digit under `--counting seed`")
    );
    // The counting help says what it counts, and `reference` is the same convention as `seed`.
    let help = run(&["ledger", "--help"]).1.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("only the weight and KV reads of the q/k/v/o and MLP projections, attention and lm_head"));
    assert_eq!(run(&["ledger", "--counting", "reference"]).1, run(&["ledger", "--counting", "seed"]).1);
}

//! The README's and docs/' examples are real output: every `$ llm-ledger …` line in a fenced block is run, and
//! every output line the README shows under it must appear, in order, in what the command prints
//! (a README may show an excerpt; a line `…` marks an elision). Commands run from the repository
//! root, so example files such as `examples/mix.csv` resolve.

use assert_cmd::Command;
use std::path::PathBuf;

struct Example {
    page: String,
    line: usize,
    args: Vec<String>,
    shown: Vec<String>,
}

fn examples(readme: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut current: Option<Example> = None;
    for (i, line) in readme.lines().enumerate() {
        if line.starts_with("```") {
            if in_block {
                out.extend(current.take());
            }
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ llm-ledger") {
            out.extend(current.take());
            // Drop a trailing shell comment (`  # …`).
            let cmd = cmd.split("  #").next().unwrap_or("");
            current = Some(Example {
                page: String::new(),
                line: i + 1,
                args: cmd.split_whitespace().map(str::to_string).collect(),
                shown: Vec::new(),
            });
        } else if line.starts_with("$ ") {
            out.extend(current.take());
        } else if let Some(e) = current.as_mut() {
            e.shown.push(line.trim_end().to_string());
        }
    }
    out
}

#[test]
fn readme_examples_are_real_output() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs")).unwrap().map(|e| e.unwrap().path()).collect();
    docs.sort();
    pages.extend(docs.into_iter().filter(|p| p.extension().is_some_and(|e| e == "md")));
    let mut examples = Vec::new();
    for page in &pages {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        for mut e in self::examples(&std::fs::read_to_string(page).unwrap()) {
            e.page = name.clone();
            examples.push(e);
        }
    }
    assert!(examples.len() >= 30, "the README and docs show {} examples", examples.len());
    let mut failures = Vec::new();
    for e in &examples {
        if e.args.first().is_some_and(|a| a == "serve") {
            continue; // a server; the explorer has its own tests
        }
        // Files the examples write go to the test's temporary directory, not the repository.
        let mut args = e.args.clone();
        for i in 1..args.len() {
            if args[i - 1] == "--plot" {
                args[i] = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(&args[i]).to_string_lossy().into_owned();
            }
        }
        let out = Command::cargo_bin("llm-ledger")
            .unwrap()
            .env("HF_HUB_OFFLINE", "1")
            .args(&args)
            .current_dir(&root)
            .output()
            .unwrap();
        // An example that shows `error: …` documents a refusal: compare stderr instead.
        let expects_error = e.shown.iter().find(|l| !l.is_empty()).is_some_and(|l| l.starts_with("error: "));
        if out.status.success() == expects_error {
            failures.push(format!(
                "{} line {}: `llm-ledger {}` exited with {:?}: {}",
                e.page,
                e.line,
                e.args.join(" "),
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
            continue;
        }
        let text = if expects_error { &out.stderr } else { &out.stdout };
        let actual: Vec<String> = String::from_utf8_lossy(text).lines().map(|l| l.trim_end().to_string()).collect();
        let mut pos = 0;
        for shown in e.shown.iter().filter(|l| !l.is_empty() && *l != "…" && *l != "...") {
            match actual[pos..].iter().position(|a| a == shown) {
                Some(p) => pos += p + 1,
                None => {
                    failures.push(format!(
                        "{} line {}: `llm-ledger {}` does not print (in order):\n  {shown}",
                        e.page,
                        e.line,
                        e.args.join(" ")
                    ));
                    break;
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} README examples differ from the real output:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// docs/inputs.md's "Input ranges" table is generated from the core's one definition
/// (`limits::ranges_markdown`); this fails if they drift. (It lives here, not in the core, so the
/// core crate packages and tests on its own.)
#[test]
fn the_docs_state_the_input_ranges_from_the_core_definition() {
    let page = include_str!("../../../../docs/inputs.md");
    let table = llm_ledger_core::limits::ranges_markdown();
    assert!(
        page.contains(&table),
        "docs/inputs.md's \"Input ranges\" table differs from limits::ranges_markdown():\n{table}"
    );
}

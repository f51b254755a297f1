//! Every command that prints a time for a scenario says whether it fits in GPU memory: `fits`,
//! `memory_bytes`, `gpu_memory_bytes` and `plan_command` in its JSON, a line in its table, and
//! the `plan` command to run when it does not.

use crate::harness::{fails, json, ok};
use serde_json::Value;

/// Llama 3 8B, bf16, decode at batch 1 × 2,048 cached tokens on an H100 SXM: weights
/// 8,030,261,248 × 2 = 16,060,522,496 B; KV 2,049 held tokens × 131,072 B = 268,566,528 B;
/// workspace T·(2H + X)·a + V·4 = (8,192 + 3·14,336)·2 + 128,256·4 = 615,424 B.
const LLAMA3_8B_DECODE_BYTES: f64 = 16_060_522_496.0 + 268_566_528.0 + 615_424.0;

const RESERVE_BYTES: f64 = 2e9;

/// The fit fields of a report (or of the sweep's head), checked against each other.
fn fit_of(v: &Value, what: &str) -> (bool, f64) {
    let fits = v["fits"].as_bool().unwrap_or_else(|| panic!("{what}: no `fits`: {v}"));
    let memory = v["memory_bytes"].as_f64().unwrap_or_else(|| panic!("{what}: no `memory_bytes`"));
    let gpu = v["gpu_memory_bytes"].as_f64().unwrap_or_else(|| panic!("{what}: no `gpu_memory_bytes`"));
    assert_eq!(gpu, 80e9, "{what}: one H100 SXM");
    assert_eq!(fits, memory <= gpu - RESERVE_BYTES, "{what}: fits is memory ≤ GPU memory − reserve");
    match v["plan_command"].as_str() {
        Some(cmd) => {
            assert!(!fits, "{what}: a plan command only when it does not fit");
            assert!(cmd.starts_with("llm-ledger plan --model ") && cmd.contains(" --tpot-ms "), "{what}: {cmd}");
        }
        None => assert!(fits && v["plan_command"].is_null(), "{what}: `plan_command` null when it fits"),
    }
    (fits, memory)
}

/// The commands with a scenario, each with `--model MODEL` appended.
fn commands() -> Vec<Vec<&'static str>> {
    vec![
        vec!["ledger"],
        vec!["kv"],
        vec!["levers"],
        vec!["latency"],
        vec!["cost"],
        vec!["measure", "--step-ms", "300"],
        vec!["advise"],
        vec!["zoom"],
        vec!["zoom", "--at", "layer.0.mlp"],
        vec!["sweep", "--batch", "1,2"],
    ]
}

#[test]
fn every_command_says_in_json_whether_the_model_fits() {
    for base in commands() {
        let mut args = base.clone();
        args.extend(["--format", "json"]);
        let (fits, memory) = fit_of(&json(&args), &format!("{args:?}"));
        assert!(fits, "{args:?}");
        if matches!(base[0], "ledger" | "kv" | "levers" | "measure" | "advise" | "zoom") {
            assert_eq!(memory, LLAMA3_8B_DECODE_BYTES, "{args:?}");
        }
        for model in ["llama-3.1-405b", "deepseek-v3"] {
            let mut args = base.clone();
            args.extend(["--model", model, "--format", "json"]);
            let v = json(&args);
            let (fits, memory) = fit_of(&v, &format!("{args:?}"));
            assert!(!fits && memory > 600e9, "{args:?}: {memory}");
            assert_eq!(
                v["plan_command"].as_str().unwrap(),
                format!("llm-ledger plan --model {model} --gpu h100-sxm --tpot-ms 50"),
                "{args:?}"
            );
        }
    }
}

#[test]
fn moe_says_per_batch_and_for_its_largest_batch_whether_it_fits() {
    let v = json(&["moe", "--model", "qwen3-30b-a3b", "--batch", "1,64", "--format", "json"]);
    fit_of(&v, "moe qwen3");
    let points = v["points"].as_array().unwrap();
    assert!(points.iter().all(|p| p["fits"] == true), "{v}");
    assert_eq!(v["memory_bytes"], points[1]["memory_bytes"]);
    let v = json(&["moe", "--model", "deepseek-v3", "--batch", "1,8", "--format", "json"]);
    assert!(!fit_of(&v, "moe deepseek").0);
    assert!(v["points"].as_array().unwrap().iter().all(|p| p["fits"] == false), "{v}");
    // Without a model there is no memory to fit.
    let v = json(&["moe", "--experts", "8", "--top-k", "2", "--format", "json"]);
    for k in ["fits", "memory_bytes", "gpu_memory_bytes", "plan_command"] {
        assert!(v[k].is_null(), "{k}: {v}");
    }
}

#[test]
fn plan_and_simulate_say_that_their_answer_fits() {
    let v = json(&["plan", "--model", "llama-3.1-405b", "--tpot-ms", "50", "--format", "json"]);
    let (fits, memory) = fit_of(&v, "plan");
    assert!(fits);
    assert_eq!(memory, v["ranked"][0]["memory_bytes"].as_f64().unwrap());
    let v = json(&["simulate", "--requests", "20", "--format", "json"]);
    assert!(fit_of(&v, "simulate").0);
    // Where nothing fits there is no answer to print: one error line.
    let e = fails(&["plan", "--model", "llama-3.1-405b", "--tpot-ms", "50", "--max-gpus", "4"]);
    assert!(e.contains("fit"), "{e}");
}

#[test]
fn a_table_says_whether_it_fits_and_names_the_plan_command_when_not() {
    let out = ok(&["ledger", "--wide"]);
    let line = out.lines().find(|l| l.starts_with("memory: ")).unwrap();
    assert_eq!(
        line,
        "memory: 16.3 GB (weights 16.1 GB + KV 269 MB + workspace 615 kB) of 78.0 GB available (80.0 GB − 2.00 GB reserve): fits"
    );
    assert!(!out.contains("llm-ledger plan"), "{out}");
    for args in [
        &["ledger", "--model", "llama-3.1-405b"][..],
        &["measure", "--model", "llama-3.1-405b", "--step-ms", "300"],
        &["zoom", "--model", "deepseek-v3"],
        &["levers", "--model", "llama-3.1-405b"],
        &["latency", "--model", "llama-3.1-405b"],
        &["cost", "--model", "llama-3.1-405b"],
        &["kv", "--model", "llama-3.1-405b"],
        &["advise", "--model", "llama-3.1-405b"],
        &["sweep", "--model", "llama-3.1-405b"],
        &["moe", "--model", "deepseek-v3", "--batch", "1"],
    ] {
        let out = ok(&[args, &["--wide"]].concat());
        let model = args[2];
        let hint = format!("`llm-ledger plan --model {model} --gpu h100-sxm --tpot-ms 50`");
        assert!(out.lines().any(|l| l.starts_with("find a layout that fits") && l.ends_with(&hint)), "{args:?}\n{out}");
    }
    // Under tensor parallelism the memory is one GPU's.
    let out = ok(&["ledger", "--model", "llama-3.1-405b", "--tp", "8", "--pp", "2", "--wide"]);
    assert!(out.contains("memory on the fullest GPU: 50.8 GB") && out.contains("): fits"), "{out}");
}

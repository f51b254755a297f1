//! `llm-ledger` across GPUs: the TP ledger table, the plan, their JSON, and bad layouts (one line
//! on stderr, exit code 2).

use crate::harness::{fails, json, ok};
use serde_json::Value;

#[test]
fn tp_ledger_table() {
    insta::assert_snapshot!(ok(&["ledger", "--model", "llama-3.1-70b", "--tp", "8", "--batch", "16"]));
}

#[test]
fn pipeline_ledger_table() {
    insta::assert_snapshot!(ok(&["ledger", "--model", "llama-3.1-405b", "--tp", "8", "--pp", "2", "--batch", "64"]));
}

#[test]
fn plan_table() {
    insta::assert_snapshot!(ok(&["plan", "--model", "llama-3.1-405b", "--tpot-ms", "50", "--max-gpus", "16"]));
}

#[test]
fn tp_ledger_json_has_link_rows_and_the_deployment() {
    let v = json(&["ledger", "--model", "llama-3.1-70b", "--tp", "8", "--format", "json"]);
    let rows = v["rows"].as_array().unwrap();
    let ar = rows.iter().find(|r| r["op"] == "all_reduce_attn").unwrap();
    assert_eq!(ar["bound"], "link");
    assert_eq!(ar["bytes"], 0.0);
    assert!(ar["link_bytes"].as_f64().unwrap() > 0.0);
    assert!(ar["link_time_s"].as_f64().unwrap() > 0.0);
    assert_eq!(v["inputs"]["parallel"]["tp"], 8);
    assert_eq!(v["inputs"]["parallel"]["tp_link"], "NVLink 4 (NVSwitch)");
    assert_eq!(v["deployment"]["gpus"], 8);
    let per_gpu = v["deployment"]["tokens_per_s_per_gpu"].as_f64().unwrap();
    assert!((per_gpu * 8.0 - v["tokens_per_s"].as_f64().unwrap()).abs() < 1e-9);
    // One GPU has neither key.
    let one = json(&["ledger", "--format", "json"]);
    assert!(one["inputs"].get("parallel").is_none() && one.get("deployment").is_none());
    // CSV carries the link columns, then where each row's time came from.
    let csv = ok(&["ledger", "--model", "llama-3.1-70b", "--tp", "2", "--format", "csv"]);
    assert!(csv.lines().next().unwrap().ends_with(",link_bytes,link_time_s,time_source"));
}

#[test]
fn plan_json_ranks_and_explains() {
    // 405B at fp8 on at most 8 GPUs at 35 ms: TP 8 is the only layout (core tests/parallel.rs; the
    // measured clock's TP 8 takes 30.8 ms at batch 1, a pipeline split of 8 GPUs at least 38 ms).
    let fp8 = |format: &str| {
        ok(&[
            "plan",
            "--model",
            "llama-3.1-405b",
            "--weights",
            "fp8",
            "--tpot-ms",
            "35",
            "--max-gpus",
            "8",
            "-f",
            format,
        ])
    };
    let v: Value = serde_json::from_str(&fp8("json")).unwrap();
    let ranked = v["ranked"].as_array().unwrap();
    assert_eq!(ranked.len(), 1);
    assert_eq!((ranked[0]["tp"].as_u64(), ranked[0]["pp"].as_u64()), (Some(8), Some(1)));
    assert!(v["pareto"].as_array().unwrap().len() > 1);
    assert!(v["refused"].as_array().unwrap().iter().any(|r| r["reason"] == "too_slow"));
    assert!(v["refused"].as_array().unwrap().iter().any(|r| r["reason"] == "does_not_fit"));
    let csv = fp8("csv");
    assert!(csv.starts_with("tp,pp,ep,gpus,batch,tpot_s,"), "{csv}");
    // Candidate batches from --batch.
    let v = json(&[
        "plan",
        "--model",
        "llama-3.1-70b",
        "--tpot-ms",
        "30",
        "--max-gpus",
        "8",
        "--batch",
        "1,8,32",
        "-f",
        "json",
    ]);
    assert!(v["ranked"].as_array().unwrap().iter().all(|p| [1, 8, 32].contains(&p["batch"].as_u64().unwrap())));
}

#[test]
fn sweep_latency_and_cost_take_a_layout() {
    let sweep = ok(&["sweep", "--model", "llama-3.1-70b", "--tp", "4", "--batch", "1,64"]);
    assert!(
        sweep.starts_with("llama-3.1-70b on h100-sxm · decode · weights bf16 · KV bf16 · TP 4 (4 GPUs) · sweep"),
        "{sweep}"
    );
    let cost =
        json(&["cost", "--model", "llama-3.1-70b", "--tp", "4", "--batch", "8", "--usd-per-hour", "2", "-f", "json"]);
    // A replica of 4 GPUs costs 4 × $2 per hour.
    let tpot = cost["rows"][0]["tpot_s"].as_f64().unwrap();
    let usd = cost["usd_per_million_output_tokens"].as_f64().unwrap();
    assert!((usd - 4.0 * 2.0 / 3600.0 * tpot / 8.0 * 1e6).abs() < 1e-9 * usd, "{usd}");
    ok(&["latency", "--model", "llama-3.1-405b", "--tp", "8", "--pp", "2", "--output", "8"]);
}

#[test]
fn bad_layouts_are_one_line() {
    let cases: [(&[&str], &str); 11] = [
        (
            &["ledger", "--model", "llama-3.1-70b", "--tp", "3"],
            "error: invalid `--tp`: 3 (a divisor of the 64 attention heads of llama-3.1-70b)",
        ),
        (&["ledger", "--ep", "2"], "error: invalid `--ep`: 2 (1: llama-3-8b has no experts)"),
        (
            &["ledger", "--model", "mixtral-8x7b", "--ep", "3"],
            "error: invalid `--ep`: 3 (a divisor of the 8 experts of mixtral-8x7b)",
        ),
        (
            &["ledger", "--pp", "33"],
            "error: invalid `--pp`: 33 (at most the 32 layers of llama-3-8b (one stage per layer))",
        ),
        (&["ledger", "--tp", "-2"], "error: invalid `--tp`: \"-2\" (a non-negative integer)"),
        (
            &["ledger", "--gpu", "l40s", "--tp", "2", "--interconnect", "nvlink"],
            "error: invalid `--interconnect`: nvlink (pcie: l40s has no NVLink or other scale-up link)",
        ),
        (&["ledger", "--interconnect", "ethernet"], "error: unknown interconnect `ethernet`; accepted: nvlink, pcie"),
        (&["kv", "--tp", "2"], "error: unexpected argument '--tp' found"),
        (&["advise", "--pp", "2"], "error: unexpected argument '--pp' found"),
        (&["plan", "--tpot-ms", "50", "--tp", "2"], "error: unexpected argument '--tp' found"),
        (
            &["plan", "--tpot-ms", "50", "--max-gpus", "0"],
            "error: invalid `--max-gpus`: 0 (an integer from 1 to 1,024)",
        ),
    ];
    for (args, want) in cases {
        let e = fails(args);
        assert!(e.starts_with(want), "{args:?}: {e}");
    }
    let e = fails(&["plan", "--model", "llama-3.1-405b", "--tpot-ms", "50", "--max-gpus", "1"]);
    assert!(e.contains("TP 8 × PP 2 (16 GPUs)"), "{e}");
}

/// A plan that ranks nothing is worded by the report crate from the core's quantities
/// (`PlanRefused`), naming the CLI's flags: 405B bf16 is 812.8 GB; TP 4 × PP 2 holds a quarter of
/// each stage's half, 101.6 GB per GPU, against 80 − 2 (reserve) = 78 GB. (Times on the roofline
/// clock, whose arithmetic the core's plan tests show.)
#[test]
fn plan_refusals_name_the_flags_and_what_would_fit() {
    assert_eq!(
        fails(&["plan", "--model", "llama-3.1-405b", "--tpot-ms", "50", "--max-gpus", "8", "--time-model", "roofline"]),
        "error: invalid `--max-gpus`: 8 (enough GPUs for llama-3.1-405b on h100-sxm at 2048 cached tokens: with at most \
         8 GPUs the fullest GPU still needs 101.6 GB of the 78.0 GB available (TP 4 × PP 2 (8 GPUs)); the smallest layout \
         that fits and meets the bound is TP 8 × PP 2 (16 GPUs) (41.6 ms per token at batch 1): raise `--max-gpus` to 16 \
         (the smallest that fits at all, PP 11 (11 GPUs), takes 301.8 ms), or store the weights in fewer bits \
         (`--weights` = fp8, int4))"
    );
    let e = fails(&["plan", "--model", "llama-3.1-405b", "--tpot-ms", "5", "--max-gpus", "16"]);
    assert!(
        e.starts_with("error: invalid `--tpot-ms`: 5.000 ms (a bound some layout meets: the fastest within 16 GPUs"),
        "{e}"
    );
    // A batch no layout holds is the batch's refusal, not the bound's.
    assert_eq!(
        fails(&["plan", "--batch", "100000", "--tpot-ms", "100", "--max-gpus", "2"]),
        "error: invalid `--batch`: 100000 (a batch some layout holds: within 2 GPUs at 2048 cached tokens the largest \
         is 519, on TP 2 (2 GPUs), for llama-3-8b on h100-sxm)"
    );
    // Batches that fit but miss the bound are timed at the smallest of them.
    let e = fails(&["plan", "--batch", "256,512", "--tpot-ms", "7", "--max-gpus", "2"]);
    assert!(e.starts_with("error: invalid `--tpot-ms`: 7.000 ms (a bound some layout meets: "), "{e}");
    assert!(e.contains(" per output token at batch 256 for llama-3-8b"), "{e}");
    // Layouts that hold none of the batches are counted apart. One H100 holds 230 sequences of
    // 2,049 positions: (78 GB − 16.1 GB of weights − workspace) ÷ 268.6 MB per sequence.
    let out = ok(&["plan", "--batch", "1000,5000", "--tpot-ms", "40", "--max-gpus", "4"]);
    assert!(
        out.contains("refused: 7 layouts tried; 4 hold none of the batches asked for (e.g. 1 GPU: at most 230)"),
        "{out}"
    );
}

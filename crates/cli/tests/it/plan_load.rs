//! `plan --rate`: the cheapest deployment holding p99 SLAs at an arrival rate, by simulation.

use crate::harness::{fails, json, ok};

/// A small search: Llama 3 8B on the H100 (the defaults), at most 2 GPUs per replica, short
/// requests, few of them.
fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["plan", "--max-gpus", "2", "--requests", "100", "--prompt", "256", "--output", "16"];
    a.extend_from_slice(extra);
    a
}

#[test]
fn at_a_low_rate_one_gpu_holds_the_sla_and_is_the_cheapest() {
    // One request every 2 s, each needing well under 100 ms alone: one GPU holds a 1 s TTFT and
    // a 50 ms TPOT, and nothing with more GPUs can be cheaper at the same rate.
    let v = json(&args(&["--rate", "0.5", "--ttft-ms", "1000", "--tpot-ms", "50", "-f", "json"]));
    let best = &v["ranked"][0];
    assert_eq!(best["gpus"], 1, "{best}");
    assert_eq!(best["replicas"], 1);
    assert_eq!(best["meets_sla"], true);
    assert!(best["ttft_p99_s"].as_f64().unwrap() <= 1.0);
    assert!(best["tpot_p99_s"].as_f64().unwrap() <= 0.05);
    let costs: Vec<f64> =
        v["ranked"].as_array().unwrap().iter().map(|p| p["usd_per_million_tokens"].as_f64().unwrap()).collect();
    assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{costs:?}");
    assert!(v["layouts"].as_u64().unwrap() >= 2, "tp 1 and tp 2 were both considered");
    let front = v["pareto"].as_array().unwrap();
    assert!(!front.is_empty());
    assert!(front.windows(2).all(|w| w[1]["e2e_p99_s"].as_f64() < w[0]["e2e_p99_s"].as_f64()));
}

#[test]
fn a_higher_rate_needs_more_than_one_gpu() {
    // 40 requests/s of 256 + 16 tokens at a tight TTFT: one H100 replica at batch 8 max does not
    // keep up (each request needs a prefill), so the answer has more GPUs.
    let low = json(&args(&["--rate", "0.5", "--ttft-ms", "200", "--tpot-ms", "50", "-f", "json"]));
    let high = json(&args(&["--rate", "400", "--ttft-ms", "200", "--tpot-ms", "50", "-f", "json"]));
    assert!(high["ranked"][0]["gpus"].as_u64() > low["ranked"][0]["gpus"].as_u64(), "{}", high["ranked"][0]);
}

#[test]
fn the_same_seed_gives_the_same_plan() {
    let a = args(&["--rate", "4", "--ttft-ms", "500", "--tpot-ms", "50", "--seed", "3"]);
    assert_eq!(ok(&a), ok(&a));
    let csv = args(&["--rate", "4", "--ttft-ms", "500", "--tpot-ms", "50", "--seed", "3", "-f", "csv"]);
    assert_eq!(ok(&csv), ok(&csv));
}

#[test]
fn an_impossible_sla_is_refused_with_the_closest_p99s() {
    // A 1 µs TTFT: simulated, missed; the message names both flags and the p99s reached.
    let e = fails(&args(&["--rate", "1", "--ttft-ms", "0.001", "--tpot-ms", "50"]));
    assert!(e.starts_with("error: invalid `--ttft-ms`/`--tpot-ms`: no deployment"), "{e}");
    assert!(e.contains("the closest") && e.contains("reaches p99 TTFT") && e.contains("p99 TPOT"), "{e}");
    assert_eq!(e.lines().count(), 1);
    // A TPOT no layout reaches even alone: no simulation needed.
    let e = fails(&args(&["--rate", "1", "--ttft-ms", "500", "--tpot-ms", "0.001"]));
    assert!(e.contains("takes") && e.contains("per output token even alone"), "{e}");
}

#[test]
fn without_a_rate_plan_is_the_static_plan() {
    let v = json(&["plan", "--tpot-ms", "50", "--max-gpus", "2", "-f", "json"]);
    assert!(v.get("ctx").is_some() && v.get("rate_per_s").is_none());
}

#[test]
fn plan_under_load_lists_each_deployment_once() {
    // Short requests at a low rate never fill 16 sequences: every larger max-seqs limit simulates
    // the same run, and the table and the front list it once (with the smallest limit).
    let v = json(&args(&["--rate", "2", "--ttft-ms", "1000", "--tpot-ms", "50", "-f", "json"]));
    for list in ["ranked", "pareto"] {
        let rows = v[list].as_array().unwrap();
        let outcome = |p: &serde_json::Value| {
            let f = |k: &str| p[k].as_f64().unwrap().to_bits();
            (
                p["tp"].as_u64(),
                p["ep"].as_u64(),
                p["replicas"].as_u64(),
                p["chunk_tokens"].as_u64(),
                f("ttft_p99_s"),
                f("tpot_p99_s"),
                f("e2e_p99_s"),
                f("output_tokens_per_s"),
            )
        };
        let mut seen = std::collections::HashSet::new();
        for p in rows {
            assert!(seen.insert(outcome(p)), "{list}: a repeated deployment {p}");
        }
    }
    assert_eq!(v["ranked"][0]["max_seqs"], 8, "{}", v["ranked"][0]);
}

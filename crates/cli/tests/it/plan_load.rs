//! `plan --rate`: the cheapest deployment holding p99 SLAs at an arrival rate, by simulation.

use crate::harness::{fails, json, ok};
use serde_json::Value;

/// Every ranked deployment holds both p99 bounds, and its GPUs are its instances' GPUs.
fn assert_ranked_hold(v: &Value) {
    let (ttft, tpot) = (v["ttft_bound_s"].as_f64().unwrap(), v["tpot_bound_s"].as_f64().unwrap());
    for p in v["ranked"].as_array().unwrap() {
        assert_eq!(p["meets_sla"], true, "{p}");
        assert!(p["ttft_p99_s"].as_f64().unwrap() <= ttft && p["tpot_p99_s"].as_f64().unwrap() <= tpot, "{p}");
        let n = |k: &str| p[k].as_u64().unwrap();
        let gpus = match p["serving"].as_str().unwrap() {
            "aggregated" => n("replicas") * n("tp") * n("pp") * n("ep"),
            _ => {
                n("prefill_instances") * n("prefill_tp") * n("prefill_ep")
                    + n("decode_instances") * n("decode_tp") * n("decode_ep")
            }
        };
        assert_eq!(n("gpus"), gpus, "{p}");
    }
}

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
    assert_ranked_hold(&v);
    let best = &v["ranked"][0];
    assert_eq!(best["gpus"], 1, "{best}");
    assert_eq!(best["replicas"], 1);
    assert_eq!(best["meets_sla"], true);
    assert!(best["ttft_p99_s"].as_f64().unwrap() <= 1.0);
    assert!(best["tpot_p99_s"].as_f64().unwrap() <= 0.05);
    let costs: Vec<f64> =
        v["ranked"].as_array().unwrap().iter().map(|p| p["usd_per_request"].as_f64().unwrap()).collect();
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

#[test]
fn with_long_prompts_and_a_tight_tpot_a_disaggregated_deployment_is_cheapest() {
    // 8,192-token prompts at 4 requests/s with a 10 ms p99 TPOT: aggregated, every decode step
    // that carries a prefill chunk is slow, so it takes 2 replicas of TP 2 (4 GPUs); one prefill
    // GPU feeding a TP 2 decode instance holds both bounds on 3.
    let a = ["plan", "--max-gpus", "2", "--requests", "200", "--prompt", "8192", "--output", "256"];
    let a: Vec<&str> = a.iter().chain(&["--rate", "4", "--ttft-ms", "3000", "--tpot-ms", "10"]).copied().collect();
    let v = json(&[a.as_slice(), &["-f", "json"]].concat());
    assert_ranked_hold(&v);
    // 2 prefill × 2 decode layouts × 1 or 2 sequence limits (TP 1 decodes 8 sequences within
    // 10 ms, and no fewer are tried).
    let split_candidates = v["disaggregated_candidates"].as_u64().unwrap();
    assert!((4..=8).contains(&split_candidates), "{split_candidates}");
    let best = &v["ranked"][0];
    assert_eq!(best["serving"], "disaggregated", "{best}");
    assert_eq!((best["prefill_instances"].as_u64(), best["prefill_tp"].as_u64()), (Some(1), Some(1)), "{best}");
    assert_eq!((best["decode_instances"].as_u64(), best["decode_tp"].as_u64()), (Some(1), Some(2)), "{best}");
    assert_eq!((best["gpus"].as_u64(), best["replicas"].as_u64()), (Some(3), Some(1)));
    let cost = |p: &Value| p["usd_per_request"].as_f64().unwrap();
    let ranked = v["ranked"].as_array().unwrap();
    let aggregated: Vec<&Value> = ranked.iter().filter(|p| p["serving"] == "aggregated").collect();
    assert!(!aggregated.is_empty() && aggregated.iter().all(|p| cost(p) > cost(best) && p["gpus"].as_u64() >= Some(4)));
    // Aggregated points carry no pools.
    assert!(aggregated.iter().all(|p| p["prefill_instances"].is_null() && p["decode_tp"].is_null()));
    let table = ok(&a);
    assert!(table.contains("disagg 1:1   prefill TP 1, decode TP 2"), "{table}");
    assert!(table.contains("answer: disagg 1:1 (prefill TP 1, decode TP 2), 3 GPUs in all"), "{table}");
    let csv = ok(&[a.as_slice(), &["-f", "csv"]].concat());
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for k in ["serving", "prefill_instances", "prefill_tp", "decode_instances", "decode_tp"] {
        assert!(header.contains(&k), "{k}: {header:?}");
    }
    assert!(csv.lines().nth(1).unwrap().contains(",disaggregated,1,1,1,1,2,1"), "{csv}");
}

/// One question, one answer: the deployment `plan --rate` picks, run by `simulate` with the same
/// scheduler, requests and seed at the replica's rate, costs the same to the last digit; and the
/// capacity `simulate --rate max` finds costs what `simulate` at that rate costs.
#[test]
fn plan_under_load_simulate_and_capacity_give_one_price() {
    let v = json(&args(&["--rate", "3", "--ttft-ms", "1000", "--tpot-ms", "50", "-f", "json"]));
    let best = &v["ranked"][0];
    assert_eq!(best["serving"], "aggregated", "{best}");
    let n = |k: &str| best[k].as_u64().unwrap().to_string();
    let (tp, seqs, chunk) = (n("tp"), n("max_seqs"), n("chunk_tokens"));
    // `simulate` at `rate` with the search's requests and bounds, and `extra` flags.
    let sim = |rate: &str, extra: &[&str]| {
        let mut a = vec!["simulate", "--rate", rate, "--requests", "100", "--prompt", "256", "--output", "16"];
        a.extend_from_slice(&["--ttft-ms", "1000", "--tpot-ms", "50", "-f", "json"]);
        a.extend_from_slice(extra);
        json(&a)
    };
    let rate = best["rate_per_replica_per_s"].as_f64().unwrap().to_string();
    let s = sim(&rate, &["--tp", &tp, "--max-seqs", &seqs, "--max-batched-tokens", &chunk, "--chunk", &chunk]);
    for key in ["usd_per_million_input_tokens", "usd_per_million_output_tokens", "usd_per_request"] {
        assert_eq!(best[key], s["cost"][key], "{key}: plan {best} simulate {}", s["cost"]);
    }
    assert_eq!(s["cost"]["basis"], "under-load");
    // The capacity's price is simulate's at the capacity.
    let c = sim("max", &[]);
    let cap = c["capacity"]["capacity_per_s"].as_f64().unwrap();
    let at = sim(&cap.to_string(), &[]);
    assert_eq!(c["cost"], at["cost"]);
    assert_eq!(c["summary"], at["summary"]);
    // The CSV row carries the same prices.
    let csv = ok(&[
        "simulate",
        "--rate",
        &cap.to_string(),
        "--requests",
        "100",
        "--prompt",
        "256",
        "--output",
        "16",
        "-f",
        "csv",
    ]);
    let (header, row) = (csv.lines().next().unwrap(), csv.lines().nth(1).unwrap());
    let field = |k: &str| row.split(',').nth(header.split(',').position(|h| h == k).unwrap()).unwrap().to_string();
    assert_eq!(field("usd_per_request").parse::<f64>().unwrap(), at["cost"]["usd_per_request"].as_f64().unwrap());
    assert!(c["capacity"]["saturation_per_s"].as_f64().unwrap() >= cap);
}

/// `--gpus-total` bounds the deployment's GPUs in all (every replica), where `--max-gpus` bounds
/// one replica: a rate that takes several replicas gets no answer past the total.
#[test]
fn gpus_total_bounds_every_replica_together() {
    let free = json(&args(&["--rate", "60", "--ttft-ms", "1000", "--tpot-ms", "50", "-f", "json"]));
    let most = free["ranked"].as_array().unwrap().iter().map(|p| p["gpus"].as_u64().unwrap()).max().unwrap();
    assert!(most > 2, "the unbounded search has deployments of more than 2 GPUs: {most}");
    let bounded =
        json(&args(&["--rate", "60", "--ttft-ms", "1000", "--tpot-ms", "50", "--gpus-total", "2", "-f", "json"]));
    let ranked = bounded["ranked"].as_array().unwrap();
    assert!(!ranked.is_empty());
    assert!(ranked.iter().all(|p| p["gpus"].as_u64().unwrap() <= 2), "{ranked:?}");
    let e = fails(&args(&["--rate", "60", "--ttft-ms", "1000", "--tpot-ms", "50", "--gpus-total", "0"]));
    assert!(e.contains("--gpus-total"), "{e}");
    let e = fails(&args(&["--gpus-total", "4", "--tpot-ms", "50"]));
    assert!(e.contains("--gpus-total") && e.contains("--rate"), "{e}");
}

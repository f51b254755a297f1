//! The economics subcommands end to end: seed figures, stable JSON keys, formats, bad inputs.
//! `data/histogram.csv` is a made-up production mix (40 × 2,048 + 4 × 32,768 tokens);
//! `data/empty.csv` and `data/negative.csv` are the bad histograms.

use crate::harness::{fails, ok_quiet as ok};
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    serde_json::from_str(&ok(&a)).unwrap()
}

#[test]
fn seed_sweep_from_the_command_line() {
    let v = json(&["sweep", "--counting", "seed", "--batch", "1,8,32,64,128,256", "--ctx", "2048"]);
    let p = v["points"].as_array().unwrap();
    assert_eq!(p.len(), 6);
    let ms = |i: usize| format!("{:.1}", p[i]["step_time_s"].as_f64().unwrap() * 1e3);
    assert_eq!((ms(0), ms(4)), ("5.7".to_string(), "18.4".to_string()));
    assert_eq!(p[0]["tokens_per_s"].as_f64().unwrap().round(), 175.0);
    assert_eq!((p[4]["tokens_per_s"].as_f64().unwrap() / 100.0).round() * 100.0, 6900.0);
    assert_eq!(format!("{:.0}", p[5]["memory_bytes"].as_f64().unwrap() / 1e9), "84");
    assert_eq!(p[5]["fits"], false);
    for k in ["batch", "ctx", "step_time_s", "tokens_per_s", "memory_bytes", "fits"] {
        assert!(p[0].get(k).is_some(), "{k}");
    }
}

#[test]
fn sweep_streams_every_format() {
    let table = ok(&["sweep", "--batch", "1..4", "--ctx", "0..8192:4096"]);
    assert_eq!(table.lines().filter(|l| l.ends_with(" yes")).count(), 12);
    let csv = ok(&["sweep", "--batch", "1..256*2", "-f", "csv"]);
    assert_eq!(csv.lines().count(), 10);
    assert!(csv.starts_with("batch,ctx,step_time_s,tokens_per_s,"));
    let md = ok(&["sweep", "--batch", "1,2", "-f", "md"]);
    assert!(md.contains("| batch | ctx |"));
}

#[test]
fn kv_crossover_and_stable_keys() {
    let v = json(&["kv", "--counting", "seed", "--batch", "64"]);
    assert_eq!(v["kv_bytes_per_token"], 131072.0);
    assert_eq!(v["weight_bytes"], 15009316864.0);
    assert_eq!((v["crossover_tokens"].as_f64().unwrap() / 100.0).round() * 100.0, 114500.0);
    assert_eq!(v["side"], "above");
    assert!(v["max_cached_tokens"].as_u64().unwrap() > 400_000);
}

#[test]
fn levers_reproduce_the_seed() {
    let v = json(&["levers", "--counting", "seed", "--batch", "8", "--ctx", "32768"]);
    let kv = v["levers"].as_array().unwrap().iter().find(|l| l["name"] == "kv-fp8").unwrap().clone();
    assert_eq!(format!("{:.1}", kv["outcome"]["step_time_s"].as_f64().unwrap() * 1e3), "12.0");
    let v = json(&["levers", "--counting", "seed", "--batch", "1"]);
    let w4 = v["levers"].as_array().unwrap().iter().find(|l| l["name"] == "w4a16").unwrap().clone();
    assert_eq!(format!("{:.1}", w4["outcome"]["step_time_s"].as_f64().unwrap() * 1e3), "1.5");
}

#[test]
fn latency_cost_measure_advise_keys() {
    let l = json(&["latency", "--batch", "4", "--prompt", "1000", "--output", "50"]);
    for k in ["ttft_s", "tpot_s", "e2e_s"] {
        assert!(l[k].is_number(), "{k}");
    }
    let c = json(&["cost", "--usd-per-hour", "2", "--tpot-ms", "15"]);
    assert!(c["usd_per_million_output_tokens"].is_number());
    assert_eq!(c["price_source"], "user");
    let m = json(&["measure", "--tokens-per-s", "120"]);
    assert!(m["mbu"].is_number() && m["mfu"].is_number());
    let a = json(&["advise", "--histogram", "tests/data/histogram.csv"]);
    assert_eq!(a["crossover"]["side"], "above");
    assert!(a["lines"].as_array().unwrap().len() > 3);
    assert!(ok(&["advise", "--batch", "4", "-f", "csv"]).starts_with("name,side,batch,"));
}

#[test]
fn bad_inputs_get_one_line_and_exit_2() {
    assert!(fails(&["sweep", "--batch", "0..5"]).contains("invalid `--batch`: 0 (values from 1 to 1,073,741,824)"));
    assert!(fails(&["sweep", "--batch", "9..1"]).contains("a range a..b with a ≤ b"));
    assert!(fails(&["sweep", "--batch", "1..10:0"]).contains("a step of at least 1"));
    assert!(fails(&["sweep", "--batch", "1..100000", "--ctx", "0..100000"]).contains("at most 100000000 points"));
    assert!(fails(&["sweep", "--contexts", "2048x8"]).contains("unexpected argument '--contexts' found"));
    assert!(fails(&["sweep", "--phase", "prefill", "--ctx", "0..10"]).contains("invalid `--ctx`: 0"));
    assert!(fails(&["kv", "--histogram", "tests/data/empty.csv"]).contains("empty"));
    assert!(fails(&["kv", "--histogram", "tests/data/negative.csv"]).contains("histogram line 2"));
    assert!(fails(&["cost", "--tpot-ms", "0.5"]).contains("a bound that some batch meets: even batch 1 takes"));
    assert!(fails(&["cost", "--usd-per-hour", "-1"]).contains("invalid `--usd-per-hour`"));
    assert!(fails(&["latency", "--output", "0"]).contains("invalid `--output`: 0"));
    assert!(fails(&["latency", "--ctx", "100"]).contains("unexpected argument '--ctx' found"));
    assert!(fails(&["kv", "--reserve", "90GB"]).contains("less than the GPU"));
    assert!(fails(&["measure", "--step-ms", "0"]).contains("invalid `--step-ms`"));
}

/// "does it fit" has one answer per basis, and every output says which. Llama
/// 3.1 70B fp8 on an A100 80GB: a decode step at 2,048 cached tokens fits batch 9 (kv, sweep,
/// levers, advise, plan); requests of 2,048 + 256 tokens fit batch 5 (latency, cost), because
/// their prefill step of 5 × 2,048 tokens with its workspace is their peak — the step basis of
/// `kv --phase prefill --ctx 2048` says the same.
#[test]
fn does_it_fit_has_one_answer_per_basis_and_every_output_names_it() {
    let m = ["--model", "llama-3.1-70b", "--gpu", "a100-80gb-sxm", "--weights", "fp8"];
    let with = |rest: &[&str]| -> Vec<String> { rest.iter().chain(&m).map(|s| s.to_string()).collect() };
    let j = |rest: &[&str]| {
        let a = with(rest);
        json(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let table = |rest: &[&str]| {
        let a = with(rest);
        ok(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // Step basis, decode at 2,048 cached tokens.
    let kv = j(&["kv", "--batch", "9"]);
    assert_eq!((&kv["fits"], &kv["max_batch"], &kv["fit_basis"]), (&true.into(), &9.into(), &"step".into()));
    assert_eq!(j(&["kv", "--batch", "10"])["fits"], false);
    let sw = j(&["sweep", "--batch", "9,10"]);
    assert_eq!(sw["fit_basis"], "step");
    let fits: Vec<bool> = sw["points"].as_array().unwrap().iter().map(|p| p["fits"].as_bool().unwrap()).collect();
    assert_eq!(fits, [true, false]);
    let lv = j(&["levers"]);
    assert_eq!(lv["fit_basis"], "step");
    let batch = lv["levers"].as_array().unwrap().iter().find(|l| l["name"] == "batch").unwrap().clone();
    assert_eq!((&batch["outcome"]["batch"], &batch["outcome"]["fits"]), (&9.into(), &true.into()));
    let ad = j(&["advise"]);
    assert_eq!((&ad["max_batch"], &ad["fit_basis"]), (&9.into(), &"step".into()));
    let pl = j(&["plan", "--tpot-ms", "1000", "--max-gpus", "1"]);
    assert_eq!((&pl["ranked"][0]["max_batch"], &pl["fit_basis"]), (&9.into(), &"step".into()));
    // Request-peak basis: the prefill step decides.
    let la = j(&["latency"]);
    assert_eq!(
        (&la["max_batch"], &la["fit_basis"], &la["peak_phase"]),
        (&5.into(), &"request_peak".into(), &"prefill".into())
    );
    assert_eq!(j(&["latency", "--batch", "5"])["fits"], true);
    assert_eq!(j(&["latency", "--batch", "6"])["fits"], false);
    for (b, fits) in [("5", true), ("6", false), ("9", false)] {
        let c = j(&["cost", "--batch", b]);
        assert_eq!(
            (&c["rows"][0]["fits"], &c["rows"][0]["fit_basis"]),
            (&fits.into(), &"request_peak".into()),
            "cost --batch {b}"
        );
    }
    assert_eq!(j(&["kv", "--phase", "prefill", "--ctx", "2048"])["max_batch"], 5);
    // The last decode step holds 2,048 + 256 − 1 tokens: at ctx 2,302 a step fits 8.
    assert_eq!(j(&["kv", "--ctx", "2302"])["max_batch"], 8);
    // Every table says which basis it used.
    for cmd in [&["kv"][..], &["sweep"], &["levers"], &["advise"], &["plan", "--tpot-ms", "1000", "--max-gpus", "1"]] {
        assert!(table(cmd).contains("fit basis: this step — "), "{cmd:?}");
    }
    for cmd in ["latency", "cost"] {
        assert!(table(&[cmd]).contains("fit basis: the requests' peak — "), "{cmd}");
    }
    assert!(table(&["latency"]).contains("peak memory                    72.7 GB (prefill)"));
}

//! `llm-ledger simulate` end to end.

use crate::harness::{fails, json, ok, temp_file};

fn close(a: f64, b: f64, rel: f64) -> bool {
    ((a - b) / b).abs() <= rel
}

#[test]
fn simulate_json_has_the_summary_the_issue_lists() {
    let v = json(&["simulate", "--rate", "4", "--requests", "100", "--prompt", "512", "--output", "64", "-f", "json"]);
    let s = &v["summary"];
    for k in [
        "completed",
        "arrival_rate_per_s",
        "duration_s",
        "mean_in_system",
        "mean_latency_s",
        "output_tokens_per_s",
        "input_tokens_per_s",
        "goodput_per_s",
        "preemptions",
        "mean_kv_utilisation",
        "mean_batch",
        "mean_queue",
    ] {
        assert!(s[k].is_number(), "{k}: {s}");
    }
    for d in ["ttft_s", "tpot_s", "itl_s", "e2e_s"] {
        for q in ["mean", "p50", "p90", "p99"] {
            assert!(s[d][q].is_number(), "{d}.{q}");
        }
    }
    assert_eq!(s["completed"], 100);
    assert_eq!(v["settings"]["max_seqs"], 256);
    // The inputs are the step shape the simulator used (the step that sizes the KV cache), not the
    // ledger's default decode of batch 1 × 2,048.
    let v = json(&["simulate", "--requests", "20", "--max-batched-tokens", "4096", "--max-seqs", "32", "-f", "json"]);
    assert_eq!((v["inputs"]["phase"].as_str(), v["inputs"]["ctx"].as_u64()), (Some("prefill"), Some(4096)));
    let st = &v["settings"];
    assert_eq!(
        (st["max_seqs"].as_u64(), st["max_batched_tokens"].as_u64(), st["chunk_tokens"].as_u64()),
        (Some(32), Some(4096), Some(4096))
    );
}

#[test]
fn a_rate_sweep_gives_points_and_a_throughput_plot() {
    let plot = temp_file("sweep.svg", b"");
    let v = json(&[
        "simulate",
        "--rate",
        "1..3",
        "--requests",
        "50",
        "--prompt",
        "256",
        "--output",
        "16",
        "-f",
        "json",
        "--plot",
        &plot,
    ]);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    assert_eq!(points[2]["offered_rate_per_s"], 3.0);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("<svg") && svg.contains("p99 TTFT"), "{svg}");
}

#[test]
fn at_a_very_low_rate_simulate_agrees_with_latency() {
    let sim =
        json(&["simulate", "--rate", "0.001", "--requests", "3", "--prompt", "512", "--output", "32", "-f", "json"]);
    let lat = json(&["latency", "--prompt", "512", "--output", "32", "-f", "json"]);
    let s = &sim["summary"];
    assert!(close(s["ttft_s"]["mean"].as_f64().unwrap(), lat["ttft_s"].as_f64().unwrap(), 1e-9), "{s} vs {lat}");
    assert!(close(s["tpot_s"]["mean"].as_f64().unwrap(), lat["tpot_s"].as_f64().unwrap(), 1e-9));
}

#[test]
fn the_same_seed_prints_the_same_report() {
    let args = [
        "simulate",
        "--arrivals",
        "gamma",
        "--cv",
        "3",
        "--rate",
        "12",
        "--requests",
        "200",
        "--prompt",
        "lognormal:600:0.8",
        "--output",
        "uniform:8..128",
        "--seed",
        "7",
    ];
    assert_eq!(ok(&args), ok(&args));
    let mut other = args.to_vec();
    let last = other.len() - 1;
    other[last] = "8";
    assert_ne!(ok(&args), ok(&other));
}

#[test]
fn a_trace_replays_and_the_step_trace_and_timeline_are_written() {
    let trace = temp_file("trace.csv", b"arrival_s,prompt_tokens,output_tokens\n0,100,10\n0.01,2000,5\n0.5,300,40\n");
    let hist = temp_file("hist.csv", b"tokens,weight\n100,1\n200,1\n");
    let steps = temp_file("steps.csv", b"");
    let timeline = temp_file("timeline.svg", b"");
    let cdf = temp_file("cdf.svg", b"");
    let v = json(&[
        "simulate",
        "--trace",
        &trace,
        "-f",
        "json",
        "--trace-out",
        &steps,
        "--plot-timeline",
        &timeline,
        "--plot",
        &cdf,
    ]);
    let s = &v["summary"];
    assert_eq!(s["completed"], 3);
    assert_eq!(s["output_tokens"], 55);
    let csv = std::fs::read_to_string(&steps).unwrap();
    assert!(
        csv.starts_with("step,start_s,time_s,decodes,prefills,tokens,waiting,kv_blocks_used,preemptions\n"),
        "{csv}"
    );
    assert_eq!(csv.lines().count() as u64 - 1, s["steps"].as_u64().unwrap());
    assert!(std::fs::read_to_string(&timeline).unwrap().contains("waiting queue"));
    assert!(std::fs::read_to_string(&cdf).unwrap().contains("TTFT"));
    // A histogram of prompt lengths.
    let h = json(&[
        "simulate",
        "--rate",
        "5",
        "--requests",
        "40",
        "--prompt",
        &format!("hist:{hist}"),
        "--output",
        "4",
        "-f",
        "json",
    ]);
    assert_eq!(h["summary"]["completed"], 40);
    let p = h["summary"]["prompt_tokens"].as_u64().unwrap();
    assert!(p > 40 * 100 && p < 40 * 200, "{p}");
}

#[test]
fn a_closed_loop_matches_latency_at_that_batch() {
    let sim = json(&[
        "simulate",
        "--arrivals",
        "closed",
        "--concurrency",
        "8",
        "--requests",
        "16",
        "--prompt",
        "512",
        "--output",
        "32",
        "-f",
        "json",
    ]);
    let lat = json(&["latency", "--batch", "8", "--prompt", "512", "--output", "32", "-f", "json"]);
    assert!(close(sim["summary"]["ttft_s"]["mean"].as_f64().unwrap(), lat["ttft_s"].as_f64().unwrap(), 1e-9));
    assert!(close(sim["summary"]["tpot_s"]["mean"].as_f64().unwrap(), lat["tpot_s"].as_f64().unwrap(), 1e-9));
}

#[test]
fn disaggregated_serving_is_reported_beside_aggregated_on_the_same_gpus() {
    let base = ["simulate", "--requests", "200", "--prompt", "1024", "--output", "64", "--disagg", "1:3", "--tp", "2"];
    let one = |extra: &[&str]| -> Vec<String> { base.iter().chain(extra).map(|s| s.to_string()).collect() };
    let args = one(&["--rate", "6", "-f", "json"]);
    let v = json(&args.iter().map(String::as_str).collect::<Vec<_>>());
    // The disaggregated run keeps the summary's keys and adds its transfer times.
    let s = &v["summary"];
    assert_eq!(s["completed"], 200);
    for q in ["mean", "p50", "p99"] {
        assert!(s["kv_transfer_s"][q].is_number(), "{q}: {s}");
    }
    let a = &v["aggregated"];
    assert_eq!(a["completed"], 200);
    assert!(a.get("kv_transfer_s").is_none());
    let d = &v["disagg"];
    assert_eq!((d["prefill_instances"].as_u64(), d["decode_instances"].as_u64()), (Some(1), Some(3)));
    assert_eq!((d["gpus_per_instance"].as_u64(), d["gpus"].as_u64()), (Some(2), Some(8)));
    // 8 H100s fit one NVLink domain: auto picks NVLink.
    assert_eq!(d["link"]["choice"], "nvlink");
    assert!(close(d["link"]["bandwidth_bytes_per_s"].as_f64().unwrap(), 450e9 * 0.8, 1e-12));
    // A plain run's JSON has none of these keys.
    let plain = json(&["simulate", "--rate", "6", "--requests", "50", "-f", "json"]);
    for k in ["disagg", "aggregated", "aggregated_points"] {
        assert!(plain.get(k).is_none(), "{k}");
    }
    assert!(plain["summary"].get("kv_transfer_s").is_none());
    // A sweep: points and aggregated_points, one each per rate; CSV rows name the deployment.
    let args = one(&["--rate", "2,8", "-f", "json", "--kv-link", "network"]);
    let v = json(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(v["points"].as_array().unwrap().len(), 2);
    assert_eq!(v["aggregated_points"].as_array().unwrap().len(), 2);
    assert_eq!(v["disagg"]["link"]["choice"], "network");
    // The ideal link: no bandwidth (JSON null, not an infinity), and moves that take no time.
    let args = one(&["--rate", "6", "-f", "json", "--kv-link", "ideal"]);
    let v = json(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(v["disagg"]["link"]["bandwidth_bytes_per_s"].is_null(), "{}", v["disagg"]);
    assert_eq!(v["summary"]["kv_transfer_s"]["max"], 0.0);
    let args = one(&["--rate", "2,8", "-f", "csv"]);
    let csv = ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let column = csv.lines().next().unwrap().split(',').position(|h| h == "deployment").unwrap();
    let deployments: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(column).unwrap()).collect();
    assert_eq!(deployments, ["disagg 1:3", "aggregated ×4", "disagg 1:3", "aggregated ×4"], "{csv}");
    // The table: two rows a rate, and the link and the TTFT convention in the footer.
    let args = one(&["--rate", "6"]);
    let table = ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(table.contains("disagg 1:3") && table.contains("aggregated ×4"), "{table}");
    assert!(table.contains("KV cache moved over NVLink 4 (NVSwitch)"), "{table}");
    assert!(table.contains("TTFT excludes the move, TPOT includes it"), "{table}");
    let md = ok(&one(&["--rate", "6", "-f", "md"]).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(md.contains("| disagg 1:3 |") || md.contains("disagg 1:3"), "{md}");
}

#[test]
fn disaggregated_pools_take_their_own_layouts_and_the_gpus_add_up() {
    // One prefill instance of TP 2 and three decode instances of 1 GPU: 5 GPUs, compared with 5
    // aggregated instances of the scenario's 1 GPU.
    let base = ["simulate", "--requests", "200", "--prompt", "1024", "--output", "64", "--rate", "6"];
    let run = |extra: &[&str]| -> Vec<String> { base.iter().chain(extra).map(|s| s.to_string()).collect() };
    let args = run(&["--disagg", "1:3", "--prefill-tp", "2", "-f", "json"]);
    let v = json(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let d = &v["disagg"];
    assert!(d.get("gpus_per_instance").is_none(), "{d}");
    let pool = |k: &str| (d[k]["tp"].as_u64(), d[k]["ep"].as_u64(), d[k]["gpus_per_instance"].as_u64());
    assert_eq!(pool("prefill_layout"), (Some(2), Some(1), Some(2)));
    assert_eq!(pool("decode_layout"), (Some(1), Some(1), Some(1)));
    assert_eq!(
        (d["gpus"].as_u64(), d["aggregated_instances"].as_u64(), d["aggregated_gpus"].as_u64()),
        (Some(5), Some(5), Some(5))
    );
    assert_eq!((v["summary"]["completed"].as_u64(), v["aggregated"]["completed"].as_u64()), (Some(200), Some(200)));
    let table = ok(&run(&["--disagg", "1:3", "--prefill-tp", "2"]).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        table.contains("disagg 1:3: 1 prefill instance of TP 2 (2 GPUs) and 3 decode instances of 1 GPU (5 GPUs in all); aggregated ×5: instances of the scenario's 1 GPU on the same 5 GPUs, serving both"),
        "{table}"
    );
    // On a TP 2 scenario, 1 × TP 1 + 1 × TP 2 = 3 GPUs hold one aggregated TP 2 instance (2 GPUs):
    // the footer and the JSON say so.
    let args = run(&["--tp", "2", "--disagg", "1:1", "--prefill-tp", "1", "-f", "json"]);
    let v = json(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let d = &v["disagg"];
    assert_eq!(
        (d["gpus"].as_u64(), d["aggregated_instances"].as_u64(), d["aggregated_gpus"].as_u64()),
        (Some(3), Some(1), Some(2))
    );
    let table =
        ok(&run(&["--tp", "2", "--disagg", "1:1", "--prefill-tp", "1"]).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        table.contains(
            "aggregated ×1: instances of the scenario's TP 2 (2 GPUs) on 2 of its 3 GPUs (the most they fill)"
        ),
        "{table}"
    );
    // Pools given the scenario's own layout are the plain split, number for number.
    let own = run(&["--tp", "2", "--disagg", "1:1", "--prefill-tp", "2", "--decode-tp", "2", "-f", "json"]);
    let plain = run(&["--tp", "2", "--disagg", "1:1", "-f", "json"]);
    assert_eq!(
        ok(&own.iter().map(String::as_str).collect::<Vec<_>>()),
        ok(&plain.iter().map(String::as_str).collect::<Vec<_>>())
    );
}

/// The engine's scheduler flags reach the simulator: 20,000 + 2,000-token requests at a closed
/// loop of 64 thrash the plain scheduler, while TensorRT-LLM's guaranteed-no-evict admission
/// never preempts; speculation with every draft token accepted makes depth + 1 tokens a step
/// (fewer only in a request's last step).
#[test]
fn engine_scheduler_flags_change_the_run_as_the_engines_do() {
    let run = |extra: &[&str]| {
        let mut args =
            vec!["simulate", "--requests", "80", "--prompt", "20000", "--output", "2000", "--arrivals", "closed"];
        args.extend_from_slice(&["--concurrency", "64", "--format", "json"]);
        args.extend_from_slice(extra);
        json(&args)
    };
    let plain = run(&["--admission", "max-utilization"]);
    let no_evict = run(&["--admission", "guaranteed-no-evict"]);
    assert!(plain["summary"]["preemptions"].as_u64().unwrap() > 0);
    assert_eq!(no_evict["summary"]["preemptions"], 0);
    // The engine's own scheduler is the default: TensorRT-LLM's (the default engine) admits
    // without eviction, named or not; vLLM's watermark preempts (it admits while blocks last).
    assert_eq!(run(&[])["summary"], no_evict["summary"]);
    assert_eq!(run(&["--admission", "engine"])["summary"], no_evict["summary"]);
    assert_eq!(run(&["--engine", "trtllm"])["summary"], no_evict["summary"]);
    let vllm = run(&["--engine", "vllm"]);
    assert_eq!(
        vllm["summary"],
        run(&["--engine", "vllm", "--admission", "watermark", "--cuda-graphs", "vllm"])["summary"]
    );
    assert!(vllm["summary"]["preemptions"].as_u64().unwrap() > 0);
    let e = fails(&["simulate", "--admission", "fifo"]);
    assert!(e.contains("--admission") && e.contains("engine, max-utilization"), "{e}");
    let spec =
        json(&["simulate", "--requests", "50", "--spec-depth", "3", "--spec-acceptance", "1", "--format", "json"]);
    // Four a step, fewer only where a request has fewer than four tokens left to write.
    let per_step = spec["summary"]["spec_tokens_per_step"].as_f64().unwrap();
    assert!(per_step > 3.9 && per_step <= 4.0, "{per_step}");
}

/// A draft model drafts in place of heads: the same tokens per step at the same acceptance,
/// each step slower by the draft's own steps (a 1B model's decode steps cost more than 5 % of an
/// 8B's); it must share the target's vocabulary, and it replaces the heads' cost, not adds to it.
#[test]
fn a_draft_model_drafts_in_place_of_heads() {
    let run = |extra: &[&str]| {
        let mut args = vec!["simulate", "--requests", "60", "--spec-depth", "3", "--spec-acceptance", "1"];
        args.extend_from_slice(&["--format", "json"]);
        args.extend_from_slice(extra);
        json(&args)
    };
    let heads = run(&[]);
    let draft = run(&["--draft-model", "llama-3.2-1b"]);
    assert_eq!(draft["summary"]["spec_tokens_per_step"], heads["summary"]["spec_tokens_per_step"]);
    let tpot = |v: &serde_json::Value| v["summary"]["tpot_s"]["mean"].as_f64().unwrap();
    assert!(tpot(&draft) > tpot(&heads), "{} vs {}", tpot(&draft), tpot(&heads));
    let e = fails(&["simulate", "--spec-depth", "3", "--draft-model", "mistral-7b"]);
    assert!(e.contains("--draft-model") && e.contains("128256") && e.contains("32000"), "{e}");
    let e = fails(&["simulate", "--spec-depth", "3", "--draft-model", "llama-3.2-1b", "--draft-fraction", "0.1"]);
    assert!(e.contains("--draft-fraction") && e.contains("--draft-model"), "{e}");
    let e = fails(&["simulate", "--draft-model", "llama-3.2-1b"]);
    assert!(e.contains("--spec-depth"), "{e}");
    let e = fails(&["simulate", "--spec-depth", "3", "--draft-model", "lama-3.2-1b"]);
    assert!(e.contains("draft model") && e.contains("llama-3.2-1b"), "{e}");
}

/// `--prefix-cache on` takes effect: a trace whose rows name shared prefixes (five columns)
/// finds most of its prompts in the cache and waits less for a first token than with it off;
/// without rows that name a prefix the switch could change nothing, and is refused.
#[test]
fn the_prefix_cache_takes_effect_on_a_trace_that_names_prefixes() {
    let mut rows = String::from("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n");
    for i in 0..120u32 {
        rows.push_str(&format!("{:.3},{},32,{},1024\n", f64::from(i) * 0.25, 1100 + (i % 7) * 50, i % 3));
    }
    let trace = temp_file("prefixed-trace.csv", rows.as_bytes());
    let run = |on: &str| json(&["simulate", "--trace", &trace, "--prefix-cache", on, "--format", "json"]);
    let (on, off) = (run("on"), run("off"));
    let hit = on["summary"]["prefix_cache_hit_rate"].as_f64().unwrap();
    // 3 prefixes of 1,024 tokens in prompts of 1,100 to 1,400: after the first of each, most of
    // every prompt is cached.
    assert!(hit > 0.6, "{hit}");
    assert!(off["summary"]["prefix_hit_tokens"].as_f64() == Some(0.0));
    let ttft = |v: &serde_json::Value| v["summary"]["ttft_s"]["mean"].as_f64().unwrap();
    assert!(ttft(&on) < 0.7 * ttft(&off), "{} vs {}", ttft(&on), ttft(&off));
    let e = fails(&["simulate", "--requests", "10", "--prefix-cache", "on"]);
    assert!(e.contains("invalid `--prefix-cache`: on") && e.contains("prefix_id,prefix_tokens"), "{e}");
}

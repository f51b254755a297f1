//! The checks the fuzz targets run on each input, shared with the regression test that replays the
//! saved crash reproducers (`tests/fuzz_regressions/<target>/`). Each returns normally for any
//! input: parsing may fail with an error, but must not panic, hang or produce non-finite numbers.

#![allow(dead_code)]

use llm_ledger_core::hardware::parse_gpu_file;
use llm_ledger_core::limits::parse_f64;
use llm_ledger_core::model::parse_config_json;
use llm_ledger_core::pairs::from_pairs;
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::simulate::stats::Quantiles;
use llm_ledger_core::simulate::workload::{parse_trace_csv, Arrivals, Lengths};
use llm_ledger_core::simulate::{simulate_within, Budget, Deployment, SimConfig, SimSummary};
use llm_ledger_core::{summarise, Catalog, Error, Scenario, ScenarioRequest};

fn assert_finite(s: &Scenario) {
    let sum = summarise(s);
    let c = sum.cost;
    for v in [c.flops, c.bytes(), sum.timing.time_s] {
        assert!(v.is_finite() && v >= 0.0, "non-finite or negative result {v}");
    }
}

/// A config.json: parse; when it parses, its ledger at a small decode step is finite.
pub fn check_config_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(spec) = parse_config_json(text, "fuzz") {
        let mut c = Catalog::builtin();
        c.add_model(spec);
        let req = ScenarioRequest { model: Some("fuzz".into()), batch: Some("4".into()), ..Default::default() };
        if let Ok(s) = req.resolve(&c) {
            assert_finite(&s);
        }
    }
}

/// A GPU file: parse; every GPU it defines gives a finite ledger.
pub fn check_gpu_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(gpus) = parse_gpu_file(text) {
        for g in gpus {
            let name = g.name.clone();
            let mut c = Catalog::builtin();
            c.add_gpus(vec![g]);
            let s = ScenarioRequest { gpu: Some(name), ..Default::default() }.resolve(&c).unwrap();
            assert_finite(&s);
        }
    }
}

/// A URL query string, as the web explorer receives it.
pub fn check_scenario_query(data: &[u8]) {
    let Ok(req) = serde_urlencoded::from_bytes::<ScenarioRequest>(data) else { return };
    // Keep the work bounded: the fuzzer explores the parser, not 10¹²-token contexts.
    if let Ok(s) = req.resolve(&Catalog::builtin()) {
        assert_finite(&s);
    }
}

/// A `model.safetensors.index.json` and, the same bytes as the JSON of a safetensors header, a
/// header: both parsers answer shards or tensors or one-line errors; the shards are plain,
/// distinct file names within the cap, the tensors fit the file and do not overlap.
pub fn check_safetensors_index(data: &[u8]) {
    use llm_ledger_core::model::safetensors::{index_shards, parse_header, MAX_SHARDS};
    if let Ok(text) = std::str::from_utf8(data) {
        match index_shards(text) {
            Ok(shards) => {
                assert!(shards.len() <= MAX_SHARDS);
                assert!(shards.windows(2).all(|w| w[0] < w[1]), "sorted, each once");
                assert!(shards
                    .iter()
                    .all(|s| !s.contains(['/', '\\']) && !s.starts_with('.') && s.ends_with(".safetensors")));
            }
            Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }
    let mut file = (data.len() as u64).to_le_bytes().to_vec();
    file.extend(data);
    let data_bytes = 4096u64;
    match parse_header(&file, file.len() as u64 + data_bytes) {
        Ok(tensors) => {
            let total: u64 = tensors.iter().map(|t| t.bytes).sum();
            assert!(total <= data_bytes, "{total} bytes of tensors in {data_bytes} data bytes");
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
}

/// A GGUF file's first bytes (the header and some data), read as the CLI reads it (more while the
/// parser asks, up to the file's end): a header, or a one-line error; a header's tensors fit the
/// file without sharing bytes, and a model it describes gives a finite ledger.
pub fn check_gguf_metadata(data: &[u8]) {
    use llm_ledger_core::model::gguf::{self, Parsed};
    let size = data.len() as u64;
    let mut have = data.len().min(64);
    let g = loop {
        match gguf::parse(&data[..have], size) {
            Ok(Parsed::Done(g)) => break g,
            Ok(Parsed::NeedMore(n)) => {
                assert!(n > have as u64 && n <= size, "asks for {n} of {size} bytes having {have}");
                have = n as usize;
            }
            Err(e) => {
                assert!(!e.to_string().contains('\n'), "{e}");
                return;
            }
        }
    };
    assert!(g.weight_bytes() <= size, "{} bytes of tensors in a {size}-byte file", g.weight_bytes());
    if let Ok(spec) = gguf::model(&g, "fuzz") {
        let mut c = Catalog::builtin();
        c.add_model(spec);
        let req = ScenarioRequest { model: Some("fuzz".into()), batch: Some("4".into()), ..Default::default() };
        if let Ok(s) = req.resolve(&c) {
            assert_finite(&s);
        }
    }
}

/// Engine steps one `simulate_inputs` case may take (a fuzzer explores the inputs, not long runs).
pub const SIMULATE_STEPS: u64 = 4_000;

/// `simulate`'s own inputs: a URL query of `simulate`'s keys (the explorer's and the CLI's names;
/// `trace` an inline CSV, rows split by `;`) and any scenario keys. Either an error that names its
/// field, or a run to its end within [`SIMULATE_STEPS`] whose every number is finite. Never a
/// panic, a hang or a NaN.
pub fn check_simulate_inputs(data: &[u8]) {
    let Ok(pairs) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(data) else { return };
    match run_simulate_inputs(&pairs) {
        Ok(s) => assert_finite_summary(&s),
        Err(e) => assert!(e.field().is_some(), "an error about no field: {e}"),
    }
}

/// The keys [`check_simulate_inputs`] reads itself; the rest go to the scenario.
pub const SIMULATE_KEYS: [&str; 15] = [
    "rate",
    "arrivals",
    "cv",
    "concurrency",
    "trace",
    "requests",
    "seed",
    "prompt",
    "output",
    "max_seqs",
    "max_batched_tokens",
    "chunk",
    "schedule",
    "block",
    "prefix_hit",
];

fn run_simulate_inputs(pairs: &[(String, String)]) -> Result<SimSummary, Error> {
    let get = |k: &str| pairs.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    let u = |k: &str, default: u64| get(k).map(|v| parse_u64(k, v)).transpose().map(|v| v.unwrap_or(default));
    let f = |k: &str, default: f64| get(k).map(|v| parse_f64(k, v)).transpose().map(|v| v.unwrap_or(default));
    let mut scenario: Vec<(&str, &str)> = Vec::new();
    for (k, v) in pairs.iter().filter(|(k, _)| !SIMULATE_KEYS.contains(&k.as_str())) {
        // Later pairs win, as for the simulator's own keys.
        scenario.retain(|(key, _)| key != k);
        scenario.push((k, v));
    }
    let req: ScenarioRequest =
        from_pairs(scenario).map_err(|e| Error::invalid("query", e.to_string(), "scenario keys"))?;
    let sc = req.resolve(&Catalog::builtin())?;
    let d = SimConfig::poisson(10.0);
    let arrivals = match get("arrivals").unwrap_or("poisson") {
        "poisson" => Arrivals::Poisson { rate_per_s: f("rate", 10.0)? },
        "gamma" => Arrivals::Gamma { rate_per_s: f("rate", 10.0)?, cv: f("cv", 2.0)? },
        "closed" => Arrivals::Closed { concurrency: u("concurrency", 4)? },
        "trace" => Arrivals::Trace(parse_trace_csv(&get("trace").unwrap_or("").replace(';', "\n"))?.into()),
        other => {
            return Err(Error::unknown("arrivals", other, ["poisson", "gamma", "closed", "trace"]).about("arrivals"))
        }
    };
    let lengths = |k: &str, default: u64| {
        get(k).map(|v| Lengths::parse(k, v)).transpose().map(|v| v.unwrap_or(Lengths::Fixed(default)))
    };
    let max_batched_tokens = u("max_batched_tokens", d.max_batched_tokens)?;
    let schedule = get("schedule").map(str::parse).transpose().map_err(|e: Error| e.about("schedule"))?;
    let cfg = SimConfig {
        arrivals,
        requests: u("requests", 20)?,
        seed: u("seed", 0)?,
        prompt: lengths("prompt", 256)?,
        output: lengths("output", 16)?,
        max_seqs: u("max_seqs", d.max_seqs)?,
        max_batched_tokens,
        chunk_tokens: u("chunk", max_batched_tokens)?,
        schedule: schedule.unwrap_or(d.schedule),
        block_tokens: u("block", d.block_tokens)?,
        prefix_hit: f("prefix_hit", 0.0)?,
        ..d
    };
    cfg.validate()?;
    let budget = Budget::new(SIMULATE_STEPS, None);
    budget.admit([&cfg])?;
    let sim = simulate_within(&sc, &cfg, &Deployment::SINGLE, &budget, |_| {})?;
    assert!(budget.used_steps() <= SIMULATE_STEPS, "{} steps", budget.used_steps());
    Ok(sim.summary)
}

fn assert_finite_summary(s: &SimSummary) {
    let q = |q: &Quantiles| [q.mean, q.p50, q.p90, q.p99, q.max];
    let values = [
        s.arrival_rate_per_s,
        s.duration_s,
        s.mean_in_system,
        s.mean_latency_s,
        s.requests_per_s,
        s.input_tokens_per_s,
        s.output_tokens_per_s,
        s.goodput_per_s,
        s.slo_attainment,
        s.mean_batch,
        s.mean_queue,
        s.queue_growth_per_s,
        s.mean_kv_utilisation,
        s.max_kv_utilisation,
    ];
    let all = values.into_iter().chain(q(&s.ttft_s)).chain(q(&s.tpot_s)).chain(q(&s.itl_s)).chain(q(&s.e2e_s));
    for v in all {
        assert!(v.is_finite() && v >= 0.0, "a non-finite or negative number {v} in {s:?}");
    }
    assert!(s.completed <= s.requests);
}
